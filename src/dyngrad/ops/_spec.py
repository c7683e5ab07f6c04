"""One declaration per op: ``defop`` turns a forward written on NumPy arrays, a backward
written once, and a few facts into the public function, the Tensor method, the recorded node
(PyTorch's name, saved values under PyTorch's names), the forward-mode rule, the in-place form,
the batching rule ``vmap`` uses, and the op's row in the registry (and so in the README's
support table).

A declaration::

    @defop("logcumsumexp", node="LogcumsumexpBackward0", saved=("self", "dim", "result"),
           promote="float", batch=batch_along("dim"))
    def logcumsumexp(self, dim):                  # arrays in, array out
        ...

    @logcumsumexp.backward
    def _(ctx, grad):                             # one formula, for arrays and Tensors
        return (...,)                             # one gradient per tensor input

    @logcumsumexp.jvp                             # optional: derived for elementwise and
    def _(ctx, tangent): ...                      # linear ops; otherwise forward mode raises

In ``backward``/``jvp``, ``ctx.<name>`` is a saved value (``self``, ``result``, ``dim``...):
arrays in a plain backward, Tensors under ``create_graph`` (so the formula, written with the
``_dual`` functions and operators, builds a differentiable graph), version-checked in
PyTorch's unpack order (names in alphabetical order; an op of two or more tensors unpacks
its result last).  ``ctx.needs(i)`` says whether input ``i`` wants a gradient.  See
docs/engine.md, "Adding an op".
"""
from __future__ import annotations

import inspect
from typing import Callable

import numpy as np

from . import OPS, op
from .._record import (RECORD_HOOKS, STATE, Node, Saved, Tensor, edge_of, edges_first, raw_dim,
                       raw_dims, sum_to)
from .. import _dtype as D
from .._fperr import quiet_off, quiet_on
from ..autograd.node import underivable
from .._tensor import _dim

_make = Tensor._make

ELEMENTWISE = "elementwise"


def batch_along(param: str) -> Callable:
    """Batching rule of an op that works along the dimension argument ``param``: with a
    leading batch axis, a non-negative dim moves one to the right (a dim not given: the
    forward's default)."""
    def rule(spec, arrays, params):
        p = dict(params)
        d = p[param] if param in p else inspect.signature(spec.forward).parameters[param].default
        nd = arrays[0].ndim - 1
        p[param] = (d + nd if d < 0 else d) + 1
        return spec.forward(*arrays, **p)
    rule.along = param
    return rule


_P = inspect.Parameter
_POS, _KW = _P.POSITIONAL_OR_KEYWORD, _P.KEYWORD_ONLY


def _n_params(fn) -> int:
    co = fn.__code__
    return co.co_argcount + co.co_kwonlyargcount + bool(co.co_flags & 4) + bool(co.co_flags & 8)


_SIGNATURES: dict = {}


class _Light(tuple):
    """One parameter of a forward as the declaration reads it at import: ``name``, ``kind``
    and ``default`` of ``inspect.Parameter``, without building one."""
    __slots__ = ()
    name = property(lambda self: self[0])
    kind = property(lambda self: self[1])
    default = property(lambda self: self[2])


class _LightSig:
    """The parameters of a forward (``.parameters``, name -> ``_Light``), read from its code
    object; what a declaration needs of a signature while the package imports."""
    __slots__ = ("parameters",)

    def __init__(self, spec):
        self.parameters = {nm: _Light(t) for t in spec for nm in (t[0],)}


class LazySignature(inspect.Signature):
    """An ``inspect.Signature`` built on first use (``inspect.signature(dyngrad.add)``, a
    binding on an error path): several hundred declarations set one at import, and building
    their Parameter objects then was a tenth of the import time."""
    __slots__ = ("_build", "_params", "_ret")

    def __init__(self, *args, _build=None, **kwargs):
        self._build = _build
        if _build is None:  # (``replace`` and pickling construct it as a Signature)
            super().__init__(*args, **kwargs)

    def _real(self):
        build, self._build = self._build, None
        real = build()
        self._params, self._ret = real._parameters, real._return_annotation

    def _get_params(self):
        if self._build is not None:
            self._real()
        return self._params

    def _set_params(self, v):
        self._params = v

    def _get_ret(self):
        if self._build is not None:
            self._real()
        return self._ret

    def _set_ret(self, v):
        self._ret = v

    _parameters = property(_get_params, _set_params)
    _return_annotation = property(_get_ret, _set_ret)


def _signatures(fn):
    """The signature of a forward (plain parameters, keyword-only ones, ``*args`` and
    ``**kwargs``), and the public function's (the first parameter named ``input``), read from
    the code object once per forward and built on first use (``LazySignature``)."""
    got = _SIGNATURES.get(fn)
    if got is None:
        spec = _params_of(fn)

        def make(first):
            ann = fn.__annotations__
            ps = [_P(first if i == 0 and first else nm, kind, default=d,
                     annotation=ann.get(nm, _P.empty)) for i, (nm, kind, d) in enumerate(spec)]
            return inspect.Signature(ps, return_annotation=ann.get("return", _P.empty),
                                     __validate_parameters__=False)

        got = _SIGNATURES[fn] = (LazySignature(_build=lambda: make(None)),
                                 LazySignature(_build=lambda: make("input")))
    return got


_PARAMS: dict = {}


def _light_sig(fn) -> _LightSig:
    """``fn``'s parameters as ``_LightSig`` (cached)."""
    got = _PARAMS.get(fn)
    if got is None:
        got = _PARAMS[fn] = _LightSig(_params_of(fn))
    return got


def _params_of(fn) -> list:
    """``[(name, kind, default)]`` of ``fn``'s parameters, read from its code object."""
    co = fn.__code__
    n, k, flags = co.co_argcount, co.co_kwonlyargcount, co.co_flags
    names = co.co_varnames
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    nd = n - len(defaults)
    po = co.co_posonlyargcount
    spec = [(names[i], _P.POSITIONAL_ONLY if i < po else _POS,
             defaults[i - nd] if i >= nd else _P.empty) for i in range(n)]
    j = n + k
    if flags & 4:  # *args
        spec.append((names[j], _P.VAR_POSITIONAL, _P.empty))
        j += 1
    spec += [(names[i], _KW, kwdefaults.get(names[i], _P.empty)) for i in range(n, n + k)]
    if flags & 8:  # **kwargs
        spec.append((names[j], _P.VAR_KEYWORD, _P.empty))
    return spec


class Ctx:
    """What a backward or forward-mode formula reads: the saved values by name."""

    __slots__ = ("_node", "_graph", "_vals", "_only")

    def __init__(self, node, graph, only=None):
        self._node = node
        self._graph = graph
        self._vals = None
        self._only = only  # the derived forward-mode rule asks for one input's term

    def __getattr__(self, name):
        vals = self._vals
        if vals is None:
            vals = self._vals = self._unpack()
        try:
            return vals[name]
        except KeyError:
            raise AttributeError(f"{type(self._node).__name__} saved no '{name}'") from None

    def _unpack(self):
        node, graph = self._node, self._graph
        saved = node._saved
        names = type(node)._spec.saved
        for pos in type(node)._spec.unpack_order:  # the first invalid one is reported
            s = saved[pos]
            if type(s) is Saved and s.tensor_ref is None and s.counter[0] != s.version:
                s.get(node, graph)
        out = {}
        for name, v in zip(names, saved):
            out[name] = v.get(node, graph) if type(v) is Saved else v
        return out

    def needs(self, i: int) -> bool:
        """Whether tensor input ``i`` wants a gradient."""
        if self._only is not None:
            return i == self._only
        return self._node.next_functions[i][0] is not None

    def op(self, name: str, *args, **kwargs):
        """Op ``name`` inside a formula: its forward on arrays in a plain backward, the
        recorded op on Tensors under ``create_graph`` (so derivatives of any order work)."""
        info = OPS[name]
        spec = info.get("spec")
        if spec is not None and not self._graph:
            return spec.forward(*args, **kwargs)
        if spec is not None and _X.TWIN_HOOK[0] is not None:
            return _X.TWIN_HOOK[0](spec.forward, info["fn"], args, kwargs)
        return info["fn"](*args, **kwargs)


