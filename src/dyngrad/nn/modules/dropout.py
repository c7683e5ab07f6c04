"""Dropout layers (active in training mode only)."""
from __future__ import annotations

from .. import functional as F
from .module import Module


class _DropoutNd(Module):
    _fn = "dropout"

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return getattr(F, self._fn)(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability p in training, scaling the rest by 1 / (1 - p)."""


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) input with probability p."""
    _fn = "dropout1d"


class Dropout2d(_DropoutNd):
    """Zero whole channels of (N, C, H, W) input with probability p."""
    _fn = "dropout2d"


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) input with probability p."""
    _fn = "dropout3d"


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU activations normalised."""
    _fn = "alpha_dropout"


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""
    _fn = "feature_alpha_dropout"
