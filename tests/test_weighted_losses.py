"""mse_loss, l1_loss and huber_loss with per-element ``weight`` (PyTorch's weighted
composition): values, gradients of input and weight, the recorded graph and the errors,
against torch."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.test_graph_structure import walk  # noqa: E402


def _run(L, name, reduction, wshape, kwargs):
    rs = np.random.RandomState(3)
    x = L.tensor(rs.randn(3, 4), requires_grad=True)
    y = L.tensor(rs.randn(3, 4))
    w = L.tensor(rs.rand(*wshape), requires_grad=True)
    try:
        r = getattr(L.nn.functional, name)(x, y, reduction=reduction, weight=w, **kwargs)
        r.sum().backward()
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return type(e).__name__, str(e)
    return (np.round(r.detach().numpy(), 12).tolist(), np.round(x.grad.numpy(), 12).tolist(),
            np.round(w.grad.numpy(), 12).tolist(), walk(r, [x, w]))


@pytest.mark.parametrize("name,kwargs", [("mse_loss", {}), ("l1_loss", {}),
                                         ("huber_loss", {"delta": 0.7}),
                                         ("mse_loss", {"size_average": False})])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "avg"])
def test_weighted_loss_matches_torch(name, kwargs, reduction):
    assert _run(dyngrad, name, reduction, (3, 4), kwargs) == \
        _run(torch, name, reduction, (3, 4), kwargs)


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_weight_of_another_shape_is_refused(name):
    assert _run(dyngrad, name, "mean", (4,), {}) == _run(torch, name, "mean", (4,), {}) == \
        ("ValueError", "Weights and input must have the same size.")
