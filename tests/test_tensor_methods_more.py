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
    ws = [str(x.message) for x in w]

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
