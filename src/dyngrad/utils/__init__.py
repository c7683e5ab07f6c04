"""``dyngrad.utils``: data loading, and TensorBoard logging (``dyngrad.utils.tensorboard``,
imported on first use: it needs the ``tensorboard`` package)."""
from . import data  # noqa: F401


def __getattr__(name):
    if name == "tensorboard":
        import importlib
        return importlib.import_module(".tensorboard", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
