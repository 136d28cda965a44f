"""The mini-Xception classifiers read from Keras HDF5 into PyTorch, against TensorFlow's own outputs.

``tests/fixtures/mini_xception_reference.npz`` holds three real grey face crops (CREMA-D
actor 1001 acting happiness, the GRID woman of ``lwbsza``, a GRID man blurred with sigma
7) and the probabilities and penultimate features TensorFlow 2.15.1 computed for them
from the same HDF5 files, outside the project's dependencies
(``tests/fixtures/make_mini_xception_reference.py``).
"""

from pathlib import Path

import h5py
import numpy as np
import pytest

from automated.behaviour.face_classifier import (
    EXPRESSION_LABELS,
    GENDER_LABELS,
    FaceClassifier,
    expression_classifier,
    face_crop,
    gender_classifier,
    preprocess,
)
from automated.behaviour.keras_model import KerasGraph, KerasModelError, _same_padding

REFERENCE = Path(__file__).resolve().parents[2] / "fixtures" / "mini_xception_reference.npz"


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE) as data:
        return {name: data[name] for name in data.files}


@pytest.mark.parametrize("name, make", [("expression", expression_classifier), ("gender", gender_classifier)])
def test_outputs_match_tensorflow(reference, name, make):
    classifier = make()
    probabilities, features = classifier.predict(reference["crops"])
    np.testing.assert_allclose(probabilities, reference[f"{name}_probabilities"], atol=2e-6)
    np.testing.assert_allclose(features, reference[f"{name}_features"], atol=2e-6)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-6)


def test_labels_follow_source_md(reference):
    expression, gender = expression_classifier(), gender_classifier()
    assert expression.labels == EXPRESSION_LABELS and expression.labels[3] == "happy"
    assert gender.labels == GENDER_LABELS == ("woman", "man")
    assert expression.input_size == gender.input_size == 64
    # the happy CREMA-D crop reads as happy in TensorFlow's outputs and ours
    assert EXPRESSION_LABELS[int(reference["expression_probabilities"][0].argmax())] == "happy"
    assert EXPRESSION_LABELS[int(expression.predict(reference["crops"][:1])[0].argmax())] == "happy"


def test_tensorflow_same_padding():
    # total = max((ceil(n / s) - 1) s + k - n, 0), the smaller half first
    assert _same_padding(60, 3, 2) == (0, 1)
    assert _same_padding(15, 3, 2) == (1, 1)
    assert _same_padding(8, 3, 1) == (1, 1)
    assert _same_padding(15, 1, 2) == (0, 0)


def test_preprocessing_scales_to_minus_one_one():
    scaled = preprocess(np.array([[[0, 255], [51, 102]]], np.uint8)).numpy()
    np.testing.assert_allclose(scaled[0, 0], [[-1.0, 1.0], [-0.6, -0.2]], atol=1e-6)
    with pytest.raises(ValueError, match="uint8"):
        preprocess(np.zeros((1, 64, 64), np.float32))


def test_face_crop_widens_the_box_and_clips_to_the_frame():
    frame = np.zeros((100, 200, 3), np.uint8)
    frame[20:80, 50:150] = 255
    crop = face_crop(frame, [60, 30, 140, 70], size_px=8)  # + 8 px each side horizontally, + 8 px vertically
    assert crop.shape == (8, 8) and crop.dtype == np.uint8 and crop.min() == 255
    assert face_crop(frame, [-50, -50, 20, 20]).shape == (64, 64)
    with pytest.raises(ValueError, match="no area"):
        face_crop(frame, [300, 300, 400, 400])


def test_bad_model_files_get_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="DEID_MODELS_DIR"):
        FaceClassifier(tmp_path / "missing.hdf5", GENDER_LABELS)
    not_keras = tmp_path / "weights.hdf5"
    with h5py.File(not_keras, "w") as h5:
        h5["x"] = np.zeros(3)
    with pytest.raises(KerasModelError, match="no model_config"):
        KerasGraph(not_keras)
    with pytest.raises(KerasModelError, match="7 outputs, 2 labels"):
        FaceClassifier(expression_classifier().path, GENDER_LABELS)
    with pytest.raises(ValueError, match="shape"):
        gender_classifier().predict(np.zeros((1, 48, 48), np.uint8))
