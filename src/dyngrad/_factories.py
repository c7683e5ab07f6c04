"""Tensor factories: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, random tensors, ..."""
from __future__ import annotations

import functools
import warnings
import weakref

import numpy as np

from . import _dtype as D
from ._random import rng
from ._tensor import Size, Tensor, _check_device
from ._out import handles_out
from . import _warn

_make = Tensor._make


def _finish(data, requires_grad, factory=True):
    t = _make(data)
    if requires_grad:
        if data.dtype not in D.INEXACT:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        t._requires_grad = True
    return t


def _out_variant(name):
    """Factory ``name`` with PyTorch's ``out=``: the values are written into ``out`` (resized to
    their shape when it differs), whose dtype is the result's unless ``dtype`` says otherwise."""
    def deco(f):
        @functools.wraps(f)
        def g(*args, out=None, **kwargs):
            if out is None:
                return f(*args, **kwargs)
            if not isinstance(out, Tensor):
                raise TypeError(f"{name}(): argument 'out' must be Tensor, not "
                                f"{D.type_name(out)}")
            from .autograd.grad_mode import STATE
            if out._requires_grad and STATE.enabled:
                raise RuntimeError(f"aten::{name}(): functions with out=... arguments don't "
                                   f"support automatic differentiation, but one of the "
                                   f"arguments requires grad.")
            dtype = kwargs.get("dtype")
            od = out._data.dtype
            if dtype is not None and D.arg_dtype(dtype, name).np != od:
                raise RuntimeError(f"dtype {D.scalar_type_name(D.arg_dtype(dtype, name).np)} "
                                   f"does not match dtype of out parameter "
                                   f"({D.scalar_type_name(od)})")
            kwargs["dtype"] = D.FROM_NP[od]
            requires_grad = kwargs.pop("requires_grad", False)
            r = f(*args, **kwargs)._data
            version = out._vc[0]
            if out._data.shape != r.shape:
                out.resize_(r.shape)
            out._data[...] = r
            out._vc[0] = version + 1  # one write, resized or not
            if requires_grad:
                out.requires_grad_()
            return out
        return handles_out(g)
    return deco


def _no_size(name, size):
    """PyTorch's error for a size-taking factory called without a size."""
    if not size:
        if name in ("zeros", "ones", "empty"):
            raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
        raise D.bad_combo(name, (), None)


_SUPPORTED = ("float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
              "uint8, and bool")


def _np_dtype(dt):
    """The dyngrad dtype of a NumPy dtype, or PyTorch's error for one it cannot hold (its
    NumPy bridge has no bfloat16, so an ml_dtypes bfloat16 array is refused too)."""
    r = D.FROM_NP.get(dt)
    if r is None or r is D.bfloat16:
        raise TypeError(f"can't convert np.ndarray of type {dt.type.__module__}."
                        f"{dt.type.__name__}. The only supported types are: {_SUPPORTED}.")
    return r


def _leaf_dtype(x):
    """PyTorch's inferred dtype of one scalar of tensor data (a NumPy scalar keeps its dtype)."""
    t = type(x)
    if t is float:
        return D.DEFAULTS.float
    if t is int:
        return D.int64
    if t is bool:
        return D.bool_
    if isinstance(x, (np.generic, np.ndarray)):
        return _np_dtype(x.dtype)
    if t is complex:
        return D.complex64 if D.DEFAULTS.float is D.float32 else D.complex128
    if isinstance(x, Tensor):
        return D.FROM_NP[x._data.dtype]
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{t.__name__}'")
    if isinstance(x, float):
        return D.DEFAULTS.float
    if isinstance(x, int):
        return D.int64
    raise RuntimeError(f"Could not infer dtype of {t.__name__}")


def _is_seq(x):
    return isinstance(x, (list, tuple, range))


def _sizes(data):
    """The shape of nested sequence data, read along first elements (as PyTorch does)."""
    sizes = []
    x = data
    while True:
        if isinstance(x, (str, bytes)):
            raise ValueError(f"too many dimensions '{type(x).__name__}'")
        if isinstance(x, (np.ndarray, Tensor)):
            return sizes + list(x.shape)
        if not _is_seq(x):
            return sizes
        sizes.append(len(x))
        if not len(x):
            return sizes
        x = x[0]


