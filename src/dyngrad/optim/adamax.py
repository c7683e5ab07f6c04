"""Adamax (Adam with an infinity-norm second moment), following PyTorch's update step by step."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr


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
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2) = group["lr"], group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
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
                    st["exp_inf"] = Tensor._make(np.zeros_like(d))
                st["step"]._data = np.asarray(st["step"]._data + 1, np.float32)
                step = float(st["step"]._data)
                if wd != 0:
                    g = g + f(wd) * d
                m = st["exp_avg"]._data
                if 1 - b1 < 0.5:  # lerp_ as PyTorch computes it on either side of 0.5
                    m += (g - m) * f(1 - b1)
                else:
                    m[...] = g - (g - m) * f(b1)
                u = st["exp_inf"]._data
                u *= f(b2)
                np.maximum(u, np.abs(g) + f(eps), out=u)
                clr = lr / (1 - b1 ** step)
                d += f(-clr) * (m / u)
                p._version[0] += 1
        for h in self._step_hooks:
            h(self, (), {})
        return loss
