"""The softmax family: ``_softmax`` and ``_log_softmax`` along a dimension (SoftmaxBackward0,
LogSoftmaxBackward0), computed stably, and the public softmax / log_softmax PyTorch composes
of them (the implicit dim, a cast to ``dtype`` first)."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from . import _dual as X
from ._spec import batch_along, defop
from .._record import STATE, edge_of, raw_dim, record
from .._tensor import Tensor, _dim
from .._warn import warn

_make = Tensor._make


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def _along(name, scalar, kernel, x, k):
    """softmax or log_softmax of array ``x`` along axis ``k``: ``scalar(x)`` for a 0-d input,
    ``kernel(x, k)`` otherwise; PyTorch has no integer (or bool) kernels (a non-empty integer
    input is an error, and so is a complex one)."""
    if (x.dtype not in D.INEXACT or x.dtype.kind == "c") and x.size:
        kernel_name = f"{name}_lastdim_kernel_impl" if x.ndim == 0 or k == x.ndim - 1 else \
            f"{name}_kernel_impl"
        raise NotImplementedError(f'"{kernel_name}" not implemented for '
                                  f"'{D.scalar_type_name(x.dtype)}'")
    if x.ndim == 0:  # NaN for a NaN or infinite input (inf - inf), as PyTorch
        return scalar(x)
    if x.size == 0:  # an empty tensor (e.g. over a size-0 dim): an empty result
        return np.empty_like(x)
    return np.ascontiguousarray(kernel(x, k))  # PyTorch's layout


def _softmax_np(x, k):
    e = np.exp(x - x.max(axis=k, keepdims=True))
    return e / e.sum(axis=k, keepdims=True)


def _log_softmax_np(x, k):
    s = x - x.max(axis=k, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=k, keepdims=True))


def _axes(dim, ndim):
    """The axes a softmax sums over: ``dim`` wrapped (none for a 0-d tensor)."""
    return (dim % ndim,) if ndim else ()


def _softmax_grad(g, y, dim):
    gy = g * y
    return gy - y * X.sum_dims(gy, _axes(dim, y.ndim))


def _log_softmax_grad(g, y, dim):
    return g - X.exp(y) * X.sum_dims(g, _axes(dim, y.ndim))


@defop("_softmax", node="SoftmaxBackward0", saved=("dim", "result"), dims=("dim",),
       method=False, batch=batch_along("dim"))
def _softmax(self, dim, half_to_float):
    """exp(x) / sum(exp(x)) along ``dim``, computed stably; SoftmaxBackward0."""
    return _along("softmax", lambda x: np.exp(x - x), _softmax_np, self, dim)


@_softmax.backward
def _(ctx, grad):
    return _softmax_grad(grad, ctx.result, ctx.dim),


@_softmax.jvp
def _(ctx, t):
    y = ctx.result
    return y * (t - X.sum_dims(y * t, _axes(ctx.dim, y.ndim)))


@defop("_log_softmax", node="LogSoftmaxBackward0", saved=("dim", "result"), dims=("dim",),
       method=False, batch=batch_along("dim"))
def _log_softmax(self, dim, half_to_float):
    """x - logsumexp(x) along ``dim``; LogSoftmaxBackward0."""
    return _along("log_softmax", lambda x: x - x, _log_softmax_np, self, dim)


@_log_softmax.backward
def _(ctx, grad):
    return _log_softmax_grad(grad, ctx.result, ctx.dim),


@_log_softmax.jvp
def _(ctx, t):
    return t - X.sum_dims(X.exp(ctx.result) * t, _axes(ctx.dim, t.ndim))


def _fast_bw(formula):
    """The node's backward without a Ctx (the hot path: cross_entropy's log_softmax)."""
    def bw(self, g, graph):
        dim, sy = self._saved
        y = sy.get(self, graph)
        if self._odt is D.BF16 and not graph:  # in float32, rounded once, as PyTorch's kernels
            return D.opmath(formula, g, y, dim),
        return formula(g, y, dim),
    return bw


_softmax.node_cls._bw = _fast_bw(_softmax_grad)
_log_softmax.node_cls._bw = _fast_bw(_log_softmax_grad)
SoftmaxBackward0 = _softmax.node_cls
LogSoftmaxBackward0 = _log_softmax.node_cls


def _dim_arg(input, dim, name):
    """``dim``, or the implicit one (deprecated, with PyTorch's warning) when None."""
    if dim is None:
        warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
             f"include dim=X as an argument.")  # at the user's line, as PyTorch's
        dim = _softmax_dim(input._data.ndim)
    return dim


