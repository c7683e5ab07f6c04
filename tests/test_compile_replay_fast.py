"""The replay's fast forms: ReluBackward0 as a mask and a bit AND, log_softmax and the mean
nll_loss into buffers (with the kernel for any other call), float scalars as 0-d arrays,
inline backward formulas, AccumulateGrad into the ``.grad`` the guards bound and the optimizer
guard reading its lists once.  Each must give eager's values, gradients and errors bit for bit,
and its guards must still fail when what they check changes."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad as T

F = T.nn.functional


# every first replay is also run eagerly and compared (check_replay, tests/conftest.py)
pytestmark = pytest.mark.usefixtures("check_replay")


def _bits(a):
    a = a._data if isinstance(a, T.Tensor) else a
    return (a.dtype, a.shape, np.ascontiguousarray(a).tobytes())


def _mlp(dtype, seed=0):
    rng = np.random.default_rng(seed)
    net = T.nn.Sequential(T.nn.Linear(6, 8), T.nn.ReLU(), T.nn.Linear(8, 4)).to(dtype)
    with T.no_grad():
        for p in net.parameters():
            p.copy_(T.tensor(rng.standard_normal(tuple(p.shape))).to(dtype))
    return net


@pytest.mark.parametrize("dtype", [T.float32, T.float64])
def test_relu_backward_bits_with_zeros_nan_and_inf(dtype):
    """Pre-activations exactly 0, negative, NaN and infinite: the gradient is +0.0 where
    relu's output is <= 0, the incoming gradient (NaN, inf, -0.0 kept) elsewhere."""
    def run(compiled):
        x = T.tensor(np.linspace(-2, 2, 6)[None].repeat(5, 0), dtype=dtype, requires_grad=True)
        g = T.tensor(np.array([[0.0, -0.0, 1.5, -2.0, np.inf, np.nan]] * 5), dtype=dtype)
        shift = T.tensor([0.0, np.nan, -np.inf, np.inf, 2.0, -1.0], dtype=dtype)

        def f(x, g):
            s = (F.relu(x + shift) * g).sum()
            s.backward()
            return s
        f = T.compile(f) if compiled else f
        outs = []
        for _ in range(3):
            x.grad = None
            outs.append((_bits(f(x, g)), _bits(x.grad)))
        return outs, f
    eager, _ = run(False)
    comp, f = run(True)
    assert comp == eager
    assert f.eager_reason is None and "np.bitwise_and" in f.entries[-1].source


@pytest.mark.parametrize("dtype", [T.float32, T.float64])
def test_mlp_step_relu_logsoftmax_nll_bits(dtype):
    """A cross-entropy training step over several batches: losses, gradients, parameters."""
    rng = np.random.default_rng(1)
    xs = [T.tensor(rng.standard_normal((7, 6)) * 3).to(dtype) for _ in range(3)]
    ys = [T.tensor(rng.integers(0, 4, 7)) for _ in range(3)]

    def make():
        net = _mlp(dtype)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x, y):
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return net, step
    ne, se = make()
    nc, sc = make()
    sc = T.compile(sc)
    for i in range(6):
        assert _bits(sc(xs[i % 3], ys[i % 3])) == _bits(se(xs[i % 3], ys[i % 3]))
    for pe, pc in zip(ne.parameters(), nc.parameters()):
        assert _bits(pe) == _bits(pc) and pe._vc[0] == pc._vc[0]
    src = sc.entries[-1].source
    assert sc.eager_reason is None and len(sc.entries) == 1
    assert "np.maximum.reduce" in src and "np.exp(" in src      # log_softmax's lines
    assert "< 4:" in src                                         # nll's bound test


def _nll_step():
    net = _mlp(T.float32)

    def step(x, y, ignore_index=-100):
        loss = F.cross_entropy(net(x), y, ignore_index=ignore_index)
        loss.backward()
        return loss
    return net, step


def test_nll_targets_ignored_or_out_of_range_after_capture():
    """A target equal to ignore_index (-100) takes the kernel's path (that sample is left
    out); a target out of range raises eager's IndexError, negative or too large."""
    x = T.tensor(np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32))
    ne, se = _nll_step()
    nc, sc = _nll_step()
    sc = T.compile(sc)
    for y in ([0, 1, 2, 3, 0], [1, -100, 2, 3, -100], [3, 3, 3, 3, 3]):
        for net in (ne, nc):
            net.zero_grad()
        y = T.tensor(y)
        assert _bits(sc(x, y)) == _bits(se(x, y))
        for pe, pc in zip(ne.parameters(), nc.parameters()):
            assert _bits(pe.grad) == _bits(pc.grad)
    assert len(sc.entries) == 1 and sc.entries[0].replays == 2
    for bad, word in (([0, 1, 4, 0, 0], "Target 4 is out of bounds."),
                      ([0, -1, 2, 0, 0], "Target -1 is out of bounds.")):
        with pytest.raises(IndexError) as ee:
            se(x, T.tensor(bad))
        with pytest.raises(IndexError) as ec:
            sc(x, T.tensor(bad))
        assert str(ec.value) == str(ee.value) and word in str(ec.value)


