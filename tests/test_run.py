"""``dyngrad run`` executes unmodified PyTorch scripts (the seeds' examples) and prints what
PyTorch prints; missing features fail naming the attribute."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEEDS = os.path.join(ROOT, "examples", "seeds")
EXPECTED = os.path.join(ROOT, "tests", "data", "seed_outputs")


def dyngrad_run(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    return subprocess.run([sys.executable, "-m", "dyngrad", "run", *args], cwd=cwd or SEEDS,
                          env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", sorted(f[:-4] for f in os.listdir(EXPECTED) if f.endswith(".txt")))
def test_seed_script_prints_what_pytorch_prints(name):
    r = dyngrad_run(name + ".py")
    assert r.returncode == 0, r.stderr
    with open(os.path.join(EXPECTED, name + ".txt")) as f:
        assert r.stdout == f.read()


def test_argv_main_and_imports(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import sys\n"
        "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport torch.optim\n"
        "from torch import tensor\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "import torchviz\n"
        "print(sys.argv[1:], __name__, torch.__name__, torchviz.__name__)\n"
        "print(F.relu(tensor([-1.0, 2.0])), nn.Linear.__name__, torch.optim.SGD.__name__)\n")
    r = dyngrad_run(str(script), "a", "--b", cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["['a', '--b'] __main__ dyngrad dyngrad.viz",
                                     "tensor([0., 2.]) Linear SGD"]


def test_missing_attribute_is_named(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import torch\ntorch.nn.functional.no_such_thing\n")
    r = dyngrad_run(str(script), cwd=str(tmp_path))
    assert r.returncode != 0
    assert "no_such_thing" in r.stderr
    script.write_text("import torch\ntorch.fft_nonexistent_fn(1)\n")
    r = dyngrad_run(str(script), cwd=str(tmp_path))
    assert "fft_nonexistent_fn" in r.stderr


def test_explore_writes_page(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    out = tmp_path / "rnn.html"
    r = subprocess.run([sys.executable, "-m", "dyngrad", "explore", "rnn_cell.py", "-o", str(out)],
                       cwd=SEEDS, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "MmBackward0" in html and "i2h = Wx.mm(x)" in html


def test_missing_script_is_one_line_error(tmp_path):
    r = dyngrad_run(str(tmp_path / "nope.py"), cwd=str(tmp_path))
    assert r.returncode == 2 and "no such script" in r.stderr and "Traceback" not in r.stderr
