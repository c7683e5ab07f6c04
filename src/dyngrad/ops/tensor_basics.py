"""Questions about a tensor and the conjugation family.

``is_nonzero``, ``is_signed``, ``is_same_size``, ``is_conj``, ``is_neg`` as functions (the
methods live on Tensor); ``conj``, ``resolve_conj``, ``resolve_neg`` and ``conj_physical``
(+ ``conj_physical_``).  For real tensors PyTorch's conj, resolve_conj, resolve_neg and
conj_physical return the tensor itself.  For complex tensors dyngrad has no lazy conjugate
bit: ``conj`` returns the conjugated values in a new tensor (ConjBackward0), so ``is_conj``
is always False and ``resolve_conj`` returns its input."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from . import op
from .._record import STATE, Node, Tensor, edge_of, record

_make = Tensor._make


def _need_tensor(fn, v, arg="input", pos=1):
    if not isinstance(v, Tensor):
        raise D.not_tensor(fn, arg, pos, v)


def _conj_grad(g):
    return g.conj() if isinstance(g, Tensor) else np.conj(g)


class ConjBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return _conj_grad(g),


class ConjPhysicalBackward0(ConjBackward0):
    __slots__ = ()


class ConjPhysicalBackward1(ConjBackward0):
    """conj_physical_ (in place); on a real tensor it changes nothing but is recorded."""
    __slots__ = ()


def _conj_copy(input, cls):
    data = np.conj(input._data)
    if STATE.enabled and input._requires_grad:
        return record(data, cls((edge_of(input),), ()))
    return _make(data)


@op()
def conj(input):
    """The complex conjugate; a real tensor is returned itself (as PyTorch)."""
    _need_tensor("conj", input)
    if input._data.dtype.kind != "c":
        return input
    return _conj_copy(input, ConjBackward0)


@op()
def conj_physical(input):
    """The complex conjugate, computed; a real tensor is returned itself."""
    _need_tensor("conj_physical", input)
    if input._data.dtype.kind != "c":
        return input
    return _conj_copy(input, ConjPhysicalBackward0)


def _conj_physical_inplace(old):
    data = np.conj(old._data) if old._data.dtype.kind == "c" else old._data.copy()
    if STATE.enabled and old._requires_grad:
        return record(data, ConjPhysicalBackward1((edge_of(old),), ()))
    return _make(data)


@op("conj_physical_")
def conj_physical_(input):
    """Conjugate in place (returns the tensor); recorded and counted even for real tensors."""
    _need_tensor("conj_physical_", input)
    from .inplace import apply
    return apply(input, _conj_physical_inplace)


@op()
def resolve_conj(input):
    """The tensor with its conjugate bit materialised: dyngrad never defers conjugation, so
    the tensor itself."""
    _need_tensor("resolve_conj", input)
    return input


@op()
def resolve_neg(input):
    """The tensor with its negative bit materialised: dyngrad never defers negation, so the
    tensor itself."""
    _need_tensor("resolve_neg", input)
    return input


@op()
def is_conj(input) -> bool:
    """False: dyngrad never defers conjugation."""
    _need_tensor("is_conj", input)
    return False


@op()
def is_neg(input) -> bool:
    """False: dyngrad never defers negation."""
    _need_tensor("is_neg", input)
    return False


@op()
def is_nonzero(input) -> bool:
    """Whether a one-element tensor is non-zero (PyTorch's errors for other sizes)."""
    _need_tensor("is_nonzero", input)
    return input.__bool__()


@op(method=False)
def is_signed(input) -> bool:
    _need_tensor("is_signed", input)
    return input.is_signed()


@op(method=False)
def is_same_size(input, other) -> bool:
    _need_tensor("is_same_size", input)
    _need_tensor("is_same_size", other, "other", 2)
    return input._data.shape == other._data.shape
