"""Elementwise ops of one tensor: neg, exp/log and their relatives, the trigonometric and
hyperbolic functions (and their ``arc`` aliases), sqrt, rsqrt, reciprocal, abs, sign, sgn,
rounding (floor, ceil, trunc, frac, round), relu, sigmoid, tanh, square, logit, nan_to_num,
deg2rad, rad2deg, angle; most are one ``unary`` declaration each (``ops/_spec.py``).
Gradients are written with operators and the dual helpers, so they also run under
``create_graph`` (and give forward-mode tangents)."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from . import OPS, composite
from .._record import STATE, Node, Saved, Tensor, edge_of, record
from . import _dual as X
from .binary import UNSET, _times, add_scalar
from ._spec import defop, front, unary

_make = Tensor._make
_isT = isinstance


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
OPS["abs"]["methods"] += ("__abs__",)  # Python's abs(t)


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



_PI = math.pi
_DEG2RAD = math.pi / 180
_RAD2DEG = 180 / math.pi


def _rsqrt(x):
    return X._t().rsqrt(x) if isinstance(x, X.Tensor) else 1 / np.sqrt(x)


def _angle_np(d):
    if d.dtype.kind == "c":
        return np.angle(d)
    return np.where(np.isnan(d), d, np.where(d < 0, _PI, 0.0)).astype(d.dtype, copy=False)


def _angle_bw(g, x, y):
    """Zero for real input; for complex input ``g * i z / |z|^2`` (0 at z = 0), as PyTorch's
    angle_backward."""
    if X.data(x).dtype.kind != "c":
        return X.zeros_like(x)
    r = g * x / (X.abs(x) ** 2) * 1j
    return X.where(X.const(X.data(x) == 0, r), X.zeros_like(r), r)


# PyTorch has no derivative for the in-place asinh_/acosh_/atanh_ (<Name>Backward1 raises)
asinh = unary("asinh", np.arcsinh, lambda g, x, y: g * _rsqrt(x ** 2 + 1), module=__name__,
              aliases=("arcsinh",), inplace_derivative=False).fn
def _acosh_bw(g, x, y):
    """1/sqrt(x**2 - 1); for complex x PyTorch's branch, 1/(sqrt(x - 1) sqrt(x + 1))."""
    if X.data(x).dtype.kind == "c":
        return g * _rsqrt(x - 1) * _rsqrt(x + 1)
    return g * _rsqrt(x ** 2 - 1)


acosh = unary("acosh", np.arccosh, _acosh_bw, module=__name__, aliases=("arccosh",),
              inplace_derivative=False).fn
atanh = unary("atanh", np.arctanh, lambda g, x, y: g * 1 / (1 - x ** 2), module=__name__,
              aliases=("arctanh",), inplace_derivative=False).fn
deg2rad = unary("deg2rad", lambda d: d * _DEG2RAD, lambda g, x, y: g * _DEG2RAD,
                module=__name__, saved=(), node="Deg2RadBackward0", real_only=True).fn
rad2deg = unary("rad2deg", lambda d: d * _RAD2DEG, lambda g, x, y: g * _RAD2DEG,
                module=__name__, saved=(), node="Rad2DegBackward0", real_only=True).fn
angle = unary("angle", _angle_np, _angle_bw, module=__name__).fn
