"""What every face embedder does with its two steps: faces -> aligned chips -> embeddings.

A subclass gives ``chips(faces)`` (its alignment) and ``embed_chips(chips_rgb)`` (its
network) and a ``dim``; ``ChipEmbedder`` builds the batched entry points on them:
``embed_faces`` (faces of one or several images), ``embed`` (boxes in one image),
``embed_crop`` / ``embed_crops`` (already-cropped faces). Used by
``recognition`` (dlib's ResNet) and ``insightface_backend`` (ArcFace).
"""

from __future__ import annotations

import numpy as np

from .face_boxes import check_frame


def check_image(image_rgb) -> np.ndarray:
    """``image_rgb`` as a C-contiguous array; ValueError unless uint8 (height, width, 3).

    Raises
    ------
    ValueError
        From ``face_boxes.check_frame``, naming the dtype and shape received.
    """
    check_frame(image_rgb, "image_rgb")
    return np.ascontiguousarray(image_rgb)


def check_boxes(boxes_xyxy) -> np.ndarray:
    """``boxes_xyxy`` as float64 (n, 4); ValueError unless finite numbers of that shape."""
    boxes = np.asarray(boxes_xyxy, dtype=np.float64)
    if boxes.ndim != 2 or boxes.shape[1] != 4 or not np.isfinite(boxes).all():
        raise ValueError(f"boxes_xyxy must be finite numbers of shape (n, 4), got {boxes.shape}")
    return boxes


class ChipEmbedder:
    """Base of the face embedders (see the module docstring).

    Subclasses define ``dim`` (int), ``chips(faces)`` -> ndarray (n, chip, chip, 3)
    uint8 RGB, raising ValueError on a bad image or box, and ``embed_chips(chips_rgb)``
    -> (n, dim).
    """

    dim: int

    def chips(self, faces) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def embed_chips(self, chips_rgb) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def embed_faces(self, faces) -> np.ndarray:
        """Embed many faces (of one or several images) in one batch.

        Parameters
        ----------
        faces : sequence of (image_rgb, box_xyxy)
            As ``chips``.

        Returns
        -------
        ndarray of shape (n, dim), dtype float32

        Raises
        ------
        ValueError
            As ``chips``.
        """
        chips = self.chips(faces)
        if len(chips) == 0:
            return np.zeros((0, self.dim), np.float32)
        return np.asarray(self.embed_chips(chips), np.float32).reshape(len(chips), self.dim)

    def embed(self, image_rgb: np.ndarray, boxes_xyxy: np.ndarray) -> np.ndarray:
        """Embed the faces at ``boxes_xyxy`` in one image.

        Parameters
        ----------
        image_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB
        boxes_xyxy : array-like of shape (n, 4)
            Face boxes in pixels (from a face detector).

        Returns
        -------
        ndarray of shape (n, dim), dtype float32
            One embedding per box; shape (0, dim) when there is no box.

        Raises
        ------
        ValueError
            If the image is not uint8 (height, width, 3) or the boxes are not (n, 4).
        """
        image = check_image(image_rgb)
        boxes = check_boxes(boxes_xyxy)
        return self.embed_faces([(image, box) for box in boxes])

    def embed_crop(self, face_rgb: np.ndarray) -> np.ndarray:
        """Embed an already-cropped face (``face_crop.crop_internal_face``): box = whole image.

        Parameters
        ----------
        face_rgb : ndarray of shape (height, width, 3), dtype uint8, RGB

        Returns
        -------
        ndarray of shape (dim,), dtype float32

        Raises
        ------
        ValueError
            As ``embed``.
        """
        return self.embed_crops([face_rgb])[0]

    def embed_crops(self, faces_rgb) -> np.ndarray:
        """Embed already-cropped faces in one batch (each box = its whole image).

        Parameters
        ----------
        faces_rgb : sequence of ndarray (height, width, 3), uint8, RGB

        Returns
        -------
        ndarray of shape (n, dim), dtype float32

        Raises
        ------
        ValueError
            As ``embed``.
        """
        faces = [check_image(face) for face in faces_rgb]
        return self.embed_faces([(face, [0, 0, face.shape[1], face.shape[0]]) for face in faces])
