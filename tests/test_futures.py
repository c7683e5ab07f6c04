"""``dyngrad.futures`` behaves as ``torch.futures``: the same results, the same exceptions
(type and first line) and the same callback order, run side by side."""
from __future__ import annotations

import threading
import time

import pytest

import dyngrad

torch = pytest.importorskip("torch")

LIBS = [pytest.param(dyngrad, id="dyngrad"), pytest.param(torch, id="torch")]


def _outcome(fn):
    try:
        return ("ok", fn())
    except Exception as e:  # noqa: BLE001
        return (type(e).__name__, str(e).splitlines()[0])


def _scenarios(L):
    F = L.futures.Future
    out = {}
    f = F()
    out["done-before"] = f.done()
    f.set_result(5)
    out["result"] = (f.done(), f.value(), f.wait())
    out["twice"] = _outcome(lambda: f.set_result(6))
    out["exception-after-result"] = _outcome(lambda: f.set_exception(ValueError("x")))
    g = F()
    g.set_exception(ValueError("bad"))
    out["wait-exception"] = _outcome(g.wait)
    out["value-exception"] = _outcome(g.value)
    out["not-an-exception"] = _outcome(lambda: F().set_exception("text"))
    a = F()
    b = a.then(lambda fut: fut.wait() * 2)
    c = b.then(lambda fut: fut.wait() + 1)
    a.set_result(3)
    out["then"] = (b.wait(), c.wait())
    a = F()
    b = a.then(lambda fut: fut.wait() * 2)
    a.set_exception(RuntimeError("boom"))
    out["then-of-exception"] = _outcome(b.wait)
    a = F()
    b = a.then(lambda fut: 1 / 0)
    a.set_result(1)
    out["callback-raises"] = _outcome(b.wait)
    a, log = F(), []
    a.add_done_callback(lambda fut: log.append(("cb1", fut.value())))
    a.add_done_callback(lambda fut: log.append(("cb2", fut.value())))
    a.set_result(7)
    a.add_done_callback(lambda fut: log.append(("late", fut.value())))
    out["callbacks"] = log
    x, y = F(), F()
    col = L.futures.collect_all([x, y])
    states = [col.done()]
    x.set_result(1)
    states.append(col.done())
    y.set_result(2)
    out["collect_all"] = (states, [f.wait() for f in col.wait()])
    x, y = F(), F()
    x.set_result(1)
    y.set_exception(ValueError("v"))
    out["wait_all-exception"] = _outcome(lambda: L.futures.wait_all([x, y]))
    out["wait_all-empty"] = L.futures.wait_all([])
    out["devices-cpu"] = _outcome(lambda: F(devices=["cpu"]))
    out["devices-cuda"] = _outcome(lambda: F(devices=["cuda:0"]))
    return out


def test_same_behaviour_as_torch(capfd):
    got, exp = _scenarios(dyngrad), _scenarios(torch)
    assert got.keys() == exp.keys()
    for k in got:
        assert got[k] == exp[k], k


@pytest.mark.parametrize("L", LIBS)
def test_wait_blocks_until_another_thread_sets_the_result(L):
    f = L.futures.Future()
    threading.Thread(target=lambda: (time.sleep(0.05), f.set_result(42))).start()
    assert f.wait() == 42


def test_callback_error_is_reported_not_raised(capfd):
    f = dyngrad.futures.Future()
    f.add_done_callback(lambda fut: 1 / 0)
    f.set_result(1)
    assert "ZeroDivisionError: division by zero" in capfd.readouterr().err


def test_top_level_future_and_tensor_values():
    f = dyngrad.Future()
    f.set_result(dyngrad.ones(2))
    assert f.wait().tolist() == [1.0, 1.0]
    assert isinstance(f.then(lambda x: 1), dyngrad.futures.Future)
