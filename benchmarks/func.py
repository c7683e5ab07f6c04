"""torch.func transforms: per-sample gradients of an MLP (vmap(grad) over functional_call,
batch 64) against a loop of per-sample backward passes and against torch.func, and jacrev of a
64x64 map against the row-by-row loop of autograd.grad.

    python -m benchmarks.func [--json out.json]

Goals (issue 15): per-sample gradients >= 5x faster than the loop and within 2x of torch.func;
jacrev >= 5x faster than the row loop.  Minimum of 20 repeats after warm-up."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))


def _best(fn, repeats=20):
    for _ in range(3):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def workloads(torch):
    """``{name: callable}`` for one library (dyngrad or PyTorch)."""
    nn, F = torch.nn, torch.nn.functional
    from_func = torch.func
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    x = torch.randn(64, 32)
    t = torch.randint(10, (64,))
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss_one(p, xi, ti):
        out = from_func.functional_call(model, p, (xi.unsqueeze(0),))
        return F.cross_entropy(out, ti.unsqueeze(0))

    def per_sample_vmap():
        return from_func.vmap(from_func.grad(loss_one), in_dims=(None, 0, 0))(params, x, t)

    def per_sample_loop():
        out = []
        for i in range(64):
            model.zero_grad()
            F.cross_entropy(model(x[i:i + 1]), t[i:i + 1]).backward()
            out.append([p.grad.clone() for p in model.parameters()])
        return out

    W = torch.randn(64, 64)
    v = torch.randn(64)

    def fmap(z):
        return (W @ z).tanh()

    def jac_rev():
        return from_func.jacrev(fmap)(v)

    def jac_rows():
        z = v.detach().requires_grad_()
        y = fmap(z)
        return torch.stack([torch.autograd.grad(y[i], z, retain_graph=True)[0]
                            for i in range(64)])

    return {"per-sample-grads vmap": per_sample_vmap, "per-sample-grads loop": per_sample_loop,
            "jacrev 64x64": jac_rev, "jacobian row loop": jac_rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import dyngrad
    res = {"dyngrad": {k: _best(f) for k, f in workloads(dyngrad).items()}}
    try:
        import torch
        res["torch"] = {k: _best(f) for k, f in workloads(torch).items()}
    except ImportError:
        pass
    d = res["dyngrad"]
    for lib, r in res.items():
        for k, s in r.items():
            print(f"{lib:8s} {k:24s} {s * 1e3:8.3f} ms")
    print(f"per-sample grads: vmap {d['per-sample-grads loop'] / d['per-sample-grads vmap']:.1f}x "
          f"faster than the loop (goal 5x)")
    if "torch" in res:
        print(f"per-sample grads: dyngrad / torch.func = "
              f"{d['per-sample-grads vmap'] / res['torch']['per-sample-grads vmap']:.2f} "
              f"(goal <= 2)")
    print(f"jacrev: {d['jacobian row loop'] / d['jacrev 64x64']:.1f}x faster than the row loop "
          f"(goal 5x)")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
