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


# --- margin losses ---------------------------------------------------------------------
_MM_T = [1, 0, 3, 2, 3]
_ML_T = [[3, 0, -1, 1], [1, 2, 3, -1], [0, 0, -1, 2], [-1, 1, 2, 3], [2, 1, 0, 3]]
REDS = ("none", "mean", "sum")


@pytest.mark.parametrize("red", REDS)
@pytest.mark.parametrize("p,margin,weighted", [(1, 1.0, False), (2, 0.5, False), (1, 1.5, True),
                                               (2, 2.0, True)])
def test_multi_margin_loss(red, p, margin, weighted):
    if weighted:
        fn = lambda L, F, x, t, w: F.multi_margin_loss(  # noqa: E731
            x, t, p=p, margin=margin, weight=w.detach().abs() + 0.1, reduction=red)
        shapes, ints = [(5, 4), (5,), (4,)], {1: _MM_T}
    else:
        fn = lambda L, F, x, t: F.multi_margin_loss(x, t, p=p, margin=margin,  # noqa: E731
                                                    reduction=red)
        shapes, ints = [(5, 4), (5,)], {1: _MM_T}
    _compare(fn, shapes, ints=ints, name="MultiMarginLossBackward0")


@pytest.mark.parametrize("red", REDS)
def test_multi_margin_loss_1d_0d(red):
    _compare(lambda L, F, x, t: F.multi_margin_loss(x, t, reduction=red), [(4,), ()],
             ints={1: 2}, name=True)
    _compare(lambda L, F, x, t: F.multi_margin_loss(x, t, p=2, reduction=red), [(4,), (1,)],
             ints={1: [3]}, name=True)
    _compare(lambda L, F, x, t: F.multi_margin_loss(x, t, reduction=red), [(), ()],
             ints={1: 0}, name=True)


@pytest.mark.parametrize("red", REDS)
def test_multilabel_margin_loss(red):
    _compare(lambda L, F, x, t: F.multilabel_margin_loss(x, t, reduction=red), [(5, 4), (5, 4)],
             ints={1: _ML_T}, name="MultilabelMarginLossBackward0")
    _compare(lambda L, F, x, t: F.multilabel_margin_loss(x, t, reduction=red), [(4,), (4,)],
             ints={1: [2, 0, -1, 3]}, name=True)
    _compare(lambda L, F, x, t: F.multilabel_margin_loss(x, t, reduction=red), [(), ()],
             ints={1: 0}, name=True)


def test_multilabel_margin_loss_saved_is_target():
    x = np.random.RandomState(0).randn(5, 4)
    yt = TF.multilabel_margin_loss(torch.tensor(x, requires_grad=True), torch.tensor(_ML_T))
    yd = DF.multilabel_margin_loss(dyngrad.tensor(x, requires_grad=True), dyngrad.tensor(_ML_T))
    np.testing.assert_array_equal(yd.grad_fn._saved_is_target.numpy(),
                                  yt.grad_fn._saved_is_target.numpy())


@pytest.mark.parametrize("red", REDS)
def test_multilabel_soft_margin_loss(red):
    _compare(lambda L, F, x, t: F.multilabel_soft_margin_loss(x, t.sigmoid(), reduction=red),
             [(5, 4), (5, 4)], name=True, gradgrad=True)
    _compare(lambda L, F, x, t, w: F.multilabel_soft_margin_loss(x, (t > 0).double(), w,
                                                                 reduction=red),
             [(5, 4), (5, 4), (4,)], name=True, gradgrad=True)
    _compare(lambda L, F, x, t: F.multilabel_soft_margin_loss(x, t, reduction=red),
             [(4,), (4,)], name=True)


