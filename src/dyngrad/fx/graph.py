"""``Graph``: the ordered list of ``Node`` s FX records, with editing (insertion points,
erasure, copying), checking (``lint``), dead-code elimination and the generation of the
Python source that ``GraphModule`` runs."""
from __future__ import annotations

import builtins
import copy
import inspect
import keyword
import math
import re
import typing
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .node import Node, Argument, Target, map_arg, _qualified_name, _type_repr
from .. import _warn

__all__ = ["Graph", "PythonCode", "CodeGen"]

_snake_sub = re.compile(r"(?<=[a-z])([A-Z])")
_illegal = re.compile("[^0-9a-zA-Z_]+")
_name_re = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")


def _snake_case(s: str) -> str:
    return _snake_sub.sub(r"_\1", s).lower()


# names generated code must not shadow: keywords and builtins
_RESERVED = set(keyword.kwlist) | set(dir(builtins))


class _Namespace:
    """Unique Python identifiers for nodes and globals of one generated function."""

    def __init__(self) -> None:
        self._obj_to_name: dict[Any, str] = {}
        self._used: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any | None) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        m = _name_re.match(candidate)
        if m is None:
            candidate = _illegal.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            m = _name_re.match(candidate)
        base, num = m.group(1, 2)
        if num is None or candidate in self._used:
            num = self._base_count.get(base, 0)
            if candidate in _RESERVED and getattr(builtins, candidate, None) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used:
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name.setdefault(obj, name)

    def _rename_object(self, obj: Any, name: str) -> None:
        self._obj_to_name[obj] = name
        self._used.add(name)


@dataclass
class PythonCode:
    """Generated source of a graph and the globals it needs to run."""
    src: str
    globals: dict[str, Any]
    _lineno_map: dict[int, int | None] | None = None


_TYPING_NAMES = {list: typing.List, dict: typing.Dict, set: typing.Set,
                 frozenset: typing.FrozenSet, tuple: typing.Tuple, type: typing.Type}


def _format_target(base: str, target: str) -> str:
    r = base
    for e in target.split("."):
        r = f'getattr({r}, "{e}")' if not e.isidentifier() else f"{r}.{e}"
    return r


_REFLECTABLE = {"add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
                "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
                "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
                "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}"}
_MAGIC = {"eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}",
          "le": "{} <= {}", "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}",
          **_REFLECTABLE}
_INPLACE = {"iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}",
            "ilshift": "{} <<= {}", "imod": "{} %= {}", "imul": "{} *= {}",
            "imatmul": "{} @= {}", "ior": "{} |= {}", "ipow": "{} **= {}",
            "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
            "ixor": "{} ^= {}", "setitem": "{}[{}] = {}"}


def _custom_builtins() -> dict[str, Any]:
    import dyngrad
    return {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": dyngrad,
            "device": dyngrad.device}


