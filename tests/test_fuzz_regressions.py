"""Replay of recorded failing programs of the differential fuzzer.

The generator, interpreter and comparison live in ``tests/fuzzlib.py`` (shared with
tests/test_fuzz_vs_torch.py).  ``tests/data/fuzz_regressions.json`` keeps programs that once
exposed a difference, with the results PyTorch gave; this file replays them against dyngrad
without needing PyTorch.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.fuzzlib import compare, describe, generate, run  # noqa: E402,F401

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fuzz_regressions.json")


# --- replay ---------------------------------------------------------------------------
def _cases():
    if not os.path.exists(DATA):
        return []
    with open(DATA) as fh:
        return json.load(fh)["cases"]


CASES = _cases()


def test_regression_file_is_valid():
    with open(DATA) as fh:
        doc = json.load(fh)
    assert doc["cases"], "no recorded programs"
    for c in doc["cases"]:
        assert {"program", "torch", "note"} <= set(c)


@pytest.mark.parametrize("case", CASES, ids=[f"seed{c['program']['seed']}" for c in CASES])
def test_replay_recorded_program(case):
    import dyngrad
    got = run(dyngrad, case["program"])
    diffs = compare(got, case["torch"])
    assert not diffs, case["note"] + "\n" + "\n".join(diffs) + "\n" + describe(case["program"])


def test_generator_is_deterministic():
    assert generate(123) == generate(123)
    assert generate(123) != generate(124)
    assert json.loads(json.dumps(generate(7))) == generate(7)
