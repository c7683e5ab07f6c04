"""Recording helpers shared by every op: when to record, how to wrap an output with its node,
and the one broadcasting-undo helper used by every backward formula."""
from __future__ import annotations

import numpy as np
from math import prod as _prod

from ._dtype import DEFAULTS
from ._tensor import Tensor
from .autograd.grad_mode import STATE
from .autograd.node import Node, Saved, cast_grad, edge_of, first_use, NO_EDGE

_make = Tensor._make

__all__ = ["Node", "Saved", "edge_of", "edges_first", "NO_EDGE", "STATE", "Tensor", "record",
           "sum_to", "as_float", "grad_dtype", "RECORD_HOOKS", "notify", "raw_dim", "raw_dims"]


from ._fperr import quiet_on, quiet_off  # noqa: E402,F401  (re-exported for the ops)
from . import _dtype as _DT


# Observers of graph construction: callables ``hook(tensor, node)`` run after every recorded
# op (the graph explorer, forward-mode AD).  Empty in normal use, so recording costs one check.
RECORD_HOOKS: list = []


def _int_dim(d):
    return int(d._data) if isinstance(d, Tensor) else int(d)


def raw_dims(dim):
    """A dims argument as the caller gave it, as PyTorch's nodes save it: None, or a tuple of
    ints in the caller's order (an int becomes a 1-tuple; 0-d integer tensors count as ints)."""
    if type(dim) is int:
        return (dim,)
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(d if type(d) is int else _int_dim(d) for d in dim)
    return (_int_dim(dim),)


def raw_dim(dim):
    """A single dim argument as the caller gave it (an int; None stays None)."""
    return dim if type(dim) is int or dim is None else _int_dim(dim)


def record(data, node):
    """Wrap ``data`` as the output of ``node``."""
    t = _make(data)
    t._requires_grad = True
    t._grad_fn = node
    if node is not None:
        node._odt = dt = data.dtype
        if dt.kind != "f":
            node._not_floating(dt)
        if RECORD_HOOKS:
            for h in RECORD_HOOKS:
                h(t, node)
    return t


def keep_indices(node, *indices):
    """Keep the index or mask tensors among ``indices`` (a tensor, or a tuple or list holding
    some) as PyTorch's node saves them: changed in place before backward, they make backward
    raise PyTorch's version error instead of reading the new values (``indices_unchanged``)."""
    kept = []
    for i in indices:
        for t in (i if isinstance(i, (tuple, list)) else (i,)):
            if isinstance(t, Tensor):
                kept.append(Saved(t))
            elif isinstance(t, (tuple, list)):
                kept.extend(Saved(u) for u in t if isinstance(u, Tensor))
    if kept:
        node.__dict__["_indices"] = tuple(kept)
    return node


def indices_unchanged(node) -> None:
    """PyTorch's version check of the tensors ``keep_indices`` kept for ``node``."""
    for s in node.__dict__.get("_indices", ()):
        s.get(node, False)


def notify(t):
    """Note the output dtype of a tensor whose grad_fn was set by hand, and run the
    graph-construction observers."""
    fn = t._grad_fn
    if fn is not None and fn._odt is None:
        fn._odt = dt = t._data.dtype
        if dt.kind != "f":
            fn._not_floating(dt)
    if RECORD_HOOKS:
        for h in RECORD_HOOKS:
            h(t, t._grad_fn)
    return t


def edges_first(*inputs):
    """PyTorch collects an op's input edges before its kernel runs: a view whose history can
    no longer be rebuilt raises its error ahead of the op's own (shape, dtype) errors.  Called
    on an op's error path only."""
    if STATE.enabled:
        for t in inputs:
            if isinstance(t, Tensor) and t._stale_view:
                raise RuntimeError(t._stale_view)
        # collecting the edges makes a view's lazily rebuilt history (its grad_fn) now, even
        # though the kernel then fails (later in-place checks see it)
        if any(isinstance(t, Tensor) and t._requires_grad for t in inputs):
            for t in inputs:
                fn = t._grad_fn if isinstance(t, Tensor) else None
                if fn is not None and fn._seq < 0:
                    first_use(fn)


def sum_to(g, shape):
    """Sum ``g`` over the dimensions broadcasting added, so it has ``shape`` (arrays or Tensors)."""
    gs = tuple(g.shape)
    shape = tuple(shape)
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, s in enumerate(shape)
                                      if s == 1 and gs[i + lead] != 1)
    if not isinstance(g, Tensor):
        if not axes or g.size == _prod(shape):  # (summing size-1 axes is the identity)
            return g.reshape(shape)
        if g.dtype is _DT.BF16:  # accumulated in float32, as PyTorch's sum
            return g.sum(axis=axes, dtype=np.float32).astype(_DT.BF16).reshape(shape)
        return g.sum(axis=axes).reshape(shape)
    r = g.sum(dim=axes) if axes else g
    return r.reshape(shape)


def broadcast_view(g, shape):
    """A read-only view of ndarray ``g`` broadcast to ``shape`` (what np.broadcast_to gives,
    built directly: np.broadcast_to costs several microseconds per call)."""
    shape = tuple(shape)
    if g.shape == shape:
        return g
    if type(g) is not np.ndarray:
        g = np.asarray(g)
    if not g.flags.c_contiguous:
        return np.broadcast_to(g, shape)
    nd = len(shape)
    lead = nd - g.ndim
    if lead < 0:
        raise ValueError(f"cannot broadcast a gradient of shape {g.shape} to {shape}")
    strides = [0] * nd
    gs = g.strides
    for i in range(g.ndim):
        s = g.shape[i]
        t = shape[lead + i]
        if s == t:
            strides[lead + i] = gs[i]
        elif s != 1:
            raise ValueError(f"cannot broadcast a gradient of shape {g.shape} to {shape}")
    r = np.ndarray(shape, g.dtype, g, 0, tuple(strides))
    r.flags.writeable = False
    return r


def as_float(arr):
    """``arr`` itself when floating, else converted to the default float dtype."""
    return arr if arr.dtype in _DT.INEXACT else arr.astype(DEFAULTS.float.np)


grad_dtype = cast_grad  # a gradient in the dtype of the input it flows into
