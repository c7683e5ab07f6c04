"""PyTorch's checkpoint format, read and written without PyTorch.

``torch.save`` writes a zip archive (since PyTorch 1.6): ``<prefix>/data.pkl`` is a protocol-2
pickle of the saved object in which every tensor is a call of
``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`` and
every storage a persistent id ``('storage', torch.FloatStorage, key, location, numel)`` whose
bytes are the uncompressed record ``<prefix>/data/<key>``.  Before 1.6 it wrote the "legacy"
format: a magic number, a protocol version and system information, the object pickle, the
list of storage keys, then each storage as an int64 element count and its bytes.

Reading follows ``torch.load(weights_only=True)``: ``_Unpickler`` resolves globals from a
fixed table of stand-ins (tensor and parameter rebuilds, storage types, dtypes,
``torch.Size``, ``torch.device``, ``OrderedDict``, ``set``, ``complex``, bytes) and the
user's allowlist, and nothing else; it never imports a module.  The stand-ins only record
their arguments, and NEWOBJ / REDUCE / BUILD of allowlisted globals are recorded too;
``_Builder`` then checks everything and builds the dyngrad objects (tensors viewing one
storage share one array), running the recorded constructions last.  With
``weights_only=False`` other globals are imported as pickle does (but not ``_NEVER``'s).

Writing emits the pickle opcodes directly for tensors and containers (the globals are
written by name, so PyTorch is never imported); any other object goes through
``_FullPickler``, a ``pickle`` pickler that writes tensors the same way.  The records are
packed like ``torch.save``'s: stored, 64-byte aligned.
"""
from __future__ import annotations

import _compat_pickle
import io
import math
import pickle
import pickletools
import struct
import sys
import zipfile
from collections import Counter, OrderedDict

import numpy as np

from . import _dtype as D
from ._tensor import Size, Tensor, device as _device

MAGIC_NUMBER = 0x1950a86a20f9469cfc6c     # the legacy format's first pickle
PROTOCOL_VERSION = 1001
_MAX_NDIM = 64


class Corrupt(Exception):
    """The file is malformed or holds something dyngrad cannot represent (the caller prefixes
    the file's name)."""


class Unsafe(Exception):
    """The pickle names a global outside the weights-only allowlist, or asks a weights-only
    load for a step it refuses (the message is PyTorch's WeightsUnpickler error);
    ``global_name`` is the refused global's full name, where there is one."""

    def __init__(self, msg, global_name=None):
        super().__init__(msg)
        self.global_name = global_name


class SaveError(TypeError, pickle.PicklingError):
    """``save`` of an object pickle cannot write (a lambda, a local class ...): PyTorch's
    ``pickle.PicklingError``, and a TypeError."""


class LocationError(RuntimeError):
    """A storage saved on a device dyngrad does not have (PyTorch's message)."""


class MapLocationError(TypeError):
    """A ``map_location`` dyngrad cannot follow."""


# --- dtypes and storage types -----------------------------------------------------------
_STORAGE_DTYPES = {"HalfStorage": D.float16, "FloatStorage": D.float32,
                   "DoubleStorage": D.float64, "CharStorage": D.int8, "ShortStorage": D.int16,
                   "IntStorage": D.int32, "LongStorage": D.int64, "ByteStorage": D.uint8,
                   "BoolStorage": D.bool_, "ComplexFloatStorage": D.complex64,
                   "ComplexDoubleStorage": D.complex128, "BFloat16Storage": D.bfloat16}
STORAGE_NAMES = {v: k for k, v in _STORAGE_DTYPES.items()}
# storage types PyTorch has and dyngrad has no dtype for
_OTHER_STORAGES = {"QInt8Storage": "qint8",
                   "QUInt8Storage": "quint8", "QInt32Storage": "qint32",
                   "QUInt4x2Storage": "quint4x2", "QUInt2x4Storage": "quint2x4"}
_DTYPE_NAMES = {d.name: d for d in D.ALL}
_DTYPE_NAMES.update({"float": D.float32, "double": D.float64, "half": D.float16,
                     "long": D.int64, "int": D.int32, "short": D.int16, "cfloat": D.complex64,
                     "cdouble": D.complex128})
