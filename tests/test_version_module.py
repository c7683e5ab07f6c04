"""``dyngrad.version`` has ``torch.version``'s names, with the values of a CPU-only build."""
from __future__ import annotations

import pytest

import dyngrad

torch = pytest.importorskip("torch")


def test_same_names_as_torch_version():
    names = {n for n in dir(torch.version) if not n.startswith("_") and n != "Optional"}
    assert names <= set(dir(dyngrad.version))


def test_cpu_build_values():
    for n in ("cuda", "hip", "rocm", "xpu"):
        assert getattr(dyngrad.version, n) is None is getattr(torch.version, n)
    assert dyngrad.version.debug is False
    assert dyngrad.version.__version__ == dyngrad.__version__
    assert isinstance(dyngrad.version.git_version, str)
