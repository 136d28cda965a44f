"""dlib's face networks in PyTorch: the ResNet face embedding and the MMOD CNN face detector.

The weights are dlib's own model files from the ``face-recognition-models`` wheel, read
with ``automated.dlib_serialize`` (no dlib call); the layers are the same as in dlib's C++
types, so the outputs match dlib's to float rounding (tests/automated/test_dlib_torch.py).
PyTorch's convolutions use a BLAS-backed backend, which the ``dlib-bin`` wheel lacks, and
run many faces or frames in one batch.

- **Face embedding** (``FaceResNet``): the 29-convolution ResNet (He et al. 2016, "Deep
  Residual Learning for Image Recognition", CVPR) of dlib's
  ``examples/dnn_face_recognition_ex.cpp`` (``anet_type``): 150x150 RGB chip ->
  embedding vector (its size is the file's top layer's), trained with dlib's metric loss
  so that two chips of one person are within an L2 distance of 0.6 (99.38 % on LFW,
  dlib's documentation).
- **Face detection** (``MmodFaceDetector``): the CNN of dlib's
  ``tools/python/src/cnn_face_detector.cpp`` trained with the Max-Margin Object
  Detection loss (King 2015, "Max-Margin Object Detection", arXiv:1502.00046): a
  sliding 80x80 window scored by a fully convolutional network over a tiled image
  pyramid (``dlib::input_rgb_image_pyramid<pyramid_down<6>>``), detections above a
  threshold, then greedy non-maximum suppression (``loss_mmod_::to_label``).

Inference only (batch-normalisation layers are folded into the preceding convolutions,
as dlib's ``affine_`` does). ``num_threads`` on the public classes sets
``torch.set_num_threads`` around each forward pass (and restores it).
"""

from __future__ import annotations

import contextlib
import functools
import math
from pathlib import Path

import numpy as np

from .dlib_serialize import Network, read_network_file

FACE_RESNET_FILE = "dlib_face_recognition_resnet_model_v1.dat"
MMOD_FILE = "mmod_human_face_detector.dat"
#: Side of the face chips the ResNet takes (``input_rgb_image_sized<150>``), pixels.
CHIP_SIZE = 150
#: dlib's chip padding around the 5-point-aligned face (``get_face_chip_details``).
CHIP_PADDING = 0.25


def face_recognition_models_dir() -> Path:
    """Folder holding dlib's model files from the ``face-recognition-models`` wheel.

    Located with ``importlib.util.find_spec`` without importing the package (its
    ``__init__`` imports ``pkg_resources``, missing from setuptools >= 81).

    Raises
    ------
    RuntimeError
        If the package is not installed.
    """
    import importlib.util

    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or spec.origin is None:
        raise RuntimeError("face-recognition-models is not installed (pip install face-recognition-models)")
    return Path(spec.origin).parent / "models"


# --- the networks' C++ types, top layer first (dlib_serialize.read_network structures) --------


def _block(stride: int) -> list:
    # block<N,BN,stride> = BN<con<N,3,3,1,1,relu<BN<con<N,3,3,stride,stride,SUBNET>>>>>
    return [("affine",), ("con",), ("relu",), ("affine",), ("con",)]


def _ares() -> list:
    # ares<N> = relu<add_prev1<block<N,affine,1,tag1<SUBNET>>>>
    return [("relu",), ("add_prev", 1), *_block(1), ("tag", 1)]


def _ares_down() -> list:
    # ares_down<N> = relu<add_prev2<avg_pool<2,2,2,2,skip1<tag2<block<N,affine,2,tag1<SUBNET>>>>>>>
    return [("relu",), ("add_prev", 2), ("avg_pool",), ("skip", 1), ("tag", 2), *_block(2), ("tag", 1)]


