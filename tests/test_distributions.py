"""dyngrad.distributions against torch.distributions: values and gradients of log_prob,
entropy, moments and KL divergences; shapes, expand, validation errors; sample statistics
and reparameterized gradients (dyngrad's random stream differs from PyTorch's)."""
import math

import numpy as np
import pytest

import dyngrad
import dyngrad.distributions as D

torch = pytest.importorskip("torch")
T = torch.distributions

RNG = np.random.default_rng(7)
COV = np.array([[[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]],
                [[1.0, 0.0, 0.4], [0.0, 0.7, 0.1], [0.4, 0.1, 1.5]]])
TRIL = np.linalg.cholesky(COV)


def lib_tensor(lib, a, grad=True, dtype="float64"):
    t = lib.tensor(np.asarray(a), dtype=getattr(lib, dtype))
    if grad:
        t.requires_grad_(True)
    return t


# name -> (params, builder(lib_distributions, params), value)
CASES = {
    "normal": ({"loc": [0.5, -1.0, 2.0], "scale": [1.5, 0.3, 2.0]},
               lambda M, p: M.Normal(p["loc"], p["scale"]), [0.1, 2.0, -1.0]),
    "normal-batch2d": ({"loc": RNG.normal(size=(2, 3)), "scale": RNG.uniform(0.5, 2, (2, 3))},
                       lambda M, p: M.Normal(p["loc"], p["scale"]), RNG.normal(size=(4, 2, 3))),
    "bernoulli-probs": ({"probs": [0.1, 0.5, 0.9, 0.3]},
                        lambda M, p: M.Bernoulli(probs=p["probs"]), [0.0, 1.0, 1.0, 0.0]),
    "bernoulli-logits": ({"logits": [-2.0, 0.0, 3.0, 0.7]},
                         lambda M, p: M.Bernoulli(logits=p["logits"]), [1.0, 1.0, 0.0, 0.0]),
    "categorical-probs": ({"probs": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]},
                          lambda M, p: M.Categorical(probs=p["probs"]), [[2, 0], [1, 1]]),
    "categorical-logits": ({"logits": [[0.2, -1.3, 2.5, 0.0], [1.6, 0.1, 0.3, -0.4]]},
                           lambda M, p: M.Categorical(logits=p["logits"]), [3, 0]),
    "uniform": ({"low": [0.0, -1.0, 2.0], "high": [1.0, 3.0, 2.5]},
                lambda M, p: M.Uniform(p["low"], p["high"]), [0.5, 2.9, 2.0]),
    "mvn-cov": ({"loc": [[0.5, -1.0, 0.2], [1.0, 0.0, -0.3]], "covariance_matrix": COV},
                lambda M, p: M.MultivariateNormal(p["loc"], covariance_matrix=p["covariance_matrix"]),
                RNG.normal(size=(5, 2, 3))),
    "mvn-prec": ({"loc": [0.5, -1.0, 0.2], "precision_matrix": COV[0]},
                 lambda M, p: M.MultivariateNormal(p["loc"], precision_matrix=p["precision_matrix"]),
                 [[0.1, 0.2, 0.3], [1.0, -1.0, 0.0]]),
    "mvn-tril": ({"loc": [0.5, -1.0, 0.2], "scale_tril": TRIL},
                 lambda M, p: M.MultivariateNormal(p["loc"], scale_tril=p["scale_tril"]),
                 [[0.1, 0.2, 0.3], [1.0, -1.0, 0.0]]),
    "independent-normal": ({"loc": RNG.normal(size=(2, 3)), "scale": RNG.uniform(0.5, 2, (2, 3))},
                           lambda M, p: M.Independent(M.Normal(p["loc"], p["scale"]), 1),
                           RNG.normal(size=(2, 3))),
    "independent-bernoulli": ({"logits": RNG.normal(size=(2, 2, 3))},
                              lambda M, p: M.Independent(M.Bernoulli(logits=p["logits"]), 2),
                              (RNG.random((2, 2, 3)) > 0.5).astype(float)),
}


