"""Reductions (sum, mean) with ``dim`` as int or tuple and ``keepdim``."""
from __future__ import annotations

import builtins as _bi
from functools import partial

import numpy as np

from .. import _dtype as D
from . import composite, inplace_of, op
from .._fperr import quiet, quiet_off, quiet_on
from .binary import UNSET
from .._tensor import _dim
from .._record import STATE, Node, Tensor, edge_of, edges_first, raw_dim, raw_dims, record  # noqa: F401
from . import _dual as X
from ._spec import (_int_dims, batch_aligned, batch_along, batch_along_dims, defop,  # noqa: F401
                    dims_of, every_output, front, fp_safe, quick, variant)

_make = Tensor._make
_add_reduce = np.add.reduce
_empty = np.empty


def _sum_np(d, axis, keepdims, rt):
    """``d.sum`` into bfloat16 ``rt``: accumulated in float32 and rounded once, as PyTorch's."""
    return d.astype(D.BF16, copy=False).sum(axis=axis, keepdims=keepdims,
                                            dtype=np.float32).astype(D.BF16)


def _sum_dtype(d, dtype):
    if dtype is not None:
        return D.to_dtype(dtype).np
    return np.int64 if d.dtype.kind in "biu" else d.dtype


def _reduced_grad(grad, shape, dim, keepdim, n=1):
    """The gradient of a sum over ``dim`` (as the node saves it: None or a tuple of ints, () and
    None meaning every dim) of an input of ``shape``, divided by ``n`` (a mean's count):
    ``grad`` with the reduced dims back, expanded."""
    nd = len(shape)
    if not keepdim and dim and nd:
        grad = X.unsqueeze_dims(grad, dim if len(dim) == 1 and dim[0] >= 0 else
                                tuple(d % nd for d in dim), nd)
    return X.expand_to(grad if n == 1 else grad / n, shape)


@defop("sum", node="SumBackward1", saved=("self_sym_sizes", "dim", "keepdim"),
       dim_lists=("dim",), linear=True, batch=batch_along_dims("dim"))
def sum(self, dim=None, keepdim=False, *, dtype=None):
    """Sum of all elements, or over ``dim`` (integers in int64); SumBackward0 without ``dim``,
    SumBackward1 with it."""
    rt = _sum_dtype(self, dtype)
    if dim is None and not keepdim:
        return np.asarray(self.sum(dtype=rt) if rt is not D.BF16 else
                          _sum_np(self, None, False, rt))
    dims = dims_of(dim, self.ndim, "sum")
    return X.c_order(self.sum(axis=dims, keepdims=keepdim, dtype=rt) if rt is not D.BF16 else
                     _sum_np(self, dims, keepdim, rt))


@sum.backward
def _(ctx, grad):
    return _reduced_grad(grad, ctx.self_sym_sizes, getattr(ctx, "dim", None),
                         getattr(ctx, "keepdim", False)),


SumBackward1 = sum.node_cls
SumBackward0 = variant(sum, "SumBackward0", ("self_sym_sizes",))
SumBackward0._bw = lambda self, g, graph: (X.expand_to(g, self._saved[0]),)
SumBackward1._bw = lambda self, g, graph: (_reduced_grad(g, *self._saved),)


_sum_spec = sum


def _keepdim_without_dim(name, input, keepdim, dtype):
    """PyTorch's parser error for ``keepdim`` given without ``dim``: no overload takes it."""
    if dtype is not None:
        return TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    return D.bad_combo(name, (input,), {"keepdim": keepdim})


@partial(front, _sum_spec)
def sum(input, dim=UNSET, keepdim=UNSET, *, dtype=None):
    """Sum of all elements (SumBackward0), or over ``dim`` (SumBackward1, even for None)."""
    if keepdim is UNSET:
        keepdim = False
    elif dim is UNSET:
        raise _keepdim_without_dim("sum", input, keepdim, dtype)
    if not isinstance(input, Tensor):
        return _sum_spec.declared(input, None if dim is UNSET else dim, keepdim, dtype=dtype)
    d = input._data
    full = dim is UNSET and keepdim is False
    tok = quiet_on()
    try:
        if full and dtype is None and d.dtype.kind in "fc":
            # the common full sum of a float tensor: one ufunc call into a 0-d buffer
            r = _add_reduce(d, None, d.dtype, _empty((), d.dtype))
        else:
            r = _sum_spec.forward(d, None if dim is UNSET else dim, keepdim, dtype=dtype)
    except RuntimeError:
        edges_first(input)  # a stale view's error comes before the op's own
        raise
    finally:
        quiet_off(tok)
    if STATE.enabled and input._requires_grad:
        return record(r, SumBackward0((edge_of(input),), (d.shape,)) if full else SumBackward1(
            (edge_of(input),), (d.shape, None if dim is UNSET else raw_dims(dim), keepdim)))
    return _make(r)


def _empty_mean(d, dims, keepdim):
    """The mean of an empty tensor: 0 / 0 = nan where a slice is empty, without NumPy's
    "Mean of empty slice" warning."""
    n = _count(d.shape, dims if dims is not None else range(d.ndim))
    s = d.sum(axis=dims, keepdims=keepdim, dtype=d.dtype)
    return s / n if n else np.full(np.shape(s), np.nan, d.dtype)


@defop("mean", node="MeanBackward1", saved=("self_sym_sizes", "dim", "keepdim"),
       dim_lists=("dim",), batch=batch_along_dims("dim"))
