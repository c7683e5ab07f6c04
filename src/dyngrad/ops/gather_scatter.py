"""Ops driven by index tensors: gather/scatter, index_select/add/fill/copy, masked_fill/
select/scatter, take, index_put.  Each is declared with ``defop``; its node keeps the index or
mask as PyTorch's SavedVariable (``index_args``).  Each gradient is the matching scatter or
gather of the other, written once with the ``_any`` kernels below (NumPy on arrays, the
recorded op on Tensors under ``create_graph``).  (Sorting, searching and the index-producing
ops are in ``sorting.py``.)"""
from __future__ import annotations

from math import prod as _prod


import numpy as np

from . import OPS, composite, inplace_of, op
from .._record import (RECORD_HOOKS, STATE, Saved, Tensor, edge_of, edges_first, quiet_off,
                       quiet_on, record, sum_to)
from ..autograd.node import NotImplemented_
from .._tensor import _dim
from .. import _dtype as D
from .. import _warn
from .reduction import raw_dim
from . import _dual as X
from .inplace import (_after_untracked_write, _apply, _bad_bcast, _bcast_ok, _clone_any,
                      _recording, apply)
from .views import overlapping, root_writeable, writeable_alias
from ._spec import SavedSeq, _compiled, batch_along, defop, fp_safe, front, saved_arg, variant

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


def _T(a):
    return a if isinstance(a, Tensor) else _make(a)


def _formula(spec, *variants):
    """Declare the decorated ``formula(node, grad, *saved values in the declaration's order)``
    as the backward of ``spec`` (and of its ``variants``' nodes, which keep the same values):
    the declared backward runs it on ``ctx``'s values; the node's plain backward unpacks them
    itself (version-checked, in PyTorch's order) without building a ``ctx``."""
    names = spec.saved
    order = spec.unpack_order

    def deco(formula):
        def value(ctx, n):
            v = getattr(ctx, n)
            return v.get(ctx._node, ctx._graph) if type(v) is SavedSeq else v
        spec.backward(lambda ctx, grad: formula(ctx._node, grad, *[value(ctx, n) for n in names]))

        def bw(self, g, graph):
            s = self._saved
            vals = list(s)
            for p in order:
                v = s[p]
                if type(v) is Saved or type(v) is SavedSeq:
                    vals[p] = v.get(self, graph)
            return formula(self, g, *vals)

        for cls in (spec.node_cls,) + variants:
            cls._bw = bw
        return formula
    return deco


# --- gather / scatter ---------------------------------------------------------------------------
def _batch_gather(spec, arrays, params):
    """gather with a leading batch axis on the input (the index the same for every sample)."""
    x, = arrays
    p = dict(params)
    k = p["dim"]
    idx = _idx(p["index"], "gather")
    if x.ndim == 1:  # samples of 0-d tensors
        return x[:, None][:, idx.reshape(1)].reshape((x.shape[0],) + idx.shape)
    p["index"] = np.broadcast_to(idx, x.shape[:1] + idx.shape)
    p["dim"] = k + 1
    return spec.forward(x, **p)


@defop("gather", node="GatherBackward0", saved=("dim", "index", "self", "sparse_grad"),
       dims=("dim",), linear=True, batch=_batch_gather, index_args=("index",))
@fp_safe
def gather(self, dim, index, sparse_grad=False):
    """``out[i][j] = input[i][index[i][j]]`` (for dim 1); GatherBackward0."""
    idx = _idx(index, "gather")
    if self.ndim == 0:
        d1, i1 = self.reshape(1), idx.reshape(1)
        _check_along(d1, i1, 0, "gather")
        return d1[i1].reshape(idx.shape)
    _check_along(self, idx, dim, "gather")
    return self[_along(idx, dim)]


@_formula(gather)
def _(node, grad, dim, index, self, sparse_grad):
    shape = tuple(self.shape)
    return _scatter_add_any(grad, shape, dim % (len(shape) or 1), X.data(index)),


gather = gather.fn


@composite()
def take_along_dim(input, indices, dim=None):
    """Values of ``input`` at ``indices`` along ``dim`` (the flattened input without): PyTorch
    composes it as the gather of the broadcast input at a copy of the broadcast indices."""
    if not isinstance(indices, Tensor):
        raise D.not_tensor("take_along_dim", "indices", 2, indices)
    if dim is None:
        return input.view(-1).gather(0, indices.view(-1))
    shape = tuple(input.shape)
    k = _dim(dim, len(shape))
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype is D.bool_:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype}")
    ishape0 = tuple(indices.shape)
    shp = list(np.broadcast_shapes(shape[:k] + (1,) + shape[k + 1:],
                                   ishape0[:k] + (1,) + ishape0[k + 1:]))
    ishape = tuple(shp[:k] + [ishape0[k]] + shp[k + 1:])
    shp[k] = shape[k]
    # (a copy: PyTorch's gradient reads the indices as they were, whatever happens to them later)
    idx = _make(np.array(np.broadcast_to(indices._data, ishape))) if type(indices) is Tensor \
        else indices.expand(*ishape).clone()
    return input.expand(*shp).gather(k, idx)


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


def _front(spec):
    """The public function and method of ``spec``'s op, taking PyTorch's arguments (its tensor
    inputs not all first) and handing the declared function its tensors first."""
    spec.fp_safe = getattr(spec.forward, "fp_safe", False)

    def deco(fn):
        fn = front(spec, fn)
        OPS[spec.key]["method"] = True
        return fn
    return deco


