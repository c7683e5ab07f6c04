"""``torch.version``: the version of this build and the accelerator toolkits it was built
with (none: dyngrad runs on the CPU, so ``cuda``, ``hip``, ``rocm`` and ``xpu`` are None, as
in PyTorch's CPU build)."""
from __future__ import annotations

__version__ = "0.1.0"
debug = False
cuda: str | None = None
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
git_version = "Unknown"
