"""``nn.functional``: activations, losses and layers as functions.  Each loss and activation
records PyTorch's node (``MseLossBackward0``, ``NllLossBackward0`` ...)."""
from __future__ import annotations

import inspect
import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _dim
from .._record import STATE, as_float
from ..ops import losses as _losses
from ..ops.losses import REDUCTIONS as _REDUCTIONS  # noqa: E501
from ..ops.unary import tanh, sigmoid  # noqa: F401 - re-exported
from ..ops import binary as _bin, unary as _un
from ..ops import activation as _A
from ..ops import embedding as _embedding
from ..ops import trilinear as _tri
from ..ops.linalg import addmm, matmul
from ..ops.views import reshape
from ..ops.shape import broadcast_tensors
from ..ops.reduction import vector_norm, _norm_dim
from .. import _warn

_make = Tensor._make



# --- linear ---------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """y = input @ weight.T + bias, PyTorch's composition: addmm for a 2-d input; addmm on
    the input viewed as a matrix, viewed back (_flatten_nd_linear) for a contiguous input and
    a contiguous bias of one non-unit dim; else matmul with the bias added in place."""
    if input._data.shape[-1:] != weight._data.shape[-1:] and weight.dim() == 2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, (int(np.prod(input._data.shape[:-1])) if input.dim() > 1 else 1, input._data.shape[-1])))} and "
                           f"{weight._data.shape[1]}x{weight._data.shape[0]})")
    if bias is None:
        return matmul(input, weight.t())
    x = input._data
    if x.ndim == 2:
        return addmm(bias, input, weight.t())
    b = bias._data
    if (b.ndim == 1 or b.ndim - b.shape.count(1) == 1) and b.flags.c_contiguous \
            and x.flags.c_contiguous:
        # _flatten_nd_linear
        shape = x.shape
        r = addmm(bias, reshape(input, int(np.prod(shape[:-1])), shape[-1]), weight.t())
        return r.view(*shape[:-1], r._data.shape[1])
    out = matmul(input, weight.t())
    from ..autograd import forward_ad as fwad
    if fwad._LEVEL and fwad._tangent(bias) is not None:
        return out + bias  # out of place for a bias with a tangent, as PyTorch
    return out.add_(bias)


# --- reductions of losses -------------------------------------------------------------
def _reduction_enum(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _legacy_reduction(reduction, size_average, reduce):
    """``reduction`` after PyTorch's deprecated ``size_average``/``reduce`` arguments."""
    if size_average is not None or reduce is not None:
        return _reduction_enum(reduction, size_average, reduce)
    return reduction


def _weighted_loss(loss, weight, input, reduction, mean_over_weights=True):
    """PyTorch's composition for a regression loss given per-element ``weight``: the
    unreduced ``loss`` times the weights, then summed, or averaged (over the sum of the
    weights for mse/l1, over the elements for huber, as PyTorch does)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = loss * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum() if mean_over_weights else weighted.mean()
    raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                     f"'sum'.")


def _check_target_size(input, target, name):
    if input._data.shape != target._data.shape:
        _warn.warn(f"Using a target size ({target.shape}) that is different to the input size "
                   f"({input.shape}). This will likely lead to incorrect results due to "
                   f"broadcasting. Please ensure they have the same size.", UserWarning)
        try:
            np.broadcast_shapes(input._data.shape, target._data.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({input._data.shape[-1]}) must match the size "
                               f"of tensor b ({target._data.shape[-1]}) at non-singleton dimension "
                               f"{input._data.ndim - 1}") from None



_cast_error = _losses.cast_error


def _not_differentiable(fn, **args):
    """PyTorch's error for an argument its op has no derivative for that requires grad."""
    if STATE.enabled:
        for name, t in args.items():
            if t is not None and t._requires_grad:
                raise RuntimeError(f"The function '{fn}' is not differentiable with respect to "
                                   f"argument '{name}'. This input cannot have requires_grad "
                                   f"True.")


_same_dtype_loss = _losses.same_dtype


def _over(op_fn):
    """Marks a function as PyTorch's signature over the registered op ``op_fn``
    (``__wrapped__``), keeping its own signature."""
    def deco(f):
        f.__signature__ = inspect.signature(f)
        f.__wrapped__ = op_fn
        return f
    return deco


@_over(_losses.mse_loss.fn)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; MseLossBackward0 (with ``weight``: PyTorch's weighted composition)."""
    if weight is not None:
        _check_target_size(input, target, "mse_loss")
        x, t = broadcast_tensors(input, target)
        return _weighted_loss((x - t).pow(2), weight, input,
                              _legacy_reduction(reduction, size_average, reduce))
    reduction = _reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target, "mse_loss")
    return _losses.call(_losses.mse_loss, input, target, _REDUCTIONS[reduction])


@_over(_losses.binary_cross_entropy.fn)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), logs clamped at -100; BinaryCrossEntropyBackward0."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    if input._data.shape != target._data.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    _not_differentiable("binary_cross_entropy", weight=weight)
    if weight is not None:  # PyTorch's node keeps the weight expanded to the target's shape
        weight = weight.expand(np.broadcast_shapes(target._data.shape, weight._data.shape))
    return _losses.call(_losses.binary_cross_entropy, input, target, weight,
                        _REDUCTIONS[reduction])


from ..ops.activation import (SoftmaxBackward0, LogSoftmaxBackward0, _dim_arg,  # noqa: F401
                              log_softmax, softmax)


