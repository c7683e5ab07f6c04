"""A compiled Module's forward in training hands autograd a CompiledFunctionBackward node:
a tensor its backward reads that was changed in place after the forward (an argument, a
parameter, through a view such as Linear's ``weight.t()``) raises eager's version error, and
one it does not read changes nothing, as in eager dyngrad and PyTorch."""
from __future__ import annotations

import pytest

import dyngrad as T


def _run(compiled, change, lib=T):
    lib.manual_seed(0)
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
    f = lib.compile(m) if compiled else m
    x = lib.randn(5, 3)
    out = []
    for i in range(3):
        y = f(x).sum()
        if i == 2:
            with lib.no_grad():
                if change == "argument":
                    x.mul_(2)
                elif change == "read parameter":
                    m[2].weight.mul_(2)   # the hidden layer's gradient reads it
                elif change == "unread parameter":
                    m[0].weight.mul_(2)   # no gradient reads it (x needs none)
        try:
            y.backward()
            out.append(m[0].weight.grad.clone())
        except RuntimeError as e:
            out.append(e)
        m.zero_grad()
    return out


@pytest.mark.parametrize("change", ["argument", "read parameter", "unread parameter"])
def test_compiled_forward_backward_checks_versions_as_eager(change):
    eager, compiled = _run(False, change), _run(True, change)
    for e, c in zip(eager, compiled):
        assert type(e) is type(c)
        if isinstance(e, RuntimeError):
            assert str(c).startswith("one of the variables needed for gradient computation "
                                     "has been modified by an inplace operation")
        else:
            assert (e - c).abs().max().item() == 0
    assert isinstance(compiled[-1], RuntimeError) == (change != "unread parameter")


def test_eager_pytorch_raises_alike():
    torch = pytest.importorskip("torch")
    for change in ("argument", "read parameter", "unread parameter"):
        assert isinstance(_run(False, change, torch)[-1], RuntimeError) == \
            (change != "unread parameter")
