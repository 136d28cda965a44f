"""evaluate_video / summarize: errors, and the identity-vs-blur-vs-pixelation ordering on GRID.

The real-data claim (issue 2, "Done means"): on the unmasked "identity" baseline the match
and rank-1 rates are high, while strong blur and pixelation score clearly lower. Gallery
stills come from a different clip of the same person (face_fixtures.py).
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from automated.anonymizers import anonymize_video
from automated.face_crop import NoFaceFoundError
from automated.face_eval import (
    NoFaceError,
    VideoEvaluation,
    VideoPairError,
    embed_gallery_image,
    evaluate_video,
    summarize,
)
from automated.recognition import DEFAULT_EMBEDDER, EMBEDDERS, make_face_embedder
from automated.video import VideoWriter, iter_frames

from .face_fixtures import PROBE_CLIPS, gallery, probe_path

METHODS = ("identity", "blur_frame", "pixelate_face")
DIM = EMBEDDERS[DEFAULT_EMBEDDER].dim  # the default embedder's size (from its model file)
STRIDE = 15  # 5 tested frames of 75


@pytest.fixture(scope="module")
def evaluations(data_dir, tmp_path_factory):
    """{(clip, method): VideoEvaluation} for the three probe clips and three baselines."""
    folder = tmp_path_factory.mktemp("baselines")
    embeddings, identities = gallery(data_dir)
    embedder, clear_cache = make_face_embedder(), {}
    results = {}
    for clip, person in PROBE_CLIPS.items():
        for method in METHODS:
            masked = anonymize_video(
                probe_path(data_dir, clip), folder / f"{clip}_{method}.mkv", method, key=bytes(32)
            )
            results[clip, method] = evaluate_video(
                probe_path(data_dir, clip),
                masked.path,
                embeddings,
                identities,
                person,
                stride=STRIDE,
                embedder=embedder,
                clear_cache=clear_cache,
            )
    return results


@pytest.mark.slow
@pytest.mark.parametrize("clip", sorted(PROBE_CLIPS))
def test_unmasked_identity_baseline_is_recognised_and_detected(evaluations, clip):
    result = evaluations[clip, "identity"]
    assert result.frames_tested == 5 and result.clear_faces == 5 and result.masked_faces == 5
    assert result.match_rate == 1.0 and result.rank1_rate == 1.0 and result.mean_rank == 1.0
    assert result.mean_iou == pytest.approx(1.0) and not hasattr(result, "cumulative_iou")
    assert result.detection_failure_rate == 0.0
    assert result.ssim == pytest.approx(1.0)
    assert result.psnr_db == math.inf and result.psnr_identical_frames == 5
    assert result.chance_level == pytest.approx(1 / 6) and result.n_identities == 6
    # The clear reference is the same video here.
    assert (result.clear_match_rate, result.clear_rank1_rate) == (1.0, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["blur_frame", "pixelate_face"])
def test_strong_blur_and_pixelation_score_clearly_lower(evaluations, method):
    for clip in PROBE_CLIPS:
        masked = evaluations[clip, method]
        # No masked face is accepted as the person at dlib's threshold (verification).
        assert masked.match_rate <= 0.2, (clip, masked)
        assert masked.mean_genuine_distance > evaluations[clip, "identity"].mean_genuine_distance + 0.3
        assert masked.ssim < 0.95 and 15 < masked.psnr_db < 35
    # Closed-set rank-1 among 6 identities drops on average; a pixelated face can still be
    # nearest to its own identity (colour and outline survive), so not to zero per clip.
    masked_rank1 = np.mean([evaluations[clip, method].rank1_rate for clip in PROBE_CLIPS])
    assert masked_rank1 <= 0.6
    summary = summarize(evaluations[clip, method] for clip in PROBE_CLIPS)
    assert summary["masking_success_rank1"] >= 0.4 and summary["masking_success_match"] >= 0.8


@pytest.mark.slow
def test_summarize_means_over_videos_and_keeps_identical_frames_apart(evaluations):
    identity_summary = summarize(evaluations[clip, "identity"] for clip in PROBE_CLIPS)
    assert identity_summary["n_videos"] == 3 and identity_summary["frames_tested"] == 15
    assert identity_summary["psnr_db"] == math.inf and identity_summary["psnr_identical_frames"] == 15
    blur = [evaluations[clip, "blur_frame"] for clip in PROBE_CLIPS]
    assert summarize(blur)["ssim"] == pytest.approx(np.mean([e.ssim for e in blur]))


def evaluation(**overrides):
    values = dict(
        frames_tested=4,
        clear_faces=4,
        masked_faces=2,
        mean_iou=0.5,
        detection_failure_rate=0.5,
        match_rate=0.25,
        rank1_rate=0.5,
        mean_rank=1.5,
        mean_genuine_distance=0.7,
        clear_match_rate=1.0,
        clear_rank1_rate=1.0,
        chance_level=0.25,
        n_identities=4,
        ssim=0.8,
        psnr_db=20.0,
        psnr_identical_frames=0,
        stride=5,
        detector="mediapipe",
        threshold=0.6,
    )
    return VideoEvaluation(**{**values, **overrides})


def test_summarize_hand_computed():
    summary = summarize(
        [
            evaluation(),
            evaluation(match_rate=0.75, rank1_rate=0.0, psnr_db=math.inf, psnr_identical_frames=4),
            evaluation(clear_faces=0, match_rate=math.nan, rank1_rate=math.nan, psnr_db=30.0),
        ]
    )
    assert summary["n_videos"] == 3 and summary["clear_faces"] == 8
    assert summary["match_rate"] == pytest.approx(0.5)  # NaN video left out
    assert summary["rank1_rate"] == pytest.approx(0.25)
    assert summary["psnr_db"] == pytest.approx(25.0) and summary["psnr_identical_frames"] == 4
    assert summary["masking_success_rank1"] == pytest.approx(0.75)
    with pytest.raises(ValueError, match="no video evaluations"):
        summarize([])


@pytest.fixture(scope="module")
def short_clip(data_dir, tmp_path_factory):
    """The first 10 frames of a real clip, the same with 9 frames, at another size, and
    darkened by 8 grey levels ("dim": every frame differs from the clear one)."""
    folder = tmp_path_factory.mktemp("pairs")
    frames = [f for _, f in iter_frames(probe_path(data_dir, "bbaf2n"), end=10)]
    paths = {}
    for name, count, size in (("ten", 10, None), ("nine", 9, None), ("small", 10, (180, 144))):
        paths[name] = folder / f"{name}.mkv"
        resolution = size or (360, 288)
        with VideoWriter(paths[name], 25.0, resolution, codec="ffv1") as writer:
            for frame in frames[:count]:
                writer.write(frame if size is None else np.ascontiguousarray(frame[::2, ::2]))
    paths["dim"] = folder / "dim.mkv"
    with VideoWriter(paths["dim"], 25.0, (360, 288), codec="ffv1") as writer:
        for frame in frames:
            writer.write(np.maximum(frame, 8) - 8)
    return paths


@pytest.mark.parametrize(
    "masked, stride, message",
    [
        ("nine", 1, "nine.mkv has 9 frames, its clear video ten.mkv has 10"),
        # Stride 5 tests frames 0 and 5 of both: the missing last frame is never a tested one,
        # and the one decoding pass still finds it.
        ("nine", 5, "nine.mkv has 9 frames, its clear video ten.mkv has 10"),
        ("small", 1, "small.mkv is 180x144 pixels, its clear video ten.mkv is 360x288"),
    ],
)
def test_mismatched_videos_are_rejected(short_clip, masked, stride, message):
    with pytest.raises(VideoPairError, match=message):
        evaluate_video(short_clip["ten"], short_clip[masked], np.zeros((1, DIM)), ["a"], "a", stride=stride)


def test_skipped_frames_are_counted_not_decoded(short_clip):
    frames = list(iter_frames(short_clip["ten"], stride=4, skipped=True))
    assert [index for index, _ in frames] == list(range(10))
    assert [index for index, frame in frames if frame is not None] == [0, 4, 8]
    assert all(frames[i][1].shape == (288, 360, 3) for i in (0, 4, 8))
    assert [i for i, _ in iter_frames(short_clip["ten"], stride=4, start=2, skipped=True)] == list(
        range(2, 10)
    )


def test_true_identity_must_be_in_the_gallery(short_clip):
    with pytest.raises(ValueError, match="true identity 'b' is not in the gallery"):
        evaluate_video(short_clip["ten"], short_clip["ten"], np.zeros((1, DIM)), ["a"], "b")
    with pytest.raises(ValueError, match="stride must be a whole number >= 1, got 0"):
        evaluate_video(short_clip["ten"], short_clip["ten"], np.zeros((1, DIM)), ["a"], "a", stride=0)


class CountingDetector:
    """A real MediaPipe detector that counts its calls."""

    def __init__(self):
        from automated.detection import MediaPipeFaceDetector

        self.inner, self.calls = MediaPipeFaceDetector(), 0

    def detect(self, frame_rgb, frame_index=0):
        self.calls += 1
        return self.inner.detect(frame_rgb, frame_index)

    def cache_key(self):  # the counter is not a setting: the clear cache key is the model's
        return self.inner.cache_key()


@pytest.mark.slow
def test_clear_cache_reuses_clear_frames_and_changes_no_result(data_dir, short_clip):
    embeddings, identities = gallery(data_dir)
    detector, cache = CountingDetector(), {}
    kwargs = dict(stride=5, detector=detector, clear_cache=cache)
    first = evaluate_video(short_clip["ten"], short_clip["dim"], embeddings, identities, "s1", **kwargs)
    assert detector.calls == 4  # 2 tested frames x (clear + masked)
    second = evaluate_video(short_clip["ten"], short_clip["dim"], embeddings, identities, "s1", **kwargs)
    assert detector.calls == 6  # masked frames only
    # A masked video decoding to the clear frames (test_unchanged_frames.py): nothing detected.
    evaluate_video(short_clip["ten"], short_clip["ten"], embeddings, identities, "s1", **kwargs)
    assert detector.calls == 6
    # Equal up to float rounding: the first call embeds the clear and masked faces in one
    # batch, the second the masked face alone (PyTorch's kernels depend on the batch).
    distance = second.mean_genuine_distance
    assert (
        second == replace(first, mean_genuine_distance=distance)
        and first.rank1_rate == 1.0
        and len(cache) == 1
    )
    assert distance == pytest.approx(first.mean_genuine_distance, abs=1e-6)


@pytest.fixture(scope="module")
def no_face_clip(data_dir, tmp_path_factory):
    """Ten real GRID frames cropped to the wall above the speaker's head (no face)."""
    path = tmp_path_factory.mktemp("noface") / "wall.mkv"
    with VideoWriter(path, 25.0, (64, 48), codec="ffv1") as writer:
        for _, frame in iter_frames(probe_path(data_dir, "bbaf2n"), end=10):
            writer.write(np.ascontiguousarray(frame[:48, :64]))
    return path


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"stride": 2.5}, "stride must be a whole number >= 1, got 2.5"),
        ({"stride": "5"}, "stride must be a whole number >= 1, got '5'"),
        ({"stride": True}, "stride must be a whole number >= 1, got True"),
        ({"threshold": -0.1}, "threshold must be a finite L2 distance >= 0, got -0.1"),
        ({"threshold": math.nan}, "threshold must be a finite L2 distance >= 0, got nan"),
        ({"no_face": "zero"}, "no_face must be 'raise' or 'nan', got 'zero'"),
    ],
)
def test_bad_options_are_named_before_any_decoding(short_clip, kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate_video(short_clip["ten"], short_clip["ten"], np.zeros((1, DIM)), ["a"], "a", **kwargs)


@pytest.mark.parametrize(
    "embeddings, labels, message",
    [
        (
            np.zeros((2, 64)),
            ["a", "b"],
            rf"gallery_embeddings must have {DIM} columns \(the embedder's size\), got \(2, 64\)",
        ),
        (np.full((2, DIM), np.nan), ["a", "b"], "gallery_embeddings hold NaN or infinite values"),
        (np.zeros((0, DIM)), [], rf"got \(0, {DIM}\) and 0 identities"),
        (np.zeros((2, DIM)), ["a"], rf"got \(2, {DIM}\) and 1 identities"),
    ],
)
def test_bad_gallery_is_named_before_any_decoding(short_clip, embeddings, labels, message):
    with pytest.raises(ValueError, match=message):
        evaluate_video(short_clip["ten"], short_clip["ten"], embeddings, labels, "a")


def test_clear_video_without_a_face_raises_unless_asked_for_nan(no_face_clip):
    gallery_embeddings = np.zeros((2, DIM), np.float32)
    with pytest.raises(
        NoFaceError, match=r"wall.mkv: no face detected in the 5 tested clear frames \(stride 2\)"
    ):
        evaluate_video(no_face_clip, no_face_clip, gallery_embeddings, ["a", "b"], "a", stride=2)
    result = evaluate_video(
        no_face_clip, no_face_clip, gallery_embeddings, ["a", "b"], "a", stride=2, no_face="nan"
    )
    assert (result.frames_tested, result.clear_faces, result.masked_faces) == (5, 0, 0)
    assert (
        math.isnan(result.match_rate)
        and math.isnan(result.mean_iou)
        and math.isnan(result.detection_failure_rate)
    )
    assert result.ssim == pytest.approx(1.0) and result.psnr_db == math.inf  # image metrics stay defined


def test_summarize_averages_mean_iou_over_videos_and_keeps_the_gallery_size():
    summary = summarize(
        [
            evaluation(mean_iou=0.5, frames_tested=4),
            evaluation(mean_iou=0.2, clear_faces=3, frames_tested=40),  # a longer video weighs the same
            evaluation(clear_faces=0, mean_iou=math.nan),
        ]
    )
    assert summary["mean_iou"] == pytest.approx(0.35)  # each video with a face weighs the same
    assert "cumulative_iou" not in summary and summary["frames_tested"] == 48
    assert summary["n_identities"] == 4 and isinstance(summary["n_identities"], int)
    with pytest.raises(ValueError, match=r"scored against galleries of different sizes: \[4, 5\]"):
        summarize([evaluation(), evaluation(n_identities=5, chance_level=0.2)])


@pytest.mark.slow
def test_clear_cache_keeps_detector_models_apart(short_clip):
    from automated.detection import MediaPipeFaceDetector

    cache, gallery_embeddings = {}, np.zeros((1, DIM), np.float32)
    for model_selection in (0, 1):
        with MediaPipeFaceDetector(model_selection=model_selection) as detector:
            evaluate_video(
                short_clip["ten"],
                short_clip["ten"],
                gallery_embeddings,
                ["a"],
                "a",
                stride=5,
                detector=detector,
                clear_cache=cache,
            )
    assert len(cache) == 2


@pytest.mark.slow
def test_embedder_and_its_threshold_are_recorded_and_kept_apart_in_the_clear_cache(data_dir, short_clip):
    embeddings, identities = gallery(data_dir)
    cache, results = {}, {}
    for name in ("dlib_resnet", "dlib_resnet_native"):
        results[name] = evaluate_video(
            short_clip["ten"],
            short_clip["ten"],
            embeddings,
            identities,
            "s1",
            stride=5,
            embedder=name,
            clear_cache=cache,
        )
    assert len(cache) == 2  # one clear analysis per embedder
    ours, native = results["dlib_resnet"], results["dlib_resnet_native"]
    assert (ours.embedder, native.embedder) == ("dlib_resnet", "dlib_resnet_native")
    assert ours.threshold == native.threshold == EMBEDDERS["dlib_resnet"].threshold == 0.6  # the default
    # The same network: same decisions, distances equal to float rounding.
    assert ours.rank1_rate == native.rank1_rate == 1.0 and ours.match_rate == native.match_rate == 1.0
    assert ours.mean_genuine_distance == pytest.approx(native.mean_genuine_distance, abs=1e-4)
    custom = evaluate_video(
        short_clip["ten"],
        short_clip["ten"],
        embeddings,
        identities,
        "s1",
        stride=5,
        threshold=0.0,
        clear_cache=cache,
    )
    assert custom.threshold == 0.0 and custom.match_rate == 0.0 and len(cache) == 2  # threshold applied after


class OneImageEmbedder:
    """An embedder of another library with only ``embed`` and ``dim`` (the older interface)."""

    dim = DIM

    def __init__(self):
        self.inner = make_face_embedder()

    def embed(self, image_rgb, boxes_xyxy):
        return self.inner.embed(image_rgb, boxes_xyxy)


@pytest.mark.slow
def test_an_embedder_with_only_embed_works_and_needs_a_threshold(data_dir, short_clip):
    embeddings, identities = gallery(data_dir)
    with pytest.raises(ValueError, match="OneImageEmbedder has no documented threshold: pass threshold="):
        evaluate_video(
            short_clip["ten"], short_clip["ten"], embeddings, identities, "s1", embedder=OneImageEmbedder()
        )
    result = evaluate_video(
        short_clip["ten"],
        short_clip["ten"],
        embeddings,
        identities,
        "s1",
        stride=5,
        embedder=OneImageEmbedder(),
        threshold=0.6,
    )
    assert result.embedder == "OneImageEmbedder" and result.rank1_rate == 1.0 and result.match_rate == 1.0


def test_summarize_refuses_mixed_embedders_or_thresholds():
    with pytest.raises(
        ValueError, match=r"scored with different embedders or thresholds: \[\('a', 0.6\), \('b', 0.6\)\]"
    ):
        summarize([evaluation(embedder="a"), evaluation(embedder="b")])
    with pytest.raises(ValueError, match="different embedders or thresholds"):
        summarize([evaluation(), evaluation(threshold=0.5)])


def test_gallery_still_without_a_face_is_an_error_unless_declared_cropped():
    wall = np.full((120, 160, 3), 127, np.uint8)
    with pytest.raises(NoFaceFoundError, match="no face found in the 160x120 gallery image"):
        embed_gallery_image(wall)
    embedding = embed_gallery_image(wall, assume_cropped=True)  # the whole still is the face
    assert embedding.shape == (DIM,) and embedding.dtype == np.float32
