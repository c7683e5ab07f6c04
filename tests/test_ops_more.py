"""What the op table cannot express for the ops of sorting.py, products.py, decompositions.py,
inplace_views.py and inplace_compare.py, checked against PyTorch: the indices returned (ties
included) and their saving by the node, argument errors, in-place view ops, the rule that
gives in-place forms, and PyTorch's node structure (next_functions)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

real = pytest.importorskip("torch")
import dyngrad as dg  # noqa: E402
from dyngrad.ops import OPS  # noqa: E402


def _ver(t):
    v = t._version
    return v if isinstance(v, int) else v[0]


def _struct(o):
    """Values, dtypes, grad_fn names and next_functions of an op's tensor outputs."""
    outs = o if isinstance(o, (tuple, list)) else [o]
    res = []
    for t in outs:
        if not hasattr(t, "grad_fn"):
            res.append(("value", t))
            continue
        fn = t.grad_fn
        nxt = None if fn is None else [(None if n is None else type(n).__name__, i)
                                       for n, i in fn.next_functions]
        res.append((t.detach().numpy().copy(), str(t.dtype).split(".")[-1],
                    None if fn is None else type(fn).__name__, nxt))
    return res


def _run(lib, fn, arrays, grad=True):
    ts = []
    for a in arrays:
        t = lib.tensor(a)
        if grad and t.is_floating_point():
            t.requires_grad_(True)
        ts.append(t)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _struct(fn(lib, *ts))
    except Exception as e:  # noqa: BLE001 - type and message are what is compared
        # torch.linalg.LinAlgError's class is named _LinAlgError
        return ("error", type(e).__name__.lstrip("_"), str(e).split("\n")[0])


def _same(a, b):
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x[0], str) or isinstance(y[0], str):
            if x != y:
                return False
            continue
        tol = 1e-4 if x[1] == "float32" else 1e-6
        if x[1:] != y[1:] or x[0].shape != y[0].shape or \
                not np.allclose(x[0], y[0], equal_nan=True, rtol=tol, atol=tol * 1e-3):
            return False
    return True


R = np.random.RandomState(0)
TIES = np.array([[1.0, 3.0, 3.0, 2.0], [2.0, 2.0, 1.0, 1.0], [5.0, 5.0, 5.0, 4.0]])
NANS = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 2.0], [np.nan] * 3])
I = R.randint(0, 5, (3, 4))


def _f(*arrays, grad=True):
    return arrays, grad