def _pair_record(spec):
    """``spec.record`` for the two Tensors of ``_pair`` (the second or both requiring grad),
    the node's saved values read by one generated expression."""
    ab = ("a", "b")

    def kept(i, need):
        if need is None:
            return f"Saved({ab[i]})"
        return f"(Saved({ab[i]}) if {' or '.join(ab[j] + '._requires_grad' for j in need)} " \
               f"else None)"
    exprs = [kept(spec.inputs.index(n), spec.kept_for.get(n)) if n in spec.inputs else
             f"tuple({ab[spec.sizes_of[n]]}._data.shape)" if n in spec.sizes_of else
             f"saved_arg(raw[{n!r}])" if n in spec.index_args else
             f"raw[{n!r}]" for n in spec.saved]
    src = "\n".join([
        "def rec(r, a, b, raw):",
        "    res = _make(r)",
        "    res._requires_grad = True",
        f"    res._grad_fn = node = cls((edge_of(a), edge_of(b)), "
        f"({''.join(e + ', ' for e in exprs)}), r.dtype)",
        "    if RECORD_HOOKS:",
        "        node.__dict__['_in_shape'] = a._data.shape",
        "        for h in RECORD_HOOKS:",
        "            h(res, node)",
        "    return res"]) + "\n"
    return _compiled(src, {"Saved": Saved, "saved_arg": saved_arg, "_make": _make,
                           "edge_of": edge_of, "RECORD_HOOKS": RECORD_HOOKS,
                           "cls": spec.node_cls}, "rec")


def _pair(spec, input, other, params):
    """The declared op ``spec`` of ``input`` and ``other`` and the arguments ``params`` by
    name: the common call (two Tensors of dtypes the forward takes, an int ``dim``) runs the
    forward and records the node directly; any other goes through the declared function's
    checks."""
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)) or \
            type(params.get("dim", 0)) is not int:
        return spec.declared(input, other, **params)
    a, b = input._data, other._data
    kinds = spec.kinds
    if a.dtype.kind not in kinds or b.dtype.kind not in kinds:
        return spec.declared(input, other, **params)
    tok = None if spec.fp_safe else quiet_on()
    try:
        r = spec.forward(a, b, **params)
    except RuntimeError:
        edges_first(input, other)  # a stale view's error comes before the op's own
        raise
    finally:
        if tok is not None:
            quiet_off(tok)
    if STATE.enabled and (input._requires_grad or other._requires_grad):
        rec = _RECORD.get(spec)
        if rec is None:
            rec = _RECORD[spec] = _pair_record(spec)
        return rec(r, input, other, params)
    return _make(r)


_RECORD: dict = {}


_REDUCE = {"add": np.add, "multiply": np.multiply}


def _scatter_data(d, dim, index, src, reduce, name):
    idx = _idx(index, name, f"{name}(): Expected dtype int32/int64 for index")
    k = _dim(dim, d.ndim)
    _check_along(d, idx, k, name)
    out = d.copy()
    key = _along(idx, k) if d.ndim else (idx.reshape(-1) * 0,)
    if isinstance(src, np.ndarray):
        if src.ndim != idx.ndim and idx.size:
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        vals = _src_part(src, idx)
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
    return out


def _src_shape(res, src, index):
    """Note on ``res``'s node the shape of a ``src`` larger than ``index`` (the gradient
    PyTorch's engine then refuses, ``_src_grad``)."""
    if res._grad_fn is not None and src._data.shape != np.shape(
            index._data if isinstance(index, Tensor) else index):
        res._grad_fn.__dict__["_src_shape"] = src._data.shape
    return res


def _batch_scatter(spec, arrays, params):
    """scatter / scatter_add with a leading batch axis on ``self`` and ``src`` (the index the
    same for every sample)."""
    p = dict(params)
    x = arrays[0]
    idx = _idx(p["index"], spec.name)
    p["index"] = np.broadcast_to(idx, x.shape[:1] + idx.shape)
    p["dim"] = _dim(p["dim"], x.ndim - 1) + 1
    return spec.forward(*arrays, **p)


def _scatter_bw(node, grad, dim, index, add=False):
    """Gradients of scatter (``self``: zero where written, or all of it with ``add``;
    ``src``: read at ``index``)."""
    idx = X.data(index)
    k = dim % (grad.ndim or 1)
    nf = node.next_functions
    gself = None
    if nf[0][0] is not None:
        gself = grad if add else _scatter_zero_any(grad, k, idx)
    if len(nf) == 1:
        return gself,
    gsrc = None
    if nf[1][0] is not None:
        gsrc = _gather_any(grad, k, idx)
        shape = node.__dict__.get("_src_shape")
        if shape is not None:
            gsrc = _src_grad(gsrc, shape, type(node).__name__)
    return gself, gsrc


@defop("scatter", node="ScatterBackward0", inputs=("self", "src"), saved=("dim", "index"),
       dims=("dim",), index_args=("index",), method=False, batch=_batch_scatter)
@fp_safe
def _scatter(self, src, dim, index):
    """scatter of a tensor ``src`` (the forward, tensors first)."""
    return _scatter_data(self, dim, index, src, None, "scatter")


ScatterBackward1 = variant(_scatter, "ScatterBackward1", ("dim", "index"))
_formula(_scatter, ScatterBackward1)(_scatter_bw)


def _self_tangent(ctx, t_self, other):
    """The tangent of ``self``, or zeros of its shape (noted on the node while forward-mode
    AD observes the recording) when it has none."""
    if t_self is not None:
        return t_self
    node = ctx._node
    shape = node.__dict__.get("_in_shape")
    if shape is None:
        raise NotImplementedError(f"forward AD of {type(node).__name__} with some inputs "
                                  f"untangented")
    return X.zeros(shape, other, node._odt)


def _noted(node, input):
    """``node`` with ``input``'s shape noted while recording is observed (``_self_tangent``)."""
    if RECORD_HOOKS:
        node.__dict__["_in_shape"] = input._data.shape
    return node


def _self_src_tangents(ctx, t_self, t_src):
    """The tangents of ``self`` and ``src`` (zeros of the index's shape for a missing ``src``
    one: only that part of it is read)."""
    t_self = _self_tangent(ctx, t_self, t_src)
    if t_src is None:
        t_src = X.zeros(X.data(ctx.index).shape, t_self)
    return t_self, t_src


