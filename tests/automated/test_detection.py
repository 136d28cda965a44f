"""Face detection: result type, box helpers, detection metrics, and both detectors on GRID."""

import numpy as np
import pytest

from automated.detection import (
    DlibHogFaceDetector,
    FaceDetections,
    MediaPipeFaceDetector,
    box_iou,
    largest_face,
    make_face_detector,
    xywh_to_xyxy,
)
from automated.detection_metrics import detection_failure_rate, iou_summary, masked_frame_iou

from .face_fixtures import frame_at, probe_path


def detections(*boxes, frame_index=0):
    if not boxes:
        return FaceDetections.empty(frame_index)
    return FaceDetections(frame_index, np.array(boxes, np.float32), np.ones(len(boxes), np.float32))


def test_empty_detections_have_shape_0_by_4():
    empty = FaceDetections.empty(7)
    assert empty.frame_index == 7 and empty.boxes_xyxy.shape == (0, 4) and empty.scores.shape == (0,)
    assert len(empty) == 0 and largest_face(empty) is None


@pytest.mark.parametrize(
    "boxes, scores, message",
    [
        (np.zeros((2, 3), np.float32), np.zeros(2, np.float32), r"shape \(n, 4\)"),
        (np.zeros((1, 4), np.float64), np.zeros(1, np.float32), "float32"),
        (np.zeros((2, 4), np.float32), np.zeros(1, np.float32), "2 boxes but 1 scores"),
        (np.array([[5, 0, 1, 1]], np.float32), np.zeros(1, np.float32), "x2 >= x1"),
    ],
)
def test_face_detections_reject_bad_arrays(boxes, scores, message):
    with pytest.raises(ValueError, match=message):
        FaceDetections(0, boxes, scores)


def test_xywh_to_xyxy():
    np.testing.assert_array_equal(xywh_to_xyxy([[10, 20, 30, 40]]), [[10, 20, 40, 60]])


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ([0, 0, 2, 2], [0, 0, 2, 2], 1.0),
        ([0, 0, 2, 2], [1, 0, 3, 2], 2 / 6),  # overlap 2, union 4 + 4 - 2
        ([0, 0, 2, 2], [1, 1, 3, 3], 1 / 7),
        ([0, 0, 4, 4], [1, 1, 3, 3], 4 / 16),  # contained
        ([0, 0, 2, 2], [2, 0, 4, 2], 0.0),  # touching edges
        ([0, 0, 2, 2], [5, 5, 6, 6], 0.0),
        ([1, 1, 1, 1], [1, 1, 1, 1], 0.0),  # no area
    ],
)
def test_box_iou_hand_computed(a, b, expected):
    assert box_iou(a, b) == pytest.approx(expected)
    assert box_iou(b, a) == pytest.approx(expected)


def test_largest_face_picks_largest_area():
    np.testing.assert_array_equal(
        largest_face(detections([0, 0, 10, 10], [0, 0, 20, 5], [5, 5, 25, 25])), [5, 5, 25, 25]
    )


def test_masked_frame_iou_uses_best_overlapping_box_and_0_without_face():
    clear = [0, 0, 10, 10]
    assert masked_frame_iou(clear, detections()) == 0.0
    assert masked_frame_iou(clear, detections([50, 50, 90, 90], [0, 0, 10, 5])) == pytest.approx(0.5)


@pytest.mark.parametrize(
    "ious, mean, cumulative",
    [
        ([1.0, 0.5, 0.0], 0.5, 1.5),
        ([0.25], 0.25, 0.25),
        ([0.0, 0.0], 0.0, 0.0),
    ],
)
def test_iou_summary_hand_computed(ious, mean, cumulative):
    assert iou_summary(ious) == pytest.approx((mean, cumulative))


@pytest.mark.parametrize(
    "bad, message", [([], "no reference frame"), ([1.5], r"\[0, 1\]"), ([np.nan], r"\[0, 1\]")]
)
def test_iou_summary_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        iou_summary(bad)


@pytest.mark.parametrize(
    "clear, masked, expected",
    [
        ([True, True, True, False], [True, False, False, True], 2 / 3),  # the 4th frame has no clear face
        ([True, True], [True, True], 0.0),
        ([True, True], [False, False], 1.0),
        ([True, False, True, True], [False, False, True, True], 1 / 3),
    ],
)
def test_detection_failure_rate_hand_computed(clear, masked, expected):
    assert detection_failure_rate(clear, masked) == pytest.approx(expected)


def test_detection_failure_rate_errors():
    with pytest.raises(ValueError, match="3 clear frames but 2 masked"):
        detection_failure_rate([True] * 3, [True] * 2)
    with pytest.raises(ValueError, match="no tested clear frame has a face"):
        detection_failure_rate([False, False], [True, False])


def test_unknown_detector_name_is_rejected():
    with pytest.raises(ValueError, match="unknown face detector 'yolo'"):
        make_face_detector("yolo")


def test_detector_rejects_non_rgb_frame():
    with MediaPipeFaceDetector() as detector, pytest.raises(ValueError, match="uint8"):
        detector.detect(np.zeros((10, 10, 3), np.float32))


def test_detector_registry_has_the_mmod_detectors():
    from automated.detection import DETECTOR_NAMES, DETECTORS, DlibMmodFaceDetector, MmodFaceDetector

    assert (
        DETECTOR_NAMES == tuple(DETECTORS) == ("mediapipe", "dlib_hog", "mmod", "mmod_native", "insightface")
    )
    assert DETECTORS["mmod"] is MmodFaceDetector and DETECTORS["mmod_native"] is DlibMmodFaceDetector
    with pytest.raises(ValueError, match="num_threads must be a whole number >= 1, got 0"):
        make_face_detector("mmod", num_threads=0)
    with pytest.raises(ValueError, match="threshold must be a finite number, got nan"):
        make_face_detector("mmod", threshold=float("nan"))
    assert make_face_detector("mmod").cache_key() != make_face_detector("mmod", threshold=0.5).cache_key()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mediapipe", "dlib_hog", "mmod"])
def test_detectors_find_the_one_face_of_a_grid_clip_and_nothing_in_a_flat_frame(data_dir, name):
    frame = frame_at(probe_path(data_dir, "bbaf2n"), 0)
    with make_face_detector(name) as detector:
        found = detector.detect(frame, frame_index=3)
        assert found.frame_index == 3 and len(found) == 1
        x1, y1, x2, y2 = found.boxes_xyxy[0]
        # The speaker's face (checked by eye): about 130 px wide, centred near (156, 188).
        assert 100 <= x2 - x1 <= 160 and 140 <= (x1 + x2) / 2 <= 170 and 170 <= (y1 + y2) / 2 <= 200
        assert len(detector.detect(np.full_like(frame, 127))) == 0


@pytest.mark.slow
def test_both_detectors_agree_on_the_face_box(data_dir):
    frame = frame_at(probe_path(data_dir, "id2_vcd_swwp2s"), 40)
    with MediaPipeFaceDetector() as mediapipe_detector:
        mediapipe_box = largest_face(mediapipe_detector.detect(frame))
    hog_box = largest_face(DlibHogFaceDetector().detect(frame))
    assert box_iou(mediapipe_box, hog_box) > 0.7
