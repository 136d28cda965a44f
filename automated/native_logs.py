"""Quiet native libraries: MediaPipe's TFLite/absl lines on start-up, unless ``DEID_VERBOSE=1``.

MediaPipe's graphs print from C++ straight to the process's standard error (file
descriptor 2) when their calculators open, at the first ``process`` call: "INFO: Created
TensorFlow Lite XNNPACK delegate for CPU.", absl's "WARNING: All log messages before
absl::InitializeLog() is called are written to STDERR" and, per model,
``W0000 ... inference_feedback_manager.cc:114] Feedback manager requires a model with a
single signature inference``. absl's C++ log has no environment switch (``GLOG_minloglevel``
and ``TF_CPP_MIN_LOG_LEVEL`` change nothing here), so these lines are silenced by pointing
descriptor 2 at the null device around a graph's construction (until its calculators have
opened, on MediaPipe's own threads) and first call only (:class:`QuietStart`, the one place every MediaPipe graph of the science core is made);
later errors still reach standard error. Libraries with an environment switch (OpenCV's
FFmpeg, glog, TensorFlow) get it on ``import automated`` (:func:`quiet_environment`). Django-free and a leaf; ``DEID_VERBOSE`` is
declared in ``evalsite/conf.py``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

VERBOSE_VARIABLE = "DEID_VERBOSE"
_LOCK = threading.RLock()  # one redirection at a time: fd 2 is per process


#: Environment defaults that quiet native libraries which read them (set by :func:`quiet_environment`):
#: OpenCV's bundled FFmpeg prints "[mov,mp4,...] moov atom not found" for every broken upload it
#: opens (``-8``: AV_LOG_QUIET; the site reads ffmpeg's errors itself and explains them:
#: ``automated.video.explain_ffmpeg_error``), glog and TensorFlow their INFO/WARNING lines.
QUIET_ENVIRONMENT = {"OPENCV_FFMPEG_LOGLEVEL": "-8", "GLOG_minloglevel": "2", "TF_CPP_MIN_LOG_LEVEL": "2"}


def quiet_environment() -> None:
    """Set :data:`QUIET_ENVIRONMENT` where unset, unless :func:`verbose` (run on ``import automated``).

    OpenCV reads its variable when it first opens a video, so this works after ``import cv2``
    too; a value the user set is kept.
    """
    if not verbose():
        for name, value in QUIET_ENVIRONMENT.items():
            os.environ.setdefault(name, value)


def verbose() -> bool:
    """True when ``DEID_VERBOSE`` is ``1`` (also true/yes/on): native start-up lines are kept."""
    return os.environ.get(VERBOSE_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


@contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at the null device for the block (unless :func:`verbose`).

    Python exceptions raised in the block propagate as usual; only what native code (and
    Python) writes to standard error meanwhile is dropped. Threads wait for each other's
    block (the descriptor belongs to the whole process).
    """
    if verbose():
        yield
        return
    with _LOCK:
        sys.stderr.flush()
        saved = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 2)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(null)


@contextmanager
def standard_error_kept() -> Iterator[None]:
    """Hold off :func:`native_stderr_silenced` for the block: descriptor 2 stays the real one.

    For starting child processes: one started while another thread has descriptor 2 on the
    null device (a MediaPipe graph being built) would keep the null device as its standard
    error for life, and its errors would be lost (the embedded pool's workers).
    """
    with _LOCK:
        yield


class QuietStart:
    """A MediaPipe solution graph made and first run with native start-up lines silenced.

    ``process`` and ``close`` are the graph's; only the construction and the first
    ``process`` call (where the calculators open and print) run inside
    :func:`native_stderr_silenced`, so results are exactly the graph's.

    Parameters
    ----------
    factory : callable () -> mediapipe.python.solution_base.SolutionBase
        Makes the graph (e.g. ``lambda: face_detection.FaceDetection(...)``).
    """

    def __init__(self, factory: Callable[[], object]):
        with native_stderr_silenced():
            self._graph = factory()
            # The calculators open (and print) on MediaPipe's own threads after the graph
            # starts: wait for them inside the block, or their lines come out later (and a
            # graph made only to check a name, then closed, prints them all).
            calculator_graph = getattr(self._graph, "_graph", None)  # SolutionBase's CalculatorGraph
            if calculator_graph is not None:
                calculator_graph.wait_until_idle()
        self._started = False

    def process(self, image):
        """The graph's ``process(image)`` (image: ndarray (height, width, 3), uint8, RGB)."""
        if self._started:
            return self._graph.process(image)
        with native_stderr_silenced():
            result = self._graph.process(image)
        self._started = True
        return result

    def close(self) -> None:
        """Release the graph."""
        self._graph.close()
