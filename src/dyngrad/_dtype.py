"""dtypes: PyTorch-named wrappers around NumPy dtypes, and PyTorch's promotion rules."""
from __future__ import annotations

import numpy as np
# after NumPy (imported first, its extension's import of NumPy costs ~15 ms more); the
# extension alone: ml_dtypes' finfo is imported when first asked for
from ml_dtypes._ml_dtypes_ext import bfloat16 as _np_bfloat16


class dtype:
    """A tensor element type (``dyngrad.float32`` ...), printed as ``torch.float32``."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "is_signed", "itemsize", "_kind")

    def __init__(self, name: str, np_dtype, kind: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = kind == 2  # bfloat16's NumPy kind is "V", so not np.kind
        self.is_complex = kind == 3
        self.is_signed = kind >= 2 or self.np.kind == "i"
        self.itemsize = self.np.itemsize
        self._kind = kind  # 0 bool, 1 integer, 2 floating, 3 complex

    def __repr__(self) -> str:
        return "torch." + self.name

    __str__ = __repr__

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> "dtype":
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> "dtype":
        """The complex dtype of this floating dtype's precision (bfloat16 gives complex64)."""
        if self._kind == 3:
            return self
        c = {float32: complex64, bfloat16: complex64, float64: complex128}.get(self)
        if c is None:
            raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type_name(self.np)}")
        return c


bool_ = dtype("bool", np.bool_, 0)
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
bfloat16 = dtype("bfloat16", _np_bfloat16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64, complex64, complex128,
       bfloat16)
FROM_NP = {d.np: d for d in ALL}
BF16 = bfloat16.np
# The NumPy dtypes of floating (and floating or complex) tensors: the test for "is floating"
# on arrays, since bfloat16's NumPy kind is "V" and ``kind in "fc"`` misses it.
FLOATING = frozenset(d.np for d in ALL if d._kind == 2)
INEXACT = frozenset(d.np for d in ALL if d._kind >= 2)
_NAMES = {d.name: d for d in ALL}
_NAMES.update({"float": float32, "double": float64, "half": float16, "long": int64, "int": int32,
               "short": int16, "cfloat": complex64, "cdouble": complex128})

# torch.FloatTensor and friends: the legacy type names used in messages
TYPE_NAMES = {float32: "FloatTensor", float64: "DoubleTensor", float16: "HalfTensor",
              int64: "LongTensor", int32: "IntTensor", int16: "ShortTensor", int8: "CharTensor",
              uint8: "ByteTensor", bool_: "BoolTensor", complex64: "ComplexFloatTensor",
              complex128: "ComplexDoubleTensor", bfloat16: "BFloat16Tensor"}


def rounding(forward):
    """``forward`` with its float32 results rounded to bfloat16: a bfloat16 op runs on float32
    copies of its inputs and rounds once at the end, as PyTorch's kernels compute bfloat16 in
    float32."""
    def rounded(*args, **kwargs):
        r = forward(*args, **kwargs)
        if isinstance(r, tuple):
            return tuple(x.astype(BF16) if x.dtype == np.float32 else x for x in r)
        return r.astype(BF16) if r.dtype == np.float32 else r
    return rounded


def opmath(forward, x, *args, **kwargs):
    """``forward(x, *args, **kwargs)`` on array ``x``; for a bfloat16 ``x`` it and the other
    bfloat16 array arguments are computed in float32 and the result rounded once
    (``rounding``)."""
    if x.dtype != BF16:
        return forward(x, *args, **kwargs)
    args = [a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == BF16 else a
            for a in args]
    return rounding(forward)(x.astype(np.float32), *args, **kwargs)


def np_finfo(np_dtype):
    """NumPy's finfo of a NumPy dtype, bfloat16 included (ml_dtypes' finfo extends NumPy's)."""
    import ml_dtypes
    return ml_dtypes.finfo(np_dtype)


