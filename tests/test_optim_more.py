"""Adadelta, Adamax, NAdam, RAdam, ASGD, LBFGS and Rprop against PyTorch: iterates, state dicts,
load_state_dict round trips and argument errors."""
import numpy as np
import pytest

import dyngrad
from dyngrad import optim

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1234)
X = RNG.normal(size=(8, 3))
Y = RNG.normal(size=(8, 1))
INIT = [RNG.normal(size=(4, 3)), RNG.normal(size=(4,)), RNG.normal(size=(1, 4)), RNG.normal(size=(1,))]


def make_params(lib, dtype):
    dt = getattr(lib, dtype)
    return [lib.nn.Parameter(lib.tensor(a.copy(), dtype=dt)) for a in INIT]


def mlp_loss(lib, params, dtype):
    w1, b1, w2, b2 = params
    dt = getattr(lib, dtype)
    x, y = lib.tensor(X, dtype=dt), lib.tensor(Y, dtype=dt)
    h = lib.tanh(x @ w1.t() + b1)
    return ((h @ w2.t() + b2 - y) ** 2).mean()


def run(lib, name, kw, dtype, steps=12, groups=False):
    params = make_params(lib, dtype)
    if groups:
        opt = getattr(lib.optim, name)([{"params": params[:2]},
                                        {"params": params[2:], "lr": kw.get("lr", 1e-2) * 0.5}], **kw)
    else:
        opt = getattr(lib.optim, name)(params, **kw)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        mlp_loss(lib, params, dtype).backward()
        opt.step()
        out.append(np.concatenate([p.detach().numpy().ravel().copy() for p in params]))
    return np.array(out), opt, params


CASES = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-5}),
    ("Adadelta", {"weight_decay": 0.1, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.99), "weight_decay": 0.05}),
    ("Adamax", {"lr": 0.01, "betas": (0.3, 0.9), "maximize": True}),
    ("NAdam", {}),
    ("NAdam", {"lr": 0.05, "momentum_decay": 0.01, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("NAdam", {"lr": 0.02, "betas": (0.4, 0.9), "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.05, "betas": (0.9, 0.9), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.05, "betas": (0.8, 0.7), "weight_decay": 0.1,
               "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.02, "betas": (0.3, 0.5), "maximize": True}),
    ("ASGD", {}),
    ("ASGD", {"lr": 0.1, "lambd": 0.01, "alpha": 0.5, "t0": 3, "weight_decay": 0.05}),
    ("ASGD", {"lr": 0.05, "t0": 0, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1)}),
    ("Rprop", {"lr": 0.02, "maximize": True}),
    # the two-sided lerp of the first moment (weights on both sides of 0.5)
    ("Adam", {"lr": 0.02, "betas": (0.3, 0.9)}),
    ("AdamW", {"lr": 0.02, "betas": (0.4, 0.99), "weight_decay": 0.1}),
]


def _ids(c):
    return f"{c[0]}-" + "-".join(f"{k}={v}" for k, v in c[1].items())


@pytest.mark.parametrize("dtype,tol", [("float64", 1e-6), ("float32", 1e-5)])
@pytest.mark.parametrize("name,kw", CASES, ids=[_ids(c) for c in CASES])
def test_iterates_match_torch(name, kw, dtype, tol):
    ours, _, _ = run(dyngrad, name, kw, dtype)
    ref, _, _ = run(torch, name, kw, dtype)
    assert ours.dtype == ref.dtype
    np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol * 1e-2)
    # the run moved the parameters (the comparison is not vacuous)
    assert np.abs(ref[-1] - np.concatenate([a.ravel() for a in INIT])).max() > 1e-4


@pytest.mark.parametrize("name,kw", CASES[::3], ids=[_ids(c) for c in CASES[::3]])
def test_param_groups_match_torch(name, kw):
    ours, _, _ = run(dyngrad, name, kw, "float64", steps=10, groups=True)
    ref, _, _ = run(torch, name, kw, "float64", steps=10, groups=True)
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-8)


def _structure(sd):
    def leaf(v):
        if isinstance(v, (torch.Tensor, dyngrad.Tensor)):
            return ("tensor", str(v.dtype).replace("torch.", ""), tuple(v.shape))
        if isinstance(v, list):
            return [leaf(x) for x in v]
        return (type(v).__name__, v if isinstance(v, (int, float, bool, str, tuple, type(None)))
                else None)
    state = {k: [(n, leaf(v)) for n, v in st.items()]
             for k, st in sd["state"].items()}
    groups = [list(g.items()) for g in sd["param_groups"]]
    return state, groups


