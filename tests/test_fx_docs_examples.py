"""The examples of PyTorch's torch.fx documentation (Writing Transformations, Proxy/Retracing,
the Interpreter Pattern, Debugging, Limitations of Symbolic Tracing) and the Graph, Node,
GraphModule, Tracer, Interpreter and subgraph-rewriter calls around them, each program run with
``torch`` bound to PyTorch and then to dyngrad: what it prints must be the same."""
from __future__ import annotations

import os
import types
import warnings

import pytest

torch = pytest.importorskip("torch")
import torch.fx  # noqa: E402,F401,F811
import dyngrad  # noqa: E402
import dyngrad.fx  # noqa: E402,F401
from tests.twin import run_program, same_program_output  # noqa: E402



def _same_output(src: str, name: str = "fxdoc") -> str:
    """Run ``src`` on both libraries and check they print the same; dyngrad's output."""
    return same_program_output(src, name)[0]


DIRECT_EDITING = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

class M(torch.nn.Module):
    def forward(self, x, y):
        return torch.add(x, y)

def transform(m, tracer_class=fx.Tracer):
    graph = tracer_class().trace(m)
    for node in graph.nodes:
        if node.op == 'call_function':
            if node.target == torch.add:
                node.target = torch.mul
    graph.lint()
    return fx.GraphModule(m, graph)
g = transform(M())
print(g.code)
print(g(torch.ones(2) * 3, torch.ones(2) * 4))
traced = fx.symbolic_trace(M())
for node in list(traced.graph.nodes):
    if node.op == 'call_function':
        with traced.graph.inserting_after(node):
            new_node = traced.graph.call_function(torch.relu, args=(node,))
            node.replace_all_uses_with(new_node, delete_user_cb=lambda user: user is not new_node)
print(traced.graph)
traced.graph.lint()
traced.recompile()
print(traced.code)
print(traced(torch.tensor([1., -2.]), torch.tensor([-3., 1.])))
"""


def test_debugging_section_tabular_text():
    # the table the Debugging section shows for ``x + y``, the same with or without tabulate
    d_out = run_program("""
import torch
import torch.fx

class M(torch.nn.Module):
    def forward(self, x, y):
        return x + y

torch.fx.symbolic_trace(M()).graph.print_tabular()
""", dyngrad, "fxdoc")[0]
    assert d_out == (
        "opcode         name    target                   args    kwargs\n"
        "-------------  ------  -----------------------  ------  --------\n"
        "placeholder    x       x                        ()      {}\n"
        "placeholder    y       y                        ()      {}\n"
        "call_function  add     <built-in function add>  (x, y)  {}\n"
        "output         output  output                   (add,)  {}\n")


def test_writing_transformations_direct_graph_manipulation():
    # node.target swapped, inserting_after + replace_all_uses_with, lint, recompile
    out = _same_output(DIRECT_EDITING)
    assert "add = torch.mul(x, y);  x = y = None" in out
    assert "relu = torch.relu(add)" in out

DECOMPOSE = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

def relu_decomposition(x):
    return (x > 0) * x

decomposition_rules = {}
decomposition_rules[F.relu] = relu_decomposition

def decompose(model, tracer_class=fx.Tracer):
    graph = tracer_class().trace(model)
    new_graph = fx.Graph()
    env = {}
    tracer = torch.fx.proxy.GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == 'call_function' and node.target in decomposition_rules:
            proxy_args = [
                fx.Proxy(env[x.name], tracer) if isinstance(x, fx.Node) else x for x in node.args]
            output_proxy = decomposition_rules[node.target](*proxy_args)
            new_node = output_proxy.node
            env[node.name] = new_node
        else:
            new_node = new_graph.node_copy(node, lambda x: env[x.name])
            env[node.name] = new_node
    return fx.GraphModule(model, new_graph)

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
    def forward(self, x):
        return F.relu(self.lin(x)) + F.relu(x)
m = M()
d = decompose(m)
print(d.code)
print(d.graph)
x = torch.tensor([[1., -2., 3.]])
print(torch.allclose(d(x), m(x)))
"""


def test_proxy_retracing_decomposition():
    # a decomposition rule run on Proxies of a GraphAppendingTracer, node_copy for the rest
    out = _same_output(DECOMPOSE)
    assert "gt = lin > 0" in out and "mul = gt * lin" in out
    assert out.rstrip().endswith("True")

SHAPE_PROP = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from torch.fx.node import Node
from typing import Dict

