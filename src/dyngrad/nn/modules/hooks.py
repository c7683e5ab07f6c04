"""``BackwardHook``: runs a module's full backward hooks with the gradients w.r.t. its tensor
inputs and outputs, by wrapping inputs and outputs in identity autograd Functions."""
from __future__ import annotations

from ..._tensor import Tensor
from ...autograd.function import Function


def _flatten(obj):
    """The tensors in ``obj`` (a tensor or a tuple/list of them), and a way to rebuild it."""
    if isinstance(obj, Tensor):
        return [obj], lambda ts: ts[0]
    if isinstance(obj, (tuple, list)):
        idx = [i for i, v in enumerate(obj) if isinstance(v, Tensor)]

        def rebuild(ts):
            out = list(obj)
            for i, t in zip(idx, ts):
                out[i] = t
            return type(obj)(out) if not hasattr(obj, "_fields") else type(obj)(*out)

        return [obj[i] for i in idx], rebuild
    return [], lambda ts: obj


class _Identity(Function):
    """Passes tensors through unchanged; its backward hands the gradients to a callback."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        ctx.set_materialize_grads(False)
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + tuple(ctx.callback(grads))


class BackwardHook:
    """One forward call's bookkeeping: ``setup_input`` before ``forward``, ``setup_output``
    after; the hooks run once the gradients w.r.t. the inputs are known."""

    def __init__(self, module, hooks, pre_hooks=()):
        self.module = module
        self.hooks = list(hooks)
        self.pre_hooks = list(pre_hooks)
        self.n_inputs = 0
        self.input_requires_grad = ()
        self.grad_outputs = None

    def _run_hooks(self, grad_inputs):
        for hook in self.hooks:
            r = hook(self.module, grad_inputs, self.grad_outputs)
            if r is not None:
                r = tuple(r) if isinstance(r, (tuple, list)) else (r,)
                if len(r) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                       f"got {len(r)}, but expected {len(grad_inputs)}")
                grad_inputs = r
        return grad_inputs

    def setup_input(self, args):
        """Wrap the tensor arguments so their gradients reach the hooks."""
        tensors, rebuild = _flatten(args)
        self.n_inputs = len(tensors)
        self.input_requires_grad = tuple(t.requires_grad for t in tensors)
        if not any(self.input_requires_grad):
            return args

        def on_input_grads(grads):
            grads = tuple(g if rg else None for g, rg in zip(grads, self.input_requires_grad))
            return self._run_hooks(grads)

        wrapped = _Identity.apply(on_input_grads, *tensors)
        return rebuild(list(wrapped))

    def setup_output(self, result):
        """Wrap the outputs so the hooks see the gradients w.r.t. them."""
        tensors, rebuild = _flatten(result)
        if not tensors or not any(t.requires_grad for t in tensors):
            return result

        def on_output_grads(grads):
            grads = tuple(grads)
            for hook in self.pre_hooks:
                r = hook(self.module, grads)
                if r is not None:
                    grads = tuple(r) if isinstance(r, (tuple, list)) else (r,)
            self.grad_outputs = grads
            if not any(self.input_requires_grad) and self.hooks:
                self._run_hooks((None,) * max(self.n_inputs, 1))
            return grads

        wrapped = _Identity.apply(on_output_grads, *tensors)
        if not isinstance(wrapped, tuple):
            wrapped = (wrapped,)
        return rebuild(list(wrapped))
