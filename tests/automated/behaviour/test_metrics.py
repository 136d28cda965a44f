"""Events, correlation, divergence, PCK, the score and its aggregate: hand-computed cases."""

import math

import numpy as np
import pytest

from automated.behaviour.body import body_metrics, pck_counts
from automated.behaviour.compare import FeatureMismatchError, compare, jensen_shannon, pearson
from automated.behaviour.events import event_f1, eye_closure_events, mouth_opening_events, runs
from automated.behaviour.features import BehaviourFeatures
from automated.behaviour.score import automated_pu_score, behaviour_score, summarize_behaviour


def test_runs_and_events():
    assert runs(np.array([1, 1, 0, 1, 0, 0, 1], bool), np.arange(7) * 2) == [(0, 2), (6, 6), (12, 12)]
    # median 0.3, threshold 0.225: frames 2-3 closed; NaN (no face) ends a run and is never closed
    ear = np.array([0.3, 0.31, 0.1, 0.2, 0.3, np.nan, 0.29, 0.32])
    assert eye_closure_events(ear, np.arange(8)) == [(2, 3)]
    assert eye_closure_events(np.full(4, np.nan), np.arange(4)) == []
    assert mouth_opening_events(np.array([0.0, 0.2, 0.3, np.nan, 0.16, 0.1]), np.arange(6) * 3) == [
        (3, 6),
        (12, 12),
    ]


def test_event_f1_by_hand():
    clear = [(10, 12), (40, 41), (70, 75)]
    # (14, 15) overlaps (10, 12) within 2 frames each side; (50, 52) is a false alarm; (76, 80) matches (70, 75)
    masked = [(76, 80), (14, 15), (50, 52)]
    result = event_f1(clear, masked, tolerance_frames=2)
    assert (result["n_matched"], result["precision"], result["recall"]) == (2, 2 / 3, 2 / 3)
    assert result["f1"] == pytest.approx(2 / 3)
    assert event_f1(clear, masked, tolerance_frames=0)["n_matched"] == 0  # 1-2 frame gaps need the tolerance
    assert event_f1([], [])["f1"] == 1.0
    assert event_f1(clear, [])["f1"] == 0.0 and event_f1([], masked)["f1"] == 0.0
    assert event_f1(clear, clear)["f1"] == 1.0
    # one masked event cannot match two clear events
    assert event_f1([(0, 1), (3, 4)], [(0, 4)])["n_matched"] == 1
    with pytest.raises(ValueError, match="tolerance"):
        event_f1(clear, masked, tolerance_frames=-1)


def test_pearson_is_exact_for_identical_series_and_defined_at_the_edges():
    x = np.array([0.31, 0.29, 0.12, 0.3, 0.33, 0.27, 0.305])
    assert pearson(x, x.copy()) == 1.0
    assert pearson(x, -x) == -1.0
    assert pearson(x, np.full(7, 0.2)) == 0.0  # the movement is gone
    assert math.isnan(pearson(np.full(7, 0.2), x)) and math.isnan(pearson(x[:2], x[:2]))
    assert pearson([1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]) == pytest.approx(0.8)


def test_jensen_shannon_by_hand():
    p = np.array([[1.0, 0.0], [0.5, 0.5], [0.2, 0.8]])
    q = np.array([[0.0, 1.0], [0.5, 0.5], [0.2, 0.8]])
    np.testing.assert_array_equal(jensen_shannon(p, q), [1.0, 0.0, 0.0])
    # p = (1, 0), q = (0.5, 0.5): m = (0.75, 0.25); KL(p||m) = log2(4/3), KL(q||m) = 0.5 log2(2/3) + 0.5 log2(2)
    expected = (math.log2(4 / 3) + 0.5 * math.log2(2 / 3) + 0.5) / 2
    assert jensen_shannon([[1.0, 0.0]], [[0.5, 0.5]])[0] == pytest.approx(expected)


