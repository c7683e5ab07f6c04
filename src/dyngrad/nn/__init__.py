"""``dyngrad.nn``: modules, parameters, functional ops, initialisers and utilities
(``nn.utils`` and ``nn.parallel`` are imported on first use, as they are rarer)."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _mods
from . import functional, init  # noqa: F401

# (the names loaded on first use are in __all__: a star import reaches them through __getattr__)
__all__ = ["Parameter", "Buffer", "functional", "init", "utils", "parallel",  # noqa: F405
           "DataParallel"] + list(_mods)


def __getattr__(name):
    if name in ("utils", "parallel"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name == "DataParallel":
        from .parallel import DataParallel
        return DataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"utils", "parallel", "DataParallel"})
