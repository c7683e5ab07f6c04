"""pdist: the p-norm distance between every pair of rows (i < j) of a 2-d input, one
PdistBackward0 node (self, p and result saved) with PyTorch's per-p backward formulas; its
gradient under create_graph is a PdistBackwardBackward0 node that, as PyTorch's, has no
derivative."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from .._record import STATE, Node, Saved, edge_of, notify, record
from ._losses_more import no_forward_ad

_make = Tensor._make


def _pairs(n):
    return np.triu_indices(n, 1)


def _dist_np(x, p):
    i, j = _pairs(x.shape[0])
    d = np.abs(x[i] - x[j])
    if p == 0:
        r = (d != 0).sum(1).astype(x.dtype)
    elif p == 1:
        r = d.sum(1)
    elif p == 2:
        r = np.sqrt((d * d).sum(1))
    elif np.isinf(p):
        r = d.max(1) if d.shape[1] else np.zeros(d.shape[0], x.dtype)
    else:
        r = (d ** p).sum(1) ** (1.0 / p)
    return np.asarray(r, x.dtype)


def _grad_np(g, x, p, dist):
    """PyTorch's _pdist_backward: each pair's slope added to row i and subtracted from j."""
    n = x.shape[0]
    i, j = _pairs(n)
    diff = x[i] - x[j]
    gg = g[:, None]
    dd = dist[:, None]
    with np.errstate(all="ignore"):
        if p == 0:
            s = np.zeros_like(diff)
        elif p == 1:
            s = gg * np.sign(diff)
        elif p < 2:
            s = np.sign(diff) * np.abs(diff) ** (p - 1) * gg / dd ** (p - 1)
            s = np.where((dd == 0) | ((diff == 0) & (p < 1)), 0, s)
        elif p == 2:
            s = np.where(dd == 0, 0, gg * diff / dd)
        elif np.isinf(p):
            s = gg * np.sign(diff) * (np.abs(diff) == dd)
        else:
            s = np.where(dd == 0, 0, diff * np.abs(diff) ** (p - 2) * gg / dd ** (p - 1))
    out = np.zeros_like(x)
    np.add.at(out, i, s)
    np.add.at(out, j, -s)
    return out.astype(x.dtype, copy=False)


class PdistBackwardBackward0(Node):
    """The gradient of pdist under create_graph: PyTorch implements no derivative of it."""
    __slots__ = ()

    def _bw(self, g, graph):
        raise NotImplementedError("the derivative for '_pdist_backward' is not implemented.")


class PdistBackward0(Node):
    """Backward of pdist."""
    __slots__ = ()
    _named_saved = {"self": (0, "tensor"), "p": (1, "same"), "result": (2, "tensor")}
    _fw_rule = no_forward_ad("_pdist_forward")

    def _bw(self, g, graph):
        sx, p, sr = self._saved
        x = sx.get(self, graph)
        r = sr.get(self, graph)
        if not graph:
            return _grad_np(np.asarray(g), x, p, r),
        d = _grad_np(g._data, x._data, p, r._data)
        edges = (edge_of(g), edge_of(x), edge_of(r))
        if STATE.enabled and (g._requires_grad or x._requires_grad or r._requires_grad):
            return record(d, PdistBackwardBackward0(edges, ())),
        return _make(d),


def pdist(input, p=2):
    """Distances ||x_i - x_j||_p of every row pair i < j, in row-major pair order."""
    if not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"pdist(): argument 'p' (position 2) must be float, not "
                        f"{D.type_name(p)}")
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    x = input._data
    if x.dtype not in D.FLOATING:
        raise RuntimeError("pdist only supports floating-point dtypes")
    p = float(p)
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    if x.dtype.itemsize < 4:
        raise NotImplementedError(f'"pdist" not implemented for \'{D.scalar_type_name(x.dtype)}\'')
    if not x.flags.c_contiguous:
        input = input.contiguous()
        x = input._data
    out = _dist_np(x, p)
    if STATE.enabled and input._requires_grad:
        res = record(out, None)
        res._grad_fn = PdistBackward0((edge_of(input),), (Saved(input), p, Saved(res, True)))
        return notify(res)
    return _make(out)


pdist.__module__ = "dyngrad.nn.functional"  # listed and argument-checked as F's own
