"""Matrix products (mm, matmul in every shape case, bmm, mv, dot, outer, addmm, einsum) and
the differentiable dense routines behind ``dyngrad.linalg`` (inv, det, slogdet, solve)."""
from __future__ import annotations

from functools import partial

import numpy as np

from . import composite
from .._dtype import BF16
from .._record import (RECORD_HOOKS, STATE, Node, Saved, Tensor, edge_of, edges_first, record,
                      sum_to)
from . import _dual as X
from ._spec import (batch_aligned, defop, every_output, formula_backward, front, pair_public,
                    quick)
from .reduction import return_type
from .. import _dtype as D
from .._fperr import quiet_off, quiet_on

_make = Tensor._make


def _shape_str(s):
    return "x".join(str(v) for v in s)


@defop("mm", node="MmBackward0", inputs=("self", "mat2"), saved=("self", "mat2"),
       saved_for={"self": (1,), "mat2": (0,)}, batch=lambda spec, arrays, params: np.matmul(
           *arrays))
def mm(self, mat2):
    """Matrix product of two 2-D tensors; MmBackward0."""
    if self.ndim != 2 or mat2.ndim != 2 or self.shape[1] != mat2.shape[0] or \
            self.dtype is not mat2.dtype:
        _mm_check(self, mat2)
    if self.dtype == np.bool_:
        raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
    return self @ mat2


@partial(formula_backward, mm)
def _(grad, needs, self, mat2):
    return (X.matmul(grad, X.transpose_last(mat2)) if needs[0] else None,
            X.matmul(X.transpose_last(self), grad) if needs[1] else None)


@mm.jvp
def _(ctx, ta, tb):
    return X.product_rule(ctx.self, ctx.mat2, ta, tb, X.matmul)


# PyTorch's node also shows each operand's sizes and strides
mm.node_cls._named_saved.update({"self_sym_sizes": (0, "shape"), "self_sym_strides": (0, "strides"),
                                 "mat2_sym_sizes": (1, "shape"),
                                 "mat2_sym_strides": (1, "strides")})
mm, _mm_method = pair_public(mm)


def _mm_check(a, b):
    """mm's argument errors, with PyTorch's messages (only reached when something is off)."""
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(a.shape)} and "
                           f"{_shape_str(b.shape)})")
    _same_dtype(a, b)


def _same_dtype(a, b):
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{D.c_name(a.dtype)} != {D.c_name(b.dtype)}")


def _matmul_check(a, b, ka, kb, fold_t=False, unfolded=False):
    """matmul's size and dtype errors as PyTorch raises them: from dot, mv (addmv), mm or bmm,
    whichever the operands' dimensions route to (``fold_t``: mm of ``b.mT`` folded by
    ``a.mT``).  True when there is no error: PyTorch's bmm of an empty operand skips its
    dtype check and gives the second operand's dtype."""
    sn = D.scalar_type_name
    if fold_t and a.ndim == 1:  # a vector that requires grad times a batch: mv(b.mT, a)
        rows = int(np.prod(b.shape[:-2])) * b.shape[-1]
        if ka != kb:
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{kb}), vec ({ka})")
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{sn(a.dtype)}, {sn(b.dtype)}, and {sn(a.dtype)}")
    if fold_t:
        if ka != kb:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                               f"({int(np.prod(b.shape[:-2])) * b.shape[-1]}x{kb} and "
                               f"{ka}x{a.shape[-2]})")
        _same_dtype(b, a)
    if b.ndim == 1 and a.ndim == 1:
        if a.dtype != b.dtype:
            raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                               f"{sn(a.dtype)} and {sn(b.dtype)}")
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                           f"[{b.shape[0]}] to have the same number of elements, but got "
                           f"{a.shape[0]} and {b.shape[0]} elements respectively")
    rows = int(np.prod(a.shape[:-1]))
    if unfolded:  # a batch by a matrix or vector that PyTorch does not fold: its bmm
        b = b.reshape(b.shape + (1,)) if b.ndim == 1 else b
    elif b.ndim == 1:
        if ka != kb:
            raise RuntimeError(f"size mismatch, got input ({rows}), mat ({rows}x{ka}), vec ({kb})")
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{sn(b.dtype)}, {sn(a.dtype)}, and {sn(b.dtype)}")
    elif b.ndim == 2:
        if ka != kb:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{ka} and "
                               f"{kb}x{b.shape[1]})")
        _same_dtype(a, b)
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        from .binary import broadcast_error
        raise broadcast_error(a.shape[:-2], b.shape[:-2]) from None
    n = int(np.prod(batch))
    if ka != kb:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {ka}] but got: [{n}, {kb}].")
    if a.size == 0 or b.size == 0:
        return True
    raise RuntimeError(f"expected scalar type {sn(a.dtype)} but found {sn(b.dtype)}")


@composite(methods=("__matmul__",))
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
    if b.ndim == 1 and a.ndim <= 2:  # PyTorch's matmul is dot or mv for these
        if a.ndim == 2 and a.dtype is b.dtype and a.dtype.kind in "fc" and \
                a.shape[1] == b.shape[0]:
            # mv's arguments are valid: its kernel and node directly, without binding them
            tok = quiet_on()
            try:
                r = _mv.forward(a, b)
            finally:
                quiet_off(tok)
            return _mv.record(r, (input, other), None)
        return dot(input, other) if a.ndim == 1 else mv(input, other)
    if (a.ndim >= 3 or b.ndim >= 3 or (a.ndim == 1 and b.ndim == 2)) and \
            STATE.enabled and (input._requires_grad or other._requires_grad):
        # recorded: PyTorch's composition, whose mm/mv/bmm raise its errors in its order
        return _matmul_graph(input, other)
    ka = a.shape[-1]
    kb = b.shape[0] if b.ndim == 1 else b.shape[-2]
    # PyTorch computes a matrix (or batch-1 3-d tensor) that requires grad times a batch as
    # (b.mT @ a.mT).mT, whether or not grad mode is on
    fold_t = input._requires_grad and b.ndim >= 3 and (a.ndim == 2 or (
        a.ndim == 3 and b.ndim == 3 and a.shape[0] == 1 and b.shape[0] != 1))
    if (ka != kb or a.dtype is not b.dtype) and edges_first(input, other) is None and _matmul_check(
            a, b, ka, kb, fold_t or (a.ndim == 1 and b.ndim >= 3 and (
                input._requires_grad or b.size == 0 or _folds_without_copy(np.swapaxes(b, -1, -2)))),
            a.ndim >= 3 and b.ndim <= 2 and not (
                other._requires_grad or a.size == 0 or _folds_without_copy(a))):
        a = a.astype(b.dtype)
    try:
        r = np.matmul(a, b) if a.dtype is not BF16 else X.matmul_np(a, b)
    except ValueError:
        from .binary import broadcast_error
        raise broadcast_error(a.shape[:-2], b.shape[:-2]) from None
    return _make(np.asarray(r))