def _composed(spec, name, input, dim, dtype):
    """softmax or log_softmax as PyTorch composes it: the implicit dim (deprecated), a cast
    to ``dtype`` first (ToCopyBackward0 when the dtype changes), then the declared op."""
    if dim is None:
        dim = _dim_arg(input, dim, name)
    if dtype is not None:
        input = input.to(D.to_dtype(dtype))
    d = input._data
    k = _dim(dim, d.ndim)  # (PyTorch's errors for a dim out of range or not an int)
    if type(dim) is not int:
        dim = raw_dim(dim)
    if d.dtype.kind not in spec.kinds:  # (bfloat16: computed in float32)
        return spec.fn(input, dim, False)
    r = spec.forward(d, k, False)
    if STATE.enabled and input._requires_grad:
        return spec.record1(r, input, {"dim": dim})
    return _make(r)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, computed stably; SoftmaxBackward0."""
    return _composed(_softmax, "softmax", input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim``; LogSoftmaxBackward0."""
    return _composed(_log_softmax, "log_softmax", input, dim, dtype)


# public in nn.functional (whose module wraps them with PyTorch's argument errors)
softmax.__module__ = "dyngrad.nn.functional"
log_softmax.__module__ = "dyngrad.nn.functional"


# --- pointwise activations -----------------------------------------------------------------
# Each is one declaration with PyTorch's node and saved values; its gradient is PyTorch's
# ``<op>_backward`` op, declared too (``_<op>_backward``, recording <Op>BackwardBackward0 under
# create_graph), so derivatives of every order follow PyTorch's formulas (derivatives.yaml).
# silu and mish differentiate their gradient as PyTorch's infinitely_differentiable_*
# composites.  The in-place forms PyTorch records with a node of their own (elu_, celu_,
# leaky_relu_, threshold_) are declared as ops of their own, written back by inplace.apply.
from ..ops._spec import batch_along, defop as _defop  # noqa: E402
from . import OPS as _OPS  # noqa: E402
from . import binary as _bin, unary as _un  # noqa: E402

_plus = X.twin(lambda a, v: a + v, _bin.add_scalar)      # AddBackward1 on Tensors
_times = X.twin(lambda a, v: a * v, _bin.mul_scalar)     # MulBackward1 on Tensors
_minus = X.twin(lambda a, v: a - v, _bin.sub_scalar)     # SubBackward1 on Tensors


def rsub_number(s, t):
    """``s - t`` for a number ``s``, as PyTorch's C++ ``Scalar - Tensor`` computes and records
    it (a tensor filled with ``s`` minus ``t``: SubBackward0 whose first edge is None)."""
    d = t._data
    if d.dtype not in D.INEXACT:
        v = checked_scalar(s, d.dtype) if d.dtype.kind in "iu" else s
        return _make(np.full(d.shape, v, d.dtype)) - t
    r = np.asarray(s - d, dtype=d.dtype)
    if STATE.enabled and t._requires_grad:
        return record(r, _bin.SubBackward0(((None, 0), edge_of(t)), (1, d.shape, d.shape)))
    return _make(r)


_rsub = X.twin(lambda s, t: s - t, rsub_number)


def checked_scalar(v, dt):
    """A Python number as PyTorch's kernels read it in integer dtype ``dt`` (c10's checked
    conversion), else its overflow error."""
    from .comparison import _CTYPES, _bound
    if isinstance(v, float):
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:  # NaN too
            raise RuntimeError(f"value cannot be converted to type {_CTYPES[dt.name]} without "
                               f"overflow")
        return np.asarray(int(v)).astype(dt)
    return _bound(int(v), dt)


def _int_prm(x, name, prm):
    """The scalar parameters of hardtanh/threshold as PyTorch's kernels read them in ``x``'s
    dtype (hardtanh's limits through int64 first)."""
    if x.dtype.kind not in "iu":
        from .comparison import _bound
        for v in prm:  # a float dtype refuses a finite value beyond its range
            _bound(v, x.dtype)
        return prm
    if name == "threshold":
        return tuple(checked_scalar(v, x.dtype) for v in prm)
    lim = tuple(int(checked_scalar(float(v), np.dtype(np.int64))) for v in prm)
    if x.dtype.kind == "u" and min(lim) < 0:
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return tuple(checked_scalar(v, x.dtype) for v in lim)


def _mask(cond, like):
    """``cond`` (an array) as 0/1 of ``like``'s dtype, a constant of ``like``'s kind."""
    return X.const(cond.astype(X.data(like).dtype), like)


