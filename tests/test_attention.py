"""MultiheadAttention and TransformerEncoderLayer: names, init, shapes, masks, a NumPy
reference of single-head attention, dropout and norm placement."""
import numpy as np
import pytest

import dyngrad as torch
from dyngrad import nn


def test_names_and_init():
    m = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias",
                                                    "out_proj.weight", "out_proj.bias"]
    assert (m.in_proj_bias.detach().numpy() == 0).all()
    bound = np.sqrt(6 / (8 + 24))
    assert np.abs(m.in_proj_weight.detach().numpy()).max() <= bound
    k = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True)
    assert [n for n, _ in k.named_parameters()][:3] == ["q_proj_weight", "k_proj_weight",
                                                        "v_proj_weight"]
    assert k.in_proj_weight is None and k.bias_k.shape == (1, 1, 8)
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(7, 2)


def test_single_head_matches_numpy():
    m = nn.MultiheadAttention(4, 1)
    x = np.random.RandomState(0).randn(3, 1, 4).astype(np.float32)
    w = m.in_proj_weight.detach().numpy()
    wo, bo = m.out_proj.weight.detach().numpy(), m.out_proj.bias.detach().numpy()
    q, k, v = x[:, 0] @ w[:4].T, x[:, 0] @ w[4:8].T, x[:, 0] @ w[8:].T
    s = q @ k.T / 2.0
    a = np.exp(s - s.max(-1, keepdims=True))
    a /= a.sum(-1, keepdims=True)
    ref = (a @ v) @ wo.T + bo
    out, weights = m(torch.tensor(x), torch.tensor(x), torch.tensor(x))
    np.testing.assert_allclose(out.detach().numpy()[:, 0], ref, atol=1e-5)
    np.testing.assert_allclose(weights.detach().numpy()[0], a, atol=1e-6)


def test_masks_and_shapes():
    m = nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, 5, 8)
    kpm = torch.tensor(np.array([[False] * 4 + [True], [False] * 5]))
    out, w = m(x, x, x, key_padding_mask=kpm)
    assert out.shape == (2, 5, 8) and w.shape == (2, 5, 5)
    assert np.allclose(w.detach().numpy()[0, :, 4], 0)
    causal = torch.tensor(np.triu(np.ones((5, 5), bool), 1))
    _, w = m(x, x, x, attn_mask=causal, average_attn_weights=False)
    assert w.shape == (2, 2, 5, 5) and np.allclose(w.detach().numpy()[..., 0, 1:], 0)
    out, w = m(x, x, x, need_weights=False)
    assert w is None
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(x, x, x, attn_mask=torch.zeros(4, 4))


def test_encoder_layer():
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    assert [n for n, _ in layer.named_children()] == ["self_attn", "linear1", "dropout",
                                                      "linear2", "norm1", "norm2", "dropout1",
                                                      "dropout2"]
    x = torch.randn(4, 3, 8, requires_grad=True)
    y = layer(x)
    assert y.shape == (4, 3, 8)
    np.testing.assert_allclose(y.detach().numpy().mean(-1), 0, atol=1e-5)
    y.sum().backward()
    assert x.grad is not None
    pre = nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, activation="gelu")
    assert pre(torch.randn(4, 3, 8)).shape == (4, 3, 8)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    enc = nn.TransformerEncoder(layer, 2)
    assert enc(torch.randn(4, 3, 8)).shape == (4, 3, 8)
    assert enc.layers[0].linear1.weight is not enc.layers[1].linear1.weight