def _should_fold(t1, t2):
    """PyTorch's should_fold: a batch times a matrix or vector (either way round) runs as one
    mm/mv on the batch folded into a matrix when that needs no copy, or when the smaller
    operand requires grad."""
    a, b = t1._data, t2._data
    larger = a.ndim >= b.ndim
    big = a if larger else np.swapaxes(b, -1, -2)
    small_dim = b.ndim if larger else a.ndim
    if not (big.ndim >= 3 and small_dim <= 2):
        return False
    if (t2 if larger else t1)._requires_grad:
        return True
    if a.ndim == 2:
        return False
    return big.size == 0 or _folds_without_copy(big)


def _matmul_graph(input, other):
    """matmul recorded as PyTorch's _matmul_impl composes it (unsqueeze/mm/squeeze_, a fold
    into mm or mv with _unsafe_view, or expand/reshape/bmm/_unsafe_view), so the graph, its
    saved tensors and their version checks are PyTorch's."""
    from .views import unsafe_view
    d1, d2 = input.dim(), other.dim()
    if d1 == 1 and d2 == 2:
        return mm(input.unsqueeze(0), other).squeeze_(0)
    if _should_fold(input, other):
        transpose = d2 > d1
        t1 = other.mT if transpose else input
        t2 = (input.t() if d1 == 2 else input) if transpose else other
        s1 = tuple(t1.shape)
        out_shape = list(s1[:-1])
        folded = int(np.prod(out_shape))
        t1f = t1.reshape(folded, s1[-1])
        if t2.dim() == 2:
            out_shape.append(t2.shape[1])
            out = unsafe_view(mm(t1f, t2), tuple(out_shape))
            return out.mT.contiguous() if transpose else out
        return unsafe_view(mv(t1f, t2), tuple(out_shape))
    a, b = input._data, other._data
    if d1 == 3 and d2 == 3 and a.shape[0] != b.shape[0]:
        # a batch of one that requires grad is squeezed to a matrix (then folded), as PyTorch
        if a.shape[0] == 1 and input._requires_grad:
            return matmul(input.squeeze(0), other)
        if b.shape[0] == 1 and other._requires_grad:
            return matmul(input, other.squeeze(0))
    n = a.shape[-2] if d1 > 1 else 1
    m1 = a.shape[-1]
    m2 = b.shape[-2] if d2 > 1 else b.shape[0]
    p = b.shape[-1] if d2 > 1 else 1
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:max(d1 - 2, 0)], b.shape[:max(d2 - 2, 0)]))
    except ValueError:
        from .binary import broadcast_error
        raise broadcast_error(a.shape[:max(d1 - 2, 0)], b.shape[:max(d2 - 2, 0)]) from None
    bp = int(np.prod(batch))
    t1e = input.expand(*batch, n, m1).reshape(bp, n, m1)
    if d2 == 1:
        t2e = other.expand(*batch, m2).reshape(bp, m2).unsqueeze(2)
    else:
        t2e = other.expand(*batch, m2, p).reshape(bp, m2, p)
    out_shape = batch + ((n,) if d1 > 1 else ()) + ((p,) if d2 > 1 else ())
    r = bmm(t1e, t2e)
    return unsafe_view(r.squeeze(-1) if d2 == 1 else r, out_shape)


def _folds_without_copy(a):
    """Whether a batch ``a`` views as a matrix without a copy (its leading dims nest exactly),
    PyTorch's test for folding a batch times a matrix into one mm."""
    st, sh = a.strides, a.shape
    return all(st[i] == st[i + 1] * sh[i + 1] for i in range(a.ndim - 2))


def _no_bool(name, *arrays):
    """PyTorch's CPU kernels of the products have no bool instance."""
    if arrays[0].dtype == np.bool_:
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')


def _batched_matmul(spec, arrays, params):
    """Batching rule of dot, mv and bmm: one matmul over the leading batch axis (a vector
    operand as a column, then dropped)."""
    a, b = arrays
    if a.ndim == 2:  # dot: a batch of rows times a batch of columns
        return np.matmul(a[:, None, :], b[:, :, None])[:, 0, 0]
    if b.ndim == 2:  # mv
        return np.matmul(a, b[..., None])[..., 0]
    return np.matmul(a, b)


@defop("bmm", node="BmmBackward0", inputs=("self", "mat2"), saved=("self", "mat2"),
       saved_for={"self": (1,), "mat2": (0,)}, batch=_batched_matmul)
def bmm(self, mat2):
    """Batched matrix product of two 3-D tensors; BmmBackward0."""
    if self.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    a, b = self.shape, mat2.shape
    if b[0] != a[0] or b[1] != a[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a[0]}, {a[2]}] but got: [{b[0]}, {b[1]}].")
    if self.dtype != mat2.dtype:
        if self.size and mat2.size:
            raise RuntimeError(f"expected scalar type {D.scalar_type_name(self.dtype)} but found "
                               f"{D.scalar_type_name(mat2.dtype)}")
        self = self.astype(mat2.dtype)  # an empty product skips the check: mat2's dtype
    _no_bool("bmm", self)
    return np.matmul(self, mat2)


@bmm.backward
def _(ctx, grad):
    return (X.matmul(grad, X.transpose_last(ctx.mat2)) if ctx.needs(0) else None,
            X.matmul(X.transpose_last(ctx.self), grad) if ctx.needs(1) else None)


@bmm.jvp
def _(ctx, ta, tb):
    return X.product_rule(ctx.self, ctx.mat2, ta, tb, X.matmul)


bmm = bmm.fn


@defop("mv", node="MvBackward0", inputs=("self", "vec"), saved=("self", "vec"),
       saved_for={"self": (1,), "vec": (0,)}, batch=_batched_matmul)
