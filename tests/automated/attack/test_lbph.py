"""LBPHClassifier's numpy chi-square prediction against OpenCV's own LBPH ``predict``.

The classifier keeps OpenCV's histograms but finds the nearest one in numpy; on real crops
(GRID video faces detected by MediaPipe, London face set stills) it must give OpenCV's
labels and OpenCV's distances (``HISTCMP_CHISQR_ALT``) within 1e-6 relative.
"""

import csv

import cv2
import numpy as np
import pytest

from automated.attack.embedding import to_grey
from automated.attack.faces import video_face_crops
from automated.attack.recognizers import LBPHClassifier
from automated.detection import MediaPipeFaceDetector

#: Training clip and a different test clip per GRID speaker (tests/automated/face_fixtures.py).
GRID = {
    "s1": ("grid_identity_clips/s1/bbal6n.mpg", "grid_talking_heads/bbaf2n.mpg"),
    "s2": ("grid_talking_heads/pwij3p.mpg", "grid_talking_heads/id2_vcd_swwp2s.mpg"),
    "s4": ("grid_identity_clips/s4_probable/bbilzs.mpg", "grid_talking_heads/lwbsza.mpg"),
}
RTOL = 1e-6


def _opencv_predictions(train, labels, test, **params):
    """(labels, distances) of OpenCV's LBPH trained on ``train`` for every crop of ``test``."""
    model = cv2.face.LBPHFaceRecognizer_create(**params)
    model.train(list(to_grey(train)), labels.astype(np.int32))
    found = [model.predict(np.ascontiguousarray(image)) for image in to_grey(test)]
    return np.array([label for label, _ in found]), np.array([distance for _, distance in found])


def _assert_like_opencv(train, labels, test, **params):
    expected_labels, expected_distances = _opencv_predictions(train, labels, test, **params)
    classifier = LBPHClassifier(**params).fit(train, labels)
    distances = classifier.distances(test)
    assert distances.shape == (len(test), len(train))
    np.testing.assert_array_equal(classifier.predict(test), expected_labels)
    np.testing.assert_allclose(distances.min(axis=1), expected_distances, rtol=RTOL)
    return expected_labels


@pytest.fixture(scope="module")
def grid_crops(data_dir):
    """(train crops, labels, test crops, labels): 160 px face crops every 15th frame."""
    parts = {"train": ([], []), "test": ([], [])}
    with MediaPipeFaceDetector() as detector:
        for label, clips in enumerate(GRID.values()):
            for part, clip in zip(("train", "test"), clips, strict=True):
                path = data_dir / "videos" / clip
                crops = video_face_crops(path, path, stride=15, detector=detector).clear
                parts[part][0].append(crops)
                parts[part][1].extend([label] * len(crops))
    return tuple(
        array
        for part in ("train", "test")
        for array in (np.concatenate(parts[part][0]), np.array(parts[part][1]))
    )


def test_grid_video_crops_give_opencvs_labels_and_distances(grid_crops):
    train, train_labels, test, test_labels = grid_crops
    assert len(train) == len(test) == 15  # 5 tested frames of 3 clips each
    found = _assert_like_opencv(train, train_labels, test)
    assert (found == test_labels).mean() > 1 / 3  # above chance: the faces are recognised
    # Other LBP settings: a larger radius, 12 neighbours (4,096-bin cells) and a 4x4 grid.
    _assert_like_opencv(train, train_labels, test, radius=2, neighbors=12, grid_x=4, grid_y=4)


def test_london_stills_give_opencvs_labels_and_distances(data_dir):
    folder = data_dir / "faces" / "london_face_set"
    with (folder / "identities.csv").open() as handle:
        rows = list(csv.DictReader(handle))[:16]

    def crops(column):
        images = [cv2.imread(str(folder / row[column])) for row in rows]
        return np.stack([cv2.resize(image, (120, 160), interpolation=cv2.INTER_AREA) for image in images])

    labels = np.arange(len(rows))
    found = _assert_like_opencv(crops("neutral_image"), labels, crops("smiling_image"))
    assert (found == labels).mean() > 0.25  # smiling still matched to the neutral one


def test_a_tie_goes_to_the_first_training_crop_as_in_opencv(grid_crops):
    train, _, test, _ = grid_crops
    twins = np.concatenate([train[:1], train[:1], train[1:2]])  # the same crop under labels 7, 3
    labels = np.array([7, 3, 5])
    assert _assert_like_opencv(twins, labels, train[:1])[0] == 7
    assert LBPHClassifier().fit(twins, labels).distances(train[:1])[0, :2].tolist() == [0.0, 0.0]


def test_predict_needs_fit():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        LBPHClassifier().predict(np.zeros((1, 32, 32), np.uint8))


def test_memoised_histograms_equal_opencvs_fresh_ones_bit_for_bit(grid_crops):
    """The per-crop memo (issue 20): histograms read back equal OpenCV's computed afresh, in
    any batch order and mix of known and new crops, for each LBP setting apart."""
    from automated.attack import recognizers

    train, train_labels, test, _ = grid_crops
    crops = np.concatenate([train, test])

    def opencv(images, **params):
        model = cv2.face.LBPHFaceRecognizer_create(**params)
        model.train(list(to_grey(images)), np.zeros(len(images), np.int32))
        return np.concatenate(model.getHistograms())

    recognizers._HISTOGRAMS.clear()
    expected = opencv(crops)
    assert expected.dtype == np.float32 and expected.shape == (30, 8 * 8 * 256)
    first = LBPHClassifier().lbp_histograms(train)  # all new
    np.testing.assert_array_equal(first, expected[:15])
    assert len(recognizers._HISTOGRAMS._rows) == len({c.tobytes() for c in to_grey(train)})
    order = np.random.default_rng(0).permutation(30)
    mixed = LBPHClassifier().lbp_histograms(crops[order])  # half known (train), half new (test)
    np.testing.assert_array_equal(mixed, expected[order])
    np.testing.assert_array_equal(LBPHClassifier().lbp_histograms(crops), expected)  # all known
    # Another setting never reads these entries.
    other = LBPHClassifier(radius=2, neighbors=12, grid_x=4, grid_y=4).lbp_histograms(crops)
    np.testing.assert_array_equal(other, opencv(crops, radius=2, neighbors=12, grid_x=4, grid_y=4))
    # A fitted classifier predicts as with a cold memo.
    fitted = LBPHClassifier().fit(train, train_labels)
    warm = fitted.distances(test)
    recognizers._HISTOGRAMS.clear()
    np.testing.assert_array_equal(fitted.distances(test), warm)
    np.testing.assert_array_equal(
        LBPHClassifier().fit(train, train_labels).predict(test), fitted.predict(test)
    )


def test_the_histogram_memo_forgets_the_least_recently_used_first():
    from automated.attack.recognizers import _HistogramMemo

    memo = _HistogramMemo(max_entries=2)
    rows = [np.full(3, value, np.float32) for value in range(3)]
    memo.put(b"a", rows[0])
    memo.put(b"b", rows[1])
    assert memo.get_many([b"a"])[0] is rows[0]  # a is now the most recent
    memo.put(b"c", rows[2])  # b goes
    assert [row is not None for row in memo.get_many([b"a", b"b", b"c"])] == [True, False, True]
    assert not rows[0].flags.writeable  # shared rows cannot be changed in place
