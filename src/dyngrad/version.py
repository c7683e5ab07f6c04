"""``torch.version``: the version of this build and the accelerator toolkits it was built
with (none: dyngrad runs on the CPU, so ``cuda``, ``hip``, ``rocm`` and ``xpu`` are None, as
in PyTorch's CPU build)."""
from __future__ import annotations

from typing import Optional

__version__ = "0.1.0"
debug = False
cuda: Optional[str] = None
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
git_version = "Unknown"
