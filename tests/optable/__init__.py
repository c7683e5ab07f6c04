"""The op table: one row per op drives every generic test (forward against a NumPy
reference, float64 gradcheck, gradgradcheck, broadcasting, 0-d and size-0 inputs, dtype
promotion).  Each op family keeps its rows in its own module here; adding an op means adding
a row.

A row::

    OpInfo("exp", lambda x: torch.exp(x), ref=np.exp,
           samples=[S((3, 4)), S(())],          # shapes of the tensor arguments
           grad_fn="ExpBackward0")

``samples`` are ``S(*shapes, kwargs={}, domain=(lo, hi), extra=(non-tensor args...))``:
each shape becomes a float64 tensor with values drawn from ``domain``; ``extra`` values
are appended after the tensors.  ``ref`` receives NumPy arrays and the same extras/kwargs.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


@dataclass
class S:
    """One sample: tensor shapes, extra positional args, kwargs, value domain."""

    shapes: tuple
    extra: tuple = ()
    kwargs: dict = field(default_factory=dict)
    domain: tuple = (-2.0, 2.0)
    int_args: tuple = ()  # indices of shapes that are integer index tensors (not differentiated)

    def __init__(self, *shapes, extra=(), kwargs=None, domain=(-2.0, 2.0), int_args=(),
                 int_high=None):
        self.shapes = shapes
        self.extra = tuple(extra)
        self.kwargs = kwargs or {}
        self.domain = domain
        self.int_args = tuple(int_args)
        self.int_high = int_high

    def make(self, torch, seed=0, dtype=None, requires_grad=True):
        """Tensors for this sample (float64 by default), deterministic per seed."""
        rs = np.random.RandomState(seed)
        out = []
        for i, shp in enumerate(self.shapes):
            if i in self.int_args:
                hi = self.int_high if self.int_high is not None else 2
                out.append(torch.from_numpy(rs.randint(0, hi, size=shp).astype(np.int64)))
                continue
            lo, hi = self.domain
            arr = rs.uniform(lo, hi, size=shp)
            t = torch.tensor(arr, dtype=dtype or torch.float64)
            if requires_grad:
                t.requires_grad_(True)
            out.append(t)
        return out

    def __repr__(self):
        return f"S{self.shapes}{' ' + repr(self.kwargs) if self.kwargs else ''}"


@dataclass
class OpInfo:
    """A tested op: its callable, a NumPy reference and sample inputs."""

    name: str
    fn: Callable
    ref: Callable | None = None
    samples: list = field(default_factory=list)
    grad_fn: str | None = None          # expected class name of the output's grad_fn
    grad: bool = True                   # differentiable: run gradcheck
    gradgrad: bool = True               # second derivatives: run gradgradcheck
    atol: float = 1e-5
    rtol: float = 1e-4
    float32_ok: bool = True             # also run in float32 and compare with float64
    notes: str = ""
    extra: Any = None


def all_rows():
    """Every row of every family module in this package, and the in-place forms derived
    from them (``inplace_forms.derived_rows``)."""
    rows = []
    for m in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{m.name}")
        rows.extend(getattr(mod, "ROWS", []))
    from .inplace_forms import derived_rows
    return rows + derived_rows(rows)
