"""nn.init: distributions, bounds, std, shapes, fan computation and errors."""
import math

import numpy as np
import pytest

import dyngrad as torch
from dyngrad.nn import init


def w(*shape):
    return torch.empty(*shape)


def test_uniform_normal_constant():
    t = init.uniform_(w(200, 200), -0.5, 2.0).numpy()
    assert t.min() >= -0.5 and t.max() <= 2.0 and abs(t.mean() - 0.75) < 0.02
    t = init.normal_(w(200, 200), 1.0, 0.5).numpy()
    assert abs(t.mean() - 1.0) < 0.01 and abs(t.std() - 0.5) < 0.01
    assert (init.constant_(w(3), 2.5).numpy() == 2.5).all()
    assert (init.zeros_(w(3)).numpy() == 0).all() and (init.ones_(w(3)).numpy() == 1).all()


def test_eye_dirac():
    np.testing.assert_array_equal(init.eye_(w(2, 3)).numpy(), np.eye(2, 3))
    d = init.dirac_(w(2, 2, 3)).numpy()
    assert d[0, 0, 1] == 1 and d[1, 1, 1] == 1 and d.sum() == 2
    with pytest.raises(ValueError):
        init.eye_(w(2, 2, 2))


def test_gain():
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75 and init.calculate_gain("conv2d") == 1
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("foo")


def test_xavier_kaiming_bounds_and_std():
    t = init.xavier_uniform_(w(300, 100), gain=2.0).numpy()
    assert np.abs(t).max() <= 2.0 * math.sqrt(6 / 400)
    t = init.xavier_normal_(w(300, 100)).numpy()
    assert abs(t.std() - math.sqrt(2 / 400)) < 0.003
    t = init.kaiming_uniform_(w(300, 100), a=math.sqrt(5)).numpy()
    assert np.abs(t).max() <= 1 / math.sqrt(100) + 1e-7
    t = init.kaiming_normal_(w(300, 100), mode="fan_out", nonlinearity="relu").numpy()
    assert abs(t.std() - math.sqrt(2 / 300)) < 0.003
    conv = init.kaiming_uniform_(w(8, 4, 3, 3)).numpy()
    assert np.abs(conv).max() <= math.sqrt(3) * math.sqrt(2 / 1.0) / math.sqrt(36)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(w(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(w(3, 3), mode="fan_avg")


def test_orthogonal_and_trunc_normal():
    q = init.orthogonal_(w(4, 6)).numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-5)
    q = init.orthogonal_(w(6, 3), gain=2).numpy()
    np.testing.assert_allclose(q.T @ q, 4 * np.eye(3), atol=1e-4)
    with pytest.raises(ValueError):
        init.orthogonal_(w(3))
    t = init.trunc_normal_(w(10000), std=1.0, a=-0.5, b=1.0).numpy()
    assert t.min() >= -0.5 and t.max() <= 1.0


def test_seeded_generator_repeats():
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    a = init.normal_(w(5), generator=g1).numpy()
    b = init.normal_(w(5), generator=g2).numpy()
    np.testing.assert_array_equal(a, b)


def test_clip_grad_and_vector_conversion():
    from dyngrad.nn.utils import (clip_grad_norm_, clip_grad_value_, parameters_to_vector,
                                  vector_to_parameters)
    a = torch.nn.Parameter(torch.ones(3))
    b = torch.nn.Parameter(torch.ones(4))
    a.grad = torch.full((3,), 3.0)
    b.grad = torch.full((4,), 4.0)
    total = clip_grad_norm_([a, b], 1.0)
    assert total.item() == pytest.approx(math.sqrt(27 + 64))
    new = math.sqrt((a.grad.numpy() ** 2).sum() + (b.grad.numpy() ** 2).sum())
    assert new == pytest.approx(1.0, rel=1e-5)
    b.grad = torch.full((4,), -5.0)
    clip_grad_value_([a, b], 0.1)
    assert b.grad.numpy().min() == pytest.approx(-0.1)
    assert clip_grad_norm_([a, b], 10, norm_type="inf").item() == pytest.approx(0.1)
    v = parameters_to_vector([a, b])
    assert v.shape == (7,)
    vector_to_parameters(torch.arange(7.0), [a, b])
    np.testing.assert_array_equal(b.detach().numpy(), [3, 4, 5, 6])
    with pytest.raises(TypeError):
        vector_to_parameters([1.0], [a])
