"""``nn.Module``: registration of parameters, buffers and submodules by attribute
assignment, traversal with PyTorch's names and order, state dicts, hooks and repr."""
from __future__ import annotations

import functools
import itertools
from collections import OrderedDict, namedtuple

from ..._tensor import Tensor
from ..._dtype import FROM_NP, bfloat16 as _bfloat16
from ...autograd.node import AccumulateGrad
from ..parameter import Parameter


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _Handle:
    _ids = itertools.count()

    def __init__(self, d):
        self.d = d
        self.id = next(_Handle._ids)

    def remove(self):
        self.d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * n + line for line in lines)


class Module:
    """Base class of all layers and models.

    Assigning a ``Parameter``, a ``Module`` or (via ``register_buffer``) a buffer to an
    attribute registers it, so ``parameters()``, ``state_dict()`` and ``to()`` find it.
    """

    training: bool
    dump_patches = False
    _version = 1
    call_super_init = False

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = {}
        d["_forward_hooks_always_called"] = {}
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = {}
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    forward: callable

    def forward(self, *input):  # noqa: F811
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  f'"forward" function')

    # -- registration ------------------------------------------------------------------
    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, keep="_parameters")
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                from ..._tensor import typename
                raise TypeError(f"cannot assign '{typename(value)}' as parameter '{name}' "
                                f"(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        mods = d.get("_modules")
        if isinstance(value, Module):
            if mods is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, keep="_modules")
            mods[name] = value
            return
        if mods is not None and name in mods:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                f"(torch.nn.Module or None expected)")
            mods[name] = value
            return
        bufs = d.get("_buffers")
        if bufs is not None and isinstance(value, Tensor) and value.__dict__.get("_is_buffer"):
            # an nn.Buffer (or UninitializedBuffer) registers itself, with its persistence
            self._remove_from(name, keep="_buffers")
            self.register_buffer(name, value, value.__dict__.get("persistent", True))
            return
        if bufs is not None and name in bufs:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                f"(torch.Tensor or None expected)")
            bufs[name] = value
            return
        object.__setattr__(self, name, value)

    def _remove_from(self, name, keep):
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            if k != keep and name in d.get(k, {}):
                del d[k][name]
        d.pop(name, None)
        if keep != "_buffers":
            d.get("_non_persistent_buffers_set", set()).discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            store = d.get(k)
            if store is not None and name in store:
                return store[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            if name in d.get(k, {}):
                del d[k][name]
                d["_non_persistent_buffers_set"].discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self))
        for k in ("_parameters", "_buffers", "_modules"):
            keys += list(self.__dict__.get(k, {}).keys())
        return sorted(set(k for k in keys if not k[0].isdigit()))

    def register_parameter(self, name: str, param) -> None:
        """Register ``param`` (a Parameter or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if name not in self._parameters and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            from ..._tensor import typename
            raise TypeError(f"cannot assign '{typename(param)}' object to parameter '{name}' "
                            f"(torch.nn.Parameter or None required)")
        if param is not None and param._grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Register a tensor that is state but not a parameter (e.g. running statistics)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if name not in self._buffers and hasattr(self, name):
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"(torch Tensor or None required)")
        self._remove_from(name, keep="_buffers")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module) -> None:
        """Register ``module`` as a child called ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at the dotted path ``target`` (its parent must exist; with
        ``strict``, so must the attribute it replaces)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        atoms = target.split(".")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent = self if len(atoms) == 1 else self.get_submodule(".".join(atoms[:-1]))
        if strict and not hasattr(parent, atoms[-1]):
            raise AttributeError(parent._get_name() + " has no attribute `" + atoms[-1] + "`")
        if hasattr(parent, atoms[-1]) and not isinstance(getattr(parent, atoms[-1]), Module):
            raise AttributeError("`" + atoms[-1] + "` is not an nn.Module")
        setattr(parent, atoms[-1], module)

    def get_buffer(self, target: str):
        """The buffer at the dotted path ``target``."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return mod._buffers[name]

    def get_parameter(self, target: str):
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return mod._parameters[name]

    # -- traversal -----------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Every module in the tree (self first), depth first, with dotted names."""
        if memo is None:
            memo = set()
        stack = [(prefix, self)]
        while stack:
            pre, mod = stack.pop()
            if remove_duplicate:
                if id(mod) in memo:
                    continue
                memo.add(id(mod))
            yield pre, mod
            children = [(pre + ("." if pre else "") + n, m) for n, m in mod._modules.items()
                        if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for n, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield n, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, get, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for pre, mod in mods:
            for k, v in get(mod):
                if v is None:
                    continue
                if remove_duplicate:
                    if id(v) in seen:
                        continue
                    seen.add(id(v))
                yield pre + ("." if pre else "") + k, v

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(name, parameter)`` pairs, e.g. ``fc.1.weight``, in registration order."""
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # -- modes and grads -----------------------------------------------------------------
    def train(self, mode: bool = True):
        """Set training mode (dropout active, batch-norm statistics updated) recursively."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self):
        """Set evaluation mode recursively (same as ``train(False)``)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None by default)."""
        for p in self.parameters():
            if p._grad is None:
                continue
            if set_to_none:
                p._grad = None
            else:
                g = p._grad
                if g._grad_fn is not None:
                    p._grad = g.detach()
                    g = p._grad
                g._data[...] = 0
                g._vc[0] += 1

    def apply(self, fn):
        """Call ``fn`` on every submodule (children first) and on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def _apply_tensors(self, fn):
        from ...autograd.grad_mode import no_grad
        for m in self.modules():
            for k, p in m._parameters.items():
                if p is None:
                    continue
                with no_grad():  # a conversion, not an op of the parameter's history
                    new = fn(p)
                if new is not p:
                    p._data = new._data
                    acc = AccumulateGrad.live(p)
                    if acc is not None:  # gradients now arrive in the new dtype
                        acc._odt = p._data.dtype
                    if p._grad is not None:
                        with no_grad():
                            p._grad._data = fn(p._grad)._data
            for k, b in m._buffers.items():
                if b is not None:
                    m._buffers[k] = fn(b)
        return self

    def to(self, *args, **kwargs):
        """Convert parameters and buffers (floating ones only for a dtype); returns self."""
        from ..._dtype import to_dtype, dtype as DT
        dt = kwargs.get("dtype")
        for a in args:
            if isinstance(a, DT):
                dt = a
            elif isinstance(a, Tensor):
                dt = a.dtype
        from ..._tensor import _check_device
        dev = kwargs.get("device")
        for a in args:
            if isinstance(a, str) or type(a).__name__ == "device":
                dev = a
        _check_device(dev)
        if dt is None:
            return self
        dt = to_dtype(dt)
        if not (dt.is_floating_point or dt.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dt}")
        if dt.is_complex:
            from ... import _warn
            _warn.warn("Complex modules are a new feature under active development whose design "
                       "may change, and some modules might not work as expected when using "
                       "complex tensors as parameters or buffers. Please file an issue at "
                       "https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml "
                       "if a complex module does not work as expected.", UserWarning)
        return self._apply_tensors(
            lambda t: t.to(dt) if t.is_floating_point() or t.is_complex() else t)

    def float(self):
        return self.to(FROM_NP[__import__("numpy").dtype("float32")])

    def double(self):
        return self.to(FROM_NP[__import__("numpy").dtype("float64")])

    def half(self):
        return self.to(FROM_NP[__import__("numpy").dtype("float16")])

    def bfloat16(self):
        return self.to(_bfloat16)

    def type(self, dst_type):
        """Cast every parameter and buffer (integer ones too) to ``dst_type``."""
        return self._apply_tensors(lambda t: t.type(dst_type))

    def cpu(self):
        return self

    def cuda(self, device=None):
        raise AssertionError("Torch not compiled with CUDA enabled")

    def share_memory(self):
        """Move parameters, their gradients and buffers into shared memory (in place)."""
        for t in list(self.parameters()) + list(self.buffers()):
            t.share_memory_()
            if t._grad is not None:
                t._grad.share_memory_()
        return self

    # -- state dict ----------------------------------------------------------------------
    def get_extra_state(self):
        """State beyond parameters and buffers that ``state_dict`` saves (as
        ``<prefix>_extra_state``) when a subclass overrides this and ``set_extra_state``."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    def set_extra_state(self, state) -> None:
        """Restore what ``get_extra_state`` returned (called by ``load_state_dict``)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be "
                           "called. Please file an issue at https://github.com/pytorch/pytorch/"
                           "issues/new?template=bug-report.yml to report this bug.")

    def _has_extra_state(self, which="get_extra_state"):
        return getattr(type(self), which) is not getattr(Module, which)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            destination[prefix + _EXTRA] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers by dotted name (detached, sharing storage)."""
        if args:
            destination = args[0] if len(args) > 0 else destination
            prefix = args[1] if len(args) > 1 else prefix
            keep_vars = args[2] if len(args) > 2 else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, local_metadata)
            if getattr(hook, "_from_public_api", False):
                if r is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif r is not None:
                destination = r
        return destination

    def _expected_state(self):
        out = OrderedDict()
        for pre, mod in self.named_modules(remove_duplicate=False):
            p = pre + "." if pre else ""
            for n, entry in mod._expected_own():
                out[p + n] = entry
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values from ``state_dict``.  On any error nothing is changed (the error names
        each offending key): without load hooks every key and shape is checked first; with
        them the model is loaded module by module in PyTorch's order (a module's pre-hooks,
        its own values, its children, its post-hooks) and put back if the load fails."""
        if not hasattr(state_dict, "keys") or not hasattr(state_dict, "__getitem__"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # the pre-hooks may change it; the caller's stays
        if metadata is not None:
            state_dict._metadata = metadata
        if any(m.__dict__.get("_load_state_dict_pre_hooks") or
               m.__dict__.get("_load_state_dict_post_hooks") for m in self.modules()):
            return self._load_with_hooks(state_dict, metadata, strict, assign)
        expected = self._expected_state()
        missing = [k for k in expected if k not in state_dict]
        unexpected = [k for k in state_dict if k not in expected
                      and not k.endswith("num_batches_tracked")]
        errors = [e for k, (_, kind, _, cur) in expected.items()
                  if k in state_dict and kind != _EXTRA
                  for e in [_entry_error(k, state_dict[k], cur)] if e]
        if errors or (strict and (missing or unexpected)):
            raise _load_error(self, strict, missing, unexpected, errors)
        self._assign_state(expected.items(), state_dict, assign)
        return _IncompatibleKeys(missing, unexpected)

    def _load_with_hooks(self, state_dict, metadata, strict, assign):
        missing, unexpected, errors = [], [], []
        keys = _IncompatibleKeys(missing, unexpected)
        undo = _snapshot(self)

        def load(mod, prefix):
            local = {} if metadata is None else metadata.get(prefix[:-1], {})
            for hook in list(mod.__dict__.get("_load_state_dict_pre_hooks", {}).values()):
                hook(state_dict, prefix, local, strict, missing, unexpected, errors)
            own = [(prefix + n, v) for n, v in mod._expected_own()]
            names = {k[len(prefix):] for k, _ in own}
            for k in state_dict:  # PyTorch's test: neither this module's nor a child's
                if k.startswith(prefix) and not k.endswith("num_batches_tracked"):
                    head = k[len(prefix):].split(".", 1)
                    if (head[0] not in mod._modules) if len(head) > 1 else (head[0] not in names):
                        unexpected.append(k)
            ok = []
            for k, v in own:
                if k not in state_dict:
                    missing.append(k)
                    continue
                e = _entry_error(k, state_dict[k], v[3]) if v[1] != _EXTRA else None
                if e:
                    errors.append(e)
                else:
                    ok.append((k, v))
            self._assign_state(ok, state_dict, assign)
            for n, child in mod._modules.items():
                if child is not None:
                    load(child, prefix + n + ".")
            for hook in list(mod.__dict__.get("_load_state_dict_post_hooks", {}).values()):
                if hook(mod, keys) is not None:
                    raise AssertionError("Hooks registered with "
                                         "``register_load_state_dict_post_hook`` are not expected "
                                         "to return new values, if incompatible_keys need to be "
                                         "modified, it should be done inplace.")
        try:
            load(self, "")
        except BaseException:
            undo()
            raise
        if errors or (strict and (missing or unexpected)):
            undo()
            raise _load_error(self, strict, missing, unexpected, errors)
        return keys

    def _expected_own(self):
        """This module's own state-dict entries: (name, (module, kind, name, tensor))."""
        for n, v in self._parameters.items():
            if v is not None:
                yield n, (self, "_parameters", n, v)
        for n, v in self._buffers.items():
            if v is not None and n not in self._non_persistent_buffers_set:
                yield n, (self, "_buffers", n, v)
        if self._has_extra_state("set_extra_state"):
            yield _EXTRA, (self, _EXTRA, _EXTRA, None)

    def _assign_state(self, entries, state_dict, assign):
        from ...autograd.grad_mode import no_grad
        with no_grad():
            for k, (mod, kind, n, cur) in entries:
                if k not in state_dict:
                    continue
                v = state_dict[k]
                if kind == _EXTRA:
                    mod.set_extra_state(v)
                elif assign:
                    if kind == "_parameters":
                        mod._parameters[n] = Parameter(v.detach(), cur.requires_grad)
                    else:
                        mod._buffers[n] = v
                else:
                    cur._data[...] = v._data.astype(cur._data.dtype, copy=False)
                    cur._vc[0] += 1

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` before this module's ``state_dict`` is made."""
        return _register(self, "_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` after this module's entries
        are in ``state_dict``; it changes the dict in place and returns None."""
        hook._from_public_api = True
        return _register(self, "_state_dict_hooks", hook)

    def _register_state_dict_hook(self, hook):
        """As ``register_state_dict_post_hook``, but a returned dict replaces the state dict."""
        return _register(self, "_state_dict_hooks", hook)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before ``load_state_dict`` loads this module."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        if with_module:
            hook = functools.partial(hook, self)
        return _register(self, "_load_state_dict_pre_hooks", hook)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` after ``load_state_dict`` has loaded this module
        and its children; it may clear the missing/unexpected key lists in place."""
        return _register(self, "_load_state_dict_post_hooks", hook)

    # -- calling and hooks ---------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if not (d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"]
                or d["_backward_pre_hooks"] or _GLOBAL_HOOKS):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        for g in list(_GLOBAL_HOOKS):
            g.enter(self)
        result = None
        called = set()  # forward hooks with always_call=True that have run
        always = self.__dict__.get("_forward_hooks_always_called") or {}
        try:
            for hid, hook in list(self._forward_pre_hooks.items()):
                if self._forward_pre_hooks_with_kwargs.get(hid):
                    r = hook(self, args, kwargs)
                    if r is not None:
                        args, kwargs = r
                else:
                    r = hook(self, args)
                    if r is not None:
                        args = r if isinstance(r, tuple) else (r,)
            bw = self._backward_hooks or self._backward_pre_hooks
            if bw:
                from .hooks import BackwardHook
                bh = BackwardHook(self, list(self._backward_hooks.values()),
                                  list(self._backward_pre_hooks.values()))
                args = bh.setup_input(args)
            result = self.forward(*args, **kwargs)
            for hid, hook in list(self._forward_hooks.items()):
                if hid in always:
                    called.add(hid)
                if self._forward_hooks_with_kwargs.get(hid):
                    r = hook(self, args, kwargs, result)
                else:
                    r = hook(self, args, result)
                if r is not None:
                    result = r
            if bw:
                result = bh.setup_output(result)
            return result
        except Exception:
            # PyTorch still runs the always_call forward hooks that have not run, with the
            # result so far; their own errors become warnings and the first error is raised
            for hid, hook in list(self._forward_hooks.items()):
                if hid not in always or hid in called:
                    continue
                try:
                    if self._forward_hooks_with_kwargs.get(hid):
                        r = hook(self, args, kwargs, result)
                    else:
                        r = hook(self, args, result)
                    if r is not None:
                        result = r
                except Exception as e:  # noqa: BLE001 - the forward's error wins
                    import warnings
                    warnings.warn("module forward hook with ``always_call=True`` raised an "
                                  f"exception that was silenced as another error was raised "
                                  f"in forward: {e}")
            raise
        finally:
            for g in list(_GLOBAL_HOOKS):
                g.exit(self)

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        h = _Handle(self._forward_pre_hooks)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[h.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output)`` (with ``with_kwargs``: ``(module, args, kwargs,
        output)``) after forward; ``always_call``: also when forward raises."""
        h = _Handle(self._forward_hooks)
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[h.id] = True
        if always_call:
            if "_forward_hooks_always_called" not in self.__dict__:  # a module from an old pickle
                self.__dict__["_forward_hooks_always_called"] = {}
            self._forward_hooks_always_called[h.id] = True
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output)`` after gradients w.r.t. the module's
        inputs are computed."""
        h = _Handle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    register_backward_hook = register_full_backward_hook

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output)`` before the module's input gradients are computed;
        it may return replacement output gradients."""
        h = _Handle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h


    # -- repr ----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """Extra text inside this module's repr parentheses (override in layers)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__.update(state)