class OpSpec:
    """The declaration of one op (see the module docstring)."""

    def __getattr__(self, name):
        # an op with several outputs returns PyTorch's named tuple, made on first use (a
        # named tuple class costs about 50 us to make, at import)
        if name == "return_type" and self.outputs:
            from .reduction import return_type
            self.return_type = return_type(self.name, self.outputs)
            return self.return_type
        raise AttributeError(f"'OpSpec' object has no attribute '{name}'")

    def __init__(self, name, forward, node, inputs, saved, promote, batch, linear,
                 elementwise, method, function, floating_kernel, dims, complex_kernel=None,
                 real_only=False, aliases=(), differentiable=True, complex_error=None,
                 saved_for=None, integer_kernel=None, outputs=(), broadcast=False, dim_lists=(),
                 names=None, holomorphic=True, index_args=()):
        self.name = name
        # integer/bool tensor arguments (indices, masks) the node keeps as PyTorch's
        # SavedVariable: version-checked when unpacked, freed after backward
        self.index_args = index_args
        self.broadcast = broadcast
        self.dim_lists = dim_lists
        # several outputs (values, indices): the first is ``result``, the others are returned
        # without a gradient; the public function returns them as PyTorch's named tuple
        self.outputs = tuple(outputs)
        self.extra_outputs = self.outputs[1:]
        self.integer_kernel = integer_kernel
        self.floating_kernel = floating_kernel
        self.complex_kernel = complex_kernel
        self.real_only = real_only
        self.complex_error = complex_error
        self.differentiable = differentiable
        # the dtype kinds the kernel takes as they come (others go through ``admit``)
        # (bfloat16, NumPy kind "V", goes through ``admit``: computed in float32, rounded once)
        self.kinds = "f" if complex_kernel or real_only or complex_error else "fc"
        if promote != "float" and not floating_kernel:
            self.kinds += "biu"  # integer and bool inputs are taken as they are
        if integer_kernel:
            self.kinds = "iu"  # an op of integers only (gcd)
        self.aliases = tuple(aliases)
        self.dims = dims
        self.forward = forward
        self.inputs = inputs
        self.saved = saved
        self.promote = promote
        self.batch = ELEMENTWISE if elementwise and batch is None else batch
        self.linear = linear
        self.elementwise = elementwise
        self.bw: Callable | None = None
        self.fw: Callable | None = None
        self._on_backward: list = []  # told when the backward is declared (the hot path)
        self._on_scalar: list = []  # told when a Scalar overload is declared
        # an elementwise op of two tensors and nothing else: promoted, broadcast, summed back
        self.binary = elementwise and len(inputs) == 2 and _n_params(forward) == 2
        positions = {n: i for i, n in enumerate(saved)}
        # the saved tensors of a two-input op as codes (0: first input, 1: second, 2: result)
        self.saved_inputs = tuple(2 if n == "result" else inputs.index(n) for n in saved
                                  if n == "result" or n in inputs)
        # which tensor inputs' gradients need each saved tensor (None: it is always kept)
        saved_for = saved_for or {}
        self.saved_for = tuple(saved_for.get(n) for n in saved if n == "result" or n in inputs)
        self.kept_for = dict(saved_for)  # the same, by name (an op of any number of inputs)
        # ``<input>_sym_sizes``: the shape of that input (PyTorch keeps it, not the tensor)
        self.sizes_of = {n: inputs.index(n[:-10]) for n in saved
                         if n.endswith("_sym_sizes") and n[:-10] in inputs}
        # (tensor code, kept for input 0's gradient, for input 1's) per saved tensor
        self.save_plan = tuple((k, need is None or 0 in need, need is None or 1 in need)
                               for k, need in zip(self.saved_inputs, self.saved_for))
        self.unpack_order = tuple(positions[n] for n in sorted(
            saved, key=lambda n: (len(inputs) > 1 and n == "result", n))
            if n in inputs or n == "result" or n in self.extra_outputs or n in index_args)
        # (two or more inputs: their result after them)
        self.unpack_seq = tuple((p, saved[p]) for p in self.unpack_order)
        named = {}
        for n in saved:
            kind = "tensor" if (n in inputs or n == "result" or n in self.extra_outputs or
                                n in index_args) else \
                "dim" if "dim" in n else "same"
            named[(names or {}).get(n, n)] = (positions[n], kind)
        # an op without a derivative (``differentiable=False``) records no node; one that
        # records PyTorch's NotImplemented node gives that class (see ``defop``)
        self.not_implemented = isinstance(node, type)
        self.node_cls = None if node is None else node if self.not_implemented else type(
            node, (Node,), {
                "__slots__": (), "__module__": forward.__module__, "_spec": self,
                "_named_saved": named, "_fw_rule": _node_fw, "_holomorphic": holomorphic,
                "_bw": _node_bw2 if self.binary else _node_bw_summed if broadcast else _node_bw,
                # a node that keeps no tensor has nothing to free: a second backward through
                # it runs, as PyTorch's
                "_needs_saved": any(kind == "tensor" for _, kind in named.values()),
                "__doc__": f"Backward of {name} (declared with defop)."})
        self.fn = self._public(method, function)

    # -- the declaration's decorators ---------------------------------------------------
    def backward(self, fn: Callable) -> Callable:
        """The backward formula ``fn(ctx, grad) -> gradients``."""
        self.bw = fn
        for hook in self._on_backward:
            hook()
        return fn

    def jvp(self, fn: Callable) -> Callable:
        """The forward-mode rule ``fn(ctx, *tangents) -> output tangent``."""
        self.fw = fn
        return fn

    def scalar(self, node, saved: tuple = (), first: bool = False) -> Callable:
        """Declare the overload PyTorch has for a number as the second input (``fmod(x, 2.5)``,
        its ``.Scalar`` op) of an elementwise op of two tensors, or as the first with
        ``first=True`` (``xlogy(2.0, y)``, ``.Scalar_Self``): the tensor takes the dtype PyTorch
        gives it with that number, the forward is the op's own (on the array and the number,
        in their places), and the node ``node`` keeps ``saved`` (the tensor and/or ``result``,
        and/or the number under its input's name).  Decorates the overload's backward
        ``fn(ctx, grad) -> (gradient of the tensor,)``; its forward-mode rule is derived.
        Arguments matching no overload are then refused as PyTorch refuses them ("received
        an invalid combination of arguments").  Without a backward to declare (the call
        registers the overload): ``node=None`` for an op without a derivative, or PyTorch's
        ``NotImplemented`` node class (recorded as ``defop``'s ``node`` does)."""
        def deco(fn):
            over = _ScalarOverload(self, node, tuple(saved), fn, first)
            for hook in self._on_scalar:
                hook(over)
            return fn
        if node is None or isinstance(node, type):
            deco(None)
        return deco

    def pack(self, x, res):
        """The node's saved values for input ``x`` and result ``res`` (a one-tensor op)."""
        return tuple(Saved(res, True) if n == "result" else tuple(x._data.shape)
                     if n in self.sizes_of else Saved(x) for n in self.saved)

    def admit(self, a):
        """An input array whose dtype kind is not in ``kinds``, as the kernel takes it:
        integer/bool becomes the default float (``promote="float"``), is refused with
        PyTorch's dispatch error (``floating_kernel``) or is taken as it is; complex is refused
        with the dispatch error (``complex_kernel``), PyTorch's check (``real_only``) or
        the op's own error (``complex_error``)."""
        kind = a.dtype.kind
        if self.integer_kernel:
            raise NotImplementedError(f'"{self.integer_kernel}" not implemented for '
                                      f"'{D.scalar_type_name(a.dtype)}'")
        if kind != "c":
            if a.dtype == D.BF16:  # computed in float32 (``_dtype.rounding``), as PyTorch does
                return a.astype(np.float32)
            if self.promote == "float":
                a = a.astype(D.DEFAULTS.float.np)
            elif self.floating_kernel:
                raise NotImplementedError(f'"{self.floating_kernel}" not implemented for '
                                          f"'{D.scalar_type_name(a.dtype)}'")
            return a
        if self.complex_kernel:
            raise NotImplementedError(f'"{self.complex_kernel}" not implemented for '
                                      f"'{D.scalar_type_name(a.dtype)}'")
        if self.complex_error:
            raise self.complex_error[0](self.complex_error[1])
        raise RuntimeError(f"{self.name} is not supported for complex tensors.")

    # -- the public function ---------------------------------------------------------------
    def _public(self, method, function):
        spec = self
        n_in = len(self.inputs)
        sig, public_sig = _signatures(self.forward)
        light = _light_sig(self.forward).parameters
        params = list(light)[n_in:]
        name = self.name

        if n_in == 1 and not params:
            f = self._unary_public()
        elif self.binary:
            f = self._binary_public(1)
        elif self.inputs == ("tensors",):  # a list of tensors (cat, stack): _list_public
            f = self._list_public()
        else:
            f = None

        public = ("input",) + self.inputs[1:]  # the tensor inputs' keyword names
        # how many arguments may come by position, and how many must (PyTorch's "takes from
        # 2 to 5 positional arguments" when some have defaults)
        positional = [v for v in light.values() if v.kind is _POS]
        n_pos = len(positional)
        n_req = sum(1 for v in positional if v.default is inspect.Parameter.empty)
        # for binding the other arguments without inspect (the common calls)
        pos_params = [p for p in params if light[p].kind is _POS]
        n_more, n_params, keywords = len(pos_params), len(params), frozenset(params)
        defaults = {p: light[p].default for p in params if light[p].default is not _P.empty}
        # what the node keeps, in order: (kind, name, input index, inputs whose gradient needs
        # it or None); kinds 0 the result, 1 an input, 2 an input's shape, 3 dims, 4 as given,
        # 5 an extra output (``indices``, by its index among them)
        plan = tuple(
            (0, n, None, spec.kept_for.get(n)) if n == "result" else
            (1, n, spec.inputs.index(n), spec.kept_for.get(n)) if n in spec.inputs else
            (2, n, spec.sizes_of[n], None) if n in spec.sizes_of else
            (3, n, None, None) if n in spec.dim_lists else
            (5, n, spec.extra_outputs.index(n), None) if n in spec.extra_outputs else
            (6, n, None, None) if n in spec.index_args else
            (4, n, None, None)
            for n in spec.saved)

        # the declaration's fixed facts, read as locals on every call
        outputs, differentiable, broadcast = spec.outputs, spec.differentiable, spec.broadcast
        listed = spec.inputs == ("tensors",)  # (its tensors' shapes are kept: ``ctx.shapes``)
        node_cls, state = spec.node_cls, STATE

        def record(r, tensors, raw, casts=None):
            """The op's result for the forward's result ``r`` (an array, or a tuple of them
            with ``outputs``) of ``tensors`` and the parameters ``raw`` (as given), with its
            node when an input requires grad: the general path's end, which a caller that
            checked the arguments and ran ``forward`` itself (matmul's mv) calls directly."""
            extra = ()
            if outputs:
                r, extra = r[0], tuple(_make(o) for o in r[1:])
            rg = [t._requires_grad for t in tensors]
            if not (differentiable and state.enabled and True in rg):
                return spec.return_type(_make(r), *extra) if extra else _make(r)
            if spec.bw is None:
                raise RuntimeError(f"the derivative for '{name}' is not implemented.")
            res = _make(r)
            res._requires_grad = True
            saved = []
            for kind, n, i, need in plan:
                if need is not None:
                    for j in need:
                        if rg[j]:
                            break
                    else:
                        saved.append(None)  # no input whose gradient uses it requires grad
                        continue
                if kind == 0:
                    saved.append(Saved(res, True))
                elif kind == 1:
                    saved.append(Saved(tensors[i]))
                elif kind == 2:
                    saved.append(tuple(tensors[i]._data.shape))
                elif kind == 3:  # (checked by the forward)
                    saved.append(raw_dims(raw[n]))
                elif kind == 5:
                    saved.append(Saved(extra[i]))
                elif kind == 6:
                    saved.append(saved_arg(raw[n]))
                else:
                    saved.append(raw[n])
            if broadcast or listed:  # the inputs' shapes, to sum the gradients back to
                saved += [t._data.shape for t in tensors]
            # (given the output dtype, a complex result's node gives PyTorch's conjugate
            # gradient from the formula)
            node = node_cls(tuple(map(edge_of, tensors)), tuple(saved), r.dtype)
            if casts is not None:
                node._casts = casts
            res._grad_fn = node
            if RECORD_HOOKS:
                for h in RECORD_HOOKS:
                    h(res, node)
            return spec.return_type(res, *extra) if extra else res

        self.record = record

        dim_params = tuple((pos, p) for pos, p in enumerate(params) if p in spec.dims)
        kinds, common = spec.kinds, spec.promote == "common"

        def general(*args, _p=1, **kwargs):
            if len(args) < n_in and kwargs:  # tensor inputs given by keyword
                for nm in public[len(args):]:
                    if nm not in kwargs:
                        break
                    args += (kwargs.pop(nm),)
            tensors = args[:n_in]
            for i, t in enumerate(tensors):
                if not isinstance(t, Tensor):
                    raise TypeError(f"{name}(): argument '{spec.inputs[i] if i else 'input'}' "
                                    f"(position {i + _p}) must be Tensor, not "
                                    f"{D.type_name(t)}")
            if len(tensors) < n_in:
                missing = list(public[len(tensors):]) + [
                    p for p in params if p not in kwargs and
                    sig.parameters[p].default is inspect.Parameter.empty]
                # PyTorch's wording ("1 ... arguments", "2 ... argument")
                raise TypeError(f"{name}() missing {len(missing)} required positional "
                                f"argument{'s' if len(missing) == 1 else ''}: " +
                                ", ".join(f'"{m}"' for m in missing))
            if len(args) > n_in + n_params and all(
                    v.default is inspect.Parameter.empty for v in sig.parameters.values()):
                n = n_in + n_params
                raise TypeError(f"{name}() takes {n} positional argument{'s' * (n != 1)} but "
                                f"{len(args)} were given")
            if len(args) > n_pos:
                raise TypeError(f"{name}() takes from {n_req} to {n_pos} positional arguments "
                                f"but {len(args)} were given")
            pvals = None
            given = len(args) - n_in
            if given <= n_more:
                pvals = dict(defaults)
                if given:
                    pvals.update(zip(pos_params, args[n_in:]))
                if kwargs:
                    if kwargs.keys() <= keywords and not any(k in pos_params[:given]
                                                             for k in kwargs):
                        pvals.update(kwargs)
                    else:
                        pvals = None
                if pvals is not None and len(pvals) != n_params:
                    pvals = None  # a required argument is missing: inspect says which
            if pvals is None:
                pvals = _bind(sig, params, tensors, args, kwargs, name, n_in)
            raw = pvals.copy()  # saved as given (PyTorch shows a negative dim as given)
            for pos, p in dim_params:
                v = pvals[p]
                if type(v) is not int:
                    v = raw[p] = D.int_arg(v, name, p, n_in + pos + _p if pos < given else None)
                pvals[p] = _dim(int(v), tensors[0]._data.ndim)
            arrays = [t._data for t in tensors]
            casts = None
            if common:
                arrays, casts = _to_common(tensors, arrays)
            forward = spec.forward
            for a in arrays:
                if a.dtype.kind not in kinds:  # (bfloat16's kind is never among them)
                    if any(a.dtype == D.BF16 for a in arrays):
                        forward = D.rounding(forward)
                    arrays = [a if a.dtype.kind in kinds else spec.admit(a) for a in arrays]
                    break
            tok = quiet_on()
            try:
                r = forward(*arrays, **pvals)
            except RuntimeError:
                edges_first(*tensors)  # a stale view's error comes before the op's own
                raise
            except TypeError as e:
                # the forward's "<name>(): argument '<p>' must be ..." names the position of
                # an argument given by position, as PyTorch's does (an op of one tensor shares
                # its function with the method, which may pass keywords by position: not there)
                if n_in == 1:
                    raise
                raise _positioned(e, name, params, len(args) - n_in, n_in + _p) from None
            finally:
                quiet_off(tok)
            return record(r, tensors, raw, casts)

        if f is None:
            f = _one_tensor_public(self, general, record) if n_in == 1 else general
        if f is not general:
            self._general = general  # the binary path hands it a call it cannot take
        f.__name__ = f.__qualname__ = name
        f.__module__ = self.forward.__module__
        f.__doc__ = (self.forward.__doc__ or "").strip() or (
            f"{name}; records {self.node_cls.__name__}." if self.node_cls else name)
        # (a list input keeps PyTorch's name, ``tensors``)
        f.__signature__ = sig if self.inputs == ("tensors",) else public_sig
        # an op that is neither ``dyngrad.<name>`` nor ``Tensor.<name>`` (reached through a
        # namespace such as ``dyngrad.special``) is registered privately, out of the support
        # table and of the in-place rule
        self.key = name if function or method or name.startswith("_") else "_" + name
        m = None
        if method and f is general and n_in > 1:
            def m(*args, **kwargs):
                return general(*args, _p=0, **kwargs)
        elif method and f is not general and n_in == 2:
            m = self._binary_public(0)
        if m is not None:
            # the method numbers its arguments after self, as PyTorch's errors do ("(position
            # 1)"); it is registered first so that Tensor.<name> is this one
            m.__name__ = m.__qualname__ = name
            m.__module__ = f.__module__
            m.__doc__ = f.__doc__
            m.__signature__ = f.__signature__
            for key in (self.key,) + self.aliases:
                op(f"_{key}_method", function=False, method=False, methods=(key,))(m)
                OPS[f"_{key}_method"].update(spec=self, nodes=(self.node_cls.__name__,)
                                             if self.node_cls else ())
        for key in (self.key,) + self.aliases:
            op(key, method=method, function=function)(f)
            OPS[key].update(spec=self, nodes=(self.node_cls.__name__,) if self.node_cls
                            else ())
        if self.node_cls is not None and not (self.not_implemented or self.binary or broadcast
                                              or self.node_cls._needs_saved):
            self.node_cls._bw = _node_bw_plain  # keeps no tensor: nothing to unpack
            self.plain_ctx = _plain_ctx(self)
        return f


def _unary_run(input, forward, kinds, cls, saves, quiet):
    """The body of the function ``_unary_public`` makes, which passes it the op's facts (the
    rare cases read the declaration from the node class).  Kept apart from that function:
    with the node created one call further from the caller, recording measured about 0.1 us
    faster per op (Node.__init__ looks up the caller's frame).  ``quiet``: NumPy's
    floating-point error state is set to ignore around the kernel (False for a kernel that
    never raises one on real input, ``fp_safe``)."""
    try:
        d = input._data
    except AttributeError:
        raise TypeError(f"{cls._spec.name}(): argument 'input' (position 1) must be Tensor, "
                        f"not {D.type_name(input)}") from None
    if d.dtype.kind not in kinds:
        if d.dtype == D.BF16:
            forward = D.rounding(forward)
        d = cls._spec.admit(d)
    if quiet or d.dtype.kind == "c":
        tok = quiet_on()
        try:
            r = forward(d)
        finally:
            quiet_off(tok)
    else:
        r = forward(d)
    if STATE.enabled and input._requires_grad:
        res = _make(r)
        res._requires_grad = True
        if saves == 1:
            saved = (Saved(input),)
        elif saves == 2:
            saved = (Saved(res, True),)
        elif saves == 3:
            saved = ()
        elif saves:
            saved = cls._spec.pack(input, res)
        else:
            raise RuntimeError(f"the derivative for '{cls._spec.name}' is not implemented.")
        res._grad_fn = node = cls((edge_of(input),), saved, r.dtype)
        if RECORD_HOOKS:
            for h in RECORD_HOOKS:
                h(res, node)
        return res
    return _make(r)


def _unary_plain(input, forward, kinds, spec):
    """The body of the public function of a one-tensor op without a derivative: the result
    never requires grad and no node is recorded (PyTorch's non-differentiable outputs)."""
    try:
        d = input._data
    except AttributeError:
        raise TypeError(f"{spec.name}(): argument 'input' (position 1) must be Tensor, "
                        f"not {D.type_name(input)}") from None
    if d.dtype.kind not in kinds:
        if d.dtype == D.BF16:
            forward = D.rounding(forward)
        d = spec.admit(d)
    tok = quiet_on()
    try:
        return _make(forward(d))
    finally:
        quiet_off(tok)


def _unary_public(self, cls=None):
    """The public function of a one-tensor op with no other argument: the hot path of
    elementwise ops, as lean as a hand-written one.  ``cls``: another node to record, which
    keeps nothing (an in-place form's own node)."""
    forward = getattr(self.forward, "kernel", self.forward)
    kinds = self.kinds
    if not self.differentiable:
        spec = self

        def plain(input):
            return _unary_plain(input, forward, kinds, spec)

        return plain
    where = () if cls else tuple("out" if n == "result" else "size" if n in self.sizes_of
                                 else "in" for n in self.saved)
    cls = cls or self.node_cls
    # what the node keeps, as one number tested inline in _unary_run (the common layouts
    # first; others go through pack); 0 while the op has no backward: it then refuses to
    # record, as PyTorch for an op without a derivative
    layout = {("in",): 1, ("out",): 2, (): 3}.get(where, 4)
    saves = layout if self.bw is not None else 0

    def has_backward():
        nonlocal saves
        saves = layout

    self._on_backward.append(has_backward)

    quiet = not getattr(self.forward, "fp_safe", False)

    def f(input):
        return _unary_run(input, forward, kinds, cls, saves, quiet)

    def guard_front(slow):
        """``dyngrad.<name>``: the common call (one Tensor) runs the op at once; any other
        call, or a call that fails, goes through ``slow`` (the function with PyTorch's
        argument errors, ``_argcheck.guard``), which says what PyTorch says."""
        def front(input=_MISSING, *rest, **kwargs):
            if rest or kwargs or not isinstance(input, Tensor):
                return slow(*rest, **kwargs) if input is _MISSING else \
                    slow(input, *rest, **kwargs)
            try:
                return _unary_run(input, forward, kinds, cls, saves, quiet)
            except Exception:  # (a pure op: run again where its error is translated)
                return slow(input)
        return front

    f.guard_front = guard_front
    return f


