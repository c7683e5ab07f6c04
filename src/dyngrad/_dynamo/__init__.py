"""``dyngrad.compile``'s machinery (PyTorch's is ``torch._dynamo``): capture a function's op
program on its first call, replay it as generated NumPy code after.  See docs/compile.md."""
from __future__ import annotations

from . import config
from .exc import InvalidBackend, ReplayMismatch, Unsupported
from .eval_frame import (ALL_COMPILED, DISABLED, MISSING, BackendCompilerFailed,
                         CompiledFunction)
from .optimized_module import OptimizedModule

__all__ = ["config", "reset", "OptimizedModule", "CompiledFunction", "Unsupported",
           "InvalidBackend", "BackendCompilerFailed", "ReplayMismatch", "disable", "is_compiling", "list_backends",
           "register_backend", "lookup_backend"]


def reset() -> None:
    """Forget every capture: compiled functions capture again on their next call."""
    for cf in ALL_COMPILED:
        cf.entries.clear()
        cf.recompile_reasons.clear()
        cf.eager_reason = None
        cf._fast = MISSING
        cf.split = False
        cf.split_regions.clear()


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
    """The names ``compile(backend=...)`` accepts, without those tagged with one of
    ``exclude_tags`` (PyTorch's: ``eager`` and the ``aot_eager`` family are tagged ``debug``)."""
    ex = set(exclude_tags or ())
    return sorted(n for n, (_, tags) in _REGISTRY.items() if not ex.intersection(tags))


def register_backend(compiler_fn=None, name: str | None = None, tags=()):
    """Add ``compiler_fn`` (called as ``compiler_fn(gm, example_inputs)``, returning the
    callable that runs the captured forward) to the names ``compile(backend=...)`` accepts;
    also a decorator, ``@register_backend`` or ``@register_backend(name=...)``."""
    import functools

    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    if not callable(compiler_fn):
        raise AssertionError(f"compiler_fn must be callable, got {type(compiler_fn)}")
    name = name or compiler_fn.__name__
    if name in _REGISTRY:
        raise AssertionError(f"duplicate name: {name}")
    _REGISTRY[name] = (compiler_fn, tuple(tags))
    return compiler_fn


def lookup_backend(compiler_fn):
    """The backend ``compiler_fn`` names: a registered backend's function, a built-in's name,
    or ``compiler_fn`` itself when it is a callable; ``InvalidBackend`` for an unknown name."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _REGISTRY:
            raise InvalidBackend(compiler_fn)
        fn = _REGISTRY[compiler_fn][0]
        return compiler_fn if fn is None else fn
    return compiler_fn


#: name -> (compiler function, or None for a built-in run by the replay; tags).
#: ``inductor`` and the accelerator names run the NumPy replay; ``eager`` and the
#: ``aot_eager`` family run the function eagerly behind the guards.
_REGISTRY: dict = {
    "inductor": (None, ()), "cudagraphs": (None, ()), "openxla": (None, ()),
    "tvm": (None, ()),
    "eager": (None, ("debug",)), "aot_eager": (None, ("debug",)),
    "aot_eager_decomp_partition": (None, ("debug",)),
    # dyngrad's own: runs of the replay fused into numba kernels (``numba_backend``; needs
    # the numba package); tagged experimental, so the default listing stays PyTorch's
    "numba": (None, ("experimental",)),
}
