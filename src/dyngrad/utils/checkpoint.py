"""``dyngrad.utils.checkpoint``: activation checkpointing as PyTorch's.

``checkpoint(fn, *args, use_reentrant=...)`` runs ``fn`` and runs it again in backward to get
what its backward needs, with the random-number state of the first run (``preserve_rng_state``).

* ``use_reentrant=True`` (what a call without ``use_reentrant`` uses, after PyTorch's warning):
  the forward runs under ``no_grad``; backward re-runs ``fn`` with gradients on and calls
  ``backward`` on that (parameters' ``.grad`` filled from inside it). Only ``.backward()`` without
  ``inputs`` can go through it; keyword arguments are refused; without an input that requires
  grad the output needs no grad (PyTorch's warning).
* ``use_reentrant=False``: the forward runs with gradients on but every tensor its ops save
  for backward is replaced (saved-tensor hooks) by a placeholder; the first backward use of one
  re-runs ``fn`` and takes the recomputed tensors. ``autograd.grad``, keyword arguments and
  outputs that need grad only through parameters all work.
"""
from __future__ import annotations

import contextlib
import sys

from .. import autograd
from .._tensor import Tensor
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad, enable_grad
from .. import _warn

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "noop_context_fn"]


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    """Each tensor of ``inputs`` detached, with its requires_grad kept."""
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: ",
                       type(inputs).__name__)


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        _warn.warn("None of the inputs have requires_grad=True. Gradients will be None")


def _is_checkpoint_valid():
    """False when the backward running now is ``autograd.grad`` or ``backward(inputs=...)``."""
    from ..autograd import engine
    code = engine.run_backward.__code__
    f = sys._getframe(1)
    while f is not None:
        if f.f_code is code:
            loc = f.f_locals
            return loc.get("inputs") is None and not loc.get("capture")
        f = f.f_back
    return True


@contextlib.contextmanager
def _rng_state(state):
    """Run with the generator at ``state`` (None: as it is), restoring it afterwards."""
    if state is None:
        yield
        return
    from .. import _random
    now = _random.get_rng_state()
    _random.set_rng_state(state)
    try:
        yield
    finally:
        _random.set_rng_state(now)


class CheckpointFunction(Function):
    """Forward under no_grad; backward recomputes with grad and runs backward on it."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            from .. import _random
            ctx.fwd_cpu_state = _random.get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        with _rng_state(ctx.fwd_cpu_state if ctx.preserve_rng_state else None):
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True,"
                               " this checkpoint() is not necessary")
        autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None
                      for inp in detached_inputs)
        return (None, None) + grads


class _Frame:
    """One non-reentrant checkpoint: how to recompute, and the recomputed saved tensors."""

    def __init__(self, fn, args, kwargs, rng_state):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.rng_state = rng_state
        self.count = 0            # tensors saved during the forward
        self.recomputed = {}      # index -> tensor, filled by a recomputation

    def pack(self, t):
        i = self.count
        self.count += 1
        return (self, i)

    def recompute(self):
        from ..autograd.grad_mode import enable_grad
        from ..autograd.graph import saved_tensors_hooks
        got = []

        def pack(t):
            got.append(t)
            return None

        with _rng_state(self.rng_state), enable_grad(), \
                saved_tensors_hooks(pack, lambda _: None):
            self.fn(*self.args, **self.kwargs)
        if len(got) != self.count:
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\nNumber of tensors saved during forward: "
                f"{self.count}\nNumber of tensors saved during recomputation: {len(got)}.")
        self.recomputed = dict(enumerate(got))


def _unpack(packed):
    frame, i = packed
    if i not in frame.recomputed:
        frame.recompute()
    return frame.recomputed.pop(i)


def _checkpoint_without_reentrant(function, preserve, *args, **kwargs):
    from .. import _random
    from ..autograd.graph import saved_tensors_hooks
    frame = _Frame(function, args, kwargs, _random.get_rng_state() if preserve else None)
    with saved_tensors_hooks(frame.pack, _unpack):
        return function(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """``function(*args, **kwargs)`` without keeping its intermediate results for backward:
    they are recomputed when backward needs them (see the module)."""
    if use_reentrant is None:
        _warn.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if context_fn is not noop_context_fn:
        fwd_ctx, _ = context_fn()
        with fwd_ctx:
            return _checkpoint_without_reentrant(function, preserve, *args, **kwargs)
    return _checkpoint_without_reentrant(function, preserve, *args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list or ``nn.Sequential``) in ``segments`` chunks, checkpointing
    every chunk but the last."""
    if use_reentrant is None:
        _warn.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn.modules.container import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
