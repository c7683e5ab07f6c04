"""``make_tensor``: a random tensor of a dtype, with ``torch.testing.make_tensor``'s value
ranges, argument checks and layout options."""
from __future__ import annotations

import collections.abc
import math
import warnings

import numpy as np

from .. import _dtype as D
from .._factories import empty, randint
from .._random import rng

_INTEGRAL = (D.uint8, D.int8, D.int16, D.int32, D.int64)
_FLOATING = (D.float16, D.bfloat16, D.float32, D.float64)
_COMPLEX = (D.complex64, D.complex128)


def _limits(dtype, low, high, lowest, highest, default_low, default_high):
    """``low`` and ``high`` (or the defaults) checked and clamped to ``[lowest, highest]``;
    ceiled for bool and integer dtypes."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low!r} and high={high!r}")
    if low == high and dtype in _FLOATING + _COMPLEX:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex "
                      "types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype is D.bool_ or dtype in _INTEGRAL:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)``: by default
    [0, 2) for bool, [0, 10) for unsigned, [-9, 10) for signed integers and [-9, 9) for
    floating and complex dtypes (real and imaginary parts alike); bounds outside the dtype's
    finite range are clamped to it.  ``noncontiguous`` returns a strided view (of a tensor
    twice as wide in the last dimension), ``memory_format`` a copy in that format,
    ``exclude_zero`` replaces zeros by one (bool, integers) or the dtype's smallest normal."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    exact = dtype is D.bool_ or dtype in _INTEGRAL
    if requires_grad and exact:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got dtype={dtype!r}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is D.bool_:
        low, high = _limits(dtype, low, high, 0, 2, 0, 2)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = np.iinfo(dtype.np)
        # randint's bounds are int64: it cannot reach int64's maximum itself
        highest = int(info.max) + (1 if dtype is not D.int64 else 0)
        low, high = _limits(dtype, low, high, int(info.min), highest, -9, 10)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING + _COMPLEX:
        info = D.np_finfo(dtype.np)
        low, high = _limits(dtype, low, high, float(info.min), float(info.max), -9, 9)
        result = empty(shape, device=device, dtype=dtype)
        real = dtype.to_real().np
        # drawn at half scale so that high - low cannot overflow
        parts = rng().uniform(low / 2, high / 2, size=shape + ((2,) if dtype in _COMPLEX else ()))
        values = (2 * parts).astype(real)
        if dtype in _COMPLEX:
            values = values[..., 0] + 1j * values[..., 1]
        # rounding into a narrow dtype may land on ``high``: keep the interval half-open
        values = values.astype(dtype.np)
        result._data[...] = values
        _below_high(result._data, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        d = result._data
        zero = d == 0
        if zero.any():
            d[zero] = 1 if exact else D.np_finfo(dtype.np).tiny
    if dtype in _FLOATING + _COMPLEX:
        result.requires_grad = requires_grad
    return result


def _below_high(a: np.ndarray, low, high) -> None:
    """Pull values that rounded up to ``high`` back below it, in place."""
    parts = (a.real, a.imag) if a.dtype.kind == "c" else (a,)
    for p in parts:
        top = p >= high
        if top.any():
            p[top] = np.nextafter(p.dtype.type(high), p.dtype.type(low))
