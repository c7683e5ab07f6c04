"""unfold (im2col, Im2ColBackward0) and fold (col2im, Col2ImBackward0) on the convolution's
strided-window im2col and its col2im scatter (ops/conv.py).  Each is the other's adjoint, so
as in PyTorch the gradient of one is the other op, to any order."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from .._record import STATE, Node, edge_of, record
from ..ops import _dual as X
from ..ops.conv import _P, _col2im, _im2col

_make = Tensor._make


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _args(names_values):
    """PyTorch's check that every size argument has two values."""
    out = []
    for name, v in names_values:
        v = _pair(v)
        if len(v) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
        out.append(tuple(int(a) for a in v))
    return out


def _positive(k, d, p, s, order):
    checks = {"k": (k[0] > 0 and k[1] > 0, "kernel size should be greater than zero, but got "
                    f"kernel_height: {k[0]} kernel_width: {k[1]}"),
              "d": (d[0] > 0 and d[1] > 0, "dilation should be greater than zero, but got "
                    f"dilation_height: {d[0]} dilation_width: {d[1]}"),
              "p": (p[0] >= 0 and p[1] >= 0, "padding should be non-negative, but got "
                    f"pad_height: {p[0]} pad_width: {p[1]}"),
              "s": (s[0] > 0 and s[1] > 0, "stride should be greater than zero, but got "
                    f"stride_height: {s[0]} stride_width: {s[1]}")}
    for c in order:
        ok, msg = checks[c]
        if not ok:
            raise RuntimeError(msg)


def _blocks(n, k, d, p, s):
    return (n + 2 * p - (d * (k - 1) + 1)) // s + 1


def _geometry(H, W, k, d, p, s):
    oh, ow = _blocks(H, k[0], d[0], p[0], s[0]), _blocks(W, k[1], d[1], p[1], s[1])
    return _P(s, (p[0], p[0], p[1], p[1]), d, 1, (H, W), k, (oh, ow))


def _kernel_dtype(x, kernel):
    """im2col/col2im have floating and bool kernels (PyTorch's dispatch)."""
    if x.dtype not in D.INEXACT and x.dtype.kind != "b":
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(x.dtype)}'")


class Im2ColBackward0(Node):
    """Backward of unfold: fold the column gradient back (Col2ImBackward0 under
    create_graph)."""
    __slots__ = ()
    _named_saved = {"kernel_size": (1, "same"), "dilation": (2, "same"), "padding": (3, "same"),
                    "stride": (4, "same"), "self_sym_argsize_minus_2": (5, "same"),
                    "self_sym_argsize_minus_1": (6, "same")}

    def _bw(self, g, graph):
        P, k, d, p, s, H, W = self._saved
        return _col2im_any(g, P, k, d, p, s),


class Col2ImBackward0(Node):
    """Backward of fold: unfold the gradient (Im2ColBackward0 under create_graph)."""
    __slots__ = ()
    _named_saved = {"kernel_size": (1, "same"), "dilation": (2, "same"), "padding": (3, "same"),
                    "stride": (4, "same")}

    def _bw(self, g, graph):
        P, k, d, p, s = self._saved
        return _im2col_any(g, P, k, d, p, s),


def _im2col_np(x, P):
    """(N, C, H, W) or (C, H, W) -> (N, C*kh*kw, L) or (C*kh*kw, L)."""
    batched = x.ndim == 4
    x4 = x if batched else x[None]
    N, C = x4.shape[:2]
    L = P.os[0] * P.os[1]
    if N == 0:
        out = np.zeros((0, C * P.ks[0] * P.ks[1], L), x.dtype)
    else:
        cols = _im2col(x4, P)[0]
        out = np.ascontiguousarray(cols.reshape(-1, N, L).transpose(1, 0, 2))
    return out if batched else out[0]


def _col2im_np(c, P):
    """(N, C*kh*kw, L) or (C*kh*kw, L) -> (N, C, H, W) or (C, H, W)."""
    batched = c.ndim == 3
    c3 = c if batched else c[None]
    N, CK = c3.shape[:2]
    kh, kw = P.ks
    C = CK // (kh * kw)
    if N == 0:
        out = np.zeros((0, C) + P.xs, c.dtype)
    else:
        dcols = c3.reshape((N, C, kh, kw) + P.os).transpose(1, 2, 3, 0, 4, 5)
        out = _col2im(dcols, P, c.dtype)
    return out if batched else out[0]


