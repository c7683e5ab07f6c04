"""Questions about a tensor, the conjugation family, and a tensor's copies.

``is_nonzero``, ``is_signed``, ``is_same_size``, ``is_conj``, ``is_neg`` as functions (the
methods live on Tensor); ``conj``, ``resolve_conj``, ``resolve_neg`` and ``conj_physical``
(+ ``conj_physical_``).  For real tensors PyTorch's conj, resolve_conj, resolve_neg and
conj_physical return the tensor itself.  For complex tensors dyngrad has no lazy conjugate
bit: ``conj`` returns the conjugated values in a new tensor (ConjBackward0), so ``is_conj``
is always False and ``resolve_conj`` returns its input."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from . import _dual as X
from . import inplace_of, op, query
from ._spec import front, inplace_node, unary
from .._record import Tensor


def _need_tensor(fn, v, arg="input", pos=1):
    if not isinstance(v, Tensor):
        raise D.not_tensor(fn, arg, pos, v)


def _conj_bw(g, x, y):
    return X.conj(g)


conj = unary("conj", np.conj, _conj_bw, module=__name__, saved=(), promote=None,
             doc="The complex conjugate; a real tensor is returned itself (as PyTorch).")
conj_physical = unary("conj_physical", np.conj, _conj_bw, module=__name__, saved=(),
                      promote=None, doc="The complex conjugate, computed; a real tensor is "
                      "returned itself.")


def _real_is_itself(spec):
    """PyTorch's conj and conj_physical give a real tensor back itself (no node)."""
    declared = spec.fn

    def f(input):
        if isinstance(input, Tensor) and input._data.dtype.kind != "c":
            return input
        return declared(input)

    f.__doc__ = spec.forward.__doc__
    return front(spec, f)


conj = _real_is_itself(conj)
_conj_physical_node = inplace_node(conj_physical, "ConjPhysicalBackward1")
conj_physical = _real_is_itself(conj_physical)
ConjPhysicalBackward1 = _conj_physical_node.node_cls


@op("conj_physical_")
def conj_physical_(input):
    """Conjugate in place (returns the tensor); recorded and counted even for real tensors."""
    _need_tensor("conj_physical_", input)
    from .inplace import apply
    return apply(input, _conj_physical_node)


inplace_of("conj_physical_", "conj_physical")


@query()
def resolve_conj(input):
    """The tensor with its conjugate bit materialised: dyngrad never defers conjugation, so
    the tensor itself."""
    return input


@query()
def resolve_neg(input):
    """The tensor with its negative bit materialised: dyngrad never defers negation, so the
    tensor itself."""
    return input


@query()
def is_conj(input) -> bool:
    """False: dyngrad never defers conjugation."""
    return False


@query()
def is_neg(input) -> bool:
    """False: dyngrad never defers negation."""
    return False


@query(direct=False)  # a value read: vmap's per-sample loop, not torch.vmap's error
def is_nonzero(input) -> bool:
    """Whether a one-element tensor is non-zero (PyTorch's errors for other sizes)."""
    return input.__bool__()


@query(method=False)
def is_signed(input) -> bool:
    """Whether the dtype is a signed one (the floating and complex dtypes included)."""
    return input.dtype.is_signed


@query(method=False, tensors=("input", "other"))
def is_same_size(input, other) -> bool:
    """Whether the two tensors have the same size (under vmap: each sample's)."""
    if type(input) is Tensor and type(other) is Tensor:
        return input._data.shape == other._data.shape
    return input.shape == other.shape


# --- dtype conversion and copies ------------------------------------------------------
from .._record import STATE, Node, edge_of, grad_dtype, record  # noqa: E402
from .._tensor import _CHANNELS_LAST_ORDER, channels_last_format  # noqa: E402
from . import composite  # noqa: E402
from ._spec import defop, quick  # noqa: E402

_make = Tensor._make

class ToCopyBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return grad_dtype(g, self._saved[0]),


def to_dtype(x, dt, memory_format=None):
    """A copy of ``x`` in dtype ``dt`` (laid out as ``memory_format`` asks, else keeping the
    layout); differentiable between floating and complex dtypes (a complex gradient reaching a
    real input keeps its real part; NaN, inf and overflow convert silently, as in PyTorch)."""
    with np.errstate(all="ignore"):
        d = x._data.astype(dt.np)
    if memory_format is not None:
        d = layout_copy(d, memory_format)
    if STATE.enabled and x._requires_grad and dt.np in D.INEXACT:
        return record(d, ToCopyBackward0((edge_of(x),), (x._data.dtype,)))
    return _make(d)


def _clone_batch(spec, arrays, params):
    """clone of a batch: each sample's layout is kept (a channels-last layout is a sample's)."""
    mf = params.get("memory_format")
    return layout_copy(arrays[0], None if mf in _CHANNELS_LAST_ORDER else mf)


@defop("clone", node="CloneBackward0", linear=True, batch=_clone_batch)
def clone(self, *, memory_format=None):
    """A copy with its own storage, keeping the memory layout (PyTorch's preserve_format),
    row-major (contiguous_format) or channels-last; CloneBackward0."""
    return layout_copy(self, memory_format)


@clone.backward
def _(ctx, grad):
    return (grad,)


CloneBackward0 = clone.node_cls
CloneBackward0._bw = lambda self, g, graph: (g,)  # the formula, without a ctx
_clone, clone = clone, clone.fn
_clone.declared = clone  # (what ``quick`` calls for a dtype the forward does not take as is)


def layout_copy(src, memory_format):
    """A copy of ``src`` laid out as ``memory_format`` asks (None: preserve the layout)."""
    order = _CHANNELS_LAST_ORDER.get(memory_format)
    if order is None:
        return src.copy(order="C" if memory_format == "torch.contiguous_format" else "K")
    rank = len(order)
    if src.ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {memory_format[6:]} format")
    last = (0,) + tuple(range(2, rank)) + (1,)
    back = (0, rank - 1) + tuple(range(1, rank - 1))
    return np.ascontiguousarray(src.transpose(last)).transpose(back)


@composite()
def contiguous(input, memory_format=None):
    """Self when already laid out as ``memory_format`` asks (row-major by default), else a
    copy that is."""
    if memory_format in _CHANNELS_LAST_ORDER:
        if channels_last_format(input._data) == memory_format:
            return input
        return clone(input, memory_format=memory_format)
    if input._data.flags.c_contiguous:
        return input
    return quick(_clone, input, (), _ROW_MAJOR, _ROW_MAJOR)


_ROW_MAJOR = {"memory_format": "torch.contiguous_format"}



from .. import _tensor as _tensor_module  # noqa: E402

# Tensor's own methods call it (the core registers nothing from above itself)
_tensor_module.LATE.to_dtype = to_dtype
