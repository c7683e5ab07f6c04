"""Differential tests against PyTorch: values, gradients and node names of every
nn.functional op, and forward/backward of layer modules with the same weights."""
from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

TF = torch.nn.functional
DF = dyngrad.nn.functional


def _arrs(shapes, seed, domain=(-2, 2)):
    rs = np.random.RandomState(seed)
    return [rs.uniform(*domain, size=s) for s in shapes]


def _compare(fn, shapes, seed=0, domain=(-2, 2), ints=(), name=None, grad=True, atol=1e-7,
             gradgrad=False):
    """Run ``fn(lib, F, *tensors)`` in both libraries; compare outputs and gradients."""
    arrs = _arrs(shapes, seed, domain)
    ins = {}
    for lib, F in ((torch, TF), (dyngrad, DF)):
        ts = []
        for i, a in enumerate(arrs):
            if i in ints:
                ts.append(lib.tensor(ints[i], dtype=lib.int64))
            else:
                ts.append(lib.tensor(a, dtype=lib.float64, requires_grad=grad))
        ins[lib] = ts
    out_t = fn(torch, TF, *ins[torch])
    out_d = fn(dyngrad, DF, *ins[dyngrad])
    if isinstance(out_t, tuple):
        out_t, out_d = out_t[0], out_d[0]
    assert tuple(out_t.shape) == tuple(out_d.shape)
    np.testing.assert_allclose(out_d.detach().numpy(), out_t.detach().numpy(), atol=atol,
                               rtol=1e-6)
    if name is not None:  # True: whatever PyTorch records
        want = out_t.grad_fn.name() if name is True else name
        assert out_d.grad_fn is not None and out_d.grad_fn.name() == want, \
            (out_d.grad_fn, out_t.grad_fn.name())
    if not grad:
        return
    go = np.random.RandomState(seed + 1).uniform(-1, 1, size=tuple(out_t.shape))
    dif_t = [t for i, t in enumerate(ins[torch]) if i not in ints]
    dif_d = [t for i, t in enumerate(ins[dyngrad]) if i not in ints]
    go_t = torch.tensor(go, requires_grad=gradgrad)
    go_d = dyngrad.tensor(go, requires_grad=gradgrad)
    gt = torch.autograd.grad(out_t, dif_t, go_t, allow_unused=True, create_graph=gradgrad)
    gd = dyngrad.autograd.grad(out_d, dif_d, go_d, allow_unused=True, create_graph=gradgrad)
    for a, b in zip(gt, gd):
        if a is None:
            assert b is None or np.allclose(b.numpy(), 0)
            continue
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), atol=atol * 10,
                                   rtol=1e-5)
    if gradgrad:
        # second derivatives with respect to the inputs and the upstream gradient
        st = sum((g * g).sum() for g in gt if g is not None)
        sd = sum((g * g).sum() for g in gd if g is not None)
        g2t = torch.autograd.grad(st, dif_t + [go_t], allow_unused=True)
        g2d = dyngrad.autograd.grad(sd, dif_d + [go_d], allow_unused=True)
        for a, b in zip(g2t, g2d):
            if a is None or b is None:
                assert (a is None or not a.abs().max() > 0) and \
                    (b is None or not b.abs().max() > 0)
                continue
            np.testing.assert_allclose(b.numpy(), a.numpy(), atol=atol * 100, rtol=1e-5)


ACT = [
    ("relu6", lambda L, F, x: F.relu6(x * 4), "HardtanhBackward0"),
    ("hardtanh", lambda L, F, x: F.hardtanh(x, -0.5, 1.2), "HardtanhBackward0"),
    ("leaky_relu", lambda L, F, x: F.leaky_relu(x, 0.2), "LeakyReluBackward0"),
    ("elu", lambda L, F, x: F.elu(x, 1.3), "EluBackward0"),
    ("selu", lambda L, F, x: F.selu(x), "EluBackward0"),
    ("celu", lambda L, F, x: F.celu(x, 0.7), "CeluBackward0"),
    ("gelu", lambda L, F, x: F.gelu(x), "GeluBackward0"),
    ("gelu_tanh", lambda L, F, x: F.gelu(x, approximate="tanh"), "GeluBackward0"),
    ("silu", lambda L, F, x: F.silu(x), "SiluBackward0"),
    ("mish", lambda L, F, x: F.mish(x), "MishBackward0"),
    ("softplus", lambda L, F, x: F.softplus(x, beta=2, threshold=1.5), "SoftplusBackward0"),
    ("hardsigmoid", lambda L, F, x: F.hardsigmoid(x * 4), "HardsigmoidBackward0"),
    ("hardswish", lambda L, F, x: F.hardswish(x * 4), "HardswishBackward0"),
    ("logsigmoid", lambda L, F, x: F.logsigmoid(x * 10), "LogSigmoidBackward0"),
    ("softsign", lambda L, F, x: F.softsign(x), "DivBackward0"),
    ("tanhshrink", lambda L, F, x: F.tanhshrink(x), "SubBackward0"),
    ("threshold", lambda L, F, x: F.threshold(x, 0.1, -3.0), "ThresholdBackward0"),
    ("glu", lambda L, F, x: F.glu(x, 1), "GluBackward0"),
    ("glu_last", lambda L, F, x: F.glu(x, -1), "GluBackward0"),
    ("softmin", lambda L, F, x: F.softmin(x, 1), "SoftmaxBackward0"),
    ("softshrink", lambda L, F, x: F.softshrink(x, 0.5), None),
    ("hardshrink", lambda L, F, x: F.hardshrink(x, 0.5), None),
    ("softmax", lambda L, F, x: F.softmax(x, 0), "SoftmaxBackward0"),
    ("log_softmax", lambda L, F, x: F.log_softmax(x, -1), "LogSoftmaxBackward0"),
    ("relu", lambda L, F, x: F.relu(x), "ReluBackward0"),
]


