"""View ops: results share storage and the version counter with their base, remember how to
re-create themselves from it (for in-place ops on views), and record PyTorch's view nodes.
The split family (split, chunk, unbind, tensor_split, hsplit...) gives several views of one
tensor."""
from __future__ import annotations

import math
import weakref

import numpy as np

from . import composite
from .. import _dtype as D
from .._record import RECORD_HOOKS, STATE, Node, Tensor, edge_of, notify, record, sum_to
from .._tensor import Size, _dim, _storage_root
from . import _dual as X
from ._spec import batch_aligned, defop, defview, front, pair_public

_make = Tensor._make
_weakref = weakref.ref
# view creation kinds (Tensor._creation; None is PyTorch's CreationMeta.DEFAULT)
NO_GRAD_MODE = "no_grad"
MULTI_OUTPUT_NODE = "multi_output"


def make_view(src, data, node_cls=None, saved=(), fn=None):
    """Wrap ``data`` (an ndarray view of ``src._data``) as a view of ``src``.

    ``fn(x)`` re-creates the view from its immediate source (an ndarray or a Tensor); the
    chain from the root base is kept so in-place ops on the view can rewrite the base.
    """
    t = _make(data)
    t._vc = src._vc
    base = src._base
    tracked = fn is not None
    if base is None:
        base = t._base = src
        if tracked:
            t._view_fn = (fn,)
            _register_view(base, t)
    else:
        t._base = base
        prev = src._view_fn
        if prev is not None and tracked:
            t._view_fn = prev + (fn,)
            _register_view(base, t)
        else:
            tracked = False
    enabled = STATE.enabled
    if tracked:
        # PyTorch's CreationMeta: a view made under no_grad (or of such a view, or of an
        # output of a multi-view op) refuses in-place changes while recording
        if not enabled:
            t._creation = NO_GRAD_MODE
            if src._requires_grad:
                # a view made under no_grad still requires grad, as in PyTorch, but has no history
                t._requires_grad = True
                t._nograd_view = True
        elif src._creation is not None:
            t._creation = src._creation
    if enabled and node_cls is not None and src._requires_grad:
        t._requires_grad = True
        t._grad_fn = node_cls((edge_of(src),), saved, t._data.dtype)
        if RECORD_HOOKS:
            notify(t)
    return t


def _register_view(base, view):
    """Remember ``view`` (weakly) beside the version counter it shares with its base (and
    with detach()ed aliases), so any in-place change through any of them can give it a fresh
    history, as PyTorch regenerates a view's grad_fn when its version moved."""
    c = view._vc
    if len(c) == 1:
        c.append([_weakref(view)])
        return
    views = c[1]
    views.append(_weakref(view))
    if len(views) % 64 == 0:
        c[1] = [r for r in views if r() is not None]


def live_views(t):
    """The live views sharing ``t``'s version counter."""
    c = t._vc
    if len(c) < 2:
        return []
    out = [v for v in (r() for r in c[1]) if v is not None]
    c[1] = [_weakref(v) for v in out]
    return out


def apply_chain(x, chain):
    for f in chain:
        x = f(x)
    return x


