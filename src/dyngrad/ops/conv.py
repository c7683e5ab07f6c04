"""Convolution (1-d, 2-d and 3-d, grouped, strided, dilated, padded) and transposed convolution.

Forward is im2col over a strided window view plus one matrix product per group; the input
gradient is col2im, adding into a padded buffer with one loop over kernel positions.  The
three bilinear maps (conv, its input-adjoint, its weight-adjoint) are each recorded as a
differentiable op, so gradients of any order stay in closed form.  ``convolution`` is the
declared op (PyTorch's aten::convolution, ConvolutionBackward0); conv1d...conv_transpose3d
call it as PyTorch's conv<n>d do (complex input as three real convolutions)."""
from __future__ import annotations

import itertools

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _dtype as D
from . import composite
from ._spec import defop, front
from . import _dual as X
from .._record import NO_EDGE, STATE, Node, Saved, Tensor, edge_of, record

_make = Tensor._make


class _P:
    """Geometry of one 2-d or 3-d convolution: stride, padding (before, after per spatial
    axis, flattened), dilation, groups, and the spatial sizes of input, kernel and output."""

    __slots__ = ("s", "p", "d", "G", "xs", "ks", "os")

    def __init__(self, s, p, d, G, xs, ks, os):
        self.s, self.p, self.d, self.G, self.xs, self.ks, self.os = s, p, d, G, xs, ks, os


def _windows(xp, P):
    """(N, C, *kernel, *out) strided view of the padded input."""
    st = xp.strides
    return as_strided(xp, xp.shape[:2] + P.ks + P.os,
                      st[:2] + tuple(a * d for a, d in zip(st[2:], P.d))
                      + tuple(a * s for a, s in zip(st[2:], P.s)), writeable=False)


def _pad(x, P):
    if not any(P.p):
        return x
    xp = np.zeros(x.shape[:2] + tuple(n + a + b for n, a, b in zip(x.shape[2:], P.p[0::2],
                                                                    P.p[1::2])), x.dtype)
    xp[(slice(None),) * 2 + tuple(slice(a, a + n) for n, a in zip(x.shape[2:], P.p[0::2]))] = x
    return xp


