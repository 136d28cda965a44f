"""Face recognition: verification (match rate), closed-set rank, crops, the embedder registry,
dlib's ResNet embeddings (the default PyTorch port) on GRID."""

import sys

import numpy as np
import pytest

from automated.face_crop import NoFaceFoundError, crop_internal_face, detect_and_crop_face
from automated.recognition import (
    DEFAULT_EMBEDDER,
    EMBEDDER_NAMES,
    EMBEDDERS,
    MATCH_THRESHOLD,
    DlibFaceEmbedder,
    TorchFaceEmbedder,
    chance_level,
    closed_set_rank,
    embedder_spec,
    face_recognition_models_dir,
    identity_distances,
    l2_distances,
    make_face_embedder,
    match_rate,
)

from .face_fixtures import frame_at, gallery, probe_path


@pytest.mark.parametrize(
    "distances, kwargs, expected",
    [
        ([0.3, 0.6, 0.9], {}, 2 / 3),  # 0.6 == threshold is a match (tie rule)
        ([0.3, 0.6000001, 0.9], {}, 1 / 3),
        ([0.3], {"n_probes": 4}, 0.25),  # 3 probes without a face count as non-matches
        ([0.5, 0.7], {"threshold": 0.7}, 1.0),
        ([0.5, 0.7], {"threshold": 0.4}, 0.0),
        ([], {"n_probes": 2}, 0.0),
    ],
)
def test_match_rate_hand_computed(distances, kwargs, expected):
    assert match_rate(distances, **kwargs) == pytest.approx(expected)


def test_match_rate_is_unchanged_by_duplicating_every_distance():
    distances = [0.2, 0.55, 0.61, 0.8, 1.1]
    assert match_rate(distances * 2) == match_rate(distances)


@pytest.mark.parametrize(
    "distances, kwargs, message",
    [
        ([], {}, "no probes"),
        ([0.1, 0.2], {"n_probes": 1}, "smaller than the number of distances"),
        ([np.nan], {}, "non-negative"),
        ([-0.1], {}, "non-negative"),
    ],
)
def test_match_rate_errors(distances, kwargs, message):
    with pytest.raises(ValueError, match=message):
        match_rate(distances, **kwargs)


GALLERY = np.array([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [0.5, 0.0]])
LABELS = np.array(["a", "b", "c", "c"])


def test_identity_distance_is_the_nearest_gallery_image_of_each_identity():
    identities, distances = identity_distances([0.4, 0.0], GALLERY, LABELS)
    assert identities.tolist() == ["a", "b", "c"]
    np.testing.assert_allclose(distances, [0.4, 0.6, 0.1])


@pytest.mark.parametrize(
    "probe, true_identity, expected",
    [
        ([0.4, 0.0], "c", 1),  # c's second image at 0.5 is nearest
        ([0.4, 0.0], "a", 2),
        ([0.4, 0.0], "b", 3),
        ([2.0, 0.0], "b", 2),  # b and c both at 1.0: the tie counts against the true identity
    ],
)
def test_closed_set_rank_hand_computed(probe, true_identity, expected):
    assert closed_set_rank(probe, GALLERY, LABELS, true_identity) == expected


def test_closed_set_rank_of_a_constant_recogniser_is_the_worst_rank():
    gallery = np.zeros((3, 4))
    assert closed_set_rank(np.zeros(4), gallery, ["a", "b", "c"], "b") == 3


def test_closed_set_rank_errors():
    with pytest.raises(ValueError, match="'z' is not in the gallery"):
        closed_set_rank([0, 0], GALLERY, LABELS, "z")
    with pytest.raises(ValueError, match="4 gallery embeddings but 3 gallery identities"):
        closed_set_rank([0, 0], GALLERY, LABELS[:3], "a")
    with pytest.raises(ValueError, match="embedding sizes differ"):
        l2_distances(np.zeros((1, 3)), GALLERY)


def test_chance_level_is_one_over_the_number_of_identities():
    assert chance_level(LABELS) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="empty"):
        chance_level([])


def test_crop_internal_face_is_a_square_around_the_box_with_black_outside_the_image():
    image = np.full((100, 200, 3), 200, np.uint8)
    crop = crop_internal_face(image, [-20, 10, 20, 50], size_px=40)  # half of the square is left of x=0
    assert crop.shape == (40, 40, 3) and crop.dtype == np.uint8
    assert crop[:, :19].max() == 0 and crop[:, 21:].min() == 200


def test_crop_internal_face_takes_the_longer_box_side():
    image = np.arange(100 * 100 * 3, dtype=np.uint32).reshape(100, 100, 3).astype(np.uint8)
    crop = crop_internal_face(image, [40, 20, 60, 80], size_px=60)  # 20 x 60 box -> 60 x 60 square
    np.testing.assert_array_equal(crop, image[20:80, 20:80])