@pytest.mark.parametrize("which", ["multi", "multilabel"])
def test_margin_losses_no_double_backward(which):
    res = {}
    for lib, F in ((torch, TF), (dyngrad, DF)):
        x = lib.tensor(np.random.RandomState(0).randn(5, 4), requires_grad=True)
        if which == "multi":
            y = F.multi_margin_loss(x, lib.tensor(_MM_T))
        else:
            y = F.multilabel_margin_loss(x, lib.tensor(_ML_T))
        g, = lib.autograd.grad(y, x, create_graph=True)
        with pytest.raises(RuntimeError) as e:
            g.sum().backward()
        res[lib] = (type(g.grad_fn).__name__, str(e.value))
    assert res[dyngrad] == res[torch]


def test_margin_losses_float32():
    _f32(lambda L, F, x, t: F.multi_margin_loss(x, t, p=2), [(5, 4)], ints=[_MM_T])
    _f32(lambda L, F, x, t: F.multilabel_margin_loss(x, t, reduction="sum"), [(5, 4)],
         ints=[_ML_T])
    _f32(lambda L, F, x, t: F.multilabel_soft_margin_loss(x, t.sigmoid()), [(5, 4), (5, 4)])


I64 = np.array([1, 0, 3])
ML64 = np.array([[3, 0, -1, 1], [1, 2, 3, -1], [0, 0, -1, 2]])
MARGIN_ERRORS = [
    (lambda L, F, x, t: F.multi_margin_loss(x, t, p=3), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t, weight=L.ones(1, 4, dtype=x.dtype)),
     [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t, weight=L.ones(3, dtype=x.dtype)),
     [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t, weight=L.ones(4)), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t, reduction="bad"), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t[:2]), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t[None]), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x[0], t), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t + 1), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t - 1), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x[None], t), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x[:, :0], t), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t.int()), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t.float()), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x.int(), t), [(3, 4), I64]),
    (lambda L, F, x, t: F.multi_margin_loss(x, t, weight=L.ones(4, dtype=x.dtype,
                                                                 requires_grad=True)),
     [(3, 4), I64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x, t, reduction="x"), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x, t[:2]), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x, t[0]), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x[0], t), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x[0], t[0, :2]), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x, t + 1), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x, t - 1), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x[None], t), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x[:, :0], t[:, :0]), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x, t.int()), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x.int(), t.int()), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_margin_loss(x, t.float()), [(3, 4), ML64]),
    (lambda L, F, x, t: F.multilabel_soft_margin_loss(x, t, reduction="x"), [(3, 4), (3, 4)]),
    (lambda L, F, x, t: F.multilabel_soft_margin_loss(x, t), [(), ()]),
]


@pytest.mark.parametrize("k", range(len(MARGIN_ERRORS)))
def test_margin_loss_errors(k):
    fn, args = MARGIN_ERRORS[k]
    _same_error(fn, *[np.ones(a) if isinstance(a, tuple) else a for a in args])


def test_margin_loss_modules():
    rs = np.random.RandomState(0)
    x = rs.randn(5, 4)
    w = np.abs(rs.randn(4)) + 0.1
    tgt = rs.rand(5, 4)
    for make, t in [
        (lambda nn, L: nn.MultiMarginLoss(p=2, margin=0.7, weight=L.tensor(w)), _MM_T),
        (lambda nn, L: nn.MultiMarginLoss(reduction="sum"), _MM_T),
        (lambda nn, L: nn.MultiLabelMarginLoss(reduction="none"), _ML_T),
        (lambda nn, L: nn.MultiLabelSoftMarginLoss(weight=L.tensor(w)), tgt),
        (lambda nn, L: nn.MultiLabelSoftMarginLoss(reduction="none"), tgt),
    ]:
        outs = []
        for lib in (torch, dyngrad):
            m = make(lib.nn, lib)
            xt = lib.tensor(x, requires_grad=True)
            y = m(xt, lib.tensor(t))
            y.sum().backward()
            outs.append((y.detach().numpy(), xt.grad.numpy(), repr(m),
                         sorted(k for k, _ in m.named_buffers())))
        np.testing.assert_allclose(outs[1][0], outs[0][0], atol=1e-12)
        np.testing.assert_allclose(outs[1][1], outs[0][1], atol=1e-12)
        assert outs[1][2:] == outs[0][2:]
    for lib in (torch, dyngrad):
        with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
            lib.nn.MultiMarginLoss(p=3)
        with pytest.raises(ValueError, match="expected weight to be None or 1D tensor, got 2D"):
            lib.nn.MultiMarginLoss(weight=lib.ones(2, 2))


