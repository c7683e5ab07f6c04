"""T, mT, mH, H and adjoint() against torch: views and their nodes (conjugated for complex
tensors), 0-d tensors returned as they are, PyTorch's errors, and its once-per-process
deprecation warnings (checked in a fresh interpreter for each library)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")

SCRIPT = r'''
import json, sys, warnings
L = __import__(sys.argv[1])
res = []
for shape, dt in [((2, 3, 4), "float64"), ((2, 3), "float64"), ((2, 3), "complex128"),
                  ((3,), "float64"), ((), "float64"), ((), "complex64")]:
    x = L.ones(shape, dtype=getattr(L, dt), requires_grad=True)
    for n in ("T", "mT", "mH", "H", "adjoint"):
        try:
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                v = getattr(x, n)() if n == "adjoint" else getattr(x, n)
            fn = v.grad_fn
            res.append([list(shape), dt, n, list(v.shape), v is x, fn and fn.name(),
                        fn and [f.name().split("::")[-1] for f, _ in fn.next_functions if f],
                        [str(m.message).split(" (Triggered")[0] for m in w]])
        except Exception as e:
            res.append([list(shape), dt, n, type(e).__name__, str(e)])
print(json.dumps(res))
'''


def _run(lib):
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", SCRIPT, lib], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout)


def test_transposes_match_torch():
    got, exp = _run("dyngrad"), _run("torch")
    assert len(got) == len(exp)
    for g, e in zip(got, exp):
        assert g == e


def test_adjoint_function():
    import dyngrad
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = dyngrad.ones(2, 3, dtype=dyngrad.complex128)
        assert tuple(dyngrad.adjoint(a).shape) == tuple(torch.adjoint(torch.ones(2, 3)).shape)
