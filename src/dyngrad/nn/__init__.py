"""``dyngrad.nn``: modules, parameters, functional ops, initialisers and utilities."""
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules import *  # noqa: F401,F403
from .modules import __all__ as _mods
from . import functional, init, utils  # noqa: F401
from . import parallel  # noqa: F401
from .parallel import DataParallel  # noqa: F401

__all__ = ["Parameter", "Buffer", "functional", "init", "utils", "parallel", "DataParallel"] + list(_mods)
