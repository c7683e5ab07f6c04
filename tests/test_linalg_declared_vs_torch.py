"""The declared slogdet, linalg.svd, matrix_exp and addmm against PyTorch: the nodes' saved
values (slogdet's LU and pivots included), the named tuples, gradients of every order and
forward-mode tangents, for real and complex input (singular vectors compared through
sign-free functions of them)."""
import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")
tfunc = pytest.importorskip("torch.func")

RNG = np.random.default_rng(0)


def _input(shape, dt):
    a = RNG.standard_normal(shape)
    if dt == "complex":
        a = a + 1j * RNG.standard_normal(shape)
    return a


def _np(t):
    return t.detach().resolve_conj().numpy()


def _saved(node):
    return sorted(n for n in dir(node) if n.startswith("_saved_") and n != "_saved_outputs")


@pytest.mark.parametrize("dt", ["real", "complex"])
@pytest.mark.parametrize("shape", [(3, 3), (2, 3, 3), (1, 1)])
def test_slogdet_node_and_gradients(shape, dt):
    a = _input(shape, dt)
    got = {}
    for L in (torch, dyngrad):
        x = L.tensor(a, requires_grad=True)
        r = L.slogdet(x)
        node = r.logabsdet.grad_fn
        saved = (_np(node._saved_LU), node._saved_pivots.numpy(), _np(node._saved_sign),
                 node._saved_LU.stride(), str(node._saved_pivots.dtype).split(".")[-1])
        loss = r.logabsdet.sum()
        if dt == "complex":
            loss = loss + (r.sign * L.tensor(np.arange(1, r.sign.numel() + 1) * (1 - 2j)).reshape(
                r.sign.shape)).real.sum()
        g, = L.autograd.grad(loss, x, create_graph=True)
        gg, = L.autograd.grad(g.abs().sum(), x)
        got[L] = (saved, _np(r.sign), _np(r.logabsdet), _np(g), _np(gg), type(r).__name__,
                  type(L.linalg.slogdet(x)).__name__, type(node).__name__, _saved(node),
                  r.sign.requires_grad)
    t, d = got[torch], got[dyngrad]
    for u, v in zip(t[0][:3], d[0][:3]):
        np.testing.assert_allclose(u, v, rtol=1e-10, atol=1e-12)
    assert t[0][3:] == d[0][3:]
    for i in range(1, 5):
        np.testing.assert_allclose(t[i], d[i], rtol=1e-8, atol=1e-10)
    assert t[5:] == d[5:]


@pytest.mark.parametrize("dt", ["real", "complex"])
def test_slogdet_forward_mode(dt):
    a, v = _input((3, 3), dt), _input((3, 3), dt)
    t = tfunc.jvp(torch.slogdet, (torch.tensor(a),), (torch.tensor(v),))[1]
    d = dyngrad.func.jvp(dyngrad.slogdet, (dyngrad.tensor(a),), (dyngrad.tensor(v),))[1]
    for u, w in zip(t, d):
        np.testing.assert_allclose((u + 0).resolve_conj().numpy(), _np(w), rtol=1e-10,
                                   atol=1e-12)


def _gauge_free(r, shape):
    k = min(shape[-2:])
    return (r.U[..., :k].abs() ** 2, r.S, r.Vh[..., :k, :].abs() ** 2)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("dt", ["real", "complex"])
@pytest.mark.parametrize("shape", [(3, 2), (2, 3), (3, 3), (2, 4, 3)])
def test_linalg_svd_against_torch(shape, dt, full):
    a, v = _input(shape, dt), _input(shape, dt)
    got = {}
    for L in (torch, dyngrad):
        x = L.tensor(a, requires_grad=True)
        r = L.linalg.svd(x, full_matrices=full)
        node = r.S.grad_fn
        info = (type(r).__name__, type(node).__name__, _saved(node),
                node._saved_S_sym_argsize_minus_1, node._saved_full_matrices)
        u2, s, vh2 = _gauge_free(r, shape)
        loss = (u2 * L.arange(shape[-2]).unsqueeze(-1)).sum() + s.sum() + \
            (vh2 * L.arange(shape[-1])).sum()
        g, = L.autograd.grad(loss, x, create_graph=True)
        gg, = L.autograd.grad(g.abs().sum(), x)
        f = (lambda L: lambda y: _gauge_free(L.linalg.svd(y, full_matrices=full), shape))(L)
        jvp = (tfunc.jvp if L is torch else dyngrad.func.jvp)(f, (L.tensor(a),), (L.tensor(v),))
        got[L] = (info, [_np(t) for t in (g, gg) + tuple(jvp[1])])
    assert got[torch][0] == got[dyngrad][0]
    for u, w in zip(got[torch][1], got[dyngrad][1]):
        np.testing.assert_allclose(u, w, rtol=1e-7, atol=1e-9)