_OTHER_DTYPES = {"complex32", "chalf", "qint8", "quint8", "qint32", "quint4x2",
                 "quint2x4", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                 "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "uint16", "uint32",
                 "uint64", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2"}
_OTHER_DTYPES |= {f"int{i}" for i in range(1, 8)} | {f"uint{i}" for i in range(1, 8)}


def _no_dtype(name: str) -> Corrupt:
    return Corrupt(f"it holds a tensor of dtype torch.{name}, and dyngrad has no {name} "
                   f"dtype; nothing was loaded")


# --- placeholders the unpickler builds -----------------------------------------------------
class _Ref:
    """Base of the unpickler's placeholders: BUILD (``__setstate__``) is refused."""
    __slots__ = ()

    def __setstate__(self, state):
        raise Corrupt(f"the pickle sets the state of a {type(self).__name__[1:]} (BUILD), "
                      f"which a PyTorch checkpoint never does")


class _StorageType(_Ref):
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _DTypeRef(_Ref):
    __slots__ = ("name", "dtype")

    def __init__(self, name, dtype):
        self.name, self.dtype = name, dtype


class _Marker(_Ref):
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class _StorageRef(_Ref):
    __slots__ = ("key", "dtype", "location", "numel", "view")

    def __init__(self, key, dtype, location, numel, view=None):
        self.key, self.dtype, self.location, self.numel, self.view = \
            key, dtype, location, numel, view


class _TensorSpec(_Ref):
    """A tensor to build; ``cls`` an allowed Tensor subclass (a ``_Global``) or None,
    ``state`` the Python attributes set on it (a dict) or None."""
    __slots__ = ("storage", "offset", "size", "stride", "requires_grad", "cls", "state")

    def __init__(self, storage, offset, size, stride, requires_grad):
        self.storage, self.offset, self.size, self.stride, self.requires_grad = \
            storage, offset, size, stride, requires_grad
        self.cls = self.state = None


class _ParamSpec(_Ref):
    __slots__ = ("data", "requires_grad", "state")

    def __init__(self, data, requires_grad, state=None):
        self.data, self.requires_grad, self.state = data, requires_grad, state


class _Node(_Ref):
    __slots__ = ("kind", "args")

    def __init__(self, kind, args):
        self.kind, self.args = kind, args


class _Global(_Ref):
    """A global the load may use (allowlisted by the user, or any global of a load with
    ``weights_only=False``): a value, or something NEWOBJ / REDUCE call in the second phase."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __repr__(self):
        return repr(self.obj)


class _Call(_Ref):
    """A deferred NEWOBJ (``kind`` "new") or REDUCE ("call") of an allowed global, with the
    BUILD / SETITEMS / APPENDS steps the pickle applies to its result, in order."""
    __slots__ = ("kind", "func", "args", "kwargs", "ops")

    def __init__(self, kind, func, args, kwargs=None):
        self.kind, self.func, self.args, self.kwargs, self.ops = kind, func, args, kwargs, []

    def __setstate__(self, state):
        self.ops.append(("build", state))


class _ODict(OrderedDict):
    """An OrderedDict under construction; BUILD may give it ``_metadata`` (state dicts)."""

    def __setstate__(self, state):
        if not isinstance(state, dict):
            raise Corrupt("the pickle sets the state of an OrderedDict to a "
                          f"{type(state).__name__}, not a dict")
        self.__dict__["_dg_state"] = state


# --- the allowlisted globals (stand-ins: they check and record, never act) ----------------
def _is_index(x) -> bool:
    return type(x) is int and x >= 0


def _shape(x, what):
    if isinstance(x, _Node) and x.kind == "size":
        x = x.args
    if type(x) not in (tuple, list) or len(x) > _MAX_NDIM or not all(_is_index(s) for s in x):
        raise Corrupt(f"a tensor's {what} must be a tuple of at most {_MAX_NDIM} non-negative "
                      f"integers, not {x!r:.200}")
    return tuple(x)


def _no_hooks(hooks):
    if hooks is not None and not (isinstance(hooks, dict) and not hooks):
        raise Corrupt("a tensor in the pickle carries backward hooks; a weights-only load "
                      "cannot restore functions")


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, _StorageRef):
        raise Corrupt(f"a tensor's storage is a {type(storage).__name__}, not a storage")
    if not _is_index(storage_offset):
        raise Corrupt(f"a tensor's storage offset is {storage_offset!r:.100}")
    size, stride = _shape(size, "size"), _shape(stride, "stride")
    if len(size) != len(stride):
        raise Corrupt(f"a tensor has size {size} but stride {stride}")
    return _TensorSpec(storage, storage_offset, size, stride, False)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    spec = _rebuild_tensor(storage, storage_offset, size, stride)
    if type(requires_grad) is not bool:
        raise Corrupt(f"a tensor's requires_grad is {requires_grad!r:.100}")
    _no_hooks(backward_hooks)
    if metadata is not None and not (isinstance(metadata, dict) and not metadata):
        raise Corrupt("a tensor in the pickle carries metadata dyngrad cannot restore")
    spec.requires_grad = requires_grad
    return spec


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    if not isinstance(data, _TensorSpec) or type(requires_grad) is not bool:
        raise Corrupt("a parameter's data must be a tensor and its requires_grad a bool")
    _no_hooks(backward_hooks)
    return _ParamSpec(data, requires_grad)


def _attributes(state):
    """The Python attributes of a tensor's pickle: a dict of names (PyTorch's
    ``_get_obj_state``: the ``__dict__``, or a (``__dict__``, slots) pair), or None."""
    if isinstance(state, tuple) and len(state) == 2 and all(
            s is None or isinstance(s, dict) for s in state):
        merged: dict = {}
        for s in state:
            merged.update(s or {})
        state = merged
    if state is None:
        return None
    if not isinstance(state, dict) or not all(type(k) is str for k in state):
        raise Corrupt("a tensor's Python attributes in the pickle are not a dict of names")
    return state or None


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    out = _rebuild_parameter(data, requires_grad, backward_hooks)
    out.state = _attributes(state)
    return out


def _rebuild_from_type_v2(func, new_type, args, state):
    if func not in (_rebuild_tensor_v2, _rebuild_tensor, _rebuild_parameter) \
            or not isinstance(new_type, (_Marker, _Global)) or type(args) is not tuple:
        raise Corrupt("an unsupported tensor subclass rebuild in the pickle")
    out = func(*args)
    if isinstance(new_type, _Global):
        if not (isinstance(new_type.obj, type) and issubclass(new_type.obj, Tensor)
                and isinstance(out, _TensorSpec)):
            raise Corrupt(f"a tensor in the pickle is rebuilt as {new_type.obj!r:.100}, "
                          f"which is not a dyngrad Tensor subclass")
        out.cls = new_type
    elif new_type.name == "torch.nn.parameter.Parameter" and isinstance(out, _TensorSpec):
        out = _ParamSpec(out, out.requires_grad)
    out.state = _attributes(state)
    return out


def _ordered_dict(*args):
    if len(args) > 1:
        raise Corrupt("OrderedDict takes at most one argument")
    return _ODict(*args)


def _counter(*args):
    if len(args) > 1 or (args and not isinstance(args[0], dict)):
        raise Corrupt("Counter must be built from a dict")
    return _Node("counter", args[0] if args else {})


def _size(*args):
    if len(args) > 1:
        raise Corrupt("torch.Size takes one argument")
    return _Node("size", _shape(args[0] if args else (), "torch.Size"))


def _device_(*args):
    if not 1 <= len(args) <= 2 or type(args[0]) is not str \
            or (len(args) == 2 and args[1] is not None and not _is_index(args[1])):
        raise Corrupt(f"torch.device{args!r:.100} is not a device")
    return _Node("device", args)


def _set(*args):
    if len(args) > 1 or (args and type(args[0]) not in (list, tuple)):
        raise Corrupt("set must be built from a list")
    return set(args[0] if args else ())


def _complex(*args):
    if not 1 <= len(args) <= 2 or not all(type(a) in (int, float) for a in args):
        raise Corrupt("complex takes one or two real numbers")
    return complex(*args)


def _latin1(args, what):
    if len(args) == 2 and type(args[0]) is str and args[1] in ("latin1", "latin-1"):
        return args[0].encode("latin-1")
    if len(args) == 1 and type(args[0]) in (bytes, bytearray):
        return bytes(args[0])
    if not args:
        return b""
    raise Corrupt(f"{what}{args!r:.100} is not a latin-1 encoding")


def _encode(*args):
    return _latin1(args, "_codecs.encode")


def _bytearray(*args):
    return bytearray(_latin1(args, "bytearray"))


_GLOBALS = {
    "collections.OrderedDict": _ordered_dict,
    "collections.Counter": _counter,
    "torch._utils._rebuild_tensor": _rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
    "torch._utils._rebuild_parameter": _rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
    "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2,
    "torch.Size": _size,
    "torch.device": _device_,
    "torch.Tensor": _Marker("torch.Tensor"),
    "torch.nn.parameter.Parameter": _Marker("torch.nn.parameter.Parameter"),
    "torch.storage.UntypedStorage": _StorageType("UntypedStorage", D.uint8),
    "torch.UntypedStorage": _StorageType("UntypedStorage", D.uint8),
    "builtins.set": _set,
    "builtins.complex": _complex,
    "builtins.bytearray": _bytearray,
    "_codecs.encode": _encode,
}
for _n, _d in _STORAGE_DTYPES.items():
    _GLOBALS[f"torch.{_n}"] = _StorageType(_n, _d)
for _n, _o in _OTHER_STORAGES.items():
    _GLOBALS[f"torch.{_n}"] = _StorageType(_n, _o)
for _n, _d in _DTYPE_NAMES.items():
    _GLOBALS[f"torch.{_n}"] = _DTypeRef(_n, _d)
for _n in _OTHER_DTYPES:
    _GLOBALS[f"torch.{_n}"] = _DTypeRef(_n, None)
_STANDIN_FUNCS = [v for v in _GLOBALS.values() if not isinstance(v, _Ref)]
# classes only a full load (weights_only=False) rebuilds, as PyTorch's
_UNINITIALIZED = frozenset(("torch.nn.parameter.UninitializedParameter",
                            "torch.nn.parameter.UninitializedBuffer"))


# --- the user's allowlist (torch.serialization.add_safe_globals and friends) ---------------
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")     # PyTorch's: never allowed, even if listed
# what a load with weights_only=False still refuses: globals that run commands or code,
# which no checkpoint needs (PyTorch would run them)
_NEVER = frozenset(("subprocess", "builtins.eval", "builtins.exec", "builtins.compile",
                    "builtins.__import__", "builtins.open", "builtins.breakpoint",
                    "builtins.input", "builtins.getattr", "builtins.setattr",
                    "builtins.delattr", "builtins.globals", "builtins.vars", "shutil",
                    "importlib", "runpy", "code", "pty", "socket", "ctypes", "webbrowser",
                    "multiprocessing", "pickle", "_pickle", "marshal", "pdb", "platform",
                    "asyncio.subprocess", "pydoc", "types.FunctionType", "types.CodeType",
                    "types.LambdaType", "types.ModuleType", "timeit", "cProfile", "profile",
                    "trace", "codeop", "operator", "_operator", "site"))
_safe_globals: set = set()


def add_safe_globals(safe_globals) -> None:
    global _safe_globals
    _safe_globals = _safe_globals.union(set(safe_globals))


def get_safe_globals() -> list:
    return list(_safe_globals)


def clear_safe_globals() -> None:
    global _safe_globals
    _safe_globals = set()


def remove_safe_globals(safe_globals) -> None:
    global _safe_globals
    _safe_globals = _safe_globals - set(safe_globals)


def user_allowed_globals() -> dict:
    """{full name: object} of the allowlist, with PyTorch's checks of (object, name) pairs."""
    rc: dict = {}
    for f in _safe_globals:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError(f"Expected tuple of length 2 (global, str of callable full "
                                 f"path), but got tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError(f"Expected second item in tuple to be str of callable full "
                                f"path, but got: {type(f[1])}")
            f, name = f
            rc[name] = f
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


