"""Gradient clipping."""
from __future__ import annotations

import math

import numpy as np

from ..._tensor import Tensor


def _grads(parameters):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p._grad for p in parameters if p._grad is not None]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale gradients in place so their joint norm is at most ``max_norm``; returns the norm."""
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return Tensor._make(np.asarray(0.0, np.float32))
    if norm_type == math.inf:
        total = max(float(np.abs(g._data).max()) for g in grads)
    else:
        total = float(sum(float((np.abs(g._data.astype(np.float64)) ** norm_type).sum())
                          for g in grads) ** (1.0 / norm_type))
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           f"is non-finite, so it cannot be clipped. To disable this error and "
                           f"scale the gradients by the non-finite norm anyway, set "
                           f"`error_if_nonfinite=False`")
    coef = max_norm / (total + 1e-6)
    if coef < 1:
        for g in grads:
            g._data *= g._data.dtype.type(coef)
            g._vc[0] += 1
    return Tensor._make(np.asarray(total, grads[0]._data.dtype))


clip_grad_norm = clip_grad_norm_


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    for g in _grads(parameters):
        np.clip(g._data, -clip_value, clip_value, out=g._data)
        g._vc[0] += 1
