"""Indexing: basic indexing (ints, slices, None, ...) as a chain of view nodes, as PyTorch
records it; advanced indexing (bool masks, integer tensors) as one IndexBackward0 whose
gradient accumulates over repeated indices; item assignment through in-place ops."""
from __future__ import annotations

import numpy as np

from .._record import STATE, Node, Tensor, edge_of, indices_unchanged, keep_indices, record
from .views import make_view, alias, expand_shape, unsqueeze
from .. import _dtype as _DT
from . import _dual as X

_make = Tensor._make
_INT64_MAX = (1 << 63) - 1



def _to_np_index(k):
    if isinstance(k, Tensor):
        d = k._data
        if d.dtype.kind not in "biu":
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, "
                             f"got {k.dtype}")
        return d
    if isinstance(k, (list, tuple)):
        arr = np.asarray([x._data if isinstance(x, Tensor) else x for x in k])
        if arr.dtype in _DT.FLOATING:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if arr.dtype.kind in "USO":
            bad = "str" if arr.dtype.kind != "O" else type(arr.flat[0]).__name__
            raise TypeError(f"new(): invalid data type '{bad}'")
        return arr
    if isinstance(k, np.ndarray):
        return k
    if isinstance(k, bool):
        return np.asarray(k)
    if isinstance(k, str):
        raise TypeError("new(): invalid data type 'str'")
    if not hasattr(k, "__index__"):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got {type(k).__name__})")
    return k


class SelectBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return _view_grad_any(g, self),


class SliceBackward0(SelectBackward0):
    __slots__ = ()


class SelectBackwardBackward0(Node):
    """PyTorch's select_backward recorded under create_graph (the gradient of a select placed
    in zeros): its own gradient is the same select of the incoming one."""
    __slots__ = ()
    _needs_saved = False
    # saved: the view's (dim, index or slice) then PyTorch's values as given
    _named_saved = {"dim": (2, "dim"), "index": (3, "dim")}

    def _bw(self, g, graph):
        dim, idx = self._saved[:2]
        return _view_of_any(g, (slice(None),) * dim + (idx, Ellipsis)),


class SliceBackwardBackward0(SelectBackwardBackward0):
    """PyTorch's slice_backward recorded under create_graph."""
    __slots__ = ()
    _named_saved = {"dim": (2, "dim"), "start": (3, "dim"), "end": (4, "dim"),
                    "step": (5, "same")}


SelectBackward0._double = SelectBackwardBackward0
SliceBackward0._double = SliceBackwardBackward0
# forward mode: the tangent indexed as the input was (a select or slice is linear)
SelectBackward0._fw_rule = lambda node, tangents: [
    tangents[0][(slice(None),) * node._saved[1] + (node._saved[2], Ellipsis)]]


def _view_grad_np(g, node):
    shape, dim, idx = node._saved[:3]
    return _scatter_np(g, shape, (slice(None),) * dim + (idx, Ellipsis))


def _view_grad_t(g, node):
    shape, dim, idx = node._saved[:3]
    z = np.zeros(shape, dtype=g._data.dtype)
    z[(slice(None),) * dim + (idx, Ellipsis)] = g._data
    if not (STATE.enabled and g._requires_grad):
        return _make(z)
    return record(z, node._double((edge_of(g),), node._saved[1:]))


# the gradient of a select/slice view: zeros of its base's shape with ``g`` placed where the
# view lies (NumPy on arrays; PyTorch's select_backward / slice_backward node on Tensors)
_view_grad_any = X.twin(_view_grad_np, _view_grad_t)
# ``g`` at ``key`` (a copy on arrays; the recorded view on Tensors)
_view_of_any = X.twin(lambda g, key: g[key].copy(), lambda g, key: g[key])


class IndexBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        indices_unchanged(self)
        shape, key = self._saved
        return _scatter_any(g, shape, key, True),


def _scatter_np(g, shape, key, accumulate=False):
    z = np.zeros(shape, dtype=g.dtype)
    if accumulate:
        np.add.at(z, key, g)
    else:
        z[key] = g
    return z


def _scatter_t(g, shape, key, accumulate=False):
    z = X.zeros(shape, g)
    if accumulate:
        from .gather_scatter import index_put_acc
        return index_put_acc(z, key, g)
    z[key] = g
    return z


