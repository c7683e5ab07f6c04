"""Tensor factories: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, random tensors, ..."""
from __future__ import annotations

import warnings

import numpy as np

from . import _dtype as D
from ._random import rng
from ._tensor import Size, Tensor, _check_device

_make = Tensor._make


def _finish(data, requires_grad, factory=True):
    t = _make(data)
    if requires_grad:
        if data.dtype.kind not in "fc":
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _infer(data, exact=False):
    """An ndarray for Python data, with PyTorch's dtype inference (floats -> default dtype).
    ``exact`` keeps Python floats at full precision (a dtype was given: cast once, to it)."""
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, np.ndarray):
        return data
    if isinstance(data, (list, tuple)):
        if any(isinstance(x, Tensor) for x in _flat_iter(data)):
            data = _untensor(data)
    arr = np.asarray(data)
    if arr.dtype == object:
        raise TypeError(f"Could not infer dtype of {type(data).__name__}: nested sequences must be "
                        f"rectangular and hold numbers")
    if exact and arr.dtype.kind in "fc":
        return arr
    if arr.dtype.kind == "f":
        arr = arr.astype(D.DEFAULTS.float.np)
    elif arr.dtype.kind == "c":
        arr = arr.astype(np.complex64 if D.DEFAULTS.float is D.float32 else np.complex128)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "b":
        raise TypeError(f"new(): invalid data type '{arr.dtype}'")
    return arr


def _flat_iter(x):
    for e in x:
        if isinstance(e, (list, tuple)):
            yield from _flat_iter(e)
        else:
            yield e


def _untensor(x):
    if isinstance(x, Tensor):
        if x._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x._data.item()
    if isinstance(x, (list, tuple)):
        return [_untensor(e) for e in x]
    return x


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (Python numbers, lists, ndarrays)."""
    _check_device(device)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    arr = _infer(data, dtype is not None)
    arr = np.array(arr, dtype=D.to_dtype(dtype).np if dtype is not None else arr.dtype, copy=True)
    return _finish(arr, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory with an ndarray or tensor when dtypes allow."""
    if isinstance(data, Tensor):
        return data if dtype is None or D.to_dtype(dtype).np == data._data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        if dtype is None or D.to_dtype(dtype).np == data.dtype:
            return _make(data)
        return _make(data.astype(D.to_dtype(dtype).np))
    return tensor(data, dtype=dtype)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray`` (float64 stays float64)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in D.FROM_NP:
        raise TypeError(f"can't convert np.ndarray of type {ndarray.dtype}. The only supported types "
                        f"are: float64, float32, float16, complex64, complex128, int64, int32, "
                        f"int16, int8, uint8, and bool.")
    return _make(ndarray)


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = int(s.item())
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a tuple of ints, but got an element of type "
                            f"{type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
        out.append(int(s))
    return tuple(out)


def _dt(dtype, default=None):
    if dtype is None:
        return (default or D.DEFAULTS.float).np
    return D.to_dtype(dtype).np


def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros."""
    _check_device(device)
    return _finish(np.zeros(_size(size), _dt(dtype)), requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones."""
    _check_device(device)
    return _finish(np.ones(_size(size), _dt(dtype)), requires_grad)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          memory_format=None, pin_memory=False) -> Tensor:
    """An uninitialised tensor (here: zero-filled, so results stay reproducible)."""
    _check_device(device)
    return _finish(np.zeros(_size(size), _dt(dtype)), requires_grad)


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from it when not given)."""
    _check_device(device)
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = D.bool_
        elif isinstance(fill_value, (int, np.integer)):
            dtype = D.int64
        elif isinstance(fill_value, complex):
            dtype = D.complex64
        else:
            dtype = D.DEFAULTS.float
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    return _finish(np.full(_size((size,) if isinstance(size, int) else (size,)), fill_value,
                           _dt(dtype)), requires_grad)


def _like(t, dtype):
    return t._data.dtype if dtype is None else D.to_dtype(dtype).np


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return _finish(np.zeros(input._data.shape, _like(input, dtype)), requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    return _finish(np.ones(input._data.shape, _like(input, dtype)), requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    return _finish(np.zeros(input._data.shape, _like(input, dtype)), requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    return _finish(np.full(input._data.shape, fill_value, _like(input, dtype)), requires_grad)


def rand_like(input, *, dtype=None, generator=None, requires_grad=False, **kw) -> Tensor:
    return rand(input._data.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input, *, dtype=None, generator=None, requires_grad=False, **kw) -> Tensor:
    return randn(input._data.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, **kw) -> Tensor:
    if high is None:
        low, high = 0, low
    return randint(low, high, input._data.shape, dtype=dtype or input.dtype)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) in steps of ``step``."""
    _check_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    if (vals[1] - vals[0]) / vals[2] < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in vals)
        dt = D.DEFAULTS.float.np if is_float else np.int64
    else:
        dt = D.to_dtype(dtype).np
    n = int(np.ceil((vals[1] - vals[0]) / vals[2]))
    data = (vals[0] + np.arange(n, dtype=np.float64) * vals[2]).astype(dt) if np.dtype(dt).kind == "f" \
        else np.arange(vals[0], vals[1], vals[2]).astype(dt)
    return _finish(data, requires_grad)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _finish(np.linspace(start, end, steps).astype(_dt(dtype)), requires_grad)