def mv(self, vec):
    """Matrix-vector product; MvBackward0."""
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {self.ndim}, {vec.ndim}")
    if self.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({self.shape[0]}), mat "
                           f"({self.shape[0]}x{self.shape[1]}), vec ({vec.shape[0]})")
    if self.dtype != vec.dtype:
        sn = D.scalar_type_name
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{sn(vec.dtype)}, {sn(self.dtype)}, and {sn(vec.dtype)}")
    _no_bool("addmv_impl_cpu", self)
    return np.matmul(self, vec)


@mv.backward
def _(ctx, grad):
    return (X.outer(grad, ctx.vec) if ctx.needs(0) else None,
            X.matmul(X.transpose_last(ctx.self), grad) if ctx.needs(1) else None)


@mv.jvp
def _(ctx, ta, tb):
    return X.product_rule(ctx.self, ctx.vec, ta, tb, X.matmul)


_mv = mv  # its declaration (matmul's matrix-vector case records it directly)
mv = mv.fn


@defop("dot", node="DotBackward0", inputs=("self", "tensor"), saved=("self", "tensor"),
       saved_for={"self": (1,), "tensor": (0,)}, batch=_batched_matmul)
def dot(self, tensor):
    """Dot product of two 1-D tensors; DotBackward0."""
    if self.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {self.ndim}D and {tensor.ndim}D "
                           f"tensors")
    if self.dtype != tensor.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{D.scalar_type_name(self.dtype)} and "
                           f"{D.scalar_type_name(tensor.dtype)}")
    if self.shape != tensor.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{self.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got "
                           f"{self.shape[0]} and {tensor.shape[0]} elements respectively")
    _no_bool("dot", self)
    return np.asarray(np.dot(self, tensor))


@dot.backward
def _(ctx, grad):
    return (grad * ctx.tensor if ctx.needs(0) else None,
            grad * ctx.self if ctx.needs(1) else None)


@dot.jvp
def _(ctx, ta, tb):
    return X.product_rule(ctx.self, ctx.tensor, ta, tb, X.matmul)


dot = dot.fn


def _addmm_check(self_dtype, a, b):
    """addmm's argument errors in PyTorch's order: dtypes first, then shapes."""
    sn = D.scalar_type_name
    if self_dtype != b.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got {sn(self_dtype)} and "
                           f"{sn(b.dtype)}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {sn(a.dtype)} and "
                           f"{sn(b.dtype)}")
    for name, m in (("mat1", a), ("mat2", b)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_shape_str(a.shape)} and "
                           f"{_shape_str(b.shape)})")


def _expand_check(shape, target):
    """PyTorch's error when ``shape`` cannot be expanded to ``target``."""
    shape, target = tuple(shape), tuple(target)
    if len(shape) > len(target):
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for i in reversed(range(len(shape))):  # PyTorch reports the last mismatch
        s = shape[i]
        if s != 1 and s != target[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {lead + i}.  "
                               f"Target sizes: {list(target)}.  Tensor sizes: {list(shape)}")


@defop("addmm", node="AddmmBackward0", inputs=("self", "mat1", "mat2"),
       saved=("mat1", "mat2", "beta", "alpha"), saved_for={"mat1": (2,), "mat2": (1,)},
       broadcast=True, batch=lambda spec, arrays, params: _addmm_batched(*arrays, **params))
