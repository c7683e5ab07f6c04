"""Shape ops beyond the basic views: joining (cat, stack), reordering (flip, roll, movedim),
repetition, diagonals and triangles, and the shape ops that are no views (narrow_copy, the
unsafe_ split family, diagflat, diff, fill_diagonal_).  Each backward is written once: ``X.twin`` pairs a NumPy
kernel (arrays) with the differentiable op (Tensors, under ``create_graph``)."""
from __future__ import annotations

import functools


import numpy as np

from .. import _dtype as D
from . import OPS, composite
from .._record import STATE, Tensor, edge_of, record
from . import _dual as X
from ._spec import defop, defview, fp_safe, int64_saved, varargs_method
from .indexing import SelectBackwardBackward0, SliceBackwardBackward0
from .views import permute, reshape, expand
from .._tensor import Size, _dim, channels_last_format

_make = Tensor._make


def _ints(args):
    """``f(1, 2)`` and ``f((1, 2))`` alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        return tuple(int(a) for a in args[0])
    return tuple(int(a) for a in args)


# --- cat / stack ---------------------------------------------------------------------------
def _cat_batched(spec, arrays, params):
    d = params.get("dim", 0)
    return spec.forward(list(arrays), (d + arrays[0].ndim - 1 if d < 0 else d) + 1)


@defop("cat", node="CatBackward0", inputs=("tensors",), saved=("dim",), dims=("dim",),
       method=False, aliases=("concat", "concatenate"), batch=_cat_batched)
def cat(tensors, dim=0):
    """Join tensors along an existing dimension (1-D empty ones skipped); CatBackward0."""
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    # PyTorch's legacy rule: 1-D empty tensors are skipped
    live = [t for t in tensors if t.ndim != 1 or t.shape[0]]
    ref = live[0] if live else tensors[0]
    nd, shape = ref.ndim, ref.shape
    if nd == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    k = _dim(dim, nd)
    for i, t in enumerate(tensors):
        s = t.shape
        if len(s) == nd and s[:k] == shape[:k] and s[k + 1:] == shape[k + 1:] or \
                len(s) == 1 and not s[0]:
            continue
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if t.ndim != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and {t.ndim}")
        j = next(j for j in range(nd) if j != k and s[j] != shape[j])
        raise RuntimeError(f"Sizes of tensors must match except in dimension {k}. Expected size "
                           f"{shape[j]} but got size {s[j]} for tensor number {i} in the list.")
    if not live:
        return np.empty((0,), dtype=ref.dtype)
    r = np.concatenate(live, axis=k)
    if not r.flags.c_contiguous:
        # PyTorch's result is channels-last when every input is, else contiguous (NumPy
        # follows the inputs' layout)
        fmt = channels_last_format(live[0])
        if fmt is None or any(channels_last_format(a) != fmt for a in live[1:]):
            r = np.ascontiguousarray(r)
    return r


@cat.backward
def _(ctx, grad):
    dim = ctx.dim
    lead = (slice(None),) * (dim + grad.ndim if dim < 0 else dim)
    k = len(lead)
    outs, start = [], 0
    for s in ctx.shapes:
        if len(s) == 1 and not s[0]:  # a skipped tensor: PyTorch's gradient is zeros(0)
            outs.append(X.zeros((0,), grad))
            continue
        end = start + s[k]
        outs.append(grad[lead + (slice(start, end),)])
        start = end
    return outs


def _list_jvp(name):
    """The tangent of a list op (cat, stack): the op on the tangents, zeros for the inputs
    that have none."""
    def jvp(ctx, *tangents):
        like = next(t for t in tangents if t is not None)
        return ctx.op(name, [X.zeros(s, like) if t is None else t
                             for t, s in zip(tangents, ctx.shapes)], ctx.dim)
    return jvp


cat.jvp(_list_jvp("cat"))


cat = cat.fn
concat = OPS["concat"]["fn"]
concatenate = OPS["concatenate"]["fn"]


def _stack_batched(spec, arrays, params):
    d = params.get("dim", 0)
    return spec.forward(list(arrays), (d + arrays[0].ndim if d < 0 else d) + 1)


@defop("stack", node="StackBackward0", inputs=("tensors",), saved=("dim",), dims=("dim",),
       method=False, batch=_stack_batched)
def stack(tensors, dim=0):
    """Join same-shaped tensors along a new dimension; StackBackward0."""
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0].shape
    k = _dim(dim, len(s0) + 1)  # PyTorch wraps the dim against the first tensor first
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at "
                               f"entry 0 and {list(t.shape)} at entry {i}")
    # PyTorch's result is contiguous whatever the inputs' layout
    return np.ascontiguousarray(np.stack(tensors, axis=k))


@stack.backward
def _(ctx, grad):
    dim = ctx.dim
    lead = (slice(None),) * (dim + grad.ndim if dim < 0 else dim)
    return [grad[lead + (i,)] for i in range(len(ctx.shapes))]


stack.jvp(_list_jvp("stack"))


stack = stack.fn


def _tensors_arg(tensors, name):
    """``tensors`` checked as PyTorch's TensorList argument (a tuple or list of Tensors),
    without reading their storage (vmap's batched tensors have none)."""
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {D.type_name(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{D.type_name(t)}")


@composite(method=False)
def atleast_1d(*tensors):
    """Tensors with at least one dimension (0-d ones become shape [1])."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    r = [reshape(t, 1) if t.dim() == 0 else t for t in ts]
    return r[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(r)


@composite(method=False)
def atleast_2d(*tensors):
    """Tensors with at least two dimensions (leading size-1 dimensions added)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    r = []
    for t in ts:
        n = t.dim()
        r.append(reshape(t, 1, 1) if n == 0 else t.unsqueeze(0) if n == 1 else t)
    return r[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(r)


@composite(method=False)
def atleast_3d(*tensors):
    """Tensors with at least three dimensions (as NumPy's atleast_3d)."""
    ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
    r = []
    for t in ts:
        n = t.dim()
        if n == 0:
            t = reshape(t, 1, 1, 1)
        elif n == 1:
            t = t.unsqueeze(0).unsqueeze(-1)
        elif n == 2:
            t = t.unsqueeze(-1)
        r.append(t)
    return r[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(r)


@composite(method=False)
def hstack(tensors):
    """Concatenate column-wise (along dim 0 for 1-D tensors, else dim 1)."""
    _tensors_arg(tensors, "hstack")
    ts = atleast_1d(list(tensors))
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1)


@composite(method=False)
def vstack(tensors):
    """Concatenate row-wise after making every tensor at least 2-D."""
    _tensors_arg(tensors, "vstack")
    return cat(atleast_2d(list(tensors)), 0)


row_stack = vstack
composite("row_stack", method=False)(vstack)


@composite(method=False)
def dstack(tensors):
    """Concatenate depth-wise (dim 2) after making every tensor at least 3-D."""
    _tensors_arg(tensors, "dstack")
    return cat(atleast_3d(list(tensors)), 2)


@composite(method=False)
def column_stack(tensors):
    """Stack 1-D tensors as columns, concatenate 2-D ones along dim 1."""
    _tensors_arg(tensors, "column_stack")
    ts = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in tensors]
    return cat(ts, 1)


# --- narrow / select --------------------------------------------------------------------------
def _place_np(g, shape, key, double, saved):
    z = np.zeros(shape, dtype=g.dtype)
    z[key] = g
    return z


def _place_t(g, shape, key, double, saved):
    z = np.zeros(shape, dtype=g._data.dtype)
    z[key] = g._data
    if not (STATE.enabled and g._requires_grad):
        return _make(z)
    return record(z, double((edge_of(g),), saved))


# the gradient of a select/slice view: ``g`` placed at ``key`` in zeros of its base's shape
# (NumPy on arrays; PyTorch's select_backward / slice_backward node ``double`` on Tensors)
_place_any = X.twin(_place_np, _place_t)



def _batch_narrow(spec, arrays, params):
    x = arrays[0]
    return spec.forward(x, _dim(params["dim"], x.ndim - 1) + 1, params["start"], params["length"])


def _int_like(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) or \
        isinstance(v, Tensor) and v._data.ndim == 0 and v._data.dtype.kind in "iu"


def _narrow_args(self, dim, start, length):
    """PyTorch's error for arguments of narrow that are not ints (a 0-d integer tensor
    counts)."""
    if not (_int_like(dim) and _int_like(start) and _int_like(length)):
        raise D.bad_combo("narrow", (_make(self), dim, start, length), None)


# PyTorch's narrow is slice(dim, start, start + length): its node keeps the start wrapped
# into range and the end (expressions of the call's arguments, evaluated in order when
# recording: the start's names it for the end's)
_START = "(_st := (_s + d.shape[dim] if (_s := int(start)) < 0 else _s))"


@defview("narrow", node="SliceBackward0",
         saved=("self_sym_sizes", "dim", f"start={_START}", "end=_st + int(length)", "step=1"),
         batch=_batch_narrow)
def narrow(self, dim, start, length):
    """A view of ``length`` elements from ``start`` along ``dim``; SliceBackward0."""
    if type(dim) is not int or type(start) is not int or type(length) is not int:
        _narrow_args(self, dim, start, length)
    if self.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    k = _dim(dim, self.ndim)
    n = self.shape[k]
    start, length = int(start), int(length)
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return self[(slice(None),) * k + (slice(start, start + length),)]


@narrow.backward
def _(ctx, grad, graph=False):  # (the node's backward itself: its saved values unpacked)
    shape, dim, start, end, step = ctx._saved
    k = dim % len(shape)
    sl = slice(start, end, 1)
    return _place_any(grad, shape, (slice(None),) * k + (sl,), SliceBackwardBackward0,
                      (k, sl, dim, start, end, 1)),


@narrow.jvp
def _(ctx, tangent):
    return narrow(tangent, ctx.dim, ctx.start, ctx.end - ctx.start)


narrow = narrow.fn


def _batch_select(spec, arrays, params):
    x = arrays[0]
    return spec.forward(x, _dim(params["dim"], x.ndim - 1) + 1, params["index"])


@defview("select", node="SelectBackward0", saved=("self_sym_sizes", "dim", "index"),
         batch=_batch_select)
def select(self, dim, index):
    """The slice at ``index`` along ``dim``, that dimension removed (a view); SelectBackward0."""
    if type(dim) is not int:
        dim = D.int_arg(dim, "select", "dim", 2)
    if type(index) is not int:
        index = D.int_arg(index, "select", "index", 3)
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    k = _dim(dim, self.ndim)
    n = self.shape[k]
    i = int(index)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(self.shape)} "
                         f"at dimension {k}")
    return self[(slice(None),) * k + (i + n if i < 0 else i, Ellipsis)]


@select.backward
def _(ctx, grad, graph=False):  # (the node's backward itself: its saved values unpacked)
    shape, dim, index = ctx._saved
    k = dim % len(shape)
    index = int(index)
    i = index + shape[k] if index < 0 else index
    return _place_any(grad, shape, (slice(None),) * k + (i, Ellipsis), SelectBackwardBackward0,
                      (k, i, dim, index)),


@select.jvp
def _(ctx, tangent):
    return select(tangent, ctx.dim, ctx.index)


select = int64_saved(select, "index").fn


# --- reordering -------------------------------------------------------------------------------
@composite(methods=("moveaxis",))
def movedim(input, source, destination):
    """Move dimensions ``source`` to positions ``destination`` (a permute view)."""
    nd = input._data.ndim
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) "
                           f"should contain the same number of dims as destination ({list(dst)} dims)")
    src = [_dim(s, nd) for s in src]
    dst = [_dim(s, nd) for s in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    if nd == 0:  # a 0-d tensor: nothing to move, an alias as in PyTorch (AliasBackward0)
        from .views import alias
        return alias(input)
    order = [None] * nd
    for s, t in zip(src, dst):
        order[t] = s
    rest = iter(i for i in range(nd) if i not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(input, *order) if nd else permute(input)


moveaxis = movedim
composite("moveaxis", method=False)(movedim)


def _int_list(v, name, param):
    """PyTorch's int-list argument (``dims``, ``repeats``, ``shifts``): a tuple or list of
    ints, or one int (as the Tensor method takes it)."""
    if type(v) is tuple:
        for a in v:
            if type(a) is not int:
                break
        else:
            return v
    if isinstance(v, (tuple, list)):
        for i, a in enumerate(v):
            if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
                raise TypeError(f"{name}(): argument '{param}' failed to unpack the object at pos "
                                f"{i + 1} with error \"type must be tuple of ints,but got "
                                f"{D.type_name(a)}\"")
        return tuple(int(a) for a in v)
    if type(v) is int or isinstance(v, np.integer) and not isinstance(v, np.bool_):
        return (int(v),)
    raise TypeError(f"{name}(): argument '{param}' must be tuple of ints, not {D.type_name(v)}")


def _batch_dims(param):
    """Batching rule of an op taking a list of dims ``param``: each moves one to the right."""
    def rule(spec, arrays, params):
        nd = arrays[0].ndim - 1
        p = dict(params)
        p[param] = tuple(_dim(k, nd) + 1 for k in _int_list(p[param], spec.name, param))
        return spec.forward(*arrays, **p)
    return rule


@defop("flip", node="FlipBackward0", saved=("dims",), dim_lists=("dims",), linear=True,
       batch=_batch_dims("dims"))
@fp_safe
def flip(self, dims):
    """A copy with the order of elements along ``dims`` reversed; FlipBackward0."""
    nd = self.ndim
    if not (type(dims) is tuple and len(dims) == 1 and type(dims[0]) is int and
            0 <= dims[0] < nd):  # (one dim in range: taken as it is)
        dims = tuple([_dim(k, nd) for k in _int_list(dims, "flip", "dims")])
        if len(dims) > 1 and len(set(dims)) != len(dims):
            dup = next(k for k in dims if dims.count(k) > 1)
            raise RuntimeError(f"dim {dup} appears multiple times in the list of dims")
    return np.flip(self, dims).copy(order="K") if nd else self.copy()  # (its layout)


@flip.backward
def _(ctx, grad):
    return _flip_any(grad, ctx.dims),


def _flip_bw(node, g, graph):
    """FlipBackward0's backward without a ctx (the formula above, on its one saved value)."""
    return _flip_any(g, node._saved[0]),


flip.node_cls._bw = _flip_bw
flip = varargs_method(flip, "dims").fn


def _np_roll(d, shifts, dims):
    if not dims:
        return np.roll(d.reshape(-1), shifts[0]).reshape(d.shape)
    return np.roll(d, shifts, dims)


def _batch_roll(spec, arrays, params):
    x, dims = arrays[0], params.get("dims")
    if dims is None or dims == () or dims == []:  # each sample rolled flattened
        shifts = params["shifts"]
        s = shifts if isinstance(shifts, (int, np.integer)) else shifts[0]
        return np.roll(x.reshape(len(x), -1), s, 1).reshape(x.shape)
    return _batch_dims("dims")(spec, arrays, params)


@defop("roll", node="RollBackward0", saved=("dims", "shifts"), dim_lists=("dims", "shifts"),
       linear=True, batch=_batch_roll)
@fp_safe
def roll(self, shifts, dims=()):
    """Shift elements cyclically along ``dims`` (of the flattened tensor without);
    RollBackward0."""
    if type(shifts) is int or isinstance(shifts, np.integer) and not isinstance(shifts, bool):
        shifts = (int(shifts),)
    else:
        shifts = _int_list(shifts, "roll", "shifts")
    if type(dims) is int or isinstance(dims, np.integer) and not isinstance(dims, bool):
        dims = (int(dims),)
    elif dims is None:
        dims = ()
    else:
        dims = _int_list(dims, "roll", "dims")
    if len(shifts) != len(dims) and not (len(shifts) == 1 and not dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    return _np_roll(self, shifts, tuple([_dim(k, self.ndim) for k in dims])).copy()


@roll.backward
def _(ctx, grad):
    return _roll_any(grad, tuple([-s for s in ctx.shifts]), ctx.dims),


def _roll_bw(node, g, graph):
    """RollBackward0's backward without a ctx (the formula above)."""
    dims, shifts = node._saved
    return _roll_any(g, tuple([-s for s in shifts]), dims),


roll.node_cls._bw = _roll_bw


roll = int64_saved(roll, "shifts").fn


@composite()
def fliplr(input):
    """Flip along dim 1 (left/right)."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, (1,))


@composite()
def flipud(input):
    """Flip along dim 0 (up/down)."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, (0,))


def _np_rot90(x, k, dims):
    """np.rot90(x, k, dims) as a C-ordered copy, without NumPy's per-call argument handling."""
    a, b = dims
    k %= 4
    if k == 0:
        return x.copy()
    key = [slice(None)] * x.ndim
    if k == 2:
        key[a] = key[b] = slice(None, None, -1)
        return x[tuple(key)].copy()
    perm = list(range(x.ndim))
    perm[a], perm[b] = b, a
    key[b if k == 1 else a] = slice(None, None, -1)
    return x[tuple(key)].transpose(perm).copy()


def _rot90_batched(spec, arrays, params):
    dims = params.get("dims", (0, 1))
    return spec.forward(*arrays, params.get("k", 1), tuple(d + (d >= 0) for d in dims))


@defop("rot90", node="Rot90Backward0", saved=("k", "dims"), linear=True, batch=_rot90_batched)
def rot90(self, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``; Rot90Backward0."""
    D.arg_int(k, "rot90", "k", 2)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
    dims = tuple(_dim(x, self.ndim) for x in dims)
    if dims[0] == dims[1]:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and "
                           f"dim1 = {dims[1]}")
    return _np_rot90(self, int(k), dims)


@rot90.backward
def _(ctx, grad):
    nd = X.data(grad).ndim
    return (_rot90_any(grad, -ctx.k, tuple(_dim(x, nd) for x in ctx.dims)),)


rot90 = int64_saved(rot90, "k").fn


# --- repetition -------------------------------------------------------------------------------
def _batch_repeat(spec, arrays, params):
    x = arrays[0]
    reps = _int_list(params["repeats"], "repeat", "repeats")
    lead = len(reps) - (x.ndim - 1)
    x = x.reshape(x.shape[:1] + (1,) * lead + x.shape[1:]) if lead > 0 else x
    return spec.forward(x, (1,) + reps)


@defop("repeat", node="RepeatBackward0", saved=("repeats", "self_sym_sizes"), function=False,
       dim_lists=("repeats",), linear=True, batch=_batch_repeat)
@fp_safe
def repeat(self, repeats):
    """The tensor tiled ``repeats`` times along each dimension (a copy); RepeatBackward0."""
    reps = _int_list(repeats, "repeat", "repeats")
    if len(reps) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    if reps and min(reps) < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(reps)}: "
                           f"{list(reps)}")
    return X.c_order(np.tile(self.reshape((1,) * (len(reps) - self.ndim) + self.shape), reps))


def _repeat_grad(grad, reps, shape):
    """The gradient of ``repeat(reps)`` of a tensor of ``shape``: the tiles summed."""
    full = (1,) * (len(reps) - len(shape)) + tuple(shape)
    inter = []
    for r, s in zip(reps, full):
        inter += [r, s]
    if 0 in inter:
        return X.zeros(shape, grad)
    return X.sum_dims(grad.reshape(inter), tuple(range(0, 2 * len(reps), 2)),
                      keepdim=False).reshape(shape)


repeat.backward(lambda ctx, grad: (_repeat_grad(grad, ctx.repeats, ctx.self_sym_sizes),))
repeat.node_cls._bw = lambda node, g, graph: (_repeat_grad(g, *node._saved),)
repeat = varargs_method(repeat, "repeats").fn


@composite()
def tile(input, *dims):
    """Like ``repeat``, with missing leading repetitions taken as 1."""
    reps = _ints(dims)
    nd = input._data.ndim
    if len(reps) < nd:
        reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


@composite()
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element repeated ``repeats`` times (along ``dim``, or of the flattened tensor).

    PyTorch's compositions, and so its graph: an int ``repeats`` unsqueezes, expands, clones
    and flattens (UnsqueezeBackward0, ExpandBackward0, CloneBackward0, ViewBackward0); a tensor
    ``repeats`` selects with the repeated indices (IndexSelectBackward0)."""
    if repeats is None:  # torch.repeat_interleave(counts): indices repeated by counts
        return _make(_repeat_counts(input._data, output_size))
    if isinstance(repeats, Tensor):
        return _repeat_interleave_tensor(input, repeats, dim, output_size)
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)):
        raise D.bad_combo("repeat_interleave", (input, repeats),
                          {"dim": dim, "output_size": output_size})
    repeats = int(repeats)
    x = input if dim is not None else input.flatten()
    k = _dim(dim if dim is not None else 0, input.dim())
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    u = x.unsqueeze(k + 1)
    shape = list(u.shape)
    shape[k + 1] = repeats
    if output_size is not None and output_size != shape[k] * repeats:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected "
                           f"{shape[k] * repeats} but got {output_size}")
    return u.expand(*shape).clone(memory_format="torch.contiguous_format").flatten(k, k + 1)


def _repeat_counts(r, output_size):
    """The kernel of ``repeat_interleave(counts)``: index ``i`` repeated ``r[i]`` times, in
    ``r``'s dtype, checked in PyTorch's order."""
    if r.dtype not in (np.int32, np.int64):
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for '
                                  f"'{D.TYPE_NAMES[D.FROM_NP[r.dtype]].replace('Tensor', '')}'")
    if r.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if r.size:
        if output_size is None and (r < 0).any():
            raise RuntimeError("repeats can not be negative")
        if output_size is not None and output_size != int(r.sum()):
            raise RuntimeError("allocated size does not match required size")
        if (r < 0).any():
            raise RuntimeError("repeats can not be negative")
    return np.repeat(np.arange(r.shape[0], dtype=r.dtype), r)


