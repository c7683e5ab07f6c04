"""dyngrad.fx against torch.fx: the same programs traced by both give the same generated code
(or the same node ops, targets and names) and the same outputs; graph editing, Interpreter,
Transformer, replace_pattern, wrap and the tracing errors behave alike."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402,F401,F811
import dyngrad  # noqa: E402
import dyngrad.fx  # noqa: E402,F401

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _both(src: str, name: str = "fxcase"):
    """Run ``src`` twice, with ``torch`` bound to PyTorch and to dyngrad; the namespaces."""
    import linecache
    code = textwrap.dedent(src)
    linecache.cache[f"<{name}>"] = (len(code), None, code.splitlines(True), f"<{name}>")
    out = []
    for lib in (torch, dyngrad):
        mod = types.ModuleType(name)
        mod.__dict__.update(torch=lib, nn=lib.nn, F=lib.nn.functional, fx=lib.fx)
        exec(compile(code, f"<{name}>", "exec"), mod.__dict__)
        out.append(mod.__dict__)
    return out


def _np(x):
    if isinstance(x, (tuple, list)):
        return [_np(e) for e in x]
    if isinstance(x, dict):
        return {k: _np(v) for k, v in x.items()}
    if hasattr(x, "detach"):
        return x.detach().numpy()
    return x


def _close(a, b):
    a, b = _np(a), _np(b)
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _close(a[k], b[k])
    elif isinstance(a, np.ndarray):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    elif isinstance(a, torch.dtype):
        assert str(a) == str(b)
    else:
        assert a == b


def _sync(tm, dm):
    """Give dyngrad module ``dm`` the state of PyTorch module ``tm``."""
    dm.load_state_dict({k: dyngrad.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _inputs(*shape, seed=0):
    a = np.random.RandomState(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(a), dyngrad.tensor(a)


def _nodes(g):
    return [(n.op, n.name, n.target if isinstance(n.target, str) else n._pretty_print_target(n.target))
            for n in g.nodes]


MLP = """
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(8, 3)
        self.scale = nn.Parameter(torch.ones(3))

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = torch.relu(h) + 1
        h = 2 * self.act(h) - h.sum(dim=1, keepdim=True)
        out = self.fc2(h) * self.scale
        return torch.sigmoid(out).mean(), F.softmax(out, dim=1)
"""


def test_mlp_code_graph_and_outputs():
    t, d = _both(MLP)
    tm, dm = t["MLP"](), d["MLP"]()
    _sync(tm, dm)
    tg, dg = torch.fx.symbolic_trace(tm), dyngrad.fx.symbolic_trace(dm)
    assert dg.code == tg.code
    assert str(dg.graph) == str(tg.graph)
    assert dg.print_readable(print_output=False) == tg.print_readable(print_output=False)
    assert str(dg) == str(tg) and repr(dg) == repr(tg)
    assert isinstance(dg, dyngrad.nn.Module) and type(dg).__name__ == "MLP"
    assert list(dg.state_dict()) == list(tg.state_dict())
    assert [n for n, _ in dg.named_parameters()] == [n for n, _ in tg.named_parameters()]
    tx, dx = _inputs(5, 4)
    _close(tg(tx), dg(dx))
    _close(tm(tx), dg(dx))
    # the traced module trains like the original: gradients reach its parameters
    dg(dx)[0].backward()
    assert dg.fc1.weight.grad is not None and dg.scale.grad is not None


CNN = """
class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 2 * 2, 5)

    def forward(self, x):
        x = self.pool(F.relu(self.conv(x)))
        x = F.max_pool2d(x, 2)
        a = torch.flatten(x, 1)
        b = x.view(x.size(0), -1)
        c = x.reshape(x.shape[0], -1)
        return self.fc(a + b + c)