def _scan(data, dtype):
    """Check nested sequence data against its shape with PyTorch's errors, and infer its dtype
    (``dtype`` given: only the checks).  Returns the dtype."""
    sizes = _sizes(data)
    nd = len(sizes)
    inferred = None
    stack = [(data, 0)]
    while stack:
        x, d = stack.pop()
        if d < nd:
            if isinstance(x, (np.ndarray, Tensor)):
                _int_store_check(x, dtype)
                if isinstance(x, Tensor):  # only one-element tensors may stand for numbers
                    raise ValueError("only one element tensors can be converted to Python scalars")
                if list(x.shape) != sizes[d:]:
                    n = x.shape[0] if x.ndim else None
                    if n is None:
                        raise TypeError("len() of unsized object")
                    raise ValueError(f"expected sequence of length {sizes[d]} at dim {d} (got {n})")
                if dtype is None:
                    dt = _leaf_dtype(x)
                    inferred = dt if inferred is None else D.promote(inferred, dt)
                continue
            if isinstance(x, (str, bytes)):
                raise ValueError(f"too many dimensions '{type(x).__name__}'")
            if not _is_seq(x):
                raise TypeError("not a sequence")
            if len(x) != sizes[d]:
                raise ValueError(f"expected sequence of length {sizes[d]} at dim {d} (got {len(x)})")
            stack.extend((e, d + 1) for e in reversed(x))
            continue
        _int_store_check(x, dtype)
        if isinstance(x, Tensor) and x._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if dtype is None:
            dt = _seq_dtype(x) if _is_seq(x) else _leaf_dtype(x)
            inferred = dt if inferred is None else D.promote(inferred, dt)
        if _is_seq(x) or not isinstance(x, (int, float, complex, np.generic, Tensor)):
            raise _store_error(x, dtype or inferred)
        if type(x) is int and not -2 ** 63 <= x < 2 ** 63 and (dtype or inferred)._kind < 2:
            raise ValueError("Overflow when unpacking long long")
        if type(x) is complex and dtype is not None and dtype._kind < 3:
            raise TypeError("must be real number, not complex")
    return dtype or inferred or D.DEFAULTS.float


def _seq_dtype(x):
    """The promoted dtype of the scalars inside a (possibly ragged) sequence."""
    r = None
    for e in x:
        dt = _seq_dtype(e) if _is_seq(e) else _leaf_dtype(e)
        if dt is not None:
            r = dt if r is None else D.promote(r, dt)
    return r


def _int_store_check(x, dtype):
    """PyTorch refuses to write a NumPy float, complex or bool scalar (np.float64 is a Python
    float and passes), a Python complex or a non-integer tensor into an integer tensor."""
    if dtype is None or dtype._kind != 1:
        return
    if isinstance(x, Tensor):
        if x._data.dtype.kind not in "iu" or x._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
    elif isinstance(x, (np.generic, np.ndarray)):
        if x.dtype.kind in "fcb" and x.dtype != np.float64:
            raise TypeError(f"'numpy.{x.dtype.type.__name__}' object cannot be interpreted as an "
                            f"integer")
    elif type(x) is complex:
        raise TypeError("'complex' object cannot be interpreted as an integer")


def _store_error(x, dtype):
    """PyTorch's error for a non-number ``x`` written into a tensor of ``dtype``."""
    if dtype is not None and dtype._kind < 2:
        return TypeError(f"'{type(x).__name__}' object cannot be interpreted as an integer")
    return TypeError(f"must be real number, not {type(x).__name__}")


def _flat_types(data, nd):
    """The set of leaf types of regular nested sequence data ``nd`` levels deep."""
    level = [data]
    for _ in range(nd):
        nxt = []
        for x in level:
            if isinstance(x, (np.ndarray, Tensor)):
                return None  # arrays or tensors inside: the careful path
            nxt.extend(x)
        level = nxt
    return set(map(type, level))


