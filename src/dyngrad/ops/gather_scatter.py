"""Index-driven ops: gather/scatter, index_select/add/fill/copy, masked_fill/select, take,
sorting (sort, argsort, topk, kthvalue) and index-producing ops (nonzero, unique,
searchsorted, bucketize).  Each gradient is the matching scatter or gather of the other."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import op
from .._record import STATE, Node, Saved, Tensor, edge_of, record, sum_to
from .._tensor import _dim
from .. import _dtype as D
from .pointwise import UNSET
from .reduction import raw_dim

_make = Tensor._make


# --- index helpers ----------------------------------------------------------------------------
def _idx(index, name, msg=None):
    """The ndarray of an integer index tensor, with PyTorch's dtype error."""
    d = index._data if isinstance(index, Tensor) else np.asarray(index)
    if d.dtype.kind not in "iu":
        raise RuntimeError(msg or f"{name}(): Expected dtype int32/int64 for index")
    return d


def _along(index, dim):
    """A NumPy fancy key addressing ``x[i0, .., index[i], .., in]`` for every position of index."""
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _check_along(d, index, dim, name):
    if index.ndim != d.ndim and not (index.ndim <= 1 and d.ndim <= 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if name == 'gather' else 'self'} tensor")
    for j in range(index.ndim):
        if j != dim and index.shape[j] > d.shape[j]:
            raise RuntimeError(f"Size does not match at dimension {j} expected index "
                               f"{list(index.shape)} to be no larger than self {list(d.shape)} "
                               f"apart from dimension {dim}")
    n = d.shape[dim] if d.ndim else 1
    if index.size:
        bad = (index < 0) | (index >= n)
        if bad.any():
            v = int(index[bad].flat[0])
            raise RuntimeError(f"index {v} is out of bounds for dimension {dim} with size {n}")


def _zeros(shape, dtype, graph):
    if not graph:
        return np.zeros(shape, dtype=dtype)
    from .._factories import zeros
    return zeros(shape, dtype=dtype)


def _T(a):
    return _make(a)


# --- gather / scatter ---------------------------------------------------------------------------
class GatherBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        shape, dim, index, sx, _ = self._saved
        sx.get(self, False)  # self is saved, as PyTorch's: its version is checked
        if not graph:
            z = np.zeros(shape, dtype=g.dtype)
            np.add.at(z, _along(index, dim), g)
            return z,
        return scatter_add(_zeros(shape, g.dtype, True), dim, _T(index), g),


@op()
def gather(input, dim, index, *, sparse_grad=False):
    """``out[i][j] = input[i][index[i][j]]`` (for dim 1); GatherBackward0."""
    d = input._data
    idx = _idx(index, "gather")
    k = _dim(dim, d.ndim)
    if d.ndim == 0:
        d1, i1 = d.reshape(1), idx.reshape(1)
        _check_along(d1, i1, 0, "gather")
        data = d1[i1].reshape(idx.shape)
    else:
        _check_along(d, idx, k, "gather")
        data = d[_along(idx, k)]
    if STATE.enabled and input._requires_grad:
        return record(data, GatherBackward0((edge_of(input),), (d.shape, k, idx, Saved(input),
                                                                raw_dim(dim))))
    return _make(data)


@op()
def take_along_dim(input, indices, dim=None):
    """Values of ``input`` at ``indices`` along ``dim`` (the flattened input without)."""
    if not isinstance(indices, Tensor):
        raise D.not_tensor("take_along_dim", "indices", 2, indices)
    if dim is None:
        return take(input, indices)
    d = input._data
    k = _dim(dim, d.ndim)
    idx = _idx(indices, "take_along_dim", "torch.take_along_dim(): dtype of indices should be Long "
                                          f"but got {indices.dtype}")
    shp = list(np.broadcast_shapes(d.shape[:k] + (1,) + d.shape[k + 1:],
                                   idx.shape[:k] + (1,) + idx.shape[k + 1:]))
    ishape = tuple(shp[:k] + [idx.shape[k]] + shp[k + 1:])
    shp[k] = d.shape[k]
    x = input.expand(*shp)  # always a view, as PyTorch saves it
    return gather(x, k, _make(np.ascontiguousarray(np.broadcast_to(idx, ishape))))


