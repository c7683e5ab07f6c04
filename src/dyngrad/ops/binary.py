"""Elementwise ops of two tensors (or a tensor and a number): arithmetic with broadcasting and
PyTorch's dtype promotion (add, sub, rsub, mul, div, pow, float_power), binary math (atan2,
hypot, fmod, remainder, floor_divide, xlogy, copysign, logaddexp, logaddexp2, lerp), the
bitwise ops and shifts, gcd and lcm, heaviside, ldexp and frexp, nextafter.  Backward formulas
use only operators and the dual helpers, so they run on ndarrays (plain backward) and on
Tensors (``create_graph=True``) alike."""
from __future__ import annotations

import cmath
import math
from functools import partial
from numbers import Number

import numpy as np

from .. import _dtype as D
from . import OPS, composite, inplace_of, op
from .._fperr import quiet
from ..autograd.node import NotImplemented_
from .._record import (quiet_on, quiet_off, NO_EDGE, STATE, Saved, Tensor, edge_of, edges_first,
                     record)
from . import _dual as X
from ._spec import (ELEMENTWISE, batch_aligned, defop, formula_backward, front,
                    scalar_record, summed_backward, unary, variant)

_make = Tensor._make
_OPS = OPS
_NUMBERS = (int, float, bool, complex)
_isT = isinstance


class _Unset:
    """The default of an optional argument whose mere presence selects another PyTorch
    overload (and so another node): ``div(a, b, rounding_mode=None)`` records DivBackward2,
    ``div(a, b)`` DivBackward0.  Shown as None."""
    __slots__ = ()

    def __repr__(self):
        return "None"

    def __bool__(self):
        return False


UNSET = _Unset()


def _scalar_ok(v):
    return isinstance(v, (Number, np.number, np.bool_))


def _pair(a, b):
    """Data of two tensors in their common dtype (PyTorch's promotion); casts recorded."""
    ad, bd = a._data, b._data
    if ad.dtype is bd.dtype or ad.dtype == bd.dtype:
        return ad, bd, None
    rt = D.result_type(D.FROM_NP[ad.dtype], ad.ndim, D.FROM_NP[bd.dtype], bd.ndim).np
    casts = (ad.dtype if ad.dtype != rt else None, bd.dtype if bd.dtype != rt else None)
    return (ad if ad.dtype == rt else ad.astype(rt)), (bd if bd.dtype == rt else bd.astype(rt)), casts


_I64 = 1 << 63


def _scalar_data(ad, value):
    """Tensor data and a Python scalar: the result dtype never widens within a category, and
    a scalar of a higher category (a float with integers, a complex with reals) gives its
    default dtype (``D.scalar_result``)."""
    if isinstance(value, (np.number, np.bool_)):
        value = value.item()
    tv = type(value)
    if tv is float and ad.dtype not in D.INEXACT or tv is complex and ad.dtype.kind != "c":
        return ad.astype(D.scalar_result(D.FROM_NP[ad.dtype], value).np), value
    return ad, value


def broadcast_error(*shapes):
    """PyTorch's error for shapes that do not broadcast: the operands are broadcast in order,
    pairwise, and the first clash (from the last dimension) of the first pair that fails is
    named."""
    acc = ()
    for s in shapes:
        s = tuple(s)
        n = max(len(acc), len(s))
        a, b = (1,) * (n - len(acc)) + acc, (1,) * (n - len(s)) + s
        for i in range(n - 1, -1, -1):
            if a[i] != b[i] and a[i] != 1 and b[i] != 1:
                return RuntimeError(f"The size of tensor a ({a[i]}) must match the size of "
                                    f"tensor b ({b[i]}) at non-singleton dimension {i}")
        acc = tuple(y if x == 1 else x for x, y in zip(a, b))
    return RuntimeError(f"shapes {[list(s) for s in shapes]} cannot be broadcast together")


def _call2(fn, ad, bd):
    try:
        return fn(ad, bd)
    except ValueError:
        if np.shape(ad) != np.shape(bd):
            try:
                np.broadcast_shapes(np.shape(ad), np.shape(bd))
            except ValueError:
                raise broadcast_error(np.shape(ad), np.shape(bd)) from None
        raise


def _binary(a, b, fn, cls, save_a, save_b, extra=(), number_first=False, inputs=True):
    """Shared forward of tensor-tensor and tensor-scalar binary ops, recording ``cls`` with
    the saved operands (``inputs``: a slot for each, None where not kept; a number stays a
    number, PyTorch's wrapped number), then ``extra``, then the operands' shapes (the
    declarations' layout).  ``number_first``: a number operand is converted to a bfloat16
    tensor's dtype before the op (PyTorch's add and sub do; mul and div compute with it in
    float32)."""
    if _isT(b, Tensor):
        ad, bd = a._data, b._data
        casts = None
        if ad.dtype is not bd.dtype:
            ad, bd, casts = _pair(a, b)
        tok = quiet_on()
        try:
            data = fn(ad, bd)
        except ValueError:
            edges_first(a, b)
            data = _call2(fn, ad, bd)
        finally:
            quiet_off(tok)
        if STATE.enabled and (a._requires_grad or b._requires_grad):
            node = cls((edge_of(a), edge_of(b)),
                       (Saved(a) if save_a else None, Saved(b) if save_b else None, ad.shape,
                        bd.shape) if inputs and not extra else
                       ((Saved(a) if save_a else None, Saved(b) if save_b else None)
                        if inputs else ()) + extra + (ad.shape, bd.shape))
            if casts is not None:
                node._casts = casts
            return record(data, node)
        return _make(data)
    ad = a._data
    tb = b.__class__
    if tb is int or tb is float and ad.dtype.kind in "fc":  # _scalar_data's common case
        bv = b
    elif not _scalar_ok(b):
        return NotImplemented
    else:
        ad, bv = _scalar_data(ad, b)
    if number_first and ad.dtype == D.BF16:
        bv = float(D.BF16.type(bv))
    tok = quiet_on()
    try:
        data = fn(ad, bv)
    finally:
        quiet_off(tok)
    if data.dtype != ad.dtype and ad.dtype in D.INEXACT:
        data = data.astype(ad.dtype)
    if STATE.enabled and a._requires_grad:
        node = cls((edge_of(a), NO_EDGE),
                   ((Saved(a) if save_a else None, bv) if inputs else ()) + extra +
                   (ad.shape, ()))
        return record(data, node)
    return _make(data)