_PLAIN = {float, int, bool, complex}


def _infer(data, dtype=None):
    """An ndarray for tensor data (Python numbers, NumPy scalars and arrays, nested sequences of
    them, one-element tensors) in PyTorch's dtype: ``dtype`` when given, else inferred as
    PyTorch infers it (Python floats give the default dtype, a NumPy scalar keeps its own, and
    a sequence promotes over its elements).  PyTorch's errors for data it cannot hold."""
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, np.ndarray):
        if dtype is None or data.dtype.kind not in "biufc":
            _np_dtype(data.dtype)
        arr = data
    elif _is_seq(data):
        arr = None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                a = np.asarray(data)
        except (ValueError, TypeError):
            a = None
        if a is not None and a.dtype.kind in "biufc":
            types = _flat_types(data, a.ndim)
            if types is not None and types <= _PLAIN and not (a.dtype.kind == "u" and int in types):
                arr = a
                if dtype is None:
                    k = a.dtype.kind
                    dt = (D.DEFAULTS.float if k == "f" else D.int64 if k in "iu" else D.bool_
                          if k == "b" else D.complex64 if D.DEFAULTS.float is D.float32
                          else D.complex128)
                    arr = a.astype(dt.np, copy=False)
                elif a.dtype.kind == "c" and dtype._kind < 3:
                    _int_store_check(complex(0), dtype)
                    raise TypeError("must be real number, not complex")
        if arr is None:
            dt = _scan(data, dtype)
            arr = np.array(_untensor(data), dtype=dt.np)
        return arr if dtype is None else arr.astype(dtype.np, copy=False)
    else:
        if dtype is not None and not isinstance(data, (int, float, complex, np.generic, str,
                                                       bytes)):
            raise _store_error(data, dtype)
        _int_store_check(data, dtype)
        dt = dtype if dtype is not None and isinstance(data, np.generic) else _leaf_dtype(data)
        if dtype is not None and type(data) is complex and dtype._kind < 3:
            raise TypeError("must be real number, not complex")
        if type(data) is int and not -2 ** 63 <= data < 2 ** 63 and (dtype or dt)._kind < 2:
            raise ValueError("Overflow when unpacking long long")
        arr = np.asarray(data.item() if isinstance(data, Tensor) else data,
                         dtype=(dtype or dt).np)
    return arr if dtype is None else arr.astype(dtype.np, copy=False)


def _untensor(x):
    if isinstance(x, Tensor):
        if x._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x._data.reshape(()).copy()
    if isinstance(x, (list, tuple, range)):
        return [_untensor(e) for e in x]
    return x


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (Python numbers, lists, ndarrays)."""
    _check_device(device)
    if isinstance(data, Tensor):
        _warn.warn("To copy construct from a tensor, it is recommended to use "
                   "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                   "requires_grad_(True), rather than torch.tensor(sourceTensor).",
                   UserWarning)
    dt = D.arg_dtype(dtype, "tensor")
    with np.errstate(all="ignore"):  # values out of the dtype's range convert silently
        arr = _infer(data, dt)
    return _finish(np.array(arr, copy=True), requires_grad)


# root arrays of memory lent by NumPy (from_numpy / as_tensor), by id, weakly: a tensor on
# such memory cannot grow its storage (resize_), as PyTorch's are not resizable
_LENT: "weakref.WeakValueDictionary[int, np.ndarray]" = weakref.WeakValueDictionary()


def root_array(a: np.ndarray) -> np.ndarray:
    """The ndarray that owns the memory ``a`` views."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _lend(a: np.ndarray) -> Tensor:
    r = root_array(a)
    _LENT[id(r)] = r
    return _make(a)


def is_lent(root: np.ndarray) -> bool:
    """Whether ``root`` (see ``root_array``) is memory NumPy lent to a tensor."""
    return _LENT.get(id(root)) is root


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """``data`` as a tensor, sharing memory with an ndarray or tensor when dtypes allow."""
    dtype = D.arg_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data if dtype is None or dtype.np == data._data.dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        if dtype is None:
            _np_dtype(data.dtype)
            return _lend(data)
        if dtype.np == data.dtype:
            return _lend(data)
        return _make(_infer(data, dtype))
    return tensor(data, dtype=dtype)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``ndarray`` (float64 stays float64)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {D.type_name(ndarray)})")
    _np_dtype(ndarray.dtype)
    return _lend(ndarray)


