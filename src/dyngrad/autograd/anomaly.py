"""Anomaly detection: NaN checks on every backward output, naming the node that made them."""
from __future__ import annotations

import numpy as np

from .engine import HOOKS


def is_anomaly_enabled() -> bool:
    return HOOKS.anomaly


def check_outputs(node, outs):
    if not HOOKS.anomaly_check_nan:
        return
    for i, g in enumerate(outs):
        if g is None:
            continue
        d = g if isinstance(g, np.ndarray) else g._data
        if d.dtype.kind in "fc" and np.isnan(d).any():
            where = ""
            meta = node._meta
            if meta and meta.get("source"):
                where = f"\n  {type(node).__name__} was created at {meta['source']}"
            raise RuntimeError(f"Function '{type(node).__name__}' returned nan values in its "
                               f"{i}th output.{where}")


class set_detect_anomaly:
    """Turn anomaly detection on or off (a context manager that restores the previous mode)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (HOOKS.anomaly, HOOKS.anomaly_check_nan)
        HOOKS.anomaly = bool(mode)
        HOOKS.anomaly_check_nan = bool(check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        HOOKS.anomaly, HOOKS.anomaly_check_nan = self.prev
        return False


class detect_anomaly:
    """Context manager: check every backward output for NaN and name the op that made it."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self.prev = (HOOKS.anomaly, HOOKS.anomaly_check_nan)
        HOOKS.anomaly = True
        HOOKS.anomaly_check_nan = self.check_nan
        return self

    def __exit__(self, *exc):
        HOOKS.anomaly, HOOKS.anomaly_check_nan = self.prev
        return False