# --- add / sub ------------------------------------------------------------------------
def _add_np(alpha, sign=1):
    """x + alpha * y (x - alpha * y with ``sign`` -1) on arrays; with bfloat16 arrays alpha
    is rounded to bfloat16 and the rest computed in float32 and rounded once, as PyTorch."""
    if alpha == 1 and sign == 1:
        return np.add

    def f(x, y):
        if x.dtype == D.BF16:
            a = sign * np.float32(D.BF16.type(alpha))
            return (x.astype(np.float32) + y.astype(np.float32) * a).astype(D.BF16)
        r = x + y * alpha if sign == 1 else x - y * alpha
        # (bool tensors stay bool: PyTorch takes alpha as a bool, where NumPy widens to int)
        return r.astype(np.bool_) if x.dtype == np.bool_ else r
    return f


def _times_alpha(g, alpha):
    return g if alpha == 1 else g * alpha


def _expanded(ctx, *tangents):
    """Tangents of a broadcasting op's inputs expanded to its output's shape (a tangent has its
    primal's shape), None where an input has none."""
    sv = ctx._node._saved
    if len(tangents) > 1 and tangents[1] is None and len(sv) < 3:
        return tangents  # (a node of a tensor and a number: no shapes kept, none to expand)
    shape = np.broadcast_shapes(sv[-2], sv[-1])
    return [t if t is None or tuple(t.shape) == shape else t.expand(*shape) for t in tangents]


@defop("add", node="AddBackward0", inputs=("self", "other"), saved=("alpha",), broadcast=True,
       promote="common", batch=ELEMENTWISE)
def _add_decl(self, other, alpha=1):
    """input + alpha * other, broadcasting; AddBackward0."""
    return _add_np(alpha)(self, other)


@partial(formula_backward, _add_decl)
def _(grad, needs, alpha):
    return grad, (_times_alpha(grad, alpha) if needs[1] else None)


@_add_decl.jvp
def _(ctx, t_self, t_other=None):
    t_self, t_other = _expanded(ctx, t_self, t_other)
    alpha = ctx.alpha
    if t_other is None:
        return t_self
    t = _times_alpha(t_other, alpha)
    return t if t_self is None else t_self + t


@defop("sub", node="SubBackward0", inputs=("self", "other"), saved=("alpha",), broadcast=True,
       promote="common", batch=ELEMENTWISE, aliases=("subtract",))
def _sub_decl(self, other, alpha=1):
    """input - alpha * other, broadcasting; SubBackward0."""
    return np.subtract(self, other) if alpha == 1 else _add_np(alpha, -1)(self, other)


@partial(formula_backward, _sub_decl)
def _(grad, needs, alpha):
    return grad, (-grad if alpha == 1 else grad * -alpha) if needs[1] else None


@_sub_decl.jvp
def _(ctx, t_self, t_other=None):
    t_self, t_other = _expanded(ctx, t_self, t_other)
    alpha = ctx.alpha
    if t_other is None:
        return t_self
    t = -t_other if alpha == 1 else t_other * -alpha
    return t if t_self is None else t_self + t


@defop("rsub", node="RsubBackward0", inputs=("self", "other"), saved=("alpha",), broadcast=True,
       promote="common", batch=ELEMENTWISE, method=False)
def _rsub_decl(self, other, alpha=1):
    """other - alpha * input (the reflected subtraction of ``10 - x``); RsubBackward0, or
    RsubBackward1 with a number ``other``."""
    return other - self * alpha if alpha != 1 else other - self


@partial(formula_backward, _rsub_decl)
def _(grad, needs, alpha):
    return ((-grad if alpha == 1 else grad * -alpha) if needs[0] else None), grad


@_rsub_decl.jvp
def _(ctx, t_self, t_other=None):
    t_self, t_other = _expanded(ctx, t_self, t_other)
    alpha = ctx.alpha
    t = None if t_self is None else -t_self if alpha == 1 else t_self * -alpha
    if t_other is None:
        return t
    return t_other if t is None else t_other + t


AddBackward0, SubBackward0 = _add_decl.node_cls, _sub_decl.node_cls
RsubBackward0 = _rsub_decl.node_cls
# rsub with a number (PyTorch's rsub.Scalar): one edge, alpha kept
RsubBackward1 = variant(_rsub_decl, "RsubBackward1", ("alpha",))
RsubBackward1._bw = lambda self, g, graph: (-g if self._saved[0] == 1 else g * -self._saved[0],)


def _scalar_decl(name, node, np_fn, saved):
    """PyTorch's ``<name>.Scalar`` (a tensor and a C++ Scalar, as its composites call it): one
    edge; elementwise, so its forward-mode rule is its backward formula on the tangent."""
    @defop("_" + name + "_scalar", node=node, saved=saved, elementwise=True, batch=ELEMENTWISE,
           function=False, method=False)
    def decl(self, other):
        ad, v = _scalar_data(self, other)
        data = np_fn(ad, v)
        return data.astype(ad.dtype) if data.dtype != ad.dtype and ad.dtype in D.INEXACT \
            else data

    decl.forward.__doc__ = f"``self {name} other`` with a number ``other``; {node}."
    OPS.pop(decl.key)  # reached through add_scalar, mul_scalar, sub_scalar and div_scalar
    return decl


def _div_number(a, v):
    """a / v, integer (or bool) by integer in the default float dtype, as PyTorch's."""
    r = np.true_divide(a, v)
    return r.astype(D.DEFAULTS.float.np) if a.dtype.kind in "biu" else r


_add_scalar_decl = _scalar_decl("add", "AddBackward1", np.add, ())
_sub_scalar_decl = _scalar_decl("sub", "SubBackward1", np.subtract, ())
_mul_scalar_decl = _scalar_decl("mul", "MulBackward1", np.multiply, ("other",))
_div_scalar_decl = _scalar_decl("div", "DivBackward1", _div_number, ("other",))


@_add_scalar_decl.backward
def _(ctx, grad):
    return grad,


_sub_scalar_decl.backward(_add_scalar_decl.bw)


@_mul_scalar_decl.backward
def _(ctx, grad):
    return _times(grad, ctx.other),


@_div_scalar_decl.backward
def _(ctx, grad):
    return _over(grad, ctx.other),


AddBackward1, SubBackward1 = _add_scalar_decl.node_cls, _sub_scalar_decl.node_cls
MulBackward1, DivBackward1 = _mul_scalar_decl.node_cls, _div_scalar_decl.node_cls
# the same formulas read straight from the node (the number is its one saved value)
AddBackward1._bw = SubBackward1._bw = lambda self, g, graph: (g,)
MulBackward1._bw = lambda self, g, graph: (_times(g, self._saved[0]),)
DivBackward1._bw = lambda self, g, graph: (_over(g, self._saved[0]),)


