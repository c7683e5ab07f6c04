"""The queries (``ops.query``: is_conj, is_neg, is_nonzero, is_signed, is_same_size,
resolve_conj, resolve_neg) and the ops declared beside them (nonzero, argwhere, narrow_copy,
heaviside, histc, pinverse, unique, unique_consecutive) against PyTorch: values, recorded
nodes and their saved values, errors, and what torch.func's vmap and jvp make of them."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from dyngrad.ops import OPS, declared  # noqa: E402

LIBS = (torch, dyngrad)

NAMES = ("is_conj is_neg is_nonzero is_same_size is_signed resolve_conj resolve_neg nonzero "
         "argwhere narrow_copy heaviside histc pinverse unique unique_consecutive diagflat "
         "_narrow_copy_method _heaviside_method _heaviside__method _histc_method "
         "_pinverse_method _diagflat_method").split()


@pytest.mark.parametrize("name", NAMES)
def test_entry_is_declared(name):
    assert declared(name)


@pytest.mark.parametrize("name", ["is_conj", "is_neg", "is_nonzero", "is_same_size",
                                  "is_signed", "resolve_conj", "resolve_neg"])
def test_query_is_a_declaration(name):
    spec = OPS[name]["spec"]
    assert spec.name == name and not spec.differentiable and spec.node_cls is None
    assert spec.fn is OPS[name]["fn"]


def _plain(v):
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if isinstance(v, (torch.Tensor, dyngrad.Tensor)):
        a = v.detach().numpy()
        a = a.round(5) if a.dtype.kind == "f" else a  # (float32 SVDs differ in the last bit)
        return (a.tolist(), str(v.dtype).split(".")[-1],
                type(v.grad_fn).__name__ if v.grad_fn is not None else None)
    return v


def _outcome(fn, lib):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _plain(fn(lib))
    except Exception as e:  # noqa: BLE001 - the error is the outcome compared
        return type(e).__name__, str(e)


def _x(L, requires_grad=False):
    return L.tensor([[1.5, 0.0], [-2.0, 3.0]], requires_grad=requires_grad)


CASES = {
    "is_conj": lambda L: [L.is_conj(_x(L)), _x(L).is_conj()],
    "is_neg": lambda L: [L.is_neg(_x(L)), _x(L).is_neg()],
    "is_nonzero": lambda L: [L.is_nonzero(L.tensor([2.0])), L.tensor(0.0).is_nonzero()],
    "is_nonzero_many": lambda L: L.is_nonzero(_x(L)),
    "is_nonzero_empty": lambda L: L.is_nonzero(L.zeros(0)),
    "is_signed": lambda L: [L.is_signed(_x(L)), L.is_signed(L.zeros(1, dtype=L.uint8)),
                            L.is_signed(L.zeros(1, dtype=L.bool)),
                            L.is_signed(L.zeros(1, dtype=L.int8))],
    "is_same_size": lambda L: [L.is_same_size(_x(L), L.zeros(2, 2)),
                               L.is_same_size(_x(L), L.zeros(4))],
    "is_same_size_kw": lambda L: L.is_same_size(_x(L), other=L.zeros(2, 2)),
    "resolve": lambda L: [L.resolve_conj(_x(L, True) * 2), L.resolve_neg(_x(L)).resolve_conj()],
    "resolve_is_input": lambda L: (lambda x: [L.resolve_conj(x) is x, x.resolve_neg() is x])(
        _x(L)),
    "not_tensor_1": lambda L: L.is_conj([1.0]),
    "not_tensor_2": lambda L: L.is_same_size(_x(L), 3),
    "not_tensor_3": lambda L: L.is_same_size(3, _x(L)),
    "not_tensor_4": lambda L: L.resolve_neg(None),
    "nonzero": lambda L: [L.nonzero(_x(L, True)), _x(L).nonzero(as_tuple=True),
                          L.nonzero(L.tensor(2.0)), L.nonzero(L.tensor(2.0), as_tuple=True)],
    "argwhere": lambda L: [L.argwhere(_x(L, True)), L.argwhere(L.tensor(0.0))],
    "narrow_copy": lambda L: (lambda y: [y, y.grad_fn._saved_start, y.grad_fn._saved_dim,
                                         y.grad_fn._saved_length,
                                         y.grad_fn._saved_self_sym_sizes])(
        L.narrow_copy(_x(L, True), -1, -1, 1)),
    "narrow_copy_bw_quirk": lambda L: L.narrow_copy(_x(L, True), 1, -2, 2).sum().backward(),
    "narrow_copy_errors": lambda L: [_outcome(f, L) for f in (
        lambda L: L.narrow_copy(_x(L), 2, 0, 1), lambda L: _x(L).narrow_copy(1, 3, 0),
        lambda L: L.narrow_copy(_x(L), 1, 1.0, 1), lambda L: _x(L).narrow_copy(0, 0, "a"))],
    "heaviside": lambda L: (lambda y: [y, [type(f[0]).__name__ for f in y.grad_fn.next_functions]])(
        L.heaviside(_x(L, True), L.tensor([0.5]))),
    "heaviside_errors": lambda L: [_outcome(f, L) for f in (
        lambda L: L.heaviside(_x(L), 1), lambda L: _x(L).heaviside(L.tensor([1], dtype=L.int64)),
        lambda L: L.heaviside(_x(L, True), _x(L)).sum().backward())],
    "histc": lambda L: [L.histc(_x(L, True), 3), _x(L).histc(4, -1, 1)],
    "pinverse": lambda L: (lambda x: (lambda y: [y.grad_fn._saved_self is x,
                                                  y.grad_fn._saved_result.detach().numpy().round(6)
                                                  .tolist(),
                                                  sorted(a for a in dir(y.grad_fn)
                                                         if a.startswith("_saved_"))])(
        L.pinverse(x)))(L.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=L.float64,
                                 requires_grad=True)),
    "unique": lambda L: [L.unique(L.tensor([3.0, 1, 3, 2], requires_grad=True),
                                  return_inverse=True, return_counts=True),
                         L.unique(_x(L), dim=1, return_counts=True)],
    "unique_consecutive": lambda L: [L.unique_consecutive(L.tensor([1.0, 1, 2, 1],
                                                                   requires_grad=True),
                                                          return_inverse=True),
                                     _x(L).unique_consecutive(dim=0, return_counts=True)],
    "unsafe_split_saved": lambda L: [
        (y.grad_fn.name(), sorted((a, getattr(y.grad_fn, a)) for a in dir(y.grad_fn)
                                  if a.startswith("_saved_")))
        for y in (L.unsafe_split(_x(L, True), 1, -1)[0], L.unsafe_chunk(_x(L, True), 2, 1)[1],
                  _x(L, True).unsafe_split_with_sizes([1, 1], 0)[1])],
    "unique_backward": lambda L: L.unique(_x(L, True)).sum().backward(),
    "unique_dim_backward": lambda L: L.unique(_x(L, True), dim=0).sum().backward(),
    "unique_consecutive_backward": lambda L: L.unique_consecutive(_x(L, True)).sum().backward(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case):
    got, want = (_outcome(CASES[case], L) for L in (dyngrad, torch))
    assert got == want


def _vmap_outcome(L, fn, x):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _plain(L.func.vmap(fn(L))(x(L)))
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e)


VMAP = {
    "is_conj": lambda L: lambda a: L.tensor([L.is_conj(a), a.is_neg()]),
    "is_signed": lambda L: lambda a: L.tensor(L.is_signed(a)),
    "is_same_size": lambda L: lambda a: L.tensor([L.is_same_size(a, L.zeros(2)),
                                                  L.is_same_size(a, L.zeros(3))]),
    "resolve": lambda L: lambda a: L.resolve_neg(L.resolve_conj(a)).exp(),
    "nonzero": lambda L: lambda a: L.nonzero(a),
    "unique": lambda L: lambda a: L.unique(a),
    "unique_consecutive": lambda L: lambda a: L.unique_consecutive(a),
    "narrow_copy": lambda L: lambda a: L.narrow_copy(a, 0, 1, 1),
    "heaviside": lambda L: lambda a: L.heaviside(a, L.tensor([0.5])),
    "pinverse": lambda L: lambda a: L.pinverse(a.view(1, 2)),
}


@pytest.mark.parametrize("case", sorted(VMAP))
def test_vmap_matches_torch(case):
    def x(L):
        return L.tensor([[1.0, 0.0], [2.0, 2.0], [0.0, -1.0]])
    assert _vmap_outcome(dyngrad, VMAP[case], x) == _vmap_outcome(torch, VMAP[case], x)


def test_queries_run_on_the_batched_tensor():
    """vmap runs a query on the batched tensor itself: no per-sample loop."""
    from dyngrad.func import _batched
    before = dict(_batched.LOOPED)
    dyngrad.func.vmap(VMAP["is_same_size"](dyngrad))(dyngrad.zeros(3, 2))
    dyngrad.func.vmap(VMAP["is_conj"](dyngrad))(dyngrad.zeros(3, 2))
    dyngrad.func.vmap(VMAP["resolve"](dyngrad))(dyngrad.zeros(3, 2))
    assert _batched.LOOPED == before


JVP = {
    "resolve": lambda L: lambda a: L.resolve_conj(a.sin()).resolve_neg(),
    "narrow_copy": lambda L: lambda a: L.narrow_copy(a, 1, 0, 1),
    "pinverse": lambda L: lambda a: L.pinverse(a),
    "histc": lambda L: lambda a: L.histc(a, 3),
    "heaviside": lambda L: lambda a: L.heaviside(a, L.tensor([0.5], dtype=L.float64)),
    "unique": lambda L: lambda a: L.unique(a),
    "unique_dim": lambda L: lambda a: L.unique(a, dim=0),
    "unique_consecutive": lambda L: lambda a: L.unique_consecutive(a),
}


@pytest.mark.parametrize("case", sorted(JVP))
def test_jvp_matches_torch(case):
    def run(L):
        x = L.tensor([[1.0, 2.0], [0.5, -1.0], [3.0, 1.0]], dtype=L.float64)
        try:
            out = L.func.jvp(JVP[case](L), (x,), (L.ones_like(x) * 0.25,))
            return [np.round(o.numpy(), 8).tolist() for o in out]
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e)
    assert run(dyngrad) == run(torch)
