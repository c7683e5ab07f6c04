"""Every op-table row against PyTorch with integer, bool and float16 inputs: the outcome
(a result, or the exception type and the first line of its message), the result dtypes and
shapes and the values (exactly for integer and bool results, to float16 rounding for float16
ones) agree.  Bad input must raise PyTorch's exception, valid input give PyTorch's result
dtype; NumPy's own exceptions (UFuncTypeError, ...) must never leak.  One sample per row; the
random ops' rows (their stream is dyngrad's own) are compared on dtype and shape only.

KNOWN lists the differences whose code is not fixed yet, as strict expected failures: a fix
makes the test say so."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.optable import all_rows  # noqa: E402
from tests.twin import NoTwin, twin  # noqa: E402

DTYPES = ("int64", "int32", "uint8", "bool", "float16")
INTS = "int64 int32 uint8"

# row name -> (dtypes it differs in, what differs and where the code lives)
KNOWN: dict[str, tuple[str, str]] = {}


def _make(lib, sample, dtype):
    """The sample's tensors in ``dtype`` (integer arguments stay int64 indices)."""
    rs = np.random.RandomState(0)
    out = []
    for i, shp in enumerate(sample.shapes):
        if i in sample.int_args:
            hi = sample.int_high if sample.int_high is not None else 2
            out.append(lib.from_numpy(rs.randint(0, hi, size=shp).astype(np.int64)))
            continue
        lo, hi = sample.domain
        arr = rs.uniform(lo, hi, size=shp)
        if dtype in ("int64", "int32", "uint8"):
            arr = np.round(arr * 3)
        if dtype == "uint8":
            arr = np.abs(arr)
        if dtype == "bool":
            arr = arr > 0
        out.append(lib.tensor(arr, dtype=getattr(lib, dtype)))
    return out


def _run(lib, fn, sample, dtype):
    """("ok", [(dtype name, shape, values) or a plain value, ...]) or ("err", exception type
    name, first line of its message)."""
    try:
        o = fn(*_make(lib, sample, dtype), *sample.extra, **sample.kwargs)
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return "err", type(e).__name__, str(e).split("\n")[0]
    res = []
    for x in o if isinstance(o, (tuple, list)) else (o,):
        if hasattr(x, "dtype") and hasattr(x, "shape"):
            res.append((str(x.dtype).split(".")[-1], tuple(x.shape), x.detach().numpy().copy()))
        else:
            res.append(x)
    return "ok", res


def _cases():
    out = []
    for row in all_rows():
        try:
            theirs = twin(row.fn)
        except NoTwin:
            continue
        random = row.fn.__module__ == "tests.optable.sampling"
        for dtype in DTYPES:
            marks = []
            dts, reason = KNOWN.get(row.name, ("", ""))
            if dtype in dts.split():
                marks = [pytest.mark.xfail(strict=True, reason=reason)]
            out.append(pytest.param(row, theirs, random, row.samples[0], dtype, marks=marks,
                                    id=f"{row.name}-{dtype}"))
    return out


@pytest.mark.parametrize("row,theirs,random,sample,dtype", _cases())
def test_dtype_outcome_matches_torch(row, theirs, random, sample, dtype):
    mine, ref = _run(dyngrad, row.fn, sample, dtype), _run(torch, theirs, sample, dtype)
    if ref[0] == "err" or mine[0] == "err":
        assert mine == ref
        return
    assert len(mine[1]) == len(ref[1]), (mine, ref)
    for i, (a, b) in enumerate(zip(mine[1], ref[1])):
        if not isinstance(b, tuple):
            assert a == b, f"output {i}"
            continue
        assert isinstance(a, tuple) and a[:2] == b[:2], f"output {i}: {a[:2]} != torch's {b[:2]}"
        if random:
            continue
        x, y = a[2], b[2]
        if y.dtype.kind in "fc":
            tol = (4e-3, 1e-3) if b[0] == "float16" else (1e-5, 1e-6)
            np.testing.assert_allclose(x, y, rtol=tol[0], atol=tol[1], equal_nan=True,
                                       err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(x, y, err_msg=f"output {i}")
