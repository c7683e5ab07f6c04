"""The ops declared last (convolution's composites, kron, norm over linalg.vector_norm,
fill_diagonal_, the unsafe_split family) against PyTorch: the recorded graph and saved values,
values and gradients of two orders, forward mode (``torch.func.jvp``, without tangents derived
from backward formulas) and vmap (``torch.vmap``, without the per-sample loop)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import dyngrad
import dyngrad.autograd.forward_ad as fwAD
from dyngrad.func import _batched

RNG = np.random.default_rng(0)


def _lib_f(lib):
    return lib.nn.functional


def _no_loop_vmap(fn, args, in_dims=0):
    """dyngrad's vmap of ``fn(dyngrad, *args)``, checking that no op looped over the batch."""
    before = dict(_batched.LOOPED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dyngrad.func.vmap(lambda *a: fn(dyngrad, *a), in_dims=in_dims)(
            *[dyngrad.tensor(a) for a in args])
    looped = {k: v for k, v in _batched.LOOPED.items() if v != before.get(k, 0)}
    assert not looped, looped
    return got


def _torch_vmap(fn, args, in_dims=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.vmap(lambda *a: fn(torch, *a), in_dims=in_dims)(
            *[torch.tensor(a) for a in args])


def _same(got, ref, tol=1e-5):
    if isinstance(ref, (tuple, list)):
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            _same(g, r, tol)
        return
    assert tuple(got.shape) == tuple(ref.shape)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)


def _jvp_no_derived(fn, primals, tangents):
    before = dict(fwAD.DERIVED)
    got = dyngrad.func.jvp(lambda *a: fn(dyngrad, *a), tuple(dyngrad.tensor(p) for p in primals),
                           tuple(dyngrad.tensor(t) for t in tangents))
    derived = {k: v for k, v in fwAD.DERIVED.items() if v != before.get(k, 0)}
    assert not derived, derived
    ref = torch.func.jvp(lambda *a: fn(torch, *a), tuple(torch.tensor(p) for p in primals),
                         tuple(torch.tensor(t) for t in tangents))
    return got, ref


# --- convolution: conv3d and the transposed convolutions under vmap -----------------------
CONV = [
    ("conv3d", lambda L, x, w, b: _lib_f(L).conv3d(x, w, b, stride=(2, 1, 1), padding=1),
     (2, 2, 4, 4, 4), (2, 2, 2, 2, 2), (2,)),
    ("conv3d_unbatched", lambda L, x, w, b: _lib_f(L).conv3d(x, w, b), (2, 4, 4, 4),
     (2, 2, 2, 2, 2), (2,)),
    ("conv_transpose1d", lambda L, x, w, b: _lib_f(L).conv_transpose1d(
        x, w, b, stride=2, padding=1, output_padding=1), (2, 4, 5), (4, 3, 3), (3,)),
    ("conv_transpose2d_groups", lambda L, x, w, b: _lib_f(L).conv_transpose2d(
        x, w, b, groups=2, dilation=2), (2, 4, 5, 5), (4, 3, 2, 2), (6,)),
    ("conv_transpose2d_unbatched", lambda L, x, w, b: _lib_f(L).conv_transpose2d(x, w, b),
     (4, 5, 5), (4, 3, 2, 2), (3,)),
    ("conv_transpose3d", lambda L, x, w, b: _lib_f(L).conv_transpose3d(x, w, b, stride=2),
     (1, 2, 3, 3, 3), (2, 2, 2, 2, 2), (2,)),
    ("conv2d_groups_same", lambda L, x, w, b: _lib_f(L).conv2d(
        x, w, b, groups=2, padding="same", dilation=(1, 2)), (2, 4, 6, 5), (4, 2, 2, 3), (4,)),
    ("conv1d_valid", lambda L, x, w, b: _lib_f(L).conv1d(x, w, b, padding="valid"),
     (2, 4, 7), (3, 4, 3), (3,)),
    ("convolution", lambda L, x, w, b: L.convolution(x, w, b, (2, 1), (1, 0), (1, 1), False,
                                                     (0, 0), 1), (2, 4, 5, 5), (6, 4, 2, 2),
     (6,)),
    ("convolution_transposed", lambda L, x, w, b: L.convolution(
        x, w, b, (2, 1), (1, 0), (1, 1), True, (1, 0), 2), (2, 4, 5, 5), (4, 3, 2, 2), (6,)),
]


@pytest.mark.parametrize("dims", [(0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0),
                                  (0, 0, None)])
@pytest.mark.parametrize("name,fn,xs,ws,bs", CONV, ids=[c[0] for c in CONV])
def test_convolution_vmap_matches_torch(name, fn, xs, ws, bs, dims):
    args = [RNG.standard_normal(((3,) if d == 0 else ()) + s).astype(np.float32)
            for s, d in zip((xs, ws, bs), dims)]
    _same(_no_loop_vmap(fn, args, dims), _torch_vmap(fn, args, dims), 1e-4)


def test_conv3d_is_a_composite_recording_convolution():
    x = dyngrad.randn(1, 2, 3, 3, 3, requires_grad=True)
    w = dyngrad.randn(2, 2, 2, 2, 2, requires_grad=True)
    y = dyngrad.nn.functional.conv_transpose3d(x, w)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
    assert y.grad_fn._saved_transposed is True and y.grad_fn._saved_bias_sym_sizes_opt == (0,)


@pytest.mark.parametrize("call", [
    lambda F, L: F.conv3d([1.0], L.ones(2, 2, 2, 2, 2)),
    lambda F, L: F.conv1d(L.ones(1, 2, 3), "a"),
    lambda F, L: F.conv2d(L.ones(1, 2, 3, 3), L.ones(2, 2, 1, 1), "b"),
    lambda F, L: F.conv_transpose1d(L.ones(1, 2, 3), L.ones(2, 2, 2), "b"),
    lambda F, L: F.conv_transpose3d(L.ones(1, 2, 3, 3, 3), [1]),
    lambda F, L: F.conv_transpose1d(L.ones(2, 3), L.ones(2, 2))])
def test_convolution_argument_errors_match_torch(call):
    msgs = []
    for lib in (torch, dyngrad):
        with pytest.raises(Exception) as e:
            call(lib.nn.functional, lib)
        msgs.append((e.type.__name__, str(e.value)))
    assert msgs[0] == msgs[1]


def test_convolution_vmap_nested_levels():
    x = RNG.standard_normal((2, 3, 1, 2, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 4, 2, 3)).astype(np.float32)

    def f(L, x, w):
        return _lib_f(L).conv1d(x, w, padding=1)
    got = dyngrad.func.vmap(dyngrad.func.vmap(lambda x, w: f(dyngrad, x, w), in_dims=(0, 0)),
                            in_dims=(0, None))(dyngrad.tensor(x), dyngrad.tensor(w))
    ref = torch.vmap(torch.vmap(lambda x, w: f(torch, x, w), in_dims=(0, 0)),
                     in_dims=(0, None))(torch.tensor(x), torch.tensor(w))
    _same(got, ref, 1e-4)


def test_convolution_vmap_gradient_of_a_batched_weight():
    x = RNG.standard_normal((2, 2, 5)).astype(np.float32)
    w = RNG.standard_normal((3, 4, 2, 3)).astype(np.float32)

    def per_sample(L):
        def loss(w):
            return (_lib_f(L).conv1d(L.tensor(x), w) ** 2).sum()
        return L.func.vmap(L.func.grad(loss))
    _same(per_sample(dyngrad)(dyngrad.tensor(w)), per_sample(torch)(torch.tensor(w)), 1e-3)


# --- kron ---------------------------------------------------------------------------------
KRON_SHAPES = [((2, 3), (2, 2)), ((3,), (2,)), ((2, 1, 2), (3, 2)), ((), (2, 3)), ((2,), ())]


@pytest.mark.parametrize("dims", [(0, None), (None, 0), (0, 0)])
@pytest.mark.parametrize("sa,sb", KRON_SHAPES)
def test_kron_vmap_matches_torch(sa, sb, dims):
    args = [RNG.standard_normal(((4,) if d == 0 else ()) + s) for s, d in zip((sa, sb), dims)]
    _same(_no_loop_vmap(lambda L, a, b: L.kron(a, b), args, dims),
          _torch_vmap(lambda L, a, b: L.kron(a, b), args, dims))
    _same(_no_loop_vmap(lambda L, a, b: a.kron(b), args, dims),
          _torch_vmap(lambda L, a, b: a.kron(b), args, dims))


def test_kron_graph_is_pytorchs():
    a = dyngrad.randn(2, 3, requires_grad=True)
    y = dyngrad.kron(a, dyngrad.randn(2, 2))
    assert type(y.grad_fn).__name__ == "UnsafeViewBackward0"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "MulBackward0"


def test_kron_error_for_a_non_tensor():
    for lib in (torch, dyngrad):
        with pytest.raises(TypeError, match="argument 'other'"):
            lib.kron(lib.ones(2), [1.0])


# --- norm over linalg.vector_norm -----------------------------------------------------------
NORMS = [
    ("norm", lambda L, x: L.norm(x)),
    ("norm_3", lambda L, x: L.norm(x, 3)),
    ("norm_2_dim", lambda L, x: L.norm(x, 2, 1)),
    ("norm_3_keepdim", lambda L, x: L.norm(x, 3, 1, True)),
    ("norm_method", lambda L, x: x.norm(p=2.5, dim=(1,))),
    ("norm_inf", lambda L, x: L.norm(x, float("inf"), 1)),
    ("norm_1", lambda L, x: L.norm(x, 1, 0)),
    ("norm_fro_dims", lambda L, x: L.norm(x, "fro", (0, 1))),
    ("norm_dtype", lambda L, x: L.norm(x, 2, dtype=L.float64)),
    ("vector_norm", lambda L, x: L.linalg.vector_norm(x)),
    ("vector_norm_dtype", lambda L, x: L.linalg.vector_norm(x, 3, dim=1, dtype=L.float64)),
    ("vector_norm_half", lambda L, x: L.linalg.vector_norm(x, 0.5, -1)),
    ("vector_norm_1_5", lambda L, x: L.linalg.vector_norm(x, 1.5, -1)),
    ("vector_norm_neg_inf", lambda L, x: L.linalg.vector_norm(x, float("-inf"), -1)),
    ("linalg_norm", lambda L, x: L.linalg.norm(x)),
    ("linalg_norm_dim", lambda L, x: L.linalg.norm(x, ord=2.5, dim=1)),
    ("matrix_norm", lambda L, x: L.linalg.matrix_norm(x)),
]


def _graph(lib, fn, a):
    x = lib.tensor(a, requires_grad=True)
    y = fn(lib, x)
    g = y.grad_fn
    saved = {}
    for n in dir(g):
        if n.startswith("_saved_"):
            v = getattr(g, n)
            saved[n] = (tuple(v.shape), str(v.dtype)[6:]) if hasattr(v, "shape") else repr(v)
    (gx,) = lib.autograd.grad(y.sum(), x, create_graph=True)
    (ggx,) = lib.autograd.grad((gx * gx).sum(), x)
    return (type(g).__name__, saved, [type(f).__name__ for f, _ in g.next_functions],
            str(y.dtype)[6:]), (y, gx, ggx + 0)


@pytest.mark.parametrize("name,fn", NORMS, ids=[n for n, _ in NORMS])
def test_norm_graph_values_and_gradients_match_torch(name, fn):
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    meta_t, vals_t = _graph(torch, fn, a)
    meta_d, vals_d = _graph(dyngrad, fn, a)
    assert meta_d == meta_t
    _same(vals_d, vals_t, 1e-4)


@pytest.mark.parametrize("name,fn", NORMS + [("vector_norm_0", lambda L, x: L.linalg.vector_norm(
    x, 0, 1))], ids=[n for n, _ in NORMS] + ["vector_norm_0"])
def test_norm_forward_mode_and_vmap_match_torch(name, fn):
    a = RNG.standard_normal((3, 4))
    got, ref = _jvp_no_derived(fn, (a,), (RNG.standard_normal((3, 4)),))
    _same(got, ref, 1e-8)
    b = RNG.standard_normal((5, 3, 4))
    _same(_no_loop_vmap(fn, [b]), _torch_vmap(fn, [b]), 1e-8)


@pytest.mark.parametrize("ord", [2, 3, 1, float("inf")])
def test_vector_norm_forward_mode_of_complex_input(ord):
    a = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    t = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    got, ref = _jvp_no_derived(lambda L, x: L.linalg.vector_norm(x, ord, 1), (a,), (t,))
    _same(got, ref, 1e-8)


@pytest.mark.parametrize("fn", [lambda L, x: L.norm(x, "nuc"),
                                lambda L, x: L.linalg.norm(x, float("inf")),
                                lambda L, x: L.linalg.matrix_norm(x, -1, keepdim=True),
                                lambda L, x: L.linalg.matrix_norm(x, "nuc", (1, 0), True)])
def test_matrix_norms_vmap_without_a_loop(fn):
    b = RNG.standard_normal((5, 3, 4))
    _same(_no_loop_vmap(fn, [b]), _torch_vmap(fn, [b]), 1e-8)


@pytest.mark.parametrize("args,kwargs", [
    (("float64",), {"dtype": "float32"}), (("float64",), {"dtype": "int64"}),
    (("float64",), {"dtype": "complex128"}), (("complex64",), {"dtype": "float64"}),
    (("float32",), {"dtype": "float16"}), (("int64",), {"dtype": "float64"}),
    (("int64",), {}), (("float64", "fro"), {})])
def test_vector_norm_errors_match_torch(args, kwargs):
    msgs = []
    for lib in (torch, dyngrad):
        x = lib.ones(3, dtype=getattr(lib, args[0]))
        kw = {k: getattr(lib, v) for k, v in kwargs.items()}
        with pytest.raises((RuntimeError, TypeError)) as e:
            lib.linalg.vector_norm(x, *args[1:], **kw)
        msgs.append((e.type, str(e.value)))
    assert msgs[0] == msgs[1]


# --- in-place writes through a view in forward mode; fill_diagonal_ under vmap ---------------
def _row_mul(L, a, b):
    x = a * 1
    x[1].mul_(b)
    return x


def _col_copy(L, a, b):
    x = a * 1
    x[:, 2].copy_(b)
    return x


def _diag_add(L, a):
    x = a.clone()
    x.diagonal().add_(1.5)
    return x * x


INPLACE_VIEWS = [
    ("fill_diagonal_", lambda L, a: (a * 1).fill_diagonal_(0.5), [(3, 4)]),
    ("fill_diagonal_wrap", lambda L, a: (a * 1).fill_diagonal_(-1.0, wrap=True), [(7, 3)]),
    ("fill_diagonal_3d", lambda L, a: (a * 1).fill_diagonal_(2.0), [(3, 3, 3)]),
    ("row_mul_", _row_mul, [(3, 4), (4,)]),
    ("col_copy_", _col_copy, [(3, 4), (3,)]),
    ("diagonal_add_", _diag_add, [(3, 3)]),
]


@pytest.mark.parametrize("name,fn,shapes", INPLACE_VIEWS, ids=[c[0] for c in INPLACE_VIEWS])
def test_inplace_on_a_view_forward_mode_matches_torch(name, fn, shapes):
    primals = [RNG.standard_normal(s) for s in shapes]
    tangents = [RNG.standard_normal(s) for s in shapes]
    got, ref = _jvp_no_derived(fn, primals, tangents)
    _same(got, ref, 1e-10)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(dyngrad.tensor(p), dyngrad.tensor(t))
                 for p, t in zip(primals, tangents)]
        tangent = fwAD.unpack_dual(fn(dyngrad, *duals)).tangent
    _same(tangent, ref[1], 1e-10)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (7, 2), (3, 3, 3), (1, 1), (0, 3), (8, 3)])
