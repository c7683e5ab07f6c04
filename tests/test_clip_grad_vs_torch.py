"""nn.utils gradient clipping against PyTorch, bit for bit: the returned norm and its dtype,
the clipped gradients, how many in-place steps each gradient's version counter records, the
warnings, and get_total_norm over mixed dtypes."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _run(L, fn, generator=False, **kw):
    rs = np.random.RandomState(0)
    ps = [L.tensor(rs.randn(*s).astype(np.float32), requires_grad=True)
          for s in [(3, 4), (5,), (2, 2)]]
    for p in ps:
        p.grad = L.tensor(rs.randn(*p.shape).astype(np.float32) * 3)
    v0 = [p.grad._version for p in ps]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = getattr(L.nn.utils, fn)((p for p in ps) if generator else ps, **kw)
    return ((None if r is None else (r.item(), str(r.dtype).split(".")[-1])),
            [p.grad.numpy().tolist() for p in ps],
            [p.grad._version - v for p, v in zip(ps, v0)],
            [(x.category.__name__, str(x.message)) for x in w])


CASES = [("clip_grad_norm_", {"max_norm": 1.0}), ("clip_grad_norm_", {"max_norm": 100.0}),
         ("clip_grad_norm_", {"max_norm": 1.0, "norm_type": float("inf")}),
         ("clip_grad_norm_", {"max_norm": 2.0, "norm_type": 1}),
         ("clip_grad_norm_", {"max_norm": 2.0, "norm_type": 3.5}),
         ("clip_grad_norm_", {"max_norm": 1.0, "generator": True}),
         ("clip_grad_norm", {"max_norm": 1.0}), ("clip_grad_value_", {"clip_value": 0.5})]


@pytest.mark.parametrize("fn,kw", CASES, ids=[f"{f}-{k}" for f, k in CASES])
def test_clipping_matches_torch(fn, kw):
    assert _run(dyngrad, fn, **kw) == _run(torch, fn, **kw)


def test_total_norm_and_empty_generator_match_torch():
    def run(L):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            empty = L.nn.utils.clip_grad_norm_((p for p in []), 1.0)
        mixed = L.nn.utils.get_total_norm([L.ones(3), L.ones(2, dtype=L.float64)], 3.0)
        return (empty.item(), [str(x.message) for x in w], mixed.item(),
                str(mixed.dtype).split(".")[-1])
    assert run(dyngrad) == run(torch)


def test_nonfinite_norm_refused_as_torch():
    def run(L):
        p = L.ones(2, requires_grad=True)
        p.grad = L.tensor([float("inf"), 1.0])
        with pytest.raises(RuntimeError) as e:
            L.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
        return str(e.value)
    assert run(dyngrad) == run(torch)
