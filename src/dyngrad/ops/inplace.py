"""In-place ops, as PyTorch does them: refused on leaves that require grad (and views of
them) while recording; otherwise the op is recorded out of place on a snapshot and its
result written into the tensor's storage, the version counter bumped, and the history
rewritten -- the tensor's own ``grad_fn`` for a plain tensor, the base's (``CopySlices``)
for a view."""
from __future__ import annotations

import copy
import functools
import types
import weakref

import numpy as np

from . import OPS, inplace_of, op
from .._record import (RECORD_HOOKS, STATE, Node, Tensor, edge_of, grad_dtype, notify, sum_to)
from . import _dual as X
from ._dual import c_order, zeros_like
from ..autograd.node import IN_PLACE, AccumulateGrad, Saved, lazy
from .._record import edges_first
from ._spec import batch_aligned, defop
from .views import (apply_chain, expanded_strides, overlapping, partial_overlap, root_writeable,
                    writeable_alias)
from ..autograd import errors
from .. import _dtype as D

_make = Tensor._make


def _castable(src, dst):
    """PyTorch's can_cast on NumPy dtypes: no complex to real, no floating to integer, nothing
    but bool to bool (NumPy's same_kind also refuses a signed integer to an unsigned one, which
    PyTorch writes wrapping around: uint8.add_(int64))."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src.kind == "c" and dst.kind != "c":
        return False
    if src in D.FLOATING and dst not in D.INEXACT:
        return False
    return not (src.kind != "b" and dst.kind == "b")


def _check_cast(dst, src_dtype, to_bool=False):
    """PyTorch's error for writing a ``src_dtype`` result into ``dst`` (a bool ``dst`` takes
    anything unless ``to_bool``: an op's result written in place, not a copy)."""
    if not _castable(src_dtype, dst.dtype) and (to_bool or dst.dtype != np.bool_):
        raise RuntimeError(f"result type {D.scalar_type_name(src_dtype)} can't be cast to the "
                           f"desired output type {D.scalar_type_name(dst.dtype)}")


def _fw_records(self, args) -> bool:
    """Inside a dual level with grad mode off (forward_ad is loaded then): whether the op
    records for the tangents' sake."""
    from ..autograd.forward_ad import inplace_records
    return inplace_records(self, args)


def _recording(self, args):
    if not STATE.enabled:
        return False
    if self._requires_grad:
        # (grad mode off inside a dual level: only tangents make the op record)
        return not STATE.fw_only or _fw_records(self, args)
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            return not STATE.fw_only or _fw_records(self, args)
    return False


def _write(self, data, shared_ok=False):
    d = self._data
    if data.dtype != d.dtype:
        _check_cast(d, data.dtype)
    if data.shape != d.shape and not _bcast_into(data.shape, d.shape):
        _bad_bcast(self, data.shape)
    if not d.flags.writeable:
        # an op that may write shared elements (a scalar fill_) writes through a passing alias
        d = writeable_alias(d) if shared_ok and root_writeable(d) else _writable(self)
    np.copyto(d, data, casting="unsafe")
    self._vc[0] += 1


def _bcast_into(shape, target):
    return _bcast_ok(shape, target) and np.broadcast_shapes(shape, target) == target


def _writable(t):
    """``t``'s data as a writeable array: a read-only view (an expand, or a slice of one)
    whose elements are all distinct memory is written through a writeable alias, as PyTorch
    allows; real overlap is refused with PyTorch's error."""
    d = t._data
    if d.flags.writeable:
        return d
    if overlapping(d) or not root_writeable(d):
        raise _internal_overlap()
    t._data = d = writeable_alias(d)
    return d


def _internal_overlap():
    return RuntimeError("unsupported operation: more than one element of the written-to tensor "
                        "refers to a single memory location. Please clone() the tensor before "
                        "performing the operation.")


def _prewrite(self, others, recording, shared_ok=False):
    """What PyTorch checks before an in-place op computes, in its order: autograd misuse of the
    tensor written (check_inplace), then memory overlap, of the tensor with itself (unless the
    op may write shared elements, as a scalar fill_ may) and then with each operand
    (TensorIterator's compute_mem_overlaps).  Shapes and dtypes come after."""
    if recording:
        _guard(self)
        edges_first(*others)
    d = self._data
    if not shared_ok and not d.flags.writeable and overlapping(d):
        raise _internal_overlap()
    if others and not shared_ok:
        _check_overlap(d, others)


def _check_overlap(d, args):
    """PyTorch refuses an in-place op whose input partly overlaps the tensor written to
    (assert_no_partial_overlap; an input that is exactly the output is fine)."""
    for a in args:
        if isinstance(a, Tensor) and partial_overlap(d, a._data):
            raise RuntimeError("unsupported operation: some elements of the input tensor and "
                               "the written-to tensor refer to a single memory location. "
                               "Please clone() the tensor before performing the operation.")


def _guard(self):
    """The autograd misuse errors of a recorded in-place op on ``self``, in PyTorch's order
    (check_inplace; checked before the operands' shapes)."""
    base = self._base
    if base is not None:
        if self._creation is not None:
            raise RuntimeError(view_rebase_error(self, False))
        if self._requires_grad and base._grad_fn is None:
            raise errors.leaf_inplace(True)
    fn = self._grad_fn
    if (fn is None or fn._seq == -2) and self._requires_grad:
        # a view's history rebuilt but not yet used is still none to PyTorch's check
        raise errors.leaf_inplace(False)


