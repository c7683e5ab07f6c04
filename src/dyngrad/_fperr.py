"""NumPy floating-point error state for dyngrad's computations."""
from __future__ import annotations

import numpy as np

# NumPy floating-point errors (log(0), 0/0, overflow) give inf/nan silently, as in PyTorch:
# ``quiet_on()`` / ``quiet_off(token)`` around the ufunc calls of the elementwise helpers set
# NumPy's error state to "ignore" for that call.  On NumPy >= 2 this is one context-variable set
# and reset (about 0.3 microseconds; ``np.errstate`` costs about two), so the hot path keeps
# its speed.  The backward engine sets it once per backward call.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _ERR_STATE
    with np.errstate(all="ignore"):
        _IGNORE = _ERR_STATE.get()

    from functools import partial as _partial
    quiet_on = _partial(_ERR_STATE.set, _IGNORE)
    quiet_off = _ERR_STATE.reset
except ImportError:  # pragma: no cover - NumPy 1.x: a global error state
    def quiet_on():
        return np.seterr(all="ignore")

    def quiet_off(token):
        np.seterr(**token)


def quiet(fn):
    """``fn`` with NumPy's floating-point warnings off while it runs: PyTorch returns inf and
    nan silently (for ops whose NumPy calls are not already wrapped)."""
    import functools

    @functools.wraps(fn)
    def q(*args, **kwargs):
        tok = quiet_on()
        try:
            return fn(*args, **kwargs)
        finally:
            quiet_off(tok)
    return q
