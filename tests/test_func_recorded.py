"""dyngrad.func against torch.func 2.13 without PyTorch: every program of tests/func_cases.py
runs with dyngrad and is compared with its result recorded from torch.func in
tests/data/func_expected.json (values, shapes, dtypes, requires_grad, pytree structure,
error types and messages).

Re-record (needs torch 2.13): ``python tests/test_func_recorded.py record``."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import func_cases  # noqa: E402

DATA = os.path.join(HERE, "data", "func_expected.json")
CHILD_ENV = "DYNGRAD_FUNC_RECORDED_CHILD"
NP_DTYPES = {"torch.float64": np.float64, "torch.float32": np.float32,
             "torch.int64": np.int64, "torch.int32": np.int32, "torch.bool": np.bool_}
# (rtol, atol) of dyngrad against the recording, and of a fresh recording against the file
TOL = {"torch.float64": (1e-6, 1e-8), "torch.float32": (1e-4, 1e-5)}
FRESH_TOL = {"torch.float64": (1e-10, 1e-12), "torch.float32": (1e-5, 1e-6)}


# --- encoding -------------------------------------------------------------------------------
def encode(x):
    """A JSON-able description of a case's result: pytree kinds, tensors' dtype, shape,
    requires_grad and values, Python scalars with their type."""
    t = type(x)
    if x is None or t in (bool, int, float, str):
        return {"kind": "py", "type": t.__name__, "value": x}
    if t in (tuple, list):
        return {"kind": t.__name__, "items": [encode(e) for e in x]}
    if t is dict:
        assert all(type(k) is str for k in x), list(x)
        return {"kind": "dict", "keys": list(x), "values": [encode(v) for v in x.values()]}
    if hasattr(x, "detach") and hasattr(x, "dtype") and hasattr(x, "shape"):
        dtype = str(x.dtype)
        assert dtype in NP_DTYPES, dtype
        return {"kind": "tensor", "dtype": dtype, "shape": list(x.shape),
                "requires_grad": bool(x.requires_grad), "data": x.detach().numpy().tolist()}
    raise TypeError(f"a case returned a {t.__name__}")


def run_case(name, lib):
    """Run case ``name`` with ``lib``; the encoded result or the exception's type and message."""
    transform, fn, raises = func_cases.CASES[name]
    lib.set_default_dtype(lib.float32)
    try:
        out = fn(lib)
    except Exception as e:  # noqa: BLE001 - recorded and compared
        got = {"error": {"type": type(e).__name__, "message": str(e)}}
    else:
        got = {"result": encode(out)}
    got["transform"] = transform
    return got


def record(torch):
    """Every case run with torch.func."""
    cases, wrong = {}, []
    for name, (_, _, raises) in func_cases.CASES.items():
        rec = run_case(name, torch)
        if ("error" in rec) != raises:
            wrong.append(f"{name}: {'no error' if raises else rec['error']}")
        cases[name] = rec
    assert not wrong, "\n".join(wrong)
    return {"torch": torch.__version__.split("+")[0], "numpy": np.__version__, "cases": cases}


def load():
    with open(DATA) as f:
        return json.load(f)


# --- comparison -----------------------------------------------------------------------------
def _same_scalar(e, g, rtol, atol):
    if isinstance(e, float):
        return (math.isnan(e) and math.isnan(g)) or math.isclose(g, e, rel_tol=rtol,
                                                                  abs_tol=atol)
    return e == g


