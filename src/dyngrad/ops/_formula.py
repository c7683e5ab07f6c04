"""A backward node whose formula is written once with dyngrad ops: under ``create_graph`` it
runs on Tensors and records a differentiable graph; in a plain backward the same formula
runs on constant Tensors with recording off and its results are handed back as arrays."""
from __future__ import annotations

import numpy as np

from ._graph import Node, Saved, Tensor
from ..autograd.grad_mode import STATE

_make = Tensor._make


def const(x):
    """``x`` as a Tensor (ndarrays wrapped, Tensors kept)."""
    if isinstance(x, np.ndarray):
        return _make(x if x.flags.c_contiguous else x.copy(order="C"))
    return x


class FormulaNode(Node):
    """Subclasses define ``formula(self, g, *saved)``: ``g`` is the incoming gradient (a tuple
    for several outputs, None where no gradient came), ``saved`` the node's saved values with
    ``Saved`` entries unpacked (version-checked) and arrays as constant Tensors.  It returns one
    gradient (Tensor or None) per input edge."""

    __slots__ = ()

    def formula(self, g, *saved):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def needs(self, i):
        return self.next_functions[i][0] is not None

    def _bw(self, g, graph):
        vals = [s.get(self, graph) if type(s) is Saved else s for s in self._saved]
        if graph:
            vals = [const(v) for v in vals]
            gt = tuple(const(x) if x is not None else None for x in g) if self._nout > 1 \
                else const(g)
            return tuple(self.formula(gt, *vals))
        prev = STATE.enabled
        STATE.enabled = False
        try:
            vals = [const(v) for v in vals]
            gt = tuple(const(x) if x is not None else None for x in g) if self._nout > 1 \
                else const(g)
            r = self.formula(gt, *vals)
        finally:
            STATE.enabled = prev
        return tuple(x._data if isinstance(x, Tensor) else x for x in r)
