"""The losses PyTorch computes with a node of their own (``MseLossBackward0``...), declared as
ops of arrays; ``nn.functional`` gives them PyTorch's signatures (reduction strings, legacy
``size_average``/``reduce``).  ``reduction`` is PyTorch's enum: 0 none, 1 mean, 2 sum."""
from __future__ import annotations

import numpy as np

from . import _dual as X
from .. import _dtype as D
from ._spec import batch_aligned, defop
from .._fperr import quiet_off, quiet_on
from .._record import STATE, Saved, Tensor, edge_of, record, sum_to

_make = Tensor._make
_add_reduce = np.add.reduce
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def reduce(loss, reduction):
    """The elementwise ``loss`` reduced (``reduction`` a string or PyTorch's enum); bfloat16
    is summed in float32, as PyTorch's kernels do."""
    if type(reduction) is str:
        reduction = REDUCTIONS[reduction]
    if reduction == 0:
        return loss
    acc = np.float32 if loss.dtype == D.BF16 else loss.dtype
    if reduction == 2:
        return np.asarray(_add_reduce(loss, None, acc), loss.dtype)
    if not loss.size:
        return np.asarray(np.nan, loss.dtype)
    if loss.dtype.kind == "c":  # (NumPy's mean divides a complex sum its own way)
        return np.asarray(loss.mean(dtype=acc), loss.dtype)
    # what mean computes, without its wrapper
    return np.asarray(_add_reduce(loss, None, acc) / loss.size, loss.dtype)


def reduce_grad(g, shape, reduction, n):
    """Gradient of the reduction: a scalar gradient expanded back to the elementwise loss."""
    if type(reduction) is str:
        reduction = REDUCTIONS[reduction]
    if reduction == 1:
        return X.expand_to(g / n, shape) if n else X.expand_to(g, shape)
    if reduction == 2:
        return X.expand_to(g, shape)
    return g


def loss_dtype(x, t, kernel, complex_ok=True):
    """The dtype of a pointwise loss of arrays ``x`` and ``t`` (PyTorch's promotion of the
    two); an integer result (and a complex one, ``complex_ok=False``) has no kernel, as in
    PyTorch."""
    rt = x.dtype if x.dtype is t.dtype else D.promote(D.FROM_NP[x.dtype], D.FROM_NP[t.dtype]).np
    if rt not in D.INEXACT or (complex_ok is False and rt.kind == "c"):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(rt)}\'')
    return rt


def _batch_reduced(spec, arrays, params):
    """Batching rule of a pointwise loss: unreduced on the aligned inputs, then each sample
    reduced on its own."""
    p = dict(params)
    red = p.get("reduction", 1)
    red = REDUCTIONS.get(red, red)
    p["reduction"] = 0
    r = spec.forward(*batch_aligned(arrays), **p)
    if red == 0:
        return r
    axes = tuple(range(1, r.ndim))
    acc = np.float32 if r.dtype == D.BF16 else r.dtype
    out = r.mean(axis=axes, dtype=acc) if red == 1 else r.sum(axis=axes, dtype=acc)
    return np.asarray(out, r.dtype)


def _diff_loss(spec, dl, check=None):
    """The backward (also as the node's fast backward, without a Ctx) and forward-mode rule of
    declared loss ``spec`` of d = self - target, elementwise then reduced: ``dl(d, *params)``
    is the elementwise loss's derivative (params: the saved values after ``reduction``);
    ``check(x, t, need_x)`` PyTorch's checks of its backward."""
    names = spec.saved[3:]

    def grads(grad, x, t, reduction, params, need_x, need_t):
        if check is not None:
            check(x, t, need_x)
        d = x - t
        gd = reduce_grad(grad, tuple(d.shape), reduction, X.numel(d)) * dl(d, *params)
        return (gd if need_x else None, -gd if need_t else None)

    @spec.backward
    def _(ctx, grad):
        return grads(grad, ctx.self, ctx.target, ctx.reduction,
                     tuple(getattr(ctx, n) for n in names), ctx.needs(0), ctx.needs(1))

    def fast_bw(self, g, graph):
        sv = self._saved  # self, target, reduction, params..., the inputs' shapes
        x = sv[0].get(self, graph)
        t = sv[1].get(self, graph)
        nf = self.next_functions
        gx, gt = grads(g, x, t, sv[2], sv[3:-2], nf[0][0] is not None, nf[1][0] is not None)
        sa, sb = sv[-2], sv[-1]
        return (gx if gx is None or tuple(gx.shape) == sa else sum_to(gx, sa),
                gt if gt is None or tuple(gt.shape) == sb else sum_to(gt, sb))

    spec.node_cls._bw = fast_bw

    @spec.jvp
    def _(ctx, ta, tb):
        td = ta if tb is None else -tb if ta is None else ta - tb
        return _reduce_t(dl(ctx.self - ctx.target, *(getattr(ctx, n) for n in names)) * td,
                         ctx.reduction)


