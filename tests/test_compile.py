"""dyngrad.compile: captured training steps replayed as NumPy, compared with eager bit for bit
(values, gradients, parameters, optimizer state), guards and recaptures, graph breaks."""
import inspect
import logging
import os
import sys

import numpy as np
import pytest

import dyngrad as T
from dyngrad import _dynamo

def _load_workloads():
    """benchmarks/workloads.py, loaded by path (its directory has a profile.py)."""
    import importlib.util
    path = os.path.join(os.path.dirname(__file__), "..", "benchmarks", "workloads.py")
    spec = importlib.util.spec_from_file_location("_bench_workloads", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


W = _load_workloads()


# every first replay is also run eagerly and compared (check_replay, tests/conftest.py)
pytestmark = pytest.mark.usefixtures("check_replay")


def bits(a):
    return np.ascontiguousarray(a).tobytes()


def same_tensor(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and bits(a._data) == bits(b._data)


def _steps(key, fw):
    """The workload's training step as one function of its batch."""
    if key == "tiny-chain":
        def step(a, b):
            e = T.tanh(a * b).sum()
            e.backward()
            return e
        return step, lambda i: (fw.a, fw.b), [fw.a, fw.b]
    if key == "mininet-step":
        l1, l2, opt = fw.l1, fw.l2, fw.opt

        def step(x, y):
            out = T.tanh(l2(T.tanh(l1(x))))
            loss = ((out - y) ** 2).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return step, lambda i: (fw.x, fw.y), fw.params()
    net, ce, opt = fw.net, fw.ce, fw.opt

    def step(x, y):
        loss = ce(net(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step, lambda i: (fw.xs[i % len(fw.xs)], fw.ys[i % len(fw.ys)]), fw.params()


@pytest.mark.parametrize("key", ["tiny-chain", "mininet-step", "digits-mlp-step"])
def test_workloads_equal_eager_over_many_steps(key):
    wl = W.WORKLOADS[key]
    d = wl.init(np.random.default_rng(0))
    fe, fc = wl.framework(T, d), wl.framework(T, d)
    se, ie, pe = _steps(key, fe)
    sc, ic, pc = _steps(key, fc)
    cs = T.compile(sc)
    for i in range(25):
        le = se(*ie(i))
        lc = cs(*ic(i))
        assert same_tensor(le, lc), i
        for a, b in zip(pe, pc):
            assert same_tensor(a, b)
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                assert same_tensor(a.grad, b.grad)
            assert a._version == b._version
    assert cs.eager_reason is None
    # tiny-chain accumulates into .grad: the second call finds .grad set and recaptures once
    assert cs.captures == (2 if key == "tiny-chain" else 1)
    assert len(cs.entries) == cs.captures


def _mlp(seed=0):
    T.manual_seed(seed)
    return T.nn.Sequential(T.nn.Linear(4, 8), T.nn.Tanh(), T.nn.Linear(8, 3))


def _train(make_opt, steps=12, scheduler=None, compiled=True):
    model = _mlp()
    opt = make_opt(model.parameters())
    sched = scheduler(opt) if scheduler else None
    rng = np.random.default_rng(1)
    xs = [T.tensor(rng.standard_normal((5, 4)).astype(np.float32)) for _ in range(3)]
    ys = [T.tensor(rng.integers(0, 3, 5)) for _ in range(3)]

    def step(x, y):
        opt.zero_grad()
        loss = T.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    f = T.compile(step) if compiled else step
    losses = []
    for i in range(steps):
        losses.append(f(xs[i % 3], ys[i % 3]))
        if sched is not None:
            sched.step()
    return model, opt, losses, f


@pytest.mark.parametrize("make_opt", [
    lambda ps: T.optim.SGD(ps, lr=0.1),
    lambda ps: T.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: T.optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
    lambda ps: T.optim.SGD(ps, lr=0.05, momentum=0.5, dampening=0.1, maximize=True),
    lambda ps: T.optim.Adam(ps, lr=1e-2),
    lambda ps: T.optim.Adam(ps, lr=1e-2, amsgrad=True, weight_decay=1e-3),
    lambda ps: T.optim.AdamW(ps, lr=1e-2),
    lambda ps: T.optim.RMSprop(ps, lr=1e-2),   # not native: its own step at replay
], ids=["sgd", "momentum", "nesterov", "dampening-maximize", "adam", "adam-amsgrad", "adamw",
        "rmsprop"])
def test_optimizers_equal_eager(make_opt):
    me, oe, le, _ = _train(make_opt, compiled=False)
    mc, oc, lc, f = _train(make_opt)
    assert f.eager_reason is None and f.entries
    for a, b in zip(le, lc):
        assert same_tensor(a, b)
    for a, b in zip(me.parameters(), mc.parameters()):
        assert same_tensor(a, b)
    for pa, pb in zip(me.parameters(), mc.parameters()):
        sa, sb = oe.state[pa], oc.state[pb]
        assert sa.keys() == sb.keys()
        for k in sa:
            assert same_tensor(sa[k], sb[k])


def test_scheduler_changes_lr_live():
    def sched(o):
        return T.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5)
    me, _, le, _ = _train(lambda ps: T.optim.SGD(ps, lr=0.2, momentum=0.9), scheduler=sched,
                          compiled=False)
    mc, oc, lc, f = _train(lambda ps: T.optim.SGD(ps, lr=0.2, momentum=0.9), scheduler=sched)
    assert oc.param_groups[0]["lr"] == 0.2 * 0.5 ** 6
    assert f.captures == 1   # lr is read at each call, never a guard
    for a, b in zip(me.parameters(), mc.parameters()):
        assert same_tensor(a, b)
    for a, b in zip(le, lc):
        assert same_tensor(a, b)


def test_plain_sgd_lr_changed_by_hand():
    me, oe, _, _ = _train(lambda ps: T.optim.SGD(ps, lr=0.1), steps=0, compiled=False)
    model = _mlp()
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    x = T.ones(2, 4)
    y = T.tensor([0, 1])

    @T.compile
    def step():
        loss = T.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    ref = _mlp()
    ropt = T.optim.SGD(ref.parameters(), lr=0.1)
    for lr in (0.1, 0.1, 0.5, 1.0, 0.01):
        opt.param_groups[0]["lr"] = lr
        ropt.param_groups[0]["lr"] = lr
        step()
        T.nn.functional.cross_entropy(ref(x), y).backward()
        ropt.step()
        ropt.zero_grad()
    for a, b in zip(ref.parameters(), model.parameters()):
        assert same_tensor(a, b)
    assert step.captures == 1


def _simple():
    w = T.nn.Parameter(T.tensor([[0.5, -1.0], [2.0, 0.25]]))

    def f(x):
        loss = (T.tanh(x @ w) ** 2).sum()
        loss.backward()
        return loss
    return w, f


def test_shape_change_recaptures_once_with_reason():
    w, f = _simple()
    cf = T.compile(f)
    cf(T.ones(3, 2))
    w.grad = None
    cf(T.ones(3, 2))
    w.grad = None
    assert cf.captures == 1
    cf(T.ones(4, 2))
    assert cf.captures == 2
    assert len(cf.recompile_reasons) == 1
    assert "tensor 'x' size mismatch at index 0. expected 3, actual 4" in \
        cf.recompile_reasons[0][0]
    w.grad = None
    cf(T.ones(4, 2))
    w.grad = None
    cf(T.ones(3, 2))    # both captures are kept
    assert cf.captures == 2


def test_requires_grad_change_recaptures_once():
    w, f = _simple()
    cf = T.compile(f)
    cf(T.ones(3, 2))
    w.grad = None
    x = T.ones(3, 2, requires_grad=True)
    cf(x)
    assert cf.captures == 2
    assert "requires_grad mismatch" in cf.recompile_reasons[0][0]
    assert x.grad is not None


def test_grad_none_or_not_recaptures_once():
    w, f = _simple()
    cf = T.compile(f)
    cf(T.ones(3, 2))           # .grad None at entry
    cf(T.ones(3, 2))           # .grad set at entry: accumulates
    assert cf.captures == 2
    assert ".grad is None == True failed" in cf.recompile_reasons[0][0]
    ref_w, ref_f = _simple()
    for _ in range(4):
        ref_f(T.ones(3, 2))
    cf(T.ones(3, 2))
    cf(T.ones(3, 2))
    assert cf.captures == 2
    assert same_tensor(w.grad, ref_w.grad)


def test_train_eval_recaptures_once():
    class Scale(T.nn.Module):
        def forward(self, x):
            return x * (2.0 if self.training else 3.0)

    model = T.nn.Sequential(T.nn.Linear(3, 3), Scale())
    cf = T.compile(lambda x: model(x))
    x = T.ones(2, 3)
    with T.no_grad():
        a = cf(x)
        model.eval()
        b = cf(x)
        c = cf(x)
        assert same_tensor(b, model(x)) and same_tensor(c, b)
        model.train()
        assert same_tensor(cf(x), a)
    assert cf.captures == 2
    assert "training == True failed" in cf.recompile_reasons[0][0]


def test_grad_mode_recaptures_once():
    lin = T.nn.Linear(3, 2)
    cf = T.compile(lambda x: T.relu(lin(x)).detach())
    x = T.ones(2, 3)
    with T.no_grad():
        r1 = cf(x)
        r2 = cf(x)
    assert cf.captures == 1 and same_tensor(r1, r2)
    r3 = cf(x)
    assert cf.captures == 2 and "grad_mode" in cf.recompile_reasons[0][0]
    assert same_tensor(r1, r3)


def test_python_scalar_argument_is_guarded():
    cf = T.compile(lambda x, k: (x * k).exp())
    x = T.ones(2)
    a = cf(x, 2.0)
    b = cf(x, 3.0)
    assert cf.captures == 2
    assert same_tensor(b, (x * 3.0).exp()) and same_tensor(a, (x * 2.0).exp())


def test_recompile_limit_falls_back_to_eager_with_warning(caplog):
    cf = T.compile(lambda x: T.sin(x) + 1)
    old = _dynamo.config.recompile_limit
    _dynamo.config.recompile_limit = 3
    try:
        with caplog.at_level(logging.WARNING, logger="dyngrad._dynamo.convert_frame"):
            for n in range(1, 7):
                r = cf(T.ones(n))
                assert same_tensor(r, T.sin(T.ones(n)) + 1)
    finally:
        _dynamo.config.recompile_limit = old
    assert cf.captures == 3
    assert cf.eager_reason.startswith("hit config.recompile_limit (3)")
    msg = caplog.records[-1].getMessage()
    assert msg.startswith("torch._dynamo hit config.recompile_limit (3)\n   function: '<lambda>'")
    assert 'To log all recompilation reasons, use TORCH_LOGS="recompiles".' in msg


def test_recompile_log(caplog):
    old = _dynamo.config.log_recompiles
    _dynamo.config.log_recompiles = True
    try:
        def g(x):
            return x * 2
        cf = T.compile(g)
        with caplog.at_level(logging.DEBUG, logger="dyngrad._dynamo.recompiles"):
            cf(T.ones(1))
            cf(T.ones(2))
    finally:
        _dynamo.config.log_recompiles = old
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "Recompiling function g in" in text
    assert "triggered by the following guard failure(s):" in text
    assert "tensor 'x' size mismatch at index 0. expected 1, actual 2" in text


@pytest.mark.parametrize("what", ["item", "bool", "tolist", "numpy", "print"])
def test_graph_break_runs_eagerly_with_reason(what, capsys):
    w = T.nn.Parameter(T.ones(2))

    def f(x):
        y = (x * w).sum()
        if what == "item":
            s = y.item()
        elif what == "bool":
            s = 1.0 if y > 0 else -1.0
        elif what == "tolist":
            s = y.tolist()
        elif what == "numpy":
            s = float(y.detach().numpy())
        else:
            print(y)
            s = 1.0
        return (y * s).exp()

    cf = T.compile(f)
    for v in (1.0, -1.0, 2.0):
        x = T.full((2,), v)
        assert same_tensor(cf(x), f(x))
    assert cf.entries == []
    assert "graph break" in cf.eager_reason
    assert "test_compile.py" in cf.eager_reason


def test_fullgraph_raises_with_source_line():
    def f(x):
        y = x.sum()
        if y.item() > 0:
            return y
        return -y

    cf = T.compile(f, fullgraph=True)
    with pytest.raises(_dynamo.Unsupported) as ei:
        cf(T.ones(2))
    msg = str(ei.value)
    line = inspect.getsourcelines(f)[1] + 2
    assert "Tensor.item() reads a tensor's value into Python" in msg
    assert f'test_compile.py", line {line}, in f' in msg
    assert "if y.item() > 0:" in msg
    assert isinstance(ei.value, RuntimeError)


def test_data_dependent_branch_fullgraph():
    def f(x):
        y = x * 2
        if y.sum() > 0:
            return y
        return -y
    with pytest.raises(_dynamo.Unsupported, match="__bool__"):
        T.compile(f, fullgraph=True)(T.ones(2))


def test_module_compiled_like_pytorch():
    T.manual_seed(0)
    m = T.nn.Linear(2, 3)
    om = T.compile(m)
    assert isinstance(om, _dynamo.OptimizedModule) and isinstance(om, T.nn.Module)
    assert om._orig_mod is m and om.weight is m.weight
    assert list(om.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert repr(om).startswith("OptimizedModule(\n  (_orig_mod): Linear(")
    x = T.ones(4, 2)
    with T.no_grad():
        a, b = om(x), om(x)
    assert same_tensor(a, m(x).detach()) and same_tensor(a, b)



def test_module_training_backward_outside():
    """A compiled module's forward in training: autograd goes through its output."""
    def make():
        T.manual_seed(0)
        return T.nn.Sequential(T.nn.Linear(4, 8), T.nn.Tanh(), T.nn.Linear(8, 3))
    m, ref = make(), make()
    om = T.compile(m)
    opt, ropt = T.optim.SGD(m.parameters(), lr=0.1), T.optim.SGD(ref.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for i in range(6):
        x = T.tensor(rng.standard_normal((5, 4)).astype(np.float32), requires_grad=i == 5)
        x2 = x.detach().requires_grad_(i == 5)
        y = T.tensor(rng.integers(0, 3, 5))
        out = om(x)
        if i in (2, 3, 4):   # (0: the capture, 1: checked against eager, 5: recaptured)
            assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
        T.nn.functional.cross_entropy(out, y).backward()
        T.nn.functional.cross_entropy(ref(x2), y).backward()
        for a, b in zip(m.parameters(), ref.parameters()):
            assert same_tensor(a.grad, b.grad)
        if i == 5:
            assert same_tensor(x.grad, x2.grad)
        opt.step(), ropt.step(), opt.zero_grad(), ropt.zero_grad()
    assert om._compiled.eager_reason is None
    for a, b in zip(m.parameters(), ref.parameters()):
        assert same_tensor(a, b)
    # two forwards before one backward: each keeps its own arrays
    x1, x2 = T.ones(2, 4), T.full((2, 4), -2.0)
    (om(x1).sum() + om(x2).sum()).backward()
    (ref(x1).sum() + ref(x2).sum()).backward()
    for a, b in zip(m.parameters(), ref.parameters()):
        assert same_tensor(a.grad, b.grad)


def test_loss_function_compiled():
    @T.compile
    def loss_fn(pred, target):
        return ((pred - target) ** 2).mean()

    p, t = T.ones(3, 2), T.zeros(3, 2)
    assert same_tensor(loss_fn(p, t), ((p - t) ** 2).mean())
    assert same_tensor(loss_fn(p * 2, t), ((p * 2 - t) ** 2).mean())
    assert loss_fn.captures == 1


def test_decorator_forms_and_arguments():
    @T.compile
    def a(x):
        return x + 1

    @T.compile()
    def b(x):
        return x + 1

    @T.compile(fullgraph=True, mode="reduce-overhead", dynamic=False)
    def c(x):
        return x + 1

    for f in (a, b, c):
        assert same_tensor(f(T.ones(2)), T.full((2,), 2.0))
        assert same_tensor(f(T.ones(2)), T.full((2,), 2.0))
    assert a.__name__ == "a" and c.fullgraph

    def d(x):
        return x
    assert T.compile(d, disable=True) is d
    assert T.compile(disable=True)(d) is d


def test_signature_and_errors_as_pytorch():
    ps = inspect.signature(T.compile).parameters
    # PyTorch's, less isolate_recompiles and shapes_spec (absent: every compiled function
    # keeps its own captures, and shapes are never symbolic)
    assert list(ps) == ["model", "fullgraph", "dynamic", "backend", "mode", "options", "name",
                        "disable", "recompile_limit"]
    torch = pytest.importorskip("torch")
    assert set(inspect.signature(torch.compile).parameters) - set(ps) == {
        "isolate_recompiles", "shapes_spec"}
    with pytest.raises(TypeError, match="unexpected keyword argument 'isolate_recompiles'"):
        T.compile(lambda x: x, isolate_recompiles=True)
    with pytest.raises(AssertionError, match="A callable function is expected, but "
                                             "<class 'int'> is provided."):
        T.compile(3)
    with pytest.raises(RuntimeError, match="Unrecognized mode=foo, should be one of: default"):
        T.compile(lambda x: x, mode="foo")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        T.compile(lambda x: x, mode="default", options={})
    with pytest.raises(_dynamo.InvalidBackend, match="Invalid backend: 'nonexistent'"):
        T.compile(lambda x: x, backend="nonexistent")
    assert _dynamo.config.recompile_limit == 8


def test_compiler_reset_disable_is_compiling():
    _dynamo.config.check_replay = False   # (the check would run the body again)
    seen = []

    @T.compile
    def f(x):
        seen.append(T.compiler.is_compiling())
        return x * 3

    f(T.ones(1))
    f(T.ones(1))
    assert seen == [True]     # the body runs only while it is captured
    assert not T.compiler.is_compiling()
    T.compiler.reset()
    f(T.ones(1))
    assert seen == [True, True] and f.captures == 2
    _dynamo.reset()
    assert f.entries == []

    @T.compiler.disable
    def helper(x):
        return x.sum()

    g = T.compile(lambda x: helper(x) * 2)
    assert same_tensor(g(T.ones(3)), T.tensor(6.0))
    assert "dyngrad.compiler.disable" in g.eager_reason


def test_check_replay_detects_frozen_python_state():
    state = {"i": 0}
    xs = [T.ones(2), T.full((2,), 2.0)]

    @T.compile
    def f():
        x = xs[state["i"] % 2]
        state["i"] += 1
        return x * 3

    f()
    with pytest.raises(_dynamo.ReplayMismatch, match="differs from eager in the returned"):
        f()


def test_returned_input_and_outputs_fresh():
    cf = T.compile(lambda x: (x, x * 2))
    x = T.ones(2)
    a = cf(x)
    b = cf(x)
    assert b[0] is x
    assert a[1] is not b[1] and same_tensor(a[1], b[1])
    b[1].add_(1)
    assert same_tensor(cf(x)[1], T.full((2,), 2.0))


def test_program_is_plain_data():
    w, f = _simple()
    cf = T.compile(f)
    cf(T.ones(3, 2))
    w.grad = None
    cf(T.ones(3, 2))
    prog = cf.entries[0].program
    phases = [i.phase for i in prog.instrs]
    assert phases[0] == "forward" and "backward" in phases
    assert all(b.i == k for k, b in enumerate(prog.buffers))
    assert "program of" in str(prog) and prog.guards
    assert "def _replay" in cf.entries[0].source


def test_random_op_is_not_frozen():
    T.manual_seed(0)
    cf = T.compile(lambda x: x + T.randn(3))
    a, b, c = cf(T.zeros(3)), cf(T.zeros(3)), cf(T.zeros(3))
    assert not same_tensor(a, b) and not same_tensor(b, c)
    assert cf.eager_reason is None and cf.entries[0].replays == 2   # drawn anew each replay
    T.manual_seed(0)
    assert all(same_tensor(r, T.randn(3)) for r in (a, b, c))


def test_compiled_training_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w1, b1 = rng.standard_normal((8, 4)).astype(np.float32), np.zeros(8, np.float32)
    w2, b2 = rng.standard_normal((3, 8)).astype(np.float32), np.zeros(3, np.float32)
    xs = rng.standard_normal((4, 6, 4)).astype(np.float32)
    ys = rng.integers(0, 3, (4, 6))
    out = []
    for lib in (T, torch):
        m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))
        with lib.no_grad():
            for p, v in zip(m.parameters(), (w1, b1, w2, b2)):
                p.copy_(lib.from_numpy(v.copy()))
        opt = lib.optim.Adam(m.parameters(), lr=1e-2)

        def step(x, y, m=m, opt=opt, lib=lib):
            loss = lib.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss.detach()

        f = T.compile(step) if lib is T else step
        losses = [float(f(lib.from_numpy(xs[i % 4]), lib.from_numpy(ys[i % 4])))
                  for i in range(12)]
        out.append((losses, [p.detach().numpy().copy() for p in m.parameters()]))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(out[0][1], out[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


_F = T.nn.functional
_OPS = {
    "detach": lambda x: (x.detach() * x).sum(),
    "clone-reshape-view": lambda x: x.clone().reshape(6, 4).view(-1).exp().sum(),
    "mean": lambda x: x.mean() + x.mean(1).sum(),
    "softmax-pow": lambda x: _F.softmax(x, dim=1).pow(3).sum(),
    "sigmoid-log-exp": lambda x: T.log(T.exp(T.sigmoid(x)) + 1).sum(),
    "transpose-matmul": lambda x: x.transpose(0, 1).matmul(x).sum(),
    "zeros_like-div-sqrt-abs": lambda x: ((x + T.zeros_like(x)) / (x * x + 1).sqrt()).abs().sum(),
    "unsqueeze-float": lambda x: x.unsqueeze(0).squeeze(0).float().sum(),
}


@pytest.mark.parametrize("name", list(_OPS))
def test_ops_forward_backward_equal_eager(name):
    f = _OPS[name]
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((4, 6)).astype(np.float32), requires_grad=True)
    xr = x.detach().requires_grad_()

    def step(x):
        out = f(x)
        out.backward()
        return out

    cf = T.compile(step)
    for _ in range(4):
        assert same_tensor(cf(x), step(xr))
        assert same_tensor(x.grad, xr.grad)
    assert cf.eager_reason is None


def test_op_without_kernel_runs_eagerly_with_reason():
    x = T.ones(3, 4, requires_grad=True)

    def step(x):
        out = T.polygamma(1, x).sum()
        out.backward()
        return out

    cf = T.compile(step)
    xr = T.ones(3, 4, requires_grad=True)
    for _ in range(2):
        assert same_tensor(cf(x), step(xr))
    assert "no replay kernel reproduces 'polygamma'" in cf.eager_reason
    assert same_tensor(x.grad, xr.grad)


def test_replaced_parameter_recaptures():
    lin = T.nn.Linear(2, 2)
    cf = T.compile(lambda x: lin(x).detach())
    x = T.ones(1, 2)
    cf(x)
    lin.weight = T.nn.Parameter(T.full((2, 2), 3.0))
    assert same_tensor(cf(x), lin(x).detach())
    assert cf.captures == 2
    assert "was replaced" in cf.recompile_reasons[0][0]


def test_vmap_inside_runs_eagerly():
    def f(x):
        return T.vmap(T.sin)(x) * 2

    cf = T.compile(f)
    x = T.ones(3, 2)
    for _ in range(2):
        assert same_tensor(cf(x), f(x))
    assert "vmap" in cf.eager_reason


def test_unrecorded_in_place_change_runs_eagerly():
    """A tensor changed in place by code that is not an op (here written as the library's
    NumPy-level code does it) cannot be replayed: the version counters show it."""
    w = T.nn.Parameter(T.ones(2))

    def f(x):
        y = (x * w).detach()
        with T.no_grad():
            w._data[...] *= 2.0   # the kind of update nn.init or a buffer update makes
            w._vc[0] += 1
        return y

    cf = T.compile(f)
    for _ in range(3):
        cf(T.ones(2))
    assert "changed in place by code that was not captured" in cf.eager_reason
    assert same_tensor(w.detach(), T.full((2,), 8.0))


def test_fullgraph_raises_when_an_op_cannot_be_captured():
    def f(x):
        return T.polygamma(1, x)

    with pytest.raises(_dynamo.Unsupported, match="no replay kernel reproduces 'polygamma'"):
        T.compile(f, fullgraph=True)(T.ones(2, 2))


def test_dropout_in_eval_replays():
    model = T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Dropout(0.5))
    model.eval()
    cf = T.compile(model)
    x = T.ones(2, 3)
    with T.no_grad():
        for _ in range(3):
            assert same_tensor(cf(x), model(x))
    assert cf._compiled.eager_reason is None
