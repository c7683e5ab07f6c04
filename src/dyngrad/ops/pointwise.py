"""Pointwise ops: arithmetic with broadcasting and PyTorch's dtype promotion, unary math,
comparisons.  Backward formulas use only operators and the dual helpers, so they run on
ndarrays (plain backward) and on Tensors (``create_graph=True``) alike."""
from __future__ import annotations

import cmath
import math
from functools import partial
from numbers import Number

import numpy as np

from .. import _dtype as D
from . import OPS, composite, query
from .._fperr import quiet
from .._tensor import _CHANNELS_LAST_ORDER, channels_last_format
from .._record import (quiet_on, quiet_off, NO_EDGE, STATE, Node, Saved, Tensor, edge_of, edges_first,
                     grad_dtype, record)
from . import _dual as X
from ._spec import (ELEMENTWISE, defop, formula_backward, front, quick, scalar_record,
                    summed_backward, unary, variant)

_make = Tensor._make
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
        from . import elementwise_more as E
        r = (E.trunc if mode == "trunc" else E.floor)(q)
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


# --- unary ----------------------------------------------------------------------------
def _neg_np(d):
    if d.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If you "
                           "are trying to invert a mask, use the `~` or `logical_not()` operator "
                           "instead.")
    return np.negative(d)


_neg = unary("neg", _neg_np, lambda g, x, y: -g, module=__name__, saved=(), promote=None,
             aliases=("negative",), fp_safe=True, doc="-input; NegBackward0.")
neg = negative = _neg.fn
NegBackward0 = _neg.node_cls
OPS["neg"]["methods"] += ("__neg__",)


@composite(methods=("__pos__",))
def positive(input):
    """``input`` itself (``+x``); PyTorch refuses bool tensors and non-tensors."""
    if not _isT(input, Tensor):
        raise TypeError(f"positive(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(input)}")
    if input._data.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _unary_op(name, fn, formula, save_in=False, save_out=False, floating=True, doc="",
              node=None, aliases=(), complex_error=None, fp_safe=False, complex_kernel=None):
    """Declare (ops/_spec.py ``unary``) the elementwise op ``name`` with node
    ``<Name>Backward0`` (or ``node``) from a gradient formula ``formula(g, x, y)`` (x the input,
    y the output; either None if not saved); ``aliases``: its other names."""
    saved = (("self",) if save_in else ()) + (("result",) if save_out else ())
    spec = unary(name, fn, formula, module=__name__, saved=saved,
                 promote="float" if floating else None, node=node, doc=doc, aliases=aliases,
                 complex_error=complex_error, fp_safe=fp_safe, complex_kernel=complex_kernel)
    globals()[spec.node_cls.__name__] = spec.node_cls
    globals()[name] = spec.fn
    return spec.fn


def _sqrt_bw(g, x, y):
    return g / (2 * y)


_unary_op("exp", np.exp, lambda g, x, y: g * y, save_out=True)
_unary_op("log", np.log, lambda g, x, y: g / x, save_in=True)
_unary_op("sin", np.sin, lambda g, x, y: g * X.cos(x), save_in=True)
_unary_op("cos", np.cos, lambda g, x, y: g * -X.sin(x), save_in=True)
# tanh's and sigmoid's gradients are PyTorch's tanh_backward / sigmoid_backward ops: under
# create_graph they record TanhBackwardBackward0 / SigmoidBackwardBackward0, whose own
# gradients follow PyTorch's formulas (derivatives.yaml), so every order's graph is its
@defop("_tanh_backward", node="TanhBackwardBackward0", inputs=("grad_output", "output"),
       saved=("grad_output", "output"), function=False, method=False)
def _tanh_backward(grad_output, output):
    """grad_output * (1 - output**2): the gradient of tanh from its result."""
    return grad_output * (1 - output * output)


@_tanh_backward.backward
def _(ctx, grad):
    go, y = ctx.grad_output, ctx.output
    return (_tanh_bw(grad, y) if ctx.needs(0) else None,
            grad * (_times(y, -2) * go) if ctx.needs(1) else None)


