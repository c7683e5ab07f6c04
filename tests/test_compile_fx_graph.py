"""The captured forward as a dyngrad.fx GraphModule: its output against eager (and PyTorch),
its ``.code`` and ``.graph`` printing, its nodes against the graph PyTorch's dynamo hands a
custom backend, and the usual FX editing on it."""
import numpy as np
import pytest

import dyngrad as T
import dyngrad.nn as nn
from dyngrad.fx import GraphModule, Interpreter
from dyngrad._dynamo.fx_graph import example_inputs_of, graph_module_of


def f(x):
    return (T.sin(x) * 2 + 1).relu().sum(0) - x.mean()


def captured(fn, *args):
    c = T.compile(fn)
    c(*args)
    (e,) = c.entries
    return e.program


def test_elementwise_function_code_and_values():
    T.manual_seed(0)
    x = T.randn(3, 3)
    prog = captured(f, x)
    gm = graph_module_of(prog)
    assert isinstance(gm, GraphModule)
    assert gm.code.strip() == (
        "def forward(self, x):\n"
        "    sin = torch.sin(x)\n"
        "    mul = torch.mul(sin, 2.0);  sin = None\n"
        "    add = torch.add(mul, 1.0);  mul = None\n"
        "    relu = torch.nn.functional.relu(add);  add = None\n"
        "    sum_1 = torch.sum(relu, 0);  relu = None\n"
        "    mean = torch.mean(x);  x = None\n"
        "    sub = torch.sub(sum_1, mean);  sum_1 = mean = None\n"
        "    return (sub,)")
    g = str(gm.graph)
    assert "%x : [num_users=2] = placeholder[target=x]" in g
    assert "%sin : [num_users=1] = call_function[target=torch.sin](args = (%x,), kwargs = {})" \
        in g
    assert "return (sub,)" in g
    (out,) = gm(x)
    assert np.array_equal(out.numpy(), f(x).numpy())
    # another input: the graph is not frozen on the capture's values
    x2 = T.randn(3, 3)
    assert np.array_equal(gm(x2)[0].numpy(), f(x2).numpy())
    assert [t is x for t in example_inputs_of(prog)] == [True]


