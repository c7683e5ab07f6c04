"""The declared index, scatter and mask ops side by side with PyTorch: the node, its edges and
saved values, the values, first and second derivatives, the forward-mode tangent, and the
version errors of the tensors the node keeps."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

IDX = [[0, 1, 1], [1, 0, 2]]
X0 = [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]]
S0 = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]

CASES = {
    "gather": lambda M, x, s, v: x.gather(1, M.tensor(IDX)),
    "gather_neg_dim": lambda M, x, s, v: x.gather(-1, M.tensor(IDX)),
    "take": lambda M, x, s, v: x.take(M.tensor([0, -1, 3])),
    "take_along_dim": lambda M, x, s, v: M.take_along_dim(x, M.tensor(IDX), 1),
    "take_along_dim_flat": lambda M, x, s, v: M.take_along_dim(x, M.tensor([0, 4])),
    "scatter": lambda M, x, s, v: x.scatter(1, M.tensor(IDX), s),
    "scatter_value": lambda M, x, s, v: x.scatter(1, M.tensor(IDX), 2.5),
    "scatter_keywords": lambda M, x, s, v: M.scatter(x, dim=1, index=M.tensor(IDX), src=s),
    "scatter_add": lambda M, x, s, v: x.scatter_add(1, M.tensor(IDX), s),
    "index_add": lambda M, x, s, v: x.index_add(1, M.tensor([0, 2, 0]), s, alpha=1.5),
    "index_copy": lambda M, x, s, v: x.index_copy(1, M.tensor([2, 0, 1]), s),
    "index_fill": lambda M, x, s, v: x.index_fill(-1, M.tensor([0, -1]), -2.0),
    "index_fill_tensor": lambda M, x, s, v: x.index_fill(1, M.tensor([0, 2, 0]), v),
    "masked_fill": lambda M, x, s, v: x.masked_fill(M.tensor([True, False, True]), 3.0),
    "masked_fill_tensor": lambda M, x, s, v: x.masked_fill(
        M.tensor([[True, False, True], [False, False, True]]), v),
    "masked_fill_larger_mask": lambda M, x, s, v: x[0].masked_fill(
        M.tensor([[True, False, True], [False, False, True]]), 1.0),
    "masked_scatter": lambda M, x, s, v: x.masked_scatter(M.tensor([True, False, True]), s * 2),
    "index_select": lambda M, x, s, v: x.index_select(1, M.tensor([2, 0])),
    "masked_select": lambda M, x, s, v: x.masked_select(M.tensor([True, False, True])),
    "scatter_": lambda M, x, s, v: (x * 1).scatter_(1, M.tensor(IDX), s),
    "scatter_value_": lambda M, x, s, v: (x * 1).scatter_(1, M.tensor(IDX), 2.0),
    "scatter_add_": lambda M, x, s, v: (x * 1).scatter_add_(1, M.tensor(IDX), s),
    "index_add_": lambda M, x, s, v: (x * 1).index_add_(1, M.tensor([0, 2, 0]), s),
    "index_copy_": lambda M, x, s, v: (x * 1).index_copy_(1, M.tensor([2, 0, 1]), s),
    "index_fill_": lambda M, x, s, v: (x * 1).index_fill_(1, M.tensor([0]), v),
    "masked_fill_": lambda M, x, s, v: (x * 1).masked_fill_(M.tensor([True, False, True]), v),
    "masked_scatter_": lambda M, x, s, v: (x * 1).masked_scatter_(M.tensor([True, False, True]),
                                                                  s),
    "index_put": lambda M, x, s, v: x.index_put((M.tensor([1, 0, 1]),), s[0]),
    "index_put_accumulate": lambda M, x, s, v: M.index_put(
        x, (M.tensor([1, 0, 1]), M.tensor([2, 2, 0])), v, accumulate=True),
    "index_put_": lambda M, x, s, v: (x * 1).index_put_((M.tensor([1]),), s[1]),
    "setitem": lambda M, x, s, v: _set(x * 1, (slice(None), M.tensor([2, 0])), v),
    "setitem_mask": lambda M, x, s, v: _set(x * 1, M.tensor([[True, False, True],
                                                               [False, True, False]]), v),
}


def _set(t, key, value):
    t[key] = value
    return t


def _listed(t):
    return None if t is None else t.tolist()


def _recorded(M, name):
    f = CASES[name]
    x = M.tensor(X0, dtype=M.float64, requires_grad=True)
    s = M.tensor(S0, dtype=M.float64, requires_grad=True)
    v = M.tensor(0.5, dtype=M.float64, requires_grad=True)
    y = f(M, x, s, v)
    g = y.grad_fn
    saved = {}
    for a in sorted(n for n in dir(g) if n.startswith("_saved_")):
        val = getattr(g, a)
        saved[a] = val.tolist() if isinstance(val, M.Tensor) else tuple(
            t.tolist() if isinstance(t, M.Tensor) else t for t in val) if isinstance(val, tuple) \
            else val
    w = M.arange(y.numel(), dtype=M.float64).reshape(y.shape) + 1
    grads = M.autograd.grad((y * w).sum(), [x, s, v], create_graph=True, allow_unused=True)
    again = [t for t in grads if t is not None and t.requires_grad]
    second = None
    if again:
        second = [_listed(t) for t in M.autograd.grad(sum((t * t).sum() for t in again),
                                                      [x, s, v], allow_unused=True)]
    return (type(g).__name__,
            [None if n is None else type(n).__name__ for n, _ in g.next_functions],
            saved, y.tolist(), [_listed(t) for t in grads], second)


def _tangent(M, name):
    f = CASES[name]
    prim = (M.tensor(X0, dtype=M.float64), M.tensor(S0, dtype=M.float64),
            M.tensor(0.5, dtype=M.float64))
    tang = (M.ones_like(prim[0]) * 0.5, M.ones_like(prim[1]) * 2.0,
            M.tensor(3.0, dtype=M.float64))
    return M.func.jvp(lambda a, b, c: f(M, a, b, c), prim, tang)[1].tolist()


@pytest.mark.parametrize("name", list(CASES))
def test_graph_and_derivatives_as_torch(name):
    assert _recorded(dyngrad, name) == _recorded(torch, name)


@pytest.mark.parametrize("name", list(CASES))
def test_forward_mode_as_torch(name):
    assert _tangent(dyngrad, name) == _tangent(torch, name)


KEPT = {
    "gather_self": lambda M, a, s: (a.gather(1, M.tensor(IDX)), a.add_(1))[0],
    "take_self": lambda M, a, s: (a.take(M.tensor([0, 2])), a.add_(1))[0],
    "index_add_source": lambda M, a, s: (a.index_add(1, M.tensor([0, 2, 0]), s), s.mul_(2))[0],
    "index_copy_source": lambda M, a, s: (a.index_copy(1, M.tensor([0, 2, 1]), s),
                                          s.mul_(2))[0],
    "leaf_scatter_": lambda M, a, s: a.detach().requires_grad_().scatter_(1, M.tensor(IDX), 2.0),
    "view_index_fill_": lambda M, a, s: a[:, 1:].index_fill_(1, M.tensor([0]), 3.0),
    "view_masked_fill_": lambda M, a, s: a.t().masked_fill_(M.tensor([True, False]), 3.0),
    "scatter_reduce": lambda M, a, s: a.scatter(1, M.tensor(IDX), s, reduce="add"),
    "index_put_indices": lambda M, a, s: (lambda i: (a.index_put((i,), s[0]), i.zero_())[0])(
        M.tensor([1, 0, 1])),
    "index_put_twice": lambda M, a, s: (lambda y: (y.sum().backward(retain_graph=False), y)[1])(
        a.index_put((M.tensor([1]),), s[0])),
}


def _kept(M, name):
    x = M.tensor(X0, requires_grad=True)
    a = x * 1
    s = M.tensor(S0, requires_grad=True) * 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = KEPT[name](M, a, s)
            y.sum().backward()
    except RuntimeError as e:  # (dyngrad adds lines saying where and how to fix it)
        return type(e), str(e).splitlines()[0]
    return type(y.grad_fn).__name__, y.tolist(), x.grad.tolist()


@pytest.mark.parametrize("name", list(KEPT))
def test_kept_tensors_and_inplace_as_torch(name):
    assert _kept(dyngrad, name) == _kept(torch, name)


ONE_TANGENT = {  # (op, which input has the only tangent: 0 self, 1 the other tensor)
    "scatter": (lambda M, x, s: x.scatter(1, M.tensor(IDX), s), 1),
    "scatter_add": (lambda M, x, s: x.scatter_add(1, M.tensor(IDX), s), 1),
    "index_add": (lambda M, x, s: x.index_add(1, M.tensor([0, 2, 0]), s), 1),
    "index_copy": (lambda M, x, s: x.index_copy(1, M.tensor([2, 0, 1]), s), 1),
    "index_fill": (lambda M, x, s: x.index_fill(1, M.tensor([0, 2]), s[0, 1]), 1),
    "masked_fill": (lambda M, x, s: x.masked_fill(M.tensor([True, False, True]), s[1, 0]), 1),
    "masked_scatter": (lambda M, x, s: x.masked_scatter(M.tensor([True, False, True]), s), 1),
    "index_put": (lambda M, x, s: x.index_put((M.tensor([1, 0]),), s[0]), 1),
    "scatter_self": (lambda M, x, s: x.scatter(1, M.tensor(IDX), s), 0),
    "masked_scatter_self": (lambda M, x, s: x.masked_scatter(M.tensor([True, False, True]), s),
                            0),
}


def _one_tangent(M, name):
    f, which = ONE_TANGENT[name]
    x, s = M.tensor(X0, dtype=M.float64), M.tensor(S0, dtype=M.float64)
    if which:
        return M.func.jvp(lambda b: f(M, x, b), (s,), (M.ones_like(s) * 2,))[1].tolist()
    return M.func.jvp(lambda a: f(M, a, s), (x,), (M.ones_like(x) * 0.5,))[1].tolist()


@pytest.mark.parametrize("name", list(ONE_TANGENT))
def test_forward_mode_with_one_tangent_as_torch(name):
    assert _one_tangent(dyngrad, name) == _one_tangent(torch, name)
