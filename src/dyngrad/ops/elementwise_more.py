"""More elementwise ops: binary math (atan2, fmod, remainder, hypot, xlogy, copysign, ...),
clamp and its relatives, maximum/minimum, where, lerp, and the non-differentiable
predicates (isnan, isclose, logical ops).  Same conventions as ``pointwise``: gradients are
written with operators and the dual helpers so they also run under ``create_graph``."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from . import OPS, composite, op
from .._fperr import quiet
from ..autograd.node import NotImplemented_
from .._record import STATE, Tensor, edge_of, edges_first, record
from . import _dual as X
from .. import _warn
from ._spec import batch_aligned, defop, edgeless, fp_safe, front, unary
from .pointwise import (_call2, _scalar_ok, broadcast_error,
                        floor, trunc)  # noqa: F401 - floor/trunc re-exported for div

_make = Tensor._make
_NO_ARGS: dict = {}
_isT = isinstance


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


_NUMBERS = (int, float, bool, complex)


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


# --- maximum / minimum, fmax / fmin (NaN-ignoring) ----------------------------------------
def _pick(grad, w):
    """``grad`` weighted by ``w`` (an array, 1 where the input was chosen, 0.5 on a tie); an
    input not chosen gets zeros, not 0 * grad (NaN for a NaN gradient)."""
    w = np.broadcast_to(w, tuple(grad.shape))
    return X.where(X.const(w != 0, grad), grad * X.const(w.astype(X.data(grad).dtype), grad),
                   X.zeros_like(grad))


def _choice(spec, weights):
    """The backward of an elementwise choice between the two inputs: each input's gradient is
    the incoming one weighted by how much that input was chosen (``weights(a, b)``)."""
    @spec.backward
    def _(ctx, grad):
        wa, wb = weights(X.data(ctx.self), X.data(ctx.other))
        return (_pick(grad, wa) if ctx.needs(0) else None,
                _pick(grad, wb) if ctx.needs(1) else None)
    return spec.fn


def _max_weights(sign):
    """Ties split the gradient evenly; an input is masked only where it lost, so where a NaN
    makes the comparison false both inputs get the whole gradient (PyTorch's formula)."""
    def weights(a, b):
        half = 0.5 * (a == b)
        if sign > 0:
            return 1.0 - (a < b) - half, 1.0 - (b < a) - half
        return 1.0 - (a > b) - half, 1.0 - (b > a) - half
    return weights


def _fmax_weights(sign):
    """The gradient goes to ``input`` where it was kept (it won, tied, or other is NaN)."""
    def weights(a, b):
        keep_a = ((a >= b) if sign > 0 else (a <= b)) | np.isnan(b)
        return keep_a, ~keep_a
    return weights


def _choice_op(name, np_fn, doc, weights):
    return _choice(_binop(name, np_fn, doc, saved=("self", "other"), complex_error=(
        RuntimeError, f"{name} not implemented for complex tensors.")), weights)


maximum = _choice_op("maximum", np.maximum, "Elementwise maximum (NaN propagates; ties split "
                     "the gradient); MaximumBackward0.", _max_weights(1))
minimum = _choice_op("minimum", np.minimum, "Elementwise minimum (NaN propagates; ties split "
                     "the gradient); MinimumBackward0.", _max_weights(-1))
fmax = _choice_op("fmax", np.fmax, "Elementwise maximum that ignores NaN (the other value is "
                  "taken); FmaxBackward0.", _fmax_weights(1))
fmin = _choice_op("fmin", np.fmin, "Elementwise minimum that ignores NaN (the other value is "
                  "taken); FminBackward0.", _fmax_weights(-1))


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

# --- clamp -------------------------------------------------------------------------------
def _result_dtype(tensors, scalars=()):
    """PyTorch's promotion over tensors (dimensioned beat 0-d) and Python scalars."""
    rt = None
    rnd = 0
    for t in tensors:
        dt = D.FROM_NP[t._data.dtype]
        if rt is None:
            rt, rnd = dt, t._data.ndim
        else:
            rt = D.result_type(rt, rnd, dt, t._data.ndim)
            rnd = max(rnd, t._data.ndim)
    for v in scalars:
        if v is None:
            continue
        if isinstance(v, float) and not rt.is_floating_point and rt.np.kind != "c":
            rt = D.DEFAULTS.float
        elif isinstance(v, int) and not isinstance(v, bool) and rt.np.kind == "b":
            rt = D.int64
    return rt


_CTYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
           "uint8": "uint8_t", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
           "float32": "float", "float64": "double"}


