"""Shape, view and indexing ops against PyTorch itself: values, gradients and grad_fn names."""
import numpy as np
import pytest

T = pytest.importorskip("torch")
import dyngrad as D  # noqa: E402

RS = np.random.RandomState(0)
X = RS.randn(3, 4, 5)
M = X > 0.3
IDX = RS.randint(0, 4, size=(3, 2, 5))

CASES = {
    "view": lambda t, x: x.view(12, 5),
    "reshape_t": lambda t, x: x.transpose(0, 2).reshape(-1, 3),
    "flatten": lambda t, x: x.flatten(1),
    "unflatten": lambda t, x: x.unflatten(2, (5, 1)),
    "squeeze": lambda t, x: x[:, :1].squeeze(1),
    "permute": lambda t, x: x.permute(2, 0, 1),
    "mT": lambda t, x: x.mT,
    "expand": lambda t, x: x[:, :1].expand(3, 6, 5),
    "repeat": lambda t, x: x.repeat(1, 2, 1, 2),
    "tile": lambda t, x: x.tile((2, 1)),
    "narrow": lambda t, x: x.narrow(-1, 1, 3),
    "chunk": lambda t, x: x.chunk(2, 2)[1],
    "split": lambda t, x: x.split([1, 3], 1)[1],
    "unbind": lambda t, x: x.unbind(2)[3],
    "cat": lambda t, x: t.cat([x, x[:, :2] * 2], 1),
    "stack": lambda t, x: t.stack([x, x.flip(0)], 1),
    "hstack": lambda t, x: t.hstack([x, x]),
    "vstack": lambda t, x: t.vstack([x[0, 0], x[1, 1]]),
    "flip": lambda t, x: x.flip(0, 2),
    "roll": lambda t, x: x.roll(2, 1),
    "roll_flat": lambda t, x: x.roll(-7),
    "movedim": lambda t, x: x.movedim(0, 2),
    "diag": lambda t, x: t.diag(x[0, 0]),
    "diag_mat": lambda t, x: t.diag(x[0], 1),
    "diagonal": lambda t, x: x.diagonal(1, 1, 2),
    "tril": lambda t, x: x.tril(-1),
    "triu": lambda t, x: x.triu(2),
    "select": lambda t, x: x.select(1, -1),
    "index_select": lambda t, x: x.index_select(2, t.tensor([4, 0, 4])),
    "idx_mix": lambda t, x: x[1:, None, [0, 2, 2], ::2],
    "idx_int_adv": lambda t, x: x[0, :, [1, 3]],
    "idx_adv_sep": lambda t, x: x[[0, 2], :, [1, 4]],
    "idx_mask": lambda t, x: x[t.from_numpy(M)],
    "idx_mask_part": lambda t, x: x[:, t.from_numpy(M[0])],
    "idx_ellipsis": lambda t, x: x[..., 1],
    "gather": lambda t, x: x.gather(1, t.from_numpy(IDX)),
    "scatter": lambda t, x: x.scatter(1, t.from_numpy(IDX[:, :1]), x[:, :1] * 3),
    "scatter_add": lambda t, x: x.scatter_add(1, t.from_numpy(IDX), x[:, :2] * 3),
    "masked_fill": lambda t, x: x.masked_fill(t.from_numpy(M), 2.0),
    "masked_select": lambda t, x: x.masked_select(t.from_numpy(M)),
    "take": lambda t, x: x.take(t.tensor([[0, 59], [7, 7]])),
    "index_add": lambda t, x: x.index_add(1, t.tensor([0, 0, 3]), x[:, :3] * 2),
    "index_fill": lambda t, x: x.index_fill(2, t.tensor([1, -1]), 0.5),
    "index_copy": lambda t, x: x.index_copy(0, t.tensor([2, 0]), x[:2] + 1),
    "sort": lambda t, x: x.sort(1, descending=True).values,
    "topk": lambda t, x: x.topk(2, 0).values,
    "kthvalue": lambda t, x: x.kthvalue(3, 2).values,
    "setitem": lambda t, x: _set(x, (slice(None), [0, 2]), x[:, 1:2] * 5),
    "setitem_mask": lambda t, x: _set(x, x > 0.5, 0.0),
    "view_inplace": lambda t, x: _view_inplace(x),
}


def _set(x, key, v):
    y = x * 1
    y[key] = v
    return y


def _view_inplace(x):
    y = x * 1
    y[1].t()[2:].mul_(3)
    y.diagonal(0, 1, 2).add_(y[0, 0, :4].clone())
    return y


def _run(lib, f):
    x = lib.tensor(X, requires_grad=True)
    out = f(lib, x)
    w = lib.tensor(np.random.RandomState(1).randn(*out.shape))
    (out * w).sum().backward()
    return out, x.grad


@pytest.mark.parametrize("key", list(CASES))
def test_matches_torch(key):
    f = CASES[key]
    o1, g1 = _run(T, f)
    o2, g2 = _run(D, f)
    assert tuple(o1.shape) == tuple(o2.shape)
    np.testing.assert_allclose(o2.detach().numpy(), o1.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(g2.numpy(), g1.numpy(), rtol=1e-12, atol=1e-12)
    assert type(o2.grad_fn).__name__ == type(o1.grad_fn).__name__


def test_no_grad_results_match():
    s = np.array([[1.0, 3, 3, 7], [0, 2, 4, 6]])
    a, b = [lib.tensor([[3.0, 1, 3], [2, 2, 0]]) for lib in (T, D)]
    for name, f in {
        "nonzero": lambda lib, z: lib.nonzero(z),
        "nonzero_t": lambda lib, z: lib.stack(lib.nonzero(z, as_tuple=True)),
        "argsort": lambda lib, z: z.argsort(dim=1, descending=True, stable=True),
        "unique": lambda lib, z: lib.stack(list(lib.unique(z, return_inverse=True, return_counts=True)[1:2])),
        "unique_vals": lambda lib, z: lib.unique(z),
        "searchsorted": lambda lib, z: lib.searchsorted(lib.tensor(s), z[:, :2].contiguous() + 0.5, right=True),
        "bucketize": lambda lib, z: lib.bucketize(z, lib.tensor([0.0, 2.0, 3.0])),
        "sort_idx": lambda lib, z: z.sort(dim=1, stable=True).indices,
    }.items():
        r1, r2 = f(T, a), f(D, b)
        np.testing.assert_array_equal(r2.numpy(), r1.numpy(), err_msg=name)
        assert str(r2.dtype) == str(r1.dtype), name