def _src_part(src, index):
    """The leading ``index.shape`` block of ``src`` (scatter reads only that)."""
    if src.shape == index.shape:
        return src
    return src[tuple(slice(0, s) for s in index.shape)]


def _src_grad(gs, shape, name):
    """The src gradient ``gs`` (index-shaped), checked as PyTorch's engine checks a node's
    outputs: a src larger than index gets no padded gradient but PyTorch's error."""
    rs, shape = tuple(gs.shape), tuple(shape)
    if rs == shape:
        return gs
    lead = len(rs) - len(shape)
    if not (lead >= 0 and all(a == 1 or a == b for a, b in zip(shape, rs[lead:]))):
        raise RuntimeError(f"Function {name} returned an invalid gradient at index 1 - got "
                           f"{list(rs)} but expected shape compatible with {list(shape)}")
    return sum_to(gs, shape)


class ScatterBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        dim, index, sshape, _ = self._saved
        gself = gsrc = None
        if self.next_functions[0][0] is not None:
            if not graph:
                gself = g.copy()
                gself[_along(index, dim)] = 0
            else:
                gself = scatter(g, dim, _T(index), 0.0)
        if len(self.next_functions) > 1:
            if self.next_functions[1][0] is not None:
                gs = g[_along(index, dim)] if not graph else gather(g, dim, _T(index))
                gsrc = _src_grad(gs, sshape, type(self).__name__)
            return gself, gsrc
        return gself,


class ScatterBackward1(ScatterBackward0):
    __slots__ = ()


class ScatterAddBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        dim, index, sshape, _ = self._saved
        gsrc = None
        if self.next_functions[1][0] is not None:
            gs = g[_along(index, dim)] if not graph else gather(g, dim, _T(index))
            gsrc = _src_grad(gs, sshape, type(self).__name__)
        return g, gsrc


