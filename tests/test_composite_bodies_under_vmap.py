"""Composite ops whose bodies call ops of other ops modules (``cat`` from ops/shape.py,
``select`` imported inside a body) run batched under vmap, without the per-sample loop, and
agree with PyTorch; the ops modules get their own functions back when vmap ends."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import dyngrad
from dyngrad.func import _batched
from dyngrad.ops import shape as shape_ops


def _arr(*shape, seed=0):
    n = int(np.prod(shape))
    return np.sin(np.arange(n) * 1.7 + seed).reshape(shape)


def _both(fn, *arrays, dtypes=None):
    outs = []
    for lib in (dyngrad, torch):
        args = [lib.tensor(a) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r = fn(lib)(*args)
            except Exception as e:  # noqa: BLE001 - compared with PyTorch's
                outs.append((type(e).__name__, str(e)))
                continue
        outs.append(("ok", str(r.dtype), r.detach().numpy()))
    return outs


CASES = {
    "diff_prepend": (lambda L: L.func.vmap(lambda a, p: L.diff(a, n=2, prepend=p)),
                     (_arr(3, 4), _arr(3, 2, seed=1))),
    "diff_append_dim0": (lambda L: L.func.vmap(lambda a, p: a.diff(dim=0, append=p)),
                         (_arr(3, 4, 2), _arr(3, 1, 2, seed=1))),
    "real": (lambda L: L.func.vmap(lambda a: L.real(L.view_as_complex(a)) * 2),
             (_arr(3, 4, 2),)),
    "imag_property": (lambda L: L.func.vmap(lambda a: L.view_as_complex(a).imag + 1),
                      (_arr(3, 4, 2),)),
    "dstack": (lambda L: L.func.vmap(lambda a, b: L.dstack([a, b])),
               (_arr(3, 4), _arr(3, 4, seed=2))),
    "atleast_1d": (lambda L: L.func.vmap(L.atleast_1d), (_arr(3),)),
    "hstack_0d": (lambda L: L.func.vmap(lambda a, b: L.hstack([a, b])), (_arr(3), _arr(3))),
    "vstack": (lambda L: L.func.vmap(lambda a, b: L.vstack([a, b])), (_arr(3, 2), _arr(3, 2))),
    "repeat_interleave_tensor": (
        lambda L: L.func.vmap(lambda a: a.repeat_interleave(L.tensor([1, 0, 2]), dim=0)),
        (_arr(3, 3, 2),)),
    "repeat_interleave_batched_repeats": (
        lambda L: L.func.vmap(lambda a, r: a.repeat_interleave(r, dim=0), in_dims=(None, 0)),
        (_arr(3, 2), np.array([[1, 0, 2], [0, 1, 2]]))),
}
# the counts form has a result of data-dependent size: PyTorch loops over the samples too
LOOPS = {"repeat_interleave_batched_repeats"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_composite_under_vmap_matches_torch_without_looping(name):
    make, arrays = CASES[name]
    before = dict(_batched.LOOPED)
    mine, theirs = _both(make, *arrays)
    looped = {k for k, v in _batched.LOOPED.items() if v != before.get(k)}
    assert mine[0] == theirs[0], (mine, theirs)
    if mine[0] == "ok":
        assert mine[1] == theirs[1]
        np.testing.assert_allclose(mine[2], theirs[2], rtol=1e-12, atol=1e-12)
        assert not looped or name in LOOPS, looped


def test_ops_modules_get_their_functions_back():
    cat = shape_ops.cat
    dyngrad.func.vmap(lambda a, p: dyngrad.diff(a, prepend=p))(dyngrad.ones(2, 3),
                                                                 dyngrad.ones(2, 1))
    assert shape_ops.cat is cat


@pytest.mark.parametrize("counts,kw", [
    ([1, 0, 2], {}), ([1, -1, 2], {}), ([[1, 2]], {}), ([1.0, 2.0], {}), (2, {}),
    ([1, 2], {"output_size": 3}), ([1, 2], {"output_size": 4}), ([], {}),
])
def test_repeat_interleave_counts_form_matches_torch(counts, kw):
    outs = []
    for lib in (dyngrad, torch):
        try:
            r = lib.repeat_interleave(lib.tensor(counts, dtype=None if counts != [] else
                                                 lib.int64), **kw)
            outs.append(("ok", str(r.dtype).split(".")[-1], r.tolist()))
        except Exception as e:  # noqa: BLE001 - compared with PyTorch's
            outs.append((type(e).__name__, str(e)))
    assert outs[0] == outs[1]


def test_repeat_interleave_counts_keep_int32():
    r = dyngrad.repeat_interleave(dyngrad.tensor([1, 2], dtype=dyngrad.int32))
    assert r.dtype == dyngrad.int32 and r.tolist() == [0, 1, 1]


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_diff_of_integer_and_bool_tensors_matches_torch(dtype):
    a = _arr(3, 4) * 5
    outs = []
    for lib in (dyngrad, torch):
        t = lib.tensor(a > 0) if dtype == "bool" else lib.tensor(np.abs(a)).to(getattr(lib, dtype))
        r = t.diff(dim=0)
        outs.append((str(r.dtype).split(".")[-1], r.tolist()))
    assert outs[0] == outs[1]


def test_fill_with_batched_value_matches_torch():
    outs = []
    for lib in (dyngrad, torch):
        x = lib.zeros(3, 2, requires_grad=True)
        v = lib.arange(3.0, requires_grad=True)
        r = lib.func.vmap(lambda a, b: (a * 1).fill_(b))(x, v)
        r.sum().backward()
        outs.append((r.tolist(), x.grad.tolist(), v.grad.tolist()))
    assert outs[0] == outs[1]


@pytest.mark.parametrize("a,b,dim", [((3, 1, 1), (3, 1), 2), ((2, 3), (2,), 1),
                                     ((2, 3), (2, 3, 1), 1), ((2, 3), (0,), 1)])
def test_cat_of_tensors_of_different_ranks_matches_torch(a, b, dim):
    outs = []
    for lib in (dyngrad, torch):
        try:
            outs.append(tuple(lib.cat([lib.ones(*a), lib.ones(*b)], dim).shape))
        except Exception as e:  # noqa: BLE001 - compared with PyTorch's
            outs.append((type(e).__name__, str(e)))
    assert outs[0] == outs[1]


def test_hstack_of_different_ranks_under_vmap_matches_torch():
    outs = []
    for lib in (dyngrad, torch):
        with pytest.raises(RuntimeError) as e:
            lib.func.vmap(lambda a, b: lib.hstack([a.reshape(1, 1), b]))(lib.arange(3.0),
                                                                         lib.arange(3.0))
        outs.append(str(e.value))
    assert outs[0] == outs[1]


ERRORS = {
    "fliplr_1d": (lambda L: L.fliplr, (3,)),
    "flipud_0d": (lambda L: L.flipud, (3,)),
    "mT_1d": (lambda L: (lambda t: t.mT), (3, 2)),
    "mH_0d": (lambda L: (lambda t: t.mH), (3,)),
    "H_3d": (lambda L: (lambda t: t.H), (3, 2, 2, 2)),
    "mH_3d": (lambda L: (lambda t: t.mH), (3, 2, 2, 2)),
    "adjoint": (lambda L: L.adjoint, (3, 2, 4)),
    "fliplr": (lambda L: L.fliplr, (3, 2, 4)),
    "swapaxes_method": (lambda L: (lambda t: t.swapaxes(0, 1)), (3, 2, 4)),
    "swapaxes_out_of_range": (lambda L: (lambda t: t.swapaxes(0, 3)), (3, 2, 2)),
    "swapdims_method": (lambda L: (lambda t: t.swapdims(0, 1)), (3, 2, 4)),
    "diff_0d": (lambda L: (lambda t: t.diff()), (3,)),
    "sum_to_size_not_expandable": (lambda L: (lambda t: t.sum_to_size(3)), (3, 2, 2)),
    "hsplit_not_divisible": (lambda L: (lambda t: L.hsplit(t, 3)), (3, 4)),
    "movedim_repeated": (lambda L: (lambda t: L.movedim(t, (0, 0), (1, 0))), (3, 2, 2)),
    "movedim_lengths": (lambda L: (lambda t: L.movedim(t, (0,), (1, 0))), (3, 2, 2)),
    "movedim_pairs": (lambda L: (lambda t: L.movedim(t, [0, 1], [1, 0])), (3, 2, 2)),
    "unflatten_sizes": (lambda L: (lambda t: t.unflatten(0, (3, 2))), (3, 4, 2)),
    "unflatten": (lambda L: (lambda t: t.unflatten(-1, (2, -1))), (3, 4, 2)),
    "broadcast_tensors_mismatch": (lambda L: (lambda t: L.broadcast_tensors(t, L.ones(3))[0]),
                                   (3, 2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_checks_of_composite_bodies_under_vmap_match_torch(name):
    make, shape = ERRORS[name]
    outs = []
    for lib in (dyngrad, torch):
        a = lib.tensor(_arr(*shape))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                outs.append(lib.func.vmap(make(lib))(a).tolist())
            except Exception as e:  # noqa: BLE001 - compared with PyTorch's
                outs.append((type(e).__name__, str(e)))
    assert outs[0] == outs[1]


def test_a_method_aliasing_another_op_is_not_run_as_the_composite(monkeypatch):
    """``Tensor.swapaxes`` is transpose's method, not the body of the composite ``swapaxes``:
    without a rule, vmap loops over it rather than run it on a batched tensor."""
    from dyngrad.func._rules import RULES
    monkeypatch.delitem(RULES, "swapaxes")
    x = dyngrad.tensor(_arr(3, 2, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = dyngrad.func.vmap(lambda t: t.swapaxes(0, 1))(x)
        fn = dyngrad.func.vmap(lambda t: dyngrad.swapaxes(t, 0, 1))(x)
    np.testing.assert_array_equal(got.numpy(), np.swapaxes(_arr(3, 2, 4), 1, 2))
    np.testing.assert_array_equal(fn.numpy(), got.numpy())


@pytest.mark.parametrize("shape,dim,sizes", [
    ((4, 3), 0, (3, 2)), ((4, 3), -2, (3, 2)), ((4, 3), 1, ()), ((4, 3), 0, (0, -1)),
    ((0, 2), 0, (0, -1)), ((4, 3), 0, (2, -1)), ((4, 3), -1, [3, 1]),
])
def test_unflatten_errors_match_torch(shape, dim, sizes):
    outs = []
    for lib in (dyngrad, torch):
        try:
            outs.append(tuple(lib.ones(*shape).unflatten(dim, sizes).shape))
        except RuntimeError as e:
            outs.append(str(e).split("\nException raised from")[0].rstrip("\n"))
    assert outs[0] == outs[1]