def mean(self, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean of all elements, or over ``dim``; MeanBackward0 without ``dim``,
    MeanBackward1 with it."""
    d = self if dtype is None else self.astype(D.to_dtype(dtype).np)
    if d.dtype not in D.INEXACT:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: "
                           f"{D.TYPE_NAMES[D.FROM_NP[d.dtype]].replace('Tensor', '')}")
    if d.dtype is D.BF16:  # accumulated in float32 and rounded once, as PyTorch
        return _mean_spec.forward(d.astype(np.float32), dim, keepdim).astype(D.BF16)
    if dim is None and not keepdim:
        return np.asarray(d.mean(dtype=d.dtype) if d.size else _empty_mean(d, None, False))
    dims = dims_of(dim, d.ndim, "mean")
    return X.c_order(d.mean(axis=dims, keepdims=keepdim, dtype=d.dtype) if d.size else
                     _empty_mean(d, dims, keepdim))


def _mean_count(shape, dim):
    """How many elements each mean over ``dim`` (None: every dim) of ``shape`` averages."""
    return _count(shape, range(len(shape)) if dim is None else dims_of(dim, len(shape)))


@mean.backward
def _(ctx, grad):
    shape, dim = ctx.self_sym_sizes, getattr(ctx, "dim", None)
    return _reduced_grad(grad, shape, dim, getattr(ctx, "keepdim", False),
                         _mean_count(shape, dim)),


@mean.jvp
def _(ctx, t):
    try:
        dim, keepdim = ctx.dim, ctx.keepdim
    except AttributeError:  # MeanBackward0: every element
        return _mean_spec.fn(t)
    return _mean_spec.fn(t, dim, keepdim)


MeanBackward1 = mean.node_cls
MeanBackward0 = variant(mean, "MeanBackward0", ("self_sym_sizes", "self_sym_numel"))
MeanBackward0._bw = lambda self, g, graph: (X.expand_to(g / self._saved[1], self._saved[0]),)
MeanBackward1._bw = lambda self, g, graph: (_reduced_grad(
    g, *self._saved, _mean_count(self._saved[0], self._saved[1])),)


_mean_spec = mean


@partial(front, _mean_spec)
def mean(input, dim=UNSET, keepdim=UNSET, *, dtype=None):
    """Arithmetic mean of all elements (MeanBackward0), or over ``dim`` (MeanBackward1, even
    for None)."""
    if keepdim is UNSET:
        keepdim = False
    elif dim is UNSET:
        raise _keepdim_without_dim("mean", input, keepdim, dtype)
    if not isinstance(input, Tensor):
        return _mean_spec.declared(input, None if dim is UNSET else dim, keepdim, dtype=dtype)
    d = input._data
    full = dim is UNSET and keepdim is False
    tok = quiet_on()
    try:
        r = _mean_spec.forward(d, None if dim is UNSET else dim, keepdim, dtype=dtype)
    except RuntimeError:
        edges_first(input)  # a stale view's error comes before the op's own
        raise
    finally:
        quiet_off(tok)
    if STATE.enabled and input._requires_grad:
        return record(r, MeanBackward0((edge_of(input),), (d.shape, d.size)) if full else
                      MeanBackward1((edge_of(input),), (d.shape, None if dim is UNSET else
                                                        raw_dims(dim), keepdim)))
    return _make(r)


# --- helpers ---------------------------------------------------------------------------------
import math as _math  # noqa: E402
from collections import namedtuple as _namedtuple  # noqa: E402

from .._record import NO_EDGE, Saved, notify, sum_to  # noqa: E402,F401


def return_type(name, fields):
    """A named tuple printed like ``torch.return_types.<name>(values=..., indices=...)``."""
    base = _namedtuple(name, fields)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"torch.return_types.{name}(\n{body})"

    return type(name, (base,), {"__repr__": __repr__, "__slots__": (),
                                "__module__": "torch.return_types"})




def _keep(g, dims, keepdim, ndim):
    """Re-insert reduced dims into a gradient (no-op with keepdim or a full 0-d reduction)."""
    if keepdim or not dims:
        return g
    return X.unsqueeze_dims(g, dims, ndim)


def _count(shape, dims):
    n = 1
    for k in dims:
        n *= shape[k]
    return n



def record_self_result(r, input, cls):
    """The full reduction ``r`` of ``input``, recorded (when it requires grad) with node
    ``cls`` keeping the input and the result (prod, max/min, median of all elements)."""
    if STATE.enabled and input._requires_grad:
        res = record(r, None)
        res._grad_fn = cls((edge_of(input),), (Saved(input), Saved(res, True)))
        return notify(res)
    return _make(r)

def _nonempty(name, d, dim):
    """PyTorch's errors for a reduction without identity over an empty dim (``dim`` as the
    user gave it: it appears in the message)."""
    if dim is None or (type(dim) in (tuple, list) and not dim):
        if d.size == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
        return
    n = d.ndim or 1
    for k in (dim if type(dim) in (tuple, list) else (dim,)):
        if d.ndim and -n <= k < n and d.shape[k] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {k} to have non-zero size.")


# --- prod ------------------------------------------------------------------------------------
def _others_prod(x, axis):
    """Product of every other element along ``axis`` (exact with zeros: prefix * suffix)."""
    x = np.moveaxis(x, axis, -1)
    ones = np.ones(x.shape[:-1] + (1,), x.dtype)
    pre = np.cumprod(np.concatenate([ones, x[..., :-1]], -1), -1)
    suf = np.cumprod(np.concatenate([ones, x[..., :0:-1]], -1), -1)[..., ::-1]
    return np.moveaxis(pre * suf, -1, axis)


@defop("prod", node="ProdBackward1", saved=("self", "dim", "keepdim", "result"), dims=("dim",),
       batch=batch_along("dim"))
def prod(self, dim, keepdim=False, *, dtype=None):
    """Product along ``dim`` (integers in int64); ProdBackward1, and ProdBackward0 for the
    product of all elements (no ``dim``)."""
    rt = _sum_dtype(self, dtype)
    return X.c_order(self.prod(axis=dim, keepdims=keepdim, dtype=rt) if self.ndim else
                     self.astype(rt))


def _prod_grad(ctx, grad):
    """PyTorch's prod_backward: grad * result / input, or the product of the other elements
    where the input has zeros (exact: prefix * suffix products)."""
    x, o = ctx.self, ctx.result  # both unpacked (version-checked) on every path, as PyTorch
    xd = X.data(x)
    if xd.ndim == 0:
        return grad
    dim = getattr(ctx, "dim", None)
    if dim is None:  # every element
        g = X.expand_to(grad, xd.shape)
        if not (xd == 0).any():
            return g * (o / x)
        return g * X.const(_others_prod(xd.reshape(-1), 0).reshape(xd.shape), g)
    dim, keepdim = dim % xd.ndim, ctx.keepdim
    g = X.expand_to(_keep(grad, (dim,), keepdim, xd.ndim), xd.shape)
    if (xd != 0).all():
        return g * (_keep(o, (dim,), keepdim, xd.ndim) / x)
    return g * X.const(_others_prod(xd, dim) if xd.size else xd, g)


@prod.backward
def _(ctx, grad):
    return _prod_grad(ctx, grad),


@prod.jvp
def _(ctx, t):
    w = _prod_grad(ctx, 1 + 0 * ctx.result)  # d result / d input
    dim = getattr(ctx, "dim", None)
    if dim is None or t.ndim == 0:
        return sum(w * t) if t.ndim else w * t
    return sum(w * t, dim, ctx.keepdim)


_prod_spec = prod
ProdBackward0 = variant(prod, "ProdBackward0", ("self", "result"))


@partial(front, _prod_spec)
def prod(input, dim=UNSET, keepdim=UNSET, *, dtype=None):
    """Product of all elements (ProdBackward0), or along ``dim`` (ProdBackward1)."""
    if keepdim is UNSET:
        keepdim = False
    elif dim is UNSET:
        raise _keepdim_without_dim("prod", input, keepdim, dtype)
    if type(dim) is int and isinstance(input, Tensor):
        d = input._data
        return quick(_prod_spec, input, (_dim(dim, d.ndim), keepdim),
                     {"dim": dim, "keepdim": keepdim}, {"dtype": dtype})
    if dim is not UNSET or keepdim is not False or not isinstance(input, Tensor):
        return _prod_spec.declared(input, *(() if dim is UNSET else (dim,)), keepdim,
                                   dtype=dtype)
    d = input._data
    tok = quiet_on()
    try:
        r = np.asarray(d.prod(dtype=_sum_dtype(d, dtype)))
    finally:
        quiet_off(tok)
    return record_self_result(r, input, ProdBackward0)


# --- max / min / amax / amin / argmax / argmin -----------------------------------------------------
def _share_extreme(xd, val, g, dims, keepdim):
    """The gradient ``g`` of an extreme value ``val`` of ``xd`` over ``dims``, split evenly
    among the elements equal to it: PyTorch's (g / mask.sum()) * mask, so a NaN extreme (equal
    to nothing) gives NaN to its whole slice."""
    v = val if keepdim else np.expand_dims(val, dims)
    m = xd == v
    cnt = m.sum(axis=dims, keepdims=True).astype(xd.dtype)
    g = _keep(g, dims, keepdim, xd.ndim)
    return X.expand_to(g / X.const(cnt, g), xd.shape) * X.const(m.astype(xd.dtype), g)


def _extreme_tangent(xd, v, t, dims, keepdim):
    """The tangent of an extreme value ``v`` of ``xd`` over ``dims``: the tangents of the
    elements tied with it, averaged."""
    m = xd == (v if keepdim else np.expand_dims(v, dims))
    w = m / m.sum(axis=dims, keepdims=True).astype(xd.dtype)
    return X.sum_dims(t * X.const(w.astype(xd.dtype), t), dims, keepdim)


def _evenly(x, result, grad):
    """PyTorch's evenly_distribute_backward: the elements of ``x`` equal to the selected
    ``result`` (every NaN when it is NaN) share ``grad`` evenly; the others get exact zeros
    (an index_put into zeros in PyTorch, so a NaN gradient reaches only the chosen ones)."""
    xd, rd = X.data(x), X.data(result)
    mask = np.isnan(xd) if np.isnan(rd) else xd == rd
    share = X.expand_to(grad / _bi.max(int(mask.sum()), 1), xd.shape)
    return X.where(X.const(mask, share), share, X.zeros_like(share))


def _selected_grad(grad, shape, dim, indices, keepdim):
    """The gradient of values picked at ``indices`` along ``dim`` (kept as a size-1 dim unless
    ``keepdim`` is False): each goes back to where it came from, zeros elsewhere."""
    from .gather_scatter import _scatter_place_any
    if not shape:
        return grad.reshape(())
    dim = dim % len(shape)  # saved as the caller gave it
    idx = X.data(indices)
    if not keepdim:
        idx = np.expand_dims(idx, dim)
    return _scatter_place_any(grad.reshape(idx.shape), shape, dim, idx)


def _selected(tangent, dim, indices, keepdim):
    """The elements of ``tangent`` at ``indices`` along ``dim`` (PyTorch's
    gather_with_keepdimed_indices): the forward-mode tangent of a selecting op."""
    if tangent.ndim == 0:
        return tangent.clone()
    dim = dim % tangent.ndim
    if keepdim:
        return tangent.gather(dim, indices)
    return tangent.gather(dim, indices.unsqueeze(dim)).squeeze(dim)


def _select_grad(ctx, grad):
    """The gradient of a reduction that selects: along a dim (its node keeps the indices), to
    the index; of every element (its node keeps self and result), shared by the ties."""
    indices = getattr(ctx, "indices", None)
    if indices is None:
        return _evenly(ctx.self, ctx.result, grad),
    return _selected_grad(grad, ctx.self_sym_sizes, ctx.dim, indices, ctx.keepdim),


def _select_jvp(ctx, t):
    """The forward-mode rule of a selecting reduction: the tangent at the index, or the mean
    of the tangents of the ties."""
    indices = getattr(ctx, "indices", None)
    if indices is None:
        w = _evenly(ctx.self, ctx.result, 1 + 0 * ctx.result)
        return sum(w * t) if t.ndim else w * t
    return _selected(t, ctx.dim, indices, ctx.keepdim)


def _max_along(name, np_arg):
    """The forward of max or min along ``dim``: the extreme and its index (the first NaN of
    a slice with one)."""
    def forward(self, dim, keepdim=False):
        d = self
        if d.ndim == 0:
            return d.copy(), np.zeros((), np.int64)
        if d.size == 0:
            _nonempty(name, d, dim)
        idx = np_arg(d, axis=dim)
        if d.dtype in D.FLOATING:
            nan = np.isnan(d)
            if nan.any():
                idx = np.where(nan.any(axis=dim), np.argmax(nan, axis=dim), idx)
        idx = np.expand_dims(idx, dim)
        v = np.take_along_axis(d, idx, axis=dim)
        if not keepdim:
            v, idx = v.squeeze(dim), idx.squeeze(dim)
        return v, idx.astype(np.int64, copy=False)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = (f"The {'largest' if name == 'max' else 'smallest'} element along ``dim``"
                       f" and its index; {name.capitalize()}Backward0.")
    return forward


def _nanmax(d):
    return d.max() if d.dtype not in D.FLOATING or not np.isnan(d).any() else np.array(np.nan, d.dtype)


def _nanmin(d):
    return d.min() if d.dtype not in D.FLOATING or not np.isnan(d).any() else np.array(np.nan, d.dtype)


def _declare_max(name, np_arg, np_red):
    """max or min: (values, indices) along ``dim`` (<Name>Backward0, declared), the extreme
    of every element (<Name>Backward1, its variant), or with a tensor ``maximum`` /
    ``minimum``."""
    node = name.capitalize()
    spec = defop(name, node=f"{node}Backward0",
                 saved=("self_sym_sizes", "dim", "keepdim", "indices"), dims=("dim",),
                 outputs=("values", "indices"), batch=batch_along("dim"),
                 complex_error=(RuntimeError, f"{name}(): does not support complex input"))(
                     _max_along(name, np_arg))
    spec.backward(_select_grad)
    spec.jvp(_select_jvp)
    full = variant(spec, f"{node}Backward1", ("self", "result"))

    def extreme(input, dim=UNSET, keepdim=False, *, other=None):
        if isinstance(dim, Tensor):
            other, dim = dim, UNSET
        if other is not None:
            from .comparison import maximum, minimum
            return (maximum if name == "max" else minimum)(input, other)
        if type(dim) is int and isinstance(input, Tensor):
            return quick(spec, input, (_dim(dim, input._data.ndim), keepdim),
                         {"dim": dim, "keepdim": keepdim})
        if dim is not UNSET or keepdim is not False or not isinstance(input, Tensor):
            return spec.declared(input, *(() if dim is UNSET else (dim,)), keepdim)
        d = input._data
        if d.dtype.kind == "c":
            raise NotImplementedError(f'"{name}_all" not implemented for '
                                      f"'{D.scalar_type_name(d.dtype)}'")
        if d.size == 0:
            edges_first(input)
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                               f"input.numel() == 0. Specify the reduction dim with the 'dim' "
                               f"argument.")
        r = np.asarray(np_red(d))
        return record_self_result(r, input, full)

    extreme.__doc__ = (f"The {'largest' if name == 'max' else 'smallest'} element "
                       f"({node}Backward1); with ``dim`` (values, indices) ({node}Backward0); "
                       f"with a tensor, ``{name}imum``.")
    return front(spec, extreme)


max = _declare_max("max", np.argmax, _nanmax)
min = _declare_max("min", np.argmin, _nanmin)


def _amaxmin(name, np_fn):
    """amax or amin, declared: the extreme over ``dim`` (every dim by default); elements tied
    with it share its gradient."""
    def forward(self, dim=(), keepdim=False):
        dims = dims_of(dim, self.ndim, name)
        if self.size == 0:
            _nonempty(name, self, dim)
        return X.c_order(np_fn(self, axis=dims, keepdims=keepdim))

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = (f"{'Maximum' if name == 'amax' else 'Minimum'} over ``dim`` (all dims by "
                       f"default); ties share the gradient ({name.capitalize()}Backward0).")
    spec = defop(name, node=f"{name.capitalize()}Backward0",
                 saved=("self", "dim", "keepdim", "result"), dim_lists=("dim",),
                 complex_kernel=f"{name[1:]}_values_cpu", batch=batch_along_dims("dim"))(forward)

    @spec.backward
    def _(ctx, grad):
        xd = X.data(ctx.self)
        dims = dims_of(ctx.dim, xd.ndim)
        return _share_extreme(xd, X.data(ctx.result), grad, dims, ctx.keepdim),

    @spec.jvp
    def _(ctx, t):
        xd = X.data(ctx.self)
        return _extreme_tangent(xd, X.data(ctx.result), t, dims_of(ctx.dim, xd.ndim),
                                ctx.keepdim)

    return spec.fn


amax = _amaxmin("amax", np.max)
amin = _amaxmin("amin", np.min)


@defop("aminmax", node="AminmaxBackward0", saved=("self", "result", "max", "dim", "keepdim"),
       outputs=("min", "max"), names={"result": "min"}, complex_kernel="aminmax_cpu",
       batch=lambda spec, arrays, params: _aminmax_batched(arrays[0], **params))
def aminmax(self, *, dim=None, keepdim=False):
    """(amin, amax) in one call; both outputs of one AminmaxBackward0 node."""
    dims = dims_of(() if dim is None else dim, self.ndim, "aminmax")
    if self.size == 0:
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        if self.shape[dims[0]] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {dims[0]} to have non-zero size.")
    return _aminmax_np(self, dims, keepdim)


def _aminmax_np(d, dims, keepdim):
    return (X.c_order(np.amin(d, axis=dims, keepdims=keepdim)),
            X.c_order(np.amax(d, axis=dims, keepdims=keepdim)))


def _aminmax_batched(d, dim=None, keepdim=False):
    """aminmax of each sample along a leading batch axis."""
    if dim is None:
        return _aminmax_np(d, tuple(range(1, d.ndim)), keepdim)
    return _aminmax_np(d, (_dim(dim, d.ndim - 1) + 1,) if d.ndim > 1 else (), keepdim)


def _extreme_parts(ctx):
    """The input's array, the reduced dims and keepdim of aminmax's node."""
    xd = X.data(ctx.self)
    return xd, dims_of(() if ctx.dim is None else ctx.dim, xd.ndim), ctx.keepdim


@aminmax.backward
def _(ctx, grads):
    xd, dims, keepdim = _extreme_parts(ctx)
    out = None
    for g, v in zip(grads, (ctx.result, ctx.max)):
        if g is not None:
            part = _share_extreme(xd, X.data(v), g, dims, keepdim)
            out = part if out is None else out + part
    return out,


@aminmax.jvp
def _(ctx, t):
    xd, dims, keepdim = _extreme_parts(ctx)
    return tuple(_extreme_tangent(xd, X.data(v), t, dims, keepdim)
                 for v in (ctx.result, ctx.max))


_aminmax_spec = every_output(aminmax)
RT_AMINMAX = _aminmax_spec.return_type


@partial(front, _aminmax_spec)
def aminmax(input, *, dim=None, keepdim=False):
    """(amin, amax) in one call; both outputs of one AminmaxBackward0 node."""
    if not isinstance(input, Tensor):
        return _aminmax_spec.declared(input, dim=dim, keepdim=keepdim)
    p = {"dim": dim, "keepdim": keepdim}
    return quick(_aminmax_spec, input, (), p, p)


def _argext(name, np_fn):
    """argmax or argmin, declared: the index of the extreme (the first NaN, as PyTorch's),
    over the flattened tensor when ``dim`` is None; no derivative."""
    def forward(self, dim=None, keepdim=False):
        d = self
        if d.dtype == np.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        if dim is None:
            if d.size == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 f"input.numel() == 0.")
            flat = d.reshape(-1)
            i = np_fn(flat)
            if flat.dtype in D.FLOATING and np.isnan(flat).any():
                i = np.argmax(np.isnan(flat))
            r = np.asarray(i, np.int64)
            return r.reshape((1,) * d.ndim) if keepdim else r
        (k,) = dims_of(dim, d.ndim, name) or (0,)
        if d.ndim == 0:
            return np.zeros((), np.int64)
        if d.size == 0:
            _nonempty(name, d, k)
        i = np_fn(d, axis=k)
        if d.dtype in D.FLOATING:
            nan = np.isnan(d)
            if nan.any():
                i = np.where(nan.any(axis=k), np.argmax(nan, axis=k), i)
        i = i.astype(np.int64)
        return np.expand_dims(i, k) if keepdim else i

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = (f"Index of the {'largest' if name == 'argmax' else 'smallest'} element "
                       f"(of the flattened tensor when ``dim`` is None); no derivative.")
    fp_safe(forward)
    return defop(name, node=None, differentiable=False, batch=_batch_flat_or_dim,
                 complex_error=(RuntimeError, f"{name}(): does not support complex input"))(
                     forward).fn


def _batch_flat_or_dim(spec, arrays, params):
    """Batching rule of a reduction along one optional ``dim`` that flattens without one."""
    a = arrays[0]
    p = dict(params)
    dim = p.get("dim")
    if dim is None:
        r = spec.forward(a.reshape(a.shape[0], -1), dim=1)
        return r.reshape(r.shape[:1] + (1,) * (a.ndim - 1)) if p.get("keepdim") else r
    p["dim"] = (dim + a.ndim - 1 if dim < 0 else dim) + 1
    return spec.forward(a, **p)


argmax = _argext("argmax", np.ndarray.argmax)
argmin = _argext("argmin", np.ndarray.argmin)


# --- var / std ---------------------------------------------------------------------------------
def _inv_dof(n, correction):
    """1 / max(0, N - correction) as a Python float (inf at <= 0 degrees of freedom, as
    PyTorch: the variance is then inf or nan, never an exception)."""
    dof = n - correction
    return 1.0 / dof if dof > 0 else _math.inf


def _var_np(d, dims, correction, keepdim):
    n = _count(d.shape, dims) if d.ndim else 1
    with np.errstate(divide="ignore", invalid="ignore"):
        if d.size and dims and d.dtype in D.INEXACT:
            # deviations from each slice's first element: a slice of equal values has exactly
            # zero variance (as PyTorch's Welford reduction gives), not rounding noise
            ref = d[tuple(slice(0, 1) if i in dims else slice(None) for i in range(d.ndim))]
            shifted = d - ref
            sm = shifted.mean(axis=dims, keepdims=True)
            m = ref + sm
            dev = shifted - sm
        else:
            m = d.mean(axis=dims, keepdims=True) if d.size else _empty_mean(d, dims, True)
            dev = d - m
        # |x - mean|^2: a complex input's variance is real, of the matching real dtype
        sq = dev * dev if d.dtype.kind != "c" else (dev * np.conj(dev)).real
        v = X.c_order(sq.sum(axis=dims, keepdims=keepdim) * _inv_dof(n, correction))
    real = d.dtype if d.dtype.kind != "c" else d.real.dtype
    return v.astype(real, copy=False), (m if keepdim else m.squeeze(dims) if dims else m), n


def _correction(name, input, dim, args, correction, unbiased, keepdim):
    """var/std's arguments as PyTorch's overloads give them: (dim, correction as the node
    shows it, keepdim); ``dim`` True/False is ``unbiased`` (no dim), ``args`` the positional
    ``(unbiased[, keepdim])`` after dim.  The correction shows as None when neither it,
    unbiased nor dim was given (PyTorch's correction overload), else the number used."""
    if args:
        unbiased, keepdim = _unbiased_keepdim(name, input, dim, args, unbiased, keepdim)
    if isinstance(dim, bool):
        unbiased, dim = dim, None
    if isinstance(input, Tensor) and input._data.dtype not in D.INEXACT:
        raise RuntimeError(f"{'std and var' if name in ('std', 'var') else name} only support "
                           f"floating point and complex dtypes")
    if correction is None:
        if unbiased is not None or dim is not None:
            correction = 1 if unbiased is None or unbiased else 0
    elif unbiased is not None:
        raise RuntimeError(f"{name}: cannot specify both correction and unbiased arguments")
    return dim, correction, keepdim


def _dof_warning(name, d, dims, c):
    """PyTorch's warning at <= 0 degrees of freedom (its test: input numel divided by output
    numel, 0 when the output is empty, minus the correction)."""
    out_numel = _count(d.shape, [k for k in range(d.ndim) if k not in dims])
    if (d.size // out_numel if out_numel else 0) - c <= 0:
        from .._warn import warn
        warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less "
             f"than the reduction factor (input numel divided by output numel).")


def _var_forward(name, std):
    """The forward of var or std over ``dim`` (every dim when None) with ``correction``
    (None: 1), warning as PyTorch at <= 0 degrees of freedom."""
    def forward(self, dim=None, *, correction=None, keepdim=False):
        d = self
        if d.dtype not in D.INEXACT:
            raise RuntimeError("std and var only support floating point and complex dtypes")
        c = 1 if correction is None else correction
        dims = dims_of(dim, d.ndim, name)
        _dof_warning(name, d, dims, c)
        v = _var_np(d, dims, c, keepdim)[0]
        return np.sqrt(v) if std else v

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = (f"{'Standard deviation' if std else 'Variance'} over ``dim`` with "
                       f"``correction`` (default 1, Bessel's); {name.capitalize()}Backward0.")
    return forward


def _var_formula(x, g, gmean, dim, correction, keepdim, sd):
    """The gradient of var (std when its result ``sd`` is given) and/or of the mean over
    ``dim`` (as the node keeps it; None: every dim): 2 (x - mean) / (N - correction), times
    d std / d var for std; a mean's gradient is spread over the slice."""
    c = 1 if correction is None else correction  # none given: PyTorch's default, 1
    shape = tuple(X.data(x).shape)
    dims = dims_of(dim, len(shape))
    n = _count(shape, dims) if shape else 1
    out = None
    if g is not None:
        m = X.sum_dims(x, dims, True) / n if dims else x
        dev = x - m
        g = _keep(g, dims, keepdim, len(shape))
        if sd is not None:
            # d std = d var / (2 std), masked to 0 where the saved std is 0 after the division
            # (PyTorch's order: a second derivative through a zero std is then nan, as there)
            sd = _keep(sd, dims, keepdim, len(shape))
            zero = X.const(X.data(sd) == 0, sd)
            g = X.where(zero, X.zeros_like(g), g / (sd * 2))
        if (dim is None or not shape) and X.data(x).size - c <= 0:
            # PyTorch: grad * where(x == mean, nan, inf), no dependence on x (a full reduction
            # with no degrees of freedom)
            xd = X.data(x)
            with np.errstate(invalid="ignore"):
                k = np.where(xd == (xd.mean() if xd.size else 0), np.nan,
                             np.inf).astype(xd.dtype)
            out = g * X.const(k, g)
        else:
            out = g * dev * (2.0 * _inv_dof(n, c))
        out = X.expand_to(out, shape) if tuple(out.shape) != shape else out
    if gmean is not None:
        gm = X.expand_to(_keep(gmean, dims, keepdim, len(shape)) / n, shape)
        out = gm if out is None else out + gm
    return out


def _var_tangent(ctx, t, std):
    """The tangent of var (std): the sum over dim of the gradient of var at ones times the
    tangent (its real part for complex input), divided by 2 std for std."""
    x = ctx.self
    w = _var_formula(x, 1 + 0 * (x.real if x.is_complex() else x), None, ctx.dim,
                     ctx.correction, True, None)
    dims = dims_of(ctx.dim, x.ndim)
    dv = X.sum_dims(X.real(X.conj(w) * t) if x.is_complex() else w * t, dims, ctx.keepdim)
    return dv / (2 * ctx.result) if std else dv


def _declare_var(name, std):
    """var or std, declared (one node, <Name>Backward0, for every overload; std's keeps its
    result); the public function takes PyTorch's overloads (``unbiased``, a bool ``dim``)."""
    spec = defop(name, node=f"{name.capitalize()}Backward0",
                 saved=("self", "dim", "correction", "keepdim") + (("result",) if std else ()),
                 dim_lists=("dim",), batch=batch_along_dims("dim"))(_var_forward(name, std))

    @spec.backward
    def _(ctx, grad):
        return _var_formula(ctx.self, grad, None, ctx.dim, ctx.correction, ctx.keepdim,
                            ctx.result if std else None),

    @spec.jvp
    def _(ctx, t):
        return _var_tangent(ctx, t, std)

    def public(input, dim=None, *args, correction=None, keepdim=False, unbiased=None):
        dim, correction, keepdim = _correction(name, input, dim, args, correction, unbiased,
                                               keepdim)
        if isinstance(input, Tensor) and input._data.dtype.kind in "fc":
            return quick(spec, input, (dim,), {"dim": dim, "correction": correction,
                                               "keepdim": keepdim},
                         {"correction": correction, "keepdim": keepdim})
        return spec.declared(input, dim, correction=correction, keepdim=keepdim)

    public.__doc__ = spec.fn.__doc__
    return front(spec, public)


var = _declare_var("var", False)
std = _declare_var("std", True)


def _unbiased_keepdim(name, input, dim, args, unbiased, keepdim):
    """``unbiased`` and ``keepdim`` of the positional ``(dim, unbiased[, keepdim])`` form."""
    if len(args) > 2 or isinstance(dim, bool) or unbiased is not None or \
            (len(args) == 2 and keepdim is not False) or \
            not _bi.all(isinstance(a, (bool, np.bool_)) for a in args):
        raise D.bad_combo(name, (input, dim) + tuple(args), None)
    return bool(args[0]), (bool(args[1]) if len(args) == 2 else keepdim)


def _declare_var_mean(name, std):
    """var_mean or std_mean, declared: (var or std, mean) from one pass, both outputs of one
    <Name>Backward0 node (std_mean's keeps its std, ``result0``)."""
    def forward(self, dim=None, *, correction=None, keepdim=False):
        c = 1 if correction is None else correction
        dims = dims_of(dim, self.ndim, name)
        _dof_warning(name, self, dims, c)
        r, m, _ = _var_np(self, dims, c, keepdim)
        return (np.sqrt(r) if std else r), X.c_order(np.asarray(m).astype(self.dtype, copy=False))

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = (f"({'std' if std else 'var'}, mean) from one pass; both outputs of one "
                       f"{'StdMean' if std else 'VarMean'}Backward0 node.")
    spec = every_output(defop(
        name, node=f"{'StdMean' if std else 'VarMean'}Backward0",
        saved=("self", "dim", "correction", "keepdim") + (("result",) if std else ()),
        outputs=(name[:3], "mean"), names={"result": "result0"}, dim_lists=("dim",),
        holomorphic=False, method=False, batch=batch_along_dims("dim"))(forward))

    @spec.backward
    def _(ctx, grads):
        gv, gm = grads
        # std's result is unpacked (version-checked) even when only the mean's gradient flows
        sd = ctx.result if std else None
        return _var_formula(ctx.self, gv, gm, ctx.dim, ctx.correction, ctx.keepdim,
                            sd if gv is not None else None),

    @spec.jvp
    def _(ctx, t):
        x = ctx.self
        dims = dims_of(ctx.dim, x.ndim)
        mean_t = X.sum_dims(t, dims, ctx.keepdim) / _count(tuple(x.shape), dims)
        return _var_tangent(ctx, t, std), mean_t

    def public(input, dim=None, *args, correction=None, keepdim=False, unbiased=None):
        dim, correction, keepdim = _correction(name, input, dim, args, correction, unbiased,
                                               keepdim)
        if isinstance(input, Tensor) and input._data.dtype.kind in "fc":
            p = {"dim": dim, "correction": correction, "keepdim": keepdim}
            return tuple(quick(spec, input, (), p, p))
        return tuple(spec.declared(input, dim=dim, correction=correction, keepdim=keepdim))

    public.__doc__ = forward.__doc__
    return front(spec, public)


var_mean = _declare_var_mean("var_mean", False)
std_mean = _declare_var_mean("std_mean", True)


# --- norms -----------------------------------------------------------------------------------------
def _norm_grad(x, od, o, g, p, dims, keepdim):
    """PyTorch's norm_backward: the gradient of the ``p``-norm over ``dims`` of ``x`` (array or
    Tensor) for the incoming ``g``; ``od`` the norm's array, ``o`` the norm as the formula
    reads it (array, or Tensor under create_graph)."""
    xd = X.data(x)
    shape = xd.shape
    if p == 0:  # PyTorch's gradient of the 0-"norm" (a count) is undefined: None
        return None
    g = _keep(g, dims, keepdim, len(shape))
    if p == 1:  # PyTorch's sgn(x) * grad (z / |z| for complex x)
        return X.sgn(x) * g
    od = od if keepdim or not dims else np.expand_dims(od, dims)
    if _math.isinf(p):
        # PyTorch's: sgn(x) * ((g / count) * mask), mask = (|x| == norm) | isnan(x); the
        # sgn keeps the gradient depending on x under create_graph (zero second order)
        m = (np.abs(xd) == od) | np.isnan(xd)
        rdt = od.dtype
        cnt = np.maximum(m.sum(axis=dims, keepdims=True), 1).astype(rdt)
        return X.sgn(x) * ((g / X.const(cnt, g)) * X.const(m.astype(rdt), g))
    o = _keep(o, dims, keepdim, len(shape))
    zero = X.const(np.broadcast_to(od == 0, od.shape), g)
    safe = X.where(zero, 1 + 0 * o, o)
    if p == 2:
        return X.where(X.const(np.broadcast_to(od == 0, shape), g), 0 * x, x * (g / safe))
    ax = X.abs(x)
    r = x * ax ** (p - 2) * (g / safe ** (p - 1))
    return X.where(X.const(np.broadcast_to(od == 0, shape), g), 0 * x, r)


def _norm_tangent(x, t, p, norm, dims, keepdim):
    """PyTorch's norm_jvp: the tangent of the ``p``-norm ``norm`` over ``dims`` of ``x``
    (Tensors) for the input tangent ``t``."""
    if p == 0:
        return norm * 0
    cplx = x.is_complex() or t.is_complex()

    def re(a):
        return a.real if cplx else a
    if p == 1:
        return re(x.sgn().conj() * t).sum(dims, keepdim) if dims else re(x.sgn().conj() * t)
    nd = x.dim()
    kept = norm if keepdim or not dims or nd == 0 else X.unsqueeze_dims(norm, dims, nd)
    if _math.isinf(p):
        mask = ((x.abs() == kept) | (x.isnan() & kept.isnan())).to(norm.dtype)
        count = mask.sum(dims, True) if dims else mask
        w = re(x.sgn().conj() * t) * mask / count
        return w.sum(dims, keepdim) if dims else w
    prod = re(x.conj() * t)
    if p != 2:
        prod = x.abs() ** (p - 2) * prod
        if p < 2:
            prod = prod.masked_fill(x == 0, 0)
    total = prod.sum(dims, keepdim) if dims else prod
    if p == 2:
        out = total / norm
    elif p < 1:
        return total * norm ** (1 - p)
    else:
        out = total / norm ** (p - 1)
    return out.masked_fill(norm == 0, 0)


def norm_dtype(dt, dtype, fn: str = "linalg.vector_norm"):
    """The NumPy dtype a norm (``fn``: linalg.vector_norm, linalg.matrix_norm) computes input
    of dtype ``dt`` in for its ``dtype`` argument, or PyTorch's error."""
    want = D.to_dtype(dtype).np
    name = D.scalar_type_name
    if want not in D.INEXACT:
        raise RuntimeError(f"{fn}: dtype should be floating point or complex, but got "
                           f"{name(want)}")
    if (dt.kind == "c") != (want.kind == "c"):
        kind = "complex" if dt.kind == "c" else "real"
        raise RuntimeError(f"{fn}: dtype should be {kind} for {kind} inputs, but got "
                           f"{name(want)}")
    if dt != want and D.FROM_NP[dt].itemsize > D.FROM_NP[want].itemsize or (
            dt == D.BF16) != (want == D.BF16) and D.FROM_NP[dt].itemsize == D.FROM_NP[want].itemsize:
        raise RuntimeError(f"{fn}: the dtype of the input ({name(dt)}) should be convertible "
                           f"without narrowing to the specified dtype ({name(want)})")
    return want


@defop("linalg_vector_norm", node="LinalgVectorNormBackward0",
       saved=("self", "ord", "dim", "keepdim", "result"), dim_lists=("dim",),
       holomorphic=False, method=False, function=False, batch=batch_along_dims("dim"))
def _linalg_vector_norm(self, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm over ``dim`` (all elements by default), computed in ``dtype``
    when given; LinalgVectorNormBackward0."""
    d = self
    if d.dtype not in D.INEXACT:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(d.dtype)}")
    if dtype is not None:
        d = d.astype(norm_dtype(d.dtype, dtype))
    if isinstance(ord, str) or isinstance(ord, bool) or not isinstance(ord, (int, float,
                                                                            np.number)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {D.type_name(ord)}")
    out_dt = d.dtype if d.dtype.kind != "c" else d.real.dtype  # the norm of complex is real
    if out_dt == D.BF16:  # accumulated in float32 and rounded once, as PyTorch
        d = d.astype(np.float32)
    p = float(ord)
    dims = dims_of(dim, d.ndim, "linalg.vector_norm")
    a = np.abs(d)
    kw = dict(axis=dims, keepdims=keepdim)
    if _math.isinf(p):
        if d.size == 0 and (not dims or _bi.any(d.shape[k] == 0 for k in dims)):
            raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty "
                               "tensor because the operation does not have an identity")
        r = a.max(**kw) if p > 0 else a.min(**kw)
    elif p == 0:
        r = (a != 0).sum(**kw).astype(a.dtype)
    elif p == 1:
        r = a.sum(**kw)
    elif p == 2:
        r = np.sqrt((a * a).sum(**kw))
    else:
        r = ((a ** p).sum(**kw)) ** (1.0 / p)
    return X.c_order(np.asarray(r, dtype=out_dt))


@_linalg_vector_norm.backward
def _(ctx, grad):
    return _vector_norm_grad(ctx, grad, ctx.ord)


@_linalg_vector_norm.jvp
def _(ctx, t):
    return _vector_norm_tangent(ctx, t, ctx.ord)


def _vector_norm_grad(ctx, grad, p):
    """PyTorch's norm_backward, for linalg.vector_norm's node and at::norm's."""
    x, res = ctx.self, ctx.result
    dims = dims_of(ctx.dim, X.data(x).ndim)
    return _norm_grad(x, np.asarray(X.data(res)), res, grad, float(p), dims, ctx.keepdim),


def _vector_norm_tangent(ctx, t, p):
    """PyTorch's norm_jvp, for linalg.vector_norm's node and at::norm's."""
    x = ctx.self
    return _norm_tangent(x, t, float(p), ctx.result, dims_of(ctx.dim, x.dim()), ctx.keepdim)


@defop("norm", node="NormBackward1", saved=("self", "p", "dim", "keepdim", "result"),
       dim_lists=("dim",), holomorphic=False, method=False, function=False,
       batch=batch_along_dims("dim"))
def _norm_dim(self, p, dim, keepdim=False):
    """``at::norm(self, p, dim, keepdim)`` (its ScalarOpt_dim overload), which PyTorch's C++
    composites call (pairwise_distance): linalg.vector_norm's value and formulas, recorded
    as NormBackward1."""
    return _linalg_vector_norm.forward(self, p, dim, keepdim)


@_norm_dim.backward
def _(ctx, grad):
    return _vector_norm_grad(ctx, grad, ctx.p)


@_norm_dim.jvp
def _(ctx, t):
    return _vector_norm_tangent(ctx, t, ctx.p)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """``torch.linalg.vector_norm``: the vector ``ord``-norm over ``dim`` (all elements by
    default); LinalgVectorNormBackward0."""
    if not isinstance(x, Tensor):
        raise TypeError(f"linalg_vector_norm(): argument 'input' (position 1) must be Tensor, "
                        f"not {D.type_name(x)}")
    if dtype is None and x._data.dtype.kind == "f":  # the common call: straight to the node
        return quick(_linalg_vector_norm, x, (ord, dim, keepdim),
                     {"ord": ord, "dim": dim, "keepdim": keepdim})
    if dtype is not None and x._data.dtype == D.BF16:
        # computed in the dtype asked for (the declaration's bfloat16 path would round the
        # result back to bfloat16)
        want = norm_dtype(x._data.dtype, dtype)
        if want != D.BF16:
            r = _linalg_vector_norm.forward(x._data, ord, dim, keepdim, dtype=dtype)
            raw = {"ord": ord, "dim": dim, "keepdim": keepdim}
            if STATE.enabled and x._requires_grad:
                return _linalg_vector_norm.record1(r, x, raw)
            return _linalg_vector_norm.record(r, (x,), None)
        # (bfloat16 asked of bfloat16: the declaration's own bfloat16 path, computed in float32
        # and rounded once; the forward would see the float32 array and refuse it as narrowing)
        return _linalg_vector_norm.declared(x, ord, dim, keepdim)
    return _linalg_vector_norm.declared(x, ord, dim, keepdim, dtype=dtype)


vector_norm = front(_linalg_vector_norm, vector_norm)
vector_norm.__name__ = vector_norm.__qualname__ = "vector_norm"  # torch.linalg's name


@composite()
@quiet
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """``torch.norm``: the vector p-norm over ``dim`` ('fro' = 2), linalg.vector_norm's node
    (LinalgVectorNormBackward0) as PyTorch records it; 'nuc' the nuclear norm
    (linalg.matrix_norm's composition)."""
    if isinstance(p, str):
        if p == "fro":
            return vector_norm(input, 2, dim, keepdim, dtype=dtype)
        if p == "nuc":
            from .. import linalg as L
            return L.matrix_norm(input, "nuc", dim if dim is not None else (-2, -1), keepdim)
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


# --- logsumexp -------------------------------------------------------------------------------------
@defop("logsumexp", node="LogsumexpBackward0", saved=("self", "dim", "keepdim", "result"),
       promote="float", dim_lists=("dim",), batch=batch_along_dims("dim"))
def logsumexp(self, dim, keepdim=False):
    """log(sum(exp(x))) over ``dim``, computed without overflow; LogsumexpBackward0."""
    d = self
    dims = dims_of(dim, d.ndim, "logsumexp")
    if d.size == 0:
        r = np.log(np.exp(d).sum(axis=dims, keepdims=keepdim))
    else:
        m = d.max(axis=dims, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        r = np.log(np.exp(d - m).sum(axis=dims, keepdims=True)) + m
        if not keepdim and dims:
            r = r.squeeze(dims)
    return X.c_order(np.asarray(r, dtype=d.dtype))  # a contiguous result, as PyTorch's


def _lse_weights(ctx):
    """exp(self - result): the softmax of the input over the reduced dims, and those dims."""
    x = ctx.self
    nd = X.data(x).ndim
    dims = dims_of(ctx.dim, nd)
    return X.exp(x - _keep(ctx.result, dims, ctx.keepdim, nd)), dims, nd


@logsumexp.backward
def _(ctx, grad):
    w, dims, nd = _lse_weights(ctx)
    return _keep(grad, dims, ctx.keepdim, nd) * w,


@logsumexp.jvp
def _(ctx, t):
    w, dims, _ = _lse_weights(ctx)
    return X.sum_dims(t * w, dims, ctx.keepdim)


logsumexp = logsumexp.fn


# --- cumulative ops --------------------------------------------------------------------------------
_WIDE = {np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float64,
         D.BF16: np.float64, np.dtype(np.complex64): np.complex128}


def _cum(fn, d, axis, rt):
    """``fn`` (ndarray.cumsum / cumprod) along ``axis`` into dtype ``rt``, accumulated in double
    precision for float32/float16/complex64 as PyTorch's CPU kernels do, then rounded."""
    rt = np.dtype(rt)
    wide = _WIDE.get(rt)
    if wide is None:
        return fn(d, axis=axis, dtype=rt)
    return fn(d, axis=axis, dtype=wide).astype(rt)


def _revcumsum(g, dim):
    """Sums from each position to the end of ``dim`` (PyTorch's reversed_cumsum: flip, cumsum,
    flip), on arrays or, under create_graph, Tensors."""
    if not isinstance(g, Tensor):
        return np.flip(_cum(np.ndarray.cumsum, np.flip(g, dim), dim, g.dtype), dim)
    return cumsum(g.flip(dim), dim).flip(dim)


@defop("cumsum", node="CumsumBackward0", saved=("dim",), dims=("dim",), linear=True,
       batch=batch_along("dim"))
def cumsum(self, dim, *, dtype=None):
    """Running sum along ``dim`` (integers accumulate in int64); CumsumBackward0."""
    rt = _sum_dtype(self, dtype)
    # PyTorch's cumulative ops write a contiguous result whatever the input's layout
    return np.ascontiguousarray(_cum(np.ndarray.cumsum, self, dim, rt)) if self.ndim else self.astype(rt)


@cumsum.backward
def _(ctx, grad):
    dim = ctx.dim
    if X.numel(grad) <= 1 or grad.shape[dim] == 1:  # PyTorch returns the gradient as it is
        return grad,
    return _revcumsum(grad, dim),


cumsum = cumsum.fn


def _cumprod_grad_np(x, g, axis):
    """Exact cumprod gradient with zeros: sum_{j>=k} g_j prod_{i<=j, i!=k} x_i."""
    x = np.moveaxis(x, axis, -1)
    g = np.moveaxis(g, axis, -1)
    n = x.shape[-1]
    out = np.zeros_like(x)
    for k in range(n):
        pre = x[..., :k].prod(-1)
        tail = np.cumprod(x[..., k + 1:], -1)
        s = g[..., k] + (g[..., k + 1:] * tail).sum(-1)
        out[..., k] = pre * s
    return np.moveaxis(out, -1, axis)


@defop("cumprod", node="CumprodBackward0", saved=("self", "dim", "result"), dims=("dim",),
       batch=batch_along("dim"))
def cumprod(self, dim, *, dtype=None):
    """Running product along ``dim``; CumprodBackward0."""
    rt = _sum_dtype(self, dtype)
    return np.ascontiguousarray(_cum(np.ndarray.cumprod, self, dim, rt)) if self.ndim else self.astype(rt)


@cumprod.backward
def _(ctx, grad):
    x, o = ctx.self, ctx.result  # both unpacked (version-checked) on every path, as PyTorch
    xd = X.data(x)
    if xd.size <= 1:
        return grad,
    dim = ctx.dim % xd.ndim
    if xd.shape[dim] == 1:  # PyTorch returns the gradient as it is
        return grad,
    if (xd != 0).all():
        return _revcumsum(grad * o, dim) / x,
    return _cumprod_grad_any(x, xd, o, grad, dim),


@cumprod.jvp
def _(ctx, t):
    x, o = ctx.self, ctx.result
    xd = X.data(x)
    if xd.ndim == 0:
        return t
    dim = ctx.dim % xd.ndim
    if (xd != 0).all():
        return o * cumsum(t / x, dim)
    # with zeros: the tangent of position k is the sum over j <= k of t_j times the product
    # of x_i over i <= k, i != j (x_j set to 1 in a running product)
    k = np.arange(xd.shape[dim]).reshape((-1,) + (1,) * (xd.ndim - dim - 1))
    out = None
    for j in range(xd.shape[dim]):
        at = X.const(np.broadcast_to(k == j, xd.shape), x)
        term = cumprod(X.where(at, 1 + 0 * x, x), dim) * t.narrow(dim, j, 1) * \
            X.const((k >= j).astype(xd.dtype), x)
        out = term if out is None else out + term
    return out


def _cumprod_grad_zeros(x, xd, o, g, dim):
    """The cumprod gradient with zeros in ``x``, as differentiable Tensor ops (create_graph,
    and so forward-mode AD): with z the first zero of a slice, positions before z get
    revcumsum(g * out) / x, position z gets sum_{j>=z} g_j * cumprod(x with x_z = 1)_j,
    positions after z get 0."""
    n = xd.shape[dim]
    k = np.arange(n).reshape((-1,) + (1,) * (xd.ndim - dim - 1))
    zero = xd == 0
    z = np.where(zero.any(axis=dim, keepdims=True), np.argmax(zero, axis=dim, keepdims=True), n)
    before, at = k < z, k == z
    first = _revcumsum(g * o, dim) / X.where(X.const(before, x), x, 1 + 0 * x)
    c = cumprod(X.where(X.const(at, x), 1 + 0 * x, x), dim)
    second = X.sum_dims(g * c * X.const((k >= z).astype(xd.dtype), x), (dim,), True)
    return X.where(X.const(before, x), first,
                   X.where(X.const(at, x), second.expand(*xd.shape), 0 * first))


# the exact NumPy gradient on arrays, the differentiable composition on Tensors
_cumprod_grad_any = X.twin(lambda x, xd, o, g, dim: _cumprod_grad_np(xd, g, dim),
                           _cumprod_grad_zeros)

cumprod = cumprod.fn


# --- boolean reductions ----------------------------------------------------------------------------
def _bool_red(name, np_fn, what):
    """all or any, declared: whether every / some element (over ``dim``) is nonzero; bool, or
    uint8 for uint8 input, as PyTorch; no derivative."""
    def forward(self, dim=None, keepdim=False):
        d = self
        if type(dim) in (tuple, list) and not dim:  # over no dims: elementwise
            return d.astype(np.uint8 if d.dtype == np.uint8 else np.bool_)
        r = X.c_order(np_fn(d, axis=dims_of(dim, d.ndim), keepdims=keepdim))
        return r.astype(np.uint8) if d.dtype == np.uint8 else r

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"True when {what} element (over ``dim``) is nonzero; no derivative."
    fp_safe(forward)
    return defop(name, node=None, differentiable=False, batch=batch_along_dims("dim"))(forward).fn


all = _bool_red("all", np.ndarray.all, "every")
any = _bool_red("any", np.ndarray.any, "some")


@defop("count_nonzero", node=None, differentiable=False, batch=batch_along_dims("dim"))
@fp_safe
def count_nonzero(self, dim=None):
    """Number of nonzero elements (over ``dim``), as int64; no derivative."""
    d = self
    if dim is None:
        return np.asarray(np.count_nonzero(d), np.int64)
    dims = dims_of(dim, d.ndim, "count_nonzero")
    return X.c_order(np.asarray(np.count_nonzero(d, axis=dims) if dims else np.count_nonzero(d),
                                dtype=np.int64))


count_nonzero = count_nonzero.fn


@composite(function=False)
def sum_to_size(input, *size):
    """Sum over the dims that ``size`` broadcasts (PyTorch's sum_to): SumBackward1 (with
    keepdim), then a view without the leading dims; the tensor itself when nothing is summed."""
    from .._factories import _size
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    shape = _size(size, "sum_to_size")
    d = input._data
    cur = d.shape
    ok = len(shape) <= len(cur) and _bi.all(
        s == t or s == 1 for s, t in zip(reversed(shape), reversed(cur)))
    if not ok:
        raise RuntimeError(f"size {{{list(shape)}}} is not expandable to size {{{list(cur)}}}.")
    if not shape:
        return sum(input)
    lead = len(cur) - len(shape)
    dims = list(range(lead)) + [i for i in range(lead, len(cur))
                                if shape[i - lead] == 1 and cur[i] != 1]
    r = sum(input, dims, True) if dims else input
    if lead:
        from .views import view
        r = view(r, shape)
    return r


# --- renorm ----------------------------------------------------------------------------------------
def _norm_backward(g, x, p, norm):
    """PyTorch's norm_backward with keepdim: the gradient of ``norm`` (the ``p``-norm of ``x``
    over the dims ``norm`` keeps as size 1) times ``g``, on arrays or Tensors."""
    if p == 1.0:
        return X.sgn(x) * g
    xd, nd = X.data(x), X.data(norm)
    zero = X.const(nd == 0, norm)
    safe = X.where(zero, 1 + 0 * norm, norm)  # (no division by a zero norm)
    if p == 2.0:
        return g * X.where(zero, 0 * x, x / safe)
    if _math.isinf(p):
        ax = np.abs(xd)
        m = X.const(((ax == nd) | np.isnan(ax)).astype(xd.dtype), x)
        dims = tuple(i for i in range(xd.ndim) if nd.shape[i] == 1 and xd.shape[i] != 1)
        return X.sgn(x) * ((g / X.sum_dims(m, dims, True)) * m)
    if p < 1.0:
        xzero = X.const(xd == 0, x)
        ax = X.where(xzero, 1 + 0 * x, X.abs(x))
        scaled = X.sgn(x) * X.where(xzero, 0 * x, ax ** (p - 1))
        return scaled * g * norm ** (1 - p)
    scaled = X.sgn(x) * X.abs(x) ** (p - 1) if p < 2.0 else x * X.abs(x) ** (p - 2)
    return scaled * X.where(zero, 0 * g, g / safe ** (p - 1))


def _slice_norms(x, p, dims):
    """vector_norm of ``x`` over ``dims``, kept: recorded for a Tensor, an array for an
    array (in float32 for float16, PyTorch's accumulate type)."""
    if isinstance(x, Tensor):
        return vector_norm(x.float() if x.dtype == D.float16 else x, p, dims, True)
    prev = STATE.enabled
    STATE.enabled = False
    try:
        return vector_norm(_make(x.astype(np.float32) if x.dtype == np.float16 else x), p,
                           dims, True)._data
    finally:
        STATE.enabled = prev


def _real_scalar(v, what):
    if isinstance(v, complex):
        raise RuntimeError(f"renorm: {what} must be real-valued")
    if isinstance(v, Tensor):
        v = v.item()
    return float(v)


def _renorm(d, p, maxnorm, keep):
    """renorm's value: the slices of ``d`` along the axes ``keep`` scaled down to norm
    ``maxnorm`` where their ``p``-norm exceeds it."""
    norm = _slice_norms(d, p, [i for i in range(d.ndim) if i not in keep])
    nt = norm.dtype.type
    factor = np.where(norm > nt(maxnorm), nt(maxnorm) / (norm + nt(1e-7)), nt(1)).astype(d.dtype)
    return X.c_order(d * factor)  # contiguous, as PyTorch's


@defop("renorm", node="RenormBackward0", saved=("self", "p", "dim", "maxnorm"),
       holomorphic=False, batch=lambda spec, arrays, params: _renorm_batched(arrays[0], **params))
def renorm(self, p, dim, maxnorm):
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (times 1 / (1 + 1e-7 / norm)); RenormBackward0."""
    pv, mx = _renorm_args(p, maxnorm)
    if self.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.ndim} "
                           f"dimensions")
    return _renorm(self, pv, mx, (_dim(dim, self.ndim),))


def _renorm_args(p, maxnorm):
    """renorm's p and maxnorm as floats, with PyTorch's checks."""
    pv = _real_scalar(p, "p")
    if not pv > 0.0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    mx = _real_scalar(maxnorm, "maxnorm")
    if not mx >= 0.0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {mx:g}")
    return pv, mx


def _renorm_batched(d, p, dim, maxnorm):
    """renorm over a leading batch axis: each sample's slices on their own."""
    pv, mx = _renorm_args(p, maxnorm)
    return _renorm(d, pv, mx, (0, _dim(dim, d.ndim - 1) + 1))


def _renorm_parts(ctx):
    """What renorm's derivatives share: the input (in its accumulate type), the reduced dims,
    maxnorm, the slice norms and where they exceed maxnorm."""
    x = ctx.self
    xd = X.data(x)
    dim = _dim(ctx.dim, xd.ndim)  # saved as the caller gave it
    dims = tuple(i for i in range(xd.ndim) if i != dim)
    p, mx = _renorm_args(ctx.p, ctx.maxnorm)
    half = xd.dtype == np.float16 or xd.dtype == D.BF16  # (accumulated in float32)
    acc = x if not half else x.float() if isinstance(x, Tensor) else xd.astype(np.float32)
    norm = _slice_norms(acc, p, dims)
    return acc, dims, p, mx, norm, X.const(X.data(norm) > mx, norm)


def _to_dtype_of(v, x):
    """``v`` in ``x``'s dtype (a float32 accumulation of float16 input, rounded back)."""
    dt = X.data(x).dtype
    if X.data(v).dtype == dt:
        return v
    return v.to(x.dtype) if isinstance(v, Tensor) else v.astype(dt)


@renorm.backward
def _(ctx, grad):
    # PyTorch's renorm_backward: where the slice's norm exceeded maxnorm, the gradient of
    # x * maxnorm / (norm + 1e-7); elsewhere the gradient passes
    acc, dims, p, mx, norm, over = _renorm_parts(ctx)
    # (for complex input the norm's gradient takes real(conj(x) * grad), as PyTorch's)
    go = X.real(X.conj(acc) * grad) if X.data(acc).dtype.kind == "c" else acc * grad
    nb = _norm_backward(X.sum_dims(go, dims, True), acc, p, norm)
    inv = 1 / (norm + 1e-7)
    return X.where(over, inv * mx * grad - _to_dtype_of(mx * inv * inv * nb, ctx.self), grad),


@renorm.jvp
def _(ctx, t):
    # the tangent of x * maxnorm / (norm + 1e-7) where the norm exceeded maxnorm
    acc, dims, p, mx, norm, over = _renorm_parts(ctx)
    dn = _norm_backward(1 + 0 * norm, acc, p, norm)  # d norm / d x (d x* for complex x)
    dn = X.real(X.conj(dn) * t) if X.data(acc).dtype.kind == "c" else dn * t
    dnorm = X.sum_dims(dn, dims, True)
    inv = 1 / (norm + 1e-7)
    return X.where(over, inv * mx * t - _to_dtype_of(mx * inv * inv * dnorm * acc, ctx.self), t)


renorm = renorm.fn


@op(function=False)
def renorm_(self, p, dim, maxnorm):
    """renorm in place (returns self)."""
    from .inplace import apply
    return apply(self, renorm, p, dim, maxnorm)


inplace_of("renorm_", "renorm")
