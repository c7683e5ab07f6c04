"""Training an MLP or a CNN on scikit-learn's bundled digits (8x8 images, no download), with
a progress bar, a checkpoint, a loss/accuracy plot, the backward graph of one step and the
graph explorer page of that step."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

import numpy as np

import dyngrad as torch
from dyngrad import nn


def load_digits(seed: int = 0, test_fraction: float = 0.2):
    """Digits as float32 tensors (N, 1, 8, 8) scaled to [0, 1], split into train and test."""
    try:
        from sklearn.datasets import load_digits as _load
    except ImportError as e:
        raise RuntimeError("the digits data set comes with scikit-learn: pip install "
                           "'dyngrad[examples]'") from e
    d = _load()
    x = (d.images / 16.0).astype(np.float32)[:, None]
    y = d.target.astype(np.int64)
    rs = np.random.RandomState(seed)
    order = rs.permutation(len(x))
    n_test = int(len(x) * test_fraction)
    te, tr = order[:n_test], order[n_test:]
    return (torch.from_numpy(x[tr]), torch.from_numpy(y[tr]),
            torch.from_numpy(x[te]), torch.from_numpy(y[te]))


def make_model(kind: str) -> nn.Module:
    """``mlp``: 64-128-64-10 with ReLU; ``cnn``: two 3x3 conv blocks and a linear head."""
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64),
                             nn.ReLU(), nn.Linear(64, 10))
    if kind == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(64 * 2 * 2, 10))
    raise ValueError(f"unknown model {kind!r}: choose 'mlp' or 'cnn'")


@dataclass
class History:
    """Per-epoch training loss and test accuracy."""

    loss: list = field(default_factory=list)
    accuracy: list = field(default_factory=list)


def accuracy(model, x, y, batch: int = 512) -> float:
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), batch):
            correct += int((model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum().item())
    model.train()
    return correct / len(x)


def train(kind="cnn", epochs=30, lr=2e-3, batch_size=32, out="demo-output", resume=None,
          seed=0, progress=True, log=print):
    """Train, evaluate and write the outputs into ``out``; returns (model, history, paths)."""
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(seed)
    xtr, ytr, xte, yte = load_digits(seed)
    model = make_model(kind)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    # cosine decay to zero over the run: a stable final accuracy whatever the seed
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    hist = History()
    start_epoch = 0
    if resume:
        state = torch.load(resume)
        if state.get("model_kind") != kind:
            raise ValueError(f"checkpoint {resume} holds a {state.get('model_kind')!r} model, not "
                             f"{kind!r}")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        for _ in range(int(state["epoch"])):
            sched.step()
        hist = History(list(state["history"]["loss"]), list(state["history"]["accuracy"]))
        start_epoch = int(state["epoch"])
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(seed + start_epoch)
    n = len(xtr)
    bar = None
    if progress:
        try:
            from tqdm import tqdm
            bar = tqdm(total=(epochs - start_epoch) * ((n + batch_size - 1) // batch_size),
                       desc=f"training {kind}", unit="step", leave=True, mininterval=0.25)
        except ImportError:
            bar = None
    t0 = time.time()
    # the explorer page of the first training step (forward, backward, optimizer step); the
    # later steps are only counted and their losses kept for the page's loss curve
    from ..viz import record
    with record(params=dict(model.named_parameters()), iterations=1,
                title=f"{kind.upper()} on digits: the first training step") as rec:
        _epochs(model, opt, sched, loss_fn, hist, xtr, ytr, xte, yte, gen, batch_size,
                start_epoch, epochs, bar)
    if bar is not None:
        bar.close()
    paths = _write_outputs(kind, model, opt, hist, epochs, out, xtr[:batch_size], ytr[:batch_size],
                           loss_fn, rec)
    log(f"test accuracy: {hist.accuracy[-1] * 100:.2f}%  ({time.time() - t0:.1f} s)")
    return model, hist, paths


def _epochs(model, opt, sched, loss_fn, hist, xtr, ytr, xte, yte, gen, batch_size, start_epoch,
            epochs, bar):
    n = len(xtr)
    for epoch in range(start_epoch, epochs):
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, batch_size):
            idx = perm[i:i + batch_size]
            opt.zero_grad()
            loss = loss_fn(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            if bar is not None:
                bar.update(1)
                if i % (8 * batch_size) == 0:
                    bar.set_postfix(loss=f"{loss.item():.3f}",
                                    acc=f"{hist.accuracy[-1] * 100:.1f}%" if hist.accuracy else "-",
                                    refresh=False)
        sched.step()
        hist.loss.append(total / n)
        hist.accuracy.append(accuracy(model, xte, yte))


def _write_outputs(kind, model, opt, hist, epochs, out, xb, yb, loss_fn, rec=None):
    paths = {}
    ckpt = os.path.join(out, f"{kind}.safetensors")
    torch.save({"model_kind": kind, "epoch": epochs, "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "history": {"loss": hist.loss, "accuracy": hist.accuracy}}, ckpt)
    paths["checkpoint"] = ckpt
    with open(os.path.join(out, "history.json"), "w") as f:
        json.dump({"loss": hist.loss, "accuracy": hist.accuracy}, f)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(9, 3.2))
        ax[0].plot(range(1, len(hist.loss) + 1), hist.loss, marker="o")
        ax[0].set_xlabel("epoch")
        ax[0].set_ylabel("training loss")
        ax[1].plot(range(1, len(hist.accuracy) + 1), [a * 100 for a in hist.accuracy], marker="o",
                   color="tab:green")
        ax[1].set_xlabel("epoch")
        ax[1].set_ylabel("test accuracy (%)")
        fig.tight_layout()
        p = os.path.join(out, "training.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths["plot"] = p
    except ImportError:
        pass
    # the backward graph of one more step, drawn; the explorer page of the first step
    try:
        from dyngrad import viz
        loss = loss_fn(model(xb), yb)
        dot = viz.make_dot(loss, params=dict(model.named_parameters()))
        del loss
        try:
            p = os.path.join(out, "backward-graph")
            dot.render(p, format="svg", cleanup=True)
            paths["graph"] = p + ".svg"
        except Exception as e:  # noqa: BLE001 - Graphviz missing: say so, keep going
            paths["graph"] = f"not drawn: {e}".split("\n")[0]
        if rec is not None:
            p = os.path.join(out, "explorer.html")
            rec.save_html(p)
            paths["explorer"] = p
    except ImportError as e:
        paths["graph"] = f"not drawn: {e}"
    return paths
