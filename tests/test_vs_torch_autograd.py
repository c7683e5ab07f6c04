"""Differential tests of the autograd API against PyTorch: each scenario runs with both
libraries and must print the same thing (values, hook call logs, error messages)."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _fmt(v):
    if hasattr(v, "detach") and hasattr(v, "numpy"):
        return np.round(np.asarray(v.detach().numpy(), dtype=np.float64), 6).tolist()
    if isinstance(v, (tuple, list)):
        return [_fmt(e) for e in v]
    return v


def _run(scenario, T):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", _fmt(scenario(T)))
    except Exception as e:  # noqa: BLE001 - the message is what we compare
        return (type(e).__name__, str(e).split("\n")[0])


def hooks_order(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(_fmt(g)))
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    x.register_hook(lambda g: g + 1)
    (y * y).sum().backward()
    return log, y.grad, x.grad


def node_hooks(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.grad_fn.register_prehook(lambda go: (log.append(_fmt(go)), (go[0] + 1,))[1])
    y.grad_fn.register_hook(lambda gi, go: (log.append(_fmt(gi)), (gi[0] * 2, gi[1]))[1])
    y.sum().backward()
    return log, x.grad


def grad_target_hooks(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 5)
    y.retain_grad()
    r = T.autograd.grad((y * 3).sum(), [x, y])
    return r, y.grad


def hook_changes_size(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: T.ones(3))
    y.sum().backward()


def saved_hooks(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor([3.0, 4.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 2, lambda t: t):
        z = (x * y).sum() + (x.exp() * y).sum()
    z.backward()
    return x.grad, y.grad


def functional(T):
    F = T.autograd.functional
    x = T.tensor([1.0, 2.0, 0.5])
    f = lambda a: a.exp() * a.sum()  # noqa: E731
    s = lambda a: (a.sin() * a).sum()  # noqa: E731
    v = T.tensor([0.3, -0.2, 1.0])
    return (F.jacobian(f, x), F.hessian(s, x), F.vjp(f, x, v), F.jvp(f, x, v), F.hvp(s, x, v),
            F.vhp(s, x, v), F.jacobian(lambda a, b: (a * b, a - b), (x, v)))


def functional_strict(T):
    x = T.tensor([1.0, 2.0])
    return T.autograd.functional.jacobian(lambda a, b: a * 2, (x, x), strict=True)


def forward_ad(T):
    fwAD = T.autograd.forward_ad
    x = T.tensor([[1.0, 2.0], [0.5, -1.0]])
    t = T.tensor([[0.1, 0.2], [0.3, 0.4]])
    w = T.tensor([[1.0, -1.0], [2.0, 0.5]])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        outs = [d.exp(), d.tanh() * d, (d @ w).sum(1), d.mean(), d.t() / (d * d + 1),
                d.pow(3), d.sigmoid().log()]
        res = [fwAD.unpack_dual(o).tangent for o in outs]
        flags = [(o.requires_grad, o.grad_fn is None) for o in outs]
    return res, flags


def custom_function_errors(T):
    class Few(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x = T.tensor([1.0], requires_grad=True)
    Few.apply(x, x).sum().backward()


def custom_function_dirty_leaf(T):
    class Dirty(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    Dirty.apply(T.tensor([1.0], requires_grad=True))


def higher_order(T):
    x = T.tensor([0.3, -1.2, 2.0], requires_grad=True)
    y = (x.tanh() * x.exp() / (x * x + 1)).sum()
    g1, = T.autograd.grad(y, x, create_graph=True)
    g2, = T.autograd.grad(g1.sum(), x, create_graph=True)
    g3, = T.autograd.grad(g2.sum(), x)
    return g1, g2, g3


def anomaly_nan(T):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    with T.autograd.detect_anomaly():
        (x / x).sum().backward()


def gradcheck_mismatch(T):
    class Bad(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = T.tensor([0.5], dtype=T.float64, requires_grad=True)
    return T.autograd.gradcheck(Bad.apply, (x,), raise_exception=False), \
        T.autograd.gradcheck(lambda a: a.tanh() * a, (x,), check_forward_ad=True)


SCENARIOS = [hooks_order, node_hooks, grad_target_hooks, hook_changes_size, saved_hooks,
             functional, functional_strict, forward_ad, custom_function_errors,
             custom_function_dirty_leaf, higher_order, anomaly_nan, gradcheck_mismatch]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__ for s in SCENARIOS])
def test_same_as_torch(scenario):
    ref = _run(scenario, torch)
    got = _run(scenario, dyngrad)
    if ref[0] == "ok" and got[0] == "ok":
        np.testing.assert_allclose(np.asarray(_flat(got[1])), np.asarray(_flat(ref[1])),
                                   rtol=1e-5, atol=1e-6)
    else:
        assert got == ref


def _flat(v):
    if isinstance(v, (list, tuple)):
        out = []
        for e in v:
            out.extend(_flat(e))
        return out
    return [float("nan") if v is None else float(v)]
