"""Multi-class and multi-label margin losses: multi_margin_loss (MultiMarginLossBackward0),
multilabel_margin_loss (MultilabelMarginLossBackward0), both one node over PyTorch's CPU
kernels' arithmetic with no double backward (as PyTorch's), and multilabel_soft_margin_loss,
PyTorch's composite of logsigmoid, products and sums."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from .._record import STATE, Node, Saved, edge_of, record
from . import functional as _F

_make = Tensor._make
_NON_EMPTY = "Expected non-empty vector or matrix with optional 0-dim batch size, but got: "


def _frames(x):
    """(nframe, dim) of a 0-d, 1-d or 2-d loss input, with PyTorch's non-empty check."""
    s = x.shape
    if not ((x.ndim == 2 and s[1] != 0) or (x.ndim == 1 and s[0] != 0) or x.ndim == 0):
        raise RuntimeError(_NON_EMPTY + str(list(s)))
    if x.ndim == 2:
        return s[0], s[1]
    return 1, (s[0] if x.ndim else 1)


def _check_float(x, kernel):
    """The margin losses' kernels: float32 and float64 only (PyTorch's CPU dispatch)."""
    if x.dtype.kind != "f" or x.dtype == np.float16:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(x.dtype)}'")


def _check_dtype(found, expected):
    if found != expected:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(expected)} but found "
                           f"{D.scalar_type_name(found)}")


def _reduced(per_frame, reduction, frame_shape, dtype):
    """Per-frame losses reduced; 'none' keeps ``frame_shape`` (a scalar for 1-d input)."""
    if reduction == "none":
        return per_frame.reshape(frame_shape).astype(dtype, copy=False)
    if reduction == "sum":
        return np.asarray(per_frame.sum(), dtype)
    return np.asarray(per_frame.mean() if per_frame.size else np.nan, dtype)


_ENUM = {"none": 0, "mean": 1, "sum": 2}  # PyTorch's saved reduction values


def _frame_grad(g, reduction, nframe):
    """The upstream gradient per frame, (nframe, 1); ``reduction`` as PyTorch's enum."""
    g = np.asarray(g)
    if reduction == 0:
        return g.reshape(nframe, 1)
    return np.broadcast_to(g / nframe if reduction == 1 else g, (nframe, 1))


def no_forward_ad(op):
    """A forward-mode rule raising PyTorch's error for an op without one."""
    def rule(node, tangents):
        raise NotImplementedError(
            f"Trying to use forward AD with {op} that does not support it because it has not "
            f"been implemented yet.\nPlease file an issue to PyTorch at "
            f"https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that "
            f"we can prioritize its implementation or submit a PR adding the implementation to "
            f"derivatives.yaml")
    return staticmethod(rule)


class _NoDoubleBackward(Node):
    """Backward of a loss kernel whose gradient PyTorch does not differentiate again: under
    create_graph the gradient is recorded as a NotImplemented node."""
    __slots__ = ()
    _kernel = ""

    def _grad_np(self, g, x):
        raise NotImplementedError

    def _bw(self, g, graph):
        sx = self._saved[0]
        x = sx.get(self, graph)
        if not graph:
            return self._grad_np(g, x),
        d = self._grad_np(g._data, x._data)
        from ..autograd.node import NotImplemented_
        edges = tuple(edge_of(t) for t in (g, x) if t._requires_grad)
        if STATE.enabled and edges:
            return record(d, NotImplemented_(edges, (self._kernel,))),
        return _make(d),


# --- multi_margin_loss ----------------------------------------------------------------
def _mm_terms(x2, t, p, margin, w):
    """Hinge terms (nframe, dim) of every non-target class, their z = margin - x[t] + x[d]
    and the target-class weight per frame."""
    n = x2.shape[0]
    rows = np.arange(n)
    z = margin - x2[rows, t][:, None] + x2
    on = z > 0
    on[rows, t] = False
    h = np.where(on, z if p == 1 else z * z, 0)
    wt = w[t][:, None] if w is not None else None
    if wt is not None:
        h = h * wt
    return h, z, on, wt


