"""nn.utils.fusion against PyTorch: a convolution (plain and transposed) or linear layer with
the evaluation-mode batch norm after it folded in gives the same weights and outputs, and
the same errors for a layer in training mode or mismatched sizes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _fill(L, *mods):
    rs = np.random.RandomState(0)
    with L.no_grad():
        for m in mods:
            for t in list(m.parameters()) + [b for b in m.buffers() if b.dtype.is_floating_point]:
                t.copy_(L.tensor(rs.uniform(0.2, 1.5, size=tuple(t.shape)), dtype=t.dtype))


CASES = {
    "conv2d": lambda L: (L.nn.Conv2d(2, 3, 3), L.nn.BatchNorm2d(3), (1, 2, 5, 5), False),
    "conv1d_nobias": lambda L: (L.nn.Conv1d(2, 3, 2, bias=False), L.nn.BatchNorm1d(3),
                                (2, 2, 6), False),
    "conv_transpose2d": lambda L: (L.nn.ConvTranspose2d(3, 2, 2), L.nn.BatchNorm2d(2),
                                   (1, 3, 4, 4), True),
    "linear": lambda L: (L.nn.Linear(4, 3), L.nn.BatchNorm1d(3), (5, 4), None),
    "conv2d_bn_affine_off": lambda L: (L.nn.Conv2d(2, 3, 1), L.nn.BatchNorm2d(3, affine=False),
                                       (1, 2, 3, 3), False),
}


def _fused(L, name):
    layer, bn, shape, transpose = CASES[name](L)
    _fill(L, layer, bn)
    layer.eval()
    bn.eval()
    x = L.tensor(np.random.RandomState(1).randn(*shape), dtype=L.float32)
    if transpose is None:
        fused = L.nn.utils.fuse_linear_bn_eval(layer, bn)
    else:
        fused = L.nn.utils.fuse_conv_bn_eval(layer, bn, transpose=transpose)
    return (fused.weight.detach().numpy(), fused.bias.detach().numpy(),
            fused(x).detach().numpy(), bn(layer(x)).detach().numpy(),
            type(fused.weight).__name__, fused.weight.requires_grad)


@pytest.mark.parametrize("name", sorted(CASES))
def test_fusion_matches_torch(name):
    mine, theirs = _fused(dyngrad, name), _fused(torch, name)
    for a, b in zip(mine[:4], theirs[:4]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mine[2], mine[3], rtol=1e-4, atol=1e-5)  # fused == unfused
    assert mine[4:] == theirs[4:]


def test_fusion_errors_match_torch():
    def errors(L):
        out = []
        for f in (lambda: L.nn.utils.fuse_linear_bn_eval(L.nn.Linear(2, 3), L.nn.BatchNorm1d(3)),
                  lambda: L.nn.utils.fuse_linear_bn_eval(L.nn.Linear(2, 3).eval(),
                                                         L.nn.BatchNorm1d(4).eval()),
                  lambda: L.nn.utils.fuse_conv_bn_eval(L.nn.Conv2d(1, 2, 1),
                                                       L.nn.BatchNorm2d(2).eval())):
            with pytest.raises(AssertionError) as e:
                f()
            out.append(str(e.value))
        return out
    assert errors(dyngrad) == errors(torch)
