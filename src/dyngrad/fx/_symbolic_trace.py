"""Symbolic tracing: ``Tracer`` runs a module's ``forward`` on Proxies and records a
``Graph``; ``symbolic_trace`` wraps the result in a ``GraphModule``; ``wrap`` marks free
functions to be recorded as calls rather than traced through.

dyngrad has no ``__torch_function__``.  While a trace runs, the public functions of
``torch``, ``torch.nn.functional``, ``torch.linalg`` and ``torch.special`` (and the same
functions imported by name into the traced code's modules), and the methods of Tensor, are
swapped for recording wrappers, as ``math`` functions are in PyTorch's autowrap; the swap is
undone when the trace ends, so untraced calls pay nothing.  Outside a trace (graphs built
from Proxies, Transformer overrides) a guarded public function that meets a Proxy fails
before doing anything, and its argument guard's error hook (``_on_error``) records the call.
"""
from __future__ import annotations

import builtins
import collections
import contextlib
import functools
import inspect
import math
import warnings
from types import FunctionType, ModuleType
from typing import Any, Callable

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate
from .proxy import Proxy, ParameterProxy, TracerBase, TraceError  # noqa: F401

__all__ = ["Tracer", "symbolic_trace", "wrap", "PH", "PHBase", "PHWithMeta",
           "is_fx_tracing", "ProxyableClassMeta"]

_IS_TRACING = [False]


def is_fx_tracing() -> bool:
    """Whether a symbolic trace is running."""
    return _IS_TRACING[0]


_proxyable_classes: dict[type, None] = {}