@pytest.mark.parametrize("name,fn,node", ACT, ids=[a[0] for a in ACT])
def test_activation(name, fn, node):
    _compare(fn, [(4, 6)], name=node, gradgrad=name not in ("hardsigmoid",))


def test_prelu():
    _compare(lambda L, F, x, w: F.prelu(x, w), [(2, 3, 4), (3,)], name="PreluKernelBackward0",
             gradgrad=True)
    _compare(lambda L, F, x, w: F.prelu(x, w), [(2, 3), (1,)])


LOSSES = [
    ("mse", lambda L, F, x, t, r: F.mse_loss(x, t, reduction=r)),
    ("l1", lambda L, F, x, t, r: F.l1_loss(x, t, reduction=r)),
    ("smooth_l1", lambda L, F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.7)),
    ("smooth_l1_b0", lambda L, F, x, t, r: F.smooth_l1_loss(x, t, reduction=r, beta=0.0)),
    ("huber", lambda L, F, x, t, r: F.huber_loss(x, t, reduction=r, delta=0.8)),
    ("bce_logits", lambda L, F, x, t, r: F.binary_cross_entropy_with_logits(
        x, t.sigmoid(), reduction=r)),
    ("bce_logits_w", lambda L, F, x, t, r: F.binary_cross_entropy_with_logits(
        x, t.sigmoid(), weight=L.linspace(0.5, 1.5, 5, dtype=L.float64),
        pos_weight=L.linspace(1.0, 3.0, 5, dtype=L.float64), reduction=r)),
    ("bce", lambda L, F, x, t, r: F.binary_cross_entropy(x.sigmoid(), t.sigmoid(), reduction=r)),
    ("kl", lambda L, F, x, t, r: F.kl_div(F.log_softmax(x, 1), F.softmax(t, 1),
                                          reduction=r if r != "mean" else "batchmean")),
    ("kl_log", lambda L, F, x, t, r: F.kl_div(F.log_softmax(x, 1), F.log_softmax(t, 1),
                                              reduction=r, log_target=True)),
    ("soft_margin", lambda L, F, x, t, r: F.soft_margin_loss(x, t.detach().sign(), reduction=r)),
    ("margin_ranking", lambda L, F, x, t, r: F.margin_ranking_loss(x, t, (x - t).detach().sign()
                                                                    * -1, 0.3, reduction=r)),
    ("hinge", lambda L, F, x, t, r: F.hinge_embedding_loss(x, t.detach().sign(), reduction=r)),
    ("cosine_embedding", lambda L, F, x, t, r: F.cosine_embedding_loss(
        x, t, L.tensor([1.0, -1.0, 1.0, -1.0], dtype=L.float64), 0.1, reduction=r)),
    ("poisson", lambda L, F, x, t, r: F.poisson_nll_loss(x, t.abs(), reduction=r)),
    ("gaussian", lambda L, F, x, t, r: F.gaussian_nll_loss(x, t, (x * t).abs() + 0.1,
                                                           reduction=r)),
    ("triplet", lambda L, F, x, t, r: F.triplet_margin_loss(x, t, x.flip(0), reduction=r)),
]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,fn", LOSSES, ids=[a[0] for a in LOSSES])
def test_loss(name, fn, reduction):
    _compare(lambda L, F, x, t: fn(L, F, x, t, reduction), [(4, 5), (4, 5)], seed=3,
             gradgrad=name in ("mse", "smooth_l1", "huber", "bce_logits", "bce_logits_w"))


