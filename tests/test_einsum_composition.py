"""einsum, tensordot, inner and linalg.matrix_norm record PyTorch's composition: the same
nodes (names, edges, input numbers), values and gradients (first and second order) as
PyTorch over shapes the op-table rows do not reach (repeated subscripts, broadcast dims,
scalars, operand swaps in the pairwise product, full contractions, opt_einsum paths)."""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from dyngrad.ops import linalg as _lin  # noqa: E402
from tests.test_graph_structure import _first_difference, walk  # noqa: E402


def _run(lib, fn, shapes, mask, second=True):
    rs = np.random.RandomState(0)
    leaves = [lib.from_numpy(rs.standard_normal(s)).requires_grad_(bool(mask >> i & 1))
              for i, s in enumerate(shapes)]
    out = fn(lib, *leaves)
    graph = walk(out, leaves)
    diff = [t for t in leaves if t.requires_grad]
    gs = lib.autograd.grad(out, diff, lib.from_numpy(rs.standard_normal(tuple(out.shape))),
                           create_graph=second)
    gg = [None] * len(diff)
    if second:
        s = sum((g * g).sum() for g in gs)
        if s.requires_grad:
            gg = lib.autograd.grad(s, diff, allow_unused=True)
    np_ = (lambda t: None if t is None else
           t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else t.detach().numpy())
    return graph, np_(out), [np_(g) for g in gs], [np_(g) for g in gg]


def _same(fn, shapes, second=True):
    for mask in range(1, 2 ** len(shapes)):
        a = _run(dyngrad, fn, shapes, mask, second)
        b = _run(torch, fn, shapes, mask, second)
        d = _first_difference(a[0], b[0])
        assert d is None, (mask, d)
        assert a[1].shape == b[1].shape and a[1].dtype == b[1].dtype
        np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-12)
        for x, y in zip(a[2] + a[3], b[2] + b[3]):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


