"""MediaPipe's native start-up lines are silenced unless ``DEID_VERBOSE=1`` (automated/native_logs.py)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A face detector and a face mesh on a real GRID frame, as an evaluation run makes them;
# the script prints to stderr itself after the models ran, so a lost descriptor 2 shows.
SCRIPT = """
import sys
import time
from pathlib import Path
from automated.behaviour.landmarks import FaceMeshModel
from automated.detection import MediaPipeFaceDetector
from automated.video import iter_frames

clip = Path(sys.argv[1])
frame = next(frame for _, frame in iter_frames(clip, start=10, end=11))
MediaPipeFaceDetector().close()  # made only to check the name, as start_run does
detector = MediaPipeFaceDetector()
time.sleep(0.5)  # the calculators open on MediaPipe's threads after the graph starts
faces = detector.detect(frame)
with FaceMeshModel() as mesh:
    points = mesh.landmarks(frame)
detector.close()
print(f"faces {len(faces.boxes_xyxy)} mesh {points.shape}")
print("stderr still works", file=sys.stderr)
"""


def _run(data_dir, **env):
    clip = data_dir / "videos" / "grid_talking_heads" / "bbaf2n.mpg"
    base = {k: v for k, v in os.environ.items() if k != "DEID_VERBOSE"}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(clip)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**base, **env},
    )


def test_native_start_up_lines_are_silenced_unless_verbose(data_dir):
    # before: "INFO: Created TensorFlow Lite XNNPACK delegate", absl's "WARNING: All log messages
    # before absl::InitializeLog()" and a "W0000 ... Feedback manager ..." line per model
    quiet = _run(data_dir)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout == "faces 1 mesh (478, 3)\n"
    assert quiet.stderr == "stderr still works\n"
    loud = _run(data_dir, DEID_VERBOSE="1")
    assert loud.stdout == quiet.stdout
    assert loud.stderr.count("Feedback manager requires a model with a single signature inference") >= 2
    assert "Created TensorFlow Lite XNNPACK delegate for CPU" in loud.stderr
    assert loud.stderr.endswith("stderr still works\n")


def test_a_child_started_under_standard_error_kept_keeps_the_real_stderr(tmp_path, monkeypatch):
    """A thread silencing descriptor 2 (a MediaPipe graph being built) holds off a process
    start under ``standard_error_kept`` until it is done: the child writes to the real stderr
    (the embedded pool starts its workers this way)."""
    import threading
    import time

    from automated import native_logs

    monkeypatch.delenv("DEID_VERBOSE", raising=False)  # verbose: nothing is silenced, no lock
    silenced, release = threading.Event(), threading.Event()

    def build_graph():
        with native_logs.native_stderr_silenced():
            silenced.set()
            release.wait(10)

    log = tmp_path / "stderr.log"
    saved = os.dup(2)
    with open(log, "wb") as target:
        os.dup2(target.fileno(), 2)  # the "real" stderr of this test: a file
    try:
        builder = threading.Thread(target=build_graph)
        builder.start()
        assert silenced.wait(10)
        threading.Timer(0.5, release.set).start()
        started = time.monotonic()
        with native_logs.standard_error_kept():
            waited = time.monotonic() - started
            subprocess.run(
                [sys.executable, "-c", "import sys; print('child line', file=sys.stderr)"], check=True
            )
        builder.join(10)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
    assert waited >= 0.4  # it waited for the graph's block to end
    assert log.read_text() == "child line\n"  # not lost in the null device
