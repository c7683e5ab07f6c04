"""More of torch.nn against real PyTorch: scaled_dot_product_attention, pixel shuffle,
DataParallel, Transformer decoder, parametrize, prune and checkpoint."""
import warnings

import numpy as np
import pytest

import dyngrad as dg
import dyngrad.nn.functional as DF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _d(t, requires_grad=False):
    return dg.tensor(t.detach().numpy().copy(), requires_grad=requires_grad)


def _close(a, b, atol=1e-6):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, atol=atol, rtol=1e-6)


def _copy(tm, dm):
    dm.load_state_dict({k: dg.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})


def _err(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)
    return None


# ---------------------------------------------------------------- scaled_dot_product_attention
def _sdpa_pair(shape_q, shape_k, shape_v, seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    tq, tk, tv = (torch.randn(*s, generator=g, dtype=torch.float64, requires_grad=True)
                  for s in (shape_q, shape_k, shape_v))
    dq, dk, dv = (_d(t, True) for t in (tq, tk, tv))
    tkw, dkw = dict(kw), dict(kw)
    m = kw.get("attn_mask")
    if m is not None:
        if m.dtype.is_floating_point:
            m = m.detach().requires_grad_()
            tkw["attn_mask"] = m
        dkw["attn_mask"] = _d(m, m.requires_grad)
    to = TF.scaled_dot_product_attention(tq, tk, tv, **tkw)
    do = DF.scaled_dot_product_attention(dq, dk, dv, **dkw)
    _close(do, to)
    w = torch.randn(*to.shape, generator=g, dtype=torch.float64)
    (to * w).sum().backward()
    (do * _d(w)).sum().backward()
    for a, b in ((dq, tq), (dk, tk), (dv, tv)):
        _close(a.grad, b.grad)
    if m is not None and m.dtype.is_floating_point:
        _close(dkw["attn_mask"].grad, m.grad)


def test_sdpa_plain_scale_causal():
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6))
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), scale=0.3)
    _sdpa_pair((2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 6), is_causal=True)
    _sdpa_pair((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 6), is_causal=True)  # L != S
    _sdpa_pair((4, 8), (5, 8), (5, 3))
    _sdpa_pair((3, 4, 8), (3, 5, 8), (3, 5, 3), is_causal=True, scale=2.0)


def test_sdpa_masks():
    g = torch.Generator().manual_seed(1)
    bm = torch.rand(4, 5, generator=g) > 0.4
    bm[:, 0] = True
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), attn_mask=bm)
    bm4 = torch.rand(2, 1, 4, 5, generator=g) > 0.3
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), attn_mask=bm4)
    fm = torch.randn(4, 5, generator=g, dtype=torch.float64)
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), attn_mask=fm)
    fm32 = torch.randn(3, 4, 5, generator=g)
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), attn_mask=fm32)
    # fully masked rows give zeros and zero gradients, as PyTorch's
    fully = torch.ones(4, 5, dtype=torch.bool)
    fully[1] = False
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), attn_mask=fully)
    finf = torch.zeros(4, 5, dtype=torch.float64)
    finf[2] = float("-inf")
    _sdpa_pair((2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), attn_mask=finf)


def test_sdpa_gqa_and_broadcast():
    _sdpa_pair((2, 6, 4, 8), (2, 2, 5, 8), (2, 2, 5, 6), enable_gqa=True)
    _sdpa_pair((2, 6, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6), enable_gqa=True, is_causal=True)
    _sdpa_pair((2, 3, 4, 8), (2, 1, 5, 8), (2, 1, 5, 6))  # broadcast without gqa


def test_sdpa_errors():
    q = torch.randn(2, 3, 4, 8, dtype=torch.float64)
    k = torch.randn(2, 3, 5, 8, dtype=torch.float64)
    v = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    dq, dk, dv = _d(q), _d(k), _d(v)
    m = torch.ones(4, 5, dtype=torch.bool)
    for tkw, dkw in [
        (dict(attn_mask=m, is_causal=True), dict(attn_mask=_d(m), is_causal=True)),
        (dict(attn_mask=torch.zeros(4, 5, dtype=torch.int64)),
         dict(attn_mask=dg.zeros(4, 5, dtype=dg.int64))),
        (dict(dropout_p=1.5), dict(dropout_p=1.5)),
    ]:
        te = _err(lambda: TF.scaled_dot_product_attention(q, k, v, **tkw))
        de = _err(lambda: DF.scaled_dot_product_attention(dq, dk, dv, **dkw))
        assert te is not None and te == de
    te = _err(lambda: TF.scaled_dot_product_attention(q.float(), k, v))
    assert te == _err(lambda: DF.scaled_dot_product_attention(dq.float(), dk, dv))