def _im2col_op(x, P, k, d, p, s):
    out = _im2col_np(x._data, P)
    if STATE.enabled and x._requires_grad:
        H, W = P.xs
        return record(out, Im2ColBackward0((edge_of(x),), (P, k, d, p, s, H, W)))
    return _make(out)


def _col2im_op(c, P, k, d, p, s):
    out = _col2im_np(c._data, P)
    if STATE.enabled and c._requires_grad:
        return record(out, Col2ImBackward0((edge_of(c),), (P, k, d, p, s)))
    return _make(out)


# NumPy on arrays, recorded (differentiable) on Tensors
_im2col_any = X.twin(lambda x, P, k, d, p, s: _im2col_np(x, P), _im2col_op)
_col2im_any = X.twin(lambda c, P, k, d, p, s: _col2im_np(c, P), _col2im_op)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks of a (N, C, H, W) or (C, H, W) input as columns
    (N, C*prod(kernel_size), L); Im2ColBackward0."""
    k, d, p, s = _args((("kernel_size", kernel_size), ("dilation", dilation),
                        ("padding", padding), ("stride", stride)))
    _positive(k, d, p, s, "kdps")
    x = input._data
    if x.ndim < 3:
        n = max(x.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got 2)")
    sh = x.shape
    valid = sh[1] != 0 and sh[2] != 0
    if not ((x.ndim == 3 and sh[0] and valid) or (x.ndim == 4 and valid and sh[3] != 0)):
        raise RuntimeError(f"Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: {list(sh)}")
    H, W = sh[-2:]
    P = _geometry(H, W, k, d, p, s)
    if P.os[0] < 1 or P.os[1] < 1:
        raise RuntimeError(f"Given input with spatial size ({H}, {W}), kernel_size=({k[0]}, "
                           f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), "
                           f"calculated shape of the array of sliding blocks as ({P.os[0]}, "
                           f"{P.os[1]}), but its components must be at least one.")
    _kernel_dtype(x, "im2col_out_cpu")
    return _im2col_op(input, P, k, d, p, s)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sums columns (N, C*prod(kernel_size), L) back into a (N, C, *output_size) image, the
    adjoint of unfold; Col2ImBackward0."""
    o, k, d, p, s = _args((("output_size", output_size), ("kernel_size", kernel_size),
                           ("dilation", dilation), ("padding", padding), ("stride", stride)))
    _positive(k, d, p, s, "ksdp")
    c = input._data
    sh = c.shape
    valid = c.ndim >= 2 and sh[0] != 0 and sh[1] != 0
    if c.ndim == 3:
        valid = sh[1] != 0 and sh[2] != 0
    if not ((c.ndim == 2 and valid) or (c.ndim == 3 and valid)):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: {list(sh)}")
    planes, length = sh[-2], sh[-1]
    if planes % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={planes} and "
                           f"kernel_size=({k[0]}, {k[1]}).")
    P = _geometry(o[0], o[1], k, d, p, s)
    bh, bw = P.os
    desc = (f"Given output_size=({o[0]}, {o[1]}), kernel_size=({k[0]}, {k[1]}), "
            f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), ")
    if length != bh * bw:
        raise RuntimeError(desc + f"expected size of input's dimension 2 to match the calculated "
                           f"number of sliding blocks {bh} * {bw} = {bh * bw}, but got "
                           f"input.size(2)={length}.")
    if bh < 1 or bw < 1:
        raise RuntimeError(desc + f"calculated shape of the array of sliding blocks as ({bh}, "
                           f"{bw}), which is too small (non-positive)")
    _kernel_dtype(c, "col2im_out_cpu")
    return _col2im_op(input, P, k, d, p, s)


for _f in (unfold, fold):
    _f.__module__ = "dyngrad.nn.functional"  # listed and argument-checked as F's own
