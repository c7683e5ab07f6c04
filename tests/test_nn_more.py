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
    dm.load_state_dict({k: dg.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})


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
    q6 = torch.randn(2, 6, 4, 8, dtype=torch.float64)
    for kh, vh in ((4, 4), (3, 4), (2, 3)):
        k2 = torch.randn(2, kh, 5, 8, dtype=torch.float64)
        v2 = torch.randn(2, vh, 5, 8, dtype=torch.float64)
        te = _err(lambda: TF.scaled_dot_product_attention(q6, k2, v2, enable_gqa=True))
        assert te == _err(lambda: DF.scaled_dot_product_attention(_d(q6), _d(k2), _d(v2),
                                                                  enable_gqa=True))
        if te is None:
            _sdpa_pair((2, 6, 4, 8), (2, kh, 5, 8), (2, vh, 5, 8), enable_gqa=True)
    te = _err(lambda: TF.scaled_dot_product_attention(q[0, 0], k[0, 0], v[0, 0], enable_gqa=True))
    assert te == _err(lambda: DF.scaled_dot_product_attention(dq[0, 0], dk[0, 0], dv[0, 0],
                                                              enable_gqa=True))


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
    if callable(kw.get("activation")) and not isinstance(kw["activation"], str):
        kw = dict(kw, activation=_ACT[kw["activation"]])
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


# ---------------------------------------------------------------------------- parametrize
TP = torch.nn.utils.parametrize
DP = dg.nn.utils.parametrize
TPZ = torch.nn.utils.parametrizations
DPZ = dg.nn.utils.parametrizations


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()
    return Symmetric


def _linear_pair(i=3, o=3, seed=0, cls="Linear"):
    torch.manual_seed(seed)
    tm = getattr(torch.nn, cls)(i, o).double()
    dm = getattr(dg.nn, cls)(i, o).double()
    _copy(tm, dm)
    return tm, dm


def _grads_equal(tm, dm, x):
    tm.zero_grad()
    dm.zero_grad()
    to, do = tm(x), dm(_d(x))
    _close(do, to)
    w = torch.randn(*to.shape, dtype=torch.float64)
    (to * w).sum().backward()
    (do * _d(w)).sum().backward()
    tp, dp = dict(tm.named_parameters()), dict(dm.named_parameters())
    assert list(tp) == list(dp)
    for k in tp:
        _close(dp[k].grad, tp[k].grad)


