"""diagnose(): the seeds' check_computational_graph generalised, as a report and as data."""
import numpy as np

import dyngrad as torch
from dyngrad import nn


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))


def test_healthy_model():
    m = model()
    loss = m(torch.ones(4, 2)).sum()
    loss.backward()
    d = torch.diagnose(m, loss)
    assert d.ok and d.checked == 4
    assert "correctly attached" in str(d)


def test_not_leaf_and_frozen():
    m = model()
    m[2].bias.requires_grad_(False)
    d = torch.diagnose(m)
    assert d.no_grad_required == ["2.bias"]


def test_not_leaf_after_inplace_without_no_grad():
    m = model()
    w = m[0].weight
    w2 = w * 1
    m[0]._parameters["weight"] = w2  # a non-leaf in place of a parameter
    d = torch.diagnose(m)
    assert d.not_leaf == ["0.weight"]
    assert "0.weight is not a leaf" in d.report()


def test_unreachable_no_gradient_and_shared():
    m = model()
    extra = nn.Linear(1, 1)
    m.add_module("unused", extra)
    m.add_module("tied", m[0])
    loss = m[2](m[1](m[0](torch.ones(4, 2)))).sum()
    d = torch.diagnose(m, loss)
    assert d.unreachable == ["unused.weight", "unused.bias"]
    assert d.shared and d.shared[0][0] == "0.weight" and d.shared[0][1] == ["tied.weight"]
    loss.backward()
    d = torch.diagnose(m, loss)
    assert "unused.weight" in d.unreachable
    assert "shared with tied.weight" in d.report()


def test_nonfinite_gradients():
    m = model()
    loss = m(torch.ones(4, 2)).sum()
    loss.backward()
    m[2].weight.grad._data[0, 0] = np.nan
    m[0].bias.grad._data[1] = np.inf
    d = torch.diagnose(m, loss)
    assert d.nonfinite_grad == [("0.bias", 0, 1), ("2.weight", 1, 0)]
    assert "NaN" in d.report()