# zeros of ``shape`` with ``g`` placed (or added, ``accumulate``) at ``key``: NumPy on arrays,
# recorded (IndexPutBackward0, CopySlices) on Tensors
_scatter_any = X.twin(_scatter_np, _scatter_t)



def _is_int_tensor0(k):
    return isinstance(k, Tensor) and k._data.ndim == 0 and k._data.dtype.kind in "iu"


def _split_key(key, ndim):
    """Split an index into its basic part (ints, slices, None: applied as views first, as
    PyTorch does) and the advanced part left for the view (arrays, with ``:`` elsewhere)."""
    if not isinstance(key, tuple):
        if ndim == 0 and isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        key = (key,)
    conv = []
    for k in key:
        if _is_int_tensor0(k):
            conv.append(int(k._data))
        elif k is None or k is Ellipsis or (isinstance(k, (int, np.integer, slice)) and not isinstance(k, bool)):
            conv.append(k)
        else:
            conv.append(_to_np_index(k))
    used = 0
    for k in conv:
        if isinstance(k, np.ndarray):
            used += k.ndim if k.dtype == np.bool_ else 1
        elif k is not None and k is not Ellipsis:
            used += 1
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    out = []
    seen = False
    for k in conv:
        if k is Ellipsis:
            if seen:
                raise IndexError("an index can only have a single ellipsis ('...')")
            seen = True
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(k)
    basic, adv = [], []
    for k in out:
        if isinstance(k, np.ndarray):
            basic.extend([slice(None)] * (k.ndim if k.dtype == np.bool_ else 1))
            adv.append(k)
        elif isinstance(k, (int, np.integer)):
            basic.append(k)
        elif k is None:
            basic.append(None)
            adv.append(slice(None))
        else:
            basic.append(k)
            adv.append(slice(None))
    return basic, adv


def _check_adv(adv, shape):
    """PyTorch's errors for advanced indices (bounds, mask shapes); negative ints wrapped."""
    dim = 0
    first = None
    out = []
    for k in adv:
        if isinstance(k, np.ndarray):
            if first is None:
                first = dim
            if k.dtype == np.bool_:
                for j, s in enumerate(k.shape):
                    if dim + j < len(shape) and shape[dim + j] != s:
                        raise IndexError(f"The shape of the mask {list(k.shape)} at index {j} does "
                                         f"not match the shape of the indexed tensor "
                                         f"{list(shape)} at index {dim + j}")
                dim += max(k.ndim, 1) if k.ndim else 0
            else:
                n = shape[dim]
                if k.size:
                    bad = (k >= n) | (k < -n)
                    if bad.any():
                        if n == 0:  # PyTorch's index kernel words an empty dimension apart
                            raise IndexError("index is out of bounds for dimension with size 0")
                        raise IndexError(f"index {int(k[bad].flat[0])} is out of bounds for "
                                         f"dimension {dim - first} with size {n}")
                    if (k < 0).any():
                        k = np.where(k < 0, k + n, k)
                dim += 1
        else:
            dim += 1
        out.append(k)
    return tuple(out)


def _basic(self, keys):
    """Apply ints, slices and None one dimension at a time, each as a view node."""
    cur = self
    dim = 0
    for k in keys:
        cd = cur._data
        if k is None:
            cur = unsqueeze(cur, dim)
            dim += 1
        elif isinstance(k, slice):
            if not _full_slice(k, cd.shape[dim]):  # PyTorch skips a whole-dimension slice
                cur = _slice(cur, dim, k)
            dim += 1
        else:
            size = cd.shape[dim]
            i = int(k)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            i = i + size if i < 0 else i
            key_d = (slice(None),) * dim + (i, Ellipsis)
            cur = make_view(cur, cd[key_d], SelectBackward0, (cd.shape, dim, i, dim, int(k)),
                            lambda x, kk=key_d: x[kk])
    return alias(self) if cur is self else cur


def _slice(cur, dim, k):
    cd = cur._data
    if k.step is not None and k.step <= 0:
        raise ValueError("step must be greater than zero")
    start, stop, step = k.indices(cd.shape[dim])
    sl = slice(start, max(stop, start), step)
    key_d = (slice(None),) * dim + (sl,)
    # PyTorch's node shows the slice as written (an open end is INT64_MAX)
    raw = (dim, 0 if k.start is None else int(k.start),
           _INT64_MAX if k.stop is None else int(k.stop), 1 if k.step is None else int(k.step))
    return make_view(cur, cd[key_d], SliceBackward0, (cd.shape, dim, sl) + raw,
                     lambda x, kk=key_d: x[kk])


