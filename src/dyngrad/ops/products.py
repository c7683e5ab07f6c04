"""Products and friends: addmv, addr, addcmul, addcdiv, trace, dist, cross / linalg.cross,
kron, tensordot, inner, chain_matmul / linalg.multi_dot, plus the top-level aliases swapaxes,
swapdims, softmax and log_softmax.  Fused ops record PyTorch's fused node; the composite ones
are built from dyngrad ops the way PyTorch builds them, so their nodes match."""
from __future__ import annotations

import math

import numpy as np

from . import OPS, composite
from . import _dual as X
from ._spec import batch_aligned, defop
from .._record import Tensor, raw_dim
from .views import unsafe_view as _unsafe_view
from .linalg import _blend_jvp, blend_grads
from .._tensor import _dim
from .. import _dtype as D
from .binary import broadcast_error
from .. import _warn

_make = Tensor._make


def _pkg():
    import importlib
    return importlib.import_module(__name__.split(".")[0])


def _bcast(*shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise broadcast_error(*shapes) from None


def _scalar_check(dtype, v, name):
    """PyTorch's checks of a beta/alpha/value scalar against the result dtype."""
    if isinstance(v, (bool, np.bool_)):
        return
    if dtype not in D.INEXACT and isinstance(v, (float, np.floating)):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating "
                           f"point number.")
    if dtype.kind != "c" and isinstance(v, (complex, np.complexfloating)):
        raise RuntimeError(f"For non-complex input tensors, argument {name} must not be a "
                           f"complex number.")


def _need_tensor(fn, arg, pos, v):
    if not isinstance(v, Tensor):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{D.type_name(v)}")


# --- addcmul / addcdiv ----------------------------------------------------------------------
_CDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future  release "
             "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
             "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
             ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
             "float inputs. The future addcdiv behavior is just the latter implementation: "
             "(input + value * tensor1 / tensor2), for all dtypes.")


def _addc(name, a, b, c, value):
    """``a + value * (b * c)`` (addcmul) or ``a + value * (b / c)`` (addcdiv), the arrays
    already in their common dtype, broadcast."""
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (int, float, complex, np.number, np.bool_)):
        raise TypeError(f"{name}(): argument 'value' must be Number, not {D.type_name(value)}")
    rt = a.dtype
    if name == "addcmul" and rt == np.bool_:
        raise NotImplementedError('"addcmul_cpu_out" not implemented for \'Bool\'')
    if rt.kind != "c" and isinstance(value, (complex, np.complexfloating)):
        raise RuntimeError("value cannot be converted to type float without overflow")
    shape = _bcast(a.shape, b.shape, c.shape)
    v = int(value) if rt.kind in "biu" else value
    r = a + v * (b * c if name == "addcmul" else b / c)
    r = np.asarray(np.broadcast_to(r, shape)).astype(rt, copy=False)
    if r.base is not None or not r.flags.writeable:
        r = r.copy(order="K")  # the operands' layout, as PyTorch's kernel gives it
    return r


def _addc_batched(spec, arrays, params):
    """addcmul / addcdiv over a leading batch axis (the inputs' dims aligned after it)."""
    return spec.forward(*batch_aligned(arrays), **params)


@defop("addcmul", node="AddcmulBackward0", inputs=("self", "tensor1", "tensor2"),
       saved=("tensor1", "tensor2", "value"), saved_for={"tensor1": (2,), "tensor2": (1,)},
       broadcast=True, promote="common", batch=_addc_batched)
