"""Argument checks shared across the science core and the apps that call it.

Django-free and a leaf (imports nothing of the project), so every caller can use the
same check and the same error message.
"""

from __future__ import annotations

from numbers import Integral


def check_stride(stride) -> int:
    """Refuse a frame stride that is not a whole number >= 1; return it.

    A stride ``s`` tests frames 0, s, 2s, ... of a video (``face_eval.evaluate_video``,
    ``behaviour.evaluate``, the evaluation runs and the demo).

    Parameters
    ----------
    stride : object
        Frames between two tested frames; an ``int`` (or any ``numbers.Integral`` such
        as ``numpy.int64``) >= 1. ``bool`` is refused although it is an ``int``.

    Returns
    -------
    int
        ``stride`` unchanged.

    Raises
    ------
    ValueError
        ``"stride must be a whole number >= 1, got <repr>"`` for anything else (0, 2.5,
        ``"5"``, ``True``).
    """
    if isinstance(stride, bool) or not isinstance(stride, Integral) or stride < 1:
        raise ValueError(f"stride must be a whole number >= 1, got {stride!r}")
    return stride
