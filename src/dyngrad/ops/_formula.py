"""A backward node whose formula is written once with dyngrad ops: under ``create_graph`` it
runs on Tensors and records a differentiable graph; in a plain backward the same formula
runs on constant Tensors with recording off and its results are handed back as arrays."""
from __future__ import annotations

import numpy as np

from .._record import Node, Saved, Tensor
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
    # positions in the saved tuple that hold this node's own outputs -> their output number
    # (under create_graph a saved output's gradient flows back into that output of this node)
    _saved_outputs: dict = {}
    # positions in the saved tuple in the order PyTorch unpacks them (by name), when that is
    # not the tuple's order: the first invalid one is the one reported
    _unpack_order: tuple = ()

    def formula(self, g, *saved):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def needs(self, i):
        return self.next_functions[i][0] is not None

    def _unpack_saved(self, graph):
        for pos in self._unpack_order:
            s = self._saved[pos]
            if s.tensor_ref is None and s.counter[0] != s.version:
                s.get(self, graph)  # raises its error
        out = []
        for pos, s in enumerate(self._saved):
            if type(s) is not Saved:
                out.append(s)
                continue
            try:
                out.append(s.get(self, graph))
            except RuntimeError as e:
                nr = self._saved_outputs.get(pos)
                if nr and s.is_output:  # PyTorch names which output of this node it was
                    msg = str(e).replace(", which is output 0 of ",
                                         f", which is output {nr} of ", 1)
                    raise RuntimeError(msg) from None
                raise
        return out

    def _bw(self, g, graph):
        vals = self._unpack_saved(graph)
        if graph:
            vals = [const(v) for v in vals]
            for pos, nr in self._saved_outputs.items():
                v = vals[pos]
                if nr and isinstance(v, Tensor) and v._grad_fn is self:
                    v._output_nr = nr
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
