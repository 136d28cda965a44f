"""The London face photos (automated/attack/photos.py) and the linking attacker on real faces.

Real data: 12 of the 102 identities of the Face Research Lab London Set (spread through
the table), a neutral and a smiling photo each, scaled to 540 px (the face then spans
about 200 px).
"""

from __future__ import annotations

import numpy as np
import pytest

from automated.anonymizers import face_region, frame_rng
from automated.attack.photos import (
    detect_faces,
    expression_folds,
    face_crops,
    load_london_faces,
    mask_photos,
    photo_attack_data,
    run_photo_attack,
)
from automated.attack.recognizers import DlibEmbedding, get_recognizers
from automated.detection import MediaPipeFaceDetector
from automated.temporal import linking_attack

IDENTITIES = ["001", "010", "020", "032", "043", "068", "091", "103", "117", "127", "137", "173"]


def fresh_noise(frame_rgb, context):
    """A per-frame random masking: the face region replaced by uniform noise drawn fresh
    for every photo (the photo's nonce seeds the generator)."""
    x1, y1, x2, y2 = face_region(context.box_xyxy, (frame_rgb.shape[1], frame_rgb.shape[0]))
    out = frame_rgb.copy()
    rng = frame_rng(context.key, context.video_nonce, context.frame_index)
    out[y1:y2, x1:x2] = rng.integers(0, 256, (y2 - y1, x2 - x1, 3), dtype=np.uint8)
    return out


@pytest.fixture(scope="module")
def london(data_dir):
    photos = load_london_faces(data_dir / "faces" / "london_face_set", identities=IDENTITIES)
    with MediaPipeFaceDetector() as detector:
        boxes, eyes = detect_faces(photos.images, detector)
    return photos, boxes, eyes


def test_photos_and_folds(london):
    photos, boxes, _ = london
    assert photos.images.shape == (24, 540, 540, 3) and photos.images.dtype == np.uint8
    assert photos.identities.tolist()[:4] == ["001", "001", "010", "010"]
    assert photos.expressions.tolist()[:2] == ["neutral", "smiling"]
    assert photos.metadata.loc["001"].tolist() == [24.0, "female", "white"]
    widths = boxes[:, 2] - boxes[:, 0]
    assert 150 < widths.min() and widths.max() < 260  # about 200 px faces
    folds = expression_folds(photos.expressions)
    # by construction: each direction tests one expression and trains on the other only
    for fold, tested in zip(folds, ["smiling", "neutral"]):
        assert set(photos.expressions[fold.test_idx]) == {tested}
        assert set(photos.expressions[fold.train_idx]) == {"neutral", "smiling"} - {tested}
        assert sorted(photos.identities[fold.test_idx]) == sorted(photos.identities[fold.train_idx])


def test_unmasked_photos_are_identified_and_fresh_noise_is_not(london):
    photos, boxes, eyes = london
    clear = face_crops(photos.images, boxes)
    recognizers = get_recognizers(["dlib_knn"])
    folds = expression_folds(photos.expressions)
    unmasked = run_photo_attack(
        photo_attack_data(
            photos, clear, face_crops(mask_photos(photos.images, boxes, eyes, "identity"), boxes)
        ),
        folds,
        recognizers=recognizers,
        attackers=["naive"],
    )
    assert unmasked.summary()["accuracy"].tolist() == [1.0]  # SOURCE.md: dlib rank-1 102/102
    noise = run_photo_attack(
        photo_attack_data(
            photos, clear, face_crops(mask_photos(photos.images, boxes, eyes, fresh_noise), boxes)
        ),
        folds,
        recognizers=recognizers,
        attackers=["naive"],
    )
    assert noise.summary()["accuracy"].iloc[0] <= 3 / 24  # chance 1/12: 2 of 24 probes expected


def test_linking_attacker_links_blurred_faces_and_not_fresh_noise(london):
    photos, boxes, eyes = london
    embed = DlibEmbedding().transform
    recordings = np.arange(len(photos))  # every photo its own recording

    blurred = face_crops(mask_photos(photos.images, boxes, eyes, "blur_face"), boxes)
    blur = linking_attack(embed(blurred), recordings, photos.identities, n_permutations=200)
    assert (blur.n_mated, blur.n_non_mated) == (12, 24 * 23 // 2 - 12)
    assert blur.above_chance()
    assert blur.eer <= 0.25 < np.percentile(blur.null_eer, 2.5)  # chance 0.5
    assert blur.d_sys > np.percentile(blur.null_d_sys, 97.5)

    noisy = face_crops(mask_photos(photos.images, boxes, eyes, fresh_noise), boxes)
    noise = linking_attack(embed(noisy), recordings, photos.identities, n_permutations=200)
    assert not noise.above_chance()
    assert noise.p_eer > 0.05 and noise.p_d_sys > 0.05
    assert np.percentile(noise.null_eer, 2.5) <= noise.eer <= np.percentile(noise.null_eer, 97.5)


def test_bad_requests_are_refused(data_dir, tmp_path):
    with pytest.raises(ValueError, match="not in"):
        load_london_faces(data_dir / "faces" / "london_face_set", identities=["999"])
    with pytest.raises(FileNotFoundError, match="identities.csv"):
        load_london_faces(tmp_path)
    with pytest.raises(ValueError, match="unknown baseline method"):
        mask_photos(np.zeros((1, 8, 8, 3), np.uint8), np.zeros((1, 4)), np.zeros((1, 2, 2)), "nope")


def test_identification_success_by_hand():
    from automated.attack.photos import identification_success

    identities = ["a", "a", "b", "b", "c", "c"]
    expressions = ["neutral", "smiling"] * 3
    clear = np.array([[0.0], [0.1], [1.0], [1.1], [2.0], [2.1]])
    # a's masked photos stay near a; b's smiling photo drifts to c; c's both drift to b.
    masked = np.array([[0.05], [0.02], [1.0], [2.05], [1.02], [0.98]])
    success = identification_success(masked, clear, identities, expressions)
    assert success.to_dict() == {"a": 1.0, "b": 0.5, "c": 0.0}
    with pytest.raises(ValueError, match="no gallery photo"):
        identification_success(masked, clear, identities, ["neutral"] * 6)