CASES = {
    # --- order statistics: values, the chosen indices (ties, NaN) and errors ---------------
    "median_ties_dim1": (lambda t, x: t.median(x, 1), _f(TIES)),
    "median_ties_dim0_keep": (lambda t, x: x.median(0, keepdim=True), _f(TIES)),
    "median_all_ties": (lambda t, x: t.median(x), _f(TIES)),
    "median_nan": (lambda t, x: t.median(x), _f(NANS)),
    "median_nan_dim": (lambda t, x: t.median(x, 1), _f(NANS)),
    "nanmedian_nan_dim": (lambda t, x: t.nanmedian(x, 1), _f(NANS)),
    "nanmedian_nan": (lambda t, x: t.nanmedian(x), _f(NANS)),
    "median_int": (lambda t, x: t.median(x, 1), _f(I)),
    "median_empty": (lambda t, x: t.median(x), _f(np.zeros(0))),
    "median_empty_dim": (lambda t, x: t.median(x, 0), _f(np.zeros((0, 3)))),
    "median_empty_other_dim": (lambda t, x: t.median(x, 1), _f(np.zeros((0, 3)))),
    "median_bool": (lambda t, x: t.median(x), _f(np.array([True, False]))),
    "nanmedian_bool": (lambda t, x: t.nanmedian(x), _f(np.array([True, False]))),
    "median_dim_range": (lambda t, x: t.median(x, 2), _f(TIES)),
    "median_0d": (lambda t, x: t.median(x, 0), _f(np.array(3.0))),
    "mode_ties": (lambda t, x: t.mode(x, 1), _f(TIES)),
    "mode_1d": (lambda t, x: t.mode(x), _f(np.array([3.0, 1.0, 3.0, 1.0, 2.0]))),
    "mode_keepdim": (lambda t, x: x.mode(0, True), _f(TIES)),
    "mode_int": (lambda t, x: t.mode(x), _f(I)),
    "mode_empty": (lambda t, x: t.mode(x), _f(np.zeros(0))),
    "cummax_nan": (lambda t, x: t.cummax(x, 0), _f(np.array([1.0, 3, 3, 2, np.nan, 5, np.nan]))),
    "cummin_nan": (lambda t, x: x.cummin(0), _f(np.array([1.0, 0, 0, 2, np.nan, -5]))),
    "cummax_ties": (lambda t, x: t.cummax(x, 1), _f(TIES)),
    "cummin_int": (lambda t, x: t.cummin(x, 1), _f(I)),
    "cummax_0d": (lambda t, x: t.cummax(x, 0), _f(np.array(2.0))),
    "cummax_empty": (lambda t, x: t.cummax(x, 0), _f(np.zeros((0, 2)))),
    "cummax_dim_range": (lambda t, x: t.cummax(x, 2), _f(TIES)),
    "logcumsumexp_large": (lambda t, x: t.logcumsumexp(x, 1), _f(R.randn(3, 4) * 50)),
    "logcumsumexp_inf": (lambda t, x: t.logcumsumexp(x, 0), _f(np.array([-np.inf, 2, np.inf]))),
    "logcumsumexp_int": (lambda t, x: t.logcumsumexp(x, 0), _f(np.array([1, 2]))),
    "nansum_int": (lambda t, x: t.nansum(x), _f(I.astype(np.int32))),
    "nansum_dtype": (lambda t, x: t.nansum(x, dtype=t.float32), _f(NANS)),
    "nanmean_int": (lambda t, x: t.nanmean(x), _f(I)),
    "nanmean_all_nan": (lambda t, x: t.nanmean(x, 1), _f(NANS)),
    # --- products: dtypes, broadcasting, errors -------------------------------------------
    "addmv_int": (lambda t, a, m, v: t.addmv(a, m, v), _f(I[0, :2], I[:2, :3], I[0, :3])),
    "addmv_size": (lambda t, a, m, v: t.addmv(a, m, v), _f(R.randn(2), R.randn(2, 3), R.randn(4))),
    "addmv_input": (lambda t, a, m, v: t.addmv(a, m, v), _f(R.randn(3), R.randn(2, 3),
                                                          R.randn(3))),
    "addmv_dims": (lambda t, a, m, v: t.addmv(a, m, v), _f(R.randn(2), R.randn(2, 3, 1),
                                                         R.randn(3))),
    "addmv_dtypes": (lambda t, a, m, v: t.addmv(a, m.float(), v),
                     _f(R.randn(2), R.randn(2, 3), R.randn(3))),
    "addmv_beta0_nan": (lambda t, a, m, v: t.addmv(a, m, v, beta=0),
                        _f(np.array([np.nan, 1.0]), R.randn(2, 3), R.randn(3))),
    "addr_2d_vec": (lambda t, a, b, c: t.addr(a, b, c), _f(R.randn(2, 3), R.randn(2, 2),
                                                         R.randn(3))),
    "addr_expand": (lambda t, a, b, c: t.addr(a, b, c), _f(R.randn(2, 4), R.randn(2),
                                                         R.randn(3))),
    "addr_bool": (lambda t, a, b, c: t.addr(a, b, c),
                  _f(np.ones((2, 3), bool), np.array([True, False]),
                     np.array([True, False, True]))),
    "addr_int_float_beta": (lambda t, a, b, c: t.addr(a, b, c, beta=2.5),
                            _f(I[:2, :3], I[0, :2], I[1, :3])),
    "addr_mixed": (lambda t, a, b, c: t.addr(a.float(), b, c.float()),
                   _f(R.randn(2, 3), R.randn(2), R.randn(3))),
    "addcmul_positional_value": (lambda t, a, b, c: t.addcmul(a, 2, b, c),
                                 _f(R.randn(3), R.randn(3), R.randn(3))),
    "addcmul_mixed": (lambda t, a, b, c: t.addcmul(a, b, c), _f(I[0, :3], I[1, :3], R.randn(3))),
    "addcmul_int_float_value": (lambda t, a, b, c: t.addcmul(a, b, c, value=1.5),
                                _f(I[0, :3], I[1, :3], I[2, :3])),
    "addcmul_bool": (lambda t, a, b, c: t.addcmul(a, b, c),
                     _f(np.ones(3, bool), np.ones(3, bool), np.ones(3, bool))),
    "addcmul_number": (lambda t, a, b: t.addcmul(a, 2.0, b), _f(R.randn(3), R.randn(3))),
    "addcdiv_int": (lambda t, a, b, c: t.addcdiv(a, b, c), _f(I[0, :3], I[1, :3], I[2, :3] + 1)),
    "addcdiv_int_operands": (lambda t, a, b, c: t.addcdiv(a, b, c),
                             _f(R.randn(3), I[1, :3], I[2, :3] + 1)),
    "addcmul__broadcast": (lambda t, a, b, c: (a * 1).addcmul_(b, c),
                           _f(R.randn(3), R.randn(2, 3), R.randn(3))),
    "addcdiv__leaf": (lambda t, a, b, c: a.addcdiv_(b, c), _f(R.randn(3), R.randn(3),
                                                            R.randn(3))),
    "trace_1d": (lambda t, a: t.trace(a), _f(R.randn(3))),
    "trace_int": (lambda t, a: t.trace(a), _f(I.astype(np.int32))),
    "trace_bool": (lambda t, a: t.trace(a), _f(np.ones((2, 2), bool))),
    "dist_float32_float64": (lambda t, a, b: t.dist(a.float(), b), _f(R.randn(3), R.randn(3))),
    "dist_int_float": (lambda t, a, b: t.dist(a.float(), b), _f(I[0], I[1])),
    "dist_ints": (lambda t, a, b: t.dist(a, b), _f(I[0], I[1])),
    "dist_shapes": (lambda t, a, b: t.dist(a, b), _f(R.randn(3), R.randn(4))),
    "dist_p_str": (lambda t, a, b: t.dist(a, b, "fro"), _f(R.randn(3), R.randn(3))),
    "dist_p0": (lambda t, a, b: t.dist(a, b, 0), _f(R.randn(3), R.randn(2, 3))),
    "dist_p_neg": (lambda t, a, b: t.dist(a, b, -1), _f(R.randn(3), R.randn(3))),
    "cross_length": (lambda t, a, b: t.linalg.cross(a, b), _f(R.randn(2, 4), R.randn(2, 4))),
    "cross_shapes": (lambda t, a, b: t.linalg.cross(a, b), _f(R.randn(2, 3), R.randn(3, 3))),
    "cross_dtypes": (lambda t, a, b: t.linalg.cross(a.float(), b), _f(R.randn(3), R.randn(3))),
    "cross_default_dim": (lambda t, a, b: t.cross(a, b), _f(R.randn(3, 2), R.randn(3, 2))),
    "cross_no_dim_3": (lambda t, a, b: t.cross(a, b), _f(R.randn(2, 2), R.randn(2, 2))),
    "cross_int": (lambda t, a, b: t.linalg.cross(a, b), _f(I[0, :3], I[1, :3])),
    "kron_3d_2d": (lambda t, a, b: t.kron(a, b), _f(R.randn(2, 1, 2), R.randn(3, 2))),
    "kron_dtypes": (lambda t, a, b: t.kron(a.float(), b), _f(R.randn(2), I[0, :3])),
    "tensordot_sizes": (lambda t, a, b: t.tensordot(a, b, dims=1), _f(R.randn(2, 3),
                                                                     R.randn(4, 4))),
    "tensordot_negative": (lambda t, a, b: t.tensordot(a, b, dims=-1), _f(R.randn(2, 3),
                                                                         R.randn(3, 4))),
    "tensordot_lengths": (lambda t, a, b: t.tensordot(a, b, dims=([1], [0, 1])),
                          _f(R.randn(2, 3), R.randn(3, 4))),
    "tensordot_dtypes": (lambda t, a, b: t.tensordot(a.float(), b, dims=1),
                         _f(R.randn(2, 3), R.randn(3, 4))),
    "tensordot_tensor_dims": (lambda t, a, b: t.tensordot(a, b, dims=t.tensor([[1, 2], [1, 0]])),
                              _f(R.randn(2, 3, 4), R.randn(4, 3, 5))),
    "tensordot_full": (lambda t, a, b: t.tensordot(a, b, dims=2), _f(R.randn(2, 3),
                                                                    R.randn(2, 3))),
    "inner_mismatch": (lambda t, a, b: t.inner(a, b), _f(R.randn(2, 3), R.randn(4))),
    "inner_0d": (lambda t, a, b: t.inner(a, b), _f(np.array(2.0), R.randn(3))),
    "multi_dot_one": (lambda t, a: t.linalg.multi_dot([a]), _f(R.randn(2, 3))),
    "multi_dot_3d": (lambda t, a, b: t.linalg.multi_dot([a, b]), _f(R.randn(2, 2, 3),
                                                                   R.randn(3, 3))),
    "multi_dot_middle_1d": (lambda t, a, b, c: t.linalg.multi_dot([a, b, c]),
                            _f(R.randn(2, 3), R.randn(3), R.randn(3, 3))),
    "multi_dot_shapes": (lambda t, a, b: t.linalg.multi_dot([a, b]), _f(R.randn(2, 3),
                                                                       R.randn(4, 3))),
    "multi_dot_dtypes": (lambda t, a, b: t.linalg.multi_dot([a, b.float()]),
                         _f(R.randn(2, 3), R.randn(3, 4))),
    "multi_dot_4": (lambda t, a, b, c, d: t.linalg.multi_dot((a, b, c, d)),
                    _f(R.randn(2, 3), R.randn(3, 4), R.randn(4, 5), R.randn(5, 6))),
    "multi_dot_vectors": (lambda t, a, b: t.linalg.multi_dot([a, b]), _f(R.randn(3),
                                                                        R.randn(3))),
    "chain_matmul_one": (lambda t, a: t.chain_matmul(a), _f(R.randn(2, 3))),
    "chain_matmul_1d": (lambda t, a, b: t.chain_matmul(a, b), _f(R.randn(3), R.randn(3, 2))),
    "chain_matmul_none": (lambda t: t.chain_matmul(), _f()),
    "chain_matmul_three": (lambda t, a, b, c: t.chain_matmul(a, b, c),
                           _f(R.randn(2, 3), R.randn(3, 4), R.randn(4, 2))),
    "softmax_dtype_cast": (lambda t, a: t.softmax(a, 1, dtype=t.float32), _f(R.randn(2, 3))),
    "softmax_int_dtype": (lambda t, a: t.softmax(a, 1, dtype=t.float64), _f(I)),
    "softmax_int": (lambda t, a: t.softmax(a, 1), _f(I)),
    "softmax_no_dim": (lambda t, a: t.softmax(a), _f(R.randn(2, 3))),
    "log_softmax_method_no_dim": (lambda t, a: a.log_softmax(), _f(R.randn(2, 3))),
    # --- linear algebra: errors and node structure ------------------------------------------
    "svd_1d": (lambda t, a: t.linalg.svd(a), _f(R.randn(3))),
    "svd_int": (lambda t, a: t.linalg.svd(a), _f(I)),
    "svd_compute_uv_false": (lambda t, a: t.svd(a, compute_uv=False), _f(R.randn(3, 2))),
    "svd_V_node": (lambda t, a: t.svd(a)[2], _f(R.randn(3, 2))),
    "svdvals_float32": (lambda t, a: t.linalg.svdvals(a.float()), _f(R.randn(3, 2))),
    "matrix_exp_rect": (lambda t, a: t.linalg.matrix_exp(a), _f(R.randn(2, 3))),
    "matrix_exp_1d": (lambda t, a: t.matrix_exp(a), _f(R.randn(3))),
    "matrix_exp_float32": (lambda t, a: t.matrix_exp(a.float()), _f(R.randn(3, 3))),
    "eigh_rect": (lambda t, a: t.linalg.eigh(a), _f(R.randn(2, 3))),
    "eigh_uplo": (lambda t, a: t.linalg.eigh(a, UPLO="X"), _f(R.randn(3, 3))),
    "eigvalsh_upper": (lambda t, a: t.linalg.eigvalsh(a, UPLO="U"), _f(R.randn(3, 3))),
    "cholesky_not_pd": (lambda t, a: t.linalg.cholesky(a), _f(np.diag([1.0, -1.0, 1.0]))),
    "cholesky_batch_not_pd": (lambda t, a: t.linalg.cholesky(a),
                              _f(np.stack([np.eye(2), np.diag([1.0, -1.0])]))),
    "cholesky_ex_info": (lambda t, a: t.linalg.cholesky_ex(a).info,
                         _f(np.stack([np.eye(2), np.diag([1.0, -1.0])]))),
    "qr_complete": (lambda t, a: t.linalg.qr(a, mode="complete"), _f(R.randn(3, 2))),
    "qr_r": (lambda t, a: t.linalg.qr(a, mode="r"), _f(R.randn(3, 2))),
    "qr_mode": (lambda t, a: t.linalg.qr(a, mode="x"), _f(R.randn(3, 2))),
    "qr_wide": (lambda t, a: t.linalg.qr(a), _f(R.randn(2, 3))),
    # --- in-place view ops ---------------------------------------------------------------
    "unsqueeze__leaf": (lambda t, a: a.unsqueeze_(0), _f(R.randn(3))),
    "unsqueeze__range": (lambda t, a: (a * 1).unsqueeze_(5), _f(R.randn(3))),
    "t__3d": (lambda t, a: (a * 1).t_(), _f(R.randn(2, 3, 1))),
    "squeeze__dims": (lambda t, a: (a * 1).squeeze_((0, 2)), _f(R.randn(1, 3, 1))),
    "swapaxes_": (lambda t, a: (a * 1).swapaxes_(0, 1), _f(R.randn(2, 3))),
    "swapdims_": (lambda t, a: (a * 1).swapdims_(0, 1), _f(R.randn(2, 3))),
    # --- in-place comparisons ------------------------------------------------------------
    "eq__scalar": (lambda t, a: (a * 1).eq_(2.0), _f(np.array([1.0, 2.0, 3.0]))),
    "lt__tensor": (lambda t, a, b: (a * 1).lt_(b), _f(R.randn(3), R.randn(3))),
    "ge__int": (lambda t, a: a.ge_(2), _f(I[0])),
    "ne__broadcast_error": (lambda t, a, b: (a * 1).ne_(b), _f(R.randn(3), R.randn(2))),
    "greater__alias": (lambda t, a, b: (a * 1).greater_(b), _f(R.randn(3), R.randn(3))),
    "eq__untracked_self": (lambda t, a, b: a.detach().clone().eq_(b), _f(R.randn(3),
                                                                         R.randn(3))),
    # --- pow dtype ------------------------------------------------------------------------
    "float32_pow_int64": (lambda t, a, b: a.float() ** b, _f(np.array([2.0]), np.array([2]))),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    fn, (arrays, grad) = CASES[name]
    want = _run(real, fn, arrays, grad)
    got = _run(dg, fn, arrays, grad)
    assert _same(got, want), f"{name}:\n  dyngrad {got}\n  torch   {want}"


# --- the indices returned are saved by the node ------------------------------------------
SELECTING = {
    "median_dim": lambda t, x: t.median(x, 1),
    "nanmedian_dim": lambda t, x: t.nanmedian(x, 1),
    "mode": lambda t, x: t.mode(x, 1),
    "cummax": lambda t, x: t.cummax(x, 1),
    "cummin": lambda t, x: t.cummin(x, 1),
}


X34 = R.randn(3, 4)
U23 = R.uniform(0.2, 0.9, (2, 3))


def _backward_after_index_change(lib, fn, change):
    x = lib.tensor(X34, requires_grad=True)
    vals, idx = fn(lib, x * 1)
    if change:
        idx.zero_()
    try:
        vals.sum().backward()
    except RuntimeError as e:
        return ("error", str(e).split(" Hint:")[0])
    return x.grad.numpy()


@pytest.mark.parametrize("change", [False, True])
@pytest.mark.parametrize("name", list(SELECTING))
def test_indices_are_saved(name, change):
    fn = SELECTING[name]
    want = _backward_after_index_change(real, fn, change)
    got = _backward_after_index_change(dg, fn, change)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and got[1] == want[1]
    else:
        np.testing.assert_allclose(got, want)


def test_saved_singular_values_name_their_output():
    """A changed output of a multi-output node is named by its number, as PyTorch does."""
    msgs = []
    x = R.randn(3, 2)
    for lib in (real, dg):
        a = lib.tensor(x, requires_grad=True)
        U, S, Vh = lib.linalg.svd(a, full_matrices=False)
        loss = (U @ Vh).sum() + S.sum()
        with lib.no_grad():
            S.mul_(2)
        with pytest.raises(RuntimeError) as e:
            loss.backward()
        msgs.append(str(e.value).split(" Hint:")[0])
    assert msgs[0] == msgs[1]


# --- in-place view ops ---------------------------------------------------------------------
@pytest.mark.parametrize("op", ["unsqueeze_(0)", "squeeze_()", "squeeze_(0)", "t_()",
                                "transpose_(0, 1)", "swapaxes_(1, 0)"])
def test_inplace_view_changes_the_tensor(op):
    res = []
    x = R.randn(1, 3)
    for lib in (real, dg):
        a = lib.tensor(x, requires_grad=True)
        y = a * 2
        v0 = _ver(y)
        r = eval(f"y.{op}")  # noqa: S307 - fixed expressions
        assert r is y
        w = lib.arange(float(y.numel()), dtype=lib.float64).reshape(tuple(y.shape))
        (y * w).sum().backward()
        res.append((tuple(y.shape), y.stride(), _ver(y) - v0, type(y.grad_fn).__name__,
                    a.grad.numpy().tolist()))
    assert res[0] == res[1]


def test_inplace_view_then_saved_use_fails_like_torch():
    msgs = []
    for lib in (real, dg):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = a * 2
        m = y * y
        y.unsqueeze_(0)
        with pytest.raises(RuntimeError) as e:
            m.sum().backward()
        msgs.append(str(e.value).split(" Hint:")[0])
    assert msgs[0] == msgs[1]


def test_inplace_view_on_a_view_writes_its_base():
    res = []
    for lib in (real, dg):
        a = lib.ones(2, 3, requires_grad=True)
        y = a * 1
        v = y[0]
        v.unsqueeze_(0)
        v.mul_(2)
        y.sum().backward()
        res.append((tuple(v.shape), y.detach().numpy().tolist(), a.grad.numpy().tolist()))
    assert res[0] == res[1]


def test_inplace_view_outside_autograd():
    for lib in (real, dg):
        x = lib.ones(3)
        v0 = _ver(x)
        x.unsqueeze_(0)
        assert tuple(x.shape) == (1, 3) and _ver(x) == v0 + 1


# --- in-place forms: the rule agrees with PyTorch's Tensor methods ------------------------
def _method_names():
    out = set()
    for k, info in OPS.items():
        for n in ((k,) if info["method"] else ()) + info["methods"]:
            if not n.startswith("__"):
                out.add(n)
    return out


def test_inplace_forms_match_torch():
    names = _method_names()
    torch_has = {n for n in dir(real.Tensor) if n.endswith("_") and not n.startswith("_")}
    # every op dyngrad has whose in-place form PyTorch has, has it here too
    missing = sorted(n + "_" for n in names if not n.endswith("_") and n + "_" in torch_has
                     and not hasattr(dg.Tensor, n + "_"))
    # and dyngrad's Tensor has no in-place method PyTorch lacks
    extra = sorted(n for n in dir(dg.Tensor) if n.endswith("_") and not n.startswith("_")
                   and n not in torch_has)
    assert not missing and not extra, f"missing {missing}, extra {extra}"


def test_inplace_rule_is_the_source():
    from dyngrad.ops import inplace
    forms = inplace.inplace_forms(OPS)
    assert {"sin_", "negative_", "eq_", "cumsum_", "addmv_", "erfinv_"} <= set(forms)
    assert not set(forms) & {n + "_" for n in inplace.OUT_OF_PLACE_ONLY}


@pytest.mark.parametrize("name", ["sin_", "sqrt_", "abs_", "neg_", "log_", "round_", "floor_",
                                  "ceil_", "reciprocal_", "sign_", "absolute_", "fix_",
                                  "arccos_", "logical_not_", "digamma_", "sinc_"])
def test_unary_inplace_forms(name):
    res = []
    for lib in (real, dg):
        a = lib.tensor(U23, requires_grad=True)
        y = a * 1
        r = getattr(y, name)()
        assert r is y
        y.sum().backward()
        res.append((y.detach().numpy(), type(y.grad_fn).__name__, a.grad.numpy()))
    np.testing.assert_allclose(res[1][0], res[0][0], rtol=1e-6)
    assert res[1][1] == res[0][1]
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-6)


def test_new_ops_exist_where_torch_has_them():
    """The ops of the new families are functions and methods exactly where PyTorch's are."""
    fams = ("sorting", "products", "decompositions", "inplace_views", "inplace_compare")
    wrong = []
    for k, info in OPS.items():
        if info["module"] not in fams:
            continue
        if info["function"] and not hasattr(real, k):
            wrong.append(k)
        for n in ((k,) if info["method"] else ()) + info["methods"]:
            if not hasattr(real.Tensor, n):
                wrong.append("Tensor." + n)
        if not info["method"] and hasattr(real.Tensor, k) and not hasattr(dg.Tensor, k):
            wrong.append("missing Tensor." + k)
    for n in ("svd", "svdvals", "matrix_exp", "eigh", "eigvalsh", "cholesky", "cholesky_ex",
              "qr", "cross", "multi_dot"):
        if not hasattr(dg.linalg, n):
            wrong.append("linalg." + n)
    assert not wrong, wrong
