"""The package and its tests pass ruff's pyflakes checks (unused imports, redefinitions, undefined names:
an op defined only through ``globals()`` would be an undefined name to every reader), with the
configuration in pyproject.toml."""
from __future__ import annotations

import os
import subprocess
import sys



ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_passes_on_the_package():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "src", "tests", "--output-format",
                        "concise"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
