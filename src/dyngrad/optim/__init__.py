"""``dyngrad.optim``: optimizers (every module in this folder that defines one is exported)."""
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
from . import lr_scheduler, swa_utils  # noqa: E402,F401
