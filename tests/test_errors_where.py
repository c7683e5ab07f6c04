"""Autograd misuse errors keep PyTorch's leading text and add the user's line and a fix."""
import pytest

import dyngrad as torch


def test_second_backward_names_creating_line():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    z = a.exp() * 2  # LINE-Z
    loss = z.sum()
    loss.backward()
    with pytest.raises(RuntimeError) as info:
        loss.backward()
    msg = str(info.value)
    assert msg.startswith("Trying to backward through the graph a second time")
    assert "was created at tests/test_errors_where.py:" in msg or "test_errors_where.py:" in msg
    assert "z = a.exp() * 2" in msg
    assert "Fix:" in msg and "retain_graph=True" in msg


def test_version_error_names_both_lines():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    b = x * 2
    c = b * b
    b.mul_(3)
    with pytest.raises(RuntimeError) as info:
        c.sum().backward()
    msg = str(info.value)
    assert msg.startswith("one of the variables needed for gradient computation has been "
                          "modified by an inplace operation")
    assert "c = b * b" in msg and "b.mul_(3)" in msg and "Fix:" in msg


def test_leaf_inplace_and_scalar_and_no_grad_fn():
    w = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        w.add_(1)
    assert str(info.value).startswith("a leaf Variable that requires grad is being used in an "
                                      "in-place operation.")
    assert "w.add_(1)" in str(info.value) and "no_grad" in str(info.value)
    y = w * 3
    with pytest.raises(RuntimeError) as info:
        y.backward()
    assert str(info.value).startswith("grad can be implicitly created only for scalar outputs")
    assert "y = w * 3" in str(info.value) and "ones_like" in str(info.value)
    with pytest.raises(RuntimeError) as info:
        torch.ones(2).sum().backward()
    assert str(info.value).startswith("element 0 of tensors does not require grad and does not "
                                      "have a grad_fn")
    assert "requires_grad=True" in str(info.value)


def test_source_of_node():
    from dyngrad.autograd.errors import source_of
    a = torch.ones(2, requires_grad=True)

    def helper(t):
        return t.tanh()
    s = source_of(helper(a).grad_fn)
    assert s["code"] == "return t.tanh()" and s["func"] == "helper"
    s = source_of(torch.mul(a, 2).grad_fn)
    assert s["code"] == "s = source_of(torch.mul(a, 2).grad_fn)"
