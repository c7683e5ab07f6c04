"""Replay kernels for convolution, max pooling and ReLU's gradient, specialised at capture for
the guarded shapes.

The general kernels (``ops.conv``, ``ops.pool``) allocate and zero a padded input, copy it
into im2col columns, transpose the product and add the bias in two passes, find max-pooling
maxima with flat int64 indices and scatter gradients back with ``put_along_axis``.  Knowing
the shapes, the kernels here keep the padded input (its zero border written once), the
product and the col2im accumulator as arrays of their own, add the bias while transposing,
and pool over disjoint windows with an offset code per window instead of an index.  Each one
runs the same NumPy products and additions, in the same order, as eager, so its results are
eager's bit for bit; the capture checks that, and keeps the general kernel when a fast one
does not reproduce the eager result.

Scratch arrays (padded input, products, accumulators) belong to one kernel object, so one
capture's replay reuses them; every result the program keeps (outputs, columns, window codes,
gradients) is a new array each call, as the general kernels give.
"""
from __future__ import annotations

import itertools

import numpy as np

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_UINT = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def _float(*arrays) -> bool:
    """All the arrays of one float32 or float64 dtype (the dtypes the fast kernels handle)."""
    dt = arrays[0].dtype
    return dt in _FLOATS and all(a.dtype == dt for a in arrays)


# --- ReLU's gradient -------------------------------------------------------------------------
def relu_backward(g, x, y):
    """ReluBackward0's ``where(y <= 0, 0, g)`` as a bit mask: ``g``'s bits where ``y > 0`` (or
    NaN), +0 elsewhere; the same values as ``np.where`` without its branch per element."""
    if not (isinstance(g, np.ndarray) and isinstance(y, np.ndarray) and g.shape == y.shape
            and _float(g, y) and g.ndim):
        return np.where(y <= 0, g.dtype.type(0), g)
    u = _UINT[g.dtype]
    mask = np.subtract(np.less_equal(y, 0).view(np.uint8), u(1), dtype=u)
    return np.bitwise_and(g.view(u), mask, out=mask).view(g.dtype)


# --- convolution -----------------------------------------------------------------------------
def _padded(shape, P):
    return shape[:2] + tuple(n + a + b for n, a, b in zip(shape[2:], P.p[0::2], P.p[1::2]))


def _inner(P, xs):
    """The index of the input inside its padded array."""
    return (slice(None),) * 2 + tuple(slice(a, a + n) for n, a in zip(xs, P.p[0::2]))


