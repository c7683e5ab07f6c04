"""The errors of ``dyngrad.compile`` (PyTorch's are in ``torch._dynamo.exc``)."""
from __future__ import annotations


class TorchDynamoException(RuntimeError):
    """Base of the compile errors, as PyTorch's."""


class Unsupported(TorchDynamoException):
    """Something in the function cannot be captured; raised under ``fullgraph=True``."""


class InvalidBackend(TorchDynamoException):
    """``backend=`` names no known backend."""

    def __init__(self, name):
        super().__init__(f"Invalid backend: {name!r}, see `torch._dynamo.list_backends()` for "
                         f"available backends.")


class ReplayMismatch(AssertionError):
    """Under ``config.check_replay``: the first replay of a capture gave other values than
    eager on the same state."""
