"""unique_consecutive and unique over the flattened tensor and along a dim, against torch:
values, inverse indices, counts, shapes and errors (empty and 0-d inputs, NaN runs)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

_RS = np.random.RandomState(0)
ARRAYS = {
    "rows": np.array([[1, 1], [1, 1], [2, 3], [2, 3], [1, 1]]),
    "cube": _RS.randint(0, 2, (4, 3, 2)),
    "nan_runs": np.array([1.0, np.nan, np.nan, 2, 2]),
    "empty_rows": np.zeros((0, 3)),
    "empty_cols": np.zeros((3, 0)),
    "scalar": np.array(5),
}


def _outcome(L, fn, a, dim):
    try:
        r = fn(L)(L.tensor(a), return_inverse=True, return_counts=True, dim=dim)
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return type(e).__name__, str(e)
    return str([x.tolist() for x in r] + [tuple(r[0].shape), str(r[0].dtype)])


FNS = {"unique_consecutive": lambda L: L.unique_consecutive,
       "unique": lambda L: (lambda x, **k: L.unique(x, sorted=True, **k))}


@pytest.mark.parametrize("op", list(FNS))
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("name", [n for n in ARRAYS if n != "nan_runs"] + ["nan_runs"])
def test_unique_matches_torch(op, dim, name):
    if op == "unique" and name == "nan_runs":
        return  # each NaN is its own value; their order in the result is unspecified
    fn = FNS[op]
    assert _outcome(dyngrad, fn, ARRAYS[name], dim) == _outcome(torch, fn, ARRAYS[name], dim)
