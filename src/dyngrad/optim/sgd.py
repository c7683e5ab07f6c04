"""Stochastic gradient descent (momentum, dampening, Nesterov, weight decay, maximize)."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr, _sub_scaled_


class SGD(Optimizer):
    """p -= lr * d_p, with PyTorch's momentum buffer rule.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.8000, 0.8000])
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        lr = _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            sgd_group(self.state, group, self._grads(group))
        return self._stepped(loss)


def sgd_group(state, group, items) -> None:
    """SGD's update of one param group: ``items`` yields ``(p, data, gradient)`` (the gradient
    negated under ``maximize``) for each parameter to update; ``state`` is the optimizer's.
    Eager ``step`` and a compiled step's replay both run it."""
    lr = group["lr"]
    mom = group["momentum"]
    damp = group["dampening"]
    wd = group["weight_decay"]
    nesterov = group["nesterov"]
    for p, d, gd in items:
        if wd != 0:
            gd = gd + wd * d
        if mom != 0:
            st = state[p]
            buf = st.get("momentum_buffer")
            if buf is None:
                buf = Tensor._make(np.array(gd, copy=True))
                st["momentum_buffer"] = buf
            else:
                b = buf._data
                b *= mom
                b += (1 - damp) * gd
            gd = gd + mom * buf._data if nesterov else buf._data
        if lr == 1:
            d -= gd
        else:
            _sub_scaled_(d, gd, lr)