def addcmul(self, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``; AddcmulBackward0."""
    return _addc("addcmul", self, tensor1, tensor2, value)


@addcmul.backward
def _(ctx, grad):
    v = ctx.value
    return (grad if ctx.needs(0) else None,
            grad * ctx.tensor2 * v if ctx.needs(1) else None,
            grad * ctx.tensor1 * v if ctx.needs(2) else None)


@addcmul.jvp
def _(ctx, tx, t1, t2):
    v = ctx.value
    terms = [tx, None if t1 is None else t1 * ctx.tensor2 * v,
             None if t2 is None else t2 * ctx.tensor1 * v]
    return _sum_tangents(ctx, terms)


def _sum_tangents(ctx, terms):
    """The sum of the tangent terms given (None: none), of the result's shape."""
    out = None
    for t in terms:
        if t is not None:
            out = t if out is None else out + t
    shape = np.broadcast_shapes(*(ctx.shape(i) for i in range(3)))
    return out if tuple(out.shape) == shape else X.expand_to(out, shape)


@defop("addcdiv", node="AddcdivBackward0", inputs=("self", "tensor1", "tensor2"),
       saved=("tensor1", "tensor2", "value"), saved_for={"tensor1": (2,)},
       broadcast=True, promote="common", batch=_addc_batched)
def addcdiv(self, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2`` (integer tensors are refused); AddcdivBackward0."""
    return _addc("addcdiv", self, tensor1, tensor2, value)


@addcdiv.backward
def _(ctx, grad):
    v, t2 = ctx.value, ctx.tensor2
    return (grad if ctx.needs(0) else None,
            grad * v / t2 if ctx.needs(1) else None,
            -grad * v * ctx.tensor1 / (t2 * t2) if ctx.needs(2) else None)


@addcdiv.jvp
def _(ctx, tx, t1, t2):
    v, d = ctx.value, ctx.tensor2
    terms = [tx, None if t1 is None else t1 * v / d,
             None if t2 is None else -t2 * v * ctx.tensor1 / (d * d)]
    return _sum_tangents(ctx, terms)


def _addc_public(f, name, method):
    """``f`` with PyTorch's argument handling of addcmul/addcdiv: the deprecated order
    ``(input, value, tensor1, tensor2)`` taken, and its messages for other arguments."""
    tensors = ("self" if method else "input", "tensor1", "tensor2")

    def g(*args, **kwargs):
        n = len(args)
        if n == 4 and not isinstance(args[1], Tensor) and "value" not in kwargs:
            args, kwargs = (args[0], args[2], args[3]), {**kwargs, "value": args[1]}
        elif n > 3:
            raise TypeError(f"{name}() takes {3 - method} positional arguments but {n - method} "
                            f"were given")
        elif n + sum(k in kwargs for k in tensors[n:]) < 3:
            raise D.bad_combo(name, args, kwargs)
        if name == "addcdiv":  # (checked on the dtypes as given, before promotion)
            t1, t2 = (args + tuple(kwargs.get(k) for k in tensors[len(args):]))[1:]
            if all(isinstance(t, Tensor) and t._data.dtype.kind in "biu" for t in (t1, t2)):
                raise RuntimeError(_CDIV_INT)
        return f(*args, **kwargs)

    for k in ("__name__", "__qualname__", "__module__", "__doc__", "__signature__"):
        setattr(g, k, getattr(f, k))
    return g


for _name in ("addcmul", "addcdiv"):
    for _key in (_name, f"_{_name}_method"):
        OPS[_key]["fn"] = _addc_public(OPS[_key]["fn"], _name, _key != _name)
addcmul, addcdiv = OPS["addcmul"]["fn"], OPS["addcdiv"]["fn"]


# --- addmv / addr ---------------------------------------------------------------------------
def _blend(inp, prod, beta, alpha, shape, rt):
    """beta * input + alpha * prod (input ignored, NaN included, when beta is 0)."""
    if rt.kind in "biu":
        from .linalg import int_coefficients
        beta, alpha = int_coefficients(rt, beta, alpha)
    with np.errstate(all="ignore"):
        p = prod if alpha == 1 else prod * alpha
        if beta == 0:
            r = np.broadcast_to(p, shape)
        else:
            r = (inp if beta == 1 else inp * beta) + p
    return np.array(np.broadcast_to(r, shape), dtype=rt)


@defop("addmv", node="AddmvBackward0", inputs=("self", "mat", "vec"),
       saved=("mat", "vec", "beta", "alpha"), saved_for={"mat": (2,), "vec": (1,)},
       broadcast=True, batch=lambda spec, arrays, params: _addmv_batched(*arrays, **params))
def addmv(self, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``; AddmvBackward0."""
    a, m, v = self, mat, vec
    if m.ndim != 2 or v.ndim != 1 or a.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {a.ndim}, {m.ndim}, {v.ndim}")
    if m.shape[1] != v.shape[0] or (a.ndim == 1 and a.shape[0] not in (1, m.shape[0])):
        shp = "" if a.ndim == 0 else str(a.shape[0])
        raise RuntimeError(f"size mismatch, got input ({shp}), mat ({m.shape[0]}x{m.shape[1]}), "
                           f"vec ({v.shape[0]})")
    if not (a.dtype == m.dtype == v.dtype):
        names = ", ".join(D.scalar_type_name(x.dtype) for x in (a, m, v))
        names = names.rsplit(", ", 1)
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{names[0]}, and {names[1]}")
    if m.dtype == np.bool_:
        raise NotImplementedError('"addmv_impl_cpu" not implemented for \'Bool\'')
    return _blend(a, m @ v, beta, alpha, (m.shape[0],), m.dtype)


def _addmv_batched(x, m, v, beta=1, alpha=1):
    """addmv over a leading batch axis (the input's own dims after it, as a row)."""
    prod = np.matmul(m, v[..., None])[..., 0]
    return _blend(x.reshape(len(x), -1), prod, beta, alpha, prod.shape, prod.dtype)


@addmv.backward
def _(ctx, grad):
    return blend_grads(ctx, grad, X.outer(grad, ctx.vec) if ctx.needs(1) else None,
                       X.matmul(X.transpose_last(ctx.mat), grad) if ctx.needs(2) else None)


@addmv.jvp
def _(ctx, tx, tm, tv):
    return _blend_jvp(ctx, tx, X.product_rule(ctx.mat, ctx.vec, tm, tv, X.matmul),
                      (ctx.shape(1)[0],))


addmv = addmv.fn


@defop("addr", node="AddrBackward0", inputs=("self", "vec1", "vec2"),
       saved=("vec1", "vec2", "beta", "alpha"), saved_for={"vec1": (2,), "vec2": (1,)},
       broadcast=True, promote="common",
       batch=lambda spec, arrays, params: _addr_batched(*arrays, **params))
def addr(self, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)`` (the inputs in their common dtype);
    AddrBackward0."""
    a, v1, v2 = self, vec1, vec2
    for nm, x in (("vec1", v1), ("vec2", v2)):
        if x.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {nm}, but got {x.ndim}-D")
    shape = (v1.shape[0], v2.shape[0])
    from .linalg import _expand_check
    _expand_check(a.shape, shape)
    return _addr(a, v1[:, None], v2[None, :], beta, alpha, shape)


def _addr(a, col, row, beta, alpha, shape):
    """addr of ``col`` times ``row`` (each broadcasting to ``shape``, batched or not)."""
    rt = a.dtype
    if rt == np.bool_:
        if not isinstance(beta, (bool, np.bool_, int)) or isinstance(beta, float):
            raise RuntimeError("For integral input tensors, argument beta must not be a floating "
                               "point number.")
        return np.array(np.broadcast_to((a & bool(beta)) | (col & row & bool(alpha)), shape))
    _scalar_check(rt, beta, "beta")
    _scalar_check(rt, alpha, "alpha")
    return _blend(a, col * row, beta, alpha, shape, rt)


def _addr_batched(a, v1, v2, beta=1, alpha=1):
    """addr over a leading batch axis (the input's dims aligned after it)."""
    shape = (len(v1), v1.shape[1], v2.shape[1])
    a = batch_aligned((a, np.empty(shape, bool)))[0]
    return _addr(a, v1[:, :, None], v2[:, None, :], beta, alpha, shape)


@addr.backward
def _(ctx, grad):
    # mv, as PyTorch's formula: vectors of another dtype than the result fail as in PyTorch
    return blend_grads(ctx, grad, ctx.op("mv", grad, ctx.vec2) if ctx.needs(1) else None,
                       ctx.op("mv", X.transpose_last(grad), ctx.vec1) if ctx.needs(2) else None)


@addr.jvp
def _(ctx, tx, t1, t2):
    return _blend_jvp(ctx, tx, X.product_rule(ctx.vec1, ctx.vec2, t1, t2, X.outer),
                      (ctx.shape(1)[0], ctx.shape(2)[0]))


addr = addr.fn


# --- trace, dist, cross ---------------------------------------------------------------------
@defop("trace", node="TraceBackward0", saved=("self_sym_sizes",), linear=True,
       batch=lambda spec, arrays, params: _trace(arrays[0], 1, 2))
def trace(self):
    """Sum of the main diagonal of a matrix; TraceBackward0."""
    if self.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    if self.dtype == np.bool_:
        raise NotImplementedError('"trace" not implemented for \'Bool\'')
    return _trace(self, 0, 1)


def _trace(a, axis1, axis2):
    """The trace over two axes, integers summed in int64 as PyTorch's."""
    return np.asarray(np.trace(a, axis1=axis1, axis2=axis2,
                               dtype=np.int64 if a.dtype.kind in "iu" else a.dtype))


@trace.backward
def _(ctx, grad):
    return X.const(np.eye(*ctx.self_sym_sizes, dtype=X.data(grad).dtype), grad) * grad,


trace = trace.fn


def _dist_p(p):
    """dist's ``p`` as a float (a 0-d tensor gives its value), with PyTorch's TypeError."""
    if isinstance(p, Tensor):
        p = p.item()
    if not isinstance(p, (int, float, np.number)) or isinstance(p, bool):
        raise TypeError(f"dist(): argument 'p' must be Number, not {D.type_name(p)}")
    return float(p)


@defop("dist", node="DistBackward0", inputs=("self", "other"),
       saved=("self", "other", "result", "p"), broadcast=True, promote="common",
       batch=lambda spec, arrays, params: _dist_batched(*arrays, **params))
def dist(self, other, p=2):
    """The p-norm of ``input - other`` (broadcast, in their common dtype); DistBackward0."""
    p = _dist_p(p)
    rt = self.dtype
    if rt == np.bool_:  # (PyTorch subtracts first)
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if rt not in D.INEXACT:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {D.scalar_type_name(rt)} instead.")
    _bcast(self.shape, other.shape)
    return _dist(self - other, p, None)


def _dist_batched(a, b, p=2):
    """dist over a leading batch axis."""
    a, b = batch_aligned((a, b))
    return _dist(a - b, p, tuple(range(1, a.ndim)))


def _dist(diff, p, axis):
    """The p-norm of ``diff`` over ``axis`` (None: all of it), in its real dtype."""
    diff = np.abs(diff)
    p = _dist_p(p)
    if math.isinf(p) and not diff.size:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty tensor "
                           f"because the operation does not have an identity")
    if p == 0:
        r = np.count_nonzero(diff, axis=axis)
    elif p == math.inf:
        r = diff.max(axis=axis)
    elif p == -math.inf:
        r = diff.min(axis=axis)
    else:
        r = (diff ** p).sum(axis=axis) ** (1.0 / p)
    return np.asarray(r, dtype=diff.dtype)


def _dist_direction(ctx, g):
    """The gradient of dist for ``self`` (of the broadcast shape; ``other``'s is its
    negative), PyTorch's norm_backward of ``self - other``."""
    a, b, res = ctx.self, ctx.other, ctx.result
    p = _dist_p(ctx.p)
    diff = a - b
    zero = X.data(res) == 0
    if p == 0:
        return X.zeros_like(diff) * g
    if p == 1:
        return X.sgn(diff) * g
    if p == 2:
        safe = X.where(X.const(zero, res), 1 + 0 * res, res)
        return X.where(X.const(zero, res), 0 * diff, diff / safe) * g
    ad = X.abs(diff)
    if math.isinf(p):
        m = X.const((X.data(ad) == X.data(res)).astype(X.data(diff).dtype), diff)
        return X.sgn(diff) * m * (g / m.sum())
    num = X.sgn(diff) * ad ** (p - 1)
    safe = X.where(X.const(zero, res), 1 + 0 * res, res)
    return X.where(X.const(zero, res), 0 * num, num / safe ** (p - 1)) * g


@dist.backward
def _(ctx, grad):
    gd = _dist_direction(ctx, grad)
    return gd if ctx.needs(0) else None, -gd if ctx.needs(1) else None


@dist.jvp
def _(ctx, ta, tb):
    # a scalar of the inputs: the tangent is the gradient's dot product with the tangents
    # (of complex inputs, a real function: the real part of conj(gradient) * tangent)
    gd = _dist_direction(ctx, 1)
    cplx = X.data(gd).dtype.kind == "c"

    def dot(t):
        return (X.real(X.conj(gd) * t) if cplx else gd * t).sum()

    out = None if ta is None else dot(ta)
    if tb is not None:
        out = -dot(tb) if out is None else out - dot(tb)
    return out


dist = dist.fn


def _cross_batched(spec, arrays, params):
    """linalg.cross over a leading batch axis: the dim moves one to the right."""
    a, b = arrays
    d = params.get("dim", -1)
    return spec.forward(a, b, dim=d if d < 0 else d + 1)


@defop("linalg_cross", node="LinalgCrossBackward0", inputs=("self", "other"),
       saved=("self", "other", "dim"), saved_for={"self": (1,), "other": (0,)}, broadcast=True,
       function=False, method=False, batch=_cross_batched)
def linalg_cross(self, other, *, dim=-1):
    """``torch.linalg.cross``: cross product along ``dim`` (default the last), the inputs
    broadcast; LinalgCrossBackward0."""
    a, b = self, other
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(a.dtype)} but found "
                           f"{D.scalar_type_name(b.dtype)}")
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if not isinstance(dim, (int, np.integer)):
        raise TypeError(f"linalg_cross(): argument 'dim' must be int, not {D.type_name(dim)}")
    shape = _bcast(a.shape, b.shape)
    k = _dim(int(dim), len(shape))
    if a.shape[k] != 3 or b.shape[k] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[k]} and {b.shape[k]}")
    if a.dtype == np.bool_:
        raise NotImplementedError('"cross" not implemented for \'Bool\'')
    r = np.cross(np.broadcast_to(a, shape), np.broadcast_to(b, shape), axis=k)
    return np.ascontiguousarray(r, dtype=a.dtype)


