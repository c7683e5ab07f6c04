"""Depth and size: very deep graphs, memory proportional to the graph, flat memory across
training loops, and saved buffers freed as soon as backward is done."""
from __future__ import annotations

import gc
import math
import tracemalloc
import weakref

import numpy as np
import pytest

import dyngrad as torch

MB = 1 << 20


def _chain(n, factor=1.0000001):
    x0 = torch.tensor(1.0, dtype=torch.float64, requires_grad=True)
    x = x0
    for _ in range(n):
        x = x * factor
    return x0, x


def _check_chain(n):
    x0, x = _chain(n)
    x.backward()
    expected = 1.0000001 ** n
    assert math.isclose(x.item(), expected, rel_tol=1e-9)
    assert math.isclose(x0.grad.item(), expected, rel_tol=1e-9)


def test_chain_200k_nodes():
    _check_chain(200_000)


def test_chain_1m_nodes():
    _check_chain(1_000_000)


def test_deep_graph_dropped_without_backward():
    # freeing a deep graph that never ran backward must not overflow the C stack
    x0, x = _chain(300_000)
    ref = weakref.ref(x.grad_fn)
    del x
    gc.collect()
    assert ref() is None


def test_deep_graph_retain_graph_twice():
    x0, x = _chain(100_000)
    x.backward(retain_graph=True)
    x.backward()
    assert math.isclose(x0.grad.item(), 2 * 1.0000001 ** 100_000, rel_tol=1e-9)
    with pytest.raises(RuntimeError, match="second time"):
        x.backward()


def test_deep_autograd_grad_create_graph():
    x0 = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    x = x0
    for _ in range(5_000):
        x = torch.sin(x) * 0.5 + x0 * 0.5
    (g,) = torch.autograd.grad(x, x0, create_graph=True)
    (gg,) = torch.autograd.grad(g, x0)
    assert np.isfinite(g.item()) and np.isfinite(gg.item())


def _graph_bytes(n):
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        x0, x = _chain(n)
        built = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.reset_peak()
        x.backward()
        peak = tracemalloc.get_traced_memory()[1] - base
        del x, x0
        gc.collect()
        after = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    return built, peak, after


def test_memory_proportional_to_chain():
    small, _, _ = _graph_bytes(10_000)
    big, peak, after = _graph_bytes(40_000)
    # linear: four times the nodes, about four times the bytes
    assert 3.0 < big / small < 5.0, (small, big)
    per_node = big / 40_000
    assert per_node < 2000, f"{per_node:.0f} bytes per node"
    # backward needs at most about as much again as the graph (its queue and buffers)
    assert peak < 2.2 * big, (peak, big)
    # and once the output is dropped, nothing of the graph is left
    assert after < 0.05 * big, (after, big)


def test_backward_frees_saved_buffers_while_loss_alive():
    rs = np.random.RandomState(0)
    x = torch.tensor(rs.randn(400, 400), requires_grad=True)
    h = torch.tanh(x)                       # TanhBackward0 saves its output
    ref = weakref.ref(h.detach().numpy())   # the saved buffer itself
    h = torch.sin(h * 2.0)                  # sin saves its input (the 2x product)
    loss = (h * h).sum()
    del h
    gc.collect()
    assert ref() is not None                # kept alive only by the graph
    loss.backward()
    assert ref() is None                    # freed at once, with `loss` still referenced
    assert loss.grad_fn is not None
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()


def test_backward_frees_memory_at_once():
    rs = np.random.RandomState(1)
    x = torch.tensor(rs.randn(300, 300), requires_grad=True)   # 0.7 MB per array
    gc.collect()
    tracemalloc.start()
    try:
        h = x
        for _ in range(10):
            h = torch.tanh(h) * 1.5
        loss = h.sum()
        del h
        before = tracemalloc.get_traced_memory()[0]
        loss.backward()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    size = x.numel() * 8
    # ten tanh outputs were held by the graph; x.grad is one new array
    assert before - after > 8 * size, (before, after, size)
    assert loss.item() == loss.item()


def _phase_peaks(step, n, phases=3):
    """Run ``step(i)`` n times under tracemalloc; the peak traced memory of each phase."""
    gc.collect()
    tracemalloc.start()
    peaks = []
    try:
        per = n // phases
        for ph in range(phases):
            tracemalloc.reset_peak()
            for i in range(ph * per, (ph + 1) * per):
                step(i)
            peaks.append(tracemalloc.get_traced_memory()[1])
    finally:
        tracemalloc.stop()
    return peaks


def _flat(peaks, margin=64 * 1024, rel=0.05):
    first, last = peaks[0], peaks[-1]
    assert last <= first * (1 + rel) + margin, f"peaks per third grew: {peaks}"


def test_rnn_unrolled_memory_flat():
    torch.manual_seed(0)
    H, I, T, B = 16, 4, 50, 4
    Wx = torch.nn.Parameter(torch.randn(I, H) * 0.3)
    Wh = torch.nn.Parameter(torch.randn(H, H) * 0.3)
    b = torch.nn.Parameter(torch.zeros(H))
    Wo = torch.nn.Parameter(torch.randn(H, 1) * 0.3)
    opt = torch.optim.SGD([Wx, Wh, b, Wo], lr=0.01, momentum=0.9)
    data = torch.randn(T, B, I)
    target = torch.randn(B, 1)
    losses = []

    def step(i):
        h = torch.zeros(B, H)
        for t in range(T):
            h = torch.tanh(data[t] @ Wx + h @ Wh + b)
        loss = ((h @ Wo - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())

    peaks = _phase_peaks(step, 102)
    _flat(peaks)
    assert losses[-1] < losses[0]


def test_mlp_training_memory_flat():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = torch.nn.MSELoss()
    X = torch.randn(32, 4)
    Y = (X[:, :1] * 2 - X[:, 1:2]).detach()
    losses = []

    def step(i):
        opt.zero_grad()
        loss = loss_fn(model(X), Y)
        loss.backward()
        opt.step()
        if i % 100 == 0:
            losses.append(loss.item())

    peaks = _phase_peaks(step, 3000)
    _flat(peaks)
    assert losses[-1] < 0.1 * losses[0]


def test_graph_not_kept_by_grads_or_optimizer():
    # after training steps, no node of an old graph stays reachable
    model = torch.nn.Linear(3, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    refs = []
    for _ in range(5):
        out = model(torch.randn(2, 3))
        refs.append(weakref.ref(out.grad_fn))
        out.sum().backward()
        opt.step()
        opt.zero_grad()
        del out
    gc.collect()
    assert all(r() is None for r in refs)


@pytest.mark.slow
def test_chain_5m_nodes():
    _check_chain(5_000_000)


@pytest.mark.slow
def test_mlp_training_memory_flat_long():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                                torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.randn(64, 8)
    Y = torch.randn(64, 1)

    def step(i):
        opt.zero_grad()
        loss = ((model(X) - Y) ** 2).mean()
        loss.backward()
        opt.step()

    _flat(_phase_peaks(step, 30_000))
