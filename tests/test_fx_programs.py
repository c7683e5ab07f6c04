"""The torch.fx API paths of pytorch/examples' fx folder, run side by side on PyTorch and on
dyngrad: custom tracers (leaf modules, create_node/create_proxy/call_module/trace overrides),
inlining with Proxies, graph inversion, wrapped primitive libraries, graphs built from
Proxies, op replacement, subgraph rewriting, wrapping an output dynamically and lowering a
graph to an instruction list. Each program is run with ``torch`` bound to PyTorch and then to
dyngrad (``import torch`` inside resolving to dyngrad); what it prints must be the same."""
from __future__ import annotations

import contextlib
import io
import re

import pytest

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402,F401,F811
import dyngrad  # noqa: E402
import dyngrad.fx  # noqa: E402,F401
from tests.twin import ADDR, same_program_output  # noqa: E402



def _same_output(src: str, name: str = "fxprog") -> tuple[str, dict, dict]:
    """Run ``src`` on both libraries and check they print the same; dyngrad's output and
    both namespaces."""
    return same_program_output(src, name)


def _tabular(graph) -> str:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        graph.print_tabular()
    return ADDR.sub(" at 0x?", buf.getvalue())


def _cells(table: str) -> list[list[str]]:
    """A printed table's rows as cells (columns are two or more spaces apart)."""
    return [re.split(r"\s{2,}", line.strip()) for line in table.splitlines()
            if line.strip() and not set(line) <= {"-", " "}]


def _tabulate_available() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


# weights set from exact binary fractions, so both libraries start from the same values
SET_WEIGHTS = """
def set_weights(m):
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            n = p.numel()
            p.copy_(((torch.arange(n, dtype=torch.float32) * 7 + i) % 13 - 6).reshape(p.shape) / 16)
    return m
"""


LEAF_TRACERS = """
import torch
from torch.fx import symbolic_trace, Tracer, Graph, GraphModule, Node

class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.ReLU()
        self.gate = torch.nn.ELU(alpha=0.5)

    def forward(self, x):
        return self.act(x) * self.gate(x)

class TraceThroughActivations(Tracer):
    def is_leaf_module(self, m, qualname):
        if isinstance(m, (torch.nn.ReLU, torch.nn.ELU)):
            return False
        return super().is_leaf_module(m, qualname)

class BlockAsLeaf(Tracer):
    def is_leaf_module(self, m, qualname):
        return isinstance(m, Block) or super().is_leaf_module(m, qualname)

class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        return self.block(self.lin(x)) - x

class Tagging(Tracer):
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        n = super().create_node(kind, target, args, kwargs, name)
        n.tag = kind.upper()
        return n

default = symbolic_trace(Block())
through = TraceThroughActivations().trace(Block())
leaf = BlockAsLeaf().trace(Outer())
tagged = Tagging().trace(Outer())
print(default.code)
print(GraphModule(Block(), through).code)
print(through)
print(GraphModule(Outer(), leaf).code)
print([(n.name, n.tag) for n in tagged.nodes])
x = torch.tensor([[1.0, -2.0], [0.5, 3.0]])
print(GraphModule(Block(), through)(x))
"""


def test_leaf_module_and_create_node_tracers():
    out, t, d = _same_output(LEAF_TRACERS)
    assert "torch.relu" not in out and "torch.nn.functional.relu(x, inplace = False)" in out
    assert "block = self.block(lin)" in out and "('sub', 'CALL_FUNCTION')" in out
    # print_tabular: the same rows as PyTorch's, laid out as tabulate's simple table
    for key in ("default", "through", "leaf"):
        tg, dg = t[key], d[key]
        tg = tg.graph if hasattr(tg, "graph") else tg
        dg = dg.graph if hasattr(dg, "graph") else dg
        rows = [[n.op, n.name, str(n.target), str(n.args), str(n.kwargs)] for n in tg.nodes]
        expect = [["opcode", "name", "target", "args", "kwargs"]] + [
            [ADDR.sub(" at 0x?", c) for c in r] for r in rows]
        assert _cells(_tabular(dg)) == expect
        if _tabulate_available():
            assert _tabular(dg) == _tabular(tg)
    assert _tabular(d["default"].graph) == (
        "opcode         name    target                   args         kwargs\n"
        "-------------  ------  -----------------------  -----------  --------\n"
        "placeholder    x       x                        ()           {}\n"
        "call_module    act     act                      (x,)         {}\n"
        "call_module    gate    gate                     (x,)         {}\n"
        "call_function  mul     <built-in function mul>  (act, gate)  {}\n"
        "output         output  output                   (mul,)       {}\n")


