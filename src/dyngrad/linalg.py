"""``dyngrad.linalg``: PyTorch's linear-algebra namespace (norms, inv, det, slogdet, solve)."""
from __future__ import annotations

import math

import numpy as np

from ._tensor import Tensor
from .ops import _dual as X
from .ops._graph import STATE, Node, edge_of, record
from .ops.linalg import LinAlgError, det, inverse as inv, slogdet, solve, matmul, RT_SLOGDET  # noqa: F401
from .ops.reduction import vector_norm, dims_of

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve", "matmul",
           "LinAlgError"]


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """Matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, inf, -inf, 2, -2."""
    if dtype is not None:
        A = A.to(dtype)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    (d0,), (d1,) = dims_of(dim[0], A.dim()), dims_of(dim[1], A.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim)
    if ord == "nuc" or ord in (2, -2):
        n = A.dim()
        m = A if (d0, d1) == (n - 2, n - 1) else \
            A.permute(*[i for i in range(n) if i not in (d0, d1)], d0, d1)
        s = _svdvals(m)
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            r = r.unsqueeze(min(d0, d1)).unsqueeze(max(d0, d1))
        return r
    if ord in (1, -1, math.inf, -math.inf):
        # 1: max column sum (sum over rows d0, then max over d1); inf: max row sum
        rs, red = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(rs, keepdim=keepdim)
        red2 = red if keepdim or red < rs else red - 1
        return s.amax(red2, keepdim=keepdim) if ord > 0 else s.amin(red2, keepdim=keepdim)
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")


class LinalgSvdBackward0(Node):
    """Gradient of the singular values: U diag(g) V^T (distinct singular values)."""
    __slots__ = ()

    def _bw(self, g, graph):
        u, vt = self._saved
        gm = (u * np.asarray(X.data(g))[..., None, :]) @ vt
        return X.const(gm, g),


def _svdvals(m: Tensor) -> Tensor:
    """Singular values of the last two dims (descending)."""
    u, s, vt = np.linalg.svd(m._data, full_matrices=False)
    if STATE.enabled and m._requires_grad:
        return record(s, LinalgSvdBackward0((edge_of(m),), (u, vt)))
    return Tensor._make(s)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """Vector norm for 1-D input or an int ``dim``, matrix norm for 2-D input or a 2-tuple ``dim``
    (with ``ord=None`` the 2-norm of the flattened input)."""
    if dim is not None and not isinstance(dim, (int, np.integer)):
        dim = tuple(dim)
    if ord is None:
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(dim, tuple) and len(dim) == 2 or (dim is None and A.dim() == 2):
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if dim is None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got '{ord}'")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


from .ops.products import linalg_cross as cross, multi_dot  # noqa: E402,F401
from .ops.linalg_more import (  # noqa: E402,F401
    linalg_svd as svd, svdvals, matrix_exp, eigh, eigvalsh, cholesky, cholesky_ex, qr)

__all__ += ["cross", "multi_dot", "svd", "svdvals", "matrix_exp", "eigh", "eigvalsh", "cholesky",
            "cholesky_ex", "qr"]
