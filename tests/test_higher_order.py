"""Second and third derivatives through create_graph=True, checked against closed forms."""
import numpy as np
import pytest

import dyngrad as torch
from dyngrad.autograd import grad


def _derivs(f, x, n):
    """[f'(x), f''(x), ...] (n of them), elementwise, by repeated autograd.grad of sums."""
    out = []
    y = f(x)
    for _ in range(n):
        (y,) = grad(y.sum(), x, create_graph=True)
        out.append(y.detach().numpy().copy())
    return out


X = np.array([0.3, -0.7, 1.2])


def _x():
    return torch.tensor(X, dtype=torch.float64, requires_grad=True)


CASES = [
    ("tanh", torch.tanh,
     lambda x: [1 - np.tanh(x) ** 2, -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
                (1 - np.tanh(x) ** 2) * (6 * np.tanh(x) ** 2 - 2)]),
    ("exp", torch.exp, lambda x: [np.exp(x)] * 3),
    ("sin", torch.sin, lambda x: [np.cos(x), -np.sin(x), -np.cos(x)]),
    ("log", lambda t: torch.log(t + 2), lambda x: [1 / (x + 2), -1 / (x + 2) ** 2,
                                                     2 / (x + 2) ** 3]),
    ("sigmoid", torch.sigmoid,
     lambda x: (lambda s: [s * (1 - s), s * (1 - s) * (1 - 2 * s),
                           s * (1 - s) * (1 - 6 * s + 6 * s ** 2)])(1 / (1 + np.exp(-x)))),
    ("pow4", lambda t: t ** 4, lambda x: [4 * x ** 3, 12 * x ** 2, 24 * x]),
    ("mul", lambda t: t * t * t, lambda x: [3 * x ** 2, 6 * x, 6 + 0 * x]),
    ("div", lambda t: 1 / (t + 2), lambda x: [-1 / (x + 2) ** 2, 2 / (x + 2) ** 3,
                                              -6 / (x + 2) ** 4]),
    ("sqrt", lambda t: torch.sqrt(t + 2),
     lambda x: [0.5 * (x + 2) ** -0.5, -0.25 * (x + 2) ** -1.5, 0.375 * (x + 2) ** -2.5]),
]


@pytest.mark.parametrize("name,f,ref", CASES, ids=[c[0] for c in CASES])
def test_first_second_third_derivatives(name, f, ref):
    got = _derivs(f, _x(), 3)
    for g, r in zip(got, ref(X)):
        np.testing.assert_allclose(g, r, rtol=1e-10, atol=1e-12)


def test_third_derivative_of_x4_is_24x():
    x = torch.tensor(2.0, requires_grad=True)
    y = x ** 4
    (g1,) = grad(y, x, create_graph=True)
    (g2,) = grad(g1, x, create_graph=True)
    (g3,) = grad(g2, x, create_graph=True)
    (g4,) = grad(g3, x)
    assert (g1.item(), g2.item(), g3.item(), g4.item()) == (32.0, 48.0, 48.0, 24.0)


def test_mm_and_sum_hessian_vector():
    rs = np.random.RandomState(0)
    A = torch.tensor(rs.standard_normal((3, 3)), requires_grad=True)
    x = torch.tensor(rs.standard_normal((3, 1)), requires_grad=True)
    # f = sum((A x)^2): grad_x = 2 A^T A x, Hessian_x = 2 A^T A
    y = (torch.mm(A, x) ** 2).sum()
    (gx,) = grad(y, x, create_graph=True)
    a = A.detach().numpy()
    np.testing.assert_allclose(gx.detach().numpy(), 2 * a.T @ a @ x.detach().numpy(), rtol=1e-10)
    v = torch.tensor(rs.standard_normal((3, 1)))
    (hv,) = grad(gx, x, grad_outputs=v, create_graph=True)
    np.testing.assert_allclose(hv.detach().numpy(), 2 * a.T @ a @ v.numpy(), rtol=1e-10)
    # mixed second derivative through mm: d/dA of <grad_x, v>
    (gA,) = grad((gx * v).sum(), A)
    xv, vv = x.detach().numpy(), v.numpy()
    np.testing.assert_allclose(gA.numpy(), 2 * (a @ vv @ xv.T + a @ xv @ vv.T), rtol=1e-10)


def test_backward_create_graph_then_grad_of_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="reference cycle"):
        (x ** 3).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    (h,) = grad(g.sum(), x)
    assert h.tolist() == [6.0, 12.0]


def test_gradgradcheck_on_several_ops():
    x = torch.tensor([0.4, -0.3], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([1.5, 0.7], dtype=torch.float64, requires_grad=True)
    for f in (lambda a, b: a * b, lambda a, b: a / b, lambda a, b: torch.tanh(a) * b.exp(),
              lambda a, b: (a - b).pow(3).sum(), lambda a, b: torch.sigmoid(a * b)):
        assert torch.autograd.gradgradcheck(f, (x, y))


def test_a_saved_output_unpacked_under_create_graph_keeps_its_output_number():
    """A node's saved output read as a Tensor (create_graph) is that output of the node: its
    gradient must flow into the same output, not the node's first."""
    from dyngrad.autograd.node import Saved
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    _, s, _ = torch.linalg.svd(x, full_matrices=False)
    assert s._output_nr == 1
    t = Saved(s, True).get(s.grad_fn, True)
    assert t.grad_fn is s.grad_fn and t._output_nr == 1
