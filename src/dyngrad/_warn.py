"""Warnings that point at the user's line, as PyTorch's do, however deep inside dyngrad
(guard wrappers, methods, helpers) they are raised."""
from __future__ import annotations

import os
import sys
import warnings

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type = UserWarning) -> None:
    """``warnings.warn`` attributed to the first calling frame outside the package."""
    f = sys._getframe(1)
    level = 2
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)
