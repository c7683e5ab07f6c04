"""Concurrency: grad mode is per thread, and independent training runs in two threads give
exactly the results they give one after the other."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import dyngrad as torch


def _run_threads(*targets, timeout=60):
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # reported in the main thread
                errors.append(e)
        return run

    ts = [threading.Thread(target=wrap(f)) for f in targets]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
        assert not t.is_alive(), "thread hung"
    if errors:
        raise errors[0]


@pytest.fixture
def fast_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.mark.parametrize("mode", ["no_grad", "set_grad_enabled", "inference_mode", "decorator"])
def test_grad_mode_is_per_thread(mode):
    x = torch.ones(3, requires_grad=True)
    inside = threading.Event()
    checked = threading.Event()
    seen = {}

    def compute():
        return x * 2

    if mode == "decorator":
        compute_off = torch.no_grad()(compute)
    else:
        compute_off = None

    def switched_off():
        if mode == "no_grad":
            ctx = torch.no_grad()
        elif mode == "set_grad_enabled":
            ctx = torch.set_grad_enabled(False)
        elif mode == "inference_mode":
            ctx = torch.inference_mode()
        else:
            ctx = None
        if ctx is None:
            inside.set()
            checked.wait(10)
            seen["off"] = compute_off().requires_grad
            seen["off_enabled"] = False
            return
        with ctx:
            seen["off_enabled"] = torch.is_grad_enabled()
            inside.set()
            checked.wait(10)
            seen["off"] = compute().requires_grad

    def other():
        assert inside.wait(10)
        seen["other_enabled"] = torch.is_grad_enabled()
        seen["other"] = compute().requires_grad
        checked.set()

    _run_threads(switched_off, other)
    assert seen == {"off": False, "off_enabled": False, "other": True, "other_enabled": True}
    assert torch.is_grad_enabled()
    assert (x * 2).requires_grad


def test_new_thread_starts_with_grad_enabled():
    seen = []
    with torch.no_grad():
        t = threading.Thread(target=lambda: seen.append(torch.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_set_grad_enabled_false_in_thread_does_not_leak():
    done = threading.Event()

    def off():
        torch.set_grad_enabled(False)   # not restored: stays off in that thread only
        done.set()

    _run_threads(off)
    assert done.is_set()
    assert torch.is_grad_enabled()
    x = torch.ones(2, requires_grad=True)
    assert (x + 1).requires_grad


def _make_job(seed, steps=150, width=24):
    """A model, optimizer and data, built deterministically from ``seed`` (in the caller's
    thread, so the global RNG is not shared while training)."""
    rs = np.random.RandomState(seed)
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, width), torch.nn.Tanh(),
                                torch.nn.Linear(width, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 1))
    opt = (torch.optim.Adam(model.parameters(), lr=1e-2) if seed % 2
           else torch.optim.SGD(model.parameters(), lr=5e-2, momentum=0.9))
    X = torch.tensor(rs.randn(steps, 16, 6).astype(np.float32))
    Y = torch.tensor(rs.randn(steps, 16, 1).astype(np.float32))
    losses = []

    def train():
        for i in range(steps):
            opt.zero_grad()
            out = model(X[i])
            loss = ((out - Y[i]) ** 2).mean()
            if i % 3 == 0:
                with torch.no_grad():          # grad-mode switches inside the loop
                    _ = model(X[i]).sum()
            loss.backward()
            opt.step()
            losses.append(loss.item())

    return model, train, losses


def _params(model):
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_two_threads_train_like_sequential(fast_switching):
    m1, t1, l1 = _make_job(1)
    m2, t2, l2 = _make_job(2)
    t1()
    t2()
    seq = (_params(m1), _params(m2), list(l1), list(l2))

    m1, t1, l1 = _make_job(1)
    m2, t2, l2 = _make_job(2)
    _run_threads(t1, t2)
    par = (_params(m1), _params(m2), l1, l2)

    assert par[2] == seq[2] and par[3] == seq[3]
    for a, b in zip(par[0] + par[1], seq[0] + seq[1]):
        np.testing.assert_array_equal(a, b)


def test_thread_with_no_grad_and_thread_training(fast_switching):
    # one thread evaluates under no_grad the whole time, the other trains; training must
    # match a run made alone
    m, train, losses = _make_job(3, steps=100)
    train()
    alone = _params(m)

    m, train, losses = _make_job(3, steps=100)
    evaluator = torch.nn.Linear(6, 1)
    stop = threading.Event()
    seen = []

    def evaluate():
        with torch.no_grad():
            while not stop.is_set():
                seen.append(evaluator(torch.ones(4, 6)).requires_grad)

    def run_train():
        try:
            train()
        finally:
            stop.set()

    _run_threads(evaluate, run_train)
    assert seen and not any(seen)
    for a, b in zip(_params(m), alone):
        np.testing.assert_array_equal(a, b)


def test_concurrent_backward_into_shared_leaf(fast_switching):
    # independent graphs from one shared leaf: every gradient must be accumulated
    w = torch.zeros(400, 400, dtype=torch.float64, requires_grad=True)
    n = 40

    def work():
        for _ in range(n):
            (w * 1.0).sum().backward()

    for _ in range(5):
        w.grad = None
        _run_threads(work, work, work, work)
        assert w.grad is not None
        np.testing.assert_array_equal(w.grad.numpy(), np.full((400, 400), 4.0 * n))