def _check_class_weight(weight, C, dtype):
    """nll_loss/cross_entropy's checks of a class-weight tensor."""
    w = weight._data
    if w.size != C:
        raise RuntimeError(f"weight tensor should be defined either for all {C} classes or no "
                           f"classes but got weight tensor of shape: {list(w.shape)}")
    if w.dtype != dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(dtype)} but found "
                           f"{D.scalar_type_name(w.dtype)}")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class indices; NllLossBackward0."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    x = input._data
    t = target._data
    if t.dtype != np.int64 and t.dtype != np.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{D.scalar_type_name(target._data.dtype)}")
    if x.ndim == 1:
        if t.ndim != 0:
            raise ValueError(f"Expected input batch_size (1) to match target batch_size "
                             f"({t.shape[0] if t.ndim else 1}).")
    elif x.shape[0] != t.shape[0]:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size "
                         f"({t.shape[0]}).")
    if x.ndim == 3 or x.ndim > 4:
        # PyTorch's nll_loss_nd: the input viewed as (N, C, 1, -1), the target as (N, 1, -1),
        # nll_loss2d on those, and an unreduced result viewed back to (N, d1, ...)
        n, c = x.shape[:2]
        out_size = (n,) + x.shape[2:]
        if t.shape[1:] != x.shape[2:]:
            raise RuntimeError(f"Expected target size {list(out_size)}, got {list(t.shape)}")
        input = input.contiguous()
        target = target.contiguous()
        input = input.view(n, c, 1, -1) if x.size else input.view(n, c, 0, 0)
        target = target.view(n, 1, -1) if t.size else target.view(n, 0, 0)
        r = nll_loss(input, target, weight, ignore_index=ignore_index, reduction=reduction)
        return r.view(out_size) if reduction == "none" else r
    _not_differentiable(f"{'nll_loss2d' if x.ndim == 4 else 'nll_loss'}_forward", weight=weight)
    C = x.shape[0] if x.ndim == 1 else x.shape[1]
    if weight is not None:
        _check_class_weight(weight, C, x.dtype)
    _pool.need_kernel(x, "nll_loss2d_forward_out_frame" if x.ndim == 4 else "nll_loss_out_frame",
                      complex=False)
    return _losses.nll_call(_losses.nll_loss2d_forward if x.ndim == 4 else
                            _losses.nll_loss_forward, input, target, weight,
                            _REDUCTIONS[reduction], ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + nll_loss over dimension 1 (class indices or class probabilities)."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    dim = 0 if input._data.ndim == 1 else 1
    if input._data.shape == target._data.shape:  # class probabilities
        if target._data.dtype not in D.FLOATING:
            raise RuntimeError(f"Expected floating point type for target with class "
                               f"probabilities, got {D.scalar_type_name(target._data.dtype)}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probs(input, target, weight, reduction, label_smoothing, dim)
    if label_smoothing > 1.0:  # PyTorch accepts a negative value (no smoothing)
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    logp = log_softmax(input, dim)
    loss = nll_loss(logp, target, weight=weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing > 0:
        # PyTorch's cross_entropy_loss_label_smoothing: the smoothing term -sum(logp [* w])
        # zeroed in place where the target is ignored, reduced, and mixed with the nll loss
        # by products with numbers (MulBackward1)
        C = input._data.shape[dim]
        ignore = _make(target._data == ignore_index)
        if weight is not None:
            shape = [1] * input._data.ndim
            shape[dim] = weight._data.shape[0]
            smooth = -(logp * weight.view(shape)).sum(dim)
        else:
            smooth = -logp.sum(dim)
        smooth.masked_fill_(ignore, 0.0)
        if reduction == "mean":
            if weight is not None:
                keep = _make(~ignore._data)
                denom = weight.gather(0, target.masked_select(keep).flatten()).sum()
            else:
                denom = _make(np.asarray((~ignore._data).sum()))
            smooth = smooth.sum() / denom
        elif reduction == "sum":
            smooth = smooth.sum()
        loss = _mul_scalar(loss, 1 - label_smoothing) + _mul_scalar(smooth, label_smoothing / C)
    return loss


def _cross_entropy_probs(input, target, weight, reduction, label_smoothing, dim):
    """PyTorch's cross_entropy_loss_prob_target: -(log_softmax(x) * t [* w]) summed, negated
    and reduced (the mean divides by the number of samples, a number: DivBackward1)."""
    C = input._data.shape[dim]
    if weight is not None and (weight._data.ndim != 1 or weight._data.size != C):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {C} "
                           f"classes or no classes but got weight tensor of shape: "
                           f"{list(weight._data.shape)}")
    logp = log_softmax(input, dim)
    if label_smoothing > 0:
        if label_smoothing > 1.0:
            raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                               f"{label_smoothing}")
        target = _add_scalar(_mul_scalar(target, 1 - label_smoothing), label_smoothing / C)
    prod = logp * target
    if weight is not None:
        if input._data.ndim > 1:
            shape = [1] * input._data.ndim
            shape[dim] = C
            weight = weight.view(shape)
        prod = prod * weight
    if reduction == "mean":
        if input._data.size == 0:
            return -prod.sum().fill_(math.nan)
        return _div_scalar(-prod.sum(), input._data.size // C)
    if reduction == "sum":
        return -prod.sum()
    return -prod.sum(dim)


# --- helpers --------------------------------------------------------------------------
def _pkg():
    import importlib
    return importlib.import_module(__name__.split(".")[0])


def _fl(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return as_float(input._data)


# PyTorch's kernels of these have no integer (or bool) version: their name in its error
_FLOAT_KERNELS = {"rrelu_train": "rrelu_with_noise_out_cpu",
                  "prelu": "prelu_cpu"}
_INTS = ("uint8", "int8", "int16", "int32", "int64")


def _kernel_data(input, name):
    """The input's data for op ``name``, refused with PyTorch's error where its kernel takes
    no integer or complex input."""
    x = _fl(input, name)
    if x is not input._data or x.dtype.kind == "c":
        raise NotImplementedError(f'"{_FLOAT_KERNELS[name]}" not implemented for '
                                  f"'{D.scalar_type_name(input._data.dtype)}'")
    return x


# --- pointwise activations (declared in ops/activation.py) -------------------------------
_rsub_scalar = _A.rsub_number


def _act(spec, input, inplace, *prm, inplace_spec=None):
    """Activation ``spec`` of ``input``; in place: its in-place form's op (``inplace_spec``,
    when PyTorch records another node) written back into ``input``."""
    if inplace:
        from ..ops.inplace import apply
        return apply(input, (inplace_spec or spec).fn, *prm)
    return spec.fn(input, *prm)


def relu6(input, inplace=False):
    """min(max(0, x), 6); HardtanhBackward0 as in PyTorch."""
    if not isinstance(input, Tensor):
        raise TypeError(f"relu6(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return _act(_A.hardtanh, input, inplace, 0, 6)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamp to [min_val, max_val]; HardtanhBackward0."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _act(_A.hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val=-1, max_val=1):
    return hardtanh(input, min_val, max_val, True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x if x > 0 else negative_slope * x; LeakyReluBackward0 (1 in place)."""
    return _act(_A.leaky_relu, input, inplace, negative_slope,
                inplace_spec=_A.leaky_relu_inplace)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def elu(input, alpha=1.0, inplace=False):
    """x if x > 0 else alpha * (exp(x) - 1); EluBackward0 (1 in place)."""
    return _act(_A.elu, input, inplace, alpha, inplace_spec=_A.elu_inplace)


def elu_(input, alpha=1):
    return elu(input, alpha, True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the self-normalising constants; EluBackward0."""
    return _act(_A.elu, input, inplace, _SELU_ALPHA, _SELU_SCALE, inplace_spec=_A.elu_inplace)


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); CeluBackward0 (1 in place)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _act(_A.celu, input, inplace, alpha, inplace_spec=_A.celu_inplace)


def gelu(input, approximate="none"):
    """x * Phi(x) (exact, or the tanh approximation); GeluBackward0."""
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    return _A.gelu.fn(input, approximate)


def silu(input, inplace=False):
    """x * sigmoid(x); SiluBackward0."""
    if (not inplace and STATE.enabled and getattr(input, "_requires_grad", False)
            and input._data.dtype.kind == "c"):
        raise RuntimeError("silu does not support automatic differentiation for outputs with "
                           "complex dtype.")
    return _act(_A.silu, input, inplace)


def mish(input, inplace=False):
    """x * tanh(softplus(x)); MishBackward0."""
    return _act(_A.mish, input, inplace)


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, linear above ``threshold``; SoftplusBackward0."""
    return _A.softplus.fn(input, beta, threshold)


def hardsigmoid(input, inplace=False):
    """clamp(x / 6 + 1/2, 0, 1); HardsigmoidBackward0."""
    return _act(_A.hardsigmoid, input, inplace)


def hardswish(input, inplace=False):
    """x * hardsigmoid(x); HardswishBackward0."""
    return _act(_A.hardswish, input, inplace)


def logsigmoid(input):
    """log(sigmoid(x)), computed stably; LogSigmoidBackward0."""
    return _A.log_sigmoid.fn(input)


def threshold(input, threshold, value, inplace=False):
    """x if x > threshold else value; ThresholdBackward0 (1 in place)."""
    return _act(_A.threshold, input, inplace, threshold, value,
                inplace_spec=_A.threshold_inplace)


def threshold_(input, threshold, value):
    return _act(_A.threshold_inplace, input, True, threshold, value)


def relu(input, inplace=False):
    """max(0, x); ReluBackward0."""
    if inplace:
        return input.relu_()
    return _un.relu(input)


def relu_(input):
    return input.relu_()


def softsign(input):
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - tanh(input)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along ``dim``."""
    if dim is None:
        dim = _dim_arg(input, None, "softmin")
    return softmax(-input, dim, dtype=dtype)


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between; SoftshrinkBackward0."""
    return _A.softshrink.fn(input, lambd)


def hardshrink(input, lambd=0.5):
    """x where x < -lambd or x > lambd, else 0; HardshrinkBackward0."""
    return _A.hardshrink.fn(input, lambd)


def glu(input, dim=-1):
    """a * sigmoid(b) for the two halves a, b of ``dim``; GluBackward0."""
    x = _fl(input, "glu")
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _dim(dim, x.ndim)
    if x.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{x.shape[d]}")
    return _A.glu.fn(input, dim)


def prelu(input, weight):
    """x if x > 0 else weight * x, weight per channel (dim 1) or shared; PreluKernelBackward0."""
    _fl(input, "prelu")
    x = input._data
    w = weight._data
    if x.dtype != w.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got "
                           f"{D.scalar_type_name(x.dtype)} and {D.scalar_type_name(w.dtype)}")
    if w.size != 1:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        if x.ndim < 2 or x.shape[1] != w.size:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {w.size} and channel size = "
                               f"{x.shape[1] if x.ndim >= 2 else 1}.")
    if w.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {w.ndim}")
    x = _kernel_data(input, "prelu")
    wb = (1,) * x.ndim if w.size == 1 else (1, w.size) + (1,) * (x.ndim - 2)
    if x.ndim == 0:
        wb = ()
    # PyTorch's prelu views the weight to broadcast over the input when their dimensions
    # differ, then runs _prelu_kernel on the view
    if w.ndim != len(wb):
        weight = reshape(weight, wb)
    return _A._prelu_kernel.fn(input, weight)


def rrelu(input, lower=1. / 8, upper=1. / 3, training=False, inplace=False):
    """Randomised leaky ReLU: slopes drawn in [lower, upper] for x <= 0 in training, the slope
    (lower + upper) / 2 in eval mode; RreluWithNoiseBackward0 (1 in place)."""
    if training:
        x = _kernel_data(input, "rrelu_train")
        from .._random import rng
        a = rng().uniform(lower, upper, size=x.shape).astype(x.dtype)
        noise = _make(np.where(x > 0, 1, a).astype(x.dtype))
    else:
        noise = _make(np.zeros(getattr(input, "shape", ()), getattr(input, "_data", np.zeros(
            0)).dtype)) if isinstance(input, Tensor) else None
    return _act(_A.rrelu_with_noise, input, inplace, noise, lower, upper, training,
                inplace_spec=_A.rrelu_with_noise_inplace)


def rrelu_(input, lower=1. / 8, upper=1. / 3, training=False):
    """rrelu in place (RreluWithNoiseBackward1)."""
    return rrelu(input, lower, upper, training, True)


# --- losses ---------------------------------------------------------------------------
def _loss_reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error (with ``weight``: PyTorch's weighted composition)."""
    if weight is not None:
        _check_target_size(input, target, "l1_loss")
        x, t = broadcast_tensors(input, target)
        return _weighted_loss((x - t).abs(), weight, input,
                              _legacy_reduction(reduction, size_average, reduce))
    reduction = _reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target, "l1_loss")
    return _loss_reduce((input - target).abs(), reduction)


@_over(_losses.smooth_l1_loss.fn)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2; SmoothL1LossBackward0."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target, "smooth_l1_loss")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    return _losses.call(_losses.smooth_l1_loss, input, target, _REDUCTIONS[reduction], beta)


@_over(_losses.huber_loss.fn)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| <= delta, else delta (|d| - delta / 2); HuberLossBackward0 (with
    ``weight``: PyTorch's weighted composition)."""
    if weight is not None:
        _check_target_size(input, target, "huber_loss")
        x, t = broadcast_tensors(input, target)
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        return _weighted_loss(huber_loss(x, t, "none", delta), weight, input, reduction, False)
    reduction = _reduction_enum(reduction)
    _check_target_size(input, target, "huber_loss")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _losses.call(_losses.huber_loss, input, target, _REDUCTIONS[reduction], delta)


@_over(_losses.binary_cross_entropy_with_logits.fn)
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Sigmoid + binary cross entropy in one stable formula; BinaryCrossEntropyWithLogitsBackward0."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    if not isinstance(input, Tensor):
        _fl(input, "binary_cross_entropy_with_logits")
    if input._data.shape != target._data.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _not_differentiable("binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight)
    return _losses.call(_losses.binary_cross_entropy_with_logits, input, target, weight,
                        pos_weight, _REDUCTIONS[reduction])


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || exp(input)) pointwise: target * (log target - input), then reduced."""
    if size_average is not None or reduce is not None:
        reduction = _reduction_enum(reduction, size_average, reduce)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "mean":
        _warn.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                   "support size.'batchmean' divides only by the batch size, and aligns with "
                   "the KL div math definition.'mean' will be changed to behave the same as "
                   "'batchmean' in the next major release.", UserWarning)
    if input._data.dtype not in D.INEXACT or target._data.dtype not in D.INEXACT:
        raise RuntimeError("kl_div: Integral inputs not supported.")
    # PyTorch's composite: exp(t) * (t - x), or xlogy(t, t) - t * x, then reduced
    if log_target:
        loss = target.exp() * (target - input)
    else:
        from ..ops.binary import xlogy
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _loss_reduce(loss, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    if STATE.enabled and target._requires_grad:
        raise RuntimeError("The function 'soft_margin_loss' is not differentiable with respect to "
                           "argument 'target'. This input cannot have requires_grad True.")
    x, t = input._data, target._data
    if x.dtype == np.bool_:  # PyTorch's kernel negates the input first: its error
        -input
    if t.dtype != x.dtype:  # the loss has the input's dtype
        rt = D.result_type(D.FROM_NP[x.dtype], x.ndim, D.FROM_NP[t.dtype], t.ndim)
        if x.dtype not in D.INEXACT and rt.np != x.dtype:
            raise _cast_error(rt.np, x.dtype)
        target = _make(t.astype(x.dtype))
        t = target._data
    if x.shape != t.shape:
        b = _bshape(x.shape, t.shape)
        if b is not None and b != x.shape:  # PyTorch's kernel writes into the input's shape
            raise RuntimeError(f"output with shape {list(x.shape)} doesn't match the broadcast "
                               f"shape {list(b)}")
    if x.dtype.kind in "iu":  # PyTorch's kernel: exp_ in place on the integer product
        raise _cast_error(D.get_default_dtype().np, x.dtype)
    if x.dtype not in D.INEXACT or (x.shape != t.shape and b is None):
        return _loss_reduce(softplus(-(target * input)), reduction)  # PyTorch's errors
    return _losses.soft_margin_loss.fn(input, target, _REDUCTIONS[reduction])


def _bshape(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin): PyTorch's composite (AddBackward1 for the
    margin, clamp_min_ in place)."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    diff = input1 - input2  # first, as PyTorch's C++ expression evaluates it
    out = _add_scalar(-target * diff, margin)
    return _loss_reduce(out.clamp_min_(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where target is 1, max(0, margin - x) where target is -1 (PyTorch's composite)."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    from ..ops.indexing import where
    zeros = _make(np.zeros_like(input._data))
    clamp = _rsub_scalar(float(margin), input).clamp_min_(0)  # a C++ double
    out = where(target != 1, clamp, zeros) + where(target != -1, input, zeros)
    return _loss_reduce(out, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where target is -1
    (PyTorch's composite)."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if td == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(td)
    m1 = _add_scalar((input1 * input1).sum(td), eps)
    m2 = _add_scalar((input2 * input2).sum(td), eps)
    cos = prod / (m1 * m2).sqrt_()
    from ..ops.indexing import where
    zeros = _make(np.zeros_like(cos._data))
    pos = _rsub_scalar(1, cos)
    neg = _sub_scalar(cos, margin).clamp_min_(0)
    out = where(target == 1, pos, zeros) + where(target == -1, neg, zeros)
    return _loss_reduce(out, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood of a Poisson target (log_input: input is the log-rate), with
    PyTorch's composite (Stirling's term masked where target <= 1)."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * _add_scalar(input, eps).log()
    if full:
        with np.errstate(all="ignore"):
            st = (target * target.log() - target
                  + _mul_scalar(_mul_scalar(target, 2 * math.pi).log(), 0.5))
        loss = loss + st.masked_fill(target <= 1, 0)
    return _loss_reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log var + (input - target)^2 / var): PyTorch's composition, var a clone clamped
    at eps without recording (so its gradient passes where it was clamped)."""
    from .. import _factories
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _factories.ones_like(input)
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    vs, xs = tuple(var._data.shape), tuple(input._data.shape)
    if vs != xs:
        if xs[:-1] == vs:
            var = var.unsqueeze(-1)
        elif not (len(xs) == len(vs) and sum(b for a, b in zip(xs, vs) if a != b) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    np.maximum(var._data, eps, out=var._data)  # PyTorch clamps the clone under no_grad
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _loss_reduce(loss, reduction)


# --- similarity and normalisation -------------------------------------------------------
# PyTorch's Scalar overloads (mul/add/sub/div with a number, MulBackward1...), recorded where
# its C++ composites (cross_entropy's label smoothing, pairwise_distance) use them
_mul_scalar, _add_scalar = _bin.mul_scalar, _bin.add_scalar
_sub_scalar, _div_scalar = _bin.sub_scalar, _bin.div_scalar
_at_norm = _norm_dim.fn  # at::norm(x, p, dim, keepdim): NormBackward1


def _vnorm(x, p, dim, keepdim):
    return vector_norm(x, p, dim, keepdim)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps), PyTorch's composition: vector norm, clamp_min,
    expand_as, div."""
    if not isinstance(input, Tensor):
        raise D.not_tensor("normalize", "input", 1, input)
    if out is None:
        return input / input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    denom = input.norm(p, dim, keepdim=True).clamp_min_(eps).expand_as(input)
    return _pkg().div(input, denom, out=out)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """Cosine of the angle between x1 and x2 along ``dim``: PyTorch's composition, each input
    divided by its norm (a clone clamped at eps in place without recording) and summed."""
    for i, t in enumerate((x1, x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cosine_similarity(): argument '{('x1', 'x2')[i]}' (position "
                            f"{i + 1}) must be Tensor, not {type(t).__name__}")
    d1, d2 = x1._data.dtype, x2._data.dtype
    common = d1 if d1 is d2 else D.result_type(D.FROM_NP[d1], x1._data.ndim, D.FROM_NP[d2],
                                              x2._data.ndim).np
    if common not in D.FLOATING:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{D.scalar_type_name(common)}")
    if d1 not in D.INEXACT:
        x1 = x1.to(D.FROM_NP[common])
    if d2 not in D.INEXACT:
        x2 = x2.to(D.FROM_NP[common])
    s1, s2 = x1._data.shape, x2._data.shape
    if s1 != s2:  # expand_outplace: both expanded to the broadcast shape
        try:
            shape = np.broadcast_shapes(s1, s2)
        except ValueError:
            raise RuntimeError(_broadcast_msg(s1, s2)) from None
        x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = _vnorm(x1, 2, dim, True).clone()
    n2 = _vnorm(x2, 2, dim, True).clone()
    np.maximum(n1._data, eps, out=n1._data)  # PyTorch clamps these under no_grad, in place
    np.maximum(n2._data, eps, out=n2._data)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _broadcast_msg(s1, s2):
    n = max(len(s1), len(s2))
    a = (1,) * (n - len(s1)) + tuple(s1)
    b = (1,) * (n - len(s2)) + tuple(s2)
    for i in range(n - 1, -1, -1):
        if a[i] != b[i] and a[i] != 1 and b[i] != 1:
            return (f"The size of tensor a ({a[i]}) must match the size of tensor b ({b[i]}) at "
                    f"non-singleton dimension {i}")
    return "shape mismatch"


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dimension (PyTorch's at::norm of the difference)."""
    d = max(x1.dim(), x2.dim()) - 1
    return _at_norm(_add_scalar(x1 - x2, eps), p, d, keepdim)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0), PyTorch's composite."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, b, c = anchor.dim(), positive.dim(), negative.dim()
    if not a == b == c:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {b}D, and "
                           f"negative {c}D inputs")
    dp = pairwise_distance(anchor, positive, p, eps)
    dn = pairwise_distance(anchor, negative, p, eps)
    if swap:
        ds = pairwise_distance(positive, negative, p, eps)
        from ..ops.comparison import minimum
        dn = minimum(dn, ds)
    return _loss_reduce((_add_scalar(dp, margin) - dn).clamp_min(0), reduction)


# --- layers: bilinear, dropout, one_hot, embedding --------------------------------------
def _size(t, i):
    """``t.size(i)`` with PyTorch's errors for a dimension ``t`` does not have."""
    n = t._data.ndim
    if n == 0:
        raise IndexError(f"Dimension specified as {i} but tensor has no dimensions")
    if not -n <= i < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {i})")
    return t._data.shape[i]


def bilinear(input1, input2, weight, bias=None):
    """y_o = x1^T W_o x2 + b_o over the last dimension (leading dimensions are batch):
    PyTorch's composition, _trilinear of the flattened inputs and the weight, viewed back."""
    ts = (input1, input2, weight) + ((bias,) if bias is not None else ())
    if len({t._data.dtype for t in ts}) > 1:
        got = ", ".join(f"{n}: {D.c_name(t._data.dtype)}"
                        for n, t in zip(("input1", "input2", "weight", "bias"), ts))
        raise RuntimeError(f"All tensors must have the same dtype, got {got}")
    nd = input1._data.ndim
    if nd != input2._data.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {nd} and "
                           f"{input2._data.ndim}")
    for i in range(nd - 1):
        if input1._data.shape[i] != input2._data.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1._data.shape[i]} and {input2._data.shape[i]}")
    n1, n2 = _size(input1, -1), _size(input2, -1)
    if n1 != _size(weight, 1):
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {n1} but "
                           f"expected {weight._data.shape[1]}")
    if n2 != _size(weight, 2):
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {n2} but "
                           f"expected {weight._data.shape[2]}")
    if bias is not None and _size(bias, 0) != weight._data.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias._data.shape[0]} but expected {weight._data.shape[0]}")
    out_size = input1._data.shape[:-1] + (weight._data.shape[0],)
    y = _tri._trilinear.fn(reshape(input1, -1, n1), weight, reshape(input2, -1, n2),
                           (1, 3), (0,), (1, 2), (2, 3))
    y = reshape(y, out_size)
    return y + bias if bias is not None else y


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _apply_mask(input, mask, inplace):
    m = _make(mask)
    if inplace:
        return input.mul_(m)
    return input * m


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the rest by 1 / (1 - p) (training only)."""
    _check_p(p)
    if not training or p == 0:
        return input
    x = input._data
    dt = x.dtype if x.dtype in D.FLOATING else D.DEFAULTS.float.np
    return _apply_mask(input, _dropout_mask(x.shape, p, dt), inplace)


def _dropout_mask(shape: tuple, p: float, dt: np.dtype) -> np.ndarray:
    """The array F.dropout multiplies by: 0 with probability p, else 1 / (1 - p), drawn from
    the default generator (a compiled replay draws each call's mask with it too)."""
    from .._random import rng
    if p == 1:
        return np.zeros(shape, dt)
    mask = rng().random(shape, dtype=np.float64 if dt == np.float64 else np.float32) >= p
    return mask.astype(dt) * dt.type(1.0 / (1.0 - p))


def _feature_dropout(input, p, training, inplace, nd, name):
    _check_p(p)
    d = input.dim()
    if d not in (nd + 1, nd + 2):
        _warn.warn(f"{name}: Received a {d}-D input to {name}, which is deprecated and will "
                   f"result in an error in a future release. To retain the behavior and silence "
                   f"this warning, please use dropout instead. Note that {name} exists to "
                   f"provide channel-wise dropout on inputs with {nd} spatial dimensions, a "
                   f"channel dimension, and an optional batch dimension (i.e. {nd + 1}D or "
                   f"{nd + 2}D inputs).", UserWarning)
    # PyTorch's dropout2d keeps its historical reading of a 3-D input: (N, C, L), batched
    legacy = nd == 2 and d == 3
    if legacy:
        _warn.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                   "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                   "where C is the channel dim. This behavior will change in a future release to "
                   "interpret the input as one without a batch dimension, i.e. shape (C, H, W). "
                   "To maintain the 1D channel-wise dropout behavior, please switch to using "
                   "dropout1d instead.", UserWarning)
    if not training or p == 0:
        return input
    x = input._data
    return _apply_mask(input, _feature_dropout_mask(x.shape, nd, p, x.dtype), inplace)