def _inplace_without_derivative(spec, methods=()):
    """Register ``Tensor.<name>_`` (and ``methods``) recording ``<Name>Backward1``, whose
    backward raises PyTorch's error: PyTorch declares no derivative for the in-place form of
    some ops (``asinh_``: "the derivative for 'inplace version of asinh' is not
    implemented.")."""
    name = spec.name
    cls = underivable(spec.node_cls.__name__[:-1] + "1", f"inplace version of {name}",
                      name + "_", spec.node_cls.__module__, _spec=spec,
                      __doc__=f"In-place {name}: no derivative, as in PyTorch.")
    out_of_place = spec._unary_public(cls)

    def f(self):
        from .inplace import apply
        return apply(self, out_of_place)

    f.__name__ = f.__qualname__ = name + "_"
    f.__module__ = spec.node_cls.__module__
    f.__doc__ = f"In-place {name}; returns self (records {cls.__name__}: its derivative is " \
        f"not implemented, as in PyTorch)."
    op(name + "_", function=False, methods=tuple(methods))(f)
    OPS[name + "_"]["inplace_of"] = name
    spec.inplace_node = cls
    return f


_MISSING = object()
_I64 = 1 << 63


def _binary_run(input, other, forward, kinds, cls, saves, spec, p):
    """The body of the public function of an elementwise op of two tensors (``p``: 1 for
    ``dyngrad.<name>``, 0 for the method, whose arguments PyTorch numbers after self): the
    inputs in PyTorch's common dtype (the gradients are cast back to each input's dtype), the
    declared dtype rules, the forward on the broadcast arrays, and the node, which keeps the
    inputs' shapes after its saved values so the gradients are summed back to them.
    ``saves``: what the node keeps, as one number (see ``_binary_public``)."""
    try:
        a = input._data
        b = other._data
    except AttributeError:
        _not_tensors(spec, input, other, p)
    casts = None
    if a.dtype is not b.dtype and a.dtype != b.dtype:
        rt = D.result_type(D.FROM_NP[a.dtype], a.ndim, D.FROM_NP[b.dtype], b.ndim).np
        casts = (a.dtype if a.dtype != rt else None, b.dtype if b.dtype != rt else None)
        a = a if a.dtype == rt else a.astype(rt)
        b = b if b.dtype == rt else b.astype(rt)
    if a.dtype.kind not in kinds:
        if a.dtype == D.BF16:
            forward = D.rounding(forward)
        try:
            a, b = spec.admit(a), spec.admit(b)
        except NotImplementedError:
            _broadcast_first(input, other, a, b, spec)  # PyTorch sizes the output first
            raise
    # NumPy's floating-point warnings off (PyTorch gives inf/nan silently); integer kernels
    # raise none (the forwards check integer division by zero), so they skip that
    tok = quiet_on() if a.dtype in D.INEXACT else None
    try:
        r = forward(a, b)
    except ValueError:
        _broadcast_first(input, other, a, b, spec)
        raise
    finally:
        if tok is not None:
            quiet_off(tok)
    if STATE.enabled and (input._requires_grad or other._requires_grad) and cls is not None:
        res = _make(r)
        res._requires_grad = True
        if saves == 1:
            saved = (Saved(input), Saved(other), a.shape, b.shape)
        elif saves == 2:
            saved = (Saved(input), Saved(other), Saved(res, True), a.shape, b.shape)
        elif saves == 4:  # PyTorch's NotImplemented node: edges of the inputs needing grad
            node = cls(tuple(edge_of(t) for t in (input, other) if t._requires_grad),
                       (spec.name,), r.dtype)
            res._grad_fn = node
            if RECORD_HOOKS:
                for h in RECORD_HOOKS:
                    h(res, node)
            return res
        elif saves:
            r0, r1 = input._requires_grad, other._requires_grad
            saved = []
            for k, n0, n1 in spec.save_plan:
                saved.append(None if not (n0 and r0 or n1 and r1) else Saved(res, True)
                             if k == 2 else Saved(other if k else input))
            saved = (*saved, a.shape, b.shape)
        else:
            raise RuntimeError(f"the derivative for '{spec.name}' is not implemented.")
        res._grad_fn = node = cls((edge_of(input), edge_of(other)), saved, r.dtype)
        if casts is not None:
            node._casts = casts
        if RECORD_HOOKS:
            for h in RECORD_HOOKS:
                h(res, node)
        return res
    return _make(r)


def _not_tensors(spec, input, other, p):
    """PyTorch's TypeError for an input that is not a Tensor."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{spec.name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(input)}") from None
    raise TypeError(f"{spec.name}(): argument '{spec.inputs[1]}' (position {1 + p}) must be "
                    f"Tensor, not {D.type_name(other)}") from None


def _broadcast_first(input, other, a, b, spec):
    """PyTorch's error for shapes that do not broadcast, raised before the op's own (after
    a stale view's, which collecting the inputs' history raises first; an op without a
    derivative collects none)."""
    if a.shape != b.shape:
        try:
            np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            from .binary import broadcast_error
            if spec.differentiable:
                edges_first(input, other)
            raise broadcast_error(a.shape, b.shape) from None


def _binary_public(self, p):
    """The public function (``p`` = 1) or method (``p`` = 0) of an elementwise op of two
    tensors without other arguments; a call it cannot take (an input missing, one too many)
    goes through the general path, which raises PyTorch's message."""
    spec = self
    forward = getattr(self.forward, "kernel", self.forward)
    kinds = self.kinds
    cls = self.node_cls
    # what the node keeps, as one number tested inline in _binary_run (the common layouts
    # first); 0 while the op has no backward
    layout = 4 if self.not_implemented else 3 if any(self.saved_for) else \
        {(0, 1): 1, (0, 1, 2): 2}.get(self.saved_inputs, 3)
    saves = layout if self.bw is not None or self.not_implemented else 0

    def has_backward():
        nonlocal saves
        saves = layout

    self._on_backward.append(has_backward)

    overs = [None, None]  # the Scalar overloads (a number first / second), once declared
    over = False

    def has_scalar(o):
        nonlocal over
        overs[0 if o.first else 1] = over = o

    self._on_scalar.append(has_scalar)

    def f(input=_MISSING, other=_MISSING, *rest):
        if other is _MISSING or rest or input is _MISSING:
            if over:  # PyTorch matches the call against each overload
                given = tuple(v for v in (input, other) if v is not _MISSING) + rest
                kw = {spec.inputs[1]: other} if input is _MISSING and \
                    other is not _MISSING else {}
                raise D.bad_combo(spec.name, given[1 - p:] if kw == {} else (), kw)
            if input is _MISSING:  # ``other`` alone was given, by keyword
                kw = {} if other is _MISSING else {spec.inputs[1]: other}
                return spec._general(**kw)
            return spec._general(*((input,) if other is _MISSING else (input, other)), *rest)
        if over and not (isinstance(other, Tensor) and isinstance(input, Tensor)):
            return _scalar_run(input, other, overs, spec, p)
        return _binary_run(input, other, forward, kinds, cls, saves, spec, p)

    return f


class _ScalarOverload:
    """A Scalar overload of an elementwise op of two tensors (``OpSpec.scalar``): what its
    node class reads as its ``_spec``."""

    inputs = ("self",)
    linear = binary = False
    elementwise = True
    fw = None

    def __init__(self, spec, node, saved, bw, first):
        self.name = spec.name
        self.forward = getattr(spec.forward, "kernel", spec.forward)
        self.first = first
        self.number = spec.inputs[0 if first else 1]  # the name of the input that is a number
        self.saved = saved
        # what the node keeps, by kind: 0 the result, 1 the number, 2 the tensor
        self.plan = tuple(0 if n == "result" else 1 if n == self.number else 2 for n in saved)
        self.bw = bw
        positions = {n: i for i, n in enumerate(saved)}
        self.unpack_order = tuple(positions[n] for n in sorted(saved) if n != self.number)
        named = {n: (i, "same" if n == self.number else "tensor") for n, i in positions.items()}
        if isinstance(node, type):  # PyTorch's NotImplemented node: it names the op
            self.node_cls, self.plan = node, None
            return
        self.node_cls = None if node is None else type(node, (Node,), {
            "__slots__": (), "__module__": spec.forward.__module__, "_spec": self,
            "_named_saved": named, "_fw_rule": _node_fw, "_bw": _node_bw,
            "_needs_saved": bool(self.unpack_order),
            "__doc__": f"Backward of {spec.name} with a number (declared with defop)."})


def _scalar_run(input, other, overs, spec, p):
    """The body of the public function (``p`` = 1) or method (``p`` = 0) of an elementwise op
    of two tensors called with a number as one input (its Scalar overloads,
    ``OpSpec.scalar``)."""
    if isinstance(input, Tensor):
        t, v, over = input, other, overs[1]
    else:
        t, v, over = other, input, overs[0]
        if not isinstance(t, Tensor):
            over = None
    tv = type(v)
    if tv is not float and tv is not int and tv is not bool and tv is not complex:
        if not isinstance(v, (np.number, np.bool_)):
            raise D.bad_combo(spec.name, [input, other][1 - p:])
        v = v.item()  # a NumPy number (np.float64 is a float) as Python's
        tv = type(v)
    if over is None:
        raise D.bad_combo(spec.name, [input, other][1 - p:])
    if tv is int and not -_I64 <= v < _I64:  # PyTorch's Scalar takes int64 and uint64
        if not -_I64 <= v < 2 * _I64:
            raise OverflowError("can't convert negative int to unsigned" if v < 0 else
                                "int too big to convert")
        if t._data.dtype.kind == "b":  # a uint64 number does not promote with bool
            raise RuntimeError("Promotion for uint16, uint32, uint64 types is not supported, "
                               "attempted to promote Bool and UInt64")
    a = t._data
    rt = a.dtype
    if not (rt in D.FLOATING and (tv is float or tv is int) or tv is int and rt.kind in "iu"):
        rt = D.scalar_result(D.FROM_NP[rt], v).np  # (the common cases keep the dtype)
        if a.dtype != rt:
            a = a.astype(rt)
    forward = over.forward
    if a.dtype.kind not in spec.kinds:
        if a.dtype == D.BF16:
            forward = D.rounding(forward)
        a = spec.admit(a)
    odt = D.BF16 if forward is not over.forward else a.dtype
    tok = quiet_on() if a.dtype in D.INEXACT else None  # as in _binary_run
    try:
        # the number in the tensor's dtype, as PyTorch computes with it (NumPy would compute
        # a function of the number alone in float64): a float beyond the dtype's range is
        # inf, silently; an integer the dtype cannot hold stays as it is
        try:
            n = rt.type(v)
        except OverflowError:
            n = v
        r = forward(n, a) if over.first else forward(a, n)
    finally:
        if tok is not None:
            quiet_off(tok)
    if r.dtype != odt and r.dtype.kind != "b":  # (a comparison's bool result is kept)
        r = r.astype(odt)
    return scalar_record(spec, over, t, v, r)


def scalar_record(spec, over, t, v, r):
    """The result ``r`` of Scalar overload ``over`` of ``spec``'s op on tensor ``t`` and number
    ``v``, with its node when recording (the end of ``_scalar_run``; a front computing a
    common case itself ends here too)."""
    if STATE.enabled and t._requires_grad and over.node_cls is not None:
        res = _make(r)
        res._requires_grad = True
        plan = over.plan
        if plan is None:
            saved = (spec.name,)
        elif plan == (2, 0):
            saved = (Saved(t), Saved(res, True))
        elif not plan:
            saved = ()
        else:
            saved = tuple([Saved(res, True) if k == 0 else v if k == 1 else Saved(t)
                           for k in plan])
        res._grad_fn = node = over.node_cls((edge_of(t),), saved, r.dtype)
        if RECORD_HOOKS:
            for h in RECORD_HOOKS:
                h(res, node)
        return res
    return _make(r)


OpSpec._unary_public = _unary_public
OpSpec._binary_public = _binary_public
OpSpec._inplace_without_derivative = _inplace_without_derivative


def _node_bw(self, g, graph):
    cls = type(self)
    bw = _CTX.get(cls)
    if bw is None:  # made on first use, then the class's own backward
        bw = _CTX[cls] = _direct_bw(cls._spec)
        if cls._bw is _node_bw:
            cls._bw = bw
    return bw(self, g, graph)


class _Args:
    """The ``ctx`` of an elementwise op of two tensors: its saved values unpacked at once, as
    attributes (``ctx.self``, ``ctx.other``, ``ctx.result``), in PyTorch's order."""

    __slots__ = ("self", "other", "result", "_node", "_graph", "_only")
    needs = Ctx.needs
    op = Ctx.op

    def __init__(self, node, graph, only=None):
        self._node = node
        self._graph = graph
        self._only = only
        sv = node._saved
        for pos, name in type(node)._spec.unpack_seq:
            v = sv[pos]
            # (a Python number in a tensor's place: PyTorch's wrapped number, as ``x * 2``)
            setattr(self, name, v.get(node, graph) if type(v) is Saved else v)


def _bw_of(g, args, bw):
    """``bw(args, g)`` with the bfloat16 arrays of ``args`` in float32 (for ``opmath``)."""
    for name in ("self", "other", "result"):
        v = getattr(args, name, None)
        if isinstance(v, np.ndarray) and v.dtype == D.BF16:
            setattr(args, name, v.astype(np.float32))
    return tuple(bw(args, g))


def _node_bw2(self, g, graph):
    """The backward of an elementwise op of two tensors: the formula's gradients (of the
    broadcast shape) summed back to each input's shape, kept after the saved values."""
    args = _Args(self, graph)
    if self._odt is D.BF16 and not graph:  # in float32, rounded once, as PyTorch's kernels
        ga, gb = D.opmath(_bw_of, g, args, type(self)._spec.bw)
    else:
        ga, gb = type(self)._spec.bw(args, g)
    sv = self._saved
    if ga is not None and ga.shape != sv[-2]:
        ga = sum_to(ga, sv[-2])
    if gb is not None and gb.shape != sv[-1]:
        gb = sum_to(gb, sv[-1])
    return ga, gb


def _node_fw(self, tangents):
    """Output tangents (one per output) for input ``tangents`` (Tensors or None)."""
    spec = type(self)._spec
    ctx = Ctx(self, True)
    if spec.fw is not None:
        return [spec.fw(ctx, *tangents)]
    if spec.linear:
        # a linear op's derivative is the op itself: apply it to the tangents (none -> 0)
        ts = [t if t is not None else None for t in tangents]
        params = {n: getattr(ctx, n) for n in spec.saved if n not in spec.inputs and
                  n != "result" and n not in spec.sizes_of}
        if any(t is None for t in ts):
            raise NotImplementedError(f"forward AD of {spec.name} with some inputs untangented")
        return [OPS[spec.name]["fn"](*ts, **params)]
    if spec.elementwise and len(spec.inputs) == 1:
        # elementwise: the Jacobian is diagonal, so the vjp of the tangent is the jvp
        t = tangents[0]
        if t is not None and t._data.dtype.kind == "c" and self._odt is not None and \
                self._odt.kind != "c":
            # a real result of a complex input (abs, angle): the formula is PyTorch's gradient
            # u * c, whose jvp is real(conj(c) * t) = real(formula(conj(t)))
            return [spec.bw(ctx, t.conj())[0].real]
        return [None if t is None else spec.bw(ctx, t)[0]]
    if spec.binary:
        # each input's Jacobian is diagonal once the tangent is broadcast to the output: the
        # tangent is the sum of the formula's terms, one input at a time
        sv = self._saved
        shape = np.broadcast_shapes(*sv[len(sv) - len(tangents):])
        out = None
        for i, t in enumerate(tangents):
            if t is None:
                continue
            if tuple(t.shape) != shape:
                t = t.expand(*shape)
            term = spec.bw(_Args(self, True, i), t)[i]
            out = term if out is None else out + term
        return [out]
    from ..autograd.errors import without_rule
    without_rule(spec.name)(self, tangents)  # PyTorch's whole message