_NO_GRAD_HINT = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
                 "clarify your code by moving both the view and the inplace either both inside the "
                 "no_grad block (if you don't want the inplace to be tracked) or both outside (if "
                 "you want the inplace to be tracked).")
_MULTI_HINT = (" This view is the output of a function that returns multiple views. Such functions "
               "do not allow the output views to be modified inplace. You should replace the "
               "inplace operation by an out-of-place one.")


def view_rebase_error(v, indirect):
    """PyTorch's message (handle_view_on_rebase) for a view made under no_grad or by a
    multi-view op (split, unbind, ...) that is changed in place (``indirect``: through its
    base or another view)."""
    from .views import NO_GRAD_MODE
    fn = v.__dict__.get("_stale_fn", v._grad_fn)
    what = "its base or another view of its base has been" if indirect else "is being"
    name = f"Output {v._output_nr} of {errors.short_name(type(fn).__name__)}" if fn is not None         else None
    if v._creation is NO_GRAD_MODE or fn is None:
        prefix = f"{name} is a view of a view which was created in" if fn is not None             else "A view was created in"
        msg = f"{prefix} no_grad mode and {what} modified inplace with grad mode enabled."
    else:
        msg = f"{name} is a view and {what} modified inplace."
    return msg + (_NO_GRAD_HINT if v._creation is NO_GRAD_MODE else _MULTI_HINT)


def apply(self, fn, *args, **kwargs):
    """Apply the out-of-place op ``fn(self, *args)`` in place on ``self``."""
    return _apply(self, fn, args, kwargs, False)


def _named_inplace(e: NotImplementedError) -> NotImplementedError:
    """PyTorch's forward-mode refusal names the op called: ``igamma_``, not ``igamma``."""
    msg = str(e)
    head = "Trying to use forward AD with "
    if msg.startswith(head):
        i = msg.find(" that does not support it", len(head))
        if i > 0 and not msg[:i].endswith("_"):
            return NotImplementedError(msg[:i] + "_" + msg[i:])
    return e


def _apply(self, fn, args, kwargs, shared_ok, operands=None, untracked=False):
    """``apply`` with the overlap rules chosen: ``shared_ok`` (the op may write shared
    elements), ``operands`` (the arguments checked for partial overlap; all by default);
    ``untracked``: an op PyTorch runs outside autograd (see ``UNTRACKED``)."""
    recording = not untracked and _recording(self, args)
    _prewrite(self, args if operands is None else operands, recording, shared_ok)
    if not recording:
        r = fn(self, *args, **kwargs)._data
        if r.dtype != self._data.dtype:
            _check_cast(self._data, r.dtype, True)
        _write(self, r, shared_ok)
        _after_untracked_write(self)
        return self
    base = self._base
    snap = _make(self._data.copy())
    snap._requires_grad = self._requires_grad
    snap._grad_fn = self._grad_fn
    if self._output_nr:
        snap._output_nr = self._output_nr
    if self._grad_fn is None and self._requires_grad:
        # the snapshot's edges lead to self's node (held here until the op has recorded)
        acc = AccumulateGrad.for_leaf(self)
        snap._acc = self._acc
    else:
        acc = None
    IN_PLACE[0] += 1
    try:
        r = fn(snap, *args, **kwargs)
    except NotImplementedError as e:
        raise _named_inplace(e) from None
    finally:
        IN_PLACE[0] -= 1
    del acc
    if r._data.dtype != self._data.dtype:
        _check_cast(self._data, r._data.dtype, True)
    node = r._grad_fn
    if node is not None and type(node)._named_inplace is not None:
        node._named_inplace()
    _write(self, r._data, shared_ok)
    if node is not None:
        node._odt = self._data.dtype  # the result has the tensor's dtype, not the op's
    if node is None:  # the op recorded nothing (a copy into an integer tensor)
        _after_untracked_write(self)
        return self
    if base is None or self._view_fn is None:
        _set_history(self, node)
        _own_outputs(node, r, self, True)
        if base is None:
            _refresh_views(self, None)
        if RECORD_HOOKS:
            notify(self)  # (forward AD: the tensor now carries the result's tangent)
        return self
    cs = CopySlices((edge_of(base),) + node.next_functions[1:],
                    (self._view_fn, node, base._data.shape, base._data.dtype))
    cs._odt = dt = base._data.dtype  # (gradients reaching it take the base's dtype)
    if dt.kind in "biu":
        # an integer base: an equal but distinct dtype object, so the engine's dtype test
        # (by identity) takes its slow path for every gradient reaching this node, and refuses
        # it there, when the node that made it has run (PyTorch's validate_outputs)
        cs._odt = copy.copy(dt)
    _set_history(base, cs)
    # the view gets a fresh node that reads its region out of the new base history
    _set_history(self, AsStridedBackward0(((cs, 0),), (self._view_fn, base._data.shape,
                                                       base._data.dtype)))
    _own_outputs(node, r, self, weakref.ref(self._grad_fn))
    _refresh_views(base, self)
    if RECORD_HOOKS:
        notify(base)
        notify(self)
    return self


