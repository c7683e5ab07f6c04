"""``torch.cuda`` on a CPU-only library: nothing is available."""


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    return None


def manual_seed_all(seed: int) -> None:
    return None


def synchronize(device=None) -> None:
    return None


def empty_cache() -> None:
    return None