def test_loss_node_names():
    _compare(lambda L, F, x, t: F.smooth_l1_loss(x, t), [(3, 4), (3, 4)],
             name="SmoothL1LossBackward0")
    _compare(lambda L, F, x, t: F.huber_loss(x, t), [(3, 4), (3, 4)], name="HuberLossBackward0")
    _compare(lambda L, F, x, t: F.binary_cross_entropy_with_logits(x, t.sigmoid()),
             [(3, 4), (3, 4)], name="BinaryCrossEntropyWithLogitsBackward0")
    _compare(lambda L, F, x, t: F.l1_loss(x, t), [(3, 4), (3, 4)], name="MeanBackward0")


TGT = [[1, 0, 3], [2, 2, 1]]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, {"ignore_index": 1}, {"label_smoothing": 0.2},
                                {"weight": True}, {"weight": True, "label_smoothing": 0.1,
                                                   "ignore_index": 0}])
def test_cross_entropy_indices(kw, reduction):
    def fn(L, F, x, t):
        k = dict(kw)
        if k.get("weight"):
            k["weight"] = L.tensor([0.5, 1.0, 2.0, 1.5], dtype=L.float64)
        return F.cross_entropy(x, t, reduction=reduction, **k)
    _compare(fn, [(3, 4), (3,)], ints={1: TGT[0]}, seed=1)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("kw", [{}, {"label_smoothing": 0.2}, {"weight": True}])
def test_cross_entropy_probs(kw, reduction):
    def fn(L, F, x, t):
        k = dict(kw)
        if k.get("weight"):
            k["weight"] = L.tensor([0.5, 1.0, 2.0, 1.5], dtype=L.float64)
        return F.cross_entropy(x, F.softmax(t, 1), reduction=reduction, **k)
    _compare(fn, [(3, 4), (3, 4)], seed=2)


def test_nll_loss_nd():
    t = [[[0, 1, 2], [2, 1, 0]], [[1, 1, 1], [0, 0, 2]]]
    _compare(lambda L, F, x, t: F.nll_loss(F.log_softmax(x, 1), t), [(2, 3, 2, 3), (2, 2, 3)],
             ints={1: t}, name=None)
    _compare(lambda L, F, x, t: F.nll_loss(x, t, reduction="none"), [(2, 3, 2, 3), (2, 2, 3)],
             ints={1: t})
    _compare(lambda L, F, x, t: F.nll_loss(x, t), [(2, 3, 2, 3), (2, 2, 3)], ints={1: t},
             name="NllLoss2DBackward0")
    _compare(lambda L, F, x, t: F.cross_entropy(x, t, ignore_index=2), [(2, 3, 3), (2, 3)],
             ints={1: [[0, 1, 2], [2, 1, 0]]})
    _compare(lambda L, F, x, t: F.nll_loss(x, t, weight=L.tensor([1., 2., 3.], dtype=L.float64)),
             [(2, 3, 2, 3), (2, 2, 3)], ints={1: t})


# --- layers --------------------------------------------------------------------------
CONV = [
    ("conv2d", lambda L, F, x, w, b: F.conv2d(x, w, b), [(2, 3, 7, 6), (4, 3, 3, 2), (4,)]),
    ("conv2d_s_p_d_g", lambda L, F, x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2),
                                                     dilation=(1, 2), groups=2),
     [(2, 4, 7, 6), (6, 2, 3, 2), (6,)]),
    ("conv2d_same", lambda L, F, x, w, b: F.conv2d(x, w, b, padding="same", dilation=2),
     [(2, 4, 7, 6), (3, 4, 2, 3), (3,)]),
    ("conv2d_valid", lambda L, F, x, w, b: F.conv2d(x, w, b, padding="valid"),
     [(1, 2, 5, 5), (3, 2, 3, 3), (3,)]),
    ("conv2d_unbatched", lambda L, F, x, w, b: F.conv2d(x, w, b, padding=1),
     [(2, 5, 5), (3, 2, 3, 3), (3,)]),
    ("conv1d", lambda L, F, x, w, b: F.conv1d(x, w, b, stride=2, padding=1, groups=2),
     [(2, 4, 9), (6, 2, 3), (6,)]),
    ("conv1d_same", lambda L, F, x, w, b: F.conv1d(x, w, b, padding="same"),
     [(2, 4, 9), (6, 4, 4), (6,)]),
    ("conv_transpose2d", lambda L, F, x, w, b: F.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1, groups=2),
     [(2, 4, 5, 4), (4, 3, 3, 2), (6,)]),
    ("conv_transpose2d_dil", lambda L, F, x, w, b: F.conv_transpose2d(
        x, w, b, stride=(2, 3), padding=(0, 1), dilation=2), [(2, 4, 5, 4), (4, 3, 3, 2), (3,)]),
    ("conv_transpose1d", lambda L, F, x, w, b: F.conv_transpose1d(x, w, b, stride=2),
     [(2, 4, 5), (4, 3, 3), (3,)]),
]


