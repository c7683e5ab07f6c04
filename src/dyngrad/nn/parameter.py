"""``nn.Parameter``: a leaf tensor that a Module registers as trainable."""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor, _check_device, _user_state, _warn_unpickled_hooks


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
        # as PyTorch: a new parameter over a copy of the values, without grad or attributes
        if id(self) in memo:
            return memo[id(self)]
        p = type(self)(Tensor._make(self._data.copy(order="K")), self._requires_grad)
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, proto):
        # the values as a tensor (see Tensor.__reduce_ex__), requires_grad and the attributes
        # set on the parameter; PyTorch rebuilds a plain Parameter, whatever the subclass
        _warn_unpickled_hooks(self)
        return (_rebuild_parameter, (Tensor._make(self._data), self._requires_grad,
                                     _user_state(self)))


def _rebuild_parameter(data, requires_grad, state=None):
    """A Parameter from its pickle (``Parameter.__reduce_ex__``)."""
    if type(data) is not Tensor:
        raise TypeError("not a dyngrad parameter pickle")
    p = Parameter(data, bool(requires_grad))
    for k, v in dict(state or {}).items():
        if isinstance(k, str):
            p.__dict__[k] = v
    return p


class Buffer(Tensor):
    """Marks a tensor to be registered as a module buffer when assigned."""

    def __new__(cls, data, *, persistent=True):
        t = Tensor._make(data._data)
        t._buffer_persistent = persistent
        return t


_UNINITIALIZED = ("Can't access the shape of an uninitialized parameter or buffer. This error "
                  "usually happens in `load_state_dict` when trying to load an uninitialized "
                  "parameter into an initialized one. Call `forward` to initialize the parameters "
                  "before accessing their attributes.")


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (a lazy module's, before its first call):
    ``materialize(shape)`` gives it data and makes it a plain ``Parameter``."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        _check_device(device)  # PyTorch makes its empty tensor there: refused off the CPU
        super().__init__(None, requires_grad)
        self.__dict__["_lazy_dtype"] = dtype

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the parameter uninitialised data of ``shape`` (in ``dtype``, else the one
        given at construction, else the default) and make it a ``Parameter``."""
        from .._factories import empty
        dt = dtype if dtype is not None else self.__dict__.pop("_lazy_dtype", None)
        self._data = empty(*(shape if isinstance(shape, (tuple, list)) else (shape,)),
                           dtype=dt)._data
        self.__dict__.pop("_lazy_dtype", None)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED)

    def size(self, dim=None):
        raise RuntimeError(_UNINITIALIZED)

    def __repr__(self) -> str:
        return "<UninitializedParameter>"