def addmm(self, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * (mat1 @ mat2); AddmmBackward0."""
    a, b, c = mat1, mat2, self
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or not \
            (a.dtype is b.dtype is c.dtype):
        _addmm_check(c.dtype, a, b)
    if a.dtype.kind in "biu":
        if a.dtype == np.bool_:
            raise NotImplementedError("\"addmm_impl_cpu_\" not implemented for 'Bool'")
        # integer results take beta and alpha truncated to the dtype (wrapping), as PyTorch's
        beta, alpha = (np.asarray(int(v)).astype(a.dtype) for v in (beta, alpha))
    r = a @ b
    if alpha != 1:
        r *= alpha
    try:  # a bias that does not expand to the result fails here; the check names why
        if beta == 1:
            r += c
        elif beta != 0:
            r += beta * c
        elif c.shape != r.shape:
            _expand_check(c.shape, r.shape)
    except ValueError:
        _expand_check(c.shape, r.shape)
        raise
    if a.dtype is BF16:  # NumPy's float32 product, the bias added in float32, rounded once
        r = r.astype(BF16)
    return r


def _addmm_batched(c, a, b, beta=1, alpha=1):
    """addmm over a leading batch axis (the input's dims aligned after it)."""
    r = np.matmul(a, b)
    if alpha != 1:
        r = r * alpha
    if beta == 0:
        return r
    c = batch_aligned((c, r))[0]
    return r + (c if beta == 1 else beta * c)


# (g.T @ m1).T on arrays: for Linear, mat2 is W.t(), so W's gradient comes out C-ordered
_addmm_g2 = X.twin(lambda g, m1: (g.T @ m1).T, lambda g, m1: X.matmul(X.transpose_last(m1), g))


@addmm.backward
def _(ctx, grad):
    return blend_grads(ctx, grad,
                       X.matmul(grad, X.transpose_last(ctx.mat2)) if ctx.needs(1) else None,
                       _addmm_g2(grad, ctx.mat1) if ctx.needs(2) else None)


@addmm.jvp
def _(ctx, tx, t1, t2):
    s1, s2 = ctx.shape(1), ctx.shape(2)
    return _blend_jvp(ctx, tx, X.product_rule(ctx.mat1, ctx.mat2, t1, t2, X.matmul),
                      (s1[0], s2[1]))


def _blend_jvp(ctx, tx, tprod, shape):
    """The tangent of ``beta * input + alpha * prod`` (the result of ``shape``) from the
    input's tangent and the product's (None: none)."""
    beta, alpha = ctx.beta, ctx.alpha
    if tprod is not None and alpha != 1:
        tprod = tprod * alpha
    if tx is None:
        return tprod
    tx = tx if beta == 1 else tx * beta
    return X.expand_to(tx, shape) if tprod is None else tprod + tx


# PyTorch's node also shows each matrix's sizes, and the strides of a kept one
addmm.node_cls._named_saved.update({"mat1_sym_sizes": (5, "same"), "mat1_sym_strides": (0, "strides"),
                                    "mat2_sym_sizes": (6, "same"),
                                    "mat2_sym_strides": (1, "strides")})
_addmm_spec = addmm
_addmm_forward = addmm.forward
_addmm_node = addmm.node_cls
_addmm_general_bw = _addmm_node._bw


def _addmm_bw(self, g, graph):
    """The node's plain backward, on the saved values directly (the hot path of Linear)."""
    if graph:
        return _addmm_general_bw(self, g, graph)
    s1, s2, beta, alpha, shape = self._saved[:5]
    nf = self.next_functions
    gb = g1 = g2 = None
    m1 = s1.get(self, False) if s1 is not None else None
    m2 = s2.get(self, False) if s2 is not None else None
    if nf[0][0] is not None:
        gb = g if beta == 1 else g * beta
        if gb.shape != shape:
            gb = sum_to(gb, shape)
    if nf[1][0] is not None:
        g1 = g @ m2.T
        if alpha != 1:
            g1 = g1 * alpha
    if nf[2][0] is not None:
        g2 = (g.T @ m1).T
        if alpha != 1:
            g2 = g2 * alpha
    return gb, g1, g2


_addmm_node._bw = _addmm_bw


def _addmm_front(*args, **kwargs):
    """addmm; the common call (three Tensors by position) runs the forward (for float
    matrices that multiply and a bias that broadcasts, its one product and sum inline) and
    records the node without binding arguments."""
    if len(args) == 3 and not kwargs:
        input, mat1, mat2 = args
        try:
            c, a, b = input._data, mat1._data, mat2._data
        except AttributeError:
            return _addmm_spec.declared(*args)
        r = None
        if a.dtype is b.dtype is c.dtype and a.dtype.kind == "f" and a.ndim == 2 and \
                b.ndim == 2 and a.shape[1] == b.shape[0]:
            r = a @ b
            try:
                r += c
            except ValueError:
                r = None
        if r is None:
            try:
                r = _addmm_forward(c, a, b)
            except RuntimeError:
                edges_first(input, mat1, mat2)  # a stale view's error comes first
                raise
        r1, r2 = mat1._requires_grad, mat2._requires_grad
        if not (STATE.enabled and (input._requires_grad or r1 or r2)):
            return _make(r)
        res = _make(r)
        res._requires_grad = True
        res._grad_fn = node = _addmm_node(
            (edge_of(input), edge_of(mat1), edge_of(mat2)),
            (Saved(mat1) if r2 else None, Saved(mat2) if r1 else None, 1, 1, c.shape,
             a.shape, b.shape), r.dtype)
        if RECORD_HOOKS:
            for h in RECORD_HOOKS:
                h(res, node)
        return res
    return _addmm_spec.declared(*args, **kwargs)


addmm = front(_addmm_spec, _addmm_front)


@defop("baddbmm", node="BaddbmmBackward0", inputs=("self", "batch1", "batch2"),
       saved=("batch1", "batch2", "beta", "alpha"), saved_for={"batch1": (2,), "batch2": (1,)},
       broadcast=True, batch=lambda spec, arrays, params: _baddbmm_batched(*arrays, **params))
def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
    """beta * input + alpha * (batch1 @ batch2) for batches of matrices; BaddbmmBackward0."""
    a, b, c = batch1, batch2, self
    if not (a.dtype is b.dtype is c.dtype):
        if c.dtype != a.dtype:
            raise RuntimeError(f"Input dtypes must be the same, got: input {D.c_name(c.dtype)}, "
                               f"batch1: {D.c_name(a.dtype)}, batch2: {D.c_name(b.dtype)}")
    for name, m in (("batch1", a), ("batch2", b)):
        if m.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}].")
    if a.dtype is not b.dtype and _matmul_check(a, b, a.shape[2], b.shape[1]):
        a = a.astype(b.dtype)
    if a.dtype == np.bool_:
        raise NotImplementedError('"baddbmm" not implemented for \'Bool\'')
    r = np.matmul(a, b)
    if c.shape != r.shape:
        _expand_check(c.shape, r.shape)
    r = _baddbmm_blend(c, r, beta, alpha)
    return r.astype(BF16) if a.dtype is BF16 else r  # bfloat16: computed in float32, rounded once


def _baddbmm_blend(c, r, beta, alpha):
    """``beta * c + alpha * r`` into ``r`` (``c`` ignored when beta is 0; integer results
    take beta and alpha truncated to ints, as PyTorch's)."""
    if r.dtype.kind in "biu":
        beta, alpha = int_coefficients(r.dtype, beta, alpha)
    if alpha != 1:
        r *= alpha
    if beta == 1:
        r += c
    elif beta != 0:
        r += beta * c
    return r


def int_coefficients(dtype, *coefs) -> tuple:
    """The scalar coefficients (beta, alpha) of a product into an integer result: truncated
    to ints, as PyTorch's; a negative one for uint8 is PyTorch's overflow error."""
    if dtype == np.uint8 and any(c < 0 for c in coefs):
        raise RuntimeError("value cannot be converted to type uint8_t without overflow")
    return tuple(int(c) for c in coefs)


def _baddbmm_batched(c, a, b, beta=1, alpha=1):
    """baddbmm over a leading batch axis (the input's dims aligned after it)."""
    r = np.matmul(a, b)
    return _baddbmm_blend(batch_aligned((c, r))[0], r, beta, alpha)


def blend_grads(ctx, grad, g1, g2):
    """The gradients of ``beta * input + alpha * prod(a, b)`` (addmv, addr, baddbmm) from the
    product's ``g1``, ``g2`` (None where not needed)."""
    beta, alpha = ctx.beta, ctx.alpha
    if alpha != 1:
        g1 = None if g1 is None else g1 * alpha
        g2 = None if g2 is None else g2 * alpha
    return (grad if beta == 1 else grad * beta) if ctx.needs(0) else None, g1, g2


@baddbmm.backward
def _(ctx, grad):
    return blend_grads(ctx, grad,
                       X.matmul(grad, X.transpose_last(ctx.batch2)) if ctx.needs(1) else None,
                       X.matmul(X.transpose_last(ctx.batch1), grad) if ctx.needs(2) else None)


