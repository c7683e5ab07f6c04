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
        t.persistent = persistent
        t._is_buffer = True
        return t


_UNINITIALIZED = ("Can't access the shape of an uninitialized parameter or buffer. This error "
                  "usually happens in `load_state_dict` when trying to load an uninitialized "
                  "parameter into an initialized one. Call `forward` to initialize the parameters "
                  "before accessing their attributes.")

# the tensor methods PyTorch lets an uninitialized parameter or buffer run
_ALLOWED = frozenset({"size", "copy_", "is_complex", "is_floating_point", "half", "float",
                      "double", "char", "short", "int", "long", "cuda", "cpu", "to",
                      "get_device", "materialize", "share_memory_", "cls_to_become"})
_BLOCKED: set = set()


def _blocked() -> set:
    """Public tensor methods (not properties) an uninitialized tensor refuses to run."""
    if not _BLOCKED:
        from .._npnames import Pending  # a method built on its first lookup
        for k, v in vars(Tensor).items():
            if not k.startswith("_") and (callable(v) or isinstance(v, Pending)) \
                    and not isinstance(v, property) and k not in _ALLOWED:
                _BLOCKED.add(k)
    return _BLOCKED


def _refuse(cls_name: str, func: str):
    """PyTorch's error for running ``func`` on an uninitialized parameter or buffer."""
    return ValueError(f"Attempted to use an uninitialized parameter in {func}. This error "
                      f"happens when you are using a `LazyModule` or explicitly manipulating "
                      f"`torch.nn.parameter.{cls_name}` objects. When using LazyModules Call "
                      f"`forward` with a dummy batch to initialize the parameters before calling "
                      f"torch functions")


class UninitializedTensorMixin:
    """Shared behaviour of ``UninitializedParameter`` and ``UninitializedBuffer``: no shape
    until ``materialize``; tensor methods other than dtype/device moves are refused."""

    cls_to_become: type = Tensor

    def __getattribute__(self, name):
        if name in _blocked():
            cls_name = type(self).__name__

            def refused(*args, **kwargs):
                raise _refuse(cls_name, f"<method '{name}' of 'torch._C.TensorBase' objects>")
            return refused
        return object.__getattribute__(self, name)

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor uninitialised data of ``shape`` (in ``dtype``, else its own) and
        make it a ``cls_to_become`` (``Parameter`` or ``Tensor``)."""
        from .._factories import empty
        _check_device(device)
        dt = dtype if dtype is not None else self.dtype
        self._data = empty(shape, dtype=dt)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(_UNINITIALIZED)

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, proto):
        return (type(self), (self._requires_grad,))


def _method(name: str) -> str:
    return f"<method '{name}' of 'torch._C.TensorBase' objects>"


# the operators an uninitialized tensor refuses, with the function PyTorch's error names
_REFUSED_OPERATORS = {
    "__add__": _method("add"), "__radd__": _method("add"), "__sub__": _method("sub"),
    "__rsub__": "<function Tensor.__rsub__>", "__mul__": _method("mul"),
    "__rmul__": _method("mul"), "__truediv__": _method("div"),
    "__rtruediv__": "<function Tensor.__rdiv__>", "__floordiv__": "<function Tensor.__floordiv__>",
    "__pow__": "<function TensorBase.pow>", "__rpow__": "<function Tensor.__rpow__>",
    "__matmul__": _method("matmul"), "__mod__": _method("remainder"), "__lt__": _method("lt"),
    "__gt__": _method("gt"), "__le__": _method("le"), "__ge__": _method("ge"),
    "__ne__": _method("ne"), "__eq__": _method("__eq__"), "__and__": _method("__and__"),
    "__or__": _method("__or__"), "__xor__": _method("__xor__"),
    "__invert__": _method("__invert__"), "__neg__": _method("neg"),
    "__pos__": _method("positive"), "__abs__": _method("abs"),
    "__getitem__": "<slot wrapper '__getitem__' of 'torch._C.TensorBase' objects>",
    "__bool__": _method("__bool__"), "__float__": _method("__float__"),
    "__int__": _method("__int__"), "__len__": "<function Tensor.__len__>",
    "__iter__": _method("dim"),
}


def _refusing_operator(func: str):
    def op(self, *args, **kwargs):
        raise _refuse(type(self).__name__, func)
    return op


for _name, _func in _REFUSED_OPERATORS.items():
    setattr(UninitializedTensorMixin, _name, _refusing_operator(_func))
UninitializedTensorMixin.__hash__ = Tensor.__hash__


def is_lazy(param) -> bool:
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (a lazy module's, before its first call):
    ``materialize(shape)`` gives it data and makes it a plain ``Parameter``."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        _check_device(device)  # PyTorch makes its empty tensor there: refused off the CPU
        Parameter.__init__(self, _empty0(dtype), requires_grad)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self._requires_grad, None, self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (a lazy module's running statistics, before its
    first call): ``materialize(shape)`` gives it data and makes it a plain ``Tensor``."""

    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None,
                 persistent: bool = True) -> None:
        _check_device(device)
        Tensor.__init__(self)
        self._data = _empty0(dtype)._data
        self._requires_grad = bool(requires_grad)
        self.persistent = persistent
        self._is_buffer = True

    def __deepcopy__(self, memo):
        raise _refuse(type(self).__name__, "<function Tensor.__deepcopy__>")


def _empty0(dtype) -> Tensor:
    """An empty 1-d tensor of ``dtype`` (the default floating type when None)."""
    from .._factories import empty
    return empty(0, dtype=dtype)