def test_nodes_match_what_pytorch_hands_a_backend():
    torch = pytest.importorskip("torch")
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def tf(x):
        return (torch.sin(x) * 2 + 1).relu().sum(0) - x.mean()
    xt = torch.randn(3, 3)
    torch.compile(tf, backend=backend)(xt)
    ours = graph_module_of(captured(f, T.tensor(xt.numpy())))
    names = [(n.op == "placeholder", n.name) for n in graphs[0].graph.nodes]
    mine = [(n.op == "placeholder", n.name) for n in ours.graph.nodes]
    assert [n for p, n in mine if not p] == [n for p, n in names if not p]
    assert sum(p for p, _ in mine) == sum(p for p, _ in names) == 1
    want = graphs[0](xt)[0].numpy()
    got = ours(T.tensor(xt.numpy()))[0].numpy()
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_training_step_forward_is_the_loss():
    torch = pytest.importorskip("torch")
    T.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    opt = T.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    x, y = T.randn(5, 4), T.tensor([0, 1, 0, 1, 1])
    prog = captured(step, x, y)
    gm = graph_module_of(prog)
    # only the forward: no backward formulas, no optimizer update in the graph
    targets = [getattr(n.target, "__name__", n.target) for n in gm.graph.nodes
               if n.op == "call_function"]
    assert targets == ["t", "addmm", "tanh", "t", "addmm", "log_softmax", "nll_loss"]
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == ["x", "y"]
    # parameters are the module's attributes (the same tensors, so the graph sees updates)
    params = [getattr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr"]
    assert [p is q for p, q in zip(params, [model[0].weight, model[0].bias, model[2].weight,
                                           model[2].bias])] == [True] * 4
    assert "nll_loss = torch.nn.functional.nll_loss(log_softmax, y)" in gm.code
    (loss,) = gm(*example_inputs_of(prog))
    with T.no_grad():
        eager = nn.functional.cross_entropy(model(x), y)
    assert np.array_equal(loss.detach().numpy(), eager.numpy())
    # PyTorch on the same weights and batch
    tm = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    with torch.no_grad():
        for tp, p in zip(tm.parameters(), model.parameters()):
            tp.copy_(torch.tensor(p.detach().numpy()))
    tl = torch.nn.functional.cross_entropy(tm(torch.tensor(x.numpy())),
                                           torch.tensor(y.numpy()))
    np.testing.assert_allclose(loss.item(), tl.item(), rtol=1e-6)


def test_fx_tools_work_on_it():
    T.manual_seed(0)
    x = T.randn(2, 3)
    gm = graph_module_of(captured(lambda a: T.tanh(a * a).sum(), x))
    assert np.array_equal(Interpreter(gm).run(x)[0].numpy(), gm(x)[0].numpy())
    # editing the graph and recompiling changes what runs
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is T.tanh:
            n.target = T.sigmoid
    gm.recompile()
    assert "torch.sigmoid(mul)" in gm.code
    assert np.array_equal(gm(x)[0].numpy(), T.sigmoid(x * x).sum().numpy())


def test_reflected_scalar_stays_first():
    x = T.tensor([1.0, 2.0, 4.0])
    gm = graph_module_of(captured(lambda a: 2.0 - a / 3.0, x))
    assert np.array_equal(gm(x)[0].numpy(), (2.0 - x / 3.0).numpy())


def _rnn_cell():
    T.manual_seed(0)
    return nn.RNNCell(3, 4)


CASES = {
    "pow": (lambda: lambda x, y: ((T.tanh(x) - y) ** 2).sum(), [(3, 2), (3, 2)]),
    "unary": (lambda: lambda x: T.exp(x) + T.log(x.abs() + 1) + T.sqrt(x * x) + T.sigmoid(x)
              - T.cos(x) * T.sin(x), [(4,)]),
    "softmax": (lambda: lambda x: T.nn.functional.softmax(x, dim=1).mean(), [(3, 4)]),
    "rnn-cell-twice": (lambda: (lambda c: lambda x, h: c(x, c(x, h)))(_rnn_cell()),
                       [(2, 3), (2, 4)]),
    "rsub-rdiv": (lambda: lambda x: 1 - 1 / (x * x + 1), [(3,)]),
    "in-place": (lambda: lambda x: (x * 2).add_(1).mul_(3), [(3,)]),
    "matmul-sum-keepdim": (lambda: lambda a, b: (a @ b).sum(dim=1, keepdim=True),
                           [(2, 3), (3, 2)]),
    "clamp": (lambda: lambda x: x.clamp(-0.5, 0.5) + x.clamp(min=0), [(5,)]),
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_graph_output_equals_eager(key):
    make, shapes = CASES[key]
    fn = make()
    T.manual_seed(1)
    args = [T.randn(*s) for s in shapes]
    c = T.compile(fn)
    with T.no_grad():
        want = c(*args)
    assert c.eager_reason is None
    gm = graph_module_of(c.entries[0].program)
    with T.no_grad():
        (got,) = gm(*args)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got.numpy(), want.numpy())
    with T.no_grad():      # and on other inputs of the same shapes
        args2 = [T.randn(*s) for s in shapes]
        assert np.array_equal(gm(*args2)[0].numpy(), fn(*args2).numpy())


def test_building_the_graph_changes_no_tensor():
    x = T.tensor([1.0, 2.0])
    w = T.tensor([3.0, 4.0])
    c = T.compile(lambda a: a.add_(w).mul(2))
    with T.no_grad():
        c(x)
    before = (x.numpy().copy(), w.numpy().copy())
    gm = graph_module_of(c.entries[0].program)
    assert np.array_equal(x.numpy(), before[0]) and np.array_equal(w.numpy(), before[1])
    assert "add_ = a.add_(_tensor_constant0)" in gm.code
    with T.no_grad():
        (out,) = gm(x)
    assert np.array_equal(out.numpy(), (before[0] + before[1]) * 2)
    assert np.array_equal(x.numpy(), before[0] + before[1])   # the graph's add_ is in place
