"""View ops: results share storage and the version counter with their base, remember how to
re-create themselves from it (for in-place ops on views), and record PyTorch's view nodes.
The split family (split, chunk, unbind, tensor_split, hsplit...) gives several views of one
tensor."""
from __future__ import annotations

import math
import weakref

import numpy as np

from . import op
from .._record import RECORD_HOOKS, STATE, Node, Tensor, edge_of, notify, raw_dim, raw_dims, record
from .._tensor import Size, _dim
from . import _dual as X

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
    if base is None:
        base = t._base = src
        if fn is not None:
            t._view_fn = (fn,)
            _register_view(base, t)
    else:
        t._base = base
        prev = src._view_fn
        if prev is not None and fn is not None:
            t._view_fn = prev + (fn,)
            _register_view(base, t)
    if t._view_fn is not None:
        # PyTorch's CreationMeta: a view made under no_grad (or of such a view, or of an
        # output of a multi-view op) refuses in-place changes while recording
        if not STATE.enabled:
            t._creation = NO_GRAD_MODE
            if src._requires_grad:
                # a view made under no_grad still requires grad, as in PyTorch, but has no history
                t._requires_grad = True
                t._nograd_view = True
        elif src._creation is not None:
            t._creation = src._creation
    if node_cls is not None and STATE.enabled and src._requires_grad:
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
class ViewBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return g.reshape(self._saved[0]),


class UnsafeViewBackward0Reshape(ViewBackward0):
    __slots__ = ()


