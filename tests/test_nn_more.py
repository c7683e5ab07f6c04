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


# ---------------------------------------------------------------------------- transformer
def _pair_modules(tcls, dcls, *a, **kw):
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tm = tcls(*a, **kw).double()
    tkw = dict(kw)
    if callable(kw.get("activation")) and not isinstance(kw["activation"], str):
        act = kw["activation"]
        tkw = dict(kw, activation=act)
        kw = dict(kw, activation=_ACT[act])
    with warnings.catch_warnings(record=True) as dw:
        warnings.simplefilter("always")
        dm = dcls(*a, **kw).double()
    assert [str(w.message) for w in dw] == [str(w.message) for w in tw]
    assert list(dm.state_dict()) == list(tm.state_dict())
    _copy(tm, dm)
    return tm, dm


_ACT = {TF.gelu: DF.gelu, TF.relu: DF.relu}


def _run_both(tm, dm, targs, kwargs_fn, train=False, grad=True):
    tm.train(train)
    dm.train(train)
    dargs = [_d(t, t.requires_grad) for t in targs]
    tkw, dkw = kwargs_fn(torch), kwargs_fn(None)
    if grad:
        to, do = tm(*targs, **tkw), dm(*dargs, **dkw)
    else:
        with torch.no_grad():
            to = tm(*targs, **tkw)
        with dg.no_grad():
            do = dm(*dargs, **dkw)
    _close(do, to)
    if not grad:
        return
    w = torch.randn(*to.shape, dtype=torch.float64)
    (to * w).sum().backward()
    (do * _d(w)).sum().backward()
    tp, dp = dict(tm.named_parameters()), dict(dm.named_parameters())
    assert list(tp) == list(dp)
    for k in tp:
        if tp[k].grad is None:
            assert dp[k].grad is None or not dp[k].grad.detach().numpy().any(), k
        else:
            _close(dp[k].grad, tp[k].grad)
    for t, d in zip(targs, dargs):
        if t.requires_grad:
            _close(d.grad, t.grad)


def _masks(lt, ls, b):
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(lt, dtype=torch.float64)
    kpm = torch.zeros(b, ls, dtype=torch.bool)
    kpm[0, -2:] = True
    tkpm = torch.zeros(b, lt, dtype=torch.bool)
    tkpm[1, -1] = True
    mem_mask = torch.zeros(lt, ls, dtype=torch.bool)
    mem_mask[0, 1] = True

    def kw(lib):
        conv = (lambda t: t) if lib is torch else _d
        return dict(tgt_mask=conv(tgt_mask), memory_mask=conv(mem_mask),
                    tgt_key_padding_mask=conv(tkpm), memory_key_padding_mask=conv(kpm))
    return kw


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", TF.gelu])
def test_decoder_layer(norm_first, batch_first, activation):
    tm, dm = _pair_modules(torch.nn.TransformerDecoderLayer, dg.nn.TransformerDecoderLayer, 8, 2,
                           16, dropout=0.0, activation=activation, batch_first=batch_first,
                           norm_first=norm_first)
    b, lt, ls = 2, 4, 5
    tgt = torch.randn(*((b, lt, 8) if batch_first else (lt, b, 8)), dtype=torch.float64,
                      requires_grad=True)
    mem = torch.randn(*((b, ls, 8) if batch_first else (ls, b, 8)), dtype=torch.float64,
                      requires_grad=True)
    _run_both(tm, dm, [tgt, mem], _masks(lt, ls, b), train=False)
    tm.zero_grad()
    dm.zero_grad()
    tgt.grad = mem.grad = None
    _run_both(tm, dm, [tgt, mem], lambda lib: {}, train=True)  # dropout 0.0 in train mode
    assert repr(dm) == repr(tm)