# --- reshape family -------------------------------------------------------------------
class UnsafeViewBackward0Reshape(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return g.reshape(self._saved[0]),


def _infer_shape(shape, numel, what="view"):
    """The shape ``shape`` (ints, one of them -1 at most) gives ``numel`` elements, or
    PyTorch's error."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    shape = tuple(map(int, shape))
    if min(shape, default=0) >= 0:  # nothing to infer (the common call)
        if math.prod(shape) != numel:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        return shape
    neg = []
    for i, s in enumerate(shape):  # PyTorch's errors in the order of the dims
        if s == -1:
            if neg:
                raise RuntimeError("only one dimension can be inferred")
            neg.append(i)
        elif s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 and numel == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} "
                               f"because the unspecified dimension size -1 can be any value "
                               f"and is ambiguous")
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _batch_reshape(spec, arrays, params):
    """Batching rule of view/reshape: each sample takes the shape (the batch axis first)."""
    x = arrays[0]
    new = _infer_shape(tuple(params.get("shape", ())), x[0].size if len(x) else 0)
    return x.reshape(x.shape[:1] + new)


def _dtype_view(input, r):
    """``view(dtype)``: the same bytes read as another dtype (no history, as in PyTorch)."""
    return _make(r)


@defview("view", node="ViewBackward0", saved=("self_sym_sizes",), function=False,
         not_view=_dtype_view, batch=_batch_reshape)
def view(self, *shape):
    """The same data with another shape (no copy); ViewBackward0."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list, Size)):
        return self.view(D.to_dtype(shape[0]).np), None
    v = self.view()
    try:
        v.shape = _infer_shape(shape, self.size)
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
    return v


@view.backward
def _(ctx, grad):
    return grad.reshape(ctx.self_sym_sizes),


def _reshape_copy(input, r):
    """reshape where no view can be made: PyTorch's _unsafe_view(clone()) (CloneBackward0
    under UnsafeViewBackward0) when recording, else the copy."""
    if STATE.enabled and input._requires_grad:
        return unsafe_view(input.clone(), r.shape)
    return _make(r)


@defview("reshape", node=("ViewBackward0", "ReshapeAliasBackward0"),
         saved=(("self_sym_sizes",), ("self_sym_sizes",)), not_view=_reshape_copy,
         batch=_batch_reshape)
def reshape(self, *shape):
    """The data with another shape: a view when possible (ViewBackward0 for contiguous input,
    ReshapeAliasBackward0 otherwise, as PyTorch names them), else a copy (UnsafeViewBackward0)."""
    new = _infer_shape(shape, self.size)
    v = self.view()
    if new != self.shape:
        try:
            v.shape = new
        except AttributeError:
            return self.reshape(new), None
    return v if self.flags.c_contiguous else (v, 1)


def _out_shape(node):
    """The shape of the output whose tangent forward mode asks ``node``'s rule for (a view
    node keeps only its input's sizes, as PyTorch's)."""
    return tuple(node.__dict__["_fw_pending"][0]._data.shape)


@view.jvp
def _(ctx, tangent):
    return tangent.reshape(_out_shape(ctx))


reshape.backward(view.bw)
reshape.jvp(view.fw)
view = view.fn
reshape = reshape.fn


def unsafe_view(t, shape):
    """PyTorch's ``_unsafe_view`` of a fresh result: its data with another shape, recorded as
    UnsafeViewBackward0 (not a view: nothing else shares the data)."""
    r = t._data.reshape(shape)
    if r.base is not None and not r.flags.writeable:
        r = r.copy()
    if STATE.enabled and t._requires_grad:
        return record(r, UnsafeViewBackward0Reshape((edge_of(t),), (t._data.shape,)))
    return _make(r)


UnsafeViewBackward0Reshape._fw_rule = lambda node, tangents: [tangents[0].reshape(_out_shape(node))]
UnsafeViewBackward0Reshape.__name__ = "UnsafeViewBackward0"
UnsafeViewBackward0Reshape.__qualname__ = "UnsafeViewBackward0"


@composite()
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one (the tensor itself when nothing merges)."""
    d = input._data
    if d.ndim == 0:
        return reshape(input, 1)
    s = _dim(start_dim, d.ndim)
    e = _dim(end_dim, d.ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    n = 1
    for k in d.shape[s:e + 1]:
        n *= k
    return reshape(input, d.shape[:s] + (n,) + d.shape[e + 1:])


@composite()
def unflatten(input, dim, sizes):
    d = input._data
    k = _dim(dim, d.ndim)
    given = tuple(sizes)
    if not given:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        sizes = _infer_shape(given, d.shape[k])
    except RuntimeError as e:  # PyTorch's messages
        if str(e).startswith("shape '"):
            raise RuntimeError(f"unflatten: Provided sizes {list(given)} don't multiply up to "
                               f"the size of dim {k} ({d.shape[k]}) in the input "
                               f"tensor") from None
        raise RuntimeError(f"unflatten got an unexpected error:\n{e}") from None
    return reshape(input, d.shape[:k] + tuple(sizes) + d.shape[k + 1:])


@composite(function=False)
def view_as(input, other):
    return view(input, other._data.shape)


@composite(function=False)
def reshape_as(input, other):
    return reshape(input, other._data.shape)


def _batch_unsqueeze(spec, arrays, params):
    x = arrays[0]
    return np.expand_dims(x, _dim(params["dim"], x.ndim) + 1)


@defview("unsqueeze", node="UnsqueezeBackward0", saved=("dim",), batch=_batch_unsqueeze)
def unsqueeze(self, dim):
    """Insert a size-1 dimension at ``dim``; UnsqueezeBackward0."""
    return np.expand_dims(self, _dim(dim, self.ndim + 1))


@unsqueeze.backward
def _(ctx, grad):
    return grad.squeeze(ctx.dim),


@unsqueeze.jvp
def _(ctx, tangent):
    return tangent.unsqueeze(ctx.dim)


def _batch_squeeze(spec, arrays, params):
    x = arrays[0]
    dim = params.get("dim")
    if dim is None:
        return x.reshape(x.shape[:1] + tuple(s for s in x.shape[1:] if s != 1))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = {_dim(k, x.ndim - 1) + 1 for k in dims}
    return x.reshape(tuple(s for i, s in enumerate(x.shape) if not (i in axes and s == 1)))


@defview("squeeze", node=("SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2"),
         saved=(("self_sym_sizes",), ("self_sym_sizes", "dim"), ("self_sym_sizes", "dim")),
         batch=_batch_squeeze)
def squeeze(self, dim=None):
    """Remove size-1 dimensions (all, or those in ``dim``): SqueezeBackward0/1/2 for no dim,
    one dim, a list of dims."""
    if dim is None:
        return self.reshape(tuple(s for s in self.shape if s != 1))
    many = isinstance(dim, (tuple, list))
    axes = {_dim(k, self.ndim) for k in (dim if many else (dim,))}
    new = tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1))
    return self.reshape(new), 2 if many else 1


@squeeze.backward
def _(ctx, grad):
    return grad.reshape(ctx.self_sym_sizes),


@squeeze.jvp
def _(ctx, tangent):
    dim = ctx.dim  # (None: squeeze() keeps no dim)
    return tangent.squeeze() if dim is None else tangent.squeeze(dim)


def _batch_t(spec, arrays, params):
    x = arrays[0]
    return x.swapaxes(1, 2) if x.ndim == 3 else x


@defview("t", node="TBackward0", batch=_batch_t)
def t(self):
    """Transpose of a matrix (a 0-D or 1-D tensor is returned as is); TBackward0."""
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self.T


@t.backward
def _(ctx, grad, graph=False):  # (the node's backward itself: on nn.Linear's path)
    return (grad.T if grad.__class__ is np.ndarray else t(grad)),


@t.jvp
def _(ctx, tangent):
    return tangent.t()


def _batch_transpose(spec, arrays, params):
    x = arrays[0]
    n = x.ndim - 1
    return spec.forward(x, _dim(params["dim0"], n) + 1 if n else 0,
                        _dim(params["dim1"], n) + 1 if n else 0)


@defview("transpose", node="TransposeBackward0", saved=("dim0", "dim1"),
         methods=("swapaxes", "swapdims"), batch=_batch_transpose)
def transpose(self, dim0, dim1):
    """Swap two dimensions (a view); TransposeBackward0."""
    a, b = _dim(dim0, self.ndim), _dim(dim1, self.ndim)
    return self.view() if self.ndim == 0 else self.swapaxes(a, b)


@transpose.backward
def _(ctx, grad):
    return grad.swapaxes(ctx.dim0, ctx.dim1) if grad.ndim else grad,


@transpose.jvp
def _(ctx, tangent):
    return tangent.transpose(ctx.dim0, ctx.dim1)


def _batch_permute(spec, arrays, params):
    x = arrays[0]
    dims = tuple(params.get("dims", ()))
    return x.transpose((0,) + tuple(_dim(k, x.ndim - 1) + 1 for k in dims))


@defview("permute", node="PermuteBackward0", saved=("dims",), batch=_batch_permute)
def permute(self, *dims):
    """Reorder dimensions (a view); PermuteBackward0."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list, Size)):
        dims = tuple(dims[0])
    if len(dims) != self.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {self.ndim} is not equal to len(dims) = {len(dims)}")
    perm = tuple(_dim(k, self.ndim) for k in dims)
    if len(set(perm)) != len(perm):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return self.transpose(perm)


@permute.backward
def _(ctx, grad):
    n = grad.ndim
    inv = [0] * n  # the inverse permutation
    for i, d in enumerate(ctx.dims):
        inv[d % n] = i
    return _permute_of(grad, tuple(inv)),


@permute.jvp
def _(ctx, tangent):
    return tangent.permute(ctx.dims)


t, transpose, permute, unsqueeze, squeeze = t.fn, transpose.fn, permute.fn, unsqueeze.fn, squeeze.fn
_permute_of = X.twin(lambda g, p: g.transpose(p), permute)
swapaxes = swapdims = transpose


_WARNED: set = set()


def _warn_once(key, message):
    """A deprecation PyTorch reports once per process."""
    if key not in _WARNED:
        _WARNED.add(key)
        from .._warn import warn
        warn(message)


def _T(self):
    d = self._data
    if d.ndim == 2:
        return permute(self, 1, 0)
    if d.ndim == 0:
        _warn_once("T0", "Tensor.T is deprecated on 0-D tensors. This function is the identity "
                         "in these cases.")
    else:
        _warn_once("T", "The use of `x.T` on tensors of dimension other than 2 to reverse their "
                        "shape is deprecated and it will throw an error in a future release. "
                        "Consider `x.mT` to transpose batches of matrices or "
                        "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                        "dimensions of a tensor.")
    return permute(self, *reversed(range(d.ndim)))


def _matrices_only(self, what, batches=True):
    """PyTorch's error for mT/mH/H/adjoint() of a tensor that is not (a batch of) matrices;
    True for a 0-d tensor, which they return as it is (conjugated for mH/H/adjoint())."""
    n = self.dim()
    if n == 0:
        name = what if what == "adjoint()" else "Tensor." + what
        hint = "This function is the identity in these cases." if what == "mT" else \
            "Consider using x.conj()."
        _warn_once(what, f"{name} is deprecated on 0-D tensors. {hint}")
        return True
    if n < 2 or (not batches and n != 2):
        kind = "matrices or batches of matrices" if batches else "matrices (2-D tensors)"
        tail = " For batches of matrices, consider using tensor.mH" if n > 2 else ""
        raise RuntimeError(f"tensor.{what} is only supported on {kind}. Got {n}-D "
                           f"tensor.{tail}")
    return False


def _mT(self):
    if _matrices_only(self, "mT"):
        return self
    return transpose(self, -2, -1)


def _adjoint(self, what="adjoint()", batches=True):
    """The conjugate transpose of the last two dims (a transpose view, conjugated when
    complex), as PyTorch's mH / H / adjoint()."""
    if _matrices_only(self, what, batches):
        t = self
    else:
        t = transpose(self, -2, -1) if batches else transpose(self, 0, 1)
    return t.conj() if self.is_complex() else t


Tensor.T = property(_T, doc="All dimensions reversed (a view).")
Tensor.mT = property(_mT, doc="The last two dimensions swapped (a view).")
Tensor.mH = property(lambda self: _adjoint(self, "mH"),
                     doc="The conjugate transpose of the last two dimensions.")
Tensor.H = property(lambda self: _adjoint(self, "H", batches=False),
                    doc="The conjugate transpose of a matrix.")


@composite()
def adjoint(input):
    """The conjugate transpose of the last two dimensions (a view)."""
    return _adjoint(input)


def _batch_expand(spec, arrays, params):
    x = arrays[0]
    sizes = tuple(params.get("sizes", ()))
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
        sizes = tuple(sizes[0])
    lead = len(sizes) - (x.ndim - 1)
    x = x.reshape(x.shape[:1] + (1,) * lead + x.shape[1:])
    return _broadcast_view(x, x.shape[:1] + expand_shape(x.shape[1:], x.dtype, sizes))


@defview("expand", node="ExpandBackward0", saved=("self_sym_sizes",), function=False,
         batch=_batch_expand)
def expand(self, *sizes):
    """Broadcast size-1 dimensions to ``sizes`` without copying (-1 keeps a size)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
        sizes = tuple(sizes[0])
    return _broadcast_view(self, expand_shape(self.shape, self.dtype, sizes))


@expand.backward
def _(ctx, grad):
    return sum_to(grad, ctx.self_sym_sizes),


@expand.jvp
def _(ctx, tangent):
    return tangent.expand(_out_shape(ctx))


expand = expand.fn


def expand_shape(dshape, dtype, sizes):
    """The shape ``expand(*sizes)`` gives a tensor of ``dshape``, or PyTorch's error."""
    if len(sizes) < len(dshape):
        raise RuntimeError(f"expand(torch.{D.TYPE_NAMES[D.FROM_NP[dtype]]}{{{list(dshape)}}}, "
                           f"size={list(sizes)}): the number of sizes provided ({len(sizes)}) "
                           f"must be greater or equal to the number of dimensions in the tensor "
                           f"({len(dshape)})")
    lead = len(sizes) - len(dshape)
    for i in range(len(sizes) - 1, lead - 1, -1):  # PyTorch reports the last clash
        s, cur = sizes[i], dshape[i - lead]
        if s != -1 and cur != 1 and cur != s:
            break
    else:
        i = None
    if i is not None:
        raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                           f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                           f"{list(sizes)}.  Tensor sizes: {list(dshape)}")
    shape = []
    for i, s in enumerate(sizes):
        if i >= lead:
            if s == -1:
                s = dshape[i - lead]
        elif s == -1:
            if not dshape:  # PyTorch's size arithmetic fails first for a 0-d tensor
                raise RuntimeError("numel: integer multiplication overflow")
            raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                               f"non-existing dimension {i}")
        shape.append(s)
    return tuple(shape)