def _cross_of(ctx):
    """linalg.cross along the node's dim, for arrays or Tensors."""
    return lambda a, b: ctx.op("_linalg_cross", a, b, dim=ctx.dim)


@linalg_cross.backward
def _(ctx, grad):
    cross = _cross_of(ctx)
    return (cross(ctx.other, grad) if ctx.needs(0) else None,
            cross(grad, ctx.self) if ctx.needs(1) else None)


@linalg_cross.jvp
def _(ctx, ta, tb):
    return X.product_rule(ctx.self, ctx.other, ta, tb, _cross_of(ctx))


linalg_cross = linalg_cross.fn
linalg_cross.__name__ = "cross"


@composite()
def cross(input, other, dim=None):
    """Cross product along ``dim`` (by default the first dim of size 3, deprecated):
    ``linalg.cross`` along it (LinalgCrossBackward0), as PyTorch composes it."""
    if not isinstance(other, Tensor):
        raise D.not_tensor("cross", "other", 2, other)
    if dim is None:
        _warn.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                   "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                   "default value of dim will change to agree with that of linalg.cross in a "
                   "future release.", UserWarning)
        shape = _bcast(tuple(input.shape), tuple(other.shape))
        dims = [i for i, s in enumerate(shape) if s == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims[0]
    elif not isinstance(dim, Tensor):
        D.arg_int(dim, "cross", "dim", 3)
    return _pkg().linalg.cross(input, other, dim=raw_dim(dim))


# --- kron, tensordot, inner, multi_dot ------------------------------------------------------
@composite()
def kron(input, other):
    """Kronecker product (the smaller rank padded with leading 1s), composed as PyTorch's:
    two _unsafe_view reshapes, a broadcasting mul, and an _unsafe_view of the product
    (UnsafeViewBackward0 over MulBackward0); vmap runs it through its own rule."""
    _need_tensor("kron", "other", 2, other)
    n = max(input.dim(), other.dim())
    ash = (1,) * (n - input.dim()) + tuple(input.shape)
    bsh = (1,) * (n - other.dim()) + tuple(other.shape)
    # PyTorch reshapes the operands with _unsafe_view: the products save tensors of their own
    a = _unsafe_view(input, sum(((s, 1) for s in ash), ()))
    b = _unsafe_view(other, sum(((1, s) for s in bsh), ()))
    return _unsafe_view(a * b, tuple(x * y for x, y in zip(ash, bsh)))


def _td_dims(dims, na, nb):
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > na or dims > nb:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(-dims, 0)), list(range(dims))
    da, db = dims
    da = [da] if isinstance(da, (int, np.integer)) else list(da)
    db = [db] if isinstance(db, (int, np.integer)) else list(db)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    for d in da:
        _dim(int(d), na)
    for d in db:
        _dim(int(d), nb)
    return [int(d) for d in da], [int(d) for d in db]


