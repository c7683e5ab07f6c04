"""Packed variable-length sequences through RNN/LSTM/GRU (unsorted lengths, two layers,
bidirectional) give PyTorch's losses and input gradients (recorded from PyTorch 2.13)."""
import numpy as np
import pytest

import dyngrad as torch

U = torch.nn.utils.rnn
# (mode, bidirectional) -> (loss, sum of x.grad), recorded with PyTorch 2.13 from this program
EXPECTED = {("LSTM", False): (-2.18186, -0.44116), ("GRU", True): (-3.22679, -2.04936),
            ("RNN", True): (3.25936, -0.26941), ("LSTM", True): (-2.06346, -0.59874)}


def _t(a, rg=False):
    t = torch.tensor(a.astype(np.float32))
    return t.requires_grad_(True) if rg else t


@pytest.mark.parametrize("mode,bi", list(EXPECTED))
def test_packed_rnn_matches_pytorch(mode, bi):
    rs = np.random.RandomState(0)
    xs = {}
    for key in EXPECTED:  # the recorded program draws inputs in this order
        xs[key] = rs.randn(3, 5, 3)
    m = getattr(torch.nn, mode)(3, 4, num_layers=2, bidirectional=bi, batch_first=True)
    with torch.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(_t(np.sin(np.arange(p.numel()) * 0.37 + i).reshape(tuple(p.shape)) * 0.4))
    x = _t(xs[(mode, bi)], rg=True)
    packed = U.pack_padded_sequence(x, [2, 5, 3], batch_first=True, enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 3, 2, 1, 1]
    out, hid = m(packed)
    padded, lens = U.pad_packed_sequence(out, batch_first=True)
    assert lens.tolist() == [2, 5, 3]
    assert tuple(padded.shape) == (3, 5, 8 if bi else 4)
    h = hid[0] if mode == "LSTM" else hid
    w = _t(np.cos(np.arange(padded.numel())).reshape(tuple(padded.shape)))
    loss = (padded * w).sum() + h.sum() * 0.5
    loss.backward()
    exp_loss, exp_grad = EXPECTED[(mode, bi)]
    assert loss.item() == pytest.approx(exp_loss, abs=2e-5)
    assert float(x.grad.numpy().sum()) == pytest.approx(exp_grad, abs=2e-5)
    # padding positions of the output are zero, h_n is each sequence's own last state
    assert float(padded[0, 2:].abs().sum()) == 0.0


def test_pack_sequence_and_errors():
    seqs = [torch.ones(4, 2), torch.ones(2, 2), torch.ones(1, 2)]
    assert U.pack_sequence(seqs).batch_sizes.tolist() == [3, 2, 1, 1]
    assert tuple(U.pad_sequence(seqs).shape) == (4, 3, 2)
    assert tuple(U.pad_sequence(seqs, batch_first=True).shape) == (3, 4, 2)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        U.pack_padded_sequence(torch.ones(3, 2, 1), [1, 3])
    with pytest.raises(RuntimeError, match="has to be greater than 0"):
        U.pack_padded_sequence(torch.ones(3, 2, 1), [3, 0])
