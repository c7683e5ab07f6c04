"""Comparisons: eq, ne, lt, le, gt, ge (and their operators), equal, allclose, isclose; the
choices maximum, minimum, fmax, fmin and the clamp family (clamp, clamp_min, clamp_max,
clip); the bool-valued predicates (isnan, isinf, isfinite, isposinf, isneginf, isreal,
signbit) and the logical ops.  Comparisons, predicates and logical ops have no derivative;
maximum, minimum and clamp send the gradient to the chosen operand, as PyTorch does."""
from __future__ import annotations


import numpy as np

from .. import _dtype as D
from . import OPS, composite, query
from .._record import Tensor
from . import _dual as X
from .binary import _binop, _call2, broadcast_error, operator_method
from ._spec import defop, fp_safe, front, unary

_make = Tensor._make
_OPS = OPS
_NO_ARGS: dict = {}
_isT = isinstance


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
    operator_method(_OPS[f"_{name}_method"]["fn"], (f"__{name}__",),
                    f"``self {_SYMBOLS[name]} other``.", f"_{name}")
    return spec.fn


_SYMBOLS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
eq = _cmp(np.equal, "eq", False)
ne = _cmp(np.not_equal, "ne", False, ("not_equal",))
lt = _cmp(np.less, "lt", True, ("less",))
le = _cmp(np.less_equal, "le", True, ("less_equal",))
gt = _cmp(np.greater, "gt", True, ("greater",))
ge = _cmp(np.greater_equal, "ge", True, ("greater_equal",))



# value reads: under vmap, read once per sample (torch.vmap refuses both ops)
@query(tensors=("input", "other"), direct=False)
def equal(input, other) -> bool:
    """True when both tensors have the same shape and values."""
    return input._data.shape == other._data.shape and bool(np.array_equal(input._data, other._data))


@query(tensors=["input", "other"], direct=False)  # (with more arguments than the two tensors)
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether ``isclose`` holds everywhere, as PyTorch computes it."""
    from .comparison import isclose
    return bool(isclose(input, other, rtol, atol, equal_nan).all())



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
    from .indexing import where
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
    from .indexing import where
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
    from .indexing import where
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