class ShapeProp:
    def __init__(self, mod):
        self.mod = mod
        self.graph = mod.graph
        self.modules = dict(self.mod.named_modules())

    def propagate(self, *args):
        args_iter = iter(args)
        env : Dict[str, Node] = {}

        def load_arg(a):
            return torch.fx.graph.map_arg(a, lambda n: env[n.name])

        def fetch_attr(target : str):
            target_atoms = target.split('.')
            attr_itr = self.mod
            for i, atom in enumerate(target_atoms):
                if not hasattr(attr_itr, atom):
                    raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target_atoms[:i])}")
                attr_itr = getattr(attr_itr, atom)
            return attr_itr

        for node in self.graph.nodes:
            if node.op == 'placeholder':
                result = next(args_iter)
            elif node.op == 'get_attr':
                result = fetch_attr(node.target)
            elif node.op == 'call_function':
                result = node.target(*load_arg(node.args), **load_arg(node.kwargs))
            elif node.op == 'call_method':
                self_obj, *args = load_arg(node.args)
                kwargs = load_arg(node.kwargs)
                result = getattr(self_obj, node.target)(*args, **kwargs)
            elif node.op == 'call_module':
                result = self.modules[node.target](*load_arg(node.args), **load_arg(node.kwargs))
            if isinstance(result, torch.Tensor):
                node.shape = result.shape
                node.dtype = result.dtype
            env[node.name] = result
        return load_arg(self.graph.result)

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.param = torch.nn.Parameter(torch.rand(3, 4))
        self.linear = torch.nn.Linear(4, 5)
    def forward(self, x):
        return self.linear(x + self.param).relu().sum(dim=-1).to(torch.float64)
gm = fx.symbolic_trace(M())
try:
    ShapeProp(gm).propagate(torch.randn(3, 4))
except AttributeError as e:
    print("AttributeError", e)
for n in gm.graph.nodes:
    print(n.name, getattr(n, 'shape', None), getattr(n, 'dtype', None))
from torch.fx.passes.shape_prop import ShapeProp as SP
SP(gm).propagate(torch.randn(3, 4))
for n in gm.graph.nodes:
    tm = n.meta.get('tensor_meta')
    print(n.name, n.meta['type'].__name__, tm.shape, tm.dtype, tm.requires_grad, tm.stride, tm.memory_format, tm.is_quantized, tm.qparams)
"""


def test_interpreter_pattern_shape_propagation():
    # the docs' hand-written ShapeProp (map_arg, fetch_attr) and torch.fx.passes.shape_prop
    out = _same_output(SHAPE_PROP)
    assert "to torch.Size([3]) torch.float64" in out
    assert "param Parameter torch.Size([3, 4]) torch.float32 True (4, 1)" in out

DEBUGGING = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from torch.fx import symbolic_trace
class M(torch.nn.Module):
    def forward(self, x, y):
        return x + y
m = M()
traced = symbolic_trace(m)
print(traced)
print(traced.graph)
def transform_graph(module, tracer_class=fx.Tracer):
    g = tracer_class().trace(module)
    return fx.GraphModule(module, g)
transformed = transform_graph(traced)
print(transformed)
def func_to_trace(x):
    if x.sum() > 0:
        return torch.relu(x)
    else:
        return torch.neg(x)
try:
    torch.fx.symbolic_trace(func_to_trace)
except Exception as e:
    print(type(e).__name__, e)
def f(x, flag):
    if flag: return x
    else: return x*2
try:
    fx.symbolic_trace(f)
except Exception as e:
    print(type(e).__name__, e)
g = fx.symbolic_trace(f, concrete_args={'flag': True})
print(g.code)
g = fx.symbolic_trace(f, concrete_args={'flag': False})
print(g.code)
print(g(torch.ones(2), False))
class MyModule(torch.nn.Module):
    def __init__(self, do_activation : bool = False):
        super().__init__()
        self.do_activation = do_activation
        self.linear = torch.nn.Linear(512, 512)
    def forward(self, x):
        x = self.linear(x)
        if self.do_activation:
            x = torch.relu(x)
        return x
print(torch.fx.symbolic_trace(MyModule(False)).code)
print(torch.fx.symbolic_trace(MyModule(True)).code)
"""


def test_debugging_prints_and_tracing_limits():
    # print(traced), graph, print_tabular, retracing a GraphModule, control-flow errors, concrete_args
    out = _same_output(DEBUGGING)
    assert "TraceError symbolically traced variables cannot be used as inputs to control flow" in out
    assert "_assert = torch._assert(eq, 'flag has been specialized to have value True but got another value')" in out

WRAP_AND_LEAVES = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from math import sqrt
def normalize(x):
    return x / sqrt(len(x))
try:
    torch.fx.symbolic_trace(normalize)
except Exception as e:
    print(type(e).__name__, e)
torch.fx.wrap('len')
torch.fx.wrap('sqrt')
traced = torch.fx.symbolic_trace(normalize)
print(traced.code)
print(traced(torch.ones(4, 2)))
@torch.fx.wrap
def torch_randn(x, shape):
    return torch.randn(shape)
def f(x):
    return x + torch_randn(x, 5)
print(fx.symbolic_trace(f).code)
class MyCustomTracer(torch.fx.Tracer):
    pass
class MyModule(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + torch.ones(3, 4)
mod = MyModule()
traced_graph = MyCustomTracer().trace(mod)
traced = torch.fx.GraphModule(mod, traced_graph)
print(traced.code)
print(traced_graph)
print(traced(torch.ones(3, 4)))
class MySpecialSubmodule(torch.nn.Module):
    def forward(self, x):
        return torch.neg(x)
class MyModule2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)
        self.submod = MySpecialSubmodule()
    def forward(self, x):
        return self.submod(self.linear(x))