@_tanh_backward.jvp
def _(ctx, t_go, t_y):
    go, y = ctx.grad_output, ctx.output
    out = None if t_go is None else _tanh_bw(t_go, y)
    if t_y is not None:
        d = t_y * (_times(y, -2) * go)
        out = d if out is None else out + d
    return out


@defop("_sigmoid_backward", node="SigmoidBackwardBackward0", inputs=("grad_output", "output"),
       saved=("grad_output", "output"), function=False, method=False)
def _sigmoid_backward(grad_output, output):
    """grad_output * output * (1 - output): the gradient of sigmoid from its result."""
    return grad_output * (output * (1 - output))


@_sigmoid_backward.backward
def _(ctx, grad):
    go, y = ctx.grad_output, ctx.output
    return (_sigmoid_bw(grad, y) if ctx.needs(0) else None,
            grad * go * _plus(_times(y, -2), 1) if ctx.needs(1) else None)


@_sigmoid_backward.jvp
def _(ctx, t_go, t_y):
    go, y = ctx.grad_output, ctx.output
    out = None if t_go is None else _sigmoid_bw(t_go, y)
    if t_y is not None:
        d = t_y * go * _plus(_times(y, -2), 1)
        out = d if out is None else out + d
    return out


# a product / sum with a C++ Scalar inside PyTorch's formulas (MulBackward1 / AddBackward1)
_plus = X.twin(lambda a, v: a + v, add_scalar)
_tanh_bw = X.twin(_tanh_backward.forward, _tanh_backward.fn)
_sigmoid_bw = X.twin(_sigmoid_backward.forward, _sigmoid_backward.fn)
OPS.pop("_tanh_backward")  # reached through tanh's and sigmoid's gradients only
OPS.pop("_sigmoid_backward")
_unary_op("tanh", np.tanh,  # (the array case inline: the hot path of every tanh backward)
          lambda g, x, y: g * (1 - y * y) if g.__class__ is np.ndarray else _tanh_bw(g, y),
          save_out=True, fp_safe=True)
_unary_op("sigmoid", lambda d: _sigmoid_np(d),
          lambda g, x, y: g * (y * (1 - y)) if g.__class__ is np.ndarray else _sigmoid_bw(g, y),
          save_out=True)
_unary_op("sqrt", np.sqrt, _sqrt_bw, save_out=True)
def _abs_bw(g, x, y):
    """grad * sgn(x): the sign for real x, x/|x| (0 at 0) for complex x (PyTorch's rule)."""
    if X.data(x).dtype.kind != "c":
        return g * X.sign(x)
    a = X.abs(x)
    zero = X.const(X.data(a) == 0, a)
    return X.where(zero, 0 * x, g * x / X.where(zero, 1 + 0 * a, a))


def _abs_np(d):
    if d.dtype.kind == "b":
        raise NotImplementedError('"abs_cpu" not implemented for \'Bool\'')
    return np.abs(d)


_unary_op("abs", _abs_np, _abs_bw, save_in=True, floating=False, aliases=("absolute",),
          fp_safe=True)
class ThresholdBackwardBackward0(Node):
    """Gradient of relu's backward ``threshold_backward(g, y, 0)``: the same mask for ``g`` and
    zeros for the saved result, which PyTorch records as an input (so a first derivative taken
    with create_graph requires grad whenever the result does)."""
    __slots__ = ()

    def _bw(self, gg, graph):
        y = self._saved[0].get(self, graph)
        ga = _threshold_bw(gg, y) if self.next_functions[0][0] is not None else None
        gy = X.zeros_like(gg) if self.next_functions[1][0] is not None else None
        return ga, gy


def _threshold_bw(g, y):
    """``g`` where ``y > 0``, else 0: relu's backward, differentiable in ``g`` and ``y``."""
    # PyTorch's threshold_backward: y <= 0 ? 0 : g (a NaN result passes the gradient)
    if not isinstance(g, Tensor) and not isinstance(y, Tensor):
        return X.where(y <= 0, X.zeros_like(g), g)
    gd, yd = g._data, y._data
    data = np.where(yd <= 0, np.zeros((), gd.dtype), gd)
    if STATE.enabled and (g._requires_grad or y._requires_grad):
        return record(data, ThresholdBackwardBackward0((edge_of(g), edge_of(y)), (Saved(y),)))
    return _make(data)