@_scatter.jvp
def _(ctx, t_self, t_src=None):
    if len(ctx._node.next_functions) == 1:  # ScatterBackward1: a number written
        return scatter(t_self, ctx.dim, _T(X.data(ctx.index)), 0.0)
    t_self, t_src = _self_src_tangents(ctx, t_self, t_src)
    return scatter(t_self, ctx.dim, _T(X.data(ctx.index)), t_src)


@_front(_scatter)
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src`` (tensor or scalar) written at ``index`` along ``dim``;
    ScatterBackward0 (tensor src) or ScatterBackward1 (scalar)."""
    if src is None:
        src = value
    if isinstance(src, Tensor) and reduce is None:
        r = _pair(_scatter, input, src, {"dim": dim, "index": index})
        return r if r._grad_fn is None else _src_shape(r, src, index)
    if not isinstance(input, Tensor):
        raise D.not_tensor("scatter", "input", 1, input)
    d = input._data
    data = _scatter_data(d, dim, index, src._data if isinstance(src, Tensor) else src, reduce,
                         "scatter")
    if not STATE.enabled:
        return _make(data)
    if isinstance(src, Tensor):  # reduce: PyTorch has no derivative
        if input._requires_grad or src._requires_grad:
            return record(data, NotImplemented_((edge_of(input), edge_of(src)), ("scatter",)))
        return _make(data)
    if not input._requires_grad:
        return _make(data)
    if reduce is not None:
        return record(data, NotImplemented_((edge_of(input),), ("scatter",)))
    return record(data, ScatterBackward1((edge_of(input),), (raw_dim(dim), saved_arg(index))))


@defop("scatter_add", node="ScatterAddBackward0", inputs=("self", "src"), saved=("dim", "index"),
       dims=("dim",), index_args=("index",), method=False, batch=_batch_scatter)
@fp_safe
def _scatter_add(self, src, dim, index):
    """scatter_add (the forward, tensors first)."""
    return _scatter_data(self, dim, index, src, "add", "scatter_add")


@_formula(_scatter_add)
def _(node, grad, dim, index):
    return _scatter_bw(node, grad, dim, index, True)


@_scatter_add.jvp
def _(ctx, t_self, t_src=None):
    t_self, t_src = _self_src_tangents(ctx, t_self, t_src)
    return scatter_add(t_self, ctx.dim, _T(X.data(ctx.index)), t_src)


@_front(_scatter_add)
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeats add up)."""
    if not isinstance(src, Tensor):
        raise D.not_tensor("scatter_add", "src", 4, src)
    r = _pair(_scatter_add, input, src, {"dim": dim, "index": index})
    return r if r._grad_fn is None else _src_shape(r, src, index)


