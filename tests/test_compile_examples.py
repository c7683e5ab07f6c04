"""The LSTM and DCGAN examples' training steps compiled (examples/rnn_sequence.py,
examples/dcgan_digits.py): each captures once and replays, and ends with eager's losses,
parameters, gradients, buffers (running statistics, num_batches_tracked), version counters,
optimizer state and generator state, bit for bit.  Then one test per feature they need:
random ops drawn anew at every replay from eager's generator, unbind/split/chunk with their
backward, BatchNorm's training statistics, dropout in training, two backward calls adding into
the same gradients."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import dyngrad as T
from dyngrad import nn
import dyngrad.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import dcgan_digits  # noqa: E402
import rnn_sequence  # noqa: E402


# every first replay is also run eagerly and compared (check_replay, tests/conftest.py)
pytestmark = pytest.mark.usefixtures("check_replay")


def _same(a, b) -> bool:
    a = a.detach().numpy() if isinstance(a, T.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, T.Tensor) else np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def _same_modules(m_e, m_c):
    """Parameters, buffers, gradients and version counters equal, bit for bit."""
    for (k, a), (_, b) in zip(m_e.state_dict().items(), m_c.state_dict().items()):
        assert _same(a, b), k
    for (k, a), (_, b) in zip(m_e.named_parameters(), m_c.named_parameters()):
        assert (a.grad is None) == (b.grad is None), k
        if a.grad is not None:
            assert _same(a.grad, b.grad), f"{k}.grad"
        assert a._version == b._version, k
    for (k, a), (_, b) in zip(m_e.named_buffers(), m_c.named_buffers()):
        assert a._version == b._version, k


def _same_optimizer(o_e, o_c):
    for sa, sb in zip(o_e.state.values(), o_c.state.values()):
        assert sa.keys() == sb.keys()
        for k in sa:
            assert _same(sa[k], sb[k]), k


# --- the examples ------------------------------------------------------------------------------
def _lstm_run(compiled, steps=8):
    """The example's training step (embedding, LSTM, linear, CrossEntropy, clip_grad_norm_,
    Adam), one step per call."""
    T.manual_seed(0)
    rs = np.random.RandomState(0)
    model = rnn_sequence.Model()
    opt = T.optim.Adam(model.parameters(), lr=1e-2)
    step = rnn_sequence.train_step_of(model, opt, nn.CrossEntropyLoss())
    run = T.compile(step) if compiled else step
    outs = [run(*rnn_sequence.batch(rs)) for _ in range(steps)]
    return run, outs, model, opt


def test_lstm_example_trains_the_same_compiled():
    _, out_e, m_e, o_e = _lstm_run(False)
    run, out_c, m_c, o_c = _lstm_run(True)
    assert run.eager_reason is None, run.eager_reason
    assert len(run.entries) == 1 and run.entries[0].replays == 7
    for a, b in zip(out_e, out_c):   # loss, gradient norm, per-step accuracy
        assert all(_same(x, y) for x, y in zip(a, b))
    _same_modules(m_e, m_c)
    _same_optimizer(o_e, o_c)


def _dcgan_run(compiled, steps=6, batch=16):
    """The example's networks, initialisation, loss, optimizers and training step (D on real
    and ``fake.detach()``, G through D on the same fake batch, the noise drawn inside the step
    from the default generator, BatchNorm in training), on batches of random images."""
    T.manual_seed(0)
    netG, netD = dcgan_digits.generator(), dcgan_digits.discriminator()
    netG.apply(dcgan_digits.init_weights)
    netD.apply(dcgan_digits.init_weights)
    crit = nn.BCELoss()
    optG = T.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optD = T.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    step = dcgan_digits.train_step_of(netG, netD, optG, optD, crit, batch)
    run = T.compile(step) if compiled else step
    data = T.Generator().manual_seed(1)   # the "real" batches, from a generator of their own
    outs = [run(T.rand(batch, 1, 8, 8, generator=data) * 2 - 1) for _ in range(steps)]
    return run, outs, netG, netD, optG, optD


def test_dcgan_example_trains_the_same_compiled():
    _, out_e, g_e, d_e, og_e, od_e = _dcgan_run(False)
    after_e = T.randn(4)                 # the default generator where eager left it
    run, out_c, g_c, d_c, og_c, od_c = _dcgan_run(True)
    after_c = T.randn(4)
    assert run.eager_reason is None, run.eager_reason
    assert len(run.entries) == 1 and run.entries[0].replays == 5
    for a, b in zip(out_e, out_c):   # losses and the generated batch (new noise each step)
        assert all(_same(x, y) for x, y in zip(a, b))
    assert not _same(out_c[-1][2], out_c[-2][2])
    _same_modules(g_e, g_c)
    _same_modules(d_e, d_c)
    # (D runs three times a step: on real, on fake.detach(), on fake)
    assert int(g_c[1].num_batches_tracked) == 6 and int(d_c[3].num_batches_tracked) == 18
    _same_optimizer(og_e, og_c)
    _same_optimizer(od_e, od_c)
    assert _same(after_e, after_c)


# --- random ops --------------------------------------------------------------------------------
def _random_step(x, g):
    y = x * 2
    y.normal_()                                  # an in-place fill of an intermediate
    z = T.zeros(3).uniform_(-1, 1, generator=g)
    return (y + z, T.randn(2, 3), T.rand(3, generator=g), T.randint(0, 5, (4,)),
            T.randperm(6), T.bernoulli(T.full((5,), 0.5)), T.randn_like(x),
            T.rand_like(x), T.normal(0.0, 2.0, (2,)), F.dropout(x + 1, 0.5))


def test_random_ops_draw_anew_at_every_replay_as_eager():
    x = T.zeros(3)
    g = T.Generator()
    cf = T.compile(_random_step)
    T.manual_seed(5)
    g.manual_seed(6)
    got = [cf(x, g) for _ in range(4)]
    assert cf.eager_reason is None, cf.eager_reason
    assert cf.entries[0].replays == 3
    T.manual_seed(5)
    g.manual_seed(6)
    want = [_random_step(x, g) for _ in range(4)]
    for a, b in zip(got, want):
        assert all(_same(u, v) for u, v in zip(a, b))
    assert not _same(got[2][1], got[3][1]) and not _same(got[2][0], got[3][0])   # new draws


def test_reseeding_between_calls_is_seen_by_the_replay():
    cf = T.compile(lambda x: x + T.randn(3))
    x = T.zeros(3)
    T.manual_seed(0)
    a = cf(x)
    T.manual_seed(0)
    b, c = cf(x), cf(x)
    assert cf.entries[0].replays == 2 and _same(a, b) and not _same(b, c)


def test_another_generator_argument_recaptures():
    cf = T.compile(lambda x, g: x + T.rand(3, generator=g))
    g1, g2 = T.Generator().manual_seed(1), T.Generator().manual_seed(1)
    a, b = cf(T.zeros(3), g1), cf(T.zeros(3), g2)
    assert _same(a, b) and len(cf.entries) == 2 and "is another object" in \
        cf.recompile_reasons[0][0]


def test_numbers_drawn_outside_the_recorded_ops_run_eagerly():
    """A reseed inside the function (not recorded) changes the generator behind the recorded
    draws: the function runs eagerly rather than replay frozen numbers (also when the reseed
    leaves the generator in the state it had: its bits are new)."""
    def f(x):
        T.manual_seed(3)
        return x + T.randn(3)
    cf = T.compile(f)
    a, b = cf(T.zeros(3)), cf(T.zeros(3))
    assert _same(a, b) and "random numbers drawn or reseeded" in cf.eager_reason
    T.manual_seed(3)
    cf = T.compile(f)
    a, b = cf(T.zeros(3)), cf(T.zeros(3))
    assert _same(a, b) and "random numbers drawn or reseeded" in cf.eager_reason


# --- several views ---------------------------------------------------------------------------
def _pieces(x):
    y = x * 3
    a, b, c = y.unbind(1)
    p, q = y.split([1, 3], 0)
    r = y.chunk(2, 0)
    s = T.tensor_split(y, 3, 1)
    u = T.unsafe_chunk(y, 2, 1)
    out = a * 2 + c + p.sum() + (q[0] * r[1][0]).sum() + s[2].sum() + u[0].sum()
    loss = out.sum()
    loss.backward()
    return out.detach(), [t.detach() for t in (a, b, c, p, q, r[0], r[1], s[0], u[1])]


def test_unbind_split_chunk_forward_and_backward():
    x0 = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    cf = T.compile(_pieces)
    for k in range(3):
        xe, xc = (T.tensor(x0 * (k + 1), requires_grad=True) for _ in range(2))
        (o1, l1), (o2, l2) = cf(xc), _pieces(xe)
        assert _same(o1, o2) and all(_same(a, b) for a, b in zip(l1, l2))
        assert _same(xc.grad, xe.grad)
    assert cf.eager_reason is None and cf.entries[0].replays == 2
    ops = [i.op for i in cf.entries[0].program.instrs]
    assert {"unbind", "split", "chunk", "unsafe_chunk"} <= set(ops)


def test_unbind_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    x0 = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)

    def f(lib, x):
        a, b, c = x.unbind(0)
        (a * 2 + c).sum().backward()
    xc = T.tensor(x0, requires_grad=True)
    cf = T.compile(lambda x: f(T, x))
    for _ in range(2):
        xc.grad = None
        cf(xc)
    xt = torch.tensor(x0, requires_grad=True)
    f(torch, xt)
    assert cf.entries[0].replays == 1
    np.testing.assert_array_equal(xc.grad.numpy(), xt.grad.numpy())


# --- BatchNorm in training -------------------------------------------------------------------
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_training_statistics(momentum):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((6, 3, 2, 2)).astype(np.float32) for _ in range(4)]
    T.manual_seed(0)
    bn_e, bn_c = (nn.BatchNorm2d(3, momentum=momentum) for _ in range(2))
    bn_t = torch.nn.BatchNorm2d(3, momentum=momentum)

    def f(bn, x):
        bn.zero_grad()
        y = bn(x)
        (y * y).sum().backward()
        return y.detach()
    cf = T.compile(lambda x: f(bn_c, x))
    for x0 in xs:
        a, b = cf(T.tensor(x0)), f(bn_e, T.tensor(x0))
        assert _same(a, b)
        f(bn_t, torch.tensor(x0))
    assert cf.eager_reason is None and cf.entries[0].replays == 3
    _same_modules(bn_e, bn_c)
    assert int(bn_c.num_batches_tracked) == 4 and bn_c.num_batches_tracked._version == 4
    assert bn_c.running_mean._version == 4
    for k in ("running_mean", "running_var"):
        np.testing.assert_allclose(getattr(bn_c, k).numpy(), getattr(bn_t, k).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    assert int(bn_t.num_batches_tracked) == int(bn_c.num_batches_tracked)


def test_batch_norm_momentum_is_read_at_every_call():
    bn_e, bn_c = nn.BatchNorm1d(2), nn.BatchNorm1d(2)
    xs = [T.tensor(np.random.default_rng(k).standard_normal((5, 2)).astype(np.float32))
          for k in range(4)]
    cf = T.compile(lambda x: bn_c(x).detach())
    for k, x in enumerate(xs):
        if k == 2:
            bn_c.momentum = bn_e.momentum = None    # cumulative average from now on
        assert _same(cf(x), bn_e(x))
    assert cf.entries[0].replays == 3
    assert cf.eager_reason is None
    _same_modules(bn_e, bn_c)


# --- dropout in training ---------------------------------------------------------------------
def test_dropout_in_a_training_step():
    def run(compiled):
        T.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.3), nn.Linear(8, 4))
        conv = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Dropout2d(0.5))
        opt = T.optim.SGD(list(model.parameters()) + list(conv.parameters()), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            z = conv(x).flatten(1)[:, :6]
            loss = F.mse_loss(model(z), y)
            loss.backward()
            opt.step()
            return loss
        fn = T.compile(step) if compiled else step
        g = T.Generator().manual_seed(3)
        losses = [fn(T.randn(5, 1, 4, 4, generator=g), T.randn(5, 4, generator=g))
                  for _ in range(5)]
        return fn, losses, model, conv
    fe, le, me, ce = run(False)
    fc, lc, mc, cc = run(True)
    assert fc.eager_reason is None and fc.entries[0].replays == 4
    assert all(_same(a, b) for a, b in zip(le, lc))
    _same_modules(me, mc)
    _same_modules(ce, cc)


def test_dropout_in_eval_is_a_no_op():
    d = nn.Dropout(0.5).eval()
    cf = T.compile(lambda x: d(x) * 2)
    x = T.ones(8)
    assert _same(cf(x), x * 2) and _same(cf(x), x * 2)
    prog = cf.entries[0].program
    assert [i.op for i in prog.instrs] == ["mul"]


# --- two backward calls into the same gradients ------------------------------------------------
def test_second_backward_adds_into_the_first_gradients():
    def run(compiled):
        T.manual_seed(0)
        lin = nn.Linear(3, 2)

        def step(x):
            lin.zero_grad()
            lin(x).sum().backward()
            (lin(x) ** 2).sum().backward()
            return lin.weight.grad * 1
        fn = T.compile(step) if compiled else step
        return [fn(T.ones(4, 3) * k) for k in (1.0, 1.0, 1.0)], lin, fn
    ge, le, _ = run(False)
    gc, lc, fn = run(True)
    assert fn.eager_reason is None and fn.entries[0].replays == 2
    assert all(_same(a, b) for a, b in zip(ge, gc))
    _same_modules(le, lc)


def test_reading_num_batches_tracked_in_user_code_is_a_graph_break():
    """Only BatchNorm's own read of its count (``momentum=None``) is exempt."""
    bn = nn.BatchNorm1d(2, momentum=None)

    def f(x):
        y = bn(x)
        return y * bn.num_batches_tracked.item()
    cf = T.compile(f)
    x = T.ones(4, 2)
    cf(x)
    assert "graph break" in cf.eager_reason and "item" in cf.eager_reason


