"""Layer-module behaviour: running statistics, train/eval, dropout scaling, shapes, reprs,
initialisation bounds and error messages."""
from __future__ import annotations

import math

import numpy as np
import pytest

import dyngrad as torch
import dyngrad.nn as nn
import dyngrad.nn.functional as F


def test_batchnorm_running_stats_by_hand():
    bn = nn.BatchNorm2d(3, momentum=0.2)
    x = torch.randn(4, 3, 2, 2)
    bn(x)
    xd = x.numpy().astype(np.float64)
    mean = xd.mean(axis=(0, 2, 3))
    var_u = xd.var(axis=(0, 2, 3), ddof=1)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.2 * mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.8 + 0.2 * var_u, rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1


def test_batchnorm_cumulative_momentum_none():
    bn = nn.BatchNorm1d(2, momentum=None)
    xs = [torch.randn(5, 2) for _ in range(3)]
    for x in xs:
        bn(x)
    means = np.mean([x.numpy().mean(0) for x in xs], axis=0)
    np.testing.assert_allclose(bn.running_mean.numpy(), means, rtol=1e-5, atol=1e-6)
    assert bn.num_batches_tracked.item() == 3


def test_batchnorm_eval_uses_running_stats():
    bn = nn.BatchNorm1d(2)
    bn.running_mean.data.fill_(1.0)
    bn.running_var.data.fill_(4.0)
    bn.eval()
    x = torch.tensor([[3.0, 5.0]])
    y = bn(x)
    np.testing.assert_allclose(y.detach().numpy(), [[2 / math.sqrt(4 + 1e-5), 4 / math.sqrt(4 + 1e-5)]],
                               rtol=1e-5)
    assert bn.running_mean.numpy().tolist() == [1.0, 1.0]


def test_batchnorm_no_tracking_and_errors():
    bn = nn.BatchNorm2d(3, track_running_stats=False)
    assert bn.running_mean is None
    bn.eval()
    y = bn(torch.randn(2, 3, 2, 2))
    np.testing.assert_allclose(y.detach().numpy().mean(axis=(0, 2, 3)), 0, atol=1e-5)
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(torch.randn(2, 3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(torch.randn(1, 3))
    sd = nn.BatchNorm1d(3).state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]


def test_dropout_scaling_and_fraction():
    torch.manual_seed(0)
    d = nn.Dropout(0.25)
    x = torch.ones(200, 200)
    y = d(x).numpy()
    zeros = (y == 0).mean()
    assert 0.23 < zeros < 0.27
    np.testing.assert_allclose(y[y != 0], 1 / 0.75, rtol=1e-6)
    d.eval()
    assert d(x) is x
    assert (F.dropout(x, 1.0).numpy() == 0).all()
    with pytest.raises(ValueError, match="dropout probability"):
        nn.Dropout(1.5)


def test_dropout2d_zeroes_whole_channels():
    torch.manual_seed(1)
    y = nn.Dropout2d(0.5)(torch.ones(8, 6, 3, 3)).numpy()
    per_channel = y.reshape(8, 6, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()


def test_dropout_gradient_matches_mask():
    torch.manual_seed(2)
    x = torch.ones(10, 10, requires_grad=True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


@pytest.mark.parametrize("layer,shape,out", [
    (lambda: nn.Conv2d(1, 16, 3, padding=1), (64, 1, 28, 28), (64, 16, 28, 28)),
    (lambda: nn.Conv2d(3, 8, 5, stride=2), (2, 3, 32, 32), (2, 8, 14, 14)),
    (lambda: nn.Conv2d(4, 8, 3, dilation=2, groups=4), (1, 4, 9, 9), (1, 8, 5, 5)),
    (lambda: nn.Conv2d(2, 3, (2, 4), padding="same"), (1, 2, 7, 6), (1, 3, 7, 6)),
    (lambda: nn.Conv1d(3, 5, 3, padding=1), (2, 3, 10), (2, 5, 10)),
    (lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1), (1, 4, 5, 5),
     (1, 2, 10, 10)),
    (lambda: nn.MaxPool2d(2), (2, 3, 7, 7), (2, 3, 3, 3)),
    (lambda: nn.MaxPool2d(2, ceil_mode=True), (2, 3, 7, 7), (2, 3, 4, 4)),
    (lambda: nn.AvgPool2d(3, 1, 1), (2, 3, 7, 7), (2, 3, 7, 7)),
    (lambda: nn.AdaptiveAvgPool2d((1, 1)), (2, 3, 7, 5), (2, 3, 1, 1)),
    (lambda: nn.Upsample(scale_factor=2), (1, 2, 3, 4), (1, 2, 6, 8)),
    (lambda: nn.Embedding(10, 4), None, (2, 3, 4)),
])
def test_output_shapes(layer, shape, out):
    m = layer()
    x = torch.randint(0, 10, (2, 3)) if shape is None else torch.randn(*shape)
    assert tuple(m(x).shape) == out


def test_conv_transpose_output_size():
    m = nn.ConvTranspose2d(2, 2, 3, stride=2, padding=1)
    x = torch.randn(1, 2, 4, 4)
    assert tuple(m(x, output_size=[8, 8]).shape) == (1, 2, 8, 8)
    assert tuple(m(x).shape) == (1, 2, 7, 7)


def test_conv_default_init_bounds():
    torch.manual_seed(0)
    m = nn.Conv2d(4, 8, 3)
    fan_in = 4 * 9
    bound = 1 / math.sqrt(fan_in)   # kaiming_uniform_(a=sqrt(5)) gives the same bound
    assert np.abs(m.weight.detach().numpy()).max() <= bound + 1e-7
    assert np.abs(m.bias.detach().numpy()).max() <= bound + 1e-7
    assert np.abs(m.weight.detach().numpy()).max() > 0.8 * bound


def test_reprs():
    assert repr(nn.Conv2d(1, 16, 3, padding=1)) == \
        "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.BatchNorm2d(8)) == \
        "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert repr(nn.LeakyReLU(0.2, inplace=True)) == "LeakyReLU(negative_slope=0.2, inplace=True)"
    assert repr(nn.GELU()) == "GELU(approximate='none')"
    assert repr(nn.Dropout(0.1)) == "Dropout(p=0.1, inplace=False)"
    assert repr(nn.Embedding(5, 2, padding_idx=0)) == "Embedding(5, 2, padding_idx=0)"
    assert repr(nn.LayerNorm(4)) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"


def test_conv_channel_error_message():
    with pytest.raises(RuntimeError) as e:
        F.conv2d(torch.zeros(64, 3, 28, 28), torch.zeros(16, 1, 3, 3))
    assert str(e.value) == ("Given groups=1, weight of size [16, 1, 3, 3], expected "
                            "input[64, 3, 28, 28] to have 1 channels, but got 3 channels instead")


def test_conv_kernel_too_large_error():
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 3, 3))


