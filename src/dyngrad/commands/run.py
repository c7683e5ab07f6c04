"""``dyngrad run SCRIPT [ARGS...]``: run an unmodified PyTorch script on dyngrad."""
from __future__ import annotations

import argparse

from .._script import run_script

HELP = "run a PyTorch script with torch (and torchviz) resolved to dyngrad"
DESCRIPTION = ("Run SCRIPT with 'import torch', 'torch.nn', 'torch.optim', 'torch.utils.data', "
               "'torch.nn.functional' and 'torchviz' resolved to dyngrad. sys.argv is "
               "[SCRIPT, ARGS...] and __name__ is '__main__'. With --nproc-per-node N, N ranks "
               "are started through the MPI launcher (mpiexec), each with torchrun's "
               "environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).")

def add_arguments(parser):
    from ..distributed.run import add_launcher_arguments
    add_launcher_arguments(parser)
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def run(args) -> int:
    from ..distributed import run as launcher
    if args.nproc_per_node is not None:
        return launcher.run_from_args(args)
    launcher.export_rank_env()   # a rank started by mpiexec: torchrun's RANK, LOCAL_RANK, ...
    try:
        run_script(args.script, args.args)
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