def defop(name: str, *, node: str | None, inputs: tuple = ("self",), saved: tuple = (),
          promote: str | None = None, batch=None, linear: bool = False,
          elementwise: bool = False, method: bool = True, function: bool = True,
          floating_kernel: str | None = None, dims: tuple = (),
          complex_kernel: str | None = None, real_only: bool = False, aliases: tuple = (),
          differentiable: bool = True, complex_error: tuple | None = None,
          saved_for: dict | None = None, integer_kernel: str | None = None,
          outputs: tuple = (), broadcast: bool = False, dim_lists: tuple = (),
          names: dict | None = None, holomorphic: bool = True, index_args: tuple = ()):
    """Declare op ``name`` from its forward on arrays (see the module docstring).

    ``inputs``: names of the leading tensor arguments.  ``saved``: what the node keeps, by
    PyTorch's names (an input name, ``result``, or a parameter).  ``promote="float"``: integer
    inputs compute in the default float dtype.  ``batch``: the batching rule (``ELEMENTWISE``,
    ``batch_along(param)``, or a callable ``rule(spec, arrays, params)``); None: no rule.
    ``linear``/``elementwise`` derive the forward-mode rule.  ``floating_kernel`` /
    ``complex_kernel``: the CPU kernel PyTorch's NotImplementedError names for integer/bool
    (not promoted) / complex inputs, which it has no instance for; ``real_only``: complex
    inputs are refused by PyTorch's RuntimeError "<name> is not supported for complex
    tensors." before any kernel.  ``dims``: parameters that are dimensions (ints or 0-d
    integer tensors, else PyTorch's TypeError; wrapped into range for the forward, kept by
    the node as given).  ``method``/``function``:
    exposed as ``Tensor.<name>``/``dyngrad.<name>`` (an op that is neither is registered as
    ``_<name>``); ``aliases``: other names of both (``arcsinh`` for ``asinh``).
    ``differentiable=False``: PyTorch has no derivative for the op and its result never
    requires grad (``isnan``, ``logical_not``): no node is recorded (``node`` may be None).
    ``complex_error``: ``(exception class, message)`` PyTorch raises for complex inputs
    (``isposinf``: ``RuntimeError("isposinf does not support complex inputs.")``).

    Two tensor inputs and no other argument, with ``elementwise=True`` (``atan2``): the
    inputs are promoted to PyTorch's common dtype first (``promote``/``floating_kernel``/
    ``complex_kernel``/``complex_error`` then apply to it, after the broadcast check, as in
    PyTorch), the backward returns gradients of the broadcast shape, which are summed back to
    each input's shape and cast back to its dtype, and the forward-mode rule is derived (the
    sum of the backward formula applied to each input's broadcast tangent).  ``Tensor.<name>``
    is then its own function, numbering arguments after self as PyTorch's errors do.
    ``saved_for`` (such an op): ``{saved name: indices of the inputs whose gradient uses
    it}`` for a tensor PyTorch keeps only when one of those inputs requires grad (``hypot``
    keeps ``self`` only for its own gradient: ``{"self": (0,), "other": (1,)}``); the others
    are always kept.  ``node`` may also be PyTorch's ``NotImplemented`` node class (such an
    op whose derivative PyTorch does not implement, ``floor_divide``): the result of inputs
    that require grad records it, with the edges of those inputs only, and its backward
    raises PyTorch's error.  ``integer_kernel``: an op of integer tensors only (``gcd``); other
    dtypes (bool included) are refused with PyTorch's NotImplementedError naming that
    kernel.

    ``outputs``: the names of the outputs of an op whose forward returns several arrays
    (``("values", "indices")``, topk): the public function returns them as PyTorch's named
    tuple, the first (``result`` in ``saved``) carries the gradient, the others are returned
    without one and may be saved by their names (``indices``).

    Any other op (the general path): ``saved_for`` keeps a saved tensor only when one of
    the listed inputs requires grad (``dot`` keeps ``self`` for ``tensor``'s gradient only:
    ``{"self": (1,), "tensor": (0,)}``), else it reads as None; a saved name
    ``<input>_sym_sizes`` keeps that input's shape (``trace``); ``broadcast=True``: the tensor
    inputs broadcast together, and each gradient the backward returns (of the broadcast
    shape) is summed back to its input's shape; ``promote="common"``: the tensor inputs are
    converted to PyTorch's common dtype (a dimensioned tensor's category beats a 0-d one's)
    before the forward, and each gradient is cast back to its input's dtype.  With two or
    more tensor inputs,
    ``Tensor.<name>`` numbers its arguments after self in its errors, as PyTorch's.  An
    error the forward raises (PyTorch's argument checks, on the arrays) comes after a
    stale view's, as in PyTorch.  ``dim_lists``: parameters that are a dim or a list of dims
    (an int, a tuple or list, None; None and an empty list mean every dim), which the forward
    reads with ``dims_of`` (PyTorch's errors; a sorted tuple of axes is taken as it is): the
    node keeps them as given, as a tuple (``batch_along_dims`` is their batching rule).
    ``names``: PyTorch's names of saved values where they differ from the declaration's
    (``{"result": "inverse"}``: linalg.inv's node shows its output as ``_saved_inverse``).
    ``holomorphic=False``: the backward writes PyTorch's gradient for complex input itself (a
    formula through norms, as renorm's), so it is not conjugated around as an op's complex
    derivative is.  ``index_args``: parameters that are integer or bool tensors (an index, a
    mask) which the node keeps, as PyTorch's SavedVariable: changed in place before backward
    they raise PyTorch's version error, and a second backward raises as for a freed node
    (``ctx.<name>`` is the array in a plain backward, the Tensor under create_graph)."""
    def deco(forward):
        return OpSpec(name, forward, node, tuple(inputs), tuple(saved), promote, batch, linear,
                      elementwise, method, function, floating_kernel, tuple(dims),
                      complex_kernel, real_only, tuple(aliases), differentiable,
                      complex_error, saved_for, integer_kernel, outputs, broadcast,
                      tuple(dim_lists), names, holomorphic, tuple(index_args))
    return deco


def unary(name: str, np_fn: Callable, formula: Callable | None, *, module: str,
          saved: tuple = ("self",), promote: str | None = "float", node: str | None = None,
          doc: str = "", complex_kernel: str | None = None, real_only: bool = False,
          aliases: tuple = (), inplace_derivative: bool = True, method: bool = True,
          function: bool = True, complex_error: tuple | None = None,
          fp_safe: bool = False) -> OpSpec:
    """Declare an elementwise op of one tensor: ``np_fn`` on arrays forward;
    ``formula(grad, x, y)`` its gradient from the saved input ``x`` and/or result ``y`` (None
    when not saved), written once for arrays and Tensors.  Forward mode and batching follow
    (elementwise).  ``node`` defaults to ``<Name>Backward0`` from the parts of ``name``.
    The in-place form ``<name>_`` comes from the registry's rule (``ops/inplace.py``);
    ``inplace_derivative=False`` registers it here instead, recording ``<Name>Backward1``
    whose backward raises, as PyTorch's for ops it has no in-place derivative for.
    ``formula=None``: an op PyTorch has no derivative for (``isnan``): no node, nothing
    saved, the result never requires grad (``promote=None`` then takes every dtype as it
    is).  ``fp_safe``: ``np_fn`` never sets a NumPy floating-point error on real or
    integer input (checked by tests/test_fperr.py), so the hot path skips quieting them.  The other keywords are
    ``defop``'s."""
    if formula is None:
        saved = ()
    else:
        node = node or "".join(p.capitalize() for p in name.split("_")) + "Backward0"

    def forward(self):
        return np_fn(self)

    forward.__name__ = forward.__qualname__ = name
    forward.__module__ = module
    forward.__doc__ = doc or (f"Elementwise {name}; records {node}." if node else
                              f"Elementwise {name} (no derivative).")
    forward.kernel = np_fn  # what the public function calls directly
    if fp_safe:
        forward.fp_safe = True
    spec = defop(name, node=node, saved=saved, promote=promote, elementwise=True,
                 complex_kernel=complex_kernel, real_only=real_only, aliases=aliases,
                 method=method, function=function, differentiable=formula is not None,
                 complex_error=complex_error)(forward)
    if formula is None:
        return spec
    ix = saved.index("self") if "self" in saved else None
    iy = saved.index("result") if "result" in saved else None

    def bw(ctx, grad):
        return (formula(grad, ctx.self if ix is not None else None,
                        ctx.result if iy is not None else None),)

    spec.backward(bw)

    def fast_bw(self, g, graph):
        # the node's backward without a Ctx: result is unpacked before self (PyTorch's order)
        sv = self._saved
        y = sv[iy].get(self, graph) if iy is not None else None
        x = sv[ix].get(self, graph) if ix is not None else None
        if self._odt is D.BF16 and not graph:  # in float32, rounded once, as PyTorch's kernels
            return D.opmath(formula, g, x, y),
        return formula(g, x, y),

    spec.node_cls._bw = fast_bw
    spec.unary_formula = (formula, ix, iy)  # (dyngrad.compile replays the array formula)
    if not inplace_derivative:
        spec._inplace_without_derivative(tuple(a + "_" for a in aliases))
    return spec


def apply_batched(name: str, arrays, params: dict):
    """Run op ``name`` on inputs with a leading batch axis through its batching rule (the
    primitive ``vmap`` uses); raises when the op has none."""
    spec = OPS[name].get("spec")
    rule = spec.batch if spec is not None else None
    if rule is None:
        raise NotImplementedError(f"{name} has no batching rule")
    if rule == ELEMENTWISE:
        return spec.forward(*arrays, **params)
    return rule(spec, arrays, params)


__all__ = ["defop", "unary", "batch_along", "apply_batched", "ELEMENTWISE", "Ctx", "OpSpec",
           "batch_aligned"]


def _node_bw_summed(self, g, graph):
    """The backward of a declared op whose inputs broadcast (``defop(broadcast=True)``): each
    gradient summed back to its input's shape, kept at the end of the saved values."""
    out = _node_bw(self, g, graph)
    shapes = self._saved[len(self._saved) - len(out):]
    return tuple(o if o is None or tuple(o.shape) == s else sum_to(o, s)
                 for o, s in zip(out, shapes))


def _ctx_shape(self, i: int) -> tuple:
    """The shape of tensor input ``i`` of an op declared with ``broadcast=True`` (for a
    formula that sums or expands to it)."""
    saved = self._node._saved
    n = len(type(self._node)._spec.inputs)
    return tuple(saved[len(saved) - n + i])


Ctx.shape = _ctx_shape


def _to_common(tensors, arrays):
    """The input arrays in PyTorch's common dtype of ``tensors``, and the dtypes to cast each
    input's gradient back to (None when all already had it)."""
    from .comparison import _result_dtype
    rt = _result_dtype(tensors).np
    if all(a.dtype == rt for a in arrays):
        return arrays, None
    return ([a if a.dtype == rt else a.astype(rt) for a in arrays],
            tuple(None if a.dtype == rt else a.dtype for a in arrays))


def batch_aligned(arrays) -> list:
    """Inputs with a leading batch axis, each given the dims it lacks (as size 1) after that
    axis, so they broadcast as the unbatched inputs did (a batching rule's first step)."""
    n = max(a.ndim for a in arrays)
    return [a if a.ndim == n else a.reshape(a.shape[:1] + (1,) * (n - a.ndim) + a.shape[1:])
            for a in arrays]


def _positioned(err: TypeError, name: str, params: list, given: int, first: int) -> TypeError:
    """``err`` from a forward, with the argument's position (``first`` for the first
    parameter after the tensors) when it names one of the ``given`` parameters passed by
    position."""
    msg = str(err)
    for i, p in enumerate(params[:given]):
        head = f"{name}(): argument '{p}' must be"
        if msg.startswith(head):
            return TypeError(f"{name}(): argument '{p}' (position {first + i}) must be" +
                             msg[len(head):])
    return err


def _bind(sig, params, tensors, args, kwargs, name, n_in) -> dict:
    """The other arguments of a declared op's call bound by ``inspect`` (the calls the quick
    binding in the public function does not take), with PyTorch's TypeErrors."""
    try:
        bound = sig.bind(*(t._data for t in tensors), *args[n_in:], **kwargs)
    except TypeError as e:
        missing = [p for p in params if p not in kwargs and
                   sig.parameters[p].default is inspect.Parameter.empty][
                       max(0, len(args) - n_in):]
        if missing:  # PyTorch's wording ("1 ... arguments", "2 ... argument")
            raise TypeError(f"{name}() missing {len(missing)} required positional "
                            f"argument{'s' if len(missing) == 1 else ''}: " +
                            ", ".join(f'"{m}"' for m in missing)) from None
        # Python's words for a keyword it cannot take, as PyTorch says them
        msg = str(e)
        raise TypeError(f"{name}() {'got ' * msg.startswith('multiple')}{msg}") from None
    bound.apply_defaults()
    return {p: bound.arguments[p] for p in params}


def _int_dims(dim, name):
    """``dim`` given as something other than ints: 0-d integer tensors count as ints (as in
    PyTorch); anything else is PyTorch's TypeError naming the function."""
    seq = dim if isinstance(dim, (tuple, list)) else (dim,)
    out = []
    for d in seq:
        if isinstance(d, (int, np.integer)):
            out.append(d)
        elif isinstance(d, Tensor) and d._data.ndim == 0 and d._data.dtype.kind in "iu":
            out.append(int(d._data))
        else:
            raise TypeError(f"{name + '(): ' if name else ''}argument 'dim' must be tuple of "
                            f"ints, not {D.type_name(d)}")
    return out


def dims_of(dim, ndim, name=None):
    """Normalise ``dim`` (int, tuple, list or None) to a sorted tuple of non-negative axes;
    None and an empty tuple or list mean every dim, as in PyTorch.  ``name`` (the function)
    is named in the error for a ``dim`` of the wrong type."""
    if dim is None or (type(dim) in (tuple, list) and not dim):
        return tuple(range(ndim))
    if isinstance(dim, (int, np.integer)):
        dim = (int(dim),)
    elif not isinstance(dim, (tuple, list)) or \
            not all(isinstance(d, (int, np.integer)) for d in dim):
        dim = _int_dims(dim, name)
    n = ndim if ndim > 1 else 1
    out = []
    for d in dim:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {d})")
        d = d + n if d < 0 else d
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    if ndim == 0:
        return ()
    return tuple(sorted(out))


