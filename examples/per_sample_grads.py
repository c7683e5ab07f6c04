"""Per-sample gradients of a small MLP with torch.func, as in the functorch tutorial:
``functional_call`` turns the model into a function of its parameters, ``grad`` gives the
gradient of one sample's loss, and ``vmap`` runs that for the whole batch at once (the
parameters are shared: ``in_dims=(None, 0, 0)``).  The result is checked against a loop of
ordinary backward passes, one per sample, and both are timed.

Runs unchanged with PyTorch: replace the import below with ``import torch``.
"""
from __future__ import annotations

import time

import dyngrad as torch
from dyngrad.func import functional_call, grad, vmap

nn = torch.nn
F = torch.nn.functional


class MLP(nn.Module):
    def __init__(self, n_in=32, hidden=64, n_out=10):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def per_sample_grads(model, data, targets):
    """Gradients of each sample's loss w.r.t. every parameter, stacked: {name: (N, ...)}."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def loss_of_one(params, buffers, sample, target):
        out = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(out, target.unsqueeze(0))

    return vmap(grad(loss_of_one), in_dims=(None, None, 0, 0))(params, buffers, data, targets)


def loop_grads(model, data, targets):
    """The same with one backward pass per sample."""
    out = {k: [] for k, _ in model.named_parameters()}
    for x, t in zip(data, targets):
        model.zero_grad()
        F.cross_entropy(model(x.unsqueeze(0)), t.unsqueeze(0)).backward()
        for k, p in model.named_parameters():
            out[k].append(p.grad.clone())
    return {k: torch.stack(v) for k, v in out.items()}


def main(batch=64, log=print):
    torch.manual_seed(0)
    model = MLP()
    data = torch.randn(batch, 32)
    targets = torch.randint(10, (batch,))
    t0 = time.perf_counter()
    g = per_sample_grads(model, data, targets)
    t1 = time.perf_counter()
    ref = loop_grads(model, data, targets)
    t2 = time.perf_counter()
    worst = max((g[k] - ref[k]).abs().max().item() for k in g)
    for k, v in g.items():
        log(f"{k:12s} per-sample gradient {tuple(v.shape)}")
    log(f"largest difference from the loop: {worst:.2e}")
    log(f"vmap(grad): {1e3 * (t1 - t0):.1f} ms, loop of {batch} backward passes: "
        f"{1e3 * (t2 - t1):.1f} ms")
    return g, ref, worst


if __name__ == "__main__":
    main()
