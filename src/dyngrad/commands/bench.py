"""``dyngrad bench``: run the benchmark suite (``benchmarks/`` at the root of a source checkout),
which times dyngrad against a hand-written NumPy floor and PyTorch."""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path

HELP = "time dyngrad against NumPy and PyTorch on small training steps (source checkout)"


def _suite():
    """The ``benchmarks`` package of this checkout (or one already importable), else None."""
    root = Path(__file__).resolve().parents[3]
    if (root / "benchmarks" / "__init__.py").is_file() and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        return importlib.import_module("benchmarks")
    except ImportError:
        return None


def add_arguments(parser):
    suite = _suite()
    if suite is not None and hasattr(suite, "add_arguments"):
        suite.add_arguments(parser)
    else:  # accept the suite's usual options, so run() can say what is missing
        for flag in ("--quick", "--no-extras", "--profile"):
            parser.add_argument(flag, action="store_true", help=argparse.SUPPRESS)
        for opt in ("--threads", "--backends", "--json", "--cprofile"):
            parser.add_argument(opt, help=argparse.SUPPRESS)
        parser.add_argument("--only", nargs="*", help=argparse.SUPPRESS)


def _torch_installed() -> bool:
    """Whether ``import torch`` can find PyTorch (without importing it: that takes seconds)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def run(args) -> int:
    from ..cli import UsageError, check_writable, oserror_line
    suite = _suite()
    if suite is None or not hasattr(suite, "run"):
        raise UsageError("the benchmarks/ suite is not here: run it from a source checkout "
                         "of dyngrad (python -m benchmarks)")
    if getattr(args, "json", None):
        check_writable(args.json)
    backends = getattr(args, "backends", None)
    if backends and "torch" in backends.split(",") and not _torch_installed():
        print("PyTorch not installed: timing dyngrad against the NumPy floor only",
              file=sys.stderr)
        args.backends = ",".join(b for b in backends.split(",") if b != "torch")
    try:
        return suite.run(args)
    except OSError as e:
        raise UsageError(oserror_line(e)) from None
