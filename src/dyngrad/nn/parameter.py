"""``nn.Parameter``: a leaf tensor that a Module registers as trainable."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor


class Parameter(Tensor):
    """A tensor that is a module parameter: a leaf that requires grad by default.

    >>> import dyngrad as torch
    >>> p = torch.nn.Parameter(torch.ones(2))
    >>> p.requires_grad, p.is_leaf
    (True, True)
    """

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = Tensor._make(np.empty((0,), np.float32))
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter data must be a Tensor, got {type(data).__name__}")
        self._data = data._data
        self._grad = None
        self._grad_fn = None
        self._vc = data._vc
        self._base = None
        self._requires_grad = False
        if requires_grad:
            self.requires_grad = True

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        p = Parameter(Tensor._make(self._data.copy()), self._requires_grad)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, proto):
        raise TypeError("parameters are not pickled; use dyngrad.save(model.state_dict(), path)")


class Buffer(Tensor):
    """Marks a tensor to be registered as a module buffer when assigned."""

    def __new__(cls, data, *, persistent=True):
        t = Tensor._make(data._data)
        t._buffer_persistent = persistent
        return t


class UninitializedParameter(Parameter):
    pass