def _display_name(full_path: str) -> str:
    """The name PyTorch's message shows: builtins.X as X."""
    if full_path.startswith("builtins"):
        rest = full_path[len("builtins"):]
        return rest[1:] if rest[:1] == "." else "builtins" + rest
    return full_path


def _blocked(full_path: str) -> bool:
    parts = full_path.split(".")
    return any(".".join(parts[:i]) in _NEVER for i in range(1, len(parts) + 1))


class FullLoadRefused(Exception):
    """A load with ``weights_only=False`` met a global dyngrad refuses whatever the flag
    says (one that runs commands or code, or one of PyTorch's own classes)."""


_STANDINS = {id(f) for f in _STANDIN_FUNCS}     # the stand-ins REDUCE may call


class _Unpickler(pickle._Unpickler):
    """PyTorch's weights-only rules over Python's pickle machine: globals come from
    ``_GLOBALS`` (nothing is imported) or the user's allowlist; NEWOBJ and REDUCE of an
    allowlisted global, and the BUILD of its result, are recorded (``_Call``) and run only
    when ``_Builder`` builds the result, after every check; APPEND(S) only extend lists and
    SETITEM(S) only fill dicts.  With ``weights_only=False`` (``full``) any global but
    PyTorch's classes and ``_NEVER``'s is imported, as pickle does, and any step is allowed."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def __init__(self, file, legacy=False, storages=None, full=False, allowed=None):
        super().__init__(file, encoding="utf-8")
        self.legacy = legacy
        self.storages = {} if storages is None else storages
        self.full = full
        self.allowed = {} if allowed is None else allowed

    def find_class(self, module, name):
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full_path = f"{module}.{name}"
        if module in _BLOCKED_MODULES or module.split(".")[0] in _BLOCKED_MODULES:
            if self.full:
                raise FullLoadRefused(f"GLOBAL {full_path}")
            raise Unsafe(f"Trying to load unsupported GLOBAL {full_path} whose module "
                         f"{module} is blocked.", full_path)
        found = _GLOBALS.get(full_path)
        if found is not None:
            return found
        if full_path in self.allowed:
            return _Global(self.allowed[full_path])
        if self.full:
            if full_path in _UNINITIALIZED:  # a lazy module's parameter or buffer
                from .nn import parameter
                return _Global(getattr(parameter, name))
            if _blocked(full_path) or module == "torch" or module.startswith("torch."):
                raise FullLoadRefused(f"GLOBAL {full_path}")
            try:
                return _Global(super().find_class(module, name))
            except (ImportError, AttributeError) as e:
                raise Corrupt(f"the pickle names {full_path}, which cannot be found "
                              f"({type(e).__name__}: {e})") from None
        shown = _display_name(full_path)
        raise Unsafe(f"Unsupported global: GLOBAL {shown} was not an allowed global by "
                     f"default. Please use `torch.serialization.add_safe_globals([{shown}])` "
                     f"or the `torch.serialization.safe_globals([{shown}])` context manager "
                     f"to allowlist this global if you trust this class/function.", full_path)

    def _callable(self, func) -> bool:
        return isinstance(func, _Global) or (self.full and isinstance(func, _Call))

    def load_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, None))
    dispatch[pickle.NEWOBJ[0]] = load_newobj

    def load_newobj_ex(self):
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new(cls, args, kwargs))
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def _new(self, cls, args, kwargs):
        if type(args) is not tuple or (kwargs is not None and type(kwargs) is not dict):
            raise Corrupt("NEWOBJ's arguments are not a tuple")
        if isinstance(cls, _Marker) and cls.name == "torch.nn.parameter.Parameter" \
                and not kwargs:
            return _rebuild_parameter(*args[:2]) if len(args) >= 2 else \
                _rebuild_parameter(*args, True)
        if self._callable(cls):
            return _Call("new", cls, args, kwargs)
        if any(cls is v for v in _GLOBALS.values()):
            raise Corrupt(f"the pickle applies NEWOBJ to {cls!r:.100}, which a PyTorch "
                          f"checkpoint never does")
        raise Unsafe(f"Can only create new object for nn.Parameter or classes allowlisted "
                     f"via `add_safe_globals` but got {cls!r:.200}")

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if type(args) is not tuple:
            raise Corrupt("REDUCE's arguments are not a tuple")
        if id(func) in _STANDINS:
            self.stack[-1] = func(*args)
        elif self._callable(func):
            self.stack[-1] = _Call("call", func, args)
        else:
            msg = f"Trying to call reduce for unrecognized function {func!r:.200}"
            if hasattr(func, "__self__"):
                msg += f" which belongs to {func.__self__!r:.200}"
            raise Unsafe(msg)
    dispatch[pickle.REDUCE[0]] = load_reduce

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, _Ref) or type(inst) is _ODict:
            inst.__setstate__(state)    # recorded, or refused (Corrupt)
        else:
            raise Corrupt(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                         f"via `add_safe_globals`, but got {type(inst)}")
    dispatch[pickle.BUILD[0]] = load_build

    def _extend(self, items, op):
        target = self.stack[-1]
        if type(target) is list:
            target.extend(items)
        elif self.full and isinstance(target, _Call):
            target.ops.append(("appends", items))
        else:
            raise Corrupt(f"Can only {op} lists, but got {type(target)}")

    def load_append(self):
        self._extend([self.stack.pop()], "append to")
    dispatch[pickle.APPEND[0]] = load_append

    def load_appends(self):
        self._extend(self.pop_mark(), "extend")
    dispatch[pickle.APPENDS[0]] = load_appends

    def _setitems(self, items, op):
        target = self.stack[-1]
        if type(target) in (dict, _ODict):
            for i in range(0, len(items), 2):
                target[items[i]] = items[i + 1]
        elif self.full and isinstance(target, _Call):
            target.ops.append(("setitems", items))
        else:
            raise Corrupt(f"Can only {op} for dict, collections.OrderedDict, "
                         f"collections.Counter, but got {type(target)}")

    def load_setitem(self):
        v = self.stack.pop()
        k = self.stack.pop()
        self._setitems([k, v], "SETITEM")
    dispatch[pickle.SETITEM[0]] = load_setitem

    def load_setitems(self):
        self._setitems(self.pop_mark(), "SETITEMS")
    dispatch[pickle.SETITEMS[0]] = load_setitems

    def load_additems(self):
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not set:
            raise Corrupt(f"Can only add items to sets, but got {type(target)}")
        target.update(items)
    dispatch[pickle.ADDITEMS[0]] = load_additems

    def _refuse(self):
        raise Corrupt("the pickle uses INST, OBJ or an extension code, which PyTorch never "
                      "writes")
    for _op in (pickle.INST, pickle.OBJ, pickle.EXT1, pickle.EXT2, pickle.EXT4):
        dispatch[_op[0]] = _refuse
    del _op

    def persistent_load(self, pid):
        n = 6 if self.legacy else 5
        if type(pid) is tuple and pid and pid[0] == "module":
            raise Unsafe("the pickle holds a whole module (torch.save(model)); save and load "
                         "model.state_dict() instead")
        if not (type(pid) is tuple and len(pid) == n and pid[0] == "storage"):
            raise Corrupt(f"unsupported persistent id {pid!r:.200} in the pickle")
        _, st, key, location, numel = pid[:5]
        if not isinstance(st, _StorageType):
            raise Corrupt(f"a storage's type is {st!r:.100}, not a storage type")
        if isinstance(st.dtype, str):
            raise _no_dtype(st.dtype)
        if type(key) is not str or type(location) is not str or not _is_index(numel):
            raise Corrupt(f"malformed storage reference {pid!r:.200}")
        ref = self.storages.get(key)
        if ref is None:
            ref = self.storages[key] = _StorageRef(key, st.dtype, location, numel)
        elif ref.dtype is not st.dtype or ref.numel != numel:
            raise Corrupt(f"storage {key!r} is referenced with two dtypes or sizes")
        if self.legacy and pid[5] is not None:
            view = pid[5]
            if not (type(view) is tuple and len(view) == 3 and type(view[0]) is str
                    and _is_index(view[1]) and _is_index(view[2])
                    and view[1] + view[2] <= numel):
                raise Corrupt(f"malformed storage view {view!r:.200}")
            return _StorageRef(view[0], st.dtype, location, view[2], (ref, view[1]))
        return ref


_PUTS = frozenset(("PUT", "BINPUT", "LONG_BINPUT"))
_OUT_OF_BAND = frozenset(("NEXT_BUFFER", "READONLY_BUFFER", "BYTEARRAY8"))


def _scan(f):
    """Walk the opcodes of one pickle before unpickling it: malformed or truncated data is
    reported here, and memo indices must be ones a pickler writes (at most the number of
    opcodes so far: a huge index would make the unpickler allocate and clear a huge memo)."""
    start = f.tell()
    try:
        for n, (op, arg, _) in enumerate(pickletools.genops(f)):
            if op.name in _PUTS and not (type(arg) is int and 0 <= arg <= n):
                raise Corrupt(f"the pickle stores memo entry {arg!r:.30} after {n} opcodes; "
                              f"it is corrupt")
            if op.name in _OUT_OF_BAND:
                raise Corrupt(f"the pickle uses {op.name}, which PyTorch never writes")
    except Corrupt:
        raise
    except Exception as e:   # ValueError from genops: truncated data, unknown opcode ...
        raise Corrupt(f"the pickle is truncated or corrupt ({e})") from None
    f.seek(start)


def _unpickle(f, **kw):
    """One restricted unpickle from the file object ``f``; every failure that is not a
    refused global becomes ``Corrupt``."""
    _scan(f)
    try:
        return _Unpickler(f, **kw).load()
    except (Corrupt, Unsafe, FullLoadRefused):
        raise
    except RecursionError:
        raise Corrupt("the pickle is nested too deeply") from None
    except MemoryError:
        raise Corrupt("the pickle asks for more memory than there is; it is corrupt") from None
    except Exception as e:   # UnpicklingError, EOFError, TypeError from a bad opcode ...
        raise Corrupt(f"the pickle is truncated or corrupt ({type(e).__name__}: {e})") from None


# --- map_location ----------------------------------------------------------------------
class StorageStub:
    """What a ``map_location`` callable receives: a CPU storage (return it, or None)."""

    def __init__(self, dtype, numel):
        self.dtype, self._numel = dtype, numel
        self.device = _device("cpu")

    def nbytes(self):
        return self._numel * self.dtype.itemsize

    def size(self):
        return self._numel

    def cpu(self):
        return self


def _is_cpu(loc) -> bool:
    return _device(loc).type == "cpu"


def _cuda_error():
    return LocationError("Attempting to deserialize object on a CUDA device but "
                        "torch.cuda.is_available() is False. If you are running on a CPU-only "
                        "machine, please use torch.load with map_location=torch.device('cpu') "
                        "to map your storages to the CPU.")


def _restore_location(ref, map_location):
    """Check that ``ref``'s storage goes to the CPU, as PyTorch's restore_location does."""
    loc = ref.location
    try:
        _device(loc)
    except Exception:
        raise Corrupt(f"storage {ref.key!r} has the unknown location {loc!r:.100}") from None
    if map_location is None:
        target = loc
    elif isinstance(map_location, (str, _device)):
        target = map_location
    elif isinstance(map_location, dict):
        target = map_location.get(loc, loc)
    elif callable(map_location):
        stub = StorageStub(ref.dtype, ref.numel)
        result = map_location(stub, loc)
        if result is None:
            target = loc
        elif result is stub:
            return
        else:
            raise MapLocationError(f"map_location returned a {type(result).__name__}; dyngrad's "
                            f"map_location callables must return the storage they are given "
                            f"(or None)")
    else:
        raise MapLocationError(f"map_location must be a str, device, dict or callable, not "
                        f"{type(map_location).__name__}")
    if not _is_cpu(target if isinstance(target, _device) else str(target)):
        raise _cuda_error()


# --- building dyngrad objects -------------------------------------------------------------
class _Builder:
    """Turns the unpickled placeholders into dyngrad objects; ``storage(ref)`` gives the
    1-D array of a storage."""

    def __init__(self, storage, full=False, allowed=None):
        self.storage = storage
        self.memo: dict = {}
        self.busy: set = set()
        self.full = full
        self.allowed_types = {id(v) for v in (allowed or {}).values() if isinstance(v, type)}

    def build(self, x):
        t = type(x)
        if x is None or t in (bool, int, float, complex, str, bytes):
            return x
        i = id(x)
        if i in self.memo:
            return self.memo[i]
        if t is list:
            out = self.memo[i] = []
            out.extend(self.build(v) for v in x)
            return out
        if t is dict or t is _ODict:
            out = self.memo[i] = OrderedDict() if t is _ODict else {}
            for k, v in x.items():
                out[self.build(k)] = self.build(v)
            state = x.__dict__.get("_dg_state") if t is _ODict else None
            if state and "_metadata" in state:
                out._metadata = self.build(state["_metadata"])
            return out
        if t is bytearray:
            out = self.memo[i] = bytearray(x)
            return out
        if t is _Global:
            return x.obj
        if t is _Call:
            return self.call(x)
        if i in self.busy:
            raise Corrupt("the pickle holds a tuple or set that contains itself")
        self.busy.add(i)
        try:
            out = self._build_other(x, t)
        finally:
            self.busy.discard(i)
        self.memo[i] = out
        return out

    def _build_other(self, x, t):
        if t is tuple:
            return tuple(self.build(v) for v in x)
        if t is set:
            return {self.build(v) for v in x}
        if t is _TensorSpec:
            return self.tensor(x)
        if t is _ParamSpec:
            from .nn.parameter import Parameter
            data = self.build(x.data)
            return self.attributes(Parameter(Tensor._make(data._data), x.requires_grad), x)
        if t is _Node:
            if x.kind == "size":
                return Size(x.args)
            if x.kind == "device":
                try:
                    return _device(*x.args)
                except Exception:
                    raise Corrupt(f"torch.device{x.args!r:.100} is not a device") from None
            if x.kind == "counter":
                return Counter({self.build(k): self.build(v) for k, v in x.args.items()})
        if t is _DTypeRef:
            if x.dtype is None:
                raise Corrupt(f"it holds the dtype torch.{x.name}, which dyngrad does not have")
            return x.dtype
        if t is _StorageRef:
            raise Corrupt("it holds a bare storage (torch.save of a storage); dyngrad has no "
                          "storage objects: save tensors instead")
        name = getattr(x, "name", None) or t.__name__.lstrip("_")
        raise Corrupt(f"the pickle holds {name} as a value, which a weights-only load does "
                      f"not restore")

    def call(self, x):
        """Run a recorded NEWOBJ / REDUCE of an allowed global over the built arguments,
        then its BUILD, SETITEMS and APPENDS steps."""
        i = id(x)
        if i in self.busy:
            raise Corrupt("the pickle calls a function with its own result as argument")
        self.busy.add(i)
        try:
            func = self.build(x.func)
            args = self.build(x.args)
            kwargs = self.build(x.kwargs) if x.kwargs else {}
        finally:
            self.busy.discard(i)
        if i in self.memo:
            return self.memo[i]
        if x.kind == "new":
            if not isinstance(func, type):
                raise Corrupt(f"NEWOBJ of {func!r:.100}, which is not a class")
            obj = func.__new__(func, *args, **kwargs)
        else:
            obj = func(*args)
        self.memo[i] = obj
        for op, value in x.ops:
            value = self.build(value)
            if op == "build":
                self.set_state(obj, value)
            elif op == "setitems":
                for k in range(0, len(value), 2):
                    obj[value[k]] = value[k + 1]
            else:
                extend = getattr(obj, "extend", None)
                if extend is not None:
                    extend(value)
                else:
                    for v in value:
                        obj.append(v)
        return obj

    def set_state(self, inst, state):
        """BUILD, as PyTorch's weights-only unpickler (and pickle) do it: ``__setstate__``,
        else the ``__dict__`` update and the slots; weights-only, only for allowlisted
        types."""
        if not self.full and id(type(inst)) not in self.allowed_types:
            raise Unsafe(f"Can only build Tensor, Parameter, OrderedDict or types allowlisted "
                         f"via `add_safe_globals`, but got {type(inst)}")
        setstate = getattr(inst, "__setstate__", None)
        if setstate is not None:
            setstate(state)
            return
        slotstate = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slotstate = state
        if state:
            inst.__dict__.update(state)
        if slotstate:
            for k, v in slotstate.items():
                setattr(inst, k, v)

    def tensor(self, spec):
        ref = spec.storage
        base = self.storage(ref.view[0] if ref.view else ref)
        if ref.view:
            base = base[ref.view[1]:ref.view[1] + ref.numel]
        dt = base.dtype
        size, stride, off = spec.size, spec.stride, spec.offset
        if math.prod(size) == 0:
            try:
                a = np.empty(size, dt)
            except (ValueError, MemoryError) as e:
                raise Corrupt(f"a tensor has the unusable size {list(size)} ({e})") from None
        else:
            last = off + sum((s - 1) * st for s, st in zip(size, stride))
            if last >= base.size:
                raise Corrupt(f"a tensor of size {list(size)}, stride {list(stride)} and "
                              f"offset {off} reaches element {last} of a storage of "
                              f"{base.size} elements; the file is corrupt")
            a = np.ndarray(size, dt, buffer=base, offset=off * dt.itemsize,
                           strides=tuple(s * dt.itemsize for s in stride))
        if spec.requires_grad and dt not in D.INEXACT:
            raise Corrupt(f"a tensor of dtype {D.FROM_NP[dt]} requires gradients; only "
                          f"floating point and complex tensors can")
        if spec.cls is None:
            out = Tensor._make(a)
        else:
            out = object.__new__(spec.cls.obj)
            Tensor.__init__(out)
            out._data = a
        if spec.requires_grad:
            out.requires_grad_(True)
        return self.attributes(out, spec)

    def attributes(self, t, spec):
        """``t`` with the Python attributes its pickle set on it."""
        for k, v in (spec.state or {}).items():
            t.__dict__[k] = self.build(v)
        return t


def _build(obj, storage, full=False, allowed=None):
    try:
        return _Builder(storage, full, allowed).build(obj)
    except RecursionError:
        raise Corrupt("the pickle is nested too deeply") from None
    except TypeError as e:    # e.g. a dict key that turned into an unhashable object
        raise Corrupt(f"the pickle is corrupt ({e})") from None


def _array_from(data, dtype, little: bool) -> np.ndarray:
    """A writable 1-D array of ``dtype`` from raw bytes (byte-swapped if big-endian)."""
    a = np.frombuffer(data, dtype.np.newbyteorder("<" if little else ">")).astype(dtype.np)
    return _clean_bool(a)


def _clean_bool(a):
    if a.dtype == np.bool_:
        u = a.view(np.uint8)
        u[u > 1] = 1     # a bool byte other than 0 or 1 is True, as PyTorch reads it
    return a


# --- the zip format ---------------------------------------------------------------------
def _check_local_headers(buf, z):
    """zipfile reads the central directory; check each local header agrees with it."""
    for info in z.infolist():
        off = info.header_offset
        hdr = bytes(buf[off:off + 30])
        if len(hdr) < 30 or hdr[:4] != b"PK\x03\x04":
            raise Corrupt(f"record {info.filename!r} has no local header; the zip archive is "
                          f"truncated or corrupt")
        _, _, flag, method, _, _, crc, csize, usize, _, _ = struct.unpack("<4sHHHHHIIIHH", hdr)
        if method != info.compress_type or flag & 1:
            raise Corrupt(f"record {info.filename!r}: its local header disagrees with the "
                          f"central directory (compression); the zip archive is corrupt")
        if flag & 8 and crc == csize == usize == 0:
            continue     # sizes and CRC in a data descriptor
        if crc != info.CRC or (csize != 0xFFFFFFFF and csize != info.compress_size) \
                or (usize != 0xFFFFFFFF and usize != info.file_size):
            raise Corrupt(f"record {info.filename!r}: its local header disagrees with the "
                          f"central directory (CRC or size); the zip archive is corrupt")


def read_zip(buf, map_location, full=False, allowed=None):
    """The object in a zip checkpoint; ``full`` for ``weights_only=False``, ``allowed`` the
    user's allowlist ({name: object})."""
    try:
        return _read_zip(buf, map_location, full, allowed)
    except (Corrupt, Unsafe, FullLoadRefused, LocationError, MapLocationError):
        raise
    except RecursionError:
        raise Corrupt("the archive is nested too deeply") from None
    except MemoryError:
        raise Corrupt("the zip archive asks for more memory than there is; corrupt") from None
    except Exception as e:   # BadZipFile, EOFError, struct.error, OSError, ValueError ...
        raise Corrupt(f"the zip archive is truncated or corrupt ({type(e).__name__}: "
                      f"{e})") from None


