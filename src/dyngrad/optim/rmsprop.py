"""RMSprop (optionally centered, with momentum), following PyTorch's update step by step."""
from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _check_lr, _lerp_, _weight_decay


class RMSprop(Optimizer):
    """Divide the gradient by a running root-mean-square of recent gradients.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.9000, 0.9000])
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        lr = _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, mom, centered = group["weight_decay"], group["momentum"], group["centered"]
            buffers = ("square_avg",) + ("momentum_buffer",) * (mom > 0) + ("grad_avg",) * centered
            for _, d, f, g, st, _ in self._updates(group, buffers):
                g = _weight_decay(d, g, wd)
                sq = st["square_avg"]._data
                sq *= f(alpha)
                sq += f(1 - alpha) * g * g
                if centered:
                    ga = st["grad_avg"]._data
                    _lerp_(ga, g, alpha, f)
                    avg = np.sqrt(sq - ga * ga)
                else:
                    avg = np.sqrt(sq)
                avg += f(eps)
                if mom > 0:
                    buf = st["momentum_buffer"]._data
                    buf *= f(mom)
                    buf += g / avg
                    d -= f(lr) * buf
                else:
                    d -= f(lr) * (g / avg)
        return self._stepped(loss)