def test_multi_margin_loss_saved():
    x = np.random.RandomState(0).randn(5, 4)
    w = np.abs(x[0]) + 0.1
    res = []
    for lib, F in ((torch, TF), (dyngrad, DF)):
        y = F.multi_margin_loss(lib.tensor(x, requires_grad=True), lib.tensor(_MM_T), p=2,
                                margin=0.5, weight=lib.tensor(w), reduction="sum")
        n = y.grad_fn
        res.append((n._saved_p, n._saved_margin, n._saved_reduction,
                    n._saved_weight.numpy().tolist(), n._saved_target.numpy().tolist()))
    assert res[1] == res[0]


# --- gumbel_softmax --------------------------------------------------------------------
def _gumbel_both(shape, tau, hard, dim, seed=0):
    """dyngrad's sample (its own generator), and PyTorch's softmax composition run on the
    same noise (recovered from dyngrad's soft sample: log y * tau - logits, which differs
    from the noise by a constant along ``dim``, leaving softmax and its gradient unchanged)."""
    x = np.random.RandomState(seed).randn(*shape)
    go = np.random.RandomState(seed + 1).randn(*shape)
    dyngrad.manual_seed(seed)
    xd = dyngrad.tensor(x, requires_grad=True)
    yd = DF.gumbel_softmax(xd, tau=tau, hard=hard, dim=dim)
    gd, = dyngrad.autograd.grad(yd, xd, dyngrad.tensor(go))
    dyngrad.manual_seed(seed)
    soft = DF.gumbel_softmax(dyngrad.tensor(x), tau=tau, dim=dim).numpy()
    noise = np.log(soft) * tau - x
    xt = torch.tensor(x, requires_grad=True)
    yt = ((xt + torch.tensor(noise)) / tau).softmax(dim)
    if hard:
        yt = torch.zeros_like(xt).scatter_(dim, yt.max(dim, keepdim=True)[1], 1.0) - \
            yt.detach() + yt
    gt, = torch.autograd.grad(yt, xt, torch.tensor(go))
    return (yd, gd), (yt, gt)


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("tau,dim", [(1, -1), (0.5, 0), (2.0, 1)])
def test_gumbel_softmax(hard, tau, dim):
    (yd, gd), (yt, gt) = _gumbel_both((3, 4, 5), tau, hard, dim)
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(gd.numpy(), gt.numpy(), atol=1e-10)
    assert yd.grad_fn.name() == yt.grad_fn.name()
    np.testing.assert_allclose(yd.detach().numpy().sum(dim), 1.0)
    if hard:
        assert set(np.unique(yd.detach().numpy())) <= {0.0, 1.0}


def test_gumbel_softmax_graph_and_rng():
    for hard in (False, True):
        names = []
        for lib, F in ((torch, TF), (dyngrad, DF)):
            x = lib.randn(2, 3, dtype=lib.float64, requires_grad=True)
            y = F.gumbel_softmax(x, tau=0.7, hard=hard)
            n, seq = y.grad_fn, []
            while n is not None:
                seq.append((n.name(), [f[0] is None for f in n.next_functions]))
                n = next((f[0] for f in n.next_functions if f[0] is not None), None)
            names.append(seq)
        assert names[1] == names[0]
    dyngrad.manual_seed(3)
    a = DF.gumbel_softmax(dyngrad.zeros(4, 6))
    dyngrad.manual_seed(3)
    b = DF.gumbel_softmax(dyngrad.zeros(4, 6))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(a.numpy(), DF.gumbel_softmax(dyngrad.zeros(4, 6)).numpy())


