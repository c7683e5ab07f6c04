"""``dyngrad.autograd.graph``: the Node type and hooks on saved tensors."""
from __future__ import annotations

from .node import Node

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu"]


class saved_tensors_hooks:
    """Pack/unpack hooks for tensors saved for backward (applied to custom Functions)."""

    stack: list = []

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        saved_tensors_hooks.stack.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        saved_tensors_hooks.stack.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: t, lambda t: t)