def _scalar_op(a, value, spec, fn):
    try:
        ad = a._data
    except AttributeError:
        # a tensor batched by vmap: the op on its physical tensor (every sample, in the same
        # layout), batched over the same levels
        r = object.__new__(type(a))
        r._phys, r._levels = _scalar_op(a._phys, value, spec, fn), a._levels
        return r
    ad, v = _scalar_data(ad, value)
    tok = quiet_on()
    try:
        data = fn(ad, v)
    finally:
        quiet_off(tok)
    if data.dtype != ad.dtype and ad.dtype in D.INEXACT:
        data = data.astype(ad.dtype)
    if STATE.enabled and a._requires_grad:
        return spec.record1(data, a, {"other": v})
    return _make(data)


def add_scalar(a, value):
    """``a + value`` recorded as PyTorch's C++ composites record it (AddBackward1), for the
    compositions dyngrad reproduces; Python's ``a + value`` records AddBackward0."""
    return _scalar_op(a, value, _add_scalar_decl, np.add)


def mul_scalar(a, value):
    """``a * value`` recorded as PyTorch's C++ composites record it (MulBackward1)."""
    return _scalar_op(a, value, _mul_scalar_decl, np.multiply)


def sub_scalar(a, value):
    """``a - value`` recorded as PyTorch's C++ composites record it (SubBackward1)."""
    return _scalar_op(a, value, _sub_scalar_decl, np.subtract)


def div_scalar(a, value):
    """``a / value`` recorded as PyTorch's C++ composites record it (DivBackward1)."""
    return _scalar_op(a, value, _div_scalar_decl, _div_number)


# the same inside a backward formula: on arrays the plain product / quotient
_times = X.twin(lambda a, v: a * v, mul_scalar)
_over = X.twin(lambda a, v: a / v, div_scalar)


def add(input, other, *, alpha=1):
    """input + alpha * other, broadcasting; AddBackward0."""
    if not _isT(input, Tensor):
        input, other = other, input
    r = _binary(input, other, np.add if alpha == 1 else _add_np(alpha), AddBackward0,
                False, False, (alpha,), True, False)
    if alpha.__class__ is not int:
        alpha_check(_alpha_dtype(input, other), alpha)
    return r


def _alpha_dtype(a, b):
    """The result dtype of add/sub of tensor ``a`` and ``b`` (a tensor or a Python scalar)."""
    ad = D.FROM_NP[a._data.dtype]
    if _isT(b, Tensor):
        return D.result_type(ad, a._data.ndim, D.FROM_NP[b._data.dtype], b._data.ndim).np
    return D.scalar_result(ad, b).np


def alpha_check(dtype, alpha):
    """PyTorch's checks of add/sub's ``alpha`` against the result dtype (an ``int`` alpha
    always passes, so callers skip the call for one)."""
    if isinstance(alpha, (bool, np.bool_)):
        if dtype != np.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
        return
    if dtype not in D.INEXACT and not isinstance(alpha, (int, np.integer)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if dtype.kind != "c" and isinstance(alpha, (complex, np.complexfloating)):
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")


def _bool_sub_error(a, b):
    """PyTorch's error for a subtraction with a bool tensor operand (None when neither
    operand is a bool tensor)."""
    ba = a._data.dtype == np.bool_ if _isT(a, Tensor) else _isT(a, (bool, np.bool_))
    bb = b._data.dtype == np.bool_ if _isT(b, Tensor) else _isT(b, (bool, np.bool_))
    if not (ba or bb):
        return None
    if ba and bb:
        return RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                            "supported. Use the `^` or `logical_xor()` operator instead.")
    return RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                        "If you are trying to invert a mask, use the `~` or `logical_not()` "
                        "operator instead.")


def sub(input, other, *, alpha=1):
    """input - alpha * other, broadcasting; SubBackward0."""
    if input._data.dtype == np.bool_ or (other._data.dtype == np.bool_ if _isT(other, Tensor)
                                          else _isT(other, (bool, np.bool_))):
        raise _bool_sub_error(input, other)
    r = _binary(input, other, np.subtract if alpha == 1 else _add_np(alpha, -1),
                SubBackward0, False, False, (alpha,), True, False)
    if alpha.__class__ is not int:
        alpha_check(_alpha_dtype(input, other), alpha)
    return r


def rsub(input, other, *, alpha=1):
    """other - alpha * input (the reflected subtraction of ``10 - x``)."""
    if input._data.dtype == np.bool_ or (other._data.dtype == np.bool_ if _isT(other, Tensor)
                                          else _isT(other, (bool, np.bool_))):
        raise _bool_sub_error(input, other)
    if _isT(other, Tensor):
        r = _binary(input, other, lambda x, y: y - x * alpha, RsubBackward0, False, False,
                    (alpha,), False, False)
        if alpha.__class__ is not int:
            alpha_check(_alpha_dtype(input, other), alpha)
        return r
    if not _scalar_ok(other):
        return NotImplemented
    ad, v = _scalar_data(input._data, other)
    if alpha.__class__ is not int:
        alpha_check(_alpha_dtype(input, other), alpha)
    if ad.dtype == D.BF16:  # PyTorch converts the number (the first operand) to bfloat16 first
        v = float(D.BF16.type(v))
    data = v - ad if alpha == 1 else v - ad * alpha
    if data.dtype != ad.dtype and ad.dtype in D.INEXACT:
        data = data.astype(ad.dtype)
    if STATE.enabled and input._requires_grad:
        return record(data, RsubBackward1((edge_of(input),), (alpha,)))
    return _make(data)


# --- mul / div ------------------------------------------------------------------------
@defop("mul", node="MulBackward0", inputs=("self", "other"), saved=("self", "other"),
       elementwise=True, saved_for={"self": (1,), "other": (0,)}, aliases=("multiply",))
def _mul_decl(self, other):
    """Elementwise product, broadcasting; MulBackward0."""
    return np.multiply(self, other)


@partial(formula_backward, _mul_decl)
def _(grad, needs, self, other):
    return (grad * other if needs[0] else None), (grad * self if needs[1] else None)


MulBackward0 = _mul_decl.node_cls


def mul(input, other):
    """Elementwise product, broadcasting; MulBackward0."""
    if not _isT(input, Tensor):
        input, other = other, input
    if _isT(other, Tensor):
        # input is needed for other's gradient and vice versa
        return _binary(input, other, np.multiply, MulBackward0,
                       other._requires_grad, input._requires_grad)
    return _binary(input, other, np.multiply, MulBackward0, False, False)


