"""Helpers shared by the distributions: broadcasting, probs/logits conversion, lazy
properties, and the linear algebra MultivariateNormal needs (Cholesky factor, triangular
solve), written with differentiable dyngrad ops so gradients flow through them."""
from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import numpy as np

from .. import linalg
from .._dtype import get_default_dtype, np_finfo
from .._factories import arange, eye, randn, tensor
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from ..nn.functional import softmax
from ..ops.unary import log, log1p, sigmoid
from ..ops.shape import broadcast_shapes, broadcast_tensors, stack

__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits", "lazy_property"]

euler_constant = 0.5772156649015329


def broadcast_all(*values):
    """Broadcast tensors and numbers together (numbers take the first tensor's dtype, or the
    default dtype)."""
    if not all(isinstance(v, Tensor) or isinstance(v, Number) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        dtype = get_default_dtype()
        for v in values:
            if isinstance(v, Tensor):
                dtype = v.dtype
                break
        values = [v if isinstance(v, Tensor) else tensor(v, dtype=dtype) for v in values]
    return broadcast_tensors(*values)


def _standard_normal(shape, dtype):
    return randn(tuple(shape), dtype=dtype)


class _Gaussian:
    """What Normal and MultivariateNormal share (listed before their base class): ``mean`` and
    ``mode`` are ``loc``, and ``_eps`` draws the standard-normal noise ``rsample`` transforms."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    def _eps(self, sample_shape):
        return _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)


def _sum_rightmost(value, dim):
    """Sum out the ``dim`` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return sigmoid(logits)
    return softmax(logits, dim=-1)


def clamp_probs(probs):
    eps = float(np_finfo(probs._data.dtype).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    if is_binary:
        return log(ps) - log1p(-ps)
    return log(ps)


class lazy_property:
    """Computed on first access (with grad enabled) and cached on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


# -- linear algebra from differentiable ops ------------------------------------------------


def _cholesky(A):
    """Lower Cholesky factor of (a batch of) symmetric positive-definite matrices, column by
    column (Cholesky-Banachiewicz) with dyngrad ops, so it is differentiable (twice, too).
    Raises ``torch.linalg.LinAlgError`` with PyTorch's message when a leading minor is not
    positive-definite."""
    a = A.detach()._data
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError("linalg.cholesky: A must be batches of square matrices, but they are "
                           f"{a.shape[-2] if a.ndim >= 2 else 1} by {a.shape[-1]} matrices")
    flat = a.reshape((-1,) + a.shape[-2:])
    for m in flat:
        try:
            np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            order = next(k for k in range(1, m.shape[0] + 1)
                         if not _is_pd(m[:k, :k]))
            pre = "" if flat.shape[0] == 1 else "(Batch element 0): "
            raise linalg.LinAlgError(
                f"linalg.cholesky: {pre}The factorization could not be completed because the "
                f"input is not positive-definite (the leading minor of order {order} is not "
                f"positive-definite).") from None
    n = a.shape[-1]
    # read the symmetric part (exactly A for symmetric input), so the gradient is symmetric
    # like PyTorch's cholesky backward
    A = (A + A.mT) * 0.5
    cols = []
    for j in range(n):
        s = A[..., :, j]
        for k in range(j):
            s = s - cols[k] * cols[k][..., j:j + 1]
        d = s[..., j:j + 1].sqrt()
        mask = (arange(n) >= j).to(A.dtype)
        cols.append(s / d * mask)
    return stack(cols, -1)


def _is_pd(m):
    try:
        np.linalg.cholesky(m)
        return True
    except np.linalg.LinAlgError:
        return False


def _solve_triangular(A, B, upper=False):
    """``linalg.solve_triangular(A, B, upper=upper)`` (left side): solves with the triangle of
    ``A`` only, so the gradient with respect to ``A`` is triangular as PyTorch's is."""
    T = A.triu() if upper else A.tril()
    shape = broadcast_shapes(tuple(T.shape[:-2]), tuple(B.shape[:-2]))
    T = T.expand(tuple(shape) + tuple(T.shape[-2:]))
    B = B.expand(tuple(shape) + tuple(B.shape[-2:]))
    return linalg.solve(T, B)


def _cholesky_inverse(L):
    """(L L^T)^-1 from a lower Cholesky factor, differentiable in every entry of ``L`` (as
    PyTorch's ``cholesky_inverse``): L^-T L^-1 with L^-1 from a general solve."""
    n = L.shape[-1]
    Linv = linalg.solve(L, eye(n, dtype=L.dtype).expand(tuple(L.shape)))
    return Linv.mT @ Linv