def _repeat_interleave_tensor(input, repeats, dim, output_size):
    """PyTorch's composition: ``repeats`` (one count, or one per slice along ``dim``) turned
    into indices by ``repeat_interleave(counts)``, then ``index_select``."""
    x = input if dim is not None else input.flatten()
    k = 0
    if dim is not None:
        if x.dim() == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        k = _dim(dim, x.dim())
    n = x.shape[k]
    nr = repeats.dim()
    if nr == 0 or (nr == 1 and repeats.shape[0] == 1):
        repeats = repeats.reshape(1).expand(n)
    elif nr == 1:
        if repeats.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.shape[0]} and input.size({k}) = {n}")
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    return x.index_select(k, repeat_interleave(repeats, output_size=output_size))


@composite()
def broadcast_to(input, size):
    """``input`` expanded to ``size`` (a view); ExpandBackward0."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"broadcast_to(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{D.type_name(size)}")
    for i, s in enumerate(size):
        if not isinstance(s, (int, np.integer)):
            raise TypeError(f"broadcast_to(): argument 'size' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{D.type_name(s)}\"")
    return expand(input, tuple(size))


@composite(method=False)
def broadcast_shapes(*shapes):
    """The shape that tensors of ``shapes`` broadcast to."""
    norm = []
    for s in shapes:
        if s is None:  # PyTorch takes None for a 0-d shape
            continue
        if isinstance(s, (int, np.integer)):
            norm.append((int(s),))
        elif isinstance(s, (tuple, list)):
            for i, x in enumerate(s):
                if not isinstance(x, (int, np.integer)):
                    raise TypeError(f"torch.Size() takes an iterable of 'int' (item {i} is "
                                    f"'{D.type_name(x)}')")
            norm.append(tuple(s))
        elif isinstance(s, str):
            raise TypeError("broadcast_shapes(): a shape must be an int or a sequence of ints, "
                            "not str")
        else:
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list "
                               f"of ints, got {s}")
    try:
        return Size(np.broadcast_shapes(*norm))
    except ValueError:
        raise RuntimeError("Shape mismatch: objects cannot be broadcast to a single shape") from None


@composite(method=False)
def broadcast_tensors(*tensors):
    """Every tensor expanded to the common broadcast shape (unchanged ones returned as is)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = ()
    for t in tensors:
        s = t._data.shape
        try:
            shape = np.broadcast_shapes(shape, s)
        except ValueError:
            a, b = shape, s
            n = max(len(a), len(b))
            a2 = (1,) * (n - len(a)) + tuple(a)
            b2 = (1,) * (n - len(b)) + tuple(b)
            for i in range(n - 1, -1, -1):
                if a2[i] != b2[i] and a2[i] != 1 and b2[i] != 1:
                    raise RuntimeError(f"The size of tensor a ({a2[i]}) must match the size of "
                                       f"tensor b ({b2[i]}) at non-singleton dimension {i}") from None
            raise
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