@pytest.mark.parametrize("fn", [lambda L, x: (x * 1).fill_diagonal_(2.0),
                                lambda L, x: (x * 1).fill_diagonal_(-1, wrap=True),
                                lambda L, x: (x * 1).fill_diagonal_(L.tensor(3.0))])
def test_fill_diagonal_vmap_matches_torch(shape, fn):
    b = RNG.standard_normal((2,) + shape)
    _same(_no_loop_vmap(fn, [b]), _torch_vmap(fn, [b]))


def test_fill_diagonal_records_copy_slices():
    a = dyngrad.randn(3, 4, requires_grad=True)
    x = (a * 1).fill_diagonal_(0.5)
    assert x.grad_fn.name() == "torch::autograd::CopySlices"
    assert [type(f).__name__ for f, _ in x.grad_fn.next_functions] == ["MulBackward0"]


# --- unsafe_split and unsafe_split_with_sizes (defpieces) -----------------------------------
SPLITS = [
    ("method", lambda L, x: x.unsafe_split(2, 1)),
    ("function_negative_dim", lambda L, x: L.unsafe_split(x, 2, -1)),
    ("with_sizes", lambda L, x: L.unsafe_split_with_sizes(x, [1, 3, 1], -1)),
    ("with_sizes_method", lambda L, x: x.unsafe_split_with_sizes([2, 1], 0)),
    ("chunk", lambda L, x: x.unsafe_chunk(2, 1)),
    ("chunk_function", lambda L, x: L.unsafe_chunk(x, 3, 0)),
    ("one_piece", lambda L, x: x.unsafe_split(5, 1)),
]