@composite(method=False)
def tensordot(a, b, dims=2):
    """Contract ``dims`` of ``a`` with ``dims`` of ``b`` as PyTorch composes it: a contracted
    dim of size 1 on one side summed away on the other, both operands permuted (contracted
    dims last / first) and reshaped to matrices for one mm, the product reshaped to the
    result; a full contraction (nothing else left of either operand) is a dot of the flattened
    operands when both permutes are contiguous, else a product of the squeezed operands
    summed."""
    for x in (a, b):  # PyTorch's Python tensordot asks each for .dim() first
        if not isinstance(x, Tensor):
            raise AttributeError(f"'{type(x).__name__}' object has no attribute 'dim'")
    da, db = _td_dims(dims, a.dim(), b.dim())
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    t1, t2 = a, b
    csize = 1
    for x, y in zip(da, db):
        s1, s2 = a.shape[x], b.shape[y]
        if s2 == 1:  # a broadcast dim: summed right away
            t1 = t1.sum(x, True, dtype=t1.dtype)
        elif s1 == 1:
            t2 = t2.sum(y, True, dtype=t2.dtype)
        elif s1 != s2:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} in "
                               f"dim {x} and second has size {s2} in dim {y}")
        else:
            csize *= s1
    c1 = _dim_set(da, a.dim())
    c2 = _dim_set(db, b.dim())
    f1 = [i for i in range(a.dim()) if i not in c1]
    f2 = [i for i in range(b.dim()) if i not in c2]
    rsizes = tuple(t1.shape[i] for i in f1) + tuple(t2.shape[i] for i in f2)
    size1 = int(np.prod([t1.shape[i] for i in f1], dtype=np.int64))
    size2 = int(np.prod([t2.shape[i] for i in f2], dtype=np.int64))
    t1 = t1.permute(*(f1 + da))
    t2 = t2.permute(*(db + f2))
    if size1 != 1 or size2 != 1:
        return _pkg().mm(t1.reshape(size1, csize), t2.reshape(csize, size2)).reshape(rsizes)
    if t1.is_contiguous() and t2.is_contiguous():
        return _pkg().dot(t1.flatten(), t2.flatten()).reshape(rsizes)
    return (t1.squeeze() * t2.squeeze()).sum(dtype=t1.dtype).reshape(rsizes)


