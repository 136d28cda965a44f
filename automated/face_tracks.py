"""Face tracks of a clear video: every detected face followed across the tested frames.

Every face in a clear video is a person to protect, not only the largest one: the
evaluation scores each face track of the clear video (``face_eval``), and the evaluated
identity is the track that matches the gallery, not the largest face of each frame
(multi-face clips with camera cuts, where the largest face is often someone else).

Tracking by detection (the tracking-by-detection association of SORT, Bewley et al. 2016,
arXiv:1602.00763, with appearance re-identification as in DeepSORT, Wojke et al. 2017,
arXiv:1703.07402), greedy instead of Hungarian:

1. A face continues a track seen in the previous tested frame when their boxes overlap
   (IoU >= ``iou_min``) and its embedding lies within ``threshold`` of the track's last
   embedding (so a cut to another person at the same place starts a new track).
2. Otherwise it re-joins an earlier track whose mean embedding (centroid) lies within
   ``threshold`` (the same person found again after a cut or an absence).
3. Otherwise it starts a new track. Candidate pairs are taken best first (spatial pairs by
   IoU, then appearance pairs by distance); each face and track is used once per frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .face_boxes import box_iou
from .recognition import identity_distances


def _distance(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a, np.float64) - np.asarray(b, np.float64)))


def track_faces(
    boxes_per_frame: Sequence[np.ndarray],
    embeddings_per_frame: Sequence[np.ndarray],
    *,
    threshold: float,
    iou_min: float = 0.3,
) -> list[np.ndarray]:
    """Track ids of the faces of consecutive tested frames (module protocol).

    Parameters
    ----------
    boxes_per_frame : sequence of ndarray of shape (n_t, 4), float
        Face boxes ``[x1, y1, x2, y2]`` in pixels, one array per tested frame in order.
    embeddings_per_frame : sequence of ndarray of shape (n_t, dim), float32
        The faces' embeddings (L2 distances are compared with ``threshold``).
    threshold : float
        The embedder's verification threshold on the L2 distance (same person when <=).
    iou_min : float, default=0.3
        Least IoU with the previous tested frame's box to continue a track spatially.

    Returns
    -------
    list of ndarray of shape (n_t,), dtype int64
        Track id of each face, numbered 0, 1, ... in order of first appearance.

    Raises
    ------
    ValueError
        If the two sequences differ in length, or a frame's boxes and embeddings differ
        in number.
    """
    if len(boxes_per_frame) != len(embeddings_per_frame):
        raise ValueError(
            f"{len(boxes_per_frame)} frames of boxes but {len(embeddings_per_frame)} of embeddings"
        )
    sums: list[np.ndarray] = []  # per track: sum of embeddings (centroid = sum / count)
    counts: list[int] = []
    last: dict[int, tuple] = {}  # tracks of the previous tested frame: id -> (box, embedding)
    result = []
    for t, (boxes, embeddings) in enumerate(zip(boxes_per_frame, embeddings_per_frame)):
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        embeddings = (
            np.asarray(embeddings, np.float64).reshape(len(boxes), -1) if len(boxes) else np.zeros((0, 0))
        )
        if len(embeddings) != len(boxes):
            raise ValueError(f"tested frame {t}: {len(boxes)} boxes but {len(embeddings)} embeddings")
        candidates = []  # (priority, sort key, face, track)
        for face, (box, embedding) in enumerate(zip(boxes, embeddings)):
            for track, (last_box, last_embedding) in last.items():
                iou = box_iou(box, last_box)
                if iou >= iou_min and _distance(embedding, last_embedding) <= threshold:
                    candidates.append((0, -iou, face, track))
            if sums:  # all centroids at once: crowds have many tracks
                distances = np.linalg.norm(np.asarray(sums) / np.asarray(counts)[:, None] - embedding, axis=1)
                candidates += [
                    (1, float(distances[track]), face, int(track))
                    for track in np.flatnonzero(distances <= threshold)
                ]
        ids = np.full(len(boxes), -1, np.int64)
        used_tracks: set = set()
        for _, _, face, track in sorted(candidates):
            if ids[face] < 0 and track not in used_tracks:
                ids[face] = track
                used_tracks.add(track)
        for face in np.flatnonzero(ids < 0):
            ids[face] = len(sums)
            sums.append(np.zeros(embeddings.shape[1]))
            counts.append(0)
        last = {}
        for face, track in enumerate(ids):
            sums[track] = sums[track] + embeddings[face]
            counts[track] += 1
            last[int(track)] = (boxes[face], embeddings[face])
        result.append(ids)
    return result


def track_centroids(
    track_ids: Sequence[np.ndarray], embeddings_per_frame: Sequence[np.ndarray]
) -> np.ndarray:
    """Mean clear embedding of each track, shape (n_tracks, dim) float64 (row = track id).

    Raises
    ------
    ValueError
        If there is no face at all (no track).
    """
    ids = np.concatenate([np.asarray(i, np.int64) for i in track_ids]) if track_ids else np.zeros(0, np.int64)
    if len(ids) == 0:
        raise ValueError("no face in any tested frame: no track")
    embeddings = np.concatenate(
        [
            np.asarray(e, np.float64).reshape(len(i), -1)
            for i, e in zip(track_ids, embeddings_per_frame)
            if len(i)
        ]
    )
    n_tracks = int(ids.max()) + 1
    sums = np.zeros((n_tracks, embeddings.shape[1]))
    np.add.at(sums, ids, embeddings)
    return sums / np.bincount(ids, minlength=n_tracks)[:, None]


def target_track(
    track_ids: Sequence[np.ndarray],
    embeddings_per_frame: Sequence[np.ndarray],
    gallery_embeddings: np.ndarray,
    gallery_identities,
    true_identity,
    *,
    threshold: float,
) -> int | None:
    """The track of the gallery's person: most faces matching the true identity's gallery.

    A face matches when its L2 distance to the nearest gallery image of ``true_identity``
    is <= ``threshold`` (``recognition.match_rate``). Ties, and videos where no face
    matches, go to the track with the smallest mean genuine distance: the person nearest
    the gallery stays the reference (its low clear match rate then shows that the gallery
    does not fit the video).

    Parameters
    ----------
    track_ids, embeddings_per_frame : as ``track_faces``'s result and input
    gallery_embeddings : ndarray of shape (k, dim)
    gallery_identities : array-like of shape (k,)
    true_identity : label in ``gallery_identities``
    threshold : float

    Returns
    -------
    int or None
        The target's track id; None when no tested frame has a face.
    """
    labels = np.asarray(gallery_identities)
    true_rows = np.asarray(gallery_embeddings)[labels == true_identity]
    matches: dict[int, int] = {}
    distances: dict[int, list] = {}
    for ids, embeddings in zip(track_ids, embeddings_per_frame):
        for track, embedding in zip(ids, embeddings):
            _, (distance,) = identity_distances(embedding, true_rows, np.zeros(len(true_rows)))
            matches[int(track)] = matches.get(int(track), 0) + int(distance <= threshold)
            distances.setdefault(int(track), []).append(distance)
    if not matches:
        return None
    return min(matches, key=lambda track: (-matches[track], float(np.mean(distances[track]))))