_INF = float("inf")
_FMAX: dict = {}


def _fmax(rt):
    """The largest finite value of floating dtype ``rt``, as a Python float."""
    m = _FMAX.get(rt)
    if m is None:
        m = _FMAX[rt] = float(D.np_finfo(rt).max)
    return m


def _bound(v, rt):
    """A number bound of clamp in the result dtype ``rt``, converted as PyTorch converts a
    Scalar (c10's checked conversion): a value the dtype cannot hold is refused, except that
    an unsigned dtype takes a negative integer down to -max (wrapping around)."""
    if isinstance(v, complex):
        if v.imag:  # PyTorch reads it as a double first
            raise RuntimeError("value cannot be converted to type double without overflow")
        v = v.real
    if isinstance(v, int) and not isinstance(v, bool):
        if not -2 ** 63 <= v < 2 ** 64:
            raise OverflowError("int too big to convert")
        if rt.kind in "iu":
            info = np.iinfo(rt)
            if v > info.max or v < (-info.max if rt.kind == "u" else info.min):
                raise RuntimeError(f"value cannot be converted to type {_CTYPES[rt.name]} "
                                   f"without overflow")
            return np.asarray(v).astype(rt)
    if rt in D.FLOATING:
        m = _fmax(rt)
        if not -m <= v <= m and v == v and v != _INF and v != -_INF:
            raise RuntimeError(f"value cannot be converted to type "
                               f"{_CTYPES.get(rt.name, rt.name)} without overflow")
    return np.asarray(v, dtype=rt)


def _scalar_bounds(self, lo, hi, kernel):
    """Number bounds of clamp (None: absent) as arrays of the result dtype, which the tensor
    takes with them (PyTorch's Scalar promotion), and the input in that dtype."""
    lo = lo.item() if isinstance(lo, np.generic) else lo
    hi = hi.item() if isinstance(hi, np.generic) else hi
    rt = self.dtype
    for v in (lo, hi):
        if isinstance(v, float) and rt.kind in "biu":
            rt = D.DEFAULTS.float.np
        elif isinstance(v, int) and not isinstance(v, bool) and rt.kind == "b":
            rt = np.dtype(np.int64)
    if rt.kind == "b":
        raise NotImplementedError(f"\"{kernel}_scalar_cpu\" not implemented for 'Bool'")
    blo = None if lo is None else _bound(lo, rt)
    bhi = None if hi is None else _bound(hi, rt)
    return (self if self.dtype == rt else self.astype(rt)), blo, bhi


def _clamped(d, lo, hi):
    r = d
    if lo is not None:
        r = np.maximum(r, lo)
    if hi is not None:
        r = np.minimum(r, hi)
    return d.copy() if r is d else r


def _kept(grad, mask):
    """``grad`` where ``mask`` (an array of the input's shape) holds, zeros elsewhere."""
    shape = tuple(grad.shape)
    if mask.shape != shape:
        mask = np.broadcast_to(mask, shape)
    return X.where(X.const(mask, grad), grad, X.zeros_like(grad))


_NO_COMPLEX = (NotImplementedError, "clamp is not supported for complex types")


@defop("clamp", node="ClampBackward1", saved=("self", "min", "max"), elementwise=True,
       complex_error=_NO_COMPLEX)