def _true_div_np(self, other):
    return np.true_divide(self, other)


@defop("div", node="DivBackward0", inputs=("self", "other"), saved=("self", "other"),
       broadcast=True, promote="float", batch=ELEMENTWISE, saved_for={"self": (1,)},
       aliases=("divide", "true_divide"))
def _div_decl(self, other, rounding_mode=None):
    """Elementwise true division (integers give floats); DivBackward0.  With ``rounding_mode``
    ('trunc' or 'floor': PyTorch's div.Tensor_mode) rounded, DivBackward2."""
    q = np.true_divide(self, other)
    return q if rounding_mode is None else np.trunc(q) if rounding_mode == "trunc" else \
        np.floor(q)


def _div_bw(grad, needs, self, other):
    ga = grad / other if needs[0] else None
    # PyTorch's order: a / b / b, not a / b²
    gb = -grad * ((self / other) / other) if needs[1] else None
    return ga, gb


formula_backward(_div_decl, _div_bw)
DivBackward0 = _div_decl.node_cls
# div with a rounding mode (PyTorch's div.Tensor_mode): true division's gradient for mode
# None, zeros for 'trunc' and 'floor' (the saved operands still unpacked, version-checked)
DivBackward2 = variant(_div_decl, "DivBackward2", ("self", "other", "rounding_mode"))


def _div_mode_bw(grad, needs, self, other, rounding_mode):
    if rounding_mode is None:
        return _div_bw(grad, needs, self, other)
    return (X.zeros_like(grad) if needs[0] else None), (X.zeros_like(grad) if needs[1] else None)


summed_backward(DivBackward2, _div_mode_bw)


@_div_decl.jvp
def _(ctx, t_self, t_other=None):
    t_self, t_other = _expanded(ctx, t_self, t_other)
    a, b = ctx.self, ctx.other
    if getattr(ctx, "rounding_mode", None) is not None:
        t = t_self if t_self is not None else t_other
        return X.zeros_like(t)
    out = None if t_self is None else t_self / b
    if t_other is not None:
        tb = -t_other * ((a / b) / b)
        out = tb if out is None else out + tb
    return out


def div(input, other, *, rounding_mode=UNSET):
    """Elementwise true division (integers give floats); DivBackward0.  With ``rounding_mode``
    given (None, 'trunc' or 'floor': PyTorch's div.Tensor_mode) DivBackward2."""
    if rounding_mode is not UNSET:
        return _div_mode(input, other, rounding_mode)
    if _isT(other, Tensor):
        a, b = input, other
        if a._data.dtype.kind in "biu" and b._data.dtype.kind in "biu":
            a, b = a.to(D.DEFAULTS.float), b.to(D.DEFAULTS.float)
        return _binary(a, b, np.true_divide, DivBackward0, b._requires_grad, True)
    if not _scalar_ok(other):
        return NotImplemented
    a = input if input._data.dtype in D.INEXACT else input.to(D.DEFAULTS.float)
    # a Python int is kept (PyTorch saves it as a wrapped int64 number); others as float
    ov = other if type(other) is int and -_I64 <= other < _I64 else \
        float(other) if not isinstance(other, complex) else other
    return _binary(a, ov, np.true_divide, DivBackward0, False, False)


def _true_div(input, other, cls, extra=()):
    """True division recording ``cls`` (DivBackward2 for rounding_mode=None)."""
    if _isT(other, Tensor):
        a, b = input, other
        if a._data.dtype.kind in "biu" and b._data.dtype.kind in "biu":
            a, b = a.to(D.DEFAULTS.float), b.to(D.DEFAULTS.float)
        return _binary(a, b, np.true_divide, cls, b._requires_grad, True, extra)
    if not _scalar_ok(other):
        return NotImplemented
    a = input if input._data.dtype in D.INEXACT else input.to(D.DEFAULTS.float)
    ov = float(other) if not isinstance(other, complex) else other
    return _binary(a, ov, np.true_divide, cls, False, False, extra)


def _div_mode(a, b, mode):
    """div(a, b, rounding_mode=mode): one DivBackward2 node (PyTorch's div.Tensor_mode)."""
    if mode is None:
        return _true_div(a, b, DivBackward2, (None,))
    if mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{mode}'")
    tb = _isT(b, Tensor)
    bd = b._data if tb else np.asarray(b)
    if a._data.dtype.kind in "biu" and bd.dtype.kind in "biu":
        return _int_div_mode(a, b, tb, mode)
    prev = STATE.enabled
    STATE.enabled = False
    try:
        q = div(a, b)
        if q is NotImplemented:
            return q
        from .unary import floor, trunc
        r = (trunc if mode == "trunc" else floor)(q)
    finally:
        STATE.enabled = prev
    if not (STATE.enabled and (a._requires_grad or (tb and b._requires_grad))):
        return r
    ad = a._data
    node = DivBackward2((edge_of(a), edge_of(b) if tb else NO_EDGE),
                        (Saved(a) if tb and b._requires_grad else None,
                         Saved(b) if tb else b, mode, ad.shape, bd.shape if tb else ()))
    rt = r._data.dtype
    if tb and (ad.dtype != rt or bd.dtype != rt):
        node._casts = (ad.dtype if ad.dtype != rt else None, bd.dtype if bd.dtype != rt else None)
    return record(r._data, node)


def _int_div_mode(a, b, tb, mode):
    """Integer division rounded by ``mode``, exactly, in the promoted integer dtype (integer
    tensors never require grad: nothing is recorded)."""
    ad = a._data
    if tb:
        ad, bd, _ = _pair(a, b)
    else:
        bd = b
        if ad.dtype == np.bool_ and type(b) is not bool:
            ad = ad.astype(np.int64)
    if ad.dtype == np.bool_:
        raise NotImplementedError(f'"div_{mode}_cpu" not implemented for \'Bool\'')
    if not np.all(bd):
        raise RuntimeError("ZeroDivisionError")  # PyTorch's integer kernels refuse x / 0
    q = _call2(np.floor_divide, ad, bd)
    if mode == "trunc":
        q = q + ((np.remainder(ad, bd) != 0) & ((ad < 0) != (bd < 0)))
    return _make(np.asarray(q).astype(ad.dtype, copy=False))


