"""The op library.  Each op family lives in one module, with every op's forward and its
backward node side by side.  ``OPS`` is the one table of public ops: each entry says where
the op is exposed (``dyngrad.<name>``, ``Tensor.<name>``) and which backward nodes it records;
the package namespace, the Tensor methods and the README's support table come from it."""
from __future__ import annotations

OPS: dict[str, dict] = {}


def op(name=None, *, function=True, method=True, methods=(), nodes=(), composite=False):
    """Register an op: ``dyngrad.<name>`` when ``function``, ``Tensor.<name>`` when ``method``,
    plus extra method aliases (``methods``).  ``composite``: see ``composite``."""

    def deco(fn):
        key = name or fn.__name__
        OPS[key] = {"fn": fn, "function": function, "method": method, "methods": tuple(methods),
                    "nodes": tuple(nodes), "module": fn.__module__.rsplit(".", 1)[-1],
                    "composite": composite}
        return fn

    return deco


def inplace_of(name: str, base: str) -> None:
    """Mark registry entry ``name`` as the in-place form made of op ``base`` by a rule."""
    OPS[name]["inplace_of"] = base


def composite(name=None, *, function=True, method=True, methods=()):
    """Declare an op that PyTorch composes from other ops (CompositeImplicitAutograd: hstack,
    flatten, matmul): written as that composition, it records no node of its own, and its
    gradient, forward-mode rule and batching rule are those of the declared ops it calls
    (tests/test_op_spec.py checks that forward mode and vmap need nothing else)."""
    return op(name, function=function, method=method, methods=methods, composite=True)


def declared(name: str) -> bool:
    """Whether registry entry ``name`` comes from one declaration: ``defop``/``defview``, a
    ``composite``, the in-place form that the registry's rule makes of a declared op, or a
    declared op's Tensor method registered apart (``_<op>_method``)."""
    info = OPS[name]
    if info.get("spec") is not None or info.get("composite"):
        return True
    if name.startswith("_") and name.endswith("_method") and name[1:-7] in OPS:
        return declared(name[1:-7])  # the Tensor method of op ``name[1:-7]``
    base = info.get("inplace_of")
    return base is not None and declared(base)


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
