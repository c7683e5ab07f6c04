"""The digits training of ``dyngrad train`` on several ranks (``--nproc N``): each rank runs
its share of every mini-batch through a ``DistributedDataParallel`` replica, so the ranks
together take the same steps as one process on the whole batch.  Rank 0 evaluates and writes
the checkpoint (the inner module's state, loadable by ``dyngrad train --resume``) and
``history.json``."""
from __future__ import annotations

import json
import os
import time

import dyngrad as torch
from dyngrad import nn

from .digits import History, accuracy, load_digits, make_model


def train_parallel(kind="cnn", epochs=30, lr=2e-3, batch_size=32, out="demo-output", seed=0,
                   progress=True, log=print):
    import dyngrad.distributed as dist
    from dyngrad.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if batch_size % world:
        raise ValueError(f"--batch-size {batch_size} must be a multiple of the {world} ranks")
    torch.manual_seed(seed)
    xtr, ytr, xte, yte = load_digits(seed)
    model = make_model(kind)
    ddp = DDP(model)
    opt = torch.optim.Adam(ddp.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed)     # the same order of batches on every rank
    hist = History()
    n, share = len(xtr), batch_size // world
    t0 = time.time()
    for epoch in range(epochs):
        perm = torch.randperm(n, generator=gen)
        total = torch.zeros(1, dtype=torch.float64)
        for i in range(0, n - batch_size + 1, batch_size):
            idx = perm[i + rank * share:i + (rank + 1) * share]
            opt.zero_grad()
            loss = loss_fn(ddp(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.item() * share
        dist.all_reduce(total)
        sched.step()
        hist.loss.append(total.item() / (n - n % batch_size))
        hist.accuracy.append(accuracy(model, xte, yte))
        if progress and rank == 0:
            log(f"epoch {epoch + 1}/{epochs}: loss {hist.loss[-1]:.4f}, "
                f"test accuracy {hist.accuracy[-1] * 100:.2f}%")
    paths = {}
    if rank == 0:
        os.makedirs(out, exist_ok=True)
        ckpt = os.path.join(out, f"{kind}.safetensors")
        torch.save({"model_kind": kind, "epoch": epochs, "model": model.state_dict(),
                    "optimizer": opt.state_dict(),
                    "history": {"loss": hist.loss, "accuracy": hist.accuracy}}, ckpt)
        with open(os.path.join(out, "history.json"), "w") as f:
            json.dump({"loss": hist.loss, "accuracy": hist.accuracy, "ranks": world}, f)
        paths = {"checkpoint": ckpt, "history": os.path.join(out, "history.json")}
        log(f"test accuracy: {hist.accuracy[-1] * 100:.2f}%  ({time.time() - t0:.1f} s, "
            f"{world} ranks)")
    dist.destroy_process_group()
    return model, hist, paths