def _relu_np(d):
    if d.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    return np.maximum(d, 0)


_unary_op("relu", _relu_np,
          lambda g, x, y: _threshold_bw(g, y), save_out=True, floating=False, fp_safe=True,
          complex_error=(NotImplementedError, "clamp is not supported for complex types"))


def _sigmoid_np(d):
    # split by sign so neither branch overflows
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-d))


absolute = globals()["abs"]


def _erf_np(d):
    from ._special import erf
    return erf(d)


def _erfc_np(d):
    from ._special import erfc
    return erfc(d)


def _zero_grad(g, x, y):
    return X.zeros_like(g)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _keep_int(fn):
    """A rounding function that leaves integer data as it is (a copy) and refuses bool, as
    PyTorch's ``<name>_vml_cpu`` kernels."""
    def f(d):
        k = d.dtype.kind
        if k in "iu":
            return d.copy()
        if k == "b":
            raise NotImplementedError(f'"{fn.__name__}_vml_cpu" not implemented for \'Bool\'')
        return fn(d)
    return f


reciprocal = _unary_op("reciprocal", lambda d: 1.0 / d, lambda g, x, y: -g * y * y,
                       save_out=True, doc="1 / input; ReciprocalBackward0.")


_unary_op("rsqrt", lambda d: 1.0 / np.sqrt(d), lambda g, x, y: g * (-0.5 * y * y * y), save_out=True)
_unary_op("expm1", np.expm1, lambda g, x, y: g * (y + 1), save_out=True)
_unary_op("exp2", np.exp2, lambda g, x, y: g * (y * _LN2), save_out=True)
_unary_op("log1p", np.log1p, lambda g, x, y: g / (x + 1), save_in=True, node="Log1PBackward0")
_unary_op("log2", np.log2, lambda g, x, y: g / (x * _LN2), save_in=True)
_unary_op("log10", np.log10, lambda g, x, y: g / (x * _LN10), save_in=True)
_unary_op("tan", np.tan, lambda g, x, y: g * (1 + y * y), save_out=True)
asin = _unary_op("asin", np.arcsin, lambda g, x, y: g / X.sqrt(1 - x * x), save_in=True,
                  aliases=("arcsin",))
acos = _unary_op("acos", np.arccos, lambda g, x, y: -g / X.sqrt(1 - x * x), save_in=True,
                  aliases=("arccos",))
atan = _unary_op("atan", np.arctan, lambda g, x, y: g / (1 + x * x), save_in=True,
                  aliases=("arctan",))
_unary_op("sinh", np.sinh, lambda g, x, y: g * X.cosh(x), save_in=True)
_unary_op("cosh", np.cosh, lambda g, x, y: g * X.sinh(x), save_in=True)
_unary_op("erf", _erf_np, lambda g, x, y: g * (_TWO_OVER_SQRT_PI * X.exp(-(x * x))), save_in=True,
          complex_kernel="erf_vml_cpu")
_unary_op("erfc", _erfc_np, lambda g, x, y: g * (-_TWO_OVER_SQRT_PI * X.exp(-(x * x))),
          save_in=True, complex_kernel="erfc_vml_cpu")
def _sign_np(d):
    """PyTorch's sign: (0 < x) - (x < 0) in x's dtype, so NaN gives 0; bool stays bool."""
    if d.dtype == np.bool_:
        return d.copy()
    return (d > 0).astype(d.dtype) - (d < 0).astype(d.dtype)


_unary_op("sign", _sign_np, _zero_grad, floating=False,
          doc="Elementwise sign (-1, 0 or 1); zero gradient (SignBackward0).",
          complex_error=(NotImplementedError, "Unlike NumPy, torch.sign is not intended to "
                         "support complex numbers. Please use torch.sgn instead."))


def _sgn_np(d):
    """sign for real data, z/|z| (0 at 0) for complex (NumPy's complex sign)."""
    return np.sign(d) if d.dtype.kind == "c" else _sign_np(d)


