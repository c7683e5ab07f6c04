"""Memory layout of linear-algebra results against PyTorch 2.13 (CPU).

PyTorch returns LAPACK's column-major matrices for inv, solve, cholesky, qr, eigh's
eigenvectors and svd's U / Vh (batches of them C-ordered, empty dims counted as 1), and
C-ordered results elsewhere.  Users see this through ``stride()``, ``is_contiguous()``,
whether ``view(-1)`` works, and whether ``reshape(-1)`` records ViewBackward0 or copies
(UnsafeViewBackward0).  Each case runs in both libraries on 2-d, batched, empty and 1x1
inputs, with and without requires_grad; the saved matrices of the node must have the same
strides too.
"""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _input(shape, kind):
    """A float64 array of ``shape``: symmetric positive-definite ('spd'), well-conditioned
    square ('sq') or any."""
    a = np.random.RandomState(1).randn(*shape)
    n = shape[-1]
    if kind == "spd":
        return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)
    if kind == "sq":
        return a + 3 * np.eye(n)
    return a


CASES = {
    "linalg.inv": ("sq", lambda L, A: L.linalg.inv(A)),
    "inverse": ("sq", lambda L, A: L.inverse(A)),
    "linalg.solve": ("sq", lambda L, A: L.linalg.solve(A, A[..., :, :2] * 1)),
    "linalg.solve_vector": ("sq", lambda L, A: L.linalg.solve(A, A[..., 0] * 1)),
    "linalg.solve_1d": ("sq", lambda L, A: L.linalg.solve(A, A.new_ones(A.shape[-1]))),
    "linalg.solve_broadcast": ("sq", lambda L, A: L.linalg.solve(
        A, A.new_ones((4, 1) + tuple(A.shape[-2:])))),
    "linalg.solve_right": ("sq", lambda L, A: L.linalg.solve(A, A * 1, left=False)),
    "linalg.solve_right_rows": ("sq", lambda L, A: L.linalg.solve(A, A[..., :2, :] * 1,
                                                                   left=False)),
    "linalg.det": ("sq", lambda L, A: L.linalg.det(A)),
    "linalg.slogdet": ("sq", lambda L, A: L.linalg.slogdet(A)[1]),
    "linalg.slogdet_sign": ("sq", lambda L, A: L.linalg.slogdet(A)[0]),
    "linalg.cholesky": ("spd", lambda L, A: L.linalg.cholesky(A)),
    "linalg.cholesky_upper": ("spd", lambda L, A: L.linalg.cholesky(A, upper=True)),
    "linalg.cholesky_ex.L": ("spd", lambda L, A: L.linalg.cholesky_ex(A)[0]),
    "linalg.cholesky_ex.info": ("spd", lambda L, A: L.linalg.cholesky_ex(A)[1]),
    "linalg.qr.Q": ("any", lambda L, A: L.linalg.qr(A)[0]),
    "linalg.qr.R": ("any", lambda L, A: L.linalg.qr(A)[1]),
    "linalg.qr_complete.Q": ("any", lambda L, A: L.linalg.qr(A, "complete")[0]),
    "linalg.qr_complete.R": ("any", lambda L, A: L.linalg.qr(A, "complete")[1]),
    "linalg.qr_r.Q": ("any", lambda L, A: L.linalg.qr(A, "r")[0]),
    "linalg.qr_r.R": ("any", lambda L, A: L.linalg.qr(A, "r")[1]),
    "linalg.eigh.eigenvalues": ("spd", lambda L, A: L.linalg.eigh(A)[0]),
    "linalg.eigh.eigenvectors": ("spd", lambda L, A: L.linalg.eigh(A)[1]),
    "linalg.eigvalsh": ("spd", lambda L, A: L.linalg.eigvalsh(A)),
    "linalg.svd.U": ("any", lambda L, A: L.linalg.svd(A)[0]),
    "linalg.svd.S": ("any", lambda L, A: L.linalg.svd(A)[1]),
    "linalg.svd.Vh": ("any", lambda L, A: L.linalg.svd(A)[2]),
    "linalg.svd_reduced.U": ("any", lambda L, A: L.linalg.svd(A, full_matrices=False)[0]),
    "linalg.svd_reduced.Vh": ("any", lambda L, A: L.linalg.svd(A, full_matrices=False)[2]),
    "linalg.svdvals": ("any", lambda L, A: L.linalg.svdvals(A)),
    "svd.U": ("any", lambda L, A: L.svd(A)[0]),
    "svd.S": ("any", lambda L, A: L.svd(A)[1]),
    "svd.V": ("any", lambda L, A: L.svd(A)[2]),
    "svd_full.U": ("any", lambda L, A: L.svd(A, some=False)[0]),
    "svd_full.V": ("any", lambda L, A: L.svd(A, some=False)[2]),
    "svd_no_uv.U": ("any", lambda L, A: L.svd(A, compute_uv=False)[0]),
    "svd_no_uv.V": ("any", lambda L, A: L.svd(A, compute_uv=False)[2]),
    "linalg.matrix_exp": ("sq", lambda L, A: L.linalg.matrix_exp(A)),
    "matrix_exp": ("sq", lambda L, A: L.matrix_exp(A)),
    "pinverse": ("any", lambda L, A: L.pinverse(A)),
    "matrix_power_-1": ("sq", lambda L, A: L.matrix_power(A, -1)),
    "matrix_power_-2": ("sq", lambda L, A: L.matrix_power(A, -2)),
}

