"""``dyngrad.nn``: modules, parameters, functional ops, initialisers and utilities.  The layer
classes' files, ``nn.utils`` and ``nn.parallel`` are loaded on first use."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from . import modules
from .modules import Module  # noqa: F401
from . import functional, init  # noqa: F401

_LAYERS = frozenset(modules.__all__)
# (the names loaded on first use are in __all__: a star import reaches them through __getattr__)
__all__ = ["Parameter", "Buffer", "functional", "init", "utils", "parallel",
           "DataParallel", *modules.__all__]


def __getattr__(name):
    if name in _LAYERS:
        value = globals()[name] = getattr(modules, name)
        return value
    if name in ("utils", "parallel"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name == "DataParallel":
        from .parallel import DataParallel
        return DataParallel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAYERS | {"utils", "parallel", "DataParallel"})


def _load_all() -> None:
    """Every layer class bound here, and every file of ``nn`` and ``nn.utils`` loaded: for
    code that walks ``vars(nn)`` or the op copies the nn files hold (the swaps of vmap and
    compile, which must not miss a file loaded later)."""
    import importlib
    import pkgutil
    for name in _LAYERS:
        __getattr__(name)
    utils = importlib.import_module(f"{__name__}.utils")
    for pkg in (utils, importlib.import_module(__name__)):
        for m in pkgutil.iter_modules(pkg.__path__):
            if not m.ispkg:
                importlib.import_module(f"{pkg.__name__}.{m.name}")
