"""Attribute leakage attackers, the frontier figure and the features file format."""

import math
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from automated.behaviour.features import BehaviourFeatures
from automated.behaviour.frontier import FrontierPoint, frontier_figure, pareto_front
from automated.behaviour.leakage import (
    AttributeVideo,
    attribute_leakage,
    attribute_samples,
    gender_index,
    majority_rate,
    parrot_accuracy,
    pretrained_accuracy,
)


def video(identity, label, clear_man, masked_man, features):
    probabilities = lambda man: np.array([[1 - p, p] for p in man])  # noqa: E731
    return AttributeVideo(
        identity, label, probabilities(clear_man), probabilities(masked_man), np.asarray(features, np.float32)
    )


def test_pretrained_attacker_accuracy_and_leakage_by_hand():
    rng = np.random.default_rng(0)
    videos = [
        video("a", 1, [0.9, 0.8], [0.6, 0.4], rng.normal(size=(2, 128))),  # masked: 1 of 2 right
        video("b", 1, [0.7, 0.9], [0.3, 0.2], rng.normal(size=(2, 128))),  # masked: 0 of 2
        video("c", 0, [0.2, 0.6], [0.1, 0.3], rng.normal(size=(2, 128))),  # clear 1 of 2, masked 2 of 2
    ]
    assert majority_rate([v.label for v in videos]) == pytest.approx(2 / 3)
    assert pretrained_accuracy(videos, side="clear") == pytest.approx((1 + 1 + 0.5) / 3)
    assert pretrained_accuracy(videos) == pytest.approx((0.5 + 0 + 1) / 3)
    result = attribute_leakage(videos)
    assert result["leakage_pretrained"] == pytest.approx(0.5 - 2 / 3)
    assert result["leakage_clear"] == pytest.approx(2.5 / 3 - 2 / 3)
    assert result["n_identities"] == 3
    # a video without a clear face holds no sample: left out and counted, not scored as wrong
    empty = AttributeVideo("d", 0, np.zeros((0, 2)), np.zeros((0, 2)), np.zeros((0, 128), np.float32))
    with_empty = attribute_leakage(videos + [empty])
    assert with_empty["n_videos"] == 3 and with_empty["n_videos_without_face"] == 1
    assert with_empty["majority_rate"] == result["majority_rate"]


def test_parrot_learns_a_gender_signal_the_masking_left_and_not_a_missing_one():
    rng = np.random.default_rng(1)
    labels = [0, 1, 0, 1, 0, 1]
    signal = [
        video(f"p{i}", y, [0.5] * 20, [0.5] * 20, rng.normal(size=(20, 128)) + 1.5 * y)
        for i, y in enumerate(labels)
    ]
    assert parrot_accuracy(signal) == 1.0
    assert attribute_leakage(signal)["leakage_parrot"] == 0.5  # 1.0 above a majority rate of 0.5
    noise = [
        video(f"p{i}", y, [0.5] * 20, [0.5] * 20, rng.normal(size=(20, 128))) for i, y in enumerate(labels)
    ]
    assert abs(parrot_accuracy(noise) - 0.5) < 0.25
    # a fold whose training identities all share one gender cannot train: left out, NaN if none can
    assert math.isnan(parrot_accuracy(signal[:2]))


def test_attribute_samples_round_trip_through_json_and_leave_out_frames_without_a_clear_face():
    import json

    clear = BehaviourFeatures.empty_rows(3, (64, 64), "features-v1|attribute")
    masked = BehaviourFeatures.empty_rows(3, (64, 64), "features-v1|attribute")
    clear.attribute[[0, 2]] = [[0.2, 0.8], [0.6, 0.4]]  # frame 1: no clear face
    masked.attribute[[0, 1, 2]] = [[0.7, 0.3], [0.5, 0.5], [0.123456, 0.876544]]
    masked.attribute_features[[0, 2]] = 0.5
    samples = json.loads(json.dumps(attribute_samples(clear, masked)))
    assert samples["clear_probabilities"] == [[0.2, 0.8], [0.6, 0.4]]
    assert samples["masked_probabilities"] == [[0.7, 0.3], [0.1235, 0.8765]]  # 4 decimals
    assert len(samples["masked_features"]) == 2 and samples["masked_features"][0] == [0.5] * 128
    again = AttributeVideo.from_samples(samples, "P01", "male")
    assert again.label == 1 and again.masked_features.shape == (2, 128)
    assert pretrained_accuracy([again], side="clear") == 0.5 and pretrained_accuracy([again]) == 0.5
    empty = AttributeVideo.from_samples(
        {"clear_probabilities": [], "masked_probabilities": [], "masked_features": []}, "P02", "F"
    )
    assert empty.masked_features.shape == (0, 128) and empty.label == 0
    with pytest.raises(ValueError, match="attribute=True"):
        attribute_samples(BehaviourFeatures.empty_rows(1, (8, 8), "no-attribute"), masked)
    with pytest.raises(ValueError, match="unknown gender"):
        AttributeVideo.from_samples(samples, "P01", "unknown")


