"""``dyngrad.multiprocessing``: the standard library's ``multiprocessing`` with PyTorch's
additions.  Tensors sent to other processes (``Queue``, ``Pipe``, ``Process`` arguments under
the spawn method) move to shared memory and are received as views of the same memory, and
``Tensor.share_memory_()``/``Module.share_memory()`` put them there ahead of time, so several
processes can train one model (Hogwild).  ``spawn``/``start_processes`` run a function in N
processes and raise a child's error in the parent."""
import multiprocessing
from multiprocessing import *  # noqa: F401,F403

from .reductions import init_reductions
from .spawn import (ProcessContext, ProcessException, ProcessExitedException,  # noqa: F401
                    ProcessRaisedException, spawn, start_processes)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies",
           "spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
           "ProcessExitedException"] + list(multiprocessing.__all__)

_STRATEGIES = {"file_system"}
_strategy = "file_system"


def set_sharing_strategy(new_strategy):
    """Only "file_system" (named shared-memory blocks) exists here."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}")
    _strategy = new_strategy


def get_sharing_strategy():
    return _strategy


def get_all_sharing_strategies():
    return set(_STRATEGIES)


init_reductions()
