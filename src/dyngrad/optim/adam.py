"""Adam and AdamW, following PyTorch's single-tensor update step by step."""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr


class Adam(Optimizer):
    """Adam with bias correction, optional amsgrad and (L2) weight decay."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        lr = _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
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
            for p in group["params"]:
                if p._grad is None:
                    continue
                d = p._data
                g = p._grad._data
                if group["maximize"]:
                    g = -g
                st = self.state[p]
                if not st:
                    st["step"] = Tensor._make(np.asarray(0.0, np.float32))
                    st["exp_avg"] = Tensor._make(np.zeros_like(d))
                    st["exp_avg_sq"] = Tensor._make(np.zeros_like(d))
                    if ams:
                        st["max_exp_avg_sq"] = Tensor._make(np.zeros_like(d))
                st["step"]._data = np.asarray(st["step"]._data + 1, np.float32)
                step = float(st["step"]._data)
                if wd != 0:
                    if decoupled:
                        d *= d.dtype.type(1 - lr * wd)
                    else:
                        g = g + d.dtype.type(wd) * d
                m = st["exp_avg"]._data
                v = st["exp_avg_sq"]._data
                m += (g - m) * d.dtype.type(1 - b1)
                v *= d.dtype.type(b2)
                v += d.dtype.type(1 - b2) * g * g
                bc1 = 1 - b1 ** step
                bc2 = 1 - b2 ** step
                step_size = lr / bc1
                bc2_sqrt = math.sqrt(bc2)
                if ams:
                    mx = st["max_exp_avg_sq"]._data
                    np.maximum(mx, v, out=mx)
                    denom = np.sqrt(mx) / d.dtype.type(bc2_sqrt) + d.dtype.type(eps)
                else:
                    denom = np.sqrt(v) / d.dtype.type(bc2_sqrt) + d.dtype.type(eps)
                d += d.dtype.type(-step_size) * (m / denom)
                p._version[0] += 1
        for h in self._step_hooks:
            h(self, (), {})
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (default 0.01)."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)