EINSUM = [
    ("jk,ij->ik", [(3, 4), (2, 3)]), ("iij->j", [(3, 3, 2)]), ("iji->j", [(3, 2, 3)]),
    ("ii", [(3, 3)]), ("ij->ij", [(3, 4)]), ("i,->i", [(3,), ()]), (",->", [(), ()]),
    ("ij,ij->", [(3, 4), (3, 4)]), ("ij,ij->i", [(3, 4), (1, 4)]),
    ("bij,bjk->bik", [(2, 1, 3), (1, 3, 4)]), ("...ij->...", [(2, 3, 4)]),
    ("i...->", [(2, 3, 4)]), ("Ab,bA->", [(2, 3), (3, 2)]), ("aB,Bc", [(2, 3), (3, 4)]),
    ("ij,jk,kl,lm->im", [(2, 3), (3, 4), (4, 5), (5, 2)]), ("i,i,i->i", [(3,), (3,), (3,)]),
    ("i,j,k->ijk", [(2,), (3,), (4,)]), ("iij,jk->ik", [(2, 2, 3), (3, 4)]),
    ("ijk,kji->", [(2, 3, 4), (4, 3, 2)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,kj->ik", [(2, 0), (3, 0)]), ("ij,jk->ik", [(0, 3), (3, 4)]), ("i,j->", [(3,), (4,)]),
    ("ij,ji->ij", [(2, 3), (3, 2)]), ("abc,cd,de->abe", [(2, 1, 3), (3, 4), (4, 2)]),
    ("i j , j k -> i k", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum_records_pytorch_composition(eq, shapes):
    _same(lambda L, *ops: L.einsum(eq, *ops), shapes)


def test_einsum_without_grad_keeps_values():
    rs = np.random.RandomState(1)
    for eq, shapes in EINSUM:
        arrs = [rs.standard_normal(s) for s in shapes]
        a = dyngrad.einsum(eq, *[dyngrad.from_numpy(x) for x in arrs])
        b = torch.einsum(eq, *[torch.from_numpy(x) for x in arrs])
        assert a.grad_fn is None and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)


class _FakeOptEinsum:
    """Stands in for the opt_einsum package: a fixed contraction path."""
    path = [(1, 2), (0, 1)]

    @classmethod
    def contract_path(cls, equation, *operands, optimize="auto"):
        return list(cls.path), None


def test_einsum_follows_an_opt_einsum_path(monkeypatch):
    """With opt_einsum installed (and enabled) PyTorch contracts in its path's order; dyngrad
    takes the same path and records the same graph (PyTorch given the path explicitly)."""
    monkeypatch.setattr(_lin, "_OPT_EINSUM", [_FakeOptEinsum])
    eq, shapes = "ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]
    flat = [i for p in _FakeOptEinsum.path for i in p]
    for mask in range(1, 8):
        a = _run(dyngrad, lambda L, *ops: L.einsum(eq, *ops), shapes, mask, False)
        b = _run(torch, lambda L, *ops: torch._VF.einsum(eq, ops, path=flat), shapes, mask,
                 False)
        assert _first_difference(a[0], b[0]) is None
        np.testing.assert_allclose(a[1], b[1], rtol=1e-10)


TENSORDOT = [
    (1, [(2, 3), (3, 4)]), (2, [(2, 3, 4), (3, 4, 5)]), (0, [(), ()]), (0, [(2,), ()]),
    (1, [(2, 1), (1, 3)]), (1, [(2, 3), (1, 3)]), (1, [(2, 1), (4, 3)]),
    (([0, 1], [1, 0]), [(2, 3), (3, 2)]), (([1, 0], [0, 1]), [(2, 3), (3, 2)]),
    (([0, 1], [0, 1]), [(2, 3), (2, 3)]), (([1], [1]), [(1, 3), (1, 3)]),
    (([-1], [0]), [(2, 3), (3, 1)]), (([0, 2], [2, 0]), [(2, 3, 4), (4, 5, 2)]),
    (1, [(0, 3), (3, 2)]),
]


@pytest.mark.parametrize("dims,shapes", TENSORDOT, ids=[str(i) for i in range(len(TENSORDOT))])
def test_tensordot_records_pytorch_composition(dims, shapes):
    _same(lambda L, a, b: L.tensordot(a, b, dims=dims), shapes)


@pytest.mark.parametrize("shapes", [[(2, 3), (4, 3)], [(3,), (3,)], [(2, 2, 3), (3,)],
                                    [(1, 3), (1, 3)], [(), (3,)], [(2, 1), (3, 1)]])
def test_inner_records_pytorch_composition(shapes):
    _same(lambda L, a, b: L.inner(a, b), shapes)


def test_tensordot_errors_and_int_dtypes_as_pytorch():
    for L in (dyngrad, torch):
        with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
            L.tensordot(L.ones(2, 3), L.ones(3, 2), dims=([0, 0], [1, 1]))
        with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first "
                                               "has size 2 in dim 0 and second has size 3"):
            L.tensordot(L.ones(2, 3), L.ones(3, 2), dims=([0, 1], [0, 1]))
        r = L.tensordot(L.ones(2, 1, dtype=L.int32), L.ones(3, 1, dtype=L.int32), dims=([1], [1]))
        assert r.dtype == L.int32 and tuple(r.shape) == (2, 3)


NORMS = [(o, s, d, k) for o in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)
         for s, d in (((3, 4), (-2, -1)), ((2, 3, 4), (0, 2)), ((4, 3), (1, 0)),
                      ((2, 3, 4), (-1, -3)))
         for k in (False, True)]


@pytest.mark.parametrize("ord,shape,dim,keepdim", NORMS)
def test_matrix_norm_records_pytorch_composition(ord, shape, dim, keepdim):
    _same(lambda L, a: L.linalg.matrix_norm(a, ord, dim, keepdim), [shape],
          second=ord not in ("nuc", 2, -2))


@pytest.mark.parametrize("args,kw", [((dyngrad.float64, 3), {}), ((dyngrad.float64, "foo"), {}),
                                     ((dyngrad.int64, 1), {}), ((dyngrad.float16, 2), {}),
                                     ((dyngrad.float64, 1), {"dim": (0,)}),
                                     ((dyngrad.float64, 1), {"dim": (0, -2)}),
                                     ((dyngrad.float64, 1), {"dtype": "int64"}),
                                     ((dyngrad.float64, "fro"), {"dtype": "float32"}),
                                     ((dyngrad.float32, 1), {"dtype": "complex128"})])
def test_matrix_norm_errors_as_pytorch(args, kw):
    msgs = []
    for L in (dyngrad, torch):
        dt = getattr(L, str(args[0]).split(".")[-1])
        k = dict(kw)
        if "dtype" in k:
            k["dtype"] = getattr(L, k["dtype"])
        with pytest.raises(RuntimeError) as e:
            L.linalg.matrix_norm(L.ones(3, 4, dtype=dt), args[1], **k)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2), (2, 2, 3)])