def _read_zip(buf, map_location, full, allowed):
    try:
        z = zipfile.ZipFile(io.BytesIO(buf))
    except zipfile.BadZipFile as e:
        raise Corrupt(f"the zip archive is truncated or corrupt ({e})") from None
    infos = z.infolist()
    if not infos:
        raise Corrupt("the zip archive is empty; not a PyTorch checkpoint")
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        raise Corrupt("the zip archive holds a record twice; it is corrupt")
    prefix = names[0].split("/", 1)[0] + "/"
    if "/" not in names[0] or not all(n.startswith(prefix) for n in names):
        raise Corrupt("the zip archive's records are not all in one folder, as torch.save "
                      "writes them; not a PyTorch checkpoint")
    for i in infos:
        if i.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) or (
                i.compress_type == zipfile.ZIP_DEFLATED
                and i.file_size > 1100 * i.compress_size + 1024):
            raise Corrupt(f"record {i.filename!r} has an unsupported compression; the file is "
                          f"corrupt or not a PyTorch checkpoint")
    _check_local_headers(buf, z)
    if prefix + "data.pkl" not in z.NameToInfo:
        raise Corrupt(f"the zip archive has no {prefix}data.pkl record; not a PyTorch "
                      f"checkpoint")
    for rec in ("version", ".format_version", ".storage_alignment"):   # small, CRC-checked
        if prefix + rec in z.NameToInfo:
            text = z.read(prefix + rec)
            if not (0 < len(text) <= 20 and text.strip().isdigit()):
                raise Corrupt(f"the {rec} record is {text[:20]!r}, not a number; the file is "
                              f"corrupt")
    little = True
    if prefix + "byteorder" in z.NameToInfo:
        order = z.read(prefix + "byteorder")
        if order not in (b"little", b"big"):
            raise Corrupt(f"the byteorder record is {order[:20]!r}, not little or big")
        little = order == b"little"
    storages: dict = {}
    obj = _unpickle(io.BytesIO(z.read(prefix + "data.pkl")), storages=storages, full=full,
                    allowed=allowed)
    loaded: dict = {}

    def storage(ref):
        a = loaded.get(ref.key)
        if a is not None:
            return a
        info = z.NameToInfo.get(f"{prefix}data/{ref.key}")
        if info is None:
            raise Corrupt(f"storage {ref.key!r} has no record {prefix}data/{ref.key}; the "
                          f"file is truncated or corrupt")
        nbytes = ref.numel * ref.dtype.itemsize
        if info.file_size != nbytes:
            raise Corrupt(f"storage {ref.key!r} of {ref.numel} {ref.dtype} elements needs "
                          f"{nbytes} bytes but its record has {info.file_size}; the file is "
                          f"corrupt")
        _restore_location(ref, map_location)
        a = np.empty(ref.numel, ref.dtype.np)
        if nbytes:
            with z.open(info) as fh:
                got = fh.readinto(a.view(np.uint8))
            if got != nbytes:
                raise Corrupt(f"storage {ref.key!r} is truncated")
        if not little:
            a.byteswap(inplace=True)
        loaded[ref.key] = a = _clean_bool(a)
        return a

    return _build(obj, storage, full, allowed)