def test_pck_counts_and_body_metrics_by_hand():
    n = 3
    clear = np.full((n, 33, 2), np.nan)
    clear[:2] = 0.0
    clear[:2, 11], clear[:2, 12] = (0.0, 0.0), (100.0, 0.0)  # shoulder width 100 px: threshold 20 px
    visibility = np.zeros((n, 33))
    visibility[:2, [11, 12, 13, 14]] = 0.9
    masked = clear.copy()
    masked[0, 12] += (10.0, 0.0)  # within 20 px
    masked[0, 13] += (0.0, 25.0)  # an elbow 25 px off
    masked[1] = np.nan  # second pose frame lost
    hands_clear = np.full((n, 2, 21, 2), np.nan)
    hands_masked = hands_clear.copy()
    hands_clear[0, 1] = 50.0
    hands_masked[0, 1] = 55.0  # 7.07 px off: all 21 correct
    hands_masked[2, 0] = 1.0  # a hand appears in a frame without one
    result = body_metrics(clear, visibility, masked, hands_clear, hands_masked)
    assert result["pose_frames"] == 2 and result["body_lost_rate"] == 0.5
    assert result["pck_torso"] == 2 / 4  # frame 0 both shoulders; frame 1 lost (0 of 2)
    assert result["pck_arms"] == 1 / 4  # frame 0: elbow 14 ok, elbow 13 off; frame 1: 0 of 2
    assert result["pck_hands"] == 1.0 and result["hand_frames"] == 1
    assert result["hand_presence_agreement"] == pytest.approx(2 / 3)
    assert pck_counts(clear[:1, [11]], np.ones((1, 1), bool), masked[:1, [11]], np.array([np.nan])) == (0, 0)


def features(n: int, **values) -> BehaviourFeatures:
    result = BehaviourFeatures.empty_rows(n, (360, 288), "test")
    for name, value in values.items():
        setattr(result, name, np.asarray(value, dtype=getattr(result, name).dtype))
    return result


def test_compare_counts_lost_frames_and_never_skips_them():
    ear = np.array([0.3, 0.31, 0.12, 0.3, 0.29, 0.3])
    mar = np.array([0.0, 0.2, 0.4, 0.1, 0.0, 0.3])
    pose = np.tile([5.0, -2.0, 1.0], (6, 1))
    gaze = np.tile([0.0, 0.0, -1.0], (6, 1))
    expression = np.tile(np.eye(7)[3], (6, 1))
    clear = features(6, ear=ear, mar=mar, head_pose_deg=pose, gaze_vector=gaze, expression=expression)
    lost = np.array([False, False, True, False, True, False])
    masked = features(
        6,
        ear=np.where(lost, np.nan, ear),
        mar=np.where(lost, np.nan, mar),
        head_pose_deg=np.where(lost[:, None], np.nan, pose + [2.0, 0.0, 1.0]),
        gaze_vector=np.where(lost[:, None], np.nan, gaze),
        expression=np.where(lost[:, None], np.nan, expression),
    )
    result = compare(clear, masked)
    assert result["face_frames"] == 6 and result["face_lost_rate"] == 2 / 6
    assert result["head_pose_error_deg"] == pytest.approx(1.0) and result["yaw_error_deg"] == pytest.approx(
        2.0
    )
    assert result["gaze_error_deg"] == 0.0 and result["ear_correlation"] == 1.0
    assert (
        result["blink_n_clear"] == 1 and result["blink_n_masked"] == 0 and result["blink_f1"] == 0.0
    )  # lost closure
    assert result["expression_js"] == 0.0 and result["expression_agreement"] == 1.0
    assert math.isnan(result["body_lost_rate"]) and result["pose_frames"] == 0
    with pytest.raises(FeatureMismatchError, match="different frames"):
        compare(clear, features(5))
    other = features(6)
    other.settings = "other"
    with pytest.raises(FeatureMismatchError, match="settings"):
        compare(clear, other)


