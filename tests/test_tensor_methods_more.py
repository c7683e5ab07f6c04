"""Tensor methods against PyTorch: the new_* factories, type_as and the predicates, the
conjugation family, sum_to_size, narrow_copy, the unsafe_ splits, hsplit/vsplit/dsplit, unfold,
diagflat, diff and fill_diagonal_ (values, dtypes, strides, errors, graphs where not covered
by the op table)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

LIBS = (dyngrad, torch)


def ver(t):
    """A tensor's version counter (an int in PyTorch, the first item of a list here)."""
    v = t._version
    return v if isinstance(v, int) else v[0]


def outcome(lib, fn):
    """What ``fn(lib)`` gives: values/dtype/shape/requires_grad of each tensor (or the value),
    or the error's type and first line."""
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(lib)
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__, str(e).split("\n")[0])
    # (PyTorch's C++ warnings end with where they were raised inside PyTorch)
    ws = [str(x.message).split(" (Triggered internally at")[0] for x in w]

    def one(x):
        if isinstance(x, lib.Tensor):
            fn_ = x.grad_fn
            return ("tensor", str(x.dtype).split(".")[-1], tuple(x.shape), x.requires_grad,
                    None if fn_ is None else fn_.name().replace("torch::autograd::", ""),
                    x.detach().numpy().tolist())
        if isinstance(x, (tuple, list)):
            return tuple(one(v) for v in x)
        return x

    return one(r), ws


def _err(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).split("\n")[0]
    return None


def _nograd(lib, f):
    with lib.no_grad():
        return f()


def same(fn):
    a, b = outcome(dyngrad, fn), outcome(torch, fn)
    assert a == b, f"\ndyngrad {a}\ntorch   {b}"


# --- new_* ----------------------------------------------------------------------------------
F32 = lambda L: L.tensor([[1.0, 2.0], [3.0, 4.0]])  # noqa: E731
I64 = lambda L: L.tensor([1, 2, 3])  # noqa: E731

NEW_CASES = {
    "new_tensor": lambda L: F32(L).new_tensor([1, 2]),
    "new_tensor_int_self": lambda L: I64(L).new_tensor([1.5, 2.7]),
    "new_tensor_dtype": lambda L: F32(L).new_tensor([1, 2], dtype=L.int32),
    "new_tensor_rg": lambda L: F32(L).new_tensor([1, 2], requires_grad=True),
    "new_tensor_int_rg": lambda L: I64(L).new_tensor([1], requires_grad=True),
    "new_tensor_scalar": lambda L: F32(L).double().new_tensor(3.5),
    "new_tensor_from_tensor": lambda L: F32(L).new_tensor(L.tensor([1, 2])),
    "new_tensor_detached": lambda L: F32(L).new_tensor(L.ones(2, requires_grad=True) * 2),
    "new_zeros": lambda L: F32(L).new_zeros(2, 3),
    "new_zeros_tuple": lambda L: I64(L).new_zeros((2, 3)),
    "new_zeros_list_dtype": lambda L: F32(L).new_zeros([2], dtype=L.float64),
    "new_zeros_size": lambda L: F32(L).new_zeros(L.Size([1, 2])),
    "new_zeros_0d": lambda L: F32(L).new_zeros(()),
    "new_zeros_str": lambda L: F32(L).new_zeros("a"),
    "new_zeros_neg": lambda L: F32(L).new_zeros(-1),
    "new_zeros_none": lambda L: F32(L).new_zeros(),
    "new_ones": lambda L: I64(L).new_ones(3),
    "new_ones_rg": lambda L: F32(L).new_ones(2, requires_grad=True),
    "new_empty_shape": lambda L: tuple(F32(L).new_empty(2, 5).shape),
    "new_empty_dtype": lambda L: F32(L).new_empty((1, 2), dtype=L.int8).dtype is L.int8,
    "new_full": lambda L: F32(L).new_full((2,), 3),
    "new_full_int_self": lambda L: I64(L).new_full([2, 1], 2.7),
    "new_full_bool": lambda L: F32(L).new_full((2,), True),
    "new_full_not_seq": lambda L: F32(L).new_full(2, 3),
    "new_full_bad_value": lambda L: F32(L).new_full((2,), "x"),
    "new_full_rg": lambda L: F32(L).new_full((1,), 1.5, requires_grad=True),
    "new_empty_strided": lambda L: (F32(L).new_empty_strided((2, 3), (1, 2)).stride(),
                                    tuple(F32(L).new_empty_strided((2, 3), (1, 2)).shape)),
    "new_empty_strided_bad": lambda L: F32(L).new_empty_strided((2, 3), (1,)),
    "new_empty_strided_dtype": lambda L: str(F32(L).new_empty_strided((2,), (1,),
                                                                     dtype=L.int16).dtype),
}


@pytest.mark.parametrize("name", sorted(NEW_CASES))
def test_new_factories_match_torch(name):
    same(NEW_CASES[name])


def test_new_tensor_is_a_leaf_copy():
    src = dyngrad.ones(2, requires_grad=True) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = dyngrad.zeros(1).new_tensor(src)
    assert r.is_leaf and not r.requires_grad
    r.add_(1)
    assert src.tolist() == [2.0, 2.0]


# --- type_as, predicates, conjugation ---------------------------------------------------------
X = lambda L: L.tensor([[1.5, -2.0], [0.0, 3.0]], requires_grad=True)  # noqa: E731