def _im2col(x, P):
    """Columns (G, C/G*prod(kernel), N*prod(out)): every receptive field as one column."""
    N, C = x.shape[:2]
    nd = len(P.ks)
    win = _windows(_pad(x, P), P).transpose((1,) + tuple(range(2, 2 + nd)) + (0,)
                                            + tuple(range(2 + nd, 2 + 2 * nd)))
    return win.reshape(P.G, (C // P.G) * int(np.prod(P.ks)), N * int(np.prod(P.os)))


def _g_cols(g, G):
    """Output-shaped (N, O, *out) to (G, O/G, N*prod(out))."""
    N, O = g.shape[:2]
    return g.swapaxes(0, 1).reshape(G, O // G, -1)


def _fwd(x, w, P, cols=None):
    """conv(x, w) on arrays: (N, C, *in) * (O, C/G, *kernel) -> (N, O, *out)."""
    N = x.shape[0]
    O = w.shape[0]
    if cols is None:
        cols = _im2col(x, P)
    y = X.matmul_np(w.reshape(P.G, O // P.G, -1), cols)
    return np.ascontiguousarray(y.reshape((O, N) + P.os).swapaxes(0, 1))


def _adj_x(g, w, P, N):
    """Input-adjoint of conv (transposed convolution): (N, O, *out) -> (N, C, *in)."""
    O, Cg = w.shape[:2]
    ks = w.shape[2:]
    C = Cg * P.G
    dcols = X.matmul_np(w.reshape(P.G, O // P.G, -1).transpose(0, 2, 1), _g_cols(g, P.G))
    dcols = dcols.reshape((C,) + ks + (N,) + P.os)
    return _col2im(dcols, P, np.result_type(g.dtype, w.dtype))


def _col2im(dcols, P, dt):
    """Columns (C, *kernel, N, *out) summed back into their receptive fields: (N, C, *in)."""
    ks = dcols.shape[1:1 + len(P.ks)]
    C, N = dcols.shape[0], dcols.shape[1 + len(ks)]
    padded = tuple(n + a + b for n, a, b in zip(P.xs, P.p[0::2], P.p[1::2]))
    if all(k == 1 for k in ks) and all(s == 1 for s in P.s) and P.os == padded:
        buf = dcols[(slice(None),) + (0,) * len(ks)].swapaxes(0, 1).astype(dt, copy=False)
    else:
        buf = np.zeros((N, C) + padded, dt)
        bt = buf.swapaxes(0, 1)
        for pos in itertools.product(*(range(k) for k in ks)):
            bt[(slice(None),) * 2 + tuple(
                slice(i * d, i * d + s * (o - 1) + 1, s)
                for i, d, s, o in zip(pos, P.d, P.s, P.os))] += dcols[(slice(None),) + pos]
    if any(P.p):
        buf = buf[(slice(None),) * 2 + tuple(slice(a, a + n)
                                             for n, a in zip(P.xs, P.p[0::2]))]
    return np.ascontiguousarray(buf)


def _adj_w(x, g, P, wshape, cols=None):
    """Weight-adjoint of conv: (x, grad of output) -> weight-shaped gradient."""
    if cols is None:
        cols = _im2col(x, P)
    gw = X.matmul_np(_g_cols(g, P.G), cols.transpose(0, 2, 1))
    return gw.reshape(wshape)


# kinds: "C" y = conv(a=x, b=w); "X" x-shaped = adj_x(a=g, b=w); "W" w-shaped = adj_w(a=x, b=g)
def _apply_np(kind, a, b, P, cols=None, bias=None):
    """One of the three maps (plus ``bias``, an array, for the forward); float16 computed in
    float32 and rounded once, as PyTorch's half kernels accumulate (the bias included) in
    float."""
    if a.dtype == np.float16:
        f = np.float32
        r = _apply_np(kind, a.astype(f), b.astype(f), P, None if cols is None else cols.astype(f),
                      None if bias is None else bias.astype(f))
        return r.astype(np.float16)
    if bias is not None:
        r = _apply_np(kind, a, b, P, cols)
        r += bias.reshape((1, -1) + (1,) * len(P.ks))
        return r
    if kind == "C":
        return _fwd(a, b, P, cols)
    if kind == "X":
        return _adj_x(a, b, P, a.shape[0])
    return _adj_w(a, b, P, (b.shape[1], a.shape[1] // P.G) + P.ks, cols)


def _bilinear_bw(node, g, graph, kind, sa, sb, P, cols, lift, meta, bias_edge):
    """Gradients of one of the three bilinear maps (and of the bias, when it has an edge)."""
    nf = node.next_functions
    need_a = nf[0][0] is not None
    need_b = nf[1][0] is not None
    a = sa.get(node, graph) if need_b or kind == "W" else None
    b = sb.get(node, graph) if need_a or kind != "C" else None
    if lift is not None:   # a 1-d or unbatched problem computed as batched 2-d
        a4, b4, y4 = lift
        g = g.reshape(y4)
        a = a.reshape(a4) if a is not None else None
        b = b.reshape(b4) if b is not None else None
    ga = gb = None
    if kind == "C":      # y = C(x, w): dx = X(g, w), dw = W(x, g)
        if need_a:
            ga = _bilinear("X", g, b, P, meta=meta)
        if need_b:
            gb = _bilinear("W", a, g, P, cols, meta=meta)
    elif kind == "X":    # x = X(g0, w): dg0 = C(h, w), dw = W(h, g0)
        if need_a:
            ga = _bilinear("C", g, b, P, meta=meta)
        if need_b:
            gb = _bilinear("W", g, a, P, meta=meta)
    else:                # w = W(x, g0): dx = X(g0, h), dg0 = C(x, h)
        if need_a:
            ga = _bilinear("X", b, g, P, meta=meta)
        if need_b:
            gb = _bilinear("C", a, g, P, meta=meta)
    gbias = None
    if bias_edge and nf[2][0] is not None:
        gbias = X.sum_dims(g, (0,) + tuple(range(2, len(P.ks) + 2)), keepdim=False)
    if lift is not None:
        ga = ga.reshape(sa.value.shape) if ga is not None else None
        gb = gb.reshape(sb.value.shape) if gb is not None else None
    return ga, gb, gbias


class ConvolutionBackwardBackward0(Node):
    """A bilinear map of a convolution's backward, recorded under create_graph."""
    __slots__ = ()
    # the geometry of the convolution differentiated (PyTorch's node has no bias sizes)
    _named_saved = {"input": (1, "tensor"), "weight": (2, "tensor"), "stride": (7, "same"),
                    "padding": (8, "same"), "dilation": (9, "same"), "transposed": (10, "same"),
                    "output_padding": (11, "same"), "groups": (12, "same")}

    def _bw(self, g, graph):
        kind, sa, sb, P, cols, _shapes, lift = self._saved[:7]
        return _bilinear_bw(self, g, graph, kind, sa, sb, P, cols, lift, self._saved[7:],
                            False)[:2]


def _conv_graph(kind, a, b, P, meta=()):
    """Apply one bilinear map of a backward to Tensors, recording ConvolutionBackwardBackward0
    when needed; ``meta`` the values PyTorch's node shows (stride, padding, dilation,
    transposed, output_padding, groups), saved after the node's own."""
    data = _apply_np(kind, a._data, b._data, P)
    if STATE.enabled and (a._requires_grad or b._requires_grad):
        node = ConvolutionBackwardBackward0((edge_of(a), edge_of(b)),
                                            (kind, Saved(a), Saved(b), P, None, None, None)
                                            + meta[:6])
        return record(data, node)
    return _make(data)


# the edge of an absent bias (none); passed by conv1d...conv_transpose3d for their absent bias
_ABSENT = _make(np.zeros((), np.float32))
_META = ("stride", "padding", "dilation", "transposed", "output_padding", "groups",
         "bias_sym_sizes_opt")


def _run(kind, input, weight, bias, P, lift, meta):
    """The convolution (``kind`` "C") or transposed convolution ("X") of Tensors, with the
    declaration's node when an input requires grad; the node keeps the geometry, the input's
    columns (for the weight's gradient) and the batched 2-d shapes after PyTorch's values."""
    ad, bd = input._data, weight._data
    if lift is not None:
        ad, bd = ad.reshape(lift[0]), bd.reshape(lift[1])
    cols = _im2col(ad, P) if kind == "C" else None
    data = _apply_np(kind, ad, bd, P, cols, None if bias is None else bias._data)
    if lift is not None:
        y4 = data.shape
        data = data.reshape(lift[2])
        lift = (lift[0], lift[1], y4)
    if STATE.enabled and (input._requires_grad or weight._requires_grad
                          or (bias is not None and bias._requires_grad)):
        node = _NODE((edge_of(input), edge_of(weight), NO_EDGE if bias is None else edge_of(bias)),
                     (Saved(input), Saved(weight)) + meta
                     + (kind, P, cols if weight._requires_grad else None, lift))
        return record(data, node)
    return _make(data)


def _bilinear_np(kind, a, b, P, cols=None, meta=()):
    return _apply_np(kind, a, b, P, cols)


def _bilinear_graph(kind, a, b, P, cols=None, meta=()):
    return _conv_graph(kind, a, b, P, meta)


# one of the bilinear maps in a backward: NumPy on arrays, recorded (differentiable) on Tensors
_bilinear = X.twin(_bilinear_np, _bilinear_graph)


# --- argument handling ----------------------------------------------------------------
def _tup(v, n, name):
    if v.__class__ is tuple and len(v) == n:
        return v
    if isinstance(v, (tuple, list)):
        if len(v) == 1:
            return tuple(int(v[0]) for _ in range(n))
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _check_dims(input, weight, transposed, nd, params):
    """conv<nd>d's checks of the input's and the weight's number of dimensions (read from
    the logical shapes: under vmap they run on batched tensors)."""
    xs, ws = list(input.shape), list(weight.shape)
    name = "conv_transpose" if transposed else "conv"
    if len(xs) not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}{nd}d, but got input of size: {xs}")
    if len(ws) != nd + 2:
        if len(ws) < 3:
            raise RuntimeError("weight should have at least three dimensions")
        # PyTorch expands each size argument to the weight's spatial dims first
        for pname, v in params:
            v = list(v) if isinstance(v, (tuple, list)) else [v] * nd
            if len(v) != 1 and len(v) != len(ws) - 2:
                raise RuntimeError(f"expected {pname} to be a single integer value or a list "
                                   f"of {len(ws) - 2} values to match the convolution "
                                   f"dimensions, but got {pname}={v}")
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional input "
                           f"{xs}, but got {len(ws)}-dimensional weight of size "
                           f"{ws} instead")


def _check(input, weight, bias, groups, transposed, nd):
    """PyTorch's checks of groups, channels, the bias and the dtypes of a convolution."""
    x, w = input._data, weight._data
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    C = x.shape[-nd - 1]
    if not transposed:
        if w.shape[0] < groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} "
                               f"at dimension 0, but got weight of size {list(w.shape)} instead")
        if w.shape[0] % groups:
            raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                               f"{groups} at dimension 0, but got weight of size [{list(w.shape)}] "
                               f"instead")
        if C != w.shape[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {list(w.shape)}, expected "
                               f"input{list(x.shape)} to have {w.shape[1] * groups} channels, "
                               f"but got {C} channels instead")
        O = w.shape[0]
    else:
        if C != w.shape[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {list(w.shape)}, expected "
                               f"input{list(x.shape)} to have {w.shape[0]} channels, but got "
                               f"{C} channels instead")
        O = w.shape[1] * groups
    if bias is not None and tuple(bias._data.shape) != (O,):
        raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}weight of size {list(w.shape)}, expected bias to be "
                           f"1-dimensional with {O} elements, but got bias of size "
                           f"{list(bias._data.shape)} instead")
    if x.dtype != w.dtype:
        if nd == 3 or x.dtype not in D.FLOATING:  # the 3-d CPU kernel's check
            ex, fd = (x, w) if nd == 3 else (w, x)
            raise RuntimeError(f"expected scalar type {D.scalar_type_name(ex.dtype)} but found "
                               f"{D.scalar_type_name(fd.dtype)}")
        raise RuntimeError(f"Input type ({input.dtype}) and weight type ({weight.dtype}) should "
                           f"be the same")
    if bias is not None and bias._data.dtype != x.dtype:
        raise RuntimeError(f"Input type ({D.c_name(x.dtype)}) and bias type "
                           f"({D.c_name(bias._data.dtype)}) should be the same")


def _kernel_dtype(x, transposed, nd, dilated=False):
    """PyTorch's CPU kernels' dtype dispatch: no bool or complex convolution (conv<n>d
    composes complex input of real ones), transposed and dilated convolution only for
    floating types and int64."""
    k = x.dtype.kind
    if transposed:
        ok = k == "f" or x.dtype == np.int64
        kernel = f"slow_conv_transpose{3 if nd == 3 else 2}d_out_cpu"
    elif dilated:
        ok = k == "f" or x.dtype == np.int64
        kernel = "slow_conv_dilated<>"
    else:
        ok = k not in "bc"
        kernel = "compute_columns3d" if nd == 3 else "slow_conv2d_cpu"
    if not ok:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(x.dtype)}'")


def _lift_shape(shape, nd):
    """The batched 2-d shape a (possibly unbatched, possibly 1-d) input is computed in."""
    shape = tuple(shape)
    if len(shape) == nd + 1:
        shape = (1,) + shape
    return shape[:2] + (1,) + shape[2:] if nd == 1 else shape


def _lift_w(shape, nd):
    shape = tuple(shape)
    return shape[:2] + (1,) + shape[2:] if nd == 1 else shape


_WARNED_SAME = [False]


_ZEROS = {1: (0,), 2: (0, 0), 3: (0, 0, 0)}


def _conv(input, weight, bias, stride, padding, dilation, groups, nd):
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor)) or (
            bias is not None and not isinstance(bias, Tensor)):
        raise D.bad_combo(f"conv{nd}d", (input, weight) + (() if bias is None else (bias,)), {})
    xn = input.dim()
    if (xn != nd + 2 and xn != nd + 1) or weight.dim() != nd + 2:
        _check_dims(input, weight, False, nd,
                    (("stride", stride), ("padding", 0 if isinstance(padding, str) else padding),
                     ("output_padding", 0), ("dilation", dilation)))
    s = _tup(stride, nd, "stride")
    d = _tup(dilation, nd, "dilation")
    if padding.__class__ is not str:  # the common call
        p = _tup(padding, nd, "padding")
        if min(s) <= 0:
            raise RuntimeError("non-positive stride is not supported")
        if xn == nd + 2:
            return _compose(input, weight, bias, s, p, d, False, _ZEROS[nd], groups)
        return _compose(input.unsqueeze(0), weight, bias, s, p, d, False, _ZEROS[nd],
                        groups).squeeze(0)
    ks = tuple(weight.shape[2:])
    asym = False
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * nd
        elif padding == "same":
            if any(v != 1 for v in s):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for k, dd in zip(ks, d):
                tot = dd * (k - 1)
                pads.append((tot // 2, tot - tot // 2))
            asym = any(a != b for a, b in pads)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        pads = [(p, p) for p in _tup(padding, nd, "padding")]
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    # PyTorch's conv<n>d: an unbatched input is unsqueezed and the output squeezed back
    batched = xn == nd + 2
    if not batched:
        input = input.unsqueeze(0)
    if asym:
        # PyTorch's convolution_same: the extra right padding is a zero-padded copy of the
        # input (constant_pad_nd), the rest the convolution's own symmetric padding
        if not _WARNED_SAME[0]:
            _WARNED_SAME[0] = True
            from .._warn import warn
            warn("Using padding='same' with even kernel lengths and odd dilation may require a "
                 "zero-padded copy of the input be created")
        from .padding import pad
        extra = []
        for a, b in reversed(pads):
            extra += [0, b - a]
        input = pad(input, extra)
        pads = [(a, a) for a, _ in pads]
    if isinstance(padding, str) and padding == "valid":  # PyTorch passes [0] for both paddings
        y = _compose(input, weight, bias, s, (0,), d, False, (0,), groups)
    else:
        y = _compose(input, weight, bias, s, tuple(a for a, _ in pads), d, False, (0,) * nd,
                     groups)
    return y if batched else y.squeeze(0)


def _conv_nd(input, weight, bias, s, d, p, groups, nd, meta):
    """Convolution of a batched input (``p``: the padding of each spatial axis)."""
    ks = tuple(weight._data.shape[2:])
    x4, w4 = _lift_shape(input._data.shape, nd), _lift_w(weight._data.shape, nd)
    if nd == 1:
        s, d, ks, p = (1,) + s, (1,) + d, (1,) + ks, (0,) + p
    xs = tuple(x4[2:])
    os_ = []
    for n, pp, k, dd, ss in zip(xs, p, ks, d, s):
        o = (n + 2 * pp - dd * (k - 1) - 1) // ss + 1
        if o <= 0:
            raise RuntimeError(f"Calculated padded input size per channel: "
                               f"({' x '.join(str(a + 2 * pp) for a, pp in zip(xs[-nd:], p[-nd:]))})."
                               f" Kernel size: ({' x '.join(str(dd * (k - 1) + 1) for k, dd in zip(ks[-nd:], d[-nd:]))})."
                               f" Kernel size can't be greater than actual input size")
        os_.append(o)
    P = _P(s, sum(zip(p, p), ()), d, groups, xs, ks, tuple(os_))
    O = weight._data.shape[0]
    lift = None
    if x4 != input._data.shape or w4 != weight._data.shape:
        lift = (x4, w4, ((x4[0],) if input.dim() == nd + 2 else ()) + (O,) + tuple(os_[-nd:]))
    _kernel_dtype(input._data, False, nd, any(v > 1 for v in d))
    return _run("C", input, weight, bias, P, lift, meta)


@composite(method=False)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d cross-correlation over (N, C, H, W) input: PyTorch's composition over
    ``convolution`` (ConvolutionBackward0)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


@composite(method=False)
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-d cross-correlation over (N, C, D, H, W) input, over ``convolution``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


@composite(method=False)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d cross-correlation over (N, C, L) input, over ``convolution``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    for pos, (arg, v) in enumerate((("input", input), ("weight", weight), ("bias", bias))):
        if not isinstance(v, Tensor) and (v is not None or pos < 2):
            raise D.not_tensor(f"conv_transpose{nd}d", arg, pos + 1, v)
    _check_dims(input, weight, True, nd,
                (("stride", stride), ("padding", padding), ("output_padding", output_padding),
                 ("dilation", dilation)))
    if input.dim() == nd + 1:  # unbatched: unsqueezed, the output squeezed back
        return _conv_t(input.unsqueeze(0), weight, bias, stride, padding, output_padding, groups,
                       dilation, nd).squeeze(0)
    return _compose(input, weight, bias, _tup(stride, nd, "stride"), _tup(padding, nd, "padding"),
                    _tup(dilation, nd, "dilation"), True,
                    _tup(output_padding, nd, "output_padding"), groups)


def _compose(input, weight, bias, *params):
    """``convolution`` as conv<n>d calls it: an absent bias passed as such, complex input
    as PyTorch's complex_convolution, three real convolutions (Gauss's trick)."""
    if not input.is_complex():
        return convolution(input, weight, _ABSENT if bias is None else bias, *params)
    from .views import view_as_real

    def parts(t):
        r = view_as_real(t.resolve_conj())
        return r.select(-1, 0), r.select(-1, 1)
    ir, ii = parts(input)
    wr, wi = parts(weight)
    if bias is None:
        a = convolution(ir, wr, _ABSENT, *params)
        b = convolution(ii, wi, _ABSENT, *params)
        c = convolution(ir + ii, wr + wi, _ABSENT, *params)
    else:
        br, bi = parts(bias)
        a = convolution(ir, wr, br, *params)
        b = convolution(ii, wi, _ABSENT, *params)
        c = convolution(ir + ii, wr + wi, br + bi, *params)
    return a - b + 1j * (c - a - b)


def _conv_t_nd(input, weight, bias, s, p, d, op_, groups, nd, meta):
    """Transposed convolution of a batched input."""
    for a, ss, dd in zip(op_, s, d):
        if a >= ss and a >= dd:
            if nd == 3:  # the 3-d CPU kernel's wording
                ax = ("depth", "height", "width")
                raise RuntimeError(
                    "output padding must be smaller than either stride or dilation, but got " +
                    " ".join(f"{k}_{a}: {v}" for k, vs in (("output_padding", op_),
                                                           ("stride", s), ("dilation", d))
                             for a, v in zip(ax, vs)))
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding={list(op_)}, stride={list(s)}, "
                               f"dilation={list(d)}")
    ks = tuple(weight._data.shape[2:])
    x4, w4 = _lift_shape(input._data.shape, nd), _lift_w(weight._data.shape, nd)
    if nd == 1:
        s, d, ks, p, op_ = (1,) + s, (1,) + d, (1,) + ks, (0,) + p, (0,) + op_
    ins = tuple(x4[2:])
    outs = tuple((n - 1) * ss - 2 * pp + dd * (k - 1) + a + 1
                 for n, ss, pp, dd, k, a in zip(ins, s, p, d, ks, op_))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, ins[-nd:]))}). "
                           f"Calculated output size per channel: "
                           f"({' x '.join(map(str, outs[-nd:]))}). Output size is too small")
    P = _P(s, tuple(v for pp in p for v in (pp, pp)), d, groups, outs, ks, ins)
    O = weight._data.shape[1] * groups
    lift = None
    if x4 != input._data.shape or w4 != weight._data.shape:
        lift = (x4, w4, ((x4[0],) if input.dim() == nd + 2 else ()) + (O,) + tuple(outs[-nd:]))
    _kernel_dtype(input._data, True, nd)
    return _run("X", input, weight, bias, P, lift, meta)