# --- diagonals and triangles ------------------------------------------------------------------
def _np_diag_view(x, offset, d1, d2):
    """A writeable (when ``x`` is) view of the diagonal of ``x`` over dims d1, d2 (last dim)."""
    nd = x.ndim
    if d1 == nd - 2 and d2 == nd - 1 and x.flags.c_contiguous:
        # the last two dims of a C-ordered array: every (cols + 1)-th element of their
        # flattening, from the first on the diagonal (a view, without as_strided's cost)
        r, c = x.shape[-2], x.shape[-1]
        n = max(min(r, c - offset), 0) if offset >= 0 else max(min(r + offset, c), 0)
        start = offset if offset >= 0 else -offset * c
        return x.reshape(x.shape[:-2] + (r * c,))[..., start:start + n * (c + 1):c + 1]
    perm = [i for i in range(nd) if i not in (d1, d2)] + [d1, d2]
    y = x.transpose(perm)
    r, c = y.shape[-2], y.shape[-1]
    if offset >= 0:
        n = max(min(r, c - offset), 0)
        y = y[..., :, min(offset, c):]
    else:
        n = max(min(r + offset, c), 0)
        y = y[..., min(-offset, r):, :]
    st = y.strides
    return np.lib.stride_tricks.as_strided(y, y.shape[:-2] + (n,), st[:-2] + (st[-2] + st[-1],),
                                           writeable=x.flags.writeable)