def _size_item(s, fn, pos, first_of_seq):
    """One dimension of a size argument as an int, with PyTorch's parser errors."""
    if isinstance(s, Tensor) and s._data.dtype.kind in "iu" and s._data.size == 1:
        return int(s._data.reshape(()))
    if isinstance(s, (int, np.integer)) and not (isinstance(s, bool) and pos == 0):
        return int(s)
    if first_of_seq:
        raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, but found "
                        f"element of type {D.type_name(s)} at pos {pos}")
    if pos == 0:
        raise TypeError(f"{fn}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{D.type_name(s)}")
    raise TypeError(f"{fn}(): argument 'size' failed to unpack the object at pos {pos + 1} with "
                    f"error \"type must be tuple of ints,but got {D.type_name(s)}\"")


def _size(size, fn="zeros"):
    """The shape given to a factory as ``f(2, 3)`` or ``f((2, 3))``, checked as PyTorch checks
    it (``fn`` names the factory in the errors)."""
    _no_size(fn, size)
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        seq = size[0]
        out = tuple(_size_item(s, fn, i, i == 0) for i, s in enumerate(seq))
    elif len(size) == 1 and isinstance(size[0], Tensor) and size[0]._data.ndim == 1 \
            and size[0]._data.dtype.kind in "iu":
        out = tuple(int(v) for v in size[0]._data)
    else:
        out = tuple(_size_item(s, fn, i, False) for i, s in enumerate(size))
    for s in out:
        if s < 0:
            if fn == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(out)}")
    return out


def _dt(dtype, fn, default=None):
    """The NumPy dtype of factory ``fn``'s ``dtype`` argument (None: ``default`` or the default
    float dtype)."""
    if dtype is None:
        return (default or D.DEFAULTS.float).np
    return D.arg_dtype(dtype, fn).np


def _checked_dtype(dtype, fn, args, kwargs, default=None):
    """A dtype argument of a function whose PyTorch errors name the whole argument list."""
    if dtype is None or type(dtype) is D.dtype or dtype in (float, int, bool, complex):
        return _dt(dtype, fn, default)
    raise D.bad_combo(fn, args, dict(kwargs, dtype=dtype))