def _pieces(lib, fn, a):
    x = lib.tensor(a, requires_grad=True)
    ps = fn(lib, x * 1)
    g = ps[0].grad_fn
    saved = {n: getattr(g, n) for n in dir(g) if n.startswith("_saved_")}
    meta = (type(g).__name__, saved, [type(f).__name__ for f, _ in g.next_functions],
            [p._base is None for p in ps], all(p.grad_fn is g for p in ps))
    # a piece left out of the loss gets no gradient: zeros in its place
    loss = sum(((p * p).sum() * (i + 1) for i, p in enumerate(ps) if i != 1), lib.tensor(0.0))
    (gx,) = lib.autograd.grad(loss, x, create_graph=True)
    (ggx,) = lib.autograd.grad((gx * gx).sum(), x)
    return meta, list(ps) + [gx, ggx]


@pytest.mark.parametrize("name,fn", SPLITS, ids=[n for n, _ in SPLITS])
def test_unsafe_split_matches_torch(name, fn):
    a = RNG.standard_normal((3, 5))
    meta_t, vals_t = _pieces(torch, fn, a)
    meta_d, vals_d = _pieces(dyngrad, fn, a)
    assert meta_d == meta_t
    _same(vals_d, vals_t, 1e-10)
    got, ref = _jvp_no_derived(fn, (a,), (RNG.standard_normal((3, 5)),))
    _same(got, ref, 1e-10)


