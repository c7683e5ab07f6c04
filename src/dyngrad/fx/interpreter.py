"""``Interpreter`` runs a GraphModule node by node (override its per-opcode methods to
change what each node does); ``Transformer`` runs it on Proxies to build a new graph."""
from __future__ import annotations

import inspect
from typing import Any, Iterator

from .graph import Graph
from .graph_module import GraphModule
from .node import Argument, Node, Target, map_aggregate, map_arg
from .proxy import Proxy
from ._symbolic_trace import Tracer, _recording_methods

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Executes ``module``'s graph one node at a time.

    ``run`` calls ``run_node`` for each node, which dispatches to ``placeholder``,
    ``get_attr``, ``call_function``, ``call_method``, ``call_module`` or ``output``; each can
    be overridden. With ``garbage_collect_values`` a value is dropped after its last use.
    """

    def __init__(self, module, garbage_collect_values: bool = True,
                 graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        if garbage_collect_values:
            last: dict[Node, Node] = {}
            self.user_to_last_uses: dict[Node, list[Node]] = {}
            for node in reversed(self.graph.nodes):
                for n in node._input_nodes:
                    if n not in last:
                        last[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None,
            enable_io_processing: bool = True) -> Any:
        """Run the graph on ``args``; nodes already in ``initial_env`` are not run."""
        self.env = initial_env if initial_env is not None else {}
        if enable_io_processing:
            args = self.graph.process_inputs(*args)
        self.args_iter: Iterator[Any] = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    msg = f"While executing {node.format_node()}"
                    msg = f"{e.args[0]}\n\n{msg}" if e.args else str(msg)
                    msg += f"\nOriginal traceback:\n{node.stack_trace}"
                    msg += ("\nUse tlparse to see full graph. (https://github.com/pytorch/tlparse"
                            "?tab=readme-ov-file#tlparse-parse-structured-pt2-logs)")
                    e.args = (msg,) + e.args[1:]
                    if isinstance(e, KeyError):
                        raise RuntimeError(*e.args) from e
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, []):
                    del self.env[dead]
            if node.op == "output":
                out = self.env[node]
                return self.graph.process_outputs(out) if enable_io_processing else out
        return None

    def boxed_run(self, args_list: list) -> Any:
        """``run`` taking its arguments as a list it empties (so inputs can be freed)."""
        phs = [n for n in self.graph.nodes if n.op == "placeholder"]
        if len(args_list) != len(phs):
            detail = "extra arguments" if len(args_list) > len(phs) else "missing arguments"
            raise RuntimeError(f"Interpreter.boxed_run expected {len(phs)} arguments for "
                               f"placeholders but received {len(args_list)} ({detail})")
        env = dict(zip(phs, args_list))
        args_list.clear()
        return self.run(initial_env=env)

    def run_node(self, n: Node) -> Any:
        """Run one node: fetch its arguments from the environment and call the method named
        by its opcode."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The next argument given to ``run`` (all remaining ones for ``*args``)."""
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration as si:
            if len(args) > 0:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one "
                               f"was not passed in!") from si

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The attribute ``target`` of the module."""
        return self.fetch_attr(target)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``target(*args, **kwargs)``."""
        if isinstance(target, str):
            raise AssertionError("target should not be a string for call_function")
        return target(*args, **kwargs)

    def call_method(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """``args[0].target(*args[1:], **kwargs)``."""
        self_obj, *tail = args
        return getattr(self_obj, target)(*tail, **kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """Call the submodule ``target``."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """The value returned by the graph."""
        return args[0]

    def fetch_attr(self, target: str) -> Any:
        """Follow the dotted path ``target`` from the module."""
        atoms = target.split(".")
        cur = self.module
        for i, atom in enumerate(atoms):
            if not hasattr(cur, atom):
                raise RuntimeError(f"Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            cur = getattr(cur, atom)
        return cur

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """``n``'s args and kwargs with each input node replaced by its computed value."""
        args = self.map_nodes_to_values(n.args, n)
        kwargs = self.map_nodes_to_values(n.kwargs, n)
        return args, kwargs

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """Replace the nodes inside ``args`` by their values."""
        def load(a: Node) -> Any:
            if a not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {a}! Run Graph.lint() "
                                   f"to diagnose such issues")
            return self.env[a]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.tensor_attrs = {}

    def is_leaf_module(self, m, qualname: str) -> bool:
        return True


class Transformer(Interpreter):
    """Runs a GraphModule on Proxies, so the values its overridden methods return build a
    new graph; ``transform()`` returns the new GraphModule. Torch functions and tensor
    methods called on those Proxies in the overrides become nodes."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A placeholder of the new graph."""
        default = next(iter(args)) if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: Target, args: tuple, kwargs: dict) -> Proxy:
        """A get_attr node of the new graph."""
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """A call_module node of the new graph."""
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Target, args: tuple, kwargs: dict) -> Any:
        """A call_function node of the new graph."""
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Build and return the transformed GraphModule."""
        with _recording_methods():
            result = super().run(enable_io_processing=False)
        if result is not None:
            new_out = self.new_graph.output(
                map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
            old_out = list(self.graph.nodes)[-1]
            new_out.meta.update(old_out.meta)
        return GraphModule(self.module, self.new_graph)
