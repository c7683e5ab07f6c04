"""RAdam (rectified Adam), following PyTorch's single-tensor update step by step."""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr


class RAdam(Optimizer):
    """Adam whose adaptive term is switched on (and rectified) once the variance estimate is
    tractable; plain momentum SGD before that.  Optional decoupled weight decay.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.8000, 0.8000])
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
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
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2) = group["lr"], group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            decoupled = group.get("decoupled_weight_decay", False)
            for p in group["params"]:
                if p._grad is None:
                    continue
                d = p._data
                f = d.dtype.type
                g = -p._grad._data if group["maximize"] else p._grad._data
                st = self.state[p]
                if not st:
                    st["step"] = Tensor._make(np.asarray(0.0, np.float32))
                    st["exp_avg"] = Tensor._make(np.zeros_like(d))
                    st["exp_avg_sq"] = Tensor._make(np.zeros_like(d))
                st["step"]._data = np.asarray(st["step"]._data + 1, np.float32)
                step = float(st["step"]._data)
                if wd != 0:
                    if decoupled:
                        d *= f(1 - lr * wd)
                    else:
                        g = g + f(wd) * d
                m = st["exp_avg"]._data
                if 1 - b1 < 0.5:
                    m += (g - m) * f(1 - b1)
                else:
                    m[...] = g - (g - m) * f(b1)
                v = st["exp_avg_sq"]._data
                v *= f(b2)
                v += f(1 - b2) * g * g
                bc1 = 1 - b1 ** step
                bc2 = 1 - b2 ** step
                corrected = m / f(bc1)
                rho_inf = 2 / (1 - b2) - 1
                rho_t = rho_inf - 2 * step * (b2 ** step) / bc2
                if rho_t > 5.0:
                    rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                     / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    # PyTorch divides a Python number by a tensor as reciprocal() * number
                    adaptive = np.reciprocal(np.sqrt(v) + f(eps)) * f(bc2 ** 0.5)
                    d -= corrected * f(lr) * adaptive * f(rect)
                else:
                    d -= corrected * f(lr)
                p._version[0] += 1
        for h in self._step_hooks:
            h(self, (), {})
        return loss