def _inplace(name, fn):
    def f(self, *args, **kwargs):
        return apply(self, fn, *args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"In-place {fn.__name__}; returns self."
    op(name, function=False)(f)
    inplace_of(name, name[:-1])
    return f


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


@defop("index_select", node="IndexSelectBackward0", saved=("dim", "index", "self_sym_sizes"),
       dims=("dim",), linear=True, batch=batch_along("dim"), index_args=("index",))
@fp_safe
def index_select(self, dim, index):
    """The slices of ``input`` at the positions ``index`` along ``dim``; IndexSelectBackward0."""
    idx = _vec_index(index, self, dim, "index_select")
    if self.ndim == 0:
        return self.reshape(1)[idx].reshape(())
    return np.take(self, idx, axis=dim)


@_formula(index_select)
def _(node, grad, dim, index, self_sym_sizes):
    shape = self_sym_sizes
    return _index_add_any(grad, shape, dim % (len(shape) or 1), X.data(index).reshape(-1)),


index_select = index_select.fn


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


def _batch_index(spec, arrays, params):
    """index_add / index_copy / index_fill with a leading batch axis on the tensors (the index
    the same for every sample)."""
    p = dict(params)
    x = arrays[0]
    if x.ndim < 2:
        raise NotImplementedError(f"{spec.name}: no batching rule for samples of 0-d tensors")
    p["dim"] = _dim(p["dim"], x.ndim - 1) + 1
    return spec.forward(*arrays, **p)


def _index_add_data(self, source, dim, index, alpha):
    k = _dim(dim, self.ndim)
    idx = _index_add_check(self, k, index, source)
    out = self.copy()
    tgt = out if self.ndim else out.reshape(1)
    src = source if alpha == 1 else source * alpha
    exp_shape = self.shape[:k] + (idx.size,) + self.shape[k + 1:] if self.ndim else (idx.size,)
    if src.shape != exp_shape:
        src = src.reshape(exp_shape)  # a 0-d source or self: one element
    np.add.at(tgt, _dim_key(tgt, k, idx), src.astype(self.dtype, copy=False))
    return out


@defop("index_add", node="IndexAddBackward0", inputs=("self", "source"),
       saved=("dim", "index", "source", "source_dim", "alpha"), saved_for={"source": (1,)},
       dims=("dim",), index_args=("index",), method=False, batch=_batch_index)
def _index_add(self, source, dim, index, alpha=1, source_dim=None):
    """index_add (the forward, tensors first; ``source_dim``: the source's, as the node keeps
    it)."""
    return _index_add_data(self, source, dim, index, alpha)


@_formula(_index_add)
def _(node, grad, dim, index, source, source_dim, alpha):
    nf = node.next_functions
    gs = None
    if nf[1][0] is not None:
        gs = _index_select_any(grad, dim % (grad.ndim or 1), X.data(index).reshape(-1))
        if alpha != 1:
            gs = gs * alpha
        gs = gs.reshape(tuple(source.shape))
    return grad if nf[0][0] is not None else None, gs


@_index_add.jvp
def _(ctx, t_self, t_source=None):
    t_self = _self_tangent(ctx, t_self, t_source)
    if t_source is None:
        return t_self
    return index_add(t_self, ctx.dim, _T(X.data(ctx.index)), t_source, alpha=ctx.alpha)


@_front(_index_add)
def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source`` slices added at ``index`` along ``dim``."""
    if not isinstance(source, Tensor):
        raise D.not_tensor("index_add", "source", 4, source)
    return _pair(_index_add, input, source, {"dim": dim, "index": index, "alpha": alpha,
                                             "source_dim": source._data.ndim})


def _fill_index(index, shape, dim):
    """index_fill's index as a vector of non-negative positions along ``dim``."""
    n = shape[dim] if shape else 1
    idx = X.data(index).reshape(-1)
    return np.where(idx < 0, idx + n, idx)


def _index_fill_data(self, dim, index, value):
    k = _dim(dim, self.ndim)
    idx = _vec_index(index, self, k, "index_fill")
    idx = np.where(idx < 0, idx + (self.shape[k] if self.ndim else 1), idx)
    out = self.copy()
    tgt = out if self.ndim else out.reshape(1)
    tgt[_dim_key(tgt, k, idx)] = value
    return out


@defop("index_fill", node="IndexFillBackward0", saved=("dim", "index"), dims=("dim",),
       index_args=("index",), batch=_batch_index)
@fp_safe
def index_fill(self, dim, index, value):
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value``;
    IndexFillBackward0 (a number) or IndexFillBackward1 (a 0-d tensor)."""
    if isinstance(value, (Tensor, np.ndarray)):
        v = X.data(value)
        if v.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {v.ndim} dimension(s).")
        value = v
    return _index_fill_data(self, dim, index, value)


IndexFillBackward1 = variant(index_fill, "IndexFillBackward1", ("dim", "index"))


@_formula(index_fill, IndexFillBackward1)
def _(node, grad, dim, index):
    k = dim % (grad.ndim or 1)
    idx = X.data(index).reshape(-1)  # (a negative position reads as NumPy's)
    gs = _index_zero_any(grad, k, idx) if node.next_functions[0][0] is not None else None
    if len(node.next_functions) == 1:
        return gs,
    gv = None
    if node.next_functions[1][0] is not None:  # each filled slice once
        gv = X.sum_all(_index_select_any(grad, k, np.unique(
            _fill_index(idx, tuple(grad.shape), k))))
    return gs, gv


@index_fill.jvp
def _(ctx, t_self, t_value=None):
    t_self = _self_tangent(ctx, t_self, t_value)
    index = _T(X.data(ctx.index))
    if len(ctx._node.next_functions) == 1:  # IndexFillBackward0: a number written
        return _index_fill_public(t_self, ctx.dim, index, 0.0)
    return _index_fill_public(t_self, ctx.dim, index,
                              t_value if t_value is not None else X.zeros((), t_self))


_index_fill = index_fill


@_front(_index_fill)
def _index_fill_public(input, dim, index, value):
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value``;
    IndexFillBackward0 (a number) or IndexFillBackward1 (a 0-d tensor)."""
    if not isinstance(value, Tensor):
        if not isinstance(input, Tensor) or type(dim) is not int or \
                input._data.dtype.kind not in _index_fill.kinds:
            return _index_fill.declared(input, dim, index, value)
        try:
            r = _index_fill_data(input._data, dim, index, value)
        except RuntimeError:
            edges_first(input)  # a stale view's error comes before the op's own
            raise
        if STATE.enabled and input._requires_grad:
            return _index_fill.record1(r, input, {"dim": dim, "index": index})
        return _make(r)
    if not isinstance(input, Tensor):
        raise D.not_tensor("index_fill", "input", 1, input)
    vd = value._data
    if vd.ndim != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {vd.ndim} dimension(s).")
    out = _index_fill_data(input._data, dim, index, vd)
    if STATE.enabled and (input._requires_grad or value._requires_grad):
        return record(out, _noted(IndexFillBackward1((edge_of(input), edge_of(value)),
                                                     (raw_dim(dim), saved_arg(index))), input))
    return _make(out)


index_fill = _index_fill_public


@defop("index_copy", node="IndexCopyBackward0", inputs=("self", "source"),
       saved=("dim", "index", "source", "source_dim"), saved_for={"source": (1,)},
       dims=("dim",), index_args=("index",), method=False, batch=_batch_index)
@fp_safe
def _index_copy(self, source, dim, index, source_dim=None):
    """index_copy (the forward, tensors first; ``source_dim``: the source's, as the node keeps
    it)."""
    k = _dim(dim, self.ndim)
    idx = _vec_index(index, self, k, "index_copy")
    out = self.copy()
    tgt = out if self.ndim else out.reshape(1)
    exp_shape = self.shape[:k] + (idx.size,) + self.shape[k + 1:] if self.ndim else (idx.size,)
    if source.size != int(np.prod(exp_shape)):
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                           f"Destination slice shape: {list(self.shape[:k] + self.shape[k + 1:])} "
                           f"at dimension {k} and source slice shape: "
                           f"{list(source.shape[:k] + source.shape[k + 1:])} at dimension 0.")
    tgt[_dim_key(tgt, k, idx)] = source.reshape(exp_shape)
    return out


@_formula(_index_copy)
def _(node, grad, dim, index, source, source_dim):
    k = dim % (grad.ndim or 1)
    idx = X.data(index).reshape(-1)
    nf = node.next_functions
    gself = _index_zero_any(grad, k, idx) if nf[0][0] is not None else None
    gs = None
    if nf[1][0] is not None:
        gs = _index_select_any(grad, k, idx).reshape(tuple(source.shape))
    return gself, gs


