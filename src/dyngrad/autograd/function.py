"""Custom differentiable operations: subclass ``Function`` with static ``forward`` and
``backward``, call ``.apply``.  The node it records is named ``<ClassName>Backward``."""
from __future__ import annotations

import functools

import numpy as np

from . import errors
from .grad_mode import STATE
from .node import Node, Saved, edge_of
from .. import _warn
from .. import _dtype as _DT

__all__ = ["Function", "FunctionCtx", "BackwardCFunction", "once_differentiable",
           "InplaceFunction", "NestedIOFunction"]


# Called with (cls, args, kwargs) by Function.apply; NotImplemented: apply as usual.
APPLY_HOOKS: list = []


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


class FunctionCtx:
    """The ``ctx`` passed to forward and backward: saves tensors and flags between them."""

    def save_for_backward(self, *tensors):
        """Keep tensors for backward (read back with ``ctx.saved_tensors``, version-checked)."""
        Tensor = _tensor_cls()
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} is "
                                f"of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        """Keep tensors for ``jvp`` (forward-mode AD)."""
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        """Declare inputs that forward modified in place."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declare outputs that have no gradient (e.g. indices)."""
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool):
        """False: backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    materialize_grads = True
    needs_input_grad = ()
    _to_save = ()
    _dirty = ()
    _non_diff = ()


class BackwardCFunction(Node, FunctionCtx):
    """The node of one custom Function call; it is also the ``ctx``."""

    __slots__ = ()
    _fn_cls = None
    _plain = False     # the user's backward runs: the engine takes its exact path
    _user_code = True

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward`` (checked for in-place modification)."""
        saved = self._saved
        if saved is None:
            raise RuntimeError(errors.FREED)
        if saved == () and self._to_save:
            return tuple(self._to_save)  # still inside forward / setup_context
        return tuple(None if s is None else s.get(self, True) for s in saved)

    @property
    def saved_variables(self):
        return self.saved_tensors

    def apply(self, *grads):
        """Call the user's backward directly (as ``grad_fn.apply``)."""
        return self._fn_cls.backward(self, *grads)

    def _bw(self, g, graph):
        Tensor = _tensor_cls()
        from .grad_mode import enable_grad, no_grad
        gs = [g] if self._nout == 1 else list(g)
        wrapped = []
        for i, x in enumerate(gs):
            if x is None:
                if self.materialize_grads:
                    shape, dt = self._out_meta[i]
                    z = Tensor._make(np.zeros(shape, dt))
                    wrapped.append(z)
                else:
                    wrapped.append(None)
                continue
            wrapped.append(x if isinstance(x, Tensor) else Tensor._make(x))
        with (enable_grad() if graph else no_grad()):
            res = self._fn_cls.backward(self, *wrapped)
        if not isinstance(res, tuple):
            res = (res,)
        name = type(self).__name__
        n = len(self._arg_tensor)
        if len(res) != n:
            if len(res) < n or any(r is not None for r in res[n:]):
                raise RuntimeError(f"function {name} returned an incorrect number of gradients "
                                   f"(expected {n}, got {len(res)})")
            res = res[:n]
        out = []
        k = 0
        for i, r in enumerate(res):
            if not self._arg_tensor[i]:
                if r is not None:
                    raise RuntimeError(f"function {name} returned a gradient different than None "
                                       f"at position {i + 1}, but the corresponding forward input "
                                       f"was not a Variable")
                continue
            fn = self.next_functions[k][0]
            shape, dt = self._in_meta[k]
            k += 1
            if r is None or fn is None:
                out.append(None)
                continue
            if not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            if tuple(r._data.shape) != shape:
                from .._record import sum_to
                rs = tuple(r._data.shape)
                lead = len(rs) - len(shape)
                ok = lead >= 0 and all(s == 1 or s == q for s, q in zip(shape, rs[lead:]))
                if not ok:
                    raise RuntimeError(f"Function {name} returned an invalid gradient at index "
                                       f"{k - 1} - got {list(rs)} but expected shape compatible "
                                       f"with {list(shape)}")
                r = sum_to(r, shape) if graph else Tensor._make(sum_to(r._data, shape))
            if r._data.dtype != dt:
                r = r.to(dt) if graph else Tensor._make(r._data.astype(dt))
            out.append(r if graph else r._data)
        return tuple(out)


class _FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,),
                                 {"__slots__": (), "_fn_cls": cls})


