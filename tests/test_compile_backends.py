"""dyngrad.compile's backend=: a callable given the captured forward as a GraphModule and
example inputs, the eager backends, the backend registry, and Entry.replays."""
import numpy as np
import pytest

import dyngrad as T
import dyngrad._dynamo as D
from dyngrad import nn
from dyngrad._dynamo import BackendCompilerFailed, InvalidBackend, config
from dyngrad.fx import GraphModule
from dyngrad.nn import functional as F


@pytest.fixture(autouse=True)
def _checked():
    prev = config.check_replay
    yield
    config.check_replay = prev


def _model(seed=0):
    T.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))


def _step_of(model, opt):
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def _batches(n, b=4):
    rng = np.random.default_rng(1)
    return [(T.tensor(rng.standard_normal((b, 3)).astype(np.float32)),
             T.tensor(rng.integers(0, 2, b))) for _ in range(n)]


class Recorder:
    """A backend that keeps what it was given and runs the graph as it is."""

    def __init__(self):
        self.calls = []

    def __call__(self, gm, example_inputs):
        self.calls.append((gm, [tuple(t.shape) for t in example_inputs], gm.code))
        return gm.forward


def test_callable_backend_gets_the_forward_and_runs_it():
    rec = Recorder()
    me, mc = _model(), _model()
    oe = T.optim.SGD(me.parameters(), lr=0.1, momentum=0.9)
    oc = T.optim.SGD(mc.parameters(), lr=0.1, momentum=0.9)
    eager, comp = _step_of(me, oe), T.compile(_step_of(mc, oc), backend=rec)
    for x, y in _batches(6):
        le, lc = eager(x, y), comp(x, y)
        assert np.array_equal(le.detach().numpy(), lc.detach().numpy())
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert np.array_equal(pe.detach().numpy(), pc.detach().numpy())
    (gm, shapes, code), = rec.calls       # one capture, one call of the backend
    assert isinstance(gm, GraphModule)
    assert shapes == [(4, 3), (4,)]
    assert "torch.addmm" in code and "torch.nn.functional.nll_loss" in code
    assert code.lstrip().startswith("def forward(self, x, y):")
    e, = comp.entries
    assert e.graph_module is gm and e.replays == 5
    assert "_run_backend(_BK" in e.source


def test_a_new_shape_calls_the_backend_again():
    rec = Recorder()
    m = _model()
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    comp = T.compile(_step_of(m, opt), backend=rec)
    for x, y in _batches(2):
        comp(x, y)
    for x, y in _batches(2, b=7):
        comp(x, y)
    assert [s for _, s, _ in rec.calls] == [[(4, 3), (4,)], [(7, 3), (7,)]]
    assert [e.replays for e in comp.entries] == [1, 1]


def test_backend_returning_another_callable():
    """The backend's values are the forward's outputs; the backward replays on the kernels'
    intermediates, so gradients are eager's while the returned loss is the backend's."""
    config.check_replay = False      # (the check would flag the backend's values)
    def doubling(gm, example_inputs):
        def run(*xs):
            return tuple(o * 2 for o in gm(*xs))
        return run

    def chain(a, b):
        def f():
            e = T.tanh(a * b).sum()
            e.backward()
            return e
        return f
    rng = np.random.default_rng(0)
    da, db = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    ae, be = T.tensor(da, requires_grad=True), T.tensor(db, requires_grad=True)
    ac, bc = T.tensor(da, requires_grad=True), T.tensor(db, requires_grad=True)
    eager, comp = chain(ae, be), T.compile(chain(ac, bc), backend=doubling)
    for k in range(4):
        le, lc = eager(), comp()
        # the first two calls capture (the second with .grad set), eagerly; the backend's
        # callable runs after
        assert np.array_equal(lc.detach().numpy(), (1 if k < 2 else 2) * le.detach().numpy())
    assert np.array_equal(ac.grad.numpy(), ae.grad.numpy())
    assert np.array_equal(bc.grad.numpy(), be.grad.numpy())