def batch_along_dims(param: str) -> Callable:
    """Batching rule of an op that works along the dims argument ``param`` (a ``dim_lists``
    parameter): with a leading batch axis, each of them moves one to the right (every dim of
    the sample, when it names all of them)."""
    def rule(spec, arrays, params):
        p = dict(params)
        p[param] = tuple(d + 1 for d in dims_of(p.get(param, ()), arrays[0].ndim - 1,
                                                spec.name)) or tuple(range(1, arrays[0].ndim))
        return spec.forward(*arrays, **p)
    return rule


def saved_arg(v):
    """An ``index_args`` argument as its node keeps it: a Tensor as a saved tensor, a list
    holding tensors (index_put's indices) as a ``SavedSeq``."""
    if isinstance(v, Tensor):
        return Saved(v)
    if type(v) in (tuple, list):
        for t in v:
            if isinstance(t, Tensor):
                return SavedSeq(Saved(u) if isinstance(u, Tensor) else u for u in v)
    return v


class SavedSeq(tuple):
    """A list argument of ``index_args`` as its node keeps it: each tensor a saved tensor
    (version-checked when the list is read, ``get``), the other items as given."""

    __slots__ = ()

    def get(self, node, graph):
        return tuple(v.get(node, graph) if type(v) is Saved else v for v in self)


# -- the quick call of a declared op of one tensor and other arguments -------------------------
def fp_safe(forward):
    """Mark a forward as never setting a NumPy floating-point error on real or integer input
    (indices, predicates; checked by tests/test_fperr.py): its quick call skips quieting
    them, as ``unary(fp_safe=True)``'s hot path."""
    forward.fp_safe = True
    return forward


def _one_tensor_public(spec, general, record):
    """The public function of an op of one tensor and other arguments: a call by position, or
    with keywords the forward takes and no argument missing (``dims`` given as ints), runs
    the forward on the tensor's array directly; any other call (a dtype the kernel does not
    take as it is, an input not a Tensor, an error to report) goes through ``general``, which
    says what PyTorch says."""
    light = _light_sig(spec.forward).parameters
    params = list(light)[1:]
    pos_params = [p for p in params if light[p].kind is _POS]
    n_max = len(pos_params) + 1
    n_min = 1 + sum(1 for p in pos_params if light[p].default is _P.empty)
    keywords = frozenset(params)
    defaults = {p: v.default for p, v in light.items()
                if p in keywords and v.default is not _P.empty}
    # the dims parameters: (position among the arguments after the tensor, or None, name)
    dim_params = tuple((pos_params.index(p) if p in pos_params else None, p)
                       for p in params if p in spec.dims)
    forward, kinds, state = spec.forward, spec.kinds, STATE
    plain = not spec.differentiable and not spec.outputs
    outputs = spec.outputs
    quiet = not getattr(forward, "fp_safe", False)  # (complex input is always quieted)

    def f(*args, **kwargs):
        n = len(args)
        if not n_min <= n <= n_max or not isinstance(args[0], Tensor):
            return general(*args, **kwargs)
        if kwargs:
            if not kwargs.keys() <= keywords:
                return general(*args, **kwargs)
            for p in pos_params[:n - 1]:
                if p in kwargs:
                    return general(*args, **kwargs)
        input = args[0]
        d = input._data
        if d.dtype.kind not in kinds:
            return general(*args, **kwargs)
        more = args[1:]
        kw = kwargs
        # ints wrapped into range (PyTorch's IndexError), others: general; the arguments
        # are copied only when a dim changes
        for i, p in dim_params:
            if i is not None and i < n - 1:
                v = more[i]
                if type(v) is not int:
                    return general(*args, **kwargs)
                if not 0 <= v < d.ndim:
                    if type(more) is tuple:
                        more = list(more)
                    more[i] = _dim(v, d.ndim)
            else:
                v = kw.get(p, defaults.get(p))
                if type(v) is not int:
                    return general(*args, **kwargs)
                if not 0 <= v < d.ndim:
                    if kw is kwargs:
                        kw = dict(kwargs)
                    kw[p] = _dim(v, d.ndim)
        tok = quiet_on() if quiet or d.dtype.kind == "c" else None
        try:
            r = forward(d, *more, **kw)
        except RuntimeError:
            edges_first(input)  # a stale view's error comes before the op's own
            raise
        finally:
            if tok is not None:
                quiet_off(tok)
        if plain:
            return _make(r)
        if state.enabled and input._requires_grad:
            return record_args(r, input, args, kwargs)
        return record(r, (input,), None) if outputs else _make(r)

    record1 = spec.record1 = _one_tensor_record(spec, record)
    record_args = None

    fast = _positional_call(spec, f, pos_params, n_min, defaults, record)

    def has_backward():
        nonlocal record_args

        def first(r, input, args, kwargs):  # generated on the first recording
            nonlocal record_args
            record_args = fast.record_args = _record_args(spec, record1, pos_params, defaults)
            return record_args(r, input, args, kwargs)
        record_args = fast.record_args = first

    has_backward()
    spec._on_backward.append(has_backward)
    return fast


def _one_tensor_record(spec, record):
    """The end of the quick call of an op of one tensor that requires grad: ``record``
    without its checks (``record`` itself for an op without a derivative, or keeping a value
    only for some inputs, or without its backward yet)."""
    if not spec.differentiable or spec.kept_for or spec.broadcast or spec.not_implemented:
        return lambda r, input, raw: record(r, (input,), raw)
    # what the node keeps, as one generated expression (the saved names are fixed)
    exprs = ["Saved(res, True)" if n == "result" else "Saved(input)" if n in spec.inputs else
             "tuple(input._data.shape)" if n in spec.sizes_of else
             f"raw_dims(raw[{n!r}])" if n in spec.dim_lists else
             f"Saved(extra[{spec.extra_outputs.index(n)}])" if n in spec.extra_outputs else
             f"saved_arg(raw[{n!r}])" if n in spec.index_args else
             f"raw[{n!r}]" for n in spec.saved]
    src = f"def save(res, input, raw, extra):\n    return ({''.join(e + ', ' for e in exprs)})\n"
    # (ops keeping the same values share one compiled body, compiled on first use)
    save = _compiled_lazily(lambda: src, {"Saved": Saved, "raw_dims": _raw_dims_quick,
                                          "saved_arg": saved_arg}, "save")
    outputs, node_cls = spec.outputs, spec.node_cls

    def rec(r, input, raw):
        if spec.bw is None:
            return record(r, (input,), raw)
        extra = ()
        if outputs:
            r, extra = r[0], tuple([_make(o) for o in r[1:]])
        res = _make(r)
        res._requires_grad = True
        res._grad_fn = node = node_cls((edge_of(input),), save(res, input, raw, extra), r.dtype)
        if RECORD_HOOKS:
            for h in RECORD_HOOKS:
                h(res, node)
        return spec.return_type(res, *extra) if extra else res

    return rec


def _raw_dims_quick(v):
    """``raw_dims(v)``, a tuple of ints kept as it is without rebuilding it."""
    if type(v) is tuple:
        for d in v:
            if type(d) is not int:
                return raw_dims(v)
        return v
    return raw_dims(v)


def quick(spec: OpSpec, input, args: tuple, raw: dict, kwargs: dict | None = None):
    """A front's call of its declared op that it knows valid (a Tensor, dims wrapped in
    ``args``): the forward on the array and the node recorded
    directly, keeping the arguments as given in ``raw``; an input of another dtype goes
    through the declared function (promoted or refused)."""
    if input._data.dtype.kind not in spec.kinds:
        return spec.declared(input, **{**raw, **(kwargs or {})})
    tok = quiet_on()
    try:
        r = spec.forward(input._data, *args, **(kwargs or {}))
    except RuntimeError:
        edges_first(input)  # a stale view's error comes before the op's own
        raise
    finally:
        quiet_off(tok)
    if STATE.enabled and input._requires_grad:
        return spec.record1(r, input, raw)
    return spec.record(r, (input,), None)


class _Variant:
    """Another node of a declared op, for one of PyTorch's other overloads (``sum()`` records
    SumBackward0, ``sum(dim)`` the declaration's SumBackward1): its own saved values, the
    declaration's backward and forward-mode rule (read as the declaration's otherwise)."""

    def __init__(self, spec, node, saved):
        self._parent = spec
        self.saved = saved
        positions = {n: i for i, n in enumerate(saved)}
        tensors = [n for n in saved if n in spec.inputs or n == "result" or
                   n in spec.extra_outputs or n in spec.index_args]
        self.unpack_order = tuple(positions[n] for n in sorted(tensors))
        named = {n: (i, "tensor" if n in tensors else "dim" if "dim" in n else "same")
                 for n, i in positions.items()}
        self.node_cls = type(node, (Node,), {
            "__slots__": (), "__module__": spec.forward.__module__, "_spec": self,
            "_named_saved": named, "_fw_rule": _node_fw, "_bw": _node_bw,
            "_holomorphic": spec.node_cls._holomorphic, "_needs_saved": bool(tensors),
            "__doc__": f"Backward of {spec.name}, another overload (declared with defop)."})
        OPS[spec.key]["nodes"] += (node,)

    def __getattr__(self, name):
        return getattr(self._parent, name)


def variant(spec: OpSpec, node: str, saved: tuple) -> type:
    """The node class ``node`` of another overload of ``spec``'s op, keeping ``saved`` (by
    PyTorch's names, in the order the node's ``_saved`` holds them); a front (``front``)
    records it for the calls of that overload."""
    return _Variant(spec, node, tuple(saved)).node_cls


def front(spec: OpSpec, fn: Callable) -> Callable:
    """Make ``fn`` the public function (and method) of ``spec``'s op: a front that takes the
    calls of PyTorch's other overload (recording a ``variant``'s node) and hands every other
    call to the declaration's own function, kept as ``spec.declared``."""
    spec.declared = spec.fn
    fn.__name__ = fn.__qualname__ = spec.name
    fn.__module__ = spec.fn.__module__
    fn.__doc__ = fn.__doc__ or spec.fn.__doc__
    for key in (spec.key,) + spec.aliases:
        OPS[key]["fn"] = fn
    spec.fn = fn
    return fn


# -- a backward formula of the saved values, run without a Ctx on the hot path ---------------
def formula_backward(spec: OpSpec, formula: Callable) -> Callable:
    """Declare ``formula(grad, needs, *saved values in the declaration's order)`` as the
    backward of ``spec`` (``needs``: whether each tensor input wants a gradient).  One formula:
    ``ctx`` runs it under create_graph and in forward mode; the plain backward of a product
    (two inputs, each kept for the other's gradient) unpacks them itself, version-checked in
    PyTorch's order, as ``unary``'s nodes do."""
    names = spec.saved
    n_in = len(spec.inputs)
    tensor_pos = tuple(p for p, _ in spec.unpack_seq)

    def bw(ctx, grad):
        return formula(grad, tuple(ctx.needs(i) for i in range(n_in)),
                       *[getattr(ctx, n) for n in names])

    spec.backward(bw)
    if (spec.broadcast or spec.binary) and n_in == 2:
        summed_backward(spec.node_cls, formula)
        return formula
    if spec.broadcast or spec.binary or not (len(names) == n_in == 2 and len(tensor_pos) == 2):
        return formula
    # a product keeping each input for the other's gradient: the node's backward unpacks them
    later = tensor_pos[0] == 1  # in PyTorch's order (mat2 before self)

    def fast_bw(self, g, graph):
        a, b = self._saved
        if later and b is not None:
            b = b.get(self, graph)
        if a is not None:
            a = a.get(self, graph)
        if not later and b is not None:
            b = b.get(self, graph)
        nf = self.next_functions
        return tuple(formula(g, (nf[0][0] is not None, nf[1][0] is not None), a, b))

    spec.node_cls._bw = fast_bw
    return formula


def summed_backward(cls: type, formula: Callable) -> None:
    """Make ``formula(grad, needs, *saved values)`` the backward of node class ``cls`` of a
    declared op of two tensors that broadcast (``mul``, ``add``; or a ``variant``'s): the
    saved tensors unpacked in PyTorch's order (a number in a tensor's place, PyTorch's
    wrapped number, passes as it is), the formula, and each gradient summed back to its
    input's shape, which the node keeps after its saved values."""
    spec = cls._spec
    cls._bw = _summed_formula_bw(formula, tuple(spec.unpack_order), len(spec.saved))


def _summed_formula_bw(formula: Callable, tensor_pos: tuple, n_saved: int) -> Callable:
    """The node's backward: unpack, formula, sum back.  Generated on first use with the
    formula's body written in (``_inlined``: a call less per node, as a hand-written node
    has), or calling the formula where its body cannot be written in."""
    state: dict = {}

    def fast_bw(self, g, graph):
        real = state.get("real")
        if real is None:
            real = state["real"] = _summed_source_bw(formula, tensor_pos, n_saved)
            if type(self)._bw is fast_bw:
                type(self)._bw = real  # (a subclass sharing this one keeps calling through)
        return real(self, g, graph)

    return fast_bw


def _summed_source_bw(formula: Callable, tensor_pos: tuple, n_saved: int) -> Callable:
    """``_summed_formula_bw``'s function: Python source for the saved layout (the products'
    two operands unpacked in PyTorch's order; add's and sub's one number; any other layout),
    the formula's body written in when ``_inlined`` can, else a call of the formula."""
    lines = ["def fast_bw(self, g, graph, Saved=Saved, sum_to=sum_to, formula=formula):",
             "    s = self._saved", "    nf = self.next_functions",
             "    needs = (nf[0][0] is not None, nf[1][0] is not None)"]
    if n_saved == 2 and len(tensor_pos) == 2:
        names = ["a", "b"]
        lines.append("    a, b = s[0], s[1]")
        for v in ("b", "a") if tensor_pos[0] == 1 else ("a", "b"):  # PyTorch's order
            lines.append(f"    if {v}.__class__ is Saved:\n        {v} = {v}.get(self, graph)")
        shapes = ("s[2]", "s[3]")
    elif n_saved == 1 and not tensor_pos:
        names, shapes = ["s[0]"], ("s[1]", "s[2]")
    else:
        names = [f"v{i}" for i in range(n_saved)]
        lines.append(f"    {', '.join(names)}{',' if n_saved == 1 else ''} = s[:{n_saved}]")
        for p in tensor_pos:
            lines.append(f"    if v{p}.__class__ is Saved:\n        v{p} = v{p}.get(self, graph)")
        shapes = ("s[-2]", "s[-1]")
    body = _inlined(formula, ["g", "needs"] + names, "ga, gb")
    lines += body if body is not None else [f"    ga, gb = formula(g, needs, {', '.join(names)})"]
    lines += [f"    if ga is not None and ga.shape != {shapes[0]}:",
              f"        ga = sum_to(ga, {shapes[0]})",
              f"    if gb is not None and gb.shape != {shapes[1]}:",
              f"        gb = sum_to(gb, {shapes[1]})",
              "    return ga, gb"]
    import os
    import types
    code = compile("\n".join(lines) + "\n", os.path.join(os.path.dirname(__file__), "<defop>"),
                   "exec")
    fn_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(fn_code, formula.__globals__, "fast_bw",
                              (Saved, sum_to, formula))