def test_register_parametrization_basics():
    tm, dm = _linear_pair()
    TP.register_parametrization(tm, "weight", _symmetric(torch)())
    DP.register_parametrization(dm, "weight", _symmetric(dg)())
    assert type(dm).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert isinstance(dm, dg.nn.Linear)
    assert repr(dm) == repr(tm)
    assert list(dm.state_dict()) == list(tm.state_dict()) == ["bias",
                                                            "parametrizations.weight.original"]
    assert [n for n, _ in dm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _close(dm.parametrizations.weight.original, tm.parametrizations.weight.original)
    _close(dm.weight, tm.weight)
    assert DP.is_parametrized(dm) and DP.is_parametrized(dm, "weight")
    assert not DP.is_parametrized(dm, "bias")
    assert DP.type_before_parametrizations(dm) is dg.nn.Linear
    x = torch.randn(4, 3, dtype=torch.float64)
    _grads_equal(tm, dm, x)
    # assigning goes through right_inverse
    a = torch.randn(3, 3, dtype=torch.float64)
    with torch.no_grad():
        tm.weight = a
    with dg.no_grad():
        dm.weight = _d(a)
    _close(dm.parametrizations.weight.original, tm.parametrizations.weight.original)
    _close(dm.weight, tm.weight)
    # cached: one evaluation inside the context
    calls = []

    class Count(dg.nn.Module):
        def forward(self, X):
            calls.append(1)
            return X
    DP.register_parametrization(dm, "bias", Count())
    with DP.cached():
        dm.bias
        dm.bias
    assert len(calls) == 1 + 1  # one at registration (the checks), one in the context
    dm.bias
    assert len(calls) == 3
    DP.remove_parametrizations(dm, "bias")
    # chained parametrizations
    TP.register_parametrization(tm, "weight", _symmetric(torch)())
    DP.register_parametrization(dm, "weight", _symmetric(dg)())
    assert repr(dm) == repr(tm)
    _close(dm.weight, tm.weight)
    # remove, keeping the parametrized value or the original
    t2, d2 = _linear_pair(seed=1)
    TP.register_parametrization(t2, "weight", _symmetric(torch)())
    DP.register_parametrization(d2, "weight", _symmetric(dg)())
    orig = d2.parametrizations.weight.original
    TP.remove_parametrizations(t2, "weight", leave_parametrized=False)
    DP.remove_parametrizations(d2, "weight", leave_parametrized=False)
    assert type(d2) is dg.nn.Linear and d2.weight is orig
    assert isinstance(d2.weight, dg.nn.Parameter)
    _close(d2.weight, t2.weight)
    TP.remove_parametrizations(tm, "weight")
    DP.remove_parametrizations(dm, "weight")
    assert type(dm) is dg.nn.Linear and not hasattr(dm, "parametrizations")
    assert list(dm.state_dict()) == list(tm.state_dict()) == ["bias", "weight"]
    _close(dm.weight, tm.weight)
    _grads_equal(tm, dm, x)


def test_parametrize_errors_and_unsafe():
    class Shrink:
        def __init__(self, lib):
            class S(lib.nn.Module):
                def forward(self, X):
                    return X[:2]
            self.cls = S

    for unsafe in (False, True):
        tm, dm = _linear_pair()
        te = _err(lambda: TP.register_parametrization(tm, "weight", Shrink(torch).cls(),
                                                      unsafe=unsafe))
        de = _err(lambda: DP.register_parametrization(dm, "weight", Shrink(dg).cls(),
                                                      unsafe=unsafe))
        assert te == de
        if unsafe:
            assert te is None and dm.weight.shape == tm.weight.shape == (2, 3)
        else:
            assert te[0] == "ValueError"
    tm, dm = _linear_pair()
    te = _err(lambda: TP.register_parametrization(tm, "nope", _symmetric(torch)()))
    de = _err(lambda: DP.register_parametrization(dm, "nope", _symmetric(dg)()))
    assert te[0] == de[0] == "ValueError" and "with name 'nope'" in de[1]
    te = _err(lambda: TP.remove_parametrizations(tm, "weight"))
    de = _err(lambda: DP.remove_parametrizations(dm, "weight"))
    assert te[0] == de[0] == "ValueError" and de[1].endswith("does not have a parametrization "
                                                             "on weight")
    TP.register_parametrization(tm, "weight", _symmetric(torch)())
    DP.register_parametrization(dm, "weight", _symmetric(dg)())
    te = _err(lambda: setattr(tm, "weight", torch.nn.Parameter(torch.zeros(3, 3))))
    de = _err(lambda: setattr(dm, "weight", dg.nn.Parameter(dg.zeros(3, 3))))
    assert te == de and te[0] == "KeyError"


@pytest.mark.parametrize("omap,shape,triv", [
    (None, (4, 4), True), ("matrix_exp", (5, 3), True), ("cayley", (4, 4), True),
    ("cayley", (3, 5), True), ("householder", (5, 3), True), (None, (3, 5), True),
    ("householder", (5, 3), False), ("householder", (4, 4), False)])
def test_orthogonal(omap, shape, triv):
    tm, dm = _linear_pair(shape[1], shape[0], seed=2)
    TPZ.orthogonal(tm, orthogonal_map=omap, use_trivialization=triv)
    DPZ.orthogonal(dm, orthogonal_map=omap, use_trivialization=triv)
    assert repr(dm) == repr(tm)
    assert list(dm.state_dict()) == list(tm.state_dict())
    if not triv or shape[0] == shape[1]:  # no random completion: the same from the same weight
        _close(dm.parametrizations.weight.original, tm.parametrizations.weight.original)
        _close(dm.weight, tm.weight)
    w = dm.weight.detach().numpy()
    small = min(shape)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-10)
    # a generic point of the parametrization: values and gradients
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        o = tm.parametrizations.weight.original
        o.copy_(o + 0.3 * torch.randn(*o.shape, generator=g, dtype=torch.float64))
    _copy(tm, dm)
    _close(dm.weight, tm.weight)
    x = torch.randn(6, shape[1], dtype=torch.float64)
    _grads_equal(tm, dm, x)
    # assigning an orthogonal matrix
    if triv or omap == "householder":
        q = torch.linalg.qr(torch.randn(max(shape), min(shape), dtype=torch.float64))[0]
        q = q if shape[0] >= shape[1] else q.T
        with torch.no_grad():
            tm.weight = q
        with dg.no_grad():
            dm.weight = _d(q)
        if not triv or shape[0] == shape[1]:
            _close(dm.weight, tm.weight)
            _close(dm.state_dict()["parametrizations.weight.original"],
                   tm.state_dict()["parametrizations.weight.original"])
        _close(dm.weight, q, atol=1e-10)