@baddbmm.jvp
def _(ctx, tx, t1, t2):
    s1, s2 = ctx.shape(1), ctx.shape(2)
    beta, alpha = ctx.beta, ctx.alpha
    out = X.product_rule(ctx.batch1, ctx.batch2, t1, t2, X.matmul)
    if out is not None and alpha != 1:
        out = out * alpha
    if tx is None:
        return out
    tx = tx if beta == 1 else tx * beta
    return X.expand_to(tx, (s1[0], s1[1], s2[2])) if out is None else out + tx


baddbmm = baddbmm.fn


# --- outer / einsum ----------------------------------------------------------------------------
import string as _string  # noqa: E402
from collections import Counter as _Counter  # noqa: E402

from .._record import notify  # noqa: E402


@composite(methods=("ger",))
def outer(input, vec2):
    """Outer product of two vectors (a column times a row); MulBackward0."""
    if input.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"outer: expected 1-D tensors, but got {input.dim()}-D and "
                           f"{vec2.dim()}-D tensors")
    return input.reshape(-1, 1) * vec2


composite("ger", method=False)(outer)


class _EinsumPlan:
    """An einsum equation checked and laid out as ATen's einsum does: each operand's subscripts
    (None for an ellipsis), where each subscript (and the ellipsis' dims) goes in the common
    dim order -- the output's dims first (``out_num_dim`` of them), then the contracted ones
    -- and how many operands hold each of those dims with a size other than 1."""

    __slots__ = ("labels", "ell_num_dim", "ell_index", "pos", "out_num_dim", "perm_index",
                 "dim_counts", "sizes")


def _einsum_plan(equation, operands):
    """Parse and check ``equation`` against the operands with PyTorch's errors, in its order."""
    n = len(operands)
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    labels = [[] for _ in range(n)]
    cur, ell_seen, i = 0, False, 0
    while i < len(lhs):
        c = lhs[i]
        if c == " ":
            pass
        elif c == ".":
            if ell_seen:
                raise RuntimeError(f"einsum(): found '.' for operand {cur} for which an ellipsis "
                                   f"was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {cur} that is not part of "
                                   f"any ellipsis")
            i += 2
            labels[cur].append(None)
            ell_seen = True
        elif c == ",":
            cur += 1
            if cur >= n:
                raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                                   "equation")
            ell_seen = False
        elif c.isascii() and c.isalpha():
            labels[cur].append(c)
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               f"string, subscripts must be in [a-zA-Z]")
        i += 1
    if cur != n - 1:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    count = _Counter()
    ell_num_dim = 0
    for k, (lab, o) in enumerate(zip(labels, operands)):
        nl = sum(1 for c in lab if c is not None)
        has_ell = None in lab
        nd = o.dim()
        if has_ell:
            ell_num_dim = max(ell_num_dim, nd - nl)
        count.update(c for c in lab if c is not None)
        if (nl > nd) if has_ell else (nl != nd):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nl}) "
                               f"{'is more than' if has_ell else 'does not match'} the number "
                               f"of dimensions ({nd}) for operand {k}"
                               f"{'' if has_ell else ' and no ellipsis was given'}")
    order = sorted(count)  # PyTorch numbers A-Z before a-z, as ASCII does
    pos = {}
    if arrow < 0:  # implicit output: the ellipsis, then the subscripts seen once
        perm_index, ell_index, ell_out = ell_num_dim, 0, True
        for c in order:
            if count[c] == 1:
                pos[c] = perm_index
                perm_index += 1
    else:
        perm_index, ell_index, ell_out = 0, 0, False
        rhs = equation[arrow + 2:]
        i = 0
        while i < len(rhs):
            c = rhs[i]
            if c == " ":
                pass
            elif c == ".":
                if ell_out:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was "
                                       "already found")
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of any "
                                       "ellipsis (...)")
                i += 2
                ell_index, ell_out = perm_index, True
                perm_index += ell_num_dim
            elif c.isascii() and c.isalpha():
                if not count[c] or c in pos:
                    raise RuntimeError(f"einsum(): output subscript {c}"
                                       f"{' appears more than once in the output' if c in pos else ' does not appear in the equation for any input operand'}")
                pos[c] = perm_index
                perm_index += 1
            else:
                raise RuntimeError(f"einsum(): invalid subscript given at index {len(lhs) + 2 + i} "
                                   f"in the equation string, subscripts must be in [a-zA-Z]")
            i += 1
    out_num_dim = perm_index
    if not ell_out:
        ell_index = perm_index
        perm_index += ell_num_dim
    for c in order:
        if c not in pos:
            pos[c] = perm_index
            perm_index += 1
    # sizes: every dim of size other than 1 must agree (broadcast), repeated subscripts of one
    # operand exactly
    sizes = [1] * perm_index
    dim_counts = [0] * perm_index
    for k, (lab, o) in enumerate(zip(labels, operands)):
        shape = o.shape
        at = {}
        dim = 0
        for c in lab:
            if c is None:
                nd = len(shape) - (len(lab) - 1)
                for j in range(ell_num_dim - nd, ell_num_dim):
                    s = shape[dim]
                    if s != 1:
                        if sizes[ell_index + j] not in (1, s):
                            raise RuntimeError(
                                f"einsum(): dimension {dim} covered by ellipsis in operand {k}has "
                                f"size {s} which does not broadcast with previously seen "
                                f"ellipsis with size {sizes[ell_index + j]} for the respective "
                                f"dimension")
                        sizes[ell_index + j] = s
                        dim_counts[ell_index + j] += 1
                    dim += 1
            elif c not in at:
                s = shape[dim]
                if s != 1:
                    if sizes[pos[c]] not in (1, s):
                        raise RuntimeError(f"einsum(): subscript {c} has size {s} for operand {k} "
                                           f"which does not broadcast with previously seen size "
                                           f"{sizes[pos[c]]}")
                    sizes[pos[c]] = s
                    dim_counts[pos[c]] += 1
                at[c] = dim
                dim += 1
            else:
                s, first = shape[dim], shape[at[c]]
                if s != first:
                    raise RuntimeError(f"einsum(): subscript {c} is repeated for operand {k} but "
                                       f"the sizes don't match, {s} != {first}")
                shape = shape[:dim] + shape[dim + 1:]  # the diagonal keeps the first one's place
    p = _EinsumPlan()
    p.labels, p.ell_num_dim, p.ell_index, p.pos = labels, ell_num_dim, ell_index, pos
    p.out_num_dim, p.perm_index, p.dim_counts, p.sizes = out_num_dim, perm_index, dim_counts, \
        sizes
    return p


