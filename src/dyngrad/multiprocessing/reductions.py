"""Sending tensors between processes (``Queue``, ``Pipe``, ``Process`` arguments under
spawn): the data moves to shared memory and the receiver maps the same block, as PyTorch does,
so both sides see each other's in-place changes."""
from __future__ import annotations

from multiprocessing.reduction import ForkingPickler

import numpy as np

from .. import _shared_memory as _shared


def rebuild_tensor(cls, name, nbytes, offset, dtype, shape, strides, requires_grad):
    from ..nn.parameter import Parameter
    from .._tensor import Tensor
    root = _shared.attach(name, nbytes)
    data = np.ndarray(shape, dtype, buffer=root, offset=offset, strides=strides)
    t = Tensor._make(data)
    if issubclass(cls, Parameter):
        return Parameter(t, requires_grad)
    t._requires_grad = requires_grad
    return t


def reduce_tensor(t):
    if t._grad_fn is not None and t._requires_grad:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd "
            "does not support crossing process boundaries.  If you just want to transfer the "
            "data, call detach() on the tensor before serializing (e.g., putting it on the "
            "queue).")
    _shared.share(t)
    root, name = _shared.block_of(t._data)
    a = t._data
    offset = _shared._addr(a) - _shared._addr(root)
    return rebuild_tensor, (type(t), name, root.nbytes, offset, a.dtype.str, a.shape, a.strides,
                            t._requires_grad)


def init_reductions():
    from ..nn.parameter import Parameter
    from .._tensor import Tensor
    for cls in (Tensor, Parameter):
        ForkingPickler.register(cls, reduce_tensor)
