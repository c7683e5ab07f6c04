"""Sorting and searching: sort, argsort, msort, topk, kthvalue, the order statistics
(median, nanmedian, mode, cummax, cummin), the NaN-aware reductions nansum and nanmean, and the
ops that produce indices or sets (nonzero, argwhere, unique, unique_consecutive,
searchsorted, bucketize).  Ops that return (values, indices) save the indices tensor
they return, as PyTorch's nodes do, so an in-place change of it fails backward."""
from __future__ import annotations

from functools import partial

import numpy as np

from . import composite
from ._dual import c_order
from . import _dual as X
from ._spec import batch_along, batch_along_dims, defop, front, fp_safe, quick, variant
from .._record import STATE, Saved, Tensor, edge_of, record
from .._tensor import _dim
from .. import _dtype as D
from .reduction import (dims_of, _nonempty, record_self_result, raw_dim, _reduced_grad, _select_grad,
                        _select_jvp, _selected, _selected_grad)
from .reduction import sum as _sum
from .binary import UNSET
from .gather_scatter import _scatter_add_any
from ..autograd import errors

_make = Tensor._make


def _not_impl(kernel, dt):
    return NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dt)}\'')


# --- forward ---------------------------------------------------------------------------------
def _median_flat(d, ignore_nan):
    """The lower median of every element of ``d`` (NaN when one is NaN, unless
    ``ignore_nan``: then NaN only when all are)."""
    if d.dtype == np.bool_ or d.dtype.kind == "c":
        raise _not_impl("median_cpu", d.dtype)
    flat = d.reshape(-1)
    if flat.size and d.dtype in D.FLOATING:
        nan = np.isnan(flat)
        if ignore_nan:
            flat = flat[~nan]
        elif nan.any():
            return np.array(np.nan, d.dtype)
    if flat.size == 0:
        return np.array(np.nan, d.dtype) if d.dtype in D.INEXACT else np.array(0, d.dtype)
    return np.asarray(np.sort(flat, kind="stable")[(flat.size - 1) // 2]).copy()


def _median_along(d, k, keepdim, ignore_nan):
    """The lower median along ``k`` and its index (the first NaN of a slice with one, unless
    ``ignore_nan``)."""
    if d.dtype == np.bool_ or d.dtype.kind == "c":
        raise _not_impl("median_out", d.dtype)
    if d.ndim == 0:
        return d.copy(), np.zeros((), np.int64)
    if d.shape[k] == 0:
        _nonempty("median", d, k)
    a = np.moveaxis(d, k, -1)
    n = a.shape[-1]
    order = np.argsort(a, axis=-1, kind="stable")  # NaN sort last
    if d.dtype in D.FLOATING:
        cnt = np.isnan(a).sum(-1)
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
    return c_order(vals), c_order(idx.astype(np.int64, copy=False))


def _declare_median(name, ignore_nan):
    """median or nanmedian: (values, indices) along ``dim`` (<Name>Backward1, declared), or
    the median of every element (<Name>Backward0, its variant)."""
    node = name.capitalize()
    what = f"The lower median{' ignoring NaN' if ignore_nan else ''}"

    def forward(self, dim, keepdim=False):
        return _median_along(self, dim, keepdim, ignore_nan)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"{what} along ``dim`` and its index; {node}Backward1."
    spec = defop(name, node=f"{node}Backward1",
                 saved=("self_sym_sizes", "dim", "keepdim", "indices"), dims=("dim",),
                 outputs=("values", "indices"), batch=batch_along("dim"))(forward)
    spec.backward(_select_grad)
    spec.jvp(_select_jvp)
    full = variant(spec, f"{node}Backward0", ("self", "result"))

    def median(input, dim=UNSET, keepdim=False):
        if type(dim) is int and isinstance(input, Tensor):
            return quick(spec, input, (_dim(dim, input._data.ndim), keepdim),
                         {"dim": dim, "keepdim": keepdim})
        if dim is not UNSET or keepdim is not False or not isinstance(input, Tensor):
            return spec.declared(input, *(() if dim is UNSET else (dim,)), keepdim)
        r = _median_flat(input._data, ignore_nan)
        return record_self_result(r, input, full)

    median.__doc__ = (f"{what} of all elements ({node}Backward0), or (values, indices) along "
                      f"``dim`` ({node}Backward1).")
    return front(spec, median)


median = _declare_median("median", False)
nanmedian = _declare_median("nanmedian", True)


@defop("mode", node="ModeBackward0", saved=("self_sym_sizes", "dim", "keepdim", "indices"),
       dims=("dim",), outputs=("values", "indices"), batch=batch_along("dim"))
def mode(self, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and
    the index of its last occurrence; ModeBackward0."""
    if self.ndim == 0:
        return self.copy(), np.zeros((), np.int64)
    if self.shape[dim] == 0:
        raise IndexError(f"mode(): Expected reduction dim {dim} to have non-zero size.")
    if self.dtype.kind == "c" and self.size:  # PyTorch's kernel refuses complex values
        raise _not_impl("mode_cpu", self.dtype)
    a = np.moveaxis(self, dim, -1)
    lead = a.shape[:-1]
    rows = a.reshape(-1, a.shape[-1])
    vals = np.empty(rows.shape[0], self.dtype)
    idx = np.empty(rows.shape[0], np.int64)
    for r, row in enumerate(rows):
        u, c = np.unique(row, return_counts=True)
        best = u[np.argmax(c)]  # np.unique sorts: the smallest of the most frequent
        vals[r] = best
        hit = np.flatnonzero((row == best) | (np.isnan(row) & np.isnan(best))
                             if self.dtype in D.FLOATING else row == best)
        idx[r] = hit[-1] if hit.size else 0
    vals, idx = vals.reshape(lead), idx.reshape(lead)
    if keepdim:
        vals, idx = np.expand_dims(vals, dim), np.expand_dims(idx, dim)
    return vals, idx


@mode.backward
def _(ctx, grad):
    return _selected_grad(grad, ctx.self_sym_sizes, ctx.dim, ctx.indices, ctx.keepdim),


@mode.jvp
def _(ctx, tangent):
    return _selected(tangent, ctx.dim, ctx.indices, ctx.keepdim)


def _cum_extreme(d, k, better, kernel):
    """The running extreme of ``d`` along ``k`` (``better(x, cur)``: x takes over) and the
    index where it was reached (``kernel``: PyTorch's, named when it refuses complex values)."""
    if d.ndim == 0 or d.size == 0:
        return d.copy(), np.zeros(d.shape, np.int64)
    if d.dtype.kind == "c":
        raise _not_impl(kernel, d.dtype)
    a = np.moveaxis(d, k, 0)
    vals = np.empty_like(a)
    idx = np.empty(a.shape, np.int64)
    cur, ci = a[0].copy(), np.zeros(a.shape[1:], np.int64)
    vals[0], idx[0] = cur, ci
    isf = d.dtype in D.FLOATING
    for i in range(1, a.shape[0]):
        x = a[i]
        # PyTorch: x >= cur (ties move the index on); a NaN takes over and stays
        take = better(x, cur)
        if isf:
            take = (take & ~np.isnan(cur)) | np.isnan(x)
        cur = np.where(take, x, cur)
        ci = np.where(take, i, ci)
        vals[i], idx[i] = cur, ci
    return c_order(np.moveaxis(vals, 0, k)), c_order(np.moveaxis(idx, 0, k))


@defop("cummax", node="CummaxBackward0", saved=("self", "dim", "indices"), dims=("dim",),
       outputs=("values", "indices"), batch=batch_along("dim"))
def cummax(self, dim):
    """Running maximum along ``dim`` and the index where it was reached; CummaxBackward0."""
    return _cum_extreme(self, dim, np.greater_equal, "cummax_cpu")


@defop("cummin", node="CumminBackward0", saved=("self", "dim", "indices"), dims=("dim",),
       outputs=("values", "indices"), batch=batch_along("dim"))
def cummin(self, dim):
    """Running minimum along ``dim`` and the index where it was reached; CumminBackward0."""
    return _cum_extreme(self, dim, np.less_equal, "cummin_cpu")


@cummax.backward
@cummin.backward
def _(ctx, grad):
    # each value's gradient added where it was reached (PyTorch's cummaxmin_backward)
    shape = tuple(ctx.self.shape)
    if not shape:
        return grad,
    return _scatter_add_any(grad, shape, ctx.dim % len(shape), X.data(ctx.indices)),


@cummax.jvp
@cummin.jvp
def _(ctx, tangent):
    return _selected(tangent, ctx.dim, ctx.indices, True)


@defop("nansum", node="NansumBackward0", saved=("self", "dim", "keepdim"), dim_lists=("dim",),
       batch=batch_along_dims("dim"),
       complex_error=(RuntimeError, "nansum on CPU does not support complex inputs"))
def nansum(self, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero (integers in int64); NansumBackward0."""
    d = self if dtype is None else self.astype(D.to_dtype(dtype).np)
    dims = dims_of(dim, d.ndim, "nansum")
    if d.dtype.kind in "biu":
        return c_order(d.sum(axis=dims, keepdims=keepdim, dtype=np.int64))
    return c_order(np.nansum(d, axis=dims, keepdims=keepdim).astype(d.dtype, copy=False))


@nansum.backward
def _(ctx, grad):
    x = ctx.self
    xd = X.data(x)
    g = _reduced_grad(grad, xd.shape, ctx.dim, ctx.keepdim)
    return X.where(X.const(np.isnan(xd), g), X.zeros_like(g), g),


@nansum.jvp
def _(ctx, t):
    nan = X.const(np.isnan(X.data(ctx.self)), t)
    return _sum(X.where(nan, X.zeros_like(t), t), ctx.dim, ctx.keepdim)


_nansum_spec = nansum


@partial(front, _nansum_spec)
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero (integers in int64); NansumBackward0."""
    if not isinstance(input, Tensor):
        return _nansum_spec.declared(input, dim, keepdim, dtype=dtype)
    return quick(_nansum_spec, input, (dim, keepdim), {"dim": dim, "keepdim": keepdim},
                 {"dtype": dtype})


@composite()
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over the non-NaN elements: nansum / count (DivBackward0 of NansumBackward0)."""
    d = input._data
    if d.dtype not in D.INEXACT:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype "
                           f"but got {D.scalar_type_name(d.dtype)}")
    dims = dims_of(dim, d.ndim, "nanmean")
    cnt = c_order((~np.isnan(d)).sum(axis=dims, keepdims=keepdim))
    s = nansum(input, dim, keepdim, dtype=dtype)
    return s / _make(cnt)


# --- sorting ---------------------------------------------------------------------------------
def _argsort(d, axis, descending=False):
    """Stable argsort (NaN largest); descending keeps equal elements in their original order."""
    if not descending:
        return np.argsort(d, axis=axis, kind="stable")
    n = d.shape[axis]
    r = np.argsort(np.flip(d, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(r, axis)


_SORT_COMPLEX = (RuntimeError, " Sort does not support complex dtypes on CPU")


@defop("sort", node="SortBackward0", saved=("self_sym_sizes", "dim", "indices"), dims=("dim",),
       outputs=("values", "indices"), batch=batch_along("dim"), complex_error=_SORT_COMPLEX)
def sort(self, dim=-1, descending=False):
    """Values sorted along ``dim`` and their original indices (stable); SortBackward0, and
    SortBackward1 when ``stable`` is given (PyTorch's ``sort.stable`` overload)."""
    d = self
    if d.ndim == 0:
        return d.copy(), np.zeros((), np.int64)
    idx = _argsort(d, dim, descending).astype(np.int64)
    vals = np.take_along_axis(d, idx, dim)
    if not d.flags.c_contiguous:  # PyTorch's results take the input's layout
        vals, idx = _like_layout(vals, d), _like_layout(idx, d)
    return vals, idx


@sort.backward
def _(ctx, grad):
    return _selected_grad(grad, ctx.self_sym_sizes, ctx.dim, ctx.indices, True),


@sort.jvp
def _(ctx, tangent):
    return _selected(tangent, ctx.dim, ctx.indices, True)


_sort_spec = sort
SortBackward1 = variant(sort, "SortBackward1", ("self_sym_sizes", "dim", "indices"))


@partial(front, _sort_spec)
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
    if stable is UNSET and type(dim) is int and isinstance(input, Tensor):
        return quick(_sort_spec, input, (_dim(dim, input._data.ndim), descending),
                     {"dim": dim, "descending": descending})
    if stable is UNSET or not isinstance(input, Tensor):
        return _sort_spec.declared(input, dim, descending)
    d = input._data
    if d.dtype.kind == "c":
        raise _SORT_COMPLEX[0](_SORT_COMPLEX[1])
    vals, idx = _sort_spec.forward(d, _dim(dim, d.ndim), descending)
    it = _make(idx)
    if STATE.enabled and input._requires_grad:
        return sort_rt(record(vals, SortBackward1((edge_of(input),), (d.shape, raw_dim(dim),
                                                                     Saved(it)))), it)
    return sort_rt(_make(vals), it)


sort_rt = _sort_spec.return_type


def _like_layout(a, like):
    """``a`` (of ``like``'s shape) stored in ``like``'s dimension order (empty_like's)."""
    out = np.empty_like(like, dtype=a.dtype)
    out[...] = a
    return out


@defop("argsort", node=None, differentiable=False, batch=batch_along("dim"),
       complex_error=_SORT_COMPLEX)
@fp_safe
def argsort(self, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim`` (stable); no derivative."""
    return _sort_spec.forward(self, _dim(dim, self.ndim), descending)[1]


argsort = argsort.fn


@composite()
def msort(input):
    """``input`` sorted along dim 0 (a method: vmap's batched tensors dispatch it)."""
    return input.sort(0).values


@defop("topk", node="TopkBackward0", saved=("self_sym_sizes", "dim", "indices"), dims=("dim",),
       outputs=("values", "indices"), batch=batch_along("dim"), complex_error=(
           RuntimeError, " topk does not support complex dtypes on CPU"))
def topk(self, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) values along ``dim`` and their indices; TopkBackward0."""
    n = self.shape[dim] if self.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    if self.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if self.ndim == 0:
        return self.copy(), np.zeros((), np.int64)
    idx = np.take(_argsort(self, dim, largest).astype(np.int64), np.arange(k), axis=dim)
    return np.take_along_axis(self, idx, dim), idx


@topk.backward
def _(ctx, grad):
    return _selected_grad(grad, ctx.self_sym_sizes, ctx.dim, ctx.indices, True),


@topk.jvp
def _(ctx, tangent):
    return _selected(tangent, ctx.dim, ctx.indices, True)


@defop("kthvalue", node="KthvalueBackward0", saved=("self_sym_sizes", "dim", "keepdim", "indices"),
       dims=("dim",), outputs=("values", "indices"), batch=batch_along("dim"),
       complex_kernel="kthvalue_cpu")
def kthvalue(self, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value along ``dim`` and its index; KthvalueBackward0."""
    n = self.shape[dim] if self.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if self.dtype == np.bool_:
        raise NotImplementedError("\"kthvalue_cpu\" not implemented for 'Bool'")
    if self.ndim == 0:
        return self.copy(), np.zeros((), np.int64)
    idx = np.take(_argsort(self, dim), [k - 1], axis=dim).astype(np.int64)
    vals = np.take_along_axis(self, idx, dim)
    if not keepdim:
        return vals.squeeze(dim), idx.squeeze(dim)
    return vals, idx


@kthvalue.backward
def _(ctx, grad):
    return _selected_grad(grad, ctx.self_sym_sizes, ctx.dim, ctx.indices, ctx.keepdim),


@kthvalue.jvp
def _(ctx, tangent):
    return _selected(tangent, ctx.dim, ctx.indices, ctx.keepdim)


# --- index-producing ops (no gradient) ---------------------------------------------------------
def _each_sample(spec, arrays, params):
    """Each sample's results, stacked (torch.vmap's per-sample fallback for argwhere; the
    samples' results must have one shape)."""
    each = [spec.forward(*(a[i] for a in arrays), **params) for i in range(len(arrays[0]))]
    if spec.outputs:
        return tuple(np.stack(o) for o in zip(*each))
    return np.stack(each)


@defop("nonzero", node=None, differentiable=False, batch=_each_sample)
@fp_safe
def nonzero(self):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor; no derivative."""
    if self.ndim == 0:  # one row of no columns when the value is non-zero
        return np.zeros((int(self != 0), 0), np.int64)
    return np.argwhere(self).astype(np.int64).reshape(-1, self.ndim)


_nonzero_spec = nonzero


@partial(front, _nonzero_spec)
def nonzero(input, *, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or (``as_tuple``) one
    tensor per dim, PyTorch's unbind of it."""
    if not as_tuple:
        if type(input) is Tensor and not input._requires_grad:
            return quick(_nonzero_spec, input, (), {})
        return _nonzero_spec.declared(input)
    if isinstance(input, Tensor) and input.ndim == 0:
        return (_make(np.flatnonzero(input._data.reshape(1)).astype(np.int64)),)
    return _nonzero_spec.declared(input).unbind(1)


@defop("argwhere", node=None, differentiable=False, batch=_each_sample)
@fp_safe
def argwhere(self):
    """Indices of the non-zero elements as an (n, ndim) int64 tensor; no derivative."""
    return _nonzero_spec.forward(self)


argwhere = argwhere.fn


def _unique_dim(x, dim):
    """``dim`` of a unique along a dim, normalised, with PyTorch's errors."""
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    k = _dim(dim, x.ndim)
    if any(s == 0 for i, s in enumerate(x.shape) if i != k):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                           "unique cannot be applied")
    return k


def _no_derivative(spec, what, variant_what=None):
    """PyTorch declares no derivative for ``what`` (``variant_what``: the op of the variant's
    node): backward and forward mode raise its errors."""
    def which(ctx):
        return what if type(ctx._node) is spec.node_cls else variant_what

    def bw(ctx, grad):
        raise errors.no_derivative(which(ctx))

    spec.backward(bw)
    spec.jvp(lambda ctx, tangent: errors.without_rule(which(ctx))(None, tangent))


_UNIQUE_OUTPUTS = ("output", "inverse_indices", "counts")


@defop("unique", node="Unique2Backward0", outputs=_UNIQUE_OUTPUTS, batch=_each_sample)
@fp_safe
def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), the inverse indices (of the input's shape) and the
    counts, or the distinct slices along ``dim``; Unique2Backward0 (UniqueDimBackward0 along a
    dim), which has no derivative (as in PyTorch)."""
    k = None if dim is None else _unique_dim(self, dim)
    r = np.unique(self.reshape(-1) if k is None else self, return_inverse=bool(return_inverse),
                  return_counts=bool(return_counts), axis=k)
    r = list(r) if return_inverse or return_counts else [r]
    vals = r.pop(0)
    inv = counts = np.empty(0, np.int64)  # (PyTorch's, where not asked for)
    if return_inverse:
        inv = r.pop(0).reshape(self.shape if k is None else self.shape[k]).astype(np.int64)
    if return_counts:
        counts = r.pop(0).astype(np.int64)
    return vals, inv, counts


_no_derivative(unique, "_unique2", "unique_dim")
Unique2Backward0 = unique.node_cls
UniqueDimBackward0 = variant(unique, "UniqueDimBackward0", ())
_unique_spec = unique


def _picked(r, return_inverse, return_counts):
    """The outputs PyTorch's Python function returns of the op's three."""
    out = [r[0]] + ([r[1]] if return_inverse else []) + ([r[2]] if return_counts else [])
    out = [_make(o) if type(o) is np.ndarray else o for o in out]  # (arrays: nothing recorded)
    return out[0] if len(out) == 1 else tuple(out)


@partial(front, _unique_spec)
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct values (sorted), optionally with inverse indices and counts: PyTorch's
    _unique2 (Unique2Backward0), or unique_dim along ``dim`` (UniqueDimBackward0)."""
    aten = "_unique2" if dim is None else "unique_dim"
    if not isinstance(input, Tensor):
        raise D.not_tensor(aten, "input", 1, input)
    D.arg_bools(aten, sorted=sorted, return_inverse=return_inverse, return_counts=return_counts)
    recording = STATE.enabled and input._requires_grad
    if dim is None and recording:
        r = _unique_spec.declared(input, sorted, return_inverse, return_counts)
    else:  # nothing to record, or the variant's node
        r = _unique_spec.forward(input._data, sorted, return_inverse, return_counts, dim)
        if recording:
            r = (record(r[0], UniqueDimBackward0((edge_of(input),), ())),) + r[1:]
    return _picked(r, return_inverse, return_counts)


@defop("unique_consecutive", node="UniqueConsecutiveBackward0", outputs=_UNIQUE_OUTPUTS,
       batch=_each_sample)
@fp_safe
def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (of the flattened tensor, or of the slices
    along ``dim``), with the inverse indices and the counts; UniqueConsecutiveBackward0, which
    has no derivative (as in PyTorch)."""
    if dim is None:
        d = self.reshape(-1)
        k = 0
    else:
        k = _unique_dim(self, dim)
        d = np.moveaxis(self, k, 0)
    n = d.shape[0] if d.ndim else 1
    if n == 0:
        keep = np.zeros(0, bool)
    else:
        changed = d[1:] != d[:-1]
        if changed.ndim > 1:
            changed = changed.reshape(n - 1, -1).any(axis=1)
        keep = np.concatenate([[True], changed])
    vals = d[keep] if dim is None else np.moveaxis(d[keep], 0, k)
    inv = counts = np.empty(0, np.int64)  # (PyTorch's, where not asked for)
    if return_inverse:
        inv = (np.cumsum(keep) - 1).astype(np.int64)
        inv = inv.reshape(self.shape) if dim is None else inv
    if return_counts:
        counts = np.diff(np.append(np.flatnonzero(keep), n)).astype(np.int64)
    return np.ascontiguousarray(vals), inv, counts


_no_derivative(unique_consecutive, "unique_consecutive")
UniqueConsecutiveBackward0 = unique_consecutive.node_cls
_unique_consecutive_spec = unique_consecutive


@partial(front, _unique_consecutive_spec)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive values (of the flattened tensor, or of the slices
    along ``dim``), optionally with the inverse indices and the counts."""
    D.arg_bools("unique_consecutive", return_inverse=return_inverse, return_counts=return_counts)
    if not isinstance(input, Tensor):
        return _unique_consecutive_spec.declared(input, return_inverse, return_counts, dim)
    if STATE.enabled and input._requires_grad:
        r = _unique_consecutive_spec.declared(input, return_inverse, return_counts, dim)
    else:  # nothing to record
        r = _unique_consecutive_spec.forward(input._data, return_inverse, return_counts, dim)
    return _picked(r, return_inverse, return_counts)


def _searchsorted_batched(spec, arrays, params):
    """searchsorted of each sample along a leading batch axis: the row-wise search, with each
    sample's values flattened into its row."""
    seq, vals = arrays
    flat = vals.reshape(vals.shape[0], -1) if seq.ndim == 2 else vals
    return _searchsorted_spec.forward(seq, flat, **params).reshape(vals.shape)


@defop("searchsorted", node=None, inputs=("sorted_sequence", "self"), differentiable=False,
       method=False, batch=_searchsorted_batched)
def searchsorted(sorted_sequence, self, *, out_int32=False, right=False, side=None,
                 sorter=None):
    """Insertion points of ``input`` in the (row-wise) sorted ``sorted_sequence``."""
    seq, vals, srt = sorted_sequence, self, sorter
    rt = np.result_type(seq.dtype, vals.dtype)
    if rt.kind in "bc":  # PyTorch's kernel has no bool or complex instance
        raise _not_impl("searchsorted_out_cpu", rt)
    sd = "right" if (right if side is None else side == "right") else "left"
    if seq.ndim <= 1:
        r = np.searchsorted(seq if srt is None else seq[srt], vals, side=sd)
    else:
        if vals.shape[:-1] != seq.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or "
                               "the first N-1 dimensions of boundaries tensor and input value "
                               f"tensor must match, but we got boundaries tensor "
                               f"{list(seq.shape)} and input value tensor {list(vals.shape)}")
        s2 = seq.reshape(-1, seq.shape[-1])
        if srt is not None:
            s2 = np.take_along_axis(s2, srt.reshape(s2.shape), -1)
        v2 = vals.reshape(-1, vals.shape[-1])
        r = np.stack([np.searchsorted(a, b, side=sd) for a, b in zip(s2, v2)]).reshape(vals.shape)
    return np.asarray(r).astype(np.int32 if out_int32 else np.int64)


_searchsorted_spec = searchsorted


@partial(front, _searchsorted_spec)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Insertion points of ``input`` (a tensor or a number) in the (row-wise) sorted
    ``sorted_sequence``."""
    scalar = not isinstance(input, Tensor)
    if (scalar and (type(input) not in (int, float, bool) and not isinstance(input, np.number))) \
            or type(right) is not bool or type(out_int32) is not bool:
        kw = {k: v for k, v in (("out_int32", out_int32), ("right", right)) if v is not False}
        raise D.bad_combo("searchsorted", (sorted_sequence, input), kw)
    srt = sorter._data if isinstance(sorter, Tensor) else sorter
    return _make(_searchsorted_spec.forward(sorted_sequence._data, np.asarray(input) if scalar
                                            else input._data, out_int32=out_int32, right=right,
                                            side=side, sorter=srt))


def _one_dim(boundaries):
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")


@defop("bucketize", node=None, inputs=("self", "boundaries"), differentiable=False,
       method=False, batch=lambda spec, arrays, params: _searchsorted_batched(
           spec, arrays[::-1], params))  # PyTorch has no Tensor.bucketize
def bucketize(self, boundaries, *, out_int32=False, right=False):
    """The bucket of each value (a tensor or a number) given sorted 1-D ``boundaries``."""
    _one_dim(boundaries)
    return _searchsorted_spec.forward(boundaries, self, out_int32=out_int32, right=right)


@partial(front, bucketize)
def bucketize(input, boundaries, *, out_int32=False, right=False):
    _one_dim(boundaries._data)
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)