def test_orthogonal_matrix_exp_large_norm_and_errors():
    tm, dm = _linear_pair(4, 4, seed=3)
    TPZ.orthogonal(tm, orthogonal_map="matrix_exp")
    DPZ.orthogonal(dm, orthogonal_map="matrix_exp")
    with torch.no_grad():
        tm.parametrizations.weight.original.mul_(0).add_(
            5 * torch.randn(4, 4, dtype=torch.float64))
    _copy(tm, dm)
    _close(dm.weight, tm.weight)
    _grads_equal(tm, dm, torch.randn(3, 4, dtype=torch.float64))
    for kw in (dict(orthogonal_map="qr"), dict(name="bias"), dict(name="nope")):
        tm, dm = _linear_pair(4, 4)
        te = _err(lambda: TPZ.orthogonal(tm, **kw))
        de = _err(lambda: DPZ.orthogonal(dm, **kw))
        assert te[0] == de[0] and te[1].split("'")[0] == de[1].split("'")[0]
    tm, dm = _linear_pair(4, 4)
    TPZ.orthogonal(tm, orthogonal_map="cayley", use_trivialization=False)
    DPZ.orthogonal(dm, orthogonal_map="cayley", use_trivialization=False)
    te = _err(lambda: setattr(tm, "weight", torch.eye(4, dtype=torch.float64)))
    de = _err(lambda: setattr(dm, "weight", dg.eye(4, dtype=dg.float64)))
    assert te == de and te[0] == "NotImplementedError"


@pytest.mark.parametrize("dim", [0, 1, None, -1])
def test_weight_norm(dim):
    tm, dm = _linear_pair(3, 5, seed=4)
    TPZ.weight_norm(tm, dim=dim)
    DPZ.weight_norm(dm, dim=dim)
    assert repr(dm) == repr(tm)
    sd_t, sd_d = tm.state_dict(), dm.state_dict()
    assert list(sd_d) == list(sd_t) == ["bias", "parametrizations.weight.original0",
                                        "parametrizations.weight.original1"]
    for k in sd_t:
        _close(sd_d[k], sd_t[k])
    _close(dm.weight, tm.weight)
    with torch.no_grad():
        tm.parametrizations.weight.original0.mul_(1.7)
    _copy(tm, dm)
    _grads_equal(tm, dm, torch.randn(4, 3, dtype=torch.float64))
    TP.remove_parametrizations(tm, "weight")
    DP.remove_parametrizations(dm, "weight")
    _close(dm.weight, tm.weight)
    assert isinstance(dm.weight, dg.nn.Parameter)


def test_weight_norm_conv():
    torch.manual_seed(0)
    tm = torch.nn.Conv2d(2, 3, 3).double()
    dm = dg.nn.Conv2d(2, 3, 3).double()
    _copy(tm, dm)
    TPZ.weight_norm(tm)
    DPZ.weight_norm(dm)
    _copy(tm, dm)
    _grads_equal(tm, dm, torch.randn(1, 2, 5, 5, dtype=torch.float64))


@pytest.mark.parametrize("cls,shape,dim", [("Linear", (3, 5), None), ("Linear", (6, 2), 1),
                                           ("Conv2d", (2, 3), None),
                                           ("ConvTranspose2d", (2, 3), None)])