@composite(method=False)
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-d transposed convolution (the input-gradient of conv2d), over ``convolution``."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


@composite(method=False)
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-d transposed convolution, over ``convolution``."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


@composite(method=False)
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-d transposed convolution, over ``convolution``."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


# --- the declared op: PyTorch's aten::convolution ----------------------------------------
def _ints(v):
    if v.__class__ is tuple:
        return v
    return tuple(int(a) for a in v) if isinstance(v, list) else (int(v),)


def _convolution_call(input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups, bias_sizes=None):
    x, w = input._data, weight._data
    nd = w.ndim - 2
    if x.ndim != w.ndim:
        if w.ndim < 3:
            raise RuntimeError("weight should have at least three dimensions")
        raise RuntimeError(f"Expected {w.ndim}-dimensional input for {w.ndim}-dimensional weight "
                           f"{list(w.shape)}, but got {x.ndim}-dimensional input of size "
                           f"{list(x.shape)} instead")
    groups = int(groups)
    _check(input, weight, bias, groups, transposed, nd)
    stride, padding, dilation, output_padding = (_ints(stride), _ints(padding), _ints(dilation),
                                                 _ints(output_padding))
    meta = (stride, padding, dilation, bool(transposed), output_padding, groups,
            tuple(bias._data.shape) if bias is not None else bias_sizes)
    s = _tup(stride, nd, "stride")
    if min(s) <= 0:
        raise RuntimeError("non-positive stride is not supported")
    d = _tup(dilation, nd, "dilation")
    p = _tup(padding, nd, "padding")
    if transposed:
        return _conv_t_nd(input, weight, bias, s, p, d, _tup(output_padding, nd, "output_padding"),
                          groups, nd, meta)
    return _conv_nd(input, weight, bias, s, d, p, groups, nd, meta)


