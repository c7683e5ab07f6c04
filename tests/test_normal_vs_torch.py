"""torch.normal's four overloads against torch: result shape and dtype (the mean's, the std's,
or dtype=), the zero-gradient nodes NormalBackward1/2/3 and their edges, out=, errors."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _outcome(L, f):
    try:
        r = f(L)
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return type(e).__name__, str(e).split("\n")[0].replace("torch.dtype", "dtype")
    fn = r.grad_fn
    return (tuple(r.shape), str(r.dtype), r.requires_grad,
            None if fn is None else (fn.name(), len(fn.next_functions)))


CASES = {
    "numbers_dtype": lambda L: L.normal(0., 1., (2,), dtype=L.float64),
    "tensor_mean": lambda L: L.normal(L.zeros(2), 1.),
    "tensor_mean_dtype": lambda L: L.normal(L.zeros(2), 1., dtype=L.float64),
    "tensor_std_dtype_from_std": lambda L: L.normal(0., L.ones(2, dtype=L.float64)),
    "both_dtype_from_mean": lambda L: L.normal(L.zeros(2), L.ones(2, dtype=L.float64)),
    "both_dtype_from_mean_64": lambda L: L.normal(L.zeros(2, dtype=L.float64), L.ones(2)),
    "integer_dtype": lambda L: L.normal(0., 1., (2,), dtype=L.long),
    "numbers_without_size": lambda L: L.normal(0., 1.),
    "numbers_requires_grad": lambda L: L.normal(0., 1., (2,), requires_grad=True),
    "grad_mean": lambda L: L.normal(L.zeros(2, requires_grad=True), 1.),
    "grad_std": lambda L: L.normal(0., L.ones(2, requires_grad=True)),
    "grad_both_broadcast": lambda L: L.normal(L.zeros(3, 1, requires_grad=True),
                                              L.ones(1, 2, requires_grad=True)),
    "negative_std": lambda L: L.normal(L.zeros(2), -1.),
    "negative_std_tensor": lambda L: L.normal(L.zeros(2), -L.ones(2)),
    "integer_mean": lambda L: L.normal(L.zeros(2, dtype=L.long), 1.),
    "negative_std_numbers": lambda L: L.normal(0., -1., (2,)),
    "tensors_out": lambda L: L.normal(L.zeros(2), L.ones(2), out=L.empty(0)),
    "numbers_out": lambda L: L.normal(0., 1., (3,), out=L.empty(0, dtype=L.float64)),
    "tensor_with_size": lambda L: L.normal(L.zeros(2), 1., (2,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_normal_matches_torch(name):
    assert _outcome(dyngrad, CASES[name]) == _outcome(torch, CASES[name])


def test_normal_gradients_are_zero_in_the_inputs_shapes():
    m = dyngrad.zeros(3, 1, requires_grad=True)
    s = dyngrad.ones(1, 2, requires_grad=True)
    dyngrad.normal(m, s).sum().backward()
    assert m.grad.tolist() == [[0.0]] * 3 and s.grad.tolist() == [[0.0, 0.0]]


def test_normal_follows_its_generator():
    draws = []
    for _ in range(2):
        g = dyngrad.Generator().manual_seed(1)
        draws.append(dyngrad.normal(dyngrad.zeros(3), 2., generator=g).tolist())
    assert draws[0] == draws[1]
