"""nll_loss and embedding_bag as declared ops (ops/losses.py, ops/embedding.py) against
PyTorch: values, gradients, gradients of gradients, recorded nodes and their saved values,
errors, in-place version checks, forward mode (torch.func.jvp) and vmap."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from dyngrad.autograd import forward_ad as fwAD  # noqa: E402
from dyngrad.ops import embedding as E, losses as L_  # noqa: E402

RNG = np.random.RandomState(0)


def _t(L, a, grad=False):
    t = L.tensor(a)
    return t.requires_grad_() if grad else t


def _walk(fn, depth=6):
    if fn is None or depth == 0:
        return None
    name = fn.name().split("::")[-1] if hasattr(fn, "name") else type(fn).__name__
    return name, tuple(None if f is None else _walk(f, depth - 1) for f, _ in fn.next_functions)


def _saved(fn):
    out = {}
    for n in dir(fn):
        if n.startswith("_saved_"):
            v = getattr(fn, n)
            out[n] = v.tolist() if hasattr(v, "tolist") else v
    return out


# --- nll_loss ---------------------------------------------------------------------------------
NLL = {
    "1d": ((5,), (), 5),
    "2d": ((4, 5), (4,), 5),
    "3d": ((3, 4, 5), (3, 5), 4),
    "4d": ((2, 3, 2, 3), (2, 2, 3), 3),
    "5d": ((2, 3, 2, 2, 2), (2, 2, 2, 2), 3),
}
KW = {
    "mean": {},
    "sum": {"reduction": "sum"},
    "none": {"reduction": "none"},
    "weight": {"weight": True},
    "ignore": {"ignore_index": 1},
    "weight_ignore_none": {"weight": True, "ignore_index": 2, "reduction": "none"},
    "weight_ignore_sum": {"weight": True, "ignore_index": 0, "reduction": "sum"},
}


def _nll_case(shape, kw):
    xs, ts, c = NLL[shape]
    x = RNG.randn(*xs)
    t = RNG.randint(0, c, ts) if ts else np.asarray(RNG.randint(0, c))
    w = RNG.rand(c) + 0.5 if kw.get("weight") else None
    return x, t, w


def _nll(L, x, t, w, kw):
    k = {n: v for n, v in kw.items() if n != "weight"}
    if w is not None:
        k["weight"] = L.tensor(w)
    return L.nn.functional.nll_loss(x, t, **k)


@pytest.mark.parametrize("kw", list(KW))
@pytest.mark.parametrize("shape", list(NLL))
def test_nll_loss_values_gradients_and_graph_match_torch(shape, kw):
    xa, ta, w = _nll_case(shape, KW[kw])
    res = {}
    for L in (torch, dyngrad):
        x = _t(L, xa, True)
        y = _nll(L, x, L.tensor(ta), w, KW[kw])
        node = y.grad_fn
        while type(node).__name__ == "ViewBackward0" or (
                hasattr(node, "name") and node.name().endswith("ViewBackward0")):
            node = node.next_functions[0][0]
        v = L.ones_like(y, requires_grad=True) * 1.5
        gx, = L.autograd.grad(y, x, v, create_graph=True)
        # the gradient's graph, and its derivative with respect to the incoming gradient
        u = _t(L, np.linspace(-1, 1, xa.size).reshape(xa.shape))
        gv, = L.autograd.grad((gx * u).sum(), v, create_graph=True)
        res[L] = (y.detach().numpy(), gx.detach().numpy(), gv.detach().numpy(), _walk(y.grad_fn),
                  _walk(gx.grad_fn), _walk(gv.grad_fn), type(node).__name__ if L is dyngrad
                  else node.name(), _saved(node))
    t, d = res[torch], res[dyngrad]
    for a, b in zip(t[:3], d[:3]):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
        assert b.shape == a.shape
    assert d[3:6] == t[3:6]
    assert d[6] == t[6]
    assert d[7].keys() == t[7].keys()
    for k in t[7]:
        np.testing.assert_allclose(np.asarray(d[7][k], float), np.asarray(t[7][k], float))


def test_nll_loss_double_backward_nodes_show_torch_saved_values():
    xa, ta, w = _nll_case("2d", {"weight": True})
    out = []
    for L in (torch, dyngrad):
        x = _t(L, xa, True)
        y = L.nn.functional.nll_loss(x, L.tensor(ta), weight=L.tensor(w), ignore_index=3)
        gx, = L.autograd.grad(y, x, create_graph=True)
        out.append(_saved(gx.grad_fn))
    assert out[0] == out[1]


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_nll_loss_third_order_records_torch_nodes(red):
    xa, ta, _ = _nll_case("2d", {})
    out = []
    for L in (torch, dyngrad):
        x = _t(L, xa, True)
        y = L.nn.functional.nll_loss(x, L.tensor(ta), reduction=red)
        v = L.ones_like(y, requires_grad=True)
        gx, = L.autograd.grad(y, x, v, create_graph=True)
        u = _t(L, np.arange(xa.size, dtype=float).reshape(xa.shape), True)
        gv, = L.autograd.grad((gx * u).sum(), v, create_graph=True)
        gu, = L.autograd.grad(gv.sum(), u)
        out.append((_walk(gv.grad_fn), gu.numpy()))
    assert out[0][0] == out[1][0]
    np.testing.assert_allclose(out[1][1], out[0][1])


def test_nll_loss_all_ignored_mean_matches_torch():
    out = []
    for L in (torch, dyngrad):
        x = _t(L, np.zeros((2, 3)), True)
        y = L.nn.functional.nll_loss(x, L.tensor([1, 1]), ignore_index=1)
        total = y.grad_fn._saved_total_weight.item()
        y.backward()
        out.append((y.item(), x.grad.numpy(), total))
    assert np.isnan(out[0][0]) and np.isnan(out[1][0])
    np.testing.assert_array_equal(out[1][1], out[0][1])
    assert out[1][2] == out[0][2]


def _outcome(L, f):
    try:
        r = f(L, L.nn.functional)
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return type(e).__name__, str(e).split("\n")[0]
    return tuple(r.shape)


ERRORS = {
    "target_out_of_range": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([0, 3])),
    "negative_target": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([-1, 0])),
    "float_target": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([0., 1.])),
    "batch_mismatch": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([0])),
    "weight_size": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([0, 1]), weight=L.ones(4)),
    "weight_dtype": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([0, 1]),
                                            weight=L.ones(3, dtype=L.float64)),
    "weight_grad": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([0, 1]),
                                           weight=L.ones(3, requires_grad=True)),
    "nd_target_size": lambda L, F: F.nll_loss(L.zeros(2, 3, 4), L.zeros(2, 5, dtype=L.long)),
    "bad_reduction": lambda L, F: F.nll_loss(L.zeros(2, 3), L.tensor([0, 1]), reduction="avg"),
    "int_input": lambda L, F: F.nll_loss(L.zeros(2, 3, dtype=L.long), L.tensor([0, 1])),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_nll_loss_errors_match_torch(name):
    assert _outcome(dyngrad, ERRORS[name]) == _outcome(torch, ERRORS[name])


@pytest.mark.parametrize("which", ["input", "target", "weight", "weight_gradgrad"])
def test_nll_loss_saved_tensors_are_version_checked(which):
    out = []
    for L in (torch, dyngrad):
        x = _t(L, RNG.randn(3, 4), True)
        xi = x * 1
        t = L.tensor([0, 1, 2])
        w = L.ones(4, dtype=L.float64)
        y = L.nn.functional.nll_loss(xi, t, weight=w)
        if which == "weight_gradgrad":
            y, = L.autograd.grad(y, x, create_graph=True)
            y = y.sum()
        {"input": xi, "target": t}.get(which, w).add_(1)
        try:
            y.backward()
            out.append(None)
        except RuntimeError as e:
            out.append(str(e).split("\n")[0].split(";")[0])
    assert out[1] == out[0] and out[0] is not None


def test_cross_entropy_records_log_softmax_then_nll_loss():
    out = []
    for L in (torch, dyngrad):
        y = L.nn.functional.cross_entropy(_t(L, RNG.randn(3, 4), True), L.tensor([0, 3, 1]))
        out.append(_walk(y.grad_fn))
    assert out[0] == out[1] == ("NllLossBackward0", (("LogSoftmaxBackward0", (
        ("AccumulateGrad", ()),)),))


@pytest.mark.parametrize("kw", ["mean", "sum", "none", "weight_ignore_sum"])
@pytest.mark.parametrize("shape", ["1d", "2d", "4d"])
def test_nll_loss_forward_mode_matches_torch(shape, kw):
    xa, ta, w = _nll_case(shape, KW[kw])
    ta_ = np.linspace(-1, 1, xa.size).reshape(xa.shape)
    before = dict(fwAD.DERIVED)
    out = []
    for L in (torch, dyngrad):
        def f(x, L=L):
            return _nll(L, x, L.tensor(ta), w, KW[kw])
        p, tan = L.func.jvp(f, (L.tensor(xa),), (L.tensor(ta_),))
        out.append((p.numpy(), tan.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    assert dict(fwAD.DERIVED) == before  # the declared rule, not a derived one


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
def test_nll_loss_gradient_forward_mode_matches_torch(red):
    """The tangent of nll_loss's gradient with respect to the incoming gradient (the forward
    mode rule of nll_loss_backward)."""
    xa, ta, w = _nll_case("2d", {"weight": True})
    va = np.asarray(1.5) if red != "none" else np.linspace(0.5, 2, len(ta))
    out = []
    for L in (torch, dyngrad):
        fwAD_ = L.autograd.forward_ad
        with fwAD_.dual_level():
            v = fwAD_.make_dual(L.tensor(va), L.tensor(np.ones_like(va) * 0.5))
            x = L.tensor(xa, requires_grad=True)
            y = L.nn.functional.nll_loss(x, L.tensor(ta), weight=L.tensor(w), ignore_index=1,
                                         reduction=red)
            gx, = L.autograd.grad(y, x, v, create_graph=True)
            p, tan = fwAD_.unpack_dual(gx)
            out.append((p.detach().numpy(), tan.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kw", ["mean", "none", "weight_ignore_sum"])
def test_nll_loss_vmap_matches_torch(kw):
    xa = RNG.randn(3, 4, 5)
    ta = RNG.randint(0, 5, (3, 4))
    w = RNG.rand(5) + 0.5 if KW[kw].get("weight") else None
    out = []
    for L in (torch, dyngrad):
        f = L.vmap(lambda x, t, L=L: _nll(L, x, t, w, KW[kw]))
        out.append(f(L.tensor(xa), L.tensor(ta)).numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12)


@pytest.mark.parametrize("red", [0, 1, 2])
@pytest.mark.parametrize("target_batched", [True, False])
def test_nll_loss_batching_rules_match_a_loop(red, target_batched):
    x = RNG.randn(3, 4, 5)
    t = RNG.randint(0, 5, (3, 4)) if target_batched else RNG.randint(0, 5, (4,))
    t.flat[0] = 2  # an ignored target
    w = RNG.rand(5) + 0.5
    p = {"target": t, "weight": w, "reduction": red, "ignore_index": 2}
    spec = L_.nll_loss_forward
    out, total = spec.batch(spec, [x], p)
    for b in range(3):
        q = dict(p, target=t[b] if target_batched else t)
        o, tw = spec.forward(x[b], **q)
        np.testing.assert_allclose(out[b], o)
        np.testing.assert_allclose(total[b], tw)
    g = RNG.randn(*out.shape)
    bspec = L_.nll_loss_backward
    gx = bspec.batch(bspec, [g, x], dict(p, total_weight=total))
    for b in range(3):
        q = dict(p, target=t[b] if target_batched else t, total_weight=total[b])
        np.testing.assert_allclose(gx[b], bspec.forward(g[b], x[b], **q))


def test_nll_loss_bfloat16_matches_torch():
    xa = RNG.randn(6, 5)
    ta = RNG.randint(0, 5, 6)
    out = []
    for L in (torch, dyngrad):
        x = L.tensor(xa).to(L.bfloat16).requires_grad_()
        y = L.nn.functional.nll_loss(x, L.tensor(ta))
        y.backward()
        out.append((y.float().item(), x.grad.float().numpy()))
    # (the mean is summed in float32 and rounded once; PyTorch's cascade sum may differ by
    # one bfloat16 rounding)
    np.testing.assert_allclose(out[1][0], out[0][0], rtol=2 ** -7)
    np.testing.assert_array_equal(out[1][1], out[0][1])


# --- embedding_bag ----------------------------------------------------------------------------
IDX = [1, 2, 4, 5, 4, 3, 2, 9]
BAGS = {
    "sum": dict(mode="sum"),
    "mean_pad": dict(mode="mean", padding_idx=4),
    "max": dict(mode="max"),
    "max_pad": dict(mode="max", padding_idx=2),
    "sum_last": dict(mode="sum", include_last_offset=True),
    "mean_last": dict(mode="mean", include_last_offset=True),
    "sum_freq": dict(mode="sum", scale_grad_by_freq=True),
    "mean_freq_pad": dict(mode="mean", scale_grad_by_freq=True, padding_idx=-1),
    "psw": dict(mode="sum", psw=True),
    "psw_pad": dict(mode="sum", psw=True, padding_idx=2),
    "sum_2d": dict(mode="sum", two_d=True),
    "max_2d": dict(mode="max", two_d=True),
}


def _bag(L, W, kw, dtype):
    k = dict(kw)
    F = L.nn.functional
    psw = k.pop("psw", False)
    two_d = k.pop("two_d", False)
    w = L.tensor(W).to(dtype).requires_grad_()
    p = L.tensor(np.linspace(0.2, 1.6, 8)).to(dtype).requires_grad_() if psw else None
    if two_d:
        return w, p, F.embedding_bag(L.tensor(IDX).view(2, 4), w, per_sample_weights=p, **k)
    return w, p, F.embedding_bag(L.tensor(IDX), w, L.tensor([0, 2, 2, 8]),
                                 per_sample_weights=p, **k)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kw", list(BAGS))
def test_embedding_bag_matches_torch(kw, dtype):
    W = RNG.randn(10, 3)
    out = []
    for L in (torch, dyngrad):
        w, p, y = _bag(L, W, BAGS[kw], getattr(L, dtype))
        g = L.tensor(np.arange(y.numel(), dtype=float).reshape(tuple(y.shape))).to(y.dtype)
        node = y.grad_fn
        saved = _saved(node)
        y.backward(g)
        out.append((y.detach().numpy(), w.grad.numpy(), None if p is None else p.grad.numpy(),
                    _walk(node), saved))
    t, d = out
    for a, b in zip(t[:3], d[:3]):
        if a is None:
            assert b is None
        else:
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6)
    assert d[3] == t[3]
    assert d[4].keys() == t[4].keys()
    for k in t[4]:
        if t[4][k] is None or isinstance(t[4][k], (bool, int)):
            assert d[4][k] == t[4][k], k
        else:
            np.testing.assert_allclose(np.asarray(d[4][k], float), np.asarray(t[4][k], float),
                                       rtol=1e-6, err_msg=k)


def test_embedding_bag_double_backward_matches_torch():
    W = RNG.randn(10, 3)
    out = []
    for L in (torch, dyngrad):
        w, p, y = _bag(L, W, BAGS["psw"], L.float64)
        gw, gp = L.autograd.grad(y, (w, p), L.ones(4, 3, dtype=L.float64, requires_grad=True),
                                 create_graph=True)
        res = [_walk(gw.grad_fn), _walk(gp.grad_fn), gp.detach().numpy()]
        for r in (gw, gp):
            try:
                r.sum().backward()
            except (RuntimeError, NotImplementedError) as e:
                res.append((type(e).__name__, str(e)))
        out.append(res)
    np.testing.assert_allclose(out[1][2], out[0][2])
    assert out[1][:2] + out[1][3:] == out[0][:2] + out[0][3:]


def test_embedding_bag_saved_weight_changed_in_place_raises_as_torch():
    W = RNG.randn(10, 3)
    out = []
    for L in (torch, dyngrad):
        w = L.tensor(W, requires_grad=True)
        w2 = w * 1
        p = L.ones(8, dtype=L.float64, requires_grad=True)
        y = L.nn.functional.embedding_bag(L.tensor(IDX), w2, L.tensor([0, 4]), mode="sum",
                                          per_sample_weights=p)
        with L.no_grad():
            w2.mul_(2)
        try:
            y.sum().backward()
            out.append(None)
        except RuntimeError as e:
            out.append(str(e).split("\n")[0].split(";")[0])
    assert out[0] == out[1] and out[0] is not None


def test_embedding_bag_forward_mode_is_refused_as_torch():
    out = []
    for L in (torch, dyngrad):
        try:
            L.func.jvp(lambda w, L=L: L.nn.functional.embedding_bag(
                L.tensor(IDX), w, L.tensor([0, 4]), mode="max"), (L.ones(10, 3),),
                (L.ones(10, 3),))
            out.append(None)
        except NotImplementedError as e:
            out.append(str(e))
    assert out[0] == out[1] and out[0] is not None


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_vmap_matches_torch(mode):
    Wb = RNG.randn(3, 10, 4)
    out = []
    for L in (torch, dyngrad):
        f = L.vmap(lambda w, L=L: L.nn.functional.embedding_bag(
            L.tensor(IDX), w, L.tensor([0, 3, 3]), mode=mode, padding_idx=5))
        out.append(f(L.tensor(Wb)).numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12)


@pytest.mark.parametrize("mode,psw_batched", [(0, None), (0, False), (0, True), (1, None),
                                               (2, None)])
def test_embedding_bag_batching_rule_matches_a_loop(mode, psw_batched):
    Wb = RNG.randn(3, 10, 4)
    idx, offs = np.array(IDX), np.array([0, 3, 3])
    psw = None if psw_batched is None else RNG.rand(3, 8) if psw_batched else RNG.rand(8)
    p = {"indices": idx, "offsets": offs, "mode": mode, "padding_idx": 5}
    spec = E.embedding_bag
    got = spec.batch(spec, [Wb, psw], p)
    for b in range(3):
        one = spec.forward(Wb[b], None if psw is None else psw[b] if psw_batched else psw, **p)
        for g, o in zip(got, one):
            np.testing.assert_array_equal(g[b], o)


BAG_ERRORS = {
    "index_range": lambda L, F: F.embedding_bag(L.tensor([0, 10]), L.ones(10, 3),
                                                L.tensor([0])),
    "first_offset": lambda L, F: F.embedding_bag(L.tensor([0, 1]), L.ones(10, 3),
                                                 L.tensor([1])),
    "last_offset": lambda L, F: F.embedding_bag(L.tensor([0, 1]), L.ones(10, 3),
                                                L.tensor([0, 3])),
    "int_weight": lambda L, F: F.embedding_bag(L.tensor([0, 1]), L.ones(10, 3, dtype=L.long),
                                               L.tensor([0])),
    "padding_range": lambda L, F: F.embedding_bag(L.tensor([0, 1]), L.ones(10, 3),
                                                  L.tensor([0]), padding_idx=12),
    "psw_mean": lambda L, F: F.embedding_bag(L.tensor([0, 1]), L.ones(10, 3), L.tensor([0]),
                                             per_sample_weights=L.ones(2)),
}


@pytest.mark.parametrize("name", list(BAG_ERRORS))
def test_embedding_bag_errors_match_torch(name):
    assert _outcome(dyngrad, BAG_ERRORS[name]) == _outcome(torch, BAG_ERRORS[name])