INLINE_MODULE_CALL = """
import torch
from torch.fx import Proxy, symbolic_trace
from torch.fx.node import map_arg

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.act = torch.nn.LeakyReLU(0.25)
        self.soft = torch.nn.ELU(alpha=2.0)

    def forward(self, x):
        return self.soft(self.act(x) * 2.0) + self.act(x)

m = symbolic_trace(M())
print(m.code)
tracer = torch.fx.proxy.GraphAppendingTracer(m.graph)
for node in list(m.graph.nodes):
    if node.op == "call_module" and node.target in ("act", "soft"):
        with m.graph.inserting_before(node):
            proxy_args = map_arg(node.args, lambda n: Proxy(n, tracer))
            proxy_kwargs = map_arg(node.kwargs, lambda n: Proxy(n, tracer))
            inlined = getattr(m, node.target).forward(*proxy_args, **proxy_kwargs)
            node.replace_all_uses_with(inlined.node)
            m.graph.erase_node(node)
m.graph.lint()
m.recompile()
print(m.code)
print(m.graph)
x = torch.tensor([[-2.0, -0.5, 0.0, 1.5]])
print(m(x))
print(torch.allclose(m(x), M()(x)))
"""


def test_inline_module_calls_with_proxies():
    out, _, _ = _same_output(INLINE_MODULE_CALL)
    assert "leaky_relu = torch.nn.functional.leaky_relu(x, negative_slope = 0.25" in out
    assert "elu = torch.nn.functional.elu(mul, alpha = 2.0, inplace = False)" in out
    assert out.rstrip().endswith("True")


INVERT = """
import torch
import torch.fx as fx

pairs = [(torch.exp, torch.log), (torch.sigmoid, torch.logit), (torch.sinh, torch.asinh)]
inverse = {}
for a, b in pairs:
    inverse[a], inverse[b] = b, a

def invert(fn):
    traced = fx.symbolic_trace(fn)
    g = fx.Graph()
    env = {}
    for node in reversed(traced.graph.nodes):
        if node.op == "call_function":
            new = g.call_function(inverse[node.target], (env[node.name],))
            env[node.args[0].name] = new
        elif node.op == "output":
            env[node.args[0].name] = g.placeholder(node.name)
        elif node.op == "placeholder":
            g.output(env[node.name])
    g.lint()
    return fx.GraphModule(traced, g)

def f(x):
    return torch.sinh(torch.sigmoid(torch.exp(x)))

inv = invert(f)
print(inv.code)
print(inv.graph)
x = torch.tensor([-1.0, -0.25, 0.5, 1.0], dtype=torch.float64)
print(torch.allclose(inv(f(x)), x), torch.allclose(f(inv(f(x))), f(x)))
"""


def test_inverting_a_graph_node_by_node():
    out, t, d = _same_output(INVERT)
    assert "def forward(self, output):" in out and "torch.log(logit)" in out
    assert out.rstrip().endswith("True True")


RESNET = """
import torch
import torch.fx
from torch import nn

class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)

class SmallResNet(nn.Module):
    # resnet18's layout (stem, four stages of two blocks, pooling, classifier), narrower
    def __init__(self, widths=(4, 8, 8, 16), classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin = widths[0]
        for i, w in enumerate(widths):
            setattr(self, f"layer{i + 1}",
                    nn.Sequential(BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w)))
            cin = w
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)

class ModulePathTracer(torch.fx.Tracer):
    current_module_qualified_name = ""
    node_to_originating_module = {}

    def call_module(self, m, forward, args, kwargs):
        old = self.current_module_qualified_name
        try:
            self.current_module_qualified_name = self.path_of_module(m)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.current_module_qualified_name = old

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        self.node_to_originating_module[proxy.node] = self.current_module_qualified_name
        return proxy
""" + SET_WEIGHTS + """
net = set_weights(SmallResNet()).eval()
tracer = ModulePathTracer()
graph = tracer.trace(net)
for node in graph.nodes:
    print("Node", node, "is from module", tracer.node_to_originating_module.get(node))
gm = torch.fx.GraphModule(tracer.root, graph)
print(gm.code)
x = (torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).reshape(2, 3, 32, 32) % 17 - 8) / 8
print(torch.allclose(gm(x), net(x), atol=1e-5), [round(v, 3) for v in gm(x)[0].tolist()])
"""


def test_module_path_tracer_on_a_resnet():
    out, t, d = _same_output(RESNET)
    assert "Node add is from module layer1.0\n" in out
    assert "Node layer2_0_downsample_1 is from module layer2.0.downsample.1\n" in out
    assert "Node flatten is from module \n" in out and "Node output is from module None" in out
    assert "True" in out.splitlines()[-1]


