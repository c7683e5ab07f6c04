"""Splitting at a graph break, at Module boundaries.

A compiled function whose capture stopped at a graph break (``.item()``, printing a tensor, a
``dyngrad.compiler.disable``'d call, ...) cannot be replayed as one program: the Python code
after the break depends on what it read.  Without ``fullgraph=True`` its own code then runs
eagerly at every call, and each Module it calls runs as a compiled region of its own: captured
on its first call, replayed after, behind its own guards (its forward, and its backward through
``CompiledFunctionBackward`` when autograd goes through the region's output).  A region whose
own capture breaks is split the same way, so the compiled regions are the largest Modules
around the break that do not contain it.  The regions are the function's ``split_regions``.
"""
from __future__ import annotations

from ..func import _batched
from ..nn.modules.module import Module
from . import capture as C

_ORIG: list = [None]   # Module.__call__ while the router below is installed
_RUNNING: list = []    # the split functions whose own code is running (innermost last)
_ROUTE = [False]       # whether a Module call now is made by a split function's own code


def run(cf, args, kwargs):
    """Run split function ``cf``: its own code eagerly, the Modules it calls compiled."""
    if not _RUNNING:
        _ORIG[0] = Module.__dict__["__call__"]
        Module.__call__ = _routed
    _RUNNING.append(cf)
    route, _ROUTE[0] = _ROUTE[0], True
    try:
        body = cf.split_body
        return body(*args, **kwargs) if body is not None else cf._fn(*args, **kwargs)
    finally:
        _ROUTE[0] = route
        _RUNNING.pop()
        if not _RUNNING:
            Module.__call__ = _ORIG[0]
            _ORIG[0] = None


def _routed(mod, *args, **kwargs):
    """``Module.__call__`` while a split function runs: a call made by its own code goes to the
    Module's compiled region; any other (inside a region, a capture, vmap or disabled code)
    is the plain call."""
    orig = _ORIG[0]
    from .eval_frame import DISABLED
    from .optimized_module import OptimizedModule
    if not _ROUTE[0] or C.ACTIVE[0] is not None or DISABLED[0] or _batched.LEVELS or \
            isinstance(mod, OptimizedModule):   # (compiled already: its own call)
        return orig(mod, *args, **kwargs)
    region = _region(_RUNNING[-1], mod)
    _ROUTE[0] = False
    try:
        return region(*args, **kwargs)
    finally:
        _ROUTE[0] = True


def _region(owner, mod):
    """``owner``'s compiled region for Module ``mod`` (made on first use)."""
    hit = owner.split_regions.get(id(mod))
    if hit is not None and hit[0] is mod:
        return hit[1]
    from .eval_frame import CompiledFunction

    def call(*args, **kwargs):
        # through Module.__call__ as it is at the time: under a capture its recording form
        # (so the region's module is guarded as any module called), else the plain call
        return Module.__call__(mod, *args, **kwargs)

    def body(*args, **kwargs):   # the region split in its turn: the module's own call
        return _ORIG[0](mod, *args, **kwargs)

    region = CompiledFunction(call, fullgraph=False, dynamic=owner.dynamic,
                              backend=owner.backend, mode=owner.mode, options=owner.options,
                              recompile_limit=owner._limit,
                              name=f"{owner.name}/{type(mod).__name__}")
    region.split_body = body
    region.where = getattr(type(mod), "forward", call)
    owner.split_regions[id(mod)] = (mod, region)
    return region
