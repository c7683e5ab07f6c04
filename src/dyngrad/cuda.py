"""``torch.cuda`` as PyTorch's CPU-only build has it: nothing is available, the memory
counters read zero, and whatever needs a device raises the error that build raises
("Torch not compiled with CUDA enabled"), so scripts that probe for a GPU take their CPU path
and scripts that insist on one stop where PyTorch's would."""
from __future__ import annotations

NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _no_cuda():
    raise AssertionError(NOT_COMPILED)


def is_available() -> bool:
    return False


def is_initialized() -> bool:
    return False


def device_count() -> int:
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


def get_arch_list() -> list:
    return []


def get_gencode_flags() -> str:
    return ""


# -- seeds: PyTorch's CPU build accepts them (there is no generator to seed) -----------------
def manual_seed(seed: int) -> None:
    return None


def manual_seed_all(seed: int) -> None:
    return None


def seed() -> None:
    return None


def seed_all() -> None:
    return None


def get_rng_state_all() -> list:
    return []


def set_rng_state(new_state, device="cuda") -> None:
    return None


def set_rng_state_all(new_states) -> None:
    return None


# -- memory: the counters of a build without devices -----------------------------------------
def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


def memory_cached(device=None) -> int:
    return 0


def max_memory_cached(device=None) -> int:
    return 0


def memory_stats(device=None) -> dict:
    return {}


def empty_cache() -> None:
    return None


# -- what needs a device -------------------------------------------------------------------
def init() -> None:
    _no_cuda()


def current_device() -> int:
    _no_cuda()


def synchronize(device=None) -> None:
    _no_cuda()


def get_device_name(device=None) -> str:
    _no_cuda()


def get_device_properties(device=None):
    _no_cuda()


def get_device_capability(device=None):
    _no_cuda()


def initial_seed() -> int:
    _no_cuda()


def get_rng_state(device="cuda"):
    _no_cuda()


def mem_get_info(device=None):
    _no_cuda()


def ipc_collect() -> None:
    _no_cuda()


def current_stream(device=None):
    _no_cuda()


def default_stream(device=None):
    _no_cuda()


def can_device_access_peer(device, peer_device) -> bool:
    _no_cuda()


def get_sync_debug_mode() -> int:
    _no_cuda()


def _index(device, optional: bool = False) -> int:
    """A device argument as an index (PyTorch's ``_get_device_index``): ints, ``"cuda:N"``,
    a ``torch.device``; None is -1 (no device) only where ``optional``."""
    if device is None and optional:
        return -1
    if isinstance(device, bool) or device is None:
        raise ValueError(f"Expected a torch.device with a specified index or an integer, but "
                         f"got:{device}")
    if isinstance(device, int):
        return device
    from ._tensor import device as _device
    d = device if isinstance(device, _device) else _device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return -1 if d.index is None else d.index


def set_device(device) -> None:
    """Select a GPU; a negative index selects none (a no-op, as in PyTorch)."""
    if _index(device, optional=True) >= 0:
        raise AttributeError(f"torch.cuda.set_device: {NOT_COMPILED}; there is no device to "
                             f"select")


class device:
    """Context manager that makes ``device`` current (``with torch.cuda.device(i):``); on a
    build without CUDA only a negative index (no device) is accepted."""

    def __init__(self, device) -> None:
        self.idx = _index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            raise RuntimeError("PyTorch was compiled without CUDA support")
        return self

    def __exit__(self, *exc) -> bool:
        return False


class Stream:
    """A CUDA stream: needs a device."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class Event:
    """A CUDA event: needs a device."""

    def __new__(cls, *args, **kwargs):
        raise RuntimeError("Tried to instantiate dummy base class Event")