@pytest.mark.parametrize("name,fn,shapes", CONV, ids=[c[0] for c in CONV])
def test_conv(name, fn, shapes):
    _compare(fn, shapes, name=True, gradgrad=True)


POOL = [
    ("max_pool2d", lambda L, F, x: F.max_pool2d(x, 2), "MaxPool2DWithIndicesBackward0"),
    ("max_pool2d_s_p", lambda L, F, x: F.max_pool2d(x, 3, 2, 1), None),
    ("max_pool2d_dil_ceil", lambda L, F, x: F.max_pool2d(x, (2, 3), (2, 1), (1, 1), dilation=(2, 1),
                                                         ceil_mode=True), None),
    ("max_pool2d_ceil", lambda L, F, x: F.max_pool2d(x, 3, 2, ceil_mode=True), None),
    ("max_pool2d_unbatched", lambda L, F, x: F.max_pool2d(x[0], 2), None),
    ("max_pool1d", lambda L, F, x: F.max_pool1d(x.flatten(2), 3, 2, 1), "SqueezeBackward1"),
    ("avg_pool2d", lambda L, F, x: F.avg_pool2d(x, 2), "AvgPool2DBackward0"),
    ("avg_pool2d_pad", lambda L, F, x: F.avg_pool2d(x, 3, 2, 1), None),
    ("avg_pool2d_nopad", lambda L, F, x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), None),
    ("avg_pool2d_ceil", lambda L, F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), None),
    ("avg_pool2d_ceil_nopad", lambda L, F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                           count_include_pad=False), None),
    ("avg_pool2d_div", lambda L, F, x: F.avg_pool2d(x, 2, divisor_override=3), None),
    ("avg_pool1d", lambda L, F, x: F.avg_pool1d(x.flatten(2), 3, 2, 1), None),
    ("adaptive_avg_pool2d", lambda L, F, x: F.adaptive_avg_pool2d(x, (3, 4)),
     "AdaptiveAvgPool2DBackward0"),
    ("adaptive_avg_pool2d_1", lambda L, F, x: F.adaptive_avg_pool2d(x, 1), None),
    ("adaptive_avg_pool2d_none", lambda L, F, x: F.adaptive_avg_pool2d(x, (None, 2)), None),
    ("adaptive_avg_pool1d", lambda L, F, x: F.adaptive_avg_pool1d(x.flatten(2), 4), None),
    ("adaptive_max_pool2d", lambda L, F, x: F.adaptive_max_pool2d(x, (3, 4)),
     "AdaptiveMaxPool2DBackward0"),
    ("adaptive_max_pool1d", lambda L, F, x: F.adaptive_max_pool1d(x.flatten(2), 4), None),
    ("lp_pool2d", lambda L, F, x: F.lp_pool2d(x.abs() + 0.1, 2, 2), None),
    ("pad_constant", lambda L, F, x: F.pad(x, (1, 2, 0, 1), value=0.5), "ConstantPadNdBackward0"),
    ("pad_negative", lambda L, F, x: F.pad(x, (-1, 2, 1, -2)), None),
    ("pad_reflect", lambda L, F, x: F.pad(x, (1, 2, 2, 1), mode="reflect"),
     "ReflectionPad2DBackward0"),
    ("pad_replicate", lambda L, F, x: F.pad(x, (1, 2, 3, 1), mode="replicate"),
     "ReplicationPad2DBackward0"),
    ("pad_circular", lambda L, F, x: F.pad(x, (1, 2, 3, 1), mode="circular"), None),
    ("pad_reflect1d", lambda L, F, x: F.pad(x.flatten(2), (2, 3), mode="reflect"),
     "ReflectionPad1DBackward0"),
    ("pad_replicate1d", lambda L, F, x: F.pad(x.flatten(2), (2, 3), mode="replicate"),
     "ReplicationPad1DBackward0"),
    ("nearest_x2", lambda L, F, x: F.interpolate(x, scale_factor=2), "UpsampleNearest2DBackward0"),
    ("nearest_size", lambda L, F, x: F.interpolate(x, size=(4, 11)), None),
    ("nearest_frac", lambda L, F, x: F.interpolate(x, scale_factor=1.7), None),
    ("nearest_exact", lambda L, F, x: F.interpolate(x, size=(4, 11), mode="nearest-exact"), None),
    ("bilinear", lambda L, F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
     "UpsampleBilinear2DBackward0"),
    ("bilinear_ac", lambda L, F, x: F.interpolate(x, size=(9, 4), mode="bilinear",
                                                  align_corners=True), None),
    ("bilinear_frac", lambda L, F, x: F.interpolate(x, scale_factor=(1.5, 0.6), mode="bilinear"),
     None),
    ("linear1d", lambda L, F, x: F.interpolate(x.flatten(2), size=13, mode="linear"), None),
    ("area", lambda L, F, x: F.interpolate(x, size=(3, 2), mode="area"), None),
]