class CodeGen:
    """Turns a graph's nodes into the source of ``def forward(self, ...)``."""

    def __init__(self) -> None:
        self._body_transformer = None
        self._func_name = "forward"

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        """The ``def`` line of the generated function."""
        return f"def {self._func_name}({', '.join(['self'] + free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Argument, repr_fn: Callable = repr) -> str:
        """The ``return`` statement (not indented)."""
        return f"return {repr_fn(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        return args

    def process_outputs(self, outputs: Any) -> Any:
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        return []

    def _gen_python_code(self, nodes, root_module: str, namespace: _Namespace, *,
                         verbose: bool = False, include_stride: bool = False,
                         include_device: bool = False) -> PythonCode:
        free_vars: list[str] = []
        body: list[str] = []
        globals_: dict[str, Any] = {}
        wrapped_fns: dict[str, None] = {}
        ret_ann = [""]

        def add_global(name_hint: str, obj: Any) -> str:
            qual = _torch_path(obj)
            if qual is not None:
                return qual  # reached through the global `torch`
            name = namespace.create_name(name_hint, obj)
            globals_[name] = obj
            return name

        for name, obj in _custom_builtins().items():
            add_global(name, obj)

        def type_repr(o: Any) -> str:
            if o == ():
                return "()"
            origin = getattr(o, "__origin__", None)
            if origin is not None:
                if isinstance(o, typing._GenericAlias):  # typing.List[int]: named as written
                    origin = _TYPING_NAMES.get(origin, origin)
                args = getattr(o, "__args__", ())
                base = add_global(_type_repr(origin), origin)
                return f"{base}[{','.join(type_repr(a) for a in args)}]" if args else base
            return add_global(_type_repr(o), o)

        def get_repr(arg: Any) -> str:
            from .._tensor import Tensor
            if isinstance(arg, Node):
                return repr(arg)
            if isinstance(arg, tuple) and hasattr(arg, "_fields"):
                g = add_global(_qualified_name(type(arg)), type(arg))
                return f"{g}{repr(tuple(arg))}"
            if isinstance(arg, Tensor):
                dt = str(arg.dtype).split(".")[-1]
                return f"torch.Tensor(size={list(arg.size())}, dtype={dt})"
            if isinstance(arg, tuple):
                if len(arg) == 1:
                    return f"({get_repr(arg[0])},)"
                return "(" + ", ".join(get_repr(a) for a in arg) + ")"
            if isinstance(arg, list):
                return "[" + ", ".join(get_repr(a) for a in arg) + "]"
            if isinstance(arg, slice):
                return f"slice({get_repr(arg.start)}, {get_repr(arg.stop)}, {get_repr(arg.step)})"
            if isinstance(arg, type) or (callable(arg) and hasattr(arg, "__name__")
                                         and not isinstance(arg, str)):
                return add_global(_qualified_name(arg), arg)
            return _dtype_repr(arg)

        def fmt_args(args: tuple, kwargs: dict) -> str:
            res = [get_repr(a) for a in args]
            res.extend(f"{k} = {get_repr(v)}" for k, v in kwargs.items())
            return ", ".join(res)

        last_use: dict[Node, Node] = {}
        user_to_last: dict[Node, list[Node]] = {}
        for node in reversed(list(nodes)):
            for inp in node._input_nodes:
                if inp not in last_use:
                    last_use[inp] = node
                    user_to_last.setdefault(node, []).append(inp)

        def free_unused(user: Node) -> None:
            if user.op == "placeholder":
                return
            if user.op == "output":
                body.append("\n")
                return
            dead = list(user_to_last.get(user, []))
            if not user.users:
                dead.append(user)
            if dead:
                body.append(";  " + " = ".join([repr(n) for n in dead] + ["None"]) + "\n")
            else:
                body.append("\n")

        prev_summary = [None]

        def stack_summary(node: Node) -> None:
            if node.op in ("placeholder", "output"):
                return
            st = node.stack_trace
            text = "No stacktrace found for following nodes"
            if st:
                lines = st.strip().split("\n")
                m = re.match(r'\s*File "(.+)", line (\d+), in (.+)', lines[-2] if len(lines) > 1
                             else "")
                if m:
                    text = (f"File: {m.group(1)}:{m.group(2)} in {m.group(3)}, "
                            f"code: {lines[-1].strip()}")
            s = f"\n# {text}\n"
            if s != prev_summary[0]:
                prev_summary[0] = s
                body.append(s)

        def emit(node: Node) -> None:
            ann = "" if node.type is None else f" : {type_repr(node.type)}"
            if verbose:
                shown = _value_annotation(node, include_stride, include_device)
                if shown is not None:
                    ann = f': "{shown}"'
            if node.op == "placeholder":
                default = "" if not node.args else f" = {get_repr(node.args[0])}"
                free_vars.append(f"{node.target}{ann}{default}")
                raw = node.target.replace("*", "")
                if raw != repr(node):
                    body.append(f"{repr(node)} = {raw}\n")
                return
            if node.op == "call_method":
                body.append(f"{repr(node)}{ann} = {_format_target(get_repr(node.args[0]), node.target)}"
                            f"({fmt_args(node.args[1:], node.kwargs)})")
                return
            if node.op == "call_function":
                t = node.target
                tname = getattr(t, "__name__", "")
                if getattr(t, "__module__", "") == "_operator" and tname in _MAGIC:
                    body.append(f"{repr(node)}{ann} = "
                                f"{_MAGIC[tname].format(*(get_repr(a) for a in node.args))}")
                    return
                if getattr(t, "__module__", "") == "_operator" and tname in _INPLACE:
                    body.append(f"{_INPLACE[tname].format(*(get_repr(a) for a in node.args))};  "
                                f"{repr(node)}{ann} = {get_repr(node.args[0])}")
                    return
                g = add_global(_qualified_name(t), t)
                if g == "getattr" and len(node.args) == 2 and isinstance(node.args[1], str) \
                        and node.args[1].isidentifier():
                    body.append(f"{repr(node)}{ann} = "
                                f"{_format_target(get_repr(node.args[0]), node.args[1])}")
                    return
                body.append(f"{repr(node)}{ann} = {g}({fmt_args(node.args, node.kwargs)})")
                if node.meta.get("is_wrapped", False):
                    wrapped_fns.setdefault(g)
                return
            if node.op == "call_module":
                body.append(f"{repr(node)}{ann} = "
                            f"{_format_target(root_module, node.target)}"
                            f"({fmt_args(node.args, node.kwargs)})")
                return
            if node.op == "get_attr":
                body.append(f"{repr(node)}{ann} = {_format_target(root_module, node.target)}")
                return
            if node.op == "output":
                if node.type is not None:
                    ret_ann[0] = f" -> {type_repr(node.type)}"
                body.append(self.generate_output(node.args[0], get_repr))
                return
            raise NotImplementedError(f"node: {node.op} {node.target}")

        for node in nodes:
            if verbose:
                stack_summary(node)
            emit(node)
            free_unused(node)
        if not body:
            body.append("pass\n")
        wrap_stmts = ""
        if wrapped_fns:
            from ._symbolic_trace import wrap
            wname = add_global("wrap", wrap)
            wrap_stmts = "\n".join(f'{wname}("{n}")' for n in wrapped_fns)
        if self._body_transformer:
            body = self._body_transformer(body)
        for name, value in self.additional_globals():
            add_global(name, value)
        prologue = self.gen_fn_def(free_vars, ret_ann[0])
        code = "".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        return PythonCode(f"\n{wrap_stmts}\n\n{prologue}\n{code}", globals_)


