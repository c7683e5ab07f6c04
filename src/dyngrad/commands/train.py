"""``dyngrad train``: train an MLP or CNN on the bundled digits data."""
from __future__ import annotations

import os

from ..cli import UsageError, oserror_line as _os_error

HELP = "train an MLP or CNN on scikit-learn's digits; writes a checkpoint, plot and graphs"


def _positive_int(v):
    try:
        n = int(v)
    except ValueError:
        raise __import__("argparse").ArgumentTypeError(f"expected a positive integer, got {v!r}")
    if n <= 0:
        raise __import__("argparse").ArgumentTypeError(f"expected a positive integer, got {v}")
    return n


def _positive_float(v):
    try:
        x = float(v)
    except ValueError:
        raise __import__("argparse").ArgumentTypeError(f"expected a positive number, got {v!r}")
    if not x > 0:
        raise __import__("argparse").ArgumentTypeError(f"expected a positive number, got {v}")
    return x


def add_arguments(p):
    p.add_argument("--model", choices=["mlp", "cnn"], default="cnn", help="network to train")
    p.add_argument("--epochs", type=_positive_int, default=30, help="number of epochs")
    p.add_argument("--lr", type=_positive_float, default=2e-3, help="Adam learning rate")
    p.add_argument("--batch-size", type=_positive_int, default=32, help="mini-batch size")
    p.add_argument("--out", default="demo-output", help="folder for the outputs")
    p.add_argument("--resume", metavar="CKPT", help="continue from a checkpoint written earlier")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--nproc", type=_positive_int, default=1, metavar="N",
                   help="data-parallel training on N ranks started with mpiexec "
                        "(DistributedDataParallel; each rank gets batch-size/N samples)")


def run(args) -> int:
    if args.resume and not os.path.exists(args.resume):
        raise UsageError(f"checkpoint not found: {args.resume}")
    from ..cli import check_out_dir
    check_out_dir(args.out)
    if args.nproc > 1:
        return _run_parallel(args)
    from ..apps.digits import train
    try:
        _, _, paths = train(args.model, args.epochs, args.lr, args.batch_size, args.out,
                            args.resume, args.seed, progress=not args.no_progress)
    except OSError as e:
        raise UsageError(_os_error(e)) from None
    except (ValueError, RuntimeError) as e:
        raise UsageError(str(e).split("\n")[0]) from None
    for k, v in paths.items():
        print(f"{k:>10}: {v}")
    return 0


def _run_parallel(args) -> int:
    """Start the ranks through mpiexec, or, inside one, train this rank's share."""
    from ..distributed._mpi import launcher_env
    if args.resume:
        raise UsageError("--resume is for one process; resume without --nproc")
    if args.batch_size % args.nproc:
        raise UsageError(f"--batch-size {args.batch_size} must be a multiple of --nproc "
                         f"{args.nproc}")
    inside = launcher_env()
    if inside is None:
        import sys
        from ..distributed.run import launch_command
        return launch_command(args.nproc, [
            "-m", "dyngrad", "train", "--model", args.model, "--epochs", str(args.epochs),
            "--lr", repr(args.lr), "--batch-size", str(args.batch_size), "--out", args.out,
            "--seed", str(args.seed), "--nproc", str(args.nproc)]
            + (["--no-progress"] if args.no_progress else []), sys.executable)
    if inside[1] != args.nproc:
        raise UsageError(f"--nproc {args.nproc} but the MPI launcher started {inside[1]} ranks")
    from ..apps.digits_ddp import train_parallel
    try:
        _, _, paths = train_parallel(args.model, args.epochs, args.lr, args.batch_size,
                                     args.out, args.seed, progress=not args.no_progress)
    except OSError as e:
        raise UsageError(_os_error(e)) from None
    except (ValueError, RuntimeError) as e:
        raise UsageError(str(e).split("\n")[0]) from None
    for k, v in paths.items():
        print(f"{k:>10}: {v}")
    return 0