def _own_outputs(node, r, t, fn):
    """The op's output ``r`` was written into ``t``: what ``node`` saved of it is now ``t``'s
    storage at its new version (a later in-place change of ``t`` is then caught), whose
    gradient flows into ``fn`` (True: into ``node`` itself; else a weak reference)."""
    saved = node._saved
    if not saved or type(saved) is not tuple:
        return
    rd = r._data
    for s in saved:
        if type(s) is Saved and s.is_output and s.counter is r._vc:
            if s.value is rd:
                s.value = t._data
            s.counter = t._vc
            if s.tensor_ref is None:
                s.version = t._vc[0]
            else:
                s.tensor_ref = s.tensor_ref[:2] + (t._vc[0],)
            s.is_output = fn


def _after_untracked_write(t):
    """An in-place change that recorded nothing (no_grad, or nothing requires grad) still
    changes the version the views' histories were made for: like PyTorch, a view that has a
    history gets a fresh one reading its region of the base."""
    base = t._base
    if base is None and len(t._vc) == 1:  # not a view, and no views of it
        return
    if base is not None:
        if t._view_fn is not None:
            _rebase_view(t, base)
        root = base
    else:
        root = t
    if len(t._vc) > 1:
        _refresh_views(root, t)


def _refresh_views(base, written):
    """After an in-place change (recorded or not), give every other live view sharing the
    version counter a fresh node that reads its region of its base's gradient (PyTorch
    regenerates these lazily; the result is the same)."""
    from .views import live_views
    for v in live_views(written if written is not None else base):
        if v is written or v._view_fn is None:
            continue
        vb = v._base
        if vb is not None:
            _rebase_view(v, vb)


def _rebase_view(v, vb):
    """A view whose base changed under it: a fresh AsStridedBackward0 history when it has
    one (or its base requires grad); a view made under no_grad or by a multi-view op
    becomes unusable instead, with PyTorch's error on its next use."""
    if v._grad_fn is None and not vb._requires_grad:
        # no history to rebuild now; PyTorch rebuilds it lazily, so if the base starts
        # requiring grad later this view reads its region of the base's gradient
        v.__dict__["_moved"] = True
        return
    if v._creation is not None:
        if not v._stale_view:
            v._stale_view = view_rebase_error(v, True)
            if v._grad_fn is not None:
                v.__dict__["_stale_fn"] = v._grad_fn  # named by a later in-place error
                v._grad_fn = None  # edge_of() then raises the error
            v._requires_grad = True
            v.__class__ = _stale_view_class()
        return
    old = v._grad_fn
    if type(old) is AsStridedBackward0:
        # PyTorch rebuilds a view's history lazily, so until then the old node lives on, and
        # outputs saved by an in-place op on the view are still named after it
        v.__dict__["_old_fn"] = old
    _set_history(v, lazy(AsStridedBackward0((edge_of(vb),), (v._view_fn, vb._data.shape,
                                                              vb._data.dtype)),
                         old is None or old._seq == -2), True)


_STALE_CLASS = []
_NOT_OPS = frozenset((
    "__init__", "__new__", "__repr__", "__str__", "__format__", "__getattribute__",
    "__getattr__", "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__", "__getstate__",
    "__setstate__", "__hash__", "__len__", "__iter__", "__bool__", "__float__", "__int__",
    "__index__", "__complex__", "__array__", "__dir__", "__sizeof__", "__init_subclass__",
    "__subclasshook__", "__class_getitem__", "__deepcopy__", "__copy__", "__del__",
    "__contains__", "__torch_function__",
    # no derivative: PyTorch never reads their inputs' history
    "argmax", "argmin", "argsort", "all", "any", "count_nonzero", "numpy", "item", "tolist",
    "size", "dim", "nonzero", "argwhere", "unique", "unique_consecutive", "bucketize",
    "searchsorted", "isnan", "isinf", "isfinite", "isclose", "allclose", "equal", "eq", "ne",
    "lt", "le", "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__and__", "__or__",
    "__xor__", "__invert__", "__rand__", "__ror__", "__rxor__", "logical_and", "logical_or",
    "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "signbit", "is_nonzero", "tolist", "data_ptr", "element_size", "nelement", "numel",
    "stride", "storage_offset", "is_contiguous", "new_tensor", "new_empty", "new_zeros",
    "new_ones", "new_full",
    # composites: PyTorch checks their arguments before any op of theirs reads a history
    "narrow", "__getitem__", "chunk", "flatten", "unflatten", "movedim", "moveaxis",
    "tensor_split", "take_along_dim", "repeat_interleave", "outer", "cross", "diag", "hsplit",
    "vsplit", "dsplit", "type", "to"))


def _stale_view_class():
    """A ``Tensor`` subclass (named ``Tensor``) given to views that can no longer rebuild their
    history.  PyTorch collects an op's input history before the op checks its arguments, so
    such a view's error comes first; each method here re-raises it in place of the method's
    own error (an argument-type error, raised earlier by PyTorch's parser, stays)."""
    if _STALE_CLASS:
        return _STALE_CLASS[0]

    def wrap(fn):
        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            try:
                return fn(self, *args, **kwargs)
            except TypeError:
                raise
            except Exception as e:
                stale = self._stale_view
                if stale and STATE.enabled and not str(e).startswith(stale[:40]):
                    raise RuntimeError(stale) from None
                raise
        return method

    ns = {"__slots__": (), "__module__": Tensor.__module__, "__qualname__": "Tensor"}
    for name in dir(Tensor):
        fn = getattr(Tensor, name, None)
        if name in _NOT_OPS or name.endswith("_") or not isinstance(fn, types.FunctionType):
            continue  # in-place methods keep their own order of checks
        if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
            continue
        ns[name] = wrap(fn)
    cls = type("Tensor", (Tensor,), ns)
    _STALE_CLASS.append(cls)
    return cls