# the hand-written fronts above take every call (numbers, dtype rules, overloads) and
# record the declarations' nodes; Python's operators call them
for _spec_, _front_, _ops_ in ((_add_decl, add, ("__add__", "__radd__")),
                               (_sub_decl, sub, ("__sub__",)),
                               (_rsub_decl, rsub, ("__rsub__",)),
                               (_mul_decl, mul, ("__mul__", "__rmul__")),
                               (_div_decl, div, ("__truediv__",))):
    front(_spec_, _front_)
    for _k in (f"_{_spec_.key}_method",) + tuple(f"_{a}_method" for a in _spec_.aliases):
        if _k in OPS:
            OPS[_k]["fn"] = _front_
    OPS[_spec_.key]["methods"] += _ops_
subtract, multiply, divide = sub, mul, div
_div_spec = _div_decl


@composite(method=False, methods=("__rtruediv__",))
@quiet
def _rtruediv(self, other):
    if not _scalar_ok(other):
        return NotImplemented
    from .unary import reciprocal
    return mul(reciprocal(self), other)


# --- pow ------------------------------------------------------------------------------
@defop("pow", node="PowBackward1", inputs=("self", "exponent"),
       saved=("self", "exponent", "result"), elementwise=True)
def pow(self, exponent):
    """input ** exponent: PowBackward1 for two tensors, PowBackward0 with a number exponent,
    PowBackward2 with a number base."""
    if self.dtype == np.bool_ if isinstance(self, np.ndarray) else exponent.dtype == np.bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")
    if isinstance(exponent, np.ndarray):
        if exponent.dtype.kind in "iu" and np.asarray(self).dtype.kind in "iu" and \
                (exponent < 0).any():
            return _int_pow(np.asarray(self), exponent)
        return np.power(self, exponent)
    if exponent == 2:  # (the common cases, faster than np.power)
        return self * self
    if exponent == 0.5 and self.dtype in D.FLOATING:
        return np.sqrt(self)
    if self.dtype.kind in "iu" and exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return np.power(self, exponent)


def _int_pow(a, b):
    """Integers to integer powers, some negative: 1 and -1 keep a value, others give 0, as
    PyTorch's integer kernel."""
    r = np.power(a, np.maximum(b, 0))
    neg = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 0, 1, -1), 0))
    return np.where(b < 0, neg, r).astype(r.dtype, copy=False)


@pow.backward
def _(ctx, grad):
    a, b = ctx.self, ctx.exponent
    ga = gb = None
    if ctx.needs(0):
        ga = X.where(b == 0, X.zeros_like(grad), grad * b * a ** (b - 1))
    if ctx.needs(1):
        # PyTorch's mask: a == 0 and real(b) >= 0
        gb = X.where((a == 0) & (b.real >= 0), X.zeros_like(grad), grad * ctx.result * X.log(a))
    return ga, gb


def _pow_number_bw(grad, a, e):
    """The gradient of ``a ** e`` for a number ``e`` (PowBackward0)."""
    if e == 0:
        return X.zeros_like(grad)
    if e == 1:
        return grad
    if e == 2:
        return grad * (a * 2)
    return grad * (e * a ** (e - 1))


_overloads: list = []
pow._on_scalar.append(_overloads.append)


@pow.scalar("PowBackward0", saved=("self", "exponent"))
def _(ctx, grad):
    return _pow_number_bw(grad, ctx.self, ctx.exponent),


def _pow0_bw(self, g, graph):
    # the formula without a ctx: the one saved tensor unpacked (version-checked) directly
    sa, e = self._saved
    return _pow_number_bw(g, sa.get(self, graph), e),


_overloads[0].node_cls._bw = _pow0_bw


@pow.scalar("PowBackward2", saved=("self", "result", "exponent"), first=True)
def _(ctx, grad):
    base, o = ctx.self, ctx.result
    if base == 0:
        return X.where(o == 0, X.zeros_like(grad), grad * 0),
    # log of the base: complex for a complex base, nan for a negative real one (as PyTorch's)
    lb = cmath.log(base) if isinstance(base, complex) else \
        math.log(base) if base > 0 else math.nan
    return grad * o * lb,


PowBackward1 = pow.node_cls
_pow_spec, _pow_declared = pow, OPS["_pow_method"]["fn"]


def _pow_method(self, exponent):
    """``Tensor.pow`` and ``**``: a float tensor squared (MSE's common case) computed and
    recorded directly as the declaration would (PowBackward0); any other call through it."""
    if exponent.__class__ is int and exponent == 2 and self.__class__ is Tensor:
        d = self._data
        if d.dtype in D.FLOATING and d.dtype != D.BF16:
            tok = quiet_on()
            try:
                r = d * d
            finally:
                quiet_off(tok)
            return scalar_record(_pow_spec, _overloads[0], self, 2, r)
    return _pow_declared(self, exponent)


_pow_method.__name__ = _pow_method.__qualname__ = "pow"
OPS["_pow_method"]["fn"] = _pow_method
OPS["_pow_method"]["methods"] += ("__pow__",)
pow = pow.fn


@composite(method=False, methods=("__rpow__",))
def _rpow(self, other):
    """``other ** self`` for a number ``other`` (PyTorch's pow with a number base)."""
    if not _scalar_ok(other):
        return NotImplemented
    return pow(other, self)


@composite()
def float_power(input, exponent):
    """``input ** exponent`` computed in double precision, as PyTorch's: complex128 when
    either operand is complex, else float64."""
    cx = any(v._data.dtype.kind == "c" if _isT(v, Tensor) else isinstance(v, complex)
             for v in (input, exponent))
    dt = D.complex128 if cx else D.float64
    if not _isT(input, Tensor):
        return pow(input, exponent.to(dt))
    x = input.to(dt)
    e = exponent.to(dt) if _isT(exponent, Tensor) else (complex if cx else float)(exponent)
    return pow(x, e)



_NO_ARGS: dict = {}


def _float_pair(a, b):
    """Integer/bool operands of an op with a floating result become the default float."""
    if a._data.dtype not in D.INEXACT:
        a = a.to(D.DEFAULTS.float)
    if _isT(b, Tensor):
        if b._data.dtype not in D.INEXACT:
            b = b.to(D.DEFAULTS.float)
    elif _scalar_ok(b) and not isinstance(b, complex):
        b = float(b)
    return a, b


def _no_derivative(data, name, inputs):
    if STATE.enabled and any(_isT(t, Tensor) and t._requires_grad for t in inputs):
        return record(data, NotImplemented_(tuple(edge_of(t) for t in inputs if _isT(t, Tensor)),
                                            (name,)))
    return _make(data)