def metrics(**overrides) -> dict:
    base = dict(
        face_frames=10,
        face_lost_rate=0.0,
        head_pose_error_deg=0.0,
        gaze_error_deg=0.0,
        ear_correlation=1.0,
        blink_f1=1.0,
        mar_correlation=1.0,
        mouth_f1=1.0,
        expression_js=0.0,
        pose_frames=10,
        body_lost_rate=0.0,
        pck_torso=1.0,
        pck_arms=math.nan,
        pck_hands=math.nan,
        hand_presence_agreement=1.0,
    )
    base.update(overrides)
    return base


def test_score_is_one_for_identical_behaviour_and_composes_as_documented():
    assert behaviour_score(metrics())["behaviour_score"] == 1.0
    result = behaviour_score(
        metrics(
            face_lost_rate=0.2,
            head_pose_error_deg=6.0,
            gaze_error_deg=45.0,
            ear_correlation=-0.3,
            blink_f1=0.5,
            mar_correlation=0.6,
            mouth_f1=math.nan,
            expression_js=0.25,
            body_lost_rate=0.5,
            pck_torso=0.8,
            hand_presence_agreement=0.6,
        )
    )
    components = [1 - 6 / 30, 0.0, (0 + 0.5) / 2, 0.6, 0.75]
    assert result["face_part"] == pytest.approx(0.8 * np.mean(components))
    assert result["body_part"] == pytest.approx(0.5 * 0.7)
    assert result["behaviour_score"] == pytest.approx((0.8 * np.mean(components) + 0.35) / 2)
    everything_lost = behaviour_score(
        metrics(
            face_lost_rate=1.0,
            **dict.fromkeys(
                [
                    "head_pose_error_deg",
                    "gaze_error_deg",
                    "ear_correlation",
                    "mar_correlation",
                    "expression_js",
                ],
                math.nan,
            ),
            blink_f1=0.0,
            mouth_f1=0.0,
            body_lost_rate=1.0,
            pck_torso=0.0,
        )
    )
    assert everything_lost["behaviour_score"] == 0.0
    no_body = behaviour_score(
        metrics(pose_frames=0, body_lost_rate=math.nan, pck_torso=math.nan, hand_presence_agreement=1.0)
    )
    assert no_body["behaviour_score"] == 1.0 and math.isnan(no_body["body_part"])


def test_summary_weighs_videos_equally_and_sums_counts():
    videos = [
        dict(metrics(), frames_tested=10, behaviour_score=1.0),
        dict(metrics(), frames_tested=5, behaviour_score=0.5),
        dict(metrics(), frames_tested=7, behaviour_score=math.nan),
    ]
    summary = summarize_behaviour(videos)
    assert summary["n_videos"] == 3 and summary["frames_tested"] == 22
    assert summary["behaviour_score"] == 0.75 and summary["videos_without_score"] == 1
    with pytest.raises(ValueError, match="no video"):
        summarize_behaviour([])


def test_expression_accuracy_by_hand():
    from automated.behaviour.expression import expression_accuracy, expression_index

    probabilities = np.full((4, 7), np.nan)
    probabilities[0] = np.eye(7)[0] * 0.6 + 0.4 / 7  # angry
    probabilities[1] = np.eye(7)[3] * 0.9 + 0.1 / 7  # happy
    probabilities[2] = np.eye(7)[0] * 0.5 + 0.5 / 7  # angry; frame 3 has no face
    video = features(4, expression=probabilities)
    result = expression_accuracy(video, "anger")
    assert (
        result["frames"] == 3 and result["frame_accuracy"] == 2 / 3 and result["video_prediction"] == "angry"
    )
    with_lost = expression_accuracy(
        video, "anger", reference=np.ones(4, bool)
    )  # the lost frame counts as wrong
    assert with_lost["frame_accuracy"] == 2 / 4
    # before: "boolean index did not match indexed array along dimension 0"
    with pytest.raises(ValueError, match="^features.expression and reference differ in length: 4 vs 3$"):
        expression_accuracy(video, "anger", reference=np.ones(3, bool))
    assert expression_index("HAP") == 3 and expression_index("Neutral") == 6
    with pytest.raises(ValueError, match="accepted"):
        expression_index("contempt")


