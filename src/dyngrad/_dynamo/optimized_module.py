"""``OptimizedModule``: what ``dyngrad.compile(module)`` returns, as PyTorch's."""
from __future__ import annotations

from ..nn.modules.module import Module


class OptimizedModule(Module):
    """A module whose calls run compiled.  The original is ``_orig_mod`` (so ``state_dict``
    keys start with ``_orig_mod.``, as PyTorch's); other attributes are the original's."""

    _opt_mod_attrs = {"_orig_mod", "_compiled", "forward", "training"}

    def __init__(self, mod: Module, compiled) -> None:
        super().__init__()
        self._orig_mod = mod
        self.__dict__["_compiled"] = compiled
        self.__dict__["training"] = mod.training

    def __call__(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def train(self, mode: bool = True):
        self._orig_mod.train(mode)
        self.__dict__["training"] = mode
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        inner = repr(self._orig_mod).replace("\n", "\n  ")
        return f"OptimizedModule(\n  (_orig_mod): {inner}\n)"
