"""View ops declared with ``defview`` (src/dyngrad/ops/_spec.py): the public function keeps
the view's storage, base and replay, the nodes keep PyTorch's saved values, the in-place forms
record PyTorch's nodes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from dyngrad.ops.views import apply_chain  # noqa: E402


def _saved(node):
    return {a: getattr(node, a) for a in dir(node) if a.startswith("_saved_")}


@pytest.mark.parametrize("make", [
    lambda t, m: m.split(t, 2, 1), lambda t, m: t.split([1, 3], 1), lambda t, m: t.unbind(1),
    lambda t, m: t.chunk(2, 0)])
def test_each_piece_replays_its_own_region(make):
    x = dyngrad.arange(8.0).reshape(2, 4)
    for piece in make(x, dyngrad):
        got = apply_chain(x._data, piece._view_fn)
        np.testing.assert_array_equal(got, piece.numpy())


@pytest.mark.parametrize("call", [
    lambda t: t.split(2, -1), lambda t: t.split([1, 3], 1), lambda t: t.unbind(-1),
    lambda t: t.transpose(0, -1), lambda t: t.permute(-1, 0), lambda t: t.unsqueeze(-1),
    lambda t: t.unsqueeze(0).squeeze(), lambda t: t.unsqueeze(0).squeeze(0),
    lambda t: t.unsqueeze(0).squeeze((0, -1)), lambda t: t.view(8), lambda t: t.t().reshape(8),
    lambda t: t.t().reshape(4, 2), lambda t: t[:, :1].expand(2, 3), lambda t: t.unfold(1, 2, 1)])
def test_nodes_and_saved_values_as_pytorch(call):
    a = np.arange(8.0).reshape(2, 4)
    ours = call(dyngrad.tensor(a, requires_grad=True))
    theirs = call(torch.tensor(a, requires_grad=True))
    ours = ours[0] if isinstance(ours, tuple) else ours
    theirs = theirs[0] if isinstance(theirs, tuple) else theirs
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert _saved(ours.grad_fn) == _saved(theirs.grad_fn)
    ours.sum().backward()
    theirs.sum().backward()


@pytest.mark.parametrize("call", [
    lambda t: t.unsqueeze_(0), lambda t: t.squeeze_(), lambda t: t.squeeze_(0),
    lambda t: t.squeeze_((0,)), lambda t: t.t_(), lambda t: t.transpose_(0, 1),
    lambda t: t.swapaxes_(0, 1)])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_inplace_views_as_pytorch(call, dtype):
    a = np.arange(1.0, 5.0).reshape(1, 4).astype(dtype)
    x, tx = dyngrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = call(x * 1), call(tx * 1)
    assert y.grad_fn.name() == ty.grad_fn.name()
    assert tuple(y.shape) == tuple(ty.shape)
    assert _saved(y.grad_fn) == _saved(ty.grad_fn)
    (y * y).abs().sum().backward()
    (ty * ty).abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