def _sig(x):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _softplus_np(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _same(r, x):
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def _grad_op_rules(spec, first, second):
    """The backward and forward-mode rule of a gradient op ``g * f'(x)`` (inputs
    ``grad_output`` and the saved tensor): ``first(grad, ctx)`` is the op again for the
    incoming gradient, ``second(grad, ctx)`` the part for the tensor (``gg * g * f''(x)``)."""
    @spec.backward
    def _(ctx, grad):
        return (first(grad, ctx) if ctx.needs(0) else None,
                second(grad, ctx) if ctx.needs(1) else None)

    @spec.jvp
    def _(ctx, t_go, t_x):
        out = None if t_go is None else first(t_go, ctx)
        if t_x is not None:
            d = second(t_x, ctx)
            out = d if out is None else out + d
        return out

    _OPS.pop(spec.key)  # reached through its activation's gradient only
    return X.twin(spec.forward, spec.fn)


def _backward(spec, formula):
    """Declare activation ``spec``'s backward ``formula(grad, saved tensor, *saved values)``
    (in the order saved): through a Ctx (forward mode), and as the node's own backward
    without one (the hot path, as unary()'s)."""
    names = spec.saved

    @spec.backward
    def _(ctx, grad):
        return formula(grad, *[getattr(ctx, n) for n in names]),

    def bw(self, g, graph):
        sv = self._saved
        return formula(g, sv[0].get(self, graph), *sv[1:]),

    spec.node_cls._bw = bw


def _act(spec):
    """An activation's declaration, reached through nn.functional only."""
    _OPS.pop(spec.key)
    return spec


# elu, selu, celu: PyTorch's elu(alpha, scale, input_scale) and its elu_backward
_ELU_SLOPE = ("In-place elu backward calculation is triggered with a negative slope which is not "
              "supported. This is caused by calling in-place forward function with a negative "
              "slope, please call out-of-place version instead.")


@_defop("elu_backward", node="EluBackwardBackward0", inputs=("grad_output", "self_or_result"),
        saved=("grad_output", "self_or_result", "alpha", "scale", "input_scale", "is_result"),
        function=False, method=False)
def _elu_backward(grad_output, self_or_result, alpha, scale, input_scale, is_result):
    """The gradient of elu from its input (or, ``is_result``, its result)."""
    y = self_or_result
    if is_result:
        if alpha < 0:
            raise RuntimeError(_ELU_SLOPE)
        d = np.where(y <= 0, input_scale * (y + alpha * scale), scale)
    else:
        d = np.where(y > 0, scale, scale * alpha * input_scale * np.exp(np.minimum(y, 0) *
                                                                         input_scale))
    return grad_output * _same(d, y)


def _elu_dd(gg, ctx):
    """PyTorch's elu_double_backward."""
    y, a, s, i = ctx.self_or_result, ctx.alpha, ctx.scale, ctx.input_scale
    m = _mask(X.data(y) < 0, gg)
    if ctx.is_result:
        return _times(gg * ctx.grad_output, i) * m
    return _elu_bw(_times(gg * ctx.grad_output, i), y, a, s, i, False) * m


_elu_bw = _grad_op_rules(
    _elu_backward, lambda g, c: _elu_bw(g, c.self_or_result, c.alpha, c.scale, c.input_scale,
                                        c.is_result), _elu_dd)


def _elu_np(x, alpha, scale, input_scale):
    return np.where(x > 0, x * scale, scale * alpha * np.expm1(np.minimum(x, 0) * input_scale))


@_defop("elu", node="EluBackward0", saved=("self", "alpha", "scale", "input_scale"),
        elementwise=True, function=False, method=False, floating_kernel="elu_cpu",
        complex_kernel="elu_cpu")
def elu(self, alpha=1, scale=1, input_scale=1):
    """x * scale where x > 0, else scale * alpha * (exp(x * input_scale) - 1); EluBackward0."""
    return _same(_elu_np(self, alpha, scale, input_scale), self)


_backward(elu,
          lambda g, x, alpha, scale, input_scale:
          _elu_bw(g, x, alpha, scale, input_scale, False))


@_defop("elu_", node="EluBackward1", saved=("result", "alpha", "scale", "input_scale"),
        elementwise=True, function=False, method=False, floating_kernel="elu_cpu",
        complex_kernel="elu_cpu")
def elu_inplace(self, alpha=1, scale=1, input_scale=1):
    """elu as its in-place form records it: from the result (EluBackward1)."""
    return _same(_elu_np(self, alpha, scale, input_scale), self)


_backward(elu_inplace,
          lambda g, x, alpha, scale, input_scale:
          _elu_bw(g, x, alpha, scale, input_scale, True))


def _celu_scale(alpha):
    # PyTorch's celu derivatives read alpha in single precision
    return 1.0 / float(np.float32(alpha))


@_defop("celu", node="CeluBackward0", saved=("self", "alpha"), elementwise=True,
        function=False, method=False, floating_kernel="elu_cpu", complex_kernel="elu_cpu")
def celu(self, alpha=1.0):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); CeluBackward0."""
    return _same(_elu_np(self, alpha, 1.0, 1.0 / alpha), self)


_backward(celu, lambda g, x, alpha: _elu_bw(g, x, alpha, 1, _celu_scale(alpha), False))


@_defop("celu_", node="CeluBackward1", saved=("result", "alpha"), elementwise=True,
        function=False, method=False, floating_kernel="elu_cpu", complex_kernel="elu_cpu")
def celu_inplace(self, alpha=1.0):
    """celu as its in-place form records it: from the result (CeluBackward1)."""
    return _same(_elu_np(self, alpha, 1.0, 1.0 / alpha), self)


_backward(celu_inplace, lambda g, x, alpha: _elu_bw(g, x, alpha, 1, _celu_scale(alpha), True))


# gelu
def _erf(x):
    from ._special import erf
    return erf(x)


_SQRT1_2 = 1 / math.sqrt(2)
_INV_SQRT_2PI = 1 / math.sqrt(2 * math.pi)
_K = math.sqrt(2 / math.pi)


@_defop("gelu_backward", node="GeluBackwardBackward0", inputs=("grad_output", "self"),
        saved=("grad_output", "self", "approximate"), function=False, method=False)
def _gelu_backward(grad_output, self, approximate):
    """The gradient of gelu (exact, or the tanh approximation)."""
    x = self
    if approximate == "tanh":
        u1 = _K * (1 + 3 * 0.044715 * x * x)
        t = np.tanh(_K * (x + 0.044715 * x ** 3))
        d = 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * u1
    else:
        d = 0.5 * (1 + _erf(x * _SQRT1_2)) + x * _INV_SQRT_2PI * np.exp(-0.5 * x * x)
    return grad_output * _same(d, x)


def _gelu_dd(gg, ctx):
    """PyTorch's gelu_double_backward: gg * grad_output * gelu''(x)."""
    x, g = ctx.self, ctx.grad_output
    if ctx.approximate == "tanh":
        t = X.tanh(_K * (x + 0.044715 * x * x * x))
        s = 1 - t * t
        u1 = _K * (1 + 3 * 0.044715 * x * x)
        u2 = _K * 6 * 0.044715 * x
        return gg * g * (s * u1 + 0.5 * x * s * (u2 - 2 * t * u1 * u1))
    x2 = x * x
    pdf = _times(X.exp(_times(x2, -0.5)), _INV_SQRT_2PI)
    return gg * g * (_times(pdf, 2) - x2 * pdf)


