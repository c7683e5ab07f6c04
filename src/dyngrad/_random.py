"""dyngrad's own random number generator: the same seed gives the same numbers (they need
not equal PyTorch's)."""
from __future__ import annotations

import numpy as np


class Generator:
    """A seeded source of random numbers (``torch.Generator``)."""

    def __init__(self, device="cpu"):
        self._seed = 67280421310721
        self._bits = None  # made on first draw: NumPy's random module loads only then

    @property
    def _rng(self):
        """The NumPy generator behind this one (PCG64 seeded with the seed)."""
        if self._bits is None:
            self._bits = np.random.Generator(np.random.PCG64(self._seed & 0xFFFFFFFFFFFFFFFF))
        return self._bits

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self._bits = None
        return self

    def seed(self) -> int:
        s = int(np.random.SeedSequence().entropy) & 0x7FFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        from ._tensor import Tensor
        import json
        state = json.dumps(self._rng.bit_generator.state).encode()
        return Tensor._make(np.frombuffer(state, dtype=np.uint8).copy())

    def set_state(self, state) -> "Generator":
        import json
        self._rng.bit_generator.state = json.loads(bytes(state._data.tobytes()).decode())
        return self

    @property
    def device(self):
        from ._tensor import CPU
        return CPU

    def __repr__(self):
        return f"<dyngrad.Generator object at {hex(id(self))}>"


default_generator = Generator()


def manual_seed(seed: int) -> Generator:
    """Seed dyngrad's default generator; returns it."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(state) -> None:
    default_generator.set_state(state)


def rng(generator=None) -> np.random.Generator:
    """The NumPy generator behind ``generator`` (or the default one)."""
    return (generator or default_generator)._rng