def _feature_dropout_mask(shape: tuple, nd: int, p: float, dt: np.dtype) -> np.ndarray:
    """The array dropout1d/2d/3d (``nd`` spatial dims) multiply an input of ``shape`` by: one
    draw per channel, 0 with probability p, else 1 / (1 - p)."""
    from .._random import rng
    d = len(shape)
    batched = (nd == 2 and d == 3) or d == nd + 2 or d > nd + 2 or d < nd + 1
    lead = tuple(shape[:2]) if batched and d >= 2 else tuple(shape[:1])
    mshape = lead + (1,) * (d - len(lead))
    if p == 1:
        return np.zeros(mshape, dt)
    return (rng().random(mshape) >= p).astype(dt) * dt.type(1.0 / (1.0 - p))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) input with probability p."""
    return _feature_dropout(input, p, training, inplace, 1, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, H, W) input with probability p."""
    return _feature_dropout(input, p, training, inplace, 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) input with probability p."""
    return _feature_dropout(input, p, training, inplace, 3, "dropout3d")


def _alpha_dropout(name, input, p, training, inplace, feature):
    """PyTorch's alpha dropout composition: ``input * (noise * a)`` then ``.add_(b)`` (both in
    place with ``inplace``), where noise keeps each element (each channel for the feature
    form) with probability 1 - p, and a, b keep SELU's zero mean and unit variance."""
    if not isinstance(input, Tensor):
        raise D.not_tensor(name, "input", 1, input)
    _check_p(p)
    x = input._data
    if feature and x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if p == 0 or not training or x.size == 0:
        return input
    zero = _make(np.zeros((), x.dtype))
    if p == 1:
        return input.mul_(zero) if inplace else input * zero
    from .._random import rng
    shape = x.shape[:2] + (1,) * (x.ndim - 2) if feature else x.shape
    keep = (rng().random(shape) >= p).astype(x.dtype)
    alpha = _SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    b = _make(((keep - 1) * (alpha * a) + alpha * a * p).astype(x.dtype))
    noise = _make((keep * a).astype(x.dtype))
    return (input.mul_(noise) if inplace else input * noise).add_(b)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's zero mean and unit variance (dropped units set to -alpha')."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1), each kept with probability 1 - p."""
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, True)


