"""The simulation's probes kept in its cache folder (tests.crowd.simulation.save_probes/load_probes)."""

import os
import shutil

from automated.video import VideoInfo
from tests.crowd import simulation


def test_kept_probes_equal_fresh_ones_and_a_changed_file_is_probed_again(
    tmp_path, monkeypatch, data_dir, grid_cache
):
    clip = data_dir / simulation.GRID_FOLDER / simulation.grid_people(data_dir)[0].clip
    masked = tmp_path / "masked.mkv"
    shutil.copy(next(grid_cache.glob("*_blur_face.mkv")), masked)
    monkeypatch.setattr(simulation, "_PROBES", {})
    fresh = {path: VideoInfo.from_video_path(path) for path in (clip, masked)}
    assert [simulation.probe(path) for path in fresh] == list(fresh.values())
    simulation.save_probes(tmp_path)

    monkeypatch.setattr(simulation, "_PROBES", {})
    simulation.load_probes(tmp_path)
    assert len(simulation._PROBES) == 2
    for path, info in fresh.items():
        stat = path.stat()
        kept = simulation._PROBES[str(path), stat.st_size, stat.st_mtime_ns]
        assert kept == info and kept.resolution_wh == info.resolution_wh == (360, 288)
        assert isinstance(kept.frame_count, int) and isinstance(kept.fps, float)

    # A file changed since (same path, another modification time) is not taken from the store.
    os.utime(masked, ns=(masked.stat().st_atime_ns, masked.stat().st_mtime_ns + 10**9))
    calls = []
    monkeypatch.setattr(
        VideoInfo, "from_video_path", classmethod(lambda cls, path: calls.append(path) or "new")
    )
    assert simulation.probe(masked) == "new" and calls == [masked]
    assert simulation.probe(clip) == fresh[clip] and calls == [masked]
    # No store yet, or a broken one: nothing loaded, no error.
    monkeypatch.setattr(simulation, "_PROBES", {})
    simulation.load_probes(tmp_path / "none")
    (tmp_path / simulation.PROBES_FILE).write_text("{not json")
    simulation.load_probes(tmp_path)
    assert simulation._PROBES == {}
