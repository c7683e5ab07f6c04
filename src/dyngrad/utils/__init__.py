"""``dyngrad.utils``: data loading, activation checkpointing (``dyngrad.utils.checkpoint``) and
TensorBoard logging (``dyngrad.utils.tensorboard``, imported on first use: it needs the
``tensorboard`` package)."""
from . import data  # noqa: F401


def __getattr__(name):
    if name in ("tensorboard", "checkpoint"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
