"""glibc tuning at import: applied on Linux, skipped when DYNGRAD_MALLOC_TUNING=0."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tuned(env_value):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    if env_value is not None:
        env["DYNGRAD_MALLOC_TUNING"] = env_value
    r = subprocess.run([sys.executable, "-c", "import dyngrad._malloc as m, dyngrad; "
                        "print(m.TUNED[0])"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_tuning_applied_and_can_be_disabled():
    assert _tuned(None) == "True"
    assert _tuned("0") == "False"
