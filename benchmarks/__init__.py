"""Benchmark suite: dyngrad against a hand-written NumPy floor and PyTorch on small training
steps.  ``python -m benchmarks`` or ``dyngrad bench``; nothing here imports NumPy at import
time, so worker processes can pin BLAS threads first."""
from __future__ import annotations

from .cli import add_arguments, main, run  # noqa: F401