def getitem(self, key):
    """``tensor[key]`` with PyTorch's semantics and graph nodes."""
    if type(key) is slice:  # the common ``x[a:b]``: one SliceBackward0, even for ``x[:]``
        if self._data.ndim == 0:
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        return _slice(self, 0, key)
    basic, adv = _split_key(key, self._data.ndim)
    if not any(isinstance(k, np.ndarray) for k in adv):
        return _basic(self, basic)
    if any(not (isinstance(k, slice) and k == slice(None)) for k in basic):
        src = _basic(self, basic)
    else:
        src = self
    d = src._data
    npkey = _check_adv(adv, d.shape)
    r = np.array(d[npkey], copy=True)
    if STATE.enabled and src._requires_grad:
        return record(r, keep_indices(IndexBackward0((edge_of(src),), (d.shape, npkey)), key))
    return _make(r)


def setitem(self, key, value):
    """``tensor[key] = value``: an in-place copy into the indexed region (CopySlices)."""
    from .gather_scatter import index_put_
    if type(key) is slice:
        _assign(self if self._data.ndim and _full_slice(key, self._data.shape[0])
                else getitem(self, key), value)
        return
    if key is False:  # PyTorch writes nothing (and checks nothing)
        return
    if key is True:  # an unsqueezed view, as PyTorch's
        _assign(getitem(self, None), value)
        return
    if isinstance(key, Tensor) and key._data.ndim == 0 and key._data.dtype == np.bool_:
        # PyTorch: a one-element mask into the unsqueezed view
        index_put_(getitem(self, None), (key._data.reshape(1),), value)
        return
    basic, adv = _split_key(key, self._data.ndim)
    has_adv = any(isinstance(k, np.ndarray) for k in adv)
    shape = self._data.shape
    # PyTorch skips slices that cover their whole dimension: ``x[0:] = v`` writes x itself
    full = len(basic) <= len(shape) and all(
        isinstance(k, slice) and _full_slice(k, n) for k, n in zip(basic, shape))
    dst = self if full else _basic(self, basic)
    if not has_adv:
        _assign(dst, value)
        return
    npkey = _check_adv(adv, dst._data.shape)
    index_put_(dst, npkey, value)


def _full_slice(k, n):
    return k.start in (None, 0) and k.step in (None, 1) and (k.stop is None or k.stop >= n)


def _assign(dst, value):
    """Indexing assignment into the selected region ``dst``, as PyTorch's copy_to: a Python
    number or 0-d tensor fills it (FillBackward3); a tensor, its leading size-1 dimensions
    dropped, must expand to the region (expand's error, before any autograd check)."""
    from .inplace import _copy_into, fill_
    if isinstance(value, Tensor):
        vd = value._data
        if vd.ndim == 0 and dst._data.ndim > 0:
            return fill_(dst, value)  # same shapes (a 0-d region) take the copy below
        if vd.shape != dst._data.shape:
            if value._stale_view and STATE.enabled:  # PyTorch's view of it asks for its history
                raise RuntimeError(value._stale_view)
            vs = vd.shape
            while vs and vs[0] == 1:
                vs = vs[1:]
            expand_shape(vs, vd.dtype, dst._data.shape)
            # PyTorch copies from a view of the value (ViewBackward0 even when no size-1 dim
            # went), expanded to the region when the sizes still differ (ExpandBackward0)
            value = value.view(vs)
            if vs != dst._data.shape:
                value = value.expand(dst._data.shape)
    elif isinstance(value, (int, float, np.integer, np.floating)):  # bool is an int
        return fill_(dst, Tensor._make(np.asarray(value, dtype=dst._data.dtype)))
    return _copy_into(dst, value)


Tensor.__getitem__ = getitem
Tensor.__setitem__ = setitem


# --- where ---------------------------------------------------------------------------------
from .. import _dtype as D, _warn  # noqa: E402
from ._spec import batch_aligned, defop, edgeless, front  # noqa: E402
from .binary import _scalar_ok  # noqa: E402
from .comparison import _result_dtype  # noqa: E402
from .binary import broadcast_error  # noqa: E402
from .._record import edges_first  # noqa: E402
from . import op  # noqa: E402

_NO_ARGS: dict = {}

_isT = isinstance

def _where_batched(spec, arrays, params):
    """where over a leading batch axis (the inputs' dims aligned after it)."""
    return spec.forward(*batch_aligned(arrays))