def test_decoder_and_transformer():
    tm, dm = _pair_modules(torch.nn.Transformer, dg.nn.Transformer, d_model=8, nhead=2,
                           num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16,
                           dropout=0.0)
    assert repr(dm) == repr(tm)
    assert [n for n, _ in dm.named_modules()] == [n for n, _ in tm.named_modules()]
    src = torch.randn(5, 2, 8, dtype=torch.float64, requires_grad=True)
    tgt = torch.randn(4, 2, 8, dtype=torch.float64, requires_grad=True)
    mk = _masks(4, 5, 2)

    def kw(lib):
        d = mk(lib)
        d["src_key_padding_mask"] = d["memory_key_padding_mask"]
        return d
    _run_both(tm, dm, [src, tgt], kw, train=False)
    _run_both(tm, dm, [src, tgt], kw, train=False, grad=False)
    tm.zero_grad()
    dm.zero_grad()
    src.grad = tgt.grad = None
    _run_both(tm, dm, [src, tgt], kw, train=True)
    m = dg.nn.Transformer.generate_square_subsequent_mask(4)
    _close(m, torch.nn.Transformer.generate_square_subsequent_mask(4))
    assert m.dtype == dg.float32
    for bad in ([torch.randn(5, 3, 8), torch.randn(4, 2, 8)], [torch.randn(5, 2, 6),
                                                                torch.randn(4, 2, 6)]):
        te = _err(lambda: tm(*(b.double() for b in bad)))
        assert te is not None and te == _err(lambda: dm(*(_d(b.double()) for b in bad)))
    # stand-alone decoder with a final norm, batch_first
    tl, dl = _pair_modules(torch.nn.TransformerDecoderLayer, dg.nn.TransformerDecoderLayer, 8, 4,
                           12, dropout=0.0, batch_first=True, norm_first=True)
    td = torch.nn.TransformerDecoder(tl, 3, norm=torch.nn.LayerNorm(8)).double()
    dd = dg.nn.TransformerDecoder(dl, 3, norm=dg.nn.LayerNorm(8)).double()
    assert list(dd.state_dict()) == list(td.state_dict())
    _copy(td, dd)
    assert repr(dd) == repr(td)
    tgt = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    mem = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    _run_both(td, dd, [tgt, mem], lambda lib: dict(
        tgt_mask=(torch if lib is torch else dg).nn.Transformer.generate_square_subsequent_mask(
            4, dtype=(torch if lib is torch else dg).float64), tgt_is_causal=True))


@pytest.mark.parametrize("batch_first,nhead", [(True, 2), (False, 2), (True, 1)])
def test_encoder_nested_fast_path(batch_first, nhead):
    """PyTorch's eval fast path under no_grad zeroes padded positions before the final norm."""
    tl, dl = _pair_modules(torch.nn.TransformerEncoderLayer, dg.nn.TransformerEncoderLayer, 8,
                           nhead, 16, dropout=0.0, batch_first=batch_first)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8).double())
    with warnings.catch_warnings(record=True) as dw:
        warnings.simplefilter("always")
        dm = dg.nn.TransformerEncoder(dl, 2, norm=dg.nn.LayerNorm(8).double())
    assert [str(w.message) for w in dw] == [str(w.message) for w in tw]
    assert [w.filename for w in dw] == [__file__] * len(dw)
    _copy(tm, dm)
    assert repr(dm) == repr(tm)
    assert dm.use_nested_tensor == tm.use_nested_tensor
    x = torch.randn(*((2, 5, 8) if batch_first else (5, 2, 8)), dtype=torch.float64,
                    requires_grad=True)
    kpm = torch.zeros(2, 5, dtype=torch.bool)
    kpm[0, 3:] = True

    def kw(lib):
        return dict(src_key_padding_mask=kpm if lib is torch else _d(kpm))
    _run_both(tm, dm, [x], kw, train=False, grad=False)
    _run_both(tm, dm, [x], kw, train=False, grad=True)


def test_activation_module_and_errors():
    tm, dm = _pair_modules(torch.nn.TransformerEncoderLayer, dg.nn.TransformerEncoderLayer, 8,
                           2, 16, dropout=0.0)
    assert dm.activation_relu_or_gelu == tm.activation_relu_or_gelu == 1
    t2 = torch.nn.TransformerDecoderLayer(8, 2, activation=torch.nn.GELU())
    d2 = dg.nn.TransformerDecoderLayer(8, 2, activation=dg.nn.GELU())
    assert repr(d2) == repr(t2)
    e3 = dg.nn.TransformerEncoderLayer(8, 2, activation=dg.nn.GELU())
    assert e3.activation_relu_or_gelu == 2
    for cls in ("TransformerEncoderLayer", "TransformerDecoderLayer"):
        te = _err(lambda: getattr(torch.nn, cls)(8, 2, activation="tanh"))
        assert te is not None and te == _err(lambda: getattr(dg.nn, cls)(8, 2, activation="tanh"))


def test_mha_without_weights_uses_sdpa():
    """need_weights=False goes through scaled_dot_product_attention as PyTorch's: a batch whose
    keys are all padded gives the output projection's bias, not NaN."""
    torch.manual_seed(3)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    dm = dg.nn.MultiheadAttention(8, 2, batch_first=True).double()
    _copy(tm, dm)
    x = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    kpm = torch.zeros(2, 4, dtype=torch.bool)
    kpm[1] = True
    for need in (False, True):
        xd = _d(x, True)
        to = tm(x, x, x, key_padding_mask=kpm, need_weights=need)[0]
        do = dm(xd, xd, xd, key_padding_mask=_d(kpm), need_weights=need)[0]
        if need:
            _close(do[0], to[0])
            continue
        _close(do, to)
        to[0].sum().backward()
        do[0].sum().backward()
        _close(xd.grad, x.grad)
        x.grad = None