@pytest.mark.parametrize("name,fn,node", POOL, ids=[p[0] for p in POOL])
def test_pool_pad_interp(name, fn, node):
    _compare(fn, [(2, 3, 6, 7)], name=node, gradgrad=True)


def test_max_pool_indices():
    x = np.random.RandomState(0).randn(2, 3, 7, 6)
    ot, it = TF.max_pool2d(torch.tensor(x), 3, 2, 1, return_indices=True)
    od, id_ = DF.max_pool2d(dyngrad.tensor(x), 3, 2, 1, return_indices=True)
    assert np.array_equal(it.numpy(), id_.numpy())
    ot, it = TF.adaptive_max_pool2d(torch.tensor(x), (3, 4), return_indices=True)
    od, id_ = DF.adaptive_max_pool2d(dyngrad.tensor(x), (3, 4), return_indices=True)
    assert np.array_equal(it.numpy(), id_.numpy())


NORM = [
    ("batch_norm_train", lambda L, F, x, w, b: F.batch_norm(x, None, None, w, b, True),
     [(4, 3, 2, 5), (3,), (3,)], "NativeBatchNormBackward0"),
    ("batch_norm_train_2d", lambda L, F, x, w, b: F.batch_norm(x, None, None, w, b, True),
     [(4, 3), (3,), (3,)], None),
    ("batch_norm_eval", lambda L, F, x, w, b: F.batch_norm(
        x, L.linspace(-0.5, 0.5, 3, dtype=L.float64), L.linspace(0.5, 2, 3, dtype=L.float64), w, b,
        False), [(4, 3, 5), (3,), (3,)], "NativeBatchNormBackward0"),
    ("layer_norm", lambda L, F, x, w, b: F.layer_norm(x, (5,), w, b),
     [(4, 3, 5), (5,), (5,)], "NativeLayerNormBackward0"),
    ("layer_norm_2", lambda L, F, x, w, b: F.layer_norm(x, (3, 5), w.reshape(3, 5) if False
                                                        else None, None),
     [(4, 3, 5), (5,), (5,)], None),
    ("group_norm", lambda L, F, x, w, b: F.group_norm(x, 2, w, b), [(3, 4, 2, 3), (4,), (4,)],
     "NativeGroupNormBackward0"),
    ("group_norm_noaffine", lambda L, F, x, w, b: F.group_norm(x, 4), [(3, 4, 5), (4,), (4,)],
     None),
    ("instance_norm", lambda L, F, x, w, b: F.instance_norm(x, weight=w, bias=b),
     [(3, 4, 2, 3), (4,), (4,)], None),
]


@pytest.mark.parametrize("name,fn,shapes,node", NORM, ids=[n[0] for n in NORM])
def test_norm(name, fn, shapes, node):
    _compare(fn, shapes, name=node, gradgrad=True, atol=1e-7)


def test_batch_norm_running_stats_match():
    x = np.random.RandomState(0).randn(6, 3, 4)
    rt = [torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)]
    rd = [dyngrad.zeros(3, dtype=dyngrad.float64), dyngrad.ones(3, dtype=dyngrad.float64)]
    for _ in range(2):
        TF.batch_norm(torch.tensor(x), *rt, training=True, momentum=0.3)
        DF.batch_norm(dyngrad.tensor(x), *rd, training=True, momentum=0.3)
    for a, b in zip(rt, rd):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)


def test_embedding():
    idx = [[1, 2, 4], [4, 3, 1]]
    _compare(lambda L, F, i, w: F.embedding(i, w), [(2, 3), (5, 3)], ints={0: idx},
             name="EmbeddingBackward0", gradgrad=True)
    _compare(lambda L, F, i, w: F.embedding(i, w, padding_idx=1), [(2, 3), (5, 3)], ints={0: idx})
    _compare(lambda L, F, i, w: F.embedding(i, w, scale_grad_by_freq=True), [(2, 3), (5, 3)],
             ints={0: idx})


def test_embedding_max_norm():
    w = np.random.RandomState(0).randn(5, 3) * 3
    wt, wd = torch.tensor(w), dyngrad.tensor(w)
    TF.embedding(torch.tensor([1, 2]), wt, max_norm=1.0)
    DF.embedding(dyngrad.tensor([1, 2]), wd, max_norm=1.0)
    np.testing.assert_allclose(wd.numpy(), wt.numpy(), rtol=1e-6)


