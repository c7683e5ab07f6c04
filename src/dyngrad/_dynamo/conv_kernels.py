"""Replay kernels for convolution and max pooling, specialised at capture for the guarded
shapes (ReLU's gradient is written by the replay's own lines: ``lowering._relu_bw``).

The general kernels (``ops.conv``, ``ops.pool``) allocate and zero a padded input, copy it
into im2col columns one output row at a time, transpose the product and add the bias in two
passes, find max-pooling maxima with flat int64 indices and scatter gradients back with
``put_along_axis``.  Knowing the shapes, the kernels here

* build the columns of a stride-1 convolution whose output rows are as wide as its input's
  ("same" padding) as one flat range per image and kernel offset (zeroing what falls in the
  padding), and sum them back (col2im) the same way;
* compute the products one per sample, straight in (N, C, ...) order, without the transposing
  copies, where BLAS gives the bits of eager's one product over the batch (probed once per
  shape on random values, ``_same_product``), block by block of samples so that the columns
  stay in cache while they are summed back;
* pool over disjoint windows with contiguous copies of the window offsets and an offset code
  per window instead of an index, scatter the gradient through bit masks, and, when the
  pooled tensor is a ReLU's output, apply the ReLU's gradient there, on the windows' maxima.

Each one runs the same products and additions, in the same order, as eager (adding a zero,
the only extra step, changes no sum), so its results are eager's bit for bit; the capture
checks that and keeps the general kernel when a fast one does not reproduce the eager result.

Scratch arrays (products, planes, masks) belong to one kernel object, so one capture's replay
reuses them; every result the program keeps (outputs, columns, window codes, gradients) is a
new array each call, as the general kernels give.
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
        self.dtype = dtype
        self.flat = None
        if nd == 2 and P.s == (1, 1) and P.os[1] == xshape[3]:
            self._flat_planes()
        elif any(P.p):
            self.xp = np.zeros(_padded(self.xshape, P), dtype)
            self.inner = _inner(P, self.xshape[2:])
            self.win = conv._windows(self.xp, P).transpose(self.perm)

    def _flat_planes(self):
        """For a stride-1 convolution whose output rows are as wide as the input's, each
        kernel offset's row of columns is, per image, one flat range of the input shifted by
        the offset, with the columns and rows that fall in the padding set to zero: long
        contiguous copies instead of one short copy per output row."""
        P = self.P
        (H, W), (oh, ow) = self.xshape[2:], P.os
        (dh, dw), ph, pw = P.d, P.p[0], P.p[2]
        self.flat = []
        for i in range(P.ks[0]):
            y0, y1 = max(0, ph - i * dh), min(oh, H + ph - i * dh)
            for j in range(P.ks[1]):
                x0, x1 = max(0, pw - j * dw), min(ow, W + pw - j * dw)
                off = (i * dh - ph) * W + (j * dw - pw)
                if y0 >= y1 or x0 >= x1:
                    self.flat.append((i, j, None, None, 0, 0))
                    continue
                s0, s1 = max(y0 * ow, -off), min(y1 * ow, H * W - off)
                self.flat.append((i, j, slice(s0, s1), slice(s0 + off, s1 + off),
                                  x0, x1))

    def _flat_call(self, x):
        N, C, H, W = self.xshape
        oh, ow = self.P.os
        cols = np.empty(self.shape, self.dtype)
        c5 = cols.reshape((C,) + self.P.ks + (N, oh * ow))
        xs = x.reshape(N, C, H * W).swapaxes(0, 1)
        for i, j, dst, src, x0, x1 in self.flat:
            plane = c5[:, i, j]
            if dst is None:
                plane.fill(0)
                continue
            np.copyto(plane[..., dst], xs[..., src])
            plane[..., :dst.start] = 0
            plane[..., dst.stop:] = 0
            rows = plane.reshape(C, N, oh, ow)
            if x0 > 0:
                rows[..., :x0] = 0
            if x1 < ow:
                rows[..., x1:] = 0
        return cols

    def __call__(self, x):
        from ..ops import conv
        if self.flat is not None:
            return self._flat_call(x)
        if self.xp is not None:
            self.xp[self.inner] = x
            win = self.win
        else:
            win = conv._windows(x, self.P).transpose(self.perm)
        cols = np.empty(self.shape, self.dtype)
        np.copyto(cols.reshape(self.shape6), win)
        return cols


_PROBED: dict = {}
_BLOCK_BYTES = 1 << 20


def _same_product(key, whole, per_sample, shapes, dtype) -> bool:
    """Whether the product computed per sample (one matrix product per batch element, writing
    its (N, rows, L) result in place) gives the bits of the one product over the whole batch
    that eager computes: BLAS may block a smaller product differently and sum in another
    order.  Decided once per shape on random values (on which another order shows)."""
    k = (key, shapes, np.dtype(dtype).str)
    r = _PROBED.get(k)
    if r is None:
        rng = np.random.default_rng(0)
        arrays = []
        for sh in shapes:   # uniform in [-1, 1)
            a = rng.random(sh, dtype=dtype)
            np.multiply(a, 2, out=a)
            np.subtract(a, 1, out=a)
            arrays.append(a)
        a = np.ascontiguousarray(whole(*arrays))
        b = np.ascontiguousarray(per_sample(*arrays))
        r = _PROBED[k] = a.shape == b.shape and a.tobytes() == b.tobytes()
    return r


def _fwd_whole(w, cols):
    O, N, L = w.shape[0], cols.shape[1], cols.shape[2]
    return np.matmul(w[None], cols.reshape(1, -1, N * L)).reshape(O, N, L).swapaxes(0, 1)


def _fwd_per_sample(w, cols):
    return np.matmul(w, cols.swapaxes(0, 1))


def _adj_whole(w, g):
    N, O, L = g.shape
    gcols = np.ascontiguousarray(g.swapaxes(0, 1)).reshape(1, O, N * L)
    return np.matmul(w[None].transpose(0, 2, 1), gcols).reshape(-1, N, L).swapaxes(0, 1)


def _adj_per_sample(w, g):
    return np.matmul(w.T, g)


class ConvForward:
    """``convolution(x, w, b)`` and the input's columns (which the weight's gradient reads), for
    one geometry and shape.  Without groups, when BLAS gives the same bits that way
    (``_same_product``), the product is one per sample written straight in (N, O, *out) order
    and the bias added in place; else the product over the whole batch into an array of its
    own and the bias added while transposing it to (N, O, *out)."""

    def __init__(self, P, x, w, b):
        N, O = x.shape[0], w.shape[0]
        self.P = P
        self.columns = _Columns(x.shape, x.dtype, P)
        G, K, L = self.columns.shape
        self.bshape = (1, O) + (1,) * len(P.ks)
        self.oshape = (N, O) + P.os
        self.wshape = (G, O // G, K)
        self.nshape = (N, O, L // N)
        self.per_sample = G == 1 and _same_product(
            "conv", _fwd_whole, _fwd_per_sample, ((O, K), (K, N, L // N)), x.dtype)
        self.block = max(1, min(N, _BLOCK_BYTES // (O * (L // N) * x.dtype.itemsize)))
        if not self.per_sample:
            self.prod = np.empty((G, O // G, L), x.dtype)
            self.prod_t = self.prod.reshape((O, N) + P.os).swapaxes(0, 1)
        self.__name__ = "convolution"

    def __call__(self, x, w, b):
        cols = self.columns(x)
        y = np.empty(self.oshape, x.dtype)
        if self.per_sample:   # block by block of samples, the bias added while in cache
            N, blk = self.nshape[0], self.block
            c = cols.reshape(self.wshape[2], N, self.nshape[2]).swapaxes(0, 1)
            w2, y3 = w.reshape(self.wshape[1:]), y.reshape(self.nshape)
            bias = None if b is None else b.reshape(-1, 1)
            for n0 in range(0, N, blk):
                yb = y3[n0:n0 + blk]
                np.matmul(w2, c[n0:n0 + blk], out=yb)
                if bias is not None:
                    np.add(yb, bias, out=yb)
            return y, cols
        np.matmul(w.reshape(self.wshape), cols, out=self.prod)
        if b is None:
            np.copyto(y, self.prod_t)
        else:
            np.add(self.prod_t, b.reshape(self.bshape), out=y)
        return y, cols


class ConvInputGrad:
    """The input's gradient of a convolution (``_bilinear_np('X', g, w, P)``): the columns'
    product into an array of its own (one product per sample, straight from the gradient,
    when BLAS gives eager's bits that way, see ``_same_product``), then col2im adding into a
    zeroed padded accumulator in eager's order of kernel offsets, then the crop."""

    def __init__(self, P, g, w):
        O, Cg = w.shape[:2]
        N = g.shape[0]
        C = Cg * P.G
        self.P = P
        Lo = int(np.prod(P.os))
        K = Cg * int(np.prod(P.ks))
        self.wshape = (P.G, O // P.G, -1)
        self.oshape = (N, C) + P.xs
        self.gshape = (N, O, Lo)
        self.per_sample = P.G == 1 and _same_product(
            "adj", _adj_whole, _adj_per_sample, ((O, K), (N, O, Lo)), g.dtype)
        padded = tuple(n + a + b for n, a, b in zip(P.xs, P.p[0::2], P.p[1::2]))
        # a 1x1 kernel at stride 1 over the padded input: eager reads the product itself
        direct = all(k == 1 for k in P.ks) and all(s == 1 for s in P.s) and P.os == padded
        flat = not direct and len(P.ks) == 2 and P.s == (1, 1) and P.os[1] == P.xs[1]
        # samples per product: with col2im by flat ranges, a block of samples whose columns
        # stay in cache while they are added (one block is the whole batch otherwise)
        self.block = max(1, min(N, _BLOCK_BYTES // (K * Lo * g.dtype.itemsize))) \
            if flat and self.per_sample else N
        if self.per_sample:   # dcols as (N, C, *kernel, *out)
            self.dcols = np.empty((self.block, K, Lo), g.dtype)
            d6 = self.dcols.reshape((self.block, C) + P.ks + P.os)
            lead = (slice(None),) * 2
            first = (N, C)
        else:                 # (C, *kernel, N, *out), as eager
            self.gcols = np.empty((P.G, O // P.G, N * Lo), g.dtype)
            self.gcols_t = self.gcols.reshape((O, N) + P.os).swapaxes(0, 1)
            self.dcols = np.empty((P.G, K, N * Lo), g.dtype)
            d6 = self.dcols.reshape((C,) + P.ks + (N,) + P.os)
            lead = (slice(None),)
            first = (C, N)
        nd = len(P.ks)

        def at(pos):   # the columns' product at one kernel offset
            return d6[lead + pos]
        self.__name__ = "convolution_input_grad"
        swap = (lambda a: a) if self.per_sample else (lambda a: a.swapaxes(0, 1))
        if direct:   # (no sum over kernel offsets)
            self.crop = swap(at((0,) * nd)[_inner(P, P.xs)])
            self.adds, self.flat = (), None
            return
        self.flat = None
        if flat:
            self.flat = first + (P.xs[0] * P.xs[1],)
            if self.per_sample:
                last = N % self.block
                self.adds = self._flat_adds(d6, (self.block, C))
                self.adds_last = self._flat_adds(d6[:last], (last, C)) if last else None
            else:
                self.adds = self._flat_adds(d6, first)
            return
        self.acc = np.zeros(first + padded, g.dtype)
        self.adds = []
        for pos in itertools.product(*(range(k) for k in P.ks)):
            dst = self.acc[(slice(None),) * 2 + tuple(
                slice(i * d, i * d + s * (o - 1) + 1, s)
                for i, d, s, o in zip(pos, P.d, P.s, P.os))]
            self.adds.append((dst, at(pos)))
        self.crop = swap(self.acc[_inner(P, P.xs)])

    def _flat_adds(self, d6, first):
        """col2im of a stride-1 convolution whose output rows are as wide as the input's:
        each kernel offset's plane is added into the unpadded (first..., H*W) accumulator as
        one flat range per image (input row stride = output row stride), after zeroing its
        columns that fall in the padding (eager adds those into the border it crops; here
        they would wrap to the neighbouring row, and adding a zero leaves every sum as it is:
        the accumulator starts at +0 and never holds -0)."""
        P = self.P
        (H, W), (oh, ow) = P.xs, P.os
        (dh, dw), ph, pw = P.d, P.p[0], P.p[2]
        adds = []
        for i in range(P.ks[0]):
            y0, y1 = max(0, ph - i * dh), min(oh, H + ph - i * dh)
            for j in range(P.ks[1]):
                plane = d6[(slice(None),) * 2 + (i, j)] if self.per_sample else \
                    d6[(slice(None), i, j)]
                x0, x1 = max(0, pw - j * dw), min(ow, W + pw - j * dw)
                if y0 >= y1 or x0 >= x1:
                    continue
                zero = ((plane[..., :x0],) if x0 > 0 else ()) + \
                    ((plane[..., x1:],) if x1 < ow else ())
                off = (i * dh - ph) * W + (j * dw - pw)
                s0, s1 = max(y0 * ow, -off), min(y1 * ow, H * W - off)
                src = plane.reshape(first + (oh * ow,))[..., s0:s1]
                adds.append((slice(s0 + off, s1 + off), src, zero))
        return adds

    @staticmethod
    def _add_planes(acc, adds):
        for dst, src, zero in adds:
            for z in zero:
                z.fill(0)
            d = acc[..., dst]
            np.add(d, src, out=d)

    def _flat_col2im(self, dt, g=None, w=None):
        acc = np.zeros(self.flat, dt)
        if not self.per_sample:
            self._add_planes(acc, self.adds)
        else:   # products and col2im block by block of samples
            N, b = self.flat[0], self.block
            wt = w.reshape(self.wshape[1:]).T
            gg = np.ascontiguousarray(g.reshape(self.gshape))
            for n0 in range(0, N, b):
                m = min(b, N - n0)
                np.matmul(wt, gg[n0:n0 + m], out=self.dcols[:m])
                self._add_planes(acc[n0:n0 + m], self.adds if m == b else self.adds_last)
            return acc.reshape(self.oshape)
        out = np.empty(self.oshape, dt)
        np.copyto(out, acc.reshape(self.flat[:2] + self.P.xs).swapaxes(0, 1))
        return out

    def __call__(self, kind, g, w, P, cols=None, meta=()):
        if self.flat is not None and self.per_sample:
            return self._flat_col2im(g.dtype, g, w)
        if self.per_sample:
            np.matmul(w.reshape(self.wshape[1:]).T,
                      np.ascontiguousarray(g.reshape(self.gshape)), out=self.dcols)
        else:
            np.copyto(self.gcols_t, g)
            np.matmul(w.reshape(self.wshape).transpose(0, 2, 1), self.gcols, out=self.dcols)
        if self.flat is not None:
            return self._flat_col2im(g.dtype)
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
    offsets are copied to contiguous planes (NumPy's ufuncs are several times slower on
    strided operands than a strided copy is), block by block of images so that the planes
    stay in cache for the comparisons that follow.  ``relu``: the input is a ReLU's output,
    whose gradient the backward applies too: the code is -1 (no offset) where the window's
    maximum is <= 0 (the ReLU's output there)."""

    def __init__(self, x, k, oh, ow, relu=False):
        kh, kw = k
        self.relu = relu
        self.views = [(..., slice(i, i + kh * (oh - 1) + 1, kh), slice(j, j + kw * (ow - 1) + 1, kw))
                      for i in range(kh) for j in range(kw)]
        self.oshape = x.shape[:-2] + (oh, ow)
        H, W = x.shape[-2:]
        self.lead = int(np.prod(x.shape[:-2]))
        self.xshape3 = (self.lead, H, W)
        self.oshape3 = (self.lead, oh, ow)
        self.block = max(1, min(self.lead, _BLOCK_BYTES // (H * W * x.dtype.itemsize)))
        bshape = (self.block, oh, ow)
        self.at = np.int8 if kh * kw < 128 else np.int32
        self.planes = np.empty((kh * kw,) + bshape, x.dtype)
        self.take = np.empty(bshape, bool)
        self.dk = np.empty(bshape, self.at)
        self.xshape = x.shape
        # the windows cover the input: every element is written by backward's offsets
        self.covers = oh * kh == H and ow * kw == W
        u = _UINT[x.dtype]
        self.eq = np.empty(bshape, bool)
        self.mask = np.empty(bshape, u)
        self.u = u
        self.__name__ = "max_pool2d"

    def _blocks(self):
        b = self.block
        return [(b0, min(b, self.lead - b0)) for b0 in range(0, self.lead, b)]

    def __call__(self, x, k, s, p, d, ceil_mode):
        xb = x.reshape(self.xshape3)
        best_, code_ = np.empty(self.oshape, x.dtype), np.zeros(self.oshape, self.at)
        best, code = best_.reshape(self.oshape3), code_.reshape(self.oshape3)
        at = self.at
        for b0, m in self._blocks():
            planes = self.planes[:, :m]
            xs = xb[b0:b0 + m]
            for q, view in enumerate(self.views):
                np.copyto(planes[q], xs[view])
            bst, cd = best[b0:b0 + m], code[b0:b0 + m]
            take, dk = self.take[:m], self.dk[:m]
            np.copyto(bst, planes[0])
            for q in range(1, len(planes)):
                v = planes[q]
                np.greater(v, bst, out=take)
                np.maximum(bst, v, out=bst)
                np.subtract(at(q), cd, out=dk, dtype=at)
                np.multiply(dk, take.view(np.int8), out=dk, dtype=at)   # (no cast of the mask)
                np.add(cd, dk, out=cd)
        if np.isnan(best).any():   # a NaN in a window: it wins, as in eager
            best_, code_ = self._with_nan(x)
        if self.relu:
            le = np.less_equal(best_, 0)
            np.bitwise_or(code_, np.negative(le.view(np.int8)), out=code_)
        return best_, code_

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
        gx_ = (np.empty if self.covers else np.zeros)(self.xshape, g.dtype)
        gx = gx_.reshape(self.xshape3)
        u = self.u
        gu = g.reshape(self.oshape3).view(u)
        key = key.reshape(self.oshape3)
        for b0, m in self._blocks():
            eq, mask = self.eq[:m], self.mask[:m]
            gs, ks, xs = gu[b0:b0 + m], key[b0:b0 + m], gx[b0:b0 + m]
            for q, view in enumerate(self.views):
                np.equal(ks, q, out=eq)
                np.subtract(0, eq.view(np.uint8), out=mask, dtype=u)   # all ones where equal
                np.bitwise_and(gs, mask, out=mask)
                np.copyto(xs[view], mask.view(g.dtype))
        return gx_

    def backward(self, g, code):
        """The input's gradient: ``g`` at each window's maximum, +0 elsewhere (and, after a
        ReLU, where the maximum is <= 0)."""
        return self._scatter(g, code)


def max_pool_kernel(x, k, s, p, d, ceil_mode, relu=False):
    """A ``MaxPool2d`` for this input and geometry (``relu``: the input is a ReLU's output),
    or None when windows overlap, are padded, dilated or reach past the input (the general
    kernel runs)."""
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
    return MaxPool2d(x, k, oh, ow, relu)
