"""``torch.result_type``, ``promote_types``, ``can_cast``, ``is_floating_point`` and
``is_complex``: PyTorch's type-promotion queries, on the rules of ``_dtype``.

``result_type`` follows PyTorch's ResultTypeState: operands fall into three priorities
(dimensioned tensors, 0-d tensors, Python numbers), each promoted within itself, and a lower
priority only decides the result when it is of a higher category (bool < integer < floating <
complex).  A Python float or complex counts as the default (complex) dtype.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _dtype as D

__all__ = ["result_type", "promote_types", "can_cast", "is_floating_point", "is_complex"]

_SIGNATURES = ("(Tensor tensor, Tensor other)", "(Number scalar, Tensor tensor)",
               "(Tensor tensor, Number other)", "(Number scalar1, Number scalar2)")
_KINDS = (("T", "T"), ("N", "T"), ("T", "N"), ("N", "N"))


def _is_number(x) -> bool:
    from ._tensor import Tensor
    return not isinstance(x, Tensor) and isinstance(x, (numbers.Number, np.number, np.bool_))


def _arg_name(x, items=False) -> str:
    """The name PyTorch's parser gives an argument's type (with ``items``, a list's element
    types too: "list of [int]")."""
    from ._tensor import Tensor
    if isinstance(x, Tensor):
        return "Tensor"
    if isinstance(x, D.dtype):
        return "torch.dtype"
    if items and isinstance(x, (list, tuple)):
        inner = []
        for v in x:
            n = _arg_name(v)
            if n not in inner:
                inner.append(n)
        return f"{type(x).__name__} of [{', '.join(inner)}]"
    return D.type_name(x)


def _bad_result_type_args(args) -> TypeError:
    names = [_arg_name(a) for a in args]
    detailed = [_arg_name(a, items=True) for a in args]
    lines = [f"result_type() received an invalid combination of arguments - got "
             f"({', '.join(names)}), but expected one of:"]
    for sig, kinds in zip(_SIGNATURES, _KINDS):
        lines.append(f" * {sig}")
        if len(args) == 2:
            marked = []
            for a, n, k in zip(args, detailed, kinds):
                ok = _is_number(a) if k == "N" else type(a).__name__ != "dtype" and \
                    _arg_name(a) == "Tensor"
                marked.append(n if ok else f"!{n}!")
            lines.append(f"      didn't match because some of the arguments have invalid types: "
                         f"({', '.join(marked)})")
    return TypeError("\n".join(lines) + "\n")


def _default_complex() -> D.dtype:
    return D.complex128 if D.DEFAULTS.float is D.float64 else D.complex64


def _promote(a, b):
    """PyTorch's promote_skip_undefined (None is undefined)."""
    if a is None:
        return b
    if b is None:
        return a
    return D.promote(a, b)


def _combine(higher, lower):
    """PyTorch's combine_categories: the higher priority's dtype unless the lower one is of a
    higher category."""
    if higher is not None and higher.is_complex:
        return higher
    if lower is not None and lower.is_complex:
        if higher is not None and higher.is_floating_point:
            return D.complex128 if higher is D.float64 else D.complex64
        return lower
    if higher is not None and higher.is_floating_point:
        return higher
    if higher is D.bool_ or (lower is not None and lower.is_floating_point):
        return _promote(higher, lower)
    if higher is not None:
        return higher
    return lower


def _number_dtype(x) -> D.dtype:
    if isinstance(x, (bool, np.bool_)):
        return D.bool_
    if isinstance(x, (numbers.Integral, np.integer)):
        return D.int64
    if isinstance(x, (numbers.Real, np.floating)):
        return D.DEFAULTS.float
    return _default_complex()


_MISSING = object()


def result_type(tensor=_MISSING, other=_MISSING, **kwargs):
    """The dtype an arithmetic op of ``tensor`` and ``other`` (tensors or Python numbers)
    gives."""
    from ._tensor import Tensor
    if "scalar" in kwargs and other is _MISSING:     # (Number scalar, Tensor tensor)
        tensor, other = kwargs.pop("scalar"), tensor
    if tensor is _MISSING:
        tensor = kwargs.pop("scalar1", _MISSING)
    if other is _MISSING:
        other = kwargs.pop("scalar2", _MISSING)
    args = tuple(a for a in (tensor, other) if a is not _MISSING)
    if kwargs or len(args) != 2 or not all(isinstance(a, Tensor) or _is_number(a) for a in args):
        raise _bad_result_type_args(args)
    dim = zero = wrapped = None
    for a in args:
        if isinstance(a, Tensor):
            if a.ndim > 0:
                dim = _promote(dim, a.dtype)
            else:
                zero = _promote(zero, a.dtype)
        else:
            wrapped = _promote(wrapped, _number_dtype(a))
    return _combine(dim, _combine(zero, wrapped))


def _arg_dtype(fn, name, pos, d) -> D.dtype:
    if d is float or d is int or d is bool or d is complex:
        return D.to_dtype(d)
    if type(d) is not D.dtype:
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be torch.dtype, not "
                        f"{_arg_name(d)}")
    return d


def promote_types(type1, type2) -> D.dtype:
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing their
    category."""
    return D.promote(_arg_dtype("promote_types", "type1", 1, type1),
                     _arg_dtype("promote_types", "type2", 2, type2))


def can_cast(from_, to) -> bool:
    """Whether PyTorch's casting rules allow ``from_`` to ``to`` (no complex to real, no
    floating to integer, nothing but bool to bool)."""
    f = _arg_dtype("can_cast", "from_", 1, from_)
    t = _arg_dtype("can_cast", "to", 2, to)
    if f.is_complex and not t.is_complex:
        return False
    if f.is_floating_point and not (t.is_floating_point or t.is_complex):
        return False
    if f is not D.bool_ and t is D.bool_:
        return False
    return True


def _tensor_arg(fn, x):
    from ._tensor import Tensor
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{_arg_name(x)}")
    return x


def is_floating_point(input) -> bool:
    """Whether ``input``'s dtype is a floating-point type."""
    return _tensor_arg("is_floating_point", input).is_floating_point()


def is_complex(input) -> bool:
    """Whether ``input``'s dtype is a complex type."""
    return _tensor_arg("is_complex", input).is_complex()