def _set_history(t, node, deferred=False):
    """``t``'s history is now ``node``; a retained gradient moves with it (the old node no
    longer fills ``t.grad``) -- for a lazily rebuilt view (``deferred``) only when the new
    node is first used, as PyTorch moves it when it regenerates the view's grad_fn."""
    if t._retains_grad and deferred:
        old = t._grad_fn
        pending = old.__dict__.pop("_move_retain", None) if old is not None else None
        if pending is not None:  # rebuilt twice before first use: still waiting on the first
            node.__dict__["_move_retain"] = pending
        elif old is not None and old._retain is not None:
            ref = old._retain.get(t._output_nr)
            if ref is not None and ref() is t:
                node.__dict__["_move_retain"] = (ref, old, t._output_nr)
        t._grad_fn = node
        t._requires_grad = True
        if "_output_nr" in t.__dict__:
            del t.__dict__["_output_nr"]
        return
    if t._retains_grad:
        old = t._grad_fn
        if old is not None and old._retain is not None:
            ref = old._retain.get(t._output_nr)
            if ref is not None and ref() is t:
                del old._retain[t._output_nr]
        t._retains_grad = False
        t._grad_fn = node
        t._requires_grad = True
        if "_output_nr" in t.__dict__:
            del t.__dict__["_output_nr"]
        t.retain_grad()
        return
    t._grad_fn = node
    t._requires_grad = True
    if "_output_nr" in t.__dict__:
        del t.__dict__["_output_nr"]


class CopySlices(Node):
    """History of a base whose region (a view) was changed in place: the region's gradient
    goes through the in-place op's node, the rest passes to the base's previous history."""

    __slots__ = ()

    def name(self) -> str:
        return "torch::autograd::CopySlices"

    def _bw(self, g, graph):
        chain, node, shape, dtype = self._unpack()
        if dtype.kind in "biu":  # an integer base: PyTorch's engine refuses its gradient
            raise errors.integer_gradient(dtype)
        res = _clone_any(g)
        outs = node._bw(_contiguous_any(apply_chain(g, chain)), graph)
        _region_set_any(apply_chain(res, chain), outs[0])
        return (res,) + tuple(outs[1:])

    def _release(self):
        s = self._saved
        if s is not None:
            s[1]._release()
            if s[1]._saved is None:
                self._saved = None


def _copy_slices_fw(node, tangents):
    """Forward mode through CopySlices, as PyTorch's forward AD of an in-place op on a view:
    the base's tangent (zeros when it has none) with the view's region replaced by the op's
    tangent, which the op's node gives for the region of the old tangent and the op's other
    inputs' tangents."""
    from ..autograd import forward_ad as fw
    chain, inner, shape, dtype = node._saved[:4]
    tb = tangents[0]
    new = Tensor._make(np.zeros(shape, dtype)) if tb is None else tb.clone()
    region = apply_chain(new, chain)
    before = None if tb is None else apply_chain(tb, chain).contiguous()
    out = Tensor._make(np.zeros(tuple(region.shape), dtype))
    busy = fw._BUSY[0]
    try:
        (t,) = fw._jvp(inner, [before] + list(tangents[1:]), [out])[:1]
    finally:
        fw._BUSY[0] = busy
    if t is None:
        region.zero_()
    else:
        region.copy_(t)
    return [new]


CopySlices._fw_rule = _copy_slices_fw


class AsStridedBackward0(Node):
    """A view's history after an in-place op on it: its region of the base's gradient."""

    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        chain, shape = self._saved[:2]
        # the base's dtype (a view_as_real/view_as_complex chain changes it)
        dt = self._saved[2] if len(self._saved) > 2 else g.dtype
        return _strided_place_any(g, shape, chain, dt),

    @staticmethod
    def _positions(shape, chain):
        """Where each element of the view lies in the flattened base."""
        return apply_chain(np.arange(int(np.prod(shape)), dtype=np.intp).reshape(shape), chain)


AsStridedBackward0._fw_rule = lambda node, tangents: [
    None if tangents[0] is None else apply_chain(tangents[0], node._saved[0]).contiguous()]


def _region_set_np(region, g):
    if not region.flags.writeable:  # a slice of an expand
        if g is not None and overlapping(region):
            # PyTorch copies the region's gradient in with copy_, which refuses overlap
            raise _internal_overlap()
        region = writeable_alias(region)
    region[...] = 0 if g is None else g


def _region_set_t(region, g):
    if g is None:
        region.zero_()
    else:
        region.copy_(g)  # refuses a region whose elements overlap, as PyTorch


def _strided_place_np(g, shape, chain, dt):
    z = np.zeros(shape, dtype=dt)
    r = apply_chain(z, chain)
    if r.flags.writeable:
        r[...] = g
    else:
        np.add.at(z.reshape(-1), AsStridedBackward0._positions(shape, chain), g)
    return z


