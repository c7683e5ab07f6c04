"""ASGD (averaged stochastic gradient descent), following PyTorch's single-tensor update."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr, _weight_decay


class ASGD(Optimizer):
    """SGD with a decaying step size ``eta`` and a running average ``ax`` of the iterates
    (averaging starts after ``t0`` steps).

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.ASGD([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.8000, 0.8000])
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        lr = _check_lr(lr)
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            wd = group["weight_decay"]
            for _, d, f, g, st, step in self._updates(group, ("ax",), {"eta": lr, "mu": 1.0}):
                g = _weight_decay(d, g, wd)
                eta = float(st["eta"]._data)
                d *= f(1 - lambd * eta)
                d += f(-eta) * g
                mu = float(st["mu"]._data)
                ax = st["ax"]._data
                if mu != 1:
                    ax += (d - ax) * f(mu)
                else:
                    ax[...] = d
                # copied into the existing 0-d tensors (float32 unless a load cast them)
                new_eta = np.float32(lr / ((1 + lambd * lr * step) ** alpha))
                new_mu = np.float32(1 / max(1, step - t0))
                st["eta"]._data = np.asarray(new_eta, st["eta"]._data.dtype)
                st["mu"]._data = np.asarray(new_mu, st["mu"]._data.dtype)
        return self._stepped(loss)
