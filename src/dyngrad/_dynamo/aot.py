"""The backward of a replayed forward that autograd goes through after the call (a compiled
module's forward in training): the output gets a ``CompiledFunctionBackward`` node (PyTorch's
name) whose backward runs the captured backward program on the gradient it receives."""
from __future__ import annotations

from .._record import record
from ..autograd.node import Node, Saved, edge_of

__all__ = ["CompiledFunctionBackward", "aot_output", "edge_of"]


class CompiledFunctionBackward(Node):
    """Runs the captured backward of a compiled forward: one gradient per input tensor
    (parameters, arguments that require grad), on the forward's saved arrays."""

    __slots__ = ()

    def _bw(self, g, graph):
        if graph:
            raise RuntimeError("dyngrad.compile: backward with create_graph=True through a "
                               "compiled forward is not supported; call the module "
                               "uncompiled for higher-order gradients")
        bwd, saved, watched = self._saved
        for s in watched:  # a tensor the backward reads, changed in place since: eager's error
            s.get(self, False)
        return bwd(g, saved)


def aot_output(data, edges, saved, bwd, watched=()):
    """The forward's output: ``data`` with a CompiledFunctionBackward node; ``watched``: the
    tensors from outside (parameters) whose arrays the backward reads, stamped with their
    versions now, as a node's saved tensors are."""
    return record(data, CompiledFunctionBackward(edges, (bwd, saved,
                                                         tuple(map(Saved, watched)))))