def face_resnet_structure() -> list:
    """``anet_type`` of dlib's ``dnn_face_recognition_ex.cpp``, top layer first.

    loss_metric<fc_no_bias<D, avg_pool_everything<level0<level1<level2<level3<level4<
    max_pool<3,3,2,2, relu<affine<con<32,7,7,2,2, input_rgb_image_sized<150>>>>>>>>>>>>>
    where each level stacks residual blocks ``ares``/``ares_down`` (two 3x3
    convolutions each; level4 has 3 blocks, level3 4, levels 2 and 1 3, level0 1; the
    filter counts halve from level0's 256 to level4's 32): 29 convolutions. D, the
    embedding size, and every filter count are read from the file.
    """
    levels = [
        _ares_down(),
        _ares() + _ares() + _ares_down(),
        _ares() + _ares() + _ares_down(),
        _ares() + _ares() + _ares() + _ares_down(),
        _ares() + _ares() + _ares(),
    ]
    return [("fc",), ("avg_pool",), *sum(levels, []), ("max_pool",), ("relu",), ("affine",), ("con",)]


def mmod_structure() -> list:
    """``net_type`` of dlib's ``cnn_face_detector.cpp``, top layer first.

    loss_mmod<con<1,9,9,1,1, rcon5<rcon5<rcon5<downsampler<input_rgb_image_pyramid<
    pyramid_down<6>>>>>>>> with rcon5 = relu<affine<con<45,5,5,1,1>>> and downsampler =
    three relu<affine<con<{32,32,16},5,5,2,2>>>.
    """
    rcon = [("relu",), ("affine",), ("con",)]
    return [("con",), *rcon * 3, *rcon * 3]


# --- a dlib layer list as a PyTorch module -----------------------------------------------------


def _padded_add(a, b):
    """dlib's ``tt::add(dest, src1, src2)`` with unequal shapes: each is zero-padded at the end."""
    if a.shape == b.shape:
        return a + b
    import torch

    shape = [max(x, y) for x, y in zip(a.shape, b.shape)]
    out = torch.zeros(shape, dtype=a.dtype, device=a.device)
    out[:, : a.shape[1], : a.shape[2], : a.shape[3]] += a
    out[:, : b.shape[1], : b.shape[2], : b.shape[3]] += b
    return out


def _build_ops(network: Network):
    """Bottom-up list of (op, argument) with each affine folded into the conv below it."""
    import torch
    from torch import nn

    ops = []
    layers = network.layers[::-1]  # bottom (input side) first: execution order
    i = 0
    while i < len(layers):
        layer = layers[i]
        p = layer.params
        if layer.kind == "con":
            weight, bias = torch.from_numpy(p["weight"].copy()), p["bias"]
            bias = torch.from_numpy(bias.copy()) if bias is not None else torch.zeros(weight.shape[0])
            if (
                i + 1 < len(layers)
                and layers[i + 1].kind == "affine"
                and layers[i + 1].params["mode"] == "conv"
            ):
                gamma = torch.from_numpy(layers[i + 1].params["gamma"])
                beta = torch.from_numpy(layers[i + 1].params["beta"])
                weight, bias = weight * gamma[:, None, None, None], bias * gamma + beta
                i += 1
            conv = nn.Conv2d(
                weight.shape[1],
                weight.shape[0],
                tuple(weight.shape[2:]),
                stride=p["stride"],
                padding=p["padding"],
            )
            conv.weight.data.copy_(weight)
            conv.bias.data.copy_(bias)
            ops.append(("module", conv))
        elif layer.kind == "affine":
            if p["mode"] != "conv":
                raise ValueError("an affine layer in FC mode is not supported")
            ops.append(
                (
                    "affine",
                    (
                        torch.from_numpy(p["gamma"])[None, :, None, None],
                        torch.from_numpy(p["beta"])[None, :, None, None],
                    ),
                )
            )
        elif layer.kind == "relu":
            # In place, unless the input is a tagged output that a later layer reads again.
            ops.append(("module", nn.ReLU(inplace=not ops or ops[-1][0] not in ("tag", "skip"))))
        elif layer.kind in ("max_pool", "avg_pool"):
            if p["size"] == (0, 0):  # *_pool_everything
                ops.append(("global_" + layer.kind, None))
            else:
                pool = nn.MaxPool2d if layer.kind == "max_pool" else nn.AvgPool2d
                ops.append(("module", pool(p["size"], stride=p["stride"], padding=p["padding"])))
        elif layer.kind == "fc":
            fc = nn.Linear(*p["weight"].shape, bias=p["bias"] is not None)
            fc.weight.data.copy_(torch.from_numpy(p["weight"].T.copy()))
            if p["bias"] is not None:
                fc.bias.data.copy_(torch.from_numpy(p["bias"]))
            ops.append(("fc", fc))
        elif layer.kind in ("tag", "skip", "add_prev"):
            ops.append((layer.kind, p["tag"]))
        else:  # pragma: no cover - read_network only yields the kinds above
            raise ValueError(f"unsupported layer {layer.kind}")
        i += 1
    return ops