@pytest.mark.parametrize("name,kw", CASES, ids=[_ids(c) for c in CASES])
def test_state_dict_structure_and_values(name, kw):
    _, ours, _ = run(dyngrad, name, kw, "float64", steps=3)
    _, ref, _ = run(torch, name, kw, "float64", steps=3)
    sd_o, sd_r = ours.state_dict(), ref.state_dict()
    assert _structure(sd_o) == _structure(sd_r)
    assert list(sd_o["param_groups"][0]) == list(sd_r["param_groups"][0])
    for k in sd_r["state"]:
        for n, v in sd_r["state"][k].items():
            np.testing.assert_allclose(sd_o["state"][k][n].numpy(), v.numpy(), rtol=1e-6, atol=1e-12)
    st = ours.state_dict()["state"][0]["step"]
    assert st.dtype == dyngrad.float32 and st.dim() == 0 and float(st) == 3.0


@pytest.mark.parametrize("name,kw", CASES, ids=[_ids(c) for c in CASES])
def test_load_state_dict_round_trip(name, kw):
    _, opt, params = run(dyngrad, name, kw, "float64", steps=4)
    sd = opt.state_dict()
    clone = [dyngrad.nn.Parameter(p.detach().clone()) for p in params]
    opt2 = getattr(optim, name)(clone, **kw)
    opt2.load_state_dict(sd)
    # the same state dict, converted, loads into torch's optimizer (same layout)
    _, topt, tparams = run(torch, name, kw, "float64", steps=1)
    topt.load_state_dict({"state": {k: {n: torch.tensor(v.numpy()) for n, v in st.items()}
                                    for k, st in sd["state"].items()},
                          "param_groups": sd["param_groups"]})
    # (both cast floating state other than 'step' to the parameter's dtype on load)
    assert _structure(opt2.state_dict()) == _structure(topt.state_dict())
    with torch.no_grad():
        for tp, p in zip(tparams, clone):
            tp.copy_(torch.tensor(p.detach().numpy()))
    for _ in range(5):
        for lib, o, ps in ((dyngrad, opt, params), (dyngrad, opt2, clone), (torch, topt, tparams)):
            o.zero_grad()
            mlp_loss(lib, ps, "float64").backward()
            o.step()
    for a, b, tp in zip(params, clone, tparams):
        # (NAdam's mu_product is float64 after a load, in PyTorch too: rounding-level drift)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7)
        np.testing.assert_allclose(b.detach().numpy(), tp.detach().numpy(), rtol=1e-6, atol=1e-10)


BAD_ARGS = [
    ("Adadelta", {"lr": -1.0}), ("Adadelta", {"rho": 1.5}), ("Adadelta", {"rho": -0.1}),
    ("Adadelta", {"eps": -1e-3}), ("Adadelta", {"weight_decay": -1}),
    ("Adamax", {"lr": -0.5}), ("Adamax", {"eps": -1.0}), ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}), ("Adamax", {"weight_decay": -0.5}),
    ("NAdam", {"lr": -1}), ("NAdam", {"eps": -1.0}), ("NAdam", {"betas": (-0.1, 0.9)}),
    ("NAdam", {"betas": (0.9, 1.0)}), ("NAdam", {"weight_decay": -1e-2}),
    ("NAdam", {"momentum_decay": -1.0}),
    ("RAdam", {"lr": -1e-3}), ("RAdam", {"eps": -1.0}), ("RAdam", {"betas": (1.5, 0.9)}),
    ("RAdam", {"betas": (0.9, 2.0)}), ("RAdam", {"weight_decay": -3}),
    ("ASGD", {"lr": -0.01}), ("ASGD", {"weight_decay": -0.1}),
    ("LBFGS", {"lr": -1}),
    ("Rprop", {"lr": -1}), ("Rprop", {"etas": (1.5, 1.2)}), ("Rprop", {"etas": (0.5, 0.9)}),
]


@pytest.mark.parametrize("name,kw", BAD_ARGS, ids=[_ids(c) for c in BAD_ARGS])
def test_argument_errors_match_torch(name, kw):
    with pytest.raises(Exception) as ref:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kw)
    with pytest.raises(Exception) as ours:
        getattr(optim, name)([dyngrad.nn.Parameter(dyngrad.ones(2))], **kw)
    assert type(ours.value) is type(ref.value)
    assert str(ours.value) == str(ref.value)


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "LBFGS",
                                  "Rprop"])