MISC_CASES = {
    "type_as_int": lambda L: X(L).type_as(L.tensor([1])),
    "type_as_same": lambda L: (lambda x: x.type_as(L.zeros(1)) is x)(X(L).float()),
    "type_as_graph": lambda L: X(L).type_as(L.zeros(1, dtype=L.float64)),
    "type_as_bad": lambda L: X(L).type_as(3),
    "is_signed": lambda L: [L.zeros(1, dtype=d).is_signed() for d in
                            (L.uint8, L.bool, L.int8, L.int16, L.int32, L.int64, L.float16,
                             L.float32, L.float64, L.complex64)],
    "torch_is_signed": lambda L: L.is_signed(L.zeros(1, dtype=L.uint8)),
    "torch_is_signed_bad": lambda L: L.is_signed(3),
    "is_nonzero": lambda L: [L.tensor(v).is_nonzero() for v in (0.0, 2, [0.5], [[True]],
                                                                float("nan"), -0.0)],
    "is_nonzero_many": lambda L: L.tensor([1, 2]).is_nonzero(),
    "is_nonzero_empty": lambda L: L.is_nonzero(L.tensor([])),
    "is_nonzero_bad": lambda L: L.is_nonzero(1),
    "is_same_size": lambda L: (X(L).is_same_size(L.zeros(2, 2)), L.is_same_size(X(L), L.zeros(2))),
    "is_same_size_bad": lambda L: X(L).is_same_size([1]),
    "torch_is_same_size_bad": lambda L: L.is_same_size(X(L), 1),
    "is_conj_neg": lambda L: (X(L).is_conj(), X(L).is_neg(), L.is_conj(X(L)), L.is_neg(X(L))),
    "is_cpu": lambda L: (X(L).is_cpu, L.zeros(1, dtype=L.int8).is_cpu),
    "conj_real_is_self": lambda L: (lambda x: (x.conj() is x, L.conj(x) is x,
                                               x.resolve_conj() is x, x.resolve_neg() is x,
                                               x.conj_physical() is x,
                                               L.conj_physical(x) is x))(X(L)),
    "conj_int": lambda L: L.tensor([1, -2]).conj(),
    "conj_bad": lambda L: L.conj(3),
    "conj_physical_leaf": lambda L: X(L).conj_physical_(),
    "conj_physical_int": lambda L: (lambda t: (t.conj_physical_() is t, ver(t)))(
        L.tensor([1, 2])),
    "conj_physical_nograd": lambda L: _nograd(L, lambda: (lambda x: (x.conj_physical_() is x,
                                                                     ver(x)))(X(L))),
    "torch_conj_physical_": lambda L: (lambda t: (L.conj_physical_(t) is t, ver(t)))(
        L.tensor([1.0])),
    "conj_complex": lambda L: L.tensor([1 + 2j, -3j]).conj().resolve_conj(),
    "conj_physical_complex": lambda L: L.conj_physical(L.tensor([1 + 2j, -3j])),
    "conj_physical_complex_": lambda L: L.tensor([1 + 2j, -3j]).conj_physical_(),
    "conj_complex_graph": lambda L: L.tensor([1 + 2j], requires_grad=True).conj().grad_fn.name(),
    "conj_physical_complex_graph": lambda L: L.tensor([1 + 2j], requires_grad=True)
    .conj_physical(),
    "conj_physical__complex_graph": lambda L: (L.tensor([1 + 2j], requires_grad=True) * 1)
    .conj_physical_(),
    "int_args": lambda L: [_err(f) for f in (
        lambda: L.zeros(3, 4).narrow_copy(1.0, 0, 1), lambda: L.narrow_copy(L.zeros(3), 0, 0, 1.5),
        lambda: L.zeros(3, 4).unfold(True, 1, 1), lambda: L.zeros(3, 4).unfold(1, 2.0, 1),
        lambda: L.zeros(3, 4).unsafe_chunk(True), lambda: L.unsafe_chunk(L.zeros(3), 2.0),
        lambda: L.zeros(3).unsafe_split([1, 2]), lambda: L.unsafe_split(L.zeros(3), [1, 2]),
        lambda: L.zeros(3, 4).unsafe_split(2, 1.0), lambda: L.zeros(3).diff(1.0),
        lambda: L.diff(L.zeros(3), True), lambda: L.diagflat(L.zeros(2), 1.0),
        lambda: L.zeros(3, 4).unsafe_split_with_sizes((1, 2.0), 1),
        lambda: L.unsafe_split_with_sizes(L.zeros(3), 3), lambda: L.zeros(3).diff(prepend=1),
        lambda: L.zeros(3).diff(append=1.0), lambda: L.zeros(2, 2).fill_diagonal_(1, wrap=1),
        lambda: L.zeros(2, 2).fill_diagonal_("a"))],
    "int_tensor_args": lambda L: tuple(L.zeros(3, 4).unfold(L.tensor(1), 2, 1).shape),
}


@pytest.mark.parametrize("name", sorted(MISC_CASES))
def test_predicates_and_conj_match_torch(name):
    same(MISC_CASES[name])


def test_conj_gradient_is_conjugated():
    for lib in LIBS:
        c = lib.tensor([1 + 2j, 3 - 1j], requires_grad=True)
        y = c.conj()
        y.backward(lib.tensor([1 + 1j, 2 - 3j]))
        assert c.grad.tolist() == [1 - 1j, 2 + 3j], lib.__name__


# --- shape ops: errors and behaviours beyond the op table --------------------------------------
A = lambda L: L.arange(12.0).reshape(3, 4).clone().requires_grad_()  # noqa: E731

