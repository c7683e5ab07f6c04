"""The public conformance suite (PyTorch's recorded behaviour for the seeds) passes whole."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "..", "shared", "conformance", "run.py")


@pytest.mark.skipif(not os.path.exists(RUNNER), reason="conformance suite not checked out beside")
def test_conformance_suite_passes():
    r = subprocess.run([sys.executable, RUNNER, "--lib", "dyngrad"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    last = r.stdout.strip().splitlines()[-1]
    assert r.returncode == 0, r.stdout[-3000:]
    assert last.endswith(" 0 failed"), last
