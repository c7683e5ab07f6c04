"""ASGD (averaged stochastic gradient descent), following PyTorch's single-tensor update."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr


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
            for p in group["params"]:
                if p._grad is None:
                    continue
                d = p._data
                f = d.dtype.type
                g = -p._grad._data if group["maximize"] else p._grad._data
                st = self.state[p]
                if not st:
                    st["step"] = Tensor._make(np.asarray(0.0, np.float32))
                    st["eta"] = Tensor._make(np.asarray(lr, np.float32))
                    st["mu"] = Tensor._make(np.asarray(1.0, np.float32))
                    st["ax"] = Tensor._make(np.zeros_like(d))
                st["step"]._data = np.asarray(st["step"]._data + 1, np.float32)
                step = float(st["step"]._data)
                if wd != 0:
                    g = g + f(wd) * d
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
                p._version[0] += 1
        for h in self._step_hooks:
            h(self, (), {})
        return loss