def _broadcast_view(x, shape):
    """``x`` expanded to ``shape`` with the strides PyTorch's expand gives (see
    ``expanded_strides``), writeable (when ``x`` is) if no two elements share memory: PyTorch
    allows in-place ops on an expand that repeats nothing (sizes 0 or 1 along new strides)."""
    shape = tuple(shape)
    v = np.lib.stride_tricks.as_strided(x, shape, expanded_strides(x.shape, x.strides, shape),
                                        writeable=False)
    if x.flags.writeable and not overlapping(v):
        v = writeable_alias(v)
    return v


def expanded_strides(shape, strides, target):
    """The strides (in bytes) PyTorch's expand gives a tensor of ``shape``/``strides`` expanded
    to ``target``: 0 where a size-1 dim repeats; a new size-1 dim takes the next dim's extent
    (0 for a 0-d source), where NumPy would give 0."""
    nd = len(target)
    lead = nd - len(shape)
    sizes, out = [0] * (nd + 1), [0] * (nd + 1)
    for i in range(nd - 1, -1, -1):
        k = i - lead
        if k >= 0:
            size, stride = shape[k], strides[k]
        else:
            size, stride = 1, sizes[i + 1] * out[i + 1]
        if size != target[i]:
            size, stride = target[i], 0
        sizes[i], out[i] = size, stride
    return tuple(out[:nd])