def test_batched_matmul_with_a_graph_is_recorded_as_its_composition():
    """matmul of a batch by a matrix with a graph (F.linear of the LSTM's transposed output):
    eager's nodes are its composition's (reshape, mm, _unsafe_view), whose tensors the
    backward reads; the replay records those ops and gives eager's values and gradients."""
    lin, lin2 = nn.Linear(4, 3), nn.Linear(4, 5, bias=False)

    def f(x):
        lin.zero_grad()
        lin2.zero_grad()
        h = (x * 1.5).transpose(0, 1)
        y = lin(h) + T.matmul(h, lin2.weight.t())[..., :3]
        (y * y).sum().backward()
        return y.detach(), lin.weight.grad * 1, lin2.weight.grad * 1, x.grad * 1
    cf = T.compile(f)
    for k in range(3):
        x0 = np.random.default_rng(k).standard_normal((5, 2, 4)).astype(np.float32)
        a = cf(T.tensor(x0, requires_grad=True))
        b = f(T.tensor(x0, requires_grad=True))
        assert all(_same(u, v) for u, v in zip(a, b))
    assert cf.eager_reason is None and cf.entries[0].replays == 2


def test_clipped_gradients_are_the_grads_left_after_the_step():
    """clip_grad_norm_ scales the gradients in place (coefficient below 1 here): the
    optimizer reads the clipped ones and ``.grad`` is left clipped, as eager leaves it."""
    def run(compiled):
        T.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
        opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(x):
            opt.zero_grad()
            (model(x) ** 2).sum().backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 0.01)
            opt.step()
            return norm
        fn = T.compile(step) if compiled else step
        return [fn(T.ones(5, 3) * k) for k in (1.0, 2.0, 3.0)], model, opt, fn
    ne, me, oe, _ = run(False)
    nc, mc, oc, fn = run(True)
    assert fn.eager_reason is None and fn.entries[0].replays == 2
    assert all(_same(a, b) for a, b in zip(ne, nc)) and float(nc[-1]) > 0.01
    _same_modules(me, mc)
    _same_optimizer(oe, oc)