def test_check_replay_flags_a_backend_that_changes_values():
    config.check_replay = True

    def negating(gm, example_inputs):
        return lambda *xs: tuple(-o for o in gm(*xs))
    f = T.compile(lambda x: (x * 2).sum(), backend=negating)
    x = T.ones(3)
    f(x)
    with pytest.raises(D.ReplayMismatch, match="differs from eager in the returned values"):
        f(x)


def test_module_with_backend_keeps_its_backward():
    rec = Recorder()
    me, mc = _model(), _model()
    comp = T.compile(mc, backend=rec)
    for x, _ in _batches(3):
        oe, oc = me(x), comp(x)
        assert np.array_equal(oe.detach().numpy(), oc.detach().numpy())
        oe.sum().backward()
        oc.sum().backward()
    assert type(oc.grad_fn).__name__ == "CompiledFunctionBackward"
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert np.array_equal(pe.grad.numpy(), pc.grad.numpy())
    assert len(rec.calls) == 1


def test_backend_that_raises():
    def bad(gm, example_inputs):
        raise ValueError("no thanks")
    f = T.compile(lambda x: (x * 2).sum(), backend=bad)
    with pytest.raises(BackendCompilerFailed) as ei:
        f(T.ones(3))
    assert str(ei.value).startswith("backend='bad' raised:\nValueError: no thanks")
    assert isinstance(ei.value, RuntimeError)


def test_backend_raising_matches_pytorch_message():
    torch = pytest.importorskip("torch")

    def bad(gm, example_inputs):
        raise ValueError("no thanks")
    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed) as theirs:
        torch.compile(lambda x: (x * 2).sum(), backend=bad)(torch.ones(3))
    with pytest.raises(BackendCompilerFailed) as ours:
        T.compile(lambda x: (x * 2).sum(), backend=bad)(T.ones(3))
    assert str(theirs.value).split("\n")[:2] == str(ours.value).split("\n")[:2]


def test_backend_returning_wrong_shape():
    def wrong(gm, example_inputs):
        return lambda *xs: (T.zeros(5),)
    f = T.compile(lambda x: (x * 2).sum(), backend=wrong)
    f(T.ones(3))     # the capture runs eagerly
    with pytest.raises(RuntimeError, match=r"output 0 of the backend's callable is "
                                           r"\(\(5,\), dtype\('float32'\)\)"):
        f(T.ones(3))


def test_eager_backend_runs_the_function_behind_the_guards():
    config.check_replay = False      # (the check runs the function a second time)
    calls = []
    me, mc = _model(), _model()
    oe = T.optim.SGD(me.parameters(), lr=0.1)
    oc = T.optim.SGD(mc.parameters(), lr=0.1)
    inner = _step_of(mc, oc)

    def step(x, y):
        calls.append(1)          # a Python side effect: runs at every call under "eager"
        return inner(x, y)
    eager, comp = _step_of(me, oe), T.compile(step, backend="eager")
    for x, y in _batches(5):
        le, lc = eager(x, y), comp(x, y)
        assert np.array_equal(le.detach().numpy(), lc.detach().numpy())
    assert len(calls) == 5
    e, = comp.entries
    assert e.replays == 4 and "_fn(*args, **kwargs)" in e.source
    for pe, pc in zip(me.parameters(), mc.parameters()):
        assert np.array_equal(pe.detach().numpy(), pc.detach().numpy())
    # a guard still fails on a new shape: a second capture
    comp(*_batches(1, b=6)[0])
    assert len(comp.entries) == 2 and comp.recompile_reasons


@pytest.mark.parametrize("name", ["aot_eager", "aot_eager_decomp_partition"])
def test_aot_eager_names_run_eagerly(name):
    x = T.randn(3, requires_grad=True)
    f = T.compile(lambda t: (t.sin() * 2).sum(), backend=name)
    for _ in range(3):
        r = f(x)
    assert r.grad_fn is not None      # the eager graph: autograd goes through it
    r.backward()
    assert np.allclose(x.grad.numpy(), 2 * np.cos(x.detach().numpy()))
    assert f.entries[0].replays == 2


