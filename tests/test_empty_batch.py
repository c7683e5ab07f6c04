"""Modules given an empty batch, beside PyTorch: the output's shape, the input's and the
parameters' gradients, and the running statistics (an empty batch leaves them as they were),
with no NumPy warning."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

CASES = {
    "BatchNorm1d": ("BatchNorm1d(3)", (0, 3)),
    "BatchNorm1d_3d": ("BatchNorm1d(3)", (0, 3, 4)),
    "BatchNorm2d": ("BatchNorm2d(2)", (0, 2, 3, 3)),
    "GroupNorm": ("GroupNorm(2, 4)", (0, 4, 3)),
    "LayerNorm": ("LayerNorm(4)", (0, 4)),
    "InstanceNorm1d": ("InstanceNorm1d(3, affine=True)", (0, 3, 5)),
    "Linear": ("Linear(4, 2)", (0, 4)),
    "Conv2d": ("Conv2d(2, 3, 3, padding=1)", (0, 2, 5, 5)),
    "MaxPool2d": ("MaxPool2d(2)", (0, 2, 4, 4)),
    "AdaptiveMaxPool2d": ("AdaptiveMaxPool2d((2, 3))", (0, 2, 5, 6)),
    "AdaptiveAvgPool2d": ("AdaptiveAvgPool2d(1)", (0, 2, 5, 6)),
    "LSTM": ("LSTM(3, 4, batch_first=True)", (0, 5, 3)),
}


def _run(L, ctor, shape):
    m = eval(f"L.nn.{ctor}", {"L": L})
    x = L.zeros(shape, requires_grad=True)
    out = m(x)
    y = out[0] if isinstance(out, tuple) else out
    (y.sum() + sum(p.sum() * 0 for p in m.parameters())).backward()
    return (tuple(y.shape), tuple(x.grad.shape),
            [None if p.grad is None else tuple(p.grad.shape) for p in m.parameters()],
            {k: v.detach().numpy().tolist() for k, v in m.named_buffers()})


# deliberate differences (docs/reliability.md)
DIFFERENT = {"InstanceNorm1d": "PyTorch fails inside (IndexError from select()); dyngrad "
                               "gives the empty result"}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=DIFFERENT[n]))
    if n in DIFFERENT else n for n in sorted(CASES)])
def test_empty_batch_as_torch(name):
    ctor, shape = CASES[name]
    try:
        theirs = _run(torch, ctor, shape)
    except Exception as e:  # PyTorch refuses it: so must dyngrad, with the same type
        with pytest.raises(type(e)):
            _run(dyngrad, ctor, shape)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mine = _run(dyngrad, ctor, shape)
    assert mine[:3] == theirs[:3]
    assert mine[3].keys() == theirs[3].keys()
    for k in mine[3]:
        np.testing.assert_allclose(mine[3][k], theirs[3][k], err_msg=k)