def build(name, lib, dtype="float64"):
    params, builder, value = CASES[name]
    M = T if lib is torch else D
    ps = {k: lib_tensor(lib, v, dtype=dtype) for k, v in params.items()}
    vdtype = "int64" if name.startswith("categorical") else dtype
    return builder(M, ps), ps, lib_tensor(lib, value, grad=False, dtype=vdtype)


def close(a, b, tol=1e-6):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    # float32: cancellation in small entries is judged against the array's scale
    scale = np.nanmax(np.abs(b), initial=1.0) if b.dtype == np.float32 and b.size else 1e-3
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, equal_nan=True)


def grads(ps):
    return {k: (None if p.grad is None else p.grad.detach().numpy().copy()) for k, p in ps.items()}


@pytest.mark.parametrize("name", list(CASES))
def test_shapes_and_repr(name):
    d, _, _ = build(name, dyngrad)
    t, _, _ = build(name, torch)
    assert tuple(d.batch_shape) == tuple(t.batch_shape)
    assert tuple(d.event_shape) == tuple(t.event_shape)
    assert repr(d) == repr(t)
    assert d.has_rsample == t.has_rsample
    assert d.has_enumerate_support == t.has_enumerate_support
    assert repr(d.support) == repr(t.support)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_log_prob_entropy_and_gradients(name, dtype):
    tol = 1e-6 if dtype == "float64" else 1e-5
    d, dps, dv = build(name, dyngrad, dtype)
    t, tps, tv = build(name, torch, dtype)
    lp_d, lp_t = d.log_prob(dv), t.log_prob(tv)
    assert str(lp_d.dtype) == str(lp_t.dtype)
    close(lp_d, lp_t, tol)
    ent_d, ent_t = d.entropy(), t.entropy()
    close(ent_d, ent_t, tol)
    w = np.linspace(0.5, 1.5, int(np.prod(lp_t.shape)) or 1).reshape(lp_t.shape)
    (lp_d * dyngrad.tensor(w, dtype=lp_d.dtype)).sum().backward()
    (lp_t * torch.tensor(w, dtype=lp_t.dtype)).sum().backward()
    gd, gt = grads(dps), grads(tps)
    for k in gt:
        assert (gd[k] is None) == (gt[k] is None), k
        if gt[k] is not None:
            close(gd[k], gt[k], tol)
    d, dps, _ = build(name, dyngrad, dtype)
    t, tps, _ = build(name, torch, dtype)
    (d.entropy() ** 2).sum().backward()
    (t.entropy() ** 2).sum().backward()
    gd, gt = grads(dps), grads(tps)
    for k in gt:
        if gt[k] is not None:
            close(gd[k], gt[k], tol)


@pytest.mark.parametrize("name", list(CASES))
def test_moments_and_their_gradients(name):
    for prop in ("mean", "mode", "variance", "stddev"):
        d, dps, _ = build(name, dyngrad)
        t, tps, _ = build(name, torch)
        try:
            ref = getattr(t, prop)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                getattr(d, prop)
            continue
        ours = getattr(d, prop)
        assert str(ours.dtype) == str(ref.dtype), prop
        close(ours, ref)
        if ref.requires_grad and not torch.isnan(ref).any():
            ref.pow(2).sum().backward()
            ours.pow(2).sum().backward()
            gd, gt = grads(dps), grads(tps)
            for k in gt:
                if gt[k] is not None:
                    close(gd[k], gt[k])


@pytest.mark.parametrize("name", ["mvn-cov", "mvn-prec", "mvn-tril"])
def test_mvn_matrices_and_gradients(name):
    for prop in ("covariance_matrix", "precision_matrix", "scale_tril"):
        d, dps, _ = build(name, dyngrad)
        t, tps, _ = build(name, torch)
        ref, ours = getattr(t, prop), getattr(d, prop)
        close(ours, ref)
        (ref * ref).sum().backward()
        (ours * ours).sum().backward()
        gd, gt = grads(dps), grads(tps)
        for k in gt:
            if gt[k] is not None:
                close(gd[k], gt[k])


