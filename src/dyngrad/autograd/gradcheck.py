"""Numerical gradient checks: compare analytic gradients (reverse mode) with central finite
differences in float64."""
from __future__ import annotations

import numpy as np


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _tensors(inputs):
    from .._tensor import Tensor
    if isinstance(inputs, Tensor):
        return (inputs,)
    return tuple(inputs)


def _flat_outputs(out):
    from .._tensor import Tensor
    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor)]


def _numerical_jacobian(fn, inputs, eps):
    """J[i][j]: d(output j flattened) / d(input i flattened), by central differences."""
    jac = []
    if True:
        outs0 = _flat_outputs(fn(*inputs))
        sizes = [o._data.size for o in outs0]
        for t in inputs:
            if not (hasattr(t, "_data") and t._requires_grad):
                jac.append(None)
                continue
            flat = t._data.reshape(-1) if t._data.flags.c_contiguous else None
            J = np.zeros((t._data.size, sum(sizes)))
            for k in range(t._data.size):
                idx = np.unravel_index(k, t._data.shape)
                orig = t._data[idx].item()
                t._data[idx] = orig + eps
                plus = np.concatenate([o._data.astype(np.float64).reshape(-1)
                                       for o in _flat_outputs(fn(*inputs))] or [np.zeros(0)])
                t._data[idx] = orig - eps
                minus = np.concatenate([o._data.astype(np.float64).reshape(-1)
                                        for o in _flat_outputs(fn(*inputs))] or [np.zeros(0)])
                t._data[idx] = orig
                J[k] = (plus - minus) / (2 * eps)
            del flat
            jac.append(J)
    return jac, outs0


def _analytical_jacobian(fn, inputs, create_graph=False):
    from . import grad as autograd_grad
    from .._tensor import Tensor
    outs = _flat_outputs(fn(*inputs))
    diff_inputs = [t for t in inputs if isinstance(t, Tensor) and t._requires_grad]
    total = sum(o._data.size for o in outs)
    jac = [np.zeros((t._data.size, total)) for t in diff_inputs]
    col = 0
    for o in outs:
        for j in range(o._data.size):
            if not o._requires_grad:
                col += 1
                continue
            go = np.zeros(o._data.shape, o._data.dtype)
            go.reshape(-1)[j] = 1
            gs = autograd_grad([o], diff_inputs, [Tensor._make(go)], retain_graph=True,
                               allow_unused=True)
            for i, g in enumerate(gs):
                if g is not None:
                    jac[i][:, col] = g._data.astype(np.float64).reshape(-1)
            col += 1
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None) -> bool:
    """True when ``func``'s reverse-mode gradients match finite differences at ``inputs``.

    >>> import dyngrad as torch
    >>> x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    >>> torch.autograd.gradcheck(torch.tanh, (x,))
    True
    """
    inputs = _tensors(inputs)
    for t in inputs:
        if hasattr(t, "_data") and t._requires_grad and t._data.dtype != np.float64:
            import warnings
            warnings.warn("Input #0 requires gradient and is not a double precision floating "
                          "point. This check will likely fail if all the inputs are not of double "
                          "precision floating point. ", UserWarning, stacklevel=2)
    num, _ = _numerical_jacobian(func, inputs, eps)
    ana = _analytical_jacobian(func, inputs)
    num = [j for j in num if j is not None]
    for i, (a, n) in enumerate(zip(ana, num)):
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if raise_exception:
                raise GradcheckError(f"Jacobian mismatch for output 0 with respect to input {i},\n"
                                     f"numerical:{n}\nanalytical:{a}\n")
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False) -> bool:
    """True when the gradients of ``func``'s gradients (create_graph) match finite
    differences: checks second derivatives."""
    from . import grad as autograd_grad
    from .._tensor import Tensor
    inputs = _tensors(inputs)
    outs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        rs = np.random.RandomState(0)
        grad_outputs = [Tensor._make(rs.standard_normal(o._data.shape).astype(o._data.dtype))
                        .requires_grad_(True) for o in outs]
    grad_outputs = _tensors(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]

    def first_grads(*args):
        ins = args[:n_in]
        gos = args[n_in:]
        o = _flat_outputs(func(*ins))
        pairs = [(oo, g) for oo, g in zip(o, gos) if oo._requires_grad]
        gs = autograd_grad([p[0] for p in pairs], [ins[i] for i in diff], [p[1] for p in pairs],
                           create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