def _strided_place_t(g, shape, chain, dt):
    from .._factories import zeros
    from .._dtype import FROM_NP
    z = zeros(shape, dtype=FROM_NP[np.dtype(dt)])
    if 0 in tuple(g.shape):  # an empty view: PyTorch returns fresh zeros, no graph
        return z
    if apply_chain(z._data, chain).flags.writeable:
        apply_chain(z, chain).copy_(g)
        return z
    # elements sharing memory (an expand): their gradients add up
    positions = AsStridedBackward0._positions(shape, chain)
    from .gather_scatter import index_put_acc
    return index_put_acc(z.reshape(-1), (positions,), g).reshape(shape)


# the backward kernels of the in-place history nodes: NumPy on arrays, the recorded ops on
# Tensors (create_graph)
_clone_any = X.twin(lambda g: np.array(g, dtype=g.dtype, copy=True), lambda g: g.clone())
_contiguous_any = X.twin(c_order, lambda g: g.contiguous())
# the region (a view of the base's gradient) set to the in-place op's gradient, zeros for None
_region_set_any = X.twin(_region_set_np, _region_set_t)
# zeros of the base's ``shape`` with ``g`` written (added, where elements share memory) in the
# view ``chain`` gives
_strided_place_any = X.twin(_strided_place_np, _strided_place_t)


# --- copy_, fill_ and zero_ -------------------------------------------------------------
# Each records the node of a declaration: its out-of-place kernel (the tensor's new value),
# which ``_apply`` writes into the tensor.
def _aligned(spec, arrays, params):
    """The kernel over a leading batch axis (the inputs' dims aligned after it)."""
    return spec.forward(*batch_aligned(arrays), **params)


@defop("copy_", node="CopyBackwards", inputs=("self", "src"), broadcast=True, function=False,
       method=False, batch=_aligned)
def _copy(self, src):
    """``src`` broadcast into ``self``'s shape and dtype; CopyBackwards."""
    if src.shape == self.shape:
        return src.astype(self.dtype, copy=True)
    try:
        return np.broadcast_to(src, self.shape).astype(self.dtype, copy=True)
    except ValueError:
        _bad_bcast(_make(self), src.shape)


def _into_bw(ctx, grad):
    """Nothing to the tensor written; the incoming gradient, summed back, to the value copied
    in (indexing assignment drops a value's leading size-1 dims: they come back)."""
    gs = None
    if ctx.needs(1):
        shape = ctx.shape(1)
        casts = ctx._node._casts
        # in the value's dtype first, then summed (PyTorch: grad.to(src), then sum_to)
        gs = grad if casts is None else grad_dtype(grad, casts[1])
        n = len(shape) - len(grad.shape)
        gs = sum_to(gs, shape[n:]) if n > 0 else gs
        if n > 0:
            gs = gs.reshape(shape)
    return (zeros_like(grad) if ctx.needs(0) else None), gs  # zeros, not g * 0: NaN stays out


def _into_jvp(ctx, t_self, t_src):
    """The tangent of the value copied in, in the tensor's shape and dtype."""
    if t_src is None:
        return zeros_like(t_self)
    shape = ctx.shape(0)
    n = t_src.ndim - len(shape)
    if n > 0:
        t_src = t_src.reshape(tuple(t_src.shape)[n:])
    dt = D.FROM_NP[np.dtype(ctx._node._odt)]
    if t_src.dtype != dt:
        t_src = t_src.to(dt)
    return X.expand_to(t_src, shape) + 0 if tuple(t_src.shape) != shape else t_src + 0


_copy.backward(_into_bw)
_copy.jvp(_into_jvp)


@defop("fill_", node="FillBackward3", inputs=("self", "value"), broadcast=True, function=False,
       method=False, batch=_aligned)
def _fill_tensor(self, value):
    """``self`` filled with the 0-d ``value``; FillBackward3 (the value's gradient: the sum)."""
    return np.broadcast_to(value, self.shape).astype(self.dtype, copy=True)


_fill_tensor.backward(_into_bw)
_fill_tensor.jvp(_into_jvp)


def _zeros_bw(ctx, grad):
    return zeros_like(grad),  # zeros, not g * 0: a NaN gradient must not leak


@defop("fill_", node="FillBackward2", elementwise=True, function=False, method=False)
def _fill(self, value):
    """``self`` filled with the number ``value``; FillBackward2 (PyTorch's in-place Scalar
    overload)."""
    return np.full(self.shape, value, dtype=self.dtype)


@defop("zero_", node="ZeroBackward0", elementwise=True, function=False, method=False)
def _zero(self):
    """Zeros of ``self``'s shape and dtype; ZeroBackward0."""
    return np.zeros_like(self)


_fill.backward(_zeros_bw)
_zero.backward(_zeros_bw)
for _spec in (_copy, _fill_tensor, _fill, _zero):
    OPS.pop(_spec.key, None)  # the kernels of the in-place methods below (fill_: two)
del _spec
_copy_forward, _fill_forward, _zero_fn = _copy.forward, _fill.forward, _zero.fn
_NO_ARGS: dict = {}


