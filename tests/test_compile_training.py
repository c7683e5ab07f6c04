"""The digits examples trained compiled: the MLP and the CNN of ``dyngrad.apps.digits`` with
Adam and a cosine learning-rate schedule (the learning rate changes every epoch and the
replay reads it live), two epochs of batches of 32 (the last batch of an epoch is smaller: a
second capture).  The compiled run replays (it does not fall back to eager) and ends with the
same parameters, bit for bit, and the same test accuracy as the eager run.  (The LSTM and
DCGAN examples are trained compiled by tests/test_examples.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad as torch
from dyngrad import nn

pytest.importorskip("sklearn")
digits = pytest.importorskip("dyngrad.apps.digits")


def _train(kind, compiled, epochs=2, batch=32):
    torch.manual_seed(0)
    xtr, ytr, xte, yte = digits.load_digits(0)
    model = digits.make_model(kind)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = torch.compile(step) if compiled else step
    gen = torch.Generator().manual_seed(0)
    losses = []
    for _ in range(epochs):
        perm = torch.randperm(len(xtr), generator=gen)
        for i in range(0, len(xtr), batch):
            idx = perm[i:i + batch]
            losses.append(float(run(xtr[idx], ytr[idx]).item()))
        sched.step()
    acc = digits.accuracy(model, xte, yte)
    return model, losses, acc, run


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_digits_trains_the_same_compiled(kind):
    m_e, l_e, acc_e, _ = _train(kind, False)
    m_c, l_c, acc_c, run = _train(kind, True)
    assert run.eager_reason is None, run.eager_reason
    assert len(run.entries) == 2  # the batches of 32 and the smaller last batch
    assert sum(e.replays for e in run.entries) > 80
    assert l_c == l_e
    for (k, a), (_, b) in zip(m_e.state_dict().items(), m_c.state_dict().items()):
        assert np.array_equal(a.numpy(), b.numpy()), k
    assert acc_c == acc_e
    assert acc_e > 0.8  # (two epochs)
