"""Differential tests against PyTorch for conv3d/conv_transpose3d, gumbel_softmax, the
multi-label and multi-class margin losses, pdist, bicubic interpolation and unfold/fold:
values, gradients (second order where PyTorch's node has one), node names, float32 and
PyTorch's argument errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.test_vs_torch_nn import _compare  # noqa: E402

TF = torch.nn.functional
DF = dyngrad.nn.functional


def _same_error(fn, *arrays, dtype="float64"):
    """``fn(lib, F, *tensors)`` raises the same exception type and message in both."""
    got = {}
    for lib, F in ((torch, TF), (dyngrad, DF)):
        ts = [lib.tensor(a) if np.asarray(a).dtype.kind in "iub" else
              lib.tensor(a, dtype=getattr(lib, dtype)) for a in arrays]
        with pytest.raises(Exception) as e:
            fn(lib, F, *ts)
        got[lib] = e
    assert type(got[dyngrad].value) is type(got[torch].value), (got[dyngrad], got[torch])
    assert str(got[dyngrad].value) == str(got[torch].value)


def _f32(fn, shapes, seed=0, atol=2e-5, ints=None):
    """float32 values and gradients (result dtype too) against PyTorch."""
    rs = np.random.RandomState(seed)
    arrs = [rs.uniform(-2, 2, size=s).astype(np.float32) for s in shapes]
    res = {}
    for lib, F in ((torch, TF), (dyngrad, DF)):
        ts = [lib.tensor(a, requires_grad=True) for a in arrs]
        extra = [lib.tensor(v) for v in (ints or [])]
        y = fn(lib, F, *ts, *extra)
        y.sum().backward()
        res[lib] = (y, [t.grad for t in ts])
    (yt, gt), (yd, gd) = res[torch], res[dyngrad]
    assert str(yd.dtype) == str(yt.dtype)
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy(), atol=atol, rtol=1e-5)
    for a, b in zip(gt, gd):
        assert (a is None) == (b is None)
        if a is not None:
            assert str(b.dtype) == str(a.dtype)
            np.testing.assert_allclose(b.numpy(), a.numpy(), atol=atol * 10, rtol=1e-4)


# --- conv3d / conv_transpose3d ---------------------------------------------------------
CONV3D = [
    ("plain", lambda L, F, x, w, b: F.conv3d(x, w, b), [(2, 2, 4, 4, 5), (3, 2, 3, 2, 2), (3,)]),
    ("stride_pad", lambda L, F, x, w, b: F.conv3d(x, w, b, stride=(2, 1, 2), padding=(1, 0, 2)),
     [(2, 2, 5, 4, 5), (3, 2, 3, 2, 2), (3,)]),
    ("dilation_groups", lambda L, F, x, w: F.conv3d(x, w, dilation=(2, 1, 1), groups=2),
     [(1, 4, 5, 4, 4), (4, 2, 2, 2, 3)]),
    ("same_even", lambda L, F, x, w, b: F.conv3d(x, w, b, padding="same"),
     [(1, 2, 4, 3, 4), (3, 2, 2, 3, 4), (3,)]),
    ("same_dilated", lambda L, F, x, w: F.conv3d(x, w, padding="same", dilation=2),
     [(1, 2, 5, 5, 5), (2, 2, 3, 2, 3)]),
    ("valid", lambda L, F, x, w: F.conv3d(x, w, padding="valid"),
     [(2, 2, 3, 3, 3), (2, 2, 2, 2, 2)]),
    ("unbatched", lambda L, F, x, w, b: F.conv3d(x, w, b, padding=1),
     [(2, 3, 4, 3), (3, 2, 2, 2, 2), (3,)]),
    ("t_plain", lambda L, F, x, w, b: F.conv_transpose3d(x, w, b),
     [(2, 2, 3, 2, 3), (2, 3, 2, 2, 2), (3,)]),
    ("t_stride_pad_outpad", lambda L, F, x, w, b: F.conv_transpose3d(
        x, w, b, stride=2, padding=1, output_padding=(1, 0, 1)),
     [(1, 2, 3, 2, 3), (2, 3, 3, 2, 3), (3,)]),
    ("t_groups_dilation", lambda L, F, x, w: F.conv_transpose3d(x, w, groups=2, dilation=2),
     [(1, 4, 2, 3, 2), (4, 1, 2, 2, 2)]),
    ("t_unbatched", lambda L, F, x, w: F.conv_transpose3d(x, w, stride=(1, 2, 1)),
     [(2, 3, 2, 3), (2, 3, 2, 2, 2)]),
]


@pytest.mark.parametrize("name,fn,shapes", CONV3D, ids=[c[0] for c in CONV3D])
def test_conv3d(name, fn, shapes):
    _compare(fn, shapes, name=True, gradgrad=True, atol=1e-9)


def test_conv3d_float32():
    _f32(lambda L, F, x, w, b: F.conv3d(x, w, b, stride=2, padding=1),
         [(2, 2, 5, 4, 5), (3, 2, 3, 3, 2), (3,)])
    _f32(lambda L, F, x, w, b: F.conv_transpose3d(x, w, b, stride=2),
         [(1, 2, 3, 2, 3), (2, 3, 2, 2, 2), (3,)])


CONV3D_ERRORS = [
    (lambda L, F, x, w: F.conv3d(x, w), [(2, 4, 4), (3, 2, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w), [(2, 4, 4, 4, 4, 1), (3, 2, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w), [(1, 3, 4, 4, 4), (3, 2, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w), [(1, 2, 4, 4, 4), (3, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w), [(1, 2, 2, 4, 4), (3, 2, 3, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w, stride=(1, 2)), [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)],
     "float64"),
    (lambda L, F, x, w: F.conv3d(x, w, stride=2, padding="same"),
     [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w, groups=2), [(1, 2, 4, 4, 4), (3, 1, 2, 2, 2)],
     "float64"),
    (lambda L, F, x, w: F.conv3d(x, w.float()), [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)], "float64"),
    (lambda L, F, x, w, b: F.conv3d(x, w, b), [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2), (2,)],
     "float64"),
    (lambda L, F, x, w: F.conv_transpose3d(x, w), [(1, 3, 2, 2, 2), (2, 3, 2, 2, 2)],
     "float64"),
    (lambda L, F, x, w: F.conv_transpose3d(x, w, stride=2, output_padding=2),
     [(1, 2, 2, 2, 2), (2, 3, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv_transpose3d(x, w, padding=3), [(1, 2, 2, 2, 2), (2, 3, 2, 2, 2)],
     "float64"),
    (lambda L, F, x, w: F.conv_transpose3d(x, w.float()), [(1, 2, 2, 2, 2), (2, 3, 2, 2, 2)],
     "float64"),
    (lambda L, F, x, w, b: F.conv_transpose3d(x, w, b), [(1, 2, 2, 2, 2), (2, 3, 2, 2, 2), (2,)],
     "float64"),
    (lambda L, F, x, w, b: F.conv3d(x, w, b.float()), [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2), (3,)],
     "float64"),
    (lambda L, F, x, w: F.conv3d(x, w, stride=[1]), [(1, 2, 4, 4, 4), (3, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w), [(1, 2, 4, 4, 4), (3, 2)], "float64"),
    (lambda L, F, x, w: F.conv3d(x, w, stride=0), [(1, 2, 4, 4, 4), (3, 2, 2, 2, 2)], "float64"),
    (lambda L, F, x, w: F.conv_transpose3d(x, w), [(1, 2, 4, 4, 4), (2, 3, 2, 2)], "float64"),
]


@pytest.mark.parametrize("k", range(len(CONV3D_ERRORS)))
def test_conv3d_errors(k):
    fn, shapes, dt = CONV3D_ERRORS[k]
    _same_error(fn, *[np.ones(s) for s in shapes], dtype=dt)


def _modules(make, x_shape, seed=0, call=None, atol=1e-10):
    """A module of each library with PyTorch's initial weights: output and every gradient."""
    torch.manual_seed(seed)
    mt = make(torch.nn).double()
    md = make(dyngrad.nn).double()
    md.load_state_dict({k: dyngrad.tensor(v.detach().numpy().copy())
                        for k, v in mt.state_dict().items()})
    x = np.random.RandomState(seed).uniform(-2, 2, size=x_shape)
    outs = []
    for lib, m in ((torch, mt), (dyngrad, md)):
        xt = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        y = call(m, xt) if call else m(xt)
        y.sum().backward()
        outs.append((y, xt.grad, {k: p.grad for k, p in m.named_parameters()}, repr(m)))
    (yt, gxt, gpt, rt), (yd, gxd, gpd, rd) = outs
    assert rd == rt
    assert yd.grad_fn.name() == yt.grad_fn.name()
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy(), atol=atol)
    np.testing.assert_allclose(gxd.numpy(), gxt.numpy(), atol=atol)
    assert gpd.keys() == gpt.keys()
    for k in gpt:
        np.testing.assert_allclose(gpd[k].numpy(), gpt[k].numpy(), atol=atol)


CONV3D_MODULES = [
    ("Conv3d", lambda nn: nn.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=1, groups=2), None),
    ("Conv3d_same_reflect", lambda nn: nn.Conv3d(2, 3, (2, 3, 3), padding="same",
                                                 padding_mode="reflect", bias=False), None),
    ("Conv3d_circular", lambda nn: nn.Conv3d(2, 3, 3, padding=(1, 0, 2),
                                             padding_mode="circular"), None),
    ("ConvTranspose3d", lambda nn: nn.ConvTranspose3d(2, 3, (2, 3, 2), stride=2, padding=1,
                                                      output_padding=1, dilation=1), None),
    ("ConvTranspose3d_output_size", lambda nn: nn.ConvTranspose3d(2, 3, 3, stride=2),
     lambda m, x: m(x, output_size=[10, 8, 10])),
]


@pytest.mark.parametrize("name,make,call", CONV3D_MODULES, ids=[c[0] for c in CONV3D_MODULES])
def test_conv3d_modules(name, make, call):
    _modules(make, (2, 2, 4, 3, 4), call=call)