PRIMITIVES = """
import torch
import torch.fx

def sigmoid_lowp(x):
    x = x.float()
    x = x.sigmoid()
    return x.half()

torch.fx.wrap(sigmoid_lowp)

def add_lowp(a, b):
    a, b = a.float(), b.float()
    return (a + b).half()

torch.fx.wrap(add_lowp)

class Foo(torch.nn.Module):
    def forward(self, x, y):
        return add_lowp(sigmoid_lowp(x), sigmoid_lowp(y))

traced = torch.fx.symbolic_trace(Foo())
print(traced.code)

def inline_call(n):
    tracer = torch.fx.proxy.GraphAppendingTracer(n.graph)
    with n.graph.inserting_before(n):
        args = torch.fx.node.map_arg(n.args, lambda a: torch.fx.Proxy(a, tracer))
        kwargs = torch.fx.node.map_arg(n.kwargs, lambda a: torch.fx.Proxy(a, tracer))
        out = n.target(*args, **kwargs)
        n.replace_all_uses_with(out.node)
        n.graph.erase_node(n)

for node in list(traced.graph.nodes):
    if node.op == "call_function" and node.target is sigmoid_lowp:
        inline_call(node)
traced.recompile()
print(traced.code)

class InliningTracer(torch.fx.Tracer):
    FNS_TO_INLINE = [add_lowp]

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        if kind == "call_function" and target in self.FNS_TO_INLINE:
            tracer = torch.fx.proxy.GraphAppendingTracer(self.graph)
            proxy_args = torch.fx.node.map_arg(args, lambda a: torch.fx.Proxy(a, tracer))
            proxy_kwargs = torch.fx.node.map_arg(kwargs, lambda a: torch.fx.Proxy(a, tracer))
            return target(*proxy_args, **proxy_kwargs).node
        return super().create_node(kind, target, args, kwargs, name, type_expr)

f = Foo()
module = torch.fx.GraphModule(f, InliningTracer().trace(f))
print(module.code)
x = torch.tensor([0.5, -1.0, 2.0]).half()
y = torch.tensor([1.0, 0.0, -3.0]).half()
print(module(x, y), traced(x, y), f(x, y))
"""


def test_wrapped_primitives_inlined_after_and_during_tracing():
    out, _, _ = _same_output(PRIMITIVES, name="lowp")
    assert "sigmoid_lowp = lowp_sigmoid_lowp(x);  x = None" in out
    assert "add_lowp = lowp_add_lowp(half, half_1)" in out
    assert "add = float_1 + float_2;  float_1 = float_2 = None" in out
    assert "dtype=torch.float16" in out


REGION_TRACER = """
import torch
import torch.fx

log = []

@torch.fx.node.has_side_effect
def region_enter(name):
    log.append(("enter", name))
    return name

@torch.fx.node.has_side_effect
def region_exit(handle):
    log.append(("exit", handle))

class region:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

class Foo(torch.nn.Module):
    def forward(self, x):
        with region("foo"):
            return torch.relu(x) * 2

class RegionTracer(torch.fx.Tracer):
    def trace(self, root, concrete_args=None):
        enter, leave = region.__enter__, region.__exit__
        tracer = self

        def traced_enter(r):
            r._handle = tracer.create_proxy("call_function", region_enter, (r.name,), {})
            return r

        def traced_exit(r, *exc):
            tracer.create_proxy("call_function", region_exit, (r._handle,), {})
            return False

        region.__enter__, region.__exit__ = traced_enter, traced_exit
        try:
            return super().trace(root, concrete_args)
        finally:
            region.__enter__, region.__exit__ = enter, leave

plain = torch.fx.symbolic_trace(Foo())
print(plain.code)
pt = RegionTracer()
graph = pt.trace(Foo())
gm = torch.fx.GraphModule(pt.root, graph)
print(gm.code)
print(gm.graph.eliminate_dead_code(), [n.op for n in gm.graph.nodes])
gm.recompile()
print(gm(torch.tensor([-1.0, 3.0])), log)
"""


def test_tracer_trace_override_emitting_region_calls():
    # the path of profiling_tracer.py (there with torch.autograd.profiler.record_function)
    out, _, _ = _same_output(REGION_TRACER, name="regions")
    assert "region_enter = regions_region_enter('foo')" in out
    assert "False" in out and "[('enter', 'foo'), ('exit', 'foo')]" in out


