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


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` (the type of ``MultiheadAttention.out_proj``, as in PyTorch)."""


class Bilinear(Module):
    """y = x1^T A x2 + b, with A and b ~ U(-1/sqrt(in1), 1/sqrt(in1)) as in PyTorch."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in1_features, in2_features), dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        o, i, j = self.weight.shape
        lead = tuple(input1.shape[:-1])
        t = input1.matmul(self.weight.permute(1, 0, 2).reshape(i, o * j)).reshape(lead + (o, j))
        y = (t * input2.unsqueeze(-2)).sum(-1)
        return y + self.bias if self.bias is not None else y

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(Linear):
    """Not supported: shapes must be known when the layer is built."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("LazyLinear is not supported; use Linear(in_features, "
                                  "out_features)")
