"""Baseline anonymizers: pure frame transforms and lossless video writing on a real clip."""

import numpy as np
import pytest

from automated.anonymizers import (
    BASELINE_METHODS,
    FrameContext,
    NoFaceInVideoError,
    anonymize_video,
    blur_face,
    blur_frame,
    block_permute,
    canny_edges,
    eye_mask,
    face_region,
    face_track,
    frame_nonce,
    grid_permute,
    identity,
    keystream_permutation,
    pixelate_face,
)
from automated.video import VideoError, VideoInfo, VideoWriter, iter_frames

from .face_fixtures import probe_path

KEY = bytes(range(32))
REGION = (16, 8, 64, 56)  # 48 x 48 pixels: 3 x 3 blocks of 16


@pytest.fixture
def frame():
    return np.random.default_rng(0).integers(0, 256, (72, 96, 3), dtype=np.uint8)


def outside(frame_rgb, region):
    x1, y1, x2, y2 = region
    mask = np.ones(frame_rgb.shape[:2], bool)
    mask[y1:y2, x1:x2] = False
    return frame_rgb[mask]


@pytest.mark.parametrize("name", sorted(BASELINE_METHODS))
def test_every_method_returns_a_new_uint8_frame_of_the_same_shape(frame, name):
    before = frame.copy()
    out = BASELINE_METHODS[name].apply(
        frame, FrameContext(3, np.array([20, 10, 60, 50], np.float32), None, KEY)
    )
    assert out.shape == frame.shape and out.dtype == np.uint8 and out is not frame
    np.testing.assert_array_equal(frame, before)  # the input is untouched


def test_identity_is_unchanged(frame):
    np.testing.assert_array_equal(identity(frame), frame)


def test_face_region_is_the_box_plus_margin_clipped_to_the_frame():
    assert face_region([10, 20, 30, 60], (100, 100), margin=0.2) == (6, 12, 34, 68)
    assert face_region([0, 0, 50, 50], (40, 40), margin=0.5) == (0, 0, 40, 40)
    with pytest.raises(ValueError, match="empty region"):
        face_region([200, 200, 210, 210], (100, 100))


def test_blur_face_changes_only_the_region_and_smooths_it(frame):
    out = blur_face(frame, REGION)
    np.testing.assert_array_equal(outside(out, REGION), outside(frame, REGION))
    x1, y1, x2, y2 = REGION
    assert out[y1:y2, x1:x2].std() < frame[y1:y2, x1:x2].std() / 4


def test_blur_face_equals_the_whole_frame_blur_pasted_into_the_region(data_dir):
    """Blurring only the kernel's window around the region gives the region the pixels of
    the whole-frame blur, bit for bit: regions inside the frame, at every edge and corner,
    1 pixel wide and the whole frame, at the baseline's sigma and two smaller ones."""
    from automated.anonymizers.filters import gaussian_radius_px

    assert gaussian_radius_px(15.0) == 45  # OpenCV's 91-tap kernel for 8-bit images
    _, frame = next(iter_frames(data_dir / "videos" / "grid_talking_heads" / "sbwe5n.mpg"))
    height, width = frame.shape[:2]
    regions = [(150, 60, 230, 170), (0, 0, 80, 90), (width - 70, height - 60, width, height),
               (0, 100, width, 140), (200, 0, 201, height), (0, 0, width, height)]  # fmt: skip
    rng = np.random.default_rng(1)
    for _ in range(20):
        (x1, x2), (y1, y2) = np.sort(rng.integers(0, width, 2)), np.sort(rng.integers(0, height, 2))
        regions.append((int(x1), int(y1), int(x2) + 1, int(y2) + 1))
    for sigma in (15.0, 4.0, 1.5):
        whole = blur_frame(frame, sigma_px=sigma)
        for x1, y1, x2, y2 in regions:
            expected = frame.copy()
            expected[y1:y2, x1:x2] = whole[y1:y2, x1:x2]
            np.testing.assert_array_equal(blur_face(frame, (x1, y1, x2, y2), sigma_px=sigma), expected)


def test_blur_frame_of_a_flat_frame_is_the_same_flat_frame():
    flat = np.full((40, 50, 3), 77, np.uint8)
    np.testing.assert_array_equal(blur_frame(flat), flat)


