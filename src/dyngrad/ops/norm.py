"""Normalisation layers (batch, layer, group norm): one node each, with a backward formula
written once for ndarrays and Tensors, so it is differentiable again under create_graph."""
from __future__ import annotations

import numpy as np

from .._tensor import channels_last_format
from .._record import NO_EDGE, STATE, Node, Saved, Tensor, edge_of, record
from .tensor_basics import layout_copy
from . import _dual as X
from .. import _dtype as _DT

_make = Tensor._make


def _mean(a, axes):
    if isinstance(a, Tensor):
        return a.mean(axes, keepdim=True)
    return a.mean(axis=axes, keepdims=True)


def _sum(a, axes):
    if isinstance(a, Tensor):
        return a.sum(axes) if axes else a
    return a.sum(axis=axes) if axes else a


class _NormNode(Node):
    """Backward of y = xhat * w + b, xhat normalised over ``axes`` of x viewed as ``rs``."""
    __slots__ = ()
    _saves_bias = False

    def _bw(self, g, graph):
        sx, sw, mean, invstd, rs, axes, wb, wa, fixed, eps, bshape = self._saved
        x = sx.get(self, graph)
        if bshape.__class__ is Saved:  # a saved bias (layer norm's): its version is checked
            bshape = tuple(bshape.get(self, False).shape)
        w = sw.get(self, graph) if sw is not None else None
        need_x = self.next_functions[0][0] is not None
        need_w = len(self.next_functions) > 1 and self.next_functions[1][0] is not None
        need_b = len(self.next_functions) > 2 and self.next_functions[2][0] is not None
        xshape = tuple(x.shape)
        xr = x.reshape(rs)
        if graph and not fixed:
            # statistics as functions of x, so the gradient differentiates through them
            mu = _mean(xr, axes)
            xc = xr - mu
            inv = (_mean(xc * xc, axes) + eps) ** -0.5
        else:
            mu = X.const(mean, x)
            inv = X.const(invstd, x)
            xc = xr - mu
        xhat_r = xc * inv
        gx = gw = gb = None
        if need_x:
            gxh = g * w.reshape(wb) if w is not None else g
            gxr = gxh.reshape(rs)
            if fixed:
                gx = (gxr * inv).reshape(xshape)
            else:
                gx = (inv * (gxr - _mean(gxr, axes) - xhat_r * _mean(gxr * xhat_r, axes))) \
                    .reshape(xshape)
        if need_w:
            gw = _sum(g * xhat_r.reshape(xshape), wa).reshape(w.shape)
        if need_b:
            gb = _sum(g, wa).reshape(bshape)
        return gx, gw, gb


class NativeBatchNormBackward0(_NormNode):
    __slots__ = ()


class NativeLayerNormBackward0(_NormNode):
    __slots__ = ()
    _saves_bias = True  # PyTorch's layer norm saves the bias (batch and group norm do not)


class NativeGroupNormBackward0(_NormNode):
    __slots__ = ()


def suggested_layout(x, y):
    """``y`` laid out as PyTorch's suggest_memory_format(x) allocates it: channels-last when
    ``x`` (4-d or 5-d, more than one channel) is stored channels-last, else C order."""
    fmt = channels_last_format(x) if x.shape[1:2] != (1,) and not x.flags.c_contiguous else None
    if fmt is not None:
        return layout_copy(y, fmt)
    return y if y.flags.c_contiguous else y.copy(order="C")


def normalize_affine(input, weight, bias, rs, axes, wb, wa, eps, node_cls, stats=None,
                     layout=suggested_layout, rounded_stats=False):
    """Normalise ``input`` (viewed as shape ``rs``) over ``axes``, then scale/shift by weight
    and bias (broadcast as ``wb``, reduced over ``wa`` in backward).  ``stats`` = fixed
    (mean, var) arrays broadcastable to ``rs``; else batch statistics; ``layout`` lays the
    output out from the input's (PyTorch's rule by default).  Returns the output and the batch
    (mean, biased var) arrays.  ``rounded_stats``: bfloat16 batch statistics and invstd are
    rounded to bfloat16 (PyTorch's batch norm; its layer and group norms keep them in
    float32)."""
    x = input._data
    if x.dtype not in _DT.FLOATING:
        raise RuntimeError(f"expected a floating point input, got {input.dtype}")
    # float16 and bfloat16 are computed in float32 and rounded once, as PyTorch's kernels
    cdt = np.dtype(np.float32) if x.dtype == np.float16 or x.dtype == _DT.BF16 else x.dtype
    xr = x.reshape(rs).astype(cdt, copy=False)
    if stats is None:
        mean = xr.mean(axis=axes, keepdims=True)
        xc = xr - mean
        var = (xc * xc).mean(axis=axes, keepdims=True)
        if rounded_stats and x.dtype == _DT.BF16:
            mean = mean.astype(x.dtype).astype(cdt)
            var = var.astype(x.dtype).astype(cdt)
            xc = xr - mean
        fixed = False
    else:
        mean = stats[0].astype(cdt, copy=False)
        var = stats[1].astype(cdt, copy=False)
        xc = xr - mean
        fixed = True
    invstd = (1.0 / np.sqrt(var + eps)).astype(cdt, copy=False)
    if rounded_stats and not fixed and x.dtype == _DT.BF16:
        invstd = invstd.astype(x.dtype).astype(cdt)
    y = (xc * invstd).reshape(x.shape)
    if weight is not None:
        y = y * weight._data.reshape(wb)
    if bias is not None:
        y = y + bias._data.reshape(wb)
    y = layout(x, y.astype(x.dtype, copy=False))
    mean, var, invstd = (a.astype(x.dtype, copy=False) for a in (mean, var, invstd))
    if STATE.enabled and (input._requires_grad or (weight is not None and weight._requires_grad)
                          or (bias is not None and bias._requires_grad)):
        edges = (edge_of(input), edge_of(weight) if weight is not None else NO_EDGE,
                 edge_of(bias) if bias is not None else NO_EDGE)
        bshape = None if bias is None else Saved(bias) if node_cls._saves_bias else \
            tuple(bias._data.shape)
        node = node_cls(edges, (Saved(input), Saved(weight) if weight is not None else None,
                                mean, invstd, rs, axes, wb, wa, fixed, eps, bshape))
        return record(y, node), mean, var
    return _make(y), mean, var
