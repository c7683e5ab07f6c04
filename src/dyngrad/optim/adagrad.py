"""Adagrad (with learning-rate decay), following PyTorch's update step by step."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr, _weight_decay


class Adagrad(Optimizer):
    """Scale each coordinate's step by the root of its summed squared gradients.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.Adagrad([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.9000, 0.9000])
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        lr = _check_lr(lr)
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = Tensor._make(np.asarray(0.0, np.float32))
                st["sum"] = Tensor._make(np.full_like(p._data, group["initial_accumulator_value"]))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, decay, wd, eps = group["lr"], group["lr_decay"], group["weight_decay"], group["eps"]
            # the state is made in __init__
            for _, d, f, g, st, step in self._updates(group, init=False):
                g = _weight_decay(d, g, wd)
                clr = lr / (1 + (step - 1) * decay)
                s = st["sum"]._data
                s += g * g
                d -= f(clr) * (g / (np.sqrt(s) + f(eps)))
        return self._stepped(loss)