def overlapping(a):
    """Whether two elements of ndarray ``a`` share memory through a zero stride (PyTorch's
    has_internal_overlap)."""
    if a.size == 0:
        return False
    for n, st in zip(a.shape, a.strides):
        if st == 0 and n > 1:
            return True
    return False


def non_overlapping_and_dense(a):
    """PyTorch's is_non_overlapping_and_dense for ndarray ``a``: its elements fill a block of
    memory exactly once, in some order of its dimensions."""
    shape, item = a.shape, a.itemsize
    strides = [st // item if st % item == 0 else None for st in a.strides]
    if a.ndim == 1:
        return shape[0] < 2 or strides[0] == 1
    order = sorted(range(a.ndim), key=lambda i: (shape[i] < 2, 0 if shape[i] < 2 else strides[i]))
    need = 1
    for i in order:
        if shape[i] < 2:
            return True
        if strides[i] != need:
            return False
        need *= shape[i]
    return True


def partial_overlap(a, b):
    """PyTorch's get_overlap_status(a, b) == Partial for ndarrays: both dense, in the same
    memory, covering overlapping but not identical ranges (or the same range with other
    strides).  Sparse views that interleave are "too hard" there, and allowed."""
    if a is b or a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):
        return False
    if not non_overlapping_and_dense(a) or not non_overlapping_and_dense(b):
        return False
    a0, b0 = _lowest_address(a), _lowest_address(b)
    a1, b1 = a0 + a.size * a.itemsize, b0 + b.size * b.itemsize
    if a0 == b0 and a1 == b1:
        return a.strides != b.strides
    return a0 < b1 and b0 < a1


def _lowest_address(a):
    return a.__array_interface__["data"][0] + sum(st * (n - 1) for n, st in
                                                  zip(a.shape, a.strides) if st < 0)


def root_writeable(a):
    """Whether the memory under ndarray view ``a`` can be written."""
    r, b = a, a.base
    while b is not None:
        if isinstance(b, np.ndarray):
            r = b
        b = getattr(b, "base", None)
    return bool(r.flags.writeable)


class _Interface:
    def __init__(self, iface, base):
        self.__array_interface__ = iface
        self.base = base


def writeable_alias(a):
    """A writeable ndarray over the same memory, shape and strides as the read-only view ``a``
    (whose memory is writeable)."""
    iface = dict(a.__array_interface__)
    iface["data"] = (iface["data"][0], False)
    iface["strides"] = a.strides  # the interface says None for any C-contiguous layout
    r = np.asarray(_Interface(iface, a))
    # the interface describes an extension dtype (bfloat16) only as raw bytes ("|V2")
    return r if r.dtype == a.dtype else r.view(a.dtype)


@composite(function=False)
def expand_as(input, other):
    return expand(input, other._data.shape)


class AliasBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return g,

    def _fw_rule(self, tangents):
        return [tangents[0]]  # (the identity: an alias's tangent is its input's)


def alias(input):
    """A view of the whole tensor (used by full-slice indexing)."""
    return make_view(input, input._data.view(), AliasBackward0, (), lambda x: x)


# --- split family: several views of one tensor, one multi-output node ----------------------
def _make_views(src, datas, node_cls, saved, fns, single=False):
    """Views ``datas`` of ``src`` that share one backward node (one output each)."""
    outs = [make_view(src, d, None, (), f) for d, f in zip(datas, fns)]
    if STATE.enabled:
        for o in outs:
            o._creation = MULTI_OUTPUT_NODE
    if STATE.enabled and src._requires_grad:
        share_node(outs, node_cls((edge_of(src),), saved, src._data.dtype))
    return outs


def share_node(outs, node):
    """Make ``node`` the grad_fn of every tensor of ``outs``, output ``i`` the i-th."""
    node.__dict__["_nout"] = len(outs)
    for i, o in enumerate(outs):
        o._requires_grad = True
        o._grad_fn = node
        if i:
            o._output_nr = i
        if RECORD_HOOKS:
            notify(o)