class _Columns:
    """im2col of inputs of one shape into new (G, C/G*prod(kernel), N*prod(out)) arrays: the
    padded input is an array of this object whose border stays zero."""

    def __init__(self, xshape, dtype, P):
        from ..ops import conv
        self.P = P
        self.xshape = tuple(xshape)
        N, C = xshape[:2]
        nd = len(P.ks)
        self.perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
        self.shape = (P.G, (C // P.G) * int(np.prod(P.ks)), N * int(np.prod(P.os)))
        self.shape6 = (C,) + P.ks + (N,) + P.os
        self.xp = None
        if any(P.p):
            self.xp = np.zeros(_padded(self.xshape, P), dtype)
            self.inner = _inner(P, self.xshape[2:])
            self.win = conv._windows(self.xp, P).transpose(self.perm)
        self.dtype = dtype

    def __call__(self, x):
        from ..ops import conv
        if self.xp is not None:
            self.xp[self.inner] = x
            win = self.win
        else:
            win = conv._windows(x, self.P).transpose(self.perm)
        cols = np.empty(self.shape, self.dtype)
        np.copyto(cols.reshape(self.shape6), win)
        return cols


class ConvForward:
    """``convolution(x, w, b)`` and the input's columns (which the weight's gradient reads), for
    one geometry and shape: the product into an array of its own, the bias added while the
    result is transposed to (N, O, *out)."""

    def __init__(self, P, x, w, b):
        N, O = x.shape[0], w.shape[0]
        self.P = P
        self.columns = _Columns(x.shape, x.dtype, P)
        G, K, L = self.columns.shape
        self.prod = np.empty((G, O // G, L), x.dtype)
        self.prod_t = self.prod.reshape((O, N) + P.os).swapaxes(0, 1)
        self.bshape = (1, O) + (1,) * len(P.ks)
        self.oshape = (N, O) + P.os
        self.wshape = (G, O // G, K)
        self.__name__ = "convolution"

    def __call__(self, x, w, b):
        cols = self.columns(x)
        np.matmul(w.reshape(self.wshape), cols, out=self.prod)
        y = np.empty(self.oshape, x.dtype)
        if b is None:
            np.copyto(y, self.prod_t)
        else:
            np.add(self.prod_t, b.reshape(self.bshape), out=y)
        return y, cols


class ConvInputGrad:
    """The input's gradient of a convolution (``_bilinear_np('X', g, w, P)``): the columns'
    product into an array of its own, col2im adding into a zeroed (C, N, *padded) accumulator
    in eager's order of kernel offsets, then the crop transposed to (N, C, *in)."""

    def __init__(self, P, g, w):
        O, Cg = w.shape[:2]
        N = g.shape[0]
        C = Cg * P.G
        self.P = P
        L = N * int(np.prod(P.os))
        self.gcols = np.empty((P.G, O // P.G, L), g.dtype)
        self.gcols_t = self.gcols.reshape((O, N) + P.os).swapaxes(0, 1)
        self.dcols = np.empty((P.G, Cg * int(np.prod(P.ks)), L), g.dtype)
        d6 = self.dcols.reshape((C,) + P.ks + (N,) + P.os)
        self.wshape = (P.G, O // P.G, -1)
        self.oshape = (N, C) + P.xs
        padded = tuple(n + a + b for n, a, b in zip(P.xs, P.p[0::2], P.p[1::2]))
        self.__name__ = "convolution_input_grad"
        if all(k == 1 for k in P.ks) and all(s == 1 for s in P.s) and P.os == padded:
            # eager reads the product itself (no sum over kernel offsets)
            self.crop = d6[(slice(None),) + (0,) * len(P.ks)][_inner(P, P.xs)].swapaxes(0, 1)
            self.adds = ()
            return
        self.acc = np.zeros((C, N) + padded, g.dtype)
        self.adds = []
        for pos in itertools.product(*(range(k) for k in P.ks)):
            dst = self.acc[(slice(None),) * 2 + tuple(
                slice(i * d, i * d + s * (o - 1) + 1, s)
                for i, d, s, o in zip(pos, P.d, P.s, P.os))]
            self.adds.append((dst, d6[(slice(None),) + pos]))
        self.crop = self.acc[_inner(P, P.xs)].swapaxes(0, 1)

    def __call__(self, kind, g, w, P, cols=None, meta=()):
        np.copyto(self.gcols_t, g)
        np.matmul(w.reshape(self.wshape).transpose(0, 2, 1), self.gcols, out=self.dcols)
        if self.adds:
            self.acc.fill(0)
            for dst, src in self.adds:
                np.add(dst, src, out=dst)
        out = np.empty(self.oshape, g.dtype)
        np.copyto(out, self.crop)
        return out


class ConvWeightGrad:
    """The weight's gradient of a convolution (``_bilinear_np('W', x, g, P, cols)``): the
    output gradient laid out as (G, O/G, N*prod(out)) in an array of its own, times the
    input's columns (made here when the forward's are not given)."""

    def __init__(self, P, x, g, wshape):
        N, O = g.shape[:2]
        self.P = P
        L = N * int(np.prod(P.os))
        self.gcols = np.empty((P.G, O // P.G, L), g.dtype)
        self.gcols_t = self.gcols.reshape((O, N) + P.os).swapaxes(0, 1)
        self.columns = _Columns(x.shape, x.dtype, P)
        self.wshape = tuple(wshape)
        self.__name__ = "convolution_weight_grad"

    def __call__(self, kind, x, g, P, cols=None, meta=()):
        if cols is None:
            cols = self.columns(x)
        np.copyto(self.gcols_t, g)
        return np.matmul(self.gcols, cols.transpose(0, 2, 1)).reshape(self.wshape)


def forward_kernel(P, x, w, b):
    """A ``ConvForward`` for these arrays, or None when the general kernel must run (another
    dtype than float32/float64, mixed dtypes)."""
    arrays = (x, w) if b is None else (x, w, b)
    if not _float(*arrays) or x.ndim != 2 + len(P.ks):
        return None
    return ConvForward(P, x, w, b)


def bilinear_kernel(args, arrays):
    """A specialised kernel for a recorded ``_bilinear_np(kind, a, b, P, cols)`` of a
    convolution's backward (``arrays``: its arguments' values at capture), or None."""
    from ..ops.conv import _P
    if len(arrays) < 4 or type(arrays[3]) is not _P:
        return None
    kind, a, b, P = arrays[:4]
    cols = arrays[4] if len(arrays) > 4 else None
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and _float(a, b)):
        return None
    nd = len(P.ks)
    if a.ndim != 2 + nd or b.ndim != 2 + nd:
        return None
    if kind == "X":
        if a.shape[2:] != P.os or b.shape[2:] != P.ks:
            return None
        return ConvInputGrad(P, a, b)
    if kind == "W":
        if a.shape[2:] != P.xs or b.shape[2:] != P.os or \
                (cols is not None and not (isinstance(cols, np.ndarray) and _float(a, cols))):
            return None
        return ConvWeightGrad(P, a, b, (b.shape[1], a.shape[1] // P.G) + P.ks)
    return None


# --- max pooling over disjoint windows ---------------------------------------------------------
class MaxPool2d:
    """``max_pool2d`` with stride equal to the kernel, no padding or dilation and every window
    inside the input: the maxima and, per window, the offset (``i * kw + j``) of its first
    maximum (NaN winning), found as eager finds them over the kernel offsets.  The strided
    offsets are copied once to contiguous planes (NumPy's ufuncs are several times slower on
    strided operands than a strided copy is)."""

    def __init__(self, x, k, oh, ow):
        kh, kw = k
        self.k = k
        self.views = [(..., slice(i, i + kh * (oh - 1) + 1, kh), slice(j, j + kw * (ow - 1) + 1, kw))
                      for i in range(kh) for j in range(kw)]
        self.oshape = x.shape[:-2] + (oh, ow)
        self.at = np.int8 if kh * kw < 128 else np.int32
        self.planes = np.empty((kh * kw,) + self.oshape, x.dtype)
        self.take = np.empty(self.oshape, bool)
        self.dk = np.empty(self.oshape, self.at)
        self.xshape = x.shape
        # the windows cover the input: every element is written by backward's offsets
        self.covers = oh * kh == x.shape[-2] and ow * kw == x.shape[-1]
        u = _UINT[x.dtype]
        self.eq = np.empty(self.oshape, bool)
        self.key = np.empty(self.oshape, self.at)
        self.mask = np.empty(self.oshape, u)
        self.u = u
        self.__name__ = "max_pool2d"

    def __call__(self, x, k, s, p, d, ceil_mode):
        planes = self.planes
        for q, view in enumerate(self.views):
            np.copyto(planes[q], x[view])
        best = planes[0].copy()
        code = np.zeros(self.oshape, self.at)
        take, dk, at = self.take, self.dk, self.at
        for q in range(1, len(planes)):
            v = planes[q]
            np.greater(v, best, out=take)
            np.maximum(best, v, out=best)
            np.subtract(at(q), code, out=dk, dtype=at)
            np.multiply(dk, take.view(np.int8), out=dk, dtype=at)   # (no cast of the mask)
            np.add(code, dk, out=code)
        if np.isnan(best).any():   # a NaN in a window: it wins, as in eager
            best, code = self._with_nan(x)
        return best, code

    def _with_nan(self, x):
        views = self.views
        best = x[views[0]].copy()
        code = np.zeros(self.oshape, self.at)
        for q in range(1, len(views)):
            v = x[views[q]]
            take = (v > best) | (np.isnan(v) & ~np.isnan(best))
            np.maximum(best, v, out=best)
            dk = np.subtract(self.at(q), code, dtype=self.at)
            dk *= take
            code += dk
        return best, code

    def _scatter(self, g, key):
        """``g`` at offset ``key`` of each window (none where ``key`` is -1), +0 elsewhere:
        what eager's scatter into zeros gives, written offset by offset through a bit mask."""
        gx = (np.empty if self.covers else np.zeros)(self.xshape, g.dtype)
        u, eq, mask = self.u, self.eq, self.mask
        gu = g.view(u)
        for q, view in enumerate(self.views):
            np.equal(key, q, out=eq)
            np.subtract(0, eq.view(np.uint8), out=mask, dtype=u)   # all ones where equal
            np.bitwise_and(gu, mask, out=mask)
            np.copyto(gx[view], mask.view(g.dtype))
        return gx

    def backward(self, g, code):
        """The input's gradient: ``g`` at each window's maximum, +0 elsewhere."""
        return self._scatter(g, code)

    def backward_relu(self, g, code, pooled):
        """``backward`` followed by the gradient of the ReLU that gave the input: +0 also
        where the window's maximum is <= 0 (the ReLU's output there)."""
        np.less_equal(pooled, 0, out=self.eq)
        np.bitwise_or(code, np.negative(self.eq.view(np.int8)), out=self.key)
        return self._scatter(g, self.key)


def max_pool_kernel(x, k, s, p, d, ceil_mode):
    """A ``MaxPool2d`` for this input and geometry, or None when windows overlap, are padded,
    dilated or reach past the input (the general kernel runs)."""
    from ..ops import pool
    if not isinstance(x, np.ndarray) or x.dtype not in _FLOATS or x.ndim not in (3, 4) or \
            tuple(k) != tuple(s) or any(p) or any(v != 1 for v in d):
        return None
    H, W = x.shape[-2:]
    (kh, kw), (sh, sw) = k, s
    oh = pool.pool_out(H, kh, sh, 0, 1, ceil_mode)
    ow = pool.pool_out(W, kw, sw, 0, 1, ceil_mode)
    if oh < 1 or ow < 1 or oh * kh > H or ow * kw > W or 0 in x.shape:
        return None
    return MaxPool2d(x, k, oh, ow)
