"""``nn.init``: in-place initialisers with PyTorch's distributions and bounds."""
from __future__ import annotations

import math

import numpy as np

from .._random import rng


def _fill(t, values):
    t._data[...] = values.astype(t._data.dtype, copy=False)
    t._vc[0] += 1
    return t


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity (as PyTorch's)."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if not isinstance(slope, (int, float)) or isinstance(slope, bool):
            raise ValueError(f"negative_slope {slope} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dim = tensor.dim()
    if dim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    num_input_fmaps = tensor.shape[1]
    num_output_fmaps = tensor.shape[0]
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return num_input_fmaps * receptive, num_output_fmaps * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    return fi if mode == "fan_in" else fo


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with U(a, b)."""
    return _fill(tensor, rng(generator).uniform(a, b, tensor._data.shape))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with N(mean, std^2)."""
    return _fill(tensor, rng(generator).normal(mean, std, tensor._data.shape))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) truncated to [a, b] (resampling outside values)."""
    g = rng(generator)
    n = tensor._data.size
    out = np.empty(n)
    filled = 0
    while filled < n:
        s = g.normal(mean, std, n - filled)
        s = s[(s >= a) & (s <= b)]
        out[filled:filled + s.size] = s
        filled += s.size
    return _fill(tensor, out.reshape(tensor._data.shape))


def constant_(tensor, val: float):
    return _fill(tensor, np.full(tensor._data.shape, val))


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def eye_(tensor):
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor._data.shape))


def dirac_(tensor, groups=1):
    d = np.zeros(tensor._data.shape)
    out_per = tensor.shape[0] // groups
    mn = min(out_per, tensor.shape[1])
    for g in range(groups):
        for i in range(mn):
            idx = (g * out_per + i, i) + tuple(s // 2 for s in tensor.shape[2:])
            d[idx] = 1
    return _fill(tensor, d)


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fi + fo))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    fi, fo = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fi + fo))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None):
    """He initialisation, uniform: bound = gain * sqrt(3 / fan)."""
    if 0 in tensor.shape:
        return tensor
    fan = _fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    bound = math.sqrt(3.0) * gain / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def _layer_default_(weight, bias) -> None:
    """PyTorch's default init of Linear and convolution layers: kaiming_uniform_(a=sqrt(5))
    for the weight, U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias."""
    kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = _calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        uniform_(bias, -bound, bound)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None):
    if 0 in tensor.shape:
        return tensor
    fan = _fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain: float = 1, generator=None):
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = rng(generator).normal(0, 1, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor._data.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    rows, cols = tensor.shape
    d = rng(generator).normal(0, std, (rows, cols))
    nz = int(math.ceil(sparsity * rows))
    for c in range(cols):
        d[rng(generator).permutation(rows)[:nz], c] = 0
    return _fill(tensor, d)


uniform = uniform_
normal = normal_
constant = constant_
xavier_uniform = xavier_uniform_
xavier_normal = xavier_normal_
kaiming_uniform = kaiming_uniform_
kaiming_normal = kaiming_normal_
orthogonal = orthogonal_