@_out_variant("zeros")
def zeros(*size, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros."""
    _check_device(device)
    return _finish(np.zeros(_size(size, "zeros"), _dt(dtype, "zeros")), requires_grad)


@_out_variant("ones")
def ones(*size, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones."""
    _check_device(device)
    return _finish(np.ones(_size(size, "ones"), _dt(dtype, "ones")), requires_grad)


@_out_variant("empty")
def empty(*size, dtype=None, layout=None, device=None, requires_grad=False,
          memory_format=None, pin_memory=False) -> Tensor:
    """An uninitialised tensor (here: zero-filled, so results stay reproducible)."""
    _check_device(device)
    return _finish(np.zeros(_size(size, "empty"), _dt(dtype, "empty")), requires_grad)


def _fill_value(fill_value, fn):
    if isinstance(fill_value, Tensor):
        if fill_value._data.ndim:
            raise TypeError(f"{fn}(): argument 'fill_value' (position 2) must be Number, not "
                            f"Tensor")
        return fill_value.item()
    if not isinstance(fill_value, (int, float, complex, np.number, np.bool_)):
        raise TypeError(f"{fn}(): argument 'fill_value' (position 2) must be Number, not "
                        f"{D.type_name(fill_value)}")
    return fill_value


@_out_variant("full")
def full(size, fill_value, *, dtype=None, layout=None, device=None,
         requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (dtype inferred from it when not given)."""
    _check_device(device)
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{D.type_name(size)}")
    shape = _size((size,), "full")
    fill_value = _fill_value(fill_value, "full")
    if dtype is None:
        if isinstance(fill_value, (bool, np.bool_)):
            dtype = D.bool_
        elif isinstance(fill_value, (int, np.integer)):
            dtype = D.int64
        elif isinstance(fill_value, complex):
            dtype = D.complex64 if D.DEFAULTS.float is D.float32 else D.complex128
    return _finish(np.full(shape, fill_value, _dt(dtype, "full")), requires_grad)


def _like(t, dtype, fn):
    if not isinstance(t, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(t)}")
    return t._data.dtype if dtype is None else D.arg_dtype(dtype, fn).np


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    dt = _like(input, dtype, "zeros_like")
    return _finish(np.zeros(input._data.shape, dt), requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    dt = _like(input, dtype, "ones_like")
    return _finish(np.ones(input._data.shape, dt), requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=None) -> Tensor:
    dt = _like(input, dtype, "empty_like")
    return _finish(np.zeros(input._data.shape, dt), requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    dt = _like(input, dtype, "full_like")
    return _finish(np.full(input._data.shape, _fill_value(fill_value, "full_like"), dt),
                   requires_grad)


def rand_like(input, *, generator=None, dtype=None, layout=None, device=None,
              requires_grad=False, memory_format=None) -> Tensor:
    """Uniform random numbers in [0, 1) with ``input``'s shape (and dtype unless given)."""
    _like(input, dtype, "rand_like")
    _check_device(device)
    return rand(input._data.shape, generator=generator, dtype=dtype or input.dtype,
                requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, layout=None, device=None,
               requires_grad=False, memory_format=None) -> Tensor:
    """Standard normal random numbers with ``input``'s shape (and dtype unless given)."""
    _like(input, dtype, "randn_like")
    _check_device(device)
    return randn(input._data.shape, generator=generator, dtype=dtype or input.dtype,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, layout=None,
                 device=None, requires_grad=False, memory_format=None) -> Tensor:
    """Random integers in [low, high) with ``input``'s shape (and dtype unless given)."""
    if not isinstance(input, Tensor):
        raise D.bad_combo("randint_like", (input,) + ((low,) if low else ()), {"dtype": dtype})
    _check_device(device)
    if high is None:
        low, high = 0, low
    return randint(low, high, input._data.shape, generator=generator,
                   dtype=dtype or input.dtype, requires_grad=requires_grad)


@_out_variant("arange")
def arange(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """Values from ``start`` to ``end`` (exclusive) in steps of ``step``."""
    _check_device(device)
    given = [start] if end is None else ([start, end] + ([step] if step != 1 else []))
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) and v._data.size == 1 else v for v in (start, end, step)]
    for v in vals:
        if not isinstance(v, (int, float, np.number)):
            if len(given) == 1:
                raise TypeError(f"arange(): argument 'end' (position 1) must be Number, not "
                                f"{D.type_name(v)}")
            raise D.bad_combo("arange", given, {"dtype": dtype})
    if dtype is not None:
        dt = _checked_dtype(dtype, "arange", given, {})
    if not all(np.isfinite(vals)):
        raise RuntimeError(f"unsupported range: {vals[0]} -> {vals[1]}")
    if vals[2] == 0:
        raise RuntimeError("step must be nonzero")
    if (vals[1] - vals[0]) / vals[2] < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        is_float = any(isinstance(v, float) for v in vals)
        dt = D.DEFAULTS.float.np if is_float else np.int64
    n = int(np.ceil((vals[1] - vals[0]) / vals[2]))
    data = (vals[0] + np.arange(n, dtype=np.float64) * vals[2]).astype(dt) if np.dtype(dt) in D.FLOATING \
        else np.arange(vals[0], vals[1], vals[2]).astype(dt)
    return _finish(data, requires_grad)


@_out_variant("linspace")
def linspace(start, end, steps, *, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    dt = _checked_dtype(dtype, "linspace", [start, end, steps], {})
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        raise D.bad_combo("linspace", [start, end, steps], {})
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _finish(np.linspace(start, end, steps).astype(dt), requires_grad)


@_out_variant("logspace")
def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in exponent."""
    _check_device(device)
    dt = _checked_dtype(dtype, "logspace", [start, end, steps], {})
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool):
        raise D.bad_combo("logspace", [start, end, steps], {})
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _finish(np.logspace(start, end, steps, base=base).astype(dt), requires_grad)


@_out_variant("eye")
def eye(n, m=None, *, dtype=None, layout=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (n x m)."""
    dt = _checked_dtype(dtype, "eye", [n] + ([m] if m is not None else []), {})
    for name, v in (("n", n), ("m", m)):
        if v is None:
            continue
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise TypeError(f"eye(): argument '{name}' (position {1 if name == 'n' else 2}) must "
                            f"be int, not {D.type_name(v)}")
        if v < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {v}")
    return _finish(np.eye(n, m, dtype=dt), requires_grad)


@_out_variant("rand")
def rand(*size, generator=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False) -> Tensor:
    """Uniform random numbers in [0, 1)."""
    _check_device(device)
    dt = np.dtype(_dt(dtype, "rand"))
    if dt not in D.INEXACT:
        raise NotImplementedError(f'"check_uniform_bounds" not implemented for '
                                  f"'{D.scalar_type_name(dt)}'")
    shape = _size(size, "rand")
    g = rng(generator)
    data = g.random(shape, dtype=dt) if dt in (np.float32, np.float64) else \
        g.random(shape).astype(dt)
    return _finish(data, requires_grad)


@_out_variant("randn")
def randn(*size, generator=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False) -> Tensor:
    """Standard normal random numbers."""
    _check_device(device)
    dt = np.dtype(_dt(dtype, "randn"))
    if dt not in D.INEXACT:
        raise NotImplementedError(f'"normal_kernel_cpu" not implemented for '
                                  f"'{D.scalar_type_name(dt)}'")
    shape = _size(size, "randn")
    g = rng(generator)
    data = g.standard_normal(shape, dtype=dt) if dt in (np.float32, np.float64) else \
        g.standard_normal(shape).astype(dt)
    return _finish(data, requires_grad)


@_out_variant("randint")
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, layout=None,
            device=None, requires_grad=False) -> Tensor:
    """Random integers in [low, high)."""
    if size is None:
        if isinstance(high, (tuple, list, Size)):
            low, high, size = 0, low, high
        else:
            raise TypeError("randint() missing required argument 'size'")
    if high is None:
        low, high = 0, low
    given = [v for v in (low, high, size) if v is not None]
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (low, high)) \
            or not isinstance(size, (tuple, list, Size)):
        raise D.bad_combo("randint", given, {})
    dt = _checked_dtype(dtype, "randint", given, {}, D.int64)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    data = rng(generator).integers(low, high, _size((size,), "randint"), dtype=np.int64)
    return _finish(data.astype(dt), requires_grad)