def one_hot(tensor, num_classes=-1):
    """Integer class indices to one-hot rows (int64), num_classes inferred when -1."""
    t = tensor._data
    if t.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if t.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(t.max()) + 1
    if t.size and t.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if t.size and t.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = np.zeros(t.shape + (num_classes,), np.int64)
    np.put_along_axis(out, t.astype(np.int64)[..., None], 1, -1)
    return _make(out)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at the integer ``input``; no gradient flows into padding_idx's row."""
    idx = input._data
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead "
                           f"(while checking arguments for embedding)")
    num = weight._data.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = num + padding_idx
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        w = weight._data
        rows = np.unique(idx)
        norms = np.linalg.norm(w[rows], ord=norm_type, axis=1)
        big = norms > max_norm
        if big.any():
            r = rows[big]
            w[r] *= (max_norm / (norms[big] + 1e-7)).reshape(-1, 1).astype(w.dtype)
            weight._vc[0] += 1
    return _embedding.embedding.fn(weight, input, num, _embedding.NO_PADDING if padding_idx is
                                   None else padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embedding rows (2-d input: one bag per row; 1-d input:
    bags starting at ``offsets``), as PyTorch's; EmbeddingBagBackward0."""
    if weight._data.dtype == np.int64 and input._data.dtype in D.FLOATING:
        _warn.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                   "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                   "`embedding_bag(input, weight, ...)`.")
        weight, input = input, weight
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        offs = _make(np.arange(0, input._data.size, input._data.shape[1]) if
                     input._data.shape[1] else np.zeros(input._data.shape[0], np.int64))
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offs = offsets
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None:
        _embedding_renorm(weight, input._data, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    return _embedding_bag(weight, input, offs, scale_grad_by_freq, mode, per_sample_weights,
                          include_last_offset, padding_idx, sparse)


def _embedding_renorm(weight, idx, max_norm, norm_type):
    """PyTorch's embedding_renorm_ under no_grad: rows used whose norm exceeds max_norm are
    scaled down to it in place."""
    w = weight._data
    rows = np.unique(idx.reshape(-1))
    norms = np.linalg.norm(w[rows], ord=norm_type, axis=1)
    big = norms > max_norm
    if big.any():
        w[rows[big]] *= (max_norm / (norms[big] + 1e-7))[:, None].astype(w.dtype)
        weight._vc[0] += 1


def _embedding_bag(weight, input, offs, scale_grad_by_freq, mode, psw, include_last, padding_idx,
                   sparse=False):
    num = weight._data.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{num} "
                               f"through {num - 1}, but got {padding_idx}")
        padding_idx = padding_idx + num if padding_idx < 0 else padding_idx
    return _embedding.bag_call(weight, input, offs, scale_grad_by_freq,
                               _embedding.BAG_MODES[mode], sparse, psw, include_last,
                               -1 if padding_idx is None else padding_idx)


# --- convolution ----------------------------------------------------------------------
from ..ops.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d  # noqa: E402,F401
from ..ops.conv import conv3d, conv_transpose3d  # noqa: E402,F401
from ..ops import pool as _pool  # noqa: E402
from ..ops import norm as _norm  # noqa: E402


# --- pooling --------------------------------------------------------------------------
def _pair(v, n, name="kernel_size"):
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"{name} must either be a single int, or a tuple of {n} ints")
        return tuple(int(a) for a in v)
    return (int(v),) * n


