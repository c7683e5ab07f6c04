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


class Query:
    """The declaration of an op whose result is no differentiable tensor of its own (see
    ``query``): what the registry's generic code reads of a declaration."""
    differentiable = False
    node_cls = None
    outputs = dims = ()
    elementwise = linear = False

    def __init__(self, name, fn, inputs):
        self.name, self.fn, self.forward, self.inputs = name, fn, fn, tuple(inputs)

    @staticmethod
    def batch(spec, arrays, params):
        """Inputs with a leading batch axis: the value of each sample (as torch.vmap reads
        a sample's logical size, dtype and value)."""
        from .._record import Tensor
        return [spec.fn(*(Tensor._make(a[i]) for a in arrays), **params)
                for i in range(len(arrays[0]))]


def query(name=None, *, function=True, method=True, methods=(), tensors=("input",),
          direct=True):
    """Declare an op whose result is no differentiable tensor of its own: a Python value read
    from a tensor (is_signed, is_same_size, is_nonzero) or the input itself (resolve_conj).
    PyTorch has no autograd kernel for these, so no node and no tangent; they read the
    tensor's logical size, dtype and value: ``direct``, vmap runs the op itself on the batched
    tensor, as torch.vmap (they are PyTorch's composites), else once per sample.  ``tensors``
    names the arguments that must be Tensors (PyTorch's TypeError otherwise)."""

    def deco(fn):
        from .. import _dtype as D
        from .._record import Tensor
        key = name or fn.__name__

        if tensors == ("input",):
            def f(input):
                if not isinstance(input, Tensor):
                    raise D.not_tensor(key, "input", 1, input)
                return fn(input)
        elif tensors == ("input", "other"):
            def f(input, other):
                if not isinstance(input, Tensor):
                    raise D.not_tensor(key, "input", 1, input)
                if not isinstance(other, Tensor):
                    raise D.not_tensor(key, "other", 2, other)
                return fn(input, other)
        else:
            def f(*args, **kwargs):
                for i, arg in enumerate(tensors):
                    v = args[i] if i < len(args) else kwargs.get(arg, Tensor)
                    if not isinstance(v, Tensor) and v is not Tensor:
                        raise D.not_tensor(key, arg, i + 1, v)
                return fn(*args, **kwargs)

        f.__name__ = f.__qualname__ = fn.__name__
        f.__doc__, f.__module__ = fn.__doc__, fn.__module__
        op(key, function=function, method=method, methods=methods, composite=direct)(f)
        OPS[key]["spec"] = Query(key, f, tensors)
        return f

    return deco