def test_tensor_lr_must_be_one_element_and_empty_params(name):
    with pytest.raises(ValueError) as ref:
        getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], lr=torch.ones(2))
    with pytest.raises(ValueError) as ours:
        getattr(optim, name)([dyngrad.nn.Parameter(dyngrad.ones(2))], lr=dyngrad.ones(2))
    assert str(ours.value) == str(ref.value)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        getattr(optim, name)([])


def test_defaults_match_torch():
    for name in ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "LBFGS", "Rprop"]:
        ours = getattr(optim, name)([dyngrad.nn.Parameter(dyngrad.ones(2))])
        ref = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))])
        assert list(ours.defaults.items()) == list(ref.defaults.items()), name
    assert "Adadelta" in optim.__all__ and "LBFGS" in optim.__all__


def test_skips_params_without_grad_and_closure_loss():
    a = dyngrad.nn.Parameter(dyngrad.ones(2))
    b = dyngrad.nn.Parameter(dyngrad.ones(2))
    opt = optim.NAdam([a, b], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = (a * a).sum()
        loss.backward()
        return loss

    loss = opt.step(closure)
    assert float(loss) == 2.0
    assert b.tolist() == [1.0, 1.0] and a.tolist() != [1.0, 1.0]
    assert b not in opt.state and a in opt.state


# ---------------------------------------------------------------------------------------
# LBFGS on Rosenbrock


def rosen_run(lib, dtype, steps, x0=(-1.5, 2.0), **kw):
    w = lib.nn.Parameter(lib.tensor(list(x0), dtype=getattr(lib, dtype)))
    opt = lib.optim.LBFGS([w], **kw)
    evals = []

    def closure():
        opt.zero_grad()
        loss = (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2
        loss.backward()
        evals.append(w.detach().numpy().copy())
        return loss

    its, losses = [], []
    for _ in range(steps):
        losses.append(float(opt.step(closure)))
        its.append(w.detach().numpy().copy())
    return np.array(its), np.array(evals), losses, opt


LBFGS_CASES = [
    ("float64", dict()),
    ("float64", dict(lr=0.5)),
    ("float64", dict(lr=0.1, history_size=3)),
    ("float64", dict(max_iter=2, history_size=3)),
    ("float64", dict(max_iter=1)),
    ("float64", dict(line_search_fn="strong_wolfe")),
    ("float64", dict(line_search_fn="strong_wolfe", lr=0.5, history_size=4)),
    ("float64", dict(line_search_fn="strong_wolfe", lr=0.01)),
    ("float64", dict(line_search_fn="strong_wolfe", max_iter=2, history_size=3)),
    ("float64", dict(line_search_fn="strong_wolfe", max_iter=50, max_eval=60,
                     tolerance_change=1e-12)),
    ("float32", dict()),
    ("float32", dict(lr=0.1)),
    ("float32", dict(line_search_fn="strong_wolfe")),
    ("float32", dict(line_search_fn="strong_wolfe", max_iter=2, history_size=3)),
]


@pytest.mark.parametrize("dtype,kw", LBFGS_CASES,
                         ids=[f"{d}-" + "-".join(f"{k}={v}" for k, v in kw.items())
                              for d, kw in LBFGS_CASES])
def test_lbfgs_rosenbrock_iterates_match_torch(dtype, kw):
    steps = 12 if kw.get("max_iter", 20) <= 2 else 5
    ours, ev_o, loss_o, opt = rosen_run(dyngrad, dtype, steps, **kw)
    ref, ev_r, loss_r, topt = rosen_run(torch, dtype, steps, **kw)
    tol = 1e-6 if dtype == "float64" else 1e-5
    # every function evaluation (line-search trial points included) is the same point
    assert ev_o.shape == ev_r.shape
    np.testing.assert_allclose(ev_o, ev_r, rtol=tol, atol=tol * 1e-3)
    np.testing.assert_allclose(ours, ref, rtol=tol, atol=tol * 1e-3)
    np.testing.assert_allclose(loss_o, loss_r, rtol=tol, atol=1e-12)
    so, sr = opt.state_dict()["state"][0], topt.state_dict()["state"][0]
    assert list(so) == list(sr)
    for k in sr:
        assert so[k].__class__.__name__ == sr[k].__class__.__name__, k
        if isinstance(sr[k], list):
            assert len(so[k]) == len(sr[k])
            assert [type(x).__name__ for x in so[k]] == [type(x).__name__ for x in sr[k]]
        elif isinstance(sr[k], torch.Tensor):
            assert str(so[k].dtype) == str(sr[k].dtype) and tuple(so[k].shape) == tuple(sr[k].shape)
        else:
            assert so[k] == pytest.approx(sr[k], rel=tol), k


def test_lbfgs_converges_and_defaults():
    its, _, _, opt = rosen_run(dyngrad, "float64", 10, line_search_fn="strong_wolfe")
    np.testing.assert_allclose(its[-1], [1.0, 1.0], atol=1e-4)
    g = opt.param_groups[0]
    assert g["max_eval"] == 25 and g["history_size"] == 100 and g["lr"] == 1
    st = opt.state[opt._params[0]]
    assert isinstance(st["func_evals"], int) and isinstance(st["n_iter"], int)


def test_lbfgs_multiple_params_and_state_round_trip():
    def build(lib):
        a = lib.nn.Parameter(lib.tensor([[0.5, -1.0], [2.0, 1.5]], dtype=lib.float64))
        b = lib.nn.Parameter(lib.tensor([0.3, -0.7, 1.1], dtype=lib.float64))
        return [a, b]

    def loss_fn(lib, a, b):
        return ((a - 1) ** 4).sum() + (a.sum() * b).pow(2).sum() + ((b + 0.5) ** 2).sum()

    def go(lib, ps, opt, n):
        def closure():
            opt.zero_grad()
            loss = loss_fn(lib, *ps)
            loss.backward()
            return loss
        for _ in range(n):
            opt.step(closure)

    ps = build(dyngrad)
    opt = optim.LBFGS(ps, max_iter=3, history_size=4, line_search_fn="strong_wolfe")
    go(dyngrad, ps, opt, 2)
    tps = build(torch)
    topt = torch.optim.LBFGS(tps, max_iter=3, history_size=4, line_search_fn="strong_wolfe")
    go(torch, tps, topt, 2)
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-9)
    # round trip: a fresh optimizer with the loaded state continues identically
    sd = opt.state_dict()
    ps2 = [dyngrad.nn.Parameter(p.detach().clone()) for p in ps]
    opt2 = optim.LBFGS(ps2, max_iter=3, history_size=4, line_search_fn="strong_wolfe")
    opt2.load_state_dict(sd)
    go(dyngrad, ps, opt, 2)
    go(dyngrad, ps2, opt2, 2)
    go(torch, tps, topt, 2)
    for p, p2, tp in zip(ps, ps2, tps):
        np.testing.assert_array_equal(p.detach().numpy(), p2.detach().numpy())
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-9)


