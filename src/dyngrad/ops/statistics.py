"""Statistics: histc, bincount, quantile/nanquantile, cov and corrcoef.

quantile, cov and corrcoef are PyTorch's compositions (sort, gather and an in-place lerp_;
sum, mm and divisions), written with dyngrad's ops step by step, so they record the graphs
PyTorch records and differentiate (twice) through them.  histc and bincount count; bincount
with weights that require grad records PyTorch's not-implemented node."""
from __future__ import annotations


import numpy as np

from .. import _dtype as D
from . import composite, op
from ._spec import defop, quick
from .sorting import _each_sample
from .._record import Tensor
from ..autograd.node import NotImplemented_
from .._tensor import _dim
from .. import _warn

_make = Tensor._make


def _pkg():
    import importlib
    return importlib.import_module(__name__.split(".")[0])


def _not_impl(kernel, dt):
    return NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dt)}\'')


def _num(v):
    """A double as PyTorch's messages print it (C++'s default stream format)."""
    return f"{float(v):g}"


def _num_reduced(v):
    """A value of PyTorch's min/max reduction in a message: its NaN prints as -nan."""
    return "-nan" if np.isnan(v) else _num(v)


def _values(t):
    """The values of tensor ``t`` as an array; under vmap, every sample's (a check that each
    sample's values pass is a check of them all)."""
    while True:
        try:
            return t._data
        except AttributeError:  # a tensor batched by vmap: its physical tensor
            t = t._phys


def _need_tensor(fn, v, arg, pos):
    if not isinstance(v, Tensor):
        raise D.not_tensor(fn, arg, pos, v)




def _number(v, fn, arg, pos):
    if isinstance(v, Tensor) and v._data.ndim == 0:
        return v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float, np.number)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be Number, not "
                        f"{D.type_name(v)}")
    return float(v)


# --- histc -------------------------------------------------------------------------------------
@defop("histc", node=None, differentiable=False, method=False, batch=_each_sample)
def histc(self, bins=100, min=0, max=0):
    """Counts of the elements in ``bins`` equal-width bins over [min, max] (the data's range
    when min == max); elements outside, and NaN, are not counted; no derivative."""
    lo, hi = float(min), float(max)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    d = self
    shown = _num
    if lo == hi and d.size:
        lo, hi = float(np.min(d)), float(np.max(d))
        shown = _num_reduced
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{shown(lo)}, {shown(hi)}] is not finite")
    if not lo < hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if d.dtype not in D.FLOATING:
        raise _not_impl("histogram_cpu", d.dtype)
    dt = d.dtype.type
    left, right = dt(lo), dt(hi)  # the outer bin edges, in the input's dtype
    x = d.reshape(-1)
    with np.errstate(all="ignore"):
        keep = (x >= left) & (x <= right)
        xs = x[keep]
        # PyTorch's linear binning, in the input's dtype: (x - left) * bins / (right - left)
        pos = ((xs - left) * dt(bins) / (right - left)).astype(np.int64)
    pos[pos == bins] = bins - 1
    return np.bincount(pos, minlength=bins)[:bins].astype(d.dtype)


def _histc(p, input, bins=100, min=0, max=0):
    """Counts of the elements in ``bins`` equal-width bins over [min, max] (the data's range
    when min == max); elements outside, and NaN, are not counted."""
    _need_tensor("histc", input, "input", 1)
    bins = D.int_arg(bins, "histc", "bins", 1 + p)
    lo = _number(min, "histc", "min", 2 + p)
    hi = _number(max, "histc", "max", 3 + p)
    if input._requires_grad:  # (no derivative: the declared function records nothing)
        return _histc_spec.declared(input, bins, lo, hi)
    return quick(_histc_spec, input, (bins, lo, hi), {"bins": bins, "min": lo, "max": hi})


_histc_spec = histc


# --- bincount ----------------------------------------------------------------------------------
@defop("bincount", node=NotImplemented_, method=False, batch=_each_sample)
def _bincount_decl(self, weights=None, minlength=0):
    """Occurrences of each value 0..max of a 1-D non-negative integer array (summed
    ``weights``, an array, when given: float32 or double); PyTorch has no derivative for it
    (its NotImplemented node, with an edge to the weights)."""
    n = max(int(self.max()) + 1, minlength) if self.size else minlength
    if weights is None:
        return np.bincount(self, minlength=n).astype(np.int64)
    out = np.zeros(n, np.float32 if weights.dtype == np.float32 else np.float64)
    np.add.at(out, self, weights.astype(out.dtype))
    return out