class finfo:
    """Machine limits of a floating dtype (``torch.finfo``), from NumPy's and ml_dtypes'
    finfo; a complex dtype gives those of its real part."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type: dtype | None = None):  # noqa: A002 - PyTorch's argument name
        if type is None:
            type = DEFAULTS.float  # noqa: A001
        if not isinstance(type, dtype):
            raise TypeError(f"finfo(): argument 'type' (position 1) must be torch.dtype, not "
                            f"{type_name(type)}")
        if type._kind < 2:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        real = type.to_real()
        import ml_dtypes
        fi = ml_dtypes.finfo(real.np)
        self.bits = real.itemsize * 8
        self.eps, self.max, self.min = float(fi.eps), float(fi.max), float(fi.min)
        self.tiny = self.smallest_normal = float(fi.smallest_normal)
        self.resolution = 10.0 ** -int(fi.precision)
        self.dtype = real.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")

    __str__ = __repr__


def scalar_type_name(np_dtype) -> str:
    """PyTorch's scalar type name of a NumPy dtype, as its messages print it ("Float", "Long")."""
    return TYPE_NAMES[FROM_NP[np.dtype(np_dtype)]][:-len("Tensor")]


def _by_name(name: str) -> dtype:
    return _NAMES[name]


class _Defaults:
    float = float32


DEFAULTS = _Defaults()


def get_default_dtype() -> dtype:
    """The dtype of tensors made from Python floats (float32 unless changed)."""
    return DEFAULTS.float


def set_default_dtype(d: dtype) -> None:
    """Make ``d`` (float32 or float64) the dtype of new floating tensors."""
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    DEFAULTS.float = d


def to_dtype(d) -> dtype:
    """Accept a dyngrad dtype, a NumPy dtype or type, or a Python type."""
    if type(d) is dtype:
        return d
    if d is float:  # Python's types name PyTorch's double, long, bool and cdouble
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    if d is complex:
        return complex128
    if isinstance(d, str):
        try:
            return _NAMES[d.replace("torch.", "")]
        except KeyError:
            raise TypeError(f"unknown dtype name {d!r}") from None
    try:
        return FROM_NP[np.dtype(d)]
    except (TypeError, KeyError):
        raise TypeError(f"dtype must be a dyngrad dtype such as dyngrad.float32, got {d!r}") from None


def type_name(x) -> str:
    """The name PyTorch's argument errors give the type of ``x`` ("str", "numpy.ndarray")."""
    t = type(x)
    if t.__module__ == "builtins" or t.__module__.startswith("dyngrad"):
        return t.__name__
    return f"{t.__module__}.{t.__qualname__}"


def bad_combo(fn: str, args, kwargs=None) -> TypeError:
    """PyTorch's TypeError for arguments that match none of ``fn``'s signatures."""
    kwargs = {k: v for k, v in (kwargs or {}).items() if v is not None}
    from ._arity import combination
    known = combination(fn, args, kwargs)  # with PyTorch's signatures, when known
    if known is not None:
        return known
    got = [type_name(a) for a in args] + [f"{k}={type_name(v)}" for k, v in kwargs.items()]
    return TypeError(f"{fn}() received an invalid combination of arguments - got "
                     f"({', '.join(got)}), but expected one of:\n * (the signatures in the "
                     f"documentation of {fn})")


# the C++ type names some PyTorch kernels print ("expected m1 and m2 to have the same dtype,
# but got: float != double")
C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
           "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
           "bool": "bool", "complex64": "c10::complex<float>",
           "complex128": "c10::complex<double>", "bfloat16": "c10::BFloat16"}


def c_name(np_dtype) -> str:
    """PyTorch's C++ name of a dtype, as some of its messages print it."""
    n = np.dtype(np_dtype).name
    return C_NAMES.get(n, n)


def arg_dtype(d, fn: str):
    """A ``dtype=`` argument of function ``fn`` as PyTorch's parser takes it: a dtype, None, or
    a Python type (float, int, bool, complex); anything else is PyTorch's TypeError."""
    if d is None or type(d) is dtype:
        return d
    if d is float or d is int or d is bool or d is complex:
        return to_dtype(d)
    if isinstance(d, np.dtype) and d in FROM_NP:  # the library's own calls pass arrays' dtypes
        return FROM_NP[d]
    raise TypeError(f"{fn}(): argument 'dtype' must be torch.dtype, not {type_name(d)}")