_OPT_EINSUM = []


def _opt_einsum():
    """The opt_einsum package when it is installed (looked up once), else None."""
    if not _OPT_EINSUM:
        try:
            import opt_einsum
        except ImportError:
            opt_einsum = None
        _OPT_EINSUM.append(opt_einsum)
    return _OPT_EINSUM[0]


def _einsum_path(equation, operands):
    """The contraction order, as PyTorch's torch.einsum picks it: with three or more operands
    and opt_einsum installed (and ``dyngrad.backends.opt_einsum.enabled``, on by default
    then), opt_einsum's path with the configured strategy; else None, meaning left to right
    (PyTorch's default when opt_einsum is not installed, as in this project's environment).
    Like PyTorch, dyngrad only looks for the package, it never requires it."""
    if len(operands) <= 2:
        return None
    from .. import backends
    cfg = getattr(backends, "opt_einsum", None)
    oe = _opt_einsum()
    enabled = getattr(cfg, "enabled", oe is not None)
    if oe is None or not enabled:
        return None
    strategy = getattr(cfg, "strategy", None) or "auto"
    path = oe.contract_path(equation, *[o._data for o in operands], optimize=strategy)[0]
    return [int(i) for pair in path for i in pair]


def _sumproduct_pair(left, right, sum_dims):
    """PyTorch's sumproduct_pair (keepdim): ``(left * right).sum(sum_dims, keepdim=True)`` of
    two operands aligned to the same dims, as permute -> reshape -> bmm -> view -> permute."""
    if not sum_dims:
        return left * right
    sd = set(sum_dims)
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(left.dim()):
        sl, sr = left.shape[i] != 1, right.shape[i] != 1
        if i in sd:
            if sl and sr:
                sum_size *= left.shape[i]
            elif sl:
                left = left.sum(i, True)
            elif sr:
                right = right.sum(i, True)
        elif sl and sr:
            lro.append(i)
            lro_size *= left.shape[i]
        elif sl:
            lo.append(i)
            lo_size *= left.shape[i]
        else:
            ro.append(i)
            ro_size *= right.shape[i]
    if lo and ro and ro[-1] < lo[0]:
        # the right operand's dims all come first in the output: bmm with the operands
        # swapped writes the result in order
        left, right, lo, ro, lo_size, ro_size = right, left, ro, lo, ro_size, lo_size
    out_size = [left.shape[d] for d in lro] + [left.shape[d] for d in lo] + \
        [1] * len(sum_dims) + [right.shape[d] for d in ro]
    lperm = lro + lo + list(sum_dims) + ro
    rperm = lro + list(sum_dims) + ro + lo
    operm = [0] * len(lperm)
    for k, d in enumerate(lperm):
        operm[d] = k
    a = left.permute(*lperm).reshape(lro_size, lo_size, sum_size)
    b = right.permute(*rperm).reshape(lro_size, sum_size, ro_size)
    return bmm(a, b).view(*out_size).permute(*operm)


def _einsum_graph(equation, operands, plan):
    """einsum as PyTorch composes it (ATen's einsum): each operand's repeated subscripts taken
    as diagonals, missing dims unsqueezed and all dims permuted into the plan's order;
    operands contracted pairwise with sumproduct_pair (left to right, or opt_einsum's path),
    dims only one operand still holds summed first; the contracted dims viewed (or, for one
    operand, summed) away.  Recorded, its nodes, saved tensors and version checks are
    PyTorch's."""
    pos, perm_index, out_num_dim = plan.pos, plan.perm_index, plan.out_num_dim
    ell_num_dim, ell_index = plan.ell_num_dim, plan.ell_index
    dim_counts = list(plan.dim_counts)
    ops = []
    for lab, t in zip(plan.labels, operands):
        perm = [-1] * perm_index
        dim = 0
        for c in lab:
            if c is None:
                nd = t.dim() - (len(lab) - 1)
                for j in range(ell_num_dim - nd, ell_num_dim):
                    perm[ell_index + j] = dim
                    dim += 1
            elif perm[pos[c]] == -1:
                perm[pos[c]] = dim
                dim += 1
            else:  # a repeated subscript: its diagonal, moved to the first one's place
                prev = perm[pos[c]]
                t = t.diagonal(0, prev, dim)
                mv = list(range(t.dim() - 1))
                mv.insert(prev, t.dim() - 1)
                t = t.permute(*mv)  # movedim(-1, prev)
        for k in range(perm_index):
            if perm[k] == -1:
                t = t.unsqueeze(dim)
                perm[k] = dim
                dim += 1
        ops.append(t.permute(*perm))
    path = _einsum_path(equation, operands)
    step = iter(path or ())
    while len(ops) > 1:
        i, j = (0, 1) if path is None else sorted((next(step), next(step)))
        a, b = ops[i], ops[j]
        del ops[j], ops[i]
        sum_dims, a_sum, b_sum = [], [], []
        for d in range(out_num_dim, perm_index):
            sa, sb = a.shape[d] != 1, b.shape[d] != 1
            if sa and sb:
                dim_counts[d] -= 1
                if dim_counts[d] == 1:
                    sum_dims.append(d)
                    dim_counts[d] = 0
            elif dim_counts[d] == 1:
                if sa:
                    a_sum.append(d)
                    dim_counts[d] = 0
                elif sb:
                    b_sum.append(d)
                    dim_counts[d] = 0
        if a_sum:
            a = a.sum(a_sum, True)
        if b_sum:
            b = b.sum(b_sum, True)
        r = _sumproduct_pair(a, b, sum_dims)
        if path is None:
            ops.insert(0, r)
        else:
            ops.append(r)
    r = ops[0]
    if perm_index > out_num_dim:
        if len(operands) > 1:
            return r.view(*r.shape[:out_num_dim])
        return r.sum(list(range(out_num_dim, perm_index)))
    return r