MISC = [
    ("cosine_similarity", lambda L, F, a, b: F.cosine_similarity(a, b, 1), [(3, 4, 2), (3, 4, 2)]),
    ("cosine_similarity_bcast", lambda L, F, a, b: F.cosine_similarity(a, b, -1), [(3, 4), (1, 4)]),
    ("pairwise_distance", lambda L, F, a, b: F.pairwise_distance(a, b), [(3, 4), (3, 4)]),
    ("pairwise_distance_p1", lambda L, F, a, b: F.pairwise_distance(a, b, 1.0, keepdim=True),
     [(3, 4), (3, 4)]),
    ("pairwise_distance_p3", lambda L, F, a, b: F.pairwise_distance(a, b, 3.0), [(3, 4), (3, 4)]),
    ("normalize", lambda L, F, a, b: F.normalize(a * b), [(3, 4), (3, 4)]),
    ("normalize_p1", lambda L, F, a, b: F.normalize(a, 1.0, 0), [(3, 4), (3, 4)]),
    ("linear", lambda L, F, a, b: F.linear(a, b, b[0]), [(3, 4), (4, 4)]),
    ("linear_3d", lambda L, F, a, b: F.linear(a, b), [(2, 3, 4), (5, 4)]),
    ("local_response_norm", lambda L, F, a, b: F.local_response_norm(a.reshape(1, 3, 2, 2), 2),
     [(3, 4), (3, 4)]),
    ("local_response_norm3", lambda L, F, a, b: F.local_response_norm(a.reshape(1, 3, 4), 3),
     [(3, 4), (3, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", MISC, ids=[m[0] for m in MISC])
def test_misc(name, fn, shapes):
    _compare(fn, shapes)


def test_bilinear_weights():
    _compare(lambda L, F, a, b, w, c: F.bilinear(a, b, w, c), [(3, 4), (3, 2), (5, 4, 2), (5,)],
             gradgrad=True)


def test_one_hot():
    t = [[0, 3], [2, 1]]
    a = TF.one_hot(torch.tensor(t)).numpy()
    b = DF.one_hot(dyngrad.tensor(t)).numpy()
    assert np.array_equal(a, b) and b.dtype == np.int64
    assert np.array_equal(TF.one_hot(torch.tensor(t), 6).numpy(),
                          DF.one_hot(dyngrad.tensor(t), 6).numpy())


def test_dropout_eval_identity():
    x = dyngrad.randn(3, 4)
    assert DF.dropout(x, 0.5, training=False) is x


# --- modules with the same weights ------------------------------------------------------
def _copy_params(mt, md):
    sd = {k: v.detach().numpy().copy() for k, v in mt.state_dict().items()}
    md.load_state_dict({k: dyngrad.tensor(v) for k, v in sd.items()})


def _module_pair(make, x_shape, train=True, seed=0, int_input=None):
    torch.manual_seed(seed)
    mt = make(torch.nn).double()
    md = make(dyngrad.nn).double()
    _copy_params(mt, md)
    mt.train(train)
    md.train(train)
    if int_input is not None:
        xt, xd = torch.tensor(int_input), dyngrad.tensor(int_input)
    else:
        x = np.random.RandomState(seed).randn(*x_shape)
        xt = torch.tensor(x, requires_grad=True)
        xd = dyngrad.tensor(x, requires_grad=True)
    yt, yd = mt(xt), md(xd)
    np.testing.assert_allclose(yd.detach().numpy(), yt.detach().numpy(), atol=1e-8)
    go = np.random.RandomState(seed + 1).randn(*yt.shape)
    yt.backward(torch.tensor(go))
    yd.backward(dyngrad.tensor(go))
    if int_input is None:
        np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), atol=1e-8)
    pt = dict(mt.named_parameters())
    for k, p in md.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), pt[k].grad.numpy(), atol=1e-8, err_msg=k)
    for (k, b) in md.named_buffers():
        bt = dict(mt.named_buffers())[k]
        np.testing.assert_allclose(b.numpy(), bt.numpy(), atol=1e-10, err_msg=k)
    assert repr(md) == repr(mt)
    return mt, md