def test_spectral_norm(cls, shape, dim):
    torch.manual_seed(0)
    args = shape if cls == "Linear" else shape + (3,)
    tm = getattr(torch.nn, cls)(*args).double()
    dm = getattr(dg.nn, cls)(*args).double()
    _copy(tm, dm)
    TPZ.spectral_norm(tm, dim=dim, n_power_iterations=2)
    DPZ.spectral_norm(dm, dim=dim, n_power_iterations=2)
    assert repr(dm) == repr(tm)
    assert list(dm.state_dict()) == list(tm.state_dict())
    sd = dm.state_dict()
    assert sd["parametrizations.weight.0._u"].shape == tm.state_dict()[
        "parametrizations.weight.0._u"].shape
    # dyngrad's own power iteration converged to the same top singular value
    wd = dm.parametrizations.weight.original.detach().numpy()
    ax = dm.parametrizations.weight[0].dim
    mat = np.moveaxis(wd, ax, 0).reshape(wd.shape[ax], -1)
    _copy(tm, dm)
    x = torch.randn(2, *((shape[0],) if cls == "Linear" else (shape[0], 5, 5)),
                    dtype=torch.float64)
    for train in (True, False):
        tm.train(train)
        dm.train(train)
        _grads_equal(tm, dm, x)
        for k in ("parametrizations.weight.0._u", "parametrizations.weight.0._v"):
            _close(dm.state_dict()[k], tm.state_dict()[k])
    tm.eval()
    dm.eval()
    sv = np.linalg.svd(mat, compute_uv=False)[0]
    for _ in range(3):
        dm.train()
        dm.weight
    dm.eval()
    np.testing.assert_allclose(np.linalg.svd(
        np.moveaxis(dm.weight.detach().numpy(), ax, 0).reshape(mat.shape[0], -1),
        compute_uv=False)[0], 1.0, rtol=1e-3)
    assert sv > 0


def test_spectral_norm_uses_dyngrad_rng_and_errors():
    dg.manual_seed(11)
    a = DPZ.spectral_norm(dg.nn.Linear(3, 4))
    dg.manual_seed(11)
    b = DPZ.spectral_norm(dg.nn.Linear(3, 4))
    _close(a.parametrizations.weight[0]._u, b.parametrizations.weight[0]._u, atol=0)
    for kw in (dict(dim=3), dict(n_power_iterations=0), dict(name="nope")):
        te = _err(lambda: TPZ.spectral_norm(torch.nn.Linear(3, 4), **kw))
        de = _err(lambda: DPZ.spectral_norm(dg.nn.Linear(3, 4), **kw))
        assert te[0] == de[0] and te[1].split("'")[0] == de[1].split("'")[0]


# ---------------------------------------------------------------------------- prune
TPR = pytest.importorskip("torch.nn.utils.prune")
DPR = dg.nn.utils.prune


def _conv_pair(seed=0):
    torch.manual_seed(seed)
    tm = torch.nn.Conv2d(3, 6, 3).double()
    dm = dg.nn.Conv2d(3, 6, 3).double()
    _copy(tm, dm)
    return tm, dm