def _inlined(fn: Callable, args: list, target: str) -> list | None:
    """The body of ``fn`` as source lines (indented once) that bind its result to ``target``,
    its parameters read as the expressions ``args`` and its own locals renamed apart; None when
    it cannot be written in: not a plain function of one file, a closure, a return that is not
    its last statement, a nested function, a generator, or a parameter it assigns to."""
    import ast
    import textwrap
    co = getattr(fn, "__code__", None)
    if co is None or co.co_freevars or co.co_flags & 0x20 or fn.__defaults__ or \
            co.co_argcount != len(args):
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    f = tree.body[0] if tree.body else None
    if not isinstance(f, ast.FunctionDef) or f.args.kwonlyargs or f.args.vararg or f.args.kwarg:
        return None
    body = f.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body or not isinstance(body[-1], ast.Return) or body[-1].value is None:
        return None
    params = [a.arg for a in f.args.args]
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Global, ast.Nonlocal,
                             ast.FunctionDef, ast.Lambda, ast.ClassDef, ast.AsyncFunctionDef)) \
                and node is not body[-1]:
            return None
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in params:
            return None
    local = set(co.co_varnames) - set(params)
    mapping = dict(zip(params, args))

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in mapping:
                return ast.copy_location(ast.parse(mapping[node.id], mode="eval").body, node)
            if node.id in local:
                node.id = "_f_" + node.id
            return node

    stmts = [Rename().visit(st) for st in body]
    last = stmts.pop()
    out = [textwrap.indent(ast.unparse(st), "    ") for st in stmts]
    out.append(f"    {target} = {ast.unparse(last.value)}")
    return out


# -- the common call of an op of two tensors and no other argument (mm) -----------------------
_NO_PARAMS: dict = {}


def pair_public(spec: OpSpec) -> tuple:
    """The public function and method of ``spec``, an op of two tensors and no other
    argument (``mm``): the common call (two Tensors by position) runs the forward and records
    the node without binding arguments; any other call goes through the general path, which
    raises PyTorch's errors.  For an op whose forward requires one dtype: tensors of two
    dtypes reach it as they are (its own dtype error).  Registers both and returns them."""
    name, forward, kinds, record = spec.name, spec.forward, spec.kinds, spec.record
    general = OPS[spec.key]["fn"]
    method = OPS.get(f"_{spec.key}_method", {}).get("fn", general)
    cls = spec.node_cls
    # a product's node keeps each input for the other's gradient (recorded inline)
    cross = spec.saved == spec.inputs and spec.saved_for == ((1,), (0,)) and \
        spec.bw is not None

    def make(fallback):
        def f(*args, **kwargs):
            if len(args) != 2 or kwargs:
                return fallback(*args, **kwargs)
            a, b = args
            try:
                x, y = a._data, b._data
            except AttributeError:
                return fallback(*args)
            if (x.dtype.kind not in kinds or y.dtype.kind not in kinds) and x.dtype is y.dtype:
                return fallback(*args)  # (bfloat16: computed in float32, rounded once)
            try:
                r = forward(x, y)
            except RuntimeError:
                edges_first(a, b)  # a stale view's error comes before the op's own
                raise
            if not cross:
                return record(r, args, _NO_PARAMS)
            ra, rb = a._requires_grad, b._requires_grad
            if not ((ra or rb) and STATE.enabled):
                return _make(r)
            res = _make(r)
            res._requires_grad = True
            res._grad_fn = node = cls((edge_of(a), edge_of(b)),
                                      (Saved(a) if rb else None, Saved(b) if ra else None),
                                      r.dtype)
            if RECORD_HOOKS:
                for h in RECORD_HOOKS:
                    h(res, node)
            return res
        f.__name__ = f.__qualname__ = name
        f.__module__, f.__doc__ = general.__module__, general.__doc__
        f.__signature__ = general.__signature__
        return f

    f, m = make(general), make(method)
    OPS[spec.key]["fn"] = f
    if method is not general:
        OPS[f"_{spec.key}_method"]["fn"] = m
    return f, m


# --- ops of a list of tensors ----------------------------------------------------------------
# ``defop(..., inputs=("tensors",))`` declares an op whose tensor input is PyTorch's TensorList
# (cat, stack): the forward gets the list of arrays, the node has one edge per tensor, the
# backward returns one gradient per tensor, and the tensors' shapes are kept after the saved
# values (``ctx.shapes``).

def _tensor_list(tensors, name: str) -> list:
    """The arrays of ``tensors``, checked as PyTorch's TensorList argument (a tuple or list of
    Tensors)."""
    if type(tensors) is not list and type(tensors) is not tuple and \
            not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {D.type_name(tensors)}")
    try:
        return [t._data for t in tensors]
    except AttributeError:
        pass
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{D.type_name(t)}")
    return [t._data for t in tensors]


def _list_public(self):
    """The public function of an op of a list of tensors: PyTorch's argument errors, the
    tensors in their common dtype (each gradient cast back to its tensor's), every dtype
    taken as it is (the ops move data), ``dims`` type-checked (the forward wraps them: the
    rank comes from the list)."""
    spec, name = self, self.name
    light = _light_sig(self.forward).parameters
    params = list(light)[1:]
    defaults = {p: light[p].default for p in params}
    n_params = len(params)
    n_req = sum(1 for v in light.values() if v.default is _P.empty)
    dim_params = tuple((i, p) for i, p in enumerate(params) if p in spec.dims)
    forward = self.forward

    def f(tensors=_MISSING, *rest, **kwargs):
        if tensors is _MISSING:
            raise TypeError(f'{name}() missing 1 required positional arguments: "tensors"')
        if len(rest) > n_params:
            raise TypeError(f"{name}() takes from {n_req} to {n_params + 1} positional "
                            f"arguments but {len(rest) + 1} were given")
        arrays = _tensor_list(tensors, name)
        if len(rest) == n_params:
            pvals = dict(zip(params, rest))
        else:
            pvals = dict(defaults)
            pvals.update(zip(params, rest))
        if kwargs:
            for k in kwargs:
                if k not in defaults:
                    raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
                if k in params[:len(rest)]:
                    raise TypeError(f"{name}() got multiple values for argument '{k}'")
            pvals.update(kwargs)
        for i, p in dim_params:
            v = pvals[p]
            if type(v) is not int:
                pvals[p] = D.int_arg(v, name, p, i + 2 if i < len(rest) else None)
        casts = None
        dt = arrays[0].dtype if arrays else None
        for a in arrays:
            if a.dtype is not dt and a.dtype != dt:
                arrays, casts = _to_common(tensors, arrays)
                break
        try:
            r = forward(arrays, **pvals)
        except RuntimeError:
            edges_first(*tensors)  # a stale view's error comes before the op's own
            raise
        return spec.record(r, tensors, pvals, casts)

    return f


OpSpec._list_public = _list_public


def _plain_ctx(spec) -> type:
    """The ``ctx`` class of a declared op whose node keeps no tensor (most shape ops): its
    saved values read straight from the node, with nothing to unpack or version-check."""
    n = len(spec.saved)
    ns = {"__slots__": ("_node", "_graph", "_s"), "_only": None, "needs": Ctx.needs,
          "op": Ctx.op, "__doc__": f"What the backward of {spec.name} reads.",
          # a list input's shapes, kept after the saved values
          "shapes": property(lambda c: c._s[n:])}
    for i, name in enumerate(spec.saved):
        ns[name] = property(lambda c, i=i: c._s[i])
    return type("Ctx", (), ns)


def _node_bw_plain(self, g, graph):
    """The backward of a declared op whose node keeps no tensor (see ``_plain_ctx``)."""
    spec = type(self)._spec
    ctx = spec.plain_ctx()
    ctx._node, ctx._graph, ctx._s = self, graph, self._saved
    return tuple(spec.bw(ctx, g))


def int64_saved(spec: OpSpec, *names: str) -> OpSpec:
    """Saved ints ``names`` of ``spec``'s node shown as PyTorch shows its int64 values (a
    negative one through uint64: -1 reads 2**64 - 1), as dims are."""
    named = spec.node_cls._named_saved
    for n in names:
        named[n] = (named[n][0], "dim")
    return spec


Ctx.shapes = property(lambda self: self._node._saved[len(type(self._node)._spec.saved):],
                      doc="The shapes of the tensors of a list input (cat's sizes).")

# --- views ---------------------------------------------------------------------------------
def _view_node_fw(self, tangents):
    # the formula's ctx is the node itself: a view node keeps no tensor, only sizes and
    # arguments, which its class shows as attributes (nothing to unpack or version-check)
    return [type(self)._spec.fw(self, *tangents)]


def _same_names(cls, **kwargs):
    """A subclass of a view node (its complex twin, an in-place form) names its saved values
    as its base does."""
    if "_named_saved" not in cls.__dict__:
        cls._named_saved = cls.__base__._named_saved


def _view_classes(spec, nodes, saved):
    """The node classes of a view op, one per overload (``nodes[k]`` keeping ``saved[k]``),
    sharing the declaration's backward; each shows its saved values as attributes."""
    out = []
    every = {m for names in saved for m in names}
    for k, (n, names) in enumerate(zip(nodes, saved)):
        out.append(type(n, (Node,), {
            "__slots__": (), "__module__": spec.forward.__module__, "_spec": spec,
            "_named_saved": {m: (i, "dim" if "dim" in m else "same") for i, m in enumerate(names)},
            # the formula reads a value another overload keeps as None
            **{m: property(lambda c: None) for m in every},
            **{m: property(lambda c, i=i: c._saved[i]) for i, m in enumerate(names)},
            "_fw_rule": None, "_needs_saved": False, "__init_subclass__": _same_names,
            "_holomorphic": spec.node_cls._holomorphic,
            "__doc__": f"Backward of {spec.name} (a view; declared with defview)."}))
    return tuple(out)


def defview(name: str, *, node, saved=(), batch=None, method: bool = True,
            function: bool = True, methods: tuple = (), aliases: tuple = (),
            holomorphic: bool = True, not_view: Callable | None = None, multi: bool = False):
    """Declare a view op: ``forward(self, *args)`` gets the input's array and the arguments
    as given, checks them with PyTorch's errors and returns an ndarray view of the array (or
    ``(view, k)`` naming overload ``k``).  The result shares storage, version counter and base
    with the input and replays the same call on its base after in-place changes
    (``views.make_view``); the node keeps no tensor, only ``saved``: ``self_sym_sizes`` (the
    input's shape) and arguments by name, as given (a ``*args`` parameter as one tuple).
    ``node``/``saved``: one name and one tuple, or one per overload (``squeeze()``,
    ``squeeze(dim)``, ``squeeze(dims)``).  ``not_view(input, array)``: the result when the
    forward returns ``(array, None)`` (reshape's copy).  ``multi=True``: the forward returns a
    list of views (split, unbind), which share one node (each its output) and, as PyTorch's
    multi-output views, refuse in-place changes; its backward gets their gradients as a list
    (one gradient alone when there is one view).  The backward's and ``.jvp``'s ctx is the
    node: ``ctx.<saved name>`` (None for a value only another overload keeps).  Without
    ``.jvp`` forward mode differentiates the backward formula (linear) instead."""
    nodes = (node,) if isinstance(node, str) else tuple(node)
    saveds = (tuple(saved),) if isinstance(node, str) else tuple(tuple(s) for s in saved)

    def deco(forward):
        spec = defop(name, node=nodes[0], saved=saveds[0], batch=batch, method=False,
                     function=False, holomorphic=holomorphic)(forward)
        for key in [k for k in OPS if OPS[k].get("spec") is spec]:
            del OPS[key]  # registered below with the view's public function
        # (a saved value named otherwise than its parameter: "split_size=split_size_or_sections")
        classes = _view_classes(spec, nodes, [[m.partition("=")[0] for m in names]
                                              for names in saveds])
        spec.node_cls = classes[0]
        spec.view_classes = classes
        sig = inspect.signature(forward)
        f = _view_public(name, forward, sig, classes, saveds, not_view, multi)
        f.__name__ = f.__qualname__ = name
        f.__module__ = forward.__module__
        f.__doc__ = forward.__doc__
        f.__signature__ = sig.replace(parameters=[
            p.replace(name="input") if i == 0 else p for i, p in enumerate(sig.parameters.values())])
        spec.fn, spec.key = f, name
        spec.jvp = lambda fn: _view_jvp(spec, fn)
        spec.backward = lambda fn: _view_backward(spec, fn)
        for key in (name,) + tuple(aliases):
            op(key, method=method, function=function, methods=methods)(f)
            OPS[key].update(spec=spec, nodes=tuple(c.__name__ for c in classes))
        return spec
    return deco


def _dim_value(v):
    """A saved dim argument as PyTorch's node keeps it (see ``raw_dim``/``raw_dims``)."""
    return raw_dims(v) if isinstance(v, (tuple, list)) else raw_dim(v)