def test_nll_ignore_index_inside_the_classes_runs_the_kernel():
    """With ignore_index a class (here 0) the bound test cannot tell; the kernel runs."""
    x = T.tensor(np.random.default_rng(3).standard_normal((5, 6)).astype(np.float32))
    ne, se = _nll_step()
    nc, sc = _nll_step()
    sc = T.compile(sc)
    for y in ([0, 1, 2, 3, 0], [1, 0, 2, 3, 0], [0, 0, 0, 0, 0]):
        for net in (ne, nc):
            net.zero_grad()
        y = T.tensor(y)
        a, b = sc(x, y, 0), se(x, y, 0)
        assert _bits(a) == _bits(b)     # (NaN for all ignored, as eager)
    assert " < 4:" not in sc.entries[-1].source


@pytest.mark.parametrize("dtype", [T.float32, T.float64])
def test_float_scalars_as_arrays_keep_values(dtype):
    """``x * 0.1 + 3 - 1e-8`` and tanh's backward (its 1 as an
    array) over float32 and float64: eager's bits; an int tensor's scalars stay Python's."""
    rng = np.random.default_rng(4)
    x = T.tensor(rng.standard_normal((3, 4)), dtype=dtype, requires_grad=True)
    n = T.tensor(rng.integers(-5, 5, (3, 4)))

    def f(x, n):
        y = T.tanh(x * 0.1 + 3 - 1e-8) * 1.7
        y.sum().backward()
        return y.detach(), n + 3, n * 2
    c = T.compile(f)
    for _ in range(3):
        x.grad = None
        rc = c(x, n)
        gc = x.grad
        x.grad = None
        re = f(x, n)
        assert [_bits(a) for a in rc] == [_bits(a) for a in re]
        assert _bits(gc) == _bits(x.grad)
    assert c.eager_reason is None


def test_accumulate_into_the_bound_grad_and_its_guards():
    """Gradients accumulate (no zero_grad): the replay adds into the ``.grad`` read by the
    guards, bumping its version; a ``.grad`` replaced by a new tensor between calls is the
    one added into (not the one held from before); set to None, the program captured with
    no ``.grad`` answers, without another capture."""
    rng = np.random.default_rng(5)
    a0 = rng.standard_normal((3, 3)).astype(np.float32)
    b0 = rng.standard_normal((3, 3)).astype(np.float32)

    def make():
        a = T.tensor(a0, requires_grad=True)
        b = T.tensor(b0, requires_grad=True)

        def f():
            e = T.tanh(a * b).sum()
            e.backward()
            return e
        return a, b, f
    ae, be, fe = make()
    ac, bc, fc = make()
    fc = T.compile(fc)

    def same():
        for p, q in ((ae, ac), (be, bc)):
            assert _bits(p.grad) == _bits(q.grad) and p.grad._vc[0] == q.grad._vc[0]
    for _ in range(4):
        assert _bits(fc()) == _bits(fe())
        same()
    assert len(fc.entries) == 2 and "_g0._vc[0] += 1" in fc.entries[1].source
    held = ac.grad
    held_bits, held_vc = _bits(held), held._vc[0]
    for p in (ae, ac):
        p.grad = T.ones(3, 3)
    assert _bits(fc()) == _bits(fe())
    same()
    # the .grad replaced before the call got the addition, the one held from before did not
    assert held._vc[0] == held_vc and _bits(held) == held_bits
    assert ac.grad is not held and _bits(ac.grad) != held_bits
    for p in (ae, be, ac, bc):
        p.grad = None
    fc(), fe()
    same()
    fc(), fe()
    same()
    assert len(fc.entries) == 2 and not fc.recompile_reasons[1:], fc.recompile_reasons
    # one .grad None, the other not: neither program answers, each says why
    for p in (ae, ac):
        p.grad = None
    fc(), fe()
    same()
    assert len(fc.entries) == 3
    assert fc.recompile_reasons[-1] == [
        "0/0: a parameter of shape [3, 3]: .grad is None == True failed",
        "1/1: a parameter of shape [3, 3]: .grad is None == False failed"]


