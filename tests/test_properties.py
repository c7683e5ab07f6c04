"""Property-based checks over every op-table row (tests/optable/).

For each row, hypothesis draws inputs and checks float64 ``gradcheck``, ``gradgradcheck``
(where the row says so) and forward mode against reverse mode.

* Rows whose samples are elementwise with broadcasting (found by probing the op: its output
  has the broadcast shape of its tensor arguments) get freshly drawn mutually broadcastable
  shapes, including 0-d and size-0 ones, and each argument is laid out contiguously, as a
  transposed array, as a strided slice of a larger array, or as a non-contiguous view
  (a transposed or sliced view of a larger tensor that requires grad).
* Other rows keep their sample shapes; only the values are drawn.

Values are uniform within each sample's ``domain`` from a drawn seed (hypothesis picks the
seed, so failures shrink to and replay from one seed).

The default run is short and deterministic; ``pytest -m slow tests/test_properties.py``
runs many more examples.
"""
from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import mutually_broadcastable_shapes  # noqa: E402

import dyngrad as torch  # noqa: E402
from tests.optable import all_rows  # noqa: E402

ROWS = all_rows()
LAYOUTS = ("contiguous", "transposed", "strided", "view")


# --- classifying rows ---------------------------------------------------------------
def _outs(o):
    if isinstance(o, torch.Tensor):
        return [o]
    if isinstance(o, (tuple, list)):
        return [x for x in o if isinstance(x, torch.Tensor)]
    return []


def _call(row, sample, tensors):
    return row.fn(*tensors, *sample.extra, **sample.kwargs)


_PROBES = {1: [((3, 2),), ((0, 2),)],
           2: [((2, 1, 3), (4, 1)), ((), (2, 3))],
           3: [((2, 1, 3), (4, 1), (3,)), ((3,), (), (2, 1))]}