def _pool_args(input, kernel_size, stride, padding, dilation, name, nd=2, ceil_mode=False):
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected {nd + 1}D or {nd + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got: "
                           f"{list(input.shape)}" if nd == 2 else
                           f"{name}: Expected {nd + 1}D or {nd + 2}D input, got {list(input.shape)}")
    k = _pair(kernel_size, nd)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else _pair(stride, nd, "stride")
    p = _pair(padding, nd, "padding")
    d = _pair(dilation, nd, "dilation")
    for kk, pp, dd in zip(k, p, d):
        if pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pp}, kernel_size={kk} and dilation={dd}")
    if any(v <= 0 for v in k + s):
        raise RuntimeError(f"{name}: kernel_size and stride must be greater than zero")
    sizes = input._data.shape[-nd:]
    outs = [_pool.pool_out(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in
            zip(sizes, k, s, p, d)]
    if any(o < 1 for o in outs):  # a window larger than the (padded) input
        c = input._data.shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + tuple(sizes)))}). "
                           f"Calculated output size: ({'x'.join(map(str, [c] + outs))}). Output "
                           f"size is too small")
    return k, s, p, d


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, H, W); MaxPool2DWithIndicesBackward0."""
    k, s, p, d = _pool_args(input, kernel_size, stride, padding, dilation, "max_pool2d",
                            ceil_mode=ceil_mode)
    x = input._data
    _pool.need_kernel(x, "max_pool2d", *_INTS)
    x4 = x if x.ndim == 4 else x[None]
    idx, unique, vals = _pool.max_pool2d_indices(x4, k, s, p, d, ceil_mode)
    if x.ndim == 3:
        idx, vals = idx[0], vals[0]
    out = _pool.gather_op(input, idx, unique, x.ndim - 2, _pool.MaxPool2DWithIndicesBackward0,
                          vals)
    if return_indices:
        return _pool.with_indices(out, idx)
    return out


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, L) (a height-1 max_pool2d, as in PyTorch)."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"max_pool1d() Expected 2D or 3D input tensor, but got "
                           f"{list(input.shape)}")
    k = _pair(kernel_size, 1)
    s = k if stride is None or stride == () or stride == [] else _pair(stride, 1, "stride")
    pd, dl = _pair(padding, 1), _pair(dilation, 1)
    if k[0] > 0 and s[0] > 0 and pd[0] <= (dl[0] * (k[0] - 1) + 1) // 2:
        o = _pool.pool_out(input._data.shape[-1], k[0], s[0], pd[0], dl[0], ceil_mode)
        if o < 1:
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {o}")
    if not return_indices:  # PyTorch's own kernel then, floating types only
        _pool.need_kernel(input, "max_pool1d_impl")
    r = max_pool2d(input.unsqueeze(-2), (1,) + k, (1,) + s, (0,) + _pair(padding, 1),
                   (1,) + _pair(dilation, 1), ceil_mode, return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Window means over (N, C, H, W); AvgPool2DBackward0."""
    k, s, p, _ = _pool_args(input, kernel_size, stride, padding, 1, "avg_pool2d",
                            ceil_mode=ceil_mode)
    _pool.need_kernel(input, "avg_pool2d", "int64")
    H, W = input._data.shape[-2:]
    mats = []
    for axis, n, kk, ss, pp in ((-2, H, k[0], s[0], p[0]), (-1, W, k[1], s[1], p[1])):
        o = _pool.pool_out(n, kk, ss, pp, 1, ceil_mode)
        if divisor_override:
            M = _pool.avg_matrix(n, kk, ss, pp, ceil_mode, True, o)
            M = (M > 0).astype(np.float64)
        else:
            M = _pool.avg_matrix(n, kk, ss, pp, ceil_mode, True, o)
        mats.append((axis, M))
    if divisor_override:
        mats[0] = (-2, mats[0][1] / divisor_override)
    elif not count_include_pad:
        # divisor is the number of real (non-padding) elements, a product over the two axes
        for i, (axis, n, kk, ss, pp) in enumerate(((-2, H, k[0], s[0], p[0]),
                                                   (-1, W, k[1], s[1], p[1]))):
            o = mats[i][1].shape[0]
            c = _pool.window_counts(n, kk, ss, pp, ceil_mode, False, o)
            M = (mats[i][1] > 0).astype(np.float64) / c[:, None]
            mats[i] = (axis, M)
    return _pool.axis_linear(input, mats, _pool.AvgPool2DBackward0)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """Window means over (N, C, L)."""
    k = _pair(kernel_size, 1)
    s = k if stride is None or stride == () or stride == [] else _pair(stride, 1, "stride")
    return avg_pool2d(input.unsqueeze(-2), (1,) + k, (1,) + s, (0,) + _pair(padding, 1),
                      ceil_mode, count_include_pad).squeeze(-2)