def _copy_fn(old, src, spec=_copy, strict=False):
    """``src`` broadcast into ``old``'s shape and dtype (``spec``: copy_'s kernel, or fill_'s
    with a 0-d tensor).  Indexing assignment drops a value's leading size-1 dimensions;
    ``copy_`` itself (``strict``) refuses them, as PyTorch does."""
    if isinstance(src, Tensor):
        sd = src._data
        if sd.ndim > old._data.ndim and not strict and \
                all(s == 1 for s in sd.shape[:sd.ndim - old._data.ndim]):
            sd = sd.reshape(sd.shape[sd.ndim - old._data.ndim:])
        data = _copy_forward(old._data, sd)
        # copying into an integer or bool tensor records nothing (it cannot require grad);
        # fill_ with a 0-d tensor records even then, as PyTorch does
        if STATE.enabled and (old._requires_grad or src._requires_grad) and \
                (spec is _fill_tensor or old._data.dtype in D.INEXACT):
            dt = old._data.dtype
            return spec.record(data, (old, src), _NO_ARGS,
                               None if sd.dtype == dt else (None, sd.dtype))
        return _make(data)
    data = _fill_forward(old._data, src)
    if STATE.enabled and old._requires_grad:
        return _fill.record(data, (old,), _NO_ARGS)
    return _make(data)


@op(function=False)
def copy_(self, src, non_blocking=False):
    """Copy ``src`` (broadcast, cast) into this tensor in place."""
    return _copy_into(self, src, True)


def _copy_into(self, src, strict=False):
    """``copy_``, or (not ``strict``) indexing assignment's copy into the indexed region."""
    if not isinstance(src, Tensor):
        if isinstance(src, (int, float, bool, np.number)):
            return apply(self, _copy_fn, src)
        src = _make(np.asarray(src))
    if src._requires_grad and self._data.dtype not in D.INEXACT and (
            strict or src._data.ndim != 0 or self._data.ndim == 0):
        # PyTorch's copy_ asks for a gradient only into a differentiable dtype, so copying into
        # an integer tensor (even a view that refuses in-place changes) checks nothing of
        # autograd; a 0-d value assigned by indexing into a larger region goes through fill_,
        # which does (into a 0-d region it is copy_ again)
        src = src.detach()
    # copying a tensor onto itself (or onto the same memory, shape and strides) checks no
    # overlap: PyTorch returns early from the kernel
    d, sd = self._data, src._data
    st = sd.strides
    expanded = not strict and sd.shape != d.shape and _bcast_into(sd.shape, d.shape)
    if expanded:
        # indexing assignment expands the source first (copy_to) and compares that, with the
        # strides PyTorch's expand gives
        st = expanded_strides(sd.shape, st, d.shape)
    same = src is self or ((expanded or sd.shape == d.shape) and st == d.strides and
                           sd.dtype == d.dtype and
                           sd.__array_interface__["data"][0] == d.__array_interface__["data"][0])
    if expanded and not same:
        # the overlap test sees the expanded source too (a repeated dim makes it "too hard"),
        # after the autograd checks
        if _recording(self, (src,)):
            _guard(self)
        if partial_overlap(d, np.lib.stride_tricks.as_strided(sd, d.shape, st)):
            _check_overlap(d, (src,))
        return _apply(self, _copy_fn, (src, _copy, strict), {}, False, ())
    return _apply(self, _copy_fn, (src, _copy, strict), {}, same)


@op(function=False)
def fill_(self, value):
    """Set every element to ``value`` in place."""
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions.")
        # PyTorch fills with the value's number: no overlap check against it
        return _apply(self, _copy_fn, (value, _fill_tensor), {}, False, ())
    if not self._data.flags.writeable and not _recording(self, ()):
        return _fill_shared(self, value)
    return _apply(self, _copy_fn, (value,), {}, True)


def _fill_shared(self, value):
    """fill_/zero_ outside autograd on a read-only view: PyTorch fills even an expand whose
    elements share memory (every write stores the same value)."""
    d = self._data
    if not overlapping(d) or not root_writeable(d):
        d = _writable(self)
    else:
        d = writeable_alias(d)  # not kept: other in-place ops still refuse this overlap
    d[...] = value
    self._vc[0] += 1
    _after_untracked_write(self)
    return self


@op(function=False)
def zero_(self):
    """Set every element to zero in place (returns self)."""
    if not _recording(self, ()):
        return _fill_shared(self, 0)
    return _apply(self, _zero_fn, (), {}, True)


OPS["copy_"].update(spec=_copy, nodes=("CopyBackwards",))
OPS["fill_"].update(spec=_fill, nodes=("FillBackward2", "FillBackward3"))
OPS["zero_"].update(spec=_zero, nodes=("ZeroBackward0",))


# --- arithmetic in place ------------------------------------------------------------------
_NUMBER_FIRST = (np.add, np.subtract)  # ops that convert a number to bfloat16 first


