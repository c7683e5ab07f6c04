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


@defop("mse_loss", node="MseLossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction"), function=False, method=False, broadcast=True,
       batch=_batch_reduced)
def mse_loss(self, target, reduction=1):
    """Mean squared error; MseLossBackward0."""
    dt = loss_dtype(self, target, "mse_cpu", False)
    diff = self.astype(dt, copy=False) - target.astype(dt, copy=False)
    return reduce(diff * diff, reduction)


def _mse_grads(grad, x, t, reduction, need_x, need_t):
    diff = x - t
    gi = reduce_grad(grad, tuple(diff.shape), reduction, X.numel(diff)) * diff * 2
    return (gi if need_x else None, -gi if need_t else None)


@mse_loss.backward
def _(ctx, grad):
    return _mse_grads(grad, ctx.self, ctx.target, ctx.reduction, ctx.needs(0), ctx.needs(1))


def _mse_fast_bw(self, g, graph):
    """The node's backward without a Ctx (the same formula; self unpacked before target)."""
    sx, st, red, sa, sb = self._saved
    x = sx.get(self, graph)
    t = st.get(self, graph)
    nf = self.next_functions
    gx, gt = _mse_grads(g, x, t, red, nf[0][0] is not None, nf[1][0] is not None)
    return (gx if gx is None or tuple(gx.shape) == sa else sum_to(gx, sa),
            gt if gt is None or tuple(gt.shape) == sb else sum_to(gt, sb))


mse_loss.node_cls._bw = _mse_fast_bw


@mse_loss.jvp
def _(ctx, ta, tb):
    diff = ctx.self - ctx.target
    td = ta if tb is None else tb * -1 if ta is None else ta - tb
    return _reduce_t(2 * diff * td, ctx.reduction)


def _reduce_t(loss, reduction):
    """A Tensor's reduction (forward-mode rules)."""
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


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
