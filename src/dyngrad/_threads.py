"""``torch.set_num_threads`` and friends on dyngrad: the intra-op threads are those of the
BLAS and OpenMP pools NumPy's kernels run on, which ``threadpoolctl`` controls.  dyngrad runs
no inter-op parallel work, so the inter-op count is only recorded (set once, as in PyTorch).
Like PyTorch's C functions they take positional arguments only."""
from __future__ import annotations

import os

_INTEROP = [None]   # the inter-op thread count once set


def _one_int(fn: str, args, kwargs) -> int:
    if kwargs:
        raise TypeError(f"torch.{fn}() takes no keyword arguments")
    if len(args) != 1:
        raise TypeError(f"torch.{fn}() takes exactly one argument ({len(args)} given)")
    n = args[0]
    if isinstance(n, bool) or not hasattr(n, "__index__"):
        raise RuntimeError(f"{fn} expects an int, but got {type(n).__name__}")
    n = n.__index__()
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


def _no_args(fn: str, args, kwargs) -> None:
    if kwargs:
        raise TypeError(f"torch.{fn}() takes no keyword arguments")
    if args:
        raise TypeError(f"torch.{fn}() takes no arguments ({len(args)} given)")


def set_num_threads(*args, **kwargs) -> None:
    """set_num_threads(n): the number of threads the BLAS and OpenMP pools (matmul,
    convolution, reductions) use from now on."""
    n = _one_int("set_num_threads", args, kwargs)
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=n)   # lasts until changed again


def get_num_threads(*args, **kwargs) -> int:
    """The number of threads the BLAS pool (else the OpenMP pool) uses."""
    _no_args("get_num_threads", args, kwargs)
    from threadpoolctl import threadpool_info
    pools = threadpool_info()
    for api in ("blas", "openmp"):
        counts = [p["num_threads"] for p in pools if p["user_api"] == api]
        if counts:
            return max(counts)
    return 1


def set_num_interop_threads(*args, **kwargs) -> None:
    """set_num_interop_threads(n): record the inter-op thread count; as in PyTorch it can be set
    only once."""
    n = _one_int("set_num_interop_threads", args, kwargs)
    if _INTEROP[0] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _INTEROP[0] = n


def get_num_interop_threads(*args, **kwargs) -> int:
    """The inter-op thread count (PyTorch's default: the number of CPUs)."""
    _no_args("get_num_interop_threads", args, kwargs)
    return _INTEROP[0] if _INTEROP[0] is not None else (os.cpu_count() or 1)