def _joined(g, nout, sizes, shape, dim):
    """The pieces' gradients ``g`` (one alone when ``nout`` is 1) joined along ``dim``, zeros
    of their sizes where none arrived."""
    if nout == 1:  # one piece: the engine passes its gradient alone
        g = (g,)
    like = next(gi for gi in g if gi is not None)
    return X.cat([gi if gi is not None else X.zeros(shape[:dim] + (s,) + shape[dim + 1:], like)
                  for gi, s in zip(g, sizes)], dim)


class SplitBackward0(Node):
    """The node of unsafe_split and unsafe_chunk (ops/shape.py), pieces that are not
    views: their gradients joined."""
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        dim, sizes, shape = self._saved[:3]
        return _joined(g, self._nout, sizes, shape, dim),


def _split_sizes_of(n, ss):
    """The sizes of ``split(split_size=ss)`` along a dimension of ``n`` (PyTorch's error for
    a size that cannot split it)."""
    if ss < 0 or (ss == 0 and n != 0):
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {n}")
    if n == 0:
        return [0]
    return [ss] * (n // ss) + ([n % ss] if n % ss else [])


def _pieces(d, sizes, k):
    out, start = [], 0
    for s in sizes:
        out.append(d[(slice(None),) * k + (slice(start, start + s),)])
        start += s
    return out


def _batch_split(spec, arrays, params):
    x = arrays[0]
    return spec.forward(x, params["split_size_or_sections"],
                        _dim(params.get("dim", 0), x.ndim - 1) + 1)


@defview("split", node=("SplitBackward0", "SplitWithSizesBackward0"),
         saved=(("dim", "self_sym_sizes", "split_size=split_size_or_sections"),
                ("dim", "self_sym_sizes", "split_sizes=split_size_or_sections")),
         multi=True, batch=_batch_split)
def split(self, split_size_or_sections, dim=0):
    """Views of consecutive pieces along ``dim``: equal ``int`` sizes (last may be smaller) or
    the listed sizes; SplitBackward0 / SplitWithSizesBackward0."""
    if self.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    k = _dim(dim, self.ndim)
    n = self.shape[k]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {k}), but got split_sizes={sizes}")
        return _pieces(self, sizes, k), 1
    return _pieces(self, _split_sizes_of(n, int(split_size_or_sections)), k)


@split.backward
def _(ctx, grad):
    shape, dim = ctx.self_sym_sizes, ctx.dim
    if dim < 0:
        dim += len(shape)
    sizes = ctx.split_sizes  # (split(int) keeps split_size)
    if sizes is None:
        n, ss = shape[dim], ctx.split_size
        sizes = [ss] * (n // ss) + [n % ss] if n else [0]  # (the last one may be 0: unused)
    return _joined(grad, ctx._nout, sizes, shape, dim),


_split_bw = split.bw
split = split.fn


def _batch_split_with_sizes(spec, arrays, params):
    x = arrays[0]
    return spec.forward(x, params["split_sizes"], _dim(params.get("dim", 0), x.ndim - 1) + 1)


@defview("split_with_sizes", node="SplitWithSizesBackward0",
         saved=("dim", "self_sym_sizes", "split_sizes"), multi=True, function=False,
         batch=_batch_split_with_sizes)
def split_with_sizes(self, split_sizes, dim=0):
    """Views of consecutive pieces of the listed sizes along ``dim``; SplitWithSizesBackward0."""
    sizes, k = checked_split_sizes(self.shape, split_sizes, dim)
    return _pieces(self, sizes, k)


def checked_split_sizes(shape, split_sizes, dim) -> tuple:
    """``(sizes, dim)`` of a split of a tensor of ``shape`` into pieces of ``split_sizes``
    along ``dim`` (wrapped), or PyTorch's error (split_with_sizes, unsafe_split_with_sizes)."""
    if len(shape) == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    k = _dim(dim, len(shape))
    n = shape[k]
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                           f"tensor's size at dimension {k}), but got split_sizes={sizes}")
    return sizes, k


split_with_sizes.backward(_split_bw)
split_with_sizes = split_with_sizes.fn


@composite()
def chunk(input, chunks, dim=0):
    """At most ``chunks`` views of equal size (the last may be smaller); SplitBackward0."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    n = d.shape[_dim(dim, d.ndim)]
    if n == 0:  # PyTorch: ``chunks`` empty pieces (SplitWithSizesBackward0)
        return split(input, [0] * chunks, dim)
    return split(input, max(math.ceil(n / chunks), 1), dim)


@composite()
def tensor_split(input, indices_or_sections, dim=0):
    """Pieces of ``input`` along ``dim`` at the given indices, or as ``n`` near-equal parts
    (narrow views, as PyTorch's slices)."""
    from .shape import narrow
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    k = _dim(dim, d.ndim)
    n = d.shape[k]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, (list, tuple)):
        bounds = [0] + [min(max(int(i) if i >= 0 else int(i) + n, 0), n)
                        for i in indices_or_sections] + [n]
    else:
        sec = int(indices_or_sections)
        if sec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sec}")
        q, r = divmod(n, sec)
        bounds = [0]
        for i in range(sec):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    return tuple(narrow(input, k, min(s, n), max(e - s, 0))
                 for s, e in zip(bounds[:-1], bounds[1:]))


@defview("unbind", node="UnbindBackward0", saved=("dim",), multi=True,
         batch=lambda spec, arrays, params: spec.forward(
             arrays[0], _dim(params.get("dim", 0), arrays[0].ndim - 1) + 1))
def unbind(self, dim=0):
    """Views of each slice along ``dim`` (the dimension removed); UnbindBackward0."""
    if self.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    k = _dim(dim, self.ndim)
    # (Ellipsis: a 0-d view, not a scalar copy)
    return [self[(slice(None),) * k + (i, Ellipsis)] for i in range(self.shape[k])]