def _same_pruned(tm, dm, name="weight"):
    assert list(dm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in dm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in dm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    _close(getattr(dm, name + "_mask"), getattr(tm, name + "_mask"), atol=0)
    _close(getattr(dm, name), getattr(tm, name))
    assert not isinstance(getattr(dm, name), dg.nn.Parameter)


@pytest.mark.parametrize("how", ["l1_int", "l1_float", "ln2_0", "ln1_1", "lninf_0", "ln3_m1",
                                 "identity", "custom", "l1_scores", "ln_scores"])
def test_prune_deterministic_methods(how):
    tm, dm = _conv_pair()
    g = torch.Generator().manual_seed(9)
    scores = torch.rand(6, 3, 3, 3, generator=g, dtype=torch.float64)
    cmask = (torch.rand(6, 3, 3, 3, generator=g) > 0.5).double()
    calls = {
        "l1_int": lambda P, m, c: P.l1_unstructured(m, "weight", amount=20),
        "l1_float": lambda P, m, c: P.l1_unstructured(m, "weight", amount=0.3),
        "ln2_0": lambda P, m, c: P.ln_structured(m, "weight", amount=0.5, n=2, dim=0),
        "ln1_1": lambda P, m, c: P.ln_structured(m, "weight", amount=1, n=1, dim=1),
        "lninf_0": lambda P, m, c: P.ln_structured(m, "weight", amount=2, n=float("inf"), dim=0),
        "ln3_m1": lambda P, m, c: P.ln_structured(m, "weight", amount=1, n=3, dim=-1),
        "identity": lambda P, m, c: P.identity(m, "weight"),
        "custom": lambda P, m, c: P.custom_from_mask(m, "weight", mask=c(cmask)),
        "l1_scores": lambda P, m, c: P.l1_unstructured(m, "weight", amount=0.4,
                                                       importance_scores=c(scores)),
        "ln_scores": lambda P, m, c: P.ln_structured(m, "weight", amount=2, n=2, dim=0,
                                                     importance_scores=c(scores)),
    }[how]
    r_t = calls(TPR, tm, lambda t: t)
    r_d = calls(DPR, dm, _d)
    assert r_d is dm and r_t is tm
    _same_pruned(tm, dm)
    assert DPR.is_pruned(dm) and TPR.is_pruned(tm)
    assert repr(dm) == repr(tm)
    # the forward pre-hook recomputes weight from weight_orig: gradients flow to weight_orig
    x = torch.randn(2, 3, 5, 5, dtype=torch.float64)
    _grads_equal(tm, dm, x)
    # an optimiser step on weight_orig keeps the pruned entries at zero in the forward
    with torch.no_grad():
        tm.weight_orig.add_(1.0)
    with dg.no_grad():
        dm.weight_orig.add_(1.0)
    _close(dm(_d(x)), tm(x))
    _close(dm.weight, tm.weight)
    # iterative pruning: a container
    TPR.l1_unstructured(tm, "weight", amount=5)
    DPR.l1_unstructured(dm, "weight", amount=5)
    _same_pruned(tm, dm)
    assert type(dm._forward_pre_hooks[next(iter(dm._forward_pre_hooks))]).__name__ == \
        "PruningContainer"
    TPR.ln_structured(tm, "weight", amount=1, n=2, dim=0)
    DPR.ln_structured(dm, "weight", amount=1, n=2, dim=0)
    _same_pruned(tm, dm)
    TPR.remove(tm, "weight")
    DPR.remove(dm, "weight")
    assert not DPR.is_pruned(dm)
    assert list(dm.state_dict()) == list(tm.state_dict())
    assert isinstance(dm.weight, dg.nn.Parameter)
    _close(dm.weight, tm.weight)
    _grads_equal(tm, dm, x)


def test_prune_random_methods():
    dm = dg.nn.Linear(10, 8)
    dg.manual_seed(3)
    DPR.random_unstructured(dm, "weight", amount=0.3)
    m1 = dm.weight_mask.numpy().copy()
    assert m1.sum() == 80 - 24
    assert np.all(dm.weight.detach().numpy()[m1 == 0] == 0)
    d2 = dg.nn.Linear(10, 8)
    dg.manual_seed(3)
    DPR.random_unstructured(d2, "weight", amount=0.3)
    np.testing.assert_array_equal(d2.weight_mask.numpy(), m1)  # dyngrad's generator
    d3 = dg.nn.Linear(10, 8)
    DPR.random_structured(d3, "weight", amount=3, dim=0)
    rows = d3.weight_mask.numpy().sum(1)
    assert sorted(rows.tolist()) == [0] * 3 + [10] * 5
    DPR.random_structured(d3, "weight", amount=0.5, dim=1)
    m = d3.weight_mask.numpy()
    assert (m.sum(1) > 0).sum() == 5 and (m.sum(0) > 0).sum() == 5
    y = d3(dg.randn(2, 10))
    y.sum().backward()
    assert np.all(d3.weight_orig.grad.numpy()[m == 0] == 0)
    DPR.random_unstructured(d3, "bias", amount=2)
    assert d3.bias_mask.numpy().sum() == 6
    assert [n for n, _ in d3.named_buffers()] == ["weight_mask", "bias_mask"]


def test_global_unstructured():
    torch.manual_seed(0)
    tmods = [torch.nn.Linear(4, 5).double(), torch.nn.Conv2d(2, 3, 2).double()]
    dmods = [dg.nn.Linear(4, 5).double(), dg.nn.Conv2d(2, 3, 2).double()]
    for t, d in zip(tmods, dmods):
        _copy(t, d)
    TPR.l1_unstructured(tmods[0], "bias", amount=2)
    DPR.l1_unstructured(dmods[0], "bias", amount=2)
    tparams = [(tmods[0], "weight"), (tmods[0], "bias"), (tmods[1], "weight")]
    dparams = [(dmods[0], "weight"), (dmods[0], "bias"), (dmods[1], "weight")]
    TPR.global_unstructured(tparams, pruning_method=TPR.L1Unstructured, amount=0.4)
    DPR.global_unstructured(dparams, pruning_method=DPR.L1Unstructured, amount=0.4)
    for (t, n), (d, _) in zip(tparams, dparams):
        _same_pruned(t, d, n)
    total = sum(d.__getattr__(n + "_mask").numpy().size for d, n in dparams)
    kept = sum(d.__getattr__(n + "_mask").numpy().sum() for d, n in dparams)
    assert total - kept == 2 + round(0.4 * (total - 2))  # 40% of what the bias mask kept
    dg.manual_seed(0)
    d = dg.nn.Linear(6, 6)
    DPR.global_unstructured([(d, "weight")], pruning_method=DPR.RandomUnstructured, amount=10)
    assert d.weight_mask.numpy().sum() == 26


def test_prune_errors():
    for args in ((1.5,), (-1,), ("a",)):
        te = _err(lambda: TPR.l1_unstructured(torch.nn.Linear(3, 3), "weight", *args))
        de = _err(lambda: DPR.l1_unstructured(dg.nn.Linear(3, 3), "weight", *args))
        assert te == de and te is not None
    te = _err(lambda: TPR.l1_unstructured(torch.nn.Linear(3, 3), "weight", 10))
    de = _err(lambda: DPR.l1_unstructured(dg.nn.Linear(3, 3), "weight", 10))
    assert te == de and te[0] == "ValueError"
    tm, dm = torch.nn.Linear(3, 3), dg.nn.Linear(3, 3)
    te = _err(lambda: TPR.ln_structured(tm, "bias", 1, n=2, dim=0))
    de = _err(lambda: DPR.ln_structured(dm, "bias", 1, n=2, dim=0))
    assert te == de and te[0] == "ValueError"
    assert list(dm.state_dict()) == list(tm.state_dict())  # undone after the error
    te = _err(lambda: TPR.ln_structured(tm, "weight", 1, n=2, dim=2))
    de = _err(lambda: DPR.ln_structured(dm, "weight", 1, n=2, dim=2))
    assert te == de and te[0] == "IndexError"
    te = _err(lambda: TPR.ln_structured(torch.nn.Conv2d(2, 2, 2), "weight", 1, n="fro", dim=0))
    de = _err(lambda: DPR.ln_structured(dg.nn.Conv2d(2, 2, 2), "weight", 1, n="fro", dim=0))
    assert te == de and te[0] == "RuntimeError"
    te = _err(lambda: TPR.remove(tm, "weight"))
    de = _err(lambda: DPR.remove(dm, "weight"))
    assert te[0] == de[0] == "ValueError" and te[1].split("module")[0] == de[1].split("module")[0]
    te = _err(lambda: TPR.global_unstructured([(tm, "weight")], TPR.LnStructured, amount=1, n=1))
    de = _err(lambda: DPR.global_unstructured([(dm, "weight")], DPR.LnStructured, amount=1, n=1))
    assert te[0] == de[0] == "TypeError"


# ---------------------------------------------------------------------------- checkpoint
TCP = pytest.importorskip("torch.utils.checkpoint")


def _ckpt_setup():
    torch.manual_seed(0)
    tm = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 4),
                             torch.nn.GELU(), torch.nn.Linear(4, 3)).double()
    dm = dg.nn.Sequential(dg.nn.Linear(4, 6), dg.nn.Tanh(), dg.nn.Linear(6, 4), dg.nn.GELU(),
                          dg.nn.Linear(4, 3)).double()
    _copy(tm, dm)
    return tm, dm


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_values_grads_and_recompute(reentrant):
    from dyngrad.utils.checkpoint import checkpoint
    tm, dm = _ckpt_setup()
    calls = []

    def dfn(a, b):
        calls.append(1)
        return dm(a) * b.sum()

    def tfn(a, b):
        return tm(a) * b.sum()
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    s = torch.randn(2, dtype=torch.float64, requires_grad=True)
    dx, ds = _d(x, True), _d(s, True)
    to = TCP.checkpoint(tfn, x, s, use_reentrant=reentrant)
    do = checkpoint(dfn, dx, ds, use_reentrant=reentrant)
    assert len(calls) == 1
    assert do.requires_grad and to.requires_grad
    _close(do, to)
    w = torch.randn(5, 3, dtype=torch.float64)
    (to * w).sum().backward()
    (do * _d(w)).sum().backward()
    assert len(calls) == 2  # recomputed once in backward
    _close(dx.grad, x.grad)
    _close(ds.grad, s.grad)
    for (n, p), (_, q) in zip(tm.named_parameters(), dm.named_parameters()):
        _close(q.grad, p.grad)
    # the same as without checkpointing
    grads = [p.grad.numpy().copy() for p in dm.parameters()]
    dm.zero_grad()
    dx2, ds2 = _d(x, True), _d(s, True)
    (dfn(dx2, ds2) * _d(w)).sum().backward()
    _close(dx2.grad, dx.grad)
    for g, p in zip(grads, dm.parameters()):
        _close(p.grad, g)