def _diag_place_np(g, shape, offset, d1, d2, raw1=None, raw2=None):
    z = np.zeros(shape, dtype=g.dtype)
    _np_diag_view(z, offset, d1, d2)[...] = g
    return z


def _diag_place_t(g, shape, offset, d1, d2, raw1, raw2):
    return diagonal_backward(g, shape, offset, raw1, raw2)


# ``g`` placed on the diagonal of zeros of ``shape`` (DiagonalBackward0's gradient; PyTorch's
# diagonal_backward, DiagonalBackwardBackward0, on Tensors)
_diag_place_any = X.twin(_diag_place_np, _diag_place_t)


def _diagonal_args(ndim, offset, dim1, dim2, name="diagonal"):
    D.arg_int(offset, name, "offset", 2)
    if type(dim1) is not int:
        dim1 = D.int_arg(dim1, name, "dim1", 3)
    if type(dim2) is not int:
        dim2 = D.int_arg(dim2, name, "dim2", 4)
    a, b = _dim(dim1, ndim), _dim(dim2, ndim)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return a, b


def _batch_diagonal(spec, arrays, params):
    x = arrays[0]
    n = x.ndim - 1
    p = {"offset": 0, "dim1": 0, "dim2": 1, **params}
    return spec.forward(x, p["offset"], _dim(p["dim1"], n) + 1, _dim(p["dim2"], n) + 1)