@_index_copy.jvp
def _(ctx, t_self, t_source=None):
    t_self = _self_tangent(ctx, t_self, t_source)
    index = _T(X.data(ctx.index))
    if t_source is None:
        return index_fill(t_self, ctx.dim, index, 0.0)
    return index_copy(t_self, ctx.dim, index, t_source)


@_front(_index_copy)
def index_copy(input, dim, index, source):
    """A copy of ``input`` with ``source``'s slices written at ``index`` along ``dim``."""
    if not isinstance(source, Tensor):
        raise D.not_tensor("index_copy", "source", 4, source)
    return _pair(_index_copy, input, source, {"dim": dim, "index": index,
                                              "source_dim": source._data.ndim})


# --- masked ops ------------------------------------------------------------------------------
# the C++ names of the dtypes, as masked_fill_'s error prints them
_CPP_NAMES = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "float32": "float", "float64": "double",
              "float16": "c10::Half", "complex64": "c10::complex<float>",
              "complex128": "c10::complex<double>"}


def _mask(mask, name):
    md = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if md.dtype != np.bool_:
        if name == "masked_scatter_" and md.dtype in D.FROM_NP:
            dt = D.scalar_type_name(md.dtype)
        elif name == "masked_fill_":
            dt = "c10::BFloat16" if md.dtype == D.BF16 else _CPP_NAMES.get(md.dtype.name,
                                                                             md.dtype.name)
        else:
            dt = str(mask.dtype if isinstance(mask, Tensor) else md.dtype).replace("torch.", "")
        raise RuntimeError(f"{name} only supports boolean masks, but got mask with dtype {dt}")
    return md


def _batch_masked_fill(spec, arrays, params):
    """masked_fill with a leading batch axis on the input (the mask the same for every
    sample)."""
    x, = arrays
    md = X.data(params["mask"])
    if md.ndim >= x.ndim:
        md = md.reshape(md.shape[:md.ndim - x.ndim + 1] + (1,) + md.shape[md.ndim - x.ndim + 1:])
    return spec.forward(x, md, params["value"])


@defop("masked_fill", node="MaskedFillBackward0", saved=("mask",), index_args=("mask",),
       batch=_batch_masked_fill)
@fp_safe
def masked_fill(self, mask, value):
    """A copy of ``input`` with ``value`` where ``mask`` is True (broadcast); MaskedFillBackward0
    (a number) or MaskedFillBackward1 (a 0-d tensor)."""
    md = _mask(mask, "masked_fill_")
    if isinstance(value, (Tensor, np.ndarray)):
        value = X.data(value)
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
    shape = self.shape
    if md.shape != shape:
        try:
            shape = np.broadcast_shapes(shape, md.shape)
        except ValueError:
            from .binary import broadcast_error
            raise broadcast_error(md.shape, self.shape) from None
    out = np.where(md, np.asarray(value).astype(self.dtype), self)
    if out.shape != shape:
        out = np.broadcast_to(out, shape).copy()
    elif not out.flags.c_contiguous:  # PyTorch fills a contiguous clone
        out = out.copy(order="C")
    return out


def _self_shape(res, input):
    """Note on ``res``'s node the shape of an ``input`` that the mask broadcast to a larger
    result (its gradient is summed back to it, as PyTorch's engine does)."""
    if res._grad_fn is not None and res._data.shape != input._data.shape:
        res._grad_fn.__dict__["_self_shape"] = input._data.shape
    return res


MaskedFillBackward1 = variant(masked_fill, "MaskedFillBackward1", ("mask",))


@_formula(masked_fill, MaskedFillBackward1)
def _(node, grad, mask):
    md = X.data(mask)
    gs = None
    if node.next_functions[0][0] is not None:
        gs = _masked_zero_any(grad, md)
        shape = node.__dict__.get("_self_shape")
        if shape is not None:
            gs = sum_to(gs, shape)
    if len(node.next_functions) == 1:
        return gs,
    gv = None
    if node.next_functions[1][0] is not None:
        gv = X.sum_all(_masked_zero_any(grad, ~md))
    return gs, gv


@masked_fill.jvp
def _(ctx, t_self, t_value=None):
    t_self = _self_tangent(ctx, t_self, t_value)
    mask = _T(X.data(ctx.mask))
    if len(ctx._node.next_functions) == 1:  # MaskedFillBackward0: a number written
        return _masked_fill_public(t_self, mask, 0.0)
    return _masked_fill_public(t_self, mask,
                               t_value if t_value is not None else X.zeros((), t_self))


_masked_fill = masked_fill


@_front(_masked_fill)
def _masked_fill_public(input, mask, value):
    """A copy of ``input`` with ``value`` where ``mask`` is True (broadcast); MaskedFillBackward0
    (a number) or MaskedFillBackward1 (a 0-d tensor)."""
    if not isinstance(value, Tensor):
        if not isinstance(input, Tensor) or input._data.dtype.kind not in _MF_KINDS:
            return _masked_fill.declared(input, mask, value)
        try:
            r = _mf_forward(input._data, mask, value)
        except RuntimeError:
            edges_first(input)  # a stale view's error comes before the op's own
            raise
        if STATE.enabled and input._requires_grad:
            return _self_shape(_masked_fill.record1(r, input, {"mask": mask}), input)
        return _make(r)
    if not isinstance(input, Tensor):
        raise D.not_tensor("masked_fill", "input", 1, input)
    out = _masked_fill.forward(input._data, mask, value)
    if STATE.enabled and (input._requires_grad or value._requires_grad):
        return _self_shape(record(out, _noted(MaskedFillBackward1(
            (edge_of(input), edge_of(value)), (saved_arg(mask),)), input)), input)
    return _make(out)


masked_fill = _masked_fill_public
_MF_KINDS, _mf_forward = _masked_fill.kinds, _masked_fill.forward