def _einsum_numpy(plan, operands):
    """The result by one NumPy einsum (nothing recorded, all operands of one dtype): each
    operand broadcast to the plan's sizes, a letter for every dim of the plan."""
    used = set(plan.pos)
    free = iter(c for c in _string.ascii_letters if c not in used)
    letter = {k: c for c, k in plan.pos.items()}
    for j in range(plan.ell_num_dim):
        letter[plan.ell_index + j] = next(free)
    size = {c: plan.sizes[k] for k, c in letter.items()}
    subs, arrs = [], []
    for lab, o in zip(plan.labels, operands):
        s = []
        for c in lab:
            if c is None:
                nd = o.dim() - (len(lab) - 1)
                s += [letter[plan.ell_index + j] for j in range(plan.ell_num_dim - nd,
                                                                plan.ell_num_dim)]
            else:
                s.append(c)
        full = tuple(size[c] for c in s)
        d = o._data
        subs.append("".join(s))
        arrs.append(np.broadcast_to(d, full) if d.ndim and d.shape != full else d)
    eq = ",".join(subs) + "->" + "".join(letter[k] for k in range(plan.out_num_dim))
    r = np.asarray(X.einsum_np(eq, *arrs, optimize=len(arrs) > 2))
    if r.base is not None or not r.flags.writeable:
        r = r.copy()
    return _make(r)


@composite(method=False)
def einsum(equation, *operands):
    """Einstein summation: PyTorch's composition of permutes, bmm and views when recording
    (``_einsum_graph``), one NumPy einsum otherwise."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): argument 'equation' (position 1) must be str, not "
                        f"{D.type_name(equation)}")
    for i, o in enumerate(operands):
        if not isinstance(o, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{D.type_name(o)}")
    plan = _einsum_plan(equation, operands)
    if (STATE.enabled and any(o._requires_grad for o in operands)) or \
            len({o._data.dtype for o in operands}) > 1:
        # operands of several dtypes: PyTorch's bmm refuses them, its mul promotes them
        return _einsum_graph(equation, operands, plan)
    return _einsum_numpy(plan, operands)


# --- inverse, determinants, solve --------------------------------------------------------------
from .decompositions import _col_major  # noqa: E402


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular matrix and the like)."""


def _square(name, a):
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        if a.ndim < 2:
            raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if a.dtype not in D.INEXACT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{D.TYPE_NAMES[D.FROM_NP[a.dtype]].replace('Tensor', '')}")


def _singular_pivot(a):
    """1-based index of the first zero pivot of LU (for PyTorch's singular-matrix message)."""
    try:
        import warnings
        import scipy.linalg as sl
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lu = sl.lu_factor(a.reshape(-1, *a.shape[-2:])[0], check_finite=False)[0]
        z = np.nonzero(np.diag(lu) == 0)[0]
        return int(z[0]) + 1 if z.size else a.shape[-1]
    except Exception:  # pragma: no cover - scipy missing or odd input
        return a.shape[-1]


@defop("inverse", node="LinalgInvExBackward0", saved=("result",), names={"result": "inverse"},
       batch=lambda spec, arrays, params: spec.forward(arrays[0]))
def inverse(self):
    """Inverse of a square matrix (or a batch); LinalgInvExBackward0."""
    _square("linalg.inv", self)
    try:
        r = np.linalg.inv(self)
    except np.linalg.LinAlgError:
        raise LinAlgError(f"linalg.inv: The diagonal element {_singular_pivot(self)} is zero, "
                          f"the inversion could not be completed because the input matrix is "
                          f"singular.") from None
    # each matrix stored column by column, as LAPACK's result PyTorch returns (strides (1, n))
    return _col_major(r)


@inverse.backward
def _(ctx, grad):
    y = X.transpose_last(ctx.result)
    return -X.matmul(X.matmul(y, grad), y),


@inverse.jvp
def _(ctx, t):
    y = ctx.result
    return -X.matmul(X.matmul(y, t), y)


inverse = inverse.fn
_inv_any = X.twin(np.linalg.inv, inverse)


@defop("det", node="LinalgDetBackward0", inputs=("A",), saved=("A", "result"),
       batch=lambda spec, arrays, params: spec.forward(arrays[0]))
def det(A):
    """Determinant of a square matrix (or a batch); LinalgDetBackward0."""
    _square("linalg.det", A)
    return _col_major(np.linalg.det(A), False)


def _det_grad(ctx, g):
    """The gradient of det for ``g``: g * det * inverse^T, or the adjugate from the SVD for a
    singular matrix."""
    a = ctx.A
    ad = X.data(a)
    if ad.shape[-1] == 1:  # d det / dA = 1: the gradient is the incoming one (as PyTorch)
        return X.unsqueeze_dims(g, (ad.ndim - 2, ad.ndim - 1), ad.ndim)
    gg = X.unsqueeze_dims(g * ctx.result, (ad.ndim - 2, ad.ndim - 1), ad.ndim)
    try:
        inv = _inv_any(a)
        if not np.isfinite(X.data(inv)).all():
            raise np.linalg.LinAlgError
        return gg * X.transpose_last(inv)
    except (np.linalg.LinAlgError, RuntimeError):
        # singular: the gradient is the adjugate (cofactor matrix), from the SVD
        u, s, vt = np.linalg.svd(ad)
        n = ad.shape[-1]
        adj = np.zeros_like(ad)
        for k in range(n):
            prod = np.prod(np.delete(s, k, axis=-1), axis=-1)
            adj += prod[..., None, None] * (u[..., :, k:k + 1] * vt[..., k:k + 1, :])
        adj = adj * (np.linalg.det(u) * np.linalg.det(vt))[..., None, None]
        gd = np.asarray(X.data(g))[..., None, None]
        return X.const(gd * adj, g)


@det.backward
def _(ctx, grad):
    return _det_grad(ctx, grad),


@det.jvp
def _(ctx, t):
    # the gradient for a unit cotangent, contracted with the tangent over each matrix
    g = _det_grad(ctx, 1 + 0 * ctx.result)
    return X.sum_dims(g * t, (t.dim() - 2, t.dim() - 1), False)


det = det.fn


@defop("slogdet", node="LinalgSlogdetBackward0", inputs=("A",), saved=("A", "result"),
       names={"result": "sign"}, outputs=("sign", "logabsdet"), holomorphic=False,
       batch=lambda spec, arrays, params: spec.forward(arrays[0]))
def slogdet(A):
    """(sign, log|det|) of square matrices; both outputs of LinalgSlogdetBackward0."""
    _square("linalg.slogdet", A)
    if A.dtype == np.float16:
        raise RuntimeError("linalg.slogdet: Low precision dtypes not supported. Got Half")
    s, l = np.linalg.slogdet(A)
    return _col_major(s, False), _col_major(l, False)