traced = torch.fx.symbolic_trace(MyModule2())
print(traced.code)
print(traced)
class DropoutRepro(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, training=self.training)
traced = torch.fx.symbolic_trace(DropoutRepro())
print(traced.code)
class DropoutRepro2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout()
    def forward(self, x):
        return self.drop(x)
traced = torch.fx.symbolic_trace(DropoutRepro2())
print(traced.code)
traced.eval()
x = torch.randn(5, 3)
torch.testing.assert_close(traced(x), x)
print(traced)
"""


def test_wrap_custom_tracer_leaf_modules_and_training_flag():
    # wrap('len')/wrap('sqrt'), @wrap, a Tracer subclass, default leaf modules, dropout's training flag
    out = _same_output(WRAP_AND_LEAVES)
    assert "sqrt = math_sqrt(len_1);  len_1 = None" in out
    assert "dropout = torch.nn.functional.dropout(x, p = 0.5, training = True, inplace = False)" in out

INTERPRETERS = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from torch.fx import Interpreter, Transformer, symbolic_trace, Proxy, Node, Graph, GraphModule
import operator
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.register_buffer("b", torch.arange(2.))
    def forward(self, x, *, scale=2.0):
        y = torch.neg(self.lin(x)) + self.b
        z = y.sigmoid() * scale
        return {"y": y, "z": [z, torch.relu(z)]}
m = M()
with torch.no_grad():
    m.lin.weight.copy_(torch.tensor([[0.5, -0.25, 1.0], [0.125, 0.75, -0.5]]))
    m.lin.bias.copy_(torch.tensor([0.25, -1.0]))
gm = symbolic_trace(m)
print(gm.code)
class NegSigmSwap(Interpreter):
    def call_function(self, target, args, kwargs):
        if target == torch.neg:
            call_self, *args_tail = args
            return call_self.sigmoid()
        return super().call_function(target, args, kwargs)
    def call_method(self, target, args, kwargs):
        if target == 'sigmoid':
            call_self, *args_tail = args
            return call_self.neg()
        return super().call_method(target, args, kwargs)
x = torch.tensor([[1., 2., 3.], [-1., 0.5, 2.]])
r = NegSigmSwap(gm).run(x, 3.0)
print(r)
class Logging(Interpreter):
    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        print(n.op, n.name, [type(a).__name__ for a in args], sorted(kwargs))
        out = super().run_node(n)
        return out
print(Logging(gm).run(x, 1.0)["y"])
i = Interpreter(gm, garbage_collect_values=False)
i.run(x, 1.0)
print(sorted(n.name for n in i.env))
print(i.fetch_attr("lin.weight").shape, i.fetch_attr("b"))
class NegSigmSwapXformer(Transformer):
    def call_function(self, target, args, kwargs):
        if target == torch.neg:
            call_self, *args_tail = args
            return call_self.sigmoid()
        return super().call_function(target, args, kwargs)
    def call_method(self, target, args, kwargs):
        if target == 'sigmoid':
            call_self, *args_tail = args
            return call_self.neg()
        return super().call_method(target, args, kwargs)
t = NegSigmSwapXformer(gm).transform()
print(t.code)
print(t.graph)
print(torch.allclose(t(x, scale=3.0)["z"][1], r["z"][1]))
class ReluToGelu(Transformer):
    def call_module(self, target, args, kwargs):
        return super().call_module(target, args, kwargs)
    def get_attr(self, target, args, kwargs):
        p = super().get_attr(target, args, kwargs)
        return p * 2
t2 = ReluToGelu(gm).transform()
print(t2.code)
class Placeholders(Transformer):
    def placeholder(self, target, args, kwargs):
        p = super().placeholder(target, args, kwargs)
        return p + 1 if target == "x" else p
print(Placeholders(gm).transform().code)
"""


def test_interpreter_and_transformer_overrides():
    # Interpreter call_function/call_method/run_node overrides, fetch_args_kwargs_from_env, env, fetch_attr; Transformer overrides
    out = _same_output(INTERPRETERS)
    assert "output output ['immutable_dict'] []" in out
    assert "True" in out

