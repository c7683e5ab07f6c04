"""Functions that work on both ndarrays and Tensors, for backward formulas: on arrays they
call NumPy (plain backward), on Tensors the differentiable dyngrad op (create_graph)."""
from __future__ import annotations

import numpy as np

from .._dtype import BF16
from .._tensor import Tensor
from .._record import broadcast_view as _broadcast_view


_PKG = []


def _t():
    """The dyngrad package namespace (imported lazily: this module loads before it)."""
    if not _PKG:
        import importlib
        _PKG.append(importlib.import_module(__name__.split(".")[0]))
    return _PKG[0]


def _pick(np_fn, name):
    def f(x, *args, **kwargs):
        if not isinstance(x, Tensor) or np.isscalar(x):
            return np_fn(x, *args, **kwargs)
        return getattr(_t(), name)(x, *args, **kwargs)

    f.__name__ = name
    return f


exp = _pick(np.exp, "exp")
log = _pick(np.log, "log")
sin = _pick(np.sin, "sin")
cos = _pick(np.cos, "cos")
def _sign_np(d):
    """PyTorch's sign, (0 < x) - (x < 0): NaN gives 0."""
    d = np.asarray(d)
    return (d > 0).astype(d.dtype) - (d < 0).astype(d.dtype)


sign = _pick(_sign_np, "sign")


def _sgn_np(d):
    """PyTorch's sgn: sign for real values, z / |z| (0 at 0) for complex ones."""
    d = np.asarray(d)
    if d.dtype.kind != "c":
        return _sign_np(d)
    a = np.abs(d)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(a == 0, 0, d / np.where(a == 0, 1, a)).astype(d.dtype, copy=False)


sgn = _pick(_sgn_np, "sgn")
sqrt = _pick(np.sqrt, "sqrt")
tanh = _pick(np.tanh, "tanh")
abs = _pick(np.abs, "abs")
sigmoid = _pick(lambda a: 1.0 / (1.0 + np.exp(-a)), "sigmoid")


def where(cond, a, b):
    """Elementwise choice; ``cond`` is a bool array or bool Tensor."""
    if not isinstance(cond, Tensor) and not isinstance(a, Tensor):
        r = np.where(cond, a, b)
        return r.astype(a.dtype, copy=False) if r.dtype != a.dtype else r
    F = _t()
    c = cond if not isinstance(cond, np.ndarray) else F.from_numpy(cond)
    return F.where(c, a, b)


def zeros_like(a):
    if not isinstance(a, Tensor):
        return np.zeros_like(a)
    return _t().zeros_like(a)


def matmul(a, b):
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return matmul_np(a, b)
    return _t().matmul(a, b)


def einsum_np(eq, *arrays, **kwargs):
    """``np.einsum`` (which has no bfloat16 loops): bfloat16 operands are computed in float32
    and the result rounded to bfloat16 once, as PyTorch's products are."""
    if not any(a.dtype == BF16 for a in arrays):
        return np.einsum(eq, *arrays, **kwargs)
    r = np.einsum(eq, *(a.astype(np.float32) if a.dtype == BF16 else a for a in arrays),
                  **kwargs)
    return np.asarray(r).astype(BF16)


def matmul_np(a, b):
    """``a @ b`` on arrays; NumPy gives two bfloat16 operands a float32 product (accumulated
    in float32, as PyTorch's kernels do), rounded here to bfloat16 as PyTorch's result is."""
    r = a @ b
    if a.dtype == BF16 and b.dtype == BF16:
        return np.asarray(r).astype(BF16)
    return r


def transpose_last(a):
    """Swap the last two dimensions (``.mT``)."""
    if not isinstance(a, Tensor):
        return a.swapaxes(-1, -2)
    return a.transpose(-1, -2)


def adjoint_last(a):
    """The conjugate transpose of the last two dimensions (``.mH``; ``.mT`` for real values)."""
    if not isinstance(a, Tensor):
        a = a.swapaxes(-1, -2)
        return np.conj(a) if a.dtype.kind == "c" else a
    return a.mH if a.is_complex() else a.transpose(-1, -2)


def expand_to(g, shape):
    """Broadcast ``g`` to ``shape`` (read-only view for arrays; ExpandBackward for Tensors)."""
    if not isinstance(g, Tensor):
        return _broadcast_view(g, shape)
    return g.expand(*shape)


def unsqueeze_dims(g, dims, ndim):
    """Re-insert the reduced ``dims`` (sorted, non-negative) as size-1 dimensions."""
    if not isinstance(g, Tensor):
        return np.expand_dims(g, dims)
    for d in sorted(dims):
        g = g.unsqueeze(d)
    return g


cosh = _pick(np.cosh, "cosh")
sinh = _pick(np.sinh, "sinh")
floor = _pick(np.floor, "floor")
trunc = _pick(np.trunc, "trunc")
log1p = _pick(np.log1p, "log1p")


def data(x):
    """The ndarray behind ``x`` (for masks and constants computed from saved values)."""
    return x._data if isinstance(x, Tensor) else np.asarray(x)


