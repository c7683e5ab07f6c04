"""Views and in-place ops as PyTorch does them: shared storage and version counters, history
rewriting (CopySlices) for in-place ops on views, saved-tensor checks, ``.data``."""
import numpy as np
import pytest

import dyngrad as torch


def ver(t):
    v = t._version
    return v[0] if isinstance(v, list) else v


def name(t):
    return type(t.grad_fn).__name__


def test_slice_view_mul_rewrites_base():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    v = b[1:]
    v.mul_(2)
    assert name(b) == "CopySlices"
    assert name(v) == "AsStridedBackward0"
    b.sum().backward()
    assert a.grad.tolist() == [1.0, 2.0, 2.0]
    assert b.tolist() == [1.0, 4.0, 6.0]


@pytest.mark.parametrize("make,expect", [
    (lambda b: b[1], [[1, 1], [3, 3], [1, 1]]),
    (lambda b: b.select(1, 0), [[3, 1], [3, 1], [3, 1]]),
    (lambda b: b.narrow(0, 1, 2), [[1, 1], [3, 3], [3, 3]]),
    (lambda b: b.t(), [[3, 3], [3, 3], [3, 3]]),
    (lambda b: b.transpose(0, 1)[1], [[1, 3], [1, 3], [1, 3]]),
    (lambda b: b.view(6)[::2], [[3, 1], [3, 1], [3, 1]]),
    (lambda b: b.reshape(2, 3)[0], [[3, 3], [3, 1], [1, 1]]),
    (lambda b: b.unsqueeze(0)[0, :, 1:], [[1, 3], [1, 3], [1, 3]]),
    (lambda b: b.permute(1, 0).movedim(0, 1)[-1], [[1, 1], [1, 1], [3, 3]]),
    (lambda b: b.diagonal(), [[3, 1], [1, 3], [1, 1]]),
    (lambda b: b[..., 0].squeeze(), [[3, 1], [3, 1], [3, 1]]),
])
def test_inplace_on_views_gives_copyslices(make, expect):
    a = torch.ones(3, 2, requires_grad=True)
    b = a * 1
    v = make(b)
    v.mul_(3)
    assert name(b) == "CopySlices"
    b.sum().backward()
    assert a.grad.tolist() == expect


def test_view_and_base_share_storage_and_version():
    b = torch.zeros(4)
    v = b[1:3]
    w = v.view(2, 1)
    assert ver(b) == ver(v) == ver(w) == 0
    w.add_(1)
    assert b.tolist() == [0.0, 1.0, 1.0, 0.0]
    assert ver(b) == ver(v) == ver(w) == 1
    b.zero_()
    assert ver(w) == 2 and w.tolist() == [[0.0], [0.0]]
    assert v._base is b and w._base is b


def test_every_inplace_op_bumps_version():
    x = torch.zeros(3)
    ops = [lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.fill_(1), lambda t: t.copy_(torch.ones(3)),
           lambda t: t.masked_fill_(torch.tensor([True, False, True]), 0.0),
           lambda t: t.index_fill_(0, torch.tensor([1]), 2.0), lambda t: t.scatter_(0, torch.tensor([0]), 5.0),
           lambda t: t.index_add_(0, torch.tensor([2]), torch.ones(1)), lambda t: t.__setitem__(0, 1.0),
           lambda t: t.__setitem__(torch.tensor([0, 1]), 3.0), lambda t: t.zero_()]
    for i, f in enumerate(ops, 1):
        f(x)
        assert ver(x) == i


def test_views_of_views_chain_to_root_base():
    a = torch.arange(12.0).requires_grad_()
    b = a * 1
    v = b.view(3, 4)[1:].t()[2]
    assert v._base is b
    v.mul_(10)
    out = b.sum()
    out.backward()
    g = np.ones(12)
    g[[6, 10]] = 10
    assert a.grad.tolist() == g.tolist()


def test_inplace_on_view_with_grad_requiring_value():
    a = torch.zeros(2, 3, requires_grad=True)
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.clone()
    b[1] = w * 2
    assert name(b) == "CopySlices"
    (b * torch.tensor([[1.0, 1, 1], [1, 2, 3]])).sum().backward()
    assert a.grad.tolist() == [[1, 1, 1], [0, 0, 0]]
    assert w.grad.tolist() == [2.0, 4.0, 6.0]


def test_setitem_advanced_and_broadcast_values():
    a = torch.ones(3, 4, requires_grad=True)
    v = torch.tensor([10.0, 20.0, 30.0, 40.0], requires_grad=True)
    b = a * 2
    b[torch.tensor([0, 2])] = v
    assert name(b) == "IndexPutBackward0"
    b.sum().backward()
    assert a.grad.tolist() == [[0] * 4, [2] * 4, [0] * 4]
    assert v.grad.tolist() == [2.0] * 4