def test_dropout_in_a_compiled_module_differentiated_outside():
    """A compiled module with dropout in training whose backward autograd runs after the call:
    the replayed output's backward reads that call's mask."""
    def run(compiled):
        T.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.5), nn.Linear(8, 2))
        f = T.compile(m) if compiled else m
        outs = []
        for k in range(3):
            y = f(T.ones(3, 4) * (k + 1))
            y.sum().backward()
            outs.append(y.detach())
        return outs, m, f
    oe, me, _ = run(False)
    oc, mc, f = run(True)
    assert f._compiled.eager_reason is None and f._compiled.entries[0].replays == 2
    assert all(_same(a, b) for a, b in zip(oe, oc))
    _same_modules(me, mc)


def test_a_file_loaded_after_the_first_capture_is_swapped_too():
    """nn.utils (clip_grad_norm_) loaded only after a first capture in the process: a later
    capture still records its norms (they were frozen constants of the first step)."""
    import os
    import subprocess
    import sys
    code = """
import sys
import numpy as np
import dyngrad as T
from dyngrad import nn, _dynamo
_dynamo.config.check_replay = True
rm, rv = T.zeros(3), T.ones(3)
x = T.tensor(np.random.default_rng(2).standard_normal((4, 3, 2, 2)).astype(np.float32))
bn = T.compile(lambda x: T.nn.functional.batch_norm(x, rm, rv, training=True, momentum=0.2))
for _ in range(2):
    bn(x)
def run(compiled):
    T.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    def step(x):
        opt.zero_grad()
        (model(x) ** 2).sum().backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.01)
        opt.step()
        return norm
    fn = T.compile(step) if compiled else step
    return [float(fn(T.ones(5, 3) * k)) for k in (1.0, 2.0, 3.0)]
eager = run(False)   # (loads nn.utils after the first capture)
print(run(True) == eager)
"""
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=src))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "True"