@fp_safe
def _clamp(self, min=None, max=None):
    """Limit values to [min, max] (numbers, either may be None); ClampBackward1."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    return _clamped(*_scalar_bounds(self, min, max, "clamp" if min is not None and
                                    max is not None else "clamp_min" if min is not None
                                    else "clamp_max"))


@_clamp.backward
def _(ctx, grad):
    # the subgradient 1 at the bounds, as PyTorch's clamp_backward
    x, lo, hi = X.data(ctx.self), ctx.min, ctx.max
    if lo is not None and hi is not None:
        return _kept(grad, (x >= lo) & (x <= hi)),
    return _kept(grad, x >= lo if lo is not None else x <= hi),


@defop("clamp_min", node="ClampMinBackward0", saved=("self", "min"), elementwise=True,
       complex_error=_NO_COMPLEX)
@fp_safe
def _clamp_min(self, min):
    """max(input, min) elementwise, ``min`` a number; ClampMinBackward0."""
    return _clamped(*_scalar_bounds(self, min, None, "clamp_min"))


@_clamp_min.backward
def _(ctx, grad):
    return _kept(grad, X.data(ctx.self) >= ctx.min),


@defop("clamp_max", node="ClampMaxBackward0", saved=("self", "max"), elementwise=True,
       complex_error=_NO_COMPLEX)
@fp_safe
def _clamp_max(self, max):
    """min(input, max) elementwise, ``max`` a number; ClampMaxBackward0."""
    return _clamped(*_scalar_bounds(self, None, max, "clamp_max"))


@_clamp_max.backward
def _(ctx, grad):
    return _kept(grad, X.data(ctx.self) <= ctx.max),


# the overloads with tensor bounds (PyTorch's clamp.Tensor, clamp_min.Tensor,
# clamp_max.Tensor): the forward gets the arrays in their common dtype (an absent bound None)
@defop("clamp", node="ClampBackward0", inputs=("self", "min", "max"),
       saved=("self", "min", "max"), broadcast=True, function=False, method=False)
def _clamp_t(self, min, max):
    """Limit values to [min, max] (tensors, broadcast); ClampBackward0."""
    return _clamped(self, min, max)


@_clamp_t.backward
def _(ctx, grad):
    # PyTorch's clamp_backward and clamp_backward_min_max
    x, lo, hi = X.data(ctx.self), ctx.min, ctx.max
    lo = None if lo is None else X.data(lo)
    hi = None if hi is None else X.data(hi)
    if lo is not None and hi is not None:
        mx, mlo, mhi = (x >= lo) & (x <= hi), (x < lo) & (lo < hi), (x > hi) | (hi < lo)
    elif lo is not None:
        mx, mlo, mhi = x >= lo, x < lo, None
    else:
        mx, mlo, mhi = x <= hi, None, x > hi
    return (_kept(grad, mx) if ctx.needs(0) else None,
            _kept(grad, mlo) if mlo is not None and ctx.needs(1) else None,
            _kept(grad, mhi) if mhi is not None and ctx.needs(2) else None)


@_clamp_t.jvp
def _(ctx, t_self, t_min, t_max):
    # PyTorch's clamp_jvp (the tangent of a bound it took)
    x, lo, hi = ctx.self, ctx.min, ctx.max
    lo, hi = (None if v is _ABSENT else v for v in (lo, hi))  # (read as None once recorded)
    ts, tlo, thi = (0.0 if t is None else t for t in (t_self, t_min, t_max))
    if lo is not None and hi is not None:
        return where(lo > hi, thi, where(x < lo, tlo, where(x > hi, thi, ts)))
    if lo is not None:
        return where(x > lo, ts, tlo)
    return where(x < hi, ts, thi)


@defop("clamp_min", node="ClampMinBackward1", inputs=("self", "min"), saved=("self", "min"),
       broadcast=True, function=False, method=False)
def _clamp_min_t(self, min):
    """max(input, min) elementwise, ``min`` a tensor (broadcast); ClampMinBackward1."""
    return _clamped(self, min, None)


@_clamp_min_t.backward
def _(ctx, grad):
    x, lo = X.data(ctx.self), X.data(ctx.min)
    return (_kept(grad, x >= lo) if ctx.needs(0) else None,
            _kept(grad, x < lo) if ctx.needs(1) else None)


@_clamp_min_t.jvp
def _(ctx, t_self, t_min):
    return where(ctx.self >= ctx.min, 0.0 if t_self is None else t_self,
                 0.0 if t_min is None else t_min)


@defop("clamp_max", node="ClampMaxBackward1", inputs=("self", "max"), saved=("self", "max"),
       broadcast=True, function=False, method=False)
def _clamp_max_t(self, max):
    """min(input, max) elementwise, ``max`` a tensor (broadcast); ClampMaxBackward1."""
    return _clamped(self, None, max)


@_clamp_max_t.backward
def _(ctx, grad):
    x, hi = X.data(ctx.self), X.data(ctx.max)
    return (_kept(grad, x <= hi) if ctx.needs(0) else None,
            _kept(grad, x > hi) if ctx.needs(1) else None)


@_clamp_max_t.jvp
def _(ctx, t_self, t_max):
    return where(ctx.self <= ctx.max, 0.0 if t_self is None else t_self,
                 0.0 if t_max is None else t_max)


for _spec in (_clamp_t, _clamp_min_t, _clamp_max_t):
    OPS.pop(_spec.key)  # overloads reached through the public functions
del _spec
_ABSENT = _make(np.zeros((), np.float32))  # the edge of an absent tensor bound: none


def _clamp_tensors(spec, input, lo, hi):
    """clamp, clamp_min or clamp_max (``spec``) with tensor bounds (None: absent): in their
    common dtype, broadcast, with PyTorch's errors; an absent bound of clamp has no edge and
    its saved value reads None."""
    both = spec is _clamp_t
    ts = [t for t in (input, lo, hi) if t is not None]
    rt = _result_dtype(ts).np
    if rt.kind == "c":
        if both and input._data.dtype.kind == "c":
            raise NotImplementedError(_NO_COMPLEX[1])
        raise NotImplementedError(f"\"{'maximum' if lo is not None else 'minimum'}_cpu\" not "
                                  f"implemented for '{D.scalar_type_name(rt)}'")
    if rt == np.bool_ and lo is not None and hi is not None:  # (one bound: maximum/minimum)
        raise NotImplementedError("\"clamp_cpu\" not implemented for 'Bool'")
    shapes = [t._data.shape for t in ts]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise broadcast_error(*shapes) from None
    arrays = [None if t is None else t._data.astype(rt, copy=False) for t in (input, lo, hi)]
    if both:
        r = spec.forward(*arrays)
        tensors = (input, _ABSENT if lo is None else lo, _ABSENT if hi is None else hi)
    else:
        r = spec.forward(arrays[0], arrays[1] if lo is not None else arrays[2])
        tensors = (input, lo if lo is not None else hi)
    if r.shape != shape:
        r = np.array(np.broadcast_to(r, shape))
    casts = tuple(None if t is _ABSENT or t._data.dtype == rt else t._data.dtype
                  for t in tensors)
    res = spec.record(r, tensors, _NO_ARGS, None if casts == (None,) * len(casts) else casts)
    node = res._grad_fn
    if both and node is not None and (lo is None or hi is None):
        saved = list(node._saved)
        saved[1 if lo is None else 2] = None
        node._saved = tuple(saved)
    return res


_clamp_n, _clamp_min_n, _clamp_max_n = _clamp.fn, _clamp_min.fn, _clamp_max.fn


def _clamp_combo(name, input, min, max):
    """PyTorch's TypeError for a clamp/clip call with a non-tensor ``input``."""
    args = (input,) + ((min,) if min is not None or max is not None else ()) + \
        ((max,) if max is not None else ())
    return D.bad_combo(name, args)