def _diagonal_bw(ctx, grad):
    shape = ctx.self_sym_sizes
    n = len(shape)
    return _diag_place_any(grad, shape, ctx.offset, ctx.dim1 % n, ctx.dim2 % n, ctx.dim1,
                           ctx.dim2),


def _diagonal_view_bw(node, grad, graph=False):
    """``_diagonal_bw`` as the view node's backward itself (its saved values unpacked)."""
    shape, offset, dim1, dim2 = node._saved
    n = len(shape)
    return _diag_place_any(grad, shape, offset, dim1 % n, dim2 % n, dim1, dim2),


@defop("diagonal_backward", node="DiagonalBackwardBackward0", inputs=("grad_output",),
       saved=("offset", "dim1", "dim2"), function=False, method=False, linear=True)
def diagonal_backward(grad_output, input_sizes, offset, dim1, dim2):
    """``grad_output`` placed on the diagonal of zeros of ``input_sizes`` (the gradient of
    diagonal); DiagonalBackwardBackward0."""
    n = len(input_sizes)
    return _diag_place_np(grad_output, tuple(input_sizes), offset, dim1 % n, dim2 % n)


@diagonal_backward.backward
def _(ctx, grad):
    n = grad.ndim
    return _diagonal_copy_any(grad, ctx.offset, ctx.dim1 % n, ctx.dim2 % n),


diagonal_backward = int64_saved(diagonal_backward, "offset", "dim1", "dim2").fn
OPS.pop("_diagonal_backward")  # reached through diagonal's gradient only


@defview("diagonal", node="DiagonalBackward0", saved=("self_sym_sizes", "offset", "dim1", "dim2"),
         batch=_batch_diagonal)
def diagonal(self, offset=0, dim1=0, dim2=1):
    """A view of the diagonal over ``dim1``/``dim2`` (moved to the last dim); DiagonalBackward0."""
    a, b = _diagonal_args(self.ndim, offset, dim1, dim2)
    return _np_diag_view(self, offset, a, b)


diagonal.backward(_diagonal_view_bw)


@diagonal.jvp
def _(ctx, tangent):
    return diagonal(tangent, ctx.offset, ctx.dim1, ctx.dim2)


diagonal = int64_saved(diagonal, "offset").fn


@defop("diagonal_copy", node="DiagonalBackward0_copy",
       saved=("self_sym_sizes", "offset", "dim1", "dim2"), method=False,
       linear=True, batch=_batch_diagonal)
def diagonal_copy(self, offset=0, dim1=0, dim2=1):
    """A copy of the diagonal over ``dim1``/``dim2`` (moved to the last dim);
    DiagonalBackward0_copy."""
    a, b = _diagonal_args(self.ndim, offset, dim1, dim2, "diagonal_copy")
    return _np_diag_view(self, offset, a, b).copy()


diagonal_copy.backward(_diagonal_bw)
diagonal_copy = int64_saved(diagonal_copy, "offset").fn


def _embed_shape(shape, offset, d1, d2):
    n = shape[-1] + abs(offset)
    out = list(shape[:-1])
    for k in sorted((d1, d2)):
        out.insert(k, n)
    return tuple(out)


def _diag_embed_batched(spec, arrays, params):
    p = {"dim1": -2, "dim2": -1, **params}
    for k in ("dim1", "dim2"):
        p[k] += p[k] >= 0
    return spec.forward(*arrays, **p)


@defop("diag_embed", node="DiagEmbedBackward0", saved=("offset", "dim1", "dim2"), linear=True,
       batch=_diag_embed_batched)
def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """Tensors whose diagonals (over ``dim1``/``dim2``) hold the last dim of ``input``;
    DiagEmbedBackward0."""
    D.arg_int(offset, "diag_embed", "offset", 2)
    nd = self.ndim + 1
    a, b = _dim(dim1, nd), _dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    z = np.zeros(_embed_shape(self.shape, offset, a, b), dtype=self.dtype)
    _np_diag_view(z, offset, a, b)[...] = self
    return z


