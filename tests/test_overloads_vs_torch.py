"""Overload-dependent graphs, values and errors against PyTorch: which node an op records can
depend on whether an argument was passed at all (``div(rounding_mode=None)``,
``sort(stable=None)``, ``round(decimals=0)``), on a Scalar versus a Tensor argument (fmod,
remainder, clamp with a 0-d tensor) and on the kind of ``repeats`` (repeat_interleave).  Each
case runs the same expression with both libraries and compares the recorded graph (names,
edges, input numbers), the values, the leaf gradients and the error raised."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _walk(fn):
    if fn is None:
        return None
    n = fn.name().replace("torch::autograd::", "")
    if n == "AccumulateGrad":
        return "leaf"
    return (n, tuple(None if f is None else (nr, _walk(f)) for f, nr in fn.next_functions))


def _run(L, expr, dtype):
    rng = np.random.default_rng(0)
    x = L.tensor(rng.standard_normal((3, 4)), dtype=dtype, requires_grad=True)
    y = L.tensor(rng.standard_normal((3, 4)), dtype=dtype, requires_grad=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # NumPy's fp warnings: none
            out = eval(expr, {"torch": L, "x": x, "y": y})
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("error", type(e).__name__, str(e).split("\n")[0])
    if isinstance(out, tuple):
        out = out[0]
    res = [str(out.dtype), np.asarray(out.detach().numpy()), _walk(out.grad_fn)]
    if out.requires_grad and out.dtype.is_floating_point:
        try:
            out.backward(L.ones_like(out))
        except Exception as e:  # noqa: BLE001
            return res + [("backward error", type(e).__name__, str(e).split("\n")[0])]
        res += [None if t.grad is None else np.asarray(t.grad.numpy()) for t in (x, y)]
    return res


CASES = [
    # div: rounding_mode given (even None) is div.Tensor_mode -> DivBackward2
    "torch.div(x, y, rounding_mode='floor')", "torch.div(x, y, rounding_mode='trunc')",
    "torch.div(x, 0.7, rounding_mode='floor')", "torch.div(x, y, rounding_mode=None)",
    "torch.div(x, 2, rounding_mode=None)", "x.clone().div_(y[0], rounding_mode='trunc')",
    "x / y", "x / 2", "torch.div(x, y, rounding_mode='bad')",
    "torch.div(torch.tensor([-7, 7, 5, -5]), torch.tensor([2, -2, 3, 3]), rounding_mode='trunc')",
    "torch.div(torch.tensor([-7, 7], dtype=torch.int8), torch.tensor([2]), rounding_mode='floor')",
    "torch.div(torch.tensor([2 ** 60 + 1]), 3, rounding_mode='trunc')",
    "torch.div(torch.tensor([True]), torch.tensor([True]), rounding_mode='floor')",
    "torch.div(torch.tensor([4, 2]), torch.tensor([0, 1]), rounding_mode='floor')",
    # fmod / remainder with a Scalar: one edge
    "torch.fmod(x, 1.5)", "x.remainder(2)", "x % 2.5", "x.clone().fmod_(0.5)",
    "torch.fmod(x, y[0, 0])",
    # clamp: a 0-d tensor without grad next to a number takes the Scalar overload
    "torch.clamp(x, torch.tensor(-0.5), 0.5)", "torch.clip(x, -0.5, torch.tensor(0.5))",
    "torch.clamp(x, y[0, 0], 0.5)", "torch.clamp(x, torch.tensor([0.]), 1.)",
    "torch.clamp(x, y, None)",
    # lerp: a 0-d weight of another dtype is cast
    "torch.lerp(x, y, torch.tensor(0.3, dtype=torch.float32, requires_grad=True))",
    "torch.lerp(x, y, torch.tensor(1))", "torch.lerp(x, y, torch.tensor([0.3], dtype=torch.float32))",
    # pow with a tensor exponent: NaN silently
    "(x - 1).pow(y[0, 0] * 0 + 0.5)",
    # sort: stable= (any value) selects SortBackward1
    "torch.sort(x, stable=None)", "torch.sort(x, stable=True, descending=True)",
    "x.sort(1, True)", "torch.sort(x, 0, stable=True)",
    # round: decimals= (0 included) selects RoundBackward1
    "torch.round(x, decimals=0)", "x.round()", "torch.special.round(x)",
    "torch.round(torch.tensor([1, 2]), decimals=0)", "torch.round(torch.tensor([1, 2]))",
    "torch.round(x, decimals=2)", "torch.round(x, decimals=-1)", "x.round(decimals=1)",
    "torch.round(torch.tensor([1, 2]), decimals=1)", "torch.round(torch.tensor([1j]), decimals=0)",
    "torch.round(torch.tensor([1j]), decimals=1)", "torch.round(x, decimals=1.5)",
    "torch.round(x, 1)",
    # ndtr: PyTorch's composition with Scalar nodes
    "torch.special.ndtr(x)", "torch.special.ndtr(torch.tensor([1, -2]))",
    # index ops: the index/mask gets no edge, in-place forms and through a view
    "x.clone().index_add_(0, torch.tensor([0, 2]), y[:2])",
    "x.clone().index_fill_(0, torch.tensor([0, 2]), y[0, 0])",
    "x.clone().index_copy_(1, torch.tensor([3, 0]), y[:, :2])",
    "x.clone().masked_scatter_(x > 0, y)",
    "x.clone().scatter_(1, torch.tensor([[0, 1], [2, 3], [1, 0]]), y[:, :2])",
    "x.clone().scatter_(1, torch.tensor([[0, 1], [2, 3], [1, 0]]), y)",
    "x.scatter(1, torch.tensor([[0, 1], [2, 3], [1, 0]]), 0.5, reduce='add')",
    "x.gather(0, torch.tensor([[0, 1, 2, 0]]))", "x.take(torch.tensor([0, 11]))",
    "x.masked_select(x > 0)", "x.index_select(1, torch.tensor([3, 3]))",
    # repeat_interleave: int repeats -> PyTorch's composite; tensor repeats -> index_select
    "x.repeat_interleave(2, dim=1)", "x.t().repeat_interleave(2)", "x[0, 0].repeat_interleave(3)",
    "x.repeat_interleave(torch.tensor([1, 0, 2]), dim=0)", "x.repeat_interleave(torch.tensor(2))",
    "x.repeat_interleave(-1, dim=0)", "x.repeat_interleave(2, dim=0, output_size=5)",
    "x.repeat_interleave(torch.tensor([2, 1]), dim=0)", "x[0, 0].repeat_interleave(2, dim=0)",
    "x.repeat_interleave(torch.tensor([1., 1, 1]), dim=0)",
    "x.repeat_interleave(torch.tensor([[1, 1, 1]]), dim=0)",
    "x.repeat_interleave(torch.tensor([-1, 1, 1]), dim=0)",
    "x.repeat_interleave(torch.tensor([1, 2, 1]), dim=0, output_size=3)",
]


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)) or a.shape != b.shape:
            return False
        return bool(np.allclose(a, b, rtol=1e-6, atol=1e-6, equal_nan=True))
    return a == b


@pytest.mark.parametrize("expr", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_matches_torch(expr, dtype):
    exp = _run(torch, expr, getattr(torch, dtype))
    got = _run(dyngrad, expr, getattr(dyngrad, dtype))
    if exp[0] == "error" or got[0] == "error":
        assert got == exp
        return
    assert len(got) == len(exp)
    for i, (g, e) in enumerate(zip(got, exp)):
        assert _same(g, e), f"{expr}: part {i}: dyngrad {g!r}, torch {e!r}"
