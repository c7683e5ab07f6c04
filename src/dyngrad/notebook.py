"""Notebooks: ``import dyngrad.notebook`` (or ``%load_ext dyngrad.notebook``) makes
``import torch`` -- and ``torch.nn``, ``torch.optim``, ``import torchviz`` -- resolve to dyngrad
for the rest of the session, as ``dyngrad run`` does for scripts.  A recorder (``with
dyngrad.viz.record() as rec``) or ``dyngrad.viz.explore(...)`` as a cell's last expression
shows the explorer page inline; ``uninstall()`` undoes the aliases."""
from __future__ import annotations

from ._script import install_aliases, uninstall_aliases

__all__ = ["install", "uninstall", "load_ipython_extension", "unload_ipython_extension"]


def install() -> None:
    """``import torch`` gives dyngrad from now on (modules already holding a real torch keep it)."""
    install_aliases()


def uninstall() -> None:
    """Undo ``install``: ``import torch`` finds the real PyTorch again (if installed)."""
    uninstall_aliases()


def load_ipython_extension(ipython) -> None:  # ``%load_ext dyngrad.notebook``
    install()


def unload_ipython_extension(ipython) -> None:
    uninstall()


install()
