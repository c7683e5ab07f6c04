"""Special-function kernels on ndarrays: erf, erfc and erfcx from SciPy (``scipy.special``,
imported the first time one of them is called, so ``import dyngrad`` does not load SciPy).
Results keep the input's floating dtype (the default float for integer input)."""
from __future__ import annotations

import numpy as np
from .. import _dtype as _DT

_SP: list = []


def sp():
    """The ``scipy.special`` module, imported on first use."""
    if not _SP:
        import scipy.special
        _SP.append(scipy.special)
    return _SP[0]


def _float(d):
    d = np.asarray(d)
    return d if d.dtype in _DT.INEXACT else d.astype(np.float64)


def _call(fn, d):
    x = _float(d)
    with np.errstate(all="ignore"):
        r = fn(x)
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def erf(d: np.ndarray) -> np.ndarray:
    """The error function, elementwise, in ``d``'s floating dtype."""
    return _call(sp().erf, d)


def erfc(d: np.ndarray) -> np.ndarray:
    """1 - erf, computed without cancellation in the right tail."""
    return _call(sp().erfc, d)


def erfcx(d: np.ndarray) -> np.ndarray:
    """The scaled complementary error function exp(x^2) erfc(x)."""
    return _call(sp().erfcx, d)
