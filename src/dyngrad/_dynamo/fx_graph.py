"""The captured forward as a ``dyngrad.fx.GraphModule`` (what PyTorch hands a custom
``backend=``: the graph dynamo captured, as FX).

A program's forward instructions are NumPy kernels on buffers; each becomes a
``call_function`` node of the public op it was recorded from (``torch.addmm``,
``torch.nn.functional.nll_loss``...), with the kernel's arguments put back into the public
op's form.  The function's tensor arguments are placeholders; tensors it read from outside
(parameters, closures) are ``get_attr`` attributes of the module (``_param_constant0``,
``_tensor_constant0``, as ``make_fx`` names them).  The graph returns, as a tuple (dynamo's
convention), the forward's values that no later forward op reads (after an in-place op, the
value of the tensor it changed): the loss of a training step, the output of a model.  Each node is run on the capture's inputs while the graph is
built, and its shape and dtype checked against the program's buffer.
"""
from __future__ import annotations

import inspect
import operator
import re

import numpy as np

from .program import Program, Ref, refs_in

__all__ = ["graph_module_of", "example_inputs_of"]


def _np_scalar(v):
    return v.item() if isinstance(v, np.generic) else v


def _public(name: str):
    """The public function ``name`` (``dyngrad.<name>`` or ``dyngrad.nn.functional.<name>``)."""
    import dyngrad
    from ..nn import functional as F
    for owner in (dyngrad, F):
        f = owner.__dict__.get(name)
        if callable(f):
            return f
    return None


_OPERATOR = {"add": operator.add, "mul": operator.mul, "sub": operator.sub,
             "div": operator.truediv}


def _reduction(red):
    if isinstance(red, str):
        return red
    return {0: "none", 1: "mean", 2: "sum"}[int(red)]


def _call_form(ins, a: list, kw: dict):
    """``(target, args, kwargs)`` of the public op instruction ``ins`` ran as a kernel, its
    ``Ref`` arguments already replaced (``a``, ``kw``)."""
    from ..nn import functional as F
    from . import lowering as L
    op, fn = ins.op, ins.fn
    kw = {k: v for k, v in kw.items() if k != "out"}
    if op == "relu" and fn is np.maximum:
        return F.relu, a[:1], {}
    if op == "pow" and fn in (np.square, np.multiply):
        return _public("pow"), [a[0], 2], {}
    if op == "rsub" and fn is np.subtract:
        return _public("rsub"), [a[1], a[0]], {}
    if op in _OPERATOR and fn is L._UFUNC2[op] and type(ins.args[0]) is not Ref:
        return _OPERATOR[op], a, {}     # a Python number first: ``2 * x`` ran as __rmul__
    if op == "sum" and getattr(fn, "__self__", None) is np.add and fn.__name__ == "reduce":
        if a[1] is None:
            return _public("sum"), a[:1], {}
        dims = a[1][0] if len(a[1]) == 1 else list(a[1])
        return _public("sum"), [a[0], dims, kw.get("keepdims", False)], {}
    if op == "log_softmax":
        return F.log_softmax, [a[0], a[1]], {}
    if op == "softmax":
        return F.softmax, [a[0], a[1]], {}
    if op == "nll_loss":
        return F.nll_loss, [a[0], a[1]], {"ignore_index": a[2], "reduction": _reduction(a[3])}
    target = _public(op)
    if target is None:
        raise NotImplementedError(f"graph_module_of: the captured op '{op}' has no public "
                                  f"dyngrad function to stand for it in an FX graph")
    return target, a, kw


def example_inputs_of(program: Program) -> list:
    """The tensors the program was captured on, in the order of its argument buffers (the
    ``example_inputs`` PyTorch passes a backend with the graph)."""
    return [b.value for b in program.buffers if b.kind == "arg"]


def _arg_names(program: Program) -> dict:
    """Buffer source (``args[0]``) -> the parameter's name (``x``), from the argument guards."""
    out = {}
    for g in program.guards:
        try:
            d = {k: p.default for k, p in inspect.signature(g.describe).parameters.items()}
        except (TypeError, ValueError):
            continue
        if isinstance(d.get("expr"), str) and isinstance(d.get("label"), str):
            out[d["expr"]] = d["label"]
    return out


def _ident(s: str) -> str:
    s = re.sub(r"\W+", "_", s).strip("_")
    return s if s and not s[0].isdigit() else "arg_" + s


