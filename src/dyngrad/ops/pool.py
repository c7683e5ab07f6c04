"""Pooling, padding and resampling.

Max pooling gathers the window maximum by flat index (backward scatters it back).  Average
and adaptive-average pooling, reflect/replicate padding and nearest/linear interpolation are
all separable linear maps: one small matrix per spatial axis, applied with matrix products;
the backward applies the transposed matrices, so every order of derivative is the same op."""
from __future__ import annotations


import numpy as np

from .. import _dtype as D
from .._record import STATE, Node, Saved, Tensor, edge_of, record
from . import _dual as X
from .. import _dtype as _DT

_make = Tensor._make


# --- separable linear maps ------------------------------------------------------------
def _apply_axis(y, M, axis):
    nd = y.ndim
    axis %= nd
    with np.errstate(invalid="ignore"):
        if axis == nd - 1:
            r = y @ M.T
        elif axis == nd - 2:
            r = np.matmul(M, y)
        else:
            r = np.moveaxis(np.tensordot(M, y, axes=([1], [axis])), 0, axis)
    if r.dtype in _DT.INEXACT and np.isnan(r).any():
        # an inf or nan times a zero weight is nan: only the weights that are there count,
        # as PyTorch's window loops
        return _sparse_axis(y, M, axis)
    return r


def _sparse_axis(y, M, axis):
    rows, cols = np.nonzero(M)
    ym = np.moveaxis(y, axis, 0)
    contrib = ym[cols] * M[rows, cols].reshape((-1,) + (1,) * (ym.ndim - 1))
    out = np.zeros((M.shape[0],) + ym.shape[1:], contrib.dtype)
    np.add.at(out, rows, contrib)
    return np.moveaxis(out, 0, axis)


def _apply_mats(d, mats, transpose=False):
    """The maps applied axis by axis; float16 and bfloat16 computed in float32 and rounded once,
    as PyTorch's reduced-precision kernels accumulate in float."""
    low = d.dtype if d.dtype == np.float16 or d.dtype == _DT.BF16 else None
    if low is not None:
        d = d.astype(np.float32)
    for axis, M in (reversed(mats) if transpose else mats):
        d = _apply_axis(d, (M.T if transpose else M).astype(d.dtype, copy=False), axis)
    return d.astype(low) if low is not None else d


class _AxisLinear(Node):
    """Backward of ``y = M_k applied along each axis k``: apply the transposes."""
    __slots__ = ()
    _needs_saved = False
    _adjoint = None  # node class recorded when the backward itself is differentiated

    def _bw(self, g, graph):
        mats, transposed, sx, zshape = self._saved
        if sx is not None:  # the input is saved, as PyTorch's: its version is checked
            x = sx.get(self, graph)
        gx = _axis_linear_any(g, mats, type(self)._adjoint or type(self), not transposed,
                              x if sx is not None else None)
        return _with_zero(gx, zshape)


def _dep_edges(x, dep):
    """Edges of a node applied to ``x`` (the incoming gradient of a backward under
    create_graph) that also depends on the forward's saved input ``dep``, as PyTorch's
    backward-of-backward nodes do: its gradient there is zero, but the result requires grad
    when ``dep`` does.  Returns (edges, shape of dep or None)."""
    if dep is not None and dep._requires_grad:
        return (edge_of(x), edge_of(dep)), tuple(dep._data.shape)
    return (edge_of(x),), None


def _with_zero(gx, zshape):
    if zshape is None:
        return gx,
    return gx, X.zeros(zshape, gx)


def need_kernel(x, kernel, *extra, half=True, complex=True):
    """PyTorch's CPU dispatch of ``kernel``: the floating dtypes (float16 and bfloat16 unless
    ``half`` is False), complex ones (unless ``complex`` is False) and the NumPy dtype names ``extra``
    have one; any other dtype is its NotImplementedError."""
    d = x._data if isinstance(x, Tensor) else x
    dt = d.dtype
    if dt in _DT.FLOATING:  # (a set test: NumPy's dtype.name is slow, this runs per call)
        if half or dt.itemsize > 2:
            return
    elif dt.kind == "c":
        if complex:
            return
    if extra and dt.name in extra:
        return
    raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(d.dtype)}\'')