# --- atan2 / hypot ----------------------------------------------------------------------
def _binop(name, np_fn=None, doc="", **kw):
    """Declare an elementwise op of two tensors (``self``, ``other``): promoted to PyTorch's
    common dtype, broadcast, gradients summed back to each input (ops/_spec.py).  With
    ``np_fn`` the forward is that NumPy function (called directly); else a decorator."""
    node = kw.pop("node", None) or \
        "".join(p.capitalize() for p in name.split("_")) + "Backward0"
    deco = defop(name, node=node, inputs=("self", "other"), elementwise=True, **kw)
    if np_fn is None:
        return deco

    def forward(self, other):
        return np_fn(self, other)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = doc
    forward.kernel = np_fn  # what the public function calls
    return deco(forward)


atan2 = _binop("atan2", np.arctan2, "Elementwise angle of (other, input) in radians; "
               "Atan2Backward0.", saved=("self", "other"), promote="float",
               complex_kernel="atan2_cpu", aliases=("arctan2",))


@atan2.backward
def _(ctx, grad):
    a, b = ctx.self, ctx.other
    den = a * a + b * b
    zero = X.const(X.data(den) == 0, den)  # 0 at the origin, as PyTorch
    den = X.where(zero, 1 + 0 * den, den)
    z = X.zeros_like(grad)
    return (X.where(zero, z, grad * b / den) if ctx.needs(0) else None,
            X.where(zero, z, -grad * a / den) if ctx.needs(1) else None)


atan2 = atan2.fn


hypot = _binop("hypot", np.hypot, "sqrt(input**2 + other**2) without overflow; "
               "HypotBackward0.", saved=("self", "other", "result"),
               saved_for={"self": (0,), "other": (1,)}, floating_kernel="hypot_cpu",
               complex_kernel="hypot_cpu")


@hypot.backward
def _(ctx, grad):
    o = ctx.result
    return (grad * ctx.self / o if ctx.needs(0) else None,
            grad * ctx.other / o if ctx.needs(1) else None)


hypot = hypot.fn

# --- fmod / remainder / floor_divide ---------------------------------------------------------
def _mod_np(np_fn, name):
    """The forward of fmod/remainder: integer division by zero and bool inputs refused as
    PyTorch refuses them (its shape error first)."""
    def forward(self, other):
        # a number the tensor's integer dtype cannot hold comes as a Python int (ops/_spec.py
        # _scalar_run): PyTorch converts it to that dtype, wrapping around (-1 % uint8)
        if isinstance(self, int):
            self = np.asarray(self).astype(other.dtype)
        elif isinstance(other, int):
            other = np.asarray(other).astype(self.dtype)
        if self.dtype.kind in "biu":  # the inputs' common dtype
            if self.dtype.kind == "b":
                raise NotImplementedError(f"\"{name}_cpu\" not implemented for 'Bool'")
            zero = other == 0  # an array, a NumPy bool, or a bool (a Python int)
            if zero.any() if hasattr(zero, "any") else zero:
                np.broadcast_shapes(np.shape(self), np.shape(other))  # PyTorch's shape error
                raise RuntimeError("ZeroDivisionError")
        return np_fn(self, other)
    return forward


fmod = _binop("fmod", _mod_np(np.fmod, "fmod"), "C-style remainder (sign of the dividend); FmodBackward1 "
              "(FmodBackward0 with a number).", node="FmodBackward1", saved=("self", "other"),
              saved_for={"self": (1,), "other": (1,)}, complex_kernel="fmod_cpu")


@fmod.backward
def _(ctx, grad):
    return (grad if ctx.needs(0) else None,
            -grad * X.trunc(ctx.self / ctx.other) if ctx.needs(1) else None)


@fmod.scalar("FmodBackward0")
def _(ctx, grad):
    return grad,


fmod = fmod.fn


remainder = _binop("remainder", _mod_np(np.remainder, "remainder"), "Python-style remainder "
                   "(sign of the divisor); RemainderBackward1 (RemainderBackward0 with a "
                   "number).", node="RemainderBackward1", saved=("self", "other"),
                   saved_for={"self": (1,), "other": (1,)}, complex_kernel="remainder_cpu")


@remainder.backward
def _(ctx, grad):
    return (grad if ctx.needs(0) else None,
            -grad * X.floor(ctx.self / ctx.other) if ctx.needs(1) else None)


@remainder.scalar("RemainderBackward0")
def _(ctx, grad):
    return grad,


remainder.scalar(NotImplemented_, first=True)  # remainder.Scalar_Tensor: no derivative
remainder = remainder.fn
_remainder_method = OPS["_remainder_method"]["fn"]  # Tensor.remainder (positions after self)




@composite("_mod", function=False, method=False, methods=("__mod__",))
def _mod(self, other):
    """``self % other``: Tensor.remainder, or Python's NotImplemented for another operand."""
    if type(other) not in _NUMBERS and not isinstance(other, (Tensor, np.number, np.bool_)):
        return NotImplemented
    return _remainder_method(self, other)


@composite(function=False, method=False, methods=("__rmod__",))
def _rmod(self, other):
    if not _scalar_ok(other):
        return NotImplemented
    return remainder(other, self)


floor_divide = _binop("floor_divide", _mod_np(np.floor_divide, "div_floor"), "Elementwise "
                      "floor(input / other); PyTorch has no derivative for it (its "
                      "NotImplemented node).", node=NotImplemented_, complex_kernel="div_floor_cpu")


floor_divide.scalar(NotImplemented_)
floor_divide.scalar(NotImplemented_, first=True)
floor_divide = floor_divide.fn
_floor_divide_method = OPS["_floor_divide_method"]["fn"]


@composite("_floordiv", function=False, method=False, methods=("__floordiv__",))
def _floordiv(self, other):
    """``self // other``: Tensor.floor_divide, or Python's NotImplemented for another
    operand."""
    if type(other) not in _NUMBERS and not isinstance(other, (Tensor, np.number, np.bool_)):
        return NotImplemented
    return _floor_divide_method(self, other)


@composite(function=False, method=False, methods=("__rfloordiv__",))
def _rfloordiv(self, other):
    if not _scalar_ok(other):
        return NotImplemented
    return floor_divide(other, self)


# --- xlogy / copysign ------------------------------------------------------------------
def _xlogy_np(x, y):
    r = x * np.log(y)
    return np.where((x == 0) & ~np.isnan(y), 0, r).astype(r.dtype, copy=False)


xlogy = _binop("xlogy", _xlogy_np, "input * log(other), defined as 0 where input is 0; "
               "XlogyBackward0 (XlogyBackward2 / XlogyBackward1 with a number as other / "
               "input).", saved=("self", "other"), promote="float", complex_kernel="xlogy_cpu")