def _reduce_t(loss, reduction):
    """A Tensor's reduction (forward-mode rules)."""
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


def _diff(self, target, kernel, complex_ok=True):
    dt = loss_dtype(self, target, kernel, complex_ok)
    return self.astype(dt, copy=False) - target.astype(dt, copy=False)


@defop("mse_loss", node="MseLossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction"), function=False, method=False, broadcast=True,
       batch=_batch_reduced)
def mse_loss(self, target, reduction=1):
    """Mean squared error; MseLossBackward0."""
    d = _diff(self, target, "mse_cpu", False)
    return reduce(d * d, reduction)


_diff_loss(mse_loss, lambda d: d * 2)


@defop("smooth_l1_loss", node="SmoothL1LossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction", "beta"), function=False, method=False,
       broadcast=True, batch=_batch_reduced)
def smooth_l1_loss(self, target, reduction=1, beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2; SmoothL1LossBackward0."""
    d = _diff(self, target, "smooth_l1_cpu", False)
    a = np.abs(d)
    return reduce(np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta).astype(
        d.dtype, copy=False), reduction)


def _smooth_l1_dl(d, beta):
    dd = X.data(d)
    inside = X.const((np.abs(dd) < beta).astype(dd.dtype) / beta, d)
    outside = X.const(np.where(np.abs(dd) < beta, 0, np.sign(dd)).astype(dd.dtype), d)
    return d * inside + outside


_diff_loss(smooth_l1_loss, _smooth_l1_dl)


@defop("huber_loss", node="HuberLossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction", "delta"), function=False, method=False,
       broadcast=True, batch=_batch_reduced)
def huber_loss(self, target, reduction=1, delta=1.0):
    """0.5 d^2 where |d| <= delta, else delta (|d| - delta / 2), in the input's dtype;
    HuberLossBackward0."""
    dt = loss_dtype(self, target, "huber_cpu")
    if dt != self.dtype and (self.dtype not in D.INEXACT or
                             (dt.kind == "c" and self.dtype.kind != "c")):
        raise cast_error(dt, self.dtype)
    if dt.kind == "c":
        raise NotImplementedError(f'"huber_cpu" not implemented for '
                                  f"'{D.scalar_type_name(dt)}'")
    d = self.astype(dt, copy=False) - target.astype(dt, copy=False)
    a = np.abs(d)
    return reduce(np.where(a <= delta, 0.5 * d * d, delta * (a - 0.5 * delta)).astype(
        self.dtype, copy=False), reduction)


def _huber_dl(d, delta):
    dd = X.data(d)
    inside = X.const((np.abs(dd) <= delta).astype(dd.dtype), d)
    outside = X.const(np.where(np.abs(dd) <= delta, 0, delta * np.sign(dd)).astype(dd.dtype), d)
    return d * inside + outside


def _huber_check(x, t, need_x):
    """PyTorch's huber_loss_backward needs one dtype."""
    xd, td = X.data(x).dtype, X.data(t).dtype
    if xd != td:
        if need_x:
            same_dtype(td, xd)
        same_dtype(xd, td)


_diff_loss(huber_loss, _huber_dl, _huber_check)


def same_dtype(found, expected):
    if found != expected:
        raise RuntimeError(f"Found dtype {D.scalar_type_name(found)} but expected "
                           f"{D.scalar_type_name(expected)}")


def cast_error(result, out):
    return RuntimeError(f"result type {D.scalar_type_name(result)} can't be cast to the desired "
                        f"output type {D.scalar_type_name(out)}")


def call(spec, input, target, *params):
    """Declared loss ``spec`` of ``input`` and ``target`` and its other arguments (in the
    declaration's order, each saved after the two tensors): for tensors of one float dtype and
    shape, its forward and node without the general path's argument binding (the hot case);
    else that path."""
    x, t = input._data, target._data
    if x.dtype is not t.dtype or x.dtype.kind != "f" or x.shape != t.shape:
        return spec.fn(input, target, *params)
    tok = quiet_on()
    try:
        r = spec.forward(x, t, *params)
    finally:
        quiet_off(tok)
    if STATE.enabled and (input._requires_grad or target._requires_grad):
        return record(r, spec.node_cls((edge_of(input), edge_of(target)),
                                       (Saved(input), Saved(target)) + params +
                                       (x.shape, t.shape)))
    return _make(r)