@pytest.mark.parametrize("name,fn", SPLITS, ids=[n for n, _ in SPLITS])
def test_unsafe_split_vmap(name, fn):
    """Against torch.vmap, or (PyTorch has no batching rule and no fallback for
    unsafe_split_with_sizes) against stacked per-sample results."""
    b = RNG.standard_normal((4, 3, 5))
    got = _no_loop_vmap(fn, [b])
    try:
        ref = _torch_vmap(fn, [b])
    except RuntimeError as e:
        assert "unsafe_split_with_sizes" in str(e)
        outs = [fn(torch, torch.tensor(s)) for s in b]
        ref = [torch.stack([o[j] for o in outs]) for j in range(len(outs[0]))]
    _same(got, ref, 1e-10)


def test_unsafe_split_pieces_are_not_views():
    for lib in (torch, dyngrad):
        x = lib.ones(2, 4, requires_grad=True) * 1
        p = x.unsafe_split(2, 1)
        p[0].mul_(2)  # neither refused nor tracked: no version change of x or the other piece
        assert (x._version, p[0]._version, p[1]._version) == (0, 1, 0)
        assert type(p[0].grad_fn).__name__ == "MulBackward0"
        assert type(p[0].grad_fn.next_functions[0][0]).__name__ == "UnsafeSplitBackward0"
        assert x.sum().item() == 12.0  # the pieces share the input's memory