def graph_module_of(program: Program):
    """The forward of ``program`` as a ``dyngrad.fx.GraphModule`` (see the module
    docstring); ``gm(*example_inputs_of(program))`` gives the eager forward's values."""
    from ..fx import Graph, GraphModule
    from .._tensor import Tensor
    from ..autograd.grad_mode import no_grad
    from ..nn.parameter import Parameter

    g = Graph()
    env: dict = {}       # buffer number -> Node
    val: dict = {}       # buffer number -> Tensor at capture (run while building)
    names = _arg_names(program)
    for b in program.buffers:
        if b.kind == "arg":
            n = g.placeholder(_ident(names.get(b.source, b.source)))
            env[b.i] = n
            val[b.i] = _copy(b.value)
    root: dict = {}
    counts = {"param": 0, "tensor": 0}

    def node_of(i):
        if i in env:
            return env[i]
        b = program.buffers[i]
        if b.kind == "ext":
            kind = "param" if isinstance(b.value, Parameter) else "tensor"
            name = f"_{kind}_constant{counts[kind]}"
            counts[kind] += 1
            root[name] = b.value
            env[i] = g.get_attr(name)
            val[i] = _copy(b.value)
            return env[i]
        if b.kind == "const":
            name = f"_tensor_constant{counts['tensor']}"
            counts["tensor"] += 1
            t = Tensor._make(np.array(b.value))
            root[name] = t
            env[i] = g.get_attr(name)
            val[i] = t
            return env[i]
        raise RuntimeError(f"graph_module_of: buffer b{i} is read before it is written")

    def conv(x, nodes: bool):
        if type(x) is Ref:
            node_of(x.i)
            return env[x.i] if nodes else val[x.i]
        if type(x) in (tuple, list):
            return type(x)(conv(v, nodes) for v in x)
        return _np_scalar(x)

    fwd = [ins for ins in program.instrs if ins.phase == "forward"]
    last_read: dict = {}     # buffer -> when its value was last read
    last_write: dict = {}    # buffer -> when it was last written (by a public op's result)
    for k, ins in enumerate(fwd):
        refs: list = []
        refs_in(ins.args, refs)
        refs_in({key: v for key, v in ins.kwargs.items() if key != "out"}, refs)
        for i in refs:
            last_read[i] = 2 * k        # an instruction reads before it writes
        a = [conv(x, True) for x in ins.args]
        kw = {key: conv(v, True) for key, v in ins.kwargs.items()}
        av = [conv(x, False) for x in ins.args]
        kwv = {key: conv(v, False) for key, v in ins.kwargs.items()}
        if ins.mode == "effect":
            tgt = ins.kwargs.get("out")
            if type(tgt) is not Ref or not ins.op.endswith("_"):
                raise NotImplementedError(f"graph_module_of: the in-place step '{ins.op}' "
                                          f"of the captured forward has no FX form")
            node = g.call_method(ins.op, tuple(a[:2]))
            with no_grad():
                getattr(val[tgt.i], ins.op)(av[1])
            env[tgt.i] = node
            last_write[tgt.i] = 2 * k + 1
            continue
        target, fa, fk = _call_form(ins, a, kw)
        _, va, vk = _call_form(ins, av, kwv)
        fa, fk = _without_defaults(target, fa, fk)
        node = g.call_function(target, tuple(fa), fk)
        with no_grad():
            out = target(*va, **vk)
        first = ins.out[0] if type(ins.out) is tuple else ins.out
        b = program.buffers[first]
        od = getattr(out, "_data", None)
        if od is None or tuple(od.shape) != tuple(b.shape) or od.dtype != b.dtype:
            raise RuntimeError(f"graph_module_of: '{ins.op}' as {target.__name__} gives "
                               f"{None if od is None else (tuple(od.shape), od.dtype)}, the "
                               f"program's b{first} is {(tuple(b.shape), b.dtype)}")
        env[first] = node
        val[first] = out
        last_write[first] = 2 * k + 1
    outs = [env[i] for i, w in sorted(last_write.items(), key=lambda kv: kv[1])
            if last_read.get(i, -1) < w]
    g.output(tuple(outs))
    return GraphModule(root, g)


def _copy(t):
    """A copy of a tensor to run the graph's ops on while it is built (an in-place op of the
    forward must not change the user's tensors)."""
    from .._tensor import Tensor
    return Tensor._make(t._data.copy())


def _same_value(a, b, name: str = "") -> bool:
    if b is None or type(b).__name__ == "_Unset":   # a default meaning "not given"
        return a is None or (name == "keepdim" and a is False)
    return type(a) is type(b) and a == b


def _without_defaults(target, args: list, kwargs: dict) -> tuple[list, dict]:
    """The call with its trailing positional arguments and keyword arguments that equal the
    target's defaults left out (``torch.mean(x)`` rather than ``torch.mean(x, None, False,
    dtype=None)``), as the user's code would write it."""
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return list(args), dict(kwargs)
    empty = inspect.Parameter.empty
    by_name = {p.name: p for p in params}
    kwargs = {k: v for k, v in kwargs.items()
              if k not in by_name or not _same_value(v, by_name[k].default, k)}
    args = list(args)
    while args and len(args) <= len(params):
        p = params[len(args) - 1]
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or p.default is empty or \
                not _same_value(args[-1], p.default, p.name):
            break
        args.pop()
    return args, kwargs