@pytest.mark.parametrize("full", [False, True])
def test_svd_factors_have_pytorch_strides(shape, full):
    """U and Vh are stored column by column, as LAPACK returns them to PyTorch."""
    a = np.random.RandomState(0).standard_normal(shape)
    got = [t.stride() for t in dyngrad.linalg.svd(dyngrad.from_numpy(a), full_matrices=full)]
    exp = [t.stride() for t in torch.linalg.svd(torch.from_numpy(a), full_matrices=full)]
    assert got == exp
    got = [t.stride() for t in dyngrad.svd(dyngrad.from_numpy(a))]
    exp = [t.stride() for t in torch.svd(torch.from_numpy(a))]
    assert got == exp


def test_einsum_after_a_partial_sum_of_a_permuted_operand():
    """A reduction's result is contiguous, as PyTorch's, so a later reshape is a view."""
    _same(lambda L, a, b: L.einsum("...ij,...jk->ij", a, b), [(2, 2, 3), (2, 3, 4)])


EINSUM_BAD = [("ii->i", [(2, 3)]), ("ij->ii", [(2, 3)]), ("i1->i", [(2, 3)]), ("i..j->", [(2, 3)]),
              ("...i,...i->", [(2, 3), (3, 3)]), ("ij,jk->ik", [(2, 3), (4, 2)]),
              ("ij->k", [(2, 3)]), ("ijk->", [(2, 3)]), ("i...jk->", [(2, 3)]),
              ("i,i->i", [(2,), (3,)]), ("ii,i->", [(3, 3), (2,)]), ("i->i->i", [(2,)]),
              ("i,j,k", [(2,), (3,)]), ("i", [(2,), (3,)]), ("i....->", [(2,)]),
              ("...i...->", [(2,)]), ("i->...i...", [(2,)]), ("i->.i", [(2,)])]


@pytest.mark.parametrize("eq,shapes", EINSUM_BAD, ids=[e for e, _ in EINSUM_BAD])
@pytest.mark.parametrize("grad", [False, True])
def test_einsum_errors_as_pytorch(eq, shapes, grad):
    got = []
    for L in (dyngrad, torch):
        with pytest.raises(Exception) as e:
            L.einsum(eq, *[L.ones(s, dtype=L.float64, requires_grad=grad) for s in shapes])
        got.append((type(e.value), str(e.value)))
    assert got[0][0].__name__ == got[1][0].__name__ and got[0][1] == got[1][1]


@pytest.mark.parametrize("grad", [False, True])
def test_einsum_mixed_dtypes_as_pytorch(grad):
    """PyTorch's bmm refuses operands of two dtypes (left one named first, after the operand
    swap), its mul promotes them."""
    for eq, dts in [("ij,jk->ik", ("float32", "float64")), ("i,j->ij", ("float32", "float64")),
                    ("jk,ij->ik", ("float64", "float32")), ("ij,jk->ik", ("int64", "int64")),
                    ("i,i->", ("float32", "int64"))]:
        res = []
        for L in (dyngrad, torch):
            shp = [(2, 3), (3, 4)] if eq.startswith("ij,") else [(3, 4), (2, 3)] \
                if eq.startswith("jk") else [(3,), (3,)]
            ops = [L.ones(s, dtype=getattr(L, d), requires_grad=grad and d.startswith("f"))
                   for s, d in zip(shp, dts)]
            try:
                r = L.einsum(eq, *ops)
                res.append((str(r.dtype), float(r.sum())))
            except RuntimeError as e:
                res.append(str(e))
        assert res[0] == res[1], (eq, res)
