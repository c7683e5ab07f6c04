"""Keep freed array memory in the process (glibc only).

Training allocates the same large arrays every step.  By default glibc serves big blocks with
mmap and returns them (and the top of the heap) to the system when they are freed, so every
step page-faults its memory in again.  Raising the mmap and trim thresholds keeps those
blocks for reuse -- what PyTorch's allocator achieves by caching.  Set
``DYNGRAD_MALLOC_TUNING=0`` to leave glibc's defaults alone.
"""
from __future__ import annotations

import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024   # glibc's largest allowed value on 64-bit systems
TRIM_THRESHOLD = 1 << 30

TUNED = []


def tune() -> bool:
    """Raise glibc's mmap and trim thresholds once; False where that does not apply."""
    if TUNED:
        return TUNED[0]
    ok = False
    if sys.platform.startswith("linux") and os.environ.get("DYNGRAD_MALLOC_TUNING", "1") != "0":
        try:
            import ctypes
            libc = ctypes.CDLL("libc.so.6")
            ok = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
                bool(libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
        except (OSError, AttributeError):
            ok = False
    TUNED.append(ok)
    return ok