_gelu_bw = _grad_op_rules(_gelu_backward, lambda g, c: _gelu_bw(g, c.self, c.approximate),
                          _gelu_dd)


@_defop("gelu", node="GeluBackward0", saved=("self", "approximate"), elementwise=True,
        function=False, method=False, floating_kernel="GeluKernelImpl",
        complex_kernel="GeluKernelImpl")
def gelu(self, approximate="none"):
    """x * Phi(x) (exact, or the tanh approximation); GeluBackward0."""
    x = self
    if approximate == "tanh":
        return _same(0.5 * x * (1 + np.tanh(_K * (x + 0.044715 * x ** 3))), x)
    return _same(0.5 * x * (1 + _erf(x * _SQRT1_2)), x)


_backward(gelu, lambda g, x, approximate: _gelu_bw(g, x, approximate))


# silu and mish: their gradients under create_graph are PyTorch's composites
def _silu_grad_np(g, x):
    s = _sig(x)
    return g * _same(s * (1 + x * (1 - s)), x)


def _silu_grad_graph(g, x):
    """PyTorch's infinitely_differentiable_silu_backward."""
    s = _un.sigmoid(x)
    return g * s * _plus(x * _rsub(1.0, s), 1.0)


_silu_grad = X.twin(_silu_grad_np, _silu_grad_graph)


@_defop("silu", node="SiluBackward0", saved=("self",), elementwise=True, function=False,
        method=False, floating_kernel="silu_cpu")
def silu(self):
    """x * sigmoid(x); SiluBackward0."""
    return _same(self * _sig(self), self)


_backward(silu, lambda g, x: _silu_grad(g, x))


def _mish_grad_np(g, x):
    t = np.tanh(_softplus_np(x))
    return g * _same(t + x * (1 - t * t) * _sig(x), x)


def _mish_grad_graph(g, x):
    """PyTorch's infinitely_differentiable_mish_backward."""
    s = _un.sigmoid(x)
    t = _un.tanh(_un.log1p(_un.exp(x)))
    return g * (t + x * s * _rsub(1.0, t * t))


_mish_grad = X.twin(_mish_grad_np, _mish_grad_graph)


@_defop("mish", node="MishBackward0", saved=("self",), elementwise=True, function=False,
        method=False, floating_kernel="mish_cpu", complex_kernel="mish_cpu")
def mish(self):
    """x * tanh(softplus(x)); MishBackward0."""
    return _same(self * np.tanh(_softplus_np(self)), self)


_backward(mish, lambda g, x: _mish_grad(g, x))


# softplus
@_defop("softplus_backward", node="SoftplusBackwardBackward0", inputs=("grad_output", "self"),
        saved=("grad_output", "self", "beta", "threshold"), function=False, method=False)
def _softplus_backward(grad_output, self, beta, threshold):
    """The gradient of softplus: sigmoid(beta x) below the threshold, 1 above."""
    return grad_output * _same(np.where(self * beta > threshold, 1.0, _sig(self * beta)), self)