def test_pixelate_face_makes_cells_of_their_mean_colour(frame):
    out = pixelate_face(frame, REGION, cell_px=16)
    x1, y1 = REGION[:2]
    cell = frame[y1 : y1 + 16, x1 : x1 + 16].astype(np.float64)
    assert np.all(out[y1 : y1 + 16, x1 : x1 + 16] == out[y1, x1])  # one colour per cell
    np.testing.assert_allclose(out[y1, x1], cell.mean(axis=(0, 1)), atol=1)
    np.testing.assert_array_equal(outside(out, REGION), outside(frame, REGION))


def test_eye_mask_blackens_a_strip_through_the_eyes_only():
    frame = np.full((200, 200, 3), 180, np.uint8)
    box = [50, 40, 150, 168]  # 128 px high -> 80 px strip
    out = eye_mask(frame, box, eyes_xy=[[80, 80], [120, 80]])
    assert np.all(out[41:119, 40:160] == 0)  # 80 +- 39 rows, box width + margin
    assert np.all(out[130:, :] == 180) and np.all(out[:35, :] == 180)


def test_keystream_permutation_is_a_permutation_that_depends_on_the_nonce():
    first = keystream_permutation(50, KEY, frame_nonce(0))
    assert sorted(first.tolist()) == list(range(50))
    np.testing.assert_array_equal(first, keystream_permutation(50, KEY, frame_nonce(0)))
    assert not np.array_equal(first, keystream_permutation(50, KEY, frame_nonce(1)))
    assert not np.array_equal(first, keystream_permutation(50, bytes(32), frame_nonce(0)))


@pytest.mark.parametrize(
    "key, nonce, message",
    [(b"short", bytes(16), "16, 24 or 32 bytes"), (KEY, bytes(8), "nonce must be 16 bytes")],
)
def test_keystream_permutation_errors(key, nonce, message):
    with pytest.raises(ValueError, match=message):
        keystream_permutation(4, key, nonce)


def test_block_permute_moves_whole_blocks_inside_the_region(frame):
    out = block_permute(frame, REGION, key=KEY, nonce=frame_nonce(5), block_px=16)
    np.testing.assert_array_equal(outside(out, REGION), outside(frame, REGION))

    def blocks(image):
        x1, y1, x2, y2 = REGION
        return sorted(
            image[y : y + 16, x : x + 16].tobytes() for y in range(y1, y2, 16) for x in range(x1, x2, 16)
        )

    assert blocks(out) == blocks(frame) and not np.array_equal(out, frame)


def test_block_permute_fixed_repeats_and_keyed_changes_from_frame_to_frame(frame):
    box = np.array([20, 10, 60, 50], np.float32)
    fixed, keyed = BASELINE_METHODS["block_permute_fixed"], BASELINE_METHODS["block_permute_keyed"]
    assert np.array_equal(
        fixed.apply(frame, FrameContext(1, box, key=KEY)), fixed.apply(frame, FrameContext(2, box, key=KEY))
    )
    assert not np.array_equal(
        keyed.apply(frame, FrameContext(1, box, key=KEY)), keyed.apply(frame, FrameContext(2, box, key=KEY))
    )


