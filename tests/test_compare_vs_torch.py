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
    # a complex Python scalar makes a real tensor's result complex (it dropped the imaginary
    # part, with NumPy's ComplexWarning)
    "T.ones(2) * 1j", "str((T.ones(2) * 1j).dtype)", "1j * T.ones(2, dtype=T.float64)",
    "str((T.ones(2, dtype=T.float64) + 2j).dtype)", "T.arange(3) - 1j", "str((T.arange(3) / 1j).dtype)",
    "T.tensor([True, False]) * (1 + 2j)", "2j - T.ones(2)", "T.ones(2) ** 1j", "T.ones(2).mul(1j)",
    "T.add(T.ones(2), 1j, alpha=2)",
    "T.autograd.grad((T.tensor([0.5, -1.5], requires_grad=True) * 1j).abs().sum(), "
    "T.tensor([0.5, -1.5], requires_grad=True), allow_unused=True)",
    "(lambda x: T.autograd.grad(((x + 2j) ** 2).abs().sum(), x)[0])"
    "(T.tensor([0.5, -1.5], dtype=T.float64, requires_grad=True))",
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


def test_half_times_complex_is_complex64():
    """PyTorch gives its experimental complex32; dyngrad has no such dtype (docs/reliability.md)."""
    assert dyngrad.ones(2, dtype=dyngrad.float16).mul(1j).dtype == dyngrad.complex64