def _dim_set(dims, n):
    """ATen's dim_list_to_bitset: the wrapped dims, each at most once."""
    seen = set()
    for d in dims:
        k = _dim(d, max(n, 1))
        if k in seen:
            raise RuntimeError(f"dim {k} appears multiple times in the list of dims")
        seen.add(k)
    return seen


@composite()
def inner(input, other):
    """Inner product over the last dim (a product with a 0-d operand)."""
    _need_tensor("inner", "other", 2, other)
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got "
                           f"shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def _chain(mats):
    """Product of a list of matrices in the cheapest order (dynamic programming)."""
    n = len(mats)
    if n == 1:
        return mats[0]
    if n == 2:
        return _pkg().mm(mats[0], mats[1])
    p = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for ln in range(1, n):
        for i in range(n - ln):
            j = i + ln
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def build(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return _pkg().mm(build(i, k), build(k + 1, j))

    return build(0, n - 1)


def multi_dot(tensors):
    """``torch.linalg.multi_dot``: the product of 2+ matrices (the first and last may be 1-D),
    multiplied in the cheapest order."""
    ts = list(tensors)
    n = len(ts)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    if ts[0].dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got "
                           f"{ts[0].dim()}D")
    if ts[-1].dim() not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got "
                           f"{ts[-1].dim()}D")
    for i in range(1, n - 1):
        if ts[i].dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {ts[i].dim()}D")
    dt = ts[0].dtype
    for i, t in enumerate(ts[1:], 1):
        if t.dtype != dt:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {D.c_name(dt.np)} and tensor {i} {D.c_name(t.dtype.np)}")
    first_1d, last_1d = ts[0].dim() == 1, ts[-1].dim() == 1
    mats = [ts[0].unsqueeze(0) if first_1d else ts[0]] + ts[1:-1] + \
        [ts[-1].unsqueeze(-1) if last_1d else ts[-1]]
    for i in range(n - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(ts[i].shape)} and {list(ts[i + 1].shape)} cannot be "
                               f"multiplied")
    r = _chain(mats)
    shape = ((mats[0].shape[0],) if not first_1d else ()) + \
        ((mats[-1].shape[1],) if not last_1d else ())
    return r.view(shape)


