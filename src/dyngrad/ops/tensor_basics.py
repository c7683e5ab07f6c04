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