def run_ops(ops, x, tags=None):
    """Apply a bottom-up op list (``_build_ops``) to tensor ``x``, with autograd if enabled.

    ``tags`` holds the ``tag<k>`` outputs seen so far (a slice of the list may start
    after its tags were set); ``DlibNet`` runs its whole list in inference mode, and
    ``automated.attack.finetune`` runs the top of a copy with gradients to fine-tune it.
    """
    tags = {} if tags is None else tags
    for kind, op in ops:
        if kind == "module":
            x = op(x)
        elif kind == "affine":
            x = x * op[0] + op[1]
        elif kind == "tag":
            tags[op] = x
        elif kind == "skip":
            x = tags[op]
        elif kind == "add_prev":
            x = _padded_add(x, tags[op])
        elif kind == "global_avg_pool":
            x = x.mean(dim=(2, 3), keepdim=True)
        elif kind == "global_max_pool":
            x = x.amax(dim=(2, 3), keepdim=True)
        elif kind == "fc":
            x = op(x.reshape(len(x), -1))
    return x


def network_output_size(network: Network, nr: int, nc: int) -> tuple[int, int]:
    """Rows and columns of a network's output map for an (nr, nc) input; (0, 0) if it is too small.

    Each convolution or pooling gives ``(size + 2 * padding - window) // stride + 1``
    (as PyTorch and dlib compute them). No PyTorch needed.
    """
    for layer in reversed(network.layers):  # bottom to top
        if layer.kind == "con":
            (sy, sx), (py, px) = layer.params["stride"], layer.params["padding"]
            ny, nx = layer.params["weight"].shape[2:]
        elif layer.kind in ("max_pool", "avg_pool") and layer.params["size"] != (0, 0):
            (sy, sx), (py, px), (ny, nx) = (
                layer.params["stride"],
                layer.params["padding"],
                layer.params["size"],
            )
        else:
            continue
        if nr + 2 * py < ny or nc + 2 * px < nx:
            return 0, 0
        nr, nc = (nr + 2 * py - ny) // sy + 1, (nc + 2 * px - nx) // sx + 1
    return nr, nc


class DlibNet:
    """A dlib network (without its loss and input layers) evaluated with PyTorch.

    Parameters
    ----------
    network : automated.dlib_serialize.Network

    Notes
    -----
    Tags, skips and ``add_prev`` follow dlib's semantics: ``skip<k>`` and
    ``add_prev<k>`` use the output of the nearest ``tag<k>`` below them, and tensors of
    unequal shapes are added with zero padding (``tt::add``).
    """

    def __init__(self, network: Network):
        from torch import nn

        self.network = network
        self.ops = _build_ops(network)
        modules = [op for kind, op in self.ops if isinstance(op, nn.Module)]
        self._modules = nn.ModuleList(modules).eval()
        for parameter in self._modules.parameters():
            parameter.requires_grad_(False)

    def __call__(self, x):
        """Forward pass: tensor (n, k, nr, nc) float32 -> the top layer's output tensor."""
        import torch

        with torch.inference_mode():
            return run_ops(self.ops, x)

    def output_size(self, nr: int, nc: int) -> tuple[int, int]:
        """``network_output_size`` of this network."""
        return network_output_size(self.network, nr, nc)

    def output_to_input(self, x: float, y: float) -> tuple[float, float]:
        """Input-tensor point of an output-tensor point (dlib's ``output_tensor_to_input_tensor``).

        Each convolution or pooling maps ``p -> p * stride - padding + size // 2``
        (``con_::map_output_to_input``); other layers keep points.
        """
        for layer in self.network.layers:  # top to bottom
            if layer.kind == "con":
                (sy, sx), (py, px) = layer.params["stride"], layer.params["padding"]
                ny, nx = layer.params["weight"].shape[2:]
            elif layer.kind in ("max_pool", "avg_pool") and layer.params["size"] != (0, 0):
                (sy, sx), (py, px), (ny, nx) = (
                    layer.params["stride"],
                    layer.params["padding"],
                    layer.params["size"],
                )
            else:
                continue
            x, y = x * sx - px + nx // 2, y * sy - py + ny // 2
        return x, y


