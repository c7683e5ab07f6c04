"""tools/api_coverage.py: the PyTorch names found in a source, through every import style."""
import importlib.util
import pathlib

import pytest

_PATH = pathlib.Path(__file__).resolve().parent.parent / "tools" / "api_coverage.py"
_spec = importlib.util.spec_from_file_location("api_coverage", _PATH)
cov = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cov)

SOURCE = '''
import os
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
import torch.utils.data
from torch import optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, Dataset as DS
import numpy as np

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.fc2 = torch.nn.Linear(2, 2)

    def forward(self, x):
        x = F.relu(self.fc(x))
        return torch.nn.functional.log_softmax(x, dim=1).view(-1)

def main():
    model = Net()
    opt = optim.SGD(model.parameters(), lr=0.1)
    opt2 = torch.optim.Adam(model.parameters())
    sched = lr_scheduler.StepLR(opt, 1)
    dist.init_process_group("gloo")
    loader = torch.utils.data.DataLoader(DS(), batch_size=2)
    x = torch.zeros(2, dtype=torch.float32)
    y = torch.Tensor.add(x, x)
    os.path.join("a", "b")
    np.zeros(3)
    torch.zeros(3)
'''

EXPECTED = {
    "torch.nn.Module", "torch.nn.Linear", "torch.nn.functional.relu",
    "torch.nn.functional.log_softmax", "torch.optim.SGD", "torch.optim.Adam",
    "torch.optim.lr_scheduler.StepLR", "torch.distributed.init_process_group",
    "torch.utils.data.DataLoader", "torch.utils.data.Dataset", "torch.zeros", "torch.float32",
    "torch.Tensor",
}


@pytest.mark.parametrize("use_torch", [False, True], ids=["heuristic", "pytorch-modules"])
def test_names_through_every_import_style(use_torch):
    if use_torch:
        pytest.importorskip("torch")
    assert cov.names_in_source(SOURCE, cov.Names(use_torch=use_torch)) == EXPECTED


def test_aliases_of_plain_and_dotted_imports():
    alias, imported = cov._aliases(cov.ast.parse(
        "import torch.nn\nimport torch.nn.functional as F\nfrom torch import nn, optim\n"
        "from torch.optim import lr_scheduler as ls\n"))
    assert alias == {"torch": "torch", "F": "torch.nn.functional", "nn": "torch.nn",
                     "optim": "torch.optim", "ls": "torch.optim.lr_scheduler"}
    assert imported == [("nn", "torch.nn"), ("optim", "torch.optim"),
                        ("ls", "torch.optim.lr_scheduler")]


def test_resolution_against_dyngrad():
    assert cov.has("torch.nn.functional.relu")
    assert cov.has("torch.optim.lr_scheduler.StepLR")
    assert cov.has("torch.utils.data.DataLoader")
    assert not cov.has("torch.no_such_name")
    assert not cov.has("torch.nn.NoSuchLayer")


def test_measure_counts_each_name_once_per_file(tmp_path):
    (tmp_path / "a.py").write_text("import torch\ntorch.zeros(1)\ntorch.zeros(2)\n"
                                   "torch.no_such_name()\n")
    (tmp_path / "b.py").write_text("import torch as T\nT.zeros(1)\n")
    (tmp_path / "broken.py").write_text("def (:\n")
    r = cov.measure(tmp_path)
    assert (r["files"], r["pairs"], r["covered"]) == (2, 3, 2)
    assert r["missing"] == [("torch.no_such_name", 1)]
    assert round(r["percent"], 1) == 66.7
