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


def _best(fn, repeats=10):
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

    class CNN(nn.Module):   # the per-sample-gradients tutorial's model, batch 64 of 28x28
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, 3, 1)
            self.conv2 = nn.Conv2d(32, 64, 3, 1)
            self.fc1 = nn.Linear(9216, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, z):
            z = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(z)))), 2)
            return F.log_softmax(self.fc2(F.relu(self.fc1(torch.flatten(z, 1)))), dim=1)

    cnn = CNN()
    images = torch.randn(64, 1, 28, 28)
    cparams = {k: v.detach() for k, v in cnn.named_parameters()}

    def cnn_loss(p, xi, ti):
        return F.nll_loss(from_func.functional_call(cnn, p, (xi.unsqueeze(0),)), ti.unsqueeze(0))

    def per_sample_cnn():
        return from_func.vmap(from_func.grad(cnn_loss), in_dims=(None, 0, 0))(cparams, images, t)

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
            "per-sample-grads CNN": per_sample_cnn,
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
    if "torch" in res:
        print(f"per-sample grads of the tutorial CNN: dyngrad / torch.func = "
              f"{d['per-sample-grads CNN'] / res['torch']['per-sample-grads CNN']:.2f}")
    print(f"jacrev: {d['jacobian row loop'] / d['jacrev 64x64']:.1f}x faster than the row loop "
          f"(goal 5x)")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
