"""``replace_pattern``: find every occurrence of a pattern graph inside a GraphModule's graph
and splice a replacement graph in its place."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

from .graph import Graph
from .graph_module import GraphModule
from .node import Node

__all__ = ["Match", "replace_pattern", "replace_pattern_with_filters", "ReplacedPatterns"]


class Match(NamedTuple):
    """A pattern occurrence: the pattern node the match was found from, and the map from
    pattern nodes to graph nodes."""
    anchor: Node
    nodes_map: dict[Node, Node]


@dataclass
class ReplacedPatterns:
    """A replaced occurrence, with the nodes the replacement added."""
    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]


@dataclass
class InternalMatch:
    """A match as the matcher finds it (placeholders and returning nodes in pattern order)."""
    anchors: list[Node]
    nodes_map: dict[Node, Node]
    placeholder_nodes: list[Node]
    returning_nodes: list[Node]


class SubgraphMatcher:
    """Finds the occurrences of ``pattern`` in a graph, comparing ops, targets and literal
    arguments (pattern placeholders match anything, consistently)."""

    def __init__(self, pattern: Graph, ignore_literals: bool = False) -> None:
        self.pattern = pattern
        self.ignore_literals = ignore_literals
        out = pattern.output_node()
        ret = out.args[0]
        self.returning = list(ret) if isinstance(ret, (tuple, list)) else [ret]
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        self.internal = [n for n in pattern.nodes
                         if n.op not in ("placeholder", "output") and n not in self.returning]

    def _same(self, pn: Node, gn: Node) -> bool:
        if pn.op != gn.op:
            return False
        if pn.op == "get_attr":
            return True
        return pn.target == gn.target

    def _match_arg(self, pa: Any, ga: Any, m: dict) -> bool:
        if isinstance(pa, Node) and isinstance(ga, Node):
            return self._match_node(pa, ga, m)
        if isinstance(pa, Node):  # a pattern input stands for any value, a literal too
            if pa.op != "placeholder":
                return False
            if pa in m:
                return m[pa] == ga
            m[pa] = ga
            return True
        if isinstance(pa, (list, tuple)):
            return isinstance(ga, (list, tuple)) and len(pa) == len(ga) and \
                all(self._match_arg(a, b, m) for a, b in zip(pa, ga))
        if isinstance(pa, dict):
            return isinstance(ga, dict) and pa.keys() == ga.keys() and \
                all(self._match_arg(pa[k], ga[k], m) for k in pa)
        if isinstance(ga, Node):
            return False
        return self.ignore_literals or (type(pa) is type(ga) and pa == ga)

    def _match_node(self, pn: Node, gn: Node, m: dict) -> bool:
        if pn in m:
            return m[pn] is gn
        if any(v is gn for v in m.values()):  # one graph node per pattern node
            return False
        if pn.op == "placeholder":
            m[pn] = gn
            return True
        if not self._same(pn, gn):
            return False
        m[pn] = gn
        return self._match_arg(pn.args, gn.args, m) and self._match_arg(pn.kwargs, gn.kwargs, m)

    def _contained(self, m: dict) -> bool:
        inside = {m[p] for p in m if p.op != "placeholder"}
        for p in self.internal:
            if any(u not in inside for u in m[p].users):
                return False
        return True

    def match(self, graph: Graph) -> list[InternalMatch]:
        found: list[InternalMatch] = []
        nodes = list(graph.nodes)

        def search(i: int, m: dict) -> None:
            if i == len(self.returning):
                if self._contained(m):
                    found.append(InternalMatch(
                        anchors=list(self.returning), nodes_map=dict(m),
                        placeholder_nodes=[m[p] for p in self.placeholders if p in m],
                        returning_nodes=[m[r] for r in self.returning]))
                return
            for gn in nodes:
                trial = dict(m)
                if self._match_node(self.returning[i], gn, trial):
                    search(i + 1, trial)
        search(0, {})
        taken: set[Node] = set()
        kept = []
        for mt in found:
            own = {mt.nodes_map[p] for p in mt.nodes_map if p.op != "placeholder"}
            if own & taken:
                continue
            taken |= own
            kept.append(mt)
        return kept


def _graph_of(x) -> Graph:
    from ._symbolic_trace import symbolic_trace
    if isinstance(x, GraphModule):
        return x.graph
    if isinstance(x, Graph):
        return x
    return symbolic_trace(x).graph


def _replace_attributes(gm: GraphModule, replacement) -> None:
    from ..nn import Module
    gm.delete_all_unused_submodules()

    def try_get(mod, target):
        path, _, name = target.rpartition(".")
        try:
            sub = mod.get_submodule(path)
        except AttributeError:
            return None
        return getattr(sub, name, None)
    for node in gm.graph.nodes:
        if node.op in ("call_module", "get_attr"):
            if try_get(gm, node.target) is not None:
                continue
            new = try_get(replacement, node.target)
            if new is None:
                raise RuntimeError("Attempted to create a \"", node.op, "\" node during subgraph "
                                   "rewriting with target ", node.target, ", but the referenced "
                                   "attribute does not exist in the replacement GraphModule")
            new = copy.deepcopy(new)
            if isinstance(new, Module):
                gm.add_submodule(node.target, new)
            else:
                setattr(gm, node.target, new)


def _replace_pattern(gm: GraphModule, pattern, replacement,
                     match_filters: list[Callable] | None = None,
                     ignore_literals: bool = False) -> list[ReplacedPatterns]:
    original = gm.graph
    pattern_graph = _graph_of(pattern)
    replacement_graph = _graph_of(replacement)
    matches = SubgraphMatcher(pattern_graph, ignore_literals).match(original)
    matches = [m for m in matches
               if all(f(m, original, pattern_graph) for f in (match_filters or []))]
    changed: dict[Node, Node] = {}
    results = []
    rep_phs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    for match in matches:
        if len(match.placeholder_nodes) != len(rep_phs):
            raise AssertionError(f"Placeholder count mismatch: {len(match.placeholder_nodes)} "
                                 f"vs {len(rep_phs)}")
        val_map: dict[Node, Any] = {}
        for rn, gn in zip(rep_phs, match.placeholder_nodes):
            val_map[rn] = changed.get(gn, gn)
        users: set[Node] = set()
        for n in match.returning_nodes:
            users.update(n.users)
        insert_point = next((n for n in original.nodes if n in users), None)
        if insert_point is None:
            prev = None
            for n in reversed(original.nodes):
                if n in match.returning_nodes:
                    insert_point = prev
                    break
                prev = n
        with original.inserting_before(insert_point):
            copied = original.graph_copy(replacement_graph, val_map)
        if isinstance(copied, Node):
            copied = (copied,)
        added = [v for v in val_map.values() if v not in match.placeholder_nodes]
        for gn, cn in zip(match.returning_nodes, copied):
            gn.replace_all_uses_with(cn)
            changed[gn] = cn
        for pn in reversed(pattern_graph.nodes):
            if pn.op not in ("placeholder", "output"):
                original.erase_node(match.nodes_map[pn])
        results.append(ReplacedPatterns(anchor=match.anchors[0], nodes_map=match.nodes_map,
                                        replacements=added))
    gm.recompile()
    from ..nn import Module
    if isinstance(replacement, Module):
        _replace_attributes(gm, replacement)
    return results


def replace_pattern(gm: GraphModule, pattern: Callable | GraphModule,
                    replacement: Callable | GraphModule) -> list[Match]:
    """Replace every non-overlapping occurrence of ``pattern`` in ``gm.graph`` by
    ``replacement`` (both functions or GraphModules with the same inputs), recompile ``gm``,
    and return the matches."""
    return [Match(anchor=m.anchor, nodes_map=m.nodes_map)
            for m in _replace_pattern(gm, pattern, replacement)]


def replace_pattern_with_filters(gm: GraphModule, pattern, replacement=None,
                                 match_filters: list[Callable] | None = None,
                                 ignore_literals: bool = False) -> list[ReplacedPatterns]:
    """``replace_pattern`` keeping only the matches every filter
    ``f(match, original_graph, pattern_graph)`` accepts."""
    return _replace_pattern(gm, pattern, replacement, match_filters, ignore_literals)