def _softplus_dd(gg, ctx):
    """PyTorch's softplus_double_backward(gg * grad_output, x, beta, threshold)."""
    beta = ctx.beta
    xb = _times(ctx.self, beta)
    m = _mask(X.data(xb) < ctx.threshold, gg)
    return _times(_un._sigmoid_bw(gg * ctx.grad_output, _pw_sigmoid(xb)) * m, beta)


_pw_sigmoid = X.twin(_sig, _un.sigmoid)
_softplus_bw = _grad_op_rules(
    _softplus_backward, lambda g, c: _softplus_bw(g, c.self, c.beta, c.threshold), _softplus_dd)


@_defop("softplus", node="SoftplusBackward0", saved=("self", "beta", "threshold"),
        elementwise=True, function=False, method=False, floating_kernel="softplus_cpu",
        complex_kernel="softplus_cpu")
def softplus(self, beta=1, threshold=20):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``; SoftplusBackward0."""
    x = self
    return _same(np.where(x * beta > threshold, x, _softplus_np(x * beta) / beta), x)


_backward(softplus, lambda g, x, beta, threshold: _softplus_bw(g, x, beta, threshold))


# piecewise-linear activations: the gradient is grad_output masked, whose own derivative in
# the input is zero
def _zero(gg, ctx):
    return X.zeros_like(gg)


@_defop("hardtanh_backward", node="HardtanhBackwardBackward0", inputs=("grad_output", "self"),
        saved=("self", "min_val", "max_val"), function=False, method=False)
def _hardtanh_backward(grad_output, self, min_val, max_val):
    """grad_output where min_val < x < max_val, else 0."""
    return np.where((self <= min_val) | (self >= max_val), np.zeros((), grad_output.dtype),
                    grad_output)


_hardtanh_bw = _grad_op_rules(
    _hardtanh_backward, lambda g, c: _hardtanh_bw(g, c.self, c.min_val, c.max_val), _zero)


@_defop("hardtanh", node="HardtanhBackward0", saved=("self", "min_val", "max_val"),
        elementwise=True, function=False, method=False,
        complex_error=(NotImplementedError, "clamp is not supported for complex types"))
def hardtanh(self, min_val=-1, max_val=1):
    """x clamped to [min_val, max_val]; HardtanhBackward0."""
    if self.dtype == np.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    lo, hi = _int_prm(self, "hardtanh", (min_val, max_val))
    return np.clip(self, lo, hi)


_backward(hardtanh, lambda g, x, min_val, max_val: _hardtanh_bw(g, x, min_val, max_val))


_LEAKY_SLOPE = (
    "In-place leakyReLu backward calculation is triggered with a negative slope which is not "
    "supported. This is caused by calling in-place forward function with a negative slope, "
    "please call out-of-place version instead. File an issue at "
    "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
    "backward calculation with negative slope")


@_defop("leaky_relu_backward", node="LeakyReluBackwardBackward0",
        inputs=("grad_output", "self"), saved=("self", "negative_slope"), function=False,
        method=False)
def _leaky_relu_backward(grad_output, self, negative_slope, self_is_result):
    """grad_output where x > 0, else grad_output * negative_slope."""
    if self_is_result and negative_slope < 0:
        raise RuntimeError(_LEAKY_SLOPE)
    return grad_output * _same(np.where(self > 0, 1.0, negative_slope), self)


_leaky_relu_bw = _grad_op_rules(
    _leaky_relu_backward, lambda g, c: _leaky_relu_bw(g, c.self, c.negative_slope, False),
    _zero)


@_defop("leaky_relu", node="LeakyReluBackward0", saved=("self", "negative_slope"),
        elementwise=True, function=False, method=False, floating_kernel="leaky_relu_cpu",
        complex_kernel="leaky_relu_cpu")
def leaky_relu(self, negative_slope=0.01):
    """x where x > 0, else negative_slope * x; LeakyReluBackward0."""
    return _same(np.where(self > 0, self, self * negative_slope), self)


_backward(leaky_relu, lambda g, x, negative_slope: _leaky_relu_bw(g, x, negative_slope, False))


@_defop("leaky_relu_", node="LeakyReluBackward1", saved=("result", "negative_slope"),
        elementwise=True, function=False, method=False, floating_kernel="leaky_relu_cpu",
        complex_kernel="leaky_relu_cpu")
def leaky_relu_inplace(self, negative_slope=0.01):
    """leaky_relu as its in-place form records it: from the result (LeakyReluBackward1)."""
    return _same(np.where(self > 0, self, self * negative_slope), self)


_backward(leaky_relu_inplace,
          lambda g, x, negative_slope:
          _leaky_relu_bw(g, x, negative_slope, True))


@_defop("threshold_backward", node="ThresholdBackwardBackward0",
        inputs=("grad_output", "self"), saved=("self", "threshold"), function=False,
        method=False)
def _threshold_backward(grad_output, self, threshold):
    """grad_output where x > threshold, else 0."""
    return np.where(self <= threshold, np.zeros((), grad_output.dtype), grad_output)


_threshold_bw = _grad_op_rules(
    _threshold_backward, lambda g, c: _threshold_bw(g, c.self, c.threshold), _zero)


def _threshold_np(x, threshold, value):
    if x.dtype == np.bool_:
        raise NotImplementedError("\"threshold_cpu\" not implemented for 'Bool'")
    th, v = _int_prm(x, "threshold", (threshold, value))
    return _same(np.where(x > th, x, v), x)


@_defop("threshold", node="ThresholdBackward0", saved=("self", "threshold"), elementwise=True,
        function=False, method=False, complex_kernel="threshold_cpu")
def threshold(self, threshold, value):
    """x where x > threshold, else value; ThresholdBackward0."""
    return _threshold_np(self, threshold, value)


_backward(threshold, lambda g, x, threshold: _threshold_bw(g, x, threshold))


@_defop("threshold_", node="ThresholdBackward1", saved=("self", "threshold"),
        elementwise=True, function=False, method=False, complex_kernel="threshold_cpu")
def threshold_inplace(self, threshold, value):
    """threshold as its in-place form records it (ThresholdBackward1)."""
    return _threshold_np(self, threshold, value)


_backward(threshold_inplace, lambda g, x, threshold: _threshold_bw(g, x, threshold))


def _shrink_mask(x, lambd):
    return (x < -lambd) | (x > lambd)


def _shrink_grad(grad_output, self, lambd):
    """grad_output where |x| > lambd, else 0 (softshrink's and hardshrink's gradient)."""
    return np.where(_shrink_mask(self, lambd), grad_output, np.zeros((), grad_output.dtype))


_softshrink_backward = _defop(
    "softshrink_backward", node="SoftshrinkBackwardBackward0", inputs=("grad_output", "self"),
    saved=("self", "lambd"), function=False, method=False)(_shrink_grad)


_softshrink_bw = _grad_op_rules(
    _softshrink_backward, lambda g, c: _softshrink_bw(g, c.self, c.lambd), _zero)


@_defop("softshrink", node="SoftshrinkBackward0", saved=("self", "lambd"), elementwise=True,
        function=False, method=False, floating_kernel="softshrink_check",
        complex_kernel="softshrink_cpu")
def softshrink(self, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between; SoftshrinkBackward0."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, 3.40282e+38] for input dtype "
                           f"{D.scalar_type_name(self.dtype)}, but found {lambd:g}")
    x = self
    return _same(np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0)), x)


_backward(softshrink, lambda g, x, lambd: _softshrink_bw(g, x, lambd))


_hardshrink_backward = _defop(
    "hardshrink_backward", node="HardshrinkBackwardBackward0", inputs=("grad_output", "self"),
    saved=("self", "lambd"), function=False, method=False)(_shrink_grad)


_hardshrink_bw = _grad_op_rules(
    _hardshrink_backward, lambda g, c: _hardshrink_bw(g, c.self, c.lambd), _zero)


@_defop("hardshrink", node="HardshrinkBackward0", saved=("self", "lambd"), elementwise=True,
        function=False, method=False, floating_kernel="hardshrink_cpu",
        complex_kernel="hardshrink_cpu")
def hardshrink(self, lambd=0.5):
    """x where |x| > lambd, else 0; HardshrinkBackward0."""
    return _same(np.where((self >= -lambd) & (self <= lambd), 0, self), self)


_backward(hardshrink, lambda g, x, lambd: _hardshrink_bw(g, x, lambd))


# hardsigmoid: PyTorch's hardsigmoid_backward has no derivative (a NotImplemented node)
_SIXTH = float(np.float32(1 / 6))  # PyTorch's kernel multiplies by the float 1/6


def _hardsigmoid_d1(x):
    return np.where((x > -3) & (x < 3), _SIXTH, 0.0).astype(x.dtype)


def _hardsigmoid_grad_graph(g, x):
    from ..autograd.forward_ad import _BUSY
    d1 = X.const(_hardsigmoid_d1(x._data).astype(g._data.dtype, copy=False), g)
    edges = tuple(edge_of(t) for t in (g, x) if t._requires_grad)
    if _BUSY[0] or not (STATE.enabled and edges):  # (a tangent needs the product only)
        return g * d1
    from ..autograd.node import NotImplemented_
    return record((g._data * d1._data).astype(g._data.dtype, copy=False),
                  NotImplemented_(edges, ("hardsigmoid_backward",)))


_hardsigmoid_grad = X.twin(lambda g, x: g * _hardsigmoid_d1(x), _hardsigmoid_grad_graph)


@_defop("hardsigmoid", node="HardsigmoidBackward0", saved=("self",), elementwise=True,
        function=False, method=False, floating_kernel="hardsigmoid_cpu",
        complex_kernel="hardsigmoid_cpu")
def hardsigmoid(self):
    """clamp(x / 6 + 1/2, 0, 1); HardsigmoidBackward0."""
    return _same(np.clip(self + 3, 0, 6) / 6, self)


_backward(hardsigmoid, lambda g, x: _hardsigmoid_grad(g, x))


@_defop("hardswish_backward", node="HardswishBackwardBackward0", inputs=("grad_output", "self"),
        saved=("grad_output", "self"), function=False, method=False)
def _hardswish_backward(grad_output, self):
    """The gradient of hardswish: 0 below -3, x / 3 + 1/2 between, 1 above 3."""
    x = self
    return grad_output * _same(np.where(x <= -3, 0.0, np.where(x < 3, x / 3 + 0.5, 1.0)), x)


def _hardswish_dd(gg, ctx):
    x = X.data(ctx.self)
    return X.where((x > -3) & (x < 3), gg * ctx.grad_output / 3.0, X.zeros_like(gg))


_hardswish_bw = _grad_op_rules(_hardswish_backward, lambda g, c: _hardswish_bw(g, c.self),
                               _hardswish_dd)


@_defop("hardswish", node="HardswishBackward0", saved=("self",), elementwise=True,
        function=False, method=False, floating_kernel="hardswish_cpu",
        complex_kernel="hardswish_cpu")
def hardswish(self):
    """x * hardsigmoid(x); HardswishBackward0."""
    return _same(self * np.clip(self + 3, 0, 6) / 6, self)


_backward(hardswish, lambda g, x: _hardswish_bw(g, x))


@_defop("log_sigmoid_backward", node="LogSigmoidBackwardBackward0",
        inputs=("grad_output", "self"), saved=("grad_output", "self"), function=False,
        method=False)
def _log_sigmoid_backward(grad_output, self):
    """The gradient of logsigmoid: sigmoid(-x)."""
    return grad_output * _same(_sig(-self), self)


def _log_sigmoid_dd(gg, ctx):
    """PyTorch's log_sigmoid_double_backward(gg * grad_output, x)."""
    z = _pw_sigmoid(ctx.self)
    return gg * ctx.grad_output * _minus(z, 1) * z