def _infer_shape(shape, numel, what="view"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for s in shape:
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


@op(function=False)
def view(input, *shape):
    """The same data with another shape (no copy); ViewBackward0."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer, tuple, list, Size)):
        from .. import _dtype as D
        dt = D.to_dtype(shape[0])
        return _make(input._data.view(dt.np))
    d = input._data
    new = _infer_shape(shape, d.size)
    v = d.view()
    try:
        v.shape = new
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
    return make_view(input, v, ViewBackward0, (d.shape,), lambda x, s=new: x.reshape(s))


@op()
def reshape(input, *shape):
    """The data with another shape: a view when possible (ViewBackward0 for contiguous input,
    ReshapeAliasBackward0 otherwise, as PyTorch names them), else a copy (UnsafeViewBackward0)."""
    d = input._data
    new = _infer_shape(shape, d.size)
    cls = ViewBackward0 if d.flags.c_contiguous else ReshapeAliasBackward0
    if new == d.shape:
        return make_view(input, d.view(), cls, (d.shape,), lambda x: x)
    v = d.view()
    try:
        v.shape = new
    except AttributeError:
        if STATE.enabled and input._requires_grad:
            # PyTorch: _unsafe_view(clone(contiguous)) -- CloneBackward0 under UnsafeViewBackward0
            return unsafe_view(input.clone(), new)
        return _make(d.reshape(new))
    return make_view(input, v, cls, (d.shape,), lambda x, s=new: x.reshape(s))


class ReshapeAliasBackward0(ViewBackward0):
    __slots__ = ()


def unsafe_view(t, shape):
    """PyTorch's ``_unsafe_view`` of a fresh result: its data with another shape, recorded as
    UnsafeViewBackward0 (not a view: nothing else shares the data)."""
    r = t._data.reshape(shape)
    if r.base is not None and not r.flags.writeable:
        r = r.copy()
    if STATE.enabled and t._requires_grad:
        return record(r, UnsafeViewBackward0Reshape((edge_of(t),), (t._data.shape,)))
    return _make(r)


UnsafeViewBackward0Reshape.__name__ = "UnsafeViewBackward0"
UnsafeViewBackward0Reshape.__qualname__ = "UnsafeViewBackward0"


@op()
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


@op()
def unflatten(input, dim, sizes):
    d = input._data
    k = _dim(dim, d.ndim)
    sizes = _infer_shape(tuple(sizes), d.shape[k])
    return reshape(input, d.shape[:k] + tuple(sizes) + d.shape[k + 1:])


@op(function=False)
def view_as(input, other):
    return view(input, other._data.shape)


@op(function=False)
def reshape_as(input, other):
    return reshape(input, other._data.shape)


class UnsqueezeBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return g.reshape(self._saved[0]),


@op()
def unsqueeze(input, dim):
    """Insert a size-1 dimension at ``dim``; UnsqueezeBackward0."""
    d = input._data
    k = _dim(dim, d.ndim + 1)
    v = np.expand_dims(d, k)
    return make_view(input, v, UnsqueezeBackward0, (d.shape, raw_dim(dim)), lambda x, k=k: x.unsqueeze(k)
                     if isinstance(x, Tensor) else np.expand_dims(x, k))


class SqueezeBackward0(UnsqueezeBackward0):
    __slots__ = ()


class SqueezeBackward1(UnsqueezeBackward0):
    __slots__ = ()


class SqueezeBackward2(UnsqueezeBackward0):
    __slots__ = ()


@op()
def squeeze(input, dim=None):
    """Remove size-1 dimensions (all, or those in ``dim``)."""
    d = input._data
    if dim is None:
        axes = tuple(i for i, s in enumerate(d.shape) if s == 1)
        cls = SqueezeBackward0
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        axes = tuple(sorted(_dim(k, d.ndim) for k in dims))
        axes = tuple(a for a in axes if d.ndim and d.shape[a] == 1)
        cls = SqueezeBackward1 if not isinstance(dim, (tuple, list)) else SqueezeBackward2
    new = tuple(s for i, s in enumerate(d.shape) if i not in axes)
    saved = (d.shape,) if dim is None else \
        (d.shape, raw_dims(dim) if cls is SqueezeBackward2 else raw_dim(dim))
    return make_view(input, d.reshape(new), cls, saved, lambda x, s=new: x.reshape(s))


class TBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return (g.T if not isinstance(g, Tensor) else g.t()),


@op()
def t(input):
    """Transpose of a matrix (a 0-D or 1-D tensor is returned as is); TBackward0."""
    d = input._data
    if d.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return make_view(input, d.T, TBackward0, (), lambda x: x.T if not isinstance(x, Tensor) else x.t())


class TransposeBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        a, b, _, _ = self._saved
        if a == b:  # nothing was swapped (a 0-d tensor, or a dim with itself)
            return g,
        return g.swapaxes(a, b) if not isinstance(g, Tensor) else g.transpose(a, b),


@op(methods=("swapaxes", "swapdims"))
def transpose(input, dim0, dim1):
    """Swap two dimensions (a view); TransposeBackward0."""
    d = input._data
    a, b = _dim(dim0, d.ndim), _dim(dim1, d.ndim)
    if d.ndim == 0:
        return make_view(input, d.view(), TransposeBackward0, (0, 0, raw_dim(dim0), raw_dim(dim1)),
                         lambda x: x)
    return make_view(input, d.swapaxes(a, b), TransposeBackward0,
                     (a, b, raw_dim(dim0), raw_dim(dim1)),
                     lambda x, a=a, b=b: x.swapaxes(a, b))


swapaxes = swapdims = transpose


class PermuteBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        inv = tuple(np.argsort(self._saved[0]))
        return (g.transpose(inv) if not isinstance(g, Tensor) else g.permute(*inv)),


@op()
def permute(input, *dims):
    """Reorder dimensions (a view); PermuteBackward0."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list, Size)):
        dims = tuple(dims[0])
    d = input._data
    if len(dims) != d.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {d.ndim} is not equal to len(dims) = {len(dims)}")
    perm = tuple(_dim(k, d.ndim) for k in dims)
    if len(set(perm)) != len(perm):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return make_view(input, d.transpose(perm), PermuteBackward0, (perm, raw_dims(dims)),
                     lambda x, p=perm: x.transpose(p) if not isinstance(x, Tensor) else x.permute(*p))


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
    n = self._data.ndim
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
    return t.conj() if self._data.dtype.kind == "c" else t


Tensor.T = property(_T, doc="All dimensions reversed (a view).")
Tensor.mT = property(_mT, doc="The last two dimensions swapped (a view).")
Tensor.mH = property(lambda self: _adjoint(self, "mH"),
                     doc="The conjugate transpose of the last two dimensions.")
Tensor.H = property(lambda self: _adjoint(self, "H", batches=False),
                    doc="The conjugate transpose of a matrix.")


@op()
def adjoint(input):
    """The conjugate transpose of the last two dimensions (a view)."""
    return _adjoint(input)


class ExpandBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        from .._record import sum_to
        return sum_to(g, self._saved[0]),


@op(function=False)
def expand(input, *sizes):
    """Broadcast size-1 dimensions to ``sizes`` without copying (-1 keeps a size)."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
        sizes = tuple(sizes[0])
    d = input._data
    if input._stale_view and STATE.enabled:  # its history is asked for before the sizes
        raise RuntimeError(input._stale_view)
    shape = expand_shape(d.shape, d.dtype, sizes)
    return make_view(input, _broadcast_view(d, shape), ExpandBackward0, (d.shape,),
                     lambda x, s=shape: _broadcast_view(x, s) if not isinstance(x, Tensor) else x.expand(*s))


def expand_shape(dshape, dtype, sizes):
    """The shape ``expand(*sizes)`` gives a tensor of ``dshape``, or PyTorch's error."""
    if len(sizes) < len(dshape):
        from .. import _dtype as D
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


@op(function=False)
def expand_as(input, other):
    return expand(input, other._data.shape)


class AliasBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return g,


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


class SplitBackward0(Node):
    """Gradient of split/chunk: the outputs' gradients joined (zeros where none arrived)."""
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        dim, sizes, shape, dtype = self._saved[:4]
        if self._nout == 1:  # one piece: the engine passes its gradient alone
            g = (g,)
        like = next(gi for gi in g if gi is not None)
        parts = []
        for gi, s in zip(g, sizes):
            if gi is None:
                gi = X.zeros(shape[:dim] + (s,) + shape[dim + 1:], like, dtype)
            parts.append(gi)
        return X.cat(parts, dim),


class SplitWithSizesBackward0(SplitBackward0):
    __slots__ = ()


class UnbindBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        dim, shape, dtype = self._saved[:3]
        if self._nout == 1:  # one piece: the engine passes its gradient alone
            g = (g,)
        sub = shape[:dim] + shape[dim + 1:]
        like = next(gi for gi in g if gi is not None)
        return X.stack([gi if gi is not None else X.zeros(sub, like, dtype) for gi in g], dim),


def _split_sizes(input, sizes, dim, node_cls, raw):
    d = input._data
    k = _dim(dim, d.ndim)
    datas, fns, start = [], [], 0
    for s in sizes:
        key = (slice(None),) * k + (slice(start, start + s),)
        datas.append(d[key])
        fns.append(lambda x, key=key: x[key])
        start += s
    return tuple(_make_views(input, datas, node_cls, (k, tuple(sizes), d.shape, d.dtype,
                                                      raw_dim(raw)), fns))


@op()
def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along ``dim``: equal ``int`` sizes (last may be smaller) or
    the listed sizes; SplitBackward0 / SplitWithSizesBackward0."""
    d = tensor._data
    if d.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    k = _dim(dim, d.ndim)
    n = d.shape[k]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                               f"tensor's size at dimension {k}), but got split_sizes={sizes}")
        return _split_sizes(tensor, sizes, k, SplitWithSizesBackward0, dim)
    ss = int(split_size_or_sections)
    if ss < 0 or (ss == 0 and n != 0):
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {n}")
    if n == 0:
        sizes = [0]
    else:
        sizes = [ss] * (n // ss) + ([n % ss] if n % ss else [])
    return _split_sizes(tensor, sizes, k, SplitBackward0, dim)


op("split_with_sizes", function=False)(lambda self, split_sizes, dim=0: split(self, list(split_sizes), dim))


@op()
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


@op()
def tensor_split(input, indices_or_sections, dim=0):
    """Pieces of ``input`` along ``dim`` at the given indices, or as ``n`` near-equal parts."""
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
        bounds = [0] + [min(max(int(i) if i >= 0 else int(i) + n, 0), n) for i in indices_or_sections] + [n]
    else:
        sec = int(indices_or_sections)
        if sec <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sec}")
        q, r = divmod(n, sec)
        bounds = [0]
        for i in range(sec):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    return tuple(narrow(input, k, min(s, n), max(e - s, 0)) for s, e in zip(bounds[:-1], bounds[1:]))


@op()
def unbind(input, dim=0):
    """Views of each slice along ``dim`` (the dimension removed); UnbindBackward0."""
    d = input._data
    if d.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    k = _dim(dim, d.ndim)
    datas, fns = [], []
    for i in range(d.shape[k]):
        key = (slice(None),) * k + (i, Ellipsis)  # Ellipsis: a 0-d view, not a scalar copy
        datas.append(d[key])
        fns.append(lambda x, key=key: x[key])
    return tuple(_make_views(input, datas, UnbindBackward0, (k, d.shape, d.dtype, raw_dim(dim)),
                             fns))


# --- hsplit / vsplit / dsplit ---------------------------------------------------------------
def _dir_split(name, input, indices_or_sections, min_dim, method):
    """hsplit/vsplit/dsplit: tensor_split along their dim, sections dividing the size exactly
    (``method``: called as ``Tensor.<name>``, whose type error leaves out the input)."""
    if isinstance(indices_or_sections, (bool, float, Tensor)) or not isinstance(
            indices_or_sections, (int, np.integer, tuple, list)):
        from .. import _dtype as D
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
    op(name, method=False)(function)
    op("_" + name + "_method", function=False, method=False, methods=(name,))(method)
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


class UnfoldBackward0(Node):
    """The windows' gradients added back where each element came from."""
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, dim, size, step = self._saved[:4]
        if not shape:
            return g.reshape(()),
        return _unfold_back_any(g, shape, dim, size, step),


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


@op(function=False)
def unfold(input, dimension, size, step):
    """All windows of ``size`` elements every ``step`` along ``dimension`` (a view; the window
    is the new last dim); UnfoldBackward0."""
    from .shape_more import _int
    dimension = _int(dimension, "unfold", "dimension", 1)
    size = _int(size, "unfold", "size", 2)
    step = _int(step, "unfold", "step", 3)
    d = input._data
    k = _dim(dimension, d.ndim)
    n = d.shape[k] if d.ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {k} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")

    def fn(x, k=k, size=size, step=step):
        return x.unfold(k, size, step) if isinstance(x, Tensor) else _windows(x, k, size, step)

    return make_view(input, _windows(d, k, size, step), UnfoldBackward0,
                     (d.shape, k, size, step, dimension), fn)


from .. import _tensor as _tensor_module  # noqa: E402

# Tensor's own methods call it (the core registers nothing from above itself)
_tensor_module.LATE.live_views = live_views


# --- complex <-> real views -------------------------------------------------------------
from .._record import Saved, sum_to  # noqa: E402
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


class ViewAsRealBackward0(Node):
    __slots__ = ()
    _holomorphic = False  # its formula is the complex gradient itself
    _needs_saved = False

    def _bw(self, g, graph):
        if isinstance(g, Tensor):
            return view_as_complex(g.contiguous()),
        return np.ascontiguousarray(g).view(_COMPLEX_OF[g.dtype])[..., 0],


class ViewAsComplexBackward0(Node):
    __slots__ = ()
    _holomorphic = False  # its formula is the complex gradient itself
    _needs_saved = False

    def _bw(self, g, graph):
        if isinstance(g, Tensor):
            return view_as_real(g.contiguous()),
        return np.stack([g.real, g.imag], -1),


@op(method=False)
def view_as_real(input):
    """A real view of a complex tensor: a last dimension of 2 holds the real and imaginary
    parts (storage shared; strides doubled); ViewAsRealBackward0."""
    if not isinstance(input, Tensor):
        raise _D.not_tensor("view_as_real", "input", 1, input)
    d = input._data
    if d.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return make_view(input, _as_real(d), ViewAsRealBackward0, (),
                     lambda x: view_as_real(x) if isinstance(x, Tensor) else _as_real(x))


@op(method=False)
def view_as_complex(input):
    """A complex view of a float tensor whose last dimension is 2 with stride 1 (other
    strides and the storage offset even); ViewAsComplexBackward0."""
    if not isinstance(input, Tensor):
        raise _D.not_tensor("view_as_complex", "input", 1, input)
    d = input._data
    if d.dtype not in _COMPLEX_OF:
        name = _D.scalar_type_name(d.dtype)
        if d.dtype == np.float16:
            raise RuntimeError("view_as_complex of a Half tensor gives a ComplexHalf "
                               "(torch.complex32) tensor, a dtype dyngrad does not have")
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {name}")
    if d.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if d.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    # (an empty array's NumPy strides say nothing of PyTorch's: not checked)
    st = input.stride() if d.size else (0,) * (d.ndim - 1) + (1,)
    if st[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in st[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if d.size and input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return make_view(input, _as_complex(d), ViewAsComplexBackward0, (),
                     lambda x: view_as_complex(x) if isinstance(x, Tensor) else _as_complex(x))


class PolarBackward0(Node):
    __slots__ = ()
    _holomorphic = False  # its formula is the complex gradient itself
    _named_saved = {"result": (0, "tensor")}

    def _bw(self, g, graph):
        y = self._saved[0].get(self, graph)
        sa, sb = self._saved[1], self._saved[2]
        if isinstance(g, Tensor) or isinstance(y, Tensor):
            if not isinstance(g, Tensor):
                g = _make(g)
            if not isinstance(y, Tensor):
                y = _make(y)
            # Re(conj(g) sgn(y)) and Re(conj(g) i y), written on the real parts so the
            # graph they record is made of real ops
            yr, gr = view_as_real(y), view_as_real(g)
            y0, y1, g0, g1 = yr[..., 0], yr[..., 1], gr[..., 0], gr[..., 1]
            m2 = y0 * y0 + y1 * y1
            ga = (g0 * y0 + g1 * y1) / (m2 + (m2 == 0).to(m2.dtype)).sqrt()
            gb = g1 * y0 - g0 * y1
        else:
            gc = np.conj(g)
            mag = np.abs(y)
            with np.errstate(invalid="ignore", divide="ignore"):
                sgn = np.where(mag == 0, 0, y / np.where(mag == 0, 1, mag)).astype(y.dtype)
            ga = np.real(gc * sgn)
            gb = np.real(gc * (y * 1j))
        return sum_to(ga, sa), sum_to(gb, sb)


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


@op(method=False)
@handles_out
def polar(abs, angle, *, out=None):  # noqa: A002 (PyTorch's parameter name)
    """``abs * (cos(angle) + i sin(angle))``: a complex tensor from float magnitudes and
    angles of the same dtype; PolarBackward0."""
    return _with_out("polar", _polar, abs, angle, out)


class ComplexBackward0(Node):
    __slots__ = ()
    _holomorphic = False  # its formula splits the complex gradient itself
    _named_saved = {"real": (0, "tensor"), "imag": (1, "tensor")}

    def _bw(self, g, graph):
        real, imag, sa, sb = self._saved
        imag.get(self, graph)  # PyTorch unpacks (version-checks) both, in name order
        real.get(self, graph)
        nf = self.next_functions
        return (sum_to(g.real, sa) if nf[0][0] is not None else None,
                sum_to(g.imag, sb) if nf[1][0] is not None else None)


@op(method=False)
@handles_out
def complex(real, imag, *, out=None):  # noqa: A001 (PyTorch's name)
    """``real + i imag`` from two float tensors of the same dtype (broadcast);
    ComplexBackward0."""
    return _with_out("complex", _complex, real, imag, out)


def _complex(real, imag):
    a, b = _complex_parts("complex", real, imag, ("real", "imag"))
    if a.dtype == np.float16:
        raise RuntimeError("complex(): dyngrad has no complex32 (ComplexHalf) dtype for half "
                           "inputs; convert them to float32 first")
    r = np.empty(np.broadcast_shapes(a.shape, b.shape), _COMPLEX_OF[a.dtype])
    r.real = a
    r.imag = b
    if STATE.enabled and (real._requires_grad or imag._requires_grad):
        return record(r, ComplexBackward0((edge_of(real), edge_of(imag)),
                                          (Saved(real), Saved(imag), a.shape, b.shape)))
    return _make(r)


def _polar(abs, angle):  # noqa: A002
    a, b = _complex_parts("polar", abs, angle, ("abs", "angle"))
    if a.dtype == np.float16:
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    cd = _COMPLEX_OF[a.dtype]
    r = np.empty(np.broadcast_shapes(a.shape, b.shape), cd)
    r.real = a * np.cos(b)
    r.imag = a * np.sin(b)
    if STATE.enabled and (abs._requires_grad or angle._requires_grad):
        res = _make(r)
        res._requires_grad = True
        res._grad_fn = PolarBackward0((edge_of(abs), edge_of(angle)),
                                             (Saved(res, True), a.shape, b.shape), cd)
        if RECORD_HOOKS:
            notify(res)
        return res
    return _make(r)


# --- real / imag ------------------------------------------------------------------------------
def _part(input, name, index):
    if not isinstance(input, Tensor):
        raise _D.not_tensor(name, "input", 1, input)
    if input._data.dtype.kind != "c":
        if index == 0:
            return input  # PyTorch's real of a real tensor is the tensor itself
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    from .shape import select
    # PyTorch saves the dim as given to its select: the real view's last one, non-negative
    return select(view_as_real(input), input._data.ndim, index)


@op(method=False)
def real(input):
    """The real part of a complex tensor, a view (``view_as_real(input)[..., 0]``, as PyTorch
    records it: SelectBackward0 of ViewAsRealBackward0); a real tensor itself."""
    return _part(input, "real", 0)


@op(method=False)
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
