"""Differentiable helpers used by the recurrent and attention layers: each one uses the
library's own op when it exists and otherwise a small local ``Function`` with the same result."""
from __future__ import annotations

import math

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function


def _lib(name):
    import dyngrad
    from .. import functional as F
    return getattr(dyngrad, name, None) or getattr(F, name, None)


class _Cat(Function):
    @staticmethod
    def forward(ctx, dim, *ts):
        ctx.dim = dim
        ctx.sizes = [t.shape[dim] for t in ts]
        return Tensor._make(np.concatenate([t._data for t in ts], axis=dim))

    @staticmethod
    def backward(ctx, g):
        out, start = [None], 0
        for n in ctx.sizes:
            idx = [slice(None)] * g.dim()
            idx[ctx.dim] = slice(start, start + n)
            out.append(g[tuple(idx)])
            start += n
        return tuple(out)


def cat(tensors, dim=0):
    """Concatenate along ``dim``."""
    f = _lib("cat")
    if f is not None:
        return f(list(tensors), dim)
    tensors = list(tensors)
    return _Cat.apply(dim % tensors[0].dim(), *tensors)


def stack(tensors, dim=0):
    """Stack along a new dimension ``dim``."""
    f = _lib("stack")
    if f is not None:
        return f(list(tensors), dim)
    tensors = list(tensors)
    d = dim % (tensors[0].dim() + 1)
    return cat([t.unsqueeze(d) for t in tensors], d)


class _MaskedFill(Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        m = np.broadcast_to(mask._data.astype(bool), x._data.shape)
        ctx.m = m
        return Tensor._make(np.where(m, np.asarray(value, x._data.dtype), x._data))

    @staticmethod
    def backward(ctx, g):
        return g * Tensor._make(~ctx.m).to(g.dtype), None, None


def masked_fill(x, mask, value):
    """``x`` with ``value`` wherever ``mask`` (broadcast) is true."""
    if hasattr(Tensor, "masked_fill"):
        return x.masked_fill(mask, value)
    return _MaskedFill.apply(x, mask, value)


def dropout(x, p=0.5, training=True):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p)."""
    f = _lib("dropout")
    if f is not None:
        return f(x, p, training)
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0
    from ..._random import rng
    keep = (rng().random(x._data.shape) >= p).astype(x._data.dtype) / (1 - p)
    return x * Tensor._make(keep.astype(x._data.dtype))


def layer_norm(x, shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the trailing ``shape`` dims, then scale and shift."""
    f = _lib("layer_norm")
    if f is not None:
        return f(x, shape, weight, bias, eps)
    dims = tuple(range(x.dim() - len(shape), x.dim()))
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dims, keepdim=True)
    y = xc / (var + eps).sqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


class _Gelu(Function):
    @staticmethod
    def forward(ctx, x):
        from scipy.special import erf
        d = x._data
        ctx.save_for_backward(x)
        return Tensor._make((0.5 * d * (1 + erf(d / math.sqrt(2)))).astype(d.dtype))

    @staticmethod
    def backward(ctx, g):
        from scipy.special import erf
        (x,) = ctx.saved_tensors
        d = x._data
        cdf = 0.5 * (1 + erf(d / math.sqrt(2)))
        pdf = np.exp(-0.5 * d * d) / math.sqrt(2 * math.pi)
        return g * Tensor._make((cdf + d * pdf).astype(d.dtype))


def gelu(x):
    """x * Phi(x) (the exact, erf-based GELU)."""
    f = _lib("gelu")
    if f is not None:
        return f(x)
    return _Gelu.apply(x)
