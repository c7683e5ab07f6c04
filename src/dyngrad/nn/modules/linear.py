"""Linear layers: ``Identity``, ``Linear``, ``Bilinear``."""
from __future__ import annotations

import math

from ..._factories import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class Identity(Module):
    """Returns its input unchanged."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, with PyTorch's default initialisation (U(-1/sqrt(in), 1/sqrt(in))).

    >>> import dyngrad as torch
    >>> torch.nn.Linear(2, 3)
    Linear(in_features=2, out_features=3, bias=True)
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        if in_features < 0 or out_features < 0:
            raise ValueError(f"Linear: in_features and out_features must be non-negative, got "
                             f"{in_features} and {out_features}")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class LazyLinear(Linear):
    pass