@composite(method=False)
def chain_matmul(*matrices):
    """The product of 2-D matrices (deprecated in PyTorch for linalg.multi_dot)."""
    _warn.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
               "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
               "more tensors rather than multiple parameters.", UserWarning)
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        if not isinstance(m, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(m).__name__}")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if len(matrices) == 1:
        return matrices[0].clone()
    return multi_dot(matrices)


# --- aliases --------------------------------------------------------------------------------
@composite(method=False)
def swapaxes(input, axis0, axis1):
    """Alias of ``transpose``."""
    return input.transpose(axis0, axis1)


@composite(method=False)
def swapdims(input, dim0, dim1):
    """Alias of ``transpose``."""
    return input.transpose(dim0, dim1)


_NO_DIM = object()


def _softmax_like(name, input, dim, dtype):
    from . import activation as F
    if dim is _NO_DIM:
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    return getattr(F, name)(input, dim, dtype=dtype)


@composite()
def softmax(input, dim=_NO_DIM, dtype=None):
    """Softmax along ``dim`` (after a cast to ``dtype`` when given); SoftmaxBackward0."""
    return _softmax_like("softmax", input, dim, dtype)


@composite()
def log_softmax(input, dim=_NO_DIM, dtype=None):
    """Log-softmax along ``dim`` (after a cast to ``dtype`` when given); LogSoftmaxBackward0."""
    return _softmax_like("log_softmax", input, dim, dtype)