def _apply_mats_int(d, mats, rounding):
    """Integer data through per-axis maps as PyTorch's integer kernels compute them: window
    sums in int64 divided by the window's count truncating towards zero (average pooling,
    padding and nearest resampling, whose rows hold one repeated weight), or, ``rounding``,
    PyTorch's uint8 resampling (Pillow's): one pass per axis from the last, with the weights
    in fixed point (as many fraction bits as keep the largest below 2**15), each pass rounded
    half up and clamped to the dtype."""
    if rounding:
        info = np.iinfo(d.dtype)
        y = d.astype(np.int64)
        for axis, M in reversed(mats):
            top = float(np.abs(M).max())
            bits = next((b for b in range(22) if int(0.5 + top * (1 << (b + 1))) >= 1 << 15), 22)
            W = M * (1 << bits)
            Mi = np.where(W >= 0, np.floor(W + 0.5), np.ceil(W - 0.5)).astype(np.int64)
            y = np.clip((_apply_axis(y, Mi, axis) + (1 << bits >> 1)) >> bits, info.min, info.max)
        return y.astype(d.dtype)
    num = d.astype(np.int64)
    den = np.ones((1,) * d.ndim, np.int64)
    for axis, M in mats:
        num = _apply_axis(num, (M != 0).astype(np.int64), axis)
        top = np.abs(M).max(axis=1)
        c = np.where(top > 0, np.rint(1 / np.where(top > 0, top, 1)), 1).astype(np.int64)
        shape = [1] * d.ndim
        shape[axis % d.ndim] = -1
        den = den * c.reshape(shape)
    return (np.sign(num) * (np.abs(num) // den)).astype(d.dtype)


def axis_linear(x, mats, node_cls, transpose=False, dep=None, rounding=False):
    """Apply the per-axis matrices ``mats`` [(axis, M)] to ``x``, recording ``node_cls``
    (also depending on ``dep``, see ``_dep_edges``); integer inputs (which the caller's
    ``need_kernel`` let through) as ``_apply_mats_int``."""
    d = x._data
    if d.dtype.kind in "iu":
        return _make(np.ascontiguousarray(_apply_mats_int(d, mats, rounding)))
    if d.dtype not in _DT.INEXACT:
        raise RuntimeError(f"expected a floating point input, got {x.dtype}")
    y = _apply_mats(d, mats, transpose)
    if STATE.enabled and (x._requires_grad or (dep is not None and dep._requires_grad)):
        edges, zshape = _dep_edges(x, dep)
        saved = (mats, transpose, Saved(x) if node_cls._needs_saved else None, zshape)
        return record(np.ascontiguousarray(y), node_cls(edges, saved))
    return _make(np.ascontiguousarray(y))


_axis_linear_any = X.twin(lambda g, mats, cls, transpose, dep: _apply_mats(g, mats, transpose),
                          axis_linear)


def _adjoint_pair(name, fwd_base, bwd_base):
    """Node classes ``name`` and ``<name>Backward``, each the other's backward (so gradients
    of any order stay exact); both registered in this module."""
    fwd = type(name, (fwd_base,), {"__slots__": (), "__module__": __name__})
    bwd = type(name.replace("Backward0", "BackwardBackward0"), (bwd_base,),
               {"__slots__": (), "__module__": __name__})
    fwd._adjoint = bwd
    bwd._adjoint = fwd
    globals()[name] = fwd
    globals()[bwd.__name__] = bwd
    return fwd


def _node_pair(name, saves_input=False):
    fwd = _adjoint_pair(name, _AxisLinear, _AxisLinear)
    if saves_input:  # PyTorch's pooling and padding nodes save their input (upsampling not)
        fwd._needs_saved = True
    return fwd


AvgPool2DBackward0 = _node_pair("AvgPool2DBackward0", True)
AvgPool3DBackward0 = _node_pair("AvgPool3DBackward0", True)
AdaptiveAvgPool2DBackward0 = _node_pair("AdaptiveAvgPool2DBackward0", True)
AdaptiveAvgPool1DBackward0 = _node_pair("AdaptiveAvgPool1DBackward0", True)
AdaptiveAvgPool3DBackward0 = _node_pair("AdaptiveAvgPool3DBackward0", True)
UpsampleNearest1DBackward0 = _node_pair("UpsampleNearest1DBackward0")
UpsampleNearest2DBackward0 = _node_pair("UpsampleNearest2DBackward0")
UpsampleNearest3DBackward0 = _node_pair("UpsampleNearest3DBackward0")
UpsampleLinear1DBackward0 = _node_pair("UpsampleLinear1DBackward0")
UpsampleBilinear2DBackward0 = _node_pair("UpsampleBilinear2DBackward0")
UpsampleTrilinear3DBackward0 = _node_pair("UpsampleTrilinear3DBackward0")
ReflectionPad1DBackward0 = _node_pair("ReflectionPad1DBackward0", True)
ReflectionPad2DBackward0 = _node_pair("ReflectionPad2DBackward0", True)
ReflectionPad3DBackward0 = _node_pair("ReflectionPad3DBackward0", True)
ReplicationPad1DBackward0 = _node_pair("ReplicationPad1DBackward0", True)
ReplicationPad2DBackward0 = _node_pair("ReplicationPad2DBackward0", True)
ReplicationPad3DBackward0 = _node_pair("ReplicationPad3DBackward0", True)
CircularPadBackward0 = _node_pair("CircularPadBackward0")


# --- output sizes ---------------------------------------------------------------------
def pool_out(n, k, s, p, d, ceil_mode):
    """PyTorch's pooling output size along one axis."""
    num = n + 2 * p - d * (k - 1) - 1
    o = (-(-num // s) if ceil_mode else num // s) + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1
    return o


def avg_matrix(n, k, s, p, ceil_mode, count_include_pad, o=None):
    """(o, n) averaging matrix of 1-d average pooling (divisor per window)."""
    o = pool_out(n, k, s, p, 1, ceil_mode) if o is None else o
    M = np.zeros((o, n))
    for i in range(o):
        st = i * s - p
        en = min(st + k, n + p)
        cnt = en - st
        st, en = max(st, 0), min(en, n)
        if en > st:
            M[i, st:en] = 1.0 / (cnt if count_include_pad else en - st)
    return M


def window_counts(n, k, s, p, ceil_mode, count_include_pad, o):
    """Divisor per output position of 1-d average pooling."""
    out = np.zeros(o)
    for i in range(o):
        st = i * s - p
        en = min(st + k, n + p)
        cnt = en - st
        out[i] = cnt if count_include_pad else min(en, n) - max(st, 0)
    return out


def adaptive_ranges(n, o):
    st = (np.arange(o) * n) // o
    en = -((-(np.arange(o) + 1) * n) // o)
    return st, en


def adaptive_avg_matrix(n, o):
    M = np.zeros((o, n))
    st, en = adaptive_ranges(n, o)
    for i in range(o):
        M[i, st[i]:en[i]] = 1.0 / (en[i] - st[i])
    return M


def nearest_matrix(n, o, scale=None, exact=False):
    """(o, n) 0/1 matrix of nearest-neighbour resampling (PyTorch's 'nearest' / 'nearest-exact')."""
    sc = (1.0 / scale) if scale else n / o
    j = np.arange(o)
    src = np.floor((j + 0.5) * sc) if exact else np.floor(j * np.float32(sc))
    src = np.minimum(src.astype(np.int64), n - 1)
    M = np.zeros((o, n))
    M[j, src] = 1.0
    return M


def linear_matrix(n, o, align_corners, scale=None):
    """(o, n) matrix of linear interpolation along one axis."""
    j = np.arange(o, dtype=np.float64)
    if align_corners:
        src = j * ((n - 1) / (o - 1)) if o > 1 else np.zeros(o)
    else:
        sc = (1.0 / scale) if scale else n / o
        src = np.maximum((j + 0.5) * sc - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    i1 = np.minimum(i0 + 1, n - 1)
    lam = src - i0
    M = np.zeros((o, n))
    np.add.at(M, (np.arange(o), i0), 1 - lam)
    np.add.at(M, (np.arange(o), i1), lam)
    return M


def pad_matrix(n, left, right, mode):
    """(n + left + right, n) selection matrix of reflect / replicate / circular padding."""
    src = np.arange(-left, n + right)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({left}, {right}) at dimension "
                               f"of input {n}")
        src = np.abs(src)
        src = np.where(src >= n, 2 * (n - 1) - src, src)
    elif mode == "replicate":
        src = np.clip(src, 0, n - 1)
    else:
        src = np.mod(src, n)
    keep = np.arange(len(src))
    M = np.zeros((len(src), n))
    M[keep, src] = 1.0
    return M


# --- max pooling: gather by flat index -------------------------------------------------
class _Gather(Node):
    """Backward of a gather of spatial positions by flat index: scatter-add."""
    __slots__ = ()
    _needs_saved = False
    _adjoint = None

    def _bw(self, g, graph):
        idx, xshape, unique, nl = self._saved[:4]
        for sv in self._saved[5 if self._needs_saved else 4:]:
            sv.get(self, False)  # the indices returned to the caller: version-checked
        if self._needs_saved:  # the input is saved, as PyTorch's: its version is checked
            x = self._saved[4].get(self, graph)
        return _scatter_any(g, idx, xshape, unique, nl, type(self)._adjoint,
                            x if self._needs_saved else None)


class _Scatter(Node):
    """Backward of a scatter-add by flat index: gather."""
    __slots__ = ()
    _needs_saved = False
    _adjoint = None

    def _bw(self, g, graph):
        idx, xshape, unique, nl, zshape = self._saved
        gx = _gather_any(g, idx, unique, nl, type(self)._adjoint)
        return _with_zero(gx, zshape)


def _gather_np(x, idx, nl):
    """Values of ``x`` at flat indices ``idx`` into its dims after the first ``nl``."""
    flat = x.reshape(x.shape[:nl] + (_size(x.shape[nl:]),))  # (explicit: an empty batch)
    return np.take_along_axis(flat, idx.reshape(idx.shape[:nl] + (_size(idx.shape[nl:]),)),
                              nl).reshape(idx.shape)


def _size(shape) -> int:
    return int(np.prod(shape))


def _scatter_np(g, idx, xshape, unique, nl):
    """Adjoint of ``_gather_np``: add ``g`` into zeros of ``xshape`` at ``idx``."""
    lead = tuple(xshape[:nl])
    sp = int(np.prod(xshape[nl:]))
    nb = int(np.prod(lead))
    if unique:
        z = np.zeros(lead + (sp,), g.dtype)
        k = _size(idx.shape[nl:])
        np.put_along_axis(z, idx.reshape(lead + (k,)), g.reshape(lead + (k,)), nl)
        return z.reshape(xshape)
    off = (np.arange(nb) * sp).reshape(lead + (1,) * (idx.ndim - nl))
    r = np.bincount((idx + off).ravel(), weights=g.ravel(), minlength=nb * sp)
    return r.astype(g.dtype, copy=False).reshape(xshape)


def gather_op(x, idx, unique, nl, node_cls, values=None):
    """Values of ``x`` at flat spatial indices ``idx`` (already gathered: ``values``),
    recording ``node_cls``."""
    d = _gather_np(x._data, idx, nl) if values is None else values
    if STATE.enabled and x._requires_grad:
        saved = (idx, tuple(x._data.shape), unique, nl)
        return record(d, node_cls((edge_of(x),), saved + (Saved(x),) if node_cls._needs_saved
                                  else saved))
    return _make(d)


def with_indices(out, idx):
    """``(out, indices)`` of a max pooling asked for its indices: the node of ``out`` saves the
    indices tensor returned, so changing it in place fails backward as in PyTorch."""
    it = _make(idx.astype(np.int64))
    node = out._grad_fn
    if node is not None:
        node._saved = node._saved + (Saved(it),)
    return out, it


def scatter_op(g, idx, xshape, unique, nl, node_cls, dep=None):
    """Scatter-add ``g`` into zeros of ``xshape`` (also depending on ``dep``, see
    ``_dep_edges``): a 1-tuple, or 2-tuple with the zero gradient for ``dep``."""
    d = _scatter_np(g._data, idx, xshape, unique, nl)
    if STATE.enabled and (g._requires_grad or (dep is not None and dep._requires_grad)):
        edges, zshape = _dep_edges(g, dep)
        return record(d, node_cls(edges, (idx, xshape, unique, nl, zshape))),
    return _make(d),


# the backward kernels: NumPy on arrays, recorded (differentiable) on Tensors
_scatter_any = X.twin(lambda g, idx, xshape, unique, nl, cls, dep:
                      (_scatter_np(g, idx, xshape, unique, nl),), scatter_op)
_gather_any = X.twin(lambda g, idx, unique, nl, cls: _gather_np(g, idx, nl), gather_op)


def _gather_pair(name):
    fwd = _adjoint_pair(name, _Gather, _Scatter)
    fwd._needs_saved = True  # max pooling saves its input, as PyTorch's
    return fwd


MaxPool2DWithIndicesBackward0 = _gather_pair("MaxPool2DWithIndicesBackward0")
AdaptiveMaxPool2DBackward0 = _gather_pair("AdaptiveMaxPool2DBackward0")
MaxPool3DWithIndicesBackward0 = _gather_pair("MaxPool3DWithIndicesBackward0")
AdaptiveMaxPool3DBackward0 = _gather_pair("AdaptiveMaxPool3DBackward0")


def max_pool2d_indices(x, k, s, p, d, ceil_mode):
    """Flat (H*W) indices of the window maxima of a (N, C, H, W) array, and whether the
    windows are disjoint (so every index is unique)."""
    N, C, H, W = x.shape
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = k, s, p, d
    oh = pool_out(H, kh, sh, ph, dh, ceil_mode)
    ow = pool_out(W, kw, sw, pw, dw, ceil_mode)
    # pad with -inf, enough for the last (ceil-mode) window
    Hp = max(H + 2 * ph, (oh - 1) * sh + dh * (kh - 1) + 1)
    Wp = max(W + 2 * pw, (ow - 1) * sw + dw * (kw - 1) + 1)
    if (ph or pw or Hp != H or Wp != W):
        fill = -np.inf if x.dtype in _DT.FLOATING else np.iinfo(x.dtype).min
        xp = np.full((N, C, Hp, Wp), fill, x.dtype)
        xp[:, :, ph:ph + H, pw:pw + W] = x
    else:
        xp = x
    # running maximum over the kh*kw window offsets (strided views, no window copy); strict
    # ">" keeps the first maximum, and NaN wins as in PyTorch
    nan = x.dtype in _DT.FLOATING and bool(np.isnan(x).any())
    best = None
    at = np.int8 if kh * kw < 128 else np.int32
    arg = np.zeros((N, C, oh, ow), at)
    for i in range(kh):
        for j in range(kw):
            v = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            if best is None:
                best = v.copy()
                continue
            take = v > best
            if nan:
                take |= np.isnan(v) & ~np.isnan(best)
            np.maximum(best, v, out=best)
            # arg = take ? k : arg, in arithmetic (faster than a masked copy)
            dk = np.subtract(at(i * kw + j), arg, dtype=at)
            dk *= take
            arg += dk
    # flat index = window origin + offset of the winning kernel position
    base = (np.arange(oh) * sh - ph)[:, None] * W + (np.arange(ow) * sw - pw)[None, :]
    off = (np.arange(kh)[:, None] * (dh * W) + np.arange(kw)[None, :] * dw).ravel()
    idx = off[arg]
    idx += base
    unique = sh >= dh * (kh - 1) + 1 and sw >= dw * (kw - 1) + 1
    return idx, unique, best


def adaptive_max_indices(x, oh, ow):
    """Flat (H*W) indices of the maxima of adaptive max pooling over the last two dims."""
    H, W = x.shape[-2:]
    hs, he = adaptive_ranges(H, oh)
    ws, we = adaptive_ranges(W, ow)
    kh, kw = int((he - hs).max()), int((we - ws).max())
    # windows padded to the largest size by repeating their last element (max unchanged)
    hi = np.minimum(hs[:, None] + np.arange(kh), he[:, None] - 1)
    wi = np.minimum(ws[:, None] + np.arange(kw), we[:, None] - 1)
    win = x[..., hi[:, None, :, None], wi[None, :, None, :]]   # (..., oh, ow, kh, kw)
    win = win.reshape(win.shape[:-2] + (kh * kw,))
    if x.dtype in _DT.FLOATING and np.isnan(win).any():
        a = np.where(np.isnan(win), np.inf, win).argmax(-1)
    else:
        a = win.argmax(-1)
    rows = np.take_along_axis(np.broadcast_to(hi[:, None, :, None], (oh, ow, kh, kw)).reshape(oh, ow, -1),
                              a.reshape(-1, oh, ow).transpose(1, 2, 0), -1).transpose(2, 0, 1)
    cols = np.take_along_axis(np.broadcast_to(wi[None, :, None, :], (oh, ow, kh, kw)).reshape(oh, ow, -1),
                              a.reshape(-1, oh, ow).transpose(1, 2, 0), -1).transpose(2, 0, 1)
    return (rows * W + cols).reshape(a.shape)


def _flat_strides(shape):
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * shape[i + 1]
    return st


def max_pool_nd_indices(x, k, s, p, d, ceil_mode):
    """``max_pool2d_indices`` over the last ``len(k)`` dims of ``x`` (any number of them):
    flat spatial indices of the window maxima, whether they are unique, and the maxima."""
    import itertools
    nd = len(k)
    lead, S = x.shape[:-nd], x.shape[-nd:]
    outs = [pool_out(n, kk, ss, pp, dd, ceil_mode) for n, kk, ss, pp, dd in zip(S, k, s, p, d)]
    Sp = [max(n + 2 * pp, (o - 1) * ss + dd * (kk - 1) + 1)
          for n, kk, ss, pp, dd, o in zip(S, k, s, p, d, outs)]
    if any(pp for pp in p) or list(Sp) != list(S):
        fill = -np.inf if x.dtype in _DT.FLOATING else np.iinfo(x.dtype).min
        xp = np.full(lead + tuple(Sp), fill, x.dtype)
        xp[(Ellipsis,) + tuple(slice(pp, pp + n) for pp, n in zip(p, S))] = x
    else:
        xp = x
    nan = x.dtype in _DT.FLOATING and bool(np.isnan(x).any())
    K = int(np.prod(k))
    at = np.int8 if K < 128 else np.int32
    arg = np.zeros(lead + tuple(outs), at)
    best = None
    for kpos, off in enumerate(itertools.product(*[range(kk) for kk in k])):
        v = xp[(Ellipsis,) + tuple(slice(o_ * dd, o_ * dd + ss * (o - 1) + 1, ss)
                                   for o_, dd, ss, o in zip(off, d, s, outs))]
        if best is None:
            best = v.copy()
            continue
        take = v > best
        if nan:
            take |= np.isnan(v) & ~np.isnan(best)
        np.maximum(best, v, out=best)
        dk = np.subtract(at(kpos), arg, dtype=at)
        dk *= take
        arg += dk
    st = _flat_strides(S)
    base = 0
    offs = 0
    for i in range(nd):
        shp = [1] * nd
        shp[i] = -1
        base = base + ((np.arange(outs[i]) * s[i] - p[i]) * st[i]).reshape(shp)
        kshp = [1] * nd
        kshp[i] = -1
        offs = offs + (np.arange(k[i]) * (d[i] * st[i])).reshape(kshp)
    idx = np.asarray(offs).ravel()[arg] + base
    unique = all(ss >= dd * (kk - 1) + 1 for kk, ss, dd in zip(k, s, d))
    return idx, unique, best


def adaptive_max_indices_nd(x, outs):
    """Flat spatial indices of the maxima of adaptive max pooling over the last
    ``len(outs)`` dims."""
    nd = len(outs)
    S = x.shape[-nd:]
    arrays, ks = [], []
    for i, (n, o) in enumerate(zip(S, outs)):
        st, en = adaptive_ranges(n, o)
        kk = int((en - st).max())
        hi = np.minimum(st[:, None] + np.arange(kk), en[:, None] - 1)  # repeats: max unchanged
        shp = [1] * (2 * nd)
        shp[i], shp[nd + i] = o, kk
        arrays.append(hi.reshape(shp))
        ks.append(kk)
    win = x[(Ellipsis,) + tuple(arrays)]          # (..., o1..on, k1..kn)
    K = int(np.prod(ks))
    win = win.reshape(win.shape[:x.ndim] + (K,))
    if x.dtype in _DT.FLOATING and np.isnan(win).any():
        a = np.where(np.isnan(win), np.inf, win).argmax(-1)
    else:
        a = win.argmax(-1)
    fs = _flat_strides(S)
    flat = sum(arr * f for arr, f in zip(arrays, fs))
    flat = np.broadcast_to(flat, tuple(outs) + tuple(ks)).reshape(tuple(outs) + (K,))
    return np.take_along_axis(np.broadcast_to(flat, a.shape + (K,)), a[..., None], -1)[..., 0]