def globals_in_zip(buf) -> set:
    """The full names of the GLOBALs in a zip checkpoint's pickle, read statically."""
    try:
        z = zipfile.ZipFile(io.BytesIO(buf))
        pkl = next((n for n in z.namelist() if n.endswith("/data.pkl")
                    and n.count("/") == 1), None)
        if pkl is None:
            raise Corrupt("the zip archive has no data.pkl record; not a PyTorch checkpoint")
        found = set()
        for op, arg, _ in pickletools.genops(z.read(pkl)):
            if op.name in ("GLOBAL", "INST"):
                module, name = arg.split(" ", 1)
                if (module, name) in _compat_pickle.NAME_MAPPING:
                    module, name = _compat_pickle.NAME_MAPPING[(module, name)]
                elif module in _compat_pickle.IMPORT_MAPPING:
                    module = _compat_pickle.IMPORT_MAPPING[module]
                found.add(f"{module}.{name}")
        return found
    except Corrupt:
        raise
    except Exception as e:   # BadZipFile, a truncated pickle ...
        raise Corrupt(f"the checkpoint is truncated or corrupt ({type(e).__name__}: "
                      f"{e})") from None


def default_global_names() -> set:
    return set(_GLOBALS)


# --- the legacy format -------------------------------------------------------------------
def read_legacy(buf, map_location, full=False, allowed=None):
    try:
        return _read_legacy(buf, map_location, full, allowed)
    except (Corrupt, Unsafe, FullLoadRefused, LocationError, MapLocationError):
        raise
    except Exception as e:
        raise Corrupt(f"the legacy checkpoint is truncated or corrupt ({type(e).__name__}: "
                      f"{e})") from None