def test_gumbel_softmax_float32_and_eps_warning():
    x = dyngrad.randn(3, 4)
    y = DF.gumbel_softmax(x, hard=True)
    assert y.dtype == dyngrad.float32
    np.testing.assert_allclose(y.numpy().sum(-1), 1.0)
    for lib, F in ((torch, TF), (dyngrad, DF)):
        with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
            F.gumbel_softmax(lib.zeros(2, 3), eps=1e-5)
    _same_error(lambda L, F, x: F.gumbel_softmax(x, dim=2), np.ones((2, 3)))


# --- pdist -----------------------------------------------------------------------------
PS = [0, 0.5, 1, 1.5, 2, 3, float("inf")]


@pytest.mark.parametrize("p", PS)
def test_pdist(p):
    _compare(lambda L, F, x: F.pdist(x, p), [(5, 3)], name="PdistBackward0")
    _compare(lambda L, F, x: F.pdist(x.t(), p), [(3, 4)], name="PdistBackward0")


@pytest.mark.parametrize("p", PS)
def test_pdist_repeated_rows_and_ties(p):
    """Equal rows (distance 0) and equal coordinates: PyTorch's zero-gradient cases."""
    arr = np.array([[1., 2., 0.], [1., 2., 0.], [0., 1., 2.], [1., 3., 0.], [2., 2., 2.]])
    res = []
    for lib, F in ((torch, TF), (dyngrad, DF)):
        x = lib.tensor(arr, requires_grad=True)
        y = F.pdist(x, p)
        y.backward(lib.arange(1.0, 11.0, dtype=lib.float64))
        res.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], atol=1e-12)
    np.testing.assert_allclose(res[1][1], res[0][1], atol=1e-12)


def test_pdist_saved_graph_and_double_backward():
    out = []
    for lib, F in ((torch, TF), (dyngrad, DF)):
        x = lib.tensor(np.random.RandomState(0).randn(4, 3), requires_grad=True)
        y = F.pdist(x, 3)
        n = y.grad_fn
        saved = (n._saved_p, n._saved_result.detach().numpy().round(12).tolist(),
                 n._saved_self.detach().numpy().tolist())
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gnode = (g.grad_fn.name(), [None if f[0] is None else f[0].name()
                                    for f in g.grad_fn.next_functions])
        with pytest.raises(NotImplementedError) as e:
            g.sum().backward()
        out.append((saved, gnode, str(e.value)))
    assert out[1] == out[0]


def test_pdist_float32_empty_and_errors():
    _f32(lambda L, F, x: F.pdist(x), [(6, 4)])
    _f32(lambda L, F, x: F.pdist(x, 1), [(6, 4)])
    _compare(lambda L, F, x: F.pdist(x), [(1, 3)])
    _compare(lambda L, F, x: F.pdist(x), [(0, 3)], grad=False)
    _compare(lambda L, F, x: F.pdist(x, float("inf")), [(3, 0)])
    for fn, arr, dt in [
        (lambda L, F, x: F.pdist(x), np.ones(3), "float64"),
        (lambda L, F, x: F.pdist(x), np.ones((2, 3, 4)), "float64"),
        (lambda L, F, x: F.pdist(x, -1), np.ones((3, 4)), "float64"),
        (lambda L, F, x: F.pdist(x), np.ones((3, 4), dtype=np.int64), "int64"),
        (lambda L, F, x: F.pdist(x), np.ones((3, 4)), "float16"),
    ]:
        _same_error(fn, arr, dtype=dt)


