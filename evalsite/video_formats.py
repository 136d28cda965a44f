"""Video formats that give an identity away: a format whose videos all show one identity.

A recogniser (a rater or a trained attacker) that has seen an identity in a format nobody
else is recorded in can name it by the format alone (frame size, frame rate, container:
sharpness, scaling, compression), not by the face. On the demo, ID11 is the only CREMA-D
actor (480x360, 29.97 fps FLV) and ID07 the only identity with 720x576 clips; trained on
ID07's condition-B clips and tested on its condition-C ones, even LBPH with the parrot
attacker on the keyed block permutation names it every time (issue 11).

Django-free (plain attributes in, plain data out): the organizer's lineup warnings
(``trials.stills``) and the attack report (``automated.django_app.attack_service``) both
use :func:`alone_in_format`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable


def video_format(video) -> str:
    """``"<width>x<height>, <fps> fps, <container>"`` of a source video (its probed metadata).

    Parameters
    ----------
    video
        Anything with ``width``, ``height`` (pixels, int or None), ``fps`` (frames per
        second, float or None) and ``file.name`` (the stored file name; its extension is
        the container), e.g. an ``evalsite.models.SourceVideo``. Unknown parts are ``?``.

    Returns
    -------
    str
        e.g. ``"720x576, 25 fps, mpg"`` or ``"480x360, 29.97 fps, flv"`` (fps to 2 decimals,
        trailing zeros dropped).
    """
    fps = f"{video.fps:.2f}".rstrip("0").rstrip(".") if video.fps else "?"
    name = video.file.name or ""
    container = (name.rsplit(".", 1)[-1] if "." in name else "?").lower()
    return f"{video.width or '?'}x{video.height or '?'}, {fps} fps, {container}"


def alone_in_format(videos: Iterable[tuple[str, str, str]]) -> list[dict]:
    """Every format whose videos all show one identity, when the videos show two or more.

    Parameters
    ----------
    videos : iterable of (identity, video name, format)
        One row per video (evaluated and the attacker's own alike); ``format`` as
        :func:`video_format`.

    Returns
    -------
    list of dict
        ``{"identity": str, "format": str, "videos": [video names, sorted]}`` per such
        format, ordered by identity, then format. An identity can appear once per format
        it is alone in (ID07 on the demo: 720x576 only, its 360x288 clip is shared). Empty
        when every format holds two or more identities, or the rows show fewer than two
        identities (nothing to tell apart).
    """
    by_format: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    identities = set()
    for identity, name, fmt in videos:
        by_format[fmt][identity].append(name)
        identities.add(identity)
    if len(identities) < 2:
        return []
    found = [
        {"identity": identity, "format": fmt, "videos": sorted(names)}
        for fmt, owners in by_format.items()
        if len(owners) == 1
        for identity, names in owners.items()
    ]
    return sorted(found, key=lambda f: (f["identity"], f["format"]))