def _bincount(p, input, weights=None, minlength=0):
    """Occurrences of each value 0..max of a 1-D non-negative integer tensor (summed weights
    with ``weights``; at least ``minlength`` bins)."""
    _need_tensor("bincount", input, "input", 1)
    if weights is not None:
        _need_tensor("bincount", weights, "weights", 1 + p)
    minlength = D.int_arg(minlength, "bincount", "minlength", 2 + p)
    d = input._data
    if d.dtype.kind not in "iu":
        raise _not_impl("bincount_cpu", d.dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if d.ndim == 1 and d.size == 0:
        return _make(np.zeros(minlength, np.int64))
    if d.ndim != 1 or d.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return _make(_bincount_decl.forward(d, None, minlength))
    if weights._data.ndim != 1 or weights._data.shape[0] != d.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    # the declaration's node (PyTorch's NotImplemented, naming the op) when weights need grad
    from .binary import _no_derivative
    return _no_derivative(_bincount_decl.forward(d, weights._data, minlength), "bincount",
                          (weights,))


# --- quantile / nanquantile ----------------------------------------------------------------------
_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, p, input, q, dim=None, keepdim=False, *, interpolation="linear",
              ignore_nan=False):
    t = _pkg()
    _need_tensor(name, input, "input", 1)
    if not isinstance(q, Tensor):
        if isinstance(q, bool) or not isinstance(q, (int, float, np.number)):
            raise D.bad_combo(name, [q])
        qv = float(q)
        if not 0 <= qv <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {_num(qv)}")
        q = t.tensor(qv, dtype=input.dtype)
    if interpolation not in _MODES:
        raise RuntimeError(f"quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if dim is not None:
        dim = D.int_arg(dim, name, "dim", 2 + p)
    nd, q_nd = input.dim(), q.dim()
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if q_nd > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (t.float32, t.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    wrapped = _dim(0 if dim is None else dim, nd)

    # the output's shape: q's size, then the reduced shape
    if dim is not None and nd > 0:
        out_shape = list(input.shape)
        if keepdim:
            out_shape[wrapped] = 1
        else:
            del out_shape[wrapped]
    elif keepdim:
        out_shape = [1] * nd
    else:
        out_shape = []
    if q_nd > 0:
        out_shape.insert(0, q.numel())
    qd = _values(q)
    if not ((qd >= 0) & (qd <= 1)).all():
        raise RuntimeError("quantile() q values must be in the range [0, 1]")

    # sort along the reduced dim, moved last
    if dim is None:
        srt = input.flatten().sort()[0]
    elif wrapped == nd - 1:
        srt = input.sort()[0]
    else:
        srt = input.unsqueeze(-1).transpose(wrapped, -1).sort()[0]
    if q_nd == 0:
        out_shape.insert(0, 1)
    in_shape = out_shape[1:] + [srt.shape[-1]]
    srt = srt.view(in_shape)

    # q in [0, 1] to ranks in [0, n - 1]
    if ignore_nan:
        ranks = q * (srt.isnan().logical_not_().sum(-1, True) - 1)
        ranks.masked_fill_(ranks < 0, 0)
    else:
        from .binary import mul_scalar
        last = srt.shape[-1] - 1
        tl = t.broadcast_tensors(mul_scalar(q, last), srt.isnan().any(-1, True))
        ranks = t.masked_fill(tl[0], tl[1], last)
    if interpolation == "lower":
        ranks.floor_()
    elif interpolation == "higher":
        ranks.ceil_()
    elif interpolation == "nearest":
        ranks.round_()
    below = ranks.to(t.int64)
    values = srt.gather(-1, below)
    if interpolation in ("linear", "midpoint"):
        weights = t.full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below
        above = ranks.ceil_().to(t.int64)
        values.lerp_(srt.gather(-1, above), weights)
    if q_nd == 0:
        values.squeeze_(-1)
    else:
        values.unsqueeze_(0).transpose_(0, -1).squeeze_(-1)
    return values


def _register_quantile(name, ignore_nan):
    def function(input, q, dim=None, keepdim=False, *, interpolation="linear"):
        return _quantile(name, 1, input, q, dim, keepdim, interpolation=interpolation,
                         ignore_nan=ignore_nan)

    def method(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        return _quantile(name, 0, self, q, dim, keepdim, interpolation=interpolation,
                         ignore_nan=ignore_nan)

    doc = (f"The ``q``-th quantiles{' ignoring NaN' if ignore_nan else ''} (over ``dim``, or "
           f"all elements): PyTorch's sort, gather and lerp_ composition.")
    function.__name__ = function.__qualname__ = method.__name__ = method.__qualname__ = name
    function.__doc__ = method.__doc__ = doc
    composite(name, method=False)(function)
    op("_" + name + "_method", function=False, method=False, methods=(name,))(method)
    return function


quantile = _register_quantile("quantile", False)
nanquantile = _register_quantile("nanquantile", True)


# --- cov / corrcoef --------------------------------------------------------------------------------
def _real_only(name, input):
    if input.is_complex():
        raise NotImplementedError(f"dyngrad's {name}() supports real tensors only (PyTorch's "
                                  f"complex path is not implemented here)")


def _check_cov_weights(name, wt, pos, n):
    """cov's checks of ``fweights`` (integral) or ``aweights`` (floating point), as PyTorch's."""
    _need_tensor("cov", wt, name, pos)
    if wt.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got "
                           f"{name} with {wt.dim()} dimensions")
    integral = name == "fweights"
    dt = wt.dtype
    if (not dt.is_floating_point and not dt.is_complex and dt != D.bool_) != integral or (
            not integral and not dt.is_floating_point):
        kind = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {name} to have {kind} dtype but got {name} with "
                           f"{D.scalar_type_name(dt.np)} dtype")
    if wt.numel() != n:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                           f"observations in the input but got {wt.numel()} != {n}")
    if n and _values(wt).min() < 0:
        raise RuntimeError(f"cov(): {name} cannot be negative")


