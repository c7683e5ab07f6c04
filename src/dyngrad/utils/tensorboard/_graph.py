"""The model's graph as a TensorBoard ``GraphDef``, from dyngrad's autograd graph.

PyTorch traces the model with ``torch.jit.trace`` and writes the TorchScript graph (nodes such
as ``aten::linear``).  dyngrad has no tracer: it runs the model forward once under the graph
explorer's recorder (:func:`dyngrad.viz.record`), which logs every autograd node forward
creates, its inputs and the module call it happened in, and writes that graph:

* one ``IO Node`` per model input (``input/<forward argument name>``) and per output
  (``output/output.<i>``);
* one ``Parameter`` node per parameter the graph reaches, named by its module path in PyTorch's
  scope style (``Net/Linear[fc1]/weight``);
* one node per backward node (``grad_fn``), op = its class name (``AddmmBackward0``), named
  inside the scope of the module whose forward created it (``Net/Linear[fc1]/AddmmBackward0``);
* edges from each node's ``next_functions`` (the inputs of the op that created it).

Only what autograd records appears: ops on tensors that need no gradient leave no node.  So the
inputs are fed as fresh leaves that require grad (floating point ones), frozen parameters get
``requires_grad`` for the run (restored afterwards), and the model is in eval mode for the run,
as PyTorch does for its trace.
"""
from __future__ import annotations

import inspect

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

__all__ = ["graph", "node_proto"]


def node_proto(name, op="UnSpecified", inputs=(), shape=None, attributes="") -> NodeDef:
    """A ``NodeDef`` with PyTorch's attributes: ``attr`` (a string) and ``_output_shapes``."""
    attr = {"attr": AttrValue(s=attributes.encode("utf_8"))}
    if shape is not None:
        sp = TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in shape])
        attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[sp]))
    return NodeDef(name=name, op=op, input=list(inputs), attr=attr)


def _flatten(out):
    """The tensors in a model's output (a tensor, or nested tuples / lists / dicts of them)."""
    from ..._tensor import Tensor
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flatten(o)]
    return []


def _input_names(model, n):
    """``forward``'s parameter names for ``n`` positional inputs (``input.<i>`` otherwise)."""
    fn = getattr(model, "forward", model)
    names = []
    try:
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
            elif p.kind is p.VAR_POSITIONAL:
                break
    except (TypeError, ValueError):
        pass
    out = []
    for i in range(n):
        nm = names[i] if i < len(names) else f"input.{i + 1}"
        out.append(f"input/{nm}")
    return out


def _scope(model, path):
    """PyTorch's scope name of the submodule at dotted ``path``: ``Net/Linear[fc1]``."""
    parts = [type(model).__name__]
    m = model
    for p in path.split(".") if path else ():
        m = m._modules[p]
        parts.append(f"{type(m).__name__}[{p}]")
    return "/".join(parts)


