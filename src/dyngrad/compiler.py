"""``torch.compiler``: reset, disable and is_compiling for ``dyngrad.compile``."""
from __future__ import annotations

from ._dynamo import disable, is_compiling, list_backends, reset
from . import compile

__all__ = ["compile", "reset", "disable", "is_compiling", "is_dynamo_compiling",
           "list_backends"]


def is_dynamo_compiling() -> bool:
    """Same as ``is_compiling`` (PyTorch keeps both names)."""
    return is_compiling()
