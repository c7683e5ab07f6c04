"""Matrix functions built from other ops: ``matrix_power`` (PyTorch's composition of matmuls
and linalg.inv, so it records their nodes) and ``pinverse`` (the SVD pseudo-inverse with
PyTorch's LinalgPinvBackward0, differentiable twice)."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from ._formula import FormulaNode
from .._record import STATE, Saved, Tensor, edge_of, notify, record

_make = Tensor._make


def _pkg():
    import importlib
    return importlib.import_module(__name__.split(".")[0])


def _matrix_power(p, input, n):
    """``input`` (a square matrix, or a batch of them) to the integer power ``n``: identity
    for 0, a clone for 1, linalg.inv for negative ``n``, else PyTorch's sequence of matmuls."""
    t = _pkg()
    if not isinstance(input, Tensor):
        raise D.not_tensor("matrix_power", "input", 1, input)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' (position {1 + p}) must be int, not "
                        f"{D.type_name(n)}")
    n = int(n)
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {d.shape[-2]} by {d.shape[-1]} matrices")
    if n == 0:
        r = input.clone(memory_format=t.contiguous_format)
        return r.copy_(t.eye(d.shape[-2], dtype=D.FROM_NP[d.dtype]))
    if n == 1:
        return input.clone(memory_format=t.contiguous_format)
    if n == -1:
        return t.linalg.inv(input)
    a = t.linalg.inv(input) if n < 0 else input
    n = abs(n)
    if n == 2:
        return t.matmul(a, a)
    if n == 3:
        return t.matmul(t.matmul(a, a), a)
    z = result = None
    while n > 0:
        bit = n % 2
        n //= 2
        z = a if z is None else t.matmul(z, z)
        if bit == 1:
            result = z if result is None else t.matmul(result, z)
    return result


# --- pinverse ------------------------------------------------------------------------------------
class LinalgPinvBackward0(FormulaNode):
    """PyTorch's pinv_backward (written for the smaller of the matrix's two sizes); with its
    conjugate transposes it is PyTorch's complex gradient itself, so no conjugating twin."""
    __slots__ = ()
    _saved_outputs = {1: 0}
    _holomorphic = False

    def formula(self, g, a, pinv):
        m, n = a.shape[-2], a.shape[-1]
        pinv_h = pinv.mH
        g_h = g.mH
        if m <= n:
            k = g_h.matmul(pinv)
            k_pinv_h = k.matmul(pinv_h)
            return (-(pinv.matmul(k)).mH + k_pinv_h - a.matmul(pinv).matmul(k_pinv_h)
                    + pinv_h.matmul(pinv).matmul(g_h - k.matmul(a))),
        k = pinv.matmul(g_h)
        pinv_h_k = pinv_h.matmul(k)
        return (-(k.matmul(pinv)).mH + pinv_h_k - pinv_h_k.matmul(pinv).matmul(a)
                + (g_h - a.matmul(k)).matmul(pinv).matmul(pinv_h)),


def _pinv_np(d, rcond):
    """The pseudo-inverse of the last two dims: singular values at or below ``rcond`` times
    the largest are treated as zero."""
    m, n = d.shape[-2], d.shape[-1]
    if d.size == 0:
        return np.zeros(d.shape[:-2] + (n, m), d.dtype)
    u, s, vh = np.linalg.svd(d, full_matrices=False)
    tol = rcond * s[..., :1]
    with np.errstate(divide="ignore"):
        s_inv = np.where(s > tol, 1 / np.where(s > tol, s, 1), 0).astype(s.dtype)
    vh_h = np.conj(np.swapaxes(vh, -1, -2))
    u_h = np.conj(np.swapaxes(u, -1, -2))
    return np.matmul(vh_h * s_inv[..., None, :], u_h).astype(d.dtype, copy=False)


def _pinverse(p, input, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse of a matrix (or batch); LinalgPinvBackward0."""
    if not isinstance(input, Tensor):
        raise D.not_tensor("pinverse", "input", 1, input)
    if isinstance(rcond, bool) or not isinstance(rcond, (int, float, np.number)):
        raise TypeError(f"pinverse(): argument 'rcond' (position {1 + p}) must be float, not "
                        f"{D.type_name(rcond)}")
    d = input._data
    if d.ndim < 2 or d.dtype not in (np.float32, np.float64, np.complex64, np.complex128):
        raise RuntimeError(f"linalg.pinv({D.scalar_type_name(d.dtype)}{{{list(d.shape)}}}): "
                           f"expected a tensor with 2 or more dimensions of float, double, "
                           f"cfloat or cdouble types")
    from .linalg_more import _col_major
    data = _col_major(_pinv_np(d, float(rcond)), False)
    if STATE.enabled and input._requires_grad:
        res = record(data, None)
        res._grad_fn = LinalgPinvBackward0((edge_of(input),), (Saved(input), Saved(res, True)))
        return notify(res)
    return _make(data)


def _register(name, impl):
    from .shape_more import dual
    return dual(name, impl)


matrix_power = _register("matrix_power", _matrix_power)
pinverse = _register("pinverse", _pinverse)
