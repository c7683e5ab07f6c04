"""Shape and indexing errors name the problem with PyTorch's messages."""
import re

import pytest

import dyngrad as torch

a = torch.zeros(3, 4)
b3 = torch.zeros(2, 3, 4)

CASES = [
    (lambda: torch.cat([a, torch.zeros(4, 4)], 1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 3 but got size 4 for tensor "
     "number 1 in the list."),
    (lambda: torch.cat([a, torch.zeros(4)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 1"),
    (lambda: torch.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda: torch.cat([a, a], 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: torch.stack([a, torch.zeros(3, 5)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [3, 4] at entry 0 and [3, 5] at entry 1"),
    (lambda: torch.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: a.view(5), RuntimeError, "shape '[5]' is invalid for input of size 12"),
    (lambda: a.t().view(12), RuntimeError, "view size is not compatible with input tensor's size and stride"),
    (lambda: a.view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: a.reshape(5, 3), RuntimeError, "shape '[5, 3]' is invalid for input of size 12"),
    (lambda: a[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: a[[5]], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: a[[-4]], IndexError, "index -4 is out of bounds for dimension 0 with size 3"),
    (lambda: b3[[0], [0], [9]], IndexError, "index 9 is out of bounds for dimension 2 with size 4"),
    (lambda: a[torch.tensor([1.0])], IndexError, "tensors used as indices must be long, int, byte or bool tensors"),
    (lambda: a[torch.ones(2, dtype=torch.bool)], IndexError,
     "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"),
    (lambda: a.__setitem__(5, 1.0), IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda: a.select(0, 5), IndexError, "select(): index 5 out of range for tensor of size [3, 4] at dimension 0"),
    (lambda: a.narrow(0, 2, 3), RuntimeError, "start (2) + length (3) exceeds dimension size (3)."),
    (lambda: a.unsqueeze(3), IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda: a.index_select(0, torch.tensor([0.0])), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    (lambda: a.index_select(0, torch.tensor([5])), IndexError, "index out of range in self"),
    (lambda: a.index_select(0, torch.tensor([[0]])), IndexError, "index_select(): Index is supposed to be a vector"),
    (lambda: a.gather(1, torch.tensor([[5]])), RuntimeError, "index 5 is out of bounds for dimension 1 with size 4"),
    (lambda: a.gather(1, torch.tensor([[1.0]])), RuntimeError, "gather(): Expected dtype int32/int64 for index"),
    (lambda: a.gather(1, torch.tensor([[0]] * 5)), RuntimeError,
     "Size does not match at dimension 0 expected index [5, 1] to be no larger than self [3, 4] apart from dimension 1"),
    (lambda: a.scatter(1, torch.tensor([[9]]), 1.0), RuntimeError, "index 9 is out of bounds for dimension 1 with size 4"),
    (lambda: a.take(torch.tensor([12])), IndexError, "out of range: tried to access index 12 on a tensor of 12 elements."),
    (lambda: a.split([1, 2], 1), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension 1), but got split_sizes=[1, 2]"),
    (lambda: a.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda: a.expand(3, 5), RuntimeError,
     "The expanded size of the tensor (5) must match the existing size (4) at non-singleton dimension 1."),
    (lambda: a.repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"),
    (lambda: torch.broadcast_tensors(a, torch.zeros(2)), RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1"),
    (lambda: a.masked_fill(torch.ones(3, 4), 1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype float"),
    (lambda: a.masked_fill(a > 0, torch.tensor([1.0, 2.0])), RuntimeError,
     "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s)."),
    (lambda: torch.zeros(3).masked_fill_(torch.ones(2, 3, dtype=torch.bool), 1.0), RuntimeError,
     "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    (lambda: torch.diag(b3), RuntimeError, "diag(): Supports 1D or 2D tensors. Got 3D"),
    (lambda: a.flip(0, 0), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda: a.permute(0), RuntimeError, "number of dimensions in the tensor input does not match"),
    (lambda: a.topk(5), RuntimeError, "selected index k out of range"),
    (lambda: a.kthvalue(5), RuntimeError, "kthvalue(): selected number k out of range for dimension 1"),
    (lambda: a.index_add(0, torch.tensor([5]), torch.ones(1, 4)), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
]


@pytest.mark.parametrize("fn,exc,msg", CASES, ids=[c[2][:40] for c in CASES])
def test_error_message(fn, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        fn()


def test_index_copy_out_of_range():
    with pytest.raises(IndexError, match=re.escape("index_copy_(): index 5 is out of bounds for dimension 0")):
        a.index_copy(0, torch.tensor([5]), torch.ones(1, 4))