def _read_legacy(buf, map_location, full, allowed):
    f = io.BytesIO(buf)
    magic = _unpickle(f)
    if type(magic) is not int or magic != MAGIC_NUMBER:
        raise Corrupt("Invalid magic number; corrupt file? It is a pickle, but not a PyTorch "
                      "checkpoint (neither torch.save's zip archive nor its legacy format)")
    if _unpickle(f) != PROTOCOL_VERSION:
        raise Corrupt("Invalid protocol version in a legacy PyTorch checkpoint")
    info = _unpickle(f)
    little = info.get("little_endian", True) if type(info) is dict else None
    if type(little) is not bool:
        raise Corrupt("the legacy checkpoint's system information is malformed")
    storages: dict = {}
    obj = _unpickle(f, legacy=True, storages=storages, full=full, allowed=allowed)
    keys = _unpickle(f)
    if type(keys) is not list or not all(type(k) is str for k in keys) \
            or len(set(keys)) != len(keys):
        raise Corrupt("the legacy checkpoint's list of storage keys is malformed")
    arrays = {}
    for key in keys:
        ref = storages.get(key)
        if ref is None:
            raise Corrupt(f"the legacy checkpoint lists storage {key!r}, which its pickle "
                          f"never uses")
        head = f.read(8)
        if len(head) != 8:
            raise Corrupt(f"storage {key!r} is missing: the file is truncated")
        numel = int.from_bytes(head, "little" if little else "big", signed=True)
        if numel != ref.numel:
            raise Corrupt(f"storage {key!r} holds {numel} elements but the pickle says "
                          f"{ref.numel}; the file is corrupt")
        data = f.read(numel * ref.dtype.itemsize)
        if len(data) != numel * ref.dtype.itemsize:
            raise Corrupt(f"storage {key!r} is truncated")
        _restore_location(ref, map_location)
        arrays[key] = _array_from(data, ref.dtype, little)
    if f.read(1):
        raise Corrupt("the legacy checkpoint has trailing bytes; it is corrupt")

    def storage(ref):
        a = arrays.get(ref.key)
        if a is None:
            raise Corrupt(f"storage {ref.key!r} is not in the file; it is truncated or corrupt")
        return a

    return _build(obj, storage, full, allowed)


# --- writing -------------------------------------------------------------------------------
def _contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


class _Storage:
    __slots__ = ("key", "dtype", "flat")

    def __init__(self, key, dtype, flat):
        self.key, self.dtype, self.flat = key, dtype, flat


