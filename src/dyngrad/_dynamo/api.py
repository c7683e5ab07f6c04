"""``dyngrad.compile``'s argument checks and the choice of wrapper."""
from __future__ import annotations

_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")


def compile_impl(model, *, fullgraph, dynamic, backend, mode, options, name, disable,
                 recompile_limit):
    """See ``dyngrad.compile``."""
    from . import lookup_backend
    from .eval_frame import CompiledFunction
    from .optimized_module import OptimizedModule
    from ..nn.modules.module import Module

    if model is None:
        def deco(m):
            return compile_impl(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                mode=mode, options=options, name=name, disable=disable,
                                recompile_limit=recompile_limit)
        return deco
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if backend is None:
        backend = "inductor"
    if isinstance(backend, str):
        backend = lookup_backend(backend)
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    if disable:
        return model
    if isinstance(model, Module):
        cf = CompiledFunction(model.__call__, fullgraph=fullgraph, dynamic=dynamic,
                              backend=backend, mode=mode, options=options,
                              recompile_limit=recompile_limit, name=name)
        return OptimizedModule(model, cf)
    return CompiledFunction(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                            mode=mode, options=options, recompile_limit=recompile_limit,
                            name=name)
