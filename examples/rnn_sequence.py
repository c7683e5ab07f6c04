"""An LSTM learns a small sequence task: read a sequence of random digits 0-9 and output, at
every step, the running sum modulo 10 (classification per step).  Shows nn.LSTM, nn.Embedding,
sequence losses and gradient clipping.

    python examples/rnn_sequence.py [--steps 600]
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


def train(steps=600, seed=0, log=print):
    torch.manual_seed(seed)
    rs = np.random.RandomState(seed)
    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(1, steps + 1):
        x, y = batch(rs)
        logits = model(x)
        loss = loss_fn(logits.reshape(-1, 10), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0:
            acc = (logits.argmax(-1) == y).float().mean().item()
            log(f"step {step:4d}  loss {loss.item():.3f}  per-step accuracy {acc * 100:.1f}%")
    x, y = batch(np.random.RandomState(seed + 1), n=256)
    with torch.no_grad():
        acc = (model(x).argmax(-1) == y).float().mean().item()
    log(f"held-out per-step accuracy: {acc * 100:.1f}%")
    return model, acc


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=600)
    train(p.parse_args().steps)