MODULES = [
    ("Conv2d", lambda nn: nn.Conv2d(2, 4, 3, padding=1), (2, 2, 5, 6)),
    ("Conv2d_full", lambda nn: nn.Conv2d(4, 6, (3, 2), stride=2, padding=(1, 0), dilation=(1, 2),
                                         groups=2, bias=False), (2, 4, 7, 7)),
    ("Conv2d_reflect", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
     (2, 2, 5, 5)),
    ("Conv2d_same", lambda nn: nn.Conv2d(2, 3, 4, padding="same"), (2, 2, 5, 5)),
    ("Conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1,
                                                      output_padding=1), (2, 4, 4, 5)),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(4, 2, 3, stride=2), (2, 4, 5)),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(2), (2, 3, 6, 6)),
    ("MaxPool2d_full", lambda nn: nn.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 6, 6)),
    ("MaxPool1d", lambda nn: nn.MaxPool1d(2), (2, 3, 6)),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(3, 2, 1, count_include_pad=False), (2, 3, 6, 6)),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(2), (2, 3, 6)),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((2, 3)), (2, 3, 6, 7)),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(3), (2, 3, 7)),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d(2), (2, 3, 6, 7)),
    ("BatchNorm1d", lambda nn: nn.BatchNorm1d(3), (4, 3)),
    ("BatchNorm1d_3d", lambda nn: nn.BatchNorm1d(3, momentum=None), (4, 3, 5)),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3), (4, 3, 2, 2)),
    ("BatchNorm2d_noaffine", lambda nn: nn.BatchNorm2d(3, affine=False,
                                                       track_running_stats=False), (4, 3, 2, 2)),
    ("LayerNorm", lambda nn: nn.LayerNorm(5), (2, 3, 5)),
    ("LayerNorm_2", lambda nn: nn.LayerNorm((3, 5), elementwise_affine=False), (2, 3, 5)),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 4), (2, 4, 3)),
    ("InstanceNorm2d", lambda nn: nn.InstanceNorm2d(3, affine=True), (2, 3, 4, 4)),
    ("Upsample", lambda nn: nn.Upsample(scale_factor=2), (2, 3, 3, 3)),
    ("Upsample_bilinear", lambda nn: nn.Upsample(size=(5, 4), mode="bilinear",
                                                 align_corners=True), (2, 3, 3, 3)),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), (2, 3, 3, 3)),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d(1), (2, 3, 3, 3)),
    ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d((1, 0, 2, 1)), (2, 3, 3, 3)),
    ("ConstantPad1d", lambda nn: nn.ConstantPad1d(2, 0.5), (2, 3, 3)),
    ("Dropout_eval", lambda nn: nn.Dropout(0.3), (2, 3)),
    ("PReLU", lambda nn: nn.PReLU(3), (2, 3, 4)),
    ("GLU", lambda nn: nn.GLU(), (2, 4)),
    ("Softmin", lambda nn: nn.Softmin(1), (2, 4)),
    ("Bilinear", lambda nn: nn.Bilinear(3, 3, 2), (4, 3)),
]


@pytest.mark.parametrize("name,make,shape", MODULES, ids=[m[0] for m in MODULES])
def test_module(name, make, shape):
    if name == "Bilinear":
        pytest.skip("Bilinear takes two inputs")
    _module_pair(make, shape, train=not name.endswith("_eval"))


def test_module_eval_batchnorm():
    mt, md = _module_pair(lambda nn: nn.BatchNorm2d(3), (4, 3, 2, 2))
    mt.eval()
    md.eval()
    x = np.random.RandomState(5).randn(2, 3, 2, 2)
    np.testing.assert_allclose(md(dyngrad.tensor(x)).detach().numpy(),
                               mt(torch.tensor(x)).detach().numpy(),
                               atol=1e-10)


def test_embedding_module():
    _module_pair(lambda nn: nn.Embedding(6, 3, padding_idx=0), None,
                 int_input=[[0, 1, 5], [2, 0, 3]])


ACT_MODULES = ["ReLU()", "ReLU6()", "LeakyReLU(0.2)", "ELU(alpha=0.5)", "SELU()", "CELU(0.8)",
               "GELU()", "GELU(approximate='tanh')", "SiLU()", "Mish()",
               "Softplus(beta=2, threshold=10)", "Hardtanh(-0.5, 0.5)", "Hardsigmoid()",
               "Hardswish()", "LogSigmoid()", "Softsign()", "Tanh()", "Sigmoid()",
               "Softmax(dim=1)", "LogSoftmax(dim=-1)", "Softmin(dim=0)", "Threshold(0.1, 20)",
               "GLU(dim=0)", "Tanhshrink()", "Softshrink(0.3)", "Hardshrink()", "PReLU()",
               "ReLU(inplace=True)"]


@pytest.mark.parametrize("expr", ACT_MODULES)
def test_activation_modules(expr):
    _module_pair(lambda nn: eval("nn." + expr, {"nn": nn}), (4, 5)) if "inplace" not in expr \
        else None
    assert repr(eval("dyngrad.nn." + expr)) == repr(eval("torch.nn." + expr))


LOSS_MODULES = ["MSELoss()", "L1Loss(reduction='sum')", "SmoothL1Loss(beta=0.5)",
                "HuberLoss(delta=0.7)", "BCEWithLogitsLoss()", "KLDivLoss(reduction='batchmean')",
                "SoftMarginLoss()", "BCELoss()"]


