"""Tensor data in shared memory (the standard library's ``multiprocessing.shared_memory``).

``share(t)`` moves a tensor's data into a new shared block, in place (the tensor object stays
the same, so a module's parameters, optimizers holding them and so on keep working).  The
process that made a block unlinks it when the data is no longer used (or at exit); processes
it is sent to attach to it by name.  The resource tracker is told nothing: it would unlink a
block when the first process that attached to it exits.
"""
from __future__ import annotations

import threading
import weakref
from multiprocessing import resource_tracker, shared_memory

import numpy as np

_LOCK = threading.Lock()
_BLOCKS = {}     # id(root array) -> (weakref to root, start address, end address, block name)
_ATTACHED = {}   # block name -> weakref to the root array of this process's attachment


def _addr(a):
    return a.__array_interface__["data"][0]


def _release(key, shm, owner):
    with _LOCK:
        _BLOCKS.pop(key, None)
        _ATTACHED.pop(shm.name, None)
    try:
        shm.close()
    except BufferError:     # another array still uses the mapping: it is unmapped with it
        pass
    if owner:
        try:
            from _posixshmem import shm_unlink
            shm_unlink(shm._name)
        except (ImportError, FileNotFoundError, OSError):
            pass


def _root(shm, nbytes, owner):
    root = np.ndarray((nbytes,), np.uint8, buffer=shm.buf)
    key = id(root)
    with _LOCK:
        _BLOCKS[key] = (weakref.ref(root), _addr(root), _addr(root) + nbytes, shm.name)
        _ATTACHED[shm.name] = weakref.ref(root)
    weakref.finalize(root, _release, key, shm, owner)
    return root


def _untrack(shm):
    try:
        resource_tracker.unregister(shm._name, "shared_memory")
    except Exception:  # noqa: BLE001 - no tracker on this platform
        pass


def block_of(a):
    """``(root, block name)`` of the shared block holding ``a``'s data, or None."""
    if a.size == 0:
        return None
    lo = _addr(a)
    with _LOCK:
        for ref, start, end, name in list(_BLOCKS.values()):
            if start <= lo < end:
                root = ref()
                if root is not None:
                    return root, name
    return None


def is_shared(t) -> bool:
    return block_of(t._data) is not None


def _fresh(a):
    """A shared copy of ndarray ``a`` (C order)."""
    nbytes = max(a.nbytes, 1)
    shm = shared_memory.SharedMemory(create=True, size=nbytes)
    _untrack(shm)
    root = _root(shm, nbytes, owner=True)
    out = root[:a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def share(t):
    """Move ``t``'s data into shared memory (no-op when it is there already); returns ``t``."""
    if is_shared(t):
        return t
    base = t._base
    if base is not None and base._data.flags.c_contiguous:
        # a view: move its base's data, then point the view at the same place in it
        old = base._data
        share(base)
        off = _addr(t._data) - _addr(old)
        t._data = np.ndarray(t._data.shape, t._data.dtype, buffer=base._data, offset=off,
                             strides=t._data.strides)
        return t
    t._data = _fresh(t._data)
    return t


def attach(name, nbytes):
    """This process's root array of shared block ``name``."""
    with _LOCK:
        ref = _ATTACHED.get(name)
        root = ref() if ref is not None else None
    if root is not None:
        return root
    shm = shared_memory.SharedMemory(name=name)
    _untrack(shm)
    return _root(shm, nbytes, owner=False)