def test_lbfgs_errors():
    w = dyngrad.nn.Parameter(dyngrad.ones(2))
    tw = torch.nn.Parameter(torch.ones(2))
    for lib, p in ((torch, tw), (dyngrad, w)):
        with pytest.raises(ValueError, match="doesn't support per-parameter options"):
            lib.optim.LBFGS([{"params": [p]}, {"params": [lib.nn.Parameter(lib.ones(1))]}])
        opt = lib.optim.LBFGS([p], line_search_fn="bogus")

        def closure():
            opt.zero_grad()
            loss = (p * p).sum()
            loss.backward()
            return loss
        with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
            opt.step(closure)
        with pytest.raises(TypeError):
            opt.step()


def test_lbfgs_stops_at_zero_gradient():
    w = dyngrad.nn.Parameter(dyngrad.zeros(2, dtype=dyngrad.float64))
    opt = optim.LBFGS([w])

    def closure():
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        return loss
    assert float(opt.step(closure)) == 0.0
    assert opt.state[w] == {"func_evals": 1, "n_iter": 0}


@pytest.mark.parametrize("module", ["adadelta", "adamax", "nadam", "radam", "asgd", "lbfgs",
                                    "rprop"])
def test_docstring_examples(module):
    import doctest
    import importlib
    mod = importlib.import_module(f"dyngrad.optim.{module}")
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta",
                                  "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"])
def test_differentiable_is_refused_not_ignored(name):
    p = dyngrad.nn.Parameter(dyngrad.ones(2))
    kw = {"lr": 0.1} if name == "SGD" else {}
    with pytest.raises(NotImplementedError, match="differentiable=True"):
        getattr(dyngrad.optim, name)([p], differentiable=True, **kw)
    getattr(dyngrad.optim, name)([p], differentiable=False, **kw)  # the default is accepted
