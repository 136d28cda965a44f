"""A Keras HDF5 model (architecture + weights) read with h5py and run in PyTorch.

Supports the layers of the mini-Xception classifiers in
``../shared/models/face_classification/`` (Arriaga, Valdenegro-Toro and Ploeger,
"Real-time Convolutional Neural Networks for Emotion and Gender Classification", 2017):
``InputLayer``, ``Conv2D``, ``SeparableConv2D`` (depthwise then pointwise convolution),
``BatchNormalization`` (inference: moving mean and variance), ``Activation`` (linear,
relu, softmax), ``MaxPooling2D``, ``Add`` (residual connections) and
``GlobalAveragePooling2D``, wired as the functional graph in the file's ``model_config``
attribute (Keras 2 format, channels-last). The weights are read from ``model_weights``
by the names in each layer's ``weight_names`` attribute, as Keras itself does.

Keras semantics kept exactly (they decide whether the outputs match the original):
- Keras kernels are (kh, kw, in, out) cross-correlations; PyTorch's ``conv2d`` takes
  (out, in, kh, kw) and is also a cross-correlation, so kernels are only transposed.
- ``padding="same"`` pads like TensorFlow: total ``max((ceil(n/s) - 1) s + k - n, 0)``,
  the smaller half before (so a 3x3/2 max-pool over 60 pixels pads 0 before, 1 after);
  max-pooling pads with -inf, convolutions with 0.
- Batch normalisation: ``gamma (x - mean) / sqrt(var + epsilon) + beta``.

The implementation is checked against TensorFlow's own outputs for real face crops
(``tests/fixtures/mini_xception_reference.npz``, computed outside the project's
dependencies, see ``tests/fixtures/make_mini_xception_reference.py``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

SUPPORTED_LAYERS = (
    "InputLayer",
    "Conv2D",
    "SeparableConv2D",
    "BatchNormalization",
    "Activation",
    "MaxPooling2D",
    "Add",
    "GlobalAveragePooling2D",
)
ACTIVATIONS = {
    "linear": lambda x: x,
    "relu": F.relu,
    "softmax": lambda x: F.softmax(x, dim=1),
}


class KerasModelError(ValueError):
    """The HDF5 file is not a Keras model this reader supports (the message says why)."""


def _same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    total = max((math.ceil(size / stride) - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def _pad(x: torch.Tensor, kernel, strides, padding: str, value: float) -> torch.Tensor:
    if padding == "valid":
        return x
    top, bottom = _same_padding(x.shape[2], kernel[0], strides[0])
    left, right = _same_padding(x.shape[3], kernel[1], strides[1])
    return F.pad(x, (left, right, top, bottom), value=value)


class KerasGraph(torch.nn.Module):
    """Inference-only PyTorch version of a Keras functional model from its HDF5 file.

    Parameters
    ----------
    path : path-like
        Keras 2 HDF5 file with ``model_config`` and ``model_weights``.

    Attributes
    ----------
    input_shape : tuple (height, width, channels)
        From the input layer's ``batch_input_shape``.
    n_outputs : int
        Size of the output vector.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    KerasModelError
        If the file has no model config, is not a single-input single-output functional
        model of supported layers, uses an unsupported option (channels-first,
        dilation, strided separable convolution, ...) or lacks a layer's weights.
    """

    def __init__(self, path):
        super().__init__()
        import h5py

        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"Keras model file not found: {path}")
        with h5py.File(path, "r") as h5:
            if "model_config" not in h5.attrs or "model_weights" not in h5:
                raise KerasModelError(f"{path.name}: no model_config attribute or model_weights group")
            config = json.loads(h5.attrs["model_config"])
            if config.get("class_name") != "Model":
                raise KerasModelError(f"{path.name}: a {config.get('class_name')!r}, not a functional Model")
            self.layers = [
                self._layer(layer, h5["model_weights"], path.name) for layer in config["config"]["layers"]
            ]
        inputs = [layer for layer in self.layers if layer["class"] == "InputLayer"]
        if len(inputs) != 1:
            raise KerasModelError(f"{path.name}: {len(inputs)} input layers, one supported")
        self.input_name = inputs[0]["name"]
        self.input_shape = tuple(inputs[0]["config"]["batch_input_shape"][1:])
        self.output_name = config["config"]["output_layers"][0][0]
        convs = [layer for layer in self.layers if layer["class"] == "Conv2D"]
        self.feature_source = convs[-1]["inputs"][0] if convs else None
        self.n_outputs = self._probe_outputs()
        self.eval()

    @staticmethod
    def _layer(layer: dict, weights_group, filename: str) -> dict:
        kind, name, cfg = layer["class_name"], layer["name"], layer["config"]
        if kind not in SUPPORTED_LAYERS:
            raise KerasModelError(
                f"{filename}: layer {name} is a {kind}; supported: {', '.join(SUPPORTED_LAYERS)}"
            )
        if cfg.get("data_format", "channels_last") != "channels_last":
            raise KerasModelError(
                f"{filename}: layer {name} is channels-first; only channels-last is supported"
            )
        if tuple(cfg.get("dilation_rate", (1, 1))) != (1, 1):
            raise KerasModelError(f"{filename}: layer {name} is dilated; not supported")
        if kind == "SeparableConv2D" and tuple(cfg["strides"]) != (1, 1):
            raise KerasModelError(
                f"{filename}: layer {name} is a strided separable convolution; not supported"
            )
        if kind == "BatchNormalization" and cfg.get("axis", -1) not in (-1, 3):
            raise KerasModelError(f"{filename}: layer {name} normalises axis {cfg['axis']}, not channels")
        activation = cfg.get("activation", "linear")
        if activation not in ACTIVATIONS:
            raise KerasModelError(
                f"{filename}: layer {name} uses activation {activation!r}; "
                f"supported: {', '.join(ACTIVATIONS)}"
            )
        inbound = layer.get("inbound_nodes") or []
        if len(inbound) > 1:
            raise KerasModelError(f"{filename}: layer {name} is shared between several inputs; not supported")
        weights = {}
        if name in weights_group:
            group = weights_group[name]
            for weight_name in group.attrs.get("weight_names", []):
                weight_name = weight_name.decode() if isinstance(weight_name, bytes) else weight_name
                short = weight_name.rsplit("/", 1)[-1].split(":")[0]  # e.g. "kernel", "moving_mean"
                weights[short] = torch.from_numpy(np.asarray(group[weight_name], np.float32))
        needed = {
            "Conv2D": ["kernel"] + (["bias"] if cfg.get("use_bias", True) else []),
            "SeparableConv2D": ["depthwise_kernel", "pointwise_kernel"]
            + (["bias"] if cfg.get("use_bias", True) else []),
            "BatchNormalization": ["moving_mean", "moving_variance"]
            + (["gamma"] if cfg.get("scale", True) else [])
            + (["beta"] if cfg.get("center", True) else []),
        }.get(kind, [])
        missing = [w for w in needed if w not in weights]
        if missing:
            raise KerasModelError(f"{filename}: layer {name} lacks weights {missing}")
        if kind == "Conv2D":
            weights["kernel"] = weights["kernel"].permute(3, 2, 0, 1).contiguous()
        elif kind == "SeparableConv2D":
            kh, kw, channels, multiplier = weights["depthwise_kernel"].shape
            weights["depthwise_kernel"] = (
                weights["depthwise_kernel"]
                .reshape(kh, kw, channels * multiplier)
                .permute(2, 0, 1)
                .unsqueeze(1)
                .contiguous()
            )
            weights["pointwise_kernel"] = weights["pointwise_kernel"].permute(3, 2, 0, 1).contiguous()
        return {
            "class": kind,
            "name": name,
            "config": cfg,
            "weights": weights,
            "inputs": [node[0] for node in inbound[0]] if inbound else [],
        }

    def _run(self, layer: dict, inputs: list[torch.Tensor]) -> torch.Tensor:
        kind, cfg, w = layer["class"], layer["config"], layer["weights"]
        x = inputs[0]
        if kind == "Conv2D":
            x = _pad(x, cfg["kernel_size"], cfg["strides"], cfg["padding"], 0.0)
            x = F.conv2d(x, w["kernel"], w.get("bias"), stride=tuple(cfg["strides"]))
        elif kind == "SeparableConv2D":
            x = _pad(x, cfg["kernel_size"], (1, 1), cfg["padding"], 0.0)
            x = F.conv2d(x, w["depthwise_kernel"], groups=x.shape[1])
            x = F.conv2d(x, w["pointwise_kernel"], w.get("bias"))
        elif kind == "BatchNormalization":
            x = F.batch_norm(
                x,
                w["moving_mean"],
                w["moving_variance"],
                w.get("gamma"),
                w.get("beta"),
                training=False,
                eps=cfg["epsilon"],
            )
        elif kind == "MaxPooling2D":
            x = _pad(x, cfg["pool_size"], cfg["strides"], cfg["padding"], -math.inf)
            x = F.max_pool2d(x, tuple(cfg["pool_size"]), tuple(cfg["strides"]))
        elif kind == "Add":
            x = torch.stack(inputs).sum(dim=0)
        elif kind == "GlobalAveragePooling2D":
            x = x.mean(dim=(2, 3))
        return ACTIVATIONS[cfg.get("activation", "linear")](x)

    @torch.no_grad()
    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Run the graph.

        Parameters
        ----------
        images : tensor of shape (n, channels, height, width), float32
            Already preprocessed as the model expects (channels-first here).

        Returns
        -------
        outputs : tensor of shape (n, n_outputs), float32
        features : tensor of shape (n, c) or None
            The input of the last Conv2D layer averaged over space (for mini-Xception the
            128 channels of the last residual block: the penultimate representation).
        """
        tensors = {self.input_name: images}
        for layer in self.layers:
            if layer["class"] != "InputLayer":
                tensors[layer["name"]] = self._run(layer, [tensors[name] for name in layer["inputs"]])
        features = tensors[self.feature_source].mean(dim=(2, 3)) if self.feature_source else None
        return tensors[self.output_name], features

    def _probe_outputs(self) -> int:
        height, width, channels = self.input_shape
        outputs, _ = self.forward(torch.zeros(1, channels, height, width))
        return int(outputs.shape[1])
