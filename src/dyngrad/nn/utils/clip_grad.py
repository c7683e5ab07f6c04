"""Gradient clipping, computed as PyTorch's: each gradient's norm in its own dtype, the norm
of those norms, and a clip coefficient clamped at 1 that multiplies every gradient."""
from __future__ import annotations

import types

from ... import _warn
from ..._factories import tensor
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import shape as _shape
from ...ops.reduction import vector_norm


def _tensor_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (the norm of their norms)."""
    with no_grad():
        tensors = _tensor_list(tensors)
        norm_type = float(norm_type)
        if not tensors:
            return tensor(0.0)
        norms = [vector_norm(t, norm_type) for t in tensors]
        total = vector_norm(_shape.stack(norms), norm_type)
        if error_if_nonfinite and bool(total.isnan() | total.isinf()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                               "`parameters` is non-finite, so it cannot be clipped. To disable "
                               "this error and scale the gradients by the non-finite norm "
                               "anyway, set `error_if_nonfinite=False`")
        return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients of ``parameters`` by ``max_norm / (total_norm + 1e-6)``, at most 1."""
    with no_grad():
        grads = [p.grad for p in _tensor_list(parameters) if p.grad is not None]
        if not grads:
            return
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale gradients in place so their joint norm is at most ``max_norm``; returns the norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if generator and not parameters:
            _warn.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                       UserWarning)
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated name of ``clip_grad_norm_``."""
    _warn.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
               "`torch.nn.utils.clip_grad_norm_`.", FutureWarning)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _tensor_list(parameters):
            if p.grad is not None:  # two in-place steps, as PyTorch's foreach kernels
                p.grad.clamp_(min=-clip_value)
                p.grad.clamp_(max=clip_value)
