"""``dyngrad.linalg``: PyTorch's linear-algebra namespace (norms, inv, det, slogdet, solve)."""
from __future__ import annotations

import math

import numpy as np

from ._tensor import Tensor
from . import _dtype as D
from .ops.linalg import (LinAlgError, det, inverse as inv, linalg_slogdet as slogdet, solve,  # noqa: F401
                         matmul, RT_SLOGDET)
from .ops.reduction import vector_norm, dims_of, norm_dtype as _norm_dtype
from .ops.decompositions import svdvals
from ._factories import zeros

__all__ = ["norm", "vector_norm", "matrix_norm", "inv", "det", "slogdet", "solve", "matmul",
           "LinAlgError"]


def _matrix_norm_checks(A, dim, dtype, low_precision):
    """PyTorch's checks of linalg.matrix_norm's input, dims (wrapped) and dtype."""
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    dt = A.dtype.np  # (the logical tensor's: under vmap this runs on a batched one)
    if dt not in D.INEXACT:
        raise RuntimeError(f"linalg.matrix_norm: Expected a floating point or complex tensor as "
                           f"input. Got {D.scalar_type_name(dt)}")
    if not low_precision and dt.itemsize < (8 if dt.kind == "c" else 4):
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{D.scalar_type_name(dt)}")
    dim = [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    if len(dim) != 2:
        shown = dim[0] if len(dim) == 1 else "[" + ", ".join(str(d) for d in dim) + "]"
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {shown}")
    (d0,), (d1,) = dims_of(dim[0], A.dim()), dims_of(dim[1], A.dim())
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if dtype is not None:
        _norm_dtype(dt, dtype, "linalg.matrix_norm")
    return d0, d1


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """Matrix norm over the two dims ``dim``: 'fro', 'nuc', 1, -1, inf, -inf, 2, -2, composed
    as PyTorch composes it: 'fro' one vector 2-norm over both dims; 1 / inf the vector 1-norm
    over one dim then amax (amin for -1 / -inf) over the other; 'nuc' / 2 / -2 the singular
    values of the input permuted to put ``dim`` last, then their sum / amax / amin."""
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        d0, d1 = _matrix_norm_checks(A, dim, dtype, ord == "fro")
        if ord == "fro":
            return vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
    else:
        o = float(ord)
        if abs(o) not in (1.0, 2.0, math.inf):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        d0, d1 = _matrix_norm_checks(A, dim, dtype, abs(o) != 2.0)
        if abs(o) != 2.0:
            # inf is the 1-norm of the transpose; the second dim shifts when the first
            # reduction removes a dim before it
            r0, r1 = (d1, d0) if math.isinf(o) else (d0, d1)
            if not keepdim and r0 < r1:
                r1 -= 1
            v = vector_norm(A, 1.0, r0, keepdim, dtype=dtype)
            return _max_or_zero(v, r1, keepdim) if o > 0 else v.amin(r1, keepdim)
    # 'nuc', 2, -2: the singular values, the two dims moved to the end
    A_ = A.to(dtype) if dtype is not None else A
    n = A_.dim()
    perm = [i for i in range(n) if i not in (d0, d1)] + [d0, d1]
    sv = svdvals(A_.permute(*perm))
    if ord == "nuc":
        r = sv.sum(-1, keepdim)
    else:
        r = _max_or_zero(sv, -1, keepdim) if ord > 0 else sv.amin(-1, keepdim)
    if keepdim:
        rev = [0] * n
        for k, p in enumerate(perm):
            rev[p] = k
        r = r.unsqueeze(-1).permute(*rev)
    return r


def _max_or_zero(v: Tensor, dim: int, keepdim: bool) -> Tensor:
    """The largest value along ``dim``; over an empty dim PyTorch's matrix norms give zeros
    that record no graph (where amax refuses)."""
    if v.shape[dim]:
        return v.amax(dim, keepdim)
    shape = list(v.shape)
    if keepdim:
        shape[dim] = 1
    else:
        del shape[dim]
    return zeros(shape, dtype=v.dtype)


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """Vector norm for 1-D input or an int ``dim``, matrix norm for 2-D input or a 2-tuple ``dim``
    (with ``ord=None`` the 2-norm of the flattened input)."""
    if dim is not None and not isinstance(dim, (int, np.integer)):
        dim = tuple(dim)
    if ord is None:  # PyTorch's node shows the 2.0 linalg.norm passes
        return vector_norm(A, 2.0, dim, keepdim, dtype=dtype)
    if isinstance(dim, tuple) and len(dim) == 2 or (dim is None and A.dim() == 2):
        return matrix_norm(A, ord, dim if dim is not None else (-2, -1), keepdim, dtype=dtype)
    if dim is None and A.dim() != 1:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.dim()}D.")
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got '{ord}'")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


from .ops.products import linalg_cross as cross, multi_dot  # noqa: E402,F401
from .ops.decompositions import (  # noqa: E402,F401
    linalg_svd as svd, matrix_exp, eigh, eigvalsh, cholesky, cholesky_ex, qr)

__all__ += ["cross", "multi_dot", "svd", "svdvals", "matrix_exp", "eigh", "eigvalsh", "cholesky",
            "cholesky_ex", "qr"]

from ._out import expose as _expose  # noqa: E402

_expose(globals(), __all__, "linalg_")
