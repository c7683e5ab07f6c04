"""NAdam (Adam with Nesterov momentum and momentum decay), following PyTorch's update."""
from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _check_adam_args, _check_lr, _lerp_, _weight_decay


class NAdam(Optimizer):
    """Adam whose step mixes the current gradient and the next momentum (Dozat's NAdam), with
    optional decoupled (AdamW-style) weight decay.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.ones(2))
    >>> opt = torch.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.data
    tensor([0.8944, 0.8944])
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        lr = _check_lr(lr, one_element=True)
        _check_adam_args(eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    def step(self, closure=None):
        """Update every parameter that has a gradient."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, (b1, b2) = group["lr"], group["betas"]
            eps, wd, psi = group["eps"], group["weight_decay"], group["momentum_decay"]
            decoupled = group.get("decoupled_weight_decay", False)
            for _, d, f, g, st, step in self._updates(group, ("exp_avg", "exp_avg_sq"),
                                                      {"mu_product": 1.0}):
                bc2 = 1 - b2 ** step
                g = _weight_decay(d, g, wd, lr, decoupled)
                mu = b1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
                mu_next = b1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
                # the running product keeps its tensor's dtype (float32, or the parameter's
                # dtype after load_state_dict), as PyTorch's in-place product does
                mp = st["mu_product"]._data
                st["mu_product"]._data = np.asarray(mp * mp.dtype.type(mu), mp.dtype)
                mu_prod = float(st["mu_product"]._data)
                mu_prod_next = mu_prod * mu_next
                m = st["exp_avg"]._data
                _lerp_(m, g, b1, f)
                v = st["exp_avg_sq"]._data
                v *= f(b2)
                v += f(1 - b2) * g * g
                denom = np.sqrt(v / f(bc2))
                denom += f(eps)
                d += f(-lr * (1.0 - mu) / (1.0 - mu_prod)) * (g / denom)
                d += f((-lr * mu_next) / (1.0 - mu_prod_next)) * (m / denom)
        return self._stepped(loss)
