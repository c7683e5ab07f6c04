"""``dyngrad.compile``'s machinery (PyTorch's is ``torch._dynamo``): capture a function's op
program on its first call, replay it as generated NumPy code after.  See docs/compile.md."""
from __future__ import annotations

from . import config
from .exc import InvalidBackend, ReplayMismatch, Unsupported
from .eval_frame import ALL_COMPILED, CompiledFunction, DISABLED
from .optimized_module import OptimizedModule

__all__ = ["config", "reset", "OptimizedModule", "CompiledFunction", "Unsupported",
           "InvalidBackend", "ReplayMismatch", "disable", "is_compiling", "list_backends"]


def reset() -> None:
    """Forget every capture: compiled functions capture again on their next call."""
    for cf in ALL_COMPILED:
        cf.entries.clear()
        cf.recompile_reasons.clear()
        cf.eager_reason = None
        cf._fast = None


def is_compiling() -> bool:
    """Whether a capture is running (True inside the function while it is being captured)."""
    from .capture import ACTIVE
    return ACTIVE[0] is not None


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` run eagerly, never captured (also a decorator)."""
    import functools

    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if isinstance(fn, CompiledFunction):
        fn = fn._fn

    @functools.wraps(fn)
    def run(*args, **kwargs):
        from .capture import ACTIVE
        cap = ACTIVE[0]
        if cap is not None:  # inside a capture: the call must run eagerly every time
            cap.graph_break_at("a call to a function marked dyngrad.compiler.disable")
        DISABLED[0] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            DISABLED[0] -= 1

    return run


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backend names ``compile`` accepts (all run the same NumPy replay but ``"numba"``,
    which fuses runs of it into numba kernels; see ``numba_backend``)."""
    return sorted(_BACKENDS)


_BACKENDS = {"inductor", "cudagraphs", "openxla", "tvm", "onnxrt", "numba"}
_ALL_BACKENDS = _BACKENDS | {"eager", "aot_eager", "aot_eager_decomp_partition"}