SHAPE_CASES = {
    "sum_to_size_bad": lambda L: A(L).sum_to_size(2),
    "sum_to_size_more_dims": lambda L: A(L).sum_to_size(1, 1, 4),
    "sum_to_size_none": lambda L: A(L).sum_to_size(),
    "sum_to_size_self": lambda L: (lambda a: a.sum_to_size(3, 4) is a)(A(L)),
    "sum_to_size_list": lambda L: A(L).sum_to_size([1]),
    "sum_to_size_int": lambda L: L.arange(6, dtype=L.int32).reshape(2, 3).sum_to_size(1, 3),
    "narrow_copy_int": lambda L: L.arange(5).narrow_copy(0, 1, 2),
    "narrow_copy_0d": lambda L: L.tensor(1.0).narrow_copy(0, 0, 1),
    "narrow_copy_too_long": lambda L: A(L).narrow_copy(1, 3, 2),
    "narrow_copy_neg_length": lambda L: A(L).narrow_copy(1, 0, -1),
    "narrow_copy_start": lambda L: A(L).narrow_copy(1, 5, 0),
    "narrow_copy_dim": lambda L: A(L).narrow_copy(2, 0, 1),
    "narrow_copy_not_view": lambda L: A(L).narrow_copy(0, 0, 1)._base is None,
    "unsafe_split_0": lambda L: A(L).unsafe_split(0, 1),
    "unsafe_split_0d": lambda L: L.tensor(1.0).unsafe_split(1),
    "unsafe_split_sizes_bad": lambda L: A(L).unsafe_split_with_sizes([1, 1], 1),
    "unsafe_chunk_0": lambda L: A(L).unsafe_chunk(0),
    "unsafe_chunk_empty": lambda L: L.zeros(0, 2, requires_grad=True).unsafe_chunk(2),
    "unsafe_split_list": lambda L: A(L).unsafe_split([1, 3], 1),
    "unsafe_not_views": lambda L: [(p._base is None, p._is_view()) for p in A(L).unsafe_chunk(2)],
    "hsplit_0d": lambda L: L.tensor(1.0).hsplit(2),
    "hsplit_indivisible": lambda L: A(L).hsplit(3),
    "hsplit_0": lambda L: A(L).hsplit(0),
    "hsplit_1d_indivisible": lambda L: L.arange(6).hsplit(4),
    "hsplit_float": lambda L: A(L).hsplit(1.5),
    "vsplit_1d": lambda L: L.arange(6).vsplit(2),
    "vsplit_indivisible": lambda L: A(L).vsplit(2),
    "dsplit_2d": lambda L: A(L).dsplit(2),
    "dsplit_indivisible": lambda L: L.zeros(2, 2, 3).dsplit(2),
    "hsplit_views": lambda L: [p._base is not None for p in A(L).hsplit(2)],
    "hsplit_tuple": lambda L: L.hsplit(A(L), (1, 2)),
    "unfold_strides": lambda L: (A(L).unfold(1, 2, 1).stride(), A(L).unfold(0, 2, 1).stride(),
                                 A(L).t().unfold(1, 2, 1).stride()),
    "unfold_is_view": lambda L: A(L).unfold(1, 2, 1)._base is not None,
    "unfold_0d_too_big": lambda L: L.tensor(2.0).unfold(0, 2, 1),
    "unfold_too_big": lambda L: A(L).unfold(1, 5, 1),
    "unfold_step_0": lambda L: A(L).unfold(1, 2, 0),
    "unfold_size_0": lambda L: A(L).unfold(1, 0, 1),
    "unfold_size_neg": lambda L: A(L).unfold(1, -1, 1),
    "unfold_dim": lambda L: A(L).unfold(2, 1, 1),
    "unfold_empty": lambda L: L.zeros(0, 3).unfold(0, 0, 1),
    "unfold_int": lambda L: L.arange(5).unfold(0, 2, 2),
    "diagflat_int": lambda L: L.arange(3).diagflat(1),
    "diff_0d": lambda L: L.tensor(1.0).diff(),
    "diff_neg_n": lambda L: A(L).diff(-1),
    "diff_prepend_dims": lambda L: A(L).diff(prepend=L.zeros(4)),
    "diff_prepend_shape": lambda L: A(L).diff(dim=0, prepend=L.zeros(1, 3)),
    "diff_prepend_int": lambda L: A(L).diff(prepend=1),
    "diff_dim": lambda L: A(L).diff(dim=2),
    "diff_bool": lambda L: L.tensor([True, False, False, True]).diff(),
    "diff_int_big_n": lambda L: L.tensor([1, 5, 2]).diff(5),
    "diff_uint8": lambda L: L.tensor([1, 5, 2], dtype=L.uint8).diff(),
    "diff_n0_prepend": lambda L: A(L).diff(0, prepend=A(L)),
    "fill_diagonal_leaf": lambda L: A(L).fill_diagonal_(1),
    "fill_diagonal_1d": lambda L: L.zeros(3).fill_diagonal_(1),
    "fill_diagonal_unequal": lambda L: L.zeros(3, 3, 2).fill_diagonal_(1),
    "fill_diagonal_3d": lambda L: L.zeros(2, 2, 2).fill_diagonal_(1),
    "fill_diagonal_wrap": lambda L: L.zeros(7, 3).fill_diagonal_(5, wrap=True),
    "fill_diagonal_wrap_short": lambda L: L.zeros(4, 3).fill_diagonal_(5, wrap=True),
    "fill_diagonal_wide": lambda L: L.zeros(2, 5).fill_diagonal_(5, wrap=True),
    "fill_diagonal_transposed": lambda L: (lambda z: (z.t().fill_diagonal_(1, wrap=True), z)[1])(
        L.zeros(7, 3)),
    "fill_diagonal_transposed2": lambda L: L.zeros(3, 7).t().fill_diagonal_(1, wrap=True),
    "fill_diagonal_tensor_value": lambda L: L.zeros(3, 3).fill_diagonal_(L.tensor(2.0)),
    "fill_diagonal_int": lambda L: L.zeros(3, 3, dtype=L.int64).fill_diagonal_(2.5),
    "fill_diagonal_returns_self": lambda L: (lambda z: z.fill_diagonal_(1) is z)(L.zeros(2, 2)),
    "fill_diagonal_version": lambda L: (lambda z: (z.fill_diagonal_(1), ver(z))[1])(
        L.zeros(2, 2)),
    "fill_diagonal_nograd": lambda L: _nograd(L, lambda: A(L).fill_diagonal_(0.5).tolist()),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_methods_match_torch(name):
    same(SHAPE_CASES[name])


def test_narrow_copy_backward_of_negative_start_to_the_end_fails_as_in_torch():
    res = []
    for lib in LIBS:
        a = lib.arange(5.0, requires_grad=True)
        try:
            a.narrow_copy(0, -3, 3).sum().backward()
            res.append(a.grad.tolist())
        except RuntimeError as e:
            res.append(str(e))
    assert res[0] == res[1] and "must match the size of tensor b (3)" in res[0]


def test_unsafe_split_pieces_share_memory_with_own_version_counters():
    for lib in LIBS:
        x = lib.zeros(2, 4)
        p = x.unsafe_split(2, 1)[0]
        p.add_(1)
        assert x.tolist() == [[1, 1, 0, 0], [1, 1, 0, 0]]
        assert (ver(x), ver(p)) == (0, 1)


def test_unfold_overlapping_windows_add_their_gradients():
    res = []
    for lib in LIBS:
        a = lib.tensor([1.0, 2, 3, 4], requires_grad=True)
        x = a.clone()
        u = x.unfold(0, 2, 1)
        u.mul_(3)
        u.backward(lib.tensor([[1.0, 2], [3, 4], [5, 6]]))
        res.append(a.grad.tolist())
    assert res[0] == res[1] == [3.0, 15.0, 27.0, 18.0]


def test_fill_diagonal_graph_and_gradient():
    res = []
    for lib in LIBS:
        a = lib.arange(12.0).reshape(3, 4).requires_grad_()
        b = a * 1
        b.fill_diagonal_(0)
        fn = b.grad_fn
        names = (fn.name(), [f.name() for f, _ in fn.next_functions])
        b.sum().backward()
        res.append((names, a.grad.tolist(), b.tolist()))
    assert res[0] == res[1]


# --- random sampling in place -----------------------------------------------------------------
SAMPLER_DTYPES = ("float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool",
                  "complex64")
SAMPLER_CALLS = [
    ("uniform_", ()), ("uniform_", (2.0, 1.0)), ("uniform_", (1.0, 1.0)),
    ("uniform_", (0.0, float("inf"))), ("uniform_", (-3e38, 3e38)), ("uniform_", (0.0, 1e5)),
    ("uniform_", (float("nan"), 1.0)), ("uniform_", ("a",)),
    ("normal_", ()), ("normal_", (0.0, -1.0)), ("normal_", (2.0, 0.0)),
    ("normal_", (0.0, float("nan"))),
    ("bernoulli_", ()), ("bernoulli_", (0.3,)), ("bernoulli_", (2,)),
    ("bernoulli_", (float("nan"),)), ("bernoulli_", ("T", [0.0, 1.0, 1.0])),
    ("bernoulli_", ("T", [0.0, 2.0, 1.0])), ("bernoulli_", ("Ti", [0, 1, 1])),
    ("bernoulli_", ("T", [[0.0, 1.0, 1.0]])), ("bernoulli_", ("T", [1.0])),
    ("bernoulli", ()), ("bernoulli", (0.5,)), ("bernoulli", (1.5,)),
    ("exponential_", ()), ("exponential_", (0,)), ("exponential_", (float("nan"),)),
    ("exponential_", (2.5,)),
    ("geometric_", (0.5,)), ("geometric_", (0,)), ("geometric_", (1,)), ("geometric_", ()),
    ("log_normal_", ()), ("log_normal_", (1, 0)), ("log_normal_", (0.0, 0.5)),
    ("cauchy_", ()), ("cauchy_", (0, 0)), ("cauchy_", (1.0, 2.0)),
    ("random_", ()), ("random_", (5,)), ("random_", (0,)), ("random_", (3, 5)),
    ("random_", (5, 3)), ("random_", (3, None)), ("random_", (-1, 5)), ("random_", (0, 300)),
    ("random_", (0, 2 ** 30)), ("random_", (-2 ** 40, 2 ** 40)), ("random_", (0.5, 3)),
    ("random_", (3.0,)), ("random_", (-2 ** 63,)), ("random_", (-2 ** 63, None)),
    ("random_", (2 ** 60, None)), ("random_", (0, 2 ** 62)),
]


def _sample(L, dt, n, name, args):
    x = L.zeros(n, dtype=getattr(L, dt))
    a = list(args)
    if args and args[0] in ("T", "Ti"):
        a = [L.tensor(args[1], dtype=L.float32 if args[0] == "T" else L.int64)]
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = getattr(x, name)(*a)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).split("\n")[0]
    finite = bool(np.isfinite(r.numpy()).all()) if n and r.dtype.is_floating_point else None
    return (str(r.dtype).split(".")[-1], tuple(r.shape), r is x, ver(x),
            tuple(str(m.message)[:60] for m in w), finite)


