"""Bad input to the math ops raises PyTorch's exception types with messages that name the
shapes, dtypes or argument at fault."""
import pytest

import dyngrad as torch


def test_broadcast_mismatch_names_dimension():
    with pytest.raises(RuntimeError, match=r"size of tensor a \(3\) must match the size of tensor "
                                           r"b \(4\) at non-singleton dimension 1"):
        torch.randn(2, 3) + torch.randn(4)
    with pytest.raises(RuntimeError, match=r"tensor a \(2\).*tensor b \(4\).*dimension 0"):
        torch.atan2(torch.randn(2, 3), torch.randn(4, 3))
    with pytest.raises(RuntimeError, match="non-singleton dimension"):
        torch.randn(2) < torch.randn(3)


@pytest.mark.parametrize("fn", [lambda x: x.sum(5), lambda x: x.max(5), lambda x: x.amax(-3),
                                lambda x: x.std(2), lambda x: x.cumsum(4), lambda x: x.logsumexp(9),
                                lambda x: x.argmax(2), lambda x: x.norm(dim=3)])
def test_dim_out_of_range(fn):
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\]"):
        fn(torch.randn(2, 3))


def test_reduction_errors():
    with pytest.raises(RuntimeError, match="Expected reduction dim to be specified"):
        torch.empty(0).max()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        torch.empty(0, 3).amax(0)
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).std()
    with pytest.raises(RuntimeError, match="Got Long"):
        torch.tensor([1, 2]).norm()


def test_pointwise_argument_errors():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        torch.clamp(torch.randn(3))
    with pytest.raises(TypeError, match="argument 'other'.*must be Tensor, not float"):
        torch.maximum(torch.randn(3), 1.0)
    with pytest.raises(RuntimeError, match="boolean tensor.*Float"):
        torch.where(torch.randn(3), torch.randn(3), torch.randn(3))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.fmod(torch.tensor([1, 2]), 0)


def test_no_derivative_for_floor_divide():
    x = torch.randn(3, requires_grad=True)
    y = torch.floor_divide(x, 2.0)
    assert type(y.grad_fn).__name__ == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not implemented"):
        y.sum().backward()


def test_matmul_errors():
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(2x3 and 4x5\)"):
        torch.randn(2, 3) @ torch.randn(4, 5)
    with pytest.raises(RuntimeError, match="same dtype, but got: float != double"):
        torch.randn(2, 2) @ torch.randn(2, 2, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"tensor a \(3\).*tensor b \(4\)"):
        torch.randn(3, 2, 2) @ torch.randn(4, 2, 2)
    with pytest.raises(RuntimeError, match=r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)"):
        torch.mv(torch.randn(2, 3), torch.randn(4))
    with pytest.raises(RuntimeError, match=r"batch2 tensor to be: \[2, 3\] but got: \[2, 4\]"):
        torch.bmm(torch.randn(2, 2, 3), torch.randn(2, 4, 3))
    with pytest.raises(RuntimeError, match="subscript j has size 3 for operand 1"):
        torch.einsum("ij,jk->ik", torch.zeros(3, 2), torch.zeros(3, 2))


def test_linalg_errors():
    with pytest.raises(RuntimeError, match="square matrices, but they are 3 by 2"):
        torch.linalg.inv(torch.zeros(3, 2))
    with pytest.raises(torch.linalg.LinAlgError, match="singular"):
        torch.linalg.inv(torch.zeros(3, 3))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B.*\(3x3 and 2x1\)"):
        torch.linalg.solve(torch.eye(3), torch.zeros(2))