KL_PAIRS = [
    ("normal", "normal"), ("bernoulli-probs", "bernoulli-logits"),
    ("categorical-probs", "categorical-probs"), ("categorical-logits", "categorical-logits"),
    ("uniform", "uniform"), ("mvn-cov", "mvn-tril"), ("mvn-prec", "mvn-cov"),
    ("mvn-tril", "mvn-prec"), ("independent-normal", "independent-normal"),
    ("normal", "uniform"), ("uniform", "normal"),
]

# second operands: other parameter values for the same family
ALT = {
    "normal": {"loc": [0.0, 1.0, 1.0], "scale": [0.5, 0.7, 3.0]},
    "bernoulli-logits": {"logits": [0.5, -1.0, 0.2, 2.0]},
    "categorical-probs": {"probs": [[0.1, 0.8, 0.1], [0.3, 0.3, 0.4]]},
    "categorical-logits": {"logits": [[1.0, 0.3, -0.5, 0.2], [0.0, 0.0, 2.0, 1.0]]},
    "uniform": {"low": [-0.5, -2.0, 1.0], "high": [1.5, 3.5, 2.0]},
    "mvn-cov": {"loc": [[0.0, -1.0, 0.5], [0.2, 0.2, 0.2]], "covariance_matrix": COV[::-1].copy()},
    "mvn-tril": {"loc": [0.1, 0.1, 0.7], "scale_tril": TRIL[1] * 1.3},
    "mvn-prec": {"loc": [0.5, 0.0, 0.2], "precision_matrix": COV[1]},
    "independent-normal": {"loc": RNG.normal(size=(2, 3)), "scale": RNG.uniform(0.5, 2, (2, 3))},
}


def build_alt(name, lib):
    params = ALT.get(name, CASES[name][0])
    M = T if lib is torch else D
    ps = {k: lib_tensor(lib, v) for k, v in params.items()}
    return CASES[name][1](M, ps), ps


@pytest.mark.parametrize("pn,qn", KL_PAIRS, ids=[f"{a}|{b}" for a, b in KL_PAIRS])
def test_kl_divergence_values_and_gradients(pn, qn):
    dp, dpp, _ = build(pn, dyngrad)
    tp, tpp, _ = build(pn, torch)
    dq, dqp = build_alt(qn, dyngrad)
    tq, tqp = build_alt(qn, torch)
    kd, kt = D.kl_divergence(dp, dq), T.kl_divergence(tp, tq)
    close(kd, kt)
    if kt.requires_grad and torch.isfinite(kt).all():
        kt.sum().backward()
        kd.sum().backward()
        for ours, ref in ((dpp, tpp), (dqp, tqp)):
            gd, gt = grads(ours), grads(ref)
            for k in gt:
                if gt[k] is not None:
                    close(gd[k], gt[k])


def test_kl_infinite_and_zero_cases():
    lib_cases = [
        (lambda M, l: (M.Uniform(l.tensor([0.0, 0.0]), l.tensor([1.0, 1.0])),
                       M.Uniform(l.tensor([0.5, -1.0]), l.tensor([2.0, 2.0])))),
        (lambda M, l: (M.Bernoulli(probs=l.tensor([0.0, 1.0, 0.3, 0.2])),
                       M.Bernoulli(probs=l.tensor([0.5, 0.5, 0.0, 1.0])))),
        (lambda M, l: (M.Categorical(probs=l.tensor([0.0, 0.5, 0.5])),
                       M.Categorical(probs=l.tensor([0.5, 0.5, 0.0])))),
        (lambda M, l: (M.Categorical(probs=l.tensor([0.0, 0.5, 0.5])),
                       M.Categorical(probs=l.tensor([0.0, 0.5, 0.5])))),
    ]
    for f in lib_cases:
        p, q = f(D, dyngrad)
        tp, tq = f(T, torch)
        close(D.kl_divergence(p, q), T.kl_divergence(tp, tq))


