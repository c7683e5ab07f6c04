"""Optimizers against hand-written NumPy update rules, param groups, state dicts, errors."""
import numpy as np
import pytest

import dyngrad as torch
from dyngrad import optim

W0 = np.array([[0.5, -1.0], [2.0, 0.25]], np.float64)


def grad_of(w):
    return 2 * w + 1  # the gradient of sum(w^2 + w)


def run(cls, steps, **kw):
    w = torch.nn.Parameter(torch.tensor(W0.copy()))
    opt = cls([w], **kw)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (w * w + w).sum().backward()
        opt.step()
        out.append(w.detach().numpy().copy())
    return out


def ref_sgd(steps, lr, momentum=0, dampening=0, wd=0, nesterov=False, maximize=False):
    w, buf, out = W0.copy(), None, []
    for _ in range(steps):
        g = grad_of(w) * (-1 if maximize else 1) + wd * w
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        w = w - lr * g
        out.append(w)
    return out


def ref_adam(steps, lr, b1=0.9, b2=0.999, eps=1e-8, wd=0, amsgrad=False, decoupled=False):
    w, m, v, vmax, out = W0.copy(), 0, 0, 0, []
    for t in range(1, steps + 1):
        g = grad_of(w)
        if wd and decoupled:
            w = w * (1 - lr * wd)
        elif wd:
            g = g + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vmax = np.maximum(vmax, v)
        vv = vmax if amsgrad else v
        w = w - lr / (1 - b1 ** t) * m / (np.sqrt(vv) / np.sqrt(1 - b2 ** t) + eps)
        out.append(w)
    return out


def ref_rmsprop(steps, lr, alpha=0.99, eps=1e-8, momentum=0, centered=False):
    w, sq, ga, buf, out = W0.copy(), 0, 0, 0, []
    for _ in range(steps):
        g = grad_of(w)
        sq = alpha * sq + (1 - alpha) * g * g
        avg = sq
        if centered:
            ga = alpha * ga + (1 - alpha) * g
            avg = sq - ga * ga
        avg = np.sqrt(avg) + eps
        if momentum:
            buf = momentum * buf + g / avg
            w = w - lr * buf
        else:
            w = w - lr * g / avg
        out.append(w)
    return out


def ref_adagrad(steps, lr, lr_decay=0, init=0, eps=1e-10):
    w, s, out = W0.copy(), np.full_like(W0, init), []
    for t in range(1, steps + 1):
        g = grad_of(w)
        s = s + g * g
        w = w - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(s) + eps)
        out.append(w)
    return out


CASES = [
    (optim.SGD, dict(lr=0.1), lambda n: ref_sgd(n, 0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.2, weight_decay=0.1),
     lambda n: ref_sgd(n, 0.1, 0.9, 0.2, 0.1)),
    (optim.SGD, dict(lr=0.1, momentum=0.9, nesterov=True), lambda n: ref_sgd(n, 0.1, 0.9,
                                                                          nesterov=True)),
    (optim.SGD, dict(lr=0.1, maximize=True), lambda n: ref_sgd(n, 0.1, maximize=True)),
    (optim.Adam, dict(lr=0.1), lambda n: ref_adam(n, 0.1)),
    (optim.Adam, dict(lr=0.1, amsgrad=True, weight_decay=0.1),
     lambda n: ref_adam(n, 0.1, wd=0.1, amsgrad=True)),
    (optim.AdamW, dict(lr=0.1), lambda n: ref_adam(n, 0.1, wd=0.01, decoupled=True)),
    (optim.RMSprop, dict(lr=0.01), lambda n: ref_rmsprop(n, 0.01)),
    (optim.RMSprop, dict(lr=0.01, centered=True, momentum=0.5),
     lambda n: ref_rmsprop(n, 0.01, momentum=0.5, centered=True)),
    (optim.Adagrad, dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.2),
     lambda n: ref_adagrad(n, 0.1, 0.1, 0.2)),
]


@pytest.mark.parametrize("cls,kw,ref", CASES)
def test_against_numpy_reference(cls, kw, ref):
    for got, want in zip(run(cls, 5, **kw), ref(5)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_param_groups_and_skipping_none_grads():
    a, b = torch.nn.Parameter(torch.ones(2)), torch.nn.Parameter(torch.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[0]["momentum"] == 0.9
    c = torch.nn.Parameter(torch.ones(1))
    opt.add_param_group({"params": [c], "lr": 1.0})
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [c]})
    a.grad = torch.ones(2)
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), 0.9)
    assert (b.detach().numpy() == 1).all() and b not in opt.state


def test_state_dict_round_trip_continues_identically():
    def make():
        w = torch.nn.Parameter(torch.tensor(W0.copy()))
        return w, optim.Adam([w], lr=0.05, amsgrad=True)

    w1, o1 = make()
    for _ in range(3):
        o1.zero_grad()
        (w1 * w1).sum().backward()
        o1.step()
    sd = o1.state_dict()
    assert sd["param_groups"][0]["params"] == [0]
    assert set(sd["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    w2, o2 = make()
    w2.data = w1.detach().clone()
    o2.load_state_dict(sd)
    for w, o in ((w1, o1), (w2, o2)):
        for _ in range(3):
            o.zero_grad()
            (w * w).sum().backward()
            o.step()
    np.testing.assert_array_equal(w1.detach().numpy(), w2.detach().numpy())
    with pytest.raises(ValueError, match="different number of parameter groups"):
        o2.load_state_dict({"state": {}, "param_groups": []})


def test_zero_grad():
    w = torch.nn.Parameter(torch.ones(2))
    opt = optim.SGD([w], lr=0.1)
    w.grad = torch.ones(2)
    opt.zero_grad(set_to_none=False)
    assert (w.grad.numpy() == 0).all()
    opt.zero_grad()
    assert w.grad is None


def test_errors():
    with pytest.raises(TypeError, match="but got int"):
        optim.SGD(3, lr=0.1)
    with pytest.raises(TypeError, match="torch.FloatTensor"):
        optim.SGD(torch.ones(2), lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.Adam([])
    for cls in (optim.SGD, optim.Adam, optim.AdamW, optim.RMSprop, optim.Adagrad):
        with pytest.raises(ValueError, match="Invalid learning rate: -0.1"):
            cls([torch.nn.Parameter(torch.ones(1))], lr=-0.1)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0"):
        optim.Adam([torch.nn.Parameter(torch.ones(1))], betas=(1.0, 0.9))
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1, nesterov=True)