class ScatterReduceNotImplemented(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        raise RuntimeError("derivative for aten::scatter is not implemented")


ScatterReduceNotImplemented.__name__ = ScatterReduceNotImplemented.__qualname__ = "NotImplemented"

_REDUCE = {"add": np.add, "multiply": np.multiply}


def _scatter_data(input, dim, index, src, reduce, name):
    d = input._data
    idx = _idx(index, name, f"{name}(): Expected dtype int32/int64 for index")
    k = _dim(dim, d.ndim)
    _check_along(d, idx, k, name)
    out = d.copy()
    key = _along(idx, k) if d.ndim else (idx.reshape(-1) * 0,)
    if isinstance(src, Tensor):
        sd = src._data
        if sd.ndim != idx.ndim and idx.size:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        vals = _src_part(sd, idx)
        if not d.ndim:
            vals = vals.reshape(-1)
    else:
        vals = src
    if reduce is None:
        out[key] = vals
    else:
        if reduce not in _REDUCE:
            raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
        _REDUCE[reduce].at(out, key, vals)
    return out, idx, k, raw_dim(dim)


@op()
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src`` (tensor or scalar) written at ``index`` along ``dim``;
    ScatterBackward0 (tensor src) or ScatterBackward1 (scalar)."""
    if src is None:
        src = value
    data, idx, k, raw = _scatter_data(input, dim, index, src, reduce, "scatter")
    if not STATE.enabled:
        return _make(data)
    if isinstance(src, Tensor):
        if not (input._requires_grad or src._requires_grad):
            return _make(data)
        if reduce is not None:
            return record(data, ScatterReduceNotImplemented((edge_of(input), edge_of(src)), ()))
        return record(data, ScatterBackward0((edge_of(input), edge_of(src)),
                                             (k, idx, src._data.shape, raw)))
    if not input._requires_grad:
        return _make(data)
    if reduce is not None:
        return record(data, ScatterReduceNotImplemented((edge_of(input),), ()))
    return record(data, ScatterBackward1((edge_of(input),), (k, idx, (), raw)))


@op()
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeats add up)."""
    data, idx, k, raw = _scatter_data(input, dim, index, src, "add", "scatter_add")
    if STATE.enabled and (input._requires_grad or src._requires_grad):
        return record(data, ScatterAddBackward0((edge_of(input), edge_of(src)),
                                                (k, idx, src._data.shape, raw)))
    return _make(data)


def _inplace(name, fn):
    def f(self, *args, **kwargs):
        from .inplace import apply
        return apply(self, fn, *args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"In-place {fn.__name__}; returns self."
    return op(name, function=False)(f)


# --- index_select / index_add / index_fill / index_copy ----------------------------------------
def _vec_index(index, d, k, name):
    idx = _idx(index, name, f"{name}(): Expected dtype int32 or int64 for index")
    if idx.ndim > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    idx = idx.reshape(-1)
    n = d.shape[k] if d.ndim else 1
    if idx.size and ((idx < -n) | (idx >= n)).any():
        if name == "index_select":
            raise IndexError("index out of range in self")
        v = int(idx[(idx < -n) | (idx >= n)][0])
        msg = f"index {v} is out of bounds for dimension {k} with size {n}"
        if name == "index_add":
            raise RuntimeError(msg)
        raise IndexError(("index_copy_(): " if name == "index_copy" else "") + msg)
    return idx


class IndexSelectBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, dim, idx = self._saved[:3]
        if not graph:
            z = np.zeros(shape, dtype=g.dtype)
            np.add.at(z if shape else z.reshape(1), (slice(None),) * dim + (idx,), g)
            return z,
        return index_add(_zeros(shape, g.dtype, True), dim, _T(idx), g),


@op()
def index_select(input, dim, index):
    """The slices of ``input`` at the positions ``index`` along ``dim``; IndexSelectBackward0."""
    d = input._data
    k = _dim(dim, d.ndim)
    idx = _vec_index(index, d, k, "index_select")
    if d.ndim == 0:
        data = d.reshape(1)[idx].reshape(())
    else:
        data = np.take(d, idx, axis=k)
    if STATE.enabled and input._requires_grad:
        return record(data, IndexSelectBackward0((edge_of(input),), (d.shape, k, idx,
                                                                     raw_dim(dim))))
    return _make(data)


class IndexAddBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        dim, idx, sshape, alpha, ss = self._saved[:5]
        gs = None
        if self.next_functions[1][0] is not None:
            ss.get(self, False)  # source is saved for its gradient, as PyTorch's
            if not graph:
                gs = np.take(g, idx, axis=dim) if g.ndim else g.reshape(1)[idx]
            else:
                gs = index_select(g, dim, _T(idx))
            if alpha != 1:
                gs = gs * alpha
            gs = gs.reshape(sshape)
        return g, gs


def _dim_key(d, k, idx):
    return (slice(None),) * k + (idx,) if d.ndim else (idx,)


def _index_add_check(d, k, index, sd):
    """index_add's argument errors in PyTorch's order and words; the index as a vector."""
    from .._dtype import FROM_NP, scalar_type_name as sn
    if sd.dtype != d.dtype:
        raise RuntimeError(f"index_add_(): self ({sn(d.dtype)}) and source ({sn(sd.dtype)}) must "
                           f"have the same scalar type")
    idx = index._data if isinstance(index, Tensor) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{sn(idx.dtype) if idx.dtype in FROM_NP else idx.dtype}")
    if idx.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{idx.ndim} with type: {sn(idx.dtype)} and size: {list(idx.shape)}")
    idx = idx.reshape(-1)
    n_src = sd.shape[k] if k < sd.ndim else 1
    if sd.ndim and idx.size != n_src:
        raise RuntimeError(f"index_add_(): Number of indices ({idx.size}) should be equal to "
                           f"source.size(dim): ({n_src}), for dim: {k}")
    if (d.ndim or sd.ndim) and (
            sd.ndim != d.ndim or sd.shape[:k] + sd.shape[k + 1:] != d.shape[:k] + d.shape[k + 1:]):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(d.shape)} source.shape = "
                           f"{list(sd.shape)}")
    n = d.shape[k] if d.ndim else 1
    if idx.size and ((idx < 0) | (idx >= n)).any():
        if d.ndim <= 1:
            raise IndexError("index out of range in self")
        v = int(idx[(idx < 0) | (idx >= n)][0])
        raise RuntimeError(f"index {v} is out of bounds for dimension {k} with size {n}")
    return idx


@op()
def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source`` slices added at ``index`` along ``dim``."""
    d = input._data
    k = _dim(dim, d.ndim)
    sd = source._data
    idx = _index_add_check(d, k, index, sd)
    out = d.copy()
    tgt = out if d.ndim else out.reshape(1)
    src = sd if alpha == 1 else sd * alpha
    exp_shape = d.shape[:k] + (idx.size,) + d.shape[k + 1:] if d.ndim else (idx.size,)
    if src.shape != exp_shape:
        src = src.reshape(exp_shape)  # a 0-d source or self: one element
    np.add.at(tgt, _dim_key(tgt, k, idx), src.astype(d.dtype, copy=False))
    if STATE.enabled and (input._requires_grad or source._requires_grad):
        return record(out, IndexAddBackward0((edge_of(input), edge_of(source)),
                                             (k, idx, sd.shape, alpha,
                                              Saved(source) if source._requires_grad else None,
                                              raw_dim(dim), sd.ndim)))
    return _make(out)


class IndexFillBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        dim, idx = self._saved[:2]
        if not graph:
            gs = g.copy()
            (gs if gs.ndim else gs.reshape(1))[_dim_key(gs, dim, idx)] = 0
        else:
            gs = index_fill(g, dim, _T(idx), 0.0)
        gv = None
        if len(self.next_functions) > 1 and self.next_functions[1][0] is not None:
            if not graph:
                gv = (np.take(g, idx, axis=dim) if g.ndim else g.reshape(1)[idx]).sum()
                gv = np.asarray(gv, dtype=g.dtype)
            else:
                gv = index_select(g, dim, _T(np.unique(idx))).sum()
        return (gs,) + ((gv,) if len(self.next_functions) > 1 else ())


class IndexFillBackward1(IndexFillBackward0):
    __slots__ = ()


@op()
def index_fill(input, dim, index, value):
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value``;
    IndexFillBackward0 (scalar) or IndexFillBackward1 (0-d tensor)."""
    d = input._data
    k = _dim(dim, d.ndim)
    idx = _vec_index(index, d, k, "index_fill")
    idx = np.where(idx < 0, idx + (d.shape[k] if d.ndim else 1), idx)
    out = d.copy()
    tgt = out if d.ndim else out.reshape(1)
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        tgt[_dim_key(tgt, k, idx)] = value._data
        if STATE.enabled and (input._requires_grad or value._requires_grad):
            return record(out, IndexFillBackward1((edge_of(input), edge_of(value)),
                                                       (k, idx, raw_dim(dim))))
        return _make(out)
    tgt[_dim_key(tgt, k, idx)] = value
    if STATE.enabled and input._requires_grad:
        return record(out, IndexFillBackward0((edge_of(input),), (k, idx, raw_dim(dim))))
    return _make(out)


class IndexCopyBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        dim, idx, sshape, ss = self._saved[:4]
        if ss is not None:
            ss.get(self, False)  # source is saved for its gradient, as PyTorch's
        gself = gs = None
        if self.next_functions[0][0] is not None:
            if not graph:
                gself = g.copy()
                (gself if gself.ndim else gself.reshape(1))[_dim_key(gself, dim, idx)] = 0
            else:
                gself = index_fill(g, dim, _T(idx), 0.0)
        if self.next_functions[1][0] is not None:
            if not graph:
                gs = np.take(g, idx, axis=dim) if g.ndim else g.reshape(1)[idx]
            else:
                gs = index_select(g, dim, _T(idx))
            gs = gs.reshape(sshape)
        return gself, gs


@op()
def index_copy(input, dim, index, source):
    """A copy of ``input`` with ``source``'s slices written at ``index`` along ``dim``."""
    d = input._data
    k = _dim(dim, d.ndim)
    idx = _vec_index(index, d, k, "index_copy")
    out = d.copy()
    tgt = out if d.ndim else out.reshape(1)
    sd = source._data
    exp_shape = d.shape[:k] + (idx.size,) + d.shape[k + 1:] if d.ndim else (idx.size,)
    if sd.size != int(np.prod(exp_shape)):
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(d.shape[:k] + d.shape[k + 1:])} at "
                           f"dimension {k} and source slice shape: "
                           f"{list(sd.shape[:k] + sd.shape[k + 1:])} at dimension 0.")
    tgt[_dim_key(tgt, k, idx)] = sd.reshape(exp_shape)
    if STATE.enabled and (input._requires_grad or source._requires_grad):
        return record(out, IndexCopyBackward0((edge_of(input), edge_of(source)),
                                              (k, idx, sd.shape,
                                               Saved(source) if source._requires_grad else None,
                                               raw_dim(dim), sd.ndim)))
    return _make(out)


# --- masked ops ------------------------------------------------------------------------------
def _mask(mask, name):
    md = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if md.dtype != np.bool_:
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype if isinstance(mask, Tensor) else md.dtype}".replace("torch.", ""))
    return md


class MaskedFillBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        mask, shape = self._saved
        if not graph:
            gs = sum_to(np.where(mask, 0, g).astype(g.dtype, copy=False), shape)
        else:
            gs = sum_to(masked_fill(g, _T(mask), 0.0), shape)
        gv = None
        if len(self.next_functions) > 1 and self.next_functions[1][0] is not None:
            if not graph:
                gv = np.asarray(np.where(mask, g, 0).sum(), dtype=g.dtype)
            else:
                gv = masked_fill(g, _T(~mask), 0.0).sum()
        return (gs,) + ((gv,) if len(self.next_functions) > 1 else ())


class MaskedFillBackward1(MaskedFillBackward0):
    __slots__ = ()


@op()
def masked_fill(input, mask, value):
    """A copy of ``input`` with ``value`` where ``mask`` is True (broadcast); MaskedFillBackward0
    (scalar value) or MaskedFillBackward1 (0-d tensor value)."""
    d = input._data
    md = _mask(mask, "masked_fill_")
    try:
        shape = np.broadcast_shapes(d.shape, md.shape)
    except ValueError:
        from .pointwise import broadcast_error
        raise broadcast_error(md.shape, d.shape) from None
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value._data.ndim} dimension(s).")
        v = value._data
    else:
        v = value
        if isinstance(v, float) and d.dtype.kind in "biu":
            pass
    out = np.where(md, np.asarray(v).astype(d.dtype), d)
    if out.shape != shape:
        out = np.broadcast_to(out, shape).copy()
    elif not out.flags.c_contiguous:  # PyTorch fills a contiguous clone
        out = out.copy(order="C")
    if STATE.enabled:
        if isinstance(value, Tensor):
            if input._requires_grad or value._requires_grad:
                return record(out, MaskedFillBackward1((edge_of(input), edge_of(value)), (md, d.shape)))
        elif input._requires_grad:
            return record(out, MaskedFillBackward0((edge_of(input),), (md, d.shape)))
    return _make(out)


class MaskedSelectBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        mask, shape, sx = self._saved
        sx.get(self, False)  # self is saved, as PyTorch's: its version is checked
        bshape = mask.shape
        if not graph:
            z = np.zeros(bshape, dtype=g.dtype)
            z[mask] = g
            return sum_to(z, shape),
        from .inplace import _index_put_fn
        z = _index_put_fn(_zeros(bshape, g.dtype, True), (mask,), g)
        return sum_to(z, shape),


@op()
def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor; MaskedSelectBackward0."""
    if not isinstance(mask, Tensor):
        raise D.not_tensor("masked_select", "mask", 2, mask)
    d = input._data
    md = _mask(mask, "masked_select:")
    shape = np.broadcast_shapes(d.shape, md.shape)
    mb = np.broadcast_to(md, shape)
    data = np.broadcast_to(d, shape)[mb]
    if STATE.enabled and input._requires_grad:
        return record(data, MaskedSelectBackward0((edge_of(input),), (np.ascontiguousarray(mb), d.shape, Saved(input))))
    return _make(data)


class MaskedScatterBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        mask, n, sshape = self._saved
        if not graph:
            gs = np.where(mask, 0, g).astype(g.dtype, copy=False)
            sel = g[mask]
            gsrc = np.zeros(int(np.prod(sshape)), dtype=g.dtype)
            gsrc[:n] = sel
            return gs, gsrc.reshape(sshape)
        gs = masked_fill(g, _T(mask), 0.0)
        from .shape import cat
        from .._factories import zeros
        sel = masked_select(g, _T(mask))
        rest = int(np.prod(sshape)) - n
        gsrc = cat([sel, zeros(rest, dtype=g.dtype)]) if rest else sel
        return gs, gsrc.reshape(sshape)


@op()
def masked_scatter(input, mask, source):
    """A copy of ``input`` with consecutive elements of ``source`` written where ``mask`` is True."""
    d = input._data
    md = np.broadcast_to(_mask(mask, "masked_scatter_"), d.shape)
    n = int(md.sum())
    sd = source._data
    if sd.size < n:
        raise RuntimeError("masked_scatter: expected source to have at least as many elements as "
                           "ones in mask")
    out = d.copy()
    out[md] = sd.reshape(-1)[:n]
    if STATE.enabled and (input._requires_grad or source._requires_grad):
        return record(out, MaskedScatterBackward0((edge_of(input), edge_of(source)),
                                                  (np.ascontiguousarray(md), n, sd.shape)))
    return _make(out)


class TakeBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        shape, idx, sx = self._saved
        sx.get(self, False)  # self is saved, as PyTorch's: its version is checked
        n = int(np.prod(shape))
        if not graph:
            z = np.zeros(n, dtype=g.dtype)
            np.add.at(z, idx.reshape(-1), g.reshape(-1))
            return z.reshape(shape),
        from .inplace import _index_put_fn
        z = _index_put_fn(_zeros((n,), g.dtype, True), (idx.reshape(-1),), g.reshape(-1), True)
        return z.reshape(shape),


@op()
def take(input, index):
    """Elements of the flattened ``input`` at ``index`` (shaped like index); TakeBackward0."""
    if not isinstance(index, Tensor):
        raise D.not_tensor("take", "index", 2, index)
    d = input._data
    idx = _idx(index, "take", "take(): Expected a long tensor for index, but got "
                              f"{getattr(index, 'dtype', '')}")
    n = d.size
    if idx.size and ((idx < -n) | (idx >= n)).any():
        v = int(idx[(idx < -n) | (idx >= n)].flat[0])
        raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} elements.")
    idx = np.where(idx < 0, idx + n, idx)
    data = d.reshape(-1)[idx]
    if STATE.enabled and input._requires_grad:
        return record(data, TakeBackward0((edge_of(input),), (d.shape, idx, Saved(input))))
    return _make(data)


# --- sorting ---------------------------------------------------------------------------------
def _return_type(name, fields):
    base = namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__repr__": __repr__, "__slots__": ()})
    cls.__module__ = "torch.return_types"
    return cls


topk_rt = _return_type("topk", ("values", "indices"))
sort_rt = _return_type("sort", ("values", "indices"))
kthvalue_rt = _return_type("kthvalue", ("values", "indices"))


def _argsort(d, axis, descending=False):
    """Stable argsort (NaN largest); descending keeps equal elements in their original order."""
    if not descending:
        return np.argsort(d, axis=axis, kind="stable")
    n = d.shape[axis]
    r = np.argsort(np.flip(d, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(r, axis)


class SortBackward0(Node):
    """Gradient of sort-like ops: each value's gradient goes back to the position it came from."""
    __slots__ = ()

    def _bw(self, g, graph):
        shape, dim, sidx, squeezed = self._saved[:4]
        idx = sidx.get(self, False)  # the returned indices, version-checked as PyTorch's
        if squeezed:
            idx = np.expand_dims(idx, dim)
        if not shape:
            return g.reshape(()),
        if not graph:
            z = np.zeros(shape, dtype=g.dtype)
            z[_along(idx, dim)] = g.reshape(idx.shape)
            return z,
        return scatter(_zeros(shape, g.dtype, True), dim, _T(idx), g.reshape(idx.shape)),


class TopkBackward0(SortBackward0):
    __slots__ = ()


class KthvalueBackward0(SortBackward0):
    __slots__ = ()


def _values_indices(input, vals, idx, node_cls, k, rt, raw, squeezed=False, keepdim=False):
    """(values, indices) of a selecting op; its node saves the indices tensor returned, so an
    in-place change of it fails backward as in PyTorch (``squeezed``: dim ``k`` was dropped;
    ``raw``: the dim as the caller gave it, which the node shows)."""
    v = _make(vals)
    it = _make(idx)
    if STATE.enabled and input._requires_grad:
        v = record(vals, node_cls((edge_of(input),), (input._data.shape, k, Saved(it),
                                                      squeezed, raw_dim(raw), keepdim)))
    return rt(v, it)


class SortBackward1(SortBackward0):
    __slots__ = ()