def compare(exp, got, path, tol):
    """Assert that encoded ``got`` matches encoded ``exp`` (structure exactly, values within
    ``tol[dtype]``)."""
    assert got["kind"] == exp["kind"], f"{path}: {got['kind']} != {exp['kind']}"
    kind = exp["kind"]
    if kind == "py":
        assert got["type"] == exp["type"], f"{path}: {got['type']} != {exp['type']}"
        assert _same_scalar(exp["value"], got["value"], *tol["torch.float64"]), \
            f"{path}: {got['value']!r} != {exp['value']!r}"
    elif kind in ("tuple", "list"):
        assert len(got["items"]) == len(exp["items"]), f"{path}: length"
        for i, (e, g) in enumerate(zip(exp["items"], got["items"])):
            compare(e, g, f"{path}[{i}]", tol)
    elif kind == "dict":
        assert got["keys"] == exp["keys"], f"{path}: keys {got['keys']} != {exp['keys']}"
        for k, e, g in zip(exp["keys"], exp["values"], got["values"]):
            compare(e, g, f"{path}[{k!r}]", tol)
    else:
        for field in ("dtype", "shape", "requires_grad"):
            assert got[field] == exp[field], f"{path}: {field} {got[field]} != {exp[field]}"
        dt = NP_DTYPES[exp["dtype"]]
        e = np.array(exp["data"], dtype=dt).reshape(exp["shape"])
        g = np.array(got["data"], dtype=dt).reshape(exp["shape"])
        if exp["dtype"] in tol:
            rtol, atol = tol[exp["dtype"]]
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=path)
        else:
            np.testing.assert_array_equal(g, e, err_msg=path)


def compare_record(exp, got, name, tol):
    assert got["transform"] == exp["transform"]
    if "error" in exp:
        assert "error" in got, f"{name}: no error, expected {exp['error']}"
        assert got["error"] == exp["error"]
    else:
        assert "error" not in got, f"{name}: raised {got['error']}"
        compare(exp["result"], got["result"], "result", tol)


# --- tests ----------------------------------------------------------------------------------
NAMES = sorted(func_cases.CASES)


@pytest.fixture(scope="module")
def expected():
    return load()["cases"]


def test_recording_covers_every_case(expected):
    assert sorted(expected) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_case_matches_recording(name, expected):
    import dyngrad
    compare_record(expected[name], run_case(name, dyngrad), name, TOL)


def test_recording_is_up_to_date():
    """The stored file is what torch.func gives now (only where torch 2.13 is installed)."""
    if os.environ.get(CHILD_ENV):
        pytest.skip("torch is blocked in this run")
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed")
    stored = load()
    if torch.__version__.split("+")[0] != stored["torch"]:
        pytest.skip(f"recorded from torch {stored['torch']}, torch {torch.__version__} here")
    fresh = record(torch)
    assert sorted(fresh["cases"]) == sorted(stored["cases"])
    for name, exp in stored["cases"].items():
        compare_record(exp, fresh["cases"][name], name, FRESH_TOL)


def test_runs_without_torch():
    """The comparison above needs neither torch nor anything importing it: run it in a
    fresh interpreter where ``import torch`` fails."""
    if os.environ.get(CHILD_ENV):
        pytest.skip("already the torch-free run")
    code = ("import sys; sys.modules['torch'] = None; import pytest; "
            "rc = pytest.main(['-q', '-p', 'no:cacheprovider', '-p', 'no:warnings', "
            "'-o', 'addopts=', '-x', sys.argv[1]]); "
            "assert not [m for m in sys.modules if m.startswith('torch.')], 'torch loaded'; "
            "sys.exit(rc)")
    env = {k: v for k, v in os.environ.items() if k != "DYNGRAD_ORACLE"}
    env[CHILD_ENV] = "1"
    p = subprocess.run([sys.executable, "-c", code, os.path.abspath(__file__)], env=env,
                       cwd=os.path.dirname(HERE), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    assert f"{len(NAMES) + 1} passed" in p.stdout, p.stdout[-2000:]


if __name__ == "__main__":
    if sys.argv[1:] != ["record"]:
        sys.exit(f"usage: {sys.argv[0]} record")
    import torch
    rec = record(torch)
    os.makedirs(os.path.dirname(DATA), exist_ok=True)
    with open(DATA, "w") as f:
        json.dump(rec, f, separators=(",", ":"))
        f.write("\n")
    n = len(rec["cases"])
    print(f"{n} cases from torch {rec['torch']} -> {os.path.relpath(DATA)} "
          f"({os.path.getsize(DATA) // 1024} KiB)")