def _cov(p, input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the rows (variables) over the columns (observations), with
    optional frequency and observation weights; PyTorch's composition."""
    t = _pkg()
    _need_tensor("cov", input, "input", 1)
    correction = D.int_arg(correction, "cov", "correction", 2 + p)
    nd = input.dim()
    if nd > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {nd} dimensions")
    if input.dtype == t.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    _real_only("cov", input)
    x = input.view(1, -1) if nd < 2 else input
    n = x.shape[1]
    w = None
    for name, wt, pos in (("fweights", fweights, 3 + p), ("aweights", aweights, 4 + p)):
        if wt is not None:
            _check_cov_weights(name, wt, pos, n)
            w = wt if w is None else w * wt
    w_sum = w.sum() if w is not None else t.tensor(n, dtype=t.int64)
    if w is not None and not (_values(w_sum) != 0).all():
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = (x * w if w is not None else x).sum(1) / w_sum
    if w is None:
        norm = t.tensor(n - correction, dtype=t.int64)
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    elif fweights is None and n == 1 and correction == 1:
        norm = t.tensor(0, dtype=t.int64)
    else:
        from .binary import mul_scalar
        norm = w_sum - mul_scalar((w * aweights).sum(), correction) / w_sum
    low = _values(norm) <= 0
    if low.any():
        _warn.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                   "than the number of observations.", UserWarning)
        if low.all():
            norm.zero_()
        else:  # under vmap, the samples whose degrees of freedom are <= 0
            norm = norm.masked_fill(norm <= 0, 0)
    if n == 1 and (fweights is not None) != (aweights is not None):
        x.zero_()  # PyTorch zeroes the (view of the) input in this corner case
        if not x.is_floating_point():
            x = x.to(t.float32)
    else:
        x = x - avg.unsqueeze(1)
    c = t.mm(x, (x * w if w is not None else x).t().conj())
    return t.div(c, norm).squeeze()


def _corrcoef(p, input):
    """The Pearson correlation coefficients of the rows (cov normalised by the standard
    deviations, clipped to [-1, 1])."""
    t = _pkg()
    _need_tensor("corrcoef", input, "input", 1)
    if input.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    _real_only("corrcoef", input)
    c = _cov(p, input)
    if c.dim() == 0:
        return c / c
    sd = t.sqrt(c.diagonal())
    c = c / sd.view(-1, 1)
    c = c / sd.view(1, -1)
    return c.clip(-1, 1)


def _dual(name, impl, composite=False):
    from .shape import dual
    return dual(name, impl, composite)



def _declared_dual(spec, impl):
    from .shape import declared_dual
    return declared_dual(spec, impl)


histc = _declared_dual(_histc_spec, _histc)
bincount = _declared_dual(_bincount_decl, _bincount)
cov = _dual("cov", _cov, composite=True)
corrcoef = _dual("corrcoef", _corrcoef, composite=True)
