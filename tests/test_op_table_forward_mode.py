"""Forward mode against PyTorch over every op-table row: the tangent of each output for
random input tangents equals ``torch.func.jvp``'s, and where PyTorch has no forward-mode
formula dyngrad refuses with PyTorch's error (same type, same first line) instead of
computing a tangent PyTorch would not give."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
import dyngrad.autograd.forward_ad as fwAD  # noqa: E402
from tests.optable import all_rows  # noqa: E402
from tests.twin import twin  # noqa: E402

CASES = [(r, s) for r in all_rows() for s in r.samples]
IDS = [f"{r.name}-{s!r}" for r, s in CASES]


def _tuple(o):
    return tuple(o) if isinstance(o, (tuple, list)) else (o,)


@pytest.mark.parametrize("row,sample", CASES, ids=IDS)
def test_forward_mode_matches_torch(row, sample):
    prim_t = sample.make(torch, requires_grad=False)
    prim_d = sample.make(dyngrad, requires_grad=False)
    diff = [i for i in range(len(prim_t)) if i not in sample.int_args]
    if not diff:
        pytest.skip("integer inputs only: no tangent to give")
    rs = np.random.RandomState(3)
    tans = {i: rs.uniform(-1, 1, size=tuple(prim_t[i].shape)) for i in diff}
    tw = twin(row.fn)

    def on_torch(*xs):
        args = list(prim_t)
        for i, x in zip(diff, xs):
            args[i] = x
        return tw(*args, *sample.extra, **sample.kwargs)

    def on_dyngrad():
        with fwAD.dual_level():
            args = list(prim_d)
            for i in diff:
                args[i] = fwAD.make_dual(prim_d[i], dyngrad.from_numpy(tans[i]))
            return [fwAD.unpack_dual(o).tangent if isinstance(o, dyngrad.Tensor) else None
                    for o in _tuple(row.fn(*args, *sample.extra, **sample.kwargs))]

    try:
        _, expected = torch.func.jvp(on_torch, tuple(prim_t[i] for i in diff),
                                     tuple(torch.from_numpy(tans[i]) for i in diff))
    except NotImplementedError as e:
        first = str(e).splitlines()[0]
        with pytest.raises(NotImplementedError) as got:
            on_dyngrad()
        assert str(got.value).splitlines()[0] == first
        return
    got = on_dyngrad()
    for g, e in zip(got, _tuple(expected)):
        if not (e.is_floating_point() or e.is_complex()):
            continue  # integer outputs (indices) have no tangent
        if g is None:
            assert not e.any(), f"{row.name}: no tangent where PyTorch's is nonzero"
            continue
        np.testing.assert_allclose(g.numpy(), e.numpy(force=True), rtol=1e-7, atol=1e-9,
                                   equal_nan=True, err_msg=f"{row.name} {sample!r}")
