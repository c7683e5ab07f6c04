"""F.linear's and MultiheadAttention's compositions against PyTorch: which path linear takes
(graph and version counter), the memory layout of the CPU flash attention output, attention
values and gradients over masks and projections, and the errors and fast-path choices of
MultiheadAttention and the transformer layers."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.test_graph_structure import walk  # noqa: E402


def _version(t):
    v = t._version
    return v if isinstance(v, int) else v[0]


def _t(lib, a, grad=True):
    return lib.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


# --- linear ----------------------------------------------------------------------------------
# input (shape, dims transposed), bias shape (None: no bias), bias taken with a step (not
# contiguous); (2, 1, 4) transposed to (1, 2, 4) is contiguous (a size-1 dim's stride is free)
LINEAR = [((2, 3, 4), None, (5,), False), ((2, 3, 4), None, (), False),
          ((2, 3, 4), None, (1, 5), False), ((2, 3, 4), None, (3, 5), False),
          ((2, 2, 3, 4), None, (1, 5), False), ((4,), None, (5,), False),
          ((4,), None, (), False), ((2, 3, 4), None, (5,), True),
          ((2, 4, 3), (1, 2), (5,), False), ((2, 1, 4), (0, 1), (5,), False),
          ((3, 4), None, (5,), False), ((2, 3, 4), None, None, False)]


@pytest.mark.parametrize("xs,tr,bs,step", LINEAR)
def test_linear_path_graph_and_version(xs, tr, bs, step):
    rs = np.random.RandomState(0)
    x, w = rs.randn(*xs), rs.randn(5, 4)
    b = None if bs is None else rs.randn(*((bs[0] * 2,) if step else bs))
    res = []
    for lib in (torch, dyngrad):
        xt = _t(lib, x)
        leaf_x = xt
        if tr:
            xt = xt.transpose(*tr)
        wt = _t(lib, w)
        bt = None if b is None else _t(lib, b)
        bb = None if bt is None else (bt[::2] if step else bt)
        y = lib.nn.functional.linear(xt, wt, bb)
        res.append((walk(y, [leaf_x, wt, bt]), _version(y), tuple(y.shape)))
        y.sum().backward()
    assert res[1] == res[0]


def test_linear_bias_dtype_in_place():
    """Without the flattened path the bias is added in place: the output keeps its dtype."""
    for lib in (torch, dyngrad):
        x = lib.ones(2, 4, 3).transpose(1, 2)
        y = lib.nn.functional.linear(x, lib.ones(5, 4), lib.ones(5, dtype=lib.float64))
        assert y.dtype == lib.float32


def test_linear_bias_with_tangent_out_of_place():
    import dyngrad.autograd.forward_ad as fwad
    x = dyngrad.ones(2, 4, 3).transpose(1, 2)
    with fwad.dual_level():
        b = fwad.make_dual(dyngrad.ones(5), dyngrad.ones(5))
        y = dyngrad.nn.functional.linear(x, dyngrad.ones(5, 4), b)
        assert _version(y) == 0
        assert fwad.unpack_dual(y).tangent.tolist() == [[[1.0] * 5] * 3] * 2


# --- flash attention layout ------------------------------------------------------------------
def _layouts(lib):
    b = lib.tensor(np.random.RandomState(0).randn(3, 2, 2, 4))
    yield b.view(3, 4, 4).transpose(0, 1).view(2, 2, 3, 4)
    yield lib.tensor(np.ones((2, 5, 2, 4))).transpose(1, 2)
    yield lib.tensor(np.ones((2, 5, 2, 4))).permute(1, 2, 0, 3)
    c = lib.tensor(np.ones((2, 6, 3, 4)))
    yield c[:, ::3]
    yield c.permute(0, 2, 1, 3)[:, :, ::3]
    yield lib.tensor(np.ones((2, 3, 1, 4))).expand(2, 3, 5, 4)
    yield lib.tensor(np.ones((2, 5, 3, 8)))[..., :4].transpose(1, 2)


def test_flash_output_laid_out_like_query():
    for qt, qd in zip(_layouts(torch), _layouts(dyngrad)):
        ot = torch.nn.functional.scaled_dot_product_attention(qt, qt, qt)
        od = dyngrad.nn.functional.scaled_dot_product_attention(qd, qd, qd)
        assert od.stride() == ot.stride()
        np.testing.assert_allclose(od.numpy(), ot.numpy())


# --- MultiheadAttention values and gradients -------------------------------------------------
L, S, N, E = 3, 4, 2, 8
_MASKS = {
    "none": {},
    "no_weights": dict(need_weights=False),
    "bool": dict(attn_mask=lambda lib: lib.tensor(np.triu(np.ones((L, S), bool), 1))),
    "float_no_weights": dict(attn_mask=lambda lib: lib.tensor(
        np.where(np.triu(np.ones((L, S), bool), 1), -np.inf, 0.0)), need_weights=False),
    "kpm": dict(key_padding_mask=lambda lib: lib.tensor(
        np.array([[False, False, True, False], [False, True, False, False]]))),
    "kpm_bool_no_weights": dict(
        key_padding_mask=lambda lib: lib.tensor(
            np.array([[False, False, True, False], [False, True, False, False]])),
        attn_mask=lambda lib: lib.tensor(np.triu(np.ones((L, S), bool), 1)),
        need_weights=False),
    "3d": dict(attn_mask=lambda lib: lib.tensor(np.random.RandomState(3).randn(N * 2, L, S))),
    "3d_no_weights": dict(attn_mask=lambda lib: lib.tensor(
        np.random.RandomState(3).randn(N * 2, L, S)), need_weights=False),
    "per_head": dict(average_attn_weights=False),
}
_CFGS = {"plain": {}, "nobias": dict(bias=False),
         "bias_kv_zero": dict(add_bias_kv=True, add_zero_attn=True),
         "kdim": dict(kdim=5, vdim=6), "bf": dict(batch_first=True)}


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("mask", list(_MASKS))
@pytest.mark.parametrize("cfg,same", [(c, s) for c in _CFGS for s in ("kv", "none")
                                       if not (c == "kdim" and s == "kv")])
def test_mha_values_and_grads(cfg, same, mask, train):
    c = _CFGS[cfg]
    torch.manual_seed(0)
    mt = torch.nn.MultiheadAttention(E, 2, **c).double()
    md = dyngrad.nn.MultiheadAttention(E, 2, **c).double()
    md.load_state_dict({k: dyngrad.tensor(v.detach().numpy().copy())
                        for k, v in mt.state_dict().items()})
    mt.train(train)
    md.train(train)
    bf = c.get("batch_first")
    shapes = [(L, N, E), (S, N, c.get("kdim", E)), (S, N, c.get("vdim", E))]
    if bf:
        shapes = [(s[1], s[0], s[2]) for s in shapes]
    rs = np.random.RandomState(1)
    arrs = [rs.randn(*s) for s in shapes]
    res = []
    for lib, m in ((torch, mt), (dyngrad, md)):
        xs = [_t(lib, a) for a in arrs]
        q, k, v = (xs[0], xs[1], xs[1]) if same == "kv" else xs
        kw = {n: (f(lib) if callable(f) else f) for n, f in _MASKS[mask].items()}
        out, w = m(q, k, v, **kw)
        loss = (out ** 2).sum()
        if w is not None:
            loss = loss + (w * lib.arange(w.numel(), dtype=lib.float64).reshape(w.shape)).sum()
        loss.backward()
        grads = [x.grad for x in xs] + [p.grad for _, p in sorted(m.named_parameters())]
        res.append((out.detach().numpy(), None if w is None else w.detach().numpy(),
                    [None if g is None else g.numpy() for g in grads]))
    (ot, wt, gt), (od, wd, gd) = res
    np.testing.assert_allclose(od, ot, atol=1e-12)
    assert (wd is None) == (wt is None)
    if wt is not None:
        np.testing.assert_allclose(wd, wt, atol=1e-12)
    for a, b in zip(gd, gt):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, atol=1e-10)


# --- errors and fast paths -------------------------------------------------------------------
def _calls(lib):
    def t(*s):
        return lib.tensor(np.random.RandomState(0).randn(*s))

    def ng(f):
        with lib.no_grad():
            return f()

    m = lib.nn.MultiheadAttention(8, 2).double()
    mb = lib.nn.MultiheadAttention(8, 2, batch_first=True).double().eval()
    x, xb = t(3, 2, 8), t(2, 3, 8)
    zf = lib.zeros
    kp = lib.tensor([[False, False, True], [False, False, False]])
    layer = lib.nn.TransformerEncoderLayer(8, 2, 16).double()
    fast = lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).double().eval()
    enc = lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    return {
        "causal_without_mask": lambda: m(x, x, x, is_causal=True),
        "causal_without_mask_fast": lambda: ng(lambda: mb(xb, xb, xb, is_causal=True)),
        "query_4d": lambda: m(t(1, 3, 2, 8), x, x),
        "key_2d": lambda: m(x, t(3, 8), x),
        "int_mask": lambda: m(x, x, x, attn_mask=lib.tensor([[1, 0, 0]] * 3)),
        "mask_2d_shape": lambda: m(x, x, x, attn_mask=zf(2, 3, dtype=lib.float64)),
        "mask_3d_shape": lambda: m(x, x, x, attn_mask=zf(2, 3, 3, dtype=lib.float64)),
        "mask_4d": lambda: m(x, x, x, attn_mask=zf(1, 1, 3, 3, dtype=lib.float64)),
        "kpm_shape": lambda: m(x, x, x, key_padding_mask=zf(2, 4, dtype=lib.bool)),
        "kpm_1d": lambda: m(x, x, x, key_padding_mask=zf(3, dtype=lib.bool)),
        "mixed_mask_types": lambda: m(x, x, x, key_padding_mask=zf(2, 3, dtype=lib.bool),
                                      attn_mask=zf(3, 3, dtype=lib.float64)),
        "embed_dim": lambda: m(t(3, 2, 6), t(3, 2, 6), t(3, 2, 6)),
        "key_value_shapes": lambda: m(x, t(4, 2, 8), t(5, 2, 8)),
        "unbatched_3d_mask": lambda: m(t(3, 8), t(3, 8), t(3, 8),
                                       attn_mask=zf(2, 3, 3, dtype=lib.float64)),
        "unbatched_3d_mask_shape": lambda: m(t(3, 8), t(3, 8), t(3, 8),
                                             attn_mask=zf(4, 3, 3, dtype=lib.float64)),
        "layer_causal_without_mask": lambda: layer(x, is_causal=True),
        "layer_causal_fast": lambda: ng(lambda: fast(xb, is_causal=True)),
        "layer_causal_kpm_fast": lambda: ng(lambda: fast(xb, src_key_padding_mask=kp,
                                                         is_causal=True)),
        "layer_int_mask": lambda: layer(x, src_mask=zf(3, 3, dtype=lib.int64)),
        "layer_mixed_masks": lambda: layer(x, src_mask=zf(3, 3, dtype=lib.float64),
                                           src_key_padding_mask=zf(2, 3, dtype=lib.bool)),
        "encoder_mixed_masks": lambda: enc(x, mask=zf(3, 3, dtype=lib.float64),
                                           src_key_padding_mask=zf(2, 3, dtype=lib.bool)),
        "encoder_causal_without_mask": lambda: enc(x, is_causal=True),
    }


def _outcome(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f()
            r = r if isinstance(r, tuple) else (r,)
            got = tuple(None if x is None else tuple(x.shape) for x in r)
        except Exception as e:  # noqa: BLE001 - the error is what is compared
            got = (type(e).__name__, str(e))
    return got, [str(x.message) for x in w if "nested tensors" not in str(x.message)]


@pytest.mark.parametrize("name", list(_calls(dyngrad)))
def test_mha_and_layer_errors_warnings_and_fast_paths(name):
    assert _outcome(_calls(dyngrad)[name]) == _outcome(_calls(torch)[name])


def test_encoder_nested_path_zeros_padded_positions():
    """PyTorch's nested fast path pads with +0.0 (not -0.0) before the final norm."""
    res = []
    for lib in (torch, dyngrad):
        lib.manual_seed(0)
        enc = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(
            8, 2, 16, batch_first=True), 2).double().eval()
        res.append(enc)
    res[1].load_state_dict({k: dyngrad.tensor(v.numpy().copy())
                            for k, v in res[0].state_dict().items()})
    x = np.random.RandomState(0).randn(2, 3, 8)
    for kp in ([[False, False, True], [False, False, False]],
               [[0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]):
        outs = []
        for lib, enc in zip((torch, dyngrad), res):
            with lib.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs.append(enc(lib.tensor(x), src_key_padding_mask=lib.tensor(kp)).numpy())
        np.testing.assert_allclose(outs[1], outs[0], atol=1e-12)
        assert not np.signbit(outs[1][0, 2]).any()