def _plan_storages(tensors):
    """{id(tensor): (_Storage, offset, stride)} and the storages in order.  Tensors viewing
    one array share one storage (the span of memory they cover); any other tensor gets a
    C-ordered copy of its own."""
    plan, storages, groups = {}, [], OrderedDict()

    def own(t, a):
        if not a.dtype.isnative:
            a = a.astype(a.dtype.newbyteorder("="))
        s = _Storage(str(len(storages)), D.FROM_NP[a.dtype], np.ascontiguousarray(a).reshape(-1))
        storages.append(s)
        plan[id(t)] = (s, 0, _contiguous_strides(a.shape))

    for t in tensors:
        a = t._data
        isz = a.itemsize
        if a.size == 0 or not a.dtype.isnative or any(
                n > 1 and (st < 0 or st % isz) for n, st in zip(a.shape, a.strides)):
            own(t, a)
            continue
        root = a
        while isinstance(root.base, np.ndarray):
            root = root.base
        groups.setdefault((id(root), a.dtype.str), []).append(t)
    for members in groups.values():
        arrays = [m._data for m in members]
        isz = arrays[0].itemsize
        ptrs = [x.__array_interface__["data"][0] for x in arrays]
        lo = min(ptrs)
        hi = max(p + isz + sum((n - 1) * st for n, st in zip(x.shape, x.strides))
                 for p, x in zip(ptrs, arrays))
        span = (hi - lo) // isz
        if len(members) == 1 and (not arrays[0].flags.c_contiguous or span != arrays[0].size):
            own(members[0], arrays[0])
            continue
        if any((p - lo) % isz for p in ptrs):
            for m in members:
                own(m, m._data)
            continue
        first = arrays[ptrs.index(lo)]
        flat = np.lib.stride_tricks.as_strided(first, shape=(span,), strides=(isz,),
                                               writeable=False)
        s = _Storage(str(len(storages)), D.FROM_NP[first.dtype], flat)
        storages.append(s)
        for m, p, x in zip(members, ptrs, arrays):
            cont = _contiguous_strides(x.shape)
            stride = tuple(st // isz if n > 1 else c
                           for n, st, c in zip(x.shape, x.strides, cont))
            plan[id(m)] = (s, (p - lo) // isz, stride)
    return plan, storages


_BATCH = 1000


class _Pickler:
    """Writes protocol-2 pickle opcodes for the objects ``save`` accepts; tensors become
    ``_rebuild_tensor_v2`` calls over persistent storage ids, as ``torch.save`` writes them."""

    def __init__(self, legacy=False):
        self.out = bytearray(b"\x80\x02")
        self.memo: dict = {}
        self.busy: set = set()
        self.legacy = legacy
        self.plan: dict = {}
        self.arrays: dict = {}

    # -- opcodes
    def _put(self, key):
        n = len(self.memo)
        self.memo[key] = n
        self.out += b"q" + bytes([n]) if n < 256 else b"r" + struct.pack("<I", n)

    def _get(self, key) -> bool:
        n = self.memo.get(key)
        if n is None:
            return False
        self.out += b"h" + bytes([n]) if n < 256 else b"j" + struct.pack("<I", n)
        return True

    def _global(self, module, name):
        if not self._get(("g", module, name)):
            self.out += f"c{module}\n{name}\n".encode()
            self._put(("g", module, name))

    def _int(self, v):
        if 0 <= v < 256:
            self.out += b"K" + bytes([v])
        elif 0 <= v < 65536:
            self.out += b"M" + struct.pack("<H", v)
        elif -2 ** 31 <= v < 2 ** 31:
            self.out += b"J" + struct.pack("<i", v)
        else:
            b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
            self.out += (b"\x8a" + bytes([len(b)]) if len(b) < 256
                         else b"\x8b" + struct.pack("<i", len(b))) + b

    def _str(self, s):
        b = s.encode("utf-8", "surrogatepass")
        self.out += b"X" + struct.pack("<I", len(b)) + b

    def _tuple(self, items, path):
        if not items:
            self.out += b")"
            return
        if len(items) > 3:
            self.out += b"("
        for i, v in enumerate(items):
            self.save(v, f"{path}[{i}]")
        self.out += b"t" if len(items) > 3 else b"\x85\x86\x87"[len(items) - 1:len(items)]

    def _call(self, module, name, args, path):
        self._global(module, name)
        self._tuple(args, path)
        self.out += b"R"

    # -- objects
    def save(self, x, path="obj"):
        t = type(x)
        if x is None:
            self.out += b"N"
        elif t is bool:
            self.out += b"\x88" if x else b"\x89"
        elif t is int:
            self._int(x)
        elif t is float:
            self.out += b"G" + struct.pack(">d", x)
        elif t is str:
            self._str(x)
        elif isinstance(x, Tensor):
            if not self._plain_tensor(x):
                raise _NeedsPickle   # a subclass, or attributes set on it
            self._tensor(x)
        elif isinstance(x, (np.bool_, np.integer, np.floating, np.complexfloating)):
            self.save(x.item(), path)
        elif self._get(id(x)):
            pass
        elif isinstance(x, D.dtype):
            self._global("torch", x.name)
        elif isinstance(x, Size):
            self._call("torch", "Size", (tuple(int(s) for s in x),), path)
        elif isinstance(x, _device):
            self._call("torch", "device", (str(x),), path)
        elif isinstance(x, complex):
            self._call("builtins", "complex", (x.real, x.imag), path)
        elif isinstance(x, (bytes, bytearray)):
            self._call("_codecs" if isinstance(x, bytes) else "builtins",
                       "encode" if isinstance(x, bytes) else "bytearray",
                       (bytes(x).decode("latin-1"), "latin1"), path)
        elif isinstance(x, np.ndarray):
            self._tensor(self.arrays[id(x)])
        elif isinstance(x, dict):
            self._dict(x, path)
        elif isinstance(x, list):
            self.out += b"]"
            self._put(id(x))
            for i in range(0, len(x), _BATCH):
                self.out += b"("
                for j, v in enumerate(x[i:i + _BATCH]):
                    self.save(v, f"{path}[{i + j}]")
                self.out += b"e"
        elif isinstance(x, (tuple, set, frozenset)):
            if id(x) in self.busy:
                raise ValueError(f"dyngrad.save cannot store a tuple or set that contains "
                                 f"itself (at {path})")
            self.busy.add(id(x))
            if isinstance(x, tuple):
                self._tuple(tuple(x), path)
            else:
                self._call("builtins", "set", (list(x),), path)
            self.busy.discard(id(x))
            self._put(id(x))
        else:
            raise _NeedsPickle   # any other object: the whole object goes through pickle

    def _dict(self, x, path):
        if isinstance(x, OrderedDict):
            self._global("collections", "OrderedDict")
            self.out += b")R"
        else:
            self.out += b"}"
        self._put(id(x))
        items = list(x.items())
        for i in range(0, len(items), _BATCH):
            self.out += b"("
            for k, v in items[i:i + _BATCH]:
                self.save(k, path)
                self.save(v, f"{path}[{k!r}]")
            self.out += b"u"
        meta = getattr(x, "_metadata", None) if isinstance(x, OrderedDict) else None
        if isinstance(meta, dict):
            self.out += b"}"
            self._str("_metadata")
            self.save(meta, f"{path}._metadata")
            self.out += b"sb"

    @staticmethod
    def _plain_tensor(t) -> bool:
        from ._tensor import _user_state
        from .nn.parameter import Parameter
        return type(t) in (Tensor, Parameter) and not _user_state(t)

    def _tensor(self, t):
        from .nn.parameter import Parameter
        if self._get(id(t)):
            return
        param = isinstance(t, Parameter)
        if param:
            self._global("torch._utils", "_rebuild_parameter")
            self.out += b"("
        st, off, stride = self.plan[id(t)]
        self._global("torch._utils", "_rebuild_tensor_v2")
        self.out += b"(("
        self._str("storage")
        self._global("torch", STORAGE_NAMES[st.dtype])
        self._str(st.key)
        self._str("cpu")
        self._int(st.flat.size)
        if self.legacy:
            self.out += b"N"
        self.out += b"tQ"
        self._int(off)
        self._tuple(tuple(int(s) for s in t._data.shape), "size")
        self._tuple(stride, "stride")
        rg = bool(t._requires_grad)
        self.out += b"\x89" if param or not rg else b"\x88"
        self._global("collections", "OrderedDict")
        self.out += b")Rt"   # no backward hooks
        self.out += b"R"
        if param:
            self.out += b"\x88" if rg else b"\x89"
            self._global("collections", "OrderedDict")
            self.out += b")Rt"
            self.out += b"R"
        self._put(id(t))


def _collect(obj):
    """Every tensor reachable from ``obj``, once each in order; NumPy arrays are wrapped in
    tensors (one per array object), returned in ``arrays`` by the array's id."""
    seen, tensors, arrays, stack = set(), [], {}, [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, np.ndarray) and id(x) not in arrays:
            x = arrays[id(x)] = Tensor._make(x)
        if isinstance(x, Tensor):
            if id(x) not in seen:
                seen.add(id(x))
                tensors.append(x)
        elif isinstance(x, (dict, list, tuple, set, frozenset)) and not isinstance(x, Size):
            if id(x) in seen:
                continue
            seen.add(id(x))
            items = [v for kv in x.items() for v in kv] if isinstance(x, dict) else list(x)
            meta = getattr(x, "_metadata", None) if isinstance(x, OrderedDict) else None
            if isinstance(meta, dict):
                items.append(meta)
            stack.extend(reversed(items))
    return tensors, arrays


class _NeedsPickle(Exception):
    """``obj`` holds an object ``_Pickler`` does not write: ``_FullPickler`` writes it all."""


def dumps(obj, legacy=False):
    """(data.pkl bytes, storages) of ``obj``: tensors, containers, numbers and strings are
    written opcode by opcode; anything else (a whole module, a user's class) goes through
    ``_FullPickler``."""
    p = _Pickler(legacy)
    tensors, p.arrays = _collect(obj)
    p.plan, storages = _plan_storages(tensors)
    try:
        p.save(obj)
    except _NeedsPickle:
        p = None
    if p is None:
        return _FullPickler.dumps(obj, legacy)
    p.out += b"."
    return bytes(p.out), storages


class _G:
    """A global written by name (``module.name``), never imported: PyTorch's rebuild
    functions, storage types and dtypes."""
    __slots__ = ("module", "name")
    _cache: dict = {}

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):     # pickle's save_reduce checks the function is callable
        raise TypeError(f"{self.module}.{self.name} is PyTorch's, named in a pickle only")

    @classmethod
    def of(cls, module, name):
        g = cls._cache.get((module, name))
        if g is None:
            g = cls._cache[(module, name)] = cls(module, name)
        return g