def _view_public(name, forward, sig, classes, saveds, not_view, multi=False):
    """The public function of a view op, generated with the forward's own parameters (an
    exact signature is cheaper to call through than ``*args, **kwargs``): the forward on the
    input's array, then ``views.make_view`` with the node of the overload and its saved values
    (only when recording), and the call replayed on the base after in-place changes."""
    from .views import make_view
    ps = list(sig.parameters.values())[1:]
    params, call, ns = [], [], {"_forward": forward, "_make_view": make_view, "_state": STATE,
                                "_classes": classes, "_not_view": not_view, "_Tensor": Tensor,
                                "_edges_first": edges_first, "_D": D, "_dim_value": _dim_value,
                                "_raw_dims": raw_dims, "_defaults": {}}
    for p in ps:
        if p.kind is p.VAR_POSITIONAL:
            params.append("*" + p.name)
            call.append("*" + p.name)
        elif p.kind is p.KEYWORD_ONLY:
            if not any(x.startswith("*") for x in params):
                params.append("*")
            params.append(p.name if p.default is p.empty else f"{p.name}=_defaults[{p.name!r}]")
            call.append(f"{p.name}={p.name}")
        else:
            params.append(p.name if p.default is p.empty else f"{p.name}=_defaults[{p.name!r}]")
            call.append(p.name)
        if p.default is not p.empty:
            ns["_defaults"][p.name] = p.default
    var = next((p.name for p in ps if p.kind is p.VAR_POSITIONAL), None)

    def value(m):
        m = m.partition("=")[2] or m
        if m == "self_sym_sizes":
            return "d.shape"
        if m == var:
            return (f"_raw_dims({m}[0] if len({m}) == 1 and isinstance({m}[0], (tuple, list)) "
                    f"else {m})")
        if "dim" in m:
            return f"({m} if type({m}) is int else _dim_value({m}))"
        return f"({m} if type({m}) is not list else tuple({m}))"  # (a list kept as a tuple)

    packs = ["(" + "".join(value(m) + ", " for m in names) + ")" for names in saveds]
    args = ", ".join(call)
    lines = [f"def {name}(input{''.join(', ' + x for x in params)}):",
             "    try:",
             "        d = input._data",
             "    except AttributeError:",
             f"        raise TypeError(\"{name}(): argument 'input' (position 1) must be Tensor, \""
             "\n                        f\"not {_D.type_name(input)}\") from None",
             "    try:",
             f"        r = _forward(d, {args})",
             "    except RuntimeError:",
             "        _edges_first(input)  # a stale view's error comes first, as in PyTorch",
             "        raise"]

    def saving(indent, k_known):
        """The lines setting ``saved`` (only when recording), for overload ``k``."""
        pad = " " * indent
        if k_known is not None:
            return [f"{pad}saved = {packs[k_known]} if _state.enabled and "
                    f"input._requires_grad else ()"]
        out = [f"{pad}saved = ()", f"{pad}if _state.enabled and input._requires_grad:"]
        for k, pk in enumerate(packs):
            out += [f"{pad}    {'if' if k == 0 else 'elif'} k == {k}:",
                    f"{pad}        saved = {pk}"]
        return out

    replay = (f"lambda x: {name}(x, {args}){'[i]' if multi else ''} if isinstance(x, _Tensor) "
              f"else _first(_forward(x, {args})){'[i]' if multi else ''}")
    ns["_first"] = _first
    if multi:
        from .views import _make_views
        ns["_make_views"] = _make_views
        lines += ["    k = 0",
                  "    if type(r) is tuple:",
                  "        r, k = r"]
        lines += saving(4, None if len(packs) > 1 else 0)
        lines += [f"    return tuple(_make_views(input, r, _classes[k], saved, [({replay}) for i in "
                  f"range(len(r))]))".replace("lambda x:", "lambda x, i=i:")]
    else:
        if len(classes) > 1 or not_view is not None:
            # another overload (the forward returned ``(view, k)``), or no view at all
            lines += ["    if type(r) is tuple:",
                      "        r, k = r",
                      "        if k is None:",
                      "            return _not_view(input, r)"]
            lines += saving(8, None)
            lines += [f"        return _make_view(input, r, _classes[k], saved, {replay})"]
        lines += saving(4, 0)
        lines += [f"    return _make_view(input, r, _cls, saved, {replay})"]
        ns["_cls"] = classes[0]
    # named as a file of the package (its nodes' creation site is the caller's frame above it)
    # and kept in linecache, so tracebacks show the generated lines
    import os
    src = "\n".join(lines) + "\n"
    fname = os.path.join(os.path.dirname(__file__), f"<view {name}>")

    def source():  # compiled on the first call
        import linecache
        linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
        return src
    return _compiled_lazily(source, ns, name, fname)


def _first(r):
    """A view forward's array (without the overload it named)."""
    return r[0] if type(r) is tuple else r


def _view_backward(spec, fn):
    """A view op's backward formula ``fn(ctx, grad)``, the ``_bw`` of every overload's node
    (its ctx is the node itself)."""
    spec.bw = fn
    if fn.__code__.co_argcount == 3:  # fn(ctx, grad, graph): the node's backward itself
        bw = fn
    else:
        def bw(self, g, graph):
            return fn(self, g)

    for c in spec.view_classes:
        c._bw = bw
    return fn


def _view_jvp(spec, fn):
    """A view op's forward-mode rule ``fn(ctx, tangent)`` (usually the same view of the
    tangent), for every overload's node."""
    spec.fw = fn
    for c in spec.view_classes:
        c._fw_rule = _view_node_fw
    return fn


__all__ += ["defview"]


# -- in-place forms with a node of their own ----------------------------------------------------
def inplace_node(spec: OpSpec, node: str) -> Callable:
    """The op of ``spec`` recording ``node`` (a subclass of the declared node, same backward and
    forward-mode rule) instead: what an in-place form applies when PyTorch gives it a node of
    its own (``polygamma_``: PolygammaBackward1)."""
    cls = type(node, (spec.node_cls,), {"__slots__": (), "__module__": spec.node_cls.__module__,
                                         "__doc__": f"The node of the in-place {spec.name}_."})
    fn = getattr(spec, "declared", spec.fn)

    def run(t, *args, **kwargs):
        r = fn(t, *args, **kwargs)
        if r._grad_fn is not None:
            r._grad_fn.__class__ = cls
        return r

    run.node_cls = cls
    return run


# -- ops whose every output carries a gradient (aminmax, var_mean) ------------------------------
def _unpacked_ctx(spec) -> Callable:
    """``make(self, graph)``: the ``ctx`` of ``spec``'s node ``self`` with every saved value
    unpacked at once (``_unpacking``), for a backward or forward-mode rule that reads them
    all."""
    return _unpacking(spec, "make(self, graph)", "c", lambda self, graph: Ctx(self, graph))


def _outputs_node_bw(self, g, graph):
    spec = type(self)._spec
    return tuple(spec.bw(spec.unpacked(self, graph), g))


def _outputs_node_fw(self, tangents):
    """One tangent per output: the declared rule returns them all."""
    spec = type(self)._spec
    return list(spec.fw(spec.unpacked(self, True), *tangents))


def every_output(spec: OpSpec) -> OpSpec:
    """Make every output of an op declared with ``outputs`` carry a gradient through its one
    node, as PyTorch's (aminmax, var_mean): the backward gets the tuple of the outputs'
    gradients (None for one that got none), the forward-mode rule returns one tangent per
    output, and ``saved`` may keep any output (``result`` the first, the others by their
    ``outputs`` names).  The public function reaches the recording through ``quick`` (or
    ``spec.record``)."""
    cls = spec.node_cls
    cls._nout = len(spec.outputs)
    cls._fw_rule = _outputs_node_fw
    cls._bw = _outputs_node_bw
    spec.unpacked = _unpacked_ctx(spec)
    inputs, extra = spec.inputs, spec.extra_outputs
    # what the node keeps, as one generated expression (the saved names are fixed)
    exprs = ["Saved(outs[0], True)" if n == "result" else
             f"Saved(outs[{extra.index(n) + 1}], True)" if n in extra else
             f"Saved(tensors[{inputs.index(n)}])" if n in inputs else
             f"raw_dims(raw[{n!r}])" if n in spec.dim_lists else f"raw[{n!r}]"
             for n in spec.saved]
    ns = {"Saved": Saved, "raw_dims": raw_dims}
    exec(f"def save(outs, tensors, raw):\n    return ({''.join(e + ', ' for e in exprs)})\n",
         ns)
    save, return_type, state = ns["save"], spec.return_type, STATE

    def record(r, tensors, raw, casts=None):
        outs = [_make(o) for o in r]
        if not state.enabled:
            return return_type(*outs)
        for t in tensors:
            if t._requires_grad:
                break
        else:
            return return_type(*outs)
        dt = r[0].dtype
        for i, o in enumerate(outs):
            o._requires_grad = True
            if i:
                o._output_nr = i
                if r[i].dtype != dt:  # a complex mean and its real variance: no one dtype
                    dt = None         # to cast incoming gradients to
        node = cls(tuple(map(edge_of, tensors)), save(outs, tensors, raw), dt)
        for o in outs:
            o._grad_fn = node
            if RECORD_HOOKS:
                for h in RECORD_HOOKS:
                    h(o, node)
        return return_type(*outs)

    def record1(r, input, raw):
        return record(r, (input,), raw)

    general = spec.fn

    def declared(input, *args, **kwargs):
        # bfloat16 in float32, rounded once (the general path would record the first output
        # only); anything else through the general path (its checks and errors)
        if isinstance(input, Tensor) and input._data.dtype == D.BF16 and not args:
            r = D.rounding(spec.forward)(input._data.astype(np.float32), **kwargs)
            return record(r, (input,), kwargs)
        return general(input, *args, **kwargs)

    spec.fn = spec.declared = declared
    spec.record, spec.record1 = record, record1
    return spec


# -- ops whose outputs are several pieces of the input that are not views (unsafe_split) --------
def _pieces_node_bw(self, g, graph):
    # the engine passes a single output's gradient alone: the formula always gets a list
    grads = list(g) if self._nout != 1 else [g]
    return tuple(type(self)._spec.bw(self, grads))


def _pieces_node_fw(self, tangents):
    """One tangent per piece: the declared rule returns them all."""
    return list(type(self)._spec.fw(self, tangents[0]))


def defpieces(name: str, *, node: str, saved: tuple = (), batch=None) -> Callable:
    """Declare an op whose result is a tuple of pieces of its input that share its memory
    but are not views (PyTorch's ``unsafe_split``): ``forward(self, *args)`` gets the input's
    array and the arguments (already checked by the public function), and returns the list of
    arrays.  Each piece is a tensor of its own (no base, its own version counter, so an
    in-place change of one is neither tracked nor refused), and all of them are the outputs of
    one node, which keeps no tensor, only ``saved``: ``self_sym_sizes`` (the input's shape) and
    arguments by name, as given; its class shows them as attributes (``_saved_dim``...).
    ``.backward(fn)``: ``fn(ctx, grads)`` gets the list of the pieces' gradients (None for
    one that got none) and returns the input's; ``.jvp(fn)``: ``fn(ctx, tangent)`` returns one
    tangent per piece (the ctx of both is the node).  ``batch``: the batching rule on arrays.
    The declaration's function is ``spec.declared(input, *args)``; the public function and
    method that check the arguments are made by the caller (``front``)."""
    def deco(forward):
        spec = defop(name, node=node, saved=tuple(saved), batch=batch, method=False,
                     function=False)(forward)
        for key in [k for k in OPS if OPS[k].get("spec") is spec]:
            del OPS[key]  # registered by the caller's public function
        cls = _view_classes(spec, (node,), [list(saved)])[0]
        cls.__doc__ = f"Backward of {name} (pieces that are not views; declared with defpieces)."
        cls._bw = _pieces_node_bw
        spec.node_cls = cls
        params = list(inspect.signature(forward).parameters)[1:]

        def value(n, d, args):
            if n == "self_sym_sizes":
                return d.shape
            v = args[params.index(n)]
            return _dim_value(v) if "dim" in n else tuple(v) if type(v) is list else v

        from .views import share_node

        def declared(input, *args):
            d = input._data
            outs = [Tensor._make(a) for a in forward(d, *args)]
            if STATE.enabled and input._requires_grad:
                share_node(outs, cls((edge_of(input),), tuple(value(n, d, args) for n in saved),
                                     d.dtype))
            return tuple(outs)

        declared.__name__ = declared.__qualname__ = name
        declared.__module__, declared.__doc__ = forward.__module__, forward.__doc__
        spec.fn = spec.declared = declared
        spec.key = name

        def backward(fn):
            spec.bw = fn
            return fn

        def jvp(fn):
            spec.fw = fn
            cls._fw_rule = _pieces_node_fw
            return fn
        spec.backward, spec.jvp = backward, jvp
        op(name, method=False)(declared)
        OPS[name].update(spec=spec, nodes=(node,))
        return spec
    return deco


__all__ += ["defpieces"]


# --- tensor inputs saved without an edge ----------------------------------------------------
def edgeless(spec: OpSpec, *names: str) -> OpSpec:
    """Tensor inputs ``names`` of declared op ``spec`` kept as PyTorch keeps a target it does
    not differentiate (soft_margin_loss's): saved and version-checked, but without an edge, so
    the node's ``next_functions`` are the other inputs' and the backward returns their
    gradients only (the caller refuses such an input that requires grad, with PyTorch's
    error)."""
    drop = frozenset(spec.inputs.index(n) for n in names)
    init = spec.node_cls.__init__

    def __init__(self, next_functions=(), saved=(), odt=None):
        init(self, tuple(e for i, e in enumerate(next_functions) if i not in drop), saved, odt)

    spec.node_cls.__init__ = __init__
    return spec


__all__ += ["edgeless"]


# --- a Tensor method taking a list argument as separate ints -------------------------------
def varargs_method(spec: OpSpec, param: str) -> OpSpec:
    """Make ``Tensor.<name>`` of ``spec``'s op take its int-list parameter ``param`` also as
    separate ints, as PyTorch's method does (``x.flip(0, 1)``, ``x.repeat(2, 3)``); the
    function (and any other call) is the declaration's.  Registered as ``_<name>_method``."""
    fn, name = spec.fn, spec.name

    def m(self, *args, **kwargs):
        if args and param not in kwargs:
            for a in args:
                if type(a) is not int and not (isinstance(a, np.integer) and
                                               not isinstance(a, np.bool_)):
                    break
            else:
                return fn(self, args, **kwargs) if kwargs else fn(self, args)
        if len(args) > 1:
            raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were given")
        if args and not isinstance(args[0], (tuple, list)):
            raise TypeError(f"{name}(): argument '{param}' (position 1) must be tuple of ints, "
                            f"not {D.type_name(args[0])}")
        return fn(self, *args, **kwargs)

    m.__name__ = m.__qualname__ = name
    m.__module__, m.__doc__ = fn.__module__, fn.__doc__
    info = OPS.pop(spec.key)  # the method's entry first: Tensor.<name> is this one
    op(f"_{spec.key}_method", function=False, method=False, methods=(spec.key,))(m)
    OPS[f"_{spec.key}_method"].update(spec=spec, nodes=info["nodes"])
    OPS[spec.key] = info
    return spec


# --- the backward's ctx, unpacked at once ----------------------------------------------------
_CTX: dict = {}  # node class -> its backward (``_direct_bw``)
_CODE: dict = {}  # generated source -> its compiled code (ops generating the same share it)


def _compiled(src: str, ns: dict, name: str, filename: str | None = None):
    """Function ``name`` of the generated ``src`` defined in ``ns``, compiled once per source
    under a file name of the package (so a node it creates names the caller's line)."""
    code = _CODE.get(src)
    if code is None:
        import os
        code = _CODE[src] = compile(
            src, filename or os.path.join(os.path.dirname(__file__), "<defop>"), "exec")
    exec(code, ns)  # noqa: S102 (generated from a declaration)
    return ns[name]


_STAND_IN: dict = {}  # function name -> compiled code of its stand-in


def _compiled_lazily(make_src: Callable, ns: dict, name: str, filename: str | None = None):
    """Function ``name`` of the source ``make_src()`` generates (adding what it needs to
    ``ns``), generated and compiled on its first call: until then a stand-in of the same
    identity runs, which takes the real code in its place, so importing compiles nothing."""
    code = _STAND_IN.get(name)
    if code is None:
        import os
        # (under a file name of the package, as _compiled's: a node created on the first call,
        # through the stand-in, names the caller's line, not the stand-in's)
        code = _STAND_IN[name] = compile(
            f"def {name}(*args, **kwargs):\n    _build()\n    return {name}(*args, **kwargs)\n",
            os.path.join(os.path.dirname(__file__), "<defop>"), "exec")

    def build():
        src = make_src()
        real = _compiled(src, dict(ns), name, filename)
        stand_in.__code__ = real.__code__
        stand_in.__defaults__, stand_in.__kwdefaults__ = real.__defaults__, real.__kwdefaults__

    ns["_build"] = build
    exec(code, ns)  # noqa: S102 (a fixed stand-in)
    stand_in = ns[name]
    return stand_in


