"""``GraphModule``: an ``nn.Module`` whose ``forward`` is the Python code generated from a
``Graph``; it owns the submodules, parameters and buffers the graph refers to."""
from __future__ import annotations

import copy
import itertools
import linecache
import os
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

from ..nn import Module
from .graph import CodeGen, Graph, PythonCode

__all__ = ["GraphModule"]

_SRC_COUNTER = itertools.count()


def _exec_with_source(src: str, globals_: dict, co_fields: dict | None = None) -> None:
    """Run generated source under a unique file name that ``linecache`` can show in
    tracebacks (naming the traced function's file and line when known)."""
    key = f"<eval_with_key>.{next(_SRC_COUNTER)}"
    if co_fields and {"co_filename", "co_firstlineno", "co_name"} <= co_fields.keys():
        key += (f" from {co_fields['co_filename']}:{co_fields['co_firstlineno']} in "
                f"{co_fields['co_name']}")
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec", dont_inherit=True), globals_)


def _forward_from_src(src: str, globals_: dict, co_fields: dict | None = None):
    g = dict(globals_)
    _exec_with_source(src, g, co_fields)
    return g["forward"]


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    from .._tensor import Tensor
    from ..nn import Parameter
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return  # a parent is already installed, with everything below it
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    from .._tensor import Tensor
    from ..nn import Parameter
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * n + line if line.strip() else "" for line in lines)


class _WrappedCall:
    """Calls the module; an error raised inside generated code is shown with the generated
    line it came from."""

    def __init__(self, cls: type, cls_call) -> None:
        self.cls = cls
        self.cls_call = cls_call

    @staticmethod
    def _generate_error_message(frame: traceback.FrameSummary) -> str:
        lineno = frame.lineno
        lines = linecache.getlines(frame.filename)
        return "\n".join([
            traceback.format_exc(),
            f"Call using an FX-traced Module, line {lineno} of the traced Module's generated "
            "forward function:",
            "".join(lines[lineno - 2:lineno]),
            "~" * len(frame.line or "") + "~~~ <--- HERE",
            "\n".join(lines[lineno:lineno + 2])])

    def __call__(self, obj, *args, **kwargs):
        try:
            if self.cls_call is not None:
                return self.cls_call(obj, *args, **kwargs)
            return super(self.cls, obj).__call__(*args, **kwargs)
        except Exception as e:
            # dyngrad's ops are Python, so the generated line is the last such frame rather
            # than the last frame
            frames = [f for f in traceback.extract_tb(e.__traceback__)
                      if "eval_with_key" in f.filename]
            if frames:
                print(_WrappedCall._generate_error_message(frames[-1]), file=sys.stderr)
                raise e.with_traceback(None)  # noqa: B904
            raise