class Function(metaclass=_FunctionMeta):
    """Base class of custom autograd operations.

    >>> import dyngrad as torch
    >>> class Square(torch.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * g
    >>> x = torch.tensor(3.0, requires_grad=True)
    >>> Square.apply(x).backward(); x.grad
    tensor(6.)
    """

    def __init__(self, *args, **kwargs):
        _warn.warn(f"{type(self)} should not be instantiated. Methods on autograd functions "
                   f"are all static, so you should invoke them on the class itself. "
                   f"Instantiating an autograd function will raise an error in a future "
                   f"version of PyTorch.", DeprecationWarning)

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is "
                           "deprecated. Please use new-style autograd function with static "
                           "forward method. (Example: https://pytorch.org/docs/stable/autograd."
                           "html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your "
                                  "custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        """The op under ``torch.func.vmap``: ``(output, out_dims)`` for inputs whose batch
        dims are ``in_dims`` (override it, or set ``generate_vmap_rule = True``)."""
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        if APPLY_HOOKS:  # inside torch.func transforms (dyngrad.func registers it)
            r = APPLY_HOOKS[0](cls, args, kwargs)
            if r is not NotImplemented:
                return r
        Tensor = _tensor_cls()
        from .grad_mode import no_grad
        is_t = tuple(isinstance(a, Tensor) for a in args)
        tensor_args = [a for a, t in zip(args, is_t) if t]
        recording = STATE.enabled and any(a._requires_grad for a in tensor_args)
        node = cls._backward_cls(tuple(edge_of(a) for a in tensor_args) if recording else (), ())
        node._arg_tensor = is_t
        node.needs_input_grad = tuple(t and recording and a._requires_grad
                                      for a, t in zip(args, is_t))
        custom_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            if custom_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, outputs)
            else:
                outputs = cls.forward(node, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else tuple(outputs)
        dirty = node._dirty
        non_diff = node._non_diff
        for d in dirty:
            d._vc[0] += 1
        if not recording:
            node._saved = None
            return outputs
        for d in dirty:
            if d._grad_fn is None and d._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
        result = []
        out_meta = []
        nr = 0
        for o in outs:
            if not isinstance(o, Tensor):
                result.append(o)
                continue
            is_dirty = any(o is d for d in dirty)
            if not is_dirty and any(o is a for a in tensor_args):
                # an input returned as is: the output is a new view of it
                v = Tensor._make(o._data)
                v._vc = o._vc
                v._base = o if o._base is None else o._base
                o = v
            if any(o is x for x in non_diff) or o._data.dtype not in _DT.INEXACT:
                if not is_dirty:
                    o._requires_grad = False
            else:
                if not is_dirty and (o._grad_fn is not None or o._requires_grad):
                    o = Tensor._make(o._data)
                o._requires_grad = True
                o._grad_fn = node
                if nr:
                    o._output_nr = nr
                elif "_output_nr" in o.__dict__:
                    del o.__dict__["_output_nr"]
            out_meta.append((o._data.shape, o._data.dtype))
            nr += 1
            result.append(o)
        if nr != 1:
            node.__dict__["_nout"] = max(nr, 1)
        node._out_meta = out_meta
        node._in_meta = [(tuple(a._data.shape), a._data.dtype) for a in tensor_args]
        saved = []
        for t in node._to_save:
            if t is None:
                saved.append(None)
                continue
            for o, orig in zip(result, outs):
                if orig is t and isinstance(o, Tensor):
                    t = o
                    break
            saved.append(Saved(t))
        node._saved = tuple(saved)
        from . import forward_ad
        if forward_ad._LEVEL:
            forward_ad._custom_function_jvp(cls, node, tensor_args, args, result)
        from .._record import RECORD_HOOKS, notify
        if RECORD_HOOKS:
            for o in result:
                if isinstance(o, Tensor) and o._grad_fn is node:
                    notify(o)
        return result[0] if single else tuple(result)


def once_differentiable(fn):
    """Mark a backward as not differentiable itself: it runs without recording a graph, and
    differentiating its result raises."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from .grad_mode import no_grad
        with no_grad():
            outputs = fn(ctx, *args)
        if not STATE.enabled:
            return outputs
        Tensor = _tensor_cls()
        if not any(isinstance(a, Tensor) and a._requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        edges = tuple(edge_of(a) for a in args if isinstance(a, Tensor) and a._requires_grad)
        res = []
        for o in outs:
            if isinstance(o, Tensor):
                o = Tensor._make(o._data)
                o._requires_grad = True
                o._grad_fn = DelayedError(edges, ())
            res.append(o)
        return res[0] if single else tuple(res)

    return wrapper


class DelayedError(Node):
    """Node whose backward raises: the gradient of a once_differentiable backward."""

    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


class InplaceFunction(Function):
    """A Function that may work in place (``inplace`` flag kept for compatibility)."""

    def __init__(self, inplace=False):
        self.inplace = inplace


class NestedIOFunction(Function):
    """Legacy base class kept for compatibility."""