# PyTorch's short dtype names (torch.utils._dtype_abbrs), by the dtype's printed name
_DTYPE_ABBRS = {"uint8": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
                "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16",
                "bfloat16": "bf16", "float32": "f32", "float64": "f64", "complex32": "c32",
                "complex64": "c64", "complex128": "c128", "bool": "b8"}


def _shape_text(shape) -> str:
    return f"[{', '.join(str(x) for x in shape)}]"


def _value_annotation(node: Node, include_stride: bool, include_device: bool) -> str | None:
    """``f32[2, 3]`` for a node whose recorded value is a tensor (with ``[3, 1]`` strides and
    the device when asked) or ShapeProp's TensorMetadata of one; None otherwise."""
    from .._tensor import Tensor
    from .passes.shape_prop import TensorMetadata
    meta = node.meta
    val = meta.get("val", meta.get("tensor_meta", meta.get("example_value", None)))
    if isinstance(val, Tensor):
        text = _DTYPE_ABBRS[str(val.dtype).split(".")[-1]] + _shape_text(val.shape)
        if include_stride:
            text += _shape_text(val.stride())
        if include_device:
            text += str(val.device)
        return text
    if isinstance(val, TensorMetadata):
        return _DTYPE_ABBRS[str(val.dtype).split(".")[-1]] + _shape_text(val.shape)
    return None


