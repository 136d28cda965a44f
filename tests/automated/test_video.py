"""automated.video on the real GRID clips (75 frames, 25 fps, 360x288 each, SOURCE.md)."""

import numpy as np
import pytest

from automated.video import VideoError, VideoInfo, VideoWriter, iter_frames

GRID = "videos/grid_talking_heads/bbaf2n.mpg"


def test_probe_counts_real_grid_clip(data_dir):
    info = VideoInfo.from_video_path(data_dir / GRID)
    assert info.frame_count == 75
    assert info.fps == pytest.approx(25.0)
    assert info.resolution_wh == (360, 288)
    assert info.duration_s == pytest.approx(3.0)


def test_iter_frames_stride_and_window(data_dir):
    frames = list(iter_frames(data_dir / GRID, stride=10, start=5, end=40))
    assert [index for index, _ in frames] == [5, 15, 25, 35]
    assert frames[0][1].shape == (288, 360, 3) and frames[0][1].dtype == np.uint8
    # 2.5 was read as every 5th frame and True as every frame before the one stride check
    for stride in (0, 2.5, True, "5"):
        with pytest.raises(ValueError, match="stride must be a whole number >= 1"):
            next(iter_frames(data_dir / GRID, stride=stride))


def test_text_file_named_mp4_is_rejected(tmp_path):
    fake = tmp_path / "clip.mp4"
    fake.write_text("not a video")
    with pytest.raises(VideoError, match="clip.mp4"):
        VideoInfo.from_video_path(fake)


def test_lossless_writer_round_trips_pixels(tmp_path):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(3, 16, 24, 3), dtype=np.uint8)
    out = tmp_path / "x.mkv"
    with VideoWriter(out, 10.0, (24, 16), codec="ffv1") as writer:
        for frame in frames:
            writer.write(frame)
    decoded = np.stack([f for _, f in iter_frames(out)])
    np.testing.assert_array_equal(decoded, frames)


def _stream_lines(path) -> list[str]:
    import subprocess

    from automated.video import ffmpeg_executable

    probe = subprocess.run(
        [ffmpeg_executable(), "-hide_banner", "-i", str(path)], capture_output=True, text=True
    )
    return [line.strip() for line in probe.stderr.splitlines() if line.strip().startswith("Stream #")]


def test_web_copy_is_silent_h264_without_source_metadata(data_dir, tmp_path):
    from automated.video import transcode_for_web

    source = data_dir / "videos/cremad/1001_DFA_ANG_XX.flv"
    assert any("Audio" in line for line in _stream_lines(source)), "the CREMA-D clip has a voice track"
    web = transcode_for_web(source, tmp_path / "web.mp4")
    streams = _stream_lines(web)
    assert len(streams) == 1 and "Video: h264" in streams[0]
    assert b"1001_DFA" not in web.read_bytes()
    assert VideoInfo.from_video_path(web).frame_count == VideoInfo.from_video_path(source).frame_count