@contextlib.contextmanager
def torch_threads(num_threads: int | None):
    """Run the block with ``torch.set_num_threads(num_threads)``; None leaves it unchanged.

    Raises
    ------
    ValueError
        If ``num_threads`` is not None and not a whole number >= 1.
    """
    import torch

    if num_threads is None:
        yield
        return
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a whole number >= 1, got {num_threads!r}")
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _normalise(images_rgb: np.ndarray, avg_rgb: np.ndarray):
    """uint8 (n, H, W, 3) -> float32 tensor (n, 3, H, W) of ``(pixel - average) / 256`` (input.h)."""
    import torch

    x = torch.from_numpy(np.ascontiguousarray(images_rgb)).permute(0, 3, 1, 2).to(torch.float32)
    return (x - torch.from_numpy(avg_rgb)[None, :, None, None]) / 256.0


# --- the face embedding ------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def face_resnet_network() -> Network:
    """dlib's ``dlib_face_recognition_resnet_model_v1.dat``, decoded (once per process; no torch).

    Raises
    ------
    RuntimeError
        If ``face-recognition-models`` is not installed.
    automated.dlib_serialize.DlibFormatError
        If the file is not the network of ``face_resnet_structure``.
    """
    return read_network_file(face_recognition_models_dir() / FACE_RESNET_FILE, face_resnet_structure())


def face_resnet_dim() -> int:
    """Size of dlib's ResNet face embedding: the outputs of its top fully connected layer."""
    return int(face_resnet_network().layers[0].params["weight"].shape[1])


@functools.lru_cache(maxsize=1)
def load_face_resnet() -> FaceResNet:
    """The shared ``FaceResNet`` of dlib's model file (built once per process)."""
    return FaceResNet(face_resnet_network())


class FaceResNet:
    """dlib's ResNet face embedding network (``face_resnet_structure``) in PyTorch.

    Parameters
    ----------
    network : automated.dlib_serialize.Network
        The decoded ``dlib_face_recognition_resnet_model_v1.dat``.

    Attributes
    ----------
    dim : int
        Embedding size (the top fully connected layer's outputs).
    chip_size : int
        Input chip side (150).
    distance_threshold : float
        The metric loss's distance threshold stored in the file (0.6).
    """

    def __init__(self, network: Network):
        if network.input.get("name") != "input_rgb_image_sized":
            raise ValueError(f"not a sized-image network: input {network.input.get('name')!r}")
        self.net = DlibNet(network)
        self.avg_rgb = network.input["avg_rgb"]
        self.chip_size = int(network.input["size"][0])
        self.dim = int(network.layers[0].params["weight"].shape[1])
        self.distance_threshold = float(network.loss.get("distance_threshold", math.nan))

    def embed_chips(self, chips_rgb, *, batch_size: int = 32, num_threads: int | None = None) -> np.ndarray:
        """Embeddings of aligned face chips.

        Parameters
        ----------
        chips_rgb : array-like of shape (n, chip_size, chip_size, 3), dtype uint8, RGB
            Chips from ``dlib.get_face_chips(image, shapes, 150, 0.25)``.
        batch_size : int, default=32
            Chips per forward pass (memory ~1 MB per chip).
        num_threads : int, optional
            ``torch.set_num_threads`` for the call.

        Returns
        -------
        ndarray of shape (n, dim), dtype float32

        Raises
        ------
        ValueError
            If the chips are not uint8 of shape (n, chip_size, chip_size, 3).
        """
        chips = np.asarray(chips_rgb)
        if (
            chips.dtype != np.uint8
            or chips.ndim != 4
            or chips.shape[1:] != (self.chip_size, self.chip_size, 3)
        ):
            raise ValueError(
                f"chips must be uint8 of shape (n, {self.chip_size}, {self.chip_size}, 3), got {chips.dtype} "
                f"{chips.shape}"
            )
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        out = np.zeros((len(chips), self.dim), np.float32)
        with torch_threads(num_threads):
            for start in range(0, len(chips), batch_size):
                batch = _normalise(chips[start : start + batch_size], self.avg_rgb)
                out[start : start + len(batch)] = self.net(batch).numpy()
        return out