REWRITER = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from torch.fx import symbolic_trace, replace_pattern, subgraph_rewriter
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x, w1, w2):
        val1 = torch.neg(w1)
        m1 = torch.cat([val1, w2]).sum()
        val2 = torch.neg(w1)
        m2 = torch.cat([val2, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)
traced = symbolic_trace(M())
def pattern(a1, a2):
    val1 = torch.neg(a1)
    return torch.cat([val1, a2]).sum()
def replacement(w1, w2):
    return torch.stack([w1, w2])
res = replace_pattern(traced, pattern, replacement)
print(traced.code)
print(res)
for m in res:
    print(type(m).__name__, m.anchor, sorted((k.name, v.name) for k, v in m.nodes_map.items()))
print(traced(torch.ones(2), torch.ones(2), torch.ones(2)))
class N(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x * 2 + 1) + torch.relu(x * 3 + 1)
def pat(x, c):
    return torch.relu(x + 1)
def rep(x, c):
    return torch.sigmoid(x - 1)
g = symbolic_trace(N())
def pat2(x):
    return torch.relu(x + 1)
def rep2(x):
    return torch.sigmoid(x - 1)
print(len(replace_pattern(g, pat2, rep2)))
print(g.code)
r = subgraph_rewriter.replace_pattern_with_filters(symbolic_trace(N()), pat2, rep2, match_filters=[lambda m, g, p: True], ignore_literals=False)
print(len(r), type(r[0]).__name__, r[0].replacements)
class Add3(torch.nn.Module):
    def forward(self, x, y):
        return (x + y) + (y + x) + torch.add(x, y)
g = symbolic_trace(Add3())
print(len(replace_pattern(g, lambda a, b: a + b, lambda a, b: torch.sub(a, b))))
print(g.code)
"""


def test_replace_pattern_matches_and_filters():
    # replace_pattern's Match list, replace_pattern_with_filters, patterns given as lambdas
    out = _same_output(REWRITER)
    assert "stack = torch.stack([w1, w2])" in out

GRAPH_EDITING = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

import operator, copy, pickle
from torch.fx import symbolic_trace, Graph, GraphModule, Node, map_arg
from torch.fx.node import map_arg as map_arg2
print(map_arg is map_arg2)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
    def forward(self, x, y):
        a = self.lin(x)
        b = a + y
        unused = torch.sin(b)
        c = b * 2
        d = torch.relu(c)
        return d, c
gm = symbolic_trace(M())
print(gm.graph)
print(gm.graph.eliminate_dead_code())
print(gm.graph)
nodes = list(gm.graph.nodes)
add = [n for n in nodes if n.target is operator.add][0]
with gm.graph.inserting_before(add):
    n1 = gm.graph.call_function(torch.tanh, (add.args[0],))
add.args = (n1, add.args[1])
print(add.args, add.kwargs, n1.users, add.prev, add.next)
with gm.graph.inserting_after(add):
    n2 = gm.graph.call_method("clamp", (add,), {"min": 0.0})
    misplaced = gm.graph.call_function(operator.neg, (n2,))
try:
    gm.graph.lint()
except RuntimeError as e:
    print("RuntimeError", e)
gm.graph.erase_node(misplaced)
with gm.graph.inserting_after(n2):
    n3 = gm.graph.call_function(operator.neg, (n2,))
add.replace_all_uses_with(n3, delete_user_cb=lambda u: u is not n2)
gm.graph.lint()
gm.recompile()
print(gm.code)
mul = [n for n in gm.graph.nodes if n.target is operator.mul][0]
mul.update_arg(1, 3)
mul.update_kwarg("foo", None) if False else None
gm.recompile()
print(gm.code)
relu = [n for n in gm.graph.nodes if n.name == "relu"][0]
relu.replace_all_uses_with(mul)
gm.graph.erase_node(relu)
gm.recompile()
print(gm.code)
try:
    gm.graph.erase_node(mul)
except RuntimeError as e:
    print("RuntimeError", e)
out = gm.graph.output_node()
print(out.op, out.args)
g = Graph()
x = g.placeholder("x")
w = g.get_attr("weight")
mm = g.call_function(torch.matmul, (x, w))
s = g.call_method("sum", (mm,), {"dim": 1})
o = g.output((s, [mm, {"k": x}]))
root = torch.nn.Module()
root.weight = torch.nn.Parameter(torch.ones(3, 2))
gm2 = GraphModule(root, g, "Built")
print(gm2.code)
print(gm2)
print(gm2.graph)
print(gm2(torch.ones(4, 3))[0])
print(type(gm2).__name__)
gm3 = copy.deepcopy(gm2)
print(gm3.code == gm2.code, gm3.weight is gm2.weight, type(gm3).__name__)
gm4 = pickle.loads(pickle.dumps(gm2))
print(gm4.code, type(gm4).__name__)
print(gm4(torch.ones(4, 3))[0])
gm5 = pickle.loads(pickle.dumps(gm))
print(gm5.code)
print(gm5.graph)
print(map_arg((x, [w, {"a": mm}], 3), lambda n: n.name))
print(x.format_node(), w.format_node(), s.format_node(), o.format_node())
try:
    g.lint()
    g2 = Graph(); a = g2.placeholder("a"); g2.call_function(torch.relu, (a,)); g2.output(None)
    bad = g2.call_function(torch.neg, (a,))
    g2.lint()
except RuntimeError as e:
    print("RuntimeError", e)
"""


def test_graph_and_node_editing_copy_and_pickle():
    # eliminate_dead_code, inserting_before/after, node.args edits, update_arg, erase_node errors, a hand-built Graph, deepcopy and pickle, map_arg, lint errors
    out = _same_output(GRAPH_EDITING)
    assert "RuntimeError Tried to erase Node mul but it still had 1 users in the graph" in out

TRACER_DETAILS = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

import math, operator
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)
        self.w = torch.nn.Parameter(torch.ones(4))
    def forward(self, x, y=None, *args, **kw):
        n = x.shape[0] + x.size(1) + x.dim() + self.w.shape[0]
        z = self.lin(x).view(x.size(0), -1)[:, 1:3]
        a, b = z.split(1, dim=1)
        t = x.transpose(0, 1)[0, ...]
        return a * n + b.abs() + math.sqrt(2) + t.sum(), x.size()
