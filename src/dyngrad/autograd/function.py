"""Custom differentiable operations: subclass ``Function`` with static ``forward`` and
``backward``, call ``.apply``.  The node it records is named ``<ClassName>Backward``."""
from __future__ import annotations

import functools

import numpy as np

from .grad_mode import STATE
from .node import Node, edge_of, NO_EDGE


class FunctionCtx:
    """The ``ctx`` passed to forward and backward: saves tensors and flags between them."""

    def save_for_backward(self, *tensors):
        from .graph import saved_tensors_hooks
        self._to_save = tensors
        hooks = saved_tensors_hooks.stack[-1] if saved_tensors_hooks.stack else None
        self._saved_hooks = hooks

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool):
        self.materialize_grads = bool(value)

    materialize_grads = True
    needs_input_grad = ()


class BackwardCFunction(Node, FunctionCtx):
    """The node of one custom Function call; it is also the ``ctx``."""

    __slots__ = ()
    _fn_cls = None

    @property
    def saved_tensors(self):
        saved = self._saved
        if saved is None:
            from . import errors
            raise RuntimeError(errors.FREED)
        out = []
        for item in saved:
            if item is None:
                out.append(None)
                continue
            t, version, packed = item
            if packed is not None:
                out.append(self._saved_hooks[1](packed))
                continue
            if t._version[0] != version:
                from . import errors
                from .node import Saved
                s = Saved.__new__(Saved)
                s.value, s.counter, s.version, s.is_output = t, t._version, version, False
                raise errors.modified_inplace(s, self)
            out.append(t)
        return tuple(out)

    @property
    def saved_variables(self):
        return self.saved_tensors

    def _bw(self, g, graph):
        from .._tensor import Tensor
        from .grad_mode import enable_grad, no_grad
        gs = [g] if self._nout == 1 else list(g)
        wrapped = []
        for i, x in enumerate(gs):
            if x is None:
                if self.materialize_grads:
                    shape, dt = self._out_meta[i]
                    x = np.zeros(shape, dt)
                else:
                    wrapped.append(None)
                    continue
            wrapped.append(x if isinstance(x, Tensor) else Tensor._make(x))
        ctx_mode = enable_grad() if graph else no_grad()
        with ctx_mode:
            res = self._fn_cls.backward(self, *wrapped)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self.next_functions)
        if len(res) < n:
            raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of "
                               f"gradients (expected {n}, got {len(res)})")
        if len(res) > n:
            if any(r is not None for r in res[n:]):
                raise RuntimeError(f"function {type(self).__name__} returned an incorrect number "
                                   f"of gradients (expected {n}, got {len(res)})")
            res = res[:n]
        out = []
        for (fn, _), r, meta in zip(self.next_functions, res, self._in_meta):
            if r is None or fn is None:
                out.append(None)
                continue
            if not isinstance(r, Tensor):
                raise TypeError(f"function {type(self).__name__} returned a gradient of type "
                                f"{type(r).__name__}; expected a Tensor or None")
            if meta is not None and tuple(r._data.shape) != meta:
                try:
                    from ..ops._graph import sum_to
                    r = sum_to(r, meta) if graph else Tensor._make(sum_to(r._data, meta))
                except Exception:
                    raise RuntimeError(f"Function {type(self).__name__} returned an invalid "
                                       f"gradient at index {len(out)} - got {list(r.shape)} but "
                                       f"expected shape compatible with {list(meta)}") from None
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
    def setup_context(ctx, inputs, output):
        return None

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor
        from .grad_mode import no_grad
        tensor_args = [a if isinstance(a, Tensor) else None for a in args]
        needs = tuple(a is not None and a._requires_grad for a in tensor_args)
        recording = STATE.enabled and any(needs)
        node = cls._backward_cls(tuple(edge_of(a) if a is not None else NO_EDGE
                                       for a in tensor_args), ())
        node.needs_input_grad = needs
        custom_setup = cls.setup_context is not Function.setup_context
        with no_grad():
            if custom_setup:
                outputs = cls.forward(*args, **kwargs)
                cls.setup_context(node, args, outputs)
            else:
                outputs = cls.forward(node, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        dirty = getattr(node, "_dirty", ())
        non_diff = getattr(node, "_non_diff", ())
        if recording:
            for d in dirty:
                if d._grad_fn is None and d._requires_grad:
                    from . import errors
                    raise errors.leaf_inplace(False)
            result = []
            n_out = 0
            for o in outs:
                if isinstance(o, Tensor):
                    if any(o is a for a in tensor_args) and not any(o is d for d in dirty):
                        o = o.view_as(o) if hasattr(o, "view_as") else o
                        o = Tensor._make(o._data) if o._grad_fn is not None else o
                    nd = any(o is x for x in non_diff)
                    if not nd and o._data.dtype.kind in "fc":
                        if o._grad_fn is None and o._requires_grad and not any(o is d for d in dirty):
                            o = Tensor._make(o._data)
                        o._requires_grad = True
                        o._grad_fn = node
                        if n_out:
                            o._output_nr = n_out
                    n_out += 1
                result.append(o)
            node._nout_set = n_out
            if n_out != 1:
                node.__dict__["_nout"] = max(n_out, 1)
            node._out_meta = [(o._data.shape, o._data.dtype) for o in result if isinstance(o, Tensor)]
            node._in_meta = [tuple(a._data.shape) if a is not None else None for a in tensor_args]
            to_save = getattr(node, "_to_save", ())
            hooks = getattr(node, "_saved_hooks", None)
            saved = []
            for t in to_save:
                if t is None:
                    saved.append(None)
                elif hooks is not None:
                    saved.append((t, t._version[0], hooks[0](t)))
                else:
                    saved.append((t, t._version[0], None))
            node._saved = tuple(saved)
            outs = tuple(result)
        else:
            to_save = getattr(node, "_to_save", ())
            node._saved = tuple((t, t._version[0], None) if t is not None else None for t in to_save)
            node._in_meta = [None] * len(tensor_args)
        return outs[0] if single else outs


def once_differentiable(fn):
    """Mark a backward as not differentiable itself: it runs without recording a graph."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        from .grad_mode import no_grad
        with no_grad():
            return fn(ctx, *args)

    return wrapper


class InplaceFunction(Function):
    pass


class NestedIOFunction(Function):
    pass
