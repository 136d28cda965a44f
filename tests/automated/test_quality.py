"""Face quality components (automated/quality.py) on real faces: ORL stills and a GRID frame."""

import math

import cv2
import numpy as np
import pytest
from PIL import Image

from automated.detection import MediaPipeFaceDetector, largest_face
from automated.face_crop import NoFaceFoundError
from automated.quality import (
    detect_face_quality,
    face_quality,
    laplacian_sharpness,
    video_face_quality,
)
from automated.video import iter_frames
from fairness.measures import mean_gc_sqfr


@pytest.fixture(scope="module")
def detector():
    with MediaPipeFaceDetector() as face_detector:
        yield face_detector


def _orl(data_dir, subject, image=1):
    grey = np.array(Image.open(data_dir / "faces" / "orl_att_faces" / f"s{subject}" / f"{image}.pgm"))
    assert grey.shape == (112, 92)
    return np.repeat(grey[..., None], 3, axis=2)


@pytest.fixture(scope="module")
def grid_frame(data_dir):
    path = data_dir / "videos" / "grid_talking_heads" / "bbaf2n.mpg"
    return next(frame for index, frame in iter_frames(path, start=37, end=38))


def test_laplacian_sharpness_hand_computed():
    # A single bright pixel in a 5x5 zero image: Laplacian -4*9 at it, +9 at its 4
    # neighbours, 0 elsewhere; inner 3x3 values: -36 (1), 9 (4), 0 (4).
    image = np.zeros((5, 5), np.uint8)
    image[2, 2] = 9
    values = np.array([-36, 9, 9, 9, 9, 0, 0, 0, 0], float)
    assert laplacian_sharpness(image) == pytest.approx(values.var())
    assert laplacian_sharpness(np.full((8, 8), 100, np.uint8)) == 0.0


def test_laplacian_sharpness_rejects_bad_input():
    with pytest.raises(ValueError, match="2-D uint8"):
        laplacian_sharpness(np.zeros((5, 5, 3), np.uint8))
    with pytest.raises(ValueError, match="leaves no pixel"):
        laplacian_sharpness(np.zeros((5, 5), np.uint8), np.zeros((5, 5), bool))


@pytest.mark.parametrize("subject", [1, 7, 23])
def test_blurred_orl_face_is_less_sharp_and_equally_lit(data_dir, detector, subject):
    image = _orl(data_dir, subject)
    blurred = cv2.GaussianBlur(image, (0, 0), 2.0)
    original = detect_face_quality(image, detector)
    assert detect_face_quality(blurred, detector).sharpness < 0.5 * original.sharpness
    # On the same box, blur keeps the mean grey level (a Gaussian preserves the mean).
    box = largest_face(detector.detect(image))
    same_box = face_quality(blurred, box)
    assert same_box.sharpness < 0.5 * original.sharpness
    assert same_box.luminance == pytest.approx(original.luminance, abs=0.005)
    assert 30 < original.face_height_px < 112


def test_blurred_grid_frame_is_less_sharp(grid_frame, detector):
    original = detect_face_quality(grid_frame, detector)
    blurred = detect_face_quality(cv2.GaussianBlur(grid_frame, (0, 0), 2.0), detector)
    assert blurred.sharpness < 0.5 * original.sharpness
    assert 0.0 < original.luminance < 1.0
    assert 60 < original.face_height_px < 288  # a frontal talking head in a 360x288 frame


def test_whole_image_as_face_and_darkening(data_dir):
    image = _orl(data_dir, 5)
    quality = face_quality(image)
    assert math.isnan(quality.face_height_px)
    darker = face_quality((image * 0.5).astype(np.uint8))
    assert darker.luminance == pytest.approx(quality.luminance * 0.5, abs=0.01)


def test_padding_outside_the_frame_adds_no_sharpness():
    # A flat grey image: a box hanging over the edge gives a black-padded square crop,
    # but only real pixels are measured, so the sharpness stays 0.
    image = np.full((100, 100, 3), 128, np.uint8)
    quality = face_quality(image, [60, 10, 100, 90])
    assert quality.sharpness == 0.0
    assert quality.luminance == pytest.approx(128 / 255)


def test_no_face_raises(detector):
    with pytest.raises(NoFaceFoundError, match="no face found in the 64x48 image"):
        detect_face_quality(np.zeros((48, 64, 3), np.uint8), detector)


def test_video_face_quality_is_the_median_over_sampled_frames(data_dir, detector):
    quality = video_face_quality(
        data_dir / "videos" / "grid_talking_heads" / "bbaf2n.mpg", detector, stride=25
    )
    assert quality.sharpness > 0 and 0 < quality.luminance < 1


def test_quality_fairness_on_real_faces_drops_for_a_blurred_group(data_dir, detector):
    # The paper's use: one group's images are systematically blurrier -> lower SQFR.
    sharp = [detect_face_quality(_orl(data_dir, s), detector).sharpness for s in range(1, 7)]
    other = [detect_face_quality(_orl(data_dir, s), detector).sharpness for s in range(7, 13)]
    blurred = [
        detect_face_quality(cv2.GaussianBlur(_orl(data_dir, s), (0, 0), 1.5), detector).sharpness
        for s in range(7, 13)
    ]
    assert mean_gc_sqfr({"a": sharp, "b": blurred}) < mean_gc_sqfr({"a": sharp, "b": other})