def test_kl_registry_and_errors():
    n = D.Normal(dyngrad.tensor(0.0), dyngrad.tensor(1.0))
    b = D.Bernoulli(probs=dyngrad.tensor(0.3))
    with pytest.raises(NotImplementedError) as ours:
        D.kl_divergence(n, b)
    with pytest.raises(NotImplementedError) as ref:
        T.kl_divergence(T.Normal(0.0, 1.0), T.Bernoulli(probs=torch.tensor(0.3)))
    assert str(ours.value) == str(ref.value)

    class MyNormal(D.Normal):
        pass

    # a subclass dispatches to the parent's registered pair until it registers its own
    m = MyNormal(dyngrad.tensor(1.0), dyngrad.tensor(2.0))
    close(D.kl_divergence(m, n), T.kl_divergence(T.Normal(1.0, 2.0), T.Normal(0.0, 1.0)))

    @D.register_kl(MyNormal, D.Normal)
    def _kl(p, q):
        return dyngrad.tensor(42.0)

    assert float(D.kl_divergence(m, n)) == 42.0
    close(D.kl_divergence(n, m), T.kl_divergence(T.Normal(0.0, 1.0), T.Normal(1.0, 2.0)))
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        D.register_kl(int, D.Normal)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Independent(D.Normal(dyngrad.zeros(2, 2), dyngrad.ones(2, 2)), 1),
                        D.Independent(D.Normal(dyngrad.zeros(2, 2), dyngrad.ones(2, 2)), 2))


@pytest.mark.parametrize("name", list(CASES))
def test_expand(name):
    d, _, _ = build(name, dyngrad)
    t, _, _ = build(name, torch)
    shape = (4,) + tuple(t.batch_shape)
    de, te = d.expand(shape), t.expand(shape)
    assert type(de) is type(d) and tuple(de.batch_shape) == tuple(te.batch_shape)
    assert tuple(de.event_shape) == tuple(te.event_shape)
    close(de.entropy(), te.entropy())
    tv = te.sample((2,))
    close(de.log_prob(dyngrad.tensor(tv.numpy())), te.log_prob(tv))
    assert tuple(de.sample().shape) == tuple(te.sample().shape)


@pytest.mark.parametrize("name", list(CASES))
def test_sample_shapes_and_dtypes(name):
    d, _, _ = build(name, dyngrad)
    t, _, _ = build(name, torch)
    for shape in [(), (5,), (2, 3)]:
        s, r = d.sample(shape), t.sample(shape)
        assert tuple(s.shape) == tuple(r.shape) and str(s.dtype) == str(r.dtype)
        assert not s.requires_grad
        if t.has_rsample:
            rs = d.rsample(shape)
            assert tuple(rs.shape) == tuple(r.shape) and rs.requires_grad
        # every sample lies in the support
        assert bool(d.support.check(s).all())


def test_sample_statistics():
    dyngrad.manual_seed(0)
    N = 200_000
    n = D.Normal(dyngrad.tensor([1.0, -2.0], dtype=dyngrad.float64),
                 dyngrad.tensor([0.5, 3.0], dtype=dyngrad.float64))
    s = n.sample((N,)).numpy()
    np.testing.assert_allclose(s.mean(0), [1.0, -2.0], atol=0.03)
    np.testing.assert_allclose(s.std(0), [0.5, 3.0], rtol=0.01)
    s = n.rsample((N,)).detach().numpy()
    np.testing.assert_allclose(s.mean(0), [1.0, -2.0], atol=0.03)
    np.testing.assert_allclose(s.std(0), [0.5, 3.0], rtol=0.01)

    b = D.Bernoulli(logits=dyngrad.tensor([-1.0, 0.0, 2.0]))
    s = b.sample((N,)).numpy()
    np.testing.assert_allclose(s.mean(0), 1 / (1 + np.exp(-np.array([-1.0, 0.0, 2.0]))), atol=0.01)

    c = D.Categorical(probs=dyngrad.tensor([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]]))
    s = c.sample((N,)).numpy()
    assert s.dtype == np.int64
    np.testing.assert_allclose([np.mean(s[:, 0] == k) for k in range(3)], [0.1, 0.2, 0.7], atol=0.01)
    assert (s[:, 1] != 2).all()

    u = D.Uniform(dyngrad.tensor([0.0, -3.0]), dyngrad.tensor([1.0, 5.0]))
    s = u.sample((N,)).numpy()
    assert (s >= [0.0, -3.0]).all() and (s < [1.0, 5.0]).all()
    np.testing.assert_allclose(s.mean(0), [0.5, 1.0], atol=0.03)
    np.testing.assert_allclose(s.var(0), [1 / 12, 64 / 12], rtol=0.02)

    m = D.MultivariateNormal(dyngrad.tensor([1.0, 0.0, -1.0], dtype=dyngrad.float64),
                             covariance_matrix=dyngrad.tensor(COV[0]))
    s = m.sample((N,)).numpy()
    np.testing.assert_allclose(s.mean(0), [1.0, 0.0, -1.0], atol=0.02)
    np.testing.assert_allclose(np.cov(s.T), COV[0], atol=0.03)