# --- the MMOD face detector --------------------------------------------------------------------


def tiled_pyramid_rects(nr: int, nc: int, *, rate: float, padding: int, outer_padding: int):
    """Where each pyramid level sits in dlib's tiled pyramid image.

    ``impl::compute_tiled_image_pyramid_details`` (dlib/image_transforms/image_pyramid.h):
    levels shrink by ``rate`` (floor of each side) while at least 5 rows remain; they are
    stacked down the left column, then the rest back up the right side.

    Parameters
    ----------
    nr, nc : int
        Image height and width in pixels.
    rate : float
        Size ratio between levels, (N-1)/N for ``pyramid_down<N>``.
    padding, outer_padding : int
        Pixels between levels and around the whole tiled image.

    Returns
    -------
    rects : list of (left, top, right, bottom)
        Inclusive pixel rectangles of levels 0, 1, ... in the tiled image.
    size : (int, int)
        (height, width) of the tiled image.
    """
    if nr * nc == 0:
        return [], (0, 0)
    sizes = [(nr, nc)]
    while True:
        nr, nc = math.floor(rate * nr), math.floor(rate * nc)
        if nr * nc == 0 or nr < 5:
            break
        sizes.append((nr, nc))
    total_height = sum(h + padding for h, _ in sizes) - 2 * padding
    height, prev_width, width0, height0 = 0, 0, sizes[0][1], sizes[0][0]
    for h, w in sizes:
        if w <= width0 - prev_width - padding and (height - height0) * 2 >= total_height - height0:
            break
        height += h + padding
        prev_width = w
    height -= padding
    rects, y, i = [], outer_padding, 0
    while y < height + outer_padding and i < len(sizes):
        h, w = sizes[i]
        rects.append((outer_padding, y, outer_padding + w - 1, y + h - 1))
        y += h + padding
        i += 1
    y -= padding
    while i < len(sizes):
        h, w = sizes[i]
        right, bottom = outer_padding + width0 - 1, y - 1
        rect = (right - (w - 1), bottom - (h - 1), right, bottom)
        first = rects[0]
        if not (rect[2] < first[0] or rect[0] > first[2] or rect[3] < first[1] or rect[1] > first[3]):
            break  # would overlap the original image
        rects.append(rect)
        y -= h + padding
        i += 1
    return rects, (height + 2 * outer_padding, width0 + 2 * outer_padding)


def _nearest_rect(rects, x: float, y: float) -> int:
    """Index of the rectangle containing (x, y), else the nearest one (dlib's ``nearest_rect``)."""
    best, best_distance = 0, math.inf
    for i, (left, top, right, bottom) in enumerate(rects):
        if left <= x <= right and top <= y <= bottom:
            return i
        distance = math.hypot(min(max(x, left), right) - x, min(max(y, top), bottom) - y)
        if distance < best_distance:
            best, best_distance = i, distance
    return best