@unbind.backward
def _(ctx, grad):
    g = (grad,) if ctx._nout == 1 else grad
    like = next(gi for gi in g if gi is not None)
    dim = ctx.dim
    return X.stack([gi if gi is not None else X.zeros(tuple(like.shape), like) for gi in g],
                   dim + like.ndim + 1 if dim < 0 else dim),


unbind = unbind.fn


# --- hsplit / vsplit / dsplit ---------------------------------------------------------------
def _dir_split(name, input, indices_or_sections, min_dim, method):
    """hsplit/vsplit/dsplit: tensor_split along their dim, sections dividing the size exactly
    (``method``: called as ``Tensor.<name>``, whose type error leaves out the input)."""
    if isinstance(indices_or_sections, (bool, float, Tensor)) or not isinstance(
            indices_or_sections, (int, np.integer, tuple, list)):
        got = D.type_name(indices_or_sections)
        t = "" if method else "Tensor input, "
        raise TypeError(f"{name}() received an invalid combination of arguments - got "
                        f"({'' if method else 'Tensor, '}{got}), but expected one of:\n"
                        f" * ({t}int sections)\n * ({t}tuple of ints indices)")
    d = input._data
    if d.ndim < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {d.ndim} dimensions!")
    dim = {"hsplit": 0 if d.ndim == 1 else 1, "vsplit": 0, "dsplit": 2}[name]
    if isinstance(indices_or_sections, (int, np.integer)):
        n = d.shape[dim]
        s = int(indices_or_sections)
        if s == 0 or n % s:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {n} is not divisible by the split_size "
                               f"{s}!")
    return tensor_split(input, indices_or_sections, dim)


def _register_dir_split(name, min_dim, doc):
    def function(input, indices_or_sections):
        return _dir_split(name, input, indices_or_sections, min_dim, False)

    def method(self, indices_or_sections):
        return _dir_split(name, self, indices_or_sections, min_dim, True)

    function.__name__ = function.__qualname__ = method.__name__ = method.__qualname__ = name
    function.__doc__ = method.__doc__ = doc
    composite(name, method=False)(function)
    composite("_" + name + "_method", function=False, method=False, methods=(name,))(method)
    return function


hsplit = _register_dir_split("hsplit", 1, "Split along the columns (dim 1; dim 0 of a 1-D "
                                          "tensor): views, SliceBackward0 each.")
vsplit = _register_dir_split("vsplit", 2, "Split along the rows (dim 0) of a tensor of at least "
                                          "2 dims: views.")
dsplit = _register_dir_split("dsplit", 3, "Split along the depth (dim 2) of a tensor of at least "
                                          "3 dims: views.")


# --- unfold: the sliding-window view ----------------------------------------------------------
def _windows(x, dim, size, step):
    """The windows view of ndarray ``x`` (``dim`` already normalised)."""
    if x.ndim == 0:
        return x.reshape(1)[:size]
    n = x.shape[dim]
    count = (n - size) // step + 1
    shape = x.shape[:dim] + (count,) + x.shape[dim + 1:] + (size,)
    st = x.strides
    strides = st[:dim] + (st[dim] * step,) + st[dim + 1:] + (st[dim],)
    # overlapping windows share elements: read-only, so a gradient written through them is
    # added up (np.add.at), as PyTorch's as_strided backward does
    shared = step < size and count > 1
    return np.lib.stride_tricks.as_strided(x, shape, strides,
                                           writeable=x.flags.writeable and not shared)


def _unfold_back_np(g, shape, dim, size, step):
    count = (shape[dim] - size) // step + 1
    r = np.zeros(shape, g.dtype)
    for k in range(size):  # element k of every window
        idx = (slice(None),) * dim + (slice(k, k + step * (count - 1) + 1, step),)
        r[idx] += g[..., k]
    return r


def _unfold_back_t(g, shape, dim, size, step):
    count = (shape[dim] - size) // step + 1
    pos = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    gm = g.movedim(-1, dim + 1)
    gm = gm.reshape(shape[:dim] + (count * size,) + shape[dim + 1:])
    return X.zeros(shape, g).index_add(dim, X.const(pos, g), gm)


# the windows' gradients ``g`` added back into zeros of ``shape``: NumPy on arrays, index_add
# (recorded) on Tensors
_unfold_back_any = X.twin(_unfold_back_np, _unfold_back_t)


def _batch_unfold(spec, arrays, params):
    """Batching rule of unfold: the dimension moves one to the right (a 0-d sample's windows
    are of its one element)."""
    x = arrays[0]
    if x.ndim == 1:
        return np.stack([spec.forward(a, **params) for a in x])
    return spec.forward(x, _dim(params["dimension"], x.ndim - 1) + 1, params["size"],
                        params["step"])


@defview("unfold", node="UnfoldBackward0", saved=("self_sym_sizes", "dimension", "size", "step"),
         function=False, batch=_batch_unfold)
def unfold(self, dimension, size, step):
    """All windows of ``size`` elements every ``step`` along ``dimension`` (a view; the window
    is the new last dim); UnfoldBackward0."""
    dimension = D.int_arg(dimension, "unfold", "dimension", 1)
    size = D.int_arg(size, "unfold", "size", 2)
    step = D.int_arg(step, "unfold", "step", 3)
    k = _dim(dimension, self.ndim)
    n = self.shape[k] if self.ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {k} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    return _windows(self, k, size, step)


@unfold.backward
def _(ctx, grad):
    """The windows' gradients added back where each element came from."""
    shape = ctx.self_sym_sizes
    if not shape:
        return grad.reshape(()),
    return _unfold_back_any(grad, shape, _dim(ctx.dimension, len(shape)), ctx.size, ctx.step),