def _masked_select_batch(spec, arrays, params):
    """masked_select with a leading batch axis on the input (the mask the same for every
    sample): each sample's selected elements, one row per sample."""
    x, = arrays
    md = _mask(params["mask"], "masked_select:")
    shape = np.broadcast_shapes(x.shape[1:], md.shape)
    return np.broadcast_to(x.reshape(x.shape[:1] + (1,) * (len(shape) + 1 - x.ndim) +
                                     x.shape[1:]), x.shape[:1] + shape)[:, np.broadcast_to(
                                         md, shape)]


@defop("masked_select", node="MaskedSelectBackward0", saved=("mask", "self"), linear=True,
       batch=_masked_select_batch, index_args=("mask",))
@fp_safe
def masked_select(self, mask):
    """The elements of ``input`` where ``mask`` is True, as a 1-D tensor; MaskedSelectBackward0."""
    if not isinstance(mask, Tensor):
        raise D.not_tensor("masked_select", "mask", 2, mask)
    md = _mask(mask, "masked_select:")
    shape = np.broadcast_shapes(self.shape, md.shape)
    return np.broadcast_to(self, shape)[np.broadcast_to(md, shape)]


@_formula(masked_select)
def _(node, grad, mask, self):
    shape = tuple(self.shape)
    md = X.data(mask)
    mb = md if md.shape == shape else np.ascontiguousarray(
        np.broadcast_to(md, np.broadcast_shapes(shape, md.shape)))
    return sum_to(_mask_place_any(grad, mb), shape),


masked_select = masked_select.fn


def _batch_masked_scatter(spec, arrays, params):
    """masked_scatter with a leading batch axis on the input and the source (the mask the
    same for every sample)."""
    return np.stack([spec.forward(x, src, params["mask"]) for x, src in zip(*arrays)])


@defop("masked_scatter", node="MaskedScatterBackward0", inputs=("self", "source"),
       saved=("mask", "source_sym_sizes"), index_args=("mask",), method=False,
       batch=_batch_masked_scatter)
@fp_safe
def _masked_scatter(self, source, mask):
    """masked_scatter (the forward, tensors first)."""
    md = np.broadcast_to(_mask(mask, "masked_scatter_"), self.shape)
    n = int(md.sum())
    if source.size < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = self.copy()
    out[md] = source.reshape(-1)[:n]
    return out


@_formula(_masked_scatter)
def _(node, grad, mask, source_sym_sizes):
    md = X.data(mask)
    if md.shape != tuple(grad.shape):
        md = np.ascontiguousarray(np.broadcast_to(md, tuple(grad.shape)))
    nf = node.next_functions
    gsrc = None
    if nf[1][0] is not None:
        sshape = tuple(source_sym_sizes)
        sel = _masked_select_any(grad, md)
        rest = _prod(sshape) - int(np.count_nonzero(md))
        gsrc = (X.cat([sel, X.zeros(rest, grad)], 0) if rest else sel).reshape(sshape)
    return _masked_zero_any(grad, md) if nf[0][0] is not None else None, gsrc


@_masked_scatter.jvp
def _(ctx, t_self, t_source=None):
    t_self = _self_tangent(ctx, t_self, t_source)
    if t_source is None:
        t_source = X.zeros(tuple(ctx.source_sym_sizes), t_self)
    return masked_scatter(t_self, _T(X.data(ctx.mask)), t_source)


@_front(_masked_scatter)
def masked_scatter(input, mask, source):
    """A copy of ``input`` with consecutive elements of ``source`` written where ``mask`` is
    True."""
    if not isinstance(source, Tensor):
        raise D.not_tensor("masked_scatter", "source", 3, source)
    return _pair(_masked_scatter, input, source, {"mask": mask})


def _batch_take(spec, arrays, params):
    """take with a leading batch axis on the input (the index the same for every sample)."""
    x, = arrays
    idx = _take_index(params["index"], x[0].size)
    return x.reshape(x.shape[0], -1)[:, idx]


def _take_index(index, n):
    idx = _idx(index, "take", "take(): Expected a long tensor for index, but got "
                              f"{getattr(index, 'dtype', '')}")
    if idx.size and ((idx < -n) | (idx >= n)).any():
        v = int(idx[(idx < -n) | (idx >= n)].flat[0])
        raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} elements.")
    return idx


@defop("take", node="TakeBackward0", saved=("index", "self"), linear=True, batch=_batch_take,
       index_args=("index",))
@fp_safe
def take(self, index):
    """Elements of the flattened ``input`` at ``index`` (shaped like index); TakeBackward0."""
    if not isinstance(index, (Tensor, np.ndarray)):
        raise D.not_tensor("take", "index", 2, index)
    return self.reshape(-1)[_take_index(index, self.size)]


@_formula(take)
def _(node, grad, index, self):
    shape = tuple(self.shape)
    return _put_add_any(grad.reshape(-1), int(np.prod(shape)),
                        X.data(index).reshape(-1)).reshape(shape),


take = take.fn


# --- index_put ---------------------------------------------------------------------------------
def _np_key(indices):
    """An index_put key (tensors, arrays, slices; None skips a dimension) as NumPy's."""
    if isinstance(indices, Tensor):
        return indices._data
    if type(indices) not in (tuple, list):
        return indices
    return tuple(k._data if isinstance(k, Tensor) else slice(None) if k is None else k
                 for k in indices)


def _batch_index_put(spec, arrays, params):
    """index_put with a leading batch axis on the input and the values (the indices the same
    for every sample)."""
    return np.stack([spec.forward(x, v, **params) for x, v in zip(*arrays)])


@defop("index_put", node="IndexPutBackward0", inputs=("self", "values"),
       saved=("indices", "accumulate"), index_args=("indices",), method=False,
       batch=_batch_index_put)
