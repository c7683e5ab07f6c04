"""Tensor printing with PyTorch's layout: precision, integer mode, scientific mode, line
wrapping at ``linewidth``, summarisation past ``threshold`` elements, and the
``dtype=`` / ``grad_fn=`` / ``requires_grad=`` suffixes."""
from __future__ import annotations

import math

import numpy as np

from . import _dtype as D


class _PrintOptions:
    precision = 4
    threshold = 1000
    edgeitems = 3
    linewidth = 80
    sci_mode = None


OPTS = _PrintOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set how tensors print (the same options and profiles as PyTorch)."""
    if profile is not None:
        if profile == "default":
            OPTS.precision, OPTS.threshold, OPTS.edgeitems, OPTS.linewidth = 4, 1000, 3, 80
        elif profile == "short":
            OPTS.precision, OPTS.threshold, OPTS.edgeitems, OPTS.linewidth = 2, 1000, 2, 80
        elif profile == "full":
            OPTS.precision, OPTS.threshold, OPTS.edgeitems, OPTS.linewidth = 4, math.inf, 3, 80
        else:
            raise ValueError(f"unknown print profile {profile!r}: use 'default', 'short' or 'full'")
    if precision is not None:
        OPTS.precision = precision
    if threshold is not None:
        OPTS.threshold = threshold
    if edgeitems is not None:
        OPTS.edgeitems = edgeitems
    if linewidth is not None:
        OPTS.linewidth = linewidth
    OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    return {"precision": OPTS.precision, "threshold": OPTS.threshold,
            "edgeitems": OPTS.edgeitems, "linewidth": OPTS.linewidth, "sci_mode": OPTS.sci_mode}


class _Formatter:
    """Chooses one width and notation for every element, as PyTorch does."""

    def __init__(self, arr: np.ndarray):
        self.floating = arr.dtype in D.FLOATING
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = arr.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        vals = flat.astype(np.float64)
        finite = vals[np.isfinite(vals) & (vals != 0)]
        if finite.size == 0:
            return
        absv = np.abs(finite)
        mn, mx = float(absv.min()), float(absv.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        p = OPTS.precision
        if OPTS.sci_mode is None:
            self.sci_mode = mx / mn > 1000.0 or mx > 1.0e8 or mn < 1.0e-4
        else:
            self.sci_mode = bool(OPTS.sci_mode)
        if self.sci_mode:
            spec, extra = f".{p}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1       # the '.' appended to integral floats
        else:
            spec, extra = f".{p}f", 0
        for v in finite.tolist():
            self.max_width = max(self.max_width, len(format(v, spec)) + extra)

    def format(self, value) -> str:
        if self.floating:
            p = OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = str(value)
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    """PyTorch's pair of formatters for complex values: one for the real parts, one for the
    imaginary parts."""

    def __init__(self, arr: np.ndarray):
        self.re = _Formatter(np.ascontiguousarray(arr.real))
        self.im = _Formatter(np.ascontiguousarray(arr.imag))
        self.max_width = self.re.max_width + self.im.max_width + 1

    def format(self, value) -> str:
        value = complex(value)
        real_str = self.re.format(value.real)
        imag_str = (self.im.format(value.imag) + "j").lstrip()
        if imag_str[0] in "+-":
            return real_str + imag_str
        return real_str + "+" + imag_str


def _summarized(a: np.ndarray) -> np.ndarray:
    e = OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        if a.shape[0] > 2 * e:
            return np.concatenate([a[:e], a[-e:]])
        return a
    if not e:
        return a[(slice(0, 0),) * a.ndim]
    if a.shape[0] > 2 * e:
        parts = [_summarized(x) for x in list(a[:e]) + list(a[-e:])]
    else:
        parts = [_summarized(x) for x in a]
    return np.stack(parts)


def _vector(a, indent, summarize, fmt):
    element_length = fmt.max_width + 2
    per_line = max(1, int(math.floor((OPTS.linewidth - indent) / element_length)))
    e = OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = [fmt.format(v) for v in a[:e].tolist()] + [" ..."] + \
               [fmt.format(v) for v in a[-e:].tolist()]
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str(a, indent, summarize, fmt):
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    e = OPTS.edgeitems
    if summarize and a.shape[0] > 2 * e:
        slices = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] + \
                 [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0] - e, a.shape[0])]
    else:
        slices = [_tensor_str(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def _add_suffixes(s, suffixes, indent):
    parts = [s]
    last_line_len = len(s) - s.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def array_str(a: np.ndarray, indent: int = 7) -> str:
    """The bracketed values of an array, laid out as PyTorch prints them."""
    if a.dtype == np.float16 or a.dtype == D.BF16:  # printed as float32, as PyTorch does
        a = a.astype(np.float32)
    summarize = a.size > OPTS.threshold
    shown = _summarized(a) if summarize else a
    fmt = _ComplexFormatter(shown) if a.dtype.kind == "c" else _Formatter(shown)
    return _tensor_str(a, indent, summarize, fmt)


def tensor_repr(t) -> str:
    a = t._data
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    dt = D.FROM_NP[a.dtype]
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if dt is not D.DEFAULTS.float:
            suffixes.append("dtype=" + str(dt))
        body = "[]"
    else:
        if not OPTS.edgeitems:
            suffixes.append("size=" + str(tuple(a.shape)))
        default_complex = D.complex128 if D.DEFAULTS.float is D.float64 else D.complex64
        if dt not in (D.DEFAULTS.float, default_complex, D.int64, D.bool_):
            suffixes.append("dtype=" + str(dt))
        body = array_str(a, indent)
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t._grad_fn).__name__}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    fw = t._fw_grad
    if fw is not None:
        suffixes.append(f"tangent={fw!r}")
    return _add_suffixes(prefix + body, suffixes, indent)