def test_checkpoint_forward_is_no_grad_when_reentrant():
    from dyngrad.utils.checkpoint import checkpoint
    seen = []

    def fn(a):
        seen.append(dg.is_grad_enabled())
        return a.exp()
    x = dg.randn(3, requires_grad=True)
    y = checkpoint(fn, x, use_reentrant=True)
    y.sum().backward()
    assert seen == [False, True]
    _close(x.grad, x.exp())


@pytest.mark.parametrize("reentrant", [True, False])
def test_checkpoint_preserves_rng(reentrant):
    from dyngrad.utils.checkpoint import checkpoint
    drop = dg.nn.Dropout(0.5)
    lin = dg.nn.Linear(8, 8).double()

    def fn(a):
        return lin(drop(a)).sin()
    x = dg.randn(4, 8, dtype=dg.float64, requires_grad=True)
    dg.manual_seed(5)
    ref = fn(x)
    ref.sum().backward()
    gref, wref = x.grad.numpy().copy(), lin.weight.grad.numpy().copy()
    x.grad = None
    lin.zero_grad()
    dg.manual_seed(5)
    y = checkpoint(fn, x, use_reentrant=reentrant)
    after = dg.get_rng_state()
    _close(y, ref, atol=0)
    y.sum().backward()
    _close(x.grad, gref)
    _close(lin.weight.grad, wref)
    assert np.array_equal(np.asarray(dg.get_rng_state()), np.asarray(after))  # restored
    # without preserving, the recomputation draws a new mask: gradients differ
    x.grad = None
    lin.zero_grad()
    dg.manual_seed(5)
    y = checkpoint(fn, x, use_reentrant=reentrant, preserve_rng_state=False)
    y.sum().backward()
    assert not np.allclose(x.grad.numpy(), gref)


