"""Padding: constant (ConstantPadNdBackward0), reflect, replicate and circular, as
``F.pad`` gives them."""
from __future__ import annotations

import numpy as np

from .._record import STATE, Node, edge_of, record
from .._tensor import Tensor
from . import pool as _pool
from . import _dual as X

_make = Tensor._make


class ConstantPadNdBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        pads = self._saved[0]
        neg = [-p for p in pads]
        return _pad_any(g, neg),


def _const_pad_np(x, pads, value):
    nd = x.ndim
    sl = [slice(None)] * nd
    widths = [(0, 0)] * nd
    for i in range(len(pads) // 2):
        ax = nd - 1 - i
        lo, hi = pads[2 * i], pads[2 * i + 1]
        n = x.shape[ax]
        sl[ax] = slice(max(-lo, 0), n - max(-hi, 0))
        widths[ax] = (max(lo, 0), max(hi, 0))
    x = x[tuple(sl)]
    if any(w != (0, 0) for w in widths):
        x = np.pad(x, widths, constant_values=value)
    return np.ascontiguousarray(x)


# NumPy on arrays, the recorded pad on Tensors
_pad_any = X.twin(lambda g, pads: _const_pad_np(g, pads, 0), lambda g, pads: pad(g, pads))


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dimensions: (left, right, top, bottom, ...)."""
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension but got padding length {} and input of dimension {}"
                           .format(len(pad), input.dim()))
    x = input._data
    if mode == "constant":
        v = 0 if value is None else value
        for i in range(len(pad) // 2):
            n = x.shape[x.ndim - 1 - i]
            if n + pad[2 * i] + pad[2 * i + 1] < 0:
                raise RuntimeError(f"The input size {n}, plus negative padding {pad[2 * i]} and "
                                   f"{pad[2 * i + 1]} resulted in a negative output size, which "
                                   f"is invalid. Check dimension {x.ndim - 1 - i} of your input.")
        d = _const_pad_np(x, pad, v)
        if STATE.enabled and input._requires_grad:
            return record(d, ConstantPadNdBackward0((edge_of(input),), (tuple(pad),)))
        return _make(d)
    if value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    k = len(pad) // 2
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if not (k + 1 <= input.dim() <= k + 2) or k > 3:
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
            f"Supported combinations for non-constant padding:\n"
            f"  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            f"  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            f"  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode == "circular":
        return _pad_circular(input, pad)
    mats = []
    for i in range(k):
        ax = -1 - i
        n = x.shape[ax]
        mats.append((ax, _pool.pad_matrix(n, pad[2 * i], pad[2 * i + 1], mode)))
    if mode == "circular":
        cls = _pool.CircularPadBackward0
    else:
        cls = getattr(_pool, f"{'Reflection' if mode == 'reflect' else 'Replication'}Pad{k}DBackward0")
    _pool.need_kernel(input, f"{'reflection' if mode == 'reflect' else 'replication'}_pad{k}d",
                      "uint8", "int8", "int16", "int32", "int64")
    return _pool.axis_linear(input, mats, cls)


def _pad_circular(input, pad):
    """PyTorch's _pad_circular: the input (sliced where a padding is negative) copied into
    the middle of a new tensor, then each padded side copied from the opposite end of that
    tensor, dimension by dimension (CopySlices of slices)."""
    k = len(pad) // 2
    shape = list(input._data.shape)
    lead = len(shape) - k
    out_shape = list(shape)
    for i in range(k):
        pl, pr = pad[2 * (k - i - 1)], pad[2 * (k - i - 1) + 1]
        n = shape[lead + i]
        out_shape[lead + i] = n + pl + pr
        if pl > n or pr > n:
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out_shape[lead + i] < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    out = _make(np.empty(out_shape, input._data.dtype))
    out_slice, in_slice = out, input
    for i in range(k):
        dim = len(shape) - 1 - i
        pl, pr = pad[2 * i], pad[2 * i + 1]
        a, b = max(pl, 0), out_shape[dim] - max(pr, 0)
        out_slice = out_slice.narrow(dim, a, b - a)
        a, b = max(-pl, 0), shape[dim] - max(-pr, 0)
        in_slice = in_slice.narrow(dim, a, b - a)
    out_slice.copy_(in_slice)
    for i in range(k):
        dim = len(shape) - 1 - i
        pl, pr = pad[2 * i], pad[2 * i + 1]
        n = out_shape[dim]
        if pl > 0:
            out.narrow(dim, 0, pl).copy_(out.narrow(dim, n - pl - max(pr, 0), pl))
        if pr > 0:
            out.narrow(dim, n - pr, pr).copy_(out.narrow(dim, max(pl, 0), pr))
    return out


# public in nn.functional (whose module wraps them with PyTorch's argument errors)
pad.__module__ = "dyngrad.nn.functional"
