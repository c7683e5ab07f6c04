"""Anomaly detection: while on, every recorded node keeps the traceback of the forward call
that created it, and a failing backward (an exception, or NaN when ``check_nan``) names the
node and shows that traceback, as PyTorch does."""
from __future__ import annotations

import os
import sys
import traceback

import numpy as np

from .engine import HOOKS
from .. import _warn
from .. import _dtype as _DT

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def is_anomaly_enabled() -> bool:
    """True inside ``detect_anomaly`` / after ``set_detect_anomaly(True)``."""
    return HOOKS.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """True when anomaly mode also checks backward outputs for NaN."""
    return HOOKS.anomaly_check_nan


def _forward_stack():
    """``traceback.format_stack`` lines of the user frames that led to the current op."""
    f = sys._getframe(2)
    frames = []
    while f is not None:
        if not f.f_code.co_filename.startswith(_PKG):
            frames.append(f)
        f = f.f_back
    frames.reverse()
    summary = traceback.StackSummary.extract(((fr, fr.f_lineno) for fr in frames), limit=None)
    return summary.format()


def _record(t, node):
    """Graph observer used in anomaly mode: store the forward traceback on the new node."""
    if node is None:
        return
    meta = node.metadata
    if "traceback_" not in meta:
        meta["traceback_"] = _forward_stack()


def _set(mode: bool, check_nan: bool):
    from .._record import RECORD_HOOKS
    HOOKS.anomaly = mode
    HOOKS.anomaly_check_nan = check_nan
    if mode and _record not in RECORD_HOOKS:
        RECORD_HOOKS.append(_record)
    elif not mode and _record in RECORD_HOOKS:
        RECORD_HOOKS.remove(_record)


def check_outputs(node, outs):
    """Raise if a backward output contains NaN (anomaly mode with ``check_nan``)."""
    if not HOOKS.anomaly_check_nan or outs is None:
        return
    for i, g in enumerate(outs):
        if g is None:
            continue
        d = g if isinstance(g, np.ndarray) else getattr(g, "_data", None)
        if d is not None and d.dtype in _DT.INEXACT and np.isnan(d).any():
            raise RuntimeError(f"Function '{type(node).__name__}' returned nan values in its "
                               f"{i}th output.")


def _failing_node(exc):
    tb = exc.__traceback__
    node = None
    from .node import Node
    while tb is not None:
        f = tb.tb_frame
        if f.f_code.co_filename.endswith("engine.py"):
            n = f.f_locals.get("node")
            if isinstance(n, Node):
                node = n
        tb = tb.tb_next
    return node


def report_failure(exc):
    """Warn with the forward traceback of the node that failed in backward."""
    node = _failing_node(exc)
    if node is None:
        return
    name = type(node).__name__
    meta = node._meta or {}
    stack = meta.get("traceback_")
    if stack:
        msg = (f"Error detected in {name}. Traceback of forward call that caused the error:\n"
               + "".join(stack))
    else:
        msg = (f"Error detected in {name}. No forward pass information available. Enable detect "
               f"anomaly during forward pass for more information.")
    _warn.warn(msg, UserWarning)


_ENABLED_MSG = ("Anomaly Detection has been enabled. This mode will increase the runtime and "
                "should only be enabled for debugging.")


class set_detect_anomaly:
    """Turn anomaly detection on or off; usable as a call or as a context manager (which
    restores the previous mode)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (HOOKS.anomaly, HOOKS.anomaly_check_nan)
        _set(bool(mode), bool(check_nan))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False


class detect_anomaly:
    """Context manager (or decorator) enabling anomaly detection.

    >>> import dyngrad as torch
    >>> with torch.autograd.detect_anomaly():  # doctest: +SKIP
    ...     x = torch.tensor([0.0], requires_grad=True)
    ...     (x / x).sum().backward()
    Traceback (most recent call last):
    RuntimeError: Function 'DivBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        _warn.warn(_ENABLED_MSG, UserWarning)

    def __enter__(self):
        self.prev = (HOOKS.anomaly, HOOKS.anomaly_check_nan)
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with detect_anomaly(self.check_nan):
                return fn(*a, **k)
        return wrapper
