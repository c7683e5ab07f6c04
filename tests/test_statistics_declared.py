"""quantile, nanquantile, cov and corrcoef as composites (vmap runs their parts on the batch,
their value checks read every sample), bincount's declaration (PyTorch's NotImplemented node on
the weights), and equal / allclose as queries, against PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import dyngrad
from dyngrad.func import _batched
from dyngrad.ops import OPS, declared

A = np.array([[[1.0, 2.0, 4.0, 0.5], [0.5, 3.0, 1.0, 2.5], [2.0, -1.0, 0.0, 1.0]],
              [[0.3, 1.0, 2.0, 7.0], [1.5, 0.5, 1.0, 1.5], [4.0, 2.0, 1.0, 3.0]]])


def _both(a):
    return dyngrad.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("name", ["quantile", "nanquantile", "cov", "corrcoef", "bincount",
                                  "equal", "allclose", "matrix_power", "_eq", "_ne"])
def test_declared(name):
    assert declared(name)


def test_vmap_quantile_with_batched_q_equals_the_loop():
    q = np.array([[0.1, 0.5], [0.9, 1.0]])
    (a, ta), (qq, tq) = _both(A), _both(q)
    _batched.LOOPED.clear()
    got = dyngrad.func.vmap(lambda x, p: dyngrad.quantile(x, p, dim=1))(a, qq)
    assert not _batched.LOOPED
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = torch.func.vmap(lambda x, p: torch.quantile(x, p, dim=1))(ta, tq)
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-14)


def test_vmap_quantile_checks_every_sample_q():
    (a, ta), (qq, tq) = _both(A), _both(np.array([[0.1, 0.5], [0.9, 1.5]]))
    with pytest.raises(RuntimeError) as e:
        dyngrad.func.vmap(lambda x, p: dyngrad.quantile(x, p, dim=1))(a, qq)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as et:
            torch.func.vmap(lambda x, p: torch.quantile(x, p, dim=1))(ta, tq)
    assert str(e.value) == str(et.value)


def test_vmap_cov_with_batched_weights_equals_the_loop():
    a = dyngrad.tensor(A)
    w = dyngrad.tensor([[1.0, 2.0, 0.5, 1.0], [0.2, 0.2, 3.0, 1.0]])
    _batched.LOOPED.clear()
    got = dyngrad.func.vmap(lambda x, v: dyngrad.cov(x, correction=2, aweights=v))(a, w)
    assert not _batched.LOOPED
    exp = [torch.cov(torch.tensor(A[i]), correction=2, aweights=torch.tensor(w[i].numpy()))
           for i in range(2)]
    np.testing.assert_allclose(got.numpy(), np.stack([e.numpy() for e in exp]), rtol=1e-13)


def test_vmap_cov_zeroes_only_the_samples_without_degrees_of_freedom():
    a = dyngrad.tensor(A)
    f = dyngrad.tensor([[1, 1, 0, 0], [3, 1, 2, 1]])
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        got = dyngrad.func.vmap(lambda x, v: dyngrad.cov(x, correction=2, fweights=v))(a, f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exp = [torch.cov(torch.tensor(A[i]), correction=2, fweights=torch.tensor(f[i].numpy()))
               for i in range(2)]
    np.testing.assert_allclose(got.numpy(), np.stack([e.numpy() for e in exp]), rtol=1e-13)


def test_bincount_records_not_implemented_on_the_weights():
    x = [0, 1, 1, 3]
    w = dyngrad.tensor([0.5, 0.25, 1.0, 2.0], requires_grad=True)
    tw = torch.tensor([0.5, 0.25, 1.0, 2.0], requires_grad=True)
    r, tr = dyngrad.bincount(dyngrad.tensor(x), w, 6), torch.bincount(torch.tensor(x), tw, 6)
    np.testing.assert_array_equal(r.detach().numpy(), tr.detach().numpy())
    assert r.grad_fn.name() == tr.grad_fn.name()
    assert len(r.grad_fn.next_functions) == len(tr.grad_fn.next_functions) == 1
    with pytest.raises(RuntimeError, match="derivative for aten::bincount is not implemented"):
        r.sum().backward()
    assert "bincount" in OPS and OPS["bincount"].get("spec") is not None


@pytest.mark.parametrize("name", ["equal", "allclose"])
def test_query_argument_errors_as_torch(name):
    for args in [(dyngrad.ones(2), 1.0), (1.0, dyngrad.ones(2))]:
        targs = tuple(torch.ones(2) if isinstance(v, dyngrad.Tensor) else v for v in args)
        with pytest.raises(TypeError) as e:
            getattr(dyngrad, name)(*args)
        with pytest.raises(TypeError) as et:
            getattr(torch, name)(*targs)
        assert str(e.value) == str(et.value)
    assert getattr(dyngrad, name)(dyngrad.ones(2), dyngrad.ones(2)) is True
    assert getattr(dyngrad.ones(2), name)(dyngrad.zeros(2)) is False