_BOUNDS = frozenset((int, float, type(None)))


def _clamp_any(name, input, min, max):
    """clamp (or its alias ``name``) of numbers (ClampBackward1) or tensors (ClampBackward0)."""
    if min.__class__ is Tensor or max.__class__ is Tensor or _isT(min, Tensor) or \
            _isT(max, Tensor):
        if not _isT(input, Tensor):
            raise _clamp_combo(name, input, min, max)
        tmin, tmax = _isT(min, Tensor), _isT(max, Tensor)
        if (tmin or min is None) and (tmax or max is None):
            return _clamp_tensors(_clamp_t, input, min, max)
        # a tensor and a number: PyTorch's Scalar overload, which takes a tensor only when it
        # is 0-d and does not require grad (ClampBackward1, one edge)
        t = min if tmin else max
        if t._data.ndim or t._requires_grad:
            raise D.bad_combo(name, (input, min, max))
        min, max = (min.item() if tmin else min), (max.item() if tmax else max)
    elif not _isT(input, Tensor):
        raise _clamp_combo(name, input, min, max)
    return _clamp_n(input, min, max)


def clamp(input, min=None, max=None):
    """Limit values to [min, max] (numbers or tensors, either may be None); ClampBackward1
    (numbers) / ClampBackward0 (tensors)."""
    if input.__class__ is Tensor and min.__class__ in _BOUNDS and max.__class__ in _BOUNDS:
        return _clamp_n(input, min, max)  # the common call: numbers
    return _clamp_any("clamp", input, min, max)