class ProxyableClassMeta(type):
    """Metaclass making construction of a class traceable: while tracing, building an
    instance from Proxy arguments records a call_function node on the class."""

    def __init__(cls, name: str, bases: tuple, attrs: dict) -> None:
        _proxyable_classes.setdefault(cls)
        super().__init__(name, bases, attrs)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if is_fx_tracing():
            proxy = _find_proxy(args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", cls, args, kwargs)
        instance = cls.__new__(cls)
        cls.__init__(instance, *args, **kwargs)
        return instance


class PHBase:
    """Marks an input of ``concrete_args`` that stays a placeholder."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


class PHWithMeta(PHBase):
    """A ``PH`` carrying a key the placeholder node receives (``node.ph_key``)."""

    def __init__(self, ph_key: str | None = None) -> None:
        super().__init__()
        self.ph_key = ph_key


def _transfer_attrs(fr: object, to: object) -> None:
    for k in dir(fr):
        v = getattr(fr, k)
        if not callable(v) and not k.startswith("__") and not hasattr(to, k):
            setattr(to, k, v)


# -- the patching that routes calls on Proxies into the graph ------------------------------
def _find_proxy(args: tuple, kwargs: dict) -> Proxy | None:
    found: list[Proxy] = []

    def look(x):
        if isinstance(x, Proxy) and not found:
            found.append(x)
        return x
    for a in args:
        if isinstance(a, Proxy):
            return a
    map_aggregate((args, kwargs), look)
    return found[0] if found else None


def _wrapped_function(orig: Callable) -> Callable:
    """``orig`` recorded as a call_function node (marked is_wrapped) when a Proxy is among its
    arguments; called as is otherwise."""
    @functools.wraps(orig)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is not None:
            p = proxy.tracer.create_proxy("call_function", orig, args, kwargs)
            p.node.meta["is_wrapped"] = True
            return p
        return orig(*args, **kwargs)
    return wrapped


_OP_WRAPPERS: dict[int, tuple[Callable, Callable]] = {}


def _record_call(orig: Callable, public: str, proxy: Proxy, args: tuple, kwargs: dict) -> Proxy:
    """The node of a call of public operation ``orig`` (named ``public``) on Proxies, with
    the arguments PyTorch records for it."""
    from ._names import recorded_arguments, F_AS_METHOD
    method = F_AS_METHOD.get(public)
    if method is not None and len(args) == 1 and not kwargs:
        return proxy.tracer.create_proxy("call_method", method, args, {})
    args, kwargs = recorded_arguments(public, orig, args, kwargs)
    return proxy.tracer.create_proxy("call_function", orig, args, kwargs)


def _op_wrapper(orig: Callable, public: str) -> Callable:
    """The recording form of the public operation ``orig`` (named ``public``)."""
    hit = _OP_WRAPPERS.get(id(orig))
    if hit is not None and hit[0] is orig:
        return hit[1]

    @functools.wraps(orig)
    def op(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig(*args, **kwargs)
        return _record_call(orig, public, proxy, args, kwargs)
    op._fx_patched = True
    _OP_WRAPPERS[id(orig)] = (orig, op)
    return op


def _on_error(name: str, fn: Callable, args: tuple, kwargs: dict) -> Any:
    """A guarded public function failed: when Proxies were among its arguments (a call made
    outside a trace, as Proxy-built graphs and leaf modules called on Proxies do), record
    the call instead."""
    proxy = _find_proxy(args, kwargs)
    if proxy is None:
        return NotImplemented
    from ._names import public_of_body, public_name
    public = public_of_body(fn)
    if public is None:
        return NotImplemented
    return _record_call(public, public_name(public), proxy, args, kwargs)


def _register() -> None:
    from .._argcheck import ON_ERROR
    if _on_error not in ON_ERROR:
        ON_ERROR.append(_on_error)


_WRAPPED_NAMES: dict[tuple[int, str], dict] = {}   # (id of globals, name) -> globals


class _Patcher:
    """Swaps dict entries and class attributes until ``undo``; each slot is swapped once."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._visited: set[int] = set()
        self._slots: set[tuple[int, str]] = set()

    def patch(self, d: dict, name: str, new: Callable) -> None:
        key = (id(d), name)
        if key in self._slots:
            return
        self._slots.add(key)
        if name not in d:
            d[name] = new
            self._undo.append(lambda: d.pop(name, None))
        else:
            old = d[name]
            d[name] = new
            self._undo.append(lambda: d.__setitem__(name, old))

    def patch_method(self, cls: type, name: str, new: Callable) -> None:
        old = cls.__dict__[name]
        if old is new:  # already swapped by an enclosing trace
            return
        setattr(cls, name, new)
        self._undo.append(lambda: setattr(cls, name, old))

    def visit_once(self, thing: object) -> bool:
        if id(thing) in self._visited:
            return False
        self._visited.add(id(thing))
        return True

    def undo(self) -> None:
        while self._undo:
            self._undo.pop()()
        self._visited.clear()
        self._slots.clear()


def _patch_ops(patcher: _Patcher) -> None:
    """Swap the public operations of dyngrad's modules for their recording forms."""
    from ._names import op_dicts, static_ops
    for d, k, public in op_dicts():
        if not getattr(d[k], "_fx_patched", False):  # not already swapped by an outer trace
            patcher.patch(d, k, _op_wrapper(d[k], public))
    for cls, k, fn, public in static_ops():
        if vars(cls)[k].__func__ is fn:
            patcher.patch_method(cls, k, staticmethod(_op_wrapper(fn, public)))


# Tensor operators PyTorch records under their method's name (`t + proxy` is `t.add(proxy)`)
_METHOD_OF = {"__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
              "__mod__": "remainder", "__pow__": "pow", "__matmul__": "matmul", "__eq__": "eq",
              "__ne__": "ne", "__lt__": "lt", "__gt__": "gt", "__le__": "le", "__ge__": "ge"}
_NOT_RECORDED = frozenset({
    "__init__", "__new__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__",
    "__del__", "__hash__", "__repr__", "__str__", "__reduce_ex__", "__reduce__", "__dir__",
    "__sizeof__", "__init_subclass__", "__subclasshook__", "__format__", "__copy__",
    "__deepcopy__", "__getstate__", "__setstate__", "__bool__", "__len__", "__iter__",
    "__contains__", "__index__", "__int__", "__float__", "__complex__", "__array__",
    "__class_getitem__"})
_METHOD_WRAPPERS: dict[str, tuple[Callable, Callable]] = {}


def _method_wrapper(name: str, orig: Callable) -> Callable:
    """Tensor method ``name`` recording a call_method node when a Proxy is among its
    arguments (a concrete tensor meeting a traced value)."""
    hit = _METHOD_WRAPPERS.get(name)
    if hit is not None and hit[0] is orig:
        return hit[1]
    recorded = _METHOD_OF.get(name, name)

    @functools.wraps(orig)
    def method(self, *args, **kwargs):
        proxy = _find_proxy(args, kwargs) if args or kwargs else None
        if proxy is None:
            return orig(self, *args, **kwargs)
        return proxy.tracer.create_proxy("call_method", recorded, (self,) + args, kwargs)
    _METHOD_WRAPPERS[name] = (orig, method)
    return method


def _patch_tensor_methods(patcher: _Patcher) -> None:
    from .._tensor import Tensor
    from .._npnames import build_all
    build_all(Tensor)
    for k, v in list(vars(Tensor).items()):
        if isinstance(v, FunctionType) and k not in _NOT_RECORDED and \
                not (k.startswith("_") and not k.startswith("__")) and \
                not k.startswith("__r") and not k.startswith("__i"):
            patcher.patch_method(Tensor, k, _method_wrapper(k, v))


@contextlib.contextmanager
def _recording_methods():
    """Record concrete tensors' methods called with Proxies (``Transformer.transform``).

    The public functions stay themselves there, since transforms compare node targets with
    them (``target is torch.relu``); a call of one on a Proxy is recorded through its
    argument guard (``_on_error``)."""
    patcher = _Patcher()
    _patch_tensor_methods(patcher)
    try:
        yield
    finally:
        patcher.undo()


def _autowrap_check(patcher: _Patcher, frame_dict: dict, function_ids: dict) -> None:
    """Patch the globals of traced code that hold autowrapped functions or dyngrad ops."""
    if not patcher.visit_once(frame_dict):
        return
    for name, value in list(frame_dict.items()):
        if name.startswith("_") or not callable(value):
            continue
        kind = function_ids.get(id(value))
        if kind is None:
            continue
        if isinstance(kind, str):
            patcher.patch(frame_dict, name, _op_wrapper(value, kind))
        else:
            patcher.patch(frame_dict, name, _wrapped_function(value))


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Record calls of a module-level function as ``call_function`` nodes instead of tracing
    through it. Call at module scope, with the function or its name (also a decorator)."""
    if not callable(fn_or_name) and not isinstance(fn_or_name, str):
        raise RuntimeError("Unsupported type for global function! Must be either a callable or "
                           "string name")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _WRAPPED_NAMES[(id(frame.f_globals), name)] = frame.f_globals
    return fn_or_name


def _patch_function(fn: FunctionType, nargs: int) -> FunctionType:
    """``fn`` with its ``*args``/``**kwargs`` turned into ordinary positional parameters, so
    the placeholders of the trace can be passed to them."""
    co = fn.__code__
    flags = co.co_flags & ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    code = co.replace(co_argcount=nargs, co_posonlyargcount=0, co_kwonlyargcount=0,
                      co_flags=flags)
    return FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class Tracer(TracerBase):
    """Records a module's (or function's) forward into a ``Graph``.

    Subclass it to change what is a leaf module (``is_leaf_module``), how module calls and
    attribute reads are recorded (``call_module``, ``getattr``), or how values become node
    arguments (``create_arg``).
    """

    _qualname_counter: dict[str, int] = collections.defaultdict(int)

    def __init__(self, autowrap_modules: tuple[ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        super().__init__()
        self._autowrap_function_ids: set[int] = {
            id(v) for m in autowrap_modules for k, v in vars(m).items()
            if not k.startswith("_") and callable(v)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_search: list[ModuleType] = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths: dict | None = None
        self.root_module_name = ""
        self.scope = None
        self.module_stack: dict = collections.OrderedDict()
        self.num_calls: dict[str, int] = {}
        self.node_name_to_scope: dict[str, tuple[str, type]] = {}

    def get_fresh_qualname(self, prefix: str) -> str:
        """An attribute name ``prefix<N>`` the root does not have yet."""
        qualname = f"{prefix}0"
        if not hasattr(self.root, qualname):
            self._qualname_counter[prefix] = 0
            return qualname
        i = self._qualname_counter[prefix]
        while True:
            qualname = f"{prefix}{i}"
            i += 1
            if not hasattr(self.root, qualname):
                break
        self._qualname_counter[prefix] = i
        return qualname

    def create_arg(self, a: Any) -> Any:
        """Parameters, buffers and submodules of the root become ``get_attr`` nodes; other
        tensors are stored on the root as ``_tensor_constant<N>`` and fetched the same way."""
        from .._tensor import Tensor
        from ..nn import Module, Parameter
        if isinstance(a, Parameter):
            for n, p in self.root.named_parameters():
                if a is p:
                    return self.create_node("get_attr", n, (), {})
            raise NameError("parameter is not a member of this module")
        if isinstance(a, Tensor):
            for n, b in self.root.named_buffers():
                if a is b:
                    return self.create_node("get_attr", n, (), {})
        elif isinstance(a, Module):
            for n, m in self.root.named_modules():
                if a is m:
                    return self.create_node("get_attr", n, (), {})
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            args = tuple(self.create_arg(e) for e in a)
            return self.create_node("call_function", a.__class__, args, {})
        if type(a) in _proxyable_classes:  # an instance built before tracing: a constant
            qualname = self.get_fresh_qualname(f"_{a.__class__.__name__}_constant_")
            setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        if isinstance(a, Tensor):
            qualname = self.tensor_attrs.get(id(a), (None, None))[1]
            if not qualname:
                qualname = self.get_fresh_qualname("_tensor_constant")
                self.tensor_attrs[id(a)] = (a, qualname)
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """Whether calls of ``m`` are recorded as call_module nodes (dyngrad's own layers,
        except ``Sequential``) rather than traced through."""
        from ..nn import Sequential
        return (m.__module__.startswith("dyngrad.nn") and not isinstance(m, Sequential))

    def path_of_module(self, mod) -> str:
        """The dotted name of ``mod`` inside the root."""
        if self.submodule_paths:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        for n, p in self.root.named_modules():
            if mod is p:
                return n
        raise NameError("module is not installed as a submodule")

    def call_module(self, m, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A call of submodule ``m``: a call_module node for a leaf, else its forward traced
        through."""
        name = self.path_of_module(m)
        calls = self.num_calls.get(name, 0)
        key = f"{name}@{calls}" if calls > 0 else name
        self.module_stack[key] = (name, type(m))
        self.num_calls[name] = calls + 1
        try:
            if not self.is_leaf_module(m, name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", name, args, kwargs)
        finally:
            self.module_stack.pop(key, None)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """Reading a module attribute while tracing: a parameter (or, with
        ``proxy_buffer_attributes``, a buffer) becomes one get_attr proxy, reused."""
        from .._tensor import Tensor
        from ..nn import Parameter

        def lookup(collection):
            for n, p in collection:
                if attr_val is p:
                    if n not in parameter_proxy_cache:
                        factory = None
                        if self.param_shapes_constant:
                            def factory(node, n=n):
                                return ParameterProxy(self, node, n, attr_val)
                        kw = {}
                        if "proxy_factory_fn" in inspect.signature(self.create_proxy).parameters:
                            kw["proxy_factory_fn"] = factory
                        parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {}, **kw)
                    return parameter_proxy_cache[n]
            return None
        if isinstance(attr_val, Parameter):
            p = lookup(self.root.named_parameters())
            if p is not None:
                return p
        if self.proxy_buffer_attributes and isinstance(attr_val, Tensor):
            p = lookup(self.root.named_buffers())
            if p is not None:
                return p
        return attr_val

    def create_args_for_root(self, root_fn: Callable, is_module: bool,
                             concrete_args: dict | tuple | None = None):
        """Placeholders for the parameters of ``root_fn`` (``self`` excluded), with
        ``concrete_args`` specialised."""
        fn = inspect.unwrap(root_fn)
        co = fn.__code__
        total = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args: list[Any] = []
        skip = 0
        if is_module:
            if total == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn)
        varstuff = co.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
        if isinstance(concrete_args, tuple) and concrete_args and varstuff and total == 1:
            for i, c in enumerate(concrete_args):
                out = self.create_proxy("placeholder", f"input_{i}", (), {})
                if isinstance(c, PHBase) and c is not PH:
                    _transfer_attrs(c, out.node)
                args.append(out)
            return root_fn, args
        arg_names = [next(names_iter) for _ in range(skip, total)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        args.extend(self._proxy_placeholder(n, concrete_args, sig, fn) for n in arg_names)
        if co.co_kwonlyargcount > 0 or varstuff:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(self._proxy_placeholder("*" + next(names_iter), concrete_args,
                                                    sig, fn))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(self._proxy_placeholder("**" + next(names_iter), concrete_args,
                                                    sig, fn))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _proxy_placeholder(self, name: str, concrete_args, sig, fn) -> Any:
        if concrete_args is not None and name in concrete_args:
            x = concrete_args[name]
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
            if isinstance(x, (dict, list, tuple)) and _has_ph(x):
                raise NotImplementedError(
                    "concrete_args with PH inside a container (pytree inputs) are not "
                    "supported by dyngrad.fx")
            out = self.create_proxy("placeholder", f"{name}_1", default, {})
            if isinstance(x, PHBase):
                if x is not PH:
                    _transfer_attrs(x, out.node)
                return out
            import dyngrad
            if type(x) in (bool, int, float, complex, str, bytes):
                self.create_proxy("call_function", dyngrad._assert,
                                  (out == x, f"{name} has been specialized to have value {x} "
                                             f"but got another value"), {})
            elif x is None:
                self.create_proxy("call_function", _assert_is_none,
                                  (out, f"{name} has been specialized to have value None but "
                                        f"got another value"), {})
            else:
                warnings.warn(f"Was not able to add assertion to guarantee correct input {name} "
                              f"to specialized function. It is up to the user to make sure that "
                              f"your inputs match the inputs you specialized the function with.")
            return x
        if name[0] == "*":
            default = ()
        else:
            param = sig.parameters[name]
            default = () if param.default is inspect.Parameter.empty else (param.default,)
        return self.create_proxy("placeholder", name, default, {},
                                 type_expr=fn.__annotations__.get(name, None))

    def trace(self, root, concrete_args: dict | tuple | None = None) -> Graph:
        """Trace ``root`` (a Module or a function) and return its Graph. For a function,
        ``self.root`` becomes a fresh Module that holds any constants."""
        from ..nn import Module
        from ._names import public_functions, public_name
        old_flag = _IS_TRACING[0]
        _IS_TRACING[0] = True
        try:
            if isinstance(root, Module):
                self.root = root
                if not hasattr(type(root), self.traced_func_name):
                    raise AssertionError(f"traced_func_name={self.traced_func_name} doesn't "
                                         f"exist in {type(root).__name__}")
                fn = getattr(type(root), self.traced_func_name)
                self.root_module_name = root._get_name()
                self.submodule_paths = {mod: name for name, mod in root.named_modules()}
            else:
                self.root = Module()
                fn = root
            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            if hasattr(fn, "__code__"):
                code = fn.__code__
                self.graph._co_fields = {"co_name": code.co_name,
                                         "co_filename": code.co_filename,
                                         "co_firstlineno": code.co_firstlineno}
            self.tensor_attrs: dict[int, tuple[Any, str]] = {}
            self._collect_tensor_attrs(self.root, [])
            if not isinstance(fn, FunctionType):
                raise AssertionError(f"Expected FunctionType, got {type(fn)}")
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(fn, isinstance(root, Module), concrete_args)
            cache: dict[str, Proxy] = {}
            ids: dict[int, Any] = {i: True for i in self._autowrap_function_ids}
            for f in public_functions():
                ids[id(f)] = public_name(f)
            orig_getattr = Module.__getattr__
            orig_call = Module.__call__
            patcher = _Patcher()
            tracer = self

            @functools.wraps(orig_getattr)
            def module_getattr(mod, attr):
                return tracer.getattr(attr, orig_getattr(mod, attr), cache)

            @functools.wraps(orig_call)
            def module_call(mod, *args, **kwargs):
                def forward(*args, **kwargs):
                    return orig_call(mod, *args, **kwargs)
                _autowrap_check(patcher, getattr(getattr(mod, "forward", mod), "__globals__",
                                                 {}), ids)
                return tracer.call_module(mod, forward, args, kwargs)

            try:
                patcher.patch_method(Module, "__getattr__", module_getattr)
                patcher.patch_method(Module, "__call__", module_call)
                _patch_ops(patcher)
                _patch_tensor_methods(patcher)
                for (_, name), frame_dict in list(_WRAPPED_NAMES.items()):
                    if name not in frame_dict and hasattr(builtins, name):
                        orig = getattr(builtins, name)
                    else:
                        orig = frame_dict[name]  # a name wrapped but never defined: KeyError
                    patcher.patch(frame_dict, name, _wrapped_function(orig))
                _autowrap_check(patcher, fn_globals, ids)
                for m in self._autowrap_search:
                    _autowrap_check(patcher, vars(m), ids)
                ann = inspect.get_annotations(inspect.unwrap(fn))
                self.create_node("output", "output", (self.create_arg(fn(*args)),), {},
                                 type_expr=ann.get("return", None))
            finally:
                patcher.undo()
            self.submodule_paths = None
        finally:
            _IS_TRACING[0] = old_flag
        return self.graph

    def _collect_tensor_attrs(self, m, prefix: list[str]) -> None:
        from .._tensor import Tensor
        for k, v in m.__dict__.items():
            if isinstance(v, Tensor):
                self.tensor_attrs[id(v)] = (v, ".".join(prefix + [k]))
        for k, v in m.named_children():
            self._collect_tensor_attrs(v, prefix + [k])


def _has_ph(x: Any) -> bool:
    found = []
    map_aggregate(x, lambda v: found.append(v) if isinstance(v, PHBase) else v)
    return bool(found)


def symbolic_trace(root, concrete_args: dict | tuple | None = None) -> GraphModule:
    """Trace ``root`` (a Module or a function) into a ``GraphModule``; ``concrete_args`` fixes
    some inputs to given values (removing control flow on them)."""
    from ..nn import Module
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = root.__class__.__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)


def _assert_is_none(value: Any, msg: str) -> None:
    if value is not None:
        raise AssertionError(msg)


wrap("_assert_is_none")
_register()