@_out_variant("randperm")
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of 0..n-1."""
    dt = _checked_dtype(dtype, "randperm", [n], {}, D.int64)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {D.type_name(n)}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    return _finish(rng(generator).permutation(n).astype(dt), requires_grad)


def _num(v):
    """A number as PyTorch prints it in messages (-1, not -1.0)."""
    v = float(v)
    return int(v) if v.is_integer() else v


def multinomial(input, num_samples, replacement=False, *, generator=None) -> Tensor:
    """``num_samples`` category indices per row of ``input`` (unnormalised probabilities)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(input)}")
    if not isinstance(num_samples, (int, np.integer)) or isinstance(num_samples, bool):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{D.type_name(num_samples)}")
    p = input._data
    if p.dtype not in D.FLOATING:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{D.scalar_type_name(p.dtype)}")
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = p.reshape(-1, p.shape[-1]).astype(np.float64)
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (rows.sum(axis=1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = rng(generator)
    if replacement:
        cdf = np.cumsum(rows, axis=1)
        u = g.random((rows.shape[0], num_samples)) * cdf[:, -1:]
        out = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u)])
        out = np.minimum(out, rows.shape[1] - 1)
    else:
        # keys p / E with E ~ Exp(1): the largest keys are a sample without replacement (and
        # categories of probability 0 come last, as in PyTorch)
        with np.errstate(divide="ignore"):
            keys = rows / g.exponential(size=rows.shape)
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64)
    return _make(out.reshape(p.shape[:-1] + (num_samples,)))


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
BFloat16Tensor = _legacy("BFloat16Tensor", D.bfloat16)
LongTensor = _legacy("LongTensor", D.int64)
IntTensor = _legacy("IntTensor", D.int32)
ShortTensor = _legacy("ShortTensor", D.int16)
CharTensor = _legacy("CharTensor", D.int8)
ByteTensor = _legacy("ByteTensor", D.uint8)
BoolTensor = _legacy("BoolTensor", D.bool_)


