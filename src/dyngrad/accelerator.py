"""``torch.accelerator`` on a CPU-only library: there is no accelerator.

As PyTorch's CPU build answers: ``current_accelerator()`` is None, ``is_available()`` False,
``device_count()`` 0, and everything that needs an accelerator device raises PyTorch's
RuntimeError.  The usual device choice of PyTorch's examples works unchanged::

    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() \\
        else torch.device("cpu")
"""
from __future__ import annotations

from . import _warn

__all__ = ["Graph", "current_accelerator", "current_device_idx", "current_device_index",
           "get_device_capability", "current_stream", "device_count", "device_index",
           "empty_cache", "empty_host_cache", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "memory_stats", "reset_accumulated_memory_stats", "reset_peak_memory_stats",
           "set_device_idx", "set_device_index", "set_stream", "synchronize"]

_NONE = "Cannot access accelerator device when none is available."


def _no_device():
    return RuntimeError(_NONE)


def current_accelerator(check_available: bool = False):
    """The accelerator device type in use: None, there is none."""
    return None


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def current_device_index() -> int:
    raise _no_device()


def current_device_idx() -> int:
    _warn.warn("Use `current_device_index` instead.", FutureWarning)
    return current_device_index()


def set_device_index(device, /) -> None:
    if device is not None and not isinstance(device, int):  # a device: not an accelerator's
        raise RuntimeError("Accelerator expected")
    raise _no_device()


def set_device_idx(device, /) -> None:
    _warn.warn("Use `set_device_index` instead.", FutureWarning)
    return set_device_index(device)


class device_index:
    """Context manager that makes ``device`` the current accelerator device index (None:
    no change)."""

    def __init__(self, device, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self) -> None:
        if self.idx is not None:
            raise _no_device()

    def __exit__(self, *exc_info) -> None:
        return None


def _needs_device(name):
    def f(device=None, /):
        raise _no_device()

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"PyTorch's ``torch.accelerator.{name}``: needs an accelerator device."
    return f


get_device_capability = _needs_device("get_device_capability")
current_stream = _needs_device("current_stream")
synchronize = _needs_device("synchronize")
get_memory_info = _needs_device("get_memory_info")
max_memory_allocated = _needs_device("max_memory_allocated")
max_memory_reserved = _needs_device("max_memory_reserved")
memory_allocated = _needs_device("memory_allocated")
memory_reserved = _needs_device("memory_reserved")
memory_stats = _needs_device("memory_stats")
reset_accumulated_memory_stats = _needs_device("reset_accumulated_memory_stats")
reset_peak_memory_stats = _needs_device("reset_peak_memory_stats")


def empty_cache() -> None:
    raise _no_device()


def empty_host_cache() -> None:
    raise _no_device()


def set_stream(stream) -> None:
    raise _no_device()


class Graph:
    """An accelerator graph capture: needs an accelerator device."""

    def __init__(self, keep_graph: bool = False, *, pool=None, capture_error_mode="default"):
        raise _no_device()