def test_sdpa_dropout_uses_dyngrad_generator():
    q, k, v = (dg.randn(2, 2, 4, 8, dtype=dg.float64) for _ in range(3))
    p = 0.4
    dg.manual_seed(7)
    a = DF.scaled_dot_product_attention(q, k, v, dropout_p=p)
    dg.manual_seed(7)
    b = DF.scaled_dot_product_attention(q, k, v, dropout_p=p)
    _close(a, b, atol=0)
    # the same as the reference with dyngrad's dropout mask drawn from the same seed
    scores = (q @ k.transpose(-2, -1)) / np.sqrt(8)
    w = DF.softmax(scores, -1)
    dg.manual_seed(7)
    ref = DF.dropout(w, p, True) @ v
    _close(a, ref, atol=1e-12)
    # surviving weights are scaled by 1 / (1 - p)
    dg.manual_seed(7)
    dw = DF.dropout(w, p, True)
    nz = dw.detach().numpy() != 0
    np.testing.assert_allclose(dw.detach().numpy()[nz], w.detach().numpy()[nz] / (1 - p))
    assert 0 < nz.mean() < 1
    c = DF.scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    _close(c, DF.scaled_dot_product_attention(q, k, v))
    _close(c, TF.scaled_dot_product_attention(*(torch.tensor(x.numpy()) for x in (q, k, v))))


# ---------------------------------------------------------------------------- pixel shuffle
@pytest.mark.parametrize("shape,r", [((1, 8, 3, 3), 2), ((2, 18, 2, 4), 3), ((8, 3, 5), 2),
                                     ((2, 3, 4, 4, 2), 1), ((2, 3, 8, 2, 2), 2)])
def test_pixel_shuffle_values_grads(shape, r):
    t = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    d = _d(t, True)
    to, do = TF.pixel_shuffle(t, r), DF.pixel_shuffle(d, r)
    _close(do, to)
    w = torch.randn(*to.shape, dtype=torch.float64)
    (to * w).sum().backward()
    (do * _d(w)).sum().backward()
    _close(d.grad, t.grad)
    tu, du = TF.pixel_unshuffle(to, r), DF.pixel_unshuffle(do, r)
    _close(du, tu)
    _close(du, d)
    mt, md = torch.nn.PixelShuffle(r), dg.nn.PixelShuffle(r)
    _close(md(d), mt(t))
    assert repr(md) == repr(mt)
    ut, ud = torch.nn.PixelUnshuffle(r), dg.nn.PixelUnshuffle(r)
    assert repr(ud) == repr(ut)
    _close(ud(do), ut(to))


def test_pixel_shuffle_errors():
    t = torch.randn(1, 8, 3, 3)
    d = _d(t)
    cases = [("pixel_shuffle", (t, 3)), ("pixel_shuffle", (t[0, 0], 2)),
             ("pixel_shuffle", (t, 0)), ("pixel_shuffle", (t, -1)), ("pixel_shuffle", (t, 2.0)),
             ("pixel_unshuffle", (t, 2)), ("pixel_unshuffle", (t[0, 0], 1)),
             ("pixel_unshuffle", (t, 0)), ("pixel_unshuffle", (torch.randn(1, 2, 4, 3), 2))]
    for name, (x, r) in cases:
        te = _err(lambda: getattr(TF, name)(x, r))
        de = _err(lambda: getattr(DF, name)(_d(x), r))
        assert te is not None and te == de, (name, x.shape, r)
    del d


# ---------------------------------------------------------------------------- DataParallel
def test_data_parallel_cpu():
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    dm = dg.nn.Sequential(dg.nn.Linear(3, 4), dg.nn.ReLU())
    _copy(tm, dm)
    tp, dp = torch.nn.DataParallel(tm), dg.nn.DataParallel(dm)
    assert dp.module is dm and dp.device_ids == tp.device_ids == []
    assert list(dp.state_dict()) == list(tp.state_dict()) == ["module.0.weight", "module.0.bias"]
    assert repr(dp) == repr(tp)
    x = torch.randn(5, 3, dtype=torch.float32)
    _close(dp(_d(x)), tp(x))
    for kw in (dict(device_ids=[0]), dict(device_ids=[0, 1], output_device=0),
               dict(device_ids=[5]), dict(output_device=1), dict(dim=1)):
        a, b = torch.nn.DataParallel(tm, **kw), dg.nn.DataParallel(dm, **kw)
        assert a.device_ids == b.device_ids
        assert hasattr(a, "output_device") == hasattr(b, "output_device")
    assert hasattr(dg.nn.parallel, "DataParallel")
    te = _err(lambda: torch.nn.parallel.data_parallel(tm, x))
    assert te == _err(lambda: dg.nn.parallel.data_parallel(dm, _d(x)))
    sd = dp.state_dict()
    dp2 = dg.nn.DataParallel(dg.nn.Sequential(dg.nn.Linear(3, 4), dg.nn.ReLU()))
    dp2.load_state_dict(sd)
    _close(dp2(_d(x)), tp(x))
