"""Every face is a person to protect: face tracks, the gallery-matching target, faces leaked.

The real two-person video is composed here from two real GRID clips side by side
(``bbaf2n``: s1, the gallery's person, shrunk to 3/4 so that the OTHER face is the larger
one; ``id2_vcd_swwp2s``: s2), 720x288, lossless FFV1. The clear side computed once and kept
on disk is tested at the end.
"""

from pathlib import Path

import cv2
import numpy as np
import pytest

from automated.clear_side import ClearSide, clear_side_key
from automated.face_eval import evaluate_video
from automated.face_tracks import target_track, track_centroids, track_faces
from automated.video import VideoWriter, iter_frames

from .face_fixtures import gallery, probe_path

FRAMES, STRIDE = 20, 5  # tested frames 0, 5, 10, 15


def _box(x):
    return [x, 10.0, x + 50.0, 60.0]


def test_tracks_follow_overlap_split_at_a_cut_and_rejoin_by_appearance():
    a, b = np.array([0.0, 0.0]), np.array([3.0, 0.0])  # two people, 3 apart (threshold 0.6)
    boxes = [[_box(0), _box(200)], [_box(5), _box(205)], [_box(5)], [_box(200), _box(5)]]
    # frame 2: a cut, person b now stands where a was (overlap, wrong face); frame 3: both again, swapped
    embeddings = [[a, b], [a + 0.1, b], [b], [a, b + 0.1]]
    ids = track_faces([np.array(x) for x in boxes], [np.array(x) for x in embeddings], threshold=0.6)
    assert [i.tolist() for i in ids] == [[0, 1], [0, 1], [1], [0, 1]]
    centroids = track_centroids(ids, [np.array(x) for x in embeddings])
    np.testing.assert_allclose(centroids, [[0.1 / 3, 0.1 / 3], [3.025, 0.025]], atol=1e-9)  # means per track
    gallery_embeddings, labels = np.array([b + 0.2, a + 5]), ["b", "x"]
    assert (
        target_track(ids, [np.array(x) for x in embeddings], gallery_embeddings, labels, "b", threshold=0.6)
        == 1
    )
    assert target_track([], [], gallery_embeddings, labels, "b", threshold=0.6) is None


def _compose(target_rgb, other_rgb, *, swap=False, target_absent=False):
    """Target shrunk to 270x216 on black in its half, the other person full size in the other half."""
    half = np.zeros_like(target_rgb)
    if not target_absent:
        half[36:252, 45:315] = cv2.resize(target_rgb, (270, 216), interpolation=cv2.INTER_AREA)
    return np.ascontiguousarray(np.concatenate([other_rgb, half] if swap else [half, other_rgb], axis=1))


@pytest.fixture(scope="module")
def two_people(data_dir, tmp_path_factory):
    """Clear two-person videos and their maskings: {name: path}."""
    folder = tmp_path_factory.mktemp("two_people")
    target = [f for _, f in iter_frames(probe_path(data_dir, "bbaf2n"), end=FRAMES)]
    other = [f for _, f in iter_frames(probe_path(data_dir, "id2_vcd_swwp2s"), end=FRAMES)]
    black = np.zeros((288, 360, 3), np.uint8)
    variants = {
        "clear": lambda f: f,
        "target_hidden": lambda f: np.concatenate([black, f[:, 360:]], axis=1),  # only the target masked
        "other_hidden": lambda f: np.concatenate([f[:, :360], black], axis=1),
        "both_hidden": lambda f: np.zeros_like(f),
    }
    paths = {}
    for name, mask in variants.items():
        paths[name] = folder / f"{name}.mkv"
        with VideoWriter(paths[name], 25.0, (720, 288), codec="ffv1") as writer:
            for t, other_rgb in enumerate(other):
                writer.write(np.ascontiguousarray(mask(_compose(target[t], other_rgb))))
    # A clear video with a cut: the target leaves (frames 8-12) and comes back on the other side.
    paths["cut"] = folder / "cut.mkv"
    with VideoWriter(paths["cut"], 25.0, (720, 288), codec="ffv1") as writer:
        for t, other_rgb in enumerate(other):
            writer.write(_compose(target[t], other_rgb, swap=t >= 13, target_absent=8 <= t <= 12))
    return paths


@pytest.fixture(scope="module")
def scores(data_dir, two_people):
    embeddings, identities = gallery(data_dir)
    cache: dict = {}
    return {
        name: evaluate_video(
            two_people["clear"], path, embeddings, identities, "s1", stride=STRIDE, clear_cache=cache
        )
        for name, path in two_people.items()
        if name != "cut"
    }


def test_masking_only_the_target_is_reported_as_leaking_the_other_face(scores):
    clear, hidden = scores["clear"], scores["target_hidden"]
    assert (clear.n_face_tracks, clear.all_faces, clear.faces_leaked) == (2, 8, 2)  # unmasked: both leak
    assert hidden.n_face_tracks == 2 and hidden.faces_leaked == 1  # the other person
    assert hidden.faces_detected == hidden.faces_recognisable == 1
    assert hidden.match_rate == 0.0 and hidden.mean_iou == 0.0 and hidden.clear_match_rate == 1.0
    # Half of the clear faces (the target's 4) are gone, the other 4 untouched (IoU 1).
    assert hidden.all_faces_detection_failure_rate == 0.5
    assert hidden.all_faces_mean_iou == pytest.approx(0.5, abs=0.01)
    assert (
        scores["both_hidden"].faces_leaked == 0
        and scores["both_hidden"].all_faces_detection_failure_rate == 1.0
    )


