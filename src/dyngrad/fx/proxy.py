"""``Proxy``: the stand-in value that flows through a function during symbolic tracing and
records each operation applied to it as a ``Node``; ``TracerBase`` turns those operations
into nodes."""
from __future__ import annotations

import dis
import inspect
import operator
import os
import sys
from typing import Any, Callable, Iterator

from .graph import Graph, _MAGIC, _REFLECTABLE
from .node import Node, map_aggregate

__all__ = ["TracerBase", "GraphAppendingTracer", "TraceError", "Proxy", "Attribute",
           "ParameterProxy"]


class TraceError(ValueError):
    """An operation symbolic tracing cannot record (control flow on a traced value...)."""


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# code that handles Proxies as traced code does: FX itself, and layers' and apps' forwards
_OPEN = tuple(os.path.join(_PKG, *p) + os.sep for p in (("fx",), ("nn", "modules"),
                                                         ("nn", "parallel"), ("apps",)))


def _refuse_internal(depth: int = 2) -> None:
    """A Proxy handled inside one of dyngrad's functions (rather than in traced code, FX, or
    a layer's forward) stops that function before it records anything: the function's
    argument guard then records the call itself as one node."""
    f = sys._getframe(depth).f_code.co_filename
    if f.startswith(_PKG) and not f.startswith(_OPEN):
        raise TypeError("a torch.fx Proxy reached the inside of a dyngrad function")


_BASE_TYPES = (int, float, bool, complex, str, type(None), type(...), bytes)


class TracerBase:
    """Records operations on Proxies into ``self.graph``."""

    graph: Graph
    record_stack_traces: bool = False
    check_mutable_operations: bool = False
    trace_asserts: bool = False
    proxy_buffer_attributes: bool = False
    traced_func_name: str = "forward"
    scope: Any = None
    module_stack: dict

    def create_node(self, kind: str, target, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any | None = None) -> Node:
        """Insert a node into the graph (override to check or annotate nodes)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        stack = getattr(self, "module_stack", None)
        if stack:
            node.meta["nn_module_stack"] = dict(stack)
        if self.record_stack_traces and not node.stack_trace:
            stack = _user_stack()
            if stack:
                node.stack_trace = stack
        return node

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any | None = None,
                     proxy_factory_fn: Callable[[Node], Proxy] | None = None) -> Proxy:
        """Lower ``args``/``kwargs`` with ``create_arg``, create the node, wrap it in a Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        if not isinstance(args_, tuple):
            raise AssertionError(f"Expected args_ to be tuple, got {type(args_)}")
        if not isinstance(kwargs_, dict):
            raise AssertionError(f"Expected kwargs_ to be dict, got {type(kwargs_)}")
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn else self.proxy(node)

    def create_arg(self, a: Any) -> Any:
        """Turn a value met as an argument into what a node may hold (Proxies become their
        nodes; containers are lowered element by element)."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple):
            if hasattr(a, "_fields"):
                return type(a)(*[self.create_arg(e) for e in a])
            return tuple(self.create_arg(e) for e in a)
        if isinstance(a, list):
            return [self.create_arg(e) for e in a]
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                if not isinstance(k, str):
                    k = self.create_arg(k)

                    def no_node(x):
                        if isinstance(x, Node):
                            raise RuntimeError("Keys for dictionaries used as an argument "
                                               f"cannot contain a Node. Got key: {k}")
                        return x
                    map_aggregate(k, no_node)
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, _BASE_TYPES) or _is_plain_constant(a):
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj: Proxy) -> bool:
        """``bool(proxy)`` (control flow on a traced value): an error unless overridden."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj: Proxy) -> Iterator:
        """Iterating a proxy: an error unless overridden."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the Proxy "
                         "is used in a loop or as a *args or **kwargs function argument. See the "
                         "torch.fx docs on pytorch.org for a more detailed explanation of what "
                         "types of control flow can be traced, and check out the Proxy docstring "
                         "for help troubleshooting Proxy iteration errors")

    def keys(self, obj: Proxy) -> Proxy:
        """``proxy.keys()`` (met when ``**proxy`` is used): a ``keys`` method call."""
        return Attribute(obj, "keys")()


def _is_plain_constant(a: Any) -> bool:
    import enum
    from .._dtype import dtype
    import dyngrad
    return isinstance(a, (dtype, dyngrad.device, enum.Enum)) or \
        (callable(a) and not isinstance(a, type(dyngrad)))


def _user_stack() -> str | None:
    """The stack from the outermost ``forward`` down to the operation, without FX's and
    Module.__call__'s frames; None outside a forward (placeholders, output)."""
    import traceback
    frames = traceback.extract_stack()[:-1]
    first = next((i for i, f in enumerate(frames) if f.name == "forward"), None)
    if first is None:
        return None
    skip = (_OPEN[0], os.path.join(_PKG, "nn", "modules", "module.py"))
    keep = [f for f in frames[first:] if not os.path.abspath(f.filename).startswith(skip)]
    return "".join(traceback.format_list(keep)).strip() or None


class GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made around a node of an existing graph: appends to it."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph
        self.scope = None
        self.module_stack = {}


def assert_fn(x: Any) -> None:
    assert x


class Proxy:
    """A traced value: every operator, method call, attribute access or torch function
    applied to it becomes a ``Node`` of the graph being traced.

    A Proxy has no value, so it cannot decide Python control flow: ``if proxy:``, loops over
    a proxy and ``len(proxy)`` raise.  Wrap such code in a function marked with
    ``torch.fx.wrap``, or specialise it with ``concrete_args``.
    """

    def __init__(self, node: Node, tracer: TracerBase | None = None) -> None:
        if tracer is None:
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, k: str) -> Attribute:
        _refuse_internal()
        return Attribute(self, k)

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, d: dict) -> None:
        self.__dict__ = d

    def __deepcopy__(self, memo: dict) -> Proxy:
        import copy
        new = Proxy.__new__(type(self))
        for k, v in self.__dict__.items():
            try:
                new.__dict__[k] = copy.deepcopy(v, memo)
            except Exception:
                new.__dict__[k] = copy.copy(v)
        return new

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        _refuse_internal()
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self) -> Iterator[Proxy]:
        _refuse_internal()
        frame = inspect.currentframe().f_back
        inst = _instruction_at(frame)
        if inst is not None and inst.opname == "UNPACK_SEQUENCE":
            return (self[i] for i in range(inst.argval))
        return self.tracer.iter(self)

    def __abs__(self) -> Proxy:
        _refuse_internal()
        return self.tracer.create_proxy("call_function", operator.abs, (self,), {})

    def __bool__(self) -> bool:
        _refuse_internal()
        if self.tracer.trace_asserts:
            frame = inspect.currentframe().f_back
            insts = list(dis.get_instructions(frame.f_code))
            idx = next((i for i, x in enumerate(insts) if x.offset >= frame.f_lasti), None)
            # PyTorch looks for the jump of an `assert` as Python 3.12 compiles it (3.11's is
            # POP_JUMP_FORWARD_IF_TRUE, so there an assert raises like any control flow)
            if idx is not None and insts[idx].opname == "POP_JUMP_IF_TRUE":
                nxt = insts[idx + 1] if idx + 1 < len(insts) else None
                if nxt is not None and (nxt.opname == "LOAD_ASSERTION_ERROR" or
                                        (nxt.opname == "LOAD_GLOBAL" and
                                         nxt.argval == "AssertionError")):
                    self.tracer.create_proxy("call_function", assert_fn, (self,), {})
                    return True
        return self.tracer.to_bool(self)

    def keys(self) -> Proxy:
        return self.tracer.keys(self)

    def __len__(self) -> int:
        _refuse_internal()
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")


def _instruction_at(frame):
    for inst in dis.get_instructions(frame.f_code):
        if inst.offset == frame.f_lasti:
            return inst
    return None


class Attribute(Proxy):
    """``proxy.name``: becomes a ``getattr`` node when used as a value, or a ``call_method``
    node when called (so ``x.relu()`` records one node, not two)."""

    def __init__(self, root: Proxy, attr: str) -> None:
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node: Node | None = None

    @property
    def node(self) -> Node:
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args: Any, **kwargs: Any) -> Proxy:
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """The proxy of a parameter when the tracer keeps parameter shapes constant: its shape,
    size, dim and numel are the parameter's own."""

    def __init__(self, tracer: TracerBase, node: Node, name: str, param) -> None:
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self) -> str:
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    def size(self):
        return self.param.size()

    def dim(self) -> int:
        return self.param.dim()

    @property
    def ndim(self) -> int:
        return self.param.ndim

    def numel(self) -> int:
        return self.param.numel()

    def nelement(self) -> int:
        return self.param.nelement()


def _install_operators() -> None:
    def forward_op(name):
        target = getattr(operator, name)

        def impl(*args, **kwargs):
            _refuse_internal()
            return args[0].tracer.create_proxy("call_function", target, args, kwargs)
        impl.__name__ = f"__{name.strip('_')}__"
        return impl

    def reflected_op(name):
        target = getattr(operator, name)

        def impl(self, rhs):
            _refuse_internal()
            return self.tracer.create_proxy("call_function", target, (rhs, self), {})
        impl.__name__ = f"__r{name.strip('_')}__"
        return impl

    for name in _MAGIC:
        if hasattr(operator, name):  # "div" is Python 2's
            setattr(Proxy, f"__{name.strip('_')}__", forward_op(name))
    for name in _REFLECTABLE:
        if hasattr(operator, name):
            setattr(Proxy, f"__r{name.strip('_')}__", reflected_op(name))


_install_operators()
