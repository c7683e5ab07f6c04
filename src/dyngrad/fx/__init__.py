"""``dyngrad.fx``: PyTorch's torch.fx on dyngrad. Symbolic tracing records a module's
forward as a ``Graph`` of ``Node`` s; a ``GraphModule`` runs the Python code generated
from it; ``Interpreter``/``Transformer`` and ``subgraph_rewriter`` rewrite graphs."""
from .graph import Graph, CodeGen
from .graph_module import GraphModule
from .node import Node, map_arg, has_side_effect
from .proxy import Proxy
from ._symbolic_trace import Tracer, symbolic_trace, wrap, PH, ProxyableClassMeta
from .interpreter import Interpreter, Transformer
from .subgraph_rewriter import replace_pattern
from . import passes  # noqa: F401

__all__ = ["symbolic_trace", "Tracer", "wrap", "Graph", "GraphModule", "Interpreter",
           "Transformer", "Node", "Proxy", "replace_pattern", "map_arg", "CodeGen", "PH",
           "has_side_effect", "ProxyableClassMeta"]