def test_checkpoint_warnings_and_errors():
    from dyngrad.utils import checkpoint as DCP
    lin_t, lin_d = torch.nn.Linear(3, 3), dg.nn.Linear(3, 3)
    a = torch.randn(2, 3, requires_grad=True)
    da = _d(a, True)

    def msgs(fn):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn()
        return [(x.category, str(x.message)) for x in w]
    tw = msgs(lambda: TCP.checkpoint(lin_t, a))
    dw = msgs(lambda: DCP.checkpoint(lin_d, da))
    assert tw == dw and len(tw) == 1
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        DCP.checkpoint(lin_d, da)
    assert w[0].filename == __file__
    assert msgs(lambda: TCP.checkpoint(lin_t, a.detach(), use_reentrant=True)) == \
        msgs(lambda: DCP.checkpoint(lin_d, da.detach(), use_reentrant=True))
    y = DCP.checkpoint(lin_d, da.detach(), use_reentrant=True)
    assert not y.requires_grad  # parameters get no gradient through the reentrant variant
    assert DCP.checkpoint(lin_d, da.detach(), use_reentrant=False).requires_grad
    te = _err(lambda: TCP.checkpoint(lin_t, a, use_reentrant=True, foo=1))
    assert te == _err(lambda: DCP.checkpoint(lin_d, da, use_reentrant=True, foo=1))
    te = _err(lambda: TCP.checkpoint(lin_t, a, use_reentrant=True, debug=True))
    assert te == _err(lambda: DCP.checkpoint(lin_d, da, use_reentrant=True, debug=True))
    # keyword arguments go to the function without reentrancy
    out = DCP.checkpoint(lambda x, k=1.0: x * k, da, use_reentrant=False, k=3.0)
    _close(out, da * 3.0)
    # autograd.grad: refused by the reentrant variant, fine without
    y = DCP.checkpoint(lambda x: (x * x).sum(), da, use_reentrant=True)
    ty = TCP.checkpoint(lambda x: (x * x).sum(), a, use_reentrant=True)
    te = _err(lambda: torch.autograd.grad(ty, a))
    assert te == _err(lambda: dg.autograd.grad(y, da)) and te[0] == "RuntimeError"
    y = DCP.checkpoint(lambda x: (x * x).sum(), da, use_reentrant=False)
    _close(dg.autograd.grad(y, da)[0], 2 * da)
    tw = msgs(lambda: TCP.checkpoint_sequential(torch.nn.Sequential(torch.nn.Linear(3, 3)), 1, a))
    dw = msgs(lambda: DCP.checkpoint_sequential(dg.nn.Sequential(dg.nn.Linear(3, 3)), 1, da))
    assert tw == dw and len(tw) == 1
    te = _err(lambda: TCP.checkpoint_sequential([lin_t], 1, a, use_reentrant=True, foo=2))
    assert te == _err(lambda: DCP.checkpoint_sequential([lin_d], 1, da, use_reentrant=True,
                                                        foo=2))


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential(reentrant, segments):
    from dyngrad.utils.checkpoint import checkpoint_sequential
    tm, dm = _ckpt_setup()
    calls = []
    dm[1].register_forward_hook(lambda m, i, o: calls.append(1))
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    dx = _d(x, True)
    to = TCP.checkpoint_sequential(tm, segments, x, use_reentrant=reentrant)
    do = checkpoint_sequential(dm, segments, dx, use_reentrant=reentrant)
    _close(do, to)
    to.sum().backward()
    do.sum().backward()
    _close(dx.grad, x.grad)
    for p, q in zip(tm.parameters(), dm.parameters()):
        _close(q.grad, p.grad)
    # the Tanh at index 1 is in the first segment: checkpointed (run twice) unless one segment
    assert len(calls) == (1 if segments == 1 else 2)


