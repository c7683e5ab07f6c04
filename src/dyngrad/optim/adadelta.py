"""Adadelta, following PyTorch's single-tensor update step by step."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr


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
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        lr = _check_lr(lr)
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
            for p in group["params"]:
                if p._grad is None:
                    continue
                d = p._data
                f = d.dtype.type
                g = -p._grad._data if group["maximize"] else p._grad._data
                st = self.state[p]
                if not st:
                    st["step"] = Tensor._make(np.asarray(0.0, np.float32))
                    st["square_avg"] = Tensor._make(np.zeros_like(d))
                    st["acc_delta"] = Tensor._make(np.zeros_like(d))
                st["step"]._data = np.asarray(st["step"]._data + 1, np.float32)
                if wd != 0:
                    g = g + f(wd) * d
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
                p._version[0] += 1
        for h in self._step_hooks:
            h(self, (), {})
        return loss