@fp_safe
def _index_put(self, values, indices, accumulate=False):
    """index_put (the forward, tensors first)."""
    key = _np_key(indices)
    d = self.copy()
    try:
        if accumulate:
            np.add.at(d, key, values)
        else:
            d[key] = values
    except (IndexError, ValueError) as e:
        if isinstance(e, ValueError) and np.ndim(values):  # values that do not broadcast
            try:
                target = list(d[key].shape)
            except IndexError:
                target = None
            if target is not None:
                vs = np.shape(values)
                while vs and vs[0] == 1:  # PyTorch names it without leading size-1 dims
                    vs = vs[1:]
                raise RuntimeError(f"shape mismatch: value tensor of shape {list(vs)} "
                                   f"cannot be broadcast to indexing result of shape "
                                   f"{target}") from None
        raise IndexError(f"{e} (index_put_ into a tensor of shape {list(d.shape)})") from None
    return d


# ``g[key]``; a Tensor is indexed with the key's arrays as Tensors (IndexBackward0)
_index_any = X.twin(lambda g, key: g[key], lambda g, key: g[
    tuple(_make(k) if isinstance(k, np.ndarray) else k for k in key)
    if isinstance(key, tuple) else key])


@_formula(_index_put)
def _(node, grad, indices, accumulate):
    key = _np_key(indices)
    nf = node.next_functions
    gself = None
    if nf[0][0] is not None:
        if accumulate:
            gself = grad
        else:
            gself = _clone_any(grad)
            gself[key] = 0.0
    gv = None
    if nf[1][0] is not None:
        gv = sum_to(_index_any(grad, key), node.__dict__["_values_shape"])
    return gself, gv


@_index_put.jvp
def _(ctx, t_self, t_values=None):
    t_self = _self_tangent(ctx, t_self, t_values)
    v = ctx.indices
    key = _np_key(v.get(ctx._node, True) if type(v) is SavedSeq else v)
    if t_values is None:
        if ctx.accumulate:
            return t_self
        t_values = X.zeros((), t_self)
    return index_put(t_self, key if type(key) is tuple else (key,), t_values, ctx.accumulate)


def _shown_indices(node):
    """``_saved_indices``: the indices as PyTorch's node shows them (a tuple of tensors, None
    for a dimension not indexed)."""
    s = node._saved
    if s is None:
        from ..autograd import errors
        raise RuntimeError(errors.FREED)
    v = s[0]
    v = v.get(node, True) if type(v) is SavedSeq else v.get(node, True) if type(v) is Saved \
        else v
    if type(v) not in (tuple, list):
        v = (v,)
    return tuple(k if isinstance(k, Tensor) or k is None else None if isinstance(k, slice) else
                 _make(np.asarray(k)) for k in v)


_index_put.node_cls._saved_indices = property(_shown_indices)


def _values_shape(res, values):
    """Note on ``res``'s node the shape of ``values`` (their gradient is summed back to it)."""
    if res._grad_fn is not None and values._requires_grad:
        res._grad_fn.__dict__["_values_shape"] = values._data.shape
    return res


def _index_put_fn(old, key, values, accumulate=False, indices=()):
    """``old`` with ``values`` put (or added) at ``key`` (NumPy's), recorded as index_put of
    ``indices`` (the tensors the key came from) when given; a number as values is a tensor
    of ``old``'s dtype."""
    vt = values if isinstance(values, Tensor) else None
    if type(indices) is tuple and not indices:
        indices = key  # (no tensors given: the key is what the node keeps)
    d = old._data
    if d.dtype.kind not in "biufc" or vt is not None and vt._data.dtype.kind not in "biufc":
        if vt is None:
            vt = _make(np.asarray(values, dtype=d.dtype))
        return _values_shape(_index_put.declared(old, vt, indices,
                                                 accumulate), vt)
    try:
        r = _index_put.forward(d, values if vt is None else vt._data, key, accumulate)
    except RuntimeError:
        edges_first(old, vt)  # a stale view's error comes before the op's own
        raise
    if not (STATE.enabled and (old._requires_grad or vt is not None and vt._requires_grad)):
        return _make(r)  # nothing to record (a number written, or no_grad)
    if vt is None:
        vt = _make(np.asarray(values, dtype=d.dtype))
    rec = _RECORD.get(_index_put)
    if rec is None:
        rec = _RECORD[_index_put] = _pair_record(_index_put)
    return _values_shape(rec(r, old, vt, {"indices": indices,
                                          "accumulate": accumulate}), vt)


