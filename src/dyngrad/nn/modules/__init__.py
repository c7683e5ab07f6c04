"""All layer modules; every module file in this folder is imported and its public classes
exported (so a new layer file needs no registration)."""
from __future__ import annotations

import importlib
import pkgutil

from .module import Module

__all__ = ["Module"]
for _m in pkgutil.iter_modules(__path__):
    _mod = importlib.import_module(f"{__name__}.{_m.name}")
    for _k, _v in vars(_mod).items():
        if isinstance(_v, type) and issubclass(_v, Module) and not _k.startswith("_") \
                and _v.__module__ == _mod.__name__:
            globals()[_k] = _v
            __all__.append(_k)