SHAPES = [(3, 3), (4, 3), (3, 4), (2, 3, 3), (2, 4, 3), (2, 3, 4), (2, 2, 4, 3), (1, 1),
          (2, 1, 1), (0, 3, 3), (3, 0, 0), (0, 0), (2, 0, 3), (2, 3, 0)]

# matmul's empty results have NumPy's zero strides (a dyngrad-wide gap for empty tensors, not
# a layout of linear algebra): matrix_power(A, -2) of an empty batch
_EMPTY_MATMUL = {"matrix_power_-2"}


def _params():
    for name, (kind, _) in CASES.items():
        for shape in SHAPES:
            if kind != "any" and shape[-1] != shape[-2]:
                continue
            if name == "linalg.solve_vector" and shape[-1] == 0:
                continue  # A[..., 0] of an empty matrix is an index error in both
            marks = ()
            if name in _EMPTY_MATMUL and 0 in shape:
                marks = pytest.mark.xfail(reason="empty matmul results have zero strides",
                                          strict=True)
            for rg in (False, True):
                yield pytest.param(name, shape, rg, marks=marks,
                                   id=f"{name}-{'x'.join(map(str, shape))}-{'grad' if rg else 'nograd'}")


def _layout(L, name, shape, rg):
    kind, fn = CASES[name]
    A = L.tensor(_input(shape, kind), requires_grad=rg)
    r = fn(L, A)
    try:
        r.view(-1)
        viewable = True
    except RuntimeError:
        viewable = False
    flat = r.reshape(-1)
    node = r.grad_fn
    saved = {}
    if node is not None:
        for attr in dir(node):
            if attr.startswith("_saved_"):
                v = getattr(node, attr)
                if isinstance(v, L.Tensor):
                    saved[attr] = (tuple(v.shape), v.stride(), v.is_contiguous())
    return dict(shape=tuple(r.shape), stride=r.stride(), contiguous=r.is_contiguous(),
                viewable=viewable, reshape=type(flat.grad_fn).__name__ if flat.grad_fn else None,
                node=type(node).__name__ if node is not None else None, saved=saved,
                value=r.detach().numpy().copy())


@pytest.mark.parametrize("name,shape,rg", list(_params()))
def test_layout_as_torch(name, shape, rg):
    t = _layout(torch, name, shape, rg)
    d = _layout(dyngrad, name, shape, rg)
    tv, dv = t.pop("value"), d.pop("value")
    if any(k in name for k in ("qr", "svd", "eigh.eigenvectors")):  # signs are free there
        tv, dv = np.abs(tv), np.abs(dv)
    np.testing.assert_allclose(dv, tv, rtol=1e-7, atol=1e-9)
    ts, ds = t.pop("saved"), d.pop("saved")
    assert d == t
    for k in set(ts) & set(ds):
        assert ds[k] == ts[k], k


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("bshape", [(3, 2), (2, 3), (2, 3, 3), (4, 1, 3, 3), (3,)])
def test_solve_graph_and_gradients(left, bshape):
    """solve(left=False) is one LinalgSolveExBackward0 (no transposes around it), with
    PyTorch's values and first and second gradients."""
    rs = np.random.RandomState(2)
    a = rs.randn(2, 3, 3) + 3 * np.eye(3)
    b = rs.randn(*bshape)
    out = []
    for L in (torch, dyngrad):
        A = L.tensor(a, requires_grad=True)
        B = L.tensor(b, requires_grad=True)
        try:
            X = L.linalg.solve(A, B, left=left)
        except RuntimeError as e:
            out.append(str(e))
            continue
        w = L.tensor(np.cos(np.arange(X.numel())).reshape(tuple(X.shape)))
        gA, gB = L.autograd.grad((X * w).sum(), (A, B), create_graph=True)
        ggA, = L.autograd.grad((gA * gA).sum() + gB.sum(), A)
        out.append((type(X.grad_fn).__name__, X.grad_fn._saved_left, X.stride(),
                    [v.detach().numpy() for v in (X, gA, gB, ggA)]))
    t, d = out
    if isinstance(t, str):
        assert d == t
        return
    assert d[:3] == t[:3]
    for dv, tv in zip(d[3], t[3]):
        np.testing.assert_allclose(dv, tv, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("a,b", [((2, 3, 3), (4, 3, 1)), ((5, 2, 3, 3), (3, 3, 2))])
def test_solve_batch_shapes_that_do_not_broadcast(a, b):
    errs = []
    for L in (torch, dyngrad):
        with pytest.raises(RuntimeError) as e:
            L.linalg.solve(L.randn(*a, dtype=L.float64), L.randn(*b, dtype=L.float64))
        errs.append(str(e.value))
    assert errs[0] == errs[1]
