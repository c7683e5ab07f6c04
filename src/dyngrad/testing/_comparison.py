"""``assert_close``: compare tensors, numbers and nested containers as ``torch.testing`` does.

Each pair of leaves found by walking matching sequences and mappings is handed to the first of
four comparers that accepts it (None, booleans, numbers, tensor-likes); a pair none accepts is
a TypeError.  The first failure raises, with PyTorch's message text and, for a nested leaf,
the path to it.  Values are compared on the NumPy arrays under the tensors, in the tensors'
dtype, following ``torch.isclose``.
"""
from __future__ import annotations

import cmath
import collections.abc
import contextlib
import warnings

import numpy as np

from .. import _dtype as D
from .._promotion import promote_types
from .._tensor import Tensor
from .._factories import as_tensor

# (rtol, atol) by dtype; dtypes not listed compare exactly
_TOLERANCES = {D.float16: (0.001, 1e-5), D.bfloat16: (0.016, 1e-5), D.float32: (1.3e-6, 1e-5),
               D.float64: (1e-7, 1e-7), D.complex64: (1.3e-6, 1e-5), D.complex128: (1e-7, 1e-7)}
# the dtype a Python number stands for when choosing tolerances
_NUMBER_DTYPE = {int: D.int64, float: D.float64, complex: D.complex128}