PROXY_GRAPH = """
import torch
from torch.fx import Proxy, Graph, GraphModule

graph = Graph()
tracer = torch.fx.proxy.GraphAppendingTracer(graph)
x = Proxy(graph.placeholder("x"), tracer)
y = Proxy(graph.placeholder("y"), tracer)
a = torch.cat([x, y])
b = torch.tanh(a)
c = torch.neg(b)
unused = torch.add(b, c)
d = c.clamp(min=-0.5) @ a.t() + x.shape[0]
graph.output((c.node, d.node))
mod = GraphModule(torch.nn.Module(), graph)
print(mod.code)
print(mod.graph)
print(mod(torch.tensor([[1.0, 0.5]]), torch.tensor([[-2.0, 0.25]])))
print(mod.graph.eliminate_dead_code())
mod.recompile()
print(mod.code)
"""


def test_graph_built_from_proxies():
    out, _, _ = _same_output(PROXY_GRAPH)
    assert "add = torch.add(tanh, neg);  tanh = add = None" in out


REPLACE_OP = """
import torch
from torch.fx import symbolic_trace
import operator

class M(torch.nn.Module):
    def forward(self, x, y):
        return x + y, torch.add(x, y), x.add(y), x * y

traced = symbolic_trace(M())
patterns = {operator.add, torch.add, "add"}
for n in list(traced.graph.nodes):
    if any(n.target == p for p in patterns):
        with traced.graph.inserting_after(n):
            new_node = traced.graph.call_function(torch.bitwise_xor, n.args, n.kwargs)
            n.replace_all_uses_with(new_node)
        traced.graph.erase_node(n)
traced.recompile()
print(traced.code)
x, y = torch.tensor([1, 2, 3, 12]), torch.tensor([3, 3, 5, 10])
print(traced(x, y))
"""


def test_replacing_an_op_everywhere():
    out, _, _ = _same_output(REPLACE_OP)
    assert out.count("torch.bitwise_xor(") == 3


SUBGRAPH = """
import torch
from torch.fx import symbolic_trace, replace_pattern

class M(torch.nn.Module):
    def forward(self, x, w1, w2):
        m1 = torch.cat([w1.relu(), w2]).sum()
        m2 = torch.cat([w1.relu(), w2]).sum()
        m3 = torch.cat([w2.relu(), w1]).mean()
        return x + torch.max(m1) + torch.max(m2) + m3

traced = symbolic_trace(M())

def pattern(a1, a2):
    return torch.cat([a1.relu(), a2]).sum()

def replacement(a1, a2):
    return torch.stack([a1, a2]).abs().sum()

matches = replace_pattern(traced, pattern, replacement)
print(traced.code)
print(len(matches), [(m.anchor.name, sorted((k.name, v.name) for k, v in m.nodes_map.items()))
                     for m in matches])
x, w1, w2 = torch.tensor([1.0, 2.0]), torch.tensor([-1.0, 3.0]), torch.tensor([0.5, -0.5])
print(traced(x, w1, w2))
"""


def test_replace_pattern_basic_use():
    out, _, _ = _same_output(SUBGRAPH)
    assert out.count("torch.stack(") == 2 and "mean" in out


WRAP_OUTPUT = """
from enum import Enum, auto
import torch
from torch.fx import GraphModule, Node, Proxy, symbolic_trace
class M(torch.nn.Module):
    def forward(self, x, y):
        return torch.cat([x, y])

class Act(Enum):
    RELU = auto()
    LEAKY_RELU = auto()
    ELU = auto()

activations = {Act.RELU: torch.nn.ReLU(), Act.LEAKY_RELU: torch.nn.LeakyReLU(),
               Act.ELU: torch.nn.ELU(0.75)}

def wrap_output(m, fn):
    output_node = None
    for n in reversed(m.graph.nodes):
        if n.op == "output":
            output_node = n
            break
    wrap_node = output_node.all_input_nodes[0]
    wrap_proxy = Proxy(wrap_node)
    impl = symbolic_trace(activations[fn])
    with m.graph.inserting_after(wrap_node):
        out = impl(wrap_proxy)
        output_node.args = (out.node,)
    m.recompile()

x = torch.tensor([[1.0, -2.0, 0.5]])
y = torch.tensor([[-0.25, 4.0, -8.0]])
for fn in Act:
    traced = symbolic_trace(M())
    before = traced(x, y)
    wrap_output(traced, fn)
    print(traced.code)
    print(traced(x, y), torch.equal(traced(x, y), activations[fn](before)))
"""


def test_wrapping_the_output_dynamically():
    out, _, _ = _same_output(WRAP_OUTPUT)
    assert out.count("True") == 3
    assert "leaky_relu = torch.nn.functional.leaky_relu(cat, negative_slope = 0.01" in out