def logspace(start, end, steps, base=10.0, *, dtype=None, requires_grad=False, **kw) -> Tensor:
    return _finish(np.logspace(start, end, steps, base=base).astype(_dt(dtype)), requires_grad)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (n x m)."""
    return _finish(np.eye(n, m, dtype=_dt(dtype)), requires_grad)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False) -> Tensor:
    """Uniform random numbers in [0, 1)."""
    _check_device(device)
    dt = np.dtype(_dt(dtype))
    g = rng(generator)
    data = g.random(_size(size), dtype=dt) if dt in (np.float32, np.float64) else \
        g.random(_size(size)).astype(dt)
    return _finish(data, requires_grad)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False) -> Tensor:
    """Standard normal random numbers."""
    _check_device(device)
    dt = np.dtype(_dt(dtype))
    g = rng(generator)
    data = g.standard_normal(_size(size), dtype=dt) if dt in (np.float32, np.float64) else \
        g.standard_normal(_size(size)).astype(dt)
    return _finish(data, requires_grad)


def randint(low=0, high=None, size=None, *, generator=None, out=None, dtype=None, layout=None,
            device=None, requires_grad=False) -> Tensor:
    """Random integers in [low, high)."""
    if size is None:
        if isinstance(high, (tuple, list, Size)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint() missing required argument 'size'")
    if high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    data = rng(generator).integers(low, high, _size((size,)), dtype=np.int64)
    return _finish(data.astype(_dt(dtype, D.int64)), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of 0..n-1."""
    return _finish(rng(generator).permutation(n).astype(_dt(dtype, D.int64)), requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None, **kw) -> Tensor:
    m = mean._data if isinstance(mean, Tensor) else mean
    s = std._data if isinstance(std, Tensor) else std
    shape = _size((size,)) if size is not None else np.broadcast_shapes(np.shape(m), np.shape(s))
    dt = (mean.dtype if isinstance(mean, Tensor) else D.DEFAULTS.float).np
    return _make((rng(generator).standard_normal(shape) * s + m).astype(dt))


def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    probs = input._data if p is None else np.full(input._data.shape, p)
    return _make((rng(generator).random(input._data.shape) < probs).astype(input._data.dtype))


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    p = input._data.astype(np.float64)
    g = rng(generator)
    if p.ndim == 1:
        return _make(g.choice(p.size, num_samples, replace=replacement, p=p / p.sum()).astype(np.int64))
    return _make(np.stack([g.choice(p.shape[1], num_samples, replace=replacement, p=r / r.sum())
                           for r in p]).astype(np.int64))


class _LegacyType(type):
    """Metaclass of FloatTensor & co: ``isinstance(t, FloatTensor)`` checks the dtype."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._data.dtype == cls._dtype.np


def _legacy(name, dt):
    def __new__(cls, *args, device=None):
        return Tensor(*args, dtype=dt) if args and not _is_data(args) else \
            (Tensor(*args, dtype=dt) if not args else tensor(args[0], dtype=dt))

    return _LegacyType(name, (), {"__new__": __new__, "_dtype": dt,
                                  "__doc__": f"Legacy constructor of {dt} tensors."})


def _is_data(args):
    return len(args) == 1 and not isinstance(args[0], (int, np.integer, Size))


FloatTensor = _legacy("FloatTensor", D.float32)
DoubleTensor = _legacy("DoubleTensor", D.float64)
HalfTensor = _legacy("HalfTensor", D.float16)
LongTensor = _legacy("LongTensor", D.int64)
IntTensor = _legacy("IntTensor", D.int32)
ShortTensor = _legacy("ShortTensor", D.int16)
CharTensor = _legacy("CharTensor", D.int8)
ByteTensor = _legacy("ByteTensor", D.uint8)
BoolTensor = _legacy("BoolTensor", D.bool_)
