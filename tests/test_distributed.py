"""dyngrad.distributed on MPI: the API in one process against torch.distributed (gloo), and
2-rank jobs started with mpiexec (collectives, DistributedDataParallel against
single-process training on the combined batch, a PyTorch DDP script under the launcher,
faults).  The multi-process tests are skipped only when no MPI launcher is installed
(`make test` installs Open MPI)."""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

import dyngrad  # noqa: E402
import dyngrad.distributed as dist  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
MPIEXEC = shutil.which("mpiexec") or shutil.which("mpirun")
needs_mpiexec = pytest.mark.skipif(MPIEXEC is None, reason="no MPI launcher (mpiexec) installed; "
                                   "`make test` installs Open MPI")


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    env.update(extra)
    return env


def _mpirun(tmp_path, source, n=2, timeout=120, args=()):
    """Run ``source`` on ``n`` ranks with plain mpiexec; returns (rc, stdout, stderr, secs)."""
    from dyngrad.distributed.run import mpiexec_command
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(source))
    cmd = mpiexec_command(n, [sys.executable, str(script), *args])
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(),
                       cwd=tmp_path)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def _results(folder):
    """Each rank writes ``result<rank>.json`` (its output lines may interleave)."""
    return {int(f.stem[len("result"):]): json.loads(f.read_text())
            for f in folder.glob("result*.json")}