def clamp_min(input, min):
    """max(input, min) elementwise; ClampMinBackward0 (a number) / ClampMinBackward1 (a
    tensor)."""
    if _isT(min, Tensor) and _isT(input, Tensor):
        return _clamp_tensors(_clamp_min_t, input, min, None)
    return _clamp_min_n(input, min)


def clamp_max(input, max):
    """min(input, max) elementwise; ClampMaxBackward0 (a number) / ClampMaxBackward1 (a
    tensor)."""
    if _isT(max, Tensor) and _isT(input, Tensor):
        return _clamp_tensors(_clamp_max_t, input, None, max)
    return _clamp_max_n(input, max)


clamp = front(_clamp, clamp)
clamp_min = front(_clamp_min, clamp_min)
clamp_max = front(_clamp_max, clamp_max)
OPS["clamp"]["methods"] = ("clip",)
for _name, _spec in (("clamp", _clamp_t), ("clamp_min", _clamp_min_t),
                     ("clamp_max", _clamp_max_t)):
    OPS[_name]["nodes"] += (_spec.node_cls.__name__,)
del _name, _spec


@composite("clip", method=False)
def clip(input, min=None, max=None):
    """Alias of :func:`clamp`."""
    return _clamp_any("clip", input, min, max)


# --- where ---------------------------------------------------------------------------------
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


# --- predicates and logical ops (no gradient) ---------------------------------------------------
def _pred(name, np_fn, doc, complex_error=None):
    """A bool-valued elementwise op of one tensor, which PyTorch has no derivative for: any
    dtype is taken as it is, the result never requires grad."""
    return unary(name, np_fn, None, module=__name__, promote=None, doc=doc,
                 complex_error=complex_error).fn


def _no_complex(name, cls=RuntimeError, says="does not support complex inputs"):
    return cls, f"{name} {says}."


isnan = _pred("isnan", np.isnan, "True where the element is NaN.")
isinf = _pred("isinf", np.isinf, "True where the element is +inf or -inf.")
isfinite = _pred("isfinite", np.isfinite, "True where the element is neither inf nor NaN.")
isposinf = _pred("isposinf", np.isposinf, "True where the element is +inf.",
                 _no_complex("isposinf"))
isneginf = _pred("isneginf", np.isneginf, "True where the element is -inf.",
                 _no_complex("isneginf"))
isreal = _pred("isreal", np.isreal, "True where the element has no imaginary part.")
logical_not = _pred("logical_not", np.logical_not,
                    "Elementwise NOT of truth values (bool result).")
signbit = _pred("signbit", np.signbit, "True where the sign bit is set (including -0.0).",
                _no_complex("signbit", NotImplementedError, "is not implemented for complex "
                            "tensors"))


def _logical(np_fn, name):
    """A bool-valued elementwise op of two broadcast tensors without a derivative."""
    def forward(self, other):
        return _call2(np_fn, self, other)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = f"Elementwise {name.split('_')[1].upper()} of truth values (bool result)."
    return defop(name, node=None, inputs=("self", "other"), differentiable=False,
                 elementwise=True)(forward).fn


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")


@defop("isclose", node=None, inputs=("self", "other"), differentiable=False, elementwise=True)
def isclose(self, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """|input - other| <= atol + rtol * |other| elementwise (bool result); PyTorch's checks of
    the arguments first, in its order."""
    for k, v in (("rtol", rtol), ("atol", atol)):
        if not isinstance(v, (int, float, np.number)):
            raise TypeError(f"isclose(): argument '{k}' must be float, not {D.type_name(v)}")
    D.arg_bools("isclose", equal_nan=equal_nan)
    if self.dtype != other.dtype:
        raise RuntimeError(f"{D.scalar_type_name(self.dtype)} did not match "
                           f"{D.scalar_type_name(other.dtype)}")
    for k, v in (("rtol", rtol), ("atol", atol)):
        if v < 0:
            raise RuntimeError(f"{k} must be greater than or equal to zero, but got {v:g}")
    return np.asarray(_call2(lambda a, b: np.isclose(a, b, rtol=rtol, atol=atol,
                                                     equal_nan=equal_nan), self, other))


isclose = isclose.fn