def test_optimizer_guard_fails_when_the_param_list_changes():
    net = _mlp(T.float32)
    opt = T.optim.SGD(net.parameters(), lr=0.1)
    x = T.tensor(np.ones((2, 6), np.float32))

    def step(x):
        loss = net(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    c = T.compile(step)
    c(x), c(x)
    assert len(c.entries) == 1
    ps = opt.param_groups[0]["params"]
    ps[1], ps[2] = ps[2], ps[1]
    c(x)
    assert len(c.entries) == 2
    assert any("param groups of SGD changed" in r for rs in c.recompile_reasons for r in rs)
    words = [g.words for g in c.entries[0].program.guards]
    assert "SGD has the same 1 param group holding the same 4 parameters, and its step is " \
           "not replaced" in words


@pytest.mark.parametrize("dtype", [T.float32, T.float64])
def test_sgd_update_with_the_live_learning_rate(dtype):
    """The plain SGD update reads ``lr`` at every call (rounded to the dtype in a 0-d
    array); an int ``lr``, ``lr == 1`` and momentum take the general update: eager's
    parameters and versions bit for bit throughout."""
    x = T.tensor(np.random.default_rng(6).standard_normal((3, 6))).to(dtype)

    def make():
        net = _mlp(dtype, seed=7)
        opt = T.optim.SGD(net.parameters(), lr=0.1)

        def step(x):
            loss = net(x).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss
        return net, opt, step
    ne, oe, se = make()
    nc, oc, sc = make()
    sc = T.compile(sc)
    for lr, mom in ((0.1, 0), (0.037, 0), (1, 0), (2, 0), (1.0, 0), (0.3, 0.9), (1e-3, 0)):
        for o in (oe, oc):
            o.param_groups[0]["lr"] = lr
            o.param_groups[0]["momentum"] = mom
        assert _bits(sc(x)) == _bits(se(x))
        for pe, pc in zip(ne.parameters(), nc.parameters()):
            assert _bits(pe) == _bits(pc) and pe._vc[0] == pc._vc[0]
    assert len(sc.entries) == 1 and sc.eager_reason is None


def test_two_backwards_into_one_leaf_per_call():
    """Two backward passes in one call add into the leaf's ``.grad``: when its first gradient
    is another tensor's array (``a * b`` with a gradient of ones gives ``b``) or a buffer the
    next call reuses (relu's backward), the replay sets ``.grad`` to a copy and adds into
    that, never into the parameter ``b`` or the buffer; a ``.grad`` kept from a call is not
    changed by the next."""
    def make():
        a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)

        def step():
            (a * b).sum().backward()
            (a * b).sum().backward()
            F.relu(x).sum().backward()
            (F.relu(x) * 3).sum().backward()
        return (a, b, x), step
    le, se = make()
    lc, sc = make()
    sc = T.compile(sc)
    kept = []
    for _ in range(4):
        se(), sc()
        for p, q in zip(le, lc):
            assert _bits(p) == _bits(q) and _bits(p.grad) == _bits(q.grad)
            assert p.grad._vc[0] == q.grad._vc[0]
        kept.append(lc[2].grad)
        for p in le + lc:
            p.grad = None
    assert sc.eager_reason is None and len(sc.entries) == 1
    assert all(k.tolist() == [4.0, 0.0, 4.0] for k in kept)


def test_scalar_arrays_keep_the_sign_of_zero_and_int_operands():
    """``x + 0.0`` and ``x + -0.0`` (which differ at ``x = -0.0``), ``x * -0.0``, and
    ``ldexp``-like ufuncs whose int operand has no float loop keep eager's bits."""
    x = T.tensor([-0.0, 0.0, 1.5, -2.0], dtype=T.float32)

    def f(x):
        return x + 0.0, x + -0.0, x * -0.0, x - 0.0, x * 0.0
    c = T.compile(f)
    for _ in range(3):
        assert [_bits(a) for a in c(x)] == [_bits(a) for a in f(x)]
    assert c.eager_reason is None


def test_cross_entropy_forward_compiled_backward_outside():
    """A compiled loss whose backward runs after the call (the captured backward program):
    nll's backward lines after the forward's fast path, and the kernel after its other
    path (an ignored target), give eager's gradients."""
    x = T.tensor(np.random.default_rng(8).standard_normal((5, 6)).astype(np.float32))
    ne, nc = _mlp(T.float32, seed=9), _mlp(T.float32, seed=9)
    fc = T.compile(lambda x, y: F.cross_entropy(nc(x), y))
    for y in ([0, 1, 2, 3, 0], [1, 3, 2, 3, 0], [1, -100, 2, 3, -100], [3, 3, 3, 3, 3]):
        y = T.tensor(y)
        for net in (ne, nc):
            net.zero_grad()
        le, lc = F.cross_entropy(ne(x), y), fc(x, y)
        le.backward()
        lc.backward()
        assert _bits(le) == _bits(lc)
        for pe, pc in zip(ne.parameters(), nc.parameters()):
            assert _bits(pe.grad) == _bits(pc.grad)
    assert fc.eager_reason is None and len(fc.entries) == 1
    assert "is R" in fc.entries[0].source


def test_log_softmax_of_a_transposed_input():
    """An input that is not C-contiguous (a transpose) runs the kernel (its sums run in the
    input's order); values and gradients are eager's."""
    rng = np.random.default_rng(10)
    w = T.tensor(rng.standard_normal((300, 7)).astype(np.float32) * 4, requires_grad=True)
    y = T.tensor([0, 299, 2, 150, 1, 77, 8])

    def f(w, y):
        loss = F.nll_loss(F.log_softmax(w.t(), 1), y)
        loss.backward()
        return loss
    c = T.compile(f)
    for _ in range(3):
        w.grad = None
        lc = c(w, y)
        gc = w.grad
        w.grad = None
        assert _bits(lc) == _bits(f(w, y)) and _bits(gc) == _bits(w.grad)
    assert c.eager_reason is None
