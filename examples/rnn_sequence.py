"""An LSTM learns a small sequence task: read a sequence of random digits 0-9 and output, at
every step, the running sum modulo 10 (classification per step).  Shows nn.LSTM, nn.Embedding,
sequence losses and gradient clipping.

    python examples/rnn_sequence.py [--steps 600] [--compile]
"""
import argparse

import numpy as np

import dyngrad as torch
from dyngrad import nn


class Model(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.embed = nn.Embedding(10, 16)
        self.lstm = nn.LSTM(16, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 10)

    def forward(self, x):
        h, _ = self.lstm(self.embed(x))
        return self.head(h)


def batch(rs, n=64, length=8):
    x = rs.randint(0, 10, size=(n, length))
    y = np.cumsum(x, axis=1) % 10
    return torch.from_numpy(x), torch.from_numpy(y)


def train_step_of(model, opt, loss_fn):
    """One training step on a batch ``(x, y)``: the loss, its backward, the gradients clipped
    to norm 1, the update; returns the loss, the gradients' norm before clipping and the
    per-step accuracy."""
    def train_step(x, y):
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, 10), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss, norm, (logits.argmax(-1) == y).float().mean()
    return train_step


def train(steps=600, seed=0, log=print, compile=False):
    """Train for ``steps`` batches; ``compile=True`` runs each training step through
    torch.compile (captured once, replayed after: the same numbers as eager)."""
    torch.manual_seed(seed)
    rs = np.random.RandomState(seed)
    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    train_step = train_step_of(model, opt, nn.CrossEntropyLoss())
    run = torch.compile(train_step) if compile else train_step
    for step in range(1, steps + 1):
        loss, _, acc = run(*batch(rs))
        if step % 100 == 0:
            log(f"step {step:4d}  loss {loss.item():.3f}  per-step accuracy {acc.item() * 100:.1f}%")
    x, y = batch(np.random.RandomState(seed + 1), n=256)
    with torch.no_grad():
        acc = (model(x).argmax(-1) == y).float().mean().item()
    log(f"held-out per-step accuracy: {acc * 100:.1f}%")
    return model, acc


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--compile", action="store_true", help="run the training step compiled")
    a = p.parse_args()
    train(a.steps, compile=a.compile)
