"""RNN/LSTM/GRU and cells: parameter names and shapes, init bounds, output shapes, gradients,
a hand-written NumPy reference of one Elman layer, dropout between layers, errors."""
import math

import numpy as np
import pytest

import dyngrad as torch
from dyngrad import nn


def test_parameter_names_shapes_and_init():
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    names = [n for n, _ in m.named_parameters()]
    assert names[:4] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"]
    assert names[4:8] == ["weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse",
                          "bias_hh_l0_reverse"]
    assert m.weight_ih_l1.shape == (16, 8) and m.weight_hh_l1_reverse.shape == (16, 4)
    bound = 1 / math.sqrt(4)
    for p in m.parameters():
        assert np.abs(p.detach().numpy()).max() <= bound
    assert nn.GRU(3, 5).weight_ih_l0.shape == (15, 3)
    assert [n for n, _ in nn.RNN(3, 4, bias=False).named_parameters()] == ["weight_ih_l0",
                                                                          "weight_hh_l0"]


@pytest.mark.parametrize("cls", [nn.RNN, nn.GRU, nn.LSTM])
def test_shapes(cls):
    m = cls(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    out, h = m(torch.randn(5, 7, 3))
    assert out.shape == (5, 7, 8)
    h = h[0] if cls is nn.LSTM else h
    assert h.shape == (4, 5, 4)
    out, h = cls(3, 4)(torch.randn(7, 3))
    assert out.shape == (7, 4)


def test_elman_matches_numpy_reference():
    m = nn.RNN(2, 3)
    x = np.random.RandomState(0).randn(4, 1, 2).astype(np.float32)
    w_ih, w_hh, b_ih, b_hh = [p.detach().numpy() for p in m.parameters()]
    h = np.zeros((1, 3), np.float32)
    ref = []
    for t in range(4):
        h = np.tanh(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
        ref.append(h)
    out, hn = m(torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy(), np.stack(ref), atol=1e-6)
    np.testing.assert_allclose(hn.detach().numpy()[0], ref[-1], atol=1e-6)


def test_gradients_flow_to_every_parameter():
    m = nn.GRU(2, 3, num_layers=2, bidirectional=True)
    x = torch.randn(4, 2, 2, requires_grad=True)
    out, h = m(x)
    out.sum().backward()
    assert x.grad is not None
    assert all(p.grad is not None and np.abs(p.grad.numpy()).sum() > 0 for p in m.parameters())


def test_dropout_between_layers_only_in_training():
    m = nn.LSTM(2, 3, num_layers=2, dropout=0.5)
    x = torch.randn(3, 2, 2)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(2, 3, dropout=0.2)


def test_cells():
    h, c = nn.LSTMCell(3, 4)(torch.randn(2, 3))
    assert h.shape == (2, 4) and c.shape == (2, 4)
    assert nn.GRUCell(3, 4)(torch.randn(3)).shape == (4,)
    assert nn.RNNCell(3, 4, nonlinearity="relu")(torch.randn(2, 3)).min().item() >= 0


def test_errors():
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(2, 3, dropout=2)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(2, 3, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(2, 0)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 2, got 3"):
        nn.GRU(2, 3)(torch.randn(4, 1, 3))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        nn.GRU(2, 3)(torch.randn(4, 1, 2), torch.zeros(2, 1, 3))
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D"):
        nn.GRUCell(2, 3)(torch.randn(1, 1, 2))