def _overlaps(a, b, iou_thresh: float, covered_thresh: float) -> bool:
    """dlib's ``test_box_overlap`` on inclusive integer rectangles (l, t, r, b).

    The "union" is the smallest rectangle holding both boxes, as in dlib.
    """
    inner_w = min(a[2], b[2]) - max(a[0], b[0]) + 1
    inner_h = min(a[3], b[3]) - max(a[1], b[1]) + 1
    if inner_w <= 0 or inner_h <= 0:
        return False
    inner = inner_w * inner_h
    outer = (max(a[2], b[2]) - min(a[0], b[0]) + 1) * (max(a[3], b[3]) - min(a[1], b[1]) + 1)
    area_a = (a[2] - a[0] + 1) * (a[3] - a[1] + 1)
    area_b = (b[2] - b[0] + 1) * (b[3] - b[1] + 1)
    return inner / outer > iou_thresh or inner / area_a > covered_thresh or inner / area_b > covered_thresh


@functools.lru_cache(maxsize=1)
def mmod_network() -> Network:
    """dlib's ``mmod_human_face_detector.dat``, decoded (once per process; no torch)."""
    return read_network_file(face_recognition_models_dir() / MMOD_FILE, mmod_structure())


def mmod_frame_too_small(nr: int, nc: int) -> bool:
    """True if an (nr, nc) frame's tiled pyramid is smaller than the MMOD network's input
    window (a few pixels; dlib's own code raises on such frames)."""
    network = mmod_network()
    _, size = tiled_pyramid_rects(
        nr,
        nc,
        rate=(MmodNet.PYRAMID_DOWN - 1) / MmodNet.PYRAMID_DOWN,
        padding=network.input["pyramid_padding"],
        outer_padding=network.input["pyramid_outer_padding"],
    )
    return min(network_output_size(network, *size)) <= 0


@functools.lru_cache(maxsize=1)
def load_mmod() -> MmodNet:
    """The shared ``MmodNet`` of dlib's ``mmod_human_face_detector.dat`` (built once per process)."""
    return MmodNet(mmod_network())