def _out_size(output_size, insize, nd):
    o = _pair(output_size, nd, "output_size") if not isinstance(output_size, (tuple, list)) or \
        all(v is not None for v in output_size) else tuple(output_size)
    return tuple(n if v is None else int(v) for v, n in zip(o, insize))


def adaptive_avg_pool2d(input, output_size):
    """Average over adaptive windows to a fixed (oh, ow); AdaptiveAvgPool2DBackward0."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{list(input.shape)}")
    H, W = input._data.shape[-2:]
    oh, ow = _out_size(output_size, (H, W), 2)
    if oh == 1 and ow == 1:  # PyTorch: the mean over the spatial dims (MeanBackward1)
        return input.mean((-1, -2), keepdim=True)
    _pool.need_kernel(input, "adaptive_avg_pool2d")
    mats = [(-2, _pool.adaptive_avg_matrix(H, oh)), (-1, _pool.adaptive_avg_matrix(W, ow))]
    return _pool.axis_linear(input, mats, _pool.AdaptiveAvgPool2DBackward0)


def adaptive_avg_pool1d(input, output_size):
    """Average over adaptive windows of (N, C, L) to a fixed length."""
    o = _pair(output_size, 1)
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1,) + o).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum over adaptive windows to a fixed (oh, ow); AdaptiveMaxPool2DBackward0."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{list(input.shape)}")
    x = input._data
    H, W = x.shape[-2:]
    oh, ow = _out_size(output_size, (H, W), 2)
    _pool.need_kernel(x, "adaptive_max_pool2d")
    idx = _pool.adaptive_max_indices(x, oh, ow)
    out = _pool.gather_op(input, idx, False, x.ndim - 2, _pool.AdaptiveMaxPool2DBackward0)
    if return_indices:
        return _pool.with_indices(out, idx)
    return out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    o = _pair(output_size, 1)
    r = adaptive_max_pool2d(input.unsqueeze(-2), (1,) + o, return_indices)
    if return_indices:
        return r[0].squeeze(-2), r[1].squeeze(-2)
    return r.squeeze(-2)


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    """PyTorch's lp_pool{1,2,3}d: (sign(a) * relu(|a|) * window size) ** (1 / p), a the
    average pooling of x ** p; the max pooling of |x| for an infinite p."""
    maxp = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
    avgp = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    k = _pair(kernel_size, nd)
    if isinstance(norm_type, (int, float)):
        if norm_type == math.inf:
            return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -math.inf:
            return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if stride is not None:
        out = avgp(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avgp(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    return (out.sign() * relu(out.abs())).mul(int(np.prod(k))).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over window of x^p)^(1/p) over (N, C, L)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over window of x^p)^(1/p) over (N, C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over window of x^p)^(1/p) over (N, C, D, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


# --- 3-d pooling ------------------------------------------------------------------------
def _check_3d(input):
    if input._data.ndim not in (4, 5) or input._data.size == 0:
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """Window maxima over (N, C, D, H, W); MaxPool3DWithIndicesBackward0."""
    _check_3d(input)
    k, s, p, d = _pool_args(input, kernel_size, stride, padding, dilation, "max_pool3d", nd=3,
                            ceil_mode=ceil_mode)
    x = input._data
    _pool.need_kernel(x, "max_pool3d", *_INTS)
    idx, unique, vals = _pool.max_pool_nd_indices(x, k, s, p, d, ceil_mode)
    out = _pool.gather_op(input, idx, unique, x.ndim - 3, _pool.MaxPool3DWithIndicesBackward0,
                          vals)
    if return_indices:
        return _pool.with_indices(out, idx)
    return out


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """Window means over (N, C, D, H, W); AvgPool3DBackward0."""
    _check_3d(input)
    k = _pair(kernel_size, 3)
    sizes = input._data.shape[-3:]
    if any(n + 2 * pp < kk for n, kk, pp in zip(sizes, k, _pair(padding, 3, "padding"))):
        raise RuntimeError(f"input image (T: {sizes[0]} H: {sizes[1]} W: {sizes[2]}) smaller "
                           f"than kernel size (kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    k, s, p, _ = _pool_args(input, kernel_size, stride, padding, 1, "avg_pool3d", nd=3,
                            ceil_mode=ceil_mode)
    _pool.need_kernel(input, "avg_pool3d_out_frame", "int64", half=False)
    mats = []
    for i, (n, kk, ss, pp) in enumerate(zip(sizes, k, s, p)):
        o = _pool.pool_out(n, kk, ss, pp, 1, ceil_mode)
        M = _pool.avg_matrix(n, kk, ss, pp, ceil_mode, True, o)
        if divisor_override or not count_include_pad:
            c = _pool.window_counts(n, kk, ss, pp, ceil_mode, count_include_pad, o)
            M = (M > 0).astype(np.float64) / (1.0 if divisor_override else c[:, None])
        mats.append((i - 3, M))
    if divisor_override:
        mats[0] = (-3, mats[0][1] / divisor_override)
    return _pool.axis_linear(input, mats, _pool.AvgPool3DBackward0)


def adaptive_avg_pool3d(input, output_size):
    """Average over adaptive windows to a fixed (od, oh, ow); AdaptiveAvgPool3DBackward0."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    sizes = input._data.shape[-3:]
    outs = _out_size(output_size, sizes, 3)
    if outs == (1, 1, 1):  # PyTorch: the mean over the spatial dims (MeanBackward1)
        return input.mean((-1, -2, -3), keepdim=True)
    _pool.need_kernel(input, "adaptive_avg_pool3d_cpu")
    mats = [(i - 3, _pool.adaptive_avg_matrix(n, o)) for i, (n, o) in enumerate(zip(sizes, outs))]
    return _pool.axis_linear(input, mats, _pool.AdaptiveAvgPool3DBackward0)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maximum over adaptive windows to a fixed (od, oh, ow); AdaptiveMaxPool3DBackward0."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got: "
                           f"{list(input.shape)}")
    x = input._data
    outs = _out_size(output_size, x.shape[-3:], 3)
    _pool.need_kernel(x, "adaptive_max_pool3d_cpu")
    idx = _pool.adaptive_max_indices_nd(x, outs)
    out = _pool.gather_op(input, idx, False, x.ndim - 3, _pool.AdaptiveMaxPool3DBackward0)
    if return_indices:
        return _pool.with_indices(out, idx)
    return out