def test_setitem_mask_scalar_and_mixed_keys():
    x = torch.arange(12.0).reshape(3, 4)
    x[x > 8] = -1
    assert x[2].tolist() == [8, -1, -1, -1]
    x[1, [0, 3]] = torch.tensor([100.0, 200.0])
    assert x[1].tolist() == [100, 5, 6, 200]
    x[:, None, 0] = 7
    assert x[:, 0].tolist() == [7, 7, 7]
    x[...] = 0
    assert x.sum().item() == 0


def test_repeated_indices_accumulate_grad():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a[[0, 0, 2, 0]].sum().backward()
    assert a.grad.tolist() == [3.0, 0.0, 1.0]
    a.grad = None
    a[torch.tensor([[1, 1], [1, 2]])].sum().backward()
    assert a.grad.tolist() == [0.0, 3.0, 1.0]


def test_modifying_saved_view_errors_at_backward():
    a = torch.ones(3, requires_grad=True)
    b = a * 1
    v = b[:2]
    y = v.exp()  # exp saves its own output, not v
    z = (v * v).sum()  # mul saves v
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    y.sum().backward()
    assert np.allclose(a.grad.numpy(), [np.e, np.e, 0.0])


def test_inplace_on_output_saved_by_exp_errors():
    a = torch.ones(2, requires_grad=True)
    y = a.exp()
    y[0] = 5.0
    with pytest.raises(RuntimeError, match="version 1; expected version 0"):
        y.sum().backward()


def test_inplace_on_leaf_view_errors():
    a = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        a[0] = 2.0
    with pytest.raises(RuntimeError, match="leaf Variable"):
        a.view(3).mul_(2)
    with torch.no_grad():
        a[0] = 2.0
    assert a.tolist() == [2.0, 1.0, 1.0] and ver(a) == 1


def test_multi_output_views_refuse_inplace():
    b = torch.ones(3, 2, requires_grad=True) * 1
    for f, nm in [(lambda: b.unbind(0), "Unbind"), (lambda: b.split(1), "Split"),
                  (lambda: b.chunk(3), "Split")]:
        with pytest.raises(RuntimeError, match=f"Output 1 of {nm} is a view and is being modified inplace"):
            f()[1].mul_(2)
    with torch.no_grad():
        w = b.unbind(0)
        w[0].mul_(2)
    assert b[0].tolist() == [2.0, 2.0]


def test_data_is_outside_tracking():
    a = torch.ones(3, requires_grad=True)
    y = a * a
    d = a.data
    assert not d.requires_grad and d.grad_fn is None
    d.mul_(3)  # no error, shares storage, not seen by the version check
    assert a.tolist() == [3.0, 3.0, 3.0]
    y.sum().backward()
    assert a.grad.tolist() == [6.0, 6.0, 6.0]


def test_detach_shares_version_counter():
    a = torch.ones(3, requires_grad=True)
    y = a.sigmoid()
    d = y.detach()
    d.zero_()
    assert ver(y) == 1
    with pytest.raises(RuntimeError, match="inplace"):
        y.sum().backward()


def test_split_views_share_storage_and_grads_flow():
    a = torch.arange(6.0).requires_grad_()
    p, q = a.split([2, 4])
    assert name(p) == "SplitWithSizesBackward0" and p.grad_fn is q.grad_fn
    (q * 2).sum().backward()
    assert a.grad.tolist() == [0, 0, 2, 2, 2, 2]
    u = torch.zeros(2, 3)
    r = u.unbind(1)
    u.add_(1)
    assert r[2].tolist() == [1.0, 1.0] and ver(r[2]) == 1


def test_expand_view_write_refused():
    x = torch.zeros(1, 3)
    e = x.expand(2, 3)
    with pytest.raises(RuntimeError, match="refers to a single memory location"):
        e.add_(1)


def test_inplace_on_view_twice_and_double_backward():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a.clone()
    b[0:2].mul_(a[1:])
    b[1:].pow_(2)
    g, = torch.autograd.grad(b.sum(), a, create_graph=True)
    # b = [a0*a1, (a1*a2)^2, a2^2]
    exp = [2.0, 1.0 + 2 * 2 * 9, 2 * 4 * 3 + 2 * 3]
    assert np.allclose(g.detach().numpy(), exp)
    g.sum().backward()
    assert a.grad is not None


def test_index_ops_inplace_on_views():
    a = torch.ones(2, 3, requires_grad=True)
    b = a * 1
    b[1].index_fill_(0, torch.tensor([0, 2]), 0.0)
    b[0].masked_fill_(torch.tensor([False, True, False]), 5.0)
    assert b.tolist() == [[1, 5, 1], [0, 1, 0]]
    b.sum().backward()
    assert a.grad.tolist() == [[1, 0, 1], [0, 1, 0]]