@pytest.mark.parametrize("expr", LOSS_MODULES)
def test_loss_modules(expr):
    x = np.random.RandomState(0).uniform(0.1, 0.9, size=(3, 4))
    t = np.random.RandomState(1).uniform(0.1, 0.9, size=(3, 4))
    mt = eval("torch.nn." + expr)
    md = eval("dyngrad.nn." + expr)
    xt, xd = torch.tensor(x, requires_grad=True), dyngrad.tensor(x, requires_grad=True)
    lt, ld = mt(xt, torch.tensor(t)), md(xd, dyngrad.tensor(t))
    np.testing.assert_allclose(ld.item(), lt.item(), rtol=1e-10)
    lt.backward()
    ld.backward()
    np.testing.assert_allclose(xd.grad.numpy(), xt.grad.numpy(), atol=1e-10)
    assert repr(md) == repr(mt)


def test_loss_modules_other():
    x = np.random.RandomState(0).randn(3, 4)
    for name, args in (("CosineEmbeddingLoss", (x, x[::-1].copy(), np.array([1., -1., 1.]))),
                       ("MarginRankingLoss", (x[:, 0].copy(), x[:, 1].copy(),
                                              np.array([1., -1., 1.]))),
                       ("HingeEmbeddingLoss", (x, np.sign(x))),
                       ("TripletMarginLoss", (x, x[::-1].copy(), x[:, ::-1].copy())),
                       ("PoissonNLLLoss", (x, np.abs(x))),
                       ("GaussianNLLLoss", (x, x * 0.5, np.abs(x) + 0.1))):
        lt = getattr(torch.nn, name)()(*[torch.tensor(a) for a in args])
        ld = getattr(dyngrad.nn, name)()(*[dyngrad.tensor(a) for a in args])
        np.testing.assert_allclose(ld.item(), lt.item(), rtol=1e-9, err_msg=name)


def test_module_reprs():
    for expr in ["Conv2d(1, 16, 3, padding=1)", "Conv2d(1, 16, kernel_size=(3, 5), stride=2)",
                 "Conv2d(4, 8, 3, groups=2, bias=False, dilation=2)",
                 "Conv2d(2, 2, 3, padding=1, padding_mode='reflect')",
                 "Conv1d(2, 4, 3)", "ConvTranspose2d(4, 2, 3, stride=2, output_padding=1)",
                 "MaxPool2d(2)", "MaxPool2d(3, stride=2, padding=1, ceil_mode=True)",
                 "AvgPool2d(2)", "AdaptiveAvgPool2d((1, 1))", "AdaptiveMaxPool2d(2)",
                 "BatchNorm1d(3)", "BatchNorm2d(3, momentum=None, affine=False)",
                 "LayerNorm(5)", "LayerNorm((3, 4), elementwise_affine=False)",
                 "GroupNorm(2, 4)", "Dropout(p=0.3)", "Dropout2d()", "Embedding(10, 3)",
                 "Embedding(10, 3, padding_idx=0)", "Upsample(scale_factor=2.0, mode='nearest')",
                 "Upsample(size=(4, 4), mode='bilinear')", "InstanceNorm2d(3)",
                 "MaxPool1d(2)", "AvgPool1d(3)", "ZeroPad2d(1)", "ReflectionPad1d(2)",
                 "CrossEntropyLoss()", "NLLLoss()", "Flatten()"]:
        assert repr(eval("dyngrad.nn." + expr)) == repr(eval("torch.nn." + expr)), expr


def test_conv_error_message():
    x = dyngrad.zeros(64, 3, 28, 28)
    w = dyngrad.zeros(16, 1, 3, 3)
    with pytest.raises(RuntimeError) as e:
        DF.conv2d(x, w)
    with pytest.raises(RuntimeError) as e2:
        TF.conv2d(torch.zeros(64, 3, 28, 28), torch.zeros(16, 1, 3, 3))
    assert str(e.value) == str(e2.value)


def test_cnn_training_step_matches():
    """Conv-ReLU-pool-Linear + cross_entropy: one SGD step, same weights, same result."""
    def make(nn):
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Dropout(0.0),
                             nn.Linear(32, 3))
    torch.manual_seed(0)
    mt = make(torch.nn).double()
    md = make(dyngrad.nn).double()
    _copy_params(mt, md)
    x = np.random.RandomState(0).randn(5, 1, 8, 8)
    y = np.array([0, 2, 1, 1, 0])
    lt = TF.cross_entropy(mt(torch.tensor(x)), torch.tensor(y))
    ld = DF.cross_entropy(md(dyngrad.tensor(x)), dyngrad.tensor(y))
    lt.backward()
    ld.backward()
    np.testing.assert_allclose(ld.item(), lt.item(), rtol=1e-10)
    pt = dict(mt.named_parameters())
    for k, p in md.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), pt[k].grad.numpy(), atol=1e-10, err_msg=k)
