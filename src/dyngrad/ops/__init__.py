"""The op library.  Each op family lives in one module, with every op's forward and its
backward node side by side.  ``OPS`` is the one table of public ops: each entry says where
the op is exposed (``dyngrad.<name>``, ``Tensor.<name>``) and which backward nodes it records;
the package namespace, the Tensor methods and the README's support table come from it."""
from __future__ import annotations

OPS: dict[str, dict] = {}


def op(name=None, *, function=True, method=True, methods=(), nodes=()):
    """Register an op: ``dyngrad.<name>`` when ``function``, ``Tensor.<name>`` when ``method``,
    plus extra method aliases (``methods``)."""

    def deco(fn):
        key = name or fn.__name__
        OPS[key] = {"fn": fn, "function": function, "method": method, "methods": tuple(methods),
                    "nodes": tuple(nodes), "module": fn.__module__.rsplit(".", 1)[-1]}
        return fn

    return deco


def attach_methods(tensor_cls):
    """Expose every registered op as a Tensor method (taking NumPy's parameter names where
    PyTorch's does: ``x.sum(axis=0)``)."""
    from .._npnames import Pending, method
    for key, info in OPS.items():
        names = ((key,) if info["method"] else ()) + info["methods"]
        for n in names:
            if n not in tensor_cls.__dict__ or n.startswith("__"):
                exported = OPS.get(n, {}).get("function", False) and not n.startswith("_")
                # operators (Python looks them up on the type, past descriptors' laziness
                # only through __get__) are built now; the other methods on first use
                setattr(tensor_cls, n, method(info["fn"], n, exported) if n.startswith("__")
                        else Pending(info["fn"], n, exported, tensor_cls))