def test_list_backends_as_pytorch():
    torch = pytest.importorskip("torch")
    assert D.list_backends() == torch._dynamo.list_backends()
    ours = set(D.list_backends(exclude_tags=()))
    assert {"eager", "aot_eager", "inductor"} <= ours
    assert ours - {"numba"} <= set(torch._dynamo.list_backends(exclude_tags=()))
    assert "eager" not in D.list_backends()


def test_register_backend():
    rec = Recorder()
    try:
        assert D.register_backend(rec, name="test_recorder") is rec
        assert "test_recorder" in D.list_backends()

        @D.register_backend(name="test_tagged", tags=("debug",))
        def tagged(gm, example_inputs):
            return gm.forward
        assert "test_tagged" not in D.list_backends()
        assert "test_tagged" in D.list_backends(exclude_tags=())
        assert D.lookup_backend("test_recorder") is rec
        f = T.compile(lambda x: (x * 3).sum(), backend="test_recorder")
        for _ in range(3):
            assert f(T.ones(2)).item() == 6.0
        assert len(rec.calls) == 1
        with pytest.raises(AssertionError, match="duplicate name: inductor"):
            D.register_backend(rec, name="inductor")
        with pytest.raises(AssertionError, match="compiler_fn must be callable"):
            D.register_backend(3, name="test_three")
    finally:
        D._REGISTRY.pop("test_recorder", None)
        D._REGISTRY.pop("test_tagged", None)


def test_unknown_backend_name():
    with pytest.raises(InvalidBackend, match="Invalid backend: 'nope', see "
                                             r"`torch._dynamo.list_backends\(\)`"):
        T.compile(lambda x: x, backend="nope")
    with pytest.raises(InvalidBackend):
        D.lookup_backend("nope")


def test_not_callable_backend_fails_at_the_first_call():
    f = T.compile(lambda x: (x + 1).sum(), backend=3)
    with pytest.raises(BackendCompilerFailed, match="backend='3' raised:\nTypeError"):
        f(T.ones(2))


def test_replays_counter_is_read_only_and_counts():
    f = T.compile(lambda x: (x * x).sum())
    x = T.ones(3)
    for _ in range(5):
        f(x)
    e, = f.entries
    assert e.replays == 4
    with pytest.raises(AttributeError):
        e.replays = 0
    f(T.ones(4))          # a new capture; the first program's count stays
    f(T.ones(4))
    assert [g.replays for g in f.entries] == [4, 1]
    D.reset()
    assert f.entries == []


def test_backend_called_as_pytorch_calls_it():
    torch = pytest.importorskip("torch")

    def f_of(lib):
        def f(x, y):
            return (lib.sin(x) * y).sum()
        return f
    got = {}

    def backend_for(key):
        def backend(gm, example_inputs):
            got.setdefault(key, []).append(([tuple(t.shape) for t in example_inputs],
                                            [n.op for n in gm.graph.nodes]))
            return gm.forward
        return backend
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    ft = torch.compile(f_of(torch), backend=backend_for("torch"))
    fd = T.compile(f_of(T), backend=backend_for("ours"))
    for _ in range(3):
        rt = ft(torch.tensor(xs[0]), torch.tensor(xs[1]))
        rd = fd(T.tensor(xs[0]), T.tensor(xs[1]))
        np.testing.assert_allclose(rd.numpy(), rt.numpy(), rtol=1e-6)
    # dynamo writes x.sum() as a method call, the capture as torch.sum (docs/compile.md)
    theirs = [(shapes, [op.replace("call_method", "call_function") for op in ops])
              for shapes, ops in got["torch"]]
    assert got["ours"] == theirs
    assert got["ours"] == [([(2, 3), (2, 3)], ["placeholder", "placeholder", "call_function",
                                               "call_function", "call_function", "output"])]