class GraphModule(Module):
    """A Module generated from a ``Graph``: ``graph`` holds the nodes, ``code`` the
    generated ``forward``. Edit the graph in place then call ``recompile()``, or assign a
    new graph (which recompiles)."""

    def __new__(cls, *args, **kwargs):
        # each instance gets its own class, because recompile() sets forward on the class
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict, graph: Graph, class_name: str = "GraphModule"
                 ) -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            if isinstance(root, _CodeOnlyModule):  # a copy keeps all its state
                for k, _ in root.named_children():
                    _copy_attr(root, self, k)
                for k, _ in root.named_buffers():
                    _copy_attr(root, self, k)
                for k, _ in root.named_parameters():
                    _copy_attr(root, self, k)
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError("Node " + str(node) + " referenced target " +
                                           node.target + " but that target was not provided "
                                           "in ``root``!")
                    targets.append(node.target)
            targets.sort(key=lambda t: t.count("."))
            for t in targets:
                _assign_attr(root[t], self, t)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = None
        if graph._tracer_cls and "<locals>" not in graph._tracer_cls.__qualname__:
            self._tracer_cls = graph._tracer_cls
        self._tracer_extras = graph._tracer_extras or {}
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        """The Graph this module's code is generated from; assigning one recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The generated source of ``forward``."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate ``code`` and ``forward`` from ``graph`` (after editing it in place)."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        cls = type(self)
        cls.forward = _forward_from_src(self._code, python_code.globals,
                                        getattr(self._graph, "_co_fields", None))
        cls_call = cls.__call__ if "__call__" in vars(cls) else None
        if "_wrapped_call" not in vars(cls):
            cls._wrapped_call = _WrappedCall(cls, cls_call)

        def call_wrapped(self, *args, **kwargs):
            return self._wrapped_call(self, *args, **kwargs)
        cls.__call__ = call_wrapped
        for _, mod in self.named_children():
            if isinstance(mod, GraphModule):
                mod.recompile()
        return python_code

    # -- the module hierarchy -------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target``, creating empty Modules on the way;
        False when the path runs through something that is not a Module."""
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at ``target``; False when there is none."""
        *path, name = target.split(".")
        mod: Any = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, name) or not isinstance(getattr(mod, name), Module):
            return False
        delattr(mod, name)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule no call_module or get_attr node reaches."""
        used: list[str] = []
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr") and isinstance(node.target, str):
                parts = node.target.split(".")
                used.extend(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":
                    try:
                        sub = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.extend(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name in [n for n, _ in self.named_modules() if n not in used]:
            self.delete_submodule(name)

    # -- printing and saving --------------------------------------------------------------
    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False) -> str:
        """The generated code as a class (with nested GraphModules), printed and returned;
        each node annotated with its recorded dtype and shape (and strides and device when
        asked) and preceded by the user's source line."""
        return _print_readable(self, self._get_name(), print_output, include_stride,
                               include_device)

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def to_folder(self, folder: str | os.PathLike, module_name: str = "FxModule") -> None:
        """Write this module as importable source (``module.py``, ``__init__.py``) plus its
        state dict, so ``from <folder> import <module_name>`` rebuilds it. Linear, Conv and
        BatchNorm children are written as their repr; other children are saved to
        ``<name>.pt`` files (with a warning naming them), as PyTorch does."""
        import dyngrad
        folder = Path(folder)
        folder.mkdir(exist_ok=True)
        dyngrad.save(self.state_dict(), folder / "state_dict.pt")
        tab = " " * 4
        lines = ["", "import torch", "from math import inf", "from math import nan",
                 "NoneType = type(None)", "import torch", "from torch import device", "",
                 "from torch.nn import *", f"class {module_name}(torch.nn.Module):",
                 f"{tab}def __init__(self):", f"{tab * 2}super().__init__()"]
        blobified: list[str] = []
        for name, mod in self.named_children():
            r = _leaf_repr(mod)
            if r is None:
                path = folder / f"{name}.pt"
                dyngrad.save(mod, path)
                blobified.append(name)
                one_line = repr(mod).replace("\r", " ").replace("\n", " ")
                lines.append(f"{tab * 2}setattr(self, '{name}', torch.load(r'{path}', "
                             f"weights_only=False)) # {one_line}")
            else:
                lines.append(f"{tab * 2}setattr(self, '{name}', {r})")
        for name, buf in self._buffers.items():
            if buf is not None:
                lines.append(f"{tab * 2}self.register_buffer('{name}', "
                             f"torch.empty({list(buf.shape)}, dtype={buf.dtype}))")
        for name, p in self._parameters.items():
            if p is not None:
                lines.append(f"{tab * 2}setattr(self, '{name}', torch.nn.Parameter("
                             f"torch.empty({list(p.shape)}, dtype={p.dtype})))")
        lines.append(f"{tab * 2}self.load_state_dict(torch.load(r'{folder}/state_dict.pt'))")
        src = "\n".join(lines) + "\n" + _addindent(self.code, 4) + "\n"
        (folder / "module.py").write_text(src)
        (folder / "__init__.py").write_text("from .module import *")
        if blobified:
            warnings.warn("Was not able to save the following children modules as reprs -"
                          f"saved as pickled files instead: {blobified}")

    def __deepcopy__(self, memo: dict) -> GraphModule:
        res = type(self).__new__(type(self))
        memo[id(self)] = res
        fake = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        GraphModule.__init__(res, fake, fake.__dict__["_graph"])
        for k in ("_state_dict_hooks", "_load_state_dict_pre_hooks"):
            if k in self.__dict__:
                res.__dict__[k] = copy.deepcopy(self.__dict__[k], memo)
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph)
        res.meta = getattr(self, "meta", {})
        return res

    def __reduce__(self):
        # the module's state and its graph as a list of nodes, from which unpickling builds
        # the graph again and generates the code (the class of each instance is local, so the
        # instance cannot be pickled as it is); node metadata is not kept (but for what code
        # generation reads) and the class is named GraphModule again, as in PyTorch
        body = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        g = self._graph
        return (_rebuild_graph_module, (body, _graph_state(g), g._codegen, g._co_fields))


class _NodeRef:
    """A node's argument that is another node, in a pickled graph (by the node's name)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        return (_NodeRef, (self.name,))


class _PublicName:
    """A dyngrad function in a pickled graph, by the name generated code calls it by
    (``torch.relu``): the public functions are argument-checking wrappers that pickle cannot
    find by their own module and name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self):
        return (_PublicName, (self.name,))

    def resolve(self):
        import importlib

        from ._names import _MODULES
        for modname, prefix in sorted(_MODULES, key=lambda m: -len(m[1])):
            rest = self.name[len(prefix):]
            if self.name.startswith(prefix) and rest.isidentifier():
                fn = getattr(importlib.import_module(modname), rest, None)
                if callable(fn):
                    return fn
        raise RuntimeError(f"cannot unpickle a graph calling {self.name}: dyngrad has no such "
                           "function")