def _torch_path(obj: Any) -> str | None:
    """``torch.a.b`` when that path (torch being dyngrad) reaches ``obj``, else None."""
    import dyngrad
    if obj is dyngrad or isinstance(obj, dyngrad.device) or \
            not (getattr(obj, "__module__", None) or "").startswith("dyngrad"):
        return None
    try:
        dotted = _type_repr(obj) if isinstance(obj, type) else _qualified_name(obj)
    except Exception:
        return None
    cur: Any = dyngrad
    for part in dotted.split(".")[1:]:
        cur = getattr(cur, part, None)
    return dotted if dotted.startswith("torch.") and cur is obj else None


def _dtype_repr(arg: Any) -> str:
    from .._dtype import dtype
    if isinstance(arg, dtype):
        return str(arg)
    import dyngrad
    if isinstance(arg, dyngrad.device):
        return f"device(type='{arg.type}')" if getattr(arg, "index", None) is None else \
            f"device(type='{arg.type}', index={arg.index})"
    return repr(arg)


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        self.graph._insert = self.orig_insert


class _NodeList:
    """The nodes of a graph in order; safe to edit the graph while iterating."""

    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        self.graph = graph
        self.direction = direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self.graph, "_prev" if self.direction == "_next" else "_next"))


class Graph:
    """The intermediate representation of FX: a list of ``Node`` s in execution order.

    Build one by tracing (``symbolic_trace``) or by hand with ``placeholder``,
    ``call_function``, ``call_module``, ``call_method``, ``get_attr`` and ``output``.
    """

    def __init__(self, owning_module=None, tracer_cls: type | None = None,
                 tracer_extras: dict | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()
        self._co_fields: dict[str, Any] = {}
        self._order_cache: dict[Node, int] | None = None
        self._created = 0

    @property
    def owning_module(self):
        """The GraphModule this graph generates code for (None for a free graph)."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        """The nodes in order (``reversed`` walks them backwards)."""
        return _NodeList(self)

    def output_node(self) -> Node:
        """The graph's final ``output`` node."""
        n = next(iter(reversed(self.nodes)))
        if n.op != "output":
            raise AssertionError(f"Expected output node, got op={n.op}")
        return n

    def find_nodes(self, *, op: str, target: Target | None = None, sort: bool = True) -> list:
        """The nodes with opcode ``op`` (and ``target``, when given): in graph order with
        ``sort``, else in the order they were created."""
        if op == "call_function" and target is None:
            raise AssertionError("target must not be None for call_function op")
        found = [n for n in self.nodes if n.op == op and (target is None or n.target == target)]
        return found if sort else sorted(found, key=lambda n: n._seq)

    def _order(self, node: Node) -> int:
        """The position of ``node`` in the graph (for sorting nodes)."""
        if self._order_cache is None:
            self._order_cache = {n: i for i, n in enumerate(self.nodes)}
        return self._order_cache.get(node, -1)

    # -- building ---------------------------------------------------------------------------
    def create_node(self, op: str, target: Target, args: tuple | None = None,
                    kwargs: dict | None = None, name: str | None = None,
                    type_expr: Any | None = None) -> Node:
        """Create a node and insert it at the current insertion point."""
        args = () if not args else args
        if not isinstance(args, tuple):
            raise AssertionError(f"args must be a tuple, got {type(args)}")
        kwargs = {} if not kwargs else kwargs
        if not isinstance(kwargs, dict):
            raise AssertionError(f"kwargs must be a dict, got {type(kwargs)}")
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        n._seq = self._created
        self._created += 1
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def _target_to_str(self, target: Target) -> str:
        if callable(target):
            from ._names import public_name
            public = public_name(target)  # an alias (torch.arctan is atan) names as called
            op = public.rpartition(".")[2] if public else target.__name__
        else:
            op = target
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return _snake_case(op)

    def placeholder(self, name: str, type_expr: Any | None = None,
                    default_value: Any = inspect.Signature.empty) -> Node:
        """An input of the function (``default_value`` becomes its default)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any | None = None) -> Node:
        """Fetch an attribute (parameter, buffer, submodule) of the owning module."""
        mod = self.owning_module
        if mod is not None and not _attr_exists(mod, qualified_name):
            _warn.warn("Attempted to insert a get_attr Node with no underlying reference in "
                       "the owning GraphModule! Call GraphModule.add_submodule to add the "
                       "necessary submodule, GraphModule.add_parameter to add the necessary "
                       "Parameter, or nn.Module.register_buffer to add the necessary buffer")
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any | None = None) -> Node:
        """Call the submodule ``module_name`` (args exclude ``self``). On a graph owned by a
        GraphModule the submodule must exist: looking it up raises AttributeError naming the
        missing part, as PyTorch's does."""
        if self.owning_module is not None and \
                self.owning_module.get_submodule(module_name) is None:
            warnings.warn("Attempted to insert a call_module Node with no underlying reference "
                          "in the owning GraphModule! Call GraphModule.add_submodule to add the "
                          "necessary submodule")
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None,
                    kwargs: dict | None = None, type_expr: Any | None = None) -> Node:
        """Call method ``method_name`` on ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None,
                      kwargs: dict | None = None, type_expr: Any | None = None,
                      name: str | None = None) -> Node:
        """Call a free function (a torch function, an ``operator`` one, a wrapped one)."""
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any | None = None) -> Node:
        """The ``return`` of the function."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x
                  ) -> Node:
        """Copy ``node`` (of any graph) into this one, mapping its input nodes through
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        new.meta = copy.copy(node.meta)
        return new

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy every node of ``g`` but its output into this graph; ``val_map`` receives
        old -> new. Returns the copied output value."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo=None) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls)
        out = g.graph_copy(self, val_map=memo, return_output_node=True)
        g._codegen = copy.deepcopy(self._codegen)
        if out is not None:
            val, old = out
            new = g.output(val, type_expr=getattr(old, "type", None))
            new.meta = copy.copy(old.meta)
        return g

    # -- editing ------------------------------------------------------------------------
    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that nothing uses any more."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            warnings.warn(f"erase_node({to_erase}) on an already erased node")
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs(map_arg(to_erase._args, lambda n: None),
                                     map_arg(to_erase._kwargs, lambda n: None))

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Make new nodes go before ``n`` (the start of the graph when None); as a
        ``with`` block, restores the previous insertion point on exit."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert before is not in graph.")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Make new nodes go after ``n`` (the end of the graph when None)."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise AssertionError("Node to insert after is not in graph.")
        return _InsertPoint(self, n.append)

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase nodes without users and without side effects; whether anything changed."""
        self.lint()
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and not node.users:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph is well formed: known opcodes, nodes owned by this graph, inputs
        defined before use, unique names, and targets present in the owning module."""
        seen_names: set[str] = set()
        seen: set[Node] = set()
        legal = {"placeholder", "call_method", "call_module", "call_function", "get_attr",
                 "output"}
        for node in self.nodes:
            if node.op not in legal:
                raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                ctx = f" of Node '{node}' "
                if arg.graph is not self:
                    raise RuntimeError(
                        f"Argument '{arg}'{ctx}does not belong to this Graph, but was used as "
                        f"an argument! If you are copying nodes from another graph, make sure "
                        f"to use ``arg_transform`` on node_copy() to remap values\n{self}")
                if arg not in seen:
                    raise RuntimeError(
                        f"Argument '{arg}'{ctx}was used before it has been defined! Please "
                        f"check that Nodes in the graph are topologically ordered\n{self}")
            seen.add(node)
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
        mod = self.owning_module
        if mod is None:
            return
        from .node import _typename
        for node in self.nodes:
            if node.op == "call_function":
                if not callable(node.target):
                    raise ValueError(f"Node {node} target {node.target} has type "
                                     f"{_typename(node.target)} but a Callable is expected")
            elif not isinstance(node.target, str):
                raise ValueError(f"Node {node} target {node.target} has type "
                                 f"{_typename(node.target)} but a str is expected")
            if node.op in ("get_attr", "call_module"):
                from ..nn import Module
                atoms = node.target.split(".")
                cur = mod
                for i, atom in enumerate(atoms):
                    nxt = getattr(cur, atom, None)
                    qual = ".".join(atoms[:i])
                    if nxt is None:
                        raise RuntimeError(f"Node {node} target {node.target} references "
                                           f"nonexistent attribute {atom} of {qual}")
                    if node.op == "call_module" and not isinstance(nxt, Module):
                        raise RuntimeError(f"Node {node} target {node.target} {atom} of "
                                           f"{qual} does not reference an nn.Module")
                    cur = nxt

    # -- code -----------------------------------------------------------------------------
    def python_code(self, root_module: str, *, verbose: bool = False,
                    include_stride: bool = False, include_device: bool = False) -> PythonCode:
        """The Python source of this graph as a ``forward`` method (``root_module`` is the
        name the module is reached by, usually ``self``). ``verbose`` adds the user's source
        line above each run of nodes and annotates each node with the dtype and shape of its
        recorded value (``meta['val']``, ``meta['tensor_meta']`` from ShapeProp, or
        ``meta['example_value']``), strides and device too when asked."""
        namespace = _Namespace()
        saved = {}
        for node in self.nodes:
            saved[node] = node._repr_fn
            node._repr_fn = lambda n: namespace.create_name(n.name, n)
        try:
            return self._codegen._gen_python_code(self.nodes, root_module, namespace,
                                                  verbose=verbose,
                                                  include_stride=include_stride,
                                                  include_device=include_device)
        finally:
            for node, fn in saved.items():
                node._repr_fn = fn

    def set_codegen(self, codegen: CodeGen) -> None:
        self._codegen = codegen

    def process_inputs(self, *args: Any) -> Any:
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out: Any) -> Any:
        return self._codegen.process_outputs(out)

    def __str__(self) -> str:
        placeholder_names: list[str] = []
        lines = [n.format_node(placeholder_names) for n in self.nodes]
        s = f"graph({', '.join(placeholder_names)}):"
        for line in lines:
            if line:
                s += "\n    " + line
        return s

    def print_tabular(self) -> None:
        """Print the nodes as a table (opcode, name, target, args, kwargs): ``tabulate``'s
        "simple" table, made by ``tabulate`` when it is installed (as PyTorch does) and
        laid out the same way without it."""
        headers = ["opcode", "name", "target", "args", "kwargs"]
        node_specs = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        try:
            from tabulate import tabulate
        except ImportError:
            print(_simple_table(headers, node_specs))
        else:
            print(tabulate(node_specs, headers=headers))


def _simple_table(headers: list[str], rows: list[list]) -> str:
    """``tabulate(rows, headers)``'s "simple" layout for text columns: each column as wide as
    its widest cell and at least its header plus two, two spaces between columns, a dashed
    rule under the headers, trailing spaces cut."""
    cells = [[str(c).strip() for c in r] for r in rows]
    widths = [max([len(h) + 2] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(row):
        return "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths)] + [line(r) for r in cells])


def _attr_exists(mod, qualified_name: str) -> bool:
    from ..nn import Module, Parameter
    path, _, name = qualified_name.rpartition(".")
    try:
        sub = mod.get_submodule(path)
    except AttributeError:
        warnings.warn(f"Failed to fetch module {path}!")
        return False
    if not hasattr(sub, name):
        return False
    res = getattr(sub, name)
    return isinstance(res, (Module, Parameter)) or name in sub._buffers
