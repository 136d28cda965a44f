"""InsightFace backend (automated/insightface_backend.py) on synthetic ONNX models.

The models here are SYNTHETIC: the tests build them with the ``onnx`` package, with the
input/output signatures of insightface's packs, and run insightface's real loading and
inference code on them (``model_zoo.get_model`` routing, ``SCRFD.detect`` decoding and
NMS, ``face_align.norm_crop``, ``ArcFaceONNX.get_feat``) through ONNX Runtime. They assert
shapes, coordinates, alignment and normalisation; face detection and recognition
ACCURACY is not tested (there are no real weights here). Tests needing a real pack
(``$DEID_MODELS_DIR/insightface/models/buffalo_l``) are skipped when it is absent.

The synthetic SCRFD (strides 8/16/32, 2 anchors per cell, fmc=3): the score of an anchor
at stride 32 is ``(mean of the normalised red channel over its 32x32 cell + 1) / 2`` (so
a pure red cell scores (127.5 / 128 + 1) / 2 = 0.998, a black one 0.002); strides 8 and
16 score 0. Every box is 4 strides wide, centred on its anchor point (insightface's anchor
points are the cell corners ``(col * stride, row * stride)``); keypoints are fixed offsets
``KPS_OFFSETS`` (in strides) from the anchor point.

The synthetic ArcFace: 14x14 average pooling of the (N, 3, 112, 112) input, flattened to
192 values, times a fixed random (192, 512) matrix.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("insightface")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from automated import insightface_backend as backend  # noqa: E402
from automated.detection import make_face_detector  # noqa: E402
from automated.recognition import embedder_spec, make_face_embedder  # noqa: E402

# insightface's face_align calls skimage's deprecated SimilarityTransform.estimate.
pytestmark = pytest.mark.filterwarnings("ignore:`estimate` is deprecated:FutureWarning")

PACK = "synthetic"
BOX_STRIDES = 2.0  # box half-width in strides
KPS_OFFSETS = np.array([[-0.6, -0.5], [0.6, -0.5], [0.0, 0.1], [-0.5, 0.6], [0.5, 0.6]], np.float32)
RED_SCORE = (127.5 / 128.0 + 1.0) / 2.0  # 0.998046875
ARC_WEIGHTS = np.random.default_rng(0).normal(size=(192, 512)).astype(np.float32)


def _save(graph, path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def scrfd_model(path, *, kps: bool = True) -> None:
    """A synthetic SCRFD with insightface's output layout: 3 score, 3 box (and 3 keypoint)
    outputs of shapes (anchors, 1), (anchors, 4), (anchors, 10) for strides 8, 16, 32."""
    init = [
        numpy_helper.from_array(np.array([0], np.int64), "c_start"),
        numpy_helper.from_array(np.array([1], np.int64), "c_end"),
        numpy_helper.from_array(np.array([1], np.int64), "c_axis"),
        numpy_helper.from_array(np.array([-1, 1], np.int64), "col"),
        numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        numpy_helper.from_array(np.full((1, 4), BOX_STRIDES, np.float32), "box_const"),
        numpy_helper.from_array(KPS_OFFSETS.reshape(1, 10), "kps_const"),
    ]
    nodes = [helper.make_node("Slice", ["input.1", "c_start", "c_end", "c_axis"], ["red"], name="red")]
    scores, boxes, points = [], [], []
    for stride in (8, 16, 32):
        s = str(stride)
        nodes += [
            helper.make_node(
                "AveragePool", ["red"], ["pool" + s], kernel_shape=[stride, stride], strides=[stride, stride]
            ),
            helper.make_node("Reshape", ["pool" + s, "col"], ["cell" + s]),
            helper.make_node("Concat", ["cell" + s, "cell" + s], ["pair" + s], axis=1),
            helper.make_node("Reshape", ["pair" + s, "col"], ["anchor" + s]),
            helper.make_node("Mul", ["anchor" + s, "zero"], ["nil" + s]),
            helper.make_node("Add", ["nil" + s, "box_const"], ["bbox_" + s]),
            helper.make_node("Add", ["nil" + s, "kps_const"], ["kps_" + s]),
        ]
        if stride == 32:
            nodes += [
                helper.make_node("Mul", ["anchor" + s, "half"], ["scaled" + s]),
                helper.make_node("Add", ["scaled" + s, "half"], ["score_" + s]),
            ]
        else:
            nodes.append(helper.make_node("Identity", ["nil" + s], ["score_" + s]))
        scores.append(helper.make_tensor_value_info("score_" + s, TensorProto.FLOAT, ["n" + s, 1]))
        boxes.append(helper.make_tensor_value_info("bbox_" + s, TensorProto.FLOAT, ["n" + s, 4]))
        points.append(helper.make_tensor_value_info("kps_" + s, TensorProto.FLOAT, ["n" + s, 10]))
    outputs = scores + boxes + (points if kps else [])
    image = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, "height", "width"])
    _save(helper.make_graph(nodes, "scrfd_synthetic", [image], outputs, init), path)


def arcface_model(path) -> None:
    """A synthetic ArcFace: (N, 3, 112, 112) -> (N, 512), un-normalised."""
    init = [numpy_helper.from_array(ARC_WEIGHTS, "fc_weight")]
    nodes = [
        helper.make_node(
            "AveragePool", ["input.1"], ["pooled"], kernel_shape=[14, 14], strides=[14, 14], name="pool"
        ),
        helper.make_node("Flatten", ["pooled"], ["flat"], axis=1, name="flatten"),
        helper.make_node("MatMul", ["flat", "fc_weight"], ["683"], name="fc"),
    ]
    image = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, ["None", 3, 112, 112])
    output = helper.make_tensor_value_info("683", TensorProto.FLOAT, ["None", 512])
    _save(helper.make_graph(nodes, "arcface_synthetic", [image], [output], init), path)


def make_pack(models_dir, name=PACK, *, kps=True, detector=True, recognizer=True):
    folder = models_dir / "insightface" / "models" / name
    folder.mkdir(parents=True)
    if detector:
        scrfd_model(folder / "det_synthetic.onnx", kps=kps)
    if recognizer:
        arcface_model(folder / "w600k_synthetic.onnx")
    return folder


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    make_pack(root)
    make_pack(root, "nokps", kps=False)
    make_pack(root, backend.DEFAULT_PACK)  # for code that loads the default pack by name
    return root


def expected_embedding(chip_rgb: np.ndarray) -> np.ndarray:
    """The synthetic ArcFace by hand: (RGB - 127.5) / 127.5, 14x14 means, @ W, L2-normalised."""
    x = (chip_rgb.astype(np.float64) - 127.5) / 127.5
    pooled = x.reshape(8, 14, 8, 14, 3).mean(axis=(1, 3)).transpose(2, 0, 1).reshape(192)
    feature = pooled @ ARC_WEIGHTS.astype(np.float64)
    return feature / np.linalg.norm(feature)


def red_frame(height, width, squares):
    frame = np.zeros((height, width, 3), np.uint8)
    for x1, y1, x2, y2 in squares:
        frame[y1:y2, x1:x2, 0] = 255
    return frame


def test_pack_loading_routes_synthetic_models_to_insightface_classes(models_dir):
    from insightface.model_zoo import SCRFD, ArcFaceONNX

    pack = backend.load_pack(PACK, models_dir=models_dir)
    assert isinstance(pack.detector, SCRFD) and isinstance(pack.recognizer, ArcFaceONNX)
    assert (pack.detector.fmc, pack.detector._feat_stride_fpn, pack.detector._num_anchors) == (
        3,
        [8, 16, 32],
        2,
    )
    assert pack.detector.use_kps
    assert not backend.load_pack("nokps", models_dir=models_dir).detector.use_kps
    # insightface's input normalisation: SCRFD (x - 127.5) / 128, ArcFace (x - 127.5) / 127.5.
    assert (pack.detector.input_mean, pack.detector.input_std) == (127.5, 128.0)
    assert (pack.recognizer.input_mean, pack.recognizer.input_std) == (127.5, 127.5)
    assert pack.recognizer.input_size == (112, 112) and pack.dim == 512
    assert len(pack.detector_sha256) == 64


def test_missing_pack_names_the_folder_and_readme_section(tmp_path):
    with pytest.raises(FileNotFoundError) as missing:
        backend.load_pack("buffalo_l", models_dir=tmp_path)
    message = str(missing.value)
    assert isinstance(missing.value, ValueError)  # a bad setting for run validation and the API
    assert str(tmp_path / "insightface" / "models" / "buffalo_l") in message
    assert "InsightFace model packs" in message and "nothing is downloaded" in message
    make_pack(tmp_path, "detector_only", recognizer=False)
    with pytest.raises(FileNotFoundError, match="no ArcFace recognizer"):
        backend.load_pack("detector_only", models_dir=tmp_path)
    with pytest.raises(ValueError, match="folder name"):
        backend.load_pack("../buffalo_l", models_dir=tmp_path)


def test_scrfd_decodes_one_red_cell_to_its_box_score_and_keypoints(models_dir):
    # Red cell at row 3, col 4 of the stride-32 grid: anchor point (128, 96).
    frame = red_frame(320, 320, [(128, 96, 160, 128)])
    with make_face_detector("insightface", pack=PACK, models_dir=models_dir, det_size=(320, 320)) as det:
        found = det.detect(frame, frame_index=7)
    half = BOX_STRIDES * 32
    assert found.frame_index == 7 and len(found) == 1  # the two anchors of the cell merged by NMS
    np.testing.assert_allclose(found.boxes_xyxy[0], [128 - half, 96 - half, 128 + half, 96 + half], atol=1e-4)
    assert found.scores[0] == pytest.approx(RED_SCORE, abs=1e-6)
    np.testing.assert_allclose(det.last_keypoints_xy[0], [128, 96] + KPS_OFFSETS * 32, atol=1e-4)


def test_scrfd_letterbox_maps_boxes_back_to_frame_pixels(models_dir):
    # 640x480 into 320x320: scale 0.5, so the red square (256..320, 192..256) is the
    # stride-32 cell at row 3, col 4 of the network input again.
    frame = red_frame(480, 640, [(256, 192, 320, 256)])
    det = backend.InsightFaceDetector(PACK, models_dir=models_dir, det_size=(320, 320))
    found = det.detect(frame)
    assert len(found) == 1
    np.testing.assert_allclose(found.boxes_xyxy[0], [128, 64, 384, 320], atol=1e-3)
    np.testing.assert_allclose(det.last_keypoints_xy[0], [256, 192] + KPS_OFFSETS * 64, atol=1e-3)


def test_scrfd_reads_rgb_frames_not_bgr(models_dir):
    frame = np.zeros((320, 320, 3), np.uint8)
    frame[96:128, 128:160, 2] = 255  # blue: the synthetic detector looks at red only
    det = backend.InsightFaceDetector(PACK, models_dir=models_dir, det_size=(320, 320))
    assert len(det.detect(frame)) == 0 and det.last_keypoints_xy.shape == (0, 5, 2)


def test_scrfd_without_keypoints(models_dir):
    frame = red_frame(320, 320, [(128, 96, 160, 128)])
    det = backend.InsightFaceDetector("nokps", models_dir=models_dir, det_size=(320, 320))
    assert len(det.detect(frame)) == 1
    assert det.last_keypoints_xy.shape == (1, 5, 2) and np.isnan(det.last_keypoints_xy).all()


def test_norm_crop_maps_the_keypoints_onto_the_arcface_template(models_dir):
    from insightface.utils.face_align import arcface_dst

    embedder = backend.ArcFaceEmbedder(PACK, models_dir=models_dir)
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, size=(300, 300, 3), dtype=np.uint8)
    # Keypoints = the template at scale 2, offset (10, 20): the chip samples every other
    # pixel from there, chip[y, x] = image[20 + 2y, 10 + 2x].
    chip = embedder.align(image, arcface_dst * 2 + [10, 20])
    assert chip.shape == (112, 112, 3) and chip.dtype == np.uint8
    expected = image[20 : 20 + 224 : 2, 10 : 10 + 224 : 2]
    assert np.abs(chip.astype(int) - expected.astype(int)).max() <= 1


def test_arcface_embedding_is_the_normalised_rgb_network_output(models_dir):
    from insightface.utils.face_align import arcface_dst

    embedder = make_face_embedder("arcface", pack=PACK, models_dir=models_dir, batch_size=2)
    rng = np.random.default_rng(2)
    image = rng.integers(0, 256, size=(200, 240, 3), dtype=np.uint8)
    keypoints = np.stack([arcface_dst + [5, 7], arcface_dst * 1.5 + [60, 30], arcface_dst + [100, 80]])
    embeddings = embedder.embed_keypoints(image, keypoints)
    assert embeddings.shape == (3, 512) and embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-6)
    for row, points in zip(embeddings, keypoints):
        np.testing.assert_allclose(row, expected_embedding(embedder.align(image, points)), atol=1e-5)


def test_box_from_another_detector_gets_scrfd_keypoints(models_dir):
    embedder = backend.ArcFaceEmbedder(PACK, models_dir=models_dir)
    # Box side 64 centred on (132, 132): the crop is 128 px, scaled by 2 to 256. A red
    # 16 px square with its corner at the centre is the stride-32 cell whose anchor point
    # is the crop centre, and that face's box is exactly the target box.
    image = red_frame(300, 300, [(132, 132, 148, 148)])
    points = embedder.keypoints(image, [100, 100, 164, 164])
    np.testing.assert_allclose(points, 132 + KPS_OFFSETS * 16, atol=1e-3)
    # No face overlapping the box: the template scaled to the box's square.
    from insightface.utils.face_align import arcface_dst

    blank = np.zeros((300, 300, 3), np.uint8)
    np.testing.assert_allclose(
        embedder.keypoints(blank, [40, 50, 96, 106]), arcface_dst / 2 + [40, 50], atol=1e-4
    )
    crops = embedder.embed_crops([rng_face(3), rng_face(4)])
    assert crops.shape == (2, 512)
    np.testing.assert_allclose(np.linalg.norm(crops, axis=1), 1.0, atol=1e-6)


def rng_face(seed):
    return np.random.default_rng(seed).integers(0, 256, size=(90, 80, 3), dtype=np.uint8)


def test_registry_entries_and_threshold(models_dir):
    spec = embedder_spec("arcface")
    assert spec.distance == "euclidean"
    assert spec.threshold == pytest.approx(math.sqrt(1.2)) == pytest.approx(1.0954451)
    # On unit vectors, L2 <= sqrt(1.2) exactly when cosine similarity >= 0.4.
    a = np.array([1.0, 0.0])
    for cos in (0.39, 0.41):
        b = np.array([cos, math.sqrt(1 - cos**2)])
        assert (np.linalg.norm(a - b) <= spec.threshold) == (cos >= 0.4)
    embedder = make_face_embedder("arcface", pack=PACK, models_dir=models_dir)
    det = make_face_detector("insightface", pack=PACK, models_dir=models_dir)
    assert (
        embedder.cache_key() != make_face_embedder("arcface", pack="nokps", models_dir=models_dir).cache_key()
    )
    assert "det_synthetic.onnx" in det.cache_key() and "size640x640" in det.cache_key()


def test_attack_recognizers_fit_on_frozen_arcface(models_dir, monkeypatch):
    from automated.attack.recognizers import FACE_RECOGNIZERS, EmbeddingCache

    monkeypatch.setenv("DEID_MODELS_DIR", str(models_dir))  # the synthetic default pack
    # Two "identities": bright and dark random crops; the synthetic embedding separates them.
    rng = np.random.default_rng(5)
    bright = rng.integers(150, 256, size=(6, 64, 64, 3), dtype=np.uint8)
    dark = rng.integers(0, 100, size=(6, 64, 64, 3), dtype=np.uint8)
    X = np.concatenate([bright, dark])
    y = np.array(["a"] * 6 + ["b"] * 6)
    for name in ("arcface_svm", "arcface_knn"):
        model = FACE_RECOGNIZERS[name]()
        model.steps[0][1].cache = EmbeddingCache()
        model.fit(X[::2], y[::2])
        assert list(model.predict(X[1::2])) == list(y[1::2])


def test_face_evaluation_runs_on_the_insightface_detector_and_arcface(models_dir, tmp_path):
    from automated.face_eval import evaluate_video
    from automated.video import VideoWriter

    # A red "face" on black, moving 32 px per frame; the masked video removes it.
    frames = [red_frame(320, 320, [(64 + 32 * i, 96, 96 + 32 * i, 128)]) for i in range(4)]
    paths = {"clear": tmp_path / "clear.mkv", "masked": tmp_path / "masked.mkv"}
    for name, video in (("clear", frames), ("masked", [np.zeros_like(f) for f in frames])):
        with VideoWriter(paths[name], 25.0, (320, 320), codec="ffv1") as writer:
            for frame in video:
                writer.write(frame)
    detector = backend.InsightFaceDetector(PACK, models_dir=models_dir, det_size=(320, 320))
    embedder = make_face_embedder("arcface", pack=PACK, models_dir=models_dir)
    box = detector.detect(frames[0]).boxes_xyxy
    gallery = embedder.embed(frames[0], box)
    kwargs = dict(stride=1, detector=detector, embedder=embedder)
    same = evaluate_video(paths["clear"], paths["clear"], gallery, ["p"], "p", **kwargs)
    removed = evaluate_video(paths["clear"], paths["masked"], gallery, ["p"], "p", **kwargs)
    assert same.embedder == "arcface" and same.threshold == pytest.approx(math.sqrt(1.2))
    assert (same.clear_faces, same.masked_faces, same.match_rate) == (4, 4, 1.0)
    assert same.mean_iou == pytest.approx(1.0)
    assert (removed.clear_faces, removed.masked_faces, removed.detection_failure_rate) == (4, 0, 1.0)
    assert removed.mean_iou == 0.0  # (its match rate says nothing: the synthetic ArcFace is no recognizer)


def test_arcface_input_checks_and_empty_batches(models_dir):
    embedder = backend.ArcFaceEmbedder(PACK, models_dir=models_dir)
    assert embedder.embed(np.zeros((20, 20, 3), np.uint8), np.zeros((0, 4))).shape == (0, 512)
    assert embedder.embed_faces([]).shape == (0, 512)
    with pytest.raises(ValueError, match="4 finite numbers"):
        embedder.embed_faces([(np.zeros((20, 20, 3), np.uint8), [0, 0, np.nan, 5])])
    with pytest.raises(ValueError, match="uint8"):
        embedder.embed(np.zeros((20, 20, 3)), [[0, 0, 5, 5]])
    with pytest.raises(ValueError, match="batch_size"):
        backend.ArcFaceEmbedder(PACK, models_dir=models_dir, batch_size=0)
    with pytest.raises(ValueError, match="det_size"):
        backend.InsightFaceDetector(PACK, models_dir=models_dir, det_size=(100, 100))


REAL_PACK = backend.pack_dir(backend.DEFAULT_PACK)


@pytest.mark.skipif(not REAL_PACK.is_dir(), reason=f"no real InsightFace pack at {REAL_PACK} (README)")
def test_real_pack_detects_and_embeds_a_real_face():
    from pathlib import Path

    from PIL import Image

    faces = sorted(Path(__file__).resolve().parents[3].joinpath("shared", "data", "faces").rglob("*.pgm"))
    if not faces:
        pytest.skip("no face images in ../shared/data/faces")
    face = np.asarray(Image.open(faces[0]).convert("RGB"))  # ORL: a 92x112 face filling the image
    image = np.zeros((3 * face.shape[0], 3 * face.shape[1], 3), np.uint8)
    image[face.shape[0] : 2 * face.shape[0], face.shape[1] : 2 * face.shape[1]] = face
    det = backend.InsightFaceDetector()
    found = det.detect(image)
    assert len(found) >= 1
    embedding = backend.ArcFaceEmbedder().embed_keypoints(image, det.last_keypoints_xy[:1])
    assert embedding.shape == (1, 512)
    np.testing.assert_allclose(np.linalg.norm(embedding), 1.0, atol=1e-5)