def test_the_target_is_the_gallery_matching_track_not_the_larger_face(scores):
    other_hidden = scores["other_hidden"]
    # The larger face (s2) is masked: the target (s1, smaller) is still fully recognised.
    assert other_hidden.clear_faces == 4 and other_hidden.match_rate == 1.0 and other_hidden.rank1_rate == 1.0
    # (the target's box moves a little when the detector sees the other half black)
    assert other_hidden.mean_iou > 0.95 and other_hidden.faces_leaked == 1


def test_target_absent_frames_are_not_reference_frames_and_the_track_is_refound_after_a_cut(
    data_dir, two_people
):
    embeddings, identities = gallery(data_dir)
    result = evaluate_video(two_people["cut"], two_people["cut"], embeddings, identities, "s1", stride=STRIDE)
    assert result.frames_tested == 4 and result.clear_faces == 3  # absent at tested frame 10
    assert result.n_face_tracks == 2 and result.all_faces == 7  # re-found at frame 15, other side
    assert result.clear_match_rate == 1.0 and result.rank1_rate == 1.0


class CountingDetector:
    """A real MediaPipe detector that counts the frames it is asked about."""

    def __init__(self):
        from automated.detection import MediaPipeFaceDetector

        self.inner, self.frames = MediaPipeFaceDetector(), 0

    def detect(self, frame_rgb, frame_index=0):
        self.frames += 1
        return self.inner.detect(frame_rgb, frame_index)

    def cache_key(self):
        return self.inner.cache_key()


def test_clear_side_is_computed_once_on_disk_and_reused_by_a_later_process(data_dir, two_people, tmp_path):
    embeddings, identities = gallery(data_dir)
    folder = tmp_path / "clear_side"
    detector = CountingDetector()
    kwargs = dict(stride=STRIDE, detector=detector, clear_cache_dir=folder)
    first = evaluate_video(
        two_people["clear"], two_people["target_hidden"], embeddings, identities, "s1", **kwargs
    )
    assert detector.frames == 8  # 4 clear + 4 masked frames
    (entry,) = folder.glob("clear_side_*.npz")
    side = ClearSide.load(entry)
    assert side.frame_indices.tolist() == [0, 5, 10, 15] and [len(b) for b in side.boxes] == [2, 2, 2, 2]
    assert side.embeddings[0].shape == (2, embeddings.shape[1])
    # A new evaluation (no in-memory cache: a later run or another worker) reads the file.
    second = evaluate_video(
        two_people["clear"], two_people["target_hidden"], embeddings, identities, "s1", **kwargs
    )
    assert detector.frames == 12  # the masked frames only
    assert second.faces_leaked == first.faces_leaked == 1 and second.match_rate == first.match_rate
    # A damaged entry is recomputed, never trusted.
    entry.write_bytes(entry.read_bytes()[:100])
    evaluate_video(two_people["clear"], two_people["target_hidden"], embeddings, identities, "s1", **kwargs)
    assert detector.frames == 20 and ClearSide.load(entry).frame_indices.tolist() == [0, 5, 10, 15]
    assert not list(folder.glob(".*.tmp"))  # atomic writes leave no partial file


def test_clear_side_key_follows_file_content_and_settings(two_people, tmp_path):
    from automated.detection import MediaPipeFaceDetector
    from automated.recognition import make_face_embedder

    embedder = make_face_embedder()
    with MediaPipeFaceDetector() as short_range, MediaPipeFaceDetector(model_selection=1) as full_range:
        key = clear_side_key(two_people["clear"], stride=5, detector=short_range, embedder=embedder)
        copy = tmp_path / "renamed.mkv"
        copy.write_bytes(Path(two_people["clear"]).read_bytes())
        assert clear_side_key(copy, stride=5, detector=short_range, embedder=embedder) == key  # same content
        assert clear_side_key(copy, stride=10, detector=short_range, embedder=embedder) != key
        assert clear_side_key(copy, stride=5, detector=full_range, embedder=embedder) != key
        assert (
            clear_side_key(
                copy, stride=5, detector=short_range, embedder=make_face_embedder("dlib_resnet_native")
            )
            != key
        )
        copy.write_bytes(Path(two_people["cut"]).read_bytes())  # replaced content under the same name
        assert clear_side_key(copy, stride=5, detector=short_range, embedder=embedder) != key


def test_an_unwritable_cache_folder_costs_time_not_the_result(data_dir, two_people, tmp_path, caplog):
    embeddings, identities = gallery(data_dir)
    blocked = tmp_path / "a_file"
    blocked.write_text("not a folder")  # the cache folder cannot be created
    result = evaluate_video(
        two_people["clear"],
        two_people["target_hidden"],
        embeddings,
        identities,
        "s1",
        stride=STRIDE,
        clear_cache_dir=blocked / "clear_side",
    )
    assert result.faces_leaked == 1 and "clear side not cached" in caplog.text


def test_tracks_do_not_follow_a_strict_scoring_threshold(data_dir, two_people):
    embeddings, identities = gallery(data_dir)
    result = evaluate_video(
        two_people["clear"], two_people["clear"], embeddings, identities, "s1", stride=STRIDE, threshold=0.0
    )
    assert result.n_face_tracks == 2 and result.match_rate == 0.0  # tracked at the embedder's 0.6