class _FullPickler(pickle._Pickler):
    """Protocol-2 pickle of any picklable object, as ``torch.save`` writes it: tensors are
    ``torch._utils._rebuild_tensor_v2`` calls over persistent storage ids (the whole memory
    the tensor views, as PyTorch saves a whole storage), parameters
    ``torch._utils._rebuild_parameter`` calls, dtypes ``torch.<name>``, ``torch.Size`` and
    ``torch.device`` calls; everything else as pickle writes it (a module by its class,
    NEWOBJ, and its ``__dict__``; NumPy arrays as NumPy pickles them, as in PyTorch)."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, legacy):
        super().__init__(file, protocol=2)
        self.legacy = legacy
        self.storages: list = []
        self.by_root: dict = {}
        self.keep: list = []

    @classmethod
    def dumps(cls, obj, legacy):
        bio = io.BytesIO()
        p = cls(bio, legacy)
        try:
            p.dump(obj)
        except pickle.PicklingError as e:
            raise SaveError(str(e)) from None
        return bio.getvalue(), p.storages

    def save_g(self, g):
        self.write(f"c{g.module}\n{g.name}\n".encode())
        self.memoize(g)
    dispatch[_G] = save_g

    def persistent_id(self, obj):
        if type(obj) is _Storage:
            pid = ("storage", _G.of("torch", STORAGE_NAMES[obj.dtype]), obj.key, "cpu",
                   obj.flat.size)
            return pid + (None,) if self.legacy else pid
        return None

    def _storage(self, a):
        """(storage, offset, stride) of the array ``a``: the memory it views."""
        from ._tensor import _storage_layout
        root, offset, strides = _storage_layout(a)
        dt = a.dtype
        if not dt.isnative or root.nbytes % dt.itemsize or not root.flags.c_contiguous \
                or any(n > 1 and st < 0 for n, st in zip(a.shape, strides)):
            root, offset = np.ascontiguousarray(a.astype(dt.newbyteorder("="))), 0
            strides = _contiguous_strides(a.shape)
            dt = root.dtype
        key = (id(root), dt.str)
        st = self.by_root.get(key)
        if st is None:
            flat = root.reshape(-1).view(np.uint8).view(dt) if root.nbytes else \
                np.empty(0, dt)
            st = self.by_root[key] = _Storage(str(len(self.storages)), D.FROM_NP[dt], flat)
            self.storages.append(st)
            self.keep.append(root)
        return st, offset, strides

    def _tensor_args(self, a, rg):
        st, offset, strides = self._storage(a)
        return (st, offset, tuple(int(n) for n in a.shape), tuple(strides), bool(rg),
                OrderedDict())

    def reducer_override(self, obj):
        from ._tensor import _user_state
        from .nn.parameter import Parameter, UninitializedTensorMixin
        if isinstance(obj, UninitializedTensorMixin):  # no data yet: PyTorch's class and flag
            return (_G.of("torch.nn.parameter", type(obj).__name__),
                    (bool(obj._requires_grad),))
        if isinstance(obj, Tensor):
            args = self._tensor_args(obj._data, obj._requires_grad and
                                     not isinstance(obj, Parameter))
            state = _user_state(obj)
            if isinstance(obj, Parameter):   # as PyTorch: a Parameter, whatever the subclass
                if state:
                    return (_G.of("torch._utils", "_rebuild_parameter_with_state"),
                            (_PlainTensor(args), bool(obj._requires_grad), OrderedDict(),
                             state))
                return (_G.of("torch._utils", "_rebuild_parameter"),
                        (_PlainTensor(args), bool(obj._requires_grad), OrderedDict()))
            if type(obj) is not Tensor or state:   # PyTorch's rebuild of a subclass
                cls = _G.of("torch", "Tensor") if type(obj) is Tensor else type(obj)
                return (_G.of("torch._tensor", "_rebuild_from_type_v2"),
                        (_G.of("torch._utils", "_rebuild_tensor_v2"), cls, args, state))
            return (_G.of("torch._utils", "_rebuild_tensor_v2"), args)
        if type(obj) is _PlainTensor:
            return (_G.of("torch._utils", "_rebuild_tensor_v2"), obj.args)
        if isinstance(obj, D.dtype):
            return obj.name      # a global name: save_global below writes torch.<name>
        if isinstance(obj, Size):
            return (_G.of("torch", "Size"), (tuple(int(s) for s in obj),))
        if isinstance(obj, _device):
            return (_G.of("torch", "device"), (str(obj),))
        return NotImplemented

    def save_global(self, obj, name=None):
        if isinstance(obj, D.dtype):
            self.save_g(_G.of("torch", obj.name))
            return
        super().save_global(obj, name)


class _PlainTensor:
    """The tensor inside a pickled Parameter (its ``_rebuild_tensor_v2`` arguments)."""
    __slots__ = ("args",)

    def __init__(self, args):
        self.args = args


def _aligned_zip(records):
    """A zip archive of ``records`` [(name, bytes-like)], stored (uncompressed) with each
    record's data at a multiple of 64 bytes, as torch.save writes it (the padding is an
    extra field of the local header)."""
    bio = io.BytesIO()
    with zipfile.ZipFile(bio, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, data in records:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            size = len(data)
            zip64 = size * 1.05 > zipfile.ZIP64_LIMIT
            start = bio.tell() + 30 + len(name.encode()) + 4 + (20 if zip64 else 0)
            pad = -start % 64
            info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
            z.writestr(info, data)
    return bio.getbuffer()      # no copy: the archive is written out from this buffer


def write_zip(obj):
    pkl, storages = dumps(obj)
    records = [("archive/data.pkl", pkl), ("archive/.format_version", b"1"),
               ("archive/.storage_alignment", b"64"),
               ("archive/byteorder", sys.byteorder.encode())]
    records += [(f"archive/data/{s.key}", memoryview(s.flat.view(np.uint8)))
                for s in storages]
    records.append(("archive/version", b"3\n"))
    return _aligned_zip(records)


def write_legacy(obj) -> bytes:
    pkl, storages = dumps(obj, legacy=True)
    out = [pickle.dumps(MAGIC_NUMBER, 2), pickle.dumps(PROTOCOL_VERSION, 2),
           pickle.dumps({"protocol_version": PROTOCOL_VERSION,
                         "little_endian": sys.byteorder == "little",
                         "type_sizes": {"short": 2, "int": 4, "long": 4}}, 2),
           pkl, pickle.dumps([s.key for s in storages], 2)]
    for s in storages:
        out.append(struct.pack("=q", s.flat.size))
        out.append(s.flat.tobytes())
    return b"".join(out)