def _sgn_bw(g, x, y):
    """0 for real x; for complex x, (g - sgn(x)**2 conj(g)) / (2|x|) (0 at 0): the conjugate
    Wirtinger gradient of z/|z|, as PyTorch's."""
    if X.data(x).dtype.kind != "c":
        return X.zeros_like(g)
    a = X.abs(x)
    zero = X.const(X.data(a) == 0, a)
    gc = g.conj() if isinstance(g, Tensor) else np.conj(g)
    r = (g - y * y * gc) / (2 * X.where(zero, 1 + 0 * a, a))
    return X.where(zero, 0 * r, r)


_unary_op("sgn", _sgn_np, _sgn_bw, floating=False, save_in=True, save_out=True,
          doc="Sign for real tensors, z/|z| for complex (SgnBackward0).")
SgnBackward0._holomorphic = False  # noqa: F821 - its formula is the complex gradient itself


def _no_complex(name):
    return NotImplementedError, f"{name} is not supported for complex inputs"


_unary_op("floor", _keep_int(np.floor), _zero_grad, floating=False,
          complex_error=_no_complex("floor"))
_unary_op("ceil", _keep_int(np.ceil), _zero_grad, floating=False,
          complex_error=_no_complex("ceil"))
trunc = _unary_op("trunc", _keep_int(np.trunc), _zero_grad, floating=False, aliases=("fix",),
                  complex_error=_no_complex("trunc"))
def _frac_np(d):
    if d.dtype.kind in "biu":
        raise NotImplementedError(f'"frac_cpu" not implemented for \'{D.scalar_type_name(d.dtype)}\'')
    return d - np.trunc(d)


_unary_op("frac", _frac_np, lambda g, x, y: g, floating=False, complex_kernel="frac_cpu")
_round0 = _unary_op("round", _keep_int(np.round), _zero_grad, floating=False,
                    complex_kernel="round_vml_cpu")
from . import OPS as _OPS  # noqa: E402


@defop("_round1", node="RoundBackward1", elementwise=True, function=False, method=False)
def _round1(self, decimals):
    """Round half to even to ``decimals`` places (PyTorch's round.decimals); RoundBackward1."""
    if self.dtype.kind not in "f":  # the kernel PyTorch names depends on the overload's path
        raise NotImplementedError(f'"{"round_vml_cpu" if decimals == 0 else "round_cpu"}" not '
                                  f"implemented for '{D.scalar_type_name(self.dtype)}'")
    return np.round(self, decimals)


@_round1.backward
def _(ctx, grad):
    return (X.zeros_like(grad),)


_round1 = _round1.fn
_OPS.pop("_round1")  # reached through round(input, decimals=...)


def round(input, *, decimals=UNSET):
    """Round half to even (to ``decimals`` places); zero gradient: RoundBackward0, or
    RoundBackward1 when ``decimals`` is given (even 0: PyTorch's round.decimals overload)."""
    if decimals is UNSET:
        return _round0(input)
    if not isinstance(decimals, (int, np.integer)) or isinstance(decimals, bool):
        raise D.bad_combo("round", (input,), {"decimals": decimals})
    return _round1(input, decimals)


round = front(_OPS["round"]["spec"], round)


def special_round(input, *, decimals=0):
    """``torch.special.round``: round with ``decimals`` always passed (RoundBackward1)."""
    return round(input, decimals=decimals)


@composite()
def square(input):
    """input ** 2, as PyTorch computes it (PowBackward0; bool becomes int64)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"square(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(input)}")
    return pow(input, 2)


@defop("logit", node="LogitBackward0", saved=("self", "eps"), promote="float",
       elementwise=True, complex_kernel="logit_cpu")
def logit(self, eps=None):
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when ``eps`` is given; LogitBackward0."""
    x = self if eps is None else np.clip(self, eps, 1 - eps)
    return np.log(x / (1 - x))


@logit.backward
def _(ctx, grad):
    x, eps = ctx.self, ctx.eps
    r = grad / (x * (1 - x))
    if eps is not None:
        xd = X.data(x)
        r = X.where(X.const((xd < eps) | (xd > 1 - eps), x), X.zeros_like(grad), r)
    return (r,)


