"""``dyngrad.nn`` loads its layer files on first use through a generated index: the index is
current, every layer is reachable as in PyTorch (attribute, ``dir``, star import, the files as
``nn.modules.<file>``), and importing dyngrad loads none of the layer files."""
from __future__ import annotations

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_index_is_current():
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_nn_index.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr


def test_import_loads_no_layer_file_and_first_use_loads_one():
    out = _run("import sys, dyngrad\n"
               "files = lambda: sorted(m for m in sys.modules if m.startswith('dyngrad.nn.modules.'))\n"
               "print(files())\n"
               "dyngrad.nn.Conv2d\n"
               "print(files())\n")
    before, after = out.splitlines()
    assert before == "['dyngrad.nn.modules._index', 'dyngrad.nn.modules.module']"
    assert "dyngrad.nn.modules.conv" in after and "dyngrad.nn.modules.rnn" not in after


def test_every_layer_reachable():
    from dyngrad import nn
    from dyngrad.nn.modules import _index
    for name, file in _index.CLASSES.items():
        cls = getattr(nn, name)
        assert isinstance(cls, type) and issubclass(cls, nn.Module)
        assert cls.__module__ == f"dyngrad.nn.modules.{file}"
        assert name in dir(nn) and name in nn.__all__
        assert getattr(nn.modules, name) is cls
    assert nn.modules.conv.Conv2d is nn.Conv2d  # the files, as torch.nn.modules.conv
    ns: dict = {}
    exec("from dyngrad.nn import *", ns)  # noqa: S102
    assert ns["LSTM"] is nn.LSTM and ns["Module"] is nn.Module


def test_unknown_names_still_refused():
    import pytest
    from dyngrad import nn
    with pytest.raises(AttributeError, match="NoSuchLayer"):
        nn.NoSuchLayer
    with pytest.raises(AttributeError, match="NoSuchLayer"):
        nn.modules.NoSuchLayer


def test_layer_static_ops_seen_when_their_file_loads_after_vmap():
    # vmap walks the layer classes for ops kept as static methods: a layer file not loaded
    # before the first vmap is loaded then, so its ops are batched as well
    out = _run("import dyngrad as torch\n"
               "from dyngrad.func import vmap\n"
               "print(vmap(torch.sin)(torch.ones(2, 3)).shape)\n"
               "conv = torch.nn.Conv2d(1, 2, 3)\n"
               "x = torch.randn(4, 1, 1, 5, 5)\n"
               "print(tuple(vmap(conv)(x).shape))\n")
    assert out.splitlines()[-1] == "(4, 1, 2, 3, 3)"