# --- bicubic and antialiased interpolation ----------------------------------------------
INTERP = [
    ((1, 2, 3, 3), dict(size=(5, 4))),
    ((2, 1, 4, 5), dict(scale_factor=1.7)),
    ((1, 1, 6, 7), dict(size=(3, 2))),
    ((1, 1, 9, 8), dict(size=1)),
    ((1, 1, 3, 3), dict(scale_factor=1.2)),
    ((1, 1, 5, 4), dict(scale_factor=(0.6, 2.5))),
    ((1, 1, 5, 4), dict(scale_factor=(0.6, 2.5), recompute_scale_factor=True)),
    ((1, 2, 7, 9), dict(scale_factor=(0.3, 0.45))),
]


@pytest.mark.parametrize("k", range(len(INTERP)))
@pytest.mark.parametrize("mode,aa", [("bicubic", False), ("bicubic", True), ("bilinear", True),
                                     ("lanczos", True)])
@pytest.mark.parametrize("ac", [False, True])
def test_interpolate_bicubic_antialias(k, mode, aa, ac):
    shape, kw = INTERP[k]
    if mode == "lanczos" and ac:
        pytest.skip("lanczos has no align_corners=True (an error, tested below)")
    _compare(lambda L, F, x: F.interpolate(x, mode=mode, align_corners=ac, antialias=aa, **kw),
             [shape], name=True, gradgrad=True, atol=1e-10)


def test_interpolate_bicubic_float32_and_module():
    _f32(lambda L, F, x: F.interpolate(x, scale_factor=2.5, mode="bicubic"), [(2, 3, 4, 5)])
    _f32(lambda L, F, x: F.interpolate(x, size=(3, 2), mode="bicubic", antialias=True,
                                       align_corners=True), [(2, 3, 7, 5)])
    _modules(lambda nn: nn.Upsample(scale_factor=1.5, mode="bicubic"), (2, 3, 4, 5))
    _modules(lambda nn: nn.Upsample(size=(7, 3), mode="bicubic", align_corners=True),
             (2, 3, 4, 5))


INTERP_ERRORS = [
    (lambda L, F, x: F.interpolate(x[0], size=4, mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x[None], size=4, mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=(4,), mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=0, mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x[:, :, :0], size=2, mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=2, scale_factor=2, mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, scale_factor=(2,), mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=2, mode="bicubic", recompute_scale_factor=True),
     (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x.int(), size=4, mode="bicubic"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=2, mode="nearest", antialias=True), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x[0], size=2, mode="bilinear", antialias=True), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x.int(), size=2, mode="bicubic", antialias=True),
     (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=2, mode="lanczos"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=2, mode="lanczos", antialias=True,
                                   align_corners=True), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x[0], size=2, mode="lanczos"), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x[0], size=2, mode="lanczos", antialias=True), (1, 2, 3, 3)),
    (lambda L, F, x: F.interpolate(x, size=2, mode="cubic"), (1, 2, 3, 3)),
]


@pytest.mark.parametrize("k", range(len(INTERP_ERRORS)))
def test_interpolate_bicubic_errors(k):
    fn, shape = INTERP_ERRORS[k]
    _same_error(fn, np.ones(shape))


@pytest.mark.parametrize("kw", [dict(size=(5, 4), mode="bicubic"),
                                dict(scale_factor=1.5, mode="bicubic", align_corners=True),
                                dict(scale_factor=(0.5, 0.7), mode="bilinear", antialias=True),
                                dict(size=(2, 5), mode="lanczos", antialias=True)])
def test_interpolate_bicubic_saved(kw):
    res = []
    for lib, F in ((torch, TF), (dyngrad, DF)):
        x = lib.tensor(np.ones((1, 2, 3, 3)), requires_grad=True)
        n = F.interpolate(x, **kw).grad_fn
        res.append((n.name(), n._saved_align_corners, tuple(n._saved_output_size),
                    n._saved_scales_h, n._saved_scales_w, tuple(n._saved_self_sym_sizes)))
    assert res[1] == res[0]


