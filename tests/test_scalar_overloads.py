"""PyTorch's ``.Scalar`` overloads of add, sub, mul and div (a tensor and a C++ Scalar, as its
composites call them: AddBackward1, SubBackward1, MulBackward1, DivBackward1) against
``torch.ops.aten.<op>.Scalar``: values, dtypes, nodes, saved values, gradients of two orders,
forward-mode tangents (from declared rules, never derived from a backward) and vmap."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import dyngrad
import dyngrad.autograd.forward_ad as fwAD
from dyngrad.func import _batched
from dyngrad.ops import binary as P

OPS = {"add": (P.add_scalar, torch.ops.aten.add.Scalar, "AddBackward1"),
       "sub": (P.sub_scalar, torch.ops.aten.sub.Scalar, "SubBackward1"),
       "mul": (P.mul_scalar, torch.ops.aten.mul.Scalar, "MulBackward1"),
       "div": (P.div_scalar, torch.ops.aten.div.Scalar, "DivBackward1")}
X = [[0.5, -1.25, 2.0], [3.0, 0.25, -0.75]]


def _saved(node):
    return {a: getattr(node, a) for a in dir(node)
            if a.startswith("_saved_") and not a.startswith("_saved_self")}


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("value", [2.5, 3, -0.5])
def test_graph_and_gradients_as_torch(name, value):
    ours, theirs, node = OPS[name]
    a = dyngrad.tensor(X, dtype=dyngrad.float64, requires_grad=True)
    b = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    ra, rb = ours(a, value), theirs(b, value)
    np.testing.assert_allclose(ra.detach().numpy(), rb.detach().numpy(), rtol=1e-15)
    assert type(ra.grad_fn).__name__ == type(rb.grad_fn).__name__ == node
    assert _saved(ra.grad_fn) == _saved(rb.grad_fn)
    ga, = dyngrad.autograd.grad((ra * ra).sum(), a, create_graph=True)
    gb, = torch.autograd.grad((rb * rb).sum(), b, create_graph=True)
    np.testing.assert_allclose(ga.detach().numpy(), gb.detach().numpy(), rtol=1e-14)
    gga, = dyngrad.autograd.grad(ga.sum(), a)
    ggb, = torch.autograd.grad(gb.sum(), b)
    np.testing.assert_allclose(gga.numpy(), ggb.numpy(), rtol=1e-14)


@pytest.mark.parametrize("name", sorted(OPS))
def test_integer_and_half_dtypes_as_torch(name):
    ours, theirs, _ = OPS[name]
    for dt in ("int64", "float16", "int32"):
        for v in (2, 2.5):
            ra = ours(dyngrad.tensor([1, 2, 3], dtype=getattr(dyngrad, dt)), v)
            rb = theirs(torch.tensor([1, 2, 3], dtype=getattr(torch, dt)), v)
            assert str(ra.dtype) == str(rb.dtype)
            np.testing.assert_allclose(ra.numpy(), rb.numpy(), rtol=1e-3)


@pytest.mark.parametrize("name", sorted(OPS))
def test_forward_mode_uses_the_declared_rule(name):
    ours, theirs, node = OPS[name]
    p = dyngrad.tensor(X, dtype=dyngrad.float64)
    t = dyngrad.tensor([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]], dtype=dyngrad.float64)
    before = dict(fwAD.DERIVED)
    _, got = dyngrad.func.jvp(lambda x: ours(x, 2.5), (p,), (t,))
    assert fwAD.DERIVED == before
    _, exp = torch.func.jvp(lambda x: theirs(x, 2.5), (torch.tensor(p.numpy()),),
                            (torch.tensor(t.numpy()),))
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-15)


@pytest.mark.parametrize("name", sorted(OPS))
def test_vmap_runs_on_the_batch(name):
    ours, theirs, _ = OPS[name]
    x = dyngrad.tensor(X, dtype=dyngrad.float64)
    _batched.LOOPED.clear()
    got = dyngrad.func.vmap(lambda r: ours(r, 1.5))(x)
    assert not _batched.LOOPED
    exp = torch.func.vmap(lambda r: theirs(r, 1.5))(torch.tensor(X, dtype=torch.float64))
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-15)
