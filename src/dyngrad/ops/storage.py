"""Storage-level in-place ops: ``resize_`` and ``resize_as_``.

A resized tensor keeps its storage (and so its aliasing with every view of it) while the new
size fits in what the storage holds past the tensor's offset; a larger size grows the storage,
keeping its contents, as PyTorch's realloc does, and every live view is moved onto the grown
storage at its old offset and strides.  Memory shared with a NumPy array (``from_numpy``) is
not dyngrad's to grow: that raises PyTorch's error."""
from __future__ import annotations

import math

import numpy as np

from . import OPS
from ._spec import defstorage
from .._record import Tensor
from .. import _dtype as D
from .._factories import is_lent, root_array as _root

def _resize_sizes(sizes):
    from .._factories import _size_item
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
        out = tuple(_size_item(s, "resize_", i, i == 0) for i, s in enumerate(sizes))
    else:
        out = tuple(_size_item(s, "resize_", i, False) for i, s in enumerate(sizes))
    if any(s < 0 for s in out):
        raise RuntimeError("numel: integer multiplication overflow")
    return out


def _memory(owner):
    """``owner``'s bytes in memory order, as a flat uint8 view (``owner`` owns its memory,
    densely, in C, Fortran or another dimension order: ``reshape(-1)`` alone would copy a
    non-C one in index order)."""
    if not owner.flags.c_contiguous:
        owner = owner.transpose(sorted(range(owner.ndim), key=lambda i: -owner.strides[i]))
    return owner.reshape(-1).view(np.uint8)


def _place(owner, offset, shape, strides, dtype):
    """An ndarray over ``owner``'s bytes from ``offset`` with ``shape`` and byte ``strides``."""
    return np.ndarray(shape, dtype, buffer=_memory(owner), offset=offset, strides=strides)


def _strides(shape, itemsize, order):
    """Byte strides of a dense tensor whose dims, outermost first, are laid out in ``order``."""
    strides, acc = [0] * len(shape), itemsize
    for d in reversed(order):
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def _batch_resize(spec, arrays, params):
    """The batch resized to (batch, *sizes): a sample of another size reads on in the shared
    storage, as PyTorch's rule."""
    x = arrays[0]
    sizes = params.get("sizes", ())
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    return spec.forward(x, (x.shape[0],) + tuple(sizes),
                        memory_format=params.get("memory_format"))


@defstorage("resize_", batch=_batch_resize)
def resize_(self, *sizes, memory_format=None) -> Tensor:
    """Give the tensor ``sizes`` (contiguous) in place, growing its storage if needed."""
    shape = _resize_sizes(sizes)
    need = {"torch.channels_last": 4, "torch.channels_last_3d": 5}.get(memory_format)
    if need is not None and len(shape) != need:
        raise RuntimeError(f"required rank {need} tensor to use {memory_format[6:]} format")
    d = self._data
    if shape == d.shape:
        return self
    item = d.dtype.itemsize
    owner = _root(d)
    start = d.__array_interface__["data"][0] - owner.__array_interface__["data"][0] \
        if owner.size else 0
    n = math.prod(shape)
    have = (owner.nbytes - start) // item if owner.size else 0
    if n > have:
        if is_lent(owner):
            raise RuntimeError("Trying to resize storage that is not resizable")
        grown = np.empty(start // item + n, d.dtype)
        if owner.size:
            grown.view(np.uint8)[:owner.nbytes] = _memory(owner)
        # every other live tensor on this storage moves with it (same offset, same strides)
        from .views import live_views
        for v in live_views(self):
            if v is self:
                continue
            vd = v._data
            if _root(vd) is owner:
                off = vd.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
                v._data = _place(grown, off, vd.shape, vd.strides, vd.dtype)
        owner = grown
    order = (0, *range(2, len(shape)), 1) if need else tuple(range(len(shape)))
    self._data = _place(owner, start, shape, _strides(shape, item, order), d.dtype)
    self._vc[0] += 1
    return self


_resize_change, resize_ = resize_.change, resize_.fn


def _batch_resize_as(spec, arrays, params):
    """The batch resized to (batch, *the_template's shape), as ``resize_``'s rule."""
    x = arrays[0]
    shape = (x.shape[0],) + tuple(params["the_template"].shape)
    return spec.forward(x, np.broadcast_to(x.dtype.type(0), shape),
                        memory_format=params.get("memory_format"))


@defstorage("resize_as_", batch=_batch_resize_as)
def _resize_as(self, the_template, *, memory_format=None) -> Tensor:
    """``resize_`` to the shape of ``the_template``."""
    return _resize_change(self, tuple(the_template.shape), memory_format=memory_format)


def resize_as_(self, the_template, *, memory_format=None) -> Tensor:
    """``resize_`` to the shape of ``the_template`` (a Tensor, checked first, as PyTorch's
    argument parser does)."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, "
                        f"not {D.type_name(the_template)}")
    return _resize_as.declared(self, the_template, memory_format=memory_format)


_resize_as.declared, _resize_as.fn = _resize_as.fn, resize_as_
OPS["resize_as_"]["fn"] = resize_as_