# --- unfold / fold ---------------------------------------------------------------------
UNFOLD = [
    ((2, 3, 5, 6), dict(kernel_size=(2, 3), padding=1, stride=(2, 1))),
    ((1, 2, 6, 6), dict(kernel_size=3, dilation=2)),
    ((2, 2, 4, 5), dict(kernel_size=1)),
    ((3, 5, 4), dict(kernel_size=(2, 2), stride=2, padding=(0, 1))),
    ((1, 1, 7, 5), dict(kernel_size=(3, 1), dilation=(1, 2), stride=(3, 2), padding=(2, 1))),
]


@pytest.mark.parametrize("k", range(len(UNFOLD)))
def test_unfold_fold(k):
    shape, kw = UNFOLD[k]
    _compare(lambda L, F, x: F.unfold(x, **kw), [shape], name="Im2ColBackward0", gradgrad=True)
    cols = TF.unfold(torch.zeros(shape), **kw).shape
    _compare(lambda L, F, c: F.fold(c, shape[-2:], **kw), [tuple(cols)],
             name="Col2ImBackward0", gradgrad=True)


def test_unfold_fold_graph_saved_float32_empty():
    res = []
    for lib, F in ((torch, TF), (dyngrad, DF)):
        x = lib.tensor(np.random.RandomState(0).randn(2, 3, 5, 6), requires_grad=True)
        y = F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
        z = F.fold(y, (5, 6), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
        a, b = y.grad_fn, z.grad_fn
        g, = lib.autograd.grad(z, x, lib.ones_like(z, requires_grad=True), create_graph=True)
        res.append((a._saved_kernel_size, a._saved_dilation, a._saved_padding, a._saved_stride,
                    a._saved_self_sym_argsize_minus_1, a._saved_self_sym_argsize_minus_2,
                    b._saved_kernel_size, b._saved_dilation, b._saved_padding,
                    b._saved_stride, g.grad_fn.name(),
                    g.grad_fn.next_functions[0][0].name()))
    assert res[1] == res[0]
    _f32(lambda L, F, x: F.unfold(x, 2, padding=1), [(2, 3, 4, 5)])
    _f32(lambda L, F, c: F.fold(c, (4, 5), 2, padding=1), [(2, 12, 30)])
    _compare(lambda L, F, x: F.unfold(x, 2), [(0, 2, 3, 3)])
    _compare(lambda L, F, c: F.fold(c, (3, 3), 2), [(0, 8, 4)])
    _modules(lambda nn: nn.Unfold((2, 3), dilation=1, padding=1, stride=(1, 2)), (2, 3, 4, 5),
             call=None)
    _modules(lambda nn: nn.Sequential(nn.Unfold(2, padding=1), nn.Fold((4, 5), 2, padding=1)),
             (2, 3, 4, 5))


FOLD_ERRORS = [
    (lambda L, F, x: F.unfold(x[0, 0], 2), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x[None], 2), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x, 7), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x, 0), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x, 2, stride=0), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x, 2, dilation=0), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x, 2, padding=-1), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x, 0, padding=-1, stride=0), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x, (2, 2, 2)), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x.int(), 2), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x[:, :0], 2), (2, 3, 5, 6)),
    (lambda L, F, x: F.unfold(x[0, :0], 2), (2, 3, 5, 6)),
    (lambda L, F, c: F.fold(c, (4, 5), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c[:, :11], (4, 5), 2, padding=1, stride=(2, 1)), (2, 12, 18)),
    (lambda L, F, c: F.fold(c[0, 0], (4, 5), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c[None], (4, 5), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (4, 5), 0), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (4, 5), 2, stride=0), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (4, 5), 2, dilation=0), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (4, 5), 2, padding=-1), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (4, 5), 2, padding=-1, dilation=0, stride=0), (2, 12, 18)),
    (lambda L, F, c: F.fold(c.int(), (4, 5), 2, padding=1, stride=(2, 1)), (2, 12, 18)),
    (lambda L, F, c: F.fold(c[:, :0], (4, 5), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c[:, :, :0], (4, 5), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (1, 1), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (0, 5), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (4, 5, 3), 2), (2, 12, 18)),
    (lambda L, F, c: F.fold(c, (4, 5), (2, 2, 1)), (2, 12, 18)),
]


