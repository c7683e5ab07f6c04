"""``dyngrad.nn.parallel``: ``DistributedDataParallel`` (on dyngrad.distributed) and
``DataParallel`` (one CPU device: runs the module as it is)."""
from .distributed import DistributedDataParallel
from .data_parallel import DataParallel, data_parallel

__all__ = ["DistributedDataParallel", "DataParallel", "data_parallel"]
