"""Functions that work on both ndarrays and Tensors, for backward formulas: on arrays they
call NumPy (plain backward), on Tensors the differentiable dyngrad op (create_graph)."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor


_PKG = []


def _t():
    """The dyngrad package namespace (imported lazily: this module loads before it)."""
    if not _PKG:
        import importlib
        _PKG.append(importlib.import_module(__name__.split(".")[0]))
    return _PKG[0]


def _pick(np_fn, name):
    def f(x, *args, **kwargs):
        if not isinstance(x, Tensor) or np.isscalar(x):
            return np_fn(x, *args, **kwargs)
        return getattr(_t(), name)(x, *args, **kwargs)

    f.__name__ = name
    return f


exp = _pick(np.exp, "exp")
log = _pick(np.log, "log")
sin = _pick(np.sin, "sin")
cos = _pick(np.cos, "cos")
sign = _pick(np.sign, "sign")
sqrt = _pick(np.sqrt, "sqrt")
tanh = _pick(np.tanh, "tanh")
abs = _pick(np.abs, "abs")
sigmoid = _pick(lambda a: 1.0 / (1.0 + np.exp(-a)), "sigmoid")


def where(cond, a, b):
    """Elementwise choice; ``cond`` is a bool array or bool Tensor."""
    if not isinstance(cond, Tensor) and not isinstance(a, Tensor):
        r = np.where(cond, a, b)
        return r.astype(a.dtype, copy=False) if r.dtype != a.dtype else r
    F = _t()
    c = cond if not isinstance(cond, np.ndarray) else F.from_numpy(cond)
    return F.where(c, a, b)


def zeros_like(a):
    if not isinstance(a, Tensor):
        return np.zeros_like(a)
    return _t().zeros_like(a)


def matmul(a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return a @ b
    return _t().matmul(a, b)


def transpose_last(a):
    """Swap the last two dimensions (``.mT``)."""
    if not isinstance(a, Tensor):
        return a.swapaxes(-1, -2)
    return a.transpose(-1, -2)


def expand_to(g, shape):
    """Broadcast ``g`` to ``shape`` (read-only view for arrays; ExpandBackward for Tensors)."""
    if not isinstance(g, Tensor):
        return np.broadcast_to(g, shape)
    return g.expand(*shape)


def unsqueeze_dims(g, dims, ndim):
    """Re-insert the reduced ``dims`` (sorted, non-negative) as size-1 dimensions."""
    if not isinstance(g, Tensor):
        return np.expand_dims(g, dims)
    for d in sorted(dims):
        g = g.unsqueeze(d)
    return g
