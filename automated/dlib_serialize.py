"""A reader of dlib's serialisation format, enough to load dlib's DNN model files.

dlib (King 2009, "Dlib-ml: A Machine Learning Toolkit", JMLR 10) writes its objects with
``dlib::serialize`` (``dlib/serialize.h``); its ``.dat`` network files are a
``dlib::add_loss_layer`` serialised with the layer classes of ``dlib/dnn/core.h``,
``layers.h``, ``input.h`` and ``loss.h``. This module decodes those bytes with numpy,
without dlib, so that the same networks can run in PyTorch (``automated.dlib_torch``).

Encodings (``dlib/serialize.h``, ``float_details.h``):

- integer: a control byte, then the absolute value in little-endian bytes. The control
  byte's low 4 bits give the number of value bytes, its high bit the sign.
  ``0 -> 01 00``, ``80 -> 01 50``, ``-28 -> 81 1c``.
- float/double: ``float_details``: the integer ``mantissa`` then the integer
  ``exponent``; the value is ``mantissa * 2**exponent``, except exponents 32000, 32001
  and 32002, which mean +inf, -inf and NaN. ``0.04 -> 03 0a d7 a3 81 1c``.
- bool: the ASCII byte ``'1'`` or ``'0'``.
- string: its length (an integer), then the bytes.
- ``resizable_tensor``: a version, then num_samples, k, nr, nc, then every float in the
  memory order (num_samples, k, nr, nc): version 2 as raw 4-byte little-endian IEEE
  floats, version 1 in the float encoding above (``dlib/dnn/tensor.h``).
- ``alias_tensor``: version 1, then num_samples, k, nr, nc (no data).

A network file is written outside-in: each layer's version number first, the whole
sub-network below it next, then the layer's own details (``add_layer::serialize`` in
``core.h``). Tag and skip layers write only a version, so the topology (which tag an
``add_prev`` adds, where a skip jumps) is not in the file: ``read_network`` takes it from
a ``structure`` list that mirrors the network's C++ type, top (output) layer first.

Errors: every malformed or unexpected byte raises ``DlibFormatError`` naming the byte
offset and what was expected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

# float_details::is_inf / is_ninf / is_nan (dlib/float_details.h)
_IS_INF, _IS_NINF, _IS_NAN = 32000, 32001, 32002


class DlibFormatError(ValueError):
    """The bytes are not the dlib object that was expected (offset and expectation named)."""


@dataclass
class Layer:
    """One layer of a dlib network as read from the file.

    Attributes
    ----------
    kind : str
        ``"con"``, ``"fc"``, ``"relu"``, ``"affine"``, ``"max_pool"``, ``"avg_pool"``,
        ``"add_prev"``, ``"tag"`` or ``"skip"``.
    params : dict
        Decoded details. ``con``: ``weight`` (out, in, nr, nc) float32, ``bias`` (out,)
        float32 or None, ``stride`` (y, x), ``padding`` (y, x). ``fc``: ``weight``
        (num_inputs, num_outputs) float32, ``bias`` (num_outputs,) or None. ``affine``:
        ``gamma``, ``beta`` (per channel in CONV mode), ``mode`` ("conv"/"fc"); a
        serialised ``bn_`` (batch normalisation) is converted to affine as dlib does.
        pools: ``size`` (nr, nc; 0 means the whole input), ``stride``, ``padding``.
        ``add_prev``/``tag``/``skip``: ``tag`` id (from the structure).
    """

    kind: str
    params: dict = field(default_factory=dict)


@dataclass
class Network:
    """A dlib network read by ``read_network``.

    Attributes
    ----------
    loss : dict
        The loss layer's name (``"loss_metric"``, ``"loss_mmod"``) and options.
    layers : list of Layer
        Top (output side) first, as in the C++ type; tags and skips included.
    input : dict
        The input layer: ``name`` and its options (``avg_rgb`` (3,) float32, ``size``
        for a sized input, ``pyramid_padding`` / ``pyramid_outer_padding`` for a
        pyramid).
    """

    loss: dict
    layers: list
    input: dict


class DlibReader:
    """Sequential decoder of dlib-serialised bytes.

    Parameters
    ----------
    data : bytes
        The whole file content.
    """

    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0

    def _fail(self, message: str):
        raise DlibFormatError(f"byte {self.pos}: {message}")

    def read_int(self) -> int:
        """An integer (signed or unsigned; dlib's control-byte format)."""
        if self.pos >= len(self.data):
            self._fail("end of data, expected an integer")
        control = self.data[self.pos]
        size = control & 0x0F
        if size > 8 or control & 0x70:
            self._fail(f"bad integer control byte {control:#04x}")
        end = self.pos + 1 + size
        if end > len(self.data):
            self._fail("end of data inside an integer")
        value = int.from_bytes(self.data[self.pos + 1 : end], "little")
        self.pos = end
        return -value if control & 0x80 else value

    def read_float(self) -> float:
        """A float or double (``float_details``: mantissa, exponent)."""
        mantissa, exponent = self.read_int(), self.read_int()
        return _float_value(mantissa, exponent)

    def read_bool(self) -> bool:
        """A bool (ASCII ``'1'`` or ``'0'``)."""
        if self.pos >= len(self.data) or self.data[self.pos] not in b"01":
            self._fail("expected a bool ('0' or '1')")
        self.pos += 1
        return self.data[self.pos - 1] == ord("1")

    def read_string(self) -> str:
        """A ``std::string`` (length, then bytes), decoded as Latin-1."""
        length = self.read_int()
        if self.pos + length > len(self.data):
            self._fail(f"string of {length} bytes runs past the end")
        text = self.data[self.pos : self.pos + length].decode("latin-1")
        self.pos += length
        return text

    def expect_version(self, what: str, allowed) -> int:
        """Read an integer version number and check it is one of ``allowed``."""
        start = self.pos
        version = self.read_int()
        if version not in allowed:
            self.pos = start
            self._fail(f"{what}: version {version}, expected one of {sorted(allowed)}")
        return version

    def read_tensor(self) -> np.ndarray:
        """A ``resizable_tensor``: ndarray of shape (num_samples, k, nr, nc), float32.

        Version 2 (what current dlib writes, and both model files here) stores the
        floats as raw 4-byte little-endian IEEE values; version 1 stores each with the
        float encoding.
        """
        version = self.expect_version("resizable_tensor", {1, 2})
        shape = tuple(self.read_int() for _ in range(4))  # num_samples, k, nr, nc
        if min(shape) < 0:
            self._fail(f"negative tensor size {shape}")
        count = math.prod(shape)
        if version == 1:
            return np.array([self.read_float() for _ in range(count)], np.float32).reshape(shape)
        end = self.pos + 4 * count
        if end > len(self.data):
            self._fail(f"tensor of {count} floats runs past the end")
        values = np.frombuffer(self.data, "<f4", count=count, offset=self.pos).astype(np.float32)
        self.pos = end
        return values.reshape(shape)

    def read_alias_tensor(self) -> tuple[int, int, int, int]:
        """An ``alias_tensor``: its shape (num_samples, k, nr, nc)."""
        self.expect_version("alias_tensor", {1})
        return tuple(self.read_int() for _ in range(4))


def _float_value(mantissa: int, exponent: int) -> float:
    if exponent < _IS_INF:
        return float(np.ldexp(float(mantissa), exponent))
    return {_IS_INF: np.inf, _IS_NINF: -np.inf}.get(exponent, np.nan)


# --- layer details (dlib/dnn/layers.h) ----------------------------------------------------


def _read_con(r: DlibReader, version: str) -> dict:
    params = r.read_tensor().reshape(-1)
    num_filters, nr, nc = r.read_int(), r.read_int(), r.read_int()
    stride = (r.read_int(), r.read_int())
    padding = (r.read_int(), r.read_int())
    filters = r.read_alias_tensor()
    r.read_alias_tensor()  # the biases' alias (num_filters values after the filters)
    for _ in range(4):  # learning-rate and weight-decay multipliers (training only)
        r.read_float()
    use_bias = r.read_bool() if version == "con_5" else True
    n_weights = int(np.prod(filters))
    n_params = n_weights + (num_filters if use_bias else 0)
    if filters[0] != num_filters or filters[2:] != (nr, nc) or len(params) != n_params:
        r._fail(
            f"con_: filters {filters} and {len(params)} parameters do not fit {num_filters} filters {nr}x{nc}"
        )
    return {
        "weight": params[:n_weights].reshape(filters),
        "bias": params[n_weights:] if use_bias else None,
        "stride": stride,
        "padding": padding,
    }


def _read_fc(r: DlibReader, version: str) -> dict:
    num_outputs, num_inputs = r.read_int(), r.read_int()
    params = r.read_tensor().reshape(-1)
    r.read_alias_tensor()
    r.read_alias_tensor()
    bias_mode = r.read_int()  # fc_bias_mode: 0 FC_HAS_BIAS, 1 FC_NO_BIAS
    for _ in range(4):
        r.read_float()
    n_weights = num_inputs * num_outputs
    if len(params) != n_weights + (num_outputs if bias_mode == 0 else 0):
        r._fail(f"fc_: {len(params)} parameters for {num_inputs} inputs and {num_outputs} outputs")
    return {
        "weight": params[:n_weights].reshape(num_inputs, num_outputs),
        "bias": params[n_weights:] if bias_mode == 0 else None,
    }


def _read_affine(r: DlibReader, version: str) -> dict:
    params = r.read_tensor().reshape(-1)
    gamma_shape = r.read_alias_tensor()
    r.read_alias_tensor()
    mode = r.read_int()
    half = int(np.prod(gamma_shape))
    return {"gamma": params[:half], "beta": params[half : 2 * half], "mode": "fc" if mode == 1 else "conv"}


def _read_bn_as_affine(r: DlibReader, version: str) -> dict:
    """A ``bn_`` layer converted to the inference-time ``affine_`` (``affine_(const bn_&)``).

    gamma' = gamma / sqrt(running_variance + eps), beta' = beta - gamma' * running_mean,
    in float32 as dlib computes them.
    """
    params = r.read_tensor().reshape(-1)
    gamma_shape = r.read_alias_tensor()
    r.read_alias_tensor()
    r.read_tensor()  # means of the last training batch
    r.read_tensor()  # invstds of the last training batch
    running_means = r.read_tensor().reshape(-1)
    running_variances = r.read_tensor().reshape(-1)
    r.read_int()  # num_updates
    r.read_int()  # running_stats_window_size
    for _ in range(4):
        r.read_float()
    eps = r.read_float()
    half = int(np.prod(gamma_shape))
    gamma = params[:half] * (np.float32(1) / np.sqrt(running_variances + np.float32(eps)))
    beta = params[half : 2 * half] - gamma * running_means
    return {
        "gamma": gamma.astype(np.float32),
        "beta": beta.astype(np.float32),
        "mode": "fc" if version == "bn_fc2" else "conv",
    }


def _read_pool(r: DlibReader, version: str) -> dict:
    size = (r.read_int(), r.read_int())
    stride = (r.read_int(), r.read_int())
    padding = (r.read_int(), r.read_int())
    return {"size": size, "stride": stride, "padding": padding}


def _read_nothing(r: DlibReader, version: str) -> dict:
    return {}


# serialised name -> (kind, reader)
_DETAILS = {
    "con_4": ("con", _read_con),
    "con_5": ("con", _read_con),
    "fc_2": ("fc", _read_fc),
    "affine_": ("affine", _read_affine),
    "bn_con2": ("affine", _read_bn_as_affine),
    "bn_fc2": ("affine", _read_bn_as_affine),
    "max_pool_2": ("max_pool", _read_pool),
    "avg_pool_2": ("avg_pool", _read_pool),
    "relu_": ("relu", _read_nothing),
    "add_prev_": ("add_prev", _read_nothing),
}


def _read_details(r: DlibReader, expected_kind: str) -> dict:
    start = r.pos
    version = r.read_string()
    if version not in _DETAILS:
        r.pos = start
        r._fail(f"unsupported layer {version!r} (the structure expects {expected_kind!r})")
    kind, reader = _DETAILS[version]
    if kind != expected_kind:
        r.pos = start
        r._fail(f"found layer {version!r} where the structure expects {expected_kind!r}")
    return reader(r, version)


# --- input layers (dlib/dnn/input.h) --------------------------------------------------------


def _read_input(r: DlibReader) -> dict:
    name = r.read_string()
    if name not in (
        "input_rgb_image",
        "input_rgb_image_sized",
        "input_rgb_image_pyramid",
        "input_rgb_image_pyramid2",
    ):
        r._fail(f"unsupported input layer {name!r}")
    avg_rgb = np.array([r.read_float() for _ in range(3)], np.float32)
    result = {"name": name.rstrip("2"), "avg_rgb": avg_rgb}
    if name == "input_rgb_image_sized":
        result["size"] = (r.read_int(), r.read_int())
    elif name.startswith("input_rgb_image_pyramid"):
        # The first format had no padding fields; dlib then uses 10 and 11 (input.h).
        padding = (r.read_int(), r.read_int()) if name.endswith("2") else (10, 11)
        result["pyramid_padding"], result["pyramid_outer_padding"] = padding
    return result


# --- loss layers (dlib/dnn/loss.h) ----------------------------------------------------------


def _read_test_box_overlap(r: DlibReader) -> tuple[float, float]:
    return r.read_float(), r.read_float()  # iou_thresh, percent_covered_thresh


def _read_loss(r: DlibReader) -> dict:
    name = r.read_string()
    if name == "loss_metric_":  # the first format: values were hard coded (loss.h)
        return {"name": "loss_metric", "margin": 0.1, "distance_threshold": 0.75}
    if name == "loss_metric_2":
        return {"name": "loss_metric", "margin": r.read_float(), "distance_threshold": r.read_float()}
    if name == "loss_mmod_":
        version = r.expect_version("mmod_options", {1, 2, 3, 4})
        if version == 1:
            windows = [(r.read_int(), r.read_int(), "")]  # width, height, label
        else:
            windows = []
            for _ in range(r.read_int()):
                window_version = r.expect_version("detector_window_details", {1, 2})
                width, height = r.read_int(), r.read_int()
                windows.append((width, height, r.read_string() if window_version == 2 else ""))
        options = {
            "name": "loss_mmod",
            "detector_windows": windows,
            "loss_per_false_alarm": r.read_float(),
            "loss_per_missed_target": r.read_float(),
            "truth_match_iou_threshold": r.read_float(),
            "overlaps_nms": _read_test_box_overlap(r),
            "overlaps_ignore": _read_test_box_overlap(r),
            "use_bounding_box_regression": False,
        }
        if version >= 3:
            options["assume_image_pyramid"] = r.read_int()
        if version >= 4:
            options["use_bounding_box_regression"] = r.read_bool()
            options["bbr_lambda"] = r.read_float()
        return options
    r._fail(f"unsupported loss layer {name!r}")


# --- the network (dlib/dnn/core.h) ----------------------------------------------------------


def _read_layer_state(r: DlibReader, version: int, on_input: bool) -> None:
    """The bookkeeping ``add_layer`` writes after its details (training state, skipped)."""
    r.read_bool()  # this_layer_setup_called
    r.read_bool()  # gradient_input_is_stale
    r.read_bool()  # get_output_and_gradient_input_disabled
    r.read_tensor()  # x_grad
    r.read_tensor()  # cached_output
    if on_input:
        r.read_tensor()  # grad_final
        if version >= 3:
            r.read_int()  # _sample_expansion_factor
    elif version == 2:
        r.read_tensor()  # params_grad


def read_network(data: bytes, structure) -> Network:
    """Decode a dlib network file (``dlib::serialize(net)``).

    Parameters
    ----------
    data : bytes
        The file's bytes.
    structure : sequence of tuples
        The network's layers from the top (output side) to the bottom, as in its C++
        type: ``(kind,)`` for a computational layer (``"con"``, ``"fc"``, ``"relu"``,
        ``"affine"``, ``"max_pool"``, ``"avg_pool"``), ``("add_prev", tag_id)``,
        ``("tag", tag_id)`` or ``("skip", tag_id)``. ``affine`` also accepts a stored
        ``bn_`` layer (converted as dlib does when it loads a trained network into its
        inference type).

    Returns
    -------
    Network

    Raises
    ------
    DlibFormatError
        If the bytes do not match the structure (a layer of another kind, a bad version,
        truncated data, or bytes left over at the end).
    """
    r = DlibReader(data)
    r.expect_version("add_loss_layer", {1})
    loss = _read_loss(r)
    structure = [tuple(s) for s in structure]
    if not structure or structure[-1][0] in ("tag", "skip"):
        raise ValueError("the structure must end with a computational layer on the input")
    versions = []
    for i, entry in enumerate(structure):  # outside-in: versions first
        if entry[0] in ("tag", "skip"):
            versions.append(r.expect_version(f"add_{entry[0]}_layer {i}", {1}))
        else:
            on_input = i == len(structure) - 1
            versions.append(r.expect_version(f"add_layer {i} ({entry[0]})", {2, 3} if on_input else {1, 2}))
    input_layer = _read_input(r)
    layers = [None] * len(structure)
    for i in range(len(structure) - 1, -1, -1):  # then the details, bottom-up
        kind = structure[i][0]
        if kind in ("tag", "skip"):
            layers[i] = Layer(kind, {"tag": structure[i][1]})
            continue
        params = _read_details(r, kind)
        if kind == "add_prev":
            params["tag"] = structure[i][1]
        _read_layer_state(r, versions[i], on_input=i == len(structure) - 1)
        layers[i] = Layer(kind, params)
    if r.pos != len(r.data):
        r._fail(f"{len(r.data) - r.pos} bytes left after the network")
    return Network(loss=loss, layers=layers, input=input_layer)


def read_network_file(path, structure) -> Network:
    """``read_network`` on a file's bytes.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    DlibFormatError
        As ``read_network``, with the file name.
    """
    path = Path(path)
    try:
        return read_network(path.read_bytes(), structure)
    except DlibFormatError as error:
        raise DlibFormatError(f"{path.name}: {error}") from error