@unfold.jvp
def _(ctx, tangent):
    return tangent.unfold(ctx.dimension, ctx.size, ctx.step)


unfold = unfold.fn


from .. import _tensor as _tensor_module  # noqa: E402

# Tensor's own methods call it (the core registers nothing from above itself)
_tensor_module.LATE.live_views = live_views


# --- complex <-> real views -------------------------------------------------------------
from .._out import call as _out_call, handles_out  # noqa: E402
from .. import _dtype as _D  # noqa: E402

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}


def _as_real(d):
    """The float view of complex array ``d``: a last axis of 2 (real, imaginary), the byte
    strides of ``d`` kept for the others."""
    f = d.real  # a view with the float dtype and d's byte strides
    return np.lib.stride_tricks.as_strided(f, d.shape + (2,), d.strides + (d.itemsize // 2,),
                                           writeable=d.flags.writeable)


def _as_complex(d):
    """The complex view of float array ``d`` whose last axis is 2 (its two elements
    adjacent)."""
    if d.strides[-1] != d.itemsize:  # (a size-0 array's NumPy strides may be anything)
        d = np.lib.stride_tricks.as_strided(d, d.shape, d.strides[:-1] + (d.itemsize,),
                                            writeable=d.flags.writeable)
    return d.view(_COMPLEX_OF[d.dtype])[..., 0]


@defview("view_as_real", node="ViewAsRealBackward0", method=False, holomorphic=False,
         batch=lambda spec, arrays, params: _as_real(arrays[0]))
def view_as_real(self):
    """A real view of a complex tensor: a last dimension of 2 holds the real and imaginary
    parts (storage shared; strides doubled); ViewAsRealBackward0."""
    if self.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _as_real(self)


@view_as_real.backward
def _(ctx, grad):
    # (its formula is PyTorch's complex gradient itself)
    return _complex_of(grad),


@view_as_real.jvp
def _(ctx, tangent):
    return view_as_real(tangent)


@defview("view_as_complex", node="ViewAsComplexBackward0", method=False, holomorphic=False,
         batch=lambda spec, arrays, params: spec.forward(arrays[0]))
def view_as_complex(self):
    """A complex view of a float tensor whose last dimension is 2 with stride 1 (other
    strides and the storage offset even); ViewAsComplexBackward0."""
    if self.dtype not in _COMPLEX_OF:
        if self.dtype == np.float16:
            raise RuntimeError("view_as_complex of a Half tensor gives a ComplexHalf "
                               "(torch.complex32) tensor, a dtype dyngrad does not have")
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: "
                           f"{_D.scalar_type_name(self.dtype)}")
    if self.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if self.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    # (an empty array's NumPy strides say nothing of PyTorch's: not checked)
    st = tuple(s // self.itemsize for s in self.strides) if self.size else \
        (0,) * (self.ndim - 1) + (1,)
    if st[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in st[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self.size and (self.__array_interface__["data"][0] - _storage_root(
            self).__array_interface__["data"][0]) // self.itemsize % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _as_complex(self)


@view_as_complex.backward
def _(ctx, grad):
    return _real_of(grad),


@view_as_complex.jvp
def _(ctx, tangent):
    return view_as_complex(tangent)


view_as_real, view_as_complex = view_as_real.fn, view_as_complex.fn
# a complex gradient as its real view, and back (contiguous, as PyTorch's backward makes it)
_complex_of = X.twin(lambda g: np.ascontiguousarray(g).view(_COMPLEX_OF[g.dtype])[..., 0],
                     lambda g: view_as_complex(g.contiguous()))
_real_of = X.twin(lambda g: np.stack([g.real, g.imag], -1),
                  lambda g: view_as_real(g.contiguous()))


_POLAR_OK = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def _broadcast_pair(a, b):
    na, nb = len(a), len(b)
    n = max(na, nb)
    a = (1,) * (n - na) + tuple(a)
    b = (1,) * (n - nb) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                               f"({y}) at non-singleton dimension {i}")
        out.append(y if x == 1 else x)
    return tuple(out)


def _complex_parts(name, x, y, names):
    """The float data of the two tensors that make a complex one (``polar``'s magnitudes and
    angles, ``complex``'s real and imaginary parts), with PyTorch's argument checks."""
    if not isinstance(x, Tensor):
        raise _D.not_tensor(name, names[0], 1, x)
    if not isinstance(y, Tensor):
        raise _D.not_tensor(name, names[1], 2, y)
    a, b = x._data, y._data
    if a.dtype not in _POLAR_OK or b.dtype not in _POLAR_OK:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_D.scalar_type_name(a.dtype)} and {_D.scalar_type_name(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"Expected object of scalar type {_D.scalar_type_name(a.dtype)} but "
                           f"got scalar type {_D.scalar_type_name(b.dtype)} for second argument")
    _broadcast_pair(a.shape, b.shape)
    return a, b


def _with_out(name, fn, x, y, out):
    """``fn(x, y)``, written into ``out`` when given (which must have the result's complex
    dtype, PyTorch's check, and is resized to the broadcast shape)."""
    if out is None:
        return fn(x, y)

    def f(a, b):
        r = fn(a, b)
        if isinstance(out, Tensor) and out._data.dtype != r._data.dtype:
            raise RuntimeError(f"Expected object of scalar type "
                               f"{_D.scalar_type_name(r._data.dtype)} but got scalar type "
                               f"{_D.scalar_type_name(out._data.dtype)} for argument 'out'")
        return r
    return _out_call(name, f, (x, y), {"out": out})


def _batch_pair(spec, arrays, params):
    return spec.forward(*batch_aligned(arrays))


@defop("polar", node="PolarBackward0", inputs=("abs", "angle"), saved=("result",), method=False,
       broadcast=True, holomorphic=False, batch=_batch_pair)
def _polar_op(abs, angle):  # noqa: A002 (PyTorch's parameter name)
    """``abs * (cos(angle) + i sin(angle))`` of float arrays of the same dtype (checked by
    ``polar``)."""
    r = np.empty(np.broadcast_shapes(abs.shape, angle.shape), _COMPLEX_OF[abs.dtype])
    r.real = abs * np.cos(angle)
    r.imag = abs * np.sin(angle)
    return r


def _polar_grads_np(g, y):
    gc = np.conj(g)
    mag = np.abs(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        sgn = np.where(mag == 0, 0, y / np.where(mag == 0, 1, mag)).astype(y.dtype)
    return np.real(gc * sgn), np.real(gc * (y * 1j))


def _polar_grads_t(g, y):
    if not isinstance(g, Tensor):
        g = _make(g)
    if not isinstance(y, Tensor):
        y = _make(y)
    # Re(conj(g) sgn(y)) and Re(conj(g) i y), written on the real parts so the graph they
    # record is made of real ops
    yr, gr = view_as_real(y), view_as_real(g)
    y0, y1, g0, g1 = yr[..., 0], yr[..., 1], gr[..., 0], gr[..., 1]
    m2 = y0 * y0 + y1 * y1
    return (g0 * y0 + g1 * y1) / (m2 + (m2 == 0).to(m2.dtype)).sqrt(), g1 * y0 - g0 * y1


# PolarBackward0's gradients of the magnitudes and the angles (its formula is the complex
# gradient itself: Re(conj(g) sgn(result)), Re(conj(g) i result))
_polar_grads = X.twin(_polar_grads_np, _polar_grads_t)


@_polar_op.backward
def _(ctx, grad):
    return _polar_grads(grad, ctx.result)


@_polar_op.jvp
def _(ctx, t_abs, t_angle):
    # abs_t * sgn(result) + i angle_t * result
    y = ctx.result
    out = None
    if t_abs is not None:
        m = y.abs()
        out = t_abs * (y / (m + (m == 0).to(m.dtype)))
    if t_angle is not None:
        term = t_angle * (y * 1j)
        out = term if out is None else out + term
    return out


_polar_fast = pair_public(_polar_op)[0]  # (two tensors by position: no binding)


def _polar_checked(abs, angle):  # noqa: A002
    a, b = _complex_parts("polar", abs, angle, ("abs", "angle"))
    if a.dtype == np.float16:
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    return _polar_fast(abs, angle)


@handles_out
def polar(abs, angle, *, out=None):  # noqa: A002 (PyTorch's parameter name)
    """``abs * (cos(angle) + i sin(angle))``: a complex tensor from float magnitudes and
    angles of the same dtype; PolarBackward0."""
    return _with_out("polar", _polar_checked, abs, angle, out)


front(_polar_op, polar)


@defop("complex", node="ComplexBackward0", inputs=("real", "imag"), saved=("real", "imag"),
       method=False, broadcast=True, holomorphic=False, batch=_batch_pair)
def _complex_op(real, imag):
    """``real + i imag`` of float arrays of the same dtype (checked by ``complex``)."""
    r = np.empty(np.broadcast_shapes(real.shape, imag.shape), _COMPLEX_OF[real.dtype])
    r.real = real
    r.imag = imag
    return r


# the real and imaginary parts of a complex gradient (copies on arrays; the recorded views on
# Tensors)
_real_part = X.twin(lambda g: np.real(g).copy(), lambda g: real(g))
_imag_part = X.twin(lambda g: np.imag(g).copy(), lambda g: imag(g))


@_complex_op.backward
def _(ctx, grad):
    # (its formula splits the complex gradient itself)
    return (_real_part(grad) if ctx.needs(0) else None,
            _imag_part(grad) if ctx.needs(1) else None)


@_complex_op.jvp
def _(ctx, t_real, t_imag):
    like = t_real if t_real is not None else t_imag
    z = X.zeros_like(like)
    return ctx.op("complex", z if t_real is None else t_real, z if t_imag is None else t_imag)


_complex_fast = pair_public(_complex_op)[0]  # (two tensors by position: no binding)


def _complex_checked(real, imag):
    a, b = _complex_parts("complex", real, imag, ("real", "imag"))
    if a.dtype == np.float16:
        raise RuntimeError("complex(): dyngrad has no complex32 (ComplexHalf) dtype for half "
                           "inputs; convert them to float32 first")
    return _complex_fast(real, imag)


@handles_out
def complex(real, imag, *, out=None):  # noqa: A001 (PyTorch's name)
    """``real + i imag`` from two float tensors of the same dtype (broadcast);
    ComplexBackward0."""
    return _with_out("complex", _complex_checked, real, imag, out)


front(_complex_op, complex)


# --- real / imag ------------------------------------------------------------------------------
def _part(input, name, index):
    if not isinstance(input, Tensor):
        raise _D.not_tensor(name, "input", 1, input)
    if not input.is_complex():
        if index == 0:
            return input  # PyTorch's real of a real tensor is the tensor itself
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    from .shape import select
    # PyTorch saves the dim as given to its select: the real view's last one, non-negative
    return select(view_as_real(input), input.dim(), index)


@composite(method=False)
def real(input):
    """The real part of a complex tensor, a view (``view_as_real(input)[..., 0]``, as PyTorch
    records it: SelectBackward0 of ViewAsRealBackward0); a real tensor itself."""
    return _part(input, "real", 0)


@composite(method=False)
def imag(input):
    """The imaginary part of a complex tensor, a view (``view_as_real(input)[..., 1]``)."""
    return _part(input, "imag", 1)


def _set_part(index):
    def setter(self, value):
        part = _part(self, "real" if index == 0 else "imag", index)
        part.copy_(value) if isinstance(value, Tensor) else part.fill_(value)

    return setter


Tensor.real = property(real, _set_part(0), doc="The real part (a view; assignable).")
Tensor.imag = property(imag, _set_part(1), doc="The imaginary part (a view; assignable).")