@pytest.mark.parametrize("box, message", [([5, 5, 5, 9], "no area"), ([300, 300, 320, 320], "outside")])
def test_crop_internal_face_errors(box, message):
    with pytest.raises(ValueError, match=message):
        crop_internal_face(np.zeros((100, 100, 3), np.uint8), box)


def test_detect_and_crop_face_raises_on_a_still_without_face():
    with pytest.raises(NoFaceFoundError, match="no face found in the 64x48 image"):
        detect_and_crop_face(np.full((48, 64, 3), 90, np.uint8))


def test_models_are_located_without_importing_face_recognition_models():
    folder = face_recognition_models_dir()
    assert (folder / "shape_predictor_5_face_landmarks.dat").is_file()
    assert (folder / "dlib_face_recognition_resnet_model_v1.dat").is_file()
    assert "face_recognition_models" not in sys.modules


#: The embedders of dlib's ResNet (the models ship in a wheel); "arcface" needs a model pack.
DLIB_EMBEDDERS = ("dlib_resnet", "dlib_resnet_native")


def test_embedder_registry_names_size_distance_and_threshold():
    assert DEFAULT_EMBEDDER == "dlib_resnet"
    assert set(EMBEDDER_NAMES) == {"dlib_resnet", "dlib_resnet_native", "arcface"}
    assert isinstance(make_face_embedder(), TorchFaceEmbedder)
    assert isinstance(make_face_embedder("dlib_resnet_native"), DlibFaceEmbedder)
    for name in DLIB_EMBEDDERS:  # arcface needs a model pack: test_insightface_backend.py
        spec, embedder = EMBEDDERS[name], make_face_embedder(name)
        # dlib's ResNet: the size is its top layer's (read from the model file), L2 with dlib's 0.6.
        assert (embedder.name, embedder.dim, embedder.threshold) == (name, spec.dim, spec.threshold)
        assert spec.distance == embedder.distance == "euclidean" and spec.threshold == MATCH_THRESHOLD == 0.6
    assert make_face_embedder().cache_key() != make_face_embedder("dlib_resnet_native").cache_key()
    with pytest.raises(
        ValueError,
        match="unknown face embedder 'facenet'; choose one of dlib_resnet, dlib_resnet_native, arc",
    ):
        embedder_spec("facenet")
    with pytest.raises(ValueError, match="num_threads must be a whole number >= 1, got 0"):
        make_face_embedder("dlib_resnet", num_threads=0)


@pytest.mark.parametrize("name", DLIB_EMBEDDERS)
def test_embed_without_boxes_gives_shape_0_by_dim(name):
    embedder = make_face_embedder(name)
    assert embedder.embed(np.zeros((20, 20, 3), np.uint8), np.zeros((0, 4))).shape == (0, embedder.dim)
    assert embedder.embed_faces([]).shape == (0, embedder.dim)


def test_embed_rejects_bad_boxes_and_images():
    embedder = make_face_embedder()
    with pytest.raises(
        ValueError, match=r"boxes_xyxy must be finite numbers of shape \(n, 4\), got \(1, 3\)"
    ):
        embedder.embed(np.zeros((20, 20, 3), np.uint8), [[0, 0, 5]])
    with pytest.raises(ValueError, match="boxes_xyxy must be finite"):
        embedder.embed(np.zeros((20, 20, 3), np.uint8), [[0, 0, np.nan, 5]])
    with pytest.raises(
        ValueError, match=r"image_rgb must be uint8 of shape \(height, width, 3\), got float64"
    ):
        embedder.embed(np.zeros((20, 20, 3)), [[0, 0, 5, 5]])


@pytest.mark.slow
@pytest.mark.parametrize(
    "probe_clip, true_identity", [("bbaf2n", "s1"), ("id2_vcd_swwp2s", "s2"), ("lwbsza", "s4")]
)
def test_real_probe_matches_its_gallery_still_from_another_clip(data_dir, probe_clip, true_identity):
    embeddings, identities = gallery(data_dir)
    frame = frame_at(probe_path(data_dir, probe_clip), 20)
    face = detect_and_crop_face(frame)
    embedder = make_face_embedder()
    probe = embedder.embed_crop(face)
    assert probe.shape == (embedder.dim,) and probe.dtype == np.float32
    by_identity = dict(zip(*identity_distances(probe, embeddings, identities)))
    genuine = by_identity.pop(true_identity)
    impostor = list(by_identity.values())
    # dlib's threshold separates them: the same person across clips is a match, others are not.
    assert genuine <= MATCH_THRESHOLD < min(impostor)
    assert closed_set_rank(probe, embeddings, identities, true_identity) == 1