def test_torch_svd_v_is_the_conjugate_transpose():
    a = _input((3, 2), "complex")
    t = torch.svd(torch.tensor(a, requires_grad=True))
    d = dyngrad.svd(dyngrad.tensor(a, requires_grad=True))
    np.testing.assert_allclose(_np(t.U @ torch.diag_embed(t.S).to(t.U.dtype) @ t.V.mH), a)
    np.testing.assert_allclose(_np(d.U @ dyngrad.diag_embed(d.S).to(d.U.dtype) @ d.V.mH), a)
    assert type(d.V.grad_fn).__name__ == type(t.V.grad_fn).__name__


def test_svd_errors_as_torch():
    for bad in (np.ones(3), np.ones((3, 3), dtype=np.int64), np.ones((3, 3), dtype=np.float16)):
        for name in ("svd", "linalg.svd"):
            errs = []
            for L in (torch, dyngrad):
                fn = L.svd if name == "svd" else L.linalg.svd
                with pytest.raises(Exception) as e:
                    fn(L.tensor(bad))
                errs.append((type(e.value).__name__, str(e.value)))
            assert errs[0] == errs[1]


@pytest.mark.parametrize("dt", ["real", "complex"])
def test_matrix_exp_gradients_and_tangent(dt):
    a, v, w = _input((2, 3, 3), dt), _input((2, 3, 3), dt), _input((2, 3, 3), dt)
    got = {}
    for L in (torch, dyngrad):
        x = L.tensor(a, requires_grad=True)
        y = L.matrix_exp(x)
        g, = L.autograd.grad(y, x, L.tensor(v), create_graph=True)
        gg, = L.autograd.grad(g.abs().sum(), x)
        jvp = (tfunc.jvp if L is torch else dyngrad.func.jvp)(L.matrix_exp, (L.tensor(a),),
                                                              (L.tensor(w),))[1]
        got[L] = ([_np(t) for t in (y, g, gg, jvp)], type(y.grad_fn).__name__,
                  _saved(y.grad_fn))
    for u, t in zip(got[torch][0], got[dyngrad][0]):
        np.testing.assert_allclose(u, t, rtol=1e-8, atol=1e-10)
    assert got[torch][1:] == got[dyngrad][1:]


@pytest.mark.parametrize("needs", [(True, False, False), (False, True, False),
                                   (False, False, True), (True, True, True)])
def test_addmm_node_and_gradients(needs):
    b, m1, m2 = RNG.standard_normal(4), RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    got = {}
    for L in (torch, dyngrad):
        ts = [L.tensor(v, requires_grad=n) for v, n in zip((b, m1, m2), needs)]
        for kw in ({}, {"beta": 0.5, "alpha": 2.0}):
            y = L.addmm(*ts, **kw)
            node = y.grad_fn
            vals = (node._saved_beta, node._saved_alpha, node._saved_mat1_sym_sizes,
                    node._saved_mat2_sym_sizes, node._saved_mat1 is None,
                    node._saved_mat2 is None, type(node).__name__)
            ins = [t for t in ts if t.requires_grad]
            gs = L.autograd.grad((y * y).sum(), ins, create_graph=True)
            ggs = L.autograd.grad(sum(g.sum() for g in gs), ins, allow_unused=True)
            got.setdefault(L, []).append((vals, [_np(g) for g in gs],
                                          [None if g is None else _np(g) for g in ggs]))
    for (tv, tg, tgg), (dv, dg, dgg) in zip(got[torch], got[dyngrad]):
        assert tv == dv
        for u, w in zip(tg + tgg, dg + dgg):
            if u is None or w is None:
                assert u is None and w is None
            else:
                np.testing.assert_allclose(u, w, rtol=1e-10, atol=1e-12)
