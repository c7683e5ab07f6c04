"""dyngrad.multiprocessing: shared-memory tensors and modules, tensors through queues, spawn's
error propagation, and Hogwild training of one shared model by several processes."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")

import dyngrad  # noqa: E402
import dyngrad.multiprocessing as mp  # noqa: E402

SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")


def _run(tmp_path, source, timeout=120):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""),
               OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=timeout, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_share_memory_in_place_like_torch():
    for lib in (dyngrad, torch):
        t = lib.arange(6.0).reshape(2, 3)
        assert t.is_shared() is False
        same = t.share_memory_()
        assert same is t and t.is_shared() and t.tolist() == [[0, 1, 2], [3, 4, 5]]
        assert t.share_memory_() is t
    m = dyngrad.nn.Linear(3, 2)
    w = m.weight
    m.weight.grad = dyngrad.ones(2, 3)
    opt = dyngrad.optim.SGD(m.parameters(), lr=1.0)
    assert m.share_memory() is m
    assert m.weight is w and w.is_shared() and m.bias.is_shared() and w.grad.is_shared()
    before = w.detach().clone()
    opt.step()                                  # the optimizer still updates the same tensor
    assert (w.detach() == before - 1).all()
    # a view is moved with its base and keeps aliasing it
    base = dyngrad.zeros(4)
    v = base[1:3]
    v.share_memory_()
    assert v.is_shared() and base.is_shared()
    base.add_(1)
    assert v.tolist() == [1.0, 1.0]


def test_sending_a_non_leaf_that_requires_grad_is_refused_as_in_torch():
    import multiprocessing.reduction as red
    for lib, tmp in ((dyngrad, mp), (torch, torch.multiprocessing)):
        x = lib.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
            red.ForkingPickler.dumps(x)


QUEUE_AND_SPAWN = """
import json
import dyngrad as torch
import dyngrad.multiprocessing as mp


def child(q, done):
    t = q.get()
    t.mul_(10)                 # in place, in the memory the parent shares
    done.put(t.sum().item())


def fails(i):
    if i == 1:
        raise ValueError("bad thing on 1")


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q, done = ctx.Queue(), ctx.Queue()
    t = torch.arange(4.0)
    p = ctx.Process(target=child, args=(q, done))
    p.start()
    q.put(t)
    child_sum = done.get(timeout=60)
    p.join()
    out = {"parent_sees": t.tolist(), "child_sum": child_sum, "shared": t.is_shared()}
    try:
        mp.spawn(fails, nprocs=2)
    except mp.ProcessRaisedException as e:
        out["spawn_error"] = str(e)
    print(json.dumps(out))
"""


def test_queue_and_spawn(tmp_path):
    out = _run(tmp_path, QUEUE_AND_SPAWN)
    assert out["parent_sees"] == [0.0, 10.0, 20.0, 30.0] and out["child_sum"] == 60.0
    assert out["shared"]
    assert out["spawn_error"].startswith("\n\n-- Process 1 terminated with the following error:\n"
                                         "Traceback (most recent call last):")
    assert "ValueError: bad thing on 1" in out["spawn_error"]


HOGWILD = """
import json, sys
import dyngrad as torch
import dyngrad.multiprocessing as mp
from dyngrad import nn
from dyngrad.apps.digits import load_digits, make_model, accuracy


def train(rank, model, xtr, ytr, steps):
    torch.manual_seed(rank)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(steps):
        idx = torch.randint(0, len(xtr), (32,))
        opt.zero_grad()
        loss_fn(model(xtr[idx]), ytr[idx]).backward()
        opt.step()


def exact(rank, model):
    # every process subtracts 1 from the shared weights, one after another
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    opt.step()


if __name__ == "__main__":
    method = sys.argv[1]
    torch.manual_seed(0)
    xtr, ytr, xte, yte = load_digits(0)
    model = make_model("mlp")
    model.share_memory()
    before = accuracy(model, xte, yte)
    ctx = mp.get_context(method)
    # Hogwild: 2 processes update the one shared model at the same time (PyTorch's example)
    procs = [ctx.Process(target=train, args=(r, model, xtr, ytr, 60)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    after = accuracy(model, xte, yte)
    w0 = model[1].weight.detach().clone()
    for r in range(2):
        p = ctx.Process(target=exact, args=(r, model))
        p.start()
        p.join()
    exact_ok = bool(((w0 - model[1].weight.detach() - 2).abs() < 1e-5).all())
    print(json.dumps({"before": before, "after": after, "codes": [p.exitcode for p in procs],
                      "exact": exact_ok}))
"""


@pytest.mark.parametrize("method", ["fork", pytest.param("spawn", marks=pytest.mark.slow)])
def test_hogwild_training_updates_one_shared_model(tmp_path, method):
    pytest.importorskip("sklearn")
    out = _run(tmp_path, HOGWILD.replace("sys.argv[1]", repr(method)))
    assert out["codes"] == [0, 0]
    assert out["exact"]                      # both processes' updates are in the parent's model
    assert out["before"] < 0.3 and out["after"] > 0.5, out   # learnt in the children