_log_sigmoid_bw = _grad_op_rules(
    _log_sigmoid_backward, lambda g, c: _log_sigmoid_bw(g, c.self), _log_sigmoid_dd)


@_defop("log_sigmoid", node="LogSigmoidBackward0", saved=("self",), elementwise=True,
        function=False, method=False, floating_kernel="log_sigmoid_cpu",
        complex_kernel="log_sigmoid_cpu")
def log_sigmoid(self):
    """log(sigmoid(x)), computed stably; LogSigmoidBackward0."""
    return _same(-_softplus_np(-self), self)


_backward(log_sigmoid, lambda g, x: _log_sigmoid_bw(g, x))


for _s in (elu, elu_inplace, celu, celu_inplace, gelu, silu, mish, softplus, hardtanh,
           leaky_relu, leaky_relu_inplace, threshold, threshold_inplace, softshrink, hardshrink,
           hardsigmoid, hardswish, log_sigmoid):
    _act(_s)
del _s


# rrelu: PyTorch's rrelu_with_noise; ``noise`` (a tensor without gradient: the slopes drawn in
# training, 1 where x > 0) is kept as given
def _rrelu_slope(self, noise, lower, upper, training):
    if training and upper - lower > 1e-6:
        return X.data(noise)
    return np.where(X.data(self) > 0, 1.0, (lower + upper) / 2).astype(X.data(self).dtype)