def graph(model, args, verbose=False):
    """``(GraphDef, RunMetadata)`` of one forward run of ``model(*args)`` (see the module doc)."""
    from ..._tensor import Tensor
    from ...autograd.grad_mode import enable_grad
    from ...nn.modules.module import Module
    from ...viz.explorer import record

    if args is None:
        args = ()
    elif not isinstance(args, (tuple, list)):
        args = (args,)
    args = tuple(args)
    is_module = isinstance(model, Module)

    # leaf names: inputs, then parameters by module path
    in_names = _input_names(model, len(args))
    feed, names = [], {}
    for a, nm in zip(args, in_names):
        if isinstance(a, Tensor):
            t = a.detach()
            if t.is_floating_point() or t.is_complex():
                t.requires_grad_(True)
            feed.append(t)
            names[nm] = t
        else:
            feed.append(a)
    frozen = []
    mod_paths = {}
    if is_module:
        for mpath, m in model.named_modules():
            mod_paths[id(m)] = mpath
        for pname, p in model.named_parameters():
            mpath, _, leaf = pname.rpartition(".")
            names[_scope(model, mpath) + "/" + leaf] = p
            if not p.requires_grad and (p.is_floating_point() or p.is_complex()):
                frozen.append(p)

    was_training = model.training if is_module else None
    try:
        for p in frozen:
            p.requires_grad_(True)
        if is_module:
            model.train(False)
        try:
            with enable_grad(), record(params=names, title="add_graph") as rec:
                out = model(*feed)
        except RuntimeError:
            # e.g. an in-place op on an input: run again on the inputs as given
            feed = [a for a in args]
            names = {k: v for k, v in names.items() if not k.startswith("input/")}
            with enable_grad(), record(params=names, title="add_graph") as rec:
                out = model(*feed)
    finally:
        for p in frozen:
            p.requires_grad_(False)
        if is_module:
            model.train(was_training)

    # scopes of module calls, in PyTorch's style
    scopes = []
    for g in rec.groups:
        m = g["_module"]()
        if is_module and m is not None and id(m) in mod_paths:
            scopes.append(_scope(model, mod_paths[id(m)]))
        elif g["parent"] is not None:
            scopes.append(f"{scopes[g['parent']]}/{g['cls']}[{g['name']}]")
        else:
            scopes.append(g["cls"])

    # outputs, and the recorded nodes they reach
    leaf_name = {id(v): k for k, v in names.items()}
    outs = _flatten(out)
    out_src = []
    for t in outs:
        fn = t.grad_fn
        if fn is not None:
            out_src.append(("node", rec._node_id(fn)))
        elif id(t) in leaf_name:
            out_src.append(("leaf", leaf_name[id(t)]))
        else:
            out_src.append(None)
    nodes = rec.nodes
    keep = set()
    stack = [s[1] for s in out_src if s is not None and s[0] == "node"]
    while stack:
        i = stack.pop()
        if i in keep:
            continue
        keep.add(i)
        stack.extend(j for j in nodes[i]["inputs"] if j is not None)
    if not any(s is not None and s[0] == "node" for s in out_src):
        keep = set(range(len(nodes)))

    # node names
    used = set(names) | set(in_names)
    node_name = {}

    def unique(base):
        nm, k = base, 0
        while nm in used:
            k += 1
            nm = f"{base}_{k}"
        used.add(nm)
        return nm

    for n in nodes:
        if n["id"] not in keep:
            continue
        if n["kind"] == "leaf":
            nm = n.get("name")
            if nm in names:
                node_name[n["id"]] = nm
                continue
            scope = scopes[n["group"]] if n["group"] is not None else ""
            node_name[n["id"]] = unique(f"{scope}/{nm or 'leaf'}" if scope else (nm or "leaf"))
        else:
            scope = scopes[n["group"]] if n["group"] is not None else ""
            node_name[n["id"]] = unique(f"{scope}/{n['op']}" if scope else n["op"])

    def shape_of(n):
        return tuple(n["out"]["shape"]) if n.get("out") and "shape" in n["out"] else None

    def dtype_of(n):
        return n["out"].get("dtype", "") if n.get("out") else ""

    protos = []
    for nm, a in zip(in_names, args):
        shp = tuple(a.shape) if hasattr(a, "shape") else None
        protos.append(node_proto(nm, "IO Node", (), shp))
    for n in nodes:
        if n["id"] not in keep:
            continue
        nm = node_name[n["id"]]
        if n["kind"] == "leaf":
            if nm.startswith("input/"):
                continue  # written above
            is_param = nm in names
            protos.append(node_proto(nm, "Parameter" if is_param else "Leaf", (), shape_of(n),
                                     f"{{ dtype : {dtype_of(n)} }}"))
        else:
            ins = [node_name[j] for j in n["inputs"] if j is not None and j in node_name]
            protos.append(node_proto(nm, n["op"], ins, shape_of(n),
                                     f"{{ dtype : {dtype_of(n)} }}"))
    for i, (t, src) in enumerate(zip(outs, out_src)):
        ins = []
        if src is not None:
            ins = [node_name[src[1]]] if src[0] == "node" else [src[1]]
        protos.append(node_proto(f"output/output.{i + 1}", "IO Node", ins, tuple(t.shape)))

    if verbose:
        for p in protos:
            print(f"{p.name} = {p.op}({', '.join(p.input)})")
    stepstats = RunMetadata(step_stats=StepStats(dev_stats=[DeviceStepStats(
        device="/device:CPU:0")]))
    return GraphDef(node=protos, versions=VersionDef(producer=22)), stepstats
