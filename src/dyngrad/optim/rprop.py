"""Rprop (resilient backpropagation), following PyTorch's update step by step."""
from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _check_lr


def _real(a):
    """A complex array as the real array of its (re, im) pairs (Rprop treats them apart)."""
    return a.view(a.real.dtype) if a.dtype.kind == "c" else a


class Rprop(Optimizer):
    """Each weight's step size grows by ``etas[1]`` while its gradient keeps its sign and
    shrinks by ``etas[0]`` when the sign flips (then that step is skipped); only the sign of
    the gradient is used.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.Rprop([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.9000, 0.9000])
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        lr = _check_lr(lr, one_element=True)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            eminus, eplus = group["etas"]
            lo, hi = group["step_sizes"]
            for _, d, _, g, st, step in self._updates(group, ("prev", "step_size")):
                d, g = _real(d), _real(g)  # g is negated under maximize already
                prev, size = _real(st["prev"]._data), _real(st["step_size"]._data)
                if step == 1:
                    size.fill(group["lr"])
                sign = np.sign(g * prev)
                factor = np.where(sign > 0, eplus, np.where(sign < 0, eminus, 1.0))
                size *= factor.astype(size.dtype, copy=False)
                np.clip(size, lo, hi, out=size)
                g = np.where(sign < 0, 0, g).astype(g.dtype, copy=False)
                d -= np.sign(g) * size
                prev[...] = g
        return self._stepped(loss)
