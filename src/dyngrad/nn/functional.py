"""``nn.functional``: activations, losses and layers as functions.  Each loss and activation
records PyTorch's node (``MseLossBackward0``, ``NllLossBackward0`` ...)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor, _dim
from ..ops._graph import notify, STATE, Node, Saved, edge_of, record, sum_to, NO_EDGE, as_float
from ..ops import _dual as X
from ..ops.pointwise import relu, tanh, sigmoid  # noqa: F401 - re-exported
from ..ops.linalg import addmm, matmul
from ..ops.views import reshape

_make = Tensor._make


# --- linear ---------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """y = input @ weight.T + bias; AddmmBackward0 for a batch of vectors."""
    if input._data.shape[-1:] != weight._data.shape[-1:] and weight.dim() == 2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, (int(np.prod(input._data.shape[:-1])) if input.dim() > 1 else 1, input._data.shape[-1])))} and "
                           f"{weight._data.shape[1]}x{weight._data.shape[0]})")
    wt = weight.t()
    d = input._data.ndim
    if d == 2 and bias is not None:
        return addmm(bias, input, wt)
    if d == 1 and bias is not None:
        return addmm(bias, reshape(input, 1, -1), wt).view(weight._data.shape[0])
    out = matmul(input, wt)
    return out + bias if bias is not None else out


def bilinear(input1, input2, weight, bias=None):
    import importlib
    einsum = importlib.import_module(__name__.split(".")[0]).einsum
    y = einsum("bi,oij,bj->bo", input1, weight, input2)
    return y + bias if bias is not None else y


# --- reductions of losses -------------------------------------------------------------
def _reduction_enum(reduction, size_average=None, reduce=None):
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return np.asarray(loss.mean(dtype=loss.dtype)) if loss.size else np.asarray(np.nan, loss.dtype)
    if reduction == "sum":
        return np.asarray(loss.sum(dtype=loss.dtype))
    return loss


def _reduce_grad(g, shape, reduction, n):
    """Gradient of the reduction: expand a scalar gradient back to the elementwise loss."""
    if reduction == "mean":
        return X.expand_to(g / n, shape) if n else X.expand_to(g, shape)
    if reduction == "sum":
        return X.expand_to(g, shape)
    return g


def _check_target_size(input, target, name):
    if input._data.shape != target._data.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=3)
        try:
            np.broadcast_shapes(input._data.shape, target._data.shape)
        except ValueError:
            raise RuntimeError(f"The size of tensor a ({input._data.shape[-1]}) must match the size "
                               f"of tensor b ({target._data.shape[-1]}) at non-singleton dimension "
                               f"{input._data.ndim - 1}") from None


class MseLossBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        si, st, red = self._saved
        x = si.get(self, graph)
        t = st.get(self, graph)
        diff = x - t
        gl = _reduce_grad(g, tuple(diff.shape), red, diff.shape.numel() if graph else diff.size)
        gi = gl * diff * 2
        gx = sum_to(gi, x.shape) if self.next_functions[0][0] is not None else None
        gt = sum_to(-gi, t.shape) if self.next_functions[1][0] is not None else None
        return gx, gt


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error; MseLossBackward0."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    _check_target_size(input, target, "mse_loss")
    x, t = input._data, target._data
    if t.dtype != x.dtype:
        t = t.astype(np.result_type(x.dtype, t.dtype))
        x = x.astype(t.dtype)
    diff = x - t
    r = _reduce(diff * diff, reduction)
    if STATE.enabled and (input._requires_grad or target._requires_grad):
        return record(r, MseLossBackward0((edge_of(input), edge_of(target)),
                                          (Saved(input), Saved(target), reduction)))
    return _make(r)


class BinaryCrossEntropyBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        si, st, w, red = self._saved
        x = si.get(self, graph)
        t = st.get(self, graph)
        n = (x.shape.numel() if graph else x.size)
        gl = _reduce_grad(g, tuple(x.shape), red, n)
        eps = 1e-12
        if graph:
            denom = ((1 - x) * x).clamp(min=eps)
        else:
            denom = np.maximum((1 - x) * x, eps)
        gx = gl * (x - t) / denom
        if w is not None:
            gx = gx * (w if not graph else _make(w))
        gt = None
        if self.next_functions[1][0] is not None:
            gt = gl * (X.log(1 - x) - X.log(x))
            if w is not None:
                gt = gt * (w if not graph else _make(w))
        return gx, gt


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), logs clamped at -100; BinaryCrossEntropyBackward0."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    if input._data.shape != target._data.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    x, t = input._data, target._data.astype(input._data.dtype, copy=False)
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    with np.errstate(divide="ignore"):
        lx = np.maximum(np.log(x), -100)
        l1x = np.maximum(np.log1p(-x), -100)
    loss = -(t * lx + (1 - t) * l1x)
    w = None
    if weight is not None:
        w = np.broadcast_to(weight._data, x.shape).astype(x.dtype)
        loss = loss * w
    r = _reduce(loss.astype(x.dtype, copy=False), reduction)
    if STATE.enabled and (input._requires_grad or target._requires_grad):
        return record(r, BinaryCrossEntropyBackward0((edge_of(input), edge_of(target)),
                                                     (Saved(input), Saved(target), w, reduction)))
    return _make(r)


# --- softmax family -------------------------------------------------------------------
def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


class SoftmaxBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sy, dim = self._saved
        y = sy.get(self, graph)
        gy = g * y
        return gy - y * gy.sum(dim, keepdim=True) if graph else \
            (gy - y * gy.sum(axis=dim, keepdims=True)),


class LogSoftmaxBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sy, dim = self._saved
        y = sy.get(self, graph)
        if graph:
            return g - y.exp() * g.sum(dim, keepdim=True),
        return g - np.exp(y) * g.sum(axis=dim, keepdims=True),


def _dim_arg(input, dim, name):
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                      f"to include dim=X as an argument.", UserWarning, stacklevel=3)
        dim = _softmax_dim(input._data.ndim)
    return _dim(dim, input._data.ndim)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, computed stably; SoftmaxBackward0."""
    k = _dim_arg(input, dim, "softmax")
    x = as_float(input._data if dtype is None else input._data.astype(D.to_dtype(dtype).np))
    if x.ndim == 0:
        y = np.ones_like(x)
    else:
        e = np.exp(x - x.max(axis=k, keepdims=True))
        y = e / e.sum(axis=k, keepdims=True)
    if STATE.enabled and input._requires_grad:
        res = record(y, None)
        res._grad_fn = SoftmaxBackward0((edge_of(input),), (Saved(res, True), k))
        return notify(res)
    return _make(y)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim``; LogSoftmaxBackward0."""
    k = _dim_arg(input, dim, "log_softmax")
    x = as_float(input._data if dtype is None else input._data.astype(D.to_dtype(dtype).np))
    if x.ndim == 0:
        y = np.zeros_like(x)
    else:
        m = x.max(axis=k, keepdims=True)
        s = x - m
        y = s - np.log(np.exp(s).sum(axis=k, keepdims=True))
    if STATE.enabled and input._requires_grad:
        res = record(y, None)
        res._grad_fn = LogSoftmaxBackward0((edge_of(input),), (Saved(res, True), k))
        return notify(res)
    return _make(y)


class NllLossBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        shape, tgt, w_t, red, total, dtype = self._saved
        # gradient: -w[t] at the target class, scaled by the reduction
        if graph:
            from .._factories import zeros
            coef = _make((-w_t / (total if red == "mean" else 1)).astype(dtype))
            if red == "none":
                coef = coef * g
            else:
                coef = coef * g
            z = zeros(shape, dtype=D.FROM_NP[dtype])
            idx = _nll_index(shape, tgt)
            z[idx] = coef.reshape(-1) if coef.dim() else coef
            return z,
        z = np.zeros(shape, dtype)
        if red == "none":
            coef = -w_t * g
        elif red == "mean":
            coef = -w_t * (g / total if total else g * 0)
        else:
            coef = -w_t * g
        z[_nll_index(shape, tgt)] = coef.reshape(-1) if np.ndim(coef) else coef
        return z,


def _nll_index(shape, tgt):
    """Fancy index selecting the target class of every sample: input (N, C, d1...)."""
    if len(shape) == 1:
        return (tgt,)
    n = shape[0]
    rest = shape[2:]
    grids = np.indices((n,) + tuple(rest))
    return (grids[0].reshape(-1), tgt.reshape(-1)) + tuple(gr.reshape(-1) for gr in grids[1:])


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log likelihood of class indices; NllLossBackward0."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    x = input._data
    t = target._data
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name.capitalize()}"
                           if target.dtype.is_floating_point else
                           f"nll_loss: target must hold class indices (Long), got {target.dtype}")
    if x.ndim == 1:
        if t.ndim != 0:
            raise ValueError(f"Expected input batch_size (1) to match target batch_size "
                             f"({t.shape[0] if t.ndim else 1}).")
    elif x.shape[0] != t.shape[0]:
        raise ValueError(f"Expected input batch_size ({x.shape[0]}) to match target batch_size "
                         f"({t.shape[0]}).")
    C = x.shape[0] if x.ndim == 1 else x.shape[1]
    valid = t != ignore_index
    if ((t[valid] < 0) | (t[valid] >= C)).any():
        bad = t[valid][((t[valid] < 0) | (t[valid] >= C))][0]
        raise IndexError(f"Target {int(bad)} is out of bounds (the input has {C} classes).")
    tc = np.where(valid, t, 0)
    w = np.ones(C, x.dtype) if weight is None else weight._data.astype(x.dtype)
    w_t = w[tc] * valid
    idx = _nll_index(x.shape, tc)
    picked = x[idx].reshape(tc.shape)
    losses = -picked * w_t
    total = w_t.sum()
    if reduction == "none":
        r = losses.astype(x.dtype)
    elif reduction == "sum":
        r = np.asarray(losses.sum(), x.dtype)
    else:
        r = np.asarray(losses.sum() / total if total else np.nan, x.dtype)
    if STATE.enabled and input._requires_grad:
        return record(r, NllLossBackward0((edge_of(input),),
                                          (x.shape, tc, w_t.astype(x.dtype), reduction,
                                           total.astype(x.dtype), x.dtype)))
    return _make(r)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax + nll_loss over dimension 1 (class indices or class probabilities)."""
    reduction = _reduction_enum(reduction, size_average, reduce)
    dim = 0 if input._data.ndim == 1 else 1
    logp = log_softmax(input, dim)
    if target._data.dtype.kind == "f":
        if target._data.shape != input._data.shape:
            raise RuntimeError(f"cross_entropy: target of shape {list(target.shape)} holds "
                               f"probabilities but input has shape {list(input.shape)}")
        t = target
        if label_smoothing > 0:
            C = input._data.shape[dim]
            t = t * (1 - label_smoothing) + label_smoothing / C
        contrib = logp * t
        if weight is not None:
            shape = [1] * input._data.ndim
            shape[dim] = -1
            contrib = contrib * weight.reshape(*shape)
        loss = -contrib.sum(dim)
        if reduction == "mean":
            return loss.sum() / (input._data.shape[0] if input._data.ndim > 1 else 1)
        if reduction == "sum":
            return loss.sum()
        return loss
    loss = nll_loss(logp, target, weight=weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing > 0:
        C = input._data.shape[dim]
        valid = _make((target._data != ignore_index).astype(input._data.dtype))
        if weight is not None:
            shape = [1] * input._data.ndim
            shape[dim] = -1
            smooth = -(logp * weight.reshape(*shape)).sum(dim)
        else:
            smooth = -logp.sum(dim)
        smooth = smooth * valid
        if reduction == "mean":
            if weight is not None:
                w_t = weight._data[np.where(target._data != ignore_index, target._data, 0)]
                denom = float((w_t * valid._data).sum())
            else:
                denom = float(valid._data.sum())
            smooth = smooth.sum() / denom
        elif reduction == "sum":
            smooth = smooth.sum()
        loss = loss * (1 - label_smoothing) + smooth * (label_smoothing / C)
    return loss
