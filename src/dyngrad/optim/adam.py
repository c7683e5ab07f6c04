"""Adam and AdamW, following PyTorch's single-tensor update step by step."""
from __future__ import annotations

import math

import numpy as np

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
            lr = group["lr"]
            b1, b2 = group["betas"]
            eps = group["eps"]
            wd = group["weight_decay"]
            ams = group["amsgrad"]
            decoupled = group.get("decoupled_weight_decay", False)
            buffers = ("exp_avg", "exp_avg_sq") + ("max_exp_avg_sq",) * bool(ams)
            for _, d, f, g, st, step in self._updates(group, buffers):
                g = _weight_decay(d, g, wd, lr, decoupled)
                m = st["exp_avg"]._data
                v = st["exp_avg_sq"]._data
                _lerp_(m, g, b1, f)
                v *= f(b2)
                v += f(1 - b2) * g * g
                bc1 = 1 - b1 ** step
                bc2 = 1 - b2 ** step
                step_size = lr / bc1
                bc2_sqrt = math.sqrt(bc2)
                if ams:
                    mx = st["max_exp_avg_sq"]._data
                    np.maximum(mx, v, out=mx)
                    denom = np.sqrt(mx) / f(bc2_sqrt) + f(eps)
                else:
                    denom = np.sqrt(v) / f(bc2_sqrt) + f(eps)
                d += f(-step_size) * (m / denom)
        return self._stepped(loss)


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
