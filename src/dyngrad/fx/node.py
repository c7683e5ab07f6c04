"""``Node``: one operation of an FX ``Graph`` (placeholder, get_attr, call_function,
call_method, call_module or output), with its arguments and its users kept in step."""
from __future__ import annotations

import builtins
import types
from typing import Any, Callable

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target", "has_side_effect"]

Target = Any
Argument = Any

_LEGAL_OPS = frozenset(["placeholder", "call_method", "call_module", "call_function",
                        "get_attr", "output", "root"])


_side_effectful_functions: set = set()


def has_side_effect(fn: Callable) -> Callable:
    """Mark ``fn`` as having side effects, so dead-code elimination keeps its calls."""
    _side_effectful_functions.add(fn)
    return fn


class immutable_list(list):
    """A list inside a node's arguments: edits go through ``Node.args``, so it refuses them."""

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__!r} object does not support mutation. If you are "
                        "attempting to modify the kwargs or args of a torch.fx.Node object,\n"
                        "instead create a new copy of it and assign the copy to the node:\n\n"
                        "    new_args = ...  # copy and mutate args\n    node.args = new_args")

    __delitem__ = __iadd__ = __imul__ = __setitem__ = append = clear = extend = insert = \
        pop = remove = reverse = sort = _refuse

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (list(self),))


class immutable_dict(dict):
    """A dict inside a node's arguments (see ``immutable_list``)."""

    __delitem__ = __setitem__ = clear = pop = popitem = setdefault = update = \
        immutable_list._refuse
    __ior__ = immutable_list._refuse

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (dict(self),))


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """Apply ``fn`` to every leaf of ``a`` (tuples, lists, dicts and slices are walked),
    keeping the structure."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        # a named tuple keeps its type; the results of torch.max and the like (structseqs
        # in PyTorch, with no _fields) come back as plain tuples, as PyTorch's do
        if not hasattr(a, "_fields") or type(a).__module__ == "torch.return_types":
            return t
        return type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """Apply ``fn`` to every ``Node`` inside ``a``, keeping the structure."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _qualified_name(func: Callable) -> str:
    """The dotted name a callable is printed and generated under (``torch.relu``,
    ``operator.add`` as ``_operator.add``, ``getattr``)."""
    from ._names import public_name
    name = getattr(func, "__name__", None)
    if name is not None and getattr(builtins, name, None) is func:
        return name
    public = public_name(func)
    if public is not None:
        return public
    if isinstance(func, types.MethodDescriptorType) or (
            getattr(func, "__qualname__", "") == f"Tensor.{name}" and
            (getattr(func, "__module__", "") or "").startswith("dyngrad")):
        return f"torch.Tensor.{name}"
    if name == "<lambda>":
        import inspect
        try:
            name = inspect.getsource(func).split("=")[0].strip()
        except Exception as e:
            raise RuntimeError("Unable to represent lambda") from e
    module = getattr(func, "__module__", None) or ""
    if module.startswith("dyngrad"):
        module = "torch" + module[len("dyngrad"):]
    return f"{module}.{name}"


