"""An index (or mask) tensor changed in place after the op that used it, before backward:
PyTorch's nodes save it, so backward raises its version error instead of computing a
gradient from the new values; take_along_dim's gradient reads the indices as they were.
dyngrad must do the same as PyTorch (never a gradient of the changed indices)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _vec(M):
    return M.tensor([0, 2])


def _mat(M):
    return M.tensor([[0, 1, 1], [1, 0, 0]])


def _mask(M):
    return M.tensor([[True, False, True], [False, True, False]])


CASES = {
    "gather": (_mat, lambda M, x, i: x.gather(1, i)),
    "take": (lambda M: M.tensor([0, 5]), lambda M, x, i: x.take(i)),
    "take_along_dim": (_mat, lambda M, x, i: M.take_along_dim(x, i, 1)),
    "scatter": (_mat, lambda M, x, i: x.scatter(1, i, x * 2)),
    "scatter_value": (_mat, lambda M, x, i: x.scatter(1, i, 2.0)),
    "scatter_add": (_mat, lambda M, x, i: x.scatter_add(1, i, x * 2)),
    "index_add": (_vec, lambda M, x, i: x.index_add(1, i, x[:, :2] * 2)),
    "index_copy": (_vec, lambda M, x, i: x.index_copy(1, i, x[:, :2] * 2)),
    "index_fill": (_vec, lambda M, x, i: x.index_fill(1, i, 5.0)),
    "masked_fill": (_mask, lambda M, x, i: x.masked_fill(i, 0.0)),
    "masked_scatter": (_mask, lambda M, x, i: x.masked_scatter(i, x * 3)),
    "index_select": (_vec, lambda M, x, i: x.index_select(1, i)),
    "masked_select": (_mask, lambda M, x, i: x.masked_select(i)),
    "getitem": (lambda M: M.tensor([0, 1]), lambda M, x, i: x[i]),
    "index_put": (lambda M: M.tensor([0, 1]), lambda M, x, i: x.index_put((i,), M.tensor(1.0))),
}


def _run(M, name):
    make_index, op = CASES[name]
    x = M.arange(6.0).reshape(2, 3).requires_grad_()
    i = make_index(M)
    y = op(M, x, i)
    if i.dtype == M.bool:
        i.logical_not_()
    else:
        i.zero_()
    try:
        y.sum().backward()
    except RuntimeError as e:  # (dyngrad adds lines saying where and how to fix it)
        return type(e), str(e).splitlines()[0]
    return None, x.grad.tolist()


@pytest.mark.parametrize("name", list(CASES))
def test_index_changed_before_backward(name):
    assert _run(dyngrad, name) == _run(torch, name)


@pytest.mark.parametrize("op", [lambda x, i: x.scatter(1, i, 2.0), lambda x, i: x[i[0]],
                                lambda x, i: x.index_put((i[0],), dyngrad.tensor(1.0))],
                         ids=["scatter", "getitem", "index_put"])
def test_second_backward_raises(op):
    """These nodes keep the index, so they are freed after backward, as PyTorch's."""
    x = dyngrad.ones(2, 3, requires_grad=True)
    s = op(x, _mat(dyngrad)).sum()
    s.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        s.backward()
