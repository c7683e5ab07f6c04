"""Special functions on ndarrays with NumPy only: erf and erfc to double precision (a power
series near zero, a continued fraction in the tails), so the core needs no SciPy."""
from __future__ import annotations

import math

import numpy as np

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ONE_OVER_SQRT_PI = 1.0 / math.sqrt(math.pi)
_SPLIT = 2.0  # |x| below: series for erf; above: continued fraction for erfc


def _erf_series(x):
    """erf(x) = 2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1) / (2n+1)!!  (converges fast for |x| <= 2)."""
    x2 = x * x
    term = x.copy()
    total = x.copy()
    for n in range(1, 60):
        term *= 2.0 * x2 / (2 * n + 1)
        total += term
    return _TWO_OVER_SQRT_PI * np.exp(-x2) * total


def _erfc_cf(ax):
    """erfc(x) for x >= 2 by the continued fraction e^(-x^2)/sqrt(pi) / (x + 1/2/(x + 1/(x + ...)))."""
    f = np.zeros_like(ax)
    for k in range(60, 0, -1):
        f = (0.5 * k) / (ax + f)
    return np.exp(-ax * ax) * _ONE_OVER_SQRT_PI / (ax + f)


def erf(d: np.ndarray) -> np.ndarray:
    """The error function, elementwise, in ``d``'s floating dtype."""
    x = np.asarray(d, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) <= _SPLIT
    if small.any():
        out[small] = _erf_series(x[small])
    big = ~small & ~np.isnan(x)
    if big.any():
        xb = x[big]
        out[big] = np.sign(xb) * (1.0 - _erfc_cf(np.abs(xb)))
    out[np.isnan(x)] = np.nan
    return out.astype(d.dtype if np.asarray(d).dtype.kind == "f" else np.float64, copy=False)


def erfc(d: np.ndarray) -> np.ndarray:
    """1 - erf, computed without cancellation in the right tail."""
    x = np.asarray(d, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) <= _SPLIT
    if small.any():
        out[small] = 1.0 - _erf_series(x[small])
    pos = (x > _SPLIT)
    if pos.any():
        out[pos] = _erfc_cf(x[pos])
    neg = (x < -_SPLIT)
    if neg.any():
        out[neg] = 2.0 - _erfc_cf(-x[neg])
    out[np.isnan(x)] = np.nan
    return out.astype(d.dtype if np.asarray(d).dtype.kind == "f" else np.float64, copy=False)