# --- Tensor.new_*: new tensors like a given one (its dtype unless another is given) ----------
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None,
               pin_memory=False) -> "Tensor":
    """A new leaf holding a copy of ``data``, of this tensor's dtype unless ``dtype``."""
    _check_device(device)
    dt = D.arg_dtype(dtype, "new_tensor") or D.FROM_NP[self._data.dtype]
    if isinstance(data, Tensor):
        _warn.warn("To copy construct from a tensor, it is recommended to use "
                   "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                   "requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                   UserWarning)
        arr = data._data.astype(dt.np, copy=True)
    else:
        with np.errstate(all="ignore"):
            arr = np.array(_infer(data, dt), copy=True)
    return _finish(arr, requires_grad)


def _new_like(self, fn, size, dtype, device, requires_grad, make):
    _check_device(device)
    if not size:
        raise TypeError(f'{fn}() missing 1 required positional arguments: "size"')
    shape = _size(size, fn)
    dt = self._data.dtype if dtype is None else D.arg_dtype(dtype, fn).np
    return _finish(make(shape, dt), requires_grad)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False) -> "Tensor":
    """Zeros of ``size``, of this tensor's dtype unless ``dtype``."""
    return _new_like(self, "new_zeros", size, dtype, device, requires_grad, np.zeros)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False) -> "Tensor":
    """Ones of ``size``, of this tensor's dtype unless ``dtype``."""
    return _new_like(self, "new_ones", size, dtype, device, requires_grad, np.ones)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
              pin_memory=False) -> "Tensor":
    """An uninitialised tensor of ``size`` (here zero-filled), of this tensor's dtype."""
    return _new_like(self, "new_empty", size, dtype, device, requires_grad, np.zeros)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False) -> "Tensor":
    """``fill_value`` everywhere in ``size``, of this tensor's dtype unless ``dtype``."""
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{D.type_name(size)}")
    v = _fill_value(fill_value, "new_full")
    return _new_like(self, "new_full", (size,), dtype, device, requires_grad,
                     lambda shape, dt: np.full(shape, v, dt))


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      layout=None, pin_memory=False) -> "Tensor":
    """An uninitialised tensor (here zero-filled) of ``size`` laid out with ``stride``."""
    for name, pos, v in (("size", 1, size), ("stride", 2, stride)):
        if not isinstance(v, (tuple, list, Size)):
            raise TypeError(f"new_empty_strided(): argument '{name}' (position {pos}) must be "
                            f"tuple of ints, not {D.type_name(v)}")
    shape = _size((size,), "new_empty_strided")
    st = tuple(int(s) for s in stride)
    if len(st) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match "
                           f"dimensionality of strides ({len(st)})")
    if any(s < 0 for s in st):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, "
                           f"got strides: {list(st)}")

    def make(shape, dt):
        n = 0 if 0 in shape else 1 + sum((k - 1) * s for k, s in zip(shape, st))
        buf = np.zeros(n, dt)
        it = buf.itemsize
        return np.lib.stride_tricks.as_strided(buf, shape, tuple(s * it for s in st))

    return _new_like(self, "new_empty_strided", (size,), dtype, device, requires_grad, make)


for _f in (new_tensor, new_zeros, new_ones, new_empty, new_full, new_empty_strided):
    setattr(Tensor, _f.__name__, _f)
