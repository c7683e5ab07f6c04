"""Matrix products: mm, matmul (every shape case), addmm, t."""
from __future__ import annotations

import numpy as np

from . import op
from ._graph import STATE, Node, Saved, Tensor, edge_of, record, sum_to, NO_EDGE
from . import _dual as X
from .pointwise import _pair

_make = Tensor._make


def _shape_str(s):
    return "x".join(str(v) for v in s)


class MmBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sa, sb = self._saved
        ga = gb = None
        if self.next_functions[0][0] is not None:
            ga = X.matmul(g, X.transpose_last(sb.get(self, graph)))
        if self.next_functions[1][0] is not None:
            gb = X.matmul(X.transpose_last(sa.get(self, graph)), g)
        return ga, gb


@op()
def mm(input, mat2):
    """Matrix product of two 2-D tensors; MmBackward0."""
    a, b = input._data, mat2._data
    if a.ndim != 2:
        raise RuntimeError(f"self must be a matrix, got a {a.ndim}-D tensor of shape {list(a.shape)}")
    if b.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got a {b.ndim}-D tensor of shape {list(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(a.shape)} and "
                           f"{_shape_str(b.shape)})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {input.dtype} != "
                           f"{mat2.dtype}")
    r = a @ b
    if STATE.enabled and (input._requires_grad or mat2._requires_grad):
        return record(r, MmBackward0((edge_of(input), edge_of(mat2)),
                                     (Saved(input) if mat2._requires_grad else None,
                                      Saved(mat2) if input._requires_grad else None)))
    return _make(r)


class MatmulBackward(Node):
    """Backward of a general matmul: batch dims broadcast, 1-D operands promoted and squeezed."""
    __slots__ = ()

    def _bw(self, g, graph):
        sa, sb = self._saved
        a = sa.get(self, graph)
        b = sb.get(self, graph)
        ash, bsh = tuple(a.shape), tuple(b.shape)
        a2 = a.reshape((1,) + ash) if len(ash) == 1 else a
        b2 = b.reshape(bsh + (1,)) if len(bsh) == 1 else b
        g2 = g
        if len(ash) == 1 and len(bsh) == 1:
            return g * b, g * a
        if len(ash) == 1:
            g2 = g2.reshape(tuple(g.shape[:-1]) + (1, g.shape[-1]))
        if len(bsh) == 1:
            g2 = g2.reshape(tuple(g2.shape) + (1,))
        ga = gb = None
        if self.next_functions[0][0] is not None:
            ga = sum_to(X.matmul(g2, X.transpose_last(b2)), a2.shape).reshape(ash)
        if self.next_functions[1][0] is not None:
            gb = sum_to(X.matmul(X.transpose_last(a2), g2), b2.shape).reshape(bsh)
        return ga, gb


class DotBackward0(MatmulBackward):
    __slots__ = ()


class MvBackward0(MatmulBackward):
    __slots__ = ()


class BmmBackward0(MatmulBackward):
    __slots__ = ()


class UnsafeViewBackward0(MatmulBackward):
    __slots__ = ()


class SqueezeBackward4(MatmulBackward):
    __slots__ = ()


class ExpandBackward0Matmul(MatmulBackward):
    __slots__ = ()


@op(methods=("__matmul__",))
def matmul(input, other):
    """Matrix product with NumPy's/PyTorch's shape rules (1-D, 2-D, batched, broadcast)."""
    if not isinstance(other, Tensor):
        return NotImplemented
    a, b = input._data, other._data
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    if a.ndim == 2 and b.ndim == 2:
        return mm(input, other)
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if ka != kb:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                               f"[{b.shape[0]}] to have the same number of elements, but got "
                               f"{a.shape[0]} and {b.shape[0]} elements respectively")
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({_shape_str(a.shape if a.ndim > 1 else (1,) + a.shape)} and "
                           f"{_shape_str(b.shape if b.ndim > 1 else b.shape + (1,))})")
    ad, bd, casts = _pair(input, other)
    try:
        r = np.matmul(ad, bd)
    except ValueError as e:
        raise RuntimeError(f"matmul: shapes {list(a.shape)} and {list(b.shape)} cannot be "
                           f"multiplied ({e})") from None
    r = np.asarray(r)
    if STATE.enabled and (input._requires_grad or other._requires_grad):
        if a.ndim == 1 and b.ndim == 1:
            cls = DotBackward0
        elif a.ndim == 2 and b.ndim == 1:
            cls = MvBackward0
        elif a.ndim == 1:
            cls = SqueezeBackward4
        elif a.ndim == 3 and b.ndim == 3 and a.shape[0] == b.shape[0]:
            cls = BmmBackward0
        else:
            cls = UnsafeViewBackward0
        node = cls((edge_of(input), edge_of(other)), (Saved(input), Saved(other)))
        if casts is not None:
            node._casts = casts
        return record(r, node)
    return _make(r)


@op()
def bmm(input, mat2):
    """Batched matrix product of two 3-D tensors; BmmBackward0."""
    if input.dim() != 3 or mat2.dim() != 3:
        raise RuntimeError(f"batch1 must be a 3D tensor, got shapes {list(input.shape)} and "
                           f"{list(mat2.shape)}")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2)


@op()
def mv(input, vec):
    """Matrix-vector product; MvBackward0."""
    if input.dim() != 2 or vec.dim() != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.dim()}, {vec.dim()}")
    return matmul(input, vec)


@op()
def dot(input, other):
    """Dot product of two 1-D tensors; DotBackward0."""
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    return matmul(input, other)


class AddmmBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        s1, s2, bshape, beta, alpha = self._saved
        gb = g1 = g2 = None
        nf = self.next_functions
        if nf[0][0] is not None:
            gb = sum_to(g if beta == 1 else g * beta, bshape)
        if nf[1][0] is not None:
            m2 = s2.get(self, graph)
            g1 = X.matmul(g, X.transpose_last(m2))
            if alpha != 1:
                g1 = g1 * alpha
        if nf[2][0] is not None:
            m1 = s1.get(self, graph)
            g2 = X.matmul(X.transpose_last(m1), g)
            if alpha != 1:
                g2 = g2 * alpha
        return gb, g1, g2


@op()
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2); AddmmBackward0."""
    a, b = mat1._data, mat2._data
    if a.ndim != 2 or b.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {a.ndim}-D tensor")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(a.shape)} and "
                           f"{_shape_str(b.shape)})")
    r = a @ b
    if alpha != 1:
        r *= alpha
    c = input._data
    if beta == 1:
        r += c
    elif beta != 0:
        r += beta * c
    if STATE.enabled and (input._requires_grad or mat1._requires_grad or mat2._requires_grad):
        node = AddmmBackward0((edge_of(input), edge_of(mat1), edge_of(mat2)),
                              (Saved(mat1) if mat2._requires_grad else None,
                               Saved(mat2) if mat1._requires_grad else None,
                               c.shape, beta, alpha))
        return record(r, node)
    return _make(r)