class _Failure(Exception):
    """A comparison failure on its way out: the exception type, its text, and the path of the
    nested item it concerns."""

    def __init__(self, kind, text, path=()):
        super().__init__(text)
        self.kind, self.text, self.path = kind, text, path

    def error(self, msg=None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.text
        if self.path:
            text += "\n\nThe failure occurred for item " + "".join(f"[{k!r}]" for k in self.path)
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """The comparer does not handle these inputs; the next one is tried."""


def _type_str(cls) -> str:
    """``str(cls)`` with dyngrad's classes under the names PyTorch gives its own."""
    mod = cls.__module__ or ""
    if mod == "dyngrad" or mod.startswith("dyngrad."):
        return f"<class 'torch{mod[len('dyngrad'):]}.{cls.__qualname__}'>"
    return str(cls)


def _tolerances(dtypes, rtol, atol, path, table=None):
    if (rtol is None) != (atol is None):
        raise _Failure(ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, "
                                   f"but got no {'rtol' if rtol is None else 'atol'}.", path)
    if rtol is not None:
        return rtol, atol
    table = table or _TOLERANCES
    pairs = [table.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_lines(abs_diff, abs_idx, rel_diff, rel_idx, rtol, atol) -> str:
    exact = rtol == 0 and atol == 0
    out = []
    for kind, diff, idx, tol in (("absolute", abs_diff, abs_idx, atol),
                                 ("relative", rel_diff, rel_idx, rtol)):
        line = (f"{kind.title()} difference: {diff}" if idx is None else
                f"Greatest {kind} difference: {diff} at index {idx}")
        out.append(line if exact else f"{line} (up to {tol} allowed)")
    return "\n".join(out)


def _header(identifier, rtol, atol) -> str:
    return f"{identifier} are not {'equal' if rtol == 0 and atol == 0 else 'close'}!\n\n"


def _scalar_message(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return (_header("Scalars", rtol, atol) + f"Expected {expected} but got {actual}.\n"
            + _diff_lines(abs_diff, None, rel_diff, None, rtol, atol))


def _tensor_message(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol, atol) -> str:
    total = matches.size
    wrong = total - int(np.count_nonzero(matches))
    text = _header("Tensor-likes", rtol, atol) + \
        f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})\n"
    a, e, hit = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if a.dtype not in D.INEXACT:
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = _abs(a - e)
        abs_diff[hit] = 0
        if abs_diff.dtype.kind in "iu":   # integer true division gives the default float dtype
            fl = D.get_default_dtype().np
            rel_diff = abs_diff.astype(fl) / np.abs(e).astype(fl)
        else:
            rel_diff = abs_diff / _abs(e)
        rel_diff[hit] = 0

    def where(i):
        return tuple(int(k) for k in np.unravel_index(i, matches.shape))

    ai, ri = int(np.argmax(_nan_first(abs_diff))), int(np.argmax(_nan_first(rel_diff)))
    return text + _diff_lines(abs_diff[ai].item(), where(ai), rel_diff[ri].item(), where(ri),
                              rtol, atol)


def _abs(x: np.ndarray) -> np.ndarray:
    """|x|, for complex through hypot (correctly rounded, as PyTorch's; np.abs is not)."""
    return np.hypot(x.real, x.imag) if x.dtype.kind == "c" else np.abs(x)


def _nan_first(x: np.ndarray) -> np.ndarray:
    """An array whose argmax is the first NaN of ``x`` if there is one (torch.max's choice),
    else ``x``'s own argmax."""
    if x.dtype in D.FLOATING:
        nan = np.isnan(x)
        if nan.any():
            return nan
    return x


def _isclose(a: np.ndarray, e: np.ndarray, rtol, atol, equal_nan) -> np.ndarray:
    """torch.isclose on two arrays of one dtype."""
    with np.errstate(all="ignore"):
        close = np.asarray(a == e)
        if equal_nan and a.dtype in D.INEXACT:
            close |= np.isnan(a) & np.isnan(e)
        if rtol == 0 and atol == 0:
            return close
        if a.dtype.kind == "b":
            fl = D.get_default_dtype().np
            a, e = a.astype(fl), e.astype(fl)
        if a.dtype.kind in "iu":
            allowed = atol + np.abs(rtol * e.astype(D.get_default_dtype().np))
        else:
            allowed = atol + _abs(rtol * e)
        err = _abs(a - e)
        close |= np.isfinite(err) & (err <= allowed)
    return close


class _Pair:
    def __init__(self, actual, expected, path):
        self.actual, self.expected, self.path = actual, expected, path

    def fail(self, kind, text):
        raise _Failure(kind, text, self.path)


class _NonePair(_Pair):
    def __init__(self, actual, expected, path, **options):
        if actual is not None and expected is not None:
            raise _Unsupported
        super().__init__(actual, expected, path)

    def compare(self):
        if not (self.actual is None and self.expected is None):
            self.fail(AssertionError, f"None mismatch: {self.actual} is not {self.expected}")


class _BoolPair(_Pair):
    def __init__(self, actual, expected, path, **options):
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        super().__init__(bool(actual), bool(expected), path)

    def compare(self):
        if self.actual is not self.expected:
            self.fail(AssertionError, f"Booleans mismatch: {self.actual} is not {self.expected}")


class _UnexpectedBool(Exception):
    """A bool paired with a number: PyTorch's number comparer fails on it unexpectedly."""


class _NumberPair(_Pair):
    def __init__(self, actual, expected, path, *, rtol=None, atol=None, equal_nan=False,
                 check_dtype=False, **options):
        kinds = (int, float, complex, np.number)
        if not all(isinstance(x, kinds) for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x
                            for x in (actual, expected))
        super().__init__(actual, expected, path)
        if any(type(x) not in _NUMBER_DTYPE for x in (actual, expected)):
            raise _UnexpectedBool
        self.rtol, self.atol = _tolerances([_NUMBER_DTYPE[type(x)] for x in (actual, expected)],
                                           rtol, atol, path)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            self.fail(AssertionError, f"The (d)types do not match: {type(a)} != {type(e)}.")
        if a == e or (self.equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        diff = abs(a - e)
        if cmath.isfinite(diff) and diff <= self.atol + self.rtol * abs(e):
            return
        self.fail(AssertionError, _scalar_message(a, e, self.rtol, self.atol))


class _TensorPair(_Pair):
    def __init__(self, actual, expected, path, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, **options):
        if not (isinstance(actual, type(expected)) or isinstance(expected, type(actual))):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        actual, expected = (self._tensor(x) for x in (actual, expected))
        super().__init__(actual, expected, path)
        self.rtol, self.atol = _tolerances([actual.dtype, expected.dtype], rtol, atol, path)
        self.equal_nan = equal_nan
        self.check_device, self.check_dtype = check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    @staticmethod
    def _tensor(x):
        if isinstance(x, Tensor):
            return x
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return as_tensor(x)
        except Exception:
            raise _Unsupported from None

    def _attribute(self, name, a, e):
        self.fail(AssertionError, f"The values for attribute '{name}' do not match: {a} != {e}.")

    def compare(self):
        a, e = self.actual, self.expected
        if a.shape != e.shape:
            self._attribute("shape", a.shape, e.shape)
        if self.check_stride and a.stride() != e.stride():
            self._attribute("stride()", a.stride(), e.stride())
        if self.check_device and a.device != e.device:
            self._attribute("device", a.device, e.device)
        if self.check_dtype and a.dtype != e.dtype:
            self._attribute("dtype", a.dtype, e.dtype)
        if "meta" in (a.device.type, e.device.type):
            return
        ad, ed = a._data, e._data
        if a.dtype != e.dtype:
            common = promote_types(a.dtype, e.dtype).np
            ad, ed = ad.astype(common), ed.astype(common)
        matches = _isclose(ad, ed, self.rtol, self.atol, self.equal_nan)
        if matches.all():
            return
        if ad.ndim == 0:
            text = _scalar_message(ad.item(), ed.item(), self.rtol, self.atol)
        else:
            text = _tensor_message(ad, ed, matches, self.rtol, self.atol)
        self.fail(AssertionError, text)


_PAIRS = (_NonePair, _BoolPair, _NumberPair, _TensorPair)


def _is_sequence(x) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _pairs(actual, expected, path, options):
    """The leaf pairs of two nested structures, checking their shapes on the way."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, "The length of the sequences mismatch: "
                                           f"{len(actual)} != {len(expected)}", path)
        out = []
        for i in range(len(actual)):
            out += _pairs(actual[i], expected[i], (*path, i), options)
        return out
    if isinstance(actual, collections.abc.Mapping) and \
            isinstance(expected, collections.abc.Mapping):
        ak, ek = set(actual.keys()), set(expected.keys())
        if ak != ek:
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                                           f"Missing keys in the actual mapping: {sorted(ek - ak)}\n"
                                           f"Additional keys in the actual mapping: "
                                           f"{sorted(ak - ek)}", path)
        keys = ak
        with contextlib.suppress(Exception):
            keys = sorted(keys)
        out = []
        for k in keys:
            out += _pairs(actual[k], expected[k], (*path, k), options)
        return out
    for kind in _PAIRS:
        try:
            return [kind(actual, expected, path, **options)]
        except _Unsupported:
            continue
        except _UnexpectedBool:
            raise RuntimeError(
                f"Originating a NumberPair() at item {''.join(f'[{k!r}]' for k in path)} with\n\n"
                f"{type(actual).__name__}(): {actual}\n\nand\n\n"
                f"{type(expected).__name__}(): {expected}\n\n"
                "resulted in the unexpected exception above. If you are a user and see this "
                "message during normal operation please file an issue at "
                "https://github.com/pytorch/pytorch/issues. If you are a developer and working "
                "on the comparison functions, please except the previous error and raise an "
                "expressive `ErrorMeta` instead.") from KeyError(bool)
    raise _Failure(TypeError, "No comparison pair was able to handle inputs of type "
                              f"{_type_str(type(actual))} and {_type_str(type(expected))}.", path)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise unless ``actual`` and ``expected`` are close: ``|actual - expected| <= atol +
    rtol * |expected|`` elementwise, with tolerances by dtype unless both are given, after
    checking shape, device, dtype (and stride if asked); sequences and mappings are compared
    item by item.  ``msg`` replaces the message (a string) or rewrites it (a callable)."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        pairs = _pairs(actual, expected, (), options)
    except _Failure as f:
        raise f.error() from None
    for pair in pairs:
        try:
            pair.compare()
        except _Failure as f:
            raise f.error(msg) from None


# the looser defaults of the deprecated assert_allclose
_ALLCLOSE_TOLERANCES = {D.float16: (1e-3, 1e-3), D.float32: (1e-4, 1e-5), D.float64: (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated form of ``assert_close``: inputs become tensors (``expected`` in ``actual``'s
    dtype), NaNs match by default and dtypes need not agree."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed "
                  "in a future release. Please use `torch.testing.assert_close()` instead. You "
                  "can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    from .._factories import tensor
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances([actual.dtype, expected.dtype], None, None, (),
                                 _ALLCLOSE_TOLERANCES)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


__all__ = ["assert_close", "assert_allclose"]