@pytest.mark.parametrize("dt", SAMPLER_DTYPES)
def test_sampler_arguments_dtypes_and_errors_match_torch(dt):
    diffs = []
    for n in (3, 0):
        for name, args in SAMPLER_CALLS:
            a, b = _sample(dyngrad, dt, n, name, args), _sample(torch, dt, n, name, args)
            if a != b:
                diffs.append(f"{name}{args} n={n}: dyngrad {a} torch {b}")
    assert not diffs, "\n".join(diffs)


N = 200_000


def _draw(call, dtype=None):
    dyngrad.manual_seed(0)
    return call(dyngrad.empty(N, dtype=dtype or dyngrad.float64)).numpy()


def test_uniform_range_and_moments():
    a = _draw(lambda t: t.uniform_(-2, 3))
    assert a.min() >= -2 and a.max() < 3
    assert abs(a.mean() - 0.5) < 0.02 and abs(a.var() - 25 / 12) < 0.03
    f = _draw(lambda t: t.uniform_(), dyngrad.float32)
    assert f.dtype == np.float32 and 0 <= f.min() and f.max() < 1


def test_normal_log_normal_cauchy_exponential_moments():
    a = _draw(lambda t: t.normal_(1.5, 2.0))
    assert abs(a.mean() - 1.5) < 0.02 and abs(a.std() - 2.0) < 0.02
    ln = np.log(_draw(lambda t: t.log_normal_(0.5, 0.25)))
    assert abs(ln.mean() - 0.5) < 0.005 and abs(ln.std() - 0.25) < 0.005
    c = _draw(lambda t: t.cauchy_(1.0, 2.0))
    q1, q2, q3 = np.percentile(c, [25, 50, 75])
    assert abs(q2 - 1.0) < 0.05 and abs((q3 - q1) / 2 - 2.0) < 0.06
    e = _draw(lambda t: t.exponential_(4.0))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.005 and abs(e.std() - 0.25) < 0.005
    z = _draw(lambda t: t.normal_(0.0, 2.0), dyngrad.complex128)
    assert abs(z.real.std() - np.sqrt(2)) < 0.02 and abs(z.imag.std() - np.sqrt(2)) < 0.02


