"""autograd.grad(..., is_grads_batched=True) against torch: one vector-Jacobian product per
row of each grad_output, stacked; unused inputs, materialize_grads, several outputs,
create_graph, and the shape error."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _leaves(L):
    return (L.tensor([1.0, 2.0, 3.0], requires_grad=True),
            L.tensor([1.0, -1.0, 0.5], requires_grad=True))


def _grad_then_backward(L):
    x, y = _leaves(L)
    L.autograd.grad(x * y, [x, y], L.eye(3), is_grads_batched=True,
                    create_graph=True)[0].sum().backward()
    return x.grad, y.grad


CASES = {
    "jacobian": lambda L, x, y: L.autograd.grad(x * x, x, L.eye(3), is_grads_batched=True),
    "scalar_output": lambda L, x, y: L.autograd.grad(x.sum(), x, L.ones(4),
                                                     is_grads_batched=True),
    "shape_mismatch": lambda L, x, y: L.autograd.grad(x * 2, x, L.ones(4, 2),
                                                      is_grads_batched=True),
    "unused": lambda L, x, y: L.autograd.grad(x * 2, [x, y], L.ones(2, 3),
                                              is_grads_batched=True, allow_unused=True),
    "materialized": lambda L, x, y: L.autograd.grad(x * 2, [x, y], L.ones(2, 3),
                                                    is_grads_batched=True,
                                                    materialize_grads=True),
    "two_outputs": lambda L, x, y: L.autograd.grad([x * y, (x * y).sum(0, keepdim=True)],
                                                   [x, y], [L.eye(3), L.ones(3, 1)],
                                                   is_grads_batched=True),
    "create_graph": lambda L, x, y: _grad_then_backward(L),
}


def _outcome(L, name):
    try:
        r = CASES[name](L, *_leaves(L))
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return type(e).__name__, str(e)
    return [None if t is None else np.round(t.detach().numpy(), 10).tolist() for t in r]


@pytest.mark.parametrize("name", list(CASES))
def test_grads_batched_matches_torch(name):
    assert _outcome(dyngrad, name) == _outcome(torch, name)
