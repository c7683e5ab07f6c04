"""Gradients through complex tensors against PyTorch: PyTorch's is the conjugate Wirtinger
gradient (``mul``'s is ``grad * other.conj()``, ``abs``'s ``grad * z.sgn()``).  Each op runs on
complex leaves, a real loss is taken through ``view_as_real``, and the leaves' gradients must
equal PyTorch's."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")

Z = np.array([1 + 2j, -0.5 + 0.3j, 0.7 - 0.2j])
W = np.array([0.3 - 1j, 2 + 0.5j, -1.1 + 0.4j])

UNARY = ["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "abs", "neg", "reciprocal",
         "square", "sgn", "angle", "log1p", "expm1", "sinh", "cosh", "tan", "asin", "acos",
         "atan", "rsqrt", "log2", "log10", "exp2", "asinh", "acosh", "atanh", "conj_physical"]
SHAPED = {"sum": lambda a: a.sum().reshape(1), "mean": lambda a: a.mean().reshape(1),
          "prod": lambda a: a.prod().reshape(1), "cumsum": lambda a: a.cumsum(0),
          "flip": lambda a: a.flip(0), "t": lambda a: a.reshape(3, 1).t(),
          "clone": lambda a: a.clone()}
BINARY = {"mul": lambda L, a, b: L.mul(a, b), "add": lambda L, a, b: L.add(a, b),
          "sub": lambda L, a, b: L.sub(a, b), "div": lambda L, a, b: L.div(a, b),
          "pow": lambda L, a, b: L.pow(a, b), "dot": lambda L, a, b: L.dot(a, b).reshape(1),
          "matmul": lambda L, a, b: (a.reshape(1, 3) @ b.reshape(3, 1)).reshape(1),
          "mul_real_by_complex": lambda L, a, b: L.view_as_real(b).sum(-1) * a,
          "scale": lambda L, a, b: a * 2.5 - b * (1 - 2j)}


def _grads(L, fn, n):
    ins = [L.tensor(Z, requires_grad=True), L.tensor(W, requires_grad=True)][:n]
    y = fn(*ins)
    loss = (L.view_as_real(y.reshape(-1)) ** 2).sum() if y.is_complex() else (y * y).sum()
    return [g.detach().numpy() for g in L.autograd.grad(loss, ins)]


@pytest.mark.parametrize("name", UNARY + list(SHAPED))
def test_unary_gradient_is_pytorchs(name):
    def fn(L):
        return SHAPED.get(name) or getattr(L, name)
    for a, b in zip(_grads(dyngrad, fn(dyngrad), 1), _grads(torch, fn(torch), 1)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_gradient_is_pytorchs(name):
    f = BINARY[name]
    got = _grads(dyngrad, lambda a, b: f(dyngrad, a, b), 2)
    exp = _grads(torch, lambda a, b: f(torch, a, b), 2)
    for a, b in zip(got, exp):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_second_derivative_through_complex_mul():
    def hvp(L):
        z = L.tensor(Z, requires_grad=True)
        w = L.tensor(W)
        loss = (L.view_as_real(z * w * z) ** 2).sum()
        g, = L.autograd.grad(loss, [z], create_graph=True)
        h, = L.autograd.grad((L.view_as_real(g) ** 2).sum(), [z])
        return h.detach().numpy()
    np.testing.assert_allclose(hvp(dyngrad), hvp(torch), rtol=1e-10)


def test_sgn_of_complex_is_z_over_abs():
    z = np.array([3 + 4j, 0j, -1 + 0j])
    np.testing.assert_allclose(dyngrad.sgn(dyngrad.tensor(z)).numpy(),
                               torch.sgn(torch.tensor(z)).numpy())


def test_sign_refuses_complex_as_pytorch():
    for L in (dyngrad, torch):
        with pytest.raises(NotImplementedError, match="torch.sign is not intended to support"):
            L.sign(L.tensor([3 + 4j]))


def test_real_and_imag_views_as_pytorch():
    def run(L):
        z = L.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        r = z.real
        out = [r.grad_fn.name(), r.grad_fn.next_functions[0][0].name(), r._base is z, r.stride()]
        (r * L.tensor([1., 2.]) + z.imag * L.tensor([3., 4.])).sum().backward()
        out.append(z.grad.tolist())
        x = L.tensor([1., 2.])
        out.append(x.real is x)
        with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                               "non-complex dtypes"):
            x.imag
        w = L.tensor([1 + 2j, 3 - 1j])
        w.real = L.tensor([5., 6.])
        w.imag = 0.5
        out.append(w.tolist())
        return out
    assert run(dyngrad) == run(torch)