def _shape_ok(row, sample, shapes):
    """The outputs have the broadcast shape, and each output element is the op applied to
    the (broadcast) input elements at the same position alone, as 0-d tensors."""
    rs = np.random.RandomState(0)
    lo, hi = sample.domain
    arrs = [rs.uniform(lo, hi, size=s) for s in shapes]
    outs = _outs(_call(row, sample, [torch.from_numpy(a) for a in arrs]))
    want = np.broadcast_shapes(*shapes)
    if not outs or any(tuple(o.shape) != want for o in outs):
        return False
    bcast = np.broadcast_arrays(*arrs)
    n = int(np.prod(want))
    for k in sorted({0, n // 2, n - 1} if n else set()):
        idx = np.unravel_index(k, want)
        pos = _outs(_call(row, sample, [torch.from_numpy(np.array(b[idx])) for b in bcast]))
        if len(pos) != len(outs):
            return False
        for o, p in zip(outs, pos):
            if tuple(p.shape) != () or not np.allclose(o.detach().numpy()[idx],
                                                       p.detach().numpy(), equal_nan=True):
                return False
    return True


def _is_elementwise(row):
    """True when every sample and a few probes give outputs of the broadcast shape."""
    try:
        if not row.samples:
            return False
        for s in row.samples:
            if s.int_args or not s.shapes:
                return False
            if len(s.shapes) != len(row.samples[0].shapes):
                return False
            if not _shape_ok(row, s, s.shapes):
                return False
        n = len(row.samples[0].shapes)
        if n not in _PROBES:
            return False
        return all(_shape_ok(row, row.samples[0], p) for p in _PROBES[n])
    except Exception:
        return False


ELEMENTWISE = {id(r): _is_elementwise(r) for r in ROWS}
GRAD_ROWS = [r for r in ROWS if r.grad and r.samples]
GRADGRAD_ROWS = [r for r in GRAD_ROWS if r.gradgrad]
IDS = lambda rows: [f"{r.name}{'-ew' if ELEMENTWISE[id(r)] else ''}" for r in rows]  # noqa: E731

# keep the default run short however many rows the table grows to
_N_DEFAULT = max(2, min(6, 900 // max(1, len(ROWS))))
DEFAULT = settings(max_examples=_N_DEFAULT, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=150, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


# --- drawing inputs -----------------------------------------------------------------
def _layout(arr, layout, rs):
    """A float64 tensor requiring grad with the values of ``arr`` in the given layout."""
    shape = arr.shape
    if layout == "transposed" and arr.ndim >= 2:
        base = np.ascontiguousarray(np.swapaxes(arr, -1, -2))
        return torch.from_numpy(np.swapaxes(base, -1, -2)).requires_grad_()
    if layout == "strided" and arr.ndim >= 1:
        big = rs.uniform(-9, 9, size=tuple(2 * s + 1 for s in shape))
        sl = tuple(slice(1, None, 2) for _ in shape)
        big[sl] = arr
        return torch.from_numpy(big[sl]).requires_grad_()
    if layout == "view" and arr.ndim >= 1:
        # a non-leaf, non-contiguous view of a larger leaf
        big = rs.uniform(-9, 9, size=(shape[0] * 2 + 1,) + shape[1:])
        big[1::2] = arr
        leaf = torch.from_numpy(big).requires_grad_()
        v = leaf[1::2]
        if arr.ndim >= 2:
            big2 = np.ascontiguousarray(np.swapaxes(big, -1, -2))
            leaf = torch.from_numpy(big2).requires_grad_()
            v = leaf.transpose(-1, -2)[1::2]
        assert tuple(v.shape) == shape
        return v
    return torch.from_numpy(np.array(arr, dtype=np.float64)).requires_grad_()


@st.composite
def inputs_for(draw, row):
    """(sample, tensors, description) for one example of ``row``."""
    sample = draw(st.sampled_from(row.samples))
    seed = draw(st.integers(0, 2 ** 31 - 1))
    rs = np.random.RandomState(seed)
    lo, hi = sample.domain
    n = len(sample.shapes)
    if ELEMENTWISE[id(row)]:
        shapes = draw(mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=3,
                                                    min_side=0, max_side=3)).input_shapes
        layouts = [draw(st.sampled_from(LAYOUTS)) for _ in range(n)]
    else:
        shapes = sample.shapes
        layouts = ["contiguous"] * n
    ts = []
    for i, (shp, lay) in enumerate(zip(shapes, layouts)):
        if i in sample.int_args:
            high = sample.int_high if sample.int_high is not None else 2
            ts.append(torch.from_numpy(rs.randint(0, high, size=shp).astype(np.int64)))
            continue
        ts.append(_layout(rs.uniform(lo, hi, size=shp), lay, rs))
    return sample, ts, f"seed={seed} shapes={list(shapes)} layouts={layouts}"


def _gradcheck(row, data):
    sample, ts, desc = data.draw(inputs_for(row))
    ok = torch.autograd.gradcheck(lambda *a: _call(row, sample, a), ts, atol=row.atol,
                                  rtol=row.rtol)
    assert ok, f"{row.name}: {desc}"


def _gradgradcheck(row, data):
    sample, ts, desc = data.draw(inputs_for(row))
    ok = torch.autograd.gradgradcheck(lambda *a: _call(row, sample, a), ts, atol=row.atol,
                                      rtol=row.rtol)
    assert ok, f"{row.name}: {desc}"


def _pytorch_has_no_forward_rule(row, sample, ts, diff, tangents):
    """dyngrad refused forward mode for ``row``: PyTorch must refuse it too."""
    from tests.twin import twin
    import torch as pt
    import torch.autograd.forward_ad as pfw
    args = [pt.from_numpy(t.detach().numpy().copy()) for t in ts]
    with pfw.dual_level():
        for i in diff:
            args[i] = pfw.make_dual(args[i], pt.from_numpy(tangents[i]))
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
            twin(row.fn)(*args, *sample.extra, **sample.kwargs)


def _forward_vs_reverse(row, data):
    """<u, J v> from forward mode equals <J^T u, v> from reverse mode."""
    fwAD = pytest.importorskip("dyngrad.autograd.forward_ad")
    sample, ts, desc = data.draw(inputs_for(row))
    rs = np.random.RandomState(12345)
    diff = [i for i, t in enumerate(ts) if t.requires_grad]
    tangents = {i: rs.standard_normal(tuple(ts[i].shape)) for i in diff}

    outs_r = _outs(_call(row, sample, ts))
    us = [rs.standard_normal(tuple(o.shape)) for o in outs_r]
    pairs = [(o, torch.from_numpy(u)) for o, u in zip(outs_r, us) if o.requires_grad]
    if not pairs:
        return
    grads = torch.autograd.grad([p[0] for p in pairs], [ts[i] for i in diff],
                                [p[1] for p in pairs], allow_unused=True)
    rev = sum(float((g.detach().numpy() * tangents[i]).sum())
              for g, i in zip(grads, diff) if g is not None)

    with fwAD.dual_level():
        duals = list(ts)
        for i in diff:
            duals[i] = fwAD.make_dual(ts[i].detach(), torch.from_numpy(tangents[i]))
        try:
            outs_f = _outs(_call(row, sample, duals))
        except NotImplementedError as e:
            if not str(e).startswith("Trying to use forward AD with"):
                raise
            _pytorch_has_no_forward_rule(row, sample, ts, diff, tangents)
            return
        fwd = 0.0
        for o, u in zip(outs_f, us):
            if not o.is_floating_point():
                continue
            tan = fwAD.unpack_dual(o).tangent
            if tan is not None:
                fwd += float((tan.detach().numpy() * u).sum())
    scale = max(1.0, abs(rev), abs(fwd))
    assert abs(fwd - rev) <= 1e-6 * scale + row.atol, f"{row.name}: fwd {fwd} rev {rev} ({desc})"


# --- the tests ----------------------------------------------------------------------
@pytest.mark.parametrize("row", GRAD_ROWS, ids=IDS(GRAD_ROWS))
@DEFAULT
@given(data=st.data())
def test_gradcheck_property(row, data):
    _gradcheck(row, data)


@pytest.mark.parametrize("row", GRADGRAD_ROWS, ids=IDS(GRADGRAD_ROWS))
@DEFAULT
@given(data=st.data())
def test_gradgradcheck_property(row, data):
    _gradgradcheck(row, data)


@pytest.mark.parametrize("row", GRAD_ROWS, ids=IDS(GRAD_ROWS))
@DEFAULT
@given(data=st.data())
def test_forward_matches_reverse_property(row, data):
    _forward_vs_reverse(row, data)


@pytest.mark.slow
@pytest.mark.parametrize("row", GRAD_ROWS, ids=IDS(GRAD_ROWS))
@LONG
@given(data=st.data())
def test_gradcheck_property_long(row, data):
    _gradcheck(row, data)


@pytest.mark.slow
@pytest.mark.parametrize("row", GRADGRAD_ROWS, ids=IDS(GRADGRAD_ROWS))
@LONG
@given(data=st.data())
def test_gradgradcheck_property_long(row, data):
    _gradgradcheck(row, data)


@pytest.mark.slow
@pytest.mark.parametrize("row", GRAD_ROWS, ids=IDS(GRAD_ROWS))
@LONG
@given(data=st.data())
def test_forward_matches_reverse_property_long(row, data):
    _forward_vs_reverse(row, data)


def test_some_rows_are_elementwise():
    # the classification must find the broadcasting rows of the core table
    names = {r.name for r in ROWS if ELEMENTWISE[id(r)]}
    assert {"add", "mul", "exp", "tanh"} <= names
    assert not {"sum", "mm", "view", "t"} & names
