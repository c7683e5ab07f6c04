"""Indexing: basic indexing (ints, slices, None, ...) as a chain of view nodes, as PyTorch
records it; advanced indexing (bool masks, integer tensors) as one IndexBackward0 whose
gradient accumulates over repeated indices; item assignment through in-place ops."""
from __future__ import annotations

import numpy as np

from . import op
from ._graph import STATE, Node, Tensor, edge_of, record
from .views import make_view, alias, UnsqueezeBackward0

_make = Tensor._make


def _is_basic(k):
    return k is None or k is Ellipsis or isinstance(k, (int, np.integer, slice)) and not isinstance(k, bool)


def _to_np_index(k):
    if isinstance(k, Tensor):
        d = k._data
        if d.dtype.kind not in "biu":
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, "
                             f"got {k.dtype}")
        return d
    if isinstance(k, (list, tuple)):
        arr = np.asarray([x._data if isinstance(x, Tensor) else x for x in k])
        if arr.dtype.kind == "f":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return arr
    if isinstance(k, np.ndarray):
        return k
    if isinstance(k, bool):
        return np.asarray(k)
    if isinstance(k, float):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         "Variables are valid indices (got float)")
    return k


class SelectBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, dim, idx = self._saved
        key = (slice(None),) * dim + (idx, Ellipsis)
        return _scatter(shape, key, g, graph),


class SliceBackward0(SelectBackward0):
    __slots__ = ()


class IndexBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, key = self._saved
        return _scatter(shape, key, g, graph, accumulate=True),


def _scatter(shape, key, g, graph, accumulate=False):
    """A zero tensor of ``shape`` with ``g`` placed (or added) at ``key``."""
    if not graph:
        z = np.zeros(shape, dtype=g.dtype)
        if accumulate:
            np.add.at(z, key, g)
        else:
            z[key] = g
        return z
    from .. import zeros
    z = zeros(shape, dtype=g.dtype)
    if accumulate:
        return _index_put_graph(z, key, g)
    z[key] = g
    return z


def _index_put_graph(z, key, g):
    from .inplace import index_put_acc
    return index_put_acc(z, key, g)


def _expand_key(key, ndim):
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    out = []
    seen_ellipsis = False
    for k in key:
        if k is Ellipsis:
            if seen_ellipsis:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen_ellipsis = True
            out.extend([slice(None)] * (ndim - n_real))
        else:
            out.append(k)
    if n_real > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    return out


def getitem(self, key):
    """``tensor[key]`` with PyTorch's semantics and graph nodes."""
    if isinstance(key, tuple):
        basic = all(_is_basic(k) for k in key)
    else:
        basic = _is_basic(key)
    d = self._data
    if not basic:
        npkey = tuple(_to_np_index(k) for k in key) if isinstance(key, tuple) else _to_np_index(key)
        _check_bool_shapes(npkey, d.shape)
        try:
            r = d[npkey]
        except IndexError as e:
            raise IndexError(_index_error(e, d.shape)) from None
        if STATE.enabled and self._requires_grad:
            return record(np.array(r, copy=True), IndexBackward0((edge_of(self),), (d.shape, npkey)))
        return _make(np.array(r, copy=True))
    keys = _expand_key(key, d.ndim)
    if all(k == slice(None) for k in keys if isinstance(k, slice)) and not any(
            k is None or isinstance(k, (int, np.integer)) for k in keys):
        return alias(self)
    cur = self
    dim = 0
    for k in keys:
        cd = cur._data
        if k is None:
            v = np.expand_dims(cd, dim)
            cur = make_view(cur, v, UnsqueezeBackward0, (cd.shape,),
                            lambda x, k=dim: np.expand_dims(x, k) if not isinstance(x, Tensor) else x.unsqueeze(k))
            dim += 1
        elif isinstance(k, slice):
            if k == slice(None):
                dim += 1
                continue
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(cd.shape[dim])
            sl = slice(start, max(stop, start), step)
            key_d = (slice(None),) * dim + (sl,)
            cur = make_view(cur, cd[key_d], SliceBackward0, (cd.shape, dim, sl),
                            lambda x, kk=key_d: x[kk])
            dim += 1
        else:
            size = cd.shape[dim]
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            i = i + size if i < 0 else i
            key_d = (slice(None),) * dim + (i, Ellipsis)
            cur = make_view(cur, cd[key_d], SelectBackward0, (cd.shape, dim, i),
                            lambda x, kk=key_d: x[kk])
    return cur


def _index_error(e, shape):
    return f"{e} (indexing a tensor of shape {list(shape)})"


def _check_bool_shapes(npkey, shape):
    keys = npkey if isinstance(npkey, tuple) else (npkey,)
    dim = 0
    for k in keys:
        if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim > 0:
            for j, s in enumerate(k.shape):
                if dim + j < len(shape) and shape[dim + j] != s:
                    raise IndexError(f"The shape of the mask {list(k.shape)} at index {j} does not "
                                     f"match the shape of the indexed tensor {list(shape)} at index "
                                     f"{dim + j}")
            dim += k.ndim
        elif k is not None:
            dim += 1


def setitem(self, key, value):
    """``tensor[key] = value``: an in-place copy into the indexed region (CopySlices)."""
    from .inplace import copy_, index_put_
    if isinstance(key, tuple):
        basic = all(_is_basic(k) for k in key)
    else:
        basic = _is_basic(key)
    if not basic:
        npkey = tuple(_to_np_index(k) for k in key) if isinstance(key, tuple) else _to_np_index(key)
        index_put_(self, npkey, value)
        return
    keys = _expand_key(key, self._data.ndim)
    if not any(k is None or isinstance(k, (int, np.integer)) for k in keys) and all(
            k == slice(None) for k in keys):
        copy_(self, value)  # a full slice is the tensor itself
        return
    copy_(getitem(self, key), value)


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem
