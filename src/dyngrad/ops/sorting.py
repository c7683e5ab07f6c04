"""Order statistics and NaN-aware reductions: median, nanmedian, mode, cummax, cummin,
nansum, nanmean.  Ops that return (values, indices) save the indices tensor
they return, as PyTorch's nodes do, so an in-place change of it fails backward."""
from __future__ import annotations

import numpy as np

from . import op
from ._formula import FormulaNode
from ._dual import c_order
from .._record import STATE, Saved, Tensor, edge_of, record, notify
from .._tensor import _dim
from .. import _dtype as D
from .reduction import return_type, dims_of, _nonempty, raw_dim, raw_dims

_make = Tensor._make

RT_MEDIAN = return_type("median", ("values", "indices"))
RT_NANMEDIAN = return_type("nanmedian", ("values", "indices"))
RT_MODE = return_type("mode", ("values", "indices"))
RT_CUMMAX = return_type("cummax", ("values", "indices"))
RT_CUMMIN = return_type("cummin", ("values", "indices"))


def _pkg():
    import importlib
    return importlib.import_module(__name__.split(".")[0])


def _not_impl(kernel, dt):
    return NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dt)}\'')


# --- backward nodes --------------------------------------------------------------------------
class _EvenlyDistribute(FormulaNode):
    """A full reduction that picks one value: every element equal to it (NaN: every NaN)
    shares the gradient evenly (PyTorch's evenly_distribute_backward)."""
    __slots__ = ()

    def formula(self, g, x, res):
        t = _pkg()
        xd, rd = x._data, res._data
        mask = np.asarray(np.isnan(xd) if np.isnan(rd) else (xd == rd))
        cnt = max(int(mask.sum()), 1)
        share = (g / cnt).expand(*xd.shape)
        return t.where(t.from_numpy(mask), share, t.zeros_like(share)),


class MedianBackward0(_EvenlyDistribute):
    __slots__ = ()


class NanmedianBackward0(_EvenlyDistribute):
    __slots__ = ()


class _ValueSelecting(FormulaNode):
    """A reduction along ``dim`` that picks one element per slice: its gradient goes to the
    returned index (PyTorch's value_selecting_reduction_backward)."""
    __slots__ = ()

    def formula(self, g, shape, dim, keepdim, idx):
        t = _pkg()
        if not shape:
            return g.reshape(()),
        dim = dim % len(shape)  # saved as the caller gave it
        if not keepdim:
            g = g.unsqueeze(dim)
            idx = idx.unsqueeze(dim)
        return t.zeros(shape, dtype=g.dtype).scatter(dim, idx, g),


class MedianBackward1(_ValueSelecting):
    __slots__ = ()


class NanmedianBackward1(_ValueSelecting):
    __slots__ = ()


class ModeBackward0(_ValueSelecting):
    __slots__ = ()


class _CumExtreme(FormulaNode):
    """cummax/cummin: each output's gradient is added at the index it came from."""
    __slots__ = ()

    def formula(self, g, x, dim, idx):
        t = _pkg()
        shape = tuple(x.shape)
        if not shape:
            return g,
        return t.zeros(shape, dtype=g.dtype).scatter_add(dim, idx, g),


class CummaxBackward0(_CumExtreme):
    __slots__ = ()


class CumminBackward0(_CumExtreme):
    __slots__ = ()


class NansumBackward0(FormulaNode):
    __slots__ = ()

    def formula(self, g, x, dims, keepdim, _dim):
        t = _pkg()
        xd = x._data
        if not keepdim and dims:
            for d in dims:
                g = g.unsqueeze(d)
        g = g.expand(*xd.shape)
        r = t.where(t.from_numpy(np.asarray(np.isnan(xd))), t.zeros((), dtype=g.dtype), g)
        return (r if r.dtype == x.dtype else r.to(x.dtype)),


# --- forward ---------------------------------------------------------------------------------
def _pair(input, vals, idx, node, rt):
    it = _make(c_order(idx.astype(np.int64, copy=False)))
    if STATE.enabled and input._requires_grad:
        v = record(c_order(vals), None)
        v._grad_fn = node(it)
        return rt(notify(v), it)
    return rt(_make(c_order(vals)), it)


def _median_all(input, name, ignore_nan, cls):
    d = input._data
    if d.dtype == np.bool_:
        raise _not_impl("median_cpu", d.dtype)
    flat = d.reshape(-1)
    if flat.size == 0:
        r = np.array(np.nan, d.dtype) if d.dtype.kind in "fc" else np.array(0, d.dtype)
    else:
        if d.dtype.kind == "f":
            nan = np.isnan(flat)
            if ignore_nan:
                flat = flat[~nan]
            elif nan.any():
                flat = None
        if flat is None:
            r = np.array(np.nan, d.dtype)
        elif flat.size == 0:
            r = np.array(np.nan, d.dtype)
        else:
            r = np.asarray(np.sort(flat, kind="stable")[(flat.size - 1) // 2])
    if STATE.enabled and input._requires_grad:
        res = record(r.copy(), None)
        res._grad_fn = cls((edge_of(input),), (Saved(input), Saved(res, True)))
        return notify(res)
    return _make(r.copy())


def _median_dim(input, dim, keepdim, name, ignore_nan, cls, rt):
    d = input._data
    k = _dim(dim, d.ndim)
    if d.dtype == np.bool_:
        raise _not_impl("median_cpu", d.dtype)
    if d.ndim == 0:
        return _pair(input, d.copy(), np.zeros((), np.int64),
                     lambda it: cls((edge_of(input),), ((), raw_dim(dim), keepdim, Saved(it))),
                     rt)
    if d.shape[k] == 0:
        _nonempty("median", d, dim)
    a = np.moveaxis(d, k, -1)
    n = a.shape[-1]
    order = np.argsort(a, axis=-1, kind="stable")  # NaN sort last
    if d.dtype.kind == "f":
        nan = np.isnan(a)
        cnt = nan.sum(-1)
        if ignore_nan:
            pos = np.maximum((n - cnt - 1) // 2, 0)  # all NaN: the first (a NaN)
        else:
            pos = np.where(cnt > 0, n - cnt, (n - 1) // 2)  # the first NaN, else the median
        idx = np.take_along_axis(order, pos[..., None], -1)
    else:
        idx = order[..., (n - 1) // 2:(n - 1) // 2 + 1]
    vals = np.take_along_axis(a, idx, -1)
    vals, idx = np.moveaxis(vals, -1, k), np.moveaxis(idx, -1, k)
    if not keepdim:
        vals, idx = vals.squeeze(k), idx.squeeze(k)
    return _pair(input, vals, idx,
                 lambda it: cls((edge_of(input),), (d.shape, raw_dim(dim), keepdim, Saved(it))),
                 rt)


@op()
def median(input, dim=None, keepdim=False):
    """The lower median of all elements, or (values, indices) along ``dim``; NaN propagates."""
    if dim is None:
        return _median_all(input, "median", False, MedianBackward0)
    return _median_dim(input, dim, keepdim, "median", False, MedianBackward1, RT_MEDIAN)


@op()
def nanmedian(input, dim=None, keepdim=False):
    """``median`` ignoring NaN (NaN only where every element is NaN)."""
    if dim is None:
        return _median_all(input, "nanmedian", True, NanmedianBackward0)
    return _median_dim(input, dim, keepdim, "nanmedian", True, NanmedianBackward1, RT_NANMEDIAN)


@op()
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and
    the index of its last occurrence; ModeBackward0."""
    d = input._data
    k = _dim(dim, d.ndim)
    if d.ndim == 0:
        return _pair(input, d.copy(), np.zeros((), np.int64),
                     lambda it: ModeBackward0((edge_of(input),),
                                              ((), raw_dim(dim), keepdim, Saved(it))),
                     RT_MODE)
    if d.shape[k] == 0:
        raise IndexError(f"mode(): Expected reduction dim {k} to have non-zero size.")
    a = np.moveaxis(d, k, -1)
    lead = a.shape[:-1]
    rows = a.reshape(-1, a.shape[-1])
    vals = np.empty(rows.shape[0], d.dtype)
    idx = np.empty(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        u, c = np.unique(row, return_counts=True)
        best = u[np.argmax(c)]  # np.unique sorts: the smallest of the most frequent
        vals[r] = best
        hit = np.flatnonzero((row == best) | (np.isnan(row) & np.isnan(best))
                             if d.dtype.kind == "f" else row == best)
        idx[r] = hit[-1] if hit.size else 0
    vals, idx = vals.reshape(lead), idx.reshape(lead)
    if keepdim:
        vals, idx = np.expand_dims(vals, k), np.expand_dims(idx, k)
    return _pair(input, vals, idx,
                 lambda it: ModeBackward0((edge_of(input),),
                                          (d.shape, raw_dim(dim), keepdim, Saved(it))),
                 RT_MODE)


def _cum_extreme(input, dim, name, better, cls, rt):
    d = input._data
    k = _dim(dim, d.ndim)
    if d.ndim == 0 or d.size == 0:
        return _pair(input, d.copy(), np.zeros(d.shape, np.int64),
                     lambda it: cls((edge_of(input),), (Saved(input), raw_dim(dim), Saved(it))),
                     rt)
    a = np.moveaxis(d, k, 0)
    vals = np.empty_like(a)
    idx = np.empty(a.shape, np.int64)
    cur, ci = a[0].copy(), np.zeros(a.shape[1:], np.int64)
    vals[0], idx[0] = cur, ci
    isf = d.dtype.kind == "f"
    for i in range(1, a.shape[0]):
        x = a[i]
        # PyTorch: x >= cur (ties move the index on); a NaN takes over and stays
        take = better(x, cur)
        if isf:
            take = (take & ~np.isnan(cur)) | np.isnan(x)
        cur = np.where(take, x, cur)
        ci = np.where(take, i, ci)
        vals[i], idx[i] = cur, ci
    vals, idx = np.moveaxis(vals, 0, k), np.moveaxis(idx, 0, k)
    return _pair(input, vals, idx,
                 lambda it: cls((edge_of(input),), (Saved(input), raw_dim(dim), Saved(it))),
                     rt)


@op()
def cummax(input, dim):
    """Running maximum along ``dim`` and the index where it was reached; CummaxBackward0."""
    return _cum_extreme(input, dim, "cummax", np.greater_equal, CummaxBackward0, RT_CUMMAX)


@op()
def cummin(input, dim):
    """Running minimum along ``dim`` and the index where it was reached; CumminBackward0."""
    return _cum_extreme(input, dim, "cummin", np.less_equal, CumminBackward0, RT_CUMMIN)


@op()
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero; NansumBackward0."""
    d = input._data
    if dtype is not None:
        d = d.astype(D.to_dtype(dtype).np)
    dims = dims_of(dim, d.ndim, "nansum")
    if d.dtype == np.bool_ or d.dtype.kind in "iu":
        r = c_order(d.sum(axis=dims, keepdims=keepdim, dtype=np.int64))
        return _make(r)
    r = c_order(np.nansum(d, axis=dims, keepdims=keepdim).astype(d.dtype, copy=False))
    if STATE.enabled and input._requires_grad:
        full = dim is None or (type(dim) in (tuple, list) and not dim)
        return record(r, NansumBackward0((edge_of(input),),
                                         (Saved(input), () if full and not keepdim else dims,
                                          keepdim, raw_dims(dim))))
    return _make(r)


@op()
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over the non-NaN elements: nansum / count (DivBackward0 of NansumBackward0)."""
    d = input._data
    if d.dtype.kind not in "fc":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {D.scalar_type_name(d.dtype)}")
    dims = dims_of(dim, d.ndim, "nanmean")
    cnt = c_order((~np.isnan(d)).sum(axis=dims, keepdims=keepdim))
    s = nansum(input, dim, keepdim, dtype=dtype)
    return s / _make(cnt)