def test_embedding_padding_idx_gets_no_grad():
    e = nn.Embedding(5, 3, padding_idx=1)
    assert (e.weight.detach().numpy()[1] == 0).all()
    e(torch.tensor([[1, 2, 1], [0, 1, 4]])).sum().backward()
    g = e.weight.grad.numpy()
    assert (g[1] == 0).all() and (g[2] == 1).all() and (g[3] == 0).all()


def test_embedding_from_pretrained():
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    e = nn.Embedding.from_pretrained(w)
    assert not e.weight.requires_grad
    np.testing.assert_array_equal(e(torch.tensor([1])).numpy(), [[3.0, 4.0]])
    assert nn.Embedding.from_pretrained(w, freeze=False).weight.requires_grad


def test_layer_and_group_norm_statistics():
    x = torch.randn(3, 4, 5) * 3 + 2
    y = nn.LayerNorm(5)(x).detach().numpy()
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(y.var(-1), 1, rtol=1e-3)
    y = nn.GroupNorm(2, 4)(x).detach().numpy().reshape(3, 2, -1)
    np.testing.assert_allclose(y.mean(-1), 0, atol=1e-5)


def test_prelu_parameter_learns():
    m = nn.PReLU(3)
    x = -torch.ones(2, 3, 4)
    m(x).sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), [-8.0, -8.0, -8.0])


def test_no_graph_without_grad():
    x = torch.randn(2, 1, 5, 5)
    m = nn.Conv2d(1, 2, 3)
    with torch.no_grad():
        assert m(x).grad_fn is None
    assert F.max_pool2d(x, 2).grad_fn is None
    assert F.gelu(x).grad_fn is None


def test_float32_preserved():
    x = torch.randn(2, 1, 6, 6)
    for f in (lambda t: nn.Conv2d(1, 2, 3)(t), lambda t: F.max_pool2d(t, 2),
              lambda t: F.avg_pool2d(t, 2), lambda t: nn.BatchNorm2d(1)(t),
              lambda t: F.interpolate(t, scale_factor=2, mode="bilinear"), lambda t: F.gelu(t),
              lambda t: F.pad(t, (1, 1, 1, 1), mode="reflect")):
        assert f(x).dtype == torch.float32


def test_cnn_trains():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(4 * 4 * 4, 2))
    x = torch.randn(16, 1, 8, 8)
    y = (x.sum((1, 2, 3)) > 0).long()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    first = None
    for _ in range(30):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        first = first if first is not None else loss.item()
    assert loss.item() < 0.5 * first