@_defop("rrelu_with_noise_backward", node="RreluWithNoiseBackwardBackward0",
        inputs=("grad_output", "self"), saved=("self", "noise", "lower", "upper", "training"),
        function=False, method=False)
def _rrelu_backward(grad_output, self, noise, lower, upper, training, self_is_result):
    """grad_output times the slope each element had (1 where x > 0)."""
    return grad_output * _rrelu_slope(self, noise, lower, upper, training)


_rrelu_bw = _grad_op_rules(
    _rrelu_backward, lambda g, c: _rrelu_bw(g, c.self, c.noise, c.lower, c.upper, c.training,
                                            False), _zero)


def _rrelu_np(x, noise, lower, upper, training):
    a = noise._data if training else (lower + upper) / 2
    return _same(np.where(x > 0, x, x * a), x)


@_defop("rrelu_with_noise", node="RreluWithNoiseBackward0",
        saved=("self", "noise", "lower", "upper", "training"), elementwise=True,
        function=False, method=False, floating_kernel="leaky_relu_cpu",
        complex_kernel="leaky_relu_cpu")
def rrelu_with_noise(self, noise, lower, upper, training):
    """x where x > 0, else x times the slope: ``noise`` in training, (lower + upper) / 2 in
    eval mode; RreluWithNoiseBackward0."""
    return _rrelu_np(self, noise, lower, upper, training)


_backward(rrelu_with_noise,
          lambda g, x, noise, lower, upper, training:
          _rrelu_bw(g, x, noise, lower, upper, training, False))