@op()
def sort(input, *args, stable=UNSET, dim=-1, descending=False):
    """Values sorted along ``dim`` and their original indices (stable); SortBackward0, or
    SortBackward1 when ``stable`` is given (even as None: PyTorch's ``sort.stable`` overload).

    PyTorch's two signatures: ``sort(input, dim=-1, descending=False)`` and
    ``sort(input, *, stable, dim=-1, descending=False)`` (``stable`` only with keywords)."""
    if len(args) > 2 or (args and stable is not UNSET):
        raise D.bad_combo("sort", (input,) + args, {"stable": stable} if stable is not UNSET
                          else None)
    if args:
        dim = args[0]
        descending = args[1] if len(args) > 1 else descending
    cls = SortBackward0 if stable is UNSET else SortBackward1
    d = input._data
    k = _dim(dim, d.ndim)
    if d.ndim == 0:
        return _values_indices(input, d.copy(), np.zeros((), np.int64), cls, 0, sort_rt, dim)
    idx = _argsort(d, k, descending).astype(np.int64)
    vals = np.take_along_axis(d, idx, k)
    if not d.flags.c_contiguous:  # PyTorch's results take the input's layout
        vals, idx = _like_layout(vals, d), _like_layout(idx, d)
    return _values_indices(input, vals, idx, cls, k, sort_rt, dim)


def _like_layout(a, like):
    """``a`` (of ``like``'s shape) stored in ``like``'s dimension order (empty_like's)."""
    out = np.empty_like(like, dtype=a.dtype)
    out[...] = a
    return out


@op()
def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim`` (no gradient)."""
    return sort(input, dim=dim, descending=descending, stable=stable).indices


@op()
def msort(input):
    """``input`` sorted along dim 0."""
    return sort(input, 0).values


@op()
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) values along ``dim`` and their indices; TopkBackward0."""
    d = input._data
    kd = _dim(dim, d.ndim)
    n = d.shape[kd] if d.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if d.ndim == 0:
        return _values_indices(input, d.copy(), np.zeros((), np.int64), TopkBackward0, 0, topk_rt,
                               dim)
    idx = _argsort(d, kd, largest).astype(np.int64)
    idx = np.take(idx, np.arange(k), axis=kd)
    return _values_indices(input, np.take_along_axis(d, idx, kd), idx, TopkBackward0, kd, topk_rt,
                           dim)


@op()
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value along ``dim`` and its index; KthvalueBackward0."""
    d = input._data
    kd = _dim(dim, d.ndim)
    n = d.shape[kd] if d.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {kd}")
    if d.ndim == 0:
        return _values_indices(input, d.copy(), np.zeros((), np.int64), KthvalueBackward0, 0,
                               kthvalue_rt, dim, keepdim=keepdim)
    idx = np.take(_argsort(d, kd), [k - 1], axis=kd).astype(np.int64)
    vals = np.take_along_axis(d, idx, kd)
    if not keepdim:
        return _values_indices(input, vals.squeeze(kd), idx.squeeze(kd), KthvalueBackward0, kd,
                               kthvalue_rt, dim, True, False)
    return _values_indices(input, vals, idx, KthvalueBackward0, kd, kthvalue_rt, dim, False, True)


# --- index-producing ops (no gradient) ---------------------------------------------------------
@op()
def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one tensor per dim."""
    d = input._data
    if as_tuple:
        if d.ndim == 0:
            return (_make(np.flatnonzero(d.reshape(1)).astype(np.int64)),)
        return tuple(_make(i.astype(np.int64)) for i in np.nonzero(d))
    return _make(np.argwhere(d).astype(np.int64).reshape(-1, d.ndim))


@op()
def argwhere(input):
    """Indices of the non-zero elements as an (n, ndim) int64 tensor."""
    return nonzero(input)


def _unique_dim(x, dim):
    """``dim`` of a unique along a dim, normalised, with PyTorch's errors."""
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    k = _dim(dim, x.ndim)
    if any(s == 0 for i, s in enumerate(x.shape) if i != k):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                           "unique cannot be applied")
    return k


