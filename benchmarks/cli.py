"""Options of the suite, shared by ``python -m benchmarks`` and ``dyngrad bench``."""
from __future__ import annotations

import argparse
import sys

from .spec import KEYS


def add_arguments(parser):
    parser.add_argument("--quick", action="store_true",
                        help="few repeats and short warm-up: a smoke run of a few seconds")
    parser.add_argument("--threads", default="1,2", metavar="N,N",
                        help="BLAS/OpenMP thread counts, one fresh process each (default 1,2)")
    parser.add_argument("--only", nargs="+", metavar="KEY", choices=KEYS,
                        help="run only these workloads: " + ", ".join(KEYS))
    parser.add_argument("--backends", default="dyngrad,numpy,torch", metavar="B,B",
                        help="backends to run (torch is skipped when it cannot be imported)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--no-extras", action="store_true",
                        help="skip the import-time and peak-memory measurements")
    parser.add_argument("--profile", action="store_true",
                        help="instead: where the time of one small op goes (a*b on 3x3)")
    parser.add_argument("--cprofile", metavar="KEY", choices=KEYS,
                        help="instead: cProfile of dyngrad running this workload")
    # internal: what the parent process asks of its fresh child processes
    parser.add_argument("--worker", choices=("suite", "memory", "profile", "cprofile"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)


def run(args) -> int:
    from . import runner
    return runner.run(args)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description="Time dyngrad against a NumPy floor and "
                                                 "PyTorch, after checking they agree.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
