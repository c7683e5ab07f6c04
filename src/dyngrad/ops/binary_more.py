"""More binary elementwise ops: heaviside, gcd, lcm, the bit shifts (with the ``<<``/``>>``
operators), ldexp, frexp and nextafter, and their in-place forms where PyTorch has them.

dtypes follow PyTorch's promotion; the integer ops refuse other dtypes with PyTorch's
not-implemented errors.  Gradients: LdexpBackward0, FrexpBackward0 (mantissa), and
NextafterBackward0 (the gradient passes to ``input``, zeros to ``other``); heaviside has no
derivative (PyTorch's NotImplemented node)."""
from __future__ import annotations

from numbers import Number

import numpy as np

from .. import _dtype as D
from . import OPS, composite, inplace_of, op
from .._record import Tensor
from . import _dual as X
from ._spec import defop, fp_safe
from ..autograd.node import NotImplemented_
from .shape_more import declared_dual

_make = Tensor._make
_LN2 = float(np.log(2.0))


def _not_impl(kernel, dt):
    return NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dt)}\'')


def _is_scalar(v):
    return isinstance(v, (Number, np.number, np.bool_)) and not isinstance(v, Tensor)


def _operands(a, b, fn, pos=1):
    """The data of two operands (tensors, or a tensor and a number) in PyTorch's result dtype."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        ad, bd = a._data, b._data
        rt = D.result_type(D.FROM_NP[ad.dtype], ad.ndim, D.FROM_NP[bd.dtype], bd.ndim).np
        return ad.astype(rt, copy=False), bd.astype(rt, copy=False), rt
    if isinstance(a, Tensor) and _is_scalar(b):
        rt = D.scalar_result(D.FROM_NP[a._data.dtype], b.item() if isinstance(
            b, (np.number, np.bool_)) else b).np
        return a._data.astype(rt, copy=False), np.asarray(b).astype(rt), rt
    if _is_scalar(a) and isinstance(b, Tensor):
        rt = D.scalar_result(D.FROM_NP[b._data.dtype], a.item() if isinstance(
            a, (np.number, np.bool_)) else a).np
        return np.asarray(a).astype(rt), b._data.astype(rt, copy=False), rt
    raise D.bad_combo(fn, [a, b])


def _need_tensor(fn, v, pos, arg="other"):
    if not isinstance(v, Tensor):
        raise D.not_tensor(fn, arg, pos, v)


# --- gcd / lcm ---------------------------------------------------------------------------------
def _lcm_np(a, b):
    g = np.gcd(a, b)
    dt = np.result_type(a, b)
    if dt.kind in "iu" and dt.itemsize < 4:
        # PyTorch's kernel computes abs(a / g * b) in C++'s int (integer promotion), then
        # narrows: an overflowing int8/int16 lcm wraps after the abs, not before
        a, b, g = (np.asarray(x).astype(np.int32) for x in (a, b, g))
        r = np.abs(a // np.where(g == 0, 1, g) * b).astype(dt)
        return np.where(g == 0, 0, r).astype(dt)
    r = np.abs(a // np.where(g == 0, 1, g) * b)
    return np.where(g == 0, 0, r)


def _integer_op(name, np_fn, doc):
    """An elementwise op of two integer tensors (promoted to their common dtype), which
    PyTorch has no derivative for."""
    def forward(self, other):
        return np_fn(self, other)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = doc
    forward.kernel = np_fn
    return defop(name, node=None, inputs=("self", "other"), differentiable=False,
                 elementwise=True, integer_kernel=name + "_cpu")(forward).fn


gcd = _integer_op("gcd", np.gcd, "Elementwise greatest common divisor of integer tensors "
                  "(non-negative).")
lcm = _integer_op("lcm", _lcm_np, "Elementwise least common multiple of integer tensors "
                  "(non-negative).")


# --- bit shifts --------------------------------------------------------------------------------
def _wrapped(a, b):
    """The operands as arrays: a number the tensor's integer dtype cannot hold comes as a Python
    int (ops/_spec.py ``_scalar_run``); PyTorch converts it to that dtype, wrapping around."""
    if isinstance(a, int):
        a = np.asarray(a).astype(b.dtype)
    if isinstance(b, int):
        b = np.asarray(b).astype(a.dtype)
    return a, b


def _lshift_np(a, b):
    a, b = _wrapped(a, b)
    bits = a.dtype.itemsize * 8
    ub = b.astype(a.dtype.str.replace("i", "u"), copy=False) if a.dtype.kind == "i" else b
    big = ub >= bits
    r = np.left_shift(a, np.where(big, 0, b).astype(a.dtype, copy=False))
    return np.where(big, np.zeros((), a.dtype), r).astype(a.dtype, copy=False)


def _rshift_np(a, b):
    a, b = _wrapped(a, b)
    bits = a.dtype.itemsize * 8
    sb = b.astype(b.dtype.str.replace("u", "i"), copy=False) if b.dtype.kind == "u" else b
    big = (sb < 0) | (b >= bits)
    r = np.right_shift(a, np.where(big, 0, b).astype(a.dtype, copy=False))
    fill = np.right_shift(a, bits - 1) if a.dtype.kind == "i" else np.zeros((), a.dtype)
    return np.where(big, fill, r).astype(a.dtype, copy=False)


_NUMBERS = (int, float, bool, complex)


def _shift(name, kernel, np_fn, operator):
    """A shift of integer tensors (their common dtype), with a number as either input (its
    Scalar overloads), which PyTorch has no derivative for; ``operator``: the method name of
    ``<<`` / ``>>``, which leaves other operands to Python."""
    def forward(self, other):
        return np_fn(self, other)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = (f"Elementwise {name.replace('_', ' ')} of integer tensors (PyTorch's "
                       f"rules for negative and too-large shifts).")
    forward.kernel = np_fn
    spec = defop(name, node=None, inputs=("self", "other"), differentiable=False,
                 elementwise=True, integer_kernel=kernel)(forward)
    spec.scalar(None)
    spec.scalar(None, first=True)
    method = OPS[f"_{name}_method"]["fn"]

    def dunder(self, other):
        if type(other) not in _NUMBERS and not isinstance(other, (Tensor, np.number, np.bool_)):
            return NotImplemented
        return method(self, other)

    dunder.__name__ = dunder.__qualname__ = operator
    dunder.__doc__ = f"``self {'<<' if 'left' in name else '>>'} other``."
    composite(f"_{operator.strip('_')}", function=False, method=False, methods=(operator,))(dunder)
    return spec.fn


bitwise_left_shift = _shift("bitwise_left_shift", "lshift_cpu", _lshift_np, "__lshift__")
bitwise_right_shift = _shift("bitwise_right_shift", "rshift_cpu", _rshift_np, "__rshift__")


def _reflected(fn):
    def r(self, other):
        if not _is_scalar(other):
            return NotImplemented
        return fn(other, self)
    return r


composite("_rlshift", function=False, method=False, methods=("__rlshift__",))(
    _reflected(bitwise_left_shift))
composite("_rrshift", function=False, method=False, methods=("__rrshift__",))(
    _reflected(bitwise_right_shift))


# --- heaviside ---------------------------------------------------------------------------------
@defop("heaviside", node=NotImplemented_, inputs=("self", "values"), elementwise=True,
       method=False)
@fp_safe
def heaviside(self, values):
    """0 where input < 0, 1 where input > 0, ``values`` where input == 0 (PyTorch's kernel:
    NaN input gives 0); no derivative (PyTorch's NotImplemented node)."""
    if self.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    return np.asarray(np.where(self == 0, values, self > 0)).astype(self.dtype, copy=False)


def _heaviside(p, input, values):
    """0 where input < 0, 1 where input > 0, ``values`` where input == 0 (no derivative, as in
    PyTorch)."""
    _need_tensor("heaviside", input, 1, "input")
    _need_tensor("heaviside", values, 1 + p, "values")
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return _heaviside_spec.declared(input, values)


_heaviside_spec = heaviside
heaviside = declared_dual(heaviside, _heaviside)


# --- ldexp -------------------------------------------------------------------------------------
def _common(a, b):
    """PyTorch's common dtype of arrays ``a`` and ``b`` (a 0-d one of the same kind yields)."""
    return D.result_type(D.FROM_NP[a.dtype], a.ndim, D.FROM_NP[b.dtype], b.ndim).np


def _pow2(e, like):
    """2 ** ``e`` in the dtype of ``like`` (arrays or Tensors).  An integer exponent is raised
    in integers, as PyTorch's formula does: a negative one gives 0."""
    d = X.data(e)
    if d.dtype.kind in "biu":
        p = np.where(d < 0, 0, np.left_shift(1, np.maximum(d, 0).astype(np.int64)))
        return X.const(p.astype(X.data(like).dtype), like)
    if isinstance(e, Tensor):
        return 2.0 ** (e if e.dtype == like.dtype else e.to(like.dtype))
    return 2.0 ** e.astype(like.dtype, copy=False)


def _ldexp_np(a, b):
    return a * np.exp2(b)


@defop("ldexp", node="LdexpBackward0", inputs=("self", "other"), saved=("other", "result"),
       saved_for={"other": (0,)}, promote="float", elementwise=True)
def ldexp(self, other):
    """input * 2**other (integer operands give the default float); LdexpBackward0."""
    return _ldexp_np(self, other)


ldexp.forward.kernel = _ldexp_np


@ldexp.backward
def _(ctx, grad):
    # d/dinput = g * 2^other, d/dother = g * result * ln 2 (other is kept only for input's)
    return (grad * _pow2(ctx.other, grad) if ctx.needs(0) else None,
            grad * ctx.result * _LN2 if ctx.needs(1) else None)


ldexp = ldexp.fn


# --- frexp -------------------------------------------------------------------------------------
@defop("frexp", node="FrexpBackward0", saved=("exponent",), outputs=("mantissa", "exponent"),
       elementwise=True)
def frexp(self):
    """(mantissa, exponent) with input = mantissa * 2**exponent, 0.5 <= |mantissa| < 1;
    FrexpBackward0 on the mantissa."""
    if self.dtype not in D.FLOATING:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(self)
    return np.asarray(m).astype(self.dtype, copy=False), np.asarray(e).astype(np.int32)


@frexp.backward
def _(ctx, grad):
    e = ctx.exponent
    return (grad / 2.0 ** (e.to(grad.dtype) if isinstance(e, Tensor) else e.astype(grad.dtype)),)


frexp = frexp.fn


# --- nextafter ---------------------------------------------------------------------------------
@defop("nextafter", node="NextafterBackward0", inputs=("self", "other"),
       saved=("self", "other"), saved_for={"self": (0,), "other": (0,)},
       floating_kernel="nextafter_cpu", complex_kernel="nextafter_cpu", elementwise=True)
def nextafter(self, other):
    """The next floating-point value after ``input`` towards ``other``; NextafterBackward0."""
    return np.nextafter(self, other)


nextafter.forward.kernel = np.nextafter


@nextafter.backward
def _(ctx, grad):
    # the gradient passes to input where it differs from other; other gets zeros
    ga = None
    if ctx.needs(0):
        a, b = X.data(ctx.self), X.data(ctx.other)
        rt = _common(a, b)  # compared in the op's dtype, as PyTorch
        same = X.const(np.asarray(a.astype(rt, copy=False) == b.astype(rt, copy=False)), grad)
        ga = X.where(same, X.zeros_like(grad), grad)
    return ga, X.zeros_like(grad) if ctx.needs(1) else None


nextafter = nextafter.fn


# --- in-place forms --------------------------------------------------------------------------
def _inplace(name, fn, function=False, arg=None, pre=None, dunder=()):
    """``Tensor.<name>`` (and ``dyngrad.<name>`` when ``function``): ``fn`` in place.  ``arg``
    names the tensor argument PyTorch requires (a number is refused with its message)."""
    def make(p):
        def f(self, other):
            from .inplace import _check_cast, apply
            if arg is not None:
                _need_tensor(name, self, 1, "input")
                _need_tensor(name, other, 1 + p, arg)
            if pre is not None:
                pre(self, other)
            if isinstance(self, Tensor) and (isinstance(other, Tensor) or _is_scalar(other)):
                _check_cast(self._data, _operands(self, other, name)[2], to_bool=True)
            return apply(self, fn, other)

        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"In-place {name[:-1]}; returns self."
        return f

    if function:
        op(name, method=False)(make(1))
        inplace_of(name, name[:-1])
    op("_" + name + "_method", function=False, method=False, methods=(name,) + dunder)(make(0))
    inplace_of("_" + name + "_method", name[:-1])
    return make(1)


def _ldexp_pre(self, other):
    if self._data.dtype not in D.INEXACT:
        raise RuntimeError(f"ldexp can't be cast to the desired output type "
                           f"{D.scalar_type_name(self._data.dtype)}")


def _heaviside_pre(self, other):
    # PyTorch's dtype check comes before the one of writing the result into self
    if self._data.dtype != other._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


gcd_ = _inplace("gcd_", gcd, function=True, arg="other")
lcm_ = _inplace("lcm_", lcm, function=True, arg="other")
ldexp_ = _inplace("ldexp_", ldexp, function=True, arg="other", pre=_ldexp_pre)
heaviside_ = _inplace("heaviside_", heaviside, arg="values", pre=_heaviside_pre)
nextafter_ = _inplace("nextafter_", nextafter, arg="other")
bitwise_left_shift_ = _inplace("bitwise_left_shift_", bitwise_left_shift,
                               dunder=("__ilshift__",))
bitwise_right_shift_ = _inplace("bitwise_right_shift_", bitwise_right_shift,
                                dunder=("__irshift__",))