@op()
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), optionally with inverse indices and counts (no gradient)."""
    D.arg_bools("_unique2", sorted=sorted, return_inverse=return_inverse,
                return_counts=return_counts)
    d = input._data
    if dim is not None:
        dim = _unique_dim(d, dim)
    r = np.unique(d if dim is not None else d.reshape(-1), return_inverse=True, return_counts=True,
                  axis=dim)
    vals, inv, counts = r
    out = [_make(vals)]
    if return_inverse:
        out.append(_make(inv.reshape(d.shape if dim is None else (d.shape[_dim(dim, d.ndim)],))
                         .astype(np.int64)))
    if return_counts:
        out.append(_make(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@op()
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (of the flattened tensor, or of the slices
    along ``dim``)."""
    D.arg_bools("unique_consecutive", return_inverse=return_inverse, return_counts=return_counts)
    if dim is None:
        d = input._data.reshape(-1)
        k = 0
    else:
        k = _unique_dim(input._data, dim)
        d = np.moveaxis(input._data, k, 0)
    n = d.shape[0] if d.ndim else 1
    if n == 0:
        keep = np.zeros(0, bool)
    else:
        changed = d[1:] != d[:-1]
        if changed.ndim > 1:
            changed = changed.reshape(n - 1, -1).any(axis=1)
        keep = np.concatenate([[True], changed])
    vals = d[keep] if dim is None else np.moveaxis(d[keep], 0, k)
    out = [_make(np.ascontiguousarray(vals))]
    if return_inverse:
        inv = (np.cumsum(keep) - 1).astype(np.int64)
        out.append(_make(inv.reshape(input._data.shape) if dim is None else inv))
    if return_counts:
        starts = np.flatnonzero(keep)
        out.append(_make(np.diff(np.append(starts, n)).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


@op(method=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Insertion points of ``input`` in the (row-wise) sorted ``sorted_sequence``."""
    scalar = not isinstance(input, Tensor)
    if (scalar and (type(input) not in (int, float, bool) and not isinstance(input, np.number))) \
            or type(right) is not bool or type(out_int32) is not bool:
        kw = {k: v for k, v in (("out_int32", out_int32), ("right", right)) if v is not False}
        raise D.bad_combo("searchsorted", (sorted_sequence, input), kw)
    seq = sorted_sequence._data
    vals = np.asarray(input) if scalar else input._data
    if side is not None:
        right = side == "right"
    sd = "right" if right else "left"
    srt = sorter._data if isinstance(sorter, Tensor) else sorter
    if seq.ndim <= 1:
        s = seq if srt is None else seq[srt]
        r = np.searchsorted(s, vals, side=sd)
    else:
        if vals.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                               "first N-1 dimensions of boundaries tensor and input value tensor "
                               f"must match, but we got boundaries tensor {list(seq.shape)} and "
                               f"input value tensor {list(vals.shape)}")
        s2 = seq.reshape(-1, seq.shape[-1])
        if srt is not None:
            s2 = np.take_along_axis(s2, srt.reshape(s2.shape), -1)
        v2 = vals.reshape(-1, vals.shape[-1])
        r = np.stack([np.searchsorted(a, b, side=sd) for a, b in zip(s2, v2)]).reshape(vals.shape)
    return _make(np.asarray(r).astype(np.int32 if out_int32 else np.int64))


@op()
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value given sorted 1-D ``boundaries``."""
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries._data.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# --- in-place forms -----------------------------------------------------------------------------
_inplace("scatter_", scatter)
_inplace("scatter_add_", scatter_add)
_inplace("index_add_", index_add)
_inplace("index_fill_", index_fill)
_inplace("index_copy_", index_copy)
_inplace("masked_scatter_", masked_scatter)


def _masked_fill_(self, mask, value):
    md = _mask(mask, "masked_fill_")
    from .inplace import _bad_bcast, _bcast_ok, apply
    if md.shape != self._data.shape and not (
            _bcast_ok(self._data.shape, md.shape)
            and np.broadcast_shapes(self._data.shape, md.shape) == self._data.shape):
        _bad_bcast(self, md.shape)
    d = self._data
    if not d.flags.writeable and md.ndim <= d.ndim:
        from .views import overlapping
        if overlapping(d):  # an expand: written through, with PyTorch's deprecation warning
            from .inplace import index_put_
            return index_put_(self, (np.broadcast_to(md, d.shape),), value)
    return apply(self, masked_fill, mask, value)


_masked_fill_.__doc__ = "In-place masked_fill; returns self."
op("masked_fill_", function=False)(_masked_fill_)
