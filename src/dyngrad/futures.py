"""``torch.futures``: a :class:`Future` holds the result of work that may finish later (another
thread, an asynchronous collective); ``then`` chains work on it, ``wait`` blocks for it, and
``collect_all`` / ``wait_all`` join several.  Callbacks run in the thread that completes the
future (or at once when it is already complete), as in PyTorch."""
from __future__ import annotations

import sys
import threading
import traceback
from typing import Any, Callable, Generic, TypeVar

T = TypeVar("T")
S = TypeVar("S")

_COMPLETED_TWICE = ("Attempting to mark a completed Future as complete again. Note that a "
                    "Future can only be marked completed once.")


def _callback_error(e: BaseException) -> RuntimeError:
    """PyTorch's wrapping of an exception raised by a ``then`` callback: its type and text,
    then the frames it was raised through."""
    frames = "".join(f"  {fs.filename}({fs.lineno}): {fs.name}\n"
                     for fs in reversed(traceback.extract_tb(e.__traceback__)))
    return RuntimeError(f"Got the following error when running the callback: "
                        f"{type(e).__name__}: {e}\n\nAt:\n{frames}")


class Future(Generic[T]):
    """The result of an asynchronous computation, set once with ``set_result`` or
    ``set_exception``."""

    def __init__(self, *, devices: list | None = None) -> None:
        for d in devices or ():
            from ._tensor import device as _device
            dv = d if isinstance(d, _device) else _device(d)
            if dv.type != "cpu":
                raise RuntimeError(f"PyTorch is not linked with support for {dv.type} devices")
            if dv.index is None:
                raise ValueError(f"Expected devices to have indices, got {dv}")
        self._cond = threading.Condition()
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None
        self._callbacks: list = []

    def __repr__(self) -> str:
        return f"<torch.Future object at {hex(id(self))}>"

    def done(self) -> bool:
        """Whether a result or an exception has been set."""
        return self._done

    def wait(self) -> T:
        """Block until the future completes; its value, or raise its exception."""
        with self._cond:
            while not self._done:
                self._cond.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> T:
        """The value of a completed future (raises its exception); an error before it
        completes."""
        if not self._done:
            raise RuntimeError("value() was called on a Future that has not completed yet: "
                               "call wait() to block until it does")
        if self._error is not None:
            raise self._error
        return self._value

    def _complete(self, value, error) -> None:
        with self._cond:
            if self._done:
                raise RuntimeError(_COMPLETED_TWICE)
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    def set_result(self, result: T) -> None:
        """Complete the future with ``result`` and run its callbacks."""
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Complete the future with an exception, raised by ``wait``/``value``."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _on_done(self, cb: Callable) -> None:
        with self._cond:
            if not self._done:
                self._callbacks.append(cb)
                return
        cb(self)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new future completed with ``callback(self)`` once this one completes (an
        exception in the callback completes it with PyTorch's RuntimeError)."""
        out: Future = Future()

        def run(fut):
            try:
                r = callback(fut)
            except Exception as e:  # noqa: BLE001 - the callback's error goes to ``out``
                out.set_exception(_callback_error(e))
            else:
                out.set_result(r)

        self._on_done(run)
        return out

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Run ``callback(self)`` once this future completes; its exception is reported on
        stderr and otherwise ignored (as PyTorch)."""
        def run(fut):
            try:
                callback(fut)
            except Exception as e:  # noqa: BLE001 - reported, not raised (PyTorch's rule)
                print(str(_callback_error(e)), file=sys.stderr)

        self._on_done(run)


def collect_all(futures: list[Future]) -> Future[list[Future]]:
    """A future completed, with the list ``futures``, once every one of them has
    completed."""
    out: Future = Future()
    futures = list(futures)
    left = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])
        return out

    def one(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)

    for f in futures:
        f._on_done(one)
    return out


def wait_all(futures: list[Future]) -> list:
    """The values of ``futures`` once all have completed; the first one's exception is
    raised."""
    return [f.wait() for f in collect_all(futures).wait()]


__all__ = ["Future", "collect_all", "wait_all"]