tr = torch.fx.Tracer()
g = tr.trace(M())
print(g)
print(tr.root.__class__.__name__, sorted(tr.tensor_attrs.values()) if hasattr(tr, 'tensor_attrs') else None)
gm = torch.fx.GraphModule(tr.root, g)
print(gm.code)
tr2 = torch.fx.Tracer(param_shapes_constant=True)
print(torch.fx.GraphModule(tr2.root if False else M(), tr2.trace(M())).code)
def f(x, y):
    return x + y, x[0], len
try:
    print(torch.fx.symbolic_trace(lambda x: len(x)).code)
except Exception as e:
    print(type(e).__name__, e)
try:
    def g2(x):
        for a in x:
            pass
    torch.fx.symbolic_trace(g2)
except Exception as e:
    print(type(e).__name__, e)
def kw(x, **kwargs):
    return x
try:
    print(torch.fx.symbolic_trace(kw).code)
except Exception as e:
    print(type(e).__name__, e)
class Cust(torch.fx.Tracer):
    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        n = super().create_node(kind, target, args, kwargs, name, type_expr)
        n.meta["tag"] = kind
        return n
    def getattr(self, attr, attr_val, parameter_proxy_cache):
        return super().getattr(attr, attr_val, parameter_proxy_cache)
g = Cust().trace(M())
print([n.meta["tag"] for n in g.nodes])
p = torch.fx.Proxy
print(p.__name__)
def uses_proxy(x):
    if isinstance(x, torch.fx.Proxy):
        return x.relu()
    return x.relu() + 1
print(torch.fx.symbolic_trace(uses_proxy).code)
print(uses_proxy(torch.tensor([-1., 2.])))
"""


def test_tracer_shapes_attributes_and_proxy_in_user_code():
    # shape/size/dim on Proxies, slicing, unpacking, param_shapes_constant, len/iter errors, **kwargs, create_node and getattr overrides, isinstance(x, fx.Proxy)
    out = _same_output(TRACER_DETAILS)
    assert "RuntimeError 'len' is not supported in symbolic tracing by default" in out

SUBMODULES = """
import torch
import torch.fx
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

import operator
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(2, 2)
        self.b = torch.nn.Linear(2, 2)
        self.c = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(2, 2))
    def forward(self, x):
        y = self.a(x)
        x.add_(1)
        z = torch.relu(y)
        w = torch.sigmoid(z)
        self.b(x)
        return y
gm = torch.fx.symbolic_trace(M())
print(gm.graph)
print(gm.graph.eliminate_dead_code())
print(gm.graph)
gm.recompile()
print(gm.code)
gm.delete_all_unused_submodules()
print([n for n, _ in gm.named_modules()])
print(gm.add_submodule("extra.inner", torch.nn.Tanh()))
print([n for n, _ in gm.named_modules()])
print(gm.delete_submodule("extra.inner"), gm.delete_submodule("nope"))
g = gm.graph
out = g.output_node()
with g.inserting_before(out):
    t = g.call_module("extra", (out.args[0],))
    g2 = g.get_attr("a.weight")
    s = g.call_function(operator.getitem, (g2, 0))
    u = g.call_method("unsqueeze", (s,), {"dim": 0})
    v = g.call_function(torch.add, (t, u), {"alpha": 2})
out.args = ((v, out.args[0]),)
gm.add_submodule("extra", torch.nn.Tanh())
gm.recompile()
print(gm.code)
gm.graph.lint()
print(gm)
n = list(g.nodes)[1]
m = list(g.nodes)[3]
n.prepend(m) if False else None
nodes = list(g.nodes)
print([x.name for x in nodes])
print(nodes[-2].format_node(), nodes[-2].all_input_nodes, list(nodes[-2].users))
print(gm(torch.zeros(1, 2)).__class__.__name__)
r = gm(torch.zeros(1, 2))
print(len(r), r[0].shape, r[1].shape)
gm.graph = gm.graph
new_g = torch.fx.Graph()
vm = {}
o = new_g.graph_copy(gm.graph, vm)
new_g.output(o)
print(new_g)
print(torch.fx.GraphModule(gm, new_g).code)
"""


def test_dead_code_submodules_and_graph_copy():
    # in-place ops kept by eliminate_dead_code, add/delete submodules, get_attr of a nested parameter, graph_copy
    out = _same_output(SUBMODULES)
    assert "%add_ : [num_users=0] = call_method[target=add_](args = (%x, 1)" in out
    assert "add = torch.add(extra, unsqueeze, alpha = 2);  extra = unsqueeze = None" in out


PICKLING = """
import torch
import torch.fx

import pickle, copy, math
def helper(x, k):
    return x * k
torch.fx.wrap("helper")
class Sub(torch.nn.Module):
    def forward(self, x):
        return x.relu() + 1
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()
        self.lin = torch.nn.Linear(3, 3)
        self.const = torch.tensor([1.0, 2.0, 3.0])
    def forward(self, x, n=2):
        y = self.sub(self.lin(x)) + self.const
        z = helper(y, 3) + math.sqrt(4)
        return {"a": z[:, 0], "b": [y.shape[0], torch.cat([y, z], dim=n - 1)]}