@defop("where", node="WhereBackward0", inputs=("condition", "self", "other"),
       saved=("condition",), broadcast=True, method=False, batch=_where_batched)
def _where(condition, self, other):
    """Elementwise ``self if condition else other`` of arrays in one dtype; WhereBackward0."""
    return np.where(condition, self, other)


@_where.backward
def _(ctx, grad):
    c = X.data(ctx.condition)
    if c.dtype != np.bool_:  # (a uint8 condition)
        c = c.astype(bool)
    shape = tuple(grad.shape)
    c = X.const(c if c.shape == shape else np.broadcast_to(c, shape), grad)
    z = X.zeros_like(grad)
    return (X.where(c, grad, z) if ctx.needs(0) else None,
            X.where(c, z, grad) if ctx.needs(1) else None)


@_where.jvp
def _(ctx, t_self, t_other):
    c = ctx.condition
    if c.dtype != D.bool_:
        c = c.to(D.bool_)
    return where(c, 0.0 if t_self is None else t_self, 0.0 if t_other is None else t_other)


edgeless(_where, "condition")
_where_forward, _where_record = _where.forward, _where.record


def _where_operand(v, rt):
    """An operand of where as an array of dtype ``rt``, and as the tensor the node takes (a
    number as a tensor that needs no gradient)."""
    if _isT(v, Tensor):
        d = v._data
        return (d if d.dtype == rt else d.astype(rt)), v
    d = np.asarray(v, dtype=rt)
    return d, _make(d)


def where(condition, input=None, other=None):
    """Elementwise choice ``input if condition else other`` (tensors or scalars, a scalar taken
    as a tensor that needs no gradient); with only a condition, the indices of its nonzero
    elements as a tuple.  WhereBackward0."""
    cd = condition._data
    if input.__class__ is Tensor and cd.dtype == np.bool_:
        # the common calls: a tensor and another of its dtype, or a number it keeps
        a = input._data
        k = other.__class__
        b = None
        if k is Tensor and other._data.dtype == a.dtype:
            b, tb = other._data, other
        elif (k is float or k is int) and a.dtype.kind == "f":
            b = np.asarray(other, a.dtype)
            tb = _make(b)
        if b is not None and cd.shape == a.shape and (b.shape == a.shape or not b.ndim):
            return _where_record(_where_forward(cd, a, b), (condition, input, tb), _NO_ARGS)
    if input is None and other is None:
        return tuple(_make(i.astype(np.int64)) for i in np.nonzero(cd if cd.ndim else cd[None]))
    if input is None or other is None or not (_isT(input, Tensor) or _scalar_ok(input)) or \
            not (_isT(other, Tensor) or _scalar_ok(other)):
        raise D.bad_combo("where", tuple(v for v in (condition, input, other) if v is not None))
    if cd.dtype != np.bool_:
        if cd.dtype != np.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                               f"with dtype {D.TYPE_NAMES[D.FROM_NP[cd.dtype]].replace('Tensor', '')}")
        _warn.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                   "will be removed in a future version of PyTorch. Use a boolean condition "
                   "instead.")
        cd = cd.astype(bool)
    ts = [v for v in (input, other) if _isT(v, Tensor)]
    sc = [v.item() if isinstance(v, np.generic) else v for v in (input, other)
          if not _isT(v, Tensor)]
    if ts:
        rt = _result_dtype(ts, sc).np
    else:
        rt = (D.DEFAULTS.float.np if any(isinstance(v, float) for v in sc)
              else np.bool_ if all(isinstance(v, bool) for v in sc) else np.int64)
    (a, ta), (b, tb) = _where_operand(input, rt), _where_operand(other, rt)
    try:
        r = _where_forward(cd, a, b)
    except ValueError:
        edges_first(*ts)
        raise broadcast_error(cd.shape, a.shape, b.shape) from None
    casts = None
    if ta._data.dtype != rt or tb._data.dtype != rt:
        casts = tuple(t._data.dtype if t._data.dtype != rt else None for t in (ta, tb))
    return _where_record(r, (condition, ta, tb), _NO_ARGS, casts)


where = front(_where, where)


def _where_method(self, condition, other):
    """``self.where(condition, other)``: ``torch.where(condition, self, other)``."""
    return where(condition, self, other)


op("_where_method", function=False, method=False, methods=("where",))(_where_method)
