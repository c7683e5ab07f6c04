"""The pytrees torch.func transforms take and return: tuples, lists, dicts and namedtuples
of tensors (and other leaves), flattened to a list plus a spec that rebuilds them, with
PyTorch's spec printing (its error messages show it)."""
from __future__ import annotations

from typing import Any, Callable


class TreeSpec:
    """The structure of a flattened pytree: a node type, its context (dict keys), children."""

    __slots__ = ("type", "context", "children", "num_leaves")

    def __init__(self, type_, context, children):
        self.type = type_
        self.context = context
        self.children = children
        self.num_leaves = 1 if type_ is None else sum(c.num_leaves for c in children)

    def is_leaf(self) -> bool:
        return self.type is None

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __hash__(self):
        return hash((self.type, len(self.children)))

    def __repr__(self, indent: int = 0):
        if self.type is None:
            return "*"
        ctx = self.context if self.type is dict else None
        if _is_namedtuple(self.type):
            ctx = self.type
        prefix = f"TreeSpec({self.type.__name__}, {ctx}, ["
        body = ""
        if self.children:
            indent += 2
            body += self.children[0].__repr__(indent)
            body += "," if len(self.children) > 1 else ""
            body += ",".join("\n" + " " * indent + c.__repr__(indent) for c in self.children[1:])
        return f"{prefix}{body}])"

    __str__ = __repr__


def _is_namedtuple(t) -> bool:
    return isinstance(t, type) and issubclass(t, tuple) and hasattr(t, "_fields")


LEAF = TreeSpec(None, None, [])


def tree_flatten(tree: Any) -> tuple[list, TreeSpec]:
    """The leaves of ``tree`` in order, and its spec."""
    leaves: list = []
    return leaves, _flatten(tree, leaves)


def _flatten(tree, leaves):
    t = type(tree)
    if t is tuple or t is list or _is_namedtuple(t):
        return TreeSpec(t, None, [_flatten(c, leaves) for c in tree])
    if t is dict:
        keys = list(tree)
        return TreeSpec(dict, keys, [_flatten(tree[k], leaves) for k in keys])
    leaves.append(tree)
    return LEAF


def tree_unflatten(leaves, spec: TreeSpec) -> Any:
    """Rebuild the pytree of ``spec`` from ``leaves``."""
    it = iter(leaves)
    out = _unflatten(it, spec)
    return out


def _unflatten(it, spec):
    if spec.type is None:
        return next(it)
    kids = [_unflatten(it, c) for c in spec.children]
    if spec.type is dict:
        return dict(zip(spec.context, kids))
    if spec.type is tuple or spec.type is list:
        return spec.type(kids)
    return spec.type(*kids)


def tree_map(fn: Callable, tree: Any) -> Any:
    """``tree`` with ``fn`` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def treespec_pprint(spec: TreeSpec) -> str:
    """The short form PyTorch's messages print: ``(*, [*, {'a': *}])``."""
    if spec.type is None:
        return "*"
    kids = [treespec_pprint(c) for c in spec.children]
    if spec.type is dict:
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in zip(spec.context, kids)) + "}"
    if spec.type is list:
        return "[" + ", ".join(kids) + "]"
    if len(kids) == 1:
        return f"({kids[0]},)"
    return "(" + ", ".join(kids) + ")"