"""


def test_cnn_with_flatten_and_shapes():
    t, d = _both(CNN)
    tm, dm = t["CNN"](), d["CNN"]()
    _sync(tm, dm)
    tg, dg = torch.fx.symbolic_trace(tm), dyngrad.fx.symbolic_trace(dm)
    assert dg.code == tg.code
    assert _nodes(dg.graph) == _nodes(tg.graph)
    tx, dx = _inputs(2, 1, 8, 8)
    _close(tg(tx), dg(dx))


def test_operators_methods_attributes_and_constants():
    src = """
    def f(x, y):
        a = -x + 1 - (2 * x) / y ** 2 // 3 % 4 @ y.T
        b = x.abs() > y
        c = (1 - x) * (2 / y) + (3 ** x) - x[0] + x[:, 1:] @ y[1:]
        d = x.dtype, x.shape[1], x.size(-1), x.ndim
        e = torch.cat([x, y], 1).flatten(1).unsqueeze(0).transpose(0, 1)
        k = torch.zeros(2, 3) + x[:2, :3]
        return a, b, c, d, e, k, {'s': x.sum(), 't': [y.max(1)[0]]}
    """
    t, d = _both(src)
    tg, dg = torch.fx.symbolic_trace(t["f"]), dyngrad.fx.symbolic_trace(d["f"])
    assert dg.code == tg.code
    assert _nodes(dg.graph) == _nodes(tg.graph)
    tx, dx = _inputs(3, 3)
    ty, dy = _inputs(3, 3, seed=1)
    _close(tg(tx, ty), dg(dx, dy))
    assert isinstance(dg._tensor_constant0, dyngrad.Tensor)
    t, d = _both("def g(x):\n    return abs(x)\n")  # dyngrad's Tensor has no __abs__ to run
    assert dyngrad.fx.symbolic_trace(d["g"]).code == torch.fx.symbolic_trace(t["g"]).code


def test_leaf_modules_and_custom_tracer():
    src = """
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return torch.tanh(self.lin(x)) * 2

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.seq(self.block(x)) + self.block(x))

    class KeepBlocks(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Block) or super().is_leaf_module(m, qualname)

    class ThroughRelu(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            if isinstance(m, nn.ReLU):
                return False
            return super().is_leaf_module(m, qualname)

    class Tagging(fx.Tracer):
        def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
            n = super().create_node(kind, target, args, kwargs, name)
            n.tag = "foo"
            return n
    """
    t, d = _both(src)
    tm, dm = t["Net"](), d["Net"]()
    _sync(tm, dm)
    tx, dx = _inputs(2, 3)
    for tracer in ("KeepBlocks", "ThroughRelu", "Tagging"):
        tgraph, dgraph = t[tracer]().trace(tm), d[tracer]().trace(dm)
        assert _nodes(dgraph) == _nodes(tgraph)
        tg, dg = torch.fx.GraphModule(tm, tgraph), dyngrad.fx.GraphModule(dm, dgraph)
        assert dg.code == tg.code
        _close(tg(tx), dg(dx))
    assert all(n.tag == "foo" for n in d["Tagging"]().trace(dm).nodes)
    g = d["KeepBlocks"]().trace(dm)
    assert [n.meta.get("nn_module_stack") is not None for n in g.nodes if n.op == "call_module"]


def test_concrete_args():
    src = """
    def f(x, flag, scale=2.0, opt=None):
        if flag:
            x = x * scale
        if opt is None:
            return x + 1
        return x - opt

    def g(x, n):
        for _ in range(n):
            x = x + 1
        return x
    """
    t, d = _both(src)
    for kw in ({"flag": True}, {"flag": False, "opt": None}, {"flag": True, "scale": 3.0}):
        tg = torch.fx.symbolic_trace(t["f"], concrete_args=kw)
        dg = dyngrad.fx.symbolic_trace(d["f"], concrete_args=kw)
        assert dg.code == tg.code
        tx, dx = _inputs(2, 2)
        args = [kw.get("flag"), kw.get("scale", 2.0)]
        if "opt" in kw:
            _close(tg(tx, *args, None), dg(dx, *args, None))
        else:
            _close(tg(tx, *args, tx), dg(dx, *args, dx))
    tg = torch.fx.symbolic_trace(t["g"], concrete_args={"n": 3})
    dg = dyngrad.fx.symbolic_trace(d["g"], concrete_args={"n": 3})
    assert dg.code == tg.code
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        dyngrad.fx.symbolic_trace(d["f"], concrete_args={"flag": True})(dyngrad.ones(1), False)
    with pytest.raises(AssertionError, match="specialized to have value None"):
        dyngrad.fx.symbolic_trace(d["f"], concrete_args={"flag": True, "opt": None})(
            dyngrad.ones(1), True, 2.0, dyngrad.ones(1))


def test_control_flow_and_iteration_errors_match():
    src = """
    def branch(x):
        if x.sum() > 0:
            return x
        return -x

    def loop(x):
        return [e for e in x]

    def length(x):
        return len(x)

    def unpack(x):
        a, b = x
        return a + b
    """
    t, d = _both(src)
    for name in ("branch", "loop", "length"):
        with pytest.raises(Exception) as te:
            torch.fx.symbolic_trace(t[name])
        with pytest.raises(Exception) as de:
            dyngrad.fx.symbolic_trace(d[name])
        assert str(de.value) == str(te.value)
        assert type(de.value).__name__ == type(te.value).__name__
    assert issubclass(dyngrad.fx.proxy.TraceError, ValueError)
    tg, dg = torch.fx.symbolic_trace(t["unpack"]), dyngrad.fx.symbolic_trace(d["unpack"])
    assert dg.code == tg.code


def test_wrap_function_level():
    src = """
    def my_norm(x, y):
        return (x * x + y * y).sqrt()

    fx.wrap("my_norm")

    @fx.wrap
    def shifted(x):
        if x.sum() > 0:
            return x - 1
        return x + 1

    fx.wrap("len")

    def f(x, y):
        return my_norm(x, y) + shifted(y) + len(x)
    """
    t, d = _both(src)
    tg, dg = torch.fx.symbolic_trace(t["f"]), dyngrad.fx.symbolic_trace(d["f"])
    assert dg.code == tg.code
    assert 'wrap("fxcase_my_norm")' in dg.code
    assert [n.meta.get("is_wrapped") for n in dg.graph.nodes] == \
        [n.meta.get("is_wrapped") for n in tg.graph.nodes]
    tx, dx = _inputs(2, 2)
    ty, dy = _inputs(2, 2, seed=3)
    _close(tg(tx, ty), dg(dx, dy))
    assert d["my_norm"](dx, dy).shape == (2, 2)  # untouched outside tracing


def test_math_autowrap_and_functions_imported_by_name():
    src = """
    import math
    from torch import cat
    from torch.nn.functional import relu

    def f(x):
        return relu(cat([x, x])) * math.sqrt(x.shape[0])
    """
    tns = {"torch": torch}
    dns = {"torch": dyngrad}
    body = textwrap.dedent(src)
    exec(compile(body, "<fxcase>", "exec"), tns)
    exec(compile(body.replace("from torch", "from dyngrad"), "<fxcase>", "exec"), dns)
    tg, dg = torch.fx.symbolic_trace(tns["f"]), dyngrad.fx.symbolic_trace(dns["f"])
    assert dg.code == tg.code
    tx, dx = _inputs(3, 2)
    _close(tg(tx), dg(dx))
    assert dns["relu"] is dyngrad.nn.functional.relu  # the patches are undone


GELU_SWAP = """
class ReluToGelu(fx.Transformer):
    def call_function(self, target, args, kwargs):
        if target in (torch.relu, F.relu):
            return F.gelu(args[0])
        return super().call_function(target, args, kwargs)

    def call_method(self, target, args, kwargs):
        if target == "relu":
            return F.gelu(args[0])
        return super().call_method(target, args, kwargs)

def f(x):
    return torch.relu(x) + F.relu(x * 2) + x.relu()
"""


def test_transformer_swaps_relu_for_gelu():
    t, d = _both(GELU_SWAP)
    tg = t["ReluToGelu"](torch.fx.symbolic_trace(t["f"])).transform()
    dg = d["ReluToGelu"](dyngrad.fx.symbolic_trace(d["f"])).transform()
    # PyTorch's F.gelu is torch._C._nn.gelu, which dyngrad (having no torch._C) names by its
    # public path
    assert str(dg.graph).replace("torch.nn.functional.gelu", "torch._C._nn.gelu") == \
        str(tg.graph)
    assert dg.code.replace("torch.nn.functional.gelu", "torch._C._nn.gelu") == tg.code
    tx, dx = _inputs(4)
    _close(tg(tx), dg(dx))


def test_interpreter_subclass_and_shape_prop():
    src = """
    class NegSigmSwap(fx.Interpreter):
        def call_function(self, target, args, kwargs):
            if target is torch.sigmoid:
                return torch.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target, args, kwargs)

    def fn(x):
        return torch.sigmoid(x).neg()
    """
    t, d = _both(src)
    tx, dx = _inputs(3, 4)
    tr = t["NegSigmSwap"](torch.fx.symbolic_trace(t["fn"])).run(tx)
    dr = d["NegSigmSwap"](dyngrad.fx.symbolic_trace(d["fn"])).run(dx)
    _close(tr, dr)
    _close(torch.neg(tx).sigmoid(), dr)
    gm = dyngrad.fx.symbolic_trace(d["fn"])
    interp = dyngrad.fx.Interpreter(gm, garbage_collect_values=False)
    interp.run(dx)
    assert sorted(n.name for n in interp.env) == ["neg", "output", "sigmoid", "x"]


def test_replace_pattern_like_torch():
    src = """
    class M(nn.Module):
        def forward(self, x, w1, w2):
            val1 = torch.neg(w1)
            m1 = torch.cat([val1, w2]).sum()
            val2 = torch.neg(w1)
            m2 = torch.cat([val2, w2]).sum()
            return x + torch.max(m1) + torch.max(m2)

    def pattern(a1, a2):
        val1 = torch.neg(a1)
        return torch.cat([val1, a2]).sum()

    def replacement(w1, w2):
        return torch.stack([w1, w2])

    def add_pattern(x, y):
        return torch.add(x, y)

    def add_replacement(x, y):
        return torch.mul(x, y)

    def uses(x, y):
        a = torch.add(x, y)
        return torch.add(a, a) + a
    """
    t, d = _both(src)
    tg, dg = torch.fx.symbolic_trace(t["M"]()), dyngrad.fx.symbolic_trace(d["M"]())
    tm = torch.fx.replace_pattern(tg, t["pattern"], t["replacement"])
    dmatch = dyngrad.fx.replace_pattern(dg, d["pattern"], d["replacement"])
    assert len(dmatch) == len(tm) == 2
    assert [m.anchor.name for m in dmatch] == [m.anchor.name for m in tm]
    assert dg.code == tg.code
    tx, dx = _inputs(2)
    tw, dw = _inputs(2, seed=4)
    _close(tg(tx, tw, tw), dg(dx, dw, dw))
    tg, dg = torch.fx.symbolic_trace(t["uses"]), dyngrad.fx.symbolic_trace(d["uses"])
    tm = torch.fx.replace_pattern(tg, t["add_pattern"], t["add_replacement"])
    dmatch = dyngrad.fx.replace_pattern(dg, d["add_pattern"], d["add_replacement"])
    assert len(dmatch) == len(tm)
    assert dg.code == tg.code


def test_graph_editing_insert_erase_recompile():
    t, d = _both(MLP)
    results = []
    for lib, ns in ((torch, t), (dyngrad, d)):
        gm = lib.fx.symbolic_trace(ns["MLP"]())
        g = gm.graph
        for node in list(g.nodes):
            if node.op == "call_function" and node.target is lib.relu:
                with g.inserting_after(node):
                    new = g.call_function(lib.sigmoid, (node,))
                    node.replace_all_uses_with(new)
                    new.update_arg(0, node)
            if node.op == "call_method" and node.target == "sum":
                with g.inserting_before(node):
                    mean = g.call_method("mean", node.args, dict(node.kwargs))
                node.replace_all_uses_with(mean)
                g.erase_node(node)
        out = g.output_node()
        with g.inserting_before(out):
            unused = g.call_function(lib.tanh, (next(iter(g.nodes)),))
            absolute = g.create_node("call_method", "abs", (unused,), name="absolute")
        assert unused.name == "tanh" and absolute.name == "absolute"
        out.prepend(unused)  # moves it after `absolute`: now used before defined
        with pytest.raises(RuntimeError, match="was used before it has been defined"):
            g.lint()
        absolute.prepend(unused)
        g.lint()
        assert g.eliminate_dead_code()
        gm.recompile()
        x = g.placeholder("extra", default_value=7)
        assert x.args == (7,)
        g.erase_node(x)
        gm.recompile()
        results.append((gm.code, str(g), _nodes(g), [len(n.users) for n in g.nodes],
                        [[a.name for a in n.all_input_nodes] for n in g.nodes]))
        first = next(iter(g.nodes))
        with pytest.raises(RuntimeError, match="Tried to erase Node x but it still had 1 users"):
            g.erase_node(first)
    assert results[1] == results[0]


def test_graph_built_by_hand_copy_and_lint_errors():
    results = []
    for lib in (torch, dyngrad):
        g = lib.fx.Graph()
        x = g.placeholder("x")
        w = g.placeholder("w", default_value=None)
        y = g.call_function(lib.add, (x, 1), {"alpha": 2})
        z = g.call_method("relu", (y,))
        m = g.call_module("lin", (z,))
        p = g.get_attr("lin.weight")
        o = g.call_function(lib.matmul, (m, p))
        g.output((o, w))
        root = lib.nn.Module()
        root.lin = lib.nn.Linear(2, 2)
        gm = lib.fx.GraphModule(root, g, "Built")
        g2 = lib.fx.Graph()
        env = {}
        out = g2.graph_copy(g, env)
        g2.output(out)
        g3 = lib.fx.Graph()
        remap = {}
        for n in g.nodes:
            remap[n] = g3.node_copy(n, lambda a: remap[a])
        bad = lib.fx.Graph()
        bx = bad.placeholder("x")
        bad.call_function(lib.neg, (x,))
        with pytest.raises(RuntimeError) as e1:
            bad.lint()
        bad2 = lib.fx.Graph()
        a = bad2.placeholder("a")
        b = bad2.call_function(lib.neg, (a,))
        c = bad2.call_function(lib.neg, (b,))
        b.append(c.prev)  # no-op move
        a.prepend(c)
        with pytest.raises(RuntimeError) as e2:
            bad2.lint()
        results.append((gm.code, str(g), str(g2), str(g3), gm.lin.__class__.__name__, bx.name,
                        str(e1.value).split("\n")[0], str(e2.value).split("\n")[0],
                        [n.format_node() for n in g.nodes]))
    assert results[1] == results[0]


def test_graph_module_submodules_and_deepcopy():
    import copy
    t, d = _both(MLP)
    out = []
    for lib, ns in ((torch, t), (dyngrad, d)):
        gm = lib.fx.symbolic_trace(ns["MLP"]())
        assert gm.add_submodule("extra.inner", lib.nn.Tanh())
        assert not gm.add_submodule("fc1.weight.x", lib.nn.Tanh())
        names_before = [n for n, _ in gm.named_modules()]
        gm.delete_all_unused_submodules()
        names_after = [n for n, _ in gm.named_modules()]
        assert gm.add_submodule("spare", lib.nn.Tanh())
        assert gm.delete_submodule("spare") and not gm.delete_submodule("nope")
        new_graph = copy.deepcopy(gm.graph)
        gm.graph = new_graph  # the setter recompiles
        gm2 = copy.deepcopy(gm)
        out.append((names_before, names_after, gm2.code, gm.code, type(gm2).__name__))
    assert out[1] == out[0]


def test_to_folder_round_trip(tmp_path):
    t, d = _both(MLP)
    dm = d["MLP"]()
    gm = dyngrad.fx.symbolic_trace(dm)
    gm.to_folder(tmp_path / "mlp_folder", "MLPModule")
    sys.path.insert(0, str(tmp_path))
    try:
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep + str(tmp_path))
        code = ("import numpy as np, dyngrad; from dyngrad._script import install_aliases; "
                "install_aliases(); from mlp_folder import MLPModule; m = MLPModule(); "
                "x = dyngrad.ones(2, 4); print(np.round(m(x)[1].detach().numpy(), 4).tolist())")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        expect = np.round(dm(dyngrad.ones(2, 4))[1].detach().numpy(), 4).tolist()
        assert r.stdout.strip() == str(expect)
    finally:
        sys.path.remove(str(tmp_path))


def test_proxy_outside_tracing_and_node_api():
    out = []
    for lib in (torch, dyngrad):
        g = lib.fx.Graph()
        tracer = lib.fx.proxy.GraphAppendingTracer(g)
        x = lib.fx.Proxy(g.placeholder("x"), tracer)
        y = lib.fx.Proxy(g.placeholder("y"), tracer)
        a = lib.cat([x, y])
        b = lib.tanh(a)
        c = lib.neg(b) + lib.add(b, 1)
        d = lib.nn.functional.relu(c)
        e = lib.nn.ReLU()(d)  # a layer called on a Proxy records its functional
        g.output(e.node)
        node = e.node
        out.append((str(g), repr(x), repr(a.node), node.op, node.args[0].name,
                    [u.name for u in a.node.users], node.prev.name, node.next.name,
                    node.kwargs, type(node.kwargs).__name__))
        gm = lib.fx.GraphModule(lib.nn.Module(), g)
        tx = _inputs(2)[0 if lib is torch else 1]
        out[-1] += (np.round(_np(gm(tx, tx)), 5).tolist(),)
    assert out[1] == out[0]


def test_traced_module_untouched_ops_afterwards():
    # tracing swaps the public functions only while it runs
    before = dyngrad.relu
    dyngrad.fx.symbolic_trace(lambda x: dyngrad.relu(x))
    assert dyngrad.relu is before
    assert dyngrad.nn.Module.__call__.__qualname__ == "Module.__call__"
    with pytest.raises(TypeError, match="relu"):
        dyngrad.relu("no")


def test_shape_prop():
    from torch.fx.passes.shape_prop import ShapeProp as TShapeProp
    from dyngrad.fx.passes.shape_prop import ShapeProp as DShapeProp
    src = """
    class TwoLayerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = nn.Linear(10, 5)
            self.linear2 = nn.Linear(5, 3)

        def forward(self, x):
            h = self.linear1(x).clamp(min=0)
            return self.linear2(h), x[None, None].permute(0, 2, 3, 1), x.shape
    """
    t, d = _both(src)
    tg, dg = torch.fx.symbolic_trace(t["TwoLayerNet"]()), dyngrad.fx.symbolic_trace(d["TwoLayerNet"]())
    tx, dx = _inputs(4, 10)
    TShapeProp(tg).propagate(tx)
    DShapeProp(dg).propagate(dx)

    def summary(g):
        def one(m):
            if isinstance(m, tuple) and hasattr(m, "shape"):
                return (tuple(m.shape), str(m.dtype), m.requires_grad, tuple(m.stride),
                        str(m.memory_format).strip("'"), m.is_quantized)
            if isinstance(m, tuple):
                return tuple(one(e) for e in m)
            return m
        return [(n.name, one(n.meta.get("tensor_meta")), n.meta["type"].__name__)
                for n in g.nodes]
    assert summary(dg.graph) == summary(tg.graph)


def test_varargs_autowrap_functions_side_effects_and_param_shapes():
    src = """
    def helper(x, k):
        return x * k

    def clamp_all(x):
        return x.clamp(min=0)

    def f(x, *args, scale=1.0, **kwargs):
        return helper(x, scale) + args[0] + kwargs["extra"]

    def g(x, y):
        clamp_all(x)
        return helper(x, 2) - y

    class P(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 4)

        def forward(self, x):
            w = self.lin.weight
            if w.shape[0] == 4:
                return torch.matmul(x, w.t()) + w.size()[1] + w.dim() + w.numel()
            return x
    """
    t, d = _both(src)
    out = []
    for lib, ns in ((torch, t), (dyngrad, d)):
        gm = lib.fx.symbolic_trace(ns["f"])
        tracer = lib.fx.Tracer(autowrap_functions=(ns["helper"],))
        graph = tracer.trace(ns["g"])
        gm2 = lib.fx.GraphModule(tracer.root, graph)
        before = len(graph.nodes)
        graph.eliminate_dead_code()
        after_plain = len(graph.nodes)
        lib.fx.has_side_effect(ns["helper"])
        p_tracer = lib.fx.Tracer(param_shapes_constant=True)
        p_graph = p_tracer.trace(ns["P"]())
        x = lib.ones(2, 3)
        out.append((gm.code, gm2.code, before, after_plain, str(p_graph),
                    _np(gm(x, 2.0, x, extra=x)).tolist()))
        with pytest.raises(Exception) as e:
            lib.fx.symbolic_trace(ns["P"]())
        out[-1] += (type(e.value).__name__, str(e.value))
    assert out[1] == out[0]


def test_concrete_args_tuple():
    src = """
    def f(x, n, mode):
        if mode == "double":
            return x * n
        return x + n
    """
    t, d = _both(src)
    tg = torch.fx.symbolic_trace(t["f"], concrete_args=(torch.fx.PH, 3, "double"))
    dg = dyngrad.fx.symbolic_trace(d["f"], concrete_args=(dyngrad.fx.PH, 3, "double"))
    assert dg.code == tg.code
    tx, dx = _inputs(2)
    _close(tg(tx, 3, "double"), dg(dx, 3, "double"))
    for lib, ns in ((torch, t), (dyngrad, d)):
        with pytest.raises(RuntimeError, match="Tracing expected 3 arguments but got 2"):
            lib.fx.symbolic_trace(ns["f"], concrete_args=(1, 2))


@pytest.mark.parametrize("layer", ["Linear(3, 4)", "ReLU()", "Flatten()", "Dropout(0.1)",
                                   "GELU()", "MaxPool2d(2)", "AvgPool2d(2)", "LeakyReLU()",
                                   "Identity()", "Embedding(5, 3)", "LayerNorm(3)",
                                   "BatchNorm1d(3)", "Conv2d(1, 2, 3)"])
def test_tracing_through_layers(layer):
    # a tracer with no leaf modules records what each layer's forward does; PyTorch's
    # functionals implemented as torch._C._nn.X or torch.X print here as torch.nn.functional.X
    src = f"""
    class AllThrough(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return False

    layer = nn.{layer}
    """
    t, d = _both(src)
    try:
        tgraph = t["AllThrough"]().trace(t["layer"])
    except Exception as e:
        with pytest.raises(type(e).__base__ if type(e).__name__ == "TraceError" else type(e)) as de:
            d["AllThrough"]().trace(d["layer"])
        assert str(de.value) == str(e)
        return
    dgraph = d["AllThrough"]().trace(d["layer"])

    def norm(nodes):
        return [(op, name, tgt.replace("torch._C._nn.", "torch.nn.functional.")
                 .replace("torch.conv2d", "torch.nn.functional.conv2d")) for op, name, tgt in nodes]
    assert norm(_nodes(dgraph)) == norm(_nodes(tgraph))
    assert [(str(n.args), str(n.kwargs)) for n in dgraph.nodes] == \
        [(str(n.args), str(n.kwargs)) for n in tgraph.nodes]


def test_find_nodes_sorting_boxed_run_dict_root_and_nested_modules():
    import copy
    src = """
    class Inner(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2

    def f(x, y):
        a = torch.relu(x)
        b = torch.relu(y)
        return a + b
    """
    t, d = _both(src)
    out = []
    for lib, ns in ((torch, t), (dyngrad, d)):
        gm = lib.fx.symbolic_trace(ns["f"])
        g = gm.graph
        relus = g.find_nodes(op="call_function", target=lib.relu)
        last = list(g.nodes)[-2]
        with g.inserting_before(relus[0]):
            late = g.call_function(lib.neg, (next(iter(g.nodes)),))
        order = [n.name for n in sorted(list(g.nodes)[::-1])]
        with g.inserting_before(relus[0]):
            late2 = g.call_function(lib.relu, (next(iter(g.nodes)),))
        created = [n.name for n in g.find_nodes(op="call_function", target=lib.relu, sort=False)]
        in_graph = [n.name for n in g.find_nodes(op="call_function", target=lib.relu)]
        with pytest.raises(AssertionError, match="target must not be None for call_function"):
            g.find_nodes(op="call_function")
        g.erase_node(late2)
        g.erase_node(late)
        x = lib.ones(2)
        boxed = _np(lib.fx.Interpreter(gm).boxed_run([x, x])).tolist()
        p = lib.fx.Proxy(last)
        q = copy.deepcopy(p)
        inner = lib.fx.symbolic_trace(ns["Inner"]())
        root = {"sub": inner}
        g2 = lib.fx.Graph()
        ph = g2.placeholder("x")
        g2.output(g2.call_module("sub", (ph,)))
        outer = lib.fx.GraphModule(root, g2)
        outer_traced = lib.fx.symbolic_trace(outer)
        out.append((order, created, in_graph, boxed, type(q).__name__, q.node.name,
                    outer.code, outer.print_readable(print_output=False),
                    outer_traced.code, _np(outer(x)).tolist()))
        with pytest.raises(RuntimeError, match="expected 2 arguments"):
            lib.fx.Interpreter(gm).boxed_run([x])
        with pytest.raises(RuntimeError, match="referenced target sub but that target"):
            lib.fx.GraphModule({}, g2)
    assert out[1] == out[0]


def test_recorded_stack_traces_name_the_users_line():
    # PyTorch 2.13 records its own create_node frame last, so its summaries name proxy.py;
    # dyngrad names the forward's line the node came from
    src = """
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)

        def forward(self, x):
            y = self.lin(x)
            return torch.relu(y) + 1
    """
    _, d = _both(src, name="stackcase")
    tracer = dyngrad.fx.Tracer()
    tracer.record_stack_traces = True
    graph = tracer.trace(d["M"]())
    traces = {n.name: n.stack_trace for n in graph.nodes}
    assert traces["x"] is None and traces["output"] is None
    assert traces["lin"].endswith("in forward\n    y = self.lin(x)")
    assert traces["relu"].endswith("return torch.relu(y) + 1")
    text = dyngrad.fx.GraphModule(tracer.root, graph).print_readable(print_output=False)
    assert "# File: <stackcase>:8 in forward, code: y = self.lin(x)" in text


def test_error_inside_generated_code_shows_the_generated_line(capfd):
    src = """
    def f(x, y):
        a = torch.relu(x)
        b = a @ y
        return b + 1
    """
    t, d = _both(src, name="errcase")
    msgs = []
    for lib, ns in ((torch, t), (dyngrad, d)):
        gm = lib.fx.symbolic_trace(ns["f"])
        with pytest.raises(RuntimeError, match="shapes cannot be multiplied") as e:
            gm(lib.ones(2, 3), lib.ones(2, 3))
        assert e.value.__traceback__ is not None
        err = capfd.readouterr().err
        msgs.append(err[err.index("Call using an FX-traced Module"):])
        assert "<eval_with_key>." in err and " from <errcase>:2 in f" in err
    assert msgs[1] == msgs[0]


RESNET = """
class Block(nn.Module):
    def __init__(self, c, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c * stride, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c * stride)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c * stride, c * stride, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c * stride)
        self.down = nn.Sequential(nn.Conv2d(c, c * stride, 1, stride, bias=False), nn.BatchNorm2d(c * stride)) if stride != 1 else None
    def forward(self, x):
        idt = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.down is not None:
            idt = self.down(x)
        out += idt
        return self.relu(out)
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, padding=1)
        self.layers = nn.ModuleList([Block(4), Block(4, 2)])
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, 10)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
    def forward(self, x):
        x = self.stem(x)
        for l in self.layers:
            x = l(x)
        x = torch.flatten(self.pool(x), 1)
        q = x.unsqueeze(1)
        a, _ = self.attn(q, q, q)
        return F.log_softmax(self.fc(a.squeeze(1)), dim=-1)