def _format_arg(arg: Argument) -> str:
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, tuple):
        return "(" + ", ".join(_format_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


def _type_repr(t: Any) -> str:
    if isinstance(t, type):
        if t.__module__ == "builtins":
            return t.__qualname__
        mod = t.__module__
        if mod.startswith("dyngrad"):
            mod = "torch" + mod[len("dyngrad"):]
            if t.__qualname__ == "Tensor":
                mod = "torch"
        return f"{mod}.{t.__qualname__}"
    return repr(t).replace("dyngrad", "torch")


class Node:
    """One value of a ``Graph``: ``op`` says what computes it, ``target`` what is called or
    fetched, ``args``/``kwargs`` its inputs (other Nodes inside them are its dependencies),
    ``users`` the Nodes that read it, ``meta`` free-form data for passes."""

    def __init__(self, graph, name: str, op: str, target: Target, args: tuple,
                 kwargs: dict, return_type: Any | None = None) -> None:
        if op == "call_function":
            if not callable(target):
                raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                                 f"type {_typename(target)} but a Callable is expected")
        else:
            if op not in _LEGAL_OPS:
                raise AssertionError(f"op '{op}' is not in _legal_ops")
            if not isinstance(target, str):
                raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                                 f"type {_typename(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self._input_nodes: dict[Node, None] = {}
        self.users: dict[Node, None] = {}
        self._prev = self
        self._next = self
        self._erased = False
        self._repr_fn: Callable | None = None
        self.meta: dict[str, Any] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._update_args_kwargs(args, kwargs)

    # -- the linked list ------------------------------------------------------------------
    @property
    def next(self) -> Node:
        """The following node of the graph."""
        return self._next

    @property
    def prev(self) -> Node:
        """The preceding node of the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move or insert ``x`` just before this node."""
        if self is x:
            raise AssertionError("Cannot prepend a node to itself")
        if self.graph is not x.graph:
            raise AssertionError("Attempting to move a Node into a different Graph")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x
        self.graph._order_cache = None

    def append(self, x: Node) -> None:
        """Move or insert ``x`` just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self
        self.graph._order_cache = None

    # -- arguments and users --------------------------------------------------------------
    @property
    def args(self) -> tuple:
        """Positional arguments; assigning updates the users of the nodes involved."""
        return self._args

    @args.setter
    def args(self, a: tuple) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """Keyword arguments; assigning updates the users of the nodes involved."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this one reads, in the order they appear in args then kwargs."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, new_args, new_kwargs) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        seen: dict[Node, None] = {}

        def note(n):
            seen.setdefault(n)
            return n
        self._args = map_arg(tuple(new_args), note)
        self._kwargs = map_arg(dict(new_kwargs), note)
        self._input_nodes = seen
        for n in seen:
            n.users.setdefault(self)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Set ``args[idx]`` to ``arg``."""
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg: Argument) -> None:
        """Insert ``arg`` as positional argument number ``idx``."""
        if not 0 <= idx <= len(self.args):
            raise AssertionError("insert_args index must be between 0 and len(self.args), "
                                 f"got {idx}")
        self.args = self.args[:idx] + (arg,) + self.args[idx:]

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Set ``kwargs[key]`` to ``arg``."""
        self.kwargs = {**self.kwargs, key: arg}

    def replace_all_uses_with(self, replace_with: Node,
                              delete_user_cb: Callable[[Node], bool] | None = None, *,
                              propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead; returns those users."""
        if propagate_meta:
            if replace_with.meta:
                raise AssertionError("Called node.replace_all_uses_with(replace_with, "
                                     "propagate_meta=True), but replace_with already has "
                                     ".meta keys")
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if delete_user_cb is not None and not delete_user_cb(user):
                continue
            changed.append(user)
            user._replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read ``new_input`` wherever this node read ``old_input``."""
        self._replace_input_with(old_input, new_input)

    def _replace_input_with(self, old: Node, new: Node) -> None:
        def swap(n):
            return new if n is old else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    @property
    def stack_trace(self) -> str | None:
        """The user's stack when tracing recorded this node (when the tracer records them)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self, impure_random: bool = True) -> bool:
        """Whether dead-code elimination must keep this node even without users."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_module":
            mod = self.graph.owning_module.get_submodule(self.target)
            return getattr(mod, "_is_impure", False)
        if self.op == "call_function":
            from ._names import is_impure_function
            return self.target in _side_effectful_functions or \
                is_impure_function(self.target, impure_random)
        return False

    # -- printing -------------------------------------------------------------------------
    def __repr__(self) -> str:
        if self._repr_fn:
            return self._repr_fn(self)
        return self.name

    @staticmethod
    def _pretty_print_target(target: Target) -> str:
        if isinstance(target, str):
            return target
        mod = getattr(target, "__module__", None)
        name = getattr(target, "__name__", None)
        if mod == "builtins" and name:
            return f"builtins.{name}"
        if mod == "_operator" and name:
            return f"operator.{name}"
        return _qualified_name(target)

    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None) -> str | None:
        """This node as one line of ``print(graph)``: ``%name : [num_users=N] = op[...]``."""
        typ = f"{_type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typ}[num_users={len(self.users)}] = "
        if self.op == "placeholder":
            arg_str = self.target
            if self.type:
                arg_str += f": {_type_repr(self.type)}"
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            default = f"(default={self.args[0]})" if self.args else ""
            return f"{head}{self.op}[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}{self.op}[target={self._pretty_print_target(self.target)}]"
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (f"{head}{self.op}[target={self._pretty_print_target(self.target)}]("
                f"args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __lt__(self, other: Node) -> bool:
        return self.graph._order(self) < self.graph._order(other)


def _typename(obj) -> str:
    """torch.typename of a target: a tensor's type, else the object's own dotted name (a
    function's, a class's), falling back on its class's."""
    from .._tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.type()
    if hasattr(obj, "__qualname__") or hasattr(obj, "__name__"):
        module = getattr(obj, "__module__", "") or ""
        name = getattr(obj, "__qualname__", None) or obj.__name__
    else:
        module, name = type(obj).__module__ or "", type(obj).__qualname__
    return name if module in ("", "builtins") else f"{module}.{name}"