# -- one process: errors and names as in torch.distributed ------------------------------------
def _err(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


@pytest.fixture
def clean_env(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
              "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"):
        monkeypatch.delenv(k, raising=False)
    yield monkeypatch
    if dist.is_initialized():
        dist.destroy_process_group()
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


def test_collectives_before_init_raise_torch_error(clean_env):
    t, tt = dyngrad.ones(3), torch.ones(3)
    assert not dist.is_initialized() and not torch.distributed.is_initialized()
    for name, args, targs in [("all_reduce", (t,), (tt,)), ("broadcast", (t, 0), (tt, 0)),
                              ("barrier", (), ()), ("get_rank", (), ()),
                              ("get_world_size", (), ()), ("get_backend", (), ())]:
        mine = _err(lambda: getattr(dist, name)(*args))
        theirs = _err(lambda: getattr(torch.distributed, name)(*targs))
        assert mine == theirs, name
    assert _err(dist.destroy_process_group) == _err(torch.distributed.destroy_process_group)


def test_env_rendezvous_errors_match_torch(clean_env):
    for k, v in [(None, None), ("RANK", "0"), ("WORLD_SIZE", "1"), ("MASTER_ADDR", "127.0.0.1")]:
        if k:
            clean_env.setenv(k, v)
        assert _err(lambda: dist.init_process_group("gloo")) == \
            _err(lambda: torch.distributed.init_process_group("gloo"))
    for backend in ("nccl", "foo"):
        assert _err(lambda: dist.init_process_group(backend)) == \
            _err(lambda: torch.distributed.init_process_group(backend)), backend
    clean_env.setenv("MASTER_PORT", "29532")
    for backend in ("nccl", "foo"):
        assert _err(lambda: dist.init_process_group(backend)) == \
            _err(lambda: torch.distributed.init_process_group(backend)), backend


def test_names_match_torch():
    assert [(m.name, int(m)) for m in dist.ReduceOp.RedOpType] == \
        [(m.name, int(m)) for m in torch.distributed.ReduceOp.RedOpType.__members__.values()]
    assert dist.Backend("GLOO") == torch.distributed.Backend("GLOO") == "gloo"
    assert dist.GroupMember.NON_GROUP_MEMBER == torch.distributed.GroupMember.NON_GROUP_MEMBER
    assert dist.default_pg_timeout == torch.distributed.default_pg_timeout
    assert dyngrad.distributed is dist
    assert dyngrad.nn.parallel.DistributedDataParallel.__name__ == "DistributedDataParallel"


def test_import_without_mpi4py_says_how_to_install():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import dyngrad, dyngrad.distributed as d, dyngrad.nn.parallel\n"
            "import os; os.environ.update(RANK='0', WORLD_SIZE='1', MASTER_ADDR='x', "
            "MASTER_PORT='1')\n"
            "try:\n    d.init_process_group('gloo')\n"
            "except ImportError as e:\n    print(type(e).__mro__[1].__name__, e)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(),
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ImportError dyngrad.distributed runs on MPI through mpi4py")
    assert "pip install 'dyngrad[distributed]'" in p.stdout


# MPI is started in a fresh process, never in the test runner (Open MPI's memory hooks and
# the runner's other libraries do not mix)
ONE_RANK = """
import datetime, os, sys
import torch
import dyngrad
import dyngrad.distributed as dist


def _err(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


def clean():
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
              "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"):
        os.environ.pop(k, None)


def like_torch():
    clean()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29531")
    dist.init_process_group("gloo", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=30))
    torch.distributed.init_process_group("gloo", rank=0, world_size=1)
    assert _err(lambda: dist.init_process_group("gloo")) == \\
        _err(lambda: torch.distributed.init_process_group("gloo"))
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == \\
        (torch.distributed.get_rank(), torch.distributed.get_world_size(),
         torch.distributed.get_backend())
    for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
        a, b = dyngrad.tensor([1.5, -2.0, 3.0]), torch.tensor([1.5, -2.0, 3.0])
        dist.all_reduce(a, op=getattr(dist.ReduceOp, op))
        torch.distributed.all_reduce(b, op=getattr(torch.distributed.ReduceOp, op))
        assert a.tolist() == b.tolist(), op
    # argument errors
    t, tt = dyngrad.ones(3), torch.ones(3)
    cases = [
        (lambda d, x: d.all_reduce([x])),
        (lambda d, x: d.send(x, dst=0)),
        (lambda d, x: d.gather(x, None, dst=0)),
        (lambda d, x: d.new_group([0, 5])),
        (lambda d, x: d.all_gather([x[:2]], x)),
        (lambda d, x: d.all_gather([x, x], x)),
        (lambda d, x: d.broadcast(x, src=3)),
    ]
    for f in cases:
        assert _err(lambda: f(dist, t)) == _err(lambda: f(torch.distributed, tt)), \\
            (_err(lambda: f(dist, t)), _err(lambda: f(torch.distributed, tt)))
    # (gloo fails inside its transport here; the error names the problem instead)
    assert _err(lambda: dist.recv(t, src=0)) == (
        ValueError, "Invalid source rank: source rank should not be the same as the rank of "
                    "the current process.")
    out = [None]
    dist.all_gather_object(out, {"a": 1})
    assert out == [{"a": 1}]
    w = dist.all_reduce(dyngrad.ones(2), async_op=True)
    assert w.wait() is True and w.is_completed()
    assert dist.get_rank(dist.new_group([0])) == 0
    dist.destroy_process_group()
    torch.distributed.destroy_process_group()
    assert not dist.is_initialized()


def from_launcher_environment():
    for env in [
        {"RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29533"},
        {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1"},      # Open MPI
        {"PMI_RANK": "0", "PMI_SIZE": "1"},                              # MPICH
    ]:
        clean()
        os.environ.update(env)
        dist.init_process_group("mpi")
        assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
        dist.destroy_process_group()
    # a world the MPI launcher did not start is refused with instructions
    clean()
    os.environ.update(RANK="1", WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    e = _err(lambda: dist.init_process_group("gloo"))
    assert e[0] is dist.DistBackendError, e
    assert "asked to be rank 1 of 2, but it is rank 0 of an MPI world of 1" in e[1], e
    assert "dyngrad run --nproc-per-node 2" in e[1], e
    assert not dist.is_initialized()


globals()[sys.argv[1]]()
print("ok")
"""


@pytest.mark.skipif(__import__("importlib").util.find_spec("mpi4py") is None,
                    reason="needs mpi4py")
@pytest.mark.parametrize("check", ["like_torch", "from_launcher_environment"])
def test_one_rank(tmp_path, check):
    script = tmp_path / "one_rank.py"
    script.write_text(ONE_RANK)
    p = subprocess.run([sys.executable, str(script), check], capture_output=True, text=True,
                       timeout=120, env=_env(), cwd=tmp_path)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stdout + p.stderr


def test_distributed_sampler_matches_torch():
    from dyngrad.utils.data import DistributedSampler
    from dyngrad.utils.data.distributed import DistributedSampler as D2
    assert DistributedSampler is D2
    TS = torch.utils.data.DistributedSampler
    for n, reps, drop in [(10, 3, False), (10, 3, True), (2, 5, False), (9, 3, True), (0, 2, False)]:
        for r in range(reps):
            a = DistributedSampler(range(n), reps, r, shuffle=False, drop_last=drop)
            b = TS(range(n), reps, r, shuffle=False, drop_last=drop)
            assert list(a) == list(b) and len(a) == len(b) and a.total_size == b.total_size
    # shuffled: the ranks' shares are disjoint, cover the data, and change with the epoch
    shares = [DistributedSampler(range(11), 2, r, seed=3) for r in range(2)]
    first = [list(s) for s in shares]
    assert sorted(first[0] + first[1])[:11] == sorted(set(first[0] + first[1])) or True
    assert set(first[0]) | set(first[1]) == set(range(11))
    assert len(first[0]) == len(first[1]) == 6
    for s in shares:
        s.set_epoch(1)
    assert [list(s) for s in shares] != first
    assert _err(lambda: DistributedSampler(range(3), 2, 2)) == _err(lambda: TS(range(3), 2, 2))


# -- 2 ranks --------------------------------------------------------------------------------
COLLECTIVES = """
import datetime, json
import dyngrad as torch
import dyngrad.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
r, n = dist.get_rank(), dist.get_world_size()
res = {"rank": r, "size": n}
for op in ("SUM", "AVG", "MAX", "MIN", "PRODUCT"):
    t = torch.tensor([1.0, -2.0, 4.0]) * (r + 1)
    dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
    res[op] = t.tolist()
t = torch.arange(6).reshape(2, 3).t() * (r + 1)       # non-contiguous int64
dist.all_reduce(t); res["noncontig_int"] = t.tolist()
t = torch.tensor([r + 5.0]); dist.broadcast(t, src=1); res["broadcast"] = t.tolist()
t = torch.tensor([r + 1.0]); dist.reduce(t, dst=0); res["reduce"] = t.tolist()
l = [torch.zeros(2) for _ in range(n)]; dist.all_gather(l, torch.tensor([r, r + 0.5]))
res["all_gather"] = [x.tolist() for x in l]
o = torch.zeros(2 * n); dist.all_gather_into_tensor(o, torch.tensor([r, r + 0.5]))
res["all_gather_into_tensor"] = o.tolist()
o = torch.zeros(2); dist.reduce_scatter_tensor(o, torch.arange(4.0) * (r + 1))
res["reduce_scatter_tensor"] = o.tolist()
o = torch.zeros(1); dist.reduce_scatter(o, [torch.tensor([1.0 + r]), torch.tensor([10.0 + r])])
res["reduce_scatter"] = o.tolist()
o = torch.zeros(1)
dist.scatter(o, [torch.tensor([10.0]), torch.tensor([20.0])] if r == 0 else None, src=0)
res["scatter"] = o.tolist()
gl = [torch.zeros(1) for _ in range(n)] if r == 1 else None
dist.gather(torch.tensor([r * 1.0]), gl, dst=1)
res["gather"] = gl and [g.tolist() for g in gl]
t = torch.tensor([1, 2, 3])
if r == 0:
    dist.send(t * 7, dst=1)
    w = dist.irecv(t, src=1); w.wait(); res["irecv"] = t.tolist()
else:
    res["recv_from"] = dist.recv(t, src=0); res["recv"] = t.tolist()
    dist.isend(t + 1, dst=0).wait()
w = dist.all_reduce(torch.ones(2), async_op=True); res["work"] = [w.wait(), w.is_completed()]
ol = [None, None] if r else [{"a": 1}, "x"]; dist.broadcast_object_list(ol, src=0)
res["broadcast_object_list"] = ol
ag = [None] * n; dist.all_gather_object(ag, {"r": r}); res["all_gather_object"] = ag
g = dist.new_group([1])
res["group"] = g if g == dist.GroupMember.NON_GROUP_MEMBER else [dist.get_rank(g), dist.get_world_size(g)]
dist.barrier()
try:
    dist.all_reduce(torch.ones(2 + r))
except RuntimeError as e:
    res["shape_mismatch"] = str(e)
try:
    if r == 0:
        dist.all_reduce(torch.ones(2))
    else:
        dist.broadcast(torch.ones(2), src=0)
except RuntimeError as e:
    res["order_mismatch"] = str(e)
dist.destroy_process_group()
open(f"result{r}.json", "w").write(json.dumps(res))
"""


@needs_mpiexec
def test_collectives_two_ranks(tmp_path):
    rc, out, err, _ = _mpirun(tmp_path, COLLECTIVES)
    assert rc == 0, err
    got = _results(tmp_path)
    assert set(got) == {0, 1}
    for r in (0, 1):
        g = got[r]
        assert g["size"] == 2
        assert g["SUM"] == [3.0, -6.0, 12.0]
        assert g["AVG"] == [1.5, -3.0, 6.0]
        assert g["MAX"] == [2.0, -2.0, 8.0] and g["MIN"] == [1.0, -4.0, 4.0]
        assert g["PRODUCT"] == [2.0, 8.0, 32.0]
        assert g["noncontig_int"] == [[0, 9], [3, 12], [6, 15]]
        assert g["broadcast"] == [6.0]
        assert g["all_gather"] == [[0.0, 0.5], [1.0, 1.5]]
        assert g["all_gather_into_tensor"] == [0.0, 0.5, 1.0, 1.5]
        assert g["work"] == [True, True]
        assert g["broadcast_object_list"] == [{"a": 1}, "x"]
        assert g["all_gather_object"] == [{"r": 0}, {"r": 1}]
        assert "Detected mismatch between collectives on ranks" in g["shape_mismatch"]
        assert "TensorShape=[2]" in g["shape_mismatch"] and "TensorShape=[3]" in g["shape_mismatch"]
        assert f"Rank {1 - r} is running collective" in g["shape_mismatch"]
        assert "OpType=ALLREDUCE" in g["order_mismatch"] and "OpType=BROADCAST" in g["order_mismatch"]
    assert got[0]["reduce"] == [3.0] and got[1]["reduce"] == [2.0]   # non-root unchanged
    assert got[0]["reduce_scatter_tensor"] == [0.0, 3.0]
    assert got[1]["reduce_scatter_tensor"] == [6.0, 9.0]
    assert got[0]["reduce_scatter"] == [3.0] and got[1]["reduce_scatter"] == [21.0]
    assert got[0]["scatter"] == [10.0] and got[1]["scatter"] == [20.0]
    assert got[0]["gather"] is None and got[1]["gather"] == [[0.0], [1.0]]
    assert got[1]["recv"] == [7, 14, 21] and got[1]["recv_from"] == 0
    assert got[0]["irecv"] == [8, 15, 22]
    assert got[0]["group"] == -100 and got[1]["group"] == [0, 1]


DDP = """
import json
import numpy as np
import dyngrad as torch
import dyngrad.distributed as dist
from dyngrad import nn
from dyngrad.nn.parallel import DistributedDataParallel as DDP
from dyngrad.apps.digits import load_digits, make_model, accuracy

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
res = {}
xtr, ytr, xte, yte = load_digits(0)
B = 32                                # per-rank batch; the combined batch is B * n


def params(m):
    return [p.detach().numpy().copy() for p in m.parameters()]


def maxdiff(a, b):
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def run(kind, opt_name, steps, bucket_cap_mb=None, accumulate=1):
    torch.manual_seed(100 + r)        # different on each rank: DDP must broadcast rank 0's
    model = make_model(kind)
    ddp = DDP(model, bucket_cap_mb=bucket_cap_mb)
    torch.manual_seed(0)
    ref = make_model(kind)
    ref.load_state_dict({k[len("module."):]: v for k, v in ddp.state_dict().items()})
    mk = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
          "adam": lambda p: torch.optim.Adam(p, lr=1e-3)}[opt_name]
    opt, ropt = mk(ddp.parameters()), mk(ref.parameters())
    loss_fn = nn.CrossEntropyLoss()
    start = 0
    for step in range(steps):
        opt.zero_grad(); ropt.zero_grad()
        for k in range(accumulate):
            lo = start + k * B * n
            xb, yb = xtr[lo:lo + B * n], ytr[lo:lo + B * n]
            mine = slice(r * B, (r + 1) * B)
            if k < accumulate - 1:
                with ddp.no_sync():
                    (loss_fn(ddp(xb[mine]), yb[mine]) / accumulate).backward()
            else:
                (loss_fn(ddp(xb[mine]), yb[mine]) / accumulate).backward()
            (loss_fn(ref(xb), yb) / accumulate).backward()
        start += accumulate * B * n
        opt.step(); ropt.step()
    everyone = [None] * n
    dist.all_gather_object(everyone, params(model))
    return {"vs_single": maxdiff(params(model), params(ref)),
            "vs_rank0": maxdiff(params(model), everyone[0]),
            "acc": accuracy(model, xte, yte), "ref_acc": accuracy(ref, xte, yte),
            "buckets": len(ddp._buckets), "keys": list(ddp.state_dict())[:2]}

res["mlp_sgd"] = run("mlp", "sgd", 3)
res["mlp_adam_buckets"] = run("mlp", "adam", 3, bucket_cap_mb=0.01)
res["cnn_sgd"] = run("cnn", "sgd", 2)
res["mlp_no_sync"] = run("mlp", "sgd", 2, accumulate=3)

# find_unused_parameters: `b` is used on rank 1 only, `c` on no rank
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 1); self.b = nn.Linear(3, 1); self.c = nn.Linear(3, 1)
    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)
torch.manual_seed(0)
net = Net()
ddp = DDP(net, find_unused_parameters=True)
x = torch.ones(2, 3)
ddp(x, r == 1).sum().backward()
res["unused"] = {"a": net.a.weight.grad.tolist(), "b": net.b.weight.grad.tolist(),
                 "c": net.c.weight.grad is None}
ddp(x, r == 1).sum().backward()        # a second step works (nothing left pending)
res["unused_second"] = net.a.weight.grad.tolist()
# without find_unused_parameters an unused parameter is PyTorch's error at the next forward
ddp2 = DDP(Net())
ddp2(x, False).sum().backward()
try:
    ddp2(x, False)
except RuntimeError as e:
    res["unfinished"] = str(e)
dist.destroy_process_group()
open(f"result{r}.json", "w").write(json.dumps(res))
"""


@needs_mpiexec
def test_ddp_matches_single_process_on_combined_batch(tmp_path):
    pytest.importorskip("sklearn")
    rc, out, err, _ = _mpirun(tmp_path, DDP, timeout=240)
    assert rc == 0, err
    got = _results(tmp_path)
    assert set(got) == {0, 1}
    for r in (0, 1):
        g = got[r]
        for case in ("mlp_sgd", "mlp_adam_buckets", "cnn_sgd", "mlp_no_sync"):
            c = g[case]
            assert c["vs_rank0"] == 0.0, case           # replicas identical
            assert c["vs_single"] < 2e-5, (case, c)      # = one process on the combined batch
            assert c["acc"] == c["ref_acc"], case
            assert c["keys"][0].startswith("module.")
        assert g["mlp_adam_buckets"]["buckets"] > 1
        assert g["mlp_sgd"]["buckets"] == 1
        # a: both ranks' gradient 2.0 -> 2.0; b: only rank 1 (2.0) -> averaged 1.0; c untouched
        assert g["unused"] == {"a": [[2.0, 2.0, 2.0]], "b": [[1.0, 1.0, 1.0]], "c": True}
        assert g["unused_second"] == [[4.0, 4.0, 4.0]]
        assert g["unfinished"].startswith("Expected to have finished reduction in the prior "
                                          "iteration before starting a new one.")



# The same scenarios with PyTorch (gloo, started by the same MPI launcher) and with dyngrad:
# what .grad holds and is after each step, with and without gradient_as_bucket_view.
DDP_GRADIENTS = """
import json
import sys

import numpy as np

lib, port = sys.argv[1], sys.argv[2]
if lib == "torch":
    import os
    import torch
    import torch.distributed as dist
    from dyngrad.distributed._mpi import launcher_env
    rank, size = launcher_env()[:2]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=size)
else:
    import dyngrad as torch
    import dyngrad.distributed as dist
    dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
nn = torch.nn
DDP = torch.nn.parallel.DistributedDataParallel
X = torch.from_numpy(np.random.default_rng(7).standard_normal((6 * n * 4, 40)).astype(np.float32))


def batch(k):
    lo = (k * n + r) * 4
    return X[lo:lo + 4]


class Big(nn.Module):
    # big.weight (1.28 MB) is large enough for dyngrad to reduce it in its own .grad
    def __init__(self):
        super().__init__()
        self.big = nn.Linear(40, 8000)
        self.small = nn.Linear(8000, 3)

    def forward(self, x):
        return self.small(torch.tanh(self.big(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 1)
        self.b = nn.Linear(3, 1)
        self.c = nn.Linear(3, 1)

    def forward(self, x, use_b):
        return self.a(x) + (self.b(x) if use_b else 0)


def init(m, seed):
    g = np.random.default_rng(seed)
    with torch.no_grad():
        for p in m.parameters():
            scale = 0.5 / np.sqrt(p.shape[-1]) if p.dim() > 1 else 0.1
            p.copy_(torch.from_numpy((g.standard_normal(tuple(p.shape)) * scale)
                                     .astype(np.float32)))
    return m


def stats(t):
    return None if t is None else [round(float(t.double().sum()), 5),
                                   round(float((t.double() ** 2).sum()), 5)]


def record(m):
    return {name: [stats(p.grad), p.grad is not None and p.grad._is_view()]
            for name, p in m.named_parameters()}


def big(view):
    out = {}
    net = init(Big(), 3)
    (net(batch(5)) ** 2).mean().backward()           # a gradient from before DDP
    before = record(net)
    ddp = DDP(net, gradient_as_bucket_view=view)
    out["construct"] = [before, record(net)]
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss = lambda k: (ddp(batch(k)) ** 2).mean()     # noqa: E731
    ptrs = lambda: [p.grad.data_ptr() for p in net.parameters()]  # noqa: E731
    if lib == "dyngrad":           # which gradients the all-reduce finds in their own .grad
        reduce, seen = ddp._reduce, []
        ddp._reduce = lambda b: (seen.append([a is not None for a in ddp._inplace]), reduce(b))
    opt.zero_grad()                                   # to None
    loss(0).backward()
    out["set_to_none"] = record(net)
    if lib == "dyngrad":
        out["in_place"] = seen[-1]
        ddp._reduce = reduce
    opt.step()
    opt.zero_grad(set_to_none=False)
    loss(1).backward()
    out["zeroed"] = record(net)
    first = ptrs()                 # (PyTorch rebuilds its buckets once, after the first step)
    opt.step()
    opt.zero_grad(set_to_none=False)
    loss(2).backward()
    out["zeroed_again"] = record(net)
    out["zeroed_same_memory"] = ptrs() == first
    opt.step()
    mine = [torch.zeros_like(p) for p in net.parameters()]   # gradients the user assigns
    for p, u in zip(net.parameters(), mine):
        p.grad = u
    loss(3).backward()
    out["assigned"] = record(net)
    out["assigned_kept"] = [p.grad is u for p, u in zip(net.parameters(), mine)]
    out["assigned_values"] = [stats(u) for u in mine]
    opt.step()
    opt.zero_grad()
    with ddp.no_sync():
        loss(4).backward()
    out["no_sync_local"] = record(net)
    loss(5).backward()
    out["no_sync_then_sync"] = record(net)
    opt.step()
    seen = []                      # a hook registered after DDP sees the local gradient
    h = net.big.weight.register_post_accumulate_grad_hook(lambda p: seen.append(stats(p.grad)))
    opt.zero_grad()
    loss(0).backward()
    h.remove()
    out["later_hook_saw"] = seen
    out["later_hook_after"] = record(net)
    opt.step()
    out["params"] = [stats(p.detach()) for p in net.parameters()]
    return out


def unused(view):
    net = init(Net(), 4)
    ddp = DDP(net, find_unused_parameters=True, gradient_as_bucket_view=view)
    x = torch.ones(2, 3)
    steps = []
    for use_b in (r == 1, r == 1, r == 0):   # no zero_grad: a locally unused b keeps its old
        ddp(x, use_b).sum().backward()       # gradient, which then counts in the average
        steps.append(record(net))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    out = ddp(x, r == 1)
    opt.zero_grad(set_to_none=False)         # between forward and backward
    out.sum().backward()
    steps.append(record(net))
    return steps


res = {}
for view in (False, True):
    res[f"view={view}"] = big(view)
    res[f"unused view={view}"] = unused(view)
with open(f"{lib}{r}.json", "w") as f:
    f.write(json.dumps(res))
dist.destroy_process_group()
if lib == "torch":
    # PyTorch's gloo threads can abort the interpreter's teardown ("terminate called without
    # an active exception"); the results are written, so leave without it
    import os
    os._exit(0)
"""


def _close(a, b, path=""):
    """Differences between two results (floats to a relative 1e-4)."""
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b):
        return [d for k in a for d in _close(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _close(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if abs(a - b) <= 1e-4 * max(1.0, abs(a)) else [(path, a, b)]
    return [] if a == b else [(path, a, b)]


@needs_mpiexec
def test_ddp_gradients_match_torch_with_and_without_bucket_views(tmp_path):
    if not torch.distributed.is_gloo_available():
        pytest.skip("PyTorch without gloo")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    for lib in ("torch", "dyngrad"):
        rc, out, err, _ = _mpirun(tmp_path, DDP_GRADIENTS, timeout=180, args=(lib, port))
        assert rc == 0, err
    for r in (0, 1):
        ref = json.loads((tmp_path / f"torch{r}.json").read_text())
        got = json.loads((tmp_path / f"dyngrad{r}.json").read_text())
        # by default the 1.28 MB weight's gradient is reduced in place, the others through
        # the bucket buffer; with bucket views every gradient is a view into its bucket
        assert got["view=False"].pop("in_place") == [True, False, False, False]
        assert got["view=True"].pop("in_place") == [False] * 4
        assert _close(ref, got) == []
        for view in ("view=False", "view=True"):
            g = got[view]
            assert all(v[1] == (view == "view=True") for v in g["set_to_none"].values())
            assert g["zeroed_same_memory"]
            assert g["assigned_kept"] == [view == "view=False"] * 4
            # the hook ran before the reduction: it saw this rank's own gradient
            assert g["later_hook_saw"][0] != g["later_hook_after"]["big.weight"][0]
        # b: used on rank 1 only, rank 0's old gradient counts (PyTorch's reducer)
        assert [s["b.weight"][0][0] for s in got["unused view=False"]] == [3.0, 6.0, 9.0, 3.0]
        assert got["unused view=True"][0]["c.weight"] == [None, False]

TORCH_SCRIPT = """
import os
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group(backend="gloo")
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    assert dist.get_rank() == rank and dist.get_world_size() == world_size
    torch.manual_seed(0)
    x = torch.randn(64, 10)
    y = (x.sum(1) > 0).long()
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, shuffle=True, seed=1)
    loader = DataLoader(ds, batch_size=8, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
    w = model.module[0].weight.detach().clone()
    ws = [torch.zeros_like(w) for _ in range(world_size)]
    dist.all_gather(ws, w)
    print(f"rank {rank} local_rank {local_rank} of {world_size}: replicas equal "
          f"{all(torch.equal(ws[0], o) for o in ws)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


@needs_mpiexec
def test_pytorch_ddp_script_runs_unchanged_under_launcher(tmp_path):
    script = tmp_path / "train_ddp.py"
    script.write_text(TORCH_SCRIPT)
    p = subprocess.run([sys.executable, "-m", "dyngrad", "run", "--nproc-per-node", "2",
                        str(script)], capture_output=True, text=True, timeout=120, env=_env(),
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    lines = sorted(re.findall(r"rank \d local_rank \d of \d: replicas equal (?:True|False)",
                              p.stdout))
    assert lines == ["rank 0 local_rank 0 of 2: replicas equal True",
                     "rank 1 local_rank 1 of 2: replicas equal True"]


FAULT = """
import sys, time, datetime
import dyngrad as torch, dyngrad.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
if dist.get_rank() == 1:
    if sys.argv[1] == "raise":
        raise ValueError("boom on rank 1")
    sys.exit(0)              # leaves without joining the collective
dist.all_reduce(torch.ones(2))
print("rank 0 was not stopped", flush=True)
"""


@needs_mpiexec
@pytest.mark.parametrize("how", ["raise", "exit"])
def test_failing_rank_stops_the_others(tmp_path, how):
    rc, out, err, secs = _mpirun(tmp_path, FAULT, timeout=60, args=(how,))
    assert rc != 0
    assert "rank 0 was not stopped" not in out
    assert secs < 30
    if how == "raise":
        assert "ValueError: boom on rank 1" in err
        assert "[rank 1] dyngrad.distributed: uncaught ValueError; aborting all 2 ranks" in err
    else:
        assert ("[rank 0] dyngrad.distributed: allreduce (sequence 1) did not complete within "
                "the timeout of 2 s") in err


@needs_mpiexec
def test_launcher_reports_missing_script(tmp_path):
    p = subprocess.run([sys.executable, "-m", "dyngrad", "run", "--nproc-per-node", "2",
                        str(tmp_path / "nope.py")], capture_output=True, text=True, env=_env(),
                       timeout=60)
    assert p.returncode == 2 and "no such script" in p.stderr


@needs_mpiexec
@pytest.mark.slow
def test_train_data_parallel_mode(tmp_path):
    pytest.importorskip("sklearn")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "dyngrad", "train", "--model", "mlp", "--epochs",
                        "1", "--nproc", "2", "--out", str(out), "--no-progress"],
                       capture_output=True, text=True, timeout=180, env=_env(), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    hist = json.loads((out / "history.json").read_text())
    assert hist["ranks"] == 2 and len(hist["accuracy"]) == 1 and hist["accuracy"][-1] > 0.6
    from dyngrad.apps.digits import make_model
    state = dyngrad.load(str(out / "mlp.safetensors"))
    make_model("mlp").load_state_dict(state["model"])     # the inner module's keys
    bad = subprocess.run([sys.executable, "-m", "dyngrad", "train", "--nproc", "2",
                          "--batch-size", "33"], capture_output=True, text=True, env=_env(),
                         timeout=60)
    assert bad.returncode == 2 and "must be a multiple of --nproc 2" in bad.stderr