def _arith(name, fn_name, np_fn):
    def f(self, other, *args, **kwargs):
        from . import binary as P
        fn = getattr(P, fn_name)
        if not _recording(self, (other,)) and not args and not kwargs:
            od = other._data if isinstance(other, Tensor) else other
            d = self._data
            if not d.flags.writeable or od.__class__ is np.ndarray:
                _prewrite(self, (other,), False)
            if isinstance(other, Tensor) and od.shape != d.shape:
                if not _bcast_ok(od.shape, d.shape) or \
                        np.broadcast_shapes(od.shape, d.shape) != d.shape:
                    _bad_bcast(self, od.shape)
            if np_fn is np.true_divide and d.dtype.kind in "biu":
                raise RuntimeError(f"result type Float can't be cast to the desired output type "
                                   f"{D.scalar_type_name(d.dtype)}")
            if isinstance(od, float) and d.dtype.kind in "biu":
                raise RuntimeError(f"result type Float can't be cast to the desired output type "
                                   f"{D.scalar_type_name(d.dtype)}")
            if od.__class__ is int and d.dtype == np.bool_:
                _check_cast(d, np.dtype(np.int64), True)
            if isinstance(od, np.ndarray) and od.dtype != d.dtype:
                _check_cast(d, od.dtype, True)
            if not d.flags.writeable:
                d = _writable(self)
            if od.__class__ is float and d.dtype == D.BF16 and np_fn in _NUMBER_FIRST:
                od = float(D.BF16.type(od))  # as add/sub do (binary._binary)
            np_fn(d, od, out=d, casting="unsafe")
            self._vc[0] += 1
            _after_untracked_write(self)
            return self
        if isinstance(other, Tensor):
            sh = np.broadcast_shapes(other._data.shape, self._data.shape) \
                if _bcast_ok(other._data.shape, self._data.shape) else None
            if sh != self._data.shape:
                _prewrite(self, (other,), True)
                _bad_bcast(self, other._data.shape, True)
        return apply(self, fn, other, *args, **kwargs)

    f.__name__ = name
    f.__doc__ = f"In-place {fn_name}; returns self."
    return f


def _bcast_ok(a, b):
    try:
        np.broadcast_shapes(a, b)
        return True
    except ValueError:
        return False


def _bad_bcast(self, shape, recording=False):
    """PyTorch's error for an in-place operand of ``shape`` that does not fit ``self``: a
    recorded op's autograd misuse first, then shapes that do not broadcast at all, then a
    broadcast shape larger than the tensor written to."""
    if recording:
        _guard(self)
    d = self._data
    if not _bcast_ok(d.shape, shape):
        from .binary import broadcast_error
        raise broadcast_error(d.shape, shape)
    raise RuntimeError(f"output with shape {list(d.shape)} doesn't match the broadcast shape "
                       f"{list(np.broadcast_shapes(d.shape, shape))}")


_add_ = _arith("add_", "add", np.add)
_sub_ = _arith("sub_", "sub", np.subtract)
_mul_ = _arith("mul_", "mul", np.multiply)
_div_ = _arith("div_", "div", np.true_divide)


def _alpha_inplace(self, other, alpha, fn_name):
    """add_/sub_ with alpha != 1: shapes checked like PyTorch, node as the out-of-place op."""
    if isinstance(other, Tensor):
        d, od = self._data, other._data
        recording = _recording(self, (other,))
        _prewrite(self, (other,), recording)
        if od.shape != d.shape and (not _bcast_ok(od.shape, d.shape)
                                    or np.broadcast_shapes(od.shape, d.shape) != d.shape):
            _bad_bcast(self, od.shape, recording)
    if not _recording(self, (other,)):
        od = other._data if isinstance(other, Tensor) else other
        d = self._data
        if isinstance(od, np.ndarray) and od.dtype != d.dtype:
            _check_cast(d, od.dtype)
        elif isinstance(od, float) and d.dtype.kind in "biu":
            _check_cast(d, np.dtype(D.DEFAULTS.float.np))
        if alpha.__class__ is not int:
            from .binary import alpha_check
            alpha_check(d.dtype, alpha)
        a = alpha if fn_name == "add" else -alpha
        if not d.flags.writeable:
            d = _writable(self)
        d += (od * a).astype(d.dtype, copy=False) if isinstance(od, np.ndarray) else od * a
        self._vc[0] += 1
        _after_untracked_write(self)
        return self
    from . import binary as P
    return apply(self, getattr(P, fn_name), other, alpha=alpha)


def add_(self, other, *, alpha=1):
    """In-place ``self += alpha * other``; returns self."""
    if alpha.__class__ is not int or alpha != 1:
        return _alpha_inplace(self, other, alpha, "add")
    return _add_(self, other)


def sub_(self, other, *, alpha=1):
    """In-place ``self -= alpha * other``; returns self."""
    if self._data.dtype == np.bool_ or (other._data.dtype == np.bool_ if isinstance(other, Tensor)
                                         else isinstance(other, (bool, np.bool_))):
        from .binary import _bool_sub_error
        raise _bool_sub_error(self, other)
    if alpha.__class__ is not int or alpha != 1:
        return _alpha_inplace(self, other, alpha, "sub")
    return _sub_(self, other)


op("add_", function=False, methods=("__iadd__",))(add_)
op("sub_", function=False, methods=("__isub__", "subtract_"))(sub_)
op("mul_", function=False, methods=("__imul__", "multiply_"))(_mul_)
op("div_", function=False, methods=("__itruediv__", "divide_", "true_divide_"))(_div_)
for _n in ("add", "sub", "mul", "div"):
    # their recorded form is the declared op's, applied in place (``apply``)
    inplace_of(_n + "_", _n)


def _unary_inplace(name, fn_name):
    def f(self, *args, **kwargs):
        import importlib
        pkg = importlib.import_module(__name__.split(".")[0])
        return apply(self, getattr(pkg, fn_name), *args, **kwargs)

    f.__name__ = name
    f.__doc__ = f"In-place {fn_name}; returns self."
    op(name, function=False)(f)
    inplace_of(name, fn_name)
    return f