_EXTRA = "_extra_state"


def _register(module, store, hook):
    """Add ``hook`` to the module's hook dict ``store`` (made for modules pickled before it
    existed); returns the handle that removes it."""
    d = module.__dict__.setdefault(store, OrderedDict())
    h = _Handle(d)
    d[h.id] = hook
    return h


def _load_error(module, strict, missing, unexpected, errors):
    errors = list(errors)
    if strict:
        if unexpected:
            errors.insert(0, "Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if missing:
            errors.insert(0, "Missing key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in missing) + ". ")
    return RuntimeError(f"Error(s) in loading state_dict for {type(module).__name__}:\n\t"
                        + "\n\t".join(errors) + "\nNothing was changed.")


def _entry_error(key, value, current):
    """Why ``value`` cannot be loaded into ``current`` (PyTorch's message), or None."""
    if not isinstance(value, Tensor):
        return (f'While copying the parameter named "{key}", expected torch.Tensor or '
                f'Tensor-like object from checkpoint but received {type(value)}')
    if tuple(value._data.shape) != tuple(current._data.shape):
        return (f"size mismatch for {key}: copying a param with shape {value.shape} from "
                f"checkpoint, the shape in current model is {current.shape}.")
    return None


def _snapshot(module):
    """A function putting back the module tree's current parameters, buffers and their
    values."""
    saved = []
    for _, mod in module.named_modules(remove_duplicate=False):
        for store in (mod._parameters, mod._buffers):
            for n, t in store.items():
                saved.append((store, n, t, None if t is None else
                              (t._data, t._data.copy(), t._vc[0], type(t))))

    def undo():
        for store, n, t, data in saved:
            store[n] = t
            if t is not None:  # a lazy load may have given it new data and class
                t._data = data[0]
                t._data[...] = data[1]
                t._vc[0] = data[2]
                t.__class__ = data[3]
    return undo


_GLOBAL_HOOKS: list = []