@slogdet.backward
def _(ctx, grads):
    # PyTorch's slogdet_backward: (grad_logabsdet - i imag(conj(grad_sign) sign)) A^{-H} (the
    # sign's gradient only for complex A), written as PyTorch's gradient for complex input
    gs, gl = grads
    a = ctx.A
    if X.data(a).dtype.kind == "c" and gs is not None:
        rot = (X.conj(gs) * ctx.result).imag * -1j
        gl = rot if gl is None else gl + rot
    if gl is None:
        return None,
    nd = X.data(a).ndim
    return X.unsqueeze_dims(gl, (nd - 2, nd - 1), nd) * X.adjoint_last(_inv_any(a)),


@slogdet.jvp
def _(ctx, t):
    # the trace of A^{-1} dA: the tangent of log|det| is its real part, the sign's (complex A)
    # i times its imaginary part times the sign
    tr = X.matmul(_inv_any(ctx.A), t).diagonal(0, -2, -1).sum(-1)
    sign = ctx.result
    if not tr.is_complex():
        return X.zeros_like(sign), tr
    return sign * (tr.imag * 1j), tr.real


def _saved_lu(node, part):
    """The LU factorization of the saved A with its pivots (1-based, int32), which PyTorch's
    node keeps: computed from A when read."""
    import scipy.linalg as sl
    a = node._saved_A._data
    # LAPACK reads a row-major real matrix as its transpose: PyTorch factors that (a complex
    # one it copies column by column first)
    col = a.dtype.kind == "c" or (a.shape[-1] > 1 and a.strides[-2] < a.strides[-1])
    if a.size == 0:
        return _make(_col_major(np.zeros(a.shape, a.dtype)) if part == 0 else
                     _col_major(np.zeros(a.shape[:-1], np.int32), False))
    flat = a.reshape((-1,) + a.shape[-2:])
    lus, pivs = [], []
    for m in flat:
        lu, piv = sl.lu_factor(m if col else m.T, check_finite=False)
        lus.append(lu)
        pivs.append(piv + 1)
    if part == 0:
        return _make(_col_major(np.array(lus).reshape(a.shape)))
    return _make(np.array(pivs, dtype=np.int32).reshape(a.shape[:-1]))


_slogdet_spec = every_output(slogdet)
_slogdet_spec.node_cls._saved_LU = property(lambda self: _saved_lu(self, 0))
_slogdet_spec.node_cls._saved_pivots = property(lambda self: _saved_lu(self, 1))
RT_SLOGDET = return_type("linalg_slogdet", ("sign", "logabsdet"))
_NO_ARGS: dict = {}


def _slogdet_front(A):
    if not isinstance(A, Tensor):
        return _slogdet_spec.declared(A)
    if A._data.dtype == D.BF16:
        _square("linalg.slogdet", A._data)
        raise RuntimeError("linalg.slogdet: Low precision dtypes not supported. Got BFloat16")
    return quick(_slogdet_spec, A, (), _NO_ARGS, _NO_ARGS)


slogdet = front(_slogdet_spec, _slogdet_front)


def linalg_slogdet(A):
    """``torch.linalg.slogdet``: (sign, log|det|) of square matrices, as a linalg_slogdet."""
    return RT_SLOGDET(*slogdet(A))


linalg_slogdet.__name__ = "slogdet"


@composite()
def logdet(input):
    """log(det(A)) (NaN for a negative determinant)."""
    s, l = slogdet(input)
    if input.is_complex():
        return s.log() + l
    # PyTorch's composite: where(sign == -1, nan, logabsdet), so the graph ends in WhereBackward0
    from .indexing import where
    return where(s == -1.0, float("nan"), l)


class LinalgSolveExBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sa, so, vec, left = self._saved
        a = sa.get(self, graph)
        xo = so.get(self, graph)
        if vec:
            g = g.reshape(tuple(g.shape) + (1,))
            xo = xo.reshape(tuple(xo.shape) + (1,))
        at = X.transpose_last(a)
        gb = _solve_any(at, g, left)
        ga = None
        if self.next_functions[0][0] is not None:
            ga = (X.matmul(gb, X.transpose_last(xo)) if left
                  else X.matmul(X.transpose_last(xo), gb))
            ga = sum_to(-ga, tuple(X.data(a).shape))
        if self.next_functions[1][0] is not None:
            bshape = self._bshape
            gb = gb.reshape(tuple(gb.shape[:-1])) if vec else gb
            gb = sum_to(gb, bshape)
        else:
            gb = None
        return ga, gb


def _solve_np(A, B, left):
    if left:
        return np.linalg.solve(A, B)
    return np.swapaxes(np.linalg.solve(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)), -1, -2)


_solve_any = X.twin(_solve_np, lambda A, B, left: solve(A, B, left=left))


def solve(A, B, *, left=True):
    """The X with A X = B (X A = B when not ``left``; B a matrix, a vector or a batch of
    either); LinalgSolveExBackward0.  X is laid out as PyTorch's: column-major matrices when
    ``left`` (a batch of vectors as one such matrix), C-ordered otherwise."""
    a, b = A._data, B._data
    _square("linalg.solve", a)
    vec = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    bm = b[..., None] if vec else b
    if (bm.shape[-2] if left else bm.shape[-1]) != a.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({a.shape[-2]}x{a.shape[-1]} and "
                           f"{bm.shape[-2]}x{bm.shape[-1]})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {A.dtype} and B of type {B.dtype} instead")
    try:
        np.broadcast_shapes(bm.shape[:-2], a.shape[:-2])
    except ValueError:
        from .binary import broadcast_error
        raise broadcast_error(bm.shape[:-2], a.shape[:-2]) from None
    try:
        if left:
            r = np.linalg.solve(a, bm)
        else:
            r = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(bm, -1, -2)),
                            -1, -2)
    except np.linalg.LinAlgError:
        raise LinAlgError("torch.linalg.solve: The solver failed because the input matrix is "
                          "singular.") from None
    if vec:
        r = r[..., 0]
    r = _col_major(r, left)
    if STATE.enabled and (A._requires_grad or B._requires_grad):
        res = record(r, None)
        node = LinalgSolveExBackward0((edge_of(A), edge_of(B)),
                                      (Saved(A), Saved(res, True), vec, left))
        node._bshape = b.shape
        res._grad_fn = node
        return notify(res)
    return _make(r)