def test_gender_labels_and_empty_input():
    assert gender_index("Male") == 1 and gender_index(" female ") == 0 and gender_index("W") == 0
    with pytest.raises(ValueError, match="accepted"):
        gender_index("unknown")
    with pytest.raises(ValueError, match="no videos"):
        attribute_leakage([])


def test_pareto_front_by_hand():
    points = [
        FrontierPoint("identity", 1.0, 1.0, "baseline"),
        FrontierPoint("A", 0.1, 0.8),
        FrontierPoint("B", 0.3, 0.6),
        FrontierPoint("blur", 0.4, 0.7, "baseline"),
        FrontierPoint("C", 0.1, 0.5),
        FrontierPoint("D", math.nan, 0.9),
    ]
    assert [p.label for p in pareto_front(points)] == ["A", "identity"]


def test_frontier_figure_bytes_are_png_and_svg_and_stable():
    points = [
        FrontierPoint("identity", 1.0, 1.0, "baseline"),
        FrontierPoint("team-A", 0.12, 0.81),
        FrontierPoint("team-B", math.nan, 0.5),
    ]
    figure = frontier_figure(points)
    assert figure["png"].startswith(b"\x89PNG\r\n\x1a\n")
    root = ElementTree.fromstring(figure["svg"])
    assert root.tag.endswith("svg")
    assert b"not measured: team-B" in figure["svg"] and b"team-A" in figure["svg"]
    assert frontier_figure(points) == figure  # no dates or random ids in the files


def test_frontier_labels_of_equal_points_do_not_print_over_each_other():
    """Issue 21: baselines with the same worst case and behaviour had their names on top of each other."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from automated.behaviour.frontier import spread_labels

    figure = Figure(figsize=(6.4, 4.8))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    names = ["blur_face", "pixelate_face", "eye_mask", "k_same_pixel"]
    labels = [
        axes.annotate(name, (0.5, 0.5), textcoords="offset points", xytext=(5, 4), fontsize=8)
        for name in names
    ]
    labels.append(axes.annotate("far away", (0.05, 0.95), textcoords="offset points", xytext=(5, 4)))
    renderer = figure.canvas.get_renderer()
    before = [label.get_window_extent(renderer) for label in labels]
    assert before[0].overlaps(before[1])  # the defect: same point, same place
    spread_labels(figure, labels)
    boxes = [label.get_window_extent(renderer) for label in labels]
    for i, box in enumerate(boxes):
        for other in boxes[i + 1 :]:
            assert not box.overlaps(other)
    assert labels[-1].xyann == (5, 4)  # a label that overlapped nothing stays beside its point
    assert labels[0].xyann == (5, 4)


def test_frontier_rejects_bad_points():
    with pytest.raises(ValueError, match="no submissions"):
        frontier_figure([])
    with pytest.raises(ValueError, match="behaviour must be in"):
        FrontierPoint("x", 0.5, 1.5)
    with pytest.raises(ValueError, match="kind"):
        FrontierPoint("x", 0.5, 0.5, "team")
    with pytest.raises(ValueError, match="number"):
        FrontierPoint("x", "0.5", 0.5)


def test_features_file_roundtrip_and_bad_files(tmp_path):
    original = BehaviourFeatures.empty_rows(4, (360, 288), "settings-v1")
    original.ear = np.array([0.3, np.nan, 0.2, 0.31])
    original.frame_index = np.array([0, 5, 10, 15])
    path = original.save(tmp_path / "cache" / "clip.npz")
    loaded = BehaviourFeatures.load(path)
    assert loaded.settings == "settings-v1" and loaded.n_frames == 4
    np.testing.assert_array_equal(loaded.ear, original.ear)
    np.testing.assert_array_equal(loaded.frame_index, original.frame_index)
    assert sorted(p.name for p in path.parent.iterdir()) == ["clip.npz"]  # no temporary left behind
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ValueError, match="not a readable behaviour-features file"):
        BehaviourFeatures.load(truncated)
    np.savez(tmp_path / "other.npz", x=np.zeros(2))
    with pytest.raises(ValueError, match="not a behaviour-features file"):
        BehaviourFeatures.load(tmp_path / "other.npz")


def test_the_frontier_partial_draws_no_empty_figure_before_any_point_is_measured():
    """A campaign without any submission measured on both axes gets a line saying what is
    missing instead of a blank plot; with one point the figure and its links are there."""
    from types import SimpleNamespace

    from django.template.loader import render_to_string

    nan = float("nan")
    campaign = SimpleNamespace(pk=7)
    row = {"label": "Team: m", "kind": "submission", "reidentification": nan, "behaviour": 0.5}
    row |= {"pu_automated": None, "gender_leakage": None, "current": False}
    empty = render_to_string(
        "automated/_frontier.html", {"campaign": campaign, "rows": [row], "plotted": False}
    )
    assert "<img" not in empty and "No point to draw yet" in empty and "frontier-points" in empty
    drawn = render_to_string(
        "automated/_frontier.html",
        {"campaign": campaign, "rows": [{**row, "reidentification": 0.3}], "plotted": True},
    )
    assert "<img" in drawn and "/7/" in drawn and "No point to draw yet" not in drawn