from ..ops.padding import ConstantPadNdBackward0, pad  # noqa: E402,F401


# --- interpolation --------------------------------------------------------------------
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dimensions: nearest, nearest-exact, (bi/tri)linear, bicubic or area;
    bilinear and bicubic optionally antialiased, lanczos antialiased."""
    if mode in ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area") \
            and not antialias:
        return _interpolate_grid(input, size, scale_factor, mode, align_corners,
                                 recompute_scale_factor)
    from ._bicubic import filtered_resize
    return filtered_resize(input, size, scale_factor, mode, align_corners,
                           recompute_scale_factor, antialias)


def _interpolate_grid(input, size, scale_factor, mode, align_corners, recompute_scale_factor,
                      antialias=False):
    """Nearest, nearest-exact, (bi/tri)linear and area resizing (and the errors of the
    argument checks they share with the other modes)."""
    nd = input.dim() - 2
    if nd < 1 or nd > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.dim()}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    insz = tuple(input._data.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        outsz = _pair(size, nd, "size")
        scales = [None] * nd
    elif scale_factor is not None:
        sf = scale_factor if isinstance(scale_factor, (tuple, list)) else [scale_factor] * nd
        if len(sf) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(insz)} and scale_factor of shape {sf}.")
        outsz = tuple(int(math.floor(n * float(f))) for n, f in zip(insz, sf))
        scales = [None if recompute_scale_factor else float(f) for f in sf]
    else:
        raise ValueError("either size or scale_factor should be defined")
    mats = []
    for i, (n, o, sc) in enumerate(zip(insz, outsz, scales)):
        ax = 2 + i
        if mode == "nearest":
            M = _pool.nearest_matrix(n, o, sc)
        elif mode == "nearest-exact":
            M = _pool.nearest_matrix(n, o, sc, exact=True)
        elif mode in ("linear", "bilinear", "trilinear"):
            want = {"linear": 1, "bilinear": 2, "trilinear": 3}[mode]
            if want != nd:
                raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                          f"{want + 2}D input")
            M = _pool.linear_matrix(n, o, align_corners, sc)
        elif mode == "area":
            M = _pool.adaptive_avg_matrix(n, o)
        else:
            raise NotImplementedError(f"interpolation mode '{mode}'")
        mats.append((ax, M))
    if mode in ("nearest", "nearest-exact"):
        name = f"Upsample{'NearestExact' if mode == 'nearest-exact' else 'Nearest'}{nd}DBackward0"
        cls = getattr(_pool, name, None) or _pool._node_pair(name)
        _pool.need_kernel(input, "upsample_nearest2d_channels_last" if nd == 2 else
                          "compute_indices_weights_nearest", "uint8")
    elif mode == "area":
        cls = _pool.AdaptiveAvgPool2DBackward0 if nd == 2 else _pool.AvgPool3DBackward0
        _pool.need_kernel(input, "adaptive_avg_pool3d_cpu" if nd == 3 else "adaptive_avg_pool2d")
    else:
        cls = {1: _pool.UpsampleLinear1DBackward0, 2: _pool.UpsampleBilinear2DBackward0,
               3: _pool.UpsampleTrilinear3DBackward0}[nd]
        if nd == 2:
            _pool.need_kernel(input, "upsample_bilinear2d_channels_last", "uint8")
        else:
            _pool.need_kernel(input, "compute_indices_weights_linear")
    return _pool.axis_linear(input, mats, cls, rounding=mode not in ("nearest", "nearest-exact"))


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --- normalisation --------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-05):
    """Normalise each channel (dim 1) by batch statistics (training, updating the running
    ones in place) or by the running statistics (eval); NativeBatchNormBackward0."""
    x = input._data
    if x.ndim < 2:
        raise ValueError(f"expected 2D or 3D input (got {x.ndim}D input)")
    C = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t._data.size != C:
            raise RuntimeError(f"{name} should contain {C} elements not {t._data.size}")
    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, C) + (1,) * (x.ndim - 2)
    use_batch = training or running_mean is None or running_var is None
    if use_batch:
        n = x.size // C if C else 0
        if training and n == 1:  # (an empty batch normalises to an empty result)
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
    _pool.need_kernel(x, "batch_norm")
    if use_batch and not x.size:  # an empty batch: an empty result, running stats untouched
        stats = (np.zeros(bshape, x.dtype), np.ones(bshape, x.dtype))
        return _norm.normalize_affine(input, weight, bias, x.shape, axes, bshape, axes, eps,
                                      _norm.NativeBatchNormBackward0, stats)[0]
    if use_batch:
        out, mean, var = _norm.normalize_affine(input, weight, bias, x.shape, axes, bshape, axes,
                                                eps, _norm.NativeBatchNormBackward0,
                                                rounded_stats=True)
        if training and running_mean is not None:
            m = momentum
            rm = running_mean._data
            rm[...] = (1 - m) * rm + m * mean.reshape(C)
            running_mean._vc[0] += 1
        if training and running_var is not None:
            m = momentum
            rv = running_var._data
            rv[...] = (1 - m) * rv + m * var.reshape(C) * (n / (n - 1))
            running_var._vc[0] += 1
        return out
    stats = (running_mean._data.reshape(bshape), running_var._data.reshape(bshape))
    return _norm.normalize_affine(input, weight, bias, x.shape, axes, bshape, axes, eps,
                                  _norm.NativeBatchNormBackward0, stats)[0]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalise over the trailing ``normalized_shape`` dims; NativeLayerNormBackward0."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    x = input._data
    k = len(ns)
    if tuple(x.shape[x.ndim - k:]) != ns or k > x.ndim:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*, {', '.join(map(str, ns))}], but got input of size{input.shape}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t._data.shape) != ns:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                               f"{name} of shape {list(t.shape)} and normalized_shape = {list(ns)}")
    axes = tuple(range(x.ndim - k, x.ndim))
    lead = tuple(range(x.ndim - k))
    wb = (1,) * (x.ndim - k) + ns
    _pool.need_kernel(x, "LayerNormKernelImpl")
    return _norm.normalize_affine(input, weight, bias, x.shape, axes, wb, lead, eps,
                                  _norm.NativeLayerNormBackward0, layout=_c_layout)[0]


def _c_layout(x, y):
    """layer_norm's result is contiguous whatever the input's layout, as PyTorch's."""
    return y if y.flags.c_contiguous else y.copy(order="C")


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x * rsqrt(mean(x^2) + eps) over the trailing dims, times weight: PyTorch's composite
    (computed in float32 for float16 and bfloat16; eps their epsilon by default)."""
    if isinstance(normalized_shape, int):
        raise TypeError(f"rms_norm(): argument 'normalized_shape' (position 2) must be tuple of "
                        f"ints, not {type(normalized_shape).__name__}")
    ns = tuple(normalized_shape)
    x = input._data
    k = len(ns)
    if k > x.ndim or tuple(x.shape[x.ndim - k:]) != ns:
        raise RuntimeError(f"Given normalized_shape={list(ns)}, expected input with shape "
                           f"[*{', '.join(map(str, ns))}], but got input of size{input.shape}")
    if weight is not None and tuple(weight._data.shape) != ns:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(ns)}")
    dims = tuple(range(x.ndim - 1, x.ndim - 1 - k, -1))
    _pool.need_kernel(x, "rms_norm")
    op = D.float32 if x.dtype == np.float16 or x.dtype == D.BF16 else D.FROM_NP[x.dtype]
    if eps is None:
        eps = float(D.np_finfo(op.np).eps)
    up = input.to(op)
    r = _add_scalar(up.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    y = up.mul(r).type_as(input)
    return y.mul(weight) if weight is not None else y


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalise over groups of channels (and all spatial positions); NativeGroupNormBackward0."""
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    N, C = x.shape[:2]
    if C % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, "
                           f"but got input of shape {input.shape} and num_groups={num_groups}")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t._data.ndim != 1 or t._data.size != C):
            # (PyTorch's message for the bias shows the weight's shape: [0] when it is None)
            shown = [0] if weight is None else list(weight._data.shape)
            raise RuntimeError(f"Expected {what} to be a vector of size equal to the number of "
                               f"channels in input, but got {what} of shape "
                               f"{shown if what == 'bias' else list(t._data.shape)} and input "
                               f"of shape {list(x.shape)}")
    sp = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    rs = (N, num_groups, (C // num_groups) * sp)
    wb = (1, C) + (1,) * (x.ndim - 2)
    wa = (0,) + tuple(range(2, x.ndim))
    _pool.need_kernel(x, "GroupNormKernelImpl")
    return _norm.normalize_affine(input, weight, bias, rs, (2,), wb, wa, eps,
                                  _norm.NativeGroupNormBackward0)[0]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-05):
    """Normalise each (sample, channel) over its spatial positions: PyTorch's composite, a
    batch norm of the input viewed as (1, N * C, ...) with the affine parameters (and running
    statistics) repeated per sample, viewed back."""
    shape = tuple(input._data.shape)
    if use_input_stats:
        if int(np.prod(shape[2:])) == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {input.shape}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("Expected running_mean and running_var to be defined when "
                           "use_input_stats is false")
    b, c = shape[0], shape[1]

    def rep(t):
        return t.repeat(b) if t is not None else None

    rm, rv = rep(running_mean), rep(running_var)
    x = input.contiguous().view((1, b * c) + shape[2:])
    out = batch_norm(x, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    for t, r in ((running_mean, rm), (running_var, rv)):
        if t is not None:  # the running statistics: the per-sample ones averaged
            t._data[...] = r._data.reshape(b, c).mean(0)
            t._vc[0] += 1
    return out.view(shape)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over ``size`` neighbouring channels) ** beta, as
    PyTorch composes it (an average pooling of the padded squares)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {dim} dimensions)")
    if input._data.size == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.view(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.view(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


from ._attention_fn import (scaled_dot_product_attention, pixel_shuffle, pixel_unshuffle,  # noqa: E402,F401
                            multi_head_attention_forward)
from ._losses_more import (multi_margin_loss, multilabel_margin_loss,  # noqa: E402,F401
                           multilabel_soft_margin_loss)
from ._gumbel import gumbel_softmax  # noqa: E402,F401
from ._pdist import pdist  # noqa: E402,F401
from ._fold import fold, unfold  # noqa: E402,F401


# PyTorch's argument errors (a string or None where a tensor goes) for every function above
from .._argcheck import guard_module as _guard_module  # noqa: E402

_guard_module(globals(), __name__)