@pytest.mark.parametrize("k", range(len(FOLD_ERRORS)))
def test_unfold_fold_errors(k):
    fn, shape = FOLD_ERRORS[k]
    _same_error(fn, np.ones(shape))


# --- forward-mode AD ---------------------------------------------------------------------
FWAD = [
    ("conv3d", lambda L, F, x, w: F.conv3d(x, w, padding=1), [(1, 2, 3, 4, 3), (2, 2, 2, 2, 2)]),
    ("conv_transpose3d", lambda L, F, x, w: F.conv_transpose3d(x, w, stride=2),
     [(1, 2, 2, 2, 2), (2, 3, 2, 2, 2)]),
    ("unfold", lambda L, F, x: F.unfold(x, 2, padding=1), [(2, 3, 4, 4)]),
    ("fold", lambda L, F, x: F.fold(x, (3, 3), 2), [(2, 8, 4)]),
    ("bicubic", lambda L, F, x: F.interpolate(x, size=(5, 4), mode="bicubic"), [(1, 2, 3, 3)]),
    ("bicubic_aa", lambda L, F, x: F.interpolate(x, size=(2, 2), mode="bicubic", antialias=True),
     [(1, 2, 5, 5)]),
    ("multilabel_soft_margin_loss",
     lambda L, F, x: F.multilabel_soft_margin_loss(x, x.detach().sigmoid()), [(3, 4)]),
    ("pdist", lambda L, F, x: F.pdist(x), [(4, 3)]),
    ("multi_margin_loss", lambda L, F, x: F.multi_margin_loss(x, L.tensor([0, 1, 2])), [(3, 4)]),
    ("multilabel_margin_loss", lambda L, F, x: F.multilabel_margin_loss(
        x, L.tensor([[0, 1, -1, 2], [1, -1, 0, 0], [3, 2, 1, 0]])), [(3, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", FWAD, ids=[c[0] for c in FWAD])
def test_forward_ad(name, fn, shapes):
    """Tangents against PyTorch's, or its error for the ops without a forward-mode rule."""
    rs = np.random.RandomState(0)
    prim = [rs.randn(*s) for s in shapes]
    tan = [rs.randn(*s) for s in shapes]
    out = []
    for lib in (torch, dyngrad):
        fw = lib.autograd.forward_ad
        try:
            with fw.dual_level():
                d = [fw.make_dual(lib.tensor(p), lib.tensor(t)) for p, t in zip(prim, tan)]
                y = fn(lib, lib.nn.functional, *d)
                out.append(fw.unpack_dual(y).tangent.numpy())
        except NotImplementedError as e:
            out.append(str(e))
    if isinstance(out[0], str):
        assert out[1] == out[0]
    else:
        np.testing.assert_allclose(out[1], out[0], atol=1e-12)


@pytest.mark.parametrize("dt", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16"])
@pytest.mark.parametrize("f,nd", [("conv1d", 1), ("conv2d", 2), ("conv3d", 3),
                                  ("conv_transpose1d", 1), ("conv_transpose2d", 2),
                                  ("conv_transpose3d", 3)])
def test_conv_kernel_dtypes(dt, f, nd):
    """Integer and half convolutions as PyTorch's CPU kernels: a result, or their dtype error."""
    rs = np.random.RandomState(0)
    x = rs.randint(0, 3, (1, 2) + (4,) * nd)
    w = rs.randint(0, 3, (2, 2) + (2,) * nd)
    out = []
    for lib in (torch, dyngrad):
        try:
            y = getattr(lib.nn.functional, f)(lib.tensor(x, dtype=getattr(lib, dt)),
                                               lib.tensor(w, dtype=getattr(lib, dt)))
            out.append((str(y.dtype), y.double().numpy().tolist()))
        except NotImplementedError as e:
            out.append(str(e))
    assert out[1] == out[0]