# ---------------------------------------------------------------------------- hook-based norms
@pytest.mark.parametrize("dim", [0, 1, None])
def test_hook_weight_norm(dim):
    tm, dm = _linear_pair(3, 5, seed=6)
    with warnings.catch_warnings(record=True) as tw:
        warnings.simplefilter("always")
        torch.nn.utils.weight_norm(tm, dim=dim)
    with warnings.catch_warnings(record=True) as dw:
        warnings.simplefilter("always")
        dg.nn.utils.weight_norm(dm, dim=dim)
    assert [(w.category, str(w.message)) for w in dw] == \
        [(w.category, str(w.message)) for w in tw]
    assert list(dm.state_dict()) == list(tm.state_dict()) == ["bias", "weight_g", "weight_v"]
    for k, v in tm.state_dict().items():
        _close(dm.state_dict()[k], v)
    with torch.no_grad():
        tm.weight_g.mul_(1.5)
    _copy(tm, dm)
    _grads_equal(tm, dm, torch.randn(4, 3, dtype=torch.float64))
    te = _err(lambda: torch.nn.utils.weight_norm(tm, dim=dim))
    assert te == _err(lambda: dg.nn.utils.weight_norm(dm, dim=dim))
    torch.nn.utils.remove_weight_norm(tm)
    dg.nn.utils.remove_weight_norm(dm)
    assert list(dm.state_dict()) == list(tm.state_dict())
    _close(dm.weight, tm.weight)
    assert isinstance(dm.weight, dg.nn.Parameter)
    te = _err(lambda: torch.nn.utils.remove_weight_norm(tm))
    de = _err(lambda: dg.nn.utils.remove_weight_norm(dm))
    assert te[0] == de[0] == "ValueError" and te[1].split(" in ")[0] == de[1].split(" in ")[0]


@pytest.mark.parametrize("cls,args", [("Linear", (3, 5)), ("Conv2d", (2, 3, 3)),
                                      ("ConvTranspose2d", (2, 3, 3))])
def test_hook_spectral_norm(cls, args):
    torch.manual_seed(1)
    tm = getattr(torch.nn, cls)(*args).double()
    dm = getattr(dg.nn, cls)(*args).double()
    _copy(tm, dm)
    torch.nn.utils.spectral_norm(tm, n_power_iterations=2)
    dg.nn.utils.spectral_norm(dm, n_power_iterations=2)
    assert list(dm.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in dm.named_buffers()] == [n for n, _ in tm.named_buffers()]
    _copy(tm, dm)
    x = torch.randn(2, *((args[0],) if cls == "Linear" else (args[0], 5, 5)),
                    dtype=torch.float64)
    for train in (True, False, True):
        tm.train(train)
        dm.train(train)
        _grads_equal(tm, dm, x)
        _close(dm.weight_u, tm.weight_u)
        _close(dm.weight_v, tm.weight_v)
    te = _err(lambda: torch.nn.utils.spectral_norm(tm))
    assert te == _err(lambda: dg.nn.utils.spectral_norm(dm))
    torch.nn.utils.remove_spectral_norm(tm)
    dg.nn.utils.remove_spectral_norm(dm)
    assert list(dm.state_dict()) == list(tm.state_dict())
    _close(dm.weight, tm.weight)