def test_automated_pu_score_uses_the_behaviour_score_as_utility_kept():
    assert automated_pu_score(0.8, 0.25) == pytest.approx(0.6)
    assert automated_pu_score(1.0, 1.0) == 0.0  # the identity baseline: no privacy
    assert math.isnan(automated_pu_score(math.nan, 0.2))
    with pytest.raises(ValueError, match="behaviour score"):
        automated_pu_score(1.2, 0.2)
    with pytest.raises(ValueError, match="ssim"):
        automated_pu_score(0.5, 1.5)


def test_pairwise_helpers_refuse_mismatched_lengths_naming_both():
    x = np.array([0.31, 0.29, 0.12, 0.3, 0.33])
    # before: NaN (two values), 0.0 (constant y) or a matmul error naming neither series
    for y, lengths in ((x[:2], "5 vs 2"), (np.full(4, 0.2), "5 vs 4"), (x[:4], "5 vs 4")):
        with pytest.raises(ValueError, match=f"^x and y differ in length: {lengths}$"):
            pearson(x, y)
    with pytest.raises(ValueError, match=r"^x and y must be 1-D series, got shape \(5, 1\)$"):
        pearson(x[:, None], x[:, None])
    p = np.array([[1.0, 0.0], [0.5, 0.5], [0.2, 0.8]])
    # before: q's one row broadcast against p's three ([1, 0, 0.61] for three frames)
    with pytest.raises(ValueError, match="^p and q differ in length: 3 vs 1$"):
        jensen_shannon(p, [[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"^p and q differ in shape: \(3, 2\) vs \(3, 3\)$"):
        jensen_shannon(p, np.full((3, 3), 1 / 3))
    # before: 0 divergence for distributions over nothing
    with pytest.raises(
        ValueError, match=r"^p and q must be distributions over k >= 1 categories, got shape \(3, 0\)$"
    ):
        jensen_shannon(np.empty((3, 0)), np.empty((3, 0)))
    # before: the runs were read against the first three frame indices only
    with pytest.raises(ValueError, match="^active and frame_indices differ in length: 3 vs 5$"):
        runs(np.array([0, 1, 1], bool), np.arange(5) * 2)


def test_pairwise_helpers_keep_accepting_no_frames():
    # compare() calls them on the paired frames, which are none when the masking hides every face
    assert math.isnan(pearson([], []))
    assert jensen_shannon(np.empty((0, 7)), np.empty((0, 7))).shape == (0,)
    assert runs(np.array([], bool), np.array([], int)) == []
    assert mouth_opening_events([], []) == []


def test_body_metrics_refuse_inputs_covering_different_frames():
    clear = np.zeros((3, 33, 2))
    hands = np.full((3, 2, 21, 2), np.nan)
    visibility = np.ones((3, 33))
    # before: a single masked frame was broadcast against three clear frames
    with pytest.raises(ValueError, match="^clear_pose_xy and masked_pose_xy differ in length: 3 vs 1$"):
        body_metrics(clear, visibility, clear[:1], hands, hands)
    with pytest.raises(ValueError, match="^clear_hands_xy and masked_hands_xy differ in length: 3 vs 2$"):
        body_metrics(clear, visibility, clear, hands, hands[:2])
    with pytest.raises(ValueError, match="^clear_pose_xy and clear_hands_xy differ in length: 3 vs 2$"):
        body_metrics(clear, visibility, clear, hands[:2], hands[:2])
    with pytest.raises(ValueError, match="^clear_pose_xy and clear_visibility differ in length: 3 vs 1$"):
        body_metrics(clear, visibility[:1], clear, hands, hands)
    with pytest.raises(ValueError, match="^clear_xy and scale differ in length: 3 vs 1$"):
        pck_counts(clear[:, :2], np.ones((3, 2), bool), clear[:, :2], np.array([20.0]))
