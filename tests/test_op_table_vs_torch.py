"""Every op-table row against PyTorch in float64, tightly: the values of each output and the
first gradients (for a fixed upstream gradient) agree to 1e-10 relative, integer and bool
results exactly, and where one library raises the other raises the same exception type.
The op-table's own checks use NumPy references and gradcheck with loose tolerances; this
finds the silent last-digits differences they let through (a constant PyTorch's kernel keeps
in single precision, a parameter its formula rounds).  The random ops' rows (their stream is
dyngrad's own) are compared on shape and dtype only."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.optable import all_rows  # noqa: E402
from tests.twin import NoTwin, twin  # noqa: E402

CASES = [(r, s) for r in all_rows() for s in r.samples]
IDS = [f"{r.name}-{s!r}" for r, s in CASES]
RTOL, ATOL = 1e-10, 1e-12


def _outputs(o):
    o = o if isinstance(o, (tuple, list)) else (o,)
    return [x for x in o if hasattr(x, "dtype") and hasattr(x, "requires_grad")]


def _array(t):
    # ``+ 0`` reads PyTorch's efficient-zero gradients (sgn's), which refuse numpy()
    t = t.detach()
    return (t + 0 if t.dtype.is_floating_point or t.dtype.is_complex else t).numpy().copy()


def _run(lib, fn, sample, order=1):
    """('ok', values, gradients) or ('err', exception type name); ``order=2``: the gradients
    are those of the first gradients' weighted sum (a Hessian-vector product)."""
    ts = sample.make(lib)
    try:
        outs = _outputs(fn(*ts, *sample.extra, **sample.kwargs))
        values = [_array(x) for x in outs]
        diff = [x for x in outs if x.requires_grad and x.dtype.is_floating_point]
        grads = []
        if diff:
            rs = np.random.RandomState(7)
            ups = [lib.from_numpy(rs.uniform(-1, 1, size=tuple(x.shape))).to(x.dtype)
                   for x in diff]
            ins = [t for t in ts if t.requires_grad]
            gs = lib.autograd.grad(diff, ins, ups, allow_unused=True, create_graph=order == 2)
            if order == 2:
                gs = [g for g in gs if g is not None and g.requires_grad]
                if not gs:
                    return "ok", values, []
                rs2 = np.random.RandomState(11)
                w = [lib.from_numpy(rs2.uniform(-1, 1, size=tuple(g.shape))).to(g.dtype)
                     for g in gs]
                gs = lib.autograd.grad(gs, ins, w, allow_unused=True)
            grads = [None if g is None else _array(g) for g in gs]
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return "err", type(e).__name__
    return "ok", values, grads


def _same(a, b, what):
    if a is None or b is None:
        assert a is None and b is None, what
        return
    assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
    if a.dtype.kind in "fc":
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def _compare(row, sample, order):
    try:
        theirs_fn = twin(row.fn)
    except NoTwin:
        pytest.skip("PyTorch has no counterpart")
    mine, theirs = _run(dyngrad, row.fn, sample, order), _run(torch, theirs_fn, sample, order)
    assert mine[0] == theirs[0], (mine, theirs)
    if mine[0] == "err":
        assert mine[1] == theirs[1]
        return
    random = row.fn.__module__ == "tests.optable.sampling"
    assert len(mine[1]) == len(theirs[1]) and len(mine[2]) == len(theirs[2])
    for i, (a, b) in enumerate(zip(mine[1], theirs[1])):
        if random:
            assert a.shape == b.shape and a.dtype == b.dtype
        else:
            _same(a, b, f"output {i}")
    for i, (a, b) in enumerate(zip(mine[2], theirs[2])):
        _same(a, b, f"gradient of input {i}")


@pytest.mark.parametrize("row,sample", CASES, ids=IDS)
def test_values_and_gradients_match_torch(row, sample):
    _compare(row, sample, 1)


SECOND = [(r, s) for r, s in CASES if r.grad and r.gradgrad]


@pytest.mark.parametrize("row,sample", SECOND, ids=[f"{r.name}-{s!r}" for r, s in SECOND])
def test_second_derivatives_match_torch(row, sample):
    _compare(row, sample, 2)