class T(torch.fx.Tracer):
    def is_leaf_module(self, m, q):
        return isinstance(m, Sub) or super().is_leaf_module(m, q)
m = M()
gm = torch.fx.GraphModule(m, T().trace(m, concrete_args={"n": 2}))
print(gm.code)
gm2 = pickle.loads(pickle.dumps(gm))
print(gm2.code)
print(gm2.graph)
print(type(gm2).__name__, gm2._tracer_cls, [n for n, _ in gm2.named_modules()])
x = torch.ones(2, 3)
print(torch.equal(gm2(x, 2)["b"][1], gm(x, 2)["b"][1]))
gm3 = copy.deepcopy(gm2)
print(gm3.code == gm2.code)
gm4 = pickle.loads(pickle.dumps(torch.fx.symbolic_trace(m)))
print(gm4.code)
for n in gm4.graph.nodes:
    print(n.name, sorted(n.meta))
"""


def test_pickled_graph_module_is_traced_again_from_its_code():
    # unpickling re-traces the generated code with submodules as leaves: node names, meta,
    # wrapped functions and the tracer class come back as PyTorch's do
    out = _same_output(PICKLING, name="fxpickle")
    assert "helper = fxpickle_helper(add_1, 3)" in out and "relu = lin.relu()" in out
    assert "helper ['is_wrapped']" in out and "lin ['nn_module_stack']" in out


OPS_AND_SHAPES = """
import torch
import torch.fx

