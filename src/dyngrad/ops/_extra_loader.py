"""Import every op family module present in this package (each registers its ops)."""
from __future__ import annotations

import importlib
import pkgutil

_PKG = __name__.rsplit(".", 1)[0]
_CORE = {"binary", "unary", "comparison", "reduction", "linalg", "views", "indexing", "inplace", "_dual",
         "_saved_names",
         "_extra_loader"}

for _m in pkgutil.iter_modules(importlib.import_module(_PKG).__path__):
    if _m.name not in _CORE:
        importlib.import_module(_PKG + "." + _m.name)

# every family is loaded: now the in-place forms that the rule in ``inplace`` gives
importlib.import_module(_PKG + ".inplace").register_inplace_forms()


def _node_classes():
    from ..autograd.node import Node
    out, todo = [], [Node]
    while todo:
        for c in todo.pop().__subclasses__():
            out.append(c)
            todo.append(c)
    return out


# every node class exists now: give them PyTorch's saved-value names
importlib.import_module(_PKG + "._saved_names").apply(_node_classes())
