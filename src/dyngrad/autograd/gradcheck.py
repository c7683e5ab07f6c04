"""Numerical gradient checks: compare analytic gradients (reverse mode, and forward mode with
``check_forward_ad``) with central finite differences, as ``torch.autograd.gradcheck``."""
from __future__ import annotations


import numpy as np
from .. import _warn
from .. import _dtype as _DT

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical gradients disagree."""


def _T():
    from .._tensor import Tensor
    return Tensor


def _tensors(inputs):
    Tensor = _T()
    if isinstance(inputs, Tensor):
        return (inputs,)
    return tuple(inputs)


def _flat_outputs(out):
    Tensor = _T()
    if isinstance(out, Tensor):
        return [out]
    return [o for o in out if isinstance(o, Tensor)]


def _diff(o):
    return o._data.dtype in _DT.INEXACT


def _fmt(m):
    Tensor = _T()
    return repr(Tensor._make(np.asarray(m)))


def _numerical(fn, inputs, eps):
    """J[i][j]: (numel of input i, numel of output j) by central differences."""
    Tensor = _T()
    outs0 = [o for o in _flat_outputs(fn(*inputs))]
    jac = []
    for t in inputs:
        if not (isinstance(t, Tensor) and t.requires_grad):
            jac.append(None)
            continue
        cols = [np.zeros((t._data.size, o._data.size)) for o in outs0]
        data = t._data
        for k in range(data.size):
            idx = np.unravel_index(k, data.shape)
            orig = data[idx].item()
            data[idx] = orig + eps
            plus = [o._data.astype(np.float64).reshape(-1) for o in _flat_outputs(fn(*inputs))]
            data[idx] = orig - eps
            minus = [o._data.astype(np.float64).reshape(-1) for o in _flat_outputs(fn(*inputs))]
            data[idx] = orig
            for j, (p, m) in enumerate(zip(plus, minus)):
                cols[j][k] = (p - m) / (2 * eps)
        jac.append(cols)
    return jac, outs0


def _analytical(fn, inputs):
    """Reverse mode: J[i][j] like ``_numerical`` (None for inputs not requiring grad)."""
    from . import grad as autograd_grad
    Tensor = _T()
    outs = _flat_outputs(fn(*inputs))
    diff_idx = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    jac = [None if i not in diff_idx else [np.zeros((inputs[i]._data.size, o._data.size))
                                           for o in outs] for i in range(len(inputs))]
    for j, o in enumerate(outs):
        if not o.requires_grad or not _diff(o):
            continue
        for c in range(o._data.size):
            go = np.zeros(o._data.shape, o._data.dtype)
            go.reshape(-1)[c] = 1
            gs = autograd_grad([o], [inputs[i] for i in diff_idx], [Tensor._make(go)],
                               retain_graph=True, allow_unused=True)
            for i, g in zip(diff_idx, gs):
                if g is not None:
                    jac[i][j][:, c] = g._data.astype(np.float64).reshape(-1)
    return jac


def _forward(fn, inputs):
    """Forward mode: J[i][j] from one-hot tangents through ``forward_ad``."""
    from . import forward_ad as fwAD
    Tensor = _T()
    jac = []
    for i, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            jac.append(None)
            continue
        cols = None
        for k in range(t._data.size):
            tan = np.zeros(t._data.shape, t._data.dtype)
            tan.reshape(-1)[k] = 1
            with fwAD.dual_level():
                args = list(inputs)
                args[i] = fwAD.make_dual(t.detach(), Tensor._make(tan))
                outs = _flat_outputs(fn(*args))
                if cols is None:
                    cols = [np.zeros((t._data.size, o._data.size)) for o in outs]
                for j, o in enumerate(outs):
                    tg = fwAD.unpack_dual(o).tangent
                    if tg is not None:
                        cols[j][k] = tg._data.astype(np.float64).reshape(-1)
        jac.append(cols)
    return jac


def _compare(kind, ana, num, rtol, atol):
    for i, (a_i, n_i) in enumerate(zip(ana, num)):
        if a_i is None or n_i is None:
            continue
        for j, (a, n) in enumerate(zip(a_i, n_i)):
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                head = ("Jacobian mismatch" if kind == "backward" else
                        "Jacobian computed with forward mode mismatch")
                raise GradcheckError(f"{head} for output {j} with respect to input {i},\n"
                                     f"numerical:{_fmt(n)}\nanalytical:{_fmt(a)}\n")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None) -> bool:
    """True when ``func``'s gradients match finite differences at ``inputs`` (double
    precision inputs recommended); raises ``GradcheckError`` unless ``raise_exception=False``.

    >>> import dyngrad as torch
    >>> x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    >>> torch.autograd.gradcheck(torch.tanh, (x,))
    True
    """
    Tensor = _T()
    inputs = _tensors(inputs)
    if not any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    for idx, t in enumerate(inputs):
        if isinstance(t, Tensor) and t.requires_grad and t._data.dtype not in (
                np.float64, np.complex128):
            _warn.warn(f"Input #{idx} requires gradient and is not a double precision floating "
                       f"point or complex. This check will likely fail if all the inputs are "
                       f"not of double precision floating point or complex. ", UserWarning)
    try:
        num, outs = _numerical(func, inputs, eps)
        if check_backward_ad:
            ana = _analytical(func, inputs)
            _compare("backward", ana, num, rtol, atol)
            again = _analytical(func, inputs)
            for a_i, b_i in zip(ana, again):
                for a, b in zip(a_i or (), b_i or ()):
                    if np.abs(a - b).max(initial=0.0) > nondet_tol:
                        raise GradcheckError(
                            "Backward is not reentrant, i.e., running backward with same input "
                            "and grad_output multiple times gives different values, although "
                            "analytical gradient matches numerical gradient.The tolerance for "
                            f"nondeterminism was {nondet_tol}.")
        if check_forward_ad:
            _compare("forward", _forward(func, inputs), num, rtol, atol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False) -> bool:
    """True when the gradients of ``func``'s gradients (create_graph) match finite
    differences: checks second derivatives.

    >>> import dyngrad as torch
    >>> x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    >>> torch.autograd.gradgradcheck(torch.sin, (x,))
    True
    """
    from . import grad as autograd_grad
    Tensor = _T()
    inputs = _tensors(inputs)
    outs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        rs = np.random.RandomState(0)
        grad_outputs = [Tensor._make(rs.standard_normal(o._data.shape).astype(o._data.dtype))
                        .requires_grad_(True) for o in outs if _diff(o)]
    grad_outputs = _tensors(grad_outputs)
    n_in = len(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_grads(*args):
        ins = args[:n_in]
        gos = args[n_in:]
        o = [x for x in _flat_outputs(func(*ins)) if _diff(x)]
        pairs = [(oo, g) for oo, g in zip(o, gos) if oo.requires_grad]
        gs = autograd_grad([p[0] for p in pairs], [ins[i] for i in diff], [p[1] for p in pairs],
                           create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_forward_ad=check_fwd_over_rev)
