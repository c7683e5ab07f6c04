"""Adam and AdamW, following PyTorch's single-tensor update step by step."""
from __future__ import annotations

import math

import numpy as np

from .._dtype import BF16
from .optimizer import Optimizer, _check_adam_args, _check_lr, _lerp_, _weight_decay


class Adam(Optimizer):
    """Adam with bias correction, optional amsgrad and (L2) weight decay."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        lr = _check_lr(lr)
        _check_adam_args(eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay or self._decoupled))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            adam_group(self, group)
        return self._stepped(loss)


def adam_group(opt, group, items=None) -> None:
    """Adam's (and AdamW's) update of one param group of optimizer ``opt``; ``items``: the
    ``(p, data, gradient)`` to update instead of those with a ``.grad`` (a compiled step's
    arrays).  Eager ``step`` and a compiled step's replay both run it."""
    lr = group["lr"]
    b1, b2 = group["betas"]
    eps = group["eps"]
    wd = group["weight_decay"]
    ams = group["amsgrad"]
    decoupled = group.get("decoupled_weight_decay", False)
    buffers = ("exp_avg", "exp_avg_sq") + ("max_exp_avg_sq",) * bool(ams)
    for _, d, f, g, st, step in opt._updates(group, buffers, items=items):
        g = _weight_decay(d, g, wd, lr, decoupled)
        m = st["exp_avg"]._data
        v = st["exp_avg_sq"]._data
        bc1 = 1 - b1 ** step
        bc2 = 1 - b2 ** step
        step_size = lr / bc1
        bc2_sqrt = math.sqrt(bc2)
        if d.dtype == BF16:
            mx = st["max_exp_avg_sq"]._data if ams else None
            _bf16_step(d, g, m, v, mx, b1, b2, eps, step_size, bc2_sqrt)
            continue
        _lerp_(m, g, b1, f)
        v *= f(b2)
        v += f(1 - b2) * g * g
        if ams:
            mx = st["max_exp_avg_sq"]._data
            np.maximum(mx, v, out=mx)
            denom = np.sqrt(mx) / f(bc2_sqrt) + f(eps)
        else:
            denom = np.sqrt(v) / f(bc2_sqrt) + f(eps)
        d += f(-step_size) * (m / denom)


def _bf16_step(d, g, m, v, mx, b1, b2, eps, step_size, bc2_sqrt):
    """Adam's update of bfloat16 state, rounded to bfloat16 after each of PyTorch's tensor
    ops (lerp_, mul_, addcmul_, sqrt, div, add_, addcdiv_), each computed in float32 with
    float32 scalars (add_'s number converted to bfloat16 first, as PyTorch's add does)."""
    f = np.float32
    g, m32 = g.astype(f), m.astype(f)
    w = f(1 - b1)
    m[...] = m32 + w * (g - m32) if w < 0.5 else g - (g - m32) * (f(1) - w)
    v[...] = v.astype(f) * f(b2)
    v[...] = v.astype(f) + f(1 - b2) * g * g
    if mx is not None:
        np.maximum(mx, v, out=mx)
        v = mx
    denom = np.sqrt(v.astype(f)).astype(BF16)
    denom = (denom.astype(f) / f(bc2_sqrt)).astype(BF16)
    denom = (denom.astype(f) + f(BF16.type(eps))).astype(BF16)
    d[...] = d.astype(f) + f(-step_size) * (m.astype(f) / denom.astype(f))


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
