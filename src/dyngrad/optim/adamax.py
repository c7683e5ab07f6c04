"""Adamax (Adam with an infinity-norm second moment), following PyTorch's update step by step."""
from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _check_adam_args, _check_lr, _lerp_, _weight_decay


class Adamax(Optimizer):
    """Adam's first moment over a running (decayed) maximum of gradient magnitudes.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.9000, 0.9000])
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        lr = _check_lr(lr, one_element=True)
        _check_adam_args(eps, betas, weight_decay)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2) = group["lr"], group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for _, d, f, g, st, step in self._updates(group, ("exp_avg", "exp_inf")):
                g = _weight_decay(d, g, wd)
                m = st["exp_avg"]._data
                _lerp_(m, g, b1, f)
                u = st["exp_inf"]._data
                u *= f(b2)
                np.maximum(u, np.abs(g) + f(eps), out=u)
                clr = lr / (1 - b1 ** step)
                d += f(-clr) * (m / u)
        return self._stepped(loss)