def _batch(spec, arrays, params):
    """A leading batch axis of input, weight and bias as groups of one convolution (the
    batch folded into the channels): (B, N, C, *s), (B, O, C/g, *k) -> (B, N, O, *s')."""
    x, w = arrays[0], arrays[1]
    b = arrays[2] if len(arrays) > 2 else None
    B, N = x.shape[:2]
    p = dict(params)
    p["groups"] = int(p.get("groups", 1)) * B
    xf = x.swapaxes(0, 1).reshape((N, -1) + x.shape[3:])
    wf = w.reshape((-1,) + w.shape[2:])
    y = spec.forward(xf, wf, None if b is None else b.reshape(-1), **p)
    return np.ascontiguousarray(y.reshape((N, B, -1) + y.shape[2:]).swapaxes(0, 1))


@defop("convolution", node="ConvolutionBackward0", inputs=("input", "weight", "bias"),
       saved=("input", "weight") + _META, method=False, batch=_batch)
def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    """N-d convolution or transposed convolution (PyTorch's aten::convolution) of arrays."""
    return _convolution_call(_make(input), _make(weight), None if bias is None else _make(bias),
                             stride, padding, dilation, transposed, output_padding,
                             groups)._data


@_convolution.backward
def _(ctx, grad):
    return _convolution_bw(ctx._node, grad, ctx._graph)