@diag_embed.backward
def _(ctx, grad):
    nd, d1, d2 = grad.ndim, ctx.dim1, ctx.dim2
    return (_diagonal_copy_any(grad, ctx.offset, d1 + nd if d1 < 0 else d1,
                               d2 + nd if d2 < 0 else d2),)


diag_embed = int64_saved(diag_embed, "offset").fn


@composite()
def diag(input, diagonal=0):
    """A 1-D tensor as a diagonal matrix (diag_embed), or a copy of a matrix's diagonal
    (diagonal_copy), as PyTorch composes it."""
    n = input._data.ndim
    if n == 1:
        return diag_embed(input, diagonal, -2, -1)  # PyTorch's dims (the node shows them)
    if n != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {n}D")
    return diagonal_copy(input, diagonal, 0, 1)


@functools.lru_cache(maxsize=256)
def _tri_mask(rows, cols, k, lower):
    """Where tril (``lower``) / triu with diagonal ``k`` keeps the elements (cached: NumPy's
    tril builds it on every call)."""
    return np.tri(rows, cols, k, dtype=bool) if lower else ~np.tri(rows, cols, k - 1, dtype=bool)


def _np_tril(x, k):
    return np.where(_tri_mask(x.shape[-2], x.shape[-1], k, True), x, x.dtype.type(0))


def _np_triu(x, k):
    return np.where(_tri_mask(x.shape[-2], x.shape[-1], k, False), x, x.dtype.type(0))


def _tri(name, np_fn, doc):
    """tril / triu: ``np_fn`` on the last two dims (a leading batch axis passes through), its
    own backward (the op is linear)."""
    def forward(self, diagonal=0):
        D.arg_int(diagonal, name, "diagonal", 2)
        if self.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        return np_fn(self, int(diagonal))

    forward.__name__ = forward.__qualname__ = name
    forward.__module__ = __name__
    forward.__doc__ = doc
    spec = int64_saved(defop(name, node=name.capitalize() + "Backward0", saved=("diagonal",),
                             linear=True, batch=lambda spec, arrays, p: spec.forward(*arrays, **p))
                       (forward), "diagonal")
    kernel = X.twin(np_fn, spec.fn)
    spec.backward(lambda ctx, grad: (kernel(grad, ctx.diagonal),))
    return spec.fn


tril = _tri("tril", _np_tril, "The lower triangle (on and below diagonal ``diagonal``) of the "
            "last two dims; TrilBackward0.")
triu = _tri("triu", _np_triu, "The upper triangle (on and above diagonal ``diagonal``) of the "
            "last two dims; TriuBackward0.")


# the backward kernels: NumPy on arrays, the recorded op on Tensors (create_graph)
_flip_any = X.twin(lambda g, dims: np.flip(g, dims).copy(), lambda g, dims: flip(g, dims))
_roll_any = X.twin(_np_roll, roll)
_rot90_any = X.twin(_np_rot90, lambda g, k, dims: rot90(g, k, dims))
_diagonal_copy_any = X.twin(lambda g, offset, d1, d2: _np_diag_view(g, offset, d1, d2).copy(),
                            lambda g, offset, d1, d2: diagonal(g, offset, d1, d2).clone())


@composite()
def ravel(input):
    """The elements as a 1-D tensor (a view when possible): PyTorch's
    ``contiguous().view(-1)`` (CloneBackward0 first when the input is not contiguous)."""
    return input.contiguous().view(-1)


from .. import _tensor as _tensor_module  # noqa: E402

# autograd's batched grad and jacobians call it (the core imports nothing above itself)
_tensor_module.LATE.stack = stack


# --- the shape ops that are no views: narrow_copy, the unsafe_ split family (pieces that share
# memory with the input without being views), diagflat, diff, fill_diagonal_ -----------------
from . import op  # noqa: E402
from ._spec import batch_along, defpieces, front  # noqa: E402
from .._record import Node  # noqa: E402
from .views import _pieces as _pieces_of, _split_sizes_of, checked_split_sizes  # noqa: E402




def declared_dual(spec, impl):
    """``dual`` for declared op ``spec``: ``impl(p, input, ...)`` (checking the arguments
    with PyTorch's positions, then calling ``spec.declared``) becomes its public function and
    its Tensor method."""
    def function(input, *args, **kwargs):
        return impl(1, input, *args, **kwargs)

    def method(self, *args, **kwargs):
        return impl(0, self, *args, **kwargs)

    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = impl.__doc__
    method.__module__ = impl.__module__
    front(spec, function)
    op("_" + spec.name + "_method", function=False, method=False, methods=(spec.name,))(method)
    return function


def dual(name, impl, composite=False):
    """Register ``impl(p, input, ...)`` as ``dyngrad.<name>`` (``p`` = 1: argument positions
    count the input) and as ``Tensor.<name>`` (``p`` = 0), so type errors name PyTorch's
    positions for each form; ``composite``: the op is one (see ``ops.composite``)."""
    def function(input, *args, **kwargs):
        return impl(1, input, *args, **kwargs)

    def method(self, *args, **kwargs):
        return impl(0, self, *args, **kwargs)

    function.__name__ = function.__qualname__ = method.__name__ = method.__qualname__ = name
    function.__doc__ = method.__doc__ = impl.__doc__
    # (registered as the implementing module's op: cov is statistics', not this module's)
    function.__module__ = method.__module__ = impl.__module__
    op(name, method=False, composite=composite)(function)
    op("_" + name + "_method", function=False, method=False, methods=(name,))(method)
    return function


# --- narrow_copy -----------------------------------------------------------------------------
@defop("narrow_copy", node="NarrowCopyBackward0",
       saved=("self_sym_sizes", "dim", "start", "length"), linear=True, method=False,
       batch=batch_along("dim"))
@fp_safe
def narrow_copy(self, dim, start, length):
    """A copy of ``length`` elements from ``start`` along ``dim``; NarrowCopyBackward0."""
    if self.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if dim >= self.ndim:  # PyTorch's size lookup asserts before the dim is wrapped
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.  (Could this error message be improved?  If so, "
                           "please report an enhancement request to PyTorch.)")
    k = _dim(dim, self.ndim)
    n = self.shape[k]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if length < 0 or start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return self[(slice(None),) * k + (slice(start, start + length),)].copy()


