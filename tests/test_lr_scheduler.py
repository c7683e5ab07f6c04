"""Learning-rate schedulers: documented schedules, chaining, state dicts, errors."""
import math
import warnings

import pytest

import dyngrad as torch
from dyngrad.optim import lr_scheduler as S


def make_opt(lr=1.0, cls=torch.optim.SGD, **kw):
    return cls([torch.nn.Parameter(torch.ones(1))], lr=lr, **kw)


def run(sched, n):
    out = []
    for _ in range(n):
        sched.optimizer.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
    return out


def test_step_multistep_exponential():
    assert run(S.StepLR(make_opt(), 2, 0.5), 5) == [1.0, 0.5, 0.5, 0.25, 0.25]
    assert run(S.MultiStepLR(make_opt(), [1, 3], 0.1), 4) == pytest.approx([0.1, 0.1, 0.01,
                                                                            0.01])
    assert run(S.ExponentialLR(make_opt(), 0.5), 3) == [0.5, 0.25, 0.125]


def test_cosine_matches_closed_form():
    s = S.CosineAnnealingLR(make_opt(), T_max=10, eta_min=0.1)
    got = run(s, 10)
    want = [0.1 + 0.9 * (1 + math.cos(math.pi * e / 10)) / 2 for e in range(1, 11)]
    assert got == pytest.approx(want)


def test_lambda_and_chaining_and_initial_lr():
    opt = make_opt(0.5)
    s = S.LambdaLR(opt, lambda e: 0.1 * e + 1)
    assert opt.param_groups[0]["initial_lr"] == 0.5
    assert run(s, 2) == pytest.approx([0.55, 0.6])
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        S.LambdaLR(make_opt(), [lambda e: 1, lambda e: 1])
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(make_opt(), 2, last_epoch=3)


def test_one_cycle():
    opt = make_opt(cls=torch.optim.SGD, momentum=0.9)
    s = S.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    assert opt.param_groups[0]["lr"] == pytest.approx(1.0 / 25)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.95)
    lrs = run(s, 9)
    assert max(lrs) == pytest.approx(1.0) and lrs[-1] == pytest.approx(1.0 / 25 / 1e4)
    with pytest.raises(ValueError, match="Tried to step 11 times"):
        s.step()
        s.step()
    with pytest.raises(ValueError, match="You must define either total_steps"):
        S.OneCycleLR(make_opt(), max_lr=1.0)
    adam = make_opt(cls=torch.optim.Adam)
    S.OneCycleLR(adam, max_lr=0.1, epochs=2, steps_per_epoch=3)
    assert adam.param_groups[0]["betas"][0] == pytest.approx(0.95)


def test_reduce_on_plateau():
    opt = make_opt()
    s = S.ReduceLROnPlateau(opt, patience=1, factor=0.5)
    for m in [1.0, 1.0, 1.0]:
        s.step(m)
    assert s.get_last_lr() == [0.5]
    s2 = S.ReduceLROnPlateau(make_opt(), mode="max", patience=0, threshold_mode="abs",
                             threshold=0.1)
    s2.step(1.0)
    s2.step(1.05)
    assert s2.get_last_lr() == [0.1]
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        S.ReduceLROnPlateau(make_opt(), factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown"):
        S.ReduceLROnPlateau(make_opt(), mode="avg")


def test_state_dict_round_trip():
    s = S.StepLR(make_opt(), 2, 0.5)
    run(s, 3)
    sd = s.state_dict()
    assert "optimizer" not in sd and sd["last_epoch"] == 3
    s2 = S.StepLR(make_opt(), 2, 0.5)
    s2.load_state_dict(sd)
    assert s2.last_epoch == 3 and s2.get_last_lr() == s.get_last_lr()


def test_warns_when_scheduler_steps_first():
    s = S.StepLR(make_opt(), 2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        s.step()
    s = S.StepLR(make_opt(), 2)
    s.optimizer.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()
