"""The reversal attacker's restorer: a small U-Net that learns to undo a masking.

After "Fantomas: Understanding Face Anonymization Reversibility" (the follow-up to
seeds/000_0b74979cb8a3f1c3.txt, whose related work already notes that "machine learning
[can] reverse the obfuscation of images ... even when a human observer cannot recognize
anything", section 2): an attacker who can run the anonymization on their own labelled
clear faces gets (masked, clear) pairs, trains an image-to-image network on them, restores
each masked probe and hands the restored face to an ordinary recognizer trained on clear
faces. Many maskings (blur, pixelation, noise) destroy less than they appear to.

``RestorationNet`` is that network: a three-level U-Net (Ronneberger et al. 2015) on
``size_px`` x ``size_px`` RGB in [0, 1] that predicts a residual added to its input,
trained with an L1 loss, Adam, and horizontal flips; PyTorch on CPU, seeded.
"""

from __future__ import annotations

import cv2
import numpy as np
import torch
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted
from torch import nn

from .embedding import check_images, to_rgb


def _double_conv(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
    )


class _UNet(nn.Module):
    """Encoder c, 2c, 4c channels (2x2 max-pool between), decoder with skip connections
    (transposed-conv 2x up-sampling), a 1x1 head giving the residual."""

    def __init__(self, base: int):
        super().__init__()
        self.enc1, self.enc2, self.enc3 = (
            _double_conv(3, base),
            _double_conv(base, 2 * base),
            _double_conv(2 * base, 4 * base),
        )
        self.pool = nn.MaxPool2d(2)
        self.up2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2)
        self.dec2 = _double_conv(4 * base, 2 * base)
        self.up1 = nn.ConvTranspose2d(2 * base, base, 2, stride=2)
        self.dec1 = _double_conv(2 * base, base)
        self.head = nn.Conv2d(base, 3, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(e3), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return (x + self.head(d1)).clamp(0.0, 1.0)


class RestorationNet(TransformerMixin, BaseEstimator):
    """Learn ``masked crop -> clear crop`` from pairs; ``transform`` restores masked crops.

    Parameters
    ----------
    size_px : int, default=64
        Side crops are resized to for the network (a multiple of 4); restored crops are
        resized back to the input size.
    base_channels : int, default=8
        Channels of the first level (then 2x, 4x).
    epochs : int, default=30
    batch_size : int, default=16
    learning_rate : float, default=2e-3
        Adam step size (cosine-annealed to 0 over the epochs).
    num_threads : int, default=1
        ``torch.set_num_threads`` (one thread: several processes share the 2 cores).
    random_state : int, default=0
        Seeds weights, batch order and flips: the same pairs give the same restorer.

    Attributes
    ----------
    model_ : torch.nn.Module
    train_loss_ : list of float
        Mean L1 loss (pixel values in [0, 1]) per epoch.
    """

    def __init__(
        self,
        size_px: int = 64,
        base_channels: int = 8,
        epochs: int = 30,
        batch_size: int = 16,
        learning_rate: float = 2e-3,
        num_threads: int = 1,
        random_state: int = 0,
    ):
        self.size_px = size_px
        self.base_channels = base_channels
        self.epochs = epochs
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.num_threads = num_threads
        self.random_state = random_state

    def _tensor(self, images) -> torch.Tensor:
        rgb = to_rgb(images)
        resized = np.stack(
            [cv2.resize(im, (self.size_px, self.size_px), interpolation=cv2.INTER_AREA) for im in rgb]
        )
        return torch.from_numpy(resized.astype(np.float32) / 255.0).permute(0, 3, 1, 2).contiguous()

    def fit(self, X_masked, X_clear):
        """Train on aligned pairs.

        Parameters
        ----------
        X_masked, X_clear : ndarray of uint8, (n, H, W, 3) or (n, H, W), same shape
            Sample i of ``X_masked`` is the masked version of sample i of ``X_clear``.

        Raises
        ------
        ValueError
            If the shapes differ, are not uint8 crops, there are fewer than two pairs, or
            ``size_px`` is not a multiple of 4.
        """
        X_masked, X_clear = check_images(X_masked), check_images(X_clear)
        if X_masked.shape != X_clear.shape:
            raise ValueError(
                f"masked and clear crops must have one shape: {X_masked.shape} != {X_clear.shape}"
            )
        if len(X_masked) < 2:
            raise ValueError(
                f"need at least 2 (masked, clear) pairs to train a restorer, got {len(X_masked)}"
            )
        if self.size_px % 4:
            raise ValueError(f"size_px must be a multiple of 4, got {self.size_px}")
        torch.set_num_threads(self.num_threads)
        torch.manual_seed(self.random_state)
        generator = torch.Generator().manual_seed(self.random_state)
        inputs, targets = self._tensor(X_masked), self._tensor(X_clear)
        self.model_ = _UNet(self.base_channels)
        optimiser = torch.optim.Adam(self.model_.parameters(), lr=self.learning_rate)
        steps = self.epochs * -(-len(inputs) // self.batch_size)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=max(1, steps))
        self.train_loss_ = []
        self.model_.train()
        for _ in range(self.epochs):
            order = torch.randperm(len(inputs), generator=generator)
            total = 0.0
            for start in range(0, len(inputs), self.batch_size):
                batch = order[start : start + self.batch_size]
                if len(batch) < 2:  # batch norm needs two samples
                    continue
                x, y = inputs[batch], targets[batch]
                if torch.rand(1, generator=generator).item() < 0.5:
                    x, y = x.flip(3), y.flip(3)
                optimiser.zero_grad()
                loss = nn.functional.l1_loss(self.model_(x), y)
                loss.backward()
                optimiser.step()
                schedule.step()
                total += float(loss.detach()) * len(batch)
            self.train_loss_.append(total / len(inputs))
        self.model_.eval()
        return self

    def transform(self, X_masked) -> np.ndarray:
        """Restore masked crops.

        Parameters
        ----------
        X_masked : ndarray of uint8, (n, H, W, 3) or (n, H, W)

        Returns
        -------
        ndarray of uint8 of the input's shape (grey input gives grey output).
        """
        check_is_fitted(self, "model_")
        X_masked = check_images(X_masked)
        torch.set_num_threads(self.num_threads)
        outputs = []
        with torch.no_grad():
            for start in range(0, len(X_masked), 64):
                out = self.model_(self._tensor(X_masked[start : start + 64]))
                outputs.append((out.permute(0, 2, 3, 1).numpy() * 255.0).round().astype(np.uint8))
        restored = (
            np.concatenate(outputs) if outputs else np.zeros((0, self.size_px, self.size_px, 3), np.uint8)
        )
        height, width = X_masked.shape[1:3]
        restored = (
            np.stack([cv2.resize(im, (width, height), interpolation=cv2.INTER_CUBIC) for im in restored])
            if len(restored)
            else np.zeros((0, height, width, 3), np.uint8)
        )
        if X_masked.ndim == 3:
            return (
                np.stack([cv2.cvtColor(im, cv2.COLOR_RGB2GRAY) for im in restored])
                if len(restored)
                else np.zeros(X_masked.shape, np.uint8)
            )
        return restored
