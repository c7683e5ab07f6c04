"""Comparisons against PyTorch where NumPy would answer differently: complex operands of the
ordered comparisons (PyTorch has no kernel), Python ints beyond int64 (PyTorch reads them as
uint64 or refuses them)."""
from __future__ import annotations

import pytest

import dyngrad

torch = pytest.importorskip("torch")

CASES = [
    "T.lt(T.tensor([1+1j]), T.tensor([2+0j]))", "T.tensor([1+1j]) < 1", "T.tensor([1+1j]) >= 1",
    "T.lt(T.tensor([1.]), T.tensor([1j]))", "T.le(T.tensor([1.]), 1j)",
    "T.gt(T.tensor([1.], dtype=T.float64), T.tensor([1j], dtype=T.complex128))",
    "T.eq(T.tensor([1+1j]), T.tensor([1+1j]))", "T.ne(T.tensor([1.]), 1j)",
    "T.tensor([1]) < 2**63", "T.tensor([1.]) < 2**63", "T.tensor([1]) < 2**64",
    "T.tensor([1]) < -2**63", "T.tensor([1]) < -2**63 - 1", "T.tensor([1]) == 2**64 - 1",
    "T.tensor([1.]) > 2**70", "T.tensor([1, 2]) == 'a'", "T.tensor([1, 2]) != None",
]


def _run(L, expr):
    try:
        r = eval(expr, {"T": L})
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).splitlines()[0]
    return r.tolist() if hasattr(r, "tolist") else r


@pytest.mark.parametrize("expr", CASES)
def test_same_as_torch(expr):
    assert _run(dyngrad, expr) == _run(torch, expr)