@narrow_copy.backward
def _(ctx, grad):
    shape, dim, start, length = ctx.self_sym_sizes, ctx.dim, ctx.start, ctx.length
    k = _dim(dim, len(shape))
    if start < 0 and start + length == 0 and length:
        # PyTorch's backward slices [start, start + length) with the start as given: a
        # negative start whose slice reaches the end selects nothing there
        raise RuntimeError(f"The size of tensor a (0) must match the size of tensor b "
                           f"({length}) at non-singleton dimension {k}")
    return _narrow_place_any(grad, shape, k, start % shape[k] if start < 0 else start,
                             length),


int64_saved(narrow_copy, "start")


def _narrow_place_np(g, shape, dim, start, length):
    r = np.zeros(shape, g.dtype)
    r[(slice(None),) * dim + (slice(start, start + length),)] = g
    return r


def _narrow_place_t(g, shape, dim, start, length):
    parts = []
    before = shape[:dim] + (start,) + shape[dim + 1:]
    after = shape[:dim] + (shape[dim] - start - length,) + shape[dim + 1:]
    if start:
        parts.append(X.zeros(before, g))
    parts.append(g)
    if after[dim]:
        parts.append(X.zeros(after, g))
    return cat(parts, dim) if len(parts) > 1 else g.clone()


# ``g`` placed at [start, start + length) along ``dim`` of zeros of ``shape``: NumPy on arrays,
# PyTorch's recorded composition (zeros joined by CatBackward0) on Tensors
_narrow_place_any = X.twin(_narrow_place_np, _narrow_place_t)


def _narrow_copy(p, input, dim, start, length):
    """A copy of ``length`` elements from ``start`` along ``dim``; NarrowCopyBackward0."""
    if type(dim) is not int or type(start) is not int or type(length) is not int:
        dim = D.int_arg(dim, "narrow_copy", "dim", 1 + p)
        start = D.int_arg(start, "narrow_copy", "start", 2 + p)
        length = D.int_arg(length, "narrow_copy", "length", 3 + p)
    return _narrow_copy_spec.declared(input, dim, start, length)


_narrow_copy_spec = narrow_copy
narrow_copy = declared_dual(narrow_copy, _narrow_copy)


# --- unsafe_split / unsafe_chunk / unsafe_split_with_sizes -----------------------------------
def _batch_pieces(spec, arrays, params):
    """A leading batch axis: the same pieces of every sample (``dim`` moved past it)."""
    x = arrays[0]
    sizes = params["split_size" if "split_size" in params else "split_sizes"]
    return spec.forward(x, sizes, _dim(params.get("dim", 0), x.ndim - 1) + 1)


@defpieces("unsafe_split", node="UnsafeSplitBackward0",
           saved=("dim", "self_sym_sizes", "split_size"), batch=_batch_pieces)
def _unsafe_split_spec(self, split_size, dim):
    """split's pieces without view tracking: equal sizes along ``dim`` (the last may be
    smaller); UnsafeSplitBackward0."""
    if self.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    k = _dim(dim, self.ndim)
    return _pieces_of(self, _split_sizes_of(self.shape[k], split_size), k)


@defpieces("unsafe_split_with_sizes", node="UnsafeSplitWithSizesBackward0",
           saved=("dim", "self_sym_sizes", "split_sizes"), batch=_batch_pieces)
def _unsafe_split_with_sizes_spec(self, split_sizes, dim):
    """split_with_sizes' pieces without view tracking; UnsafeSplitWithSizesBackward0."""
    sizes, k = checked_split_sizes(self.shape, split_sizes, dim)
    return _pieces_of(self, sizes, k)


def _pieces_grad(ctx, grads, sizes):
    """The pieces' gradients joined along the split dim, zeros where none arrived."""
    shape = ctx.self_sym_sizes
    k = _dim(ctx.dim, len(shape))
    like = next(g for g in grads if g is not None)
    return X.cat([g if g is not None else X.zeros(shape[:k] + (n,) + shape[k + 1:], like)
                  for g, n in zip(grads, sizes)], k),


def _pieces_tangent(t, sizes, dim):
    return _pieces_of(t, sizes, _dim(dim, t.dim()))


@_unsafe_split_spec.backward
def _(ctx, grads):
    n, ss = ctx.self_sym_sizes[_dim(ctx.dim, len(ctx.self_sym_sizes))], ctx.split_size
    return _pieces_grad(ctx, grads, _split_sizes_of(n, ss))


@_unsafe_split_spec.jvp
def _(ctx, t):
    n = ctx.self_sym_sizes[_dim(ctx.dim, len(ctx.self_sym_sizes))]
    return [p.contiguous() for p in _pieces_tangent(t, _split_sizes_of(n, ctx.split_size),
                                                    ctx.dim)]


@_unsafe_split_with_sizes_spec.backward
def _(ctx, grads):
    return _pieces_grad(ctx, grads, ctx.split_sizes)


@_unsafe_split_with_sizes_spec.jvp
def _(ctx, t):
    return [p.contiguous() for p in _pieces_tangent(t, ctx.split_sizes, ctx.dim)]


def _unsafe_split(p, tensor, split_size, dim=0):
    """split's pieces without view tracking (in-place changes of them are not checked);
    UnsafeSplitBackward0."""
    split_size = D.int_arg(split_size, "unsafe_split", "split_size", 1 + p)
    dim = D.int_arg(dim, "unsafe_split", "dim", 2 + p)
    return _unsafe_split_spec.declared(_tensor_arg("unsafe_split", tensor), split_size, dim)


def _unsafe_split_with_sizes(p, input, split_sizes, dim=0):
    """split_with_sizes' pieces without view tracking; UnsafeSplitWithSizesBackward0."""
    fn = "unsafe_split_with_sizes"
    if not isinstance(split_sizes, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'split_sizes' (position {1 + p}) must be tuple of "
                        f"ints, not {D.type_name(split_sizes)}")
    for i, s in enumerate(split_sizes):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{fn}(): argument 'split_sizes' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{D.type_name(s)}\"")
    dim = D.int_arg(dim, fn, "dim", 2 + p)
    return _unsafe_split_with_sizes_spec.declared(_tensor_arg(fn, input),
                                                  [int(s) for s in split_sizes], dim)


def _tensor_arg(fn, v):
    if not isinstance(v, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(v)}")
    return v