@_defop("rrelu_with_noise_", node="RreluWithNoiseBackward1",
        saved=("result", "noise", "lower", "upper", "training"), elementwise=True,
        function=False, method=False, floating_kernel="leaky_relu_cpu",
        complex_kernel="leaky_relu_cpu")
def rrelu_with_noise_inplace(self, noise, lower, upper, training):
    """rrelu_with_noise as its in-place form records it: from the result."""
    return _rrelu_np(self, noise, lower, upper, training)


_backward(rrelu_with_noise_inplace,
          lambda g, x, noise, lower, upper, training:
          _rrelu_bw(g, x, noise, lower, upper, training, True))


_act(rrelu_with_noise)
_act(rrelu_with_noise_inplace)


# glu: a * sigmoid(b) for the halves a, b of ``dim``; its gradient is PyTorch's glu_backward
def _halves(x, dim):
    n = x.shape[dim] // 2
    if isinstance(x, Tensor):
        return x.narrow(dim, 0, n), x.narrow(dim, n, n)
    return (x[(slice(None),) * dim + (slice(0, n),)], x[(slice(None),) * dim + (slice(n, None),)])


@_defop("glu_backward", node="GluBackwardBackward0", inputs=("grad_output", "self"),
        saved=("grad_output", "self", "dim"), dims=("dim",), function=False, method=False)
def _glu_backward(grad_output, self, dim):
    """The gradient of glu: g * sigmoid(b) for a, g * a * sigmoid(b) (1 - sigmoid(b)) for b."""
    dim = _dim(dim, self.ndim)
    a, b = _halves(self, dim)
    s = _sig(b)
    return _same(np.concatenate([grad_output * s, grad_output * a * s * (1 - s)], dim), self)


def _glu_dd_grad_output(gg, ctx):
    """PyTorch's glu_double_backward_grad_output."""
    x, dim = ctx.self, _dim(ctx.dim, X.data(ctx.self).ndim)
    shape = list(X.data(x).shape)
    shape[dim] //= 2
    tmp = gg * _glu_bw(X.const(np.ones(shape, X.data(x).dtype), x), x, dim)
    a, b = _halves(tmp, dim)
    return a + b


def _glu_dd(gg, ctx):
    """PyTorch's glu_double_backward."""
    x, go, dim = ctx.self, ctx.grad_output, _dim(ctx.dim, X.data(ctx.self).ndim)
    a, b = _halves(x, dim)
    s = _pw_sigmoid(b)
    one_sub = _rsub(1, s)
    s1s = s * one_sub
    gga, ggb = _halves(gg, dim)
    first = ggb * go * s1s
    second_order = s1s * one_sub - s * s1s
    second = ggb * a * go * second_order + gga * go * s1s
    return X.cat([first, second], dim)


_glu_bw = _grad_op_rules(_glu_backward, _glu_dd_grad_output, _glu_dd)


@_defop("glu", node="GluBackward0", saved=("self", "dim"), dims=("dim",),
        batch=batch_along("dim"), function=False, method=False, floating_kernel="glu_cpu",
        complex_kernel="glu_cpu")
def glu(self, dim=-1):
    """a * sigmoid(b) for the two halves a, b of ``dim`` (of even size, checked by
    nn.functional.glu); GluBackward0."""
    a, b = _halves(self, dim)
    return _same(a * _sig(b), self)


_backward(glu, lambda g, x, dim: _glu_bw(g, x, dim))


@glu.jvp
def _(ctx, t):
    x, dim = ctx.self, _dim(ctx.dim, X.data(ctx.self).ndim)
    a, b = _halves(x, dim)
    ta, tb = _halves(t, dim)
    s = _pw_sigmoid(b)
    return ta * s + a * s * _rsub(1, s) * tb
_act(glu)


# prelu: PyTorch's _prelu_kernel of the input and the weight viewed to broadcast over it
@_defop("_prelu_kernel", node="PreluKernelBackward0", inputs=("self", "weight"),
        saved=("self", "weight"), broadcast=True, function=True, method=False)
def _prelu_kernel(self, weight):
    """x where x > 0, else weight * x (the weight broadcast over x); PreluKernelBackward0."""
    return _same(np.where(self > 0, self, self * weight), self)


def _prelu_masks(x):
    xd = X.data(x)
    return X.const((xd > 0).astype(xd.dtype), x), X.const((xd <= 0).astype(xd.dtype), x)


@_prelu_kernel.backward
def _(ctx, grad):
    x, w = ctx.self, ctx.weight
    pos, neg = _prelu_masks(x)
    return (grad * (pos + neg * w) if ctx.needs(0) else None,
            grad * x * neg if ctx.needs(1) else None)


@_prelu_kernel.jvp
def _(ctx, tx, tw):
    x, w = ctx.self, ctx.weight
    pos, neg = _prelu_masks(x)
    out = None if tx is None else tx * (pos + neg * w)
    if tw is not None:
        d = tw * x * neg
        out = d if out is None else out + d
    return out


_act(_prelu_kernel)