def _convolution_bw(self, g, graph):
    s = self._saved  # input, weight, PyTorch's 7 values, then kind, geometry, columns, lift
    return _bilinear_bw(self, g, graph, s[9], s[0], s[1], s[10], s[11], s[12], s[2:9], True)


_convolution.node_cls._bw = _convolution_bw


@_convolution.jvp
def _(ctx, t_input, t_weight, t_bias):
    # linear in input and in weight: conv(t_input, w) + conv(x, t_weight) + the bias tangent
    meta = tuple(getattr(ctx, n) for n in _META[:6])
    out = None
    if t_input is not None:
        out = convolution(t_input, ctx.weight, None, *meta)
    if t_weight is not None:
        t = convolution(ctx.input, t_weight, None, *meta)
        out = t if out is None else out + t
    if t_bias is not None:
        nd = ctx.weight.dim() - 2
        t = t_bias.reshape((1, -1) + (1,) * nd)
        if out is None:
            meta_y = convolution(ctx.input, ctx.weight, None, *meta)
            out = t.expand(*meta_y.shape)
        else:
            out = out + t
    return out


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """N-d convolution (``transposed``: its transpose) with an optional bias, as PyTorch's
    ``torch.convolution``; ConvolutionBackward0."""
    if not (isinstance(input, Tensor) and isinstance(weight, Tensor) and (
            bias is None or isinstance(bias, Tensor))):
        if bias is None:
            bias = _ABSENT  # (the declaration's TypeErrors name the argument that is not one)
        return _convolution.declared(input, weight, bias, stride, padding, dilation, transposed,
                                     output_padding, groups)
    if bias is _ABSENT:  # conv1d...conv_transpose3d's absent bias: PyTorch's node shows (0,)
        return _convolution_call(input, weight, None, stride, padding, dilation, transposed,
                                 output_padding, groups, (0,))
    return _convolution_call(input, weight, bias, stride, padding, dilation, transposed,
                             output_padding, groups)


convolution = front(_convolution, convolution)
_NODE = _convolution.node_cls