logit = logit.fn


@defop("nan_to_num", node="NanToNumBackward0", saved=("self",), elementwise=True)
def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities by finite numbers; gradient flows only where finite."""
    if self.dtype not in D.INEXACT:
        return self.copy()
    return np.nan_to_num(self, nan=nan, posinf=posinf, neginf=neginf)


@nan_to_num.backward
def _(ctx, grad):
    x = ctx.self
    return (X.where(X.const(np.isfinite(X.data(x)), grad), grad, X.zeros_like(grad)),)


nan_to_num = nan_to_num.fn


# --- dtype conversion and copies ------------------------------------------------------
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


# --- comparisons and logical ops (never differentiable) --------------------------------
_NUMBERS = (int, float, bool, complex)


def _cmp(np_fn, name, ordered, aliases=()):
    """Declare the elementwise comparison ``name`` (bool result, no derivative) of two tensors
    or a tensor and a number, its other names, and its operator method; ``ordered`` (lt, le,
    gt, ge): complex operands are refused with PyTorch's dispatch error, as complex numbers
    have no order."""
    def forward(self, other):
        # a number the tensor's dtype cannot hold comes as a Python int (ops/_spec.py
        # ``_scalar_run``): PyTorch converts it to that dtype, wrapping around (``uint8 == -1``
        # compares with 255; a number from 2**63 to 2**64 - 1 is read as uint64 first)
        if other.__class__ is int:
            other = np.asarray(other).astype(self.dtype)
        return np_fn(self, other)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"Elementwise {name} (bool result, no gradient)."
    spec = defop(name, node=None, inputs=("self", "other"), differentiable=False,
                 elementwise=True, complex_kernel=name + "_cpu" if ordered else None,
                 aliases=aliases)(forward)
    spec.scalar(None)  # eq(x, 1.5): the number as the second input only, as PyTorch's
    method = _OPS[f"_{name}_method"]["fn"]
    dunder = f"__{name}__"

    def operator(self, other):
        # another operand is left to Python (``x == "a"`` is False, ``x < "a"`` a TypeError)
        if type(other) not in _NUMBERS and not isinstance(other, (Tensor, np.number, np.bool_)):
            return NotImplemented
        return method(self, other)

    operator.__name__ = operator.__qualname__ = dunder
    operator.__doc__ = f"``self {_SYMBOLS[name]} other``."
    composite(f"_{name}", function=False, method=False, methods=(dunder,))(operator)
    return spec.fn


_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
eq = _cmp(np.equal, "eq", False)
ne = _cmp(np.not_equal, "ne", False, ("not_equal",))
lt = _cmp(np.less, "lt", True, ("less",))
le = _cmp(np.less_equal, "le", True, ("less_equal",))
gt = _cmp(np.greater, "gt", True, ("greater",))
ge = _cmp(np.greater_equal, "ge", True, ("greater_equal",))


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
    method = _OPS[f"_{name}_method"]["fn"]

    def operator(self, other):
        if type(other) not in _NUMBERS and not isinstance(other, (Tensor, np.number, np.bool_)):
            return NotImplemented
        return method(self, other)  # (commutative: ``3 & x`` is ``x & 3``)

    operator.__name__ = operator.__qualname__ = f"__{symbol}__"
    operator.__doc__ = f"``self {symbol} other``, either way round."
    composite(f"_{symbol}", function=False, method=False,
              methods=(f"__{symbol}__", f"__r{symbol}__"))(operator)
    return spec.fn


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


# value reads: under vmap, read once per sample (torch.vmap refuses both ops)
@query(tensors=("input", "other"), direct=False)
def equal(input, other) -> bool:
    """True when both tensors have the same shape and values."""
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


@query(tensors=["input", "other"], direct=False)  # (with more arguments than the two tensors)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether ``isclose`` holds everywhere, as PyTorch computes it."""
    from .elementwise_more import isclose
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


from .. import _tensor as _tensor_module  # noqa: E402

# Tensor's own methods call it (the core registers nothing from above itself)
_tensor_module.LATE.to_dtype = to_dtype