def test_discrete_samplers_ranges_and_moments():
    b = _draw(lambda t: t.bernoulli_(0.3))
    assert set(np.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.01
    p = dyngrad.tensor([0.0, 0.25, 1.0], dtype=dyngrad.float64)
    dyngrad.manual_seed(0)
    bt = dyngrad.empty(N // 4, 3).bernoulli_(p).numpy()
    assert (bt[:, 0] == 0).all() and (bt[:, 2] == 1).all() and abs(bt[:, 1].mean() - 0.25) < 0.01
    g = _draw(lambda t: t.geometric_(0.25), dyngrad.int64)
    assert g.min() >= 1 and abs(g.mean() - 4.0) < 0.06
    r = _draw(lambda t: t.random_(3, 9), dyngrad.int64)
    assert set(np.unique(r)) == set(range(3, 9))
    r = _draw(lambda t: t.random_(4), dyngrad.int16)
    assert set(np.unique(r)) == {0, 1, 2, 3}
    r = _draw(lambda t: t.random_(), dyngrad.uint8)
    assert r.min() == 0 and r.max() == 255
    r = _draw(lambda t: t.random_(), dyngrad.float16)
    assert r.min() >= 0 and r.max() <= 2048 and (r == np.round(r)).all()
    r = _draw(lambda t: t.random_(), dyngrad.bool)
    assert abs(r.mean() - 0.5) < 0.01
    r = _draw(lambda t: t.random_(250, None), dyngrad.uint8)
    assert set(np.unique(r)) == set(range(250, 256))
    m = dyngrad.tensor([0.0, 1.0, 3.0])
    dyngrad.manual_seed(0)
    s = m.multinomial(N, replacement=True).numpy()
    assert set(np.unique(s)) == {1, 2} and abs((s == 2).mean() - 0.75) < 0.01
    dyngrad.manual_seed(0)
    bo = dyngrad.full((N,), 0.8, dtype=dyngrad.float64).bernoulli().numpy()
    assert abs(bo.mean() - 0.8) < 0.01


SEEDED = {
    "uniform_": lambda t, g: t.uniform_(-1, 1, generator=g),
    "normal_": lambda t, g: t.normal_(generator=g),
    "bernoulli_": lambda t, g: t.bernoulli_(0.5, generator=g),
    "bernoulli_tensor": lambda t, g: t.bernoulli_(dyngrad.full((50,), 0.5), generator=g),
    "exponential_": lambda t, g: t.exponential_(generator=g),
    "geometric_": lambda t, g: t.geometric_(0.3, generator=g),
    "log_normal_": lambda t, g: t.log_normal_(generator=g),
    "cauchy_": lambda t, g: t.cauchy_(generator=g),
    "random_": lambda t, g: t.random_(generator=g),
    "random_to": lambda t, g: t.random_(100, generator=g),
    "random_from_to": lambda t, g: t.random_(-5, 5, generator=g),
    "bernoulli": lambda t, g: t.uniform_(generator=g).bernoulli(generator=g),
    "bernoulli_p": lambda t, g: t.bernoulli(0.5, generator=g),
    "multinomial": lambda t, g: (t.uniform_(generator=g) + 0.1).multinomial(20, generator=g),
}


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_samplers_are_deterministic_under_a_seed(name):
    f = SEEDED[name]

    def run(seed, gen=False):
        if gen:
            g = dyngrad.Generator().manual_seed(seed)
        else:
            dyngrad.manual_seed(seed)
            g = None
        return f(dyngrad.zeros(50), g).tolist()

    assert run(7) == run(7) and run(7) != run(8)
    assert run(7, True) == run(7, True) and run(7, True) != run(8, True)


SAMPLER_GRAPH = {
    "uniform_": lambda L, y, p: y.uniform_(),
    "normal_": lambda L, y, p: y.normal_(),
    "bernoulli_float": lambda L, y, p: y.bernoulli_(0.3),
    "bernoulli_tensor": lambda L, y, p: y.bernoulli_(p),
    "bernoulli_tensor_nograd_p": lambda L, y, p: y.bernoulli_(L.full((4,), 0.5)),
    "bernoulli": lambda L, y, p: y.sigmoid().bernoulli(),
    "torch_bernoulli": lambda L, y, p: L.bernoulli(y.sigmoid()),
    "exponential_": lambda L, y, p: y.exponential_(),
    "geometric_": lambda L, y, p: y.geometric_(0.5),
    "log_normal_": lambda L, y, p: y.log_normal_(),
    "cauchy_": lambda L, y, p: y.cauchy_(),
    "random_": lambda L, y, p: y.random_(),
    "random_to": lambda L, y, p: y.random_(5),
    "random_from_to": lambda L, y, p: y.random_(2, 5),
    "random_from": lambda L, y, p: y.random_(2, None),
    "view": lambda L, y, p: (y[:2].uniform_(), y)[1],
}


def _walk(t):
    def w(fn, d):
        if fn is None:
            return None
        name = fn.name().replace("torch::autograd::", "")
        return name if d == 0 else (name, [w(f, d - 1) for f, _ in fn.next_functions])
    return w(t.grad_fn, 3)


@pytest.mark.parametrize("name", sorted(SAMPLER_GRAPH))
def test_sampler_graphs_and_zero_gradients_match_torch(name):
    res = []
    for L in LIBS:
        x = L.ones(3, 4, requires_grad=True)
        p = L.full((3, 4), 0.5, requires_grad=True)
        y = x * 1
        r = SAMPLER_GRAPH[name](L, y, p)
        graph = _walk(r)
        r.sum().backward()
        res.append((graph, [None if t.grad is None else t.grad.tolist() for t in (x, p)],
                    ver(y), r.shape == y.shape or None))
    assert res[0] == res[1]


@pytest.mark.parametrize("name", sorted(SAMPLER_GRAPH))
def test_samplers_refuse_a_leaf_requiring_grad_and_work_under_no_grad(name):
    if name in ("bernoulli", "torch_bernoulli"):
        pytest.skip("not in place")
    msgs = []
    for L in LIBS:
        x = L.ones(3, 4, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            SAMPLER_GRAPH[name](L, x, L.full((3, 4), 0.5))
        msgs.append(str(e.value).split("\n")[0])
        with L.no_grad():
            SAMPLER_GRAPH[name](L, x, L.full((3, 4), 0.5))
        assert ver(x) == 1 and x.is_leaf and x.requires_grad
    assert msgs[0] == msgs[1]


def test_bernoulli_with_p_has_no_derivative():
    msgs = []
    for L in LIBS:
        x = L.ones(3, requires_grad=True)
        r = (x * 0.5).bernoulli(0.3)
        assert r.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError) as e:
            r.sum().backward()
        msgs.append(str(e.value).split("\n")[0])
    assert msgs[0] == msgs[1] == "derivative for aten::bernoulli is not implemented"


def test_nn_init_style_use_on_parameters():
    """nn.init fills parameters under no_grad with these methods."""
    lin = dyngrad.nn.Linear(4, 3)
    dyngrad.manual_seed(1)
    with dyngrad.no_grad():
        lin.weight.uniform_(-0.1, 0.1)
        lin.bias.normal_(0.0, 0.01)
    assert lin.weight.is_leaf and lin.weight.requires_grad
    assert (lin.weight.abs() < 0.1).all()
    lin(dyngrad.ones(2, 4)).sum().backward()
    assert lin.weight.grad.shape == (3, 4)


# --- binary math: heaviside, gcd, lcm, shifts, ldexp, frexp, nextafter ------------------------
def _close(a, b):
    """Outcomes equal, floats to a few ulps."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-6 * max(1, abs(b))
    return a == b


def close(fn):
    a, b = outcome(dyngrad, fn), outcome(torch, fn)
    assert _close(a, b), f"\ndyngrad {a}\ntorch   {b}"


FI = lambda L: L.tensor([-1.5, 0.0, 2.0, -0.0, float("nan")])  # noqa: E731
II = lambda L: L.tensor([-4, 0, 6, 7])  # noqa: E731
BINARY_CASES = {
    "heaviside": lambda L: FI(L).heaviside(L.tensor([0.5])),
    "heaviside_int": lambda L: II(L).heaviside(L.tensor([9])),
    "heaviside_bool": lambda L: L.tensor([True, False]).heaviside(L.tensor([True, True])),
    "heaviside_dtypes": lambda L: FI(L).heaviside(L.tensor([1])),
    "heaviside_0d_dtype": lambda L: FI(L).heaviside(L.tensor(0.5, dtype=L.float64)),
    "heaviside_complex": lambda L: L.tensor([1j]).heaviside(L.tensor([1j])),
    "heaviside_scalar": lambda L: FI(L).heaviside(0.5),
    "torch_heaviside_scalar": lambda L: L.heaviside(FI(L), 0.5),
    "heaviside_": lambda L: FI(L).heaviside_(L.tensor([3.0])),
    "heaviside_bcast": lambda L: FI(L).heaviside(L.ones(2, 1)),
    "gcd": lambda L: II(L).gcd(L.tensor([6, 5, -4, 0])),
    "gcd_promote": lambda L: II(L).gcd(L.tensor([6, 5, -4, 0], dtype=L.int8)),
    "gcd_0d": lambda L: L.gcd(II(L), L.tensor(4, dtype=L.int8)),
    "gcd_float": lambda L: FI(L).gcd(FI(L)),
    "gcd_bool": lambda L: L.tensor([True]).gcd(L.tensor([True])),
    "gcd_scalar": lambda L: II(L).gcd(3),
    "torch_gcd_scalar": lambda L: L.gcd(II(L), 3),
    "gcd_": lambda L: (lambda t: (t.gcd_(L.tensor([6, 5, -4, 0])) is t, t.tolist()))(II(L)),
    "torch_gcd_": lambda L: (lambda t: (L.gcd_(t, L.tensor([2])), ver(t))[1])(II(L)),
    "gcd_int8_cast": lambda L: L.tensor([4], dtype=L.int8).gcd_(L.tensor([6])),
    "gcd_bad_shape": lambda L: II(L).gcd(L.tensor([1, 2])),
    "lcm": lambda L: II(L).lcm(L.tensor([6, 5, -4, 0])),
    "lcm_uint8_wraps": lambda L: L.tensor([200], dtype=L.uint8).lcm(L.tensor([3], dtype=L.uint8)),
    "lcm_": lambda L: II(L).lcm_(L.tensor([3])),
    "lcm_float": lambda L: L.lcm(FI(L), FI(L)),
    "lshift": lambda L: II(L).bitwise_left_shift(L.tensor([1, 2, 3, 62])),
    "lshift_op": lambda L: II(L) << 2,
    "lshift_rop": lambda L: 2 << II(L).abs(),
    "rshift_rop": lambda L: 256 >> II(L).abs(),
    "torch_lshift_scalar_first": lambda L: L.bitwise_left_shift(3, II(L).abs()),
    "torch_shift_two_scalars": lambda L: L.bitwise_left_shift(3, 4),
    "lshift_big_neg": lambda L: (II(L) << 70, II(L) << -1, II(L) << 63, II(L) << 64),
    "rshift_big_neg": lambda L: (II(L) >> 70, II(L) >> -1, II(L) >> 63, II(L) >> 2 ** 40),
    "shift_uint8": lambda L: [(L.tensor([200, 3], dtype=L.uint8) >> k).tolist() for k in
                              (7, 8, 9, 200)] + [(L.tensor([200, 3], dtype=L.uint8) << k).tolist()
                                                 for k in (1, 7, 8, 200)],
    "shift_uint8_tensor": lambda L: (L.tensor([200, 3], dtype=L.uint8) >> L.tensor(
        [200, 250], dtype=L.uint8), L.tensor([200, 3], dtype=L.uint8) << L.tensor(
        [200, 1], dtype=L.uint8)),
    "shift_int8": lambda L: [(L.tensor([-100, 100], dtype=L.int8) >> k).tolist() for k in
                             (1, 7, 8, -3)] + [(L.tensor([-100, 100], dtype=L.int8) << k).tolist()
                                               for k in (1, 7, 8, -1)],
    "shift_int16_int8": lambda L: L.tensor([5], dtype=L.int16) << L.tensor([1], dtype=L.int8),
    "shift_int8_0d": lambda L: L.tensor([5], dtype=L.int8) << L.tensor(1),
    "shift_bool_scalar": lambda L: (L.tensor([True]) << 1, L.tensor([1]) << True),
    "shift_bool": lambda L: L.tensor([True]) << L.tensor([True]),
    "shift_float": lambda L: FI(L) << 1,
    "shift_float_scalar": lambda L: II(L) << 1.5,
    "shift_float_rop": lambda L: 1.5 << II(L),
    "ilshift": lambda L: (lambda t: (t.__ilshift__(1) is t, t.tolist(), ver(t)))(II(L)),
    "irshift_tensor": lambda L: (lambda t: (t.__irshift__(L.tensor([1])), t)[1])(II(L)),
    "ilshift_int8_float": lambda L: (lambda t: t.__ilshift__(L.tensor([1.0])))(
        L.tensor([1, 2], dtype=L.int8)),
    "lshift_": lambda L: II(L).bitwise_left_shift_(2),
    "rshift_": lambda L: II(L).bitwise_right_shift_(L.tensor([1, 2, 0, 1])),
    "ldexp": lambda L: FI(L).ldexp(L.tensor([1, 2, 3, 4, 5])),
    "ldexp_int": lambda L: II(L).ldexp(L.tensor([1, 2, 3, 4])),
    "ldexp_float_exp": lambda L: L.ldexp(L.tensor([1.0, 3.0]), L.tensor([1.5, -2.0])),
    "ldexp_f64_exp": lambda L: FI(L).ldexp(L.tensor([1.0], dtype=L.float64)),
    "ldexp_half": lambda L: L.tensor([3.0], dtype=L.float16).ldexp(L.tensor([20])),
    "ldexp_complex": lambda L: L.tensor([1j, 2]).ldexp(L.tensor([1])),
    "ldexp_scalar": lambda L: FI(L).ldexp(2),
    "torch_ldexp_scalar": lambda L: L.ldexp(FI(L), 2),
    "ldexp_": lambda L: FI(L).ldexp_(L.tensor([1])),
    "ldexp_int_self": lambda L: II(L).ldexp_(L.tensor([1])),
    "torch_ldexp_": lambda L: (lambda t: (L.ldexp_(t, L.tensor([2])) is t, t.tolist()))(FI(L)),
    "frexp": lambda L: tuple(FI(L).frexp()),
    "frexp_names": lambda L: (lambda r: (type(r).__name__, r.mantissa.tolist(),
                                         r.exponent.dtype is L.int32))(L.frexp(FI(L))),
    "frexp_special": lambda L: tuple(L.tensor([float("inf"), -float("inf"), 1e-40, 1e30,
                                                 0.75]).frexp()),
    "frexp_dtypes": lambda L: [tuple(FI(L).to(d).frexp()) for d in (L.float16, L.float64)],
    "frexp_int": lambda L: II(L).frexp(),
    "nextafter": lambda L: FI(L).nextafter(L.tensor([1.0])),
    "nextafter_f64": lambda L: FI(L).nextafter(L.tensor([1.0], dtype=L.float64)),
    "nextafter_half": lambda L: FI(L).half().nextafter(L.tensor([10.0], dtype=L.float16)),
    "nextafter_int": lambda L: II(L).nextafter(II(L)),
    "nextafter_scalar": lambda L: FI(L).nextafter(1.0),
    "nextafter_": lambda L: FI(L).nextafter_(L.tensor([-5.0])),
    "nextafter_grad": lambda L: (lambda x, y: (x.nextafter(y).sum().backward(), x.grad,
                                               y.grad)[1:])(
        L.tensor([1.0, 1.0], requires_grad=True), L.tensor([1.0, 2.0], requires_grad=True)),
}


@pytest.mark.parametrize("name", sorted(BINARY_CASES))
def test_binary_math_matches_torch(name):
    close(BINARY_CASES[name])


def test_heaviside_has_no_derivative():
    res = []
    for L in LIBS:
        x = L.tensor([1.0, -1.0], requires_grad=True)
        y = x * 1
        r = y.heaviside(L.tensor([0.5, 0.5], requires_grad=True))
        y2 = x * 1
        y2.heaviside_(L.tensor([0.5]))
        with pytest.raises(RuntimeError) as e:
            r.sum().backward()
        res.append((r.grad_fn.name(), len(r.grad_fn.next_functions), y2.grad_fn.name(),
                    str(e.value).split("\n")[0]))
    assert res[0] == res[1]


# --- statistics --------------------------------------------------------------------------------
HF = lambda L: L.tensor([1.0, 2, 1, 4, 2.5, -3, 7, float("nan"), 0.5])  # noqa: E731
HISTC_CASES = {
    "default": lambda L: HF(L)[:7].histc(),
    "bins": lambda L: HF(L)[:7].histc(4),
    "range": lambda L: HF(L).histc(5, 0, 3),
    "edges": lambda L: L.tensor([0.0, 1.0, 2.0, 3.0, 3.0000001]).histc(3, 0, 3),
    "equal": lambda L: L.ones(3).histc(4),
    "empty": lambda L: L.zeros(0).histc(4),
    "empty_range": lambda L: L.zeros(0).histc(2, 1, 1),
    "bad_range": lambda L: HF(L).histc(4, 3, 1),
    "bins_0": lambda L: HF(L).histc(0),
    "bins_neg_bad_range": lambda L: HF(L).histc(-1, 3, 1),
    "nan_data": lambda L: HF(L).histc(2),
    "inf_data": lambda L: L.tensor([1.0, float("inf")]).histc(2),
    "inf_range": lambda L: HF(L).histc(2, 0, float("inf")),
    "nan_range": lambda L: L.zeros(2, dtype=L.float64).histc(2, 0, float("nan")),
    "int": lambda L: L.tensor([1, 2]).histc(2),
    "int_bad_range": lambda L: L.tensor([1, 2]).histc(2, 3, 1),
    "half": lambda L: L.tensor([1.0, 2, 2.5], dtype=L.float16).histc(3),
    "double_2d": lambda L: HF(L)[:6].double().reshape(2, 3).histc(3),
    "float_bins": lambda L: HF(L).histc(2.5),
    "torch_kw": lambda L: L.histc(HF(L), bins=3, min=1, max=2),
    "requires_grad": lambda L: L.tensor([1.0, 2.0], requires_grad=True).histc(2),
}


@pytest.mark.parametrize("name", sorted(HISTC_CASES))
def test_histc_matches_torch(name):
    close(HISTC_CASES[name])


def test_histc_random_values_match_torch():
    rs = np.random.RandomState(3)
    for dt in ("float32", "float64", "float16"):
        for bins, lo, hi in ((7, 0, 0), (10, -1, 1), (3, -0.3, 0.9), (50, 0, 0)):
            data = rs.randn(500).astype(dt)
            a = dyngrad.from_numpy(data.copy()).histc(bins, lo, hi).numpy()
            b = torch.from_numpy(data.copy()).histc(bins, lo, hi).numpy()
            np.testing.assert_array_equal(a, b)


BI = lambda L: L.tensor([1, 2, 1, 4])  # noqa: E731
BINCOUNT_CASES = {
    "plain": lambda L: BI(L).bincount(),
    "weights_f32": lambda L: BI(L).bincount(L.tensor([0.5, 1, 2, 3])),
    "weights_f64": lambda L: BI(L).bincount(L.tensor([0.5, 1, 2, 3], dtype=L.float64)),
    "weights_int": lambda L: BI(L).bincount(L.tensor([1, 1, 2, 3])),
    "weights_half": lambda L: BI(L).bincount(L.tensor([1, 1, 2, 3], dtype=L.float16)),
    "minlength": lambda L: L.bincount(BI(L), minlength=7),
    "minlength_small": lambda L: BI(L).bincount(minlength=2),
    "negative": lambda L: L.tensor([-1, 2]).bincount(),
    "float": lambda L: L.tensor([1.0]).bincount(),
    "bool": lambda L: L.tensor([True]).bincount(),
    "two_dims": lambda L: BI(L).reshape(2, 2).bincount(),
    "empty": lambda L: L.zeros(0, dtype=L.int64).bincount(),
    "empty_weights": lambda L: L.zeros(0, dtype=L.int64).bincount(L.zeros(0), minlength=3),
    "weights_shape": lambda L: BI(L).bincount(L.ones(3)),
    "weights_2d": lambda L: L.tensor([1, 2]).bincount(L.ones(1, 2)),
    "minlength_neg": lambda L: BI(L).bincount(minlength=-1),
    "uint8": lambda L: L.tensor([1, 2], dtype=L.uint8).bincount(),
    "int8": lambda L: L.tensor([3, 0], dtype=L.int8).bincount(),
    "weights_grad": lambda L: BI(L).bincount(L.ones(4, requires_grad=True)),
}


@pytest.mark.parametrize("name", sorted(BINCOUNT_CASES))
def test_bincount_matches_torch(name):
    close(BINCOUNT_CASES[name])


def test_bincount_weights_have_no_derivative():
    msgs = []
    for L in LIBS:
        w = L.ones(4, requires_grad=True)
        r = BI(L).bincount(w)
        assert len(r.grad_fn.next_functions) == 1
        with pytest.raises(RuntimeError) as e:
            r.sum().backward()
        msgs.append(str(e.value).split("\n")[0])
    assert msgs[0] == msgs[1]


QF = lambda L: L.tensor([[1.0, 2, 1, 4], [2.5, 0, 3, 1]])  # noqa: E731
QUANTILE_CASES = {
    "int_input": lambda L: L.tensor([1, 2]).quantile(0.3),
    "half_input": lambda L: QF(L).half().quantile(0.5),
    "q_float64": lambda L: QF(L).quantile(L.tensor([0.3, 0.5], dtype=L.float64)),
    "q_int": lambda L: QF(L).quantile(L.tensor([0, 1])),
    "q_2d": lambda L: QF(L).quantile(L.tensor([[0.3, 0.5]])),
    "q_out_of_range": lambda L: QF(L).quantile(1.5),
    "q_negative": lambda L: L.quantile(QF(L), -0.5),
    "q_tensor_out_of_range": lambda L: QF(L).quantile(L.tensor([1.5])),
    "q_list": lambda L: QF(L).quantile([0.5]),
    "empty": lambda L: L.zeros(0).quantile(0.5),
    "empty_dim": lambda L: L.zeros(2, 0).quantile(0.5, dim=0),
    "bad_dim": lambda L: QF(L).quantile(0.5, dim=2),
    "bad_interpolation": lambda L: QF(L).quantile(0.4, interpolation="foo"),
    "order_q_then_interp": lambda L: QF(L).quantile(2.0, interpolation="foo"),
    "order_interp_then_dtype": lambda L: L.tensor([1, 2]).quantile(0.5, interpolation="foo"),
    "nan": lambda L: L.tensor([1.0, float("nan"), 3.0]).quantile(0.5),
    "nanquantile_nan": lambda L: L.tensor([1.0, float("nan"), 3.0]).nanquantile(0.5),
    "nanquantile_all_nan": lambda L: L.tensor([float("nan"), float("nan")]).nanquantile(0.5),
    "nanquantile_rows": lambda L: L.tensor([[1.0, float("nan"), 3.0], [float("nan")] * 3])
    .nanquantile(L.tensor([0.2, 0.9]), dim=1, keepdim=True),
    "0d": lambda L: L.tensor(3.0).quantile(0.5),
    "0d_dim": lambda L: (L.tensor(3.0).quantile(0.5, dim=0),
                         L.tensor(3.0).quantile(0.5, dim=0, keepdim=True),
                         L.tensor(3.0).quantile(0.5, dim=-1, keepdim=True)),
    "0d_q": lambda L: QF(L).quantile(L.tensor(0.5)),
    "keepdim_no_dim": lambda L: QF(L).quantile(0.5, keepdim=True),
    "nearest_half_even": lambda L: L.tensor([0.0, 1, 2, 3, 4]).quantile(
        L.tensor([0.125, 0.375, 0.625]), interpolation="nearest"),
    "out": lambda L: (lambda o: (L.quantile(QF(L), 0.5, dim=1, out=o), o)[1])(L.zeros(2)),
}


@pytest.mark.parametrize("name", sorted(QUANTILE_CASES))
def test_quantile_matches_torch(name):
    close(QUANTILE_CASES[name])


@pytest.mark.parametrize("mode", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_random_values_match_torch(mode):
    rs = np.random.RandomState(5)
    for dt in ("float32", "float64"):
        for shape, dim, keep in (((7,), None, False), ((4, 9), 1, False), ((4, 9), 0, True),
                                 ((3, 4, 5), 1, False), ((3, 4, 5), None, True)):
            data = rs.randn(*shape).astype(dt)
            data[data > 1.5] = np.nan
            q = rs.uniform(0, 1, 4).astype(dt)
            for fn in ("quantile", "nanquantile"):
                a = getattr(dyngrad.from_numpy(data.copy()), fn)(
                    dyngrad.from_numpy(q), dim, keep, interpolation=mode).numpy()
                b = getattr(torch.from_numpy(data.copy()), fn)(
                    torch.from_numpy(q), dim, keep, interpolation=mode).numpy()
                np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True)


CF = lambda L: L.tensor([[1.0, 2, 1, 4], [2.5, 0, 3, 1]])  # noqa: E731
COV_CASES = {
    "cov": lambda L: CF(L).cov(),
    "cov_1d": lambda L: L.tensor([1, 2, 1, 4]).cov(),
    "cov_int": lambda L: L.tensor([[1, 2], [3, 7]]).cov(),
    "cov_correction": lambda L: L.cov(CF(L), correction=0),
    "cov_fweights": lambda L: CF(L).cov(fweights=L.tensor([1, 2, 1, 1])),
    "cov_aweights": lambda L: CF(L).cov(aweights=L.tensor([1.0, 2, 1, 1])),
    "cov_both": lambda L: CF(L).cov(correction=2, fweights=L.tensor([1, 2, 1, 1]),
                                    aweights=L.tensor([1.0, 2, 1, 0.5])),
    "cov_fweights_float": lambda L: CF(L).cov(fweights=L.tensor([1.0, 2, 1, 1])),
    "cov_fweights_neg": lambda L: CF(L).cov(fweights=L.tensor([-1, 2, 1, 1])),
    "cov_aweights_neg": lambda L: CF(L).cov(aweights=L.tensor([-1.0, 2, 1, 1])),
    "cov_aweights_int": lambda L: CF(L).cov(aweights=L.tensor([1, 2, 1, 1])),
    "cov_fweights_len": lambda L: CF(L).cov(fweights=L.tensor([1, 2])),
    "cov_fweights_2d": lambda L: CF(L).cov(fweights=L.tensor([[1, 2, 1, 1]])),
    "cov_weights_zero": lambda L: CF(L).cov(fweights=L.zeros(4, dtype=L.int64)),
    "cov_3d": lambda L: L.zeros(2, 2, 2).cov(),
    "cov_bool": lambda L: L.tensor([[True, False]]).cov(),
    "cov_single_observation": lambda L: L.tensor([[1.0], [2.0]]).cov(),
    "cov_single_observation_weighted": lambda L: L.tensor([[1.0], [2.0]]).cov(
        fweights=L.tensor([2])),
    "cov_single_aweighted_int": lambda L: L.tensor([[1], [2]]).cov(aweights=L.tensor([2.0])),
    "cov_empty": lambda L: L.zeros(2, 0).cov(),
    "corrcoef": lambda L: CF(L).corrcoef(),
    "corrcoef_1d": lambda L: L.tensor([1.0, 2, 1, 4]).corrcoef(),
    "corrcoef_int": lambda L: L.tensor([[1, 2], [3, 7]]).corrcoef(),
    "corrcoef_constant_row": lambda L: L.tensor([[1.0, 1, 1], [1, 2, 3]]).corrcoef(),
    "corrcoef_3d": lambda L: L.zeros(2, 2, 2).corrcoef(),
}


@pytest.mark.parametrize("name", sorted(COV_CASES))
def test_cov_corrcoef_match_torch(name):
    close(COV_CASES[name])


# --- renorm, matrix_power, pinverse --------------------------------------------------------------
RX = lambda L: L.tensor([[1.0, 2, 3], [0.1, 0.2, 0.1]])  # noqa: E731
MATRIX_CASES = {
    "renorm": lambda L: RX(L).renorm(2, 0, 1),
    "renorm_inf": lambda L: RX(L).renorm(float("inf"), 0, 1),
    "renorm_p_small": lambda L: L.renorm(RX(L), 0.5, 1, 1),
    "renorm_p0": lambda L: RX(L).renorm(0, 0, 1),
    "renorm_maxnorm_neg": lambda L: RX(L).renorm(2, 0, -1),
    "renorm_1d": lambda L: RX(L)[0].renorm(2, 0, 1),
    "renorm_dim": lambda L: RX(L).renorm(2, 2, 1),
    "renorm_int": lambda L: L.tensor([[1, 2]]).renorm(2, 0, 1),
    "renorm_half": lambda L: RX(L).half().renorm(2, 0, 1),
    "renorm_empty": lambda L: L.zeros(2, 0).renorm(2, 0, 1),
    "renorm_complex_p": lambda L: RX(L).renorm(2j, 0, 1),
    "renorm_": lambda L: (lambda t: (t.renorm_(2, 1, 0.5) is t, t.tolist(), ver(t)))(RX(L)),
    "renorm_leaf": lambda L: RX(L).requires_grad_().renorm_(2, 0, 1),
    "matrix_power": lambda L: L.tensor([[1.0, 2], [3, 4]]).matrix_power(5),
    "matrix_power_neg": lambda L: L.tensor([[1.0, 2], [3, 4]], dtype=L.float64).matrix_power(-3),
    "matrix_power_0": lambda L: L.tensor([[1, 2], [3, 4]]).matrix_power(0),
    "matrix_power_int": lambda L: L.tensor([[1, 2], [3, 4]]).matrix_power(3),
    "matrix_power_int_neg": lambda L: L.tensor([[1, 2], [3, 4]]).matrix_power(-1),
    "matrix_power_float_n": lambda L: L.eye(2).matrix_power(2.0),
    "matrix_power_1d": lambda L: L.ones(4).matrix_power(2),
    "matrix_power_not_square": lambda L: L.ones(3, 4).matrix_power(2),
    "matrix_power_empty": lambda L: (L.zeros(0, 0).matrix_power(2), L.zeros(2, 0, 0)
                                     .matrix_power(-1)),
    "matrix_power_batch_0": lambda L: L.ones(2, 3, 3).matrix_power(0),
    "matrix_power_graph": lambda L: L.ones(2, 2, requires_grad=True).matrix_power(1),
    "pinverse": lambda L: L.tensor([[1.0, 2, 3], [3, 4, 5]], dtype=L.float64).pinverse(),
    "pinverse_rank_deficient": lambda L: L.tensor([[1.0, 2], [2, 4]], dtype=L.float64)
    .pinverse(),
    "pinverse_rcond": lambda L: L.pinverse(L.tensor([[1.0, 0], [0, 1e-4]],
                                                    dtype=L.float64), 1e-3),
    "pinverse_1d": lambda L: L.ones(4).pinverse(),
    "pinverse_int": lambda L: L.tensor([[1, 2], [3, 4]]).pinverse(),
    "pinverse_half": lambda L: L.ones(2, 2, dtype=L.float16).pinverse(),
    "pinverse_empty": lambda L: L.zeros(0, 3).pinverse(),
    "pinverse_zeros": lambda L: L.zeros(3, 3).pinverse(),
    "pinverse_bad_rcond": lambda L: L.ones(2, 2).pinverse("a"),
}


@pytest.mark.parametrize("name", sorted(MATRIX_CASES))
def test_renorm_matrix_power_pinverse_match_torch(name):
    close(MATRIX_CASES[name])
