"""Replay kernels of the ops training steps use most (max pooling, max/min along a dim, cat,
where, indexing with tensors, gelu, layer norm, batch norm, mse_loss, embedding, convolution)
and their backward: a compiled step replays (no eager fallback) and gives eager's values,
gradients and running statistics bit for bit over several calls."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad as T

F = T.nn.functional


# every first replay is also run eagerly and compared (check_replay, tests/conftest.py)
pytestmark = pytest.mark.usefixtures("check_replay")


def _bits(t):
    return (t.dtype, tuple(t.shape), np.ascontiguousarray(t._data).tobytes())


def _leaves(seed):
    rng = np.random.default_rng(seed)

    def X(*s):
        return T.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
    return {"x4": X(2, 3, 6, 6), "x2": X(4, 5), "w": X(4, 3, 3, 3), "b": X(4), "lw": X(5),
            "lb": X(5), "bw": X(3), "bb": X(3), "emb": X(10, 4),
            "idx": T.tensor([0, 2, 1, 2]), "eidx": T.tensor([[1, 3], [3, 9]]),
            "rm": T.zeros(3), "rv": T.ones(3)}


OPS = {
    "max_pool2d": lambda v: F.max_pool2d(v["x4"], 2),
    "max_pool2d_stride_pad": lambda v: F.max_pool2d(v["x4"], 3, stride=2, padding=1),
    "max_dim": lambda v: v["x2"].max(dim=1).values,
    "min_dim_keepdim": lambda v: T.min(v["x2"], 0, keepdim=True)[0],
    "cat": lambda v: T.cat([v["x2"], v["x2"] * 2], 0),
    "where": lambda v: T.where(v["x2"] > 0, v["x2"], v["x2"] * 3),
    "where_number": lambda v: T.where(v["x2"] > 0, v["x2"], 0.5),
    "getitem_tensor": lambda v: v["x2"][v["idx"]],
    "getitem_tensor_and_slice": lambda v: v["x2"][v["idx"], 1:3],
    "gelu": lambda v: F.gelu(v["x2"]),
    "gelu_tanh": lambda v: F.gelu(v["x2"], approximate="tanh"),
    "layer_norm": lambda v: F.layer_norm(v["x2"], (5,), v["lw"], v["lb"]),
    "layer_norm_plain": lambda v: F.layer_norm(v["x2"], (5,)),
    "batch_norm_train": lambda v: F.batch_norm(v["x4"], v["rm"], v["rv"], v["bw"], v["bb"],
                                               training=True),
    "batch_norm_eval": lambda v: F.batch_norm(v["x4"], v["rm"], v["rv"], v["bw"], v["bb"]),
    "mse_loss": lambda v: F.mse_loss(v["x2"], v["x2"].detach() * 0.5),
    "mse_loss_sum": lambda v: F.mse_loss(v["x2"], v["x2"].detach() * 0.5, reduction="sum"),
    "embedding": lambda v: F.embedding(v["eidx"], v["emb"]),
    "conv2d": lambda v: F.conv2d(v["x4"], v["w"], v["b"], padding=1),
    "conv2d_stride": lambda v: F.conv2d(v["x4"], v["w"], v["b"], stride=2),
    "conv2d_no_bias": lambda v: F.conv2d(v["x4"], v["w"]),
}


@pytest.mark.parametrize("name", list(OPS))
def test_op_and_backward_replay_equal_eager(name):
    f = OPS[name]
    vc, ve = _leaves(0), _leaves(0)

    def step(v):
        out = f(v)
        (out * out).sum().backward()
        return out.detach()

    cf = T.compile(step)
    for _ in range(4):
        assert _bits(cf(vc)) == _bits(step(ve))
        for k in vc:
            a, b = vc[k], ve[k]
            assert _bits(a) == _bits(b), k
            assert (a.grad is None) == (b.grad is None), k
            if a.grad is not None:
                assert _bits(a.grad) == _bits(b.grad), k
    assert cf.eager_reason is None


def test_conv_pool_training_step_replays():
    """The conv step of the benchmarks (conv, relu, max pooling twice, linear, cross entropy,
    SGD) replays and matches eager over several steps."""
    def make():
        T.manual_seed(0)
        m = T.nn.Sequential(T.nn.Conv2d(1, 4, 3, padding=1), T.nn.ReLU(), T.nn.MaxPool2d(2),
                            T.nn.Conv2d(4, 8, 3, padding=1), T.nn.ReLU(), T.nn.MaxPool2d(2),
                            T.nn.Flatten(), T.nn.Linear(8 * 7 * 7, 10))
        return m, T.optim.SGD(m.parameters(), lr=0.1)

    (mc, oc), (me, oe) = make(), make()
    rng = np.random.default_rng(1)
    xs = [T.tensor(rng.standard_normal((3, 1, 28, 28)).astype(np.float32)) for _ in range(3)]
    ys = [T.tensor(rng.integers(0, 10, 3)) for _ in range(3)]

    def stepper(m, opt):
        def step(x, y):
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss.detach()
        return step

    cf, se = T.compile(stepper(mc, oc)), stepper(me, oe)
    for i in range(5):
        assert _bits(cf(xs[i % 3], ys[i % 3])) == _bits(se(xs[i % 3], ys[i % 3]))
    for a, b in zip(mc.parameters(), me.parameters()):
        assert _bits(a) == _bits(b)
    assert cf.eager_reason is None


def test_batch_norm_updates_running_statistics_with_versions():
    rm, rv = T.zeros(3), T.ones(3)
    rm2, rv2 = T.zeros(3), T.ones(3)
    x = T.tensor(np.random.default_rng(2).standard_normal((4, 3, 2, 2)).astype(np.float32))

    def f(x, rm, rv):
        return F.batch_norm(x, rm, rv, training=True, momentum=0.2)

    cf = T.compile(lambda x: f(x, rm, rv))
    for _ in range(4):
        assert _bits(cf(x)) == _bits(f(x, rm2, rv2))
    assert _bits(rm) == _bits(rm2) and _bits(rv) == _bits(rv2)
    assert rm._version == rm2._version == 4
    assert cf.eager_reason is None


def test_dropout_in_training_replays_with_new_draws():
    """Dropout in training replays, drawing a new mask at each call from the default
    generator, the masks eager draws from the same seed."""
    x = T.ones(50)
    cf = T.compile(lambda x: F.dropout(x, 0.5, training=True))
    T.manual_seed(1)
    a, b, c = cf(x), cf(x), cf(x)
    assert _bits(a) != _bits(b) != _bits(c)
    assert cf.eager_reason is None and cf.entries[0].replays == 2
    T.manual_seed(1)
    assert [_bits(F.dropout(x, 0.5, training=True)) for _ in range(3)] == \
        [_bits(a), _bits(b), _bits(c)]


def test_max_pool2d_returning_indices_matches_eager():
    x = T.tensor(np.random.default_rng(3).standard_normal((1, 2, 4, 4)).astype(np.float32))

    def f(x):
        return F.max_pool2d(x, 2, return_indices=True)

    cf = T.compile(f)
    for _ in range(3):
        (a, i), (b, j) = cf(x), f(x)
        assert _bits(a) == _bits(b) and _bits(i) == _bits(j)