def _direct_bw(spec) -> Callable:
    """The backward of a declared op's node: every saved value unpacked first (as PyTorch's
    node unpacks its saved variables before the formula runs), in PyTorch's order, into plain
    attributes of the formula's ``ctx`` (no lookup through ``__getattr__``), then the
    formula; generated from the saved names, so one call does it all."""
    return _unpacking(spec, "bw(self, g, graph)", "tuple(spec.bw(c, g))",
                      lambda self, g, graph: tuple(spec.bw(Ctx(self, graph), g)))


def _unpacking(spec, head: str, ret: str, general: Callable) -> Callable:
    """A generated function ``head`` that unpacks every saved value of ``spec``'s node
    ``self`` into a ctx ``c`` (the first invalid one reported, in PyTorch's order, as
    ``Ctx._unpack``) and returns ``ret``; ``general`` where the saved names cannot be
    attributes."""
    names = spec.saved
    if len(set(names)) != len(names) or not all(
            n.isidentifier() and not hasattr(Ctx, n) for n in names):
        return general
    lines = [f"def {head}:",
             "    s = self._saved"]
    tensors = set(spec.unpack_order)
    if len(tensors) > 1:
        for pos in spec.unpack_order:
            lines += [f"    v = s[{pos}]",
                      "    if type(v) is Saved and v.tensor_ref is None and "
                      "v.counter[0] != v.version:",
                      "        v.get(self, graph)"]
    lines += ["    c = new(C)",
              "    c._node = self",
              "    c._graph = graph",
              "    c._only = c._vals = None"]
    for i, n in enumerate(names):
        if i in tensors:
            lines += [f"    v = s[{i}]",
                      f"    c.{n} = v.get(self, graph) if type(v) is Saved else v"]
        else:
            lines.append(f"    c.{n} = s[{i}]")
    lines.append(f"    return {ret}")
    cls = type("Ctx", (Ctx,), {"__slots__": tuple(names),
                               "__doc__": f"What the backward of {spec.name} reads."})
    ns = {"Saved": Saved, "new": object.__new__, "C": cls, "spec": spec}
    return _compiled("\n".join(lines) + "\n", ns, head[:head.index("(")])


def _record_args(spec, record1, pos_params, defaults):
    """``record1`` for the quick call's arguments as given (``args``, ``kwargs``): the saved
    arguments read straight from them by a generated function, without building the dict
    of every argument."""
    if spec.bw is None or not spec.differentiable or spec.kept_for or spec.broadcast or \
            spec.not_implemented:
        def rec_raw(r, input, args, kwargs):
            raw = dict(defaults)
            raw.update(zip(pos_params, args[1:]))
            raw.update(kwargs)
            return record1(r, input, raw)
        return rec_raw

    consts = {}

    def arg(n):
        d = f"_d{len(consts)}"  # the default, a constant of the generated function
        consts[d] = defaults.get(n)
        if n in pos_params:
            j = pos_params.index(n) + 1
            return f"(args[{j}] if n > {j} else kwargs.get({n!r}, {d}))"
        return f"kwargs.get({n!r}, {d})"

    exprs = ["Saved(res, True)" if n == "result" else "Saved(input)" if n in spec.inputs else
             "tuple(input._data.shape)" if n in spec.sizes_of else
             f"raw_dims({arg(n)})" if n in spec.dim_lists else
             f"Saved(extra[{spec.extra_outputs.index(n)}])" if n in spec.extra_outputs else
             f"saved_arg({arg(n)})" if n in spec.index_args else
             arg(n) for n in spec.saved]
    ns = {"Saved": Saved, "raw_dims": raw_dims, **consts, "_make": _make, "saved_arg": saved_arg,
          "edge_of": edge_of, "RECORD_HOOKS": RECORD_HOOKS, "cls": spec.node_cls,
          "return_type": getattr(spec, "return_type", None)}
    outs, ret = [], "    return res"
    if spec.outputs:
        outs = ["    r, extra = r[0], tuple([_make(o) for o in r[1:]])"]
        ret = "    return return_type(res, *extra)"
    src = "\n".join(
        ["def rec(r, input, args, kwargs):"] + outs +
        ["    n = len(args)",
         "    res = _make(r)",
         "    res._requires_grad = True",
         f"    res._grad_fn = node = cls((edge_of(input),), ({''.join(e + ', ' for e in exprs)}),"
         " r.dtype)",
         "    if RECORD_HOOKS:",
         "        for h in RECORD_HOOKS:",
         "            h(res, node)", ret]) + "\n"
    return _compiled(src, ns, "rec")


def _positional_call(spec, slow, pos_params, n_min, defaults, record):
    """The public function of an op of one tensor and other arguments, generated from the
    forward's parameters: a call by position only (the common one) runs the forward with the
    arguments as locals (dims wrapped into range); any other call goes to ``slow`` (the quick
    call taking keywords, then the general path's checks and errors)."""
    n_max = len(pos_params) + 1
    ns = {"slow": slow, "Tensor": Tensor, "kinds": spec.kinds, "forward": spec.forward,
          "_dim": _dim, "edges_first": edges_first, "quiet_on": quiet_on, "_make": _make,
          "quiet_off": quiet_off, "STATE": STATE, "record": record, "record_args": None}
    return _compiled_lazily(lambda: _positional_src(spec, ns, pos_params, n_min, n_max,
                                                    defaults), ns, "f")


def _positional_src(spec, ns, pos_params, n_min, n_max, defaults) -> str:
    """The source of ``_positional_call``'s function (its constants added to ``ns``)."""
    names = [f"a{j}" for j in range(1, n_max)]
    lines = ["def f(*args, **kwargs):",
             "    n = len(args)",
             f"    if kwargs or not {n_min} <= n <= {n_max}:",
             "        return slow(*args, **kwargs)",
             "    input = args[0]",
             "    if not isinstance(input, Tensor):",
             "        return slow(*args)",
             "    d = input._data",
             "    if d.dtype.kind not in kinds:",
             "        return slow(*args)"]
    for j, p in enumerate(pos_params, 1):
        if j < n_min:
            lines.append(f"    a{j} = args[{j}]")
        else:
            ns[f"_d{j}"] = defaults[p]
            lines.append(f"    a{j} = args[{j}] if n > {j} else _d{j}")
        if p in spec.dims:  # ints wrapped into range (PyTorch's IndexError), others: slow
            lines += [f"    if type(a{j}) is not int:",
                      "        return slow(*args)",
                      f"    if not 0 <= a{j} < d.ndim:",
                      f"        a{j} = _dim(a{j}, d.ndim)"]
    call = f"forward(d{''.join(', ' + a for a in names)})"
    if getattr(spec.forward, "fp_safe", False):
        lines += ["    tok = quiet_on() if d.dtype.kind == 'c' else None"]
    else:
        lines += ["    tok = quiet_on()"]
    lines += ["    try:",
              f"        r = {call}",
              "    except RuntimeError:",
              "        edges_first(input)  # a stale view's error comes before the op's own",
              "        raise",
              "    finally:",
              "        if tok is not None:",
              "            quiet_off(tok)"]
    if not spec.differentiable and not spec.outputs:
        lines.append("    return _make(r)")
    else:
        lines += ["    if STATE.enabled and input._requires_grad:",
                  "        return f.record_args(r, input, args, kwargs)",
                  # (a result without a node: one output is the array wrapped)
                  "    return record(r, (input,), None)" if spec.outputs else
                  "    return _make(r)"]
    return "\n".join(lines) + "\n"
# --- ops of one tensor and several outputs, no other argument (frexp) ---------------------------
def _unary_or_outputs(self, cls=None):
    """``_unary_public``, except for an op of several outputs (``frexp``): None, so its public
    function is the one-tensor path, which returns them as PyTorch's named tuple."""
    if self.outputs and cls is None:
        return None
    return _unary_public(self, cls)


OpSpec._unary_public = _unary_or_outputs


# --- an elementwise op of two tensors whose second is not named ``other`` (pow's exponent) ---
def _binary_public_named(self, p):
    """``_binary_public`` taking the second input by its own name as a keyword
    (``pow(x, exponent=2)``): the same function with that parameter renamed."""
    f = _binary_public(self, p)
    name = self.inputs[1]
    if name == "other":
        return f
    import types
    co = f.__code__
    co = co.replace(co_varnames=tuple(name if v == "other" else v for v in co.co_varnames))
    return types.FunctionType(co, f.__globals__, f.__name__, f.__defaults__, f.__closure__)


OpSpec._binary_public = _binary_public_named


class _Args(_Args):  # noqa: F811 - the same ctx, with the second input's other name
    """``_Args`` for an elementwise op of two tensors whose second input is ``exponent``."""

    __slots__ = ("exponent",)


# --- random fills in place (uniform_, normal_, bernoulli_...) --------------------------------
from . import _dual as _X  # noqa: E402
from .._record import record as _record  # noqa: E402


def _random_batch(spec, arrays, params):
    """Batching rule of a fill (vmap's randomness="different"): one draw for the whole batch,
    each sample its own numbers."""
    return spec.forward(*arrays, **params)


class RandomSpec:
    """The declaration of an in-place random fill (see ``defrandom``)."""

    differentiable, linear, elementwise = True, True, False
    dims = dim_lists = outputs = extra_outputs = saved = ()

    def __init__(self, name, prepare, classes, inputs):
        self.name = self.key = name
        self.prepare, self.inputs = prepare, inputs
        self.node_classes, self.node_cls = classes, classes[0]
        self.batch = _random_batch

    def forward(self, self_array, *args, **kwargs):
        """The numbers the fill writes into an array like ``self_array`` (``self_array``
        itself is left as it is)."""
        draw = self.prepare(self_array, *args, **kwargs)[0]
        return np.asarray(draw(self_array.shape, self_array.dtype)).astype(self_array.dtype,
                                                                           copy=False)


def _random_bw(self, g, graph):
    """A fill's gradient, PyTorch's ``zeros_like(grad)`` for the overwritten tensor (and zeros
    of their own shape and dtype for tensor arguments: bernoulli_'s probabilities)."""
    return (_X.zeros_like(g),) + tuple(_X.zeros(s, g, dt) for s, dt in self._saved)


def _random_fw(self, tangents):
    """A fill's forward-mode tangent: zero (PyTorch's ``self_t.zero_()``)."""
    out = self.__dict__["_fw_pending"][0]._data
    return [_make(np.zeros(out.shape, out.dtype))]


def defrandom(name: str, *, node, inputs: tuple = ("self",)):
    """Declare an in-place random fill, ``Tensor.<name>``: ``prepare(self, *args, generator=None,
    ...)`` gets the tensor's array and the arguments as given, checks them with PyTorch's
    errors in PyTorch's order and returns ``(draw, k)``: ``draw(shape, dtype)`` gives the numbers
    (consuming the generator, once per fill) and ``k`` names the overload whose node
    ``node[k]`` is recorded (``node`` is one name or one per overload: random_(from, to),
    random_(to), random_()).  ``inputs``: a second name is a tensor argument PyTorch gives an
    edge (bernoulli_'s ``p``), passed to ``prepare`` as given.

    The fill is an in-place op (``inplace.apply``): the version counter moves, a leaf that
    requires grad is refused while recording, a view's base is rewritten.  On a tensor with
    history it records the overload's node, whose gradient is zero for every input
    (PyTorch's ``zeros_like(grad)``; a node that keeps no tensor, so it can be run twice) and
    whose forward-mode tangent is zero (PyTorch's ``self_t.zero_()``).  Under ``vmap`` the
    fill follows ``randomness=``: "error" refuses it, "different" fills every sample with its
    own numbers (one draw over the batch, ``_random_batch``), "same" is PyTorch's one draw
    shared by the samples (``func/_rules.random_op`` dispatches it)."""
    nodes = (node,) if isinstance(node, str) else tuple(node)

    def deco(prepare):
        classes = tuple(type(n, (Node,), {
            "__slots__": (), "__module__": prepare.__module__, "_named_saved": {},
            "_needs_saved": False, "_bw": _random_bw, "_fw_rule": _random_fw,
            "__doc__": f"Backward of {name} (a random fill: zero; declared with defrandom)."})
            for n in nodes)
        spec = RandomSpec(name, prepare, classes, tuple(inputs))
        from .inplace import apply

        def fill(self, *args, **kwargs):
            try:
                d = self._data
            except AttributeError:
                raise TypeError(f"descriptor '{name}' for 'torch._C.TensorBase' objects doesn't "
                                f"apply to a '{D.type_name(self)}' object") from None
            r = prepare(d, *args, **kwargs)
            draw, cls = r[0], classes[r[1]]
            ps = r[2:]

            def fn(old, *ps):
                od = old._data
                data = np.asarray(draw(od.shape, od.dtype)).astype(od.dtype, copy=False)
                if STATE.enabled and (old._requires_grad or any(t._requires_grad for t in ps)):
                    return _record(data, cls((edge_of(old),) + tuple(map(edge_of, ps)),
                                             tuple((t._data.shape, t._data.dtype) for t in ps)))
                return _make(data)

            return apply(self, fn, *ps)

        fill.__name__ = fill.__qualname__ = name
        fill.__module__, fill.__doc__ = prepare.__module__, prepare.__doc__
        spec.fn = fill
        op(name, function=False)(fill)
        OPS[name].update(spec=spec, nodes=nodes)
        return spec
    return deco


__all__ += ["defrandom"]


# --- ops on a tensor's storage (resize_) -------------------------------------------------------
class StorageSpec:
    """The declaration of an op on a tensor's storage (see ``defstorage``)."""

    differentiable = linear = elementwise = False
    node_cls = None
    dims = dim_lists = outputs = extra_outputs = saved = ()
    inputs = ("self",)

    def __init__(self, name, change, batch):
        self.name = self.key = name
        self.change, self.batch = change, batch

    def forward(self, self_array, *args, **kwargs):
        """The op on an array: a tensor holding a copy of ``self_array`` changed, its data."""
        t = _make(self_array.copy())
        self.change(t, *args, **kwargs)
        return t._data


def defstorage(name: str, *, batch: Callable, function: bool = False):
    """Declare ``Tensor.<name>``, an op on the tensor's storage: ``change(self, *args, ...)``
    gives the tensor another size (and storage) in place.  PyTorch has no derivative for such
    an op: a tensor that requires grad is refused with its error ("cannot resize variables
    that require grad"), in any grad mode, and nothing is recorded.  ``batch``: the batching
    rule, ``rule(spec, arrays, params)`` (``spec.forward`` runs the change on a copy of an
    array)."""
    def deco(change):
        spec = StorageSpec(name, change, batch)

        def f(self, *args, **kwargs):
            if isinstance(self, Tensor) and self.requires_grad:
                raise RuntimeError("cannot resize variables that require grad")
            return change(self, *args, **kwargs)

        f.__name__ = f.__qualname__ = name
        f.__module__, f.__doc__ = change.__module__, change.__doc__
        spec.fn = f
        op(name, function=function)(f)
        OPS[name].update(spec=spec)
        return spec
    return deco


__all__ += ["defstorage"]