class MultiMarginLossBackward0(_NoDoubleBackward):
    """Backward of multi_margin_loss: each active hinge (z > 0) adds its slope to its class
    and subtracts it from the target class."""
    __slots__ = ()
    _kernel = "multi_margin_loss_backward"
    _fw_rule = no_forward_ad("multi_margin_loss")
    _named_saved = {"self": (0, "tensor"), "target": (1, "tensor"), "p": (2, "same"),
                    "margin": (3, "same"), "weight": (4, "tensor"), "reduction": (5, "same")}

    def _grad_np(self, g, x):
        _, st, p, margin, sw, red = self._saved
        t = st.get(self, False).reshape(-1)
        w = sw.get(self, False) if sw is not None else None
        nframe, dim = _frames(x)
        x2 = x.reshape(nframe, dim)
        _, z, on, wt = _mm_terms(x2, t, p, float(margin), w)
        gf = _frame_grad(g, red, nframe) / dim
        gx = np.where(on, gf if p == 1 else 2 * gf * z, 0)
        if wt is not None:
            gx = gx * wt
        gx[np.arange(nframe), t] = -gx.sum(1)
        return gx.reshape(x.shape).astype(x.dtype, copy=False)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss sum_d max(0, margin - x[y] + x[d])^p / C (times weight[y]);
    MultiMarginLossBackward0."""
    reduction = _F._reduction_enum(reduction, size_average, reduce)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    _F._not_differentiable("multi_margin_loss", target=target, weight=weight)
    x, t = input._data, target._data
    nframe, dim = _frames(x)
    if not (t.ndim <= 1 and t.size == nframe):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{nframe}], but got {list(t.shape)}. Input has shape "
                           f"{list(x.shape)}.")
    w = weight._data if weight is not None else None
    if w is not None and not (w.ndim <= 1 and w.size == dim):
        raise RuntimeError(f"inconsistent weight size, expected {dim} but got {list(w.shape)}")
    frame_shape = (nframe,) if t.ndim > 0 else ()
    if x.size:
        _check_float(x, "multi_margin_loss_cpu_kernel")
        _check_dtype(t.dtype, np.dtype(np.int64))
        if w is not None:
            _check_dtype(w.dtype, x.dtype)
        tf = t.reshape(-1)
        if ((tf < 0) | (tf >= dim)).any():
            raise RuntimeError("target out of range")
        h, _, _, _ = _mm_terms(x.reshape(nframe, dim), tf, p, float(margin), w)
        per = h.sum(1) / dim
    else:
        per = np.zeros(nframe, x.dtype)
    out = _reduced(per, reduction, frame_shape, x.dtype)
    if STATE.enabled and input._requires_grad:
        return record(out, MultiMarginLossBackward0(
            (edge_of(input),), (Saved(input), Saved(target), p, margin,
                                Saved(weight) if weight is not None else None, _ENUM[reduction])))
    return _make(out)


# --- multilabel_margin_loss -----------------------------------------------------------
def _ml_targets(t2, dim):
    """Per frame: the target mask (classes listed before the first -1) and the listed
    classes as a (nframe, dim) 0/1 count matrix (a class listed twice counts twice)."""
    n = t2.shape[0]
    valid = np.cumprod(t2 >= 0, axis=1).astype(bool)
    count = np.zeros((n, dim))
    rows = np.broadcast_to(np.arange(n)[:, None], t2.shape)
    np.add.at(count, (rows[valid], t2[valid]), 1.0)
    return count > 0, count


class MultilabelMarginLossBackward0(_NoDoubleBackward):
    """Backward of multilabel_margin_loss: every active pair (target j, other class d) adds
    the upstream gradient to x[d] and subtracts it from x[j]."""
    __slots__ = ()
    _kernel = "multilabel_margin_loss_backward"
    _fw_rule = no_forward_ad("multilabel_margin_loss_forward")
    _named_saved = {"self": (0, "tensor"), "target": (1, "tensor"), "is_target": (2, "tensor"),
                    "reduction": (3, "same")}

    def _grad_np(self, g, x):
        _, st, sit, red = self._saved
        nframe, dim = _frames(x)
        t2 = st.get(self, False).reshape(nframe, dim)
        is_t = sit._data.reshape(nframe, dim) > 0
        _, count = _ml_targets(t2, dim)
        x2 = x.reshape(nframe, dim)
        z = 1 - x2[:, :, None] + x2[:, None, :]       # (frame, target j, class d)
        act = (z > 0) & ~is_t[:, None, :]
        act = act * count[:, :, None]
        gf = _frame_grad(g, red, nframe) / dim
        gx = act.sum(1) - act.sum(2)
        return (gx * gf).reshape(x.shape).astype(x.dtype, copy=False)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss sum_{j in targets, d not a target} max(0, 1 - x[j] + x[d]) / C,
    targets listed up to the first -1; MultilabelMarginLossBackward0."""
    reduction = _F._reduction_enum(reduction, size_average, reduce)
    _F._not_differentiable("multilabel_margin_loss", target=target)
    x, t = input._data, target._data
    nframe, dim = _frames(x)
    if x.ndim <= 1:
        ok = t.ndim <= 1 and t.size == dim
    else:
        ok = t.ndim == 2 and t.shape == (nframe, dim)
    if not ok:
        raise RuntimeError(f"inconsistent target size: {list(t.shape)} for input of size: "
                           f"{list(x.shape)}")
    frame_shape = (nframe,) if (reduction == "none" and t.ndim > 1) else ()
    is_target = np.zeros(x.shape, x.dtype if x.dtype in D.FLOATING else np.float32)
    if x.size:
        if ((t < -1) | (t >= dim)).any():
            raise RuntimeError("argument #2 'target' is out of range")
        _check_float(x, "multilabel_margin_loss_forward_out_frame")
        _check_dtype(t.dtype, np.dtype(np.int64))
        t2 = t.reshape(nframe, dim)
        is_t, count = _ml_targets(t2, dim)
        x2 = x.reshape(nframe, dim)
        z = 1 - x2[:, :, None] + x2[:, None, :]
        h = np.where((z > 0) & ~is_t[:, None, :], z, 0) * count[:, :, None]
        per = h.sum((1, 2)) / dim
        is_target = is_t.reshape(x.shape).astype(x.dtype)
    else:
        per = np.zeros(nframe, x.dtype)
    out = _reduced(per, reduction, frame_shape, x.dtype)
    if STATE.enabled and input._requires_grad:
        return record(out, MultilabelMarginLossBackward0(
            (edge_of(input),), (Saved(input), Saved(target), _make(is_target), _ENUM[reduction])))
    return _make(out)


# --- multilabel_soft_margin_loss ------------------------------------------------------
def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)), averaged over classes: PyTorch's
    composite of logsigmoid, mul, sum and div."""
    if size_average is not None or reduce is not None:
        reduction = _F._reduction_enum(None, size_average, reduce)
    loss = -(target * _F.logsigmoid(input) + (1 - target) * _F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    if class_dim < 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    C = input.size(class_dim)
    loss = loss.sum(dim=class_dim) / C
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


for _f in (multi_margin_loss, multilabel_margin_loss, multilabel_soft_margin_loss):
    _f.__module__ = "dyngrad.nn.functional"  # listed and argument-checked as F's own
