"""Engine behaviours that the op table and the conformance suite do not reach: gradient
buffers are never shared with user tensors or between leaves, order by sequence number,
failures still fill the leaves that were complete, million-node chains."""
import numpy as np
import pytest

import dyngrad as torch


def test_user_gradient_is_never_adopted_as_grad():
    g = torch.tensor([1.0, 2.0, 3.0])
    for make in (lambda x: x, lambda x: x.clone(), lambda x: x * 1):
        x = torch.ones(3, requires_grad=True)
        make(x).backward(g)
        make(x).backward(g)
        assert g.tolist() == [1.0, 2.0, 3.0]
        assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_leaves_fed_by_one_add_do_not_share_grad_buffers():
    a = torch.ones(3, requires_grad=True)
    b = torch.ones(3, requires_grad=True)
    (a + b).sum().backward()
    a.grad += 1
    assert b.grad.tolist() == [1.0, 1.0, 1.0]
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())


def test_linear_weight_grad_is_c_contiguous():
    lin = torch.nn.Linear(4, 3)
    lin(torch.randn(5, 4)).sum().backward()
    assert lin.weight.grad.is_contiguous()


def test_repeated_use_sums_in_order_of_creation():
    x = torch.tensor(2.0, requires_grad=True)
    y = x * 3
    z = y * y + y + x   # y reached three times, x twice
    z.backward()
    assert x.grad.item() == pytest.approx(2 * 6 * 3 + 3 + 1)


def test_error_in_backward_still_accumulates_complete_leaves():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    p = a * 2
    q = p ** 2           # saves p
    p.mul_(3)            # version bump: q's backward will fail
    loss = (w * 5).sum() + q.sum()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert w.grad.tolist() == [5.0, 5.0]   # as PyTorch: w's gradient was complete
    assert a.grad is None


def test_million_node_chain():
    x = torch.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(1_000_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_no_version_error_for_operands_whose_gradient_is_not_needed():
    # div keeps the numerator only for the denominator's gradient; mv keeps the matrix only
    # for the vector's: changing them in place afterwards is fine, as in PyTorch
    a = torch.ones(3, requires_grad=True) * 1
    c = a / torch.full((3,), 2.0)
    a.mul_(3)
    c.sum().backward()
    m = torch.ones(2, 3, requires_grad=True) * 1
    v = torch.ones(3)
    r = m.matmul(v)
    m.mul_(2)
    r.sum().backward()
    # but a saved operand that is needed is still checked
    b = torch.ones(3, requires_grad=True) * 1
    d = torch.ones(3, requires_grad=True) / b
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        d.sum().backward()