def test_seeded_sampling_is_reproducible():
    n = D.Normal(dyngrad.zeros(3), dyngrad.ones(3))
    dyngrad.manual_seed(123)
    a = n.rsample((4,)).detach().numpy()
    dyngrad.manual_seed(123)
    b = n.rsample((4,)).detach().numpy()
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["normal", "uniform", "mvn-cov", "mvn-prec", "mvn-tril",
                                  "independent-normal"])
def test_rsample_reparameterization_gradients(name):
    """d(sum(w * rsample))/d(param) equals a central finite difference taken with the same
    random stream (same seed)."""
    params, builder, _ = CASES[name]

    def f(arrs, grad):
        ps = {k: dyngrad.tensor(np.asarray(v, dtype=float), requires_grad=grad)
              for k, v in arrs.items()}
        dyngrad.manual_seed(5)
        x = builder(D, ps).rsample((3,))
        w = dyngrad.tensor(np.linspace(-1, 2, x.numel()).reshape(tuple(x.shape)))
        return (x * w).sum(), ps

    out, ps = f(params, True)
    out.backward()
    h = 1e-6
    for k, v in params.items():
        v = np.asarray(v, dtype=float)
        num = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            if k in ("covariance_matrix", "precision_matrix", "scale_tril"):
                # lower triangle only (perturbed symmetrically for the symmetric matrices)
                i, j = idx[-2:]
                if j > i:
                    continue
            vp, vm = v.copy(), v.copy()
            vp[idx] += h
            vm[idx] -= h
            if k in ("covariance_matrix", "precision_matrix") and idx[-1] != idx[-2]:
                t_idx = idx[:-2] + (idx[-1], idx[-2])
                vp[t_idx] += h
                vm[t_idx] -= h
            fp = float(f({**params, k: vp}, False)[0])
            fm = float(f({**params, k: vm}, False)[0])
            num[idx] = (fp - fm) / (2 * h)
        g = ps[k].grad.numpy()
        if k in ("covariance_matrix", "precision_matrix"):
            g = g + np.swapaxes(g, -1, -2) - np.eye(g.shape[-1]) * g  # symmetric-direction derivative
            lower = np.tril(np.ones(g.shape[-2:], bool))
            np.testing.assert_allclose(g[..., lower], num[..., lower], rtol=1e-5, atol=1e-6)
        elif k == "scale_tril":
            lower = np.tril(np.ones(g.shape[-2:], bool))
            np.testing.assert_allclose(g[..., lower], num[..., lower], rtol=1e-5, atol=1e-6)
        else:
            np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-6)


def test_normal_rsample_gradient_is_the_noise():
    loc = dyngrad.tensor([0.5, -1.0], requires_grad=True)
    scale = dyngrad.tensor([2.0, 0.5], requires_grad=True)
    x = D.Normal(loc, scale).rsample()
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [1.0, 1.0])
    np.testing.assert_allclose(scale.grad.numpy(), ((x - loc) / scale).detach().numpy(), rtol=1e-6)


