"""where, clamp, lerp, heaviside and copy_ against PyTorch where their declarations changed what
they record: saved values, version checks, forward-mode tangents and the order of errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

A = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, np.nan])
LO = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 0.0])
HI = np.array([1.0, 0.0, 0.7, 0.5, 3.0, 1.0])


def _error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type and message are compared
        return type(e).__name__, str(e).splitlines()[0]
    return None


@pytest.mark.parametrize("lib", [torch, dyngrad])
def test_where_condition_is_version_checked(lib):
    x = lib.tensor(A[:3], requires_grad=True)
    c = x > 0
    y = lib.where(c, x, 0.0)
    assert y.grad_fn._saved_condition.tolist() == c.tolist()
    c.logical_not_()
    err = _error(lambda: y.sum().backward())
    assert err is not None and "modified by an inplace operation" in err[1]


def test_where_uint8_condition_warns():
    for lib in (torch, dyngrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = lib.where(lib.tensor([1, 0, 1], dtype=lib.uint8), lib.ones(3), 0.0)
        assert r.tolist() == [1.0, 0.0, 1.0]
        assert any("uint8 condition" in str(m.message) for m in w)


def _clamp_tangents(lib, call):
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        d = [fw.make_dual(lib.tensor(v), lib.full((6,), float(k + 1), dtype=lib.float64))
             for k, v in enumerate((A, LO, HI))]
        return fw.unpack_dual(call(*d)).tangent.tolist()


@pytest.mark.parametrize("call", [
    lambda x, lo, hi: x.clamp(lo, hi), lambda x, lo, hi: x.clamp(lo),
    lambda x, lo, hi: x.clamp(max=hi), lambda x, lo, hi: x.clamp_min(lo),
    lambda x, lo, hi: x.clamp_max(hi)])
def test_clamp_tensor_bounds_forward_mode(call):
    assert _clamp_tangents(dyngrad, call) == _clamp_tangents(torch, call)


def test_clamp_absent_tensor_bound_reads_none():
    for lib in (torch, dyngrad):
        x = lib.tensor(A, requires_grad=True)
        g = x.clamp(min=lib.tensor(LO)).grad_fn
        assert type(g).__name__ == "ClampBackward0" and g._saved_max is None
        assert [f is None for f, _ in g.next_functions] == [False, True, True]


def test_lerp_number_weight_keeps_no_tensor():
    got = []
    for lib in (torch, dyngrad):
        x = lib.tensor(A[:3], requires_grad=True)
        y = lib.lerp(x, lib.ones(3, dtype=lib.float64), 0.25)
        assert y.grad_fn._saved_weight == 0.25
        y.sum().backward(retain_graph=False)
        y.sum().backward()  # a second backward: LerpBackward0 keeps nothing to free
        got.append(x.grad.tolist())
    assert got[0] == got[1]


def test_copy_gradient_cast_before_summed():
    names = []
    for lib in (torch, dyngrad):
        x = lib.zeros(2, 3, dtype=lib.float64, requires_grad=True)
        s = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        z = x * 1
        z.copy_(s)
        g = lib.autograd.grad((z * z).sum(), s, create_graph=True)[0]
        names.append((type(g.grad_fn).__name__, g.dtype == lib.float32, g.tolist()))
    assert names[0] == names[1]


@pytest.mark.parametrize("args", [
    ((2,), "complex64", (2,), "float64"), ((2,), "float32", (3,), "float64"),
    ((2,), "float32", (3,), "float32")])
def test_heaviside_errors_in_order(args):
    sa, da, sb, db = args

    def run(lib):
        return _error(lambda: lib.heaviside(lib.ones(sa, dtype=getattr(lib, da)),
                                            lib.ones(sb, dtype=getattr(lib, db))))
    assert run(dyngrad) == run(torch)