@xlogy.backward
def _(ctx, grad):
    a, b = ctx.self, ctx.other
    ga = gb = None
    if ctx.needs(0):
        ad, bd = X.data(a), X.data(b)
        mask = X.const(np.broadcast_to((ad == 0) & (bd <= 0), tuple(grad.shape)), grad)
        ga = X.where(mask, X.zeros_like(grad), grad * X.log(b))
    if ctx.needs(1):
        gb = grad * a / b
    return ga, gb


@xlogy.scalar("XlogyBackward2", saved=("self", "other"))
def _(ctx, grad):
    y = ctx.other
    if y > 0:
        return grad * float(np.log(y)),
    zero = X.const(X.data(ctx.self) == 0, grad)
    return X.where(zero, X.zeros_like(grad), grad * (-np.inf if y == 0 else np.nan)),


@xlogy.scalar("XlogyBackward1", saved=("self", "other"), first=True)
def _(ctx, grad):
    return grad * ctx.self / ctx.other,


xlogy = xlogy.fn


copysign = _binop("copysign", np.copysign, "|input| with the sign of ``other``; "
                  "CopysignBackward0 (CopysignBackward1 with a number).",
                  saved=("self", "result"), saved_for={"self": (0,)}, promote="float",
                  complex_kernel="copysign_cpu")


def _copysign_grad(grad, x, y):
    """PyTorch's copysign_tensor_self_backward: grad * result / self, 0 where self is 0."""
    zero = X.const(np.broadcast_to(X.data(x) == 0, tuple(grad.shape)), grad)
    return X.where(zero, X.zeros_like(grad), grad * (y / x))


@copysign.backward
def _(ctx, grad):
    return (_copysign_grad(grad, ctx.self, ctx.result) if ctx.needs(0) else None,
            X.zeros_like(grad) if ctx.needs(1) else None)


@copysign.scalar("CopysignBackward1", saved=("self", "result"))
def _(ctx, grad):
    return _copysign_grad(grad, ctx.self, ctx.result),


copysign = copysign.fn



# --- logaddexp / logaddexp2 -----------------------------------------------------------------
@_binop("logaddexp", saved=("self", "other"), floating_kernel="logaddexp_cpu")
def logaddexp(self, other):
    """log(exp(input) + exp(other)) without overflow; LogaddexpBackward0."""
    if self.dtype.kind == "c":  # around the operand of the larger real part
        big = self.real >= other.real
        hi, lo = np.where(big, self, other), np.where(big, other, self)
        return hi + np.log1p(np.exp(lo - hi))
    return np.logaddexp(self, other)


@logaddexp.backward
def _(ctx, grad):
    # PyTorch's formula, which does not save the result: changing it in place does not
    # break backward (the derivative as written: a complex result's node conjugates it)
    a, b = ctx.self, ctx.other
    return (grad / (1 + X.exp(b - a)) if ctx.needs(0) else None,
            grad / (1 + X.exp(a - b)) if ctx.needs(1) else None)


logaddexp = logaddexp.fn


logaddexp2 = _binop("logaddexp2", np.logaddexp2, "log2(2**input + 2**other) without "
                    "overflow; Logaddexp2Backward0.", saved=("self", "other"),
                    floating_kernel="logaddexp2_cpu", complex_kernel="logaddexp2_cpu")


@logaddexp2.backward
def _(ctx, grad):
    a, b = ctx.self, ctx.other
    return (grad / (1 + 2 ** (b - a)) if ctx.needs(0) else None,
            grad / (1 + 2 ** (a - b)) if ctx.needs(1) else None)


logaddexp2 = logaddexp2.fn


# --- lerp ----------------------------------------------------------------------------------
def _lerp_np(a, b, w):
    d = b - a
    return np.where(np.abs(w) < 0.5, a + w * d, b - d * (1 - w)).astype(np.result_type(a, b),
                                                                        copy=False)


def _aligned(spec, arrays, params):
    """An op of broadcast inputs over a leading batch axis (their dims aligned after it)."""
    return spec.forward(*batch_aligned(arrays), **params)


@defop("lerp", node="LerpBackward1", inputs=("self", "end", "weight"),
       saved=("self", "end", "weight"), broadcast=True, method=False, batch=_aligned)
def _lerp(self, end, weight):
    """``self + weight * (end - self)`` of arrays in one dtype, broadcast; LerpBackward1."""
    return D.opmath(_lerp_np, self, end, weight)  # bfloat16 in float32, rounded once


@_lerp.backward
def _(ctx, grad):
    w = ctx.weight
    return (grad * (1 - w) if ctx.needs(0) else None,
            grad * w if ctx.needs(1) else None,
            grad * (ctx.end - ctx.self) if ctx.needs(2) else None)