def _picklable(a):
    """A node argument with nodes replaced by references and containers made plain."""
    from .node import Node
    if isinstance(a, Node):
        return _NodeRef(a.name)
    if isinstance(a, tuple):
        t = tuple(_picklable(e) for e in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [_picklable(e) for e in a]
    if isinstance(a, dict):
        return {k: _picklable(v) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_picklable(a.start), _picklable(a.stop), _picklable(a.step))
    return a


def _unpickled(a, nodes: dict):
    if isinstance(a, _NodeRef):
        return nodes[a.name]
    if isinstance(a, tuple):
        t = tuple(_unpickled(e, nodes) for e in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [_unpickled(e, nodes) for e in a]
    if isinstance(a, dict):
        return {k: _unpickled(v, nodes) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_unpickled(a.start, nodes), _unpickled(a.stop, nodes),
                     _unpickled(a.step, nodes))
    return a


def _graph_state(g: Graph) -> list:
    from ._names import public_name
    out = []
    for n in g.nodes:
        target = n.target
        if n.op == "call_function":
            name = public_name(target)
            if name is not None:
                target = _PublicName(name)
        # of the metadata only what code generation reads
        meta = {"is_wrapped": True} if n.meta.get("is_wrapped", False) else {}
        out.append((n.op, n.name, target, _picklable(n.args), _picklable(n.kwargs), n.type,
                    meta))
    return out


def _rebuild_graph_module(body: dict, nodes: list, codegen, co_fields: dict) -> GraphModule:
    """A GraphModule from its pickle (``GraphModule.__reduce__``). The graph is built node by
    node and its code generated; then, as PyTorch rebuilds a pickled GraphModule, the graph
    is traced again from that code with every submodule a leaf, so node names and metadata
    are the ones a trace of the code gives (a graph with its own CodeGen is kept as built)."""
    g = Graph(tracer_cls=body.get("_tracer_cls"))
    g._codegen = codegen
    g._co_fields = dict(co_fields)
    made: dict = {}
    for op, name, target, args, kwargs, type_expr, meta in nodes:
        if isinstance(target, _PublicName):
            target = target.resolve()
        made[name] = g.create_node(op, target, _unpickled(args, made), _unpickled(kwargs, made),
                                   name=name, type_expr=type_expr)
        made[name].meta.update(meta)
    class_name = body.get("_graphmodule_cls_name", "GraphModule")
    res = GraphModule(_CodeOnlyModule(dict(body)), g, class_name)
    if type(codegen) is CodeGen:
        res = _retraced(res, body, class_name)
    # the other attributes the module had are kept where the new one has none of that name
    # (so its meta and hooks start empty, as PyTorch's do)
    for k, v in body.items():
        if not hasattr(res, k):
            setattr(res, k, v)
    return res


def _retraced(gm: GraphModule, body: dict, class_name: str) -> GraphModule:
    """``gm`` rebuilt from a trace of its generated ``forward``, its submodules kept whole."""
    from ._symbolic_trace import Tracer
    tracer_cls = body.get("_tracer_cls") or Tracer

    class KeepModules(tracer_cls):
        def is_leaf_module(self, m, module_qualified_name: str) -> bool:
            return True

    code_only = type("_CodeOnlyModule", (_CodeOnlyModule,), {"forward": type(gm).forward})
    com = code_only(dict(body))
    graph = KeepModules().trace(com, **body.get("_tracer_extras", {}))
    graph._tracer_cls = tracer_cls
    graph._co_fields = dict(gm.graph._co_fields)
    return GraphModule(com, graph, class_name)


class _CodeOnlyModule(Module):
    """A module made of another's attribute dict (the state a copy or unpickling starts
    from)."""

    def __init__(self, body: dict) -> None:
        super().__init__()
        self.__dict__ = body


def _leaf_repr(mod: Module) -> str | None:
    """A Linear, Conv1d/2d/3d or BatchNorm1d/2d/3d child's repr (the layers whose repr
    rebuilds them, ``to_folder`` writing ``from torch.nn import *`` above); None for others."""
    import dyngrad.nn as nn
    safe = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.BatchNorm1d, nn.BatchNorm2d,
            nn.BatchNorm3d)
    return repr(mod) if type(mod) in safe else None


def _print_readable(module: GraphModule, name: str, print_output: bool = True,
                    include_stride: bool = False, include_device: bool = False) -> str:
    src = module.graph.python_code(root_module="self", verbose=True,
                                   include_stride=include_stride,
                                   include_device=include_device).src
    code = f"class {name}(torch.nn.Module):\n" + src.lstrip("\n")
    code = _addindent(code, 4)
    subs = [""]
    for sub_name, sub in module.named_children():
        if isinstance(sub, GraphModule):
            subs.append(_print_readable(sub, sub_name, False, include_stride, include_device))
    out = code + _addindent("\n".join(subs), 4)
    if print_output:
        print(out)
    return out