def test_cdf_enumerate_support_perplexity():
    d, _, dv = build("normal", dyngrad)
    t, _, tv = build("normal", torch)
    close(d.cdf(dv), t.cdf(tv))
    close(d.perplexity(), t.perplexity())
    d, _, dv = build("uniform", dyngrad)
    t, _, tv = build("uniform", torch)
    close(d.cdf(dv), t.cdf(tv))
    close(d.icdf(dyngrad.tensor([0.2, 0.5, 0.9], dtype=dyngrad.float64)),
          t.icdf(torch.tensor([0.2, 0.5, 0.9], dtype=torch.float64)))
    for name in ("bernoulli-probs", "categorical-logits"):
        d, _, _ = build(name, dyngrad)
        t, _, _ = build(name, torch)
        for expand in (True, False):
            a, b = d.enumerate_support(expand), t.enumerate_support(expand)
            assert tuple(a.shape) == tuple(b.shape) and str(a.dtype) == str(b.dtype)
            np.testing.assert_array_equal(a.numpy(), b.numpy())


# ---------------------------------------------------------------------------------------
# validation


def both(fn):
    """Run fn(M, lib) for torch and dyngrad; return the two exceptions (or None)."""
    out = []
    for M, lib in ((T, torch), (D, dyngrad)):
        try:
            fn(M, lib)
            out.append(None)
        except Exception as e:  # noqa: BLE001 - compared below
            out.append(e)
    return out


BAD = {
    "normal-scale": lambda M, l: M.Normal(l.tensor([0.0, 1.0]), l.tensor([1.0, -0.5])),
    "normal-nan-loc": lambda M, l: M.Normal(l.tensor([math.nan]), l.tensor([1.0])),
    "bernoulli-probs": lambda M, l: M.Bernoulli(probs=l.tensor([0.2, 1.5])),
    "bernoulli-both": lambda M, l: M.Bernoulli(probs=l.tensor([0.2]), logits=l.tensor([0.1])),
    "bernoulli-none": lambda M, l: M.Bernoulli(),
    "categorical-neg": lambda M, l: M.Categorical(probs=l.tensor([0.5, -0.1, 0.6])),
    "categorical-0d": lambda M, l: M.Categorical(logits=l.tensor(1.0)),
    "categorical-0d-probs": lambda M, l: M.Categorical(probs=l.tensor(1.0)),
    "uniform-order": lambda M, l: M.Uniform(l.tensor([0.0, 2.0]), l.tensor([1.0, 1.0])),
    "mvn-not-pd": lambda M, l: M.MultivariateNormal(
        l.zeros(2), covariance_matrix=l.tensor([[1.0, 2.0], [2.0, 1.0]])),
    "mvn-not-sym": lambda M, l: M.MultivariateNormal(
        l.zeros(2), covariance_matrix=l.tensor([[1.0, 0.5], [0.0, 1.0]])),
    "mvn-tril-upper": lambda M, l: M.MultivariateNormal(
        l.zeros(2), scale_tril=l.tensor([[1.0, 0.5], [0.0, 1.0]])),
    "mvn-tril-negdiag": lambda M, l: M.MultivariateNormal(
        l.zeros(2), scale_tril=l.tensor([[1.0, 0.0], [0.3, -1.0]])),
    "mvn-two-params": lambda M, l: M.MultivariateNormal(
        l.zeros(2), covariance_matrix=l.eye(2), scale_tril=l.eye(2)),
    "mvn-0d-loc": lambda M, l: M.MultivariateNormal(l.tensor(0.0), covariance_matrix=l.eye(1)),
    "mvn-1d-cov": lambda M, l: M.MultivariateNormal(l.zeros(2), covariance_matrix=l.ones(2)),
    "mvn-1d-prec": lambda M, l: M.MultivariateNormal(l.zeros(2), precision_matrix=l.ones(2)),
    "mvn-1d-tril": lambda M, l: M.MultivariateNormal(l.zeros(2), scale_tril=l.ones(2)),
    "independent-ndims": lambda M, l: M.Independent(M.Normal(l.zeros(2), l.ones(2)), 2),
    "normal-not-number": lambda M, l: M.Normal("a", 1.0),
    # values outside the support / of the wrong shape
    "normal-value-shape": lambda M, l: M.Normal(l.zeros(3), l.ones(3)).log_prob(l.zeros(2)),
    "normal-value-type": lambda M, l: M.Normal(l.zeros(3), l.ones(3)).log_prob([0.0, 1.0, 2.0]),
    "bernoulli-value": lambda M, l: M.Bernoulli(probs=l.tensor([0.3, 0.3])).log_prob(
        l.tensor([0.5, 1.0])),
    "categorical-value": lambda M, l: M.Categorical(logits=l.zeros(3)).log_prob(l.tensor([3])),
    "categorical-value-neg": lambda M, l: M.Categorical(logits=l.zeros(3)).log_prob(
        l.tensor([-1, 0])),
    "uniform-value": lambda M, l: M.Uniform(l.tensor([0.0]), l.tensor([1.0])).log_prob(
        l.tensor([1.5])),
    "mvn-value-event": lambda M, l: M.MultivariateNormal(l.zeros(3), l.eye(3)).log_prob(
        l.zeros(2)),
    "mvn-value-batch": lambda M, l: M.MultivariateNormal(l.zeros(2, 3), l.eye(3)).log_prob(
        l.zeros(4, 3)),
    "independent-value": lambda M, l: M.Independent(M.Bernoulli(probs=l.full((2, 2), 0.5)),
                                                    1).log_prob(l.full((2, 2), 0.5)),
}


