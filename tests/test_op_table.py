"""Generic checks driven by the op table (tests/optable/): forward values against the NumPy
reference, grad_fn names, float64 gradcheck and gradgradcheck, float32 agreement."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad as torch
from tests.optable import all_rows

ROWS = all_rows()
CASES = [(r, s) for r in ROWS for s in r.samples]
IDS = [f"{r.name}-{s!r}" for r, s in CASES]


def _call(row, sample, tensors):
    return row.fn(*tensors, *sample.extra, **sample.kwargs)


def _outputs(o):
    if isinstance(o, torch.Tensor):
        return [o]
    return [x for x in o if isinstance(x, torch.Tensor)]


@pytest.mark.parametrize("row,sample", CASES, ids=IDS)
def test_forward_matches_reference(row, sample):
    if row.ref is None:
        pytest.skip("no NumPy reference")
    ts = sample.make(torch, requires_grad=False)
    got = _outputs(_call(row, sample, ts))
    exp = row.ref(*[t.numpy() for t in ts], *sample.extra, **sample.kwargs)
    exp = [exp] if not isinstance(exp, (tuple, list)) else list(exp)
    for g, e in zip(got, exp):
        assert tuple(g.shape) == np.shape(e), f"{row.name}: shape {tuple(g.shape)} vs {np.shape(e)}"
        np.testing.assert_allclose(g.numpy().astype(np.float64) if g.dtype.is_floating_point
                                   else g.numpy(), e, rtol=row.rtol, atol=row.atol)


@pytest.mark.parametrize("row,sample", CASES, ids=IDS)
def test_grad_fn_name(row, sample):
    if not row.grad or row.grad_fn is None:
        pytest.skip("not differentiable or no name given")
    ts = sample.make(torch)
    out = _outputs(_call(row, sample, ts))[0]
    assert type(out.grad_fn).__name__ == row.grad_fn


@pytest.mark.parametrize("row,sample", CASES, ids=IDS)
def test_gradcheck(row, sample):
    if not row.grad:
        pytest.skip("not differentiable")
    ts = sample.make(torch)
    assert torch.autograd.gradcheck(lambda *a: _call(row, sample, a), ts, atol=row.atol,
                                    rtol=row.rtol)


@pytest.mark.parametrize("row,sample", CASES, ids=IDS)
def test_gradgradcheck(row, sample):
    if not (row.grad and row.gradgrad):
        pytest.skip("no second derivative")
    ts = sample.make(torch)
    assert torch.autograd.gradgradcheck(lambda *a: _call(row, sample, a), ts, atol=row.atol,
                                        rtol=row.rtol)


@pytest.mark.parametrize("row,sample", CASES, ids=IDS)
def test_float32_agrees_with_float64(row, sample):
    if not row.float32_ok:
        pytest.skip("float32 not meaningful")
    t64 = sample.make(torch, requires_grad=False)
    t32 = [t.float() if t.is_floating_point() else t for t in t64]
    o64 = _outputs(_call(row, sample, t64))
    o32 = _outputs(_call(row, sample, t32))
    for a, b in zip(o32, o64):
        if a.is_floating_point():
            assert a.dtype == torch.float32, f"{row.name} changed float32 to {a.dtype}"
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-3, atol=1e-4)