"""


def test_residual_blocks_module_list_and_attention():
    t, d = _both(RESNET)
    tm, dm = t["Net"](), d["Net"]()
    _sync(tm, dm)
    tg, dg = torch.fx.symbolic_trace(tm), dyngrad.fx.symbolic_trace(dm)
    assert dg.code == tg.code
    assert str(dg.graph) == str(tg.graph)
    tx, dx = _inputs(2, 3, 8, 8)
    _close(tg(tx), dg(dx))
    tg.eval()
    dg.eval()
    _close(tg(tx), dg(dx))


MODULE_PATH_TRACER = '''
from typing import Any, Callable, Dict, Optional, Tuple


class ModulePathTracer(torch.fx.Tracer):
    current_module_qualified_name : str = ''
    node_to_originating_module : Dict[torch.fx.Node, str] = {}

    def call_module(self, m: torch.nn.Module, forward: Callable[..., Any],
                    args : Tuple[Any, ...], kwargs : Dict[str, Any]) -> Any:
        old_qualname = self.current_module_qualified_name
        try:
            self.current_module_qualified_name = self.path_of_module(m)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.current_module_qualified_name = old_qualname

    def create_proxy(self, kind: str, target: torch.fx.node.Target, args: Tuple[Any, ...],
                     kwargs: Dict[str, Any], name: Optional[str] = None, type_expr: Optional[Any] = None):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        self.node_to_originating_module[proxy.node] = self.current_module_qualified_name
        return proxy
'''


def test_module_path_tracer_from_pytorch_examples():
    # pytorch/examples fx/module_tracer.py's tracer (there run on torchvision's resnet18)
    t, d = _both(RESNET + MODULE_PATH_TRACER)
    out = []
    for ns in (t, d):
        tracer = ns["ModulePathTracer"]()
        graph = tracer.trace(ns["Net"]())
        out.append([(str(n), tracer.node_to_originating_module.get(n)) for n in graph.nodes])
    assert out[1] == out[0]
    assert ("layers_1_down_0", "layers.1.down.0") in out[1]


def test_proxyable_class_meta():
    src = """
    class TensorPair(metaclass=fx.ProxyableClassMeta):
        def __init__(self, left, right):
            self.left, self.right = left, right

        def add(self, other):
            return TensorPair(self.left + other.left, self.right + other.right)

        def mul(self, other):
            return TensorPair(self.left * other.left, self.right * other.right)

    def use_tensor_pair_ctor(x: TensorPair, y: torch.Tensor):
        s = x.add(TensorPair(y, y))
        return s.mul(x)

    const = None

    def with_constant(y):
        return const.add(TensorPair(y, y)).left
    """
    t, d = _both(src)
    for ns, lib in ((t, torch), (d, dyngrad)):
        ns["const"] = ns["TensorPair"](lib.ones(2), lib.ones(2))
    tg = torch.fx.symbolic_trace(t["use_tensor_pair_ctor"])
    dg = dyngrad.fx.symbolic_trace(d["use_tensor_pair_ctor"])
    assert dg.code == tg.code
    tc, dc = torch.fx.symbolic_trace(t["with_constant"]), dyngrad.fx.symbolic_trace(d["with_constant"])
    assert dc.code == tc.code
    tx, dx = _inputs(2)
    _close(tc(tx), dc(dx))
    tp, dp = t["TensorPair"](tx, tx), d["TensorPair"](dx, dx)
    _close(tg(tp, tx).left, dg(dp, dx).left)


def test_type_annotations_in_code_and_graph():
    src = """
    from typing import List, Optional, Tuple

    class M(nn.Module):
        def forward(self, x: torch.Tensor, sizes: List[int], k: int = 2,
                    o: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, int]:
            return x.view(sizes) * k, k

    def f(x: torch.Tensor, s: "int") -> torch.Tensor:
        return x + s
    """
    t, d = _both(src)
    for name, make in (("M", lambda ns: ns["M"]()), ("f", lambda ns: ns["f"])):
        tg, dg = torch.fx.symbolic_trace(make(t)), dyngrad.fx.symbolic_trace(make(d))
        assert dg.code == tg.code
        assert str(dg.graph) == str(tg.graph)
    tx, dx = _inputs(2, 3)
    _close(torch.fx.symbolic_trace(t["M"]())(tx, [3, 2]), dyngrad.fx.symbolic_trace(d["M"]())(dx, [3, 2]))


def test_node_api_uses_and_immutable_arguments():
    src = """
    def f(x, y):
        a = torch.cat([x, y])
        b = a + x
        c = b * a
        return c, a
    """
    t, d = _both(src)
    out = []
    for lib, ns in ((torch, t), (dyngrad, d)):
        log = []
        gm = lib.fx.symbolic_trace(ns["f"])
        g = gm.graph
        n = {node.name: node for node in g.nodes}
        log.append(str((n["add"].all_input_nodes, list(n["cat"].users), n["add"].prev,
                        n["add"].next)))
        r = n["cat"].replace_all_uses_with(n["x"], delete_user_cb=lambda u: u.name != "mul")
        log.append(str((r, list(n["cat"].users), n["add"].args)))
        n["mul"].replace_input_with(n["cat"], n["y"])
        n["mul"].insert_arg(2, 5)
        n["add"].update_kwarg("alpha", 2)
        log.append(str((n["mul"].args, n["add"].kwargs)))
        for mutate in (lambda: n["cat"].args[0].append(3), lambda: n["add"].kwargs.update(z=1)):
            with pytest.raises(TypeError) as e:
                mutate()
            log.append(str(e.value))
        n["x"].meta["k"] = 1
        with g.inserting_after(n["x"]):
            m = g.call_function(lib.neg, (n["x"],))
        n["x"].replace_all_uses_with(m, delete_user_cb=lambda u: u is not m)
        with pytest.raises(AssertionError, match="already has .meta keys"):
            n["y"].meta["q"] = 2
            n["x"].replace_all_uses_with(n["y"], propagate_meta=True)
        log.append(str((m.meta, [str(u) for u in n["x"].users], str(g))))
        for bad in (lambda: g.create_node("call_function", "notcallable"),
                    lambda: g.create_node("call_method", len)):
            with pytest.raises(ValueError) as e:
                bad()
            log.append(str(e.value).split("]")[-1])
        with pytest.warns(UserWarning, match="on an already erased node"):
            g.erase_node(n["output"])
            g.erase_node(n["output"])
        out.append(log)
    assert out[1] == out[0]


def test_dtype_device_and_special_float_constants():
    src = """
    def f(x):
        a = x.to(torch.float64) + torch.ones(2, dtype=torch.float64, device=torch.device('cpu'))
        b = torch.zeros_like(x, dtype=torch.int64)
        c = torch.full((2,), float('inf')) + x.new_zeros(2) + float('nan') * 0
        d = torch.arange(2, device=x.device)
        return a, b, c, d, x.type(torch.float16).float()
    """
    t, d = _both(src)
    tg, dg = torch.fx.symbolic_trace(t["f"]), dyngrad.fx.symbolic_trace(d["f"])
    assert dg.code == tg.code
    assert [str(v.dtype) for v in dg(dyngrad.ones(2))] == [str(v.dtype) for v in tg(torch.ones(2))]