@pytest.mark.parametrize("case", list(BAD))
def test_validation_errors_match_torch(case):
    ref, ours = both(BAD[case])
    assert ref is not None, "torch accepted it"
    assert ours is not None, f"dyngrad accepted it; torch raised {ref!r}"
    if isinstance(ref, torch.linalg.LinAlgError):
        assert isinstance(ours, dyngrad.linalg.LinAlgError)
    else:
        assert type(ours) is type(ref)
    assert str(ours) == str(ref)


def test_validate_args_off():
    # with validate_args=False nothing is checked (same as PyTorch)
    for M, lib in ((T, torch), (D, dyngrad)):
        n = M.Normal(lib.tensor([0.0]), lib.tensor([-1.0]), validate_args=False)
        assert tuple(n.batch_shape) == (1,)
        b = M.Bernoulli(probs=lib.tensor([0.3]), validate_args=False)
        b.log_prob(lib.tensor([0.5]))
    try:
        D.Distribution.set_default_validate_args(False)
        D.Normal(dyngrad.tensor([0.0]), dyngrad.tensor([-1.0]))
        D.Uniform(dyngrad.tensor([1.0]), dyngrad.tensor([0.0]))
        with pytest.raises(ValueError):  # explicit validate_args still wins
            D.Normal(dyngrad.tensor([0.0]), dyngrad.tensor([-1.0]), validate_args=True)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(dyngrad.tensor([0.0]), dyngrad.tensor([-1.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_constraints():
    C, TC = D.constraints, T.constraints
    vals = [[-1.0, 0.0, 0.5, 1.0, 2.0, math.nan]]
    pairs = [(C.real, TC.real), (C.positive, TC.positive), (C.nonnegative, TC.nonnegative),
             (C.unit_interval, TC.unit_interval), (C.boolean, TC.boolean),
             (C.interval(0.0, 1.0), TC.interval(0.0, 1.0)),
             (C.half_open_interval(0.0, 1.0), TC.half_open_interval(0.0, 1.0)),
             (C.greater_than(0.5), TC.greater_than(0.5)),
             (C.greater_than_eq(0.5), TC.greater_than_eq(0.5)),
             (C.less_than(0.5), TC.less_than(0.5)),
             (C.integer_interval(0, 1), TC.integer_interval(0, 1)),
             (C.nonnegative_integer, TC.nonnegative_integer),
             (C.real_vector, TC.real_vector), (C.independent(C.positive, 1),
                                               TC.independent(TC.positive, 1))]
    for ours, ref in pairs:
        assert repr(ours) == repr(ref)
        assert ours.event_dim == ref.event_dim and ours.is_discrete == ref.is_discrete
        np.testing.assert_array_equal(ours.check(dyngrad.tensor(vals)).numpy(),
                                      ref.check(torch.tensor(vals)).numpy())
    mats = np.stack([COV[0], [[1.0, 2, 0], [2, 1, 0], [0, 0, 1]], TRIL[0], -TRIL[1]])
    for ours, ref in [(C.positive_definite, TC.positive_definite), (C.symmetric, TC.symmetric),
                      (C.lower_cholesky, TC.lower_cholesky),
                      (C.lower_triangular, TC.lower_triangular), (C.square, TC.square)]:
        assert repr(ours) == repr(ref)
        np.testing.assert_array_equal(ours.check(dyngrad.tensor(mats)).numpy(),
                                      ref.check(torch.tensor(mats)).numpy())
    sx = [[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]]
    np.testing.assert_array_equal(C.simplex.check(dyngrad.tensor(sx)).numpy(),
                                  TC.simplex.check(torch.tensor(sx)).numpy())
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(dyngrad.ones(1))


def test_lazy_params_and_gradients_through_conversions():
    p = dyngrad.tensor([0.2, 0.7], requires_grad=True)
    tp = torch.tensor([0.2, 0.7], requires_grad=True)
    b, tb = D.Bernoulli(probs=p), T.Bernoulli(probs=tp)
    assert "logits" not in b.__dict__
    close(b.logits, tb.logits)
    assert "logits" in b.__dict__
    b.logits.sum().backward()
    tb.logits.sum().backward()
    close(p.grad, tp.grad)
    lg = dyngrad.tensor([[0.2, -0.7, 1.0]], requires_grad=True)
    tlg = torch.tensor([[0.2, -0.7, 1.0]], requires_grad=True)
    c, tc = D.Categorical(logits=lg), T.Categorical(logits=tlg)
    close(c.probs, tc.probs)
    (c.probs ** 2).sum().backward()
    (tc.probs ** 2).sum().backward()
    close(lg.grad, tlg.grad)


def test_scalar_parameters():
    for M, lib in ((T, torch), (D, dyngrad)):
        n = M.Normal(0.0, 2.0)
        assert tuple(n.batch_shape) == () and n.loc.dtype == lib.float32
        u = M.Uniform(0.0, lib.tensor([1.0, 2.0], dtype=lib.float64))
        assert tuple(u.batch_shape) == (2,) and u.low.dtype == lib.float64
    close(D.Normal(0.0, 2.0).log_prob(dyngrad.tensor(1.0)),
          T.Normal(0.0, 2.0).log_prob(torch.tensor(1.0)))
    close(D.Bernoulli(0.25).entropy(), T.Bernoulli(0.25).entropy())


@pytest.mark.parametrize("name", ["normal", "bernoulli-probs", "bernoulli-logits"])
def test_exponential_family_bregman_entropy_and_kl(name):
    from dyngrad.distributions.exp_family import _kl_expfamily_expfamily
    from torch.distributions.kl import _kl_expfamily_expfamily as t_kl
    d, dps, _ = build(name, dyngrad)
    t, tps, _ = build(name, torch)
    assert isinstance(d, D.ExponentialFamily)
    close(D.ExponentialFamily.entropy(d), T.ExponentialFamily.entropy(t))
    close(D.ExponentialFamily.entropy(d), d.entropy())
    dq, _ = build_alt(name, dyngrad)
    tq, _ = build_alt(name, torch)
    kd, kt = _kl_expfamily_expfamily(d, dq), t_kl(t, tq)
    close(kd, kt)
    close(kd, D.kl_divergence(d, dq))
    kd.sum().backward()
    kt.sum().backward()
    gd, gt = grads(dps), grads(tps)
    for k in gt:
        if gt[k] is not None:
            close(gd[k], gt[k])