@pytest.mark.parametrize("call", [
    lambda L: L.unsafe_split(L.ones(3), 0), lambda L: L.unsafe_split(L.tensor(1.0), 1),
    lambda L: L.ones(3).unsafe_split("a"), lambda L: L.unsafe_split([1], 1),
    lambda L: L.unsafe_split_with_sizes(L.ones(3), [1, 1]),
    lambda L: L.ones(3).unsafe_split_with_sizes(2), lambda L: L.ones(3).unsafe_split(1, 2)])
def test_unsafe_split_errors_match_torch(call):
    msgs = []
    for lib in (torch, dyngrad):
        with pytest.raises(Exception) as e:
            call(lib)
        msgs.append((e.type.__name__, str(e.value)))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("dtype", ["float32", "float64", None])
def test_vector_norm_of_bfloat16_in_another_dtype(dtype):
    """The result has the dtype asked for; the node keeps the bfloat16 input and the result;
    the input's gradient is bfloat16."""
    got = []
    for lib in (torch, dyngrad):
        x = lib.tensor([[1.5, -2.0, 3.25], [0.5, 1.0, -1.0]], dtype=lib.bfloat16,
                       requires_grad=True)
        kw = {} if dtype is None else {"dtype": getattr(lib, dtype)}
        y = lib.linalg.vector_norm(x, 3, 1, **kw)
        dts = (str(y.dtype), str(y.grad_fn._saved_self.dtype), str(y.grad_fn._saved_result.dtype))
        (gx,) = lib.autograd.grad(y.sum(), x)
        got.append((dts, str(gx.dtype), y.detach().double().numpy(), gx.double().numpy()))
    (t_dts, t_g, t_y, t_gx), (d_dts, d_g, d_y, d_gx) = got
    assert (d_dts, d_g) == (t_dts, t_g)
    np.testing.assert_allclose(d_y, t_y, rtol=1e-6)
    np.testing.assert_allclose(d_gx, t_gx, rtol=1e-2)


def test_norm_dtype_argument_matches_torch():
    """vector_norm and matrix_norm with ``dtype=``: the result's dtype or PyTorch's error, for
    every pair of input and requested dtype (one check for both norms; bfloat16 asked of
    bfloat16 computes, float16 asked as bfloat16 is PyTorch's narrowing error, not NumPy's)."""
    import itertools
    torch = pytest.importorskip("torch")

    def run(L):
        out = []
        dts = [L.float16, L.bfloat16, L.float32, L.float64, L.complex64, L.complex128, L.int64]
        for a, b in itertools.product(dts[:6], dts):
            for fn in ("vector_norm", "matrix_norm"):
                try:
                    r = getattr(L.linalg, fn)(L.ones(3, 3, dtype=a), dtype=b)
                    out.append((str(a), str(b), fn, str(r.dtype)))
                except Exception as e:  # noqa: BLE001 - the type and text are compared
                    out.append((str(a), str(b), fn, type(e).__name__, str(e).split("\n")[0]))
        return out

    assert run(dyngrad) == run(torch)
