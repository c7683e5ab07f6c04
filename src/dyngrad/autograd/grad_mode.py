"""Grad modes: whether ops record a graph. Thread-local, usable as context managers and
decorators, like ``torch.no_grad``."""
from __future__ import annotations

import functools
import threading


class _GradState(threading.local):
    enabled = True
    inference = False


STATE = _GradState()


def is_grad_enabled() -> bool:
    """True when ops record the graph in this thread."""
    return STATE.enabled


def is_inference_mode_enabled() -> bool:
    return STATE.inference


class _DecoratorContextManager:
    """Base for grad-mode switches that work both as ``with`` blocks and as decorators."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError(f"{type(self).__name__} can decorate functions, not classes")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()


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
        self.prev = True

    def __enter__(self):
        self.prev = STATE.enabled
        STATE.enabled = False

    def __exit__(self, *exc):
        STATE.enabled = self.prev
        return False

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if orig_func is not None and callable(orig_func):
            self.__init__()
            return self(orig_func)
        return self


class enable_grad(_DecoratorContextManager):
    """Enable graph recording inside the block, even within ``no_grad``."""

    def __enter__(self):
        self.prev = STATE.enabled
        STATE.enabled = True

    def __exit__(self, *exc):
        STATE.enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set graph recording on or off; takes effect at once, and as a context manager restores
    the previous mode on exit."""

    def __init__(self, mode: bool):
        self.prev = STATE.enabled
        self.mode = bool(mode)
        STATE.enabled = self.mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        STATE.enabled = self.prev
        return False

    def clone(self):
        return set_grad_enabled(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, for pure inference: nothing is recorded inside the block."""

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (STATE.enabled, STATE.inference)
        if self.mode:
            STATE.enabled = False
            STATE.inference = True

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self.prev
        return False

    def clone(self):
        return inference_mode(self.mode)
