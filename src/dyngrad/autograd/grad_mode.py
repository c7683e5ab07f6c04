"""Grad modes: whether ops record a graph. Thread-local, usable as context managers and
decorators, like ``torch.no_grad``."""
from __future__ import annotations

import functools
import inspect
import sys
import threading
from .. import _warn


class _GradState(threading.local):
    enabled = True
    inference = False
    # grad mode is off for the user, but ops still record for forward AD's sake: inside a
    # dual level, ops on tensors carrying tangents give dual outputs whatever the grad mode
    # (the record observer of forward_ad strips every other output of its history)
    fw_only = False


STATE = _GradState()
# how many inference_mode(True) blocks are open in all threads: tensor creation reads this
# cheap global first and the thread-local flag only when some block is open
INFERENCE_BLOCKS = [0]
# the active forward-AD level (autograd.forward_ad), read here so backward checks it cheaply
DUAL_LEVEL: list = []


def is_grad_enabled() -> bool:
    """True when ops record the graph in this thread."""
    return STATE.enabled and not STATE.fw_only


def _off():
    """Turn grad mode off: inside a dual level ops keep recording for the tangents only."""
    if DUAL_LEVEL:
        STATE.enabled = STATE.fw_only = True
    else:
        STATE.enabled = False


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _DecoratorContextManager:
    """Base for grad-mode switches that work both as ``with`` blocks and as decorators."""

    def __call__(self, fn):
        if inspect.isclass(fn):
            _warn.warn(
                "Decorating classes is deprecated and will be disabled in "
                "future versions. You should only decorate functions or methods. "
                "To preserve the current behavior of class decoration, you can "
                "directly decorate the `__init__` method and nothing else.",
                FutureWarning)
            cls, fn = fn, (lambda *args, **kwargs: cls(*args, **kwargs))
        factory = self.clone
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(factory, fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with factory():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()


def _wrap_generator(factory, fn):
    """Run each step of a generator under the mode (and restore the caller's between steps),
    as PyTorch's decorated generators."""

    @functools.wraps(fn)
    def generator_context(*args, **kwargs):
        gen = fn(*args, **kwargs)
        try:
            with factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with factory():
                        gen.close()
                    raise
                except BaseException:
                    with factory():
                        response = gen.throw(*sys.exc_info())
                else:
                    with factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value

    return generator_context


class no_grad(_DecoratorContextManager):
    """Disable graph recording inside the block: results do not require grad.

    >>> import dyngrad as torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> with torch.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self, orig_func=None):
        self.prev = (True, False)

    def __enter__(self):
        self.prev = (STATE.enabled, STATE.fw_only)
        _off()

    def __exit__(self, *exc):
        STATE.enabled, STATE.fw_only = self.prev
        return False

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            self.__init__()
            return self(orig_func)
        return self


class enable_grad(_DecoratorContextManager):
    """Enable graph recording inside the block, even within ``no_grad``."""

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None:
            return self(orig_func)
        return self

    def __enter__(self):
        self.prev = (STATE.enabled, STATE.fw_only)
        STATE.enabled = True
        STATE.fw_only = False

    def __exit__(self, *exc):
        STATE.enabled, STATE.fw_only = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set graph recording on or off; takes effect at once, and as a context manager restores
    the previous mode on exit."""

    def __init__(self, mode: bool):
        self.prev = (STATE.enabled, STATE.fw_only)
        self.mode = mode
        self._set()

    def _set(self):
        if self.mode:
            STATE.enabled = True
            STATE.fw_only = False
        else:
            _off()

    def __call__(self, fn):
        # used as a decorator: the mode applies inside the function only
        STATE.enabled, STATE.fw_only = self.prev
        return super().__call__(fn)

    def __enter__(self):
        self._set()

    def __exit__(self, *exc):
        STATE.enabled, STATE.fw_only = self.prev
        return False

    def __str__(self):
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self.mode})"

    __repr__ = __str__

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, for pure inference: nothing is recorded inside the block."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)   # @inference_mode without parentheses

    def __init__(self, mode: bool = True):
        self.mode = mode

    def __enter__(self):
        # PyTorch's InferenceMode guard: inference_mode(False) turns grad mode back on
        self.prev = (STATE.enabled, STATE.inference, STATE.fw_only)
        on = bool(self.mode)
        STATE.enabled = not on
        STATE.inference = on
        STATE.fw_only = False  # no forward AD in inference mode, as in PyTorch
        if on:
            INFERENCE_BLOCKS[0] += 1

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference, STATE.fw_only = self.prev
        if self.mode:
            INFERENCE_BLOCKS[0] -= 1
        return False

    def clone(self):
        return inference_mode(self.mode)
