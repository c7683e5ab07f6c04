"""``dyngrad.optim``: optimizers (every module in this folder that defines one is exported;
``lr_scheduler`` and ``swa_utils`` are imported on first use)."""
from __future__ import annotations

import importlib
import pkgutil

from .optimizer import Optimizer

__all__ = ["Optimizer"]
for _m in pkgutil.iter_modules(__path__):
    if _m.name in ("optimizer", "lr_scheduler", "swa_utils"):
        continue
    _mod = importlib.import_module(f"{__name__}.{_m.name}")
    for _k, _v in vars(_mod).items():
        if isinstance(_v, type) and issubclass(_v, Optimizer) and _v.__module__ == _mod.__name__:
            globals()[_k] = _v
            __all__.append(_k)


def __getattr__(name):
    if name in ("lr_scheduler", "swa_utils"):
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"lr_scheduler", "swa_utils"})
