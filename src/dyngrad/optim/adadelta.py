"""Adadelta, following PyTorch's single-tensor update step by step."""
from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _check_lr, _weight_decay


class Adadelta(Optimizer):
    """Scale each step by the ratio of running RMS of past updates to running RMS of gradients.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.Adadelta([w])
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.9968, 0.9968])
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        lr = _check_lr(lr, one_element=True)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable, foreach=foreach,
                                      differentiable=differentiable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for _, d, f, g, st, _ in self._updates(group, ("square_avg", "acc_delta")):
                g = _weight_decay(d, g, wd)
                sq = st["square_avg"]._data
                acc = st["acc_delta"]._data
                sq *= f(rho)
                sq += f(1 - rho) * g * g
                std = np.sqrt(sq + f(eps))
                delta = np.sqrt(acc + f(eps))
                delta /= std
                delta *= g
                acc *= f(rho)
                acc += f(1 - rho) * delta * delta
                d += f(-lr) * delta
        return self._stepped(loss)
