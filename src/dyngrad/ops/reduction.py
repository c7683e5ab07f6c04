"""Reductions (sum, mean) with ``dim`` as int or tuple and ``keepdim``."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from . import op
from ._graph import STATE, Node, Tensor, edge_of, record
from . import _dual as X

_make = Tensor._make


def dims_of(dim, ndim):
    """Normalise ``dim`` (int, tuple, list or None) to a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    n = max(ndim, 1)
    out = []
    for d in dim:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {d})")
        d = d + n if d < 0 else d
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    if ndim == 0:
        return ()
    return tuple(sorted(out))


class SumBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return X.expand_to(g, self._saved[0]),


class SumBackward1(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, dims, keep = self._saved
        if not keep and dims:
            g = X.unsqueeze_dims(g, dims, len(shape))
        return X.expand_to(g, shape),


class MeanBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, n = self._saved
        return X.expand_to(g / n, shape),


class MeanBackward1(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, dims, keep, n = self._saved
        if not keep and dims:
            g = X.unsqueeze_dims(g, dims, len(shape))
        return X.expand_to(g / n, shape),


def _sum_dtype(d, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    return np.int64 if d.dtype.kind in "biu" else d.dtype


@op(methods=("sum",))
def sum(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Sum of all elements, or over ``dim``; SumBackward0 / SumBackward1."""
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    d = input._data
    rt = _sum_dtype(d, dtype)
    if dim is None:
        r = np.asarray(d.sum(dtype=rt))
        if STATE.enabled and input._requires_grad:
            return record(r, SumBackward0((edge_of(input),), (d.shape,)))
        return _make(r)
    dims = dims_of(dim, d.ndim)
    r = np.asarray(d.sum(axis=dims, keepdims=keepdim, dtype=rt))
    if STATE.enabled and input._requires_grad:
        return record(r, SumBackward1((edge_of(input),), (d.shape, dims, keepdim)))
    return _make(r)


@op()
def mean(input, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
    """Arithmetic mean of all elements, or over ``dim``; MeanBackward0 / MeanBackward1."""
    if axis is not None:
        dim = axis
    if keepdims is not None:
        keepdim = keepdims
    d = input._data
    if dtype is not None:
        d = d.astype(D.to_dtype(dtype).np)
    if d.dtype.kind not in "fc":
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: "
                           f"{D.TYPE_NAMES[D.FROM_NP[d.dtype]].replace('Tensor', '')}")
    if dim is None:
        r = np.asarray(d.mean(dtype=d.dtype))
        if STATE.enabled and input._requires_grad:
            return record(r, MeanBackward0((edge_of(input),), (d.shape, max(d.size, 1) if d.size else 0)))
        return _make(r)
    dims = dims_of(dim, d.ndim)
    r = np.asarray(d.mean(axis=dims, keepdims=keepdim, dtype=d.dtype))
    if STATE.enabled and input._requires_grad:
        n = 1
        for k in dims:
            n *= d.shape[k]
        return record(r, MeanBackward1((edge_of(input),), (d.shape, dims, keepdim, n)))
    return _make(r)