class MmodNet:
    """dlib's MMOD CNN face detector (``mmod_structure``) with its pyramid and NMS.

    Parameters
    ----------
    network : automated.dlib_serialize.Network
        The decoded ``mmod_human_face_detector.dat``.

    Attributes
    ----------
    window_wh : (int, int)
        Sliding-window size in pixels of a pyramid level (80x80).
    nms : (float, float)
        ``test_box_overlap`` thresholds (IoU, share covered) of the non-max suppression.
    pyramid_rate : float
        Size ratio between pyramid levels (5/6, ``pyramid_down<6>``).
    """

    PYRAMID_DOWN = 6  # input_rgb_image_pyramid<pyramid_down<6>> (the type, not the file)

    def __init__(self, network: Network):
        if network.loss.get("name") != "loss_mmod" or not network.input.get("name", "").startswith(
            "input_rgb_image_pyramid"
        ):
            raise ValueError("not an MMOD network on an RGB image pyramid")
        if network.loss["use_bounding_box_regression"] or len(network.loss["detector_windows"]) != 1:
            raise ValueError("only one detector window without bounding-box regression is supported")
        self.net = DlibNet(network)
        self.avg_rgb = network.input["avg_rgb"]
        self.padding = int(network.input["pyramid_padding"])
        self.outer_padding = int(network.input["pyramid_outer_padding"])
        width, height, _ = network.loss["detector_windows"][0]
        self.window_wh = (int(width), int(height))
        self.nms = tuple(float(v) for v in network.loss["overlaps_nms"])
        self.pyramid_rate = (self.PYRAMID_DOWN - 1) / self.PYRAMID_DOWN

    def pyramid(self, frames_rgb: np.ndarray):
        """The tiled pyramid input tensor of same-size frames.

        Level 0 is the normalised frame; each further level is the previous one resized
        bilinearly (corner-aligned, as dlib's ``resize_image``) to ``pyramid_rate`` of its
        size; the rest of the tiled image is 0 (the average colour).

        Parameters
        ----------
        frames_rgb : ndarray of shape (n, H, W, 3), dtype uint8, RGB

        Returns
        -------
        tensor : torch.Tensor of shape (n, 3, NR, NC), float32
        rects : list of (left, top, right, bottom)
            Each level's inclusive rectangle in the tiled image.
        """
        import torch
        import torch.nn.functional as F

        n, nr, nc, _ = frames_rgb.shape
        rects, (tiled_nr, tiled_nc) = tiled_pyramid_rects(
            nr, nc, rate=self.pyramid_rate, padding=self.padding, outer_padding=self.outer_padding
        )
        tensor = torch.zeros((n, 3, tiled_nr, tiled_nc), dtype=torch.float32)
        level = _normalise(frames_rgb, self.avg_rgb)
        for i, (left, top, right, bottom) in enumerate(rects):
            if i:
                level = F.interpolate(
                    level, size=(bottom - top + 1, right - left + 1), mode="bilinear", align_corners=True
                )
            tensor[:, :, top : bottom + 1, left : right + 1] = level
        return tensor, rects

    def detect(self, frames_rgb, *, threshold: float = 0.0, num_threads: int | None = None) -> list:
        """Faces in same-size frames, as dlib's ``cnn_face_detection_model_v1(image)``.

        Parameters
        ----------
        frames_rgb : array-like of shape (n, H, W, 3), dtype uint8, RGB
        threshold : float, default=0.0
            Keep sliding-window scores above this (dlib's ``adjust_threshold``).
        num_threads : int, optional

        Returns
        -------
        list of n (rects, scores)
            ``rects``: int64 array (k, 4) of inclusive ``[left, top, right, bottom]`` in
            pixels of the frame (may extend past its borders, as dlib's); ``scores``:
            float32 (k,), the window scores, highest first after non-max suppression.

        Frames too small for the network (a few pixels) have no detection.

        Raises
        ------
        ValueError
            If the frames are not uint8 of shape (n, H, W, 3).
        """
        frames = np.asarray(frames_rgb)
        if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3:
            raise ValueError(f"frames must be uint8 of shape (n, H, W, 3), got {frames.dtype} {frames.shape}")
        nothing = [(np.zeros((0, 4), np.int64), np.zeros(0, np.float32)) for _ in frames]
        if len(frames) == 0 or frames.shape[1] * frames.shape[2] == 0:
            return nothing
        _, (tiled_nr, tiled_nc) = tiled_pyramid_rects(
            frames.shape[1],
            frames.shape[2],
            rate=self.pyramid_rate,
            padding=self.padding,
            outer_padding=self.outer_padding,
        )
        if min(self.net.output_size(tiled_nr, tiled_nc)) <= 0:
            return nothing  # far smaller than the 80-pixel window (dlib's own code fails here)
        with torch_threads(num_threads):
            tensor, rects = self.pyramid(frames)
            scores = self.net(tensor)[:, 0].numpy()
        return [self._detections(s, rects, threshold) for s in scores]

    def _detections(self, score_map: np.ndarray, rects, threshold: float):
        """``loss_mmod_::tensor_to_dets`` + non-max suppression for one output map (nr, nc)."""
        rows, cols = np.nonzero(score_map > threshold)
        order = np.argsort(-score_map[rows, cols], kind="stable")
        half_w, half_h = (self.window_wh[0] - 1) / 2, (self.window_wh[1] - 1) / 2  # centered_drect
        kept, kept_scores = [], []
        for r, c in zip(rows[order], cols[order]):
            x, y = self.net.output_to_input(float(c), float(r))
            level = _nearest_rect(rects, x, y)
            corners = np.array([x - half_w, y - half_h, x + half_w, y + half_h]) - np.tile(
                rects[level][:2], 2
            )
            up = self.PYRAMID_DOWN / (self.PYRAMID_DOWN - 1.0)
            for _ in range(level):  # pyramid_down<N>::point_up: p * N/(N-1) + 0.3 (same rounding)
                corners = corners * up + 0.3
            box = tuple(int(v) for v in np.floor(corners + 0.5))  # drectangle -> rectangle
            if any(_overlaps(k, box, *self.nms) for k in kept):
                continue
            kept.append(box)
            kept_scores.append(score_map[r, c])
        return np.asarray(kept, np.int64).reshape(-1, 4), np.asarray(kept_scores, np.float32)
