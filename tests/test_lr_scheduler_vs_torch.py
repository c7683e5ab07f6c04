"""Every learning-rate scheduler against PyTorch's: the rates (and cycled momenta) of 30
steps over two parameter groups, the warnings, a state-dict round trip in the middle of the
schedule, stepping to an epoch by the closed form, and the errors of bad arguments."""
from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _opt(L, kind="sgd"):
    a = L.zeros(2, requires_grad=True)
    b = L.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.5}]
    if kind == "adam":
        return L.optim.Adam(groups, lr=0.1)
    return L.optim.SGD(groups, lr=0.1, momentum=0.9)


S = "optim.lr_scheduler"
CASES = {
    "LambdaLR": ("sgd", lambda L, o: L.optim.lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e)),
    "MultiplicativeLR": ("sgd", lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(
        o, [lambda e: 0.95, lambda e: 0.9 if e % 2 else 1.0])),
    "StepLR": ("sgd", lambda L, o: L.optim.lr_scheduler.StepLR(o, 4, gamma=0.5)),
    "MultiStepLR": ("sgd", lambda L, o: L.optim.lr_scheduler.MultiStepLR(o, [3, 7, 7, 20], 0.3)),
    "ConstantLR": ("sgd", lambda L, o: L.optim.lr_scheduler.ConstantLR(o, 0.25, total_iters=6)),
    "LinearLR": ("sgd", lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.1, 0.8, total_iters=9)),
    "ExponentialLR": ("sgd", lambda L, o: L.optim.lr_scheduler.ExponentialLR(o, 0.93)),
    "PolynomialLR": ("sgd", lambda L, o: L.optim.lr_scheduler.PolynomialLR(o, 12, power=2.0)),
    "CosineAnnealingLR": ("sgd", lambda L, o: L.optim.lr_scheduler.CosineAnnealingLR(o, 7, 0.01)),
    "CosineAnnealingWarmRestarts": ("sgd", lambda L, o:
                                    L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 3, 2, 0.001)),
    "CyclicLR_triangular": ("sgd", lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, [0.1, 0.2], step_size_up=4, step_size_down=3)),
    "CyclicLR_triangular2": ("sgd", lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=3, mode="triangular2")),
    "CyclicLR_exp_range_adam": ("adam", lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=5, mode="exp_range", gamma=0.9)),
    "CyclicLR_scale_fn": ("sgd", lambda L, o: L.optim.lr_scheduler.CyclicLR(
        o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 1 / (x + 1), scale_mode="iterations",
        cycle_momentum=False)),
    "OneCycleLR": ("sgd", lambda L, o: L.optim.lr_scheduler.OneCycleLR(o, [1.0, 2.0], 31)),
    "OneCycleLR_three_phase_adam": ("adam", lambda L, o: L.optim.lr_scheduler.OneCycleLR(
        o, 1.0, 31, three_phase=True, anneal_strategy="linear")),
    "SequentialLR": ("sgd", lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.LinearLR(o, 0.1, total_iters=4),
            L.optim.lr_scheduler.ExponentialLR(o, 0.9),
            L.optim.lr_scheduler.StepLR(o, 3)], milestones=[5, 12])),
    "ChainedScheduler": ("sgd", lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.ConstantLR(o, 0.5, total_iters=3),
         L.optim.lr_scheduler.ExponentialLR(o, 0.9)])),
}


def _state(o):
    out = []
    for g in o.param_groups:
        out.append((g["lr"], g.get("momentum"), tuple(g["betas"]) if "betas" in g else None))
    return out


def _run(L, name, resume_at=None):
    """Rates, momenta and warnings over 30 steps; ``resume_at``: rebuild optimizer and
    scheduler from their state dicts at that step."""
    kind, make = CASES[name]
    o = _opt(L, kind)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = make(L, o)
        seen = [(s.get_last_lr(), _state(o))]
        for i in range(30):
            if i == resume_at:
                osd, ssd = o.state_dict(), s.state_dict()
                o = _opt(L, kind)
                s = make(L, o)
                o.load_state_dict(osd)
                s.load_state_dict(ssd)
            o.step()
            s.step()
            seen.append((s.get_last_lr(), _state(o)))
    return seen, sorted({(x.category.__name__, str(x.message)[:60]) for x in w})


def _close(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)
    return a == b


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_matches_torch(name):
    mine, theirs = _run(dyngrad, name), _run(torch, name)
    assert _close(mine[0], theirs[0]), (mine[0], theirs[0])
    assert mine[1] == theirs[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_dict_round_trip_matches_torch(name):
    assert _close(_run(dyngrad, name, resume_at=11)[0], _run(torch, name, resume_at=11)[0])


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
                                  "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
                                  "CosineAnnealingWarmRestarts"])
def test_step_to_an_epoch_matches_torch(name):
    def run(L):
        o = _opt(L)
        s = CASES[name][1](L, o)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = []
            for e in (3, 8, 2, 15, 5.5 if name == "CosineAnnealingWarmRestarts" else 5):
                o.step()
                s.step(e)
                out.append(s.get_last_lr())
        return out, sorted({str(x.message)[:50] for x in w})
    mine, theirs = run(dyngrad), run(torch)
    assert _close(mine[0], theirs[0]) and mine[1] == theirs[1]


BAD = {
    "constant_factor": lambda L, o: L.optim.lr_scheduler.ConstantLR(o, 1.5),
    "linear_start": lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.0),
    "linear_end": lambda L, o: L.optim.lr_scheduler.LinearLR(o, 0.5, 1.5),
    "multiplicative_not_callable": lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, 0.9),
    "multiplicative_count": lambda L, o: L.optim.lr_scheduler.MultiplicativeLR(o, [abs]),
    "warm_T0": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 0),
    "warm_T_mult": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 2, 1.5),
    "warm_eta": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 2, 1, "x"),
    "warm_negative_epoch": lambda L, o: L.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        o, 2).step(-1),
    "cyclic_mode": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.1, 1.0, mode="x"),
    "cyclic_max_lr_count": lambda L, o: L.optim.lr_scheduler.CyclicLR(o, 0.1, [1.0]),
    "cyclic_no_momentum": lambda L, o: L.optim.lr_scheduler.CyclicLR(
        L.optim.Adagrad([L.zeros(1, requires_grad=True)]), 0.1, 1.0),
    "sequential_empty": lambda L, o: L.optim.lr_scheduler.SequentialLR(o, [], []),
    "sequential_milestones": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.StepLR(o, 2)], [3]),
    "sequential_plateau": lambda L, o: L.optim.lr_scheduler.SequentialLR(
        o, [L.optim.lr_scheduler.ReduceLROnPlateau(o)], []),
    "chained_empty": lambda L, o: L.optim.lr_scheduler.ChainedScheduler([]),
    "chained_other_optimizer": lambda L, o: L.optim.lr_scheduler.ChainedScheduler(
        [L.optim.lr_scheduler.StepLR(o, 2), L.optim.lr_scheduler.StepLR(_opt(L), 2)]),
}


def _error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        msg = str(e)
        # an optimizer's repr differs (dyngrad's own class and tensors)
        return type(e).__name__, msg.split(" has ")[0]
    return None


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_arguments_as_torch(name):
    mine = _error(lambda: BAD[name](dyngrad, _opt(dyngrad)))
    theirs = _error(lambda: BAD[name](torch, _opt(torch)))
    assert mine is not None and mine == theirs


def test_get_lr_outside_step_warns_as_torch():
    for L in (dyngrad, torch):
        s = L.optim.lr_scheduler.StepLR(_opt(L), 2)
        with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
            s.get_lr()
