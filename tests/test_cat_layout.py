"""The memory layout of cat's result beside PyTorch's: channels-last when every input is,
else contiguous, whatever layout NumPy's concatenate would follow."""
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

CASES = [
    "[L.ones(2, 3, 4).transpose(-1, 1)]",
    "[L.ones(2, 3, 4).transpose(-1, 1)] * 2",
    "[L.ones(2, 3, 4, 5).to(memory_format=L.channels_last)]",
    "[L.ones(2, 3, 4, 5).to(memory_format=L.channels_last)] * 3",
    "[L.ones(2, 3, 4, 5).to(memory_format=L.channels_last), L.ones(2, 3, 4, 5)]",
    "[L.ones(4, 3).t(), L.ones(3, 4)]",
]


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("expr", CASES)
def test_cat_layout_as_torch(expr, dim):
    mine = dyngrad.cat(eval(expr, {"L": dyngrad}), dim)
    theirs = torch.cat(eval(expr, {"L": torch}), dim)
    assert mine.stride() == theirs.stride()
    assert mine.is_contiguous() == theirs.is_contiguous()
