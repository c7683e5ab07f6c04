"""Data-parallel benchmark: DistributedDataParallel on the wide MLP (784-1024-1024-10, ReLU,
cross-entropy, SGD) with 1 and 2 ranks, and DDP's gradient all-reduce against a bare mpi4py
Allreduce of the same bytes.

    python -m benchmarks.distributed            # runs the ranks itself through mpiexec
    python -m benchmarks.distributed --json out.json

Settings, each in fresh processes started with mpiexec:
  1 rank  x 1 BLAS thread, global batch 256           (the baseline)
  1 rank  x 2 BLAS threads, global batch 256          (the other way to use 2 cores)
  2 ranks x 1 BLAS thread, 128 each (global 256)      (same training as the baseline)
  2 ranks x 1 BLAS thread, 256 each (global 512)      (same work per rank)
Reported: steps/s and samples/s (minimum step time of several repeats), and per step (medians,
after a barrier so the ranks start together): DDP's whole gradient reduction (the hooks'
multiplication by 1 / world size, in place in the large gradients and into the bucket buffer
for the small ones, the all-reduces, and the small ones' averages written back into .grad), the
time inside its all-reduce calls alone, and a bare ``comm.Allreduce`` of the same bytes.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SIZES = (784, 1024, 1024, 10)


def _rank_main(batch, steps, repeats):
    import numpy as np
    import dyngrad as torch
    import dyngrad.distributed as dist
    from dyngrad import nn
    from dyngrad.nn.parallel import DistributedDataParallel as DDP
    from mpi4py import MPI

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(rank)
    x = torch.from_numpy(rng.standard_normal((batch, SIZES[0])).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, SIZES[-1], batch))

    def step():
        opt.zero_grad()
        loss_fn(ddp(x), y).backward()
        opt.step()

    comm = MPI.COMM_WORLD
    for _ in range(3):
        step()
    best = float("inf")
    for _ in range(repeats):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        comm.Barrier()
        best = min(best, (time.perf_counter() - t0) / steps)

    # DDP's reduction alone: the hooks run in the engine's order on gradients already there
    params = ddp._params
    order = list(reversed(range(len(params))))
    nbytes = sum(p._data.nbytes for p in params)

    def reduce_once():
        ddp._prepare()
        for i in order:
            for h in params[i]._post_acc_hooks:
                h(params[i])

    buf = np.ones(nbytes // 4, np.float32)
    ddp_t, coll_t, bare_t = [], [], []
    for _ in range(max(3 * repeats, 15)):
        comm.Barrier()
        c0 = ddp._comm_seconds
        t0 = time.perf_counter()
        reduce_once()
        ddp_t.append(time.perf_counter() - t0)
        coll_t.append(ddp._comm_seconds - c0)
        comm.Barrier()
        t0 = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)
        bare_t.append(time.perf_counter() - t0)
    ddp_t.sort()
    coll_t.sort()
    bare_t.sort()
    res = {"ranks": world, "batch_per_rank": batch, "step_s": best,
           "steps_per_s": 1 / best, "samples_per_s": world * batch / best,
           "grad_bytes": nbytes, "buckets": len(ddp._buckets),
           "ddp_reduce_s": ddp_t[len(ddp_t) // 2], "ddp_allreduce_s": coll_t[len(coll_t) // 2],
           "bare_allreduce_s": bare_t[len(bare_t) // 2], "ddp_reduce_min_s": ddp_t[0],
           "ddp_allreduce_min_s": coll_t[0], "bare_allreduce_min_s": bare_t[0]}
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps(res), flush=True)


def _launch(ranks, threads, batch, steps, repeats):
    from dyngrad.distributed.run import mpiexec_command
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "src"), ROOT,
                                           os.environ.get("PYTHONPATH", "")]))
    cmd = mpiexec_command(ranks, [sys.executable, "-m", "benchmarks.distributed", "--rank",
                                  str(batch), str(steps), str(repeats)])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark ranks failed:\n{out.stderr[-3000:]}")
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    res["threads"] = threads
    return res


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.distributed")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", default=None)
    p.add_argument("--rank", nargs=3, type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.rank:
        _rank_main(*args.rank)
        return 0
    runs = {
        "1 rank x 1 thread, batch 256": (1, 1, 256),
        "1 rank x 2 threads, batch 256": (1, 2, 256),
        "2 ranks x 1 thread, 128 each": (2, 1, 128),
        "2 ranks x 1 thread, 256 each": (2, 1, 256),
    }
    results = {}
    for name, (ranks, threads, batch) in runs.items():
        results[name] = _launch(ranks, threads, batch, args.steps, args.repeats)
    base = results["1 rank x 1 thread, batch 256"]
    two_t = results["1 rank x 2 threads, batch 256"]
    print(f"wide MLP {'-'.join(map(str, SIZES))}, SGD; "
          f"{base['grad_bytes'] / 1e6:.1f} MB of gradients per step; cpus: {os.cpu_count()}")
    print(f"{'setting':34} {'steps/s':>8} {'samples/s':>10} {'vs 1x1':>7} {'vs 1x2':>7} "
          f"{'DDP reduce':>11} {'its allreduce':>14} {'bare mpi4py':>12} {'ratio':>6}")
    for name, r in results.items():
        ar = (f"{r['ddp_reduce_s'] * 1e3:8.2f} ms {r['ddp_allreduce_s'] * 1e3:11.2f} ms "
              f"{r['bare_allreduce_s'] * 1e3:9.2f} ms "
              f"{r['ddp_allreduce_s'] / r['bare_allreduce_s']:6.2f}" if r["ranks"] > 1 else
              f"{r['ddp_reduce_s'] * 1e3:8.2f} ms")
        print(f"{name:34} {r['steps_per_s']:8.2f} {r['samples_per_s']:10.0f} "
              f"{r['samples_per_s'] / base['samples_per_s']:6.2f}x "
              f"{r['samples_per_s'] / two_t['samples_per_s']:6.2f}x {ar}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": os.cpu_count(), "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