import operator
import torch.nn.functional as F
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(4, 4))
    def forward(self, x, y):
        a = x @ self.w + x.T.T - (-x) * x.abs() ** 2 / (2 ** x.clamp(max=1))
        b = (x // 2) % 3 + x[..., None].squeeze(-1) + x[:, 1:3].sum(-1, keepdim=True)
        c = x.view(x.size(0), -1).reshape(-1, 4).to(torch.float64).float()
        d = torch.where(x > 0, x, y) + F.softmax(x, -1) + torch.stack([x, y]).mean(0)
        e = x.ndim + x.dtype.is_floating_point + x.shape[1]
        f = torch.matmul(x, self.w) + x.new_zeros(4, 4) + torch.zeros_like(x)
        g = x.masked_fill(x < 0, 0.0).cumsum(1).flip(0) & 1 if False else x.masked_fill(x < 0, 0.0).cumsum(1).flip(0)
        h, i = torch.max(x, dim=1)
        j = x.chunk(2, dim=1)[0].repeat(1, 2) + x.permute(1, 0).contiguous().t()
        k = torch.mm(x, self.w) + F.layer_norm(x, (4,)) + F.dropout(x, 0.0, self.training)
        l = torch.cat([x.unsqueeze(0), y.unsqueeze(0)]).max(dim=0).values
        return a + b + c + d + e + f + g + h.unsqueeze(1) + i.unsqueeze(1) + j + k + l, x.shape
gm = torch.fx.symbolic_trace(M())
print(gm.code)
print(gm.graph)
x = torch.arange(16, dtype=torch.float32).reshape(4, 4) / 4 - 2
y = torch.ones(4, 4) / 8
with torch.no_grad():
    out, shape = gm(x, y)
print(out, shape)
from torch.fx.passes.shape_prop import ShapeProp
ShapeProp(gm).propagate(x, y)
def meta(tm):
    if tm is None or isinstance(tm, int):
        return tm
    if isinstance(tm, tuple) and not hasattr(tm, "shape"):
        return (type(tm).__name__, [meta(t) for t in tm])
    return (tuple(tm.shape), tm.dtype, tm.stride, str(tm.memory_format), tm.requires_grad)
for n in gm.graph.nodes:
    print(n.name, meta(n.meta.get("tensor_meta")))
"""


def test_operators_methods_functions_and_shape_prop_metadata():
    # Proxy operators, tensor methods and attributes, torch and functional calls; ShapeProp's
    # tensor_meta of every node (tuples for torch.max's (values, indices), None for x.shape)
    out = _same_output(OPS_AND_SHAPES)
    assert "max_1 ('tuple', [((4,), torch.float32, (1,), 'torch.contiguous_format', False)" in out
    assert "getattr_8 None" in out
    assert "output ('tuple', [((4, 4), torch.float32, (4, 1), 'torch.contiguous_format', True), ('tuple', [4, 4])])" in out


READABLE = """
import torch
import torch.fx

from torch.fx.passes.shape_prop import ShapeProp
class Inner(torch.nn.Module):
    def forward(self, x):
        return x.sum(0)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(2, 3)
    def forward(self, x, k: int):
        y = self.l(x).relu() + 1
        return y.max(dim=1), y.shape, y.to(torch.float64).t(), (y > 0)
gm = torch.fx.symbolic_trace(M())
ShapeProp(gm).propagate(torch.ones(4, 2), 3)
gm.print_readable()
print(gm.print_readable(False, include_stride=True, include_device=True) == gm.print_readable(False))
for n in gm.graph.nodes:
    if n.op == "call_method" and n.target == "t":
        n.meta["val"] = torch.ones(3, 4, dtype=torch.float64).t()
    if n.name == "gt":
        n.meta["example_value"] = torch.zeros(4, 3, dtype=torch.bool)
gm.print_readable()
gm.print_readable(include_stride=True, include_device=True)
print(gm.code)
inner = torch.fx.symbolic_trace(Inner())
root = torch.nn.Module()
root.inner = inner
g = torch.fx.Graph()
x = g.placeholder("x")
o = g.call_module("inner", (x,))
g.output(o)
gm2 = torch.fx.GraphModule(root, g)
ShapeProp(gm2).propagate(torch.ones(2, 5))
gm2.print_readable()
"""


def test_print_readable_annotates_recorded_values():
    # after ShapeProp (tensor_meta) or with meta['val'] / meta['example_value'] set,
    # print_readable writes each value's dtype and shape (strides, device when asked)
    out = _same_output(READABLE)
    assert 'def forward(self, x: "f32[4, 2]", k : ' in out
    assert 't: "f64[4, 3][1, 4]cpu" = to.t();  to = None' in out
    assert 'inner: "f32[5]" = self.inner(x);  x = None' in out


ERRORS = """
import torch
import torch.fx

import operator
def f(x, y=3, *args, z=4, **kw):
    return x + y + z
gm = torch.fx.symbolic_trace(f)
print(gm.code)
print(gm(torch.ones(1)), gm(torch.ones(1), 1, z=2))
for call in [lambda: torch.fx.Interpreter(gm).run(), lambda: gm()]:
    try:
        call()
    except Exception as e:
        print(type(e).__name__, e)
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(2, 2)
    def forward(self, x):
        return self.l(x)
gm = torch.fx.symbolic_trace(M())
g = gm.graph
with g.inserting_before(g.output_node()):
    bad = g.get_attr("nope")
try:
    g.lint()
except Exception as e:
    print(type(e).__name__, e)
try:
    gm.recompile(); gm(torch.ones(1, 2))
except Exception as e:
    print(type(e).__name__, e)
g.erase_node(bad)
try:
    with g.inserting_before(g.output_node()):
        bad = g.call_module("zzz", (list(g.nodes)[0],))
except AttributeError as e:
    print(type(e).__name__, e)
g2 = torch.fx.Graph()
with g2.inserting_before(None):
    p = g2.placeholder("x")
    bad = g2.call_module("zzz", (p,))
    g2.output(bad)
try:
    torch.fx.GraphModule(gm, g2)
except Exception as e:
    print(type(e).__name__, e)
try:
    torch.fx.GraphModule({"l": gm.l}, g2)
except Exception as e:
    print(type(e).__name__, e)
try:
    torch.fx.Interpreter(gm).run(torch.ones(1, 3))
except Exception as e:
    print(type(e).__name__, str(e).splitlines()[0], "While executing" in str(e))
try:
    torch.fx.symbolic_trace(lambda x: x.item() if x > 0 else 0)
except Exception as e:
    print(type(e).__name__, e)
try:
    torch.fx.symbolic_trace(lambda x: [a for a in x])
except Exception as e:
    print(type(e).__name__, e)
try:
    torch.fx.symbolic_trace(lambda x: int(x))
except Exception as e:
    print(type(e).__name__, e)
def inner():
    torch.fx.wrap("len")
try:
    inner()
except Exception as e:
    print(type(e).__name__, e)
try:
    torch.fx.Graph().output(1); g3 = torch.fx.Graph(); g3.output(1); g3.output(2); g3.lint()
except Exception as e:
    print(type(e).__name__, e)
try:
    torch.fx.symbolic_trace(M(), concrete_args={"y": 1})
except Exception as e:
    print(type(e).__name__, e)
"""


def test_errors_and_their_messages():
    # missing arguments, a dangling get_attr, a missing submodule (looked up when the node is
    # inserted, and when a GraphModule is built from a module or a dict), a failing node
    # under Interpreter, data-dependent control flow, iteration, int(), wrap inside a function
    out = _same_output(ERRORS)
    assert "Use tlparse to see full graph." in out
    assert "AttributeError M has no attribute `zzz`" in out


def test_wrapping_a_name_the_module_never_defines_fails_the_next_trace():
    from dyngrad.fx._symbolic_trace import _WRAPPED_NAMES
    mod = types.ModuleType("fxwrapundefined")
    exec("import dyngrad\ndyngrad.fx.wrap('not_defined_here')\n", mod.__dict__)
    try:
        with pytest.raises(KeyError, match="not_defined_here"):
            dyngrad.fx.symbolic_trace(lambda x: x + 1)
    finally:
        _WRAPPED_NAMES.pop((id(mod.__dict__), "not_defined_here"))
    assert dyngrad.fx.symbolic_trace(lambda x: x + 1).code


FUSION = """
import torch
import torch.fx

import torch.fx.experimental.optimization as optimization
from torch.fx.experimental.optimization import fuse, remove_dropout, matches_module_pattern
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.conv2 = torch.nn.Conv1d(4, 4, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm1d(4)
        self.lin = torch.nn.Linear(4, 4)
        self.bn3 = torch.nn.BatchNorm1d(4)
        self.drop = torch.nn.Dropout(0.5)
        self.shared = torch.nn.Linear(4, 4)
        self.bn4 = torch.nn.BatchNorm1d(4)
    def forward(self, x):
        y = self.bn(self.conv(x)).relu().flatten(2)
        y = self.bn2(self.conv2(y)).mean(-1)
        y = self.drop(self.bn3(self.lin(y)))
        s = self.shared(y)
        return self.bn4(s) + s
m = Net()
with torch.no_grad():
    for i, (name, p) in enumerate(sorted(m.named_parameters())):
        p.copy_(((torch.arange(p.numel(), dtype=torch.float32) * 5 + i) % 11 - 5).reshape(p.shape) / 8)
    for i, (name, b) in enumerate(sorted(m.named_buffers())):
        if b.dtype == torch.float32:
            b.copy_(((torch.arange(b.numel(), dtype=torch.float32) * 3 + i) % 7 + 1).reshape(b.shape) / 4)
m.eval()
f = fuse(m)
print(f.code)
print(f)
print(type(f.conv).__name__, f.conv.bias is not None, type(f.conv2).__name__, f.conv2.bias is not None)
x = (torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4) % 9 - 4) / 4
print(torch.allclose(f(x), m(x), atol=1e-5), [round(v, 4) for v in f(x)[0].tolist()])
r = remove_dropout(m)
print(r.code)
m.train()
print(torch.allclose(r(x) * 0, m(x) * 0))
gm = torch.fx.symbolic_trace(m)
mods = dict(gm.named_modules())
print([n.name for n in gm.graph.nodes if matches_module_pattern((torch.nn.Conv2d, torch.nn.BatchNorm2d), n, mods)])
gm.eval()
g2 = fuse(gm, inplace=True, no_trace=True)
print(g2.code == f.code, g2 is gm)
"""


def test_conv_batchnorm_fusion_and_dropout_removal():
    # torch.fx.experimental.optimization (the docs' Conv/Batch Norm fusion example): a BatchNorm
    # whose input has other users stays, the fused model matches the original in eval mode
    out = _same_output(FUSION)
    assert "bn4 = self.bn4(shared)" in out and "bn = " not in out.split("GraphModule(")[0]
    assert "Conv2d True Conv1d True" in out and "\nTrue [" in out
    assert out.rstrip().endswith("True False")  # the same code; a new GraphModule


AUTOWRAP = """
import torch
import torch.fx

import math, operator
def scale(x):
    return x * 2
class M(torch.nn.Module):
    def forward(self, x):
        return scale(x) + math.floor(math.pi) + math.sqrt(x.shape[0]) + operator.mul(x, 3)
t = torch.fx.Tracer(autowrap_functions=(scale,))
g = t.trace(M())
print(torch.fx.GraphModule(M(), g).code)
t2 = torch.fx.Tracer(autowrap_modules=())
try:
    t2.trace(M())
except TypeError as e:
    print("TypeError", e)
print(torch.fx.symbolic_trace(M()).code)
class P(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.p = torch.nn.Parameter(torch.ones(3, 2))
        self.register_buffer("b", torch.zeros(2))
    def forward(self, x):
        return x.view(-1, self.p.shape[1]) + self.b + self.p.size()[0] + self.p.dim() + self.p.numel()
print(torch.fx.symbolic_trace(P()).code)
print(torch.fx.GraphModule(P(), torch.fx.Tracer(param_shapes_constant=True).trace(P())).code)
"""


def test_tracer_autowrap_functions_modules_and_constant_parameter_shapes():
    out = _same_output(AUTOWRAP, name="fxauto")
    assert "scale = fxauto_scale(x)" in out and "TypeError must be real number, not Proxy" in out
    assert "view = x.view(-1, 2);  x = None" in out


FOLDER = """
import torch
import torch.fx

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.bn = torch.nn.BatchNorm1d(2)
        self.seq = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Linear(2, 2))
        self.register_buffer("buf", torch.ones(2))
        self.p = torch.nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return self.seq(self.bn(self.lin(x))) + self.buf * self.p

gm = torch.fx.symbolic_trace(M())
"""


def test_to_folder_writes_pytorchs_module_file(tmp_path):
    # the Debugging section's to_folder: the same module.py (but for PyTorch's two pytree
    # imports, modules dyngrad does not have), Linear/BatchNorm as reprs, the rest pickled
    texts = []
    for lib in (torch, dyngrad):
        folder = tmp_path / lib.__name__
        gm = run_program(FOLDER, lib, "fxfolder")[1]["gm"]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            gm.to_folder(folder, "Bar")
        assert any("saved as pickled files instead: ['seq']" in str(w.message) for w in caught)
        assert sorted(os.listdir(folder)) == ["__init__.py", "module.py", "seq.pt", "state_dict.pt"]
        text = (folder / "module.py").read_text().replace(str(folder), "<folder>")
        texts.append([line for line in text.splitlines() if "_pytree" not in line])
    assert texts[1] == texts[0]
    assert "        setattr(self, 'lin', Linear(in_features=3, out_features=2, bias=True))" in texts[1]