@_front(_index_put)
def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` put (or added) at the advanced index ``indices``."""
    if not isinstance(values, Tensor):
        raise D.not_tensor("index_put", "values", 3, values)
    return _values_shape(_pair(_index_put, input, values, {"indices": indices,
                                                            "accumulate": accumulate}), values)


def index_put_(self, key, values, accumulate=False):
    """``self[key] = values`` (or ``+=`` with ``accumulate``) for advanced indices, in place."""
    indices = key
    if isinstance(key, tuple):
        key = tuple(k._data if isinstance(k, Tensor) else k for k in key)
    elif isinstance(key, Tensor):
        key = key._data
    d = self._data
    if not d.flags.writeable and overlapping(d):
        # an expand: PyTorch writes (or adds) each indexed element into the shared memory in
        # turn, with a deprecation warning, where other in-place ops refuse
        k0 = key[0] if isinstance(key, tuple) and len(key) == 1 else key
        if isinstance(k0, np.ndarray) and k0.dtype == np.bool_ and k0.ndim == d.ndim and \
                np.ndim(values._data if isinstance(values, Tensor) else values) == 0:
            _warn.warn("Use of masked_fill_ on expanded tensors is deprecated. Please clone() "
                       "the tensor before performing this operation. This also applies to "
                       "advanced indexing e.g. tensor[mask] = scalar", UserWarning)
        else:
            _warn.warn("Use of index_put_ on expanded tensors is deprecated. Please clone() "
                       "the tensor before performing this operation. This also applies to "
                       "advanced indexing e.g. tensor[indices] = tensor", UserWarning)
        if not _recording(self, (values,)) and root_writeable(d):
            alias = writeable_alias(d)
            vd = values._data if isinstance(values, Tensor) else values
            if accumulate:
                np.add.at(alias, key, vd)
            else:
                alias[key] = vd
            self._vc[0] += 1
            _after_untracked_write(self)
            return self
        # recorded: the result goes into the shared memory (backward then refuses the
        # overlapping region, as PyTorch's CopySlices does)
        return _apply(self, _index_put_fn, (key, values, accumulate, indices), {}, True)
    return apply(self, _index_put_fn, key, values, accumulate, indices)


def index_put_acc(z, key, g):
    """Out-of-place ``z`` with ``g`` added at ``key`` (differentiable w.r.t. ``g``)."""
    return _index_put_fn(z, key, g, True)


op("index_put_", function=False)(lambda self, indices, values, accumulate=False:
                                 index_put_(self, tuple(indices), values, accumulate))
inplace_of("index_put_", "index_put")


# --- the backward kernels: NumPy on arrays, the recorded op on Tensors (create_graph) ----------
def _scatter_add_np(g, shape, dim, index):
    z = np.zeros(shape, dtype=g.dtype)
    np.add.at(z, _along(index, dim), g)
    return z


def _scatter_zero_np(g, dim, index):
    r = g.copy()
    r[_along(index, dim)] = 0
    return r


def _scatter_place_np(g, shape, dim, index):
    z = np.zeros(shape, dtype=g.dtype)
    z[_along(index, dim)] = g
    return z


def _index_add_np(g, shape, dim, idx):
    z = np.zeros(shape, dtype=g.dtype)
    np.add.at(z if shape else z.reshape(1), (slice(None),) * dim + (idx,), g)
    return z


def _index_zero_np(g, dim, idx):
    r = g.copy()
    (r if r.ndim else r.reshape(1))[_dim_key(r, dim, idx)] = 0
    return r


def _mask_place_np(g, mask):
    z = np.zeros(mask.shape, dtype=g.dtype)
    z[mask] = g
    return z


def _mask_place_t(g, mask):
    return _index_put_fn(X.zeros(mask.shape, g), (mask,), g)


def _put_add_np(g, n, idx):
    z = np.zeros(n, dtype=g.dtype)
    np.add.at(z, idx, g)
    return z


def _put_add_t(g, n, idx):
    return _index_put_fn(X.zeros((n,), g), (idx,), g, True)


# zeros of ``shape`` with ``g`` added at ``index`` along ``dim`` (gather's gradient)
_scatter_add_any = X.twin(_scatter_add_np, lambda g, shape, dim, index: scatter_add(
    X.zeros(shape, g), dim, _T(index), g))
# zeros of ``shape`` with ``g`` written at ``index`` along ``dim`` (sort's gradient)
_scatter_place_any = X.twin(_scatter_place_np, lambda g, shape, dim, index: scatter(
    X.zeros(shape, g), dim, _T(index), g))
# ``g`` with zeros written at ``index`` along ``dim``
_scatter_zero_any = X.twin(_scatter_zero_np, lambda g, dim, index: scatter(g, dim, _T(index), 0.0))
# ``g`` at ``index`` along ``dim``
_gather_any = X.twin(lambda g, dim, index: g[_along(index, dim)],
                     lambda g, dim, index: gather(g, dim, _T(index)))
# zeros of ``shape`` with the slices of ``g`` added at ``idx`` (a vector) along ``dim``
_index_add_any = X.twin(_index_add_np, lambda g, shape, dim, idx: index_add(
    X.zeros(shape, g), dim, _T(idx), g))
# the slices of ``g`` at ``idx`` along ``dim``
_index_select_any = X.twin(
    lambda g, dim, idx: np.take(g, idx, axis=dim) if g.ndim else g.reshape(1)[idx],
    lambda g, dim, idx: index_select(g, dim, _T(idx)))
# ``g`` with the slices at ``idx`` along ``dim`` zeroed
_index_zero_any = X.twin(_index_zero_np, lambda g, dim, idx: index_fill(g, dim, _T(idx), 0.0))
# ``g`` with zeros where ``mask`` is True
_masked_zero_any = X.twin(lambda g, mask: np.where(mask, 0, g).astype(g.dtype, copy=False),
                          lambda g, mask: masked_fill(g, _T(mask), 0.0))
# the elements of ``g`` where ``mask`` is True
_masked_select_any = X.twin(lambda g, mask: g[mask],
                            lambda g, mask: masked_select(g, _T(mask)))
# zeros of ``mask``'s shape with ``g`` written where it is True
_mask_place_any = X.twin(_mask_place_np, _mask_place_t)
# zeros of ``n`` elements with ``g`` added at ``idx``
_put_add_any = X.twin(_put_add_np, _put_add_t)


# --- in-place forms -----------------------------------------------------------------------------
_inplace("scatter_", scatter)
_inplace("scatter_add_", scatter_add)
_inplace("index_add_", index_add)
_inplace("index_fill_", index_fill)
_inplace("index_copy_", index_copy)
_inplace("masked_scatter_", masked_scatter)


def _masked_fill_(self, mask, value):
    md = _mask(mask, "masked_fill_")
    if md.shape != self._data.shape and not (
            _bcast_ok(self._data.shape, md.shape)
            and np.broadcast_shapes(self._data.shape, md.shape) == self._data.shape):
        _bad_bcast(self, md.shape)
    d = self._data
    if not d.flags.writeable and md.ndim <= d.ndim:
        if overlapping(d):  # an expand: written through, with PyTorch's deprecation warning
            return index_put_(self, (np.broadcast_to(md, d.shape),), value)
    return apply(self, masked_fill, mask, value)


_masked_fill_.__doc__ = "In-place masked_fill; returns self."
op("masked_fill_", function=False)(_masked_fill_)
inplace_of("masked_fill_", "masked_fill")
