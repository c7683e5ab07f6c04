"""Inference-time graph rewrites on traced modules, as ``torch.fx.experimental.optimization``:
``fuse`` folds a BatchNorm into the Conv or Linear layer feeding it, ``remove_dropout``
drops Dropout layers."""
from __future__ import annotations

import copy
from typing import Any, Iterable

from ... import nn
from ...nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval
from .. import Graph, GraphModule, Node, Transformer, symbolic_trace

__all__ = ["fuse", "remove_dropout", "matches_module_pattern", "replace_node_module"]


def _parent_name(target: str) -> tuple[str, str]:
    """``"a.b.c"`` -> ``("a.b", "c")``; a top-level name has the parent ``""``."""
    parent, _, name = target.rpartition(".")
    return parent, name


def matches_module_pattern(pattern: Iterable[type], node: Node,
                           modules: dict[str, nn.Module]) -> bool:
    """Whether ``node`` and its first argument call modules of exactly the types of the
    two-long ``pattern`` (first argument's type first)."""
    if len(node.args) == 0:
        return False
    for expected, current in zip(pattern, (node.args[0], node)):
        if not isinstance(current, Node) or current.op != "call_module":
            return False
        if not isinstance(current.target, str) or current.target not in modules:
            return False
        if type(modules[current.target]) is not expected:
            return False
    return True


def replace_node_module(node: Node, modules: dict[str, nn.Module],
                        new_module: nn.Module) -> None:
    """Put ``new_module`` where ``node``'s called module is, in ``modules`` and its parent."""
    if not isinstance(node.target, str):
        raise AssertionError(f"Expected str target, got {type(node.target)}")
    parent_name, name = _parent_name(node.target)
    modules[node.target] = new_module
    setattr(modules[parent_name], name, new_module)


def fuse(model: nn.Module, inplace: bool = False, no_trace: bool = False) -> nn.Module:
    """Trace ``model`` and fold every BatchNorm that is the only user of a Conv1d/2d/3d or
    Linear output into that layer (with the BatchNorm's running statistics, so the result
    matches the model in eval mode). ``model`` is deep-copied unless ``inplace``; a
    GraphModule is used as it is with ``no_trace``."""
    patterns = [(nn.Conv1d, nn.BatchNorm1d), (nn.Conv2d, nn.BatchNorm2d),
                (nn.Conv3d, nn.BatchNorm3d), (nn.Linear, nn.BatchNorm1d)]
    if not inplace:
        model = copy.deepcopy(model)
    if not no_trace or not isinstance(model, GraphModule):
        fx_model = symbolic_trace(model)
    else:
        fx_model = model
    modules = dict(fx_model.named_modules())
    new_graph: Graph = copy.deepcopy(fx_model.graph)
    for pattern in patterns:
        for node in new_graph.nodes:
            if not matches_module_pattern(pattern, node, modules):
                continue
            if len(node.args[0].users) > 1:  # the layer's output has other users too
                continue
            first, bn = modules[node.args[0].target], modules[node.target]
            if not bn.track_running_stats:
                continue
            if pattern[0] is nn.Linear:
                fused = fuse_linear_bn_eval(first, bn)
            else:
                fused = fuse_conv_bn_eval(first, bn)
            replace_node_module(node.args[0], modules, fused)
            node.replace_all_uses_with(node.args[0])
            new_graph.erase_node(node)
    return GraphModule(fx_model, new_graph)


def remove_dropout(model: nn.Module) -> nn.Module:
    """Trace ``model`` and return it with every ``nn.Dropout`` call replaced by its input."""
    fx_model = symbolic_trace(model)

    class DropoutRemover(Transformer):
        def call_module(self, target, args: tuple, kwargs: dict[str, Any]) -> Any:
            if isinstance(self.submodules[target], nn.Dropout):
                if len(args) != 1:
                    raise AssertionError(f"Expected 1 arg for Dropout, got {len(args)}")
                return args[0]
            return super().call_module(target, args, kwargs)

    return DropoutRemover(fx_model).transform()
