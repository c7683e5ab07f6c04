"""Matrix functions built from other ops: ``matrix_power`` (PyTorch's composition of matmuls
and linalg.inv, so it records their nodes) and ``pinverse`` (PyTorch's linalg_pinv: the SVD
pseudo-inverse with LinalgPinvBackward0, differentiable twice)."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from . import _dual as X
from ._spec import defop
from .._record import Tensor

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
    shape = input.shape
    if len(shape) < 2:
        raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                           "dimensions.")
    if shape[-1] != shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they "
                           f"are {shape[-2]} by {shape[-1]} matrices")
    if n == 0:
        r = input.clone(memory_format=t.contiguous_format)
        return r.copy_(t.eye(shape[-2], dtype=input.dtype))
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


def _batch_matrices(spec, arrays, params):
    """The forward works on the last two dims: a leading batch axis passes through."""
    return spec.forward(*arrays, **params)


@defop("pinverse", node="LinalgPinvBackward0", saved=("self", "result"), method=False,
       holomorphic=False, batch=_batch_matrices)
def pinverse(self, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse of a matrix (or batch): PyTorch's linalg_pinv, whose
    node, LinalgPinvBackward0, is the only one recorded; singular values at or below
    ``rcond`` times the largest count as zero."""
    from .decompositions import _col_major
    if self.ndim < 2 or self.dtype not in (np.float32, np.float64, np.complex64,
                                           np.complex128):
        raise RuntimeError(f"linalg.pinv({D.scalar_type_name(self.dtype)}{{{list(self.shape)}}}): "
                           f"expected a tensor with 2 or more dimensions of float, double, "
                           f"cfloat or cdouble types")
    return _col_major(_pinv_np(self, float(rcond)), False)


@pinverse.backward
def _(ctx, grad):
    # PyTorch's pinv_backward (written for the smaller of the matrix's two sizes); with its
    # conjugate transposes it is PyTorch's complex gradient itself
    a, pinv = ctx.self, ctx.result
    mm, mh = X.matmul, X.adjoint_last
    m, n = X.data(a).shape[-2:]
    pinv_h, g_h = mh(pinv), mh(grad)
    if m <= n:
        k = mm(g_h, pinv)
        k_pinv_h = mm(k, pinv_h)
        return (-mh(mm(pinv, k)) + k_pinv_h - mm(mm(a, pinv), k_pinv_h)
                + mm(mm(pinv_h, pinv), g_h - mm(k, a))),
    k = mm(pinv, g_h)
    pinv_h_k = mm(pinv_h, k)
    return (-mh(mm(k, pinv)) + pinv_h_k - mm(mm(pinv_h_k, pinv), a)
            + mm(mm(g_h - mm(a, k), pinv), pinv_h)),


@pinverse.jvp
def _(ctx, tangent):
    # the derivative of a pseudo-inverse of constant rank (PyTorch's pinv_jvp):
    # -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P
    a, pinv = ctx.self, ctx.result
    mm, mh = X.matmul, X.adjoint_last
    da_h, pinv_h = mh(tangent), mh(pinv)
    return (-mm(mm(pinv, tangent), pinv)
            + mm(mm(pinv, pinv_h), da_h - mm(da_h, mm(a, pinv)))
            + mm(da_h - mm(mm(pinv, a), da_h), mm(pinv_h, pinv)))


_pinverse_spec = pinverse


def _pinverse(p, input, rcond=1e-15):
    """The Moore-Penrose pseudo-inverse of a matrix (or batch); LinalgPinvBackward0."""
    if not isinstance(input, Tensor):
        raise D.not_tensor("pinverse", "input", 1, input)
    if isinstance(rcond, bool) or not isinstance(rcond, (int, float, np.number)):
        raise TypeError(f"pinverse(): argument 'rcond' (position {1 + p}) must be float, not "
                        f"{D.type_name(rcond)}")
    return _pinverse_spec.declared(input, float(rcond))


def _register(name, impl):
    from .shape import dual
    return dual(name, impl, composite=True)


def _register_declared(spec, impl):
    from .shape import declared_dual
    return declared_dual(spec, impl)


matrix_power = _register("matrix_power", _matrix_power)
pinverse = _register_declared(_pinverse_spec, _pinverse)
