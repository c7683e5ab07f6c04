"""Running an unmodified PyTorch script on dyngrad: ``import torch`` (and its submodules, and
``torchviz``) resolved to dyngrad's modules while the script runs as ``__main__``."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import runpy
import sys

from ._usage import UsageError

ALIASES = {"torch": "dyngrad", "torchviz": "dyngrad.viz"}


class _AliasModule:
    """Loader that hands out the dyngrad module a ``torch...`` name stands for."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        return importlib.import_module(self.target)

    def exec_module(self, module):
        pass


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Meta path finder mapping ``torch``/``torch.*``/``torchviz`` to dyngrad's modules."""

    def find_spec(self, fullname, path=None, target=None):
        head = fullname.split(".", 1)[0]
        if head not in ALIASES:
            return None
        real = ALIASES[head] + fullname[len(head):]
        try:
            found = importlib.util.find_spec(real)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise ModuleNotFoundError(
                f"No module named '{fullname}' (running on dyngrad, which implements a subset of "
                f"PyTorch; '{real}' does not exist)", name=fullname)
        return importlib.util.spec_from_loader(fullname, _AliasModule(real))


_FINDER = TorchAliasFinder()
_HIDDEN: dict = {}  # real PyTorch modules set aside while the aliases are installed


def install_aliases() -> None:
    """Make ``import torch`` (and submodules, and ``torchviz``) import dyngrad from now on."""
    import dyngrad
    import dyngrad.viz  # noqa: F401
    for k in [k for k in sys.modules if k == "torch" or k.startswith("torch.") or k == "torchviz"]:
        mod = sys.modules.pop(k)
        if not getattr(mod, "__name__", "").startswith("dyngrad"):
            _HIDDEN.setdefault(k, mod)  # a real PyTorch already imported: put back afterwards
    sys.modules["torch"] = dyngrad
    sys.modules["torchviz"] = sys.modules["dyngrad.viz"]
    for name, mod in list(sys.modules.items()):
        if name.startswith("dyngrad.") and mod is not None:
            alias = "torch." + name[len("dyngrad."):]
            if not alias.startswith("torch.viz"):
                sys.modules.setdefault(alias, mod)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def uninstall_aliases() -> None:
    """Undo ``install_aliases``."""
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for k in [k for k in sys.modules if k == "torch" or k.startswith("torch.") or k == "torchviz"]:
        if getattr(sys.modules[k], "__name__", "").startswith("dyngrad"):
            del sys.modules[k]
    # a PyTorch imported before must find its modules again (re-importing its C extension in
    # the same process crashes)
    sys.modules.update(_HIDDEN)
    _HIDDEN.clear()


def run_script(script, args=(), wrap=None):
    """Run ``script`` as ``__main__`` with the aliases; ``wrap`` is an optional context manager."""
    if not os.path.isfile(script):
        raise UsageError(f"no such script: {script}")
    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [script, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    install_aliases()
    try:
        if wrap is not None:
            with wrap:
                runpy.run_path(script, run_name="__main__")
        else:
            runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = old_argv
        sys.path[:] = old_path
        uninstall_aliases()
