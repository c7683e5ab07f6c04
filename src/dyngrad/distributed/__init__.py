"""``dyngrad.distributed``: torch.distributed's API on MPI (mpi4py).

Importing this package needs no MPI; ``init_process_group`` loads mpi4py and says how to
install it when it is missing.  See docs/distributed.md.
"""
from .distributed_c10d import *  # noqa: F401,F403
from .distributed_c10d import __all__ as _c10d_all
from .distributed_c10d import _get_default_group  # noqa: F401

__all__ = list(_c10d_all)
