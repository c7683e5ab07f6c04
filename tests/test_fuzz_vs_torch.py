"""Differential fuzzing against PyTorch: seeded random programs (pointwise ops, reductions,
matmul, views, in-place ops, detach, no_grad blocks) run in dyngrad and in torch; values,
requires_grad, grad_fn names, step and backward error types, and leaf gradients must agree.

Run (PyTorch installed)::

    PYTHONPATH=src:. python -m pytest tests/test_fuzz_vs_torch.py            # short
    PYTHONPATH=src:. python -m pytest -m slow tests/test_fuzz_vs_torch.py    # long

A failing seed is kept for good with its PyTorch results (replayed without PyTorch by
tests/test_fuzz_regressions.py)::

    PYTHONPATH=src:. python tests/test_fuzz_vs_torch.py record SEED "what it exposed"
"""
from __future__ import annotations

import json
import os
import sys

import pytest

if __name__ != "__main__":
    torch = pytest.importorskip("torch")
else:  # pragma: no cover - the recording command
    import torch

import dyngrad  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.test_fuzz_regressions import DATA, compare, describe, generate, run  # noqa: E402

SHORT = 150
LONG = 5000


def _check(seed):
    prog = generate(seed)
    exp = run(torch, prog)
    got = run(dyngrad, prog)
    diffs = compare(got, exp)
    assert not diffs, "\n".join(diffs) + "\n" + describe(prog)


@pytest.mark.parametrize("seed", range(SHORT))
def test_fuzz_program(seed):
    _check(seed)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(LONG // 250))
def test_fuzz_program_long(block):
    failures = []
    for seed in range(100_000 + block * 250, 100_000 + (block + 1) * 250):
        try:
            _check(seed)
        except AssertionError as e:
            failures.append(f"seed {seed}: {str(e).splitlines()[0]}")
    assert not failures, "\n".join(failures)


def _nograd_view_program(lib):
    x = lib.ones(3, 2, dtype=lib.float64, requires_grad=True)
    y = x * 2
    with lib.no_grad():
        v = y.view(-1)
    out = {"rg": v.requires_grad, "leaf": v.is_leaf}
    try:
        y.mul_(2)
        out["inplace_base"] = None
    except Exception as e:
        out["inplace_base"] = type(e).__name__
    try:
        out["after"] = None if v.grad_fn is None else type(v.grad_fn).__name__
    except Exception as e:
        out["after"] = "error:" + type(e).__name__
    try:
        v.add_(1)
        out["inplace_view"] = None
    except Exception as e:
        out["inplace_view"] = type(e).__name__
    return out


def test_view_made_under_no_grad():
    # PyTorch's rules for views created in no_grad mode (CreationMeta.NO_GRAD_MODE)
    assert _nograd_view_program(dyngrad) == _nograd_view_program(torch)


def test_generator_covers_every_kind():
    ops = set()
    ng = False
    for s in range(SHORT):
        p = generate(s)
        ops |= {st["op"] for st in p["steps"]}
        ng = ng or any(st.get("ng") for st in p["steps"])
    assert ng
    for need in ("add", "mul", "mm_t", "sum_dim", "view_flat", "transpose", "index0", "add_",
                 "setitem", "detach"):
        assert need in ops, need


def record(seed, note):
    """Add (or refresh) ``seed`` in the regression file with PyTorch's results."""
    prog = generate(seed)
    exp = run(torch, prog)
    doc = {"cases": []}
    if os.path.exists(DATA):
        with open(DATA) as fh:
            doc = json.load(fh)
    doc["cases"] = [c for c in doc["cases"] if c["program"]["seed"] != seed]
    doc["cases"].append({"note": note, "torch_version": torch.__version__, "program": prog,
                         "torch": exp})
    doc["cases"].sort(key=lambda c: c["program"]["seed"])
    os.makedirs(os.path.dirname(DATA), exist_ok=True)
    with open(DATA, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(describe(prog))
    print("differences now:", compare(run(dyngrad, prog), exp) or "none")


if __name__ == "__main__":  # pragma: no cover
    if len(sys.argv) >= 3 and sys.argv[1] == "record":
        record(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "")
    else:
        print(__doc__)