def arg_int(v, fn: str, arg: str, pos: int) -> None:
    """PyTorch's TypeError for an int argument ``arg`` (at ``pos``) of ``fn`` given another
    type."""
    if not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not "
                        f"{type_name(v)}")


def int_arg(v, fn: str, arg: str, pos: int | None) -> int:
    """An int argument as PyTorch's parser takes it (a NumPy integer or a 0-d integer tensor
    too, as a Python int, which PyTorch's node keeps; not a bool), else PyTorch's TypeError for
    ``arg`` of ``fn``, with its position when it was given by position (``pos``)."""
    data = getattr(v, "_data", None)   # (a Tensor: the core's module cannot import its class)
    if data is not None and data.ndim == 0 and data.dtype.kind in "iu":
        return int(data)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        where = "" if pos is None else f" (position {pos})"
        raise TypeError(f"{fn}(): argument '{arg}'{where} must be int, not {type_name(v)}")
    return int(v)


def not_tensor(fn: str, arg: str, pos: int, v) -> TypeError:
    """PyTorch's TypeError for a tensor argument ``arg`` (at ``pos``) of ``fn`` given ``v``."""
    return TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Tensor, not "
                     f"{type_name(v)}")


def arg_bools(fn: str, **flags) -> None:
    """PyTorch's TypeError for a flag argument of ``fn`` that is not a bool (a string or None
    would otherwise count as truthy or falsy)."""
    for k, v in flags.items():
        if type(v) is not bool and not isinstance(v, np.bool_):
            raise TypeError(f"{fn}(): argument '{k}' must be bool, not {type_name(v)}")


def promote(a: dtype, b: dtype) -> dtype:
    """Result dtype of two tensor dtypes of the same priority (both dimensioned or both 0-d)."""
    if a is b:
        return a
    if a._kind != b._kind:
        lo, hi = (a, b) if a._kind < b._kind else (b, a)
        if lo._kind < 2:  # a bool or integer type never widens a floating or complex one
            return hi
    if a is bfloat16 or b is bfloat16:  # with another floating or complex type, as float32
        return FROM_NP[np.promote_types(float32.np, b.np if a is bfloat16 else a.np)]
    return FROM_NP[np.promote_types(a.np, b.np)]


def result_type(a_dt: dtype, a_ndim: int, b_dt: dtype, b_ndim: int) -> dtype:
    """PyTorch's promotion of two tensors: a 0-d tensor only decides the dtype when it is of a
    higher category (bool < int < float < complex) than the dimensioned one."""
    if a_dt is b_dt:
        return a_dt
    if (a_ndim == 0) == (b_ndim == 0):
        return promote(a_dt, b_dt)
    dim_dt, zero_dt = (a_dt, b_dt) if b_ndim == 0 else (b_dt, a_dt)
    if zero_dt._kind > dim_dt._kind:
        if zero_dt._kind == 2 and dim_dt._kind < 2:
            return zero_dt
        if dim_dt._kind == 2:  # a 0-d complex keeps the dimensioned float's precision
            return complex128 if dim_dt is float64 else complex64
        return promote(dim_dt, zero_dt) if zero_dt._kind != dim_dt._kind else dim_dt
    return dim_dt


def scalar_result(t_dt: dtype, value) -> dtype:
    """Result dtype of a tensor combined with a Python scalar (scalars never upcast within a
    category; an int or bool tensor with a float scalar gives the default float dtype)."""
    tv = type(value)
    if tv is float:
        return t_dt if t_dt._kind >= 2 else DEFAULTS.float
    if tv is int:
        return int64 if t_dt is bool_ else t_dt
    if tv is bool:
        return t_dt
    if tv is complex:
        if t_dt._kind == 3:
            return t_dt
        wide = t_dt is float64 or (t_dt._kind < 2 and DEFAULTS.float is float64)
        return complex128 if wide else complex64
    return t_dt