def _unsafe_chunk(p, input, chunks, dim=0):
    """chunk's pieces without view tracking; UnsafeSplitBackward0."""
    chunks = D.int_arg(chunks, "unsafe_chunk", "chunks", 1 + p)
    dim = D.int_arg(dim, "unsafe_chunk", "dim", 2 + p)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    k = _dim(dim, d.ndim)
    n = d.shape[k]
    if n == 0:  # PyTorch: ``chunks`` empty pieces (UnsafeSplitWithSizesBackward0)
        return _unsafe_split_with_sizes(p, input, [0] * chunks, dim)
    return _unsafe_split(p, input, max(-(-n // chunks), 1), dim)


unsafe_split = declared_dual(_unsafe_split_spec, _unsafe_split)
unsafe_split_with_sizes = declared_dual(_unsafe_split_with_sizes_spec, _unsafe_split_with_sizes)
unsafe_chunk = dual("unsafe_chunk", _unsafe_chunk, composite=True)


# --- diagflat --------------------------------------------------------------------------------
def _diagflat(p, input, offset=0):
    """The flattened input as the ``offset`` diagonal of a square matrix:
    ``input.contiguous().view(-1)`` under DiagEmbedBackward0."""
    offset = D.int_arg(offset, "diagflat", "offset", 1 + p)
    # methods, so that vmap's batched tensors dispatch each part to its batching rule
    return input.contiguous().view(-1).diag_embed(offset, -2, -1)  # PyTorch's dims


diagflat = dual("diagflat", _diagflat, composite=True)


# --- diff ------------------------------------------------------------------------------------
def _diff_compatible(input, other, dim, name):
    if other is None:
        return
    if not isinstance(other, Tensor):
        raise TypeError(f"diff(): argument '{name}' must be Tensor, not {D.type_name(other)}")
    nd = input.dim()
    k = _dim(dim, nd)
    if other.dim() != nd:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(nd):
        if i != k and other.shape[i] != input.shape[i]:
            raise RuntimeError(
                f"diff expects the shape of tensor to prepend or append to match that of input "
                f"except along the differencing dimension; input.size({i}) = "
                f"{input.shape[i]}, but got tensor.size({i}) = {other.shape[i]}")


def _diff_n(x, n, dim):
    # methods, so that vmap's batched tensors dispatch each part to its batching rule
    if n == 0:
        from .._factories import zeros_like
        return zeros_like(x).copy_(x)  # CopyBackwards, as PyTorch's
    size = x.shape[_dim(dim, x.dim())]
    out_len = size - 1
    n = min(n, size)
    boolean = x.dtype == D.bool_
    r = x
    for _ in range(n):
        hi, lo = r.narrow(dim, 1, out_len), r.narrow(dim, 0, out_len)
        r = hi.logical_xor(lo) if boolean else hi.sub(lo)
        out_len -= 1
    return r


def _diff(p, input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (``prepend``/``append`` concatenated first):
    differences of narrow slices, as PyTorch composes it."""
    n = D.int_arg(n, "diff", "n", 1 + p)
    dim = D.int_arg(dim, "diff", "dim", 2 + p)
    if input.dim() < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    _diff_compatible(input, prepend, dim, "prepend")
    _diff_compatible(input, append, dim, "append")
    if (prepend is None and append is None) or n == 0:
        return _diff_n(input, n, dim)
    parts = ([prepend] if prepend is not None else []) + [input] + \
        ([append] if append is not None else [])
    return _diff_n(cat(parts, dim), n, dim)


diff = dual("diff", _diff, composite=True)


# --- fill_diagonal_ --------------------------------------------------------------------------
def _diag_strided(x, count, offset_rows):
    """The ``count`` elements of ndarray ``x`` from row ``offset_rows`` on, stepping by the sum
    of the strides (PyTorch's as_strided of fill_diagonal_)."""
    start = x[offset_rows:] if offset_rows else x
    return np.lib.stride_tricks.as_strided(start, (count,), (sum(x.strides),),
                                           writeable=x.flags.writeable)


def _diag_positions(x, count, first, step):
    """The same elements of a (contiguous) Tensor, as a view: every ``step``-th element of its
    flattening from ``first``."""
    return x.reshape(-1)[first:first + step * (count - 1) + 1:step] if count else \
        x.reshape(-1)[:0]


class _DiagRegionBackward(Node):
    """History of the diagonal view fill_diagonal_ writes through (replaced by the fill)."""
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        fn, shape = self._saved
        z = X.zeros(shape, g)
        X.assign(fn(z), g)
        return z,


_DiagRegionBackward.__name__ = _DiagRegionBackward.__qualname__ = "AsStridedBackward0"
# forward mode: the same diagonal of the base's tangent
_DiagRegionBackward._fw_rule = lambda node, tangents: [
    None if tangents[0] is None else node._saved[0](tangents[0].contiguous()).contiguous()]


def _diag_view(self, count, offset_rows):
    from .views import make_view
    d = self._data
    # where the elements lie in a contiguous layout: the first one, and the step between them
    cstep = sum(int(np.prod(d.shape[i + 1:])) for i in range(d.ndim))
    cfirst = offset_rows * int(np.prod(d.shape[1:])) if offset_rows else 0

    def fn(x, count=count, offset_rows=offset_rows, cfirst=cfirst, cstep=cstep):
        if isinstance(x, Tensor):
            return _diag_positions(x, count, cfirst, cstep)
        return _diag_strided(x, count, offset_rows)

    return make_view(self, _diag_strided(d, count, offset_rows), _DiagRegionBackward,
                     (fn, d.shape), fn)


@composite(function=False)
def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all indices equal) in place; ``wrap`` restarts it every
    ``width + 1`` rows of a tall matrix.  Composed as PyTorch's: ``fill_`` through a
    diagonal view, so the history becomes CopySlices (whose forward-mode rule gives the
    tangent its zero diagonal); vmap fills every sample's diagonal at once (its own rule)."""
    if not isinstance(wrap, (bool, np.bool_)):
        raise TypeError(f"fill_diagonal_(): argument 'wrap' must be bool, not {D.type_name(wrap)}")
    if not isinstance(fill_value, (int, float, complex, np.number, np.bool_)) and not (
            isinstance(fill_value, Tensor) and fill_value._data.ndim == 0):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, "
                        f"not {D.type_name(fill_value)}")
    d = self._data
    nd = d.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = d.shape[0], d.shape[1]
    if nd > 2 and any(s != height for s in d.shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    size = min(height, width)
    _diag_view(self, size, 0).fill_(fill_value)
    if wrap and nd == 2 and height > width + 1:
        step = width + 1
        wrap_size = (d.size + step - 1) // step - size
        _diag_view(self, wrap_size, width + 1).fill_(fill_value)
    return self
