"""optim.swa_utils against PyTorch: the averaged weights (equal-weight and EMA, with and
without buffers, per-tensor and list averaging functions), SWALR's rates, update_bn's
recomputed statistics, and the argument errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _net(L):
    L.manual_seed(0)
    net = L.nn.Sequential(L.nn.Linear(3, 4), L.nn.BatchNorm1d(4), L.nn.Linear(4, 2))
    rs = np.random.RandomState(1)
    with L.no_grad():
        for p in net.parameters():
            p.copy_(L.tensor(rs.uniform(-1, 1, size=tuple(p.shape)), dtype=p.dtype))
    return net


def _state(m):
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


AVG = {
    "swa": lambda L: {},
    "ema": lambda L: {"multi_avg_fn": L.optim.swa_utils.get_ema_multi_avg_fn(0.9)},
    "ema_single": lambda L: {"avg_fn": L.optim.swa_utils.get_ema_avg_fn(0.8)},
    "swa_single": lambda L: {"avg_fn": L.optim.swa_utils.get_swa_avg_fn()},
    "swa_multi": lambda L: {"multi_avg_fn": L.optim.swa_utils.get_swa_multi_avg_fn()},
    "ema_buffers": lambda L: {"multi_avg_fn": L.optim.swa_utils.get_ema_multi_avg_fn(0.7),
                              "use_buffers": True},
}


def _averaged(L, kind):
    net = _net(L)
    avg = L.optim.swa_utils.AveragedModel(net, **AVG[kind](L))
    opt = L.optim.SGD(net.parameters(), lr=0.01)
    x = L.tensor(np.random.RandomState(2).randn(8, 3), dtype=L.float32)
    for _ in range(4):
        opt.zero_grad()
        net(x).pow(2).mean().backward()
        opt.step()
        avg.update_parameters(net)
    return _state(avg), avg(x).detach().numpy()


@pytest.mark.parametrize("kind", sorted(AVG))
def test_averaged_model_matches_torch(kind):
    (mine, out_m), (theirs, out_t) = _averaged(dyngrad, kind), _averaged(torch, kind)
    assert mine.keys() == theirs.keys()
    for k in mine:
        np.testing.assert_allclose(mine[k], theirs[k], rtol=1e-6, atol=1e-7, err_msg=k)
    np.testing.assert_allclose(out_m, out_t, rtol=1e-5, atol=1e-6)


def test_swalr_matches_torch():
    def run(L, **kw):
        opt = L.optim.SGD([L.zeros(1, requires_grad=True)], lr=0.5)
        s = L.optim.swa_utils.SWALR(opt, **kw)
        out = []
        for _ in range(8):
            opt.step()
            s.step()
            out.append(s.get_last_lr()[0])
        return out
    for kw in ({"swa_lr": 0.05, "anneal_epochs": 3},
               {"swa_lr": 0.05, "anneal_epochs": 4, "anneal_strategy": "linear"},
               {"swa_lr": 0.2, "anneal_epochs": 0}):
        np.testing.assert_allclose(run(dyngrad, **kw), run(torch, **kw), rtol=1e-12)


def test_update_bn_matches_torch():
    def run(L):
        net = _net(L)
        rs = np.random.RandomState(3)
        loader = [(L.tensor(rs.randn(5, 3), dtype=L.float32), 0) for _ in range(3)]
        net.eval()
        L.optim.swa_utils.update_bn(loader, net)
        return net.training, _state(net)
    (tm, mine), (tt, theirs) = run(dyngrad), run(torch)
    assert tm == tt
    for k in mine:
        np.testing.assert_allclose(mine[k], theirs[k], rtol=1e-5, atol=1e-6, err_msg=k)


BAD = {
    "both_fns": lambda L: L.optim.swa_utils.AveragedModel(
        L.nn.Linear(1, 1), avg_fn=L.optim.swa_utils.get_swa_avg_fn(),
        multi_avg_fn=L.optim.swa_utils.get_swa_multi_avg_fn()),
    "decay": lambda L: L.optim.swa_utils.get_ema_avg_fn(1.5),
    "strategy": lambda L: L.optim.swa_utils.SWALR(
        L.optim.SGD([L.zeros(1, requires_grad=True)], lr=0.1), 0.1, anneal_strategy="x"),
    "anneal_epochs": lambda L: L.optim.swa_utils.SWALR(
        L.optim.SGD([L.zeros(1, requires_grad=True)], lr=0.1), 0.1, anneal_epochs=-1),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_errors_match_torch(name):
    def err(L):
        with pytest.raises(Exception) as e:
            BAD[name](L)
        return type(e.value), str(e.value)
    assert err(dyngrad) == err(torch)
