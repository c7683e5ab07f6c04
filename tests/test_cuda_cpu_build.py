"""``dyngrad.cuda`` behaves as ``torch.cuda`` of PyTorch's CPU-only build: the same values
where that build answers, the same exception type where it refuses."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

CALLS = [
    ("is_available", ()), ("is_initialized", ()), ("device_count", ()),
    ("is_bf16_supported", ()), ("get_arch_list", ()), ("get_gencode_flags", ()),
    ("manual_seed", (0,)), ("manual_seed_all", (0,)), ("seed", ()), ("seed_all", ()),
    ("get_rng_state_all", ()), ("memory_allocated", ()), ("max_memory_allocated", ()),
    ("memory_reserved", ()), ("max_memory_reserved", ()), ("memory_cached", ()),
    ("max_memory_cached", ()), ("memory_stats", ()), ("empty_cache", ()),
    ("init", ()), ("current_device", ()), ("synchronize", ()), ("get_device_name", ()),
    ("get_device_properties", (0,)), ("get_device_capability", ()), ("initial_seed", ()),
    ("get_rng_state", ()), ("mem_get_info", ()), ("ipc_collect", ()),
    ("current_stream", ()), ("default_stream", ()), ("can_device_access_peer", (0, 1)),
    ("get_sync_debug_mode", ()), ("set_device", (0,)), ("set_device", ("cuda:0",)),
    ("set_device", (-1,)), ("set_device", ("cpu",)),
]


def _outcome(lib, name, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = getattr(lib.cuda, name)(*args)
        except Exception as e:  # noqa: BLE001
            return ("raises", type(e))
    return ("returns", dict(r) if isinstance(r, dict) else r)


@pytest.mark.parametrize("name,args", CALLS, ids=[f"{n}{a}" for n, a in CALLS])
def test_same_outcome_as_torch_cpu_build(name, args):
    assert _outcome(dyngrad, name, args) == _outcome(torch, name, args)


def test_not_compiled_message():
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
        dyngrad.cuda.synchronize()
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        dyngrad.cuda.set_device("cpu")


def test_device_context_and_streams():
    with dyngrad.cuda.device(-1):
        pass
    with torch.cuda.device(-1):
        pass
    for lib in (dyngrad, torch):
        with pytest.raises(RuntimeError, match="compiled without CUDA support"):
            with lib.cuda.device(0):
                pass
        with pytest.raises(RuntimeError, match="requires CUDA support"):
            lib.cuda.Stream()
        with pytest.raises(RuntimeError, match="dummy base class Event"):
            lib.cuda.Event()