def _tangent_sum(ctx, terms, n):
    """The sum of the tangent terms given (None: none), of the result's shape (``n`` inputs)."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    shape = np.broadcast_shapes(*(ctx.shape(i) for i in range(n)))
    return out if tuple(out.shape) == shape else X.expand_to(out, shape)


@_lerp.jvp
def _(ctx, t_self, t_end, t_weight):
    w = ctx.weight
    return _tangent_sum(ctx, [None if t_self is None else t_self * (1 - w),
                              None if t_end is None else t_end * w,
                              None if t_weight is None else t_weight * (ctx.end - ctx.self)], 3)


@defop("lerp", node="LerpBackward0", inputs=("self", "end"), saved=("weight",), broadcast=True,
       function=False, method=False, batch=_aligned)
def _lerp_scalar(self, end, weight):
    """``self + weight * (end - self)`` with a number ``weight``; LerpBackward0."""
    return _call2(lambda x, y: D.opmath(_lerp_np, x, y, weight), self, end)


@_lerp_scalar.backward
def _(ctx, grad):
    w = ctx.weight
    return (grad * (1 - w) if ctx.needs(0) else None,
            grad * w if ctx.needs(1) else None)


@_lerp_scalar.jvp
def _(ctx, t_self, t_end):
    w = ctx.weight
    return _tangent_sum(ctx, [None if t_self is None else t_self * (1 - w),
                              None if t_end is None else t_end * w], 2)


OPS.pop(_lerp_scalar.key)  # an overload of lerp, reached through its public function
_lerp_forward, _lerp_scalar_forward = _lerp.forward, _lerp_scalar.forward


@quiet
def lerp(input, end, weight):
    """input + weight * (end - input); LerpBackward0 (a number as weight) / LerpBackward1."""
    if not _isT(input, Tensor) or not _isT(end, Tensor) or \
            not (_isT(weight, Tensor) or isinstance(weight, (int, float, complex))):
        raise D.bad_combo("lerp", (input, end, weight))
    ad, bd = input._data, end._data
    if ad.dtype != bd.dtype:
        raise RuntimeError(f"expected dtype {D.c_name(ad.dtype)} for `end` but got dtype "
                           f"{D.c_name(bd.dtype)}")
    if ad.dtype not in D.INEXACT:
        kernel = "lerp_kernel_tensor" if _isT(weight, Tensor) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(ad.dtype)}'")
    if _isT(weight, Tensor):
        wd = weight._data
        casts = None
        if wd.dtype != ad.dtype and wd.ndim == 0:  # a 0-d weight of another dtype is cast
            casts, wd = (None, None, wd.dtype), wd.astype(ad.dtype)
        if wd.dtype != ad.dtype:
            raise RuntimeError(f"expected dtype {D.c_name(ad.dtype)} for `weight` but got dtype "
                               f"{D.c_name(wd.dtype)}")
        try:
            r = _lerp_forward(ad, bd, wd)
        except ValueError:
            raise broadcast_error(ad.shape, bd.shape, wd.shape) from None
        return _lerp.record(r, (input, end, weight), _NO_ARGS, casts)
    r = np.asarray(_lerp_scalar_forward(ad, bd, weight))
    return _lerp_scalar.record(r, (input, end), {"weight": weight})


lerp = front(_lerp, lerp)
OPS["lerp"]["method"] = True
OPS["lerp"]["nodes"] += ("LerpBackward0",)



def _integral(name, d, other=None):
    """PyTorch's refusal of a floating or complex dtype by a bitwise kernel (after the shape
    check of its two inputs, as PyTorch sizes the output first)."""
    if d.dtype.kind in "fc":
        if other is not None:
            np.broadcast_shapes(np.shape(d), np.shape(other))  # ValueError: the shape error
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{D.scalar_type_name(d.dtype)}'")


def _bitwise(np_fn, name, symbol):
    """Declare the bitwise op ``name`` of integer or bool tensors (their common dtype), with a
    number as either input (its Scalar overloads), without a derivative; and its operator
    methods ``__<symbol>__``/``__r<symbol>__``, which leave other operands to Python."""
    def forward(self, other):
        # a number the tensor's dtype cannot hold comes as a Python int (ops/_spec.py
        # ``_scalar_run``): PyTorch converts it to that dtype, wrapping around
        if other.__class__ is int:
            other = np.asarray(other).astype(self.dtype)
        elif self.__class__ is int:
            self = np.asarray(self).astype(other.dtype)
        _integral(name, self, other)
        return np_fn(self, other)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"Elementwise bitwise {name[8:].upper()} of integer or bool tensors."
    spec = defop(name, node=None, inputs=("self", "other"), differentiable=False,
                 elementwise=True)(forward)
    spec.scalar(None)
    spec.scalar(None, first=True)
    # (commutative: ``3 & x`` is ``x & 3``)
    operator_method(_OPS[f"_{name}_method"]["fn"], (f"__{symbol}__", f"__r{symbol}__"),
                    f"``self {symbol} other``, either way round.", f"_{symbol}")
    return spec.fn


def operator_method(method, names: tuple, doc: str, key: str) -> None:
    """Register Tensor operator ``names`` (``__and__``, ...) as ``method(self, other)`` for a
    number, a NumPy scalar or a Tensor, and ``NotImplemented`` for any other operand, which is
    left to Python (``x == "a"`` is False, ``x < "a"`` a TypeError)."""
    def operator(self, other):
        if type(other) not in _NUMBERS and not isinstance(other, (Tensor, np.number, np.bool_)):
            return NotImplemented
        return method(self, other)

    operator.__name__ = operator.__qualname__ = names[0]
    operator.__doc__ = doc
    composite(key, function=False, method=False, methods=names)(operator)


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and", "and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or", "or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor", "xor")


def _invert_np(d):
    _integral("bitwise_not", d)
    return np.invert(d)


bitwise_not = unary("bitwise_not", _invert_np, None, module=__name__, promote=None,
                    doc="Elementwise bitwise NOT of an integer or bool tensor.").fn


@composite("_invert", function=False, method=False, methods=("__invert__",))
def _invert(self):
    """``~self``: bitwise NOT; Python's TypeError for a floating or complex tensor."""
    if self._data.dtype.kind in "fc":
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return bitwise_not(self)



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
    operator_method(OPS[f"_{name}_method"]["fn"], (operator,),
                    f"``self {'<<' if 'left' in name else '>>'} other``.",
                    f"_{operator.strip('_')}")
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
def _heaviside_np(input, values):
    # PyTorch's kernel: input == 0 ? values : input > 0 (NaN input gives 0)
    return np.where(input == 0, values, input > 0).astype(np.result_type(input, values),
                                                         copy=False)


def _heaviside_dtypes(input, values):
    """PyTorch's checks of heaviside's dtypes, before the shapes: no complex, one dtype."""
    a, v = input._data.dtype, values._data.dtype
    if a.kind == "c" or v.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if a != v:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")


_heaviside_spec = defop("heaviside", node=NotImplemented_, inputs=("self", "values"),
                        elementwise=True)(_heaviside_np)
_heaviside_spec.forward.kernel = _heaviside_np


def _heaviside_front(declared):
    def heaviside(input, values):
        """0 where input < 0, 1 where input > 0, ``values`` where input == 0; PyTorch has no
        derivative for it (its NotImplemented node)."""
        if isinstance(input, Tensor) and isinstance(values, Tensor):
            _heaviside_dtypes(input, values)
        return declared(input, values)
    return heaviside


heaviside = front(_heaviside_spec, _heaviside_front(_heaviside_spec.fn))
OPS["_heaviside_method"]["fn"] = _heaviside_front(OPS["_heaviside_method"]["fn"])
OPS["heaviside"]["method"] = False  # Tensor.heaviside is _heaviside_method's function


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


gcd_ = _inplace("gcd_", gcd, function=True, arg="other")
lcm_ = _inplace("lcm_", lcm, function=True, arg="other")
ldexp_ = _inplace("ldexp_", ldexp, function=True, arg="other", pre=_ldexp_pre)
heaviside_ = _inplace("heaviside_", heaviside, arg="values", pre=_heaviside_dtypes)
nextafter_ = _inplace("nextafter_", nextafter, arg="other")
bitwise_left_shift_ = _inplace("bitwise_left_shift_", bitwise_left_shift,
                               dunder=("__ilshift__",))
bitwise_right_shift_ = _inplace("bitwise_right_shift_", bitwise_right_shift,
                                dunder=("__irshift__",))
