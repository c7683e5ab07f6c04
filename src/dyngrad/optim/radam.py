"""RAdam (rectified Adam), following PyTorch's single-tensor update step by step."""
from __future__ import annotations

import math

import numpy as np

from .optimizer import Optimizer, _check_adam_args, _check_lr, _lerp_, _weight_decay


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
        lr = _check_lr(lr, one_element=True)
        _check_adam_args(eps, betas, weight_decay)
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
            for _, d, f, g, st, step in self._updates(group, ("exp_avg", "exp_avg_sq")):
                g = _weight_decay(d, g, wd, lr, decoupled)
                m = st["exp_avg"]._data
                _lerp_(m, g, b1, f)
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
        return self._stepped(loss)