def c_order(a):
    """``a`` as a C-ordered ndarray with its shape kept (np.ascontiguousarray makes 0-d 1-d)."""
    a = np.asarray(a)
    return a if a.flags.c_contiguous else a.copy(order="C")


def const(arr, like):
    """``arr`` (an ndarray) as a constant of the same kind as ``like``."""
    if isinstance(like, Tensor):
        return _t().from_numpy(c_order(arr))
    return arr


def sum_dims(x, dims, keepdim=True):
    """Sum over ``dims`` (a tuple of non-negative axes); bfloat16 accumulates in float32."""
    if not isinstance(x, Tensor):
        if x.dtype is BF16:
            return x.sum(axis=dims, keepdims=keepdim, dtype=np.float32).astype(BF16)
        return x.sum(axis=dims, keepdims=keepdim)
    return x.sum(dim=dims, keepdim=keepdim)


def einsum(eq, *ops):
    if not any(isinstance(o, Tensor) for o in ops):
        return einsum_np(eq, *ops)
    return _t().einsum(eq, *(o if isinstance(o, Tensor) else _t().from_numpy(o) for o in ops))


def flip(x, dims):
    """Reverse ``x`` along ``dims``."""
    if not isinstance(x, Tensor):
        return np.flip(x, dims)
    return x.flip(dims)


def numel(x):
    """The element count of ``x``."""
    return x.numel() if isinstance(x, Tensor) else x.size


def zeros(shape, like, dtype=None):
    """Zeros of ``shape`` (NumPy ``dtype``, else ``like``'s): an ndarray, or a constant Tensor
    when ``like`` is a Tensor (made by a step a compiled capture records, when one runs)."""
    if isinstance(like, Tensor):
        if TWIN_HOOK[0] is not None:
            return TWIN_HOOK[0](_zeros_np, _zeros_tensor, (
                tuple(shape), like, None if dtype is None else np.dtype(dtype).str), {})
        return Tensor._make(np.zeros(shape, dtype or like._data.dtype))
    return np.zeros(shape, dtype or like.dtype)


def _zeros_np(shape, like, dtype=None):
    return np.zeros(shape, dtype or like.dtype)


def _zeros_tensor(shape, like, dtype=None):
    return Tensor._make(np.zeros(shape, dtype or like._data.dtype))


_zeros_tensor.__name__ = "zeros"


def clamp_min(x, m):
    """``x`` clamped below at the number ``m`` (``x.clamp(min=m)`` on Tensors)."""
    if not isinstance(x, Tensor):
        return np.maximum(x, m)
    return x.clamp(min=m)


# set while dyngrad.compile captures a program: ``hook(fast, diff, args, kwargs)`` runs a
# twin's (or ``Ctx.op``'s) recorded form and records its NumPy kernel for replay
TWIN_HOOK: list = [None]


def twin(fast, diff):
    """One function from a NumPy kernel ``fast`` and its differentiable twin ``diff`` (same
    arguments), chosen by the first positional argument that is an ndarray or a Tensor (in a
    backward formula: the incoming gradient or a saved value): ``diff`` for a Tensor."""
    def f(*args, **kwargs):
        for a in args:
            if a.__class__ is np.ndarray:
                break
            if isinstance(a, Tensor):
                if TWIN_HOOK[0] is not None:
                    return TWIN_HOOK[0](fast, diff, args, kwargs)
                return diff(*args, **kwargs)
        return fast(*args, **kwargs)

    f.__name__ = getattr(diff, "__name__", "twin")
    f.__doc__ = diff.__doc__
    return f


def cat(parts, dim):
    """Join ``parts`` along ``dim`` (CatBackward0 when they are Tensors)."""
    if not any(isinstance(p, Tensor) for p in parts):
        return np.concatenate(parts, axis=dim)
    return _t().cat(parts, dim)


def stack(parts, dim):
    """Stack ``parts`` along a new ``dim`` (StackBackward0 when they are Tensors)."""
    if not any(isinstance(p, Tensor) for p in parts):
        return np.stack(parts, axis=dim)
    return _t().stack(parts, dim)


def assign(dst, src):
    """Write ``src`` into ``dst`` (a view of a buffer being built): ``dst[...] = src`` on
    arrays, ``copy_`` (recorded) on Tensors."""
    if isinstance(dst, Tensor):
        dst.copy_(src)
    else:
        dst[...] = src


def sum_all(x):
    """The sum of every element of ``x`` (a 0-d array of its dtype; SumBackward0 on Tensors)."""
    if not isinstance(x, Tensor):
        return np.asarray(x.sum(), dtype=x.dtype)
    return x.sum()


def outer(a, b):
    """The outer product of two vectors (``ger``)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        return np.multiply.outer(a, b)
    return _t().outer(a, b)


def product_rule(a, b, ta, tb, prod):
    """The tangent of ``prod(a, b)``, a product linear in each operand (dot, mm, cross...):
    ``prod(ta, b) + prod(a, tb)`` over the operands that have a tangent (None: none)."""
    out = None if ta is None else prod(ta, b)
    if tb is not None:
        out = prod(a, tb) if out is None else out + prod(a, tb)
    return out


conj = _pick(np.conj, "conj")
real = _pick(np.real, "real")