def _cell_order(frame, region, grid=8):
    """Read back which source cell landed where, from cells painted with their index."""
    x1, y1, x2, y2 = region
    cw, ch = -(-(x2 - x1) // grid), -(-(y2 - y1) // grid)
    return [
        int(frame[y1 + r * ch + ch // 2, x1 + c * cw + cw // 2, 0]) for r in range(grid) for c in range(grid)
    ]


def _painted(region, grid=8, size=(288, 360)):
    frame = np.zeros((*size, 3), np.uint8)
    x1, y1, x2, y2 = region
    cw, ch = -(-(x2 - x1) // grid), -(-(y2 - y1) // grid)
    for r in range(grid):
        for c in range(grid):
            frame[y1 + r * ch : y1 + (r + 1) * ch, x1 + c * cw : x1 + (c + 1) * cw] = r * grid + c
    return frame


def test_fixed_permutation_is_the_same_for_every_face_size_and_video():
    # Two faces of different sizes (as in two videos): the same cells move to the same places.
    orders = []
    for index, box in enumerate(((100, 80, 164, 144), (80, 40, 240, 200))):
        region = face_region(np.array(box, np.float32), (360, 288))  # the box plus margin, as the method uses
        context = FrameContext(index, np.array(box, np.float32), key=KEY, video_nonce=bytes([index]) * 8)
        masked = BASELINE_METHODS["block_permute_fixed"].apply(_painted(region), context)
        orders.append(_cell_order(masked, region))
    assert orders[0] == orders[1]
    assert sorted(orders[0]) == list(range(64)) and orders[0] != list(range(64))


def test_grid_permute_keeps_the_grid_inside_the_frame():
    frame = _painted((0, 0, 80, 80), size=(100, 100))
    out = grid_permute(frame, (60, 60, 140, 140), key=KEY)  # runs past the corner: moved inside
    assert out.shape == frame.shape and not np.array_equal(out, frame)
    with pytest.raises(ValueError, match="grid_cells must be >= 2"):
        grid_permute(frame, (0, 0, 10, 10), key=KEY, grid_cells=1)


def test_canny_edges_are_white_on_black_in_three_equal_channels():
    frame = np.zeros((40, 40, 3), np.uint8)
    frame[:, 20:] = 255
    edges = canny_edges(frame)
    assert set(np.unique(edges)) == {0, 255}
    assert np.array_equal(edges[..., 0], edges[..., 2])
    assert edges[:, 19:21].max() == 255 and edges[:, :15].max() == 0


@pytest.mark.slow
def test_identity_baseline_is_lossless_and_keeps_count_size_and_fps(data_dir, tmp_path):
    source = probe_path(data_dir, "bbaf2n")
    info = anonymize_video(source, tmp_path / "same.mkv", "identity")
    source_info = VideoInfo.from_video_path(source)
    assert (info.frame_count, info.resolution_wh, info.fps) == (75, (360, 288), 25.0)
    assert (info.frame_count, info.resolution_wh, info.fps) == (
        source_info.frame_count,
        source_info.resolution_wh,
        source_info.fps,
    )
    # The info is the frames written (the output is not decoded to count them): the file
    # decodes to exactly those.
    written = VideoInfo.from_video_path(info.path)
    assert (written.frame_count, written.resolution_wh, written.fps) == (75, (360, 288), 25.0)
    for (_, clear), (_, masked) in zip(
        iter_frames(source, stride=15), iter_frames(info.path, stride=15), strict=True
    ):
        np.testing.assert_array_equal(masked, clear)  # FFV1 RGB: bit-exact


@pytest.mark.slow
def test_keyed_block_permutation_scrambles_the_tracked_face_of_a_real_clip(data_dir, tmp_path):
    source = probe_path(data_dir, "bbaf2n")
    boxes, eyes = face_track(source)
    assert boxes.shape == (75, 4) and eyes.shape == (75, 2, 2) and not np.isnan(boxes).any()
    info = anonymize_video(source, tmp_path / "keyed.mkv", "block_permute_keyed", key=KEY)
    assert info.frame_count == 75
    ((_, clear),) = iter_frames(source, start=30, end=31)
    ((_, masked),) = iter_frames(info.path, start=30, end=31)
    x1, y1, x2, y2 = face_region(boxes[30], (360, 288))
    assert np.array_equal(masked[:, : x1 - 1], clear[:, : x1 - 1])  # left of the face untouched
    assert np.abs(masked[y1:y2, x1:x2].astype(int) - clear[y1:y2, x1:x2]).mean() > 20


@pytest.mark.slow
def test_a_cached_face_track_masks_a_real_clip_exactly_as_a_fresh_one(data_dir, tmp_path):
    """The face-track cache (issue 20): the track, and so the masked frames, are those of
    a fresh detection bit for bit; a hit runs no detector; a damaged entry is computed again."""
    source = probe_path(data_dir, "bbaf2n")
    cache = tmp_path / "tracks"
    fresh_boxes, fresh_eyes = face_track(source)
    first = face_track(source, cache_dir=cache)  # computed and stored
    (entry,) = cache.glob("face_track_*.npz")
    second = face_track(source, cache_dir=cache, detector=_NoDetector())  # read, detector unused
    for boxes, eyes in (first, second):
        assert boxes.dtype == np.float32 and eyes.dtype == np.float32
        np.testing.assert_array_equal(boxes, fresh_boxes)
        np.testing.assert_array_equal(eyes, fresh_eyes)
    assert fresh_boxes.shape == (75, 4) and not np.isnan(fresh_boxes).any()
    masked = {}
    for name, cache_dir in (("fresh", None), ("cached", cache)):
        for method in ("blur_face", "eye_mask"):
            info = anonymize_video(
                source,
                tmp_path / f"{name}_{method}.mkv",
                method,
                key=KEY,
                video_nonce=bytes(8),
                face_track_cache_dir=cache_dir,
            )
            masked[name, method] = np.stack([frame for _, frame in iter_frames(info.path)])
    for method in ("blur_face", "eye_mask"):
        assert masked["cached", method].shape == (75, 288, 360, 3)
        np.testing.assert_array_equal(masked["cached", method], masked["fresh", method])
    entry.write_bytes(b"not an npz")  # damaged: computed again (with the detector) and rewritten
    boxes, eyes = face_track(source, cache_dir=cache)
    np.testing.assert_array_equal(boxes, fresh_boxes)
    np.testing.assert_array_equal(eyes, fresh_eyes)
    np.testing.assert_array_equal(face_track(source, cache_dir=cache, detector=_NoDetector())[0], fresh_boxes)


class _NoDetector:
    """A detector that fails if used: a cache hit must not detect. Its key is MediaPipe's default."""

    def cache_key(self) -> str:
        from automated.detection import MediaPipeFaceDetector

        detector = MediaPipeFaceDetector()
        try:
            return detector.cache_key()
        finally:
            detector.close()

    def detect(self, frame_rgb, frame_index=0):
        raise AssertionError("the cached face track was detected again")


class _FixedFaceDetector:
    """One face at a fixed place in every frame (eyes given), counting its calls."""

    def __init__(self):
        self.calls = 0
        self.last_keypoints_xy = np.zeros((0, 6, 2), np.float32)

    def cache_key(self) -> str:
        return "fixed-face-test-detector"

    def detect(self, frame_rgb, frame_index=0):
        from automated.detection import FaceDetections

        self.calls += 1
        keypoints = np.array([[20, 20], [40, 20], [30, 30], [30, 40], [15, 25], [45, 25]], np.float32)
        self.last_keypoints_xy = keypoints[None]
        box = np.array([[10.0, 8.0, 50.0, 44.0]], np.float32)
        return FaceDetections(frame_index, box, np.ones(1, np.float32))


def test_a_face_track_cache_entry_with_a_damaged_deflate_stream_is_computed_again(tmp_path):
    """A flipped byte inside an entry's compressed arrays makes zlib fail while inflating
    (``zlib.error``, before zipfile's CRC check): the track is computed again and the entry
    rewritten, as for any other unreadable entry, not an error of every later masking."""
    import zipfile

    clip = tmp_path / "clip.mkv"
    with VideoWriter(clip, 25.0, (64, 48), codec="ffv1") as writer:
        for value in (90, 120, 150):
            writer.write(np.full((48, 64, 3), value, np.uint8))
    cache, detector = tmp_path / "tracks", _FixedFaceDetector()
    boxes, eyes = face_track(clip, detector=detector, cache_dir=cache)
    assert detector.calls == 3 and boxes.tolist() == [[10.0, 8.0, 50.0, 44.0]] * 3
    (entry,) = cache.glob("face_track_*.npz")
    raw = bytearray(entry.read_bytes())
    with zipfile.ZipFile(entry) as archive:
        member = archive.infolist()[0]
    assert member.compress_type == zipfile.ZIP_DEFLATED
    offset = member.header_offset
    name_length, extra_length = (
        int.from_bytes(raw[offset + 26 : offset + 28], "little"),
        int.from_bytes(raw[offset + 28 : offset + 30], "little"),
    )
    raw[offset + 30 + name_length + extra_length] = 0xFF  # final block of the reserved type 3
    entry.write_bytes(bytes(raw))
    again = face_track(clip, detector=detector, cache_dir=cache)  # not zlib.error
    assert detector.calls == 6
    np.testing.assert_array_equal(again[0], boxes)
    np.testing.assert_array_equal(again[1], eyes)
    cached = face_track(clip, detector=detector, cache_dir=cache)  # the rewritten entry is read
    assert detector.calls == 6
    np.testing.assert_array_equal(cached[0], boxes)


def test_face_region_method_on_a_video_without_a_face_raises(tmp_path):
    blank = tmp_path / "blank.mkv"
    with VideoWriter(blank, 25.0, (64, 48), codec="ffv1") as writer:
        for _ in range(3):
            writer.write(np.full((48, 64, 3), 120, np.uint8))
    with pytest.raises(NoFaceInVideoError, match="blank.mkv: no face detected in any frame"):
        anonymize_video(blank, tmp_path / "out.mkv", "blur_face")
    assert anonymize_video(blank, tmp_path / "out.mkv", "blur_frame").frame_count == 3
    assert VideoInfo.from_video_path(tmp_path / "out.mkv").frame_count == 3


def test_a_source_that_is_no_video_is_a_video_error_and_leaves_no_output(tmp_path):
    with pytest.raises(VideoError, match="missing.mpg"):
        anonymize_video(tmp_path / "missing.mpg", tmp_path / "out.mkv", "identity")
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(200))
    with pytest.raises(VideoError, match="junk.mp4"):
        anonymize_video(junk, tmp_path / "out.mkv", "blur_frame")
    assert not (tmp_path / "out.mkv").exists()


@pytest.mark.parametrize(
    "method, dst, key, message",
    [
        ("smudge", "out.mkv", None, "unknown baseline method 'smudge'"),
        ("identity", "out.mp4", None, "lossless FFV1 .mkv, got out.mp4"),
        ("block_permute_keyed", "out.mkv", b"123", "16, 24 or 32 bytes, got 3"),
    ],
)
def test_anonymize_video_errors(tmp_path, method, dst, key, message):
    with pytest.raises(ValueError, match=message):
        anonymize_video(tmp_path / "missing.mpg", tmp_path / dst, method, key=key)


def test_frame_nonce_is_video_nonce_then_frame_index_then_block_counter():
    video_nonce = bytes(range(1, 9))
    assert frame_nonce(5, video_nonce) == video_nonce + (5).to_bytes(4, "big") + bytes(4)
    assert frame_nonce(7) == bytes(8) + (7).to_bytes(4, "big") + bytes(4)


@pytest.mark.parametrize(
    "args, message",
    [
        ((-1,), "frame_index must be in 0 .. 2\\*\\*32 - 1, got -1"),
        ((2**32,), "frame_index must be in 0 .. 2\\*\\*32 - 1, got 4294967296"),
        ((0, bytes(7)), "video_nonce must be 8 bytes, got 7"),
    ],
)
def test_frame_nonce_errors(args, message):
    with pytest.raises(ValueError, match=message):
        frame_nonce(*args)


def test_counter_blocks_of_one_frame_never_reach_the_next_frames_nonce():
    # CTR increments the whole 16-byte block: frame f's keystream for a 4 x 4-pixel grid of
    # a 4K frame (518,400 blocks -> 259,200 AES blocks) stays below frame f + 1's start.
    n_blocks = 3840 * 2160 // 16
    last_counter = int.from_bytes(frame_nonce(3), "big") + (8 * n_blocks) // 16
    assert last_counter < int.from_bytes(frame_nonce(4), "big")


@pytest.fixture(scope="module")
def three_frame_clip(data_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("clip") / "three.mkv"
    with VideoWriter(path, 25.0, (360, 288), codec="ffv1") as writer:
        for _, frame_rgb in iter_frames(probe_path(data_dir, "bbaf2n"), end=3):
            writer.write(frame_rgb)
    return path


def test_videos_masked_with_one_key_get_different_permutations(three_frame_clip, tmp_path):
    """One AES key per submission must not mean one keystream per frame index (CTR nonce reuse)."""

    def masked_frames(name, **kwargs):
        info = anonymize_video(three_frame_clip, tmp_path / name, "block_permute_keyed", key=KEY, **kwargs)
        return np.stack([frame for _, frame in iter_frames(info.path)])

    first, second = masked_frames("a.mkv"), masked_frames("b.mkv")
    assert not np.array_equal(first[0], second[0])  # fresh random video nonce per call
    replay = [masked_frames(name, video_nonce=bytes(8)) for name in ("c.mkv", "d.mkv")]
    np.testing.assert_array_equal(replay[0], replay[1])  # reproducible with key + video nonce
    with pytest.raises(ValueError, match="video_nonce must be 8 bytes, got 3"):
        anonymize_video(
            three_frame_clip, tmp_path / "e.mkv", "block_permute_keyed", key=KEY, video_nonce=b"abc"
        )