LOWERING = """
import numbers
import operator
import torch
import torch.fx

class ElementwiseInterpreter:
    # stands for the C++ class of native_interpreter/: runs (op, inputs, output) triples
    def __init__(self):
        self.constants, self.instructions = {}, []

    def add_constant(self, name, value):
        self.constants[name] = value

    def set_input_names(self, names):
        self.input_names = list(names)

    def set_instructions(self, instructions):
        self.instructions = list(instructions)

    def set_output_name(self, name):
        self.output_name = name

    def __call__(self, inputs):
        env = dict(self.constants)
        env.update(zip(self.input_names, inputs))
        for op, args, out in self.instructions:
            env[out] = getattr(torch, op)(*[env[a] for a in args])
        return env[self.output_name]

def lower(orig):
    mod = torch.fx.symbolic_trace(orig)
    instructions, constants, names, output_node = [], {}, [], None
    target_to_name = {operator.add: "add", operator.mul: "mul"}
    for n in mod.graph.nodes:
        assert len(n.kwargs) == 0
        if n.op == "placeholder":
            names.append(n.target)
        elif n.op == "call_function":
            arg_names = []
            for arg in n.args:
                if not isinstance(arg, torch.fx.Node):
                    name = f"constant_{len(constants)}"
                    constants[name] = torch.Tensor([arg] if isinstance(arg, numbers.Number) else arg)
                    arg_names.append(name)
                else:
                    arg_names.append(arg.name)
            instructions.append((target_to_name[n.target], arg_names, n.name))
        elif n.op == "output":
            output_node = n
    interp = ElementwiseInterpreter()
    for k, v in constants.items():
        interp.add_constant(k, v)
    interp.set_input_names(names)
    interp.set_instructions(instructions)
    interp.set_output_name(output_node.args[0].name)

    class Wrapper(torch.nn.Module):
        def __init__(self, interpreter):
            super().__init__()
            self.interpreter = interpreter

    wrapper = Wrapper(interp)
    graph = torch.fx.Graph()
    phs = [graph.create_node("placeholder", name) for name in names]
    interp_node = graph.create_node("get_attr", "interpreter")
    out = graph.create_node(op="call_method", target="__call__", args=(interp_node, phs))
    graph.output(out)
    graph.lint()
    print(instructions, sorted(constants))
    return torch.fx.GraphModule(wrapper, graph)

class Elementwise(torch.nn.Module):
    def forward(self, x, y):
        return x * y + y * 3.0 + 1

lowered = lower(Elementwise())
print(lowered.code)
print(lowered.graph)
x = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4
y = torch.ones(2, 3) - x
print(lowered(x, y), torch.allclose(lowered(x, y), Elementwise()(x, y)))
"""


def test_lowering_a_graph_to_an_instruction_list():
    out, _, _ = _same_output(LOWERING)
    assert "interpreter = self.interpreter" in out
    assert "call = interpreter.__call__([x, y]);  interpreter = x = y = None" in out
    assert out.rstrip().endswith("True")


INTERPRETER_LISTS = """
import torch
import torch.fx

class M(torch.nn.Module):
    def forward(self, x):
        a = torch.cat([x, x * 2], dim=0)
        b = torch.stack([a, a]).view([2, -1])
        c = b[[0, 1]].permute([1, 0]).reshape([4, -1])
        d = c[[0, 2], [1, 0]] + x.new_tensor([1.0, 2.0])
        e = torch.tensor([[1.0, 2.0]]) + d.expand([3, 2])
        f = x.repeat([1, 2]).sum(dim=[0, 1], keepdim=False)
        g = torch.einsum("ij->j", e) if False else e.sum([0])
        h = torch.nn.functional.pad(x, [1, 1]) + 0
        return {"c": c, "d": d, "e": e, "f": f, "g": g, "h": h}
gm = torch.fx.symbolic_trace(M())
x = torch.tensor([[1.0, -2.0], [0.5, 3.0]])
r = torch.fx.Interpreter(gm).run(x)
for k, v in r.items():
    print(k, v)
print(type(r).__name__)
t = torch.fx.Transformer(gm).transform()
print(t.code == gm.code)
print(all(torch.equal(t(x)[k], v) for k, v in r.items()))
"""


def test_interpreter_passes_the_graphs_immutable_lists_to_operations():
    # cat/stack/view/permute/indexing/new_tensor/expand/sum/pad given the graph's
    # immutable_list arguments by Interpreter, and Transformer's retrace of them
    out, _, _ = _same_output(INTERPRETER_LISTS)
    assert "immutable_dict\nTrue\nTrue" in out