def _clamp_inplace(name, fn_name):
    """clamp_/clip_/clamp_min_/clamp_max_: with Python-scalar bounds PyTorch checks the bounds'
    result type against the tensor first and names the tensor's C++ type (``long int``)."""
    def f(self, *args, **kwargs):
        from . import comparison as E
        bounds = args + tuple(kwargs.values())
        if not any(isinstance(b, Tensor) for b in bounds):
            dt = self._data.dtype
            rt = None
            if any(isinstance(b, complex) for b in bounds):
                rt = D.scalar_result(D.FROM_NP[dt], 1j).np if dt.kind in "biu" else None
            else:
                r = E._result_dtype((self,), [b for b in bounds if not isinstance(b, Tensor)]).np
                rt = r if r != dt else None
            if rt is not None:
                raise RuntimeError(f"result type {D.scalar_type_name(rt)} can't be cast to the "
                                   f"desired output type {D.c_name(dt)}")
        return apply(self, getattr(E, fn_name), *args, **kwargs)

    f.__name__ = name
    f.__doc__ = f"In-place {fn_name}; returns self."
    op(name, function=False)(f)
    inplace_of(name, fn_name)
    return f


for _n in ("clamp", "clip", "clamp_min", "clamp_max"):
    _clamp_inplace(_n + "_", _n)


# --- in-place forms, by rule -----------------------------------------------------------------
# Every op of an elementwise family gets ``Tensor.<name>_`` (and one for each method alias,
# e.g. ``negative_``), applying the op in place; PyTorch keeps the few in OUT_OF_PLACE_ONLY
# out of place.  Ops of other families that PyTorch also changes in place (their result has
# the tensor's shape) are named in INPLACE_ALSO.  Forms registered by hand (add_, clamp_, the
# in-place views, ...) are kept.  tests/test_ops_more.py checks the outcome against PyTorch's
# Tensor methods, so the rule and PyTorch cannot drift apart.
INPLACE_FAMILIES = ("binary", "unary", "comparison", "special")
INPLACE_ALSO = ("addmm", "baddbmm", "addmv", "addr", "addcmul", "addcdiv", "cumsum", "cumprod",
                "index_add", "index_copy", "index_fill", "masked_fill", "masked_scatter",
                "scatter", "scatter_add", "tril", "triu")
OUT_OF_PLACE_ONLY = frozenset((
    "allclose", "equal", "isclose", "isfinite", "isinf", "isnan", "isneginf", "isposinf",
    "isreal", "signbit", "angle", "positive", "clone", "contiguous", "rsub", "fmax", "fmin",
    "maximum", "minimum", "logaddexp", "logaddexp2", "frexp"))


def inplace_forms(ops):
    """``{in-place name: op name}`` that the rule gives for the op table ``ops``."""
    out = {}
    for name, info in ops.items():
        if name.startswith("_") or name.endswith("_") or name in OUT_OF_PLACE_ONLY:
            continue
        if info["module"] not in INPLACE_FAMILIES and name not in INPLACE_ALSO:
            continue
        names = ((name,) if info["method"] else ()) + info["methods"]
        for n in names:
            if not n.startswith("_") and n not in OUT_OF_PLACE_ONLY:
                out.setdefault(n + "_", name)
    return out


# In-place forms PyTorch gives no autograd formula at all (unlike ops whose derivative is
# "not implemented" or zero, such as gcd_ or eq_): they never check the tensor's history, so a
# leaf that requires grad (or a view of one) is changed in place like any tensor, records
# nothing, and keeps requires_grad; only its version moves.
UNTRACKED = frozenset(("logical_and_", "logical_or_", "logical_xor_", "logical_not_"))


# Python's augmented assignments that PyTorch's Tensor maps to these in-place forms (``x %= y``
# changes ``x``, as ``x += y`` does with add_); without them Python rebinds ``x`` to a new tensor
_AUGMENTED = {"remainder_": ("__imod__",), "floor_divide_": ("__ifloordiv__",),
              "pow_": ("__ipow__",), "bitwise_and_": ("__iand__",), "bitwise_or_": ("__ior__",),
              "bitwise_xor_": ("__ixor__",)}


def _inplace_form(name, base, fn):
    if name in UNTRACKED:
        def f(self, *args, **kwargs):
            return _apply(self, fn, args, kwargs, False, untracked=True)
    else:
        def f(self, *args, **kwargs):
            return apply(self, fn, *args, **kwargs)

    f.__name__ = name
    f.__doc__ = f"In-place {name[:-1]}; returns self."
    op(name, function=False, methods=_AUGMENTED.get(name, ()))(f)
    inplace_of(name, base)
    return f


def register_inplace_forms():
    """Register the in-place forms the rule gives (called once every op family is loaded)."""
    from . import OPS
    taken = set(OPS).union(*(info["methods"] for info in OPS.values()))
    for name, base in inplace_forms(OPS).items():
        if name not in taken:
            _inplace_form(name, base, OPS[base]["fn"])


from .. import _tensor as _tensor_module  # noqa: E402

# Tensor's own methods call it (the core registers nothing from above itself)
_tensor_module.LATE.rebase_view = _rebase_view
