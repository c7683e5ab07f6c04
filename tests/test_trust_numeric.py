"""Reductions, numerics and forward-mode AD checked against PyTorch: saved results and in-place
changes, tangents of ops without an exact forward rule, empty inputs, degrees of freedom <= 0,
and no NumPy RuntimeWarning leaking out of an op."""
import warnings

import numpy as np
import pytest

import dyngrad
import dyngrad.autograd.forward_ad as dfw

torch = pytest.importorskip("torch")
import torch.autograd.forward_ad as tfw  # noqa: E402

RS = np.random.RandomState(0)
X34 = RS.standard_normal((3, 4))


def both(arr, requires_grad=False, dtype=np.float64):
    """The same values as a dyngrad tensor and a torch tensor."""
    a = np.array(arr, dtype=dtype)
    d = dyngrad.from_numpy(a.copy()).requires_grad_(requires_grad)
    t = torch.from_numpy(a.copy()).requires_grad_(requires_grad)
    return d, t


def outcome(lib, fn):
    """``("ok", value)`` or ``("err", type name, leading message)``."""
    try:
        r = fn(lib)
    except Exception as e:  # noqa: BLE001 - the comparison is the point
        return ("err", type(e).__name__, str(e).split("\n")[0][:90])
    return ("ok", r)


def close(a, b):
    if isinstance(a, (tuple, list)):
        assert type(b) in (tuple, list) and len(a) == len(b)
        for x, y in zip(a, b):
            close(x, y)
        return
    if a is None or b is None:
        assert a is None and b is None
        return
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    tol = 1e-5 if a.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, equal_nan=True)


def same(fn):
    """Run ``fn(lib)`` with dyngrad and torch: same values, or the same error."""
    d = outcome(dyngrad, fn)
    t = outcome(torch, fn)
    if t[0] == "err":
        assert d[:2] == t[:2], (d, t)
        assert d[2][:60] == t[2][:60], (d, t)
        return None
    assert d[0] == "ok", d
    close(d[1], t[1])
    return d[1]


# --- tensor(list, dtype=float64) keeps full precision -----------------------------------------
def test_tensor_from_floats_with_dtype_is_not_rounded_to_float32():
    for dt in ("float64", "complex128"):
        d = dyngrad.tensor([[0.3, 0.2], [1e300, 0.1]], dtype=getattr(dyngrad, dt))
        t = torch.tensor([[0.3, 0.2], [1e300, 0.1]], dtype=getattr(torch, dt))
        assert (d.numpy() == t.numpy()).all()
    assert dyngrad.tensor(0.1, dtype=dyngrad.float64).item() == 0.1
    assert dyngrad.tensor([0.1]).dtype == dyngrad.float32


# --- 1. a saved result modified in place ------------------------------------------------------
SAVES_RESULT = {
    "amax": lambda L, x: x.amax(0),
    "amax_all": lambda L, x: x.amax(),
    "amin": lambda L, x: x.amin(1),
    "amin_keepdim": lambda L, x: x.amin((0, 1), keepdim=True),
    "max_all": lambda L, x: x.max(),
    "min_all": lambda L, x: x.min(),
    "max_dim": lambda L, x: x.max(0)[0],
    "min_dim": lambda L, x: x.min(1, keepdim=True)[0],
    "prod": lambda L, x: x.prod(),
    "prod_dim": lambda L, x: x.prod(1),
    "cumprod": lambda L, x: x.cumprod(0),
    "exp": lambda L, x: x.exp(),
    "tanh": lambda L, x: x.tanh(),
    "sigmoid": lambda L, x: x.sigmoid(),
    "sqrt": lambda L, x: (x * x + 1).sqrt(),
    "softmax": lambda L, x: L.nn.functional.softmax(x, 0),
    "log_softmax": lambda L, x: L.nn.functional.log_softmax(x, 1),
    "softmin": lambda L, x: L.nn.functional.softmin(x, 1),
    "logsumexp": lambda L, x: x.logsumexp(0),
    "norm": lambda L, x: x.norm(),
    "std": lambda L, x: x.std(),
    "std_dim": lambda L, x: x.std(0),
    "std_mean": lambda L, x: L.std_mean(x, 1)[0],
    "var": lambda L, x: x.var(),
    "var_mean": lambda L, x: L.var_mean(x)[0],
    "logaddexp": lambda L, x: L.logaddexp(x, x * 2),
    "logaddexp2": lambda L, x: L.logaddexp2(x, x * 2),
    "reciprocal": lambda L, x: (x * x + 1).reciprocal(),
    "pow_scalar_base": lambda L, x: L.pow(2.0, x),
}


@pytest.mark.parametrize("zero", [False, True])
@pytest.mark.parametrize("name", list(SAVES_RESULT))
def test_inplace_on_output_raises_where_torch_does(name, zero):
    f = SAVES_RESULT[name]
    vals = X34.copy()
    if zero:
        vals[1, 2] = 0.0

    def run(L):
        x = L.from_numpy(vals.copy()).requires_grad_()
        y = f(L, x)
        y.mul_(2)
        y.sum().backward()
        return x.grad

    same(run)


def test_std_mean_saved_std_checked_when_only_mean_is_used():
    def run(L):
        x = L.from_numpy(X34.copy()).requires_grad_()
        s, m = L.std_mean(x, 1)
        s.add_(1)
        m.sum().backward()
        return x.grad

    same(run)


def test_inplace_error_names_producer_like_torch():
    for L in (dyngrad, torch):
        x = L.from_numpy(X34.copy()).requires_grad_()
        y = x.max()
        y.mul_(2)
        with pytest.raises(RuntimeError, match="which is output 0 of Max1, is at version 1"):
            y.backward()


# --- 3. no false version errors ------------------------------------------------------------------
EINSUM = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
          ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,j->ij", [(3,), (4,)]),
          ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]), ("ij->", [(3, 4)])]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum_keeps_operands_as_torch_does(eq, shapes):
    n = len(shapes)
    arrs = [np.random.RandomState(i).standard_normal(s) for i, s in enumerate(shapes)]
    for mask in range(1, 2 ** n):
        for mod in range(n):
            def run(L):
                ts = [L.from_numpy(a.copy()) for a in arrs]
                leaves = [t.requires_grad_() if mask >> i & 1 else t for i, t in enumerate(ts)]
                ops = [t * 1 if t.requires_grad else t for t in leaves]
                y = L.einsum(eq, *ops)
                with L.no_grad():
                    ops[mod].mul_(3)
                (y * y).sum().backward()
                return [t.grad for t in leaves]

            d = outcome(dyngrad, run)
            t = outcome(torch, run)
            assert d[0] == t[0], (mask, mod, d, t)
            if t[0] == "ok":
                close(d[1], t[1])


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_output_can_change_in_place(name):
    a = np.array([1.0, -np.inf, 3.0, np.inf, -2.0])
    b = np.array([0.5, 2.0, -np.inf, 1.0, -2.0])

    def run(L):
        x = L.from_numpy(a.copy()).requires_grad_()
        y = L.from_numpy(b.copy()).requires_grad_()
        r = getattr(L, name)(x, y)
        r.mul_(2)
        r.sum().backward()
        return x.grad, y.grad

    same(run)

    def second(L):
        x = L.from_numpy(a[[0, 4]].copy()).requires_grad_()
        y = L.from_numpy(b[[0, 4]].copy()).requires_grad_()
        gx, = L.autograd.grad(getattr(L, name)(x, y).sum(), x, create_graph=True)
        return L.autograd.grad(gx.sum(), (x, y))

    same(second)


# --- 2. tangents are never silently zero -----------------------------------------------------------
def _with_zeros(L, x):
    return x * (x.abs() > 0.3)


TANGENT_OPS = {
    "cumprod": lambda L, x: x.cumprod(0),
    "cumprod_zeros": lambda L, x: _with_zeros(L, x).cumprod(0),
    "cumprod_zeros_2d": lambda L, x: _with_zeros(L, x).reshape(-1, 10).cumprod(1),
    "prod_zeros": lambda L, x: _with_zeros(L, x).reshape(-1, 5).prod(1),
    "amax": lambda L, x: x.reshape(-1, 5).amax(1),
    "max_dim": lambda L, x: x.reshape(-1, 5).max(1)[0],
    "std": lambda L, x: x.reshape(-1, 5).std(1),
    "logsumexp": lambda L, x: x.reshape(-1, 5).logsumexp(1),
    "softmax": lambda L, x: L.nn.functional.softmax(x.reshape(-1, 5), 1),
    "logaddexp": lambda L, x: L.logaddexp(x, x.flip(0)),
    "round": lambda L, x: x.round(),
    "sign": lambda L, x: x.sign(),
    "norm_inf": lambda L, x: x.reshape(-1, 5).norm(float("inf"), dim=1),
}


def _fw_tangent(L, fw, f, a, v):
    with fw.dual_level():
        out = f(L, fw.make_dual(L.from_numpy(a.copy()), L.from_numpy(v.copy())))
        return fw.unpack_dual(out).tangent


@pytest.mark.parametrize("n", [100, 5000])
@pytest.mark.parametrize("name", list(TANGENT_OPS))
def test_forward_ad_tangent_matches_torch(name, n):
    rs = np.random.RandomState(1)
    a, v = rs.standard_normal(n), rs.standard_normal(n)
    f = TANGENT_OPS[name]
    close(_fw_tangent(dyngrad, dfw, f, a, v), _fw_tangent(torch, tfw, f, a, v))


@pytest.mark.parametrize("n", [100, 5000])
@pytest.mark.parametrize("name", ["cumprod_zeros", "cumprod_zeros_2d", "prod_zeros", "amax", "std"])
def test_functional_jvp_matches_torch(name, n):
    rs = np.random.RandomState(2)
    a, v = rs.standard_normal(n), rs.standard_normal(n)
    f = TANGENT_OPS[name]
    same(lambda L: L.autograd.functional.jvp(lambda x: f(L, x), L.from_numpy(a.copy()),
                                             L.from_numpy(v.copy())))


def test_cumprod_with_zeros_double_backward_matches_torch():
    a = RS.standard_normal((4, 6))
    a[0, 2] = a[1, 0] = a[1, 4] = a[2, 5] = 0
    w = RS.standard_normal((4, 6))
    for dim in (0, 1, -1):
        def run(L):
            x = L.from_numpy(a.copy()).requires_grad_()
            gx, = L.autograd.grad((x.cumprod(dim) * L.from_numpy(w.copy())).sum(), x,
                                  create_graph=True)
            return gx, L.autograd.grad((gx * gx).sum(), x)[0]

        same(run)


class _NumpyCube(dyngrad.autograd.Function):
    """x ** 3 with a backward computed in NumPy (not differentiable in its gradient)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        return dyngrad.from_numpy(3 * x.detach().numpy() ** 2 * g.detach().numpy())


def test_tangent_of_non_differentiable_backward_is_right_or_an_error():
    v = RS.standard_normal(50)
    a = RS.standard_normal(50)
    want = 3 * a ** 2 * v
    with dfw.dual_level():
        out = _NumpyCube.apply(dfw.make_dual(dyngrad.from_numpy(a.copy()),
                                             dyngrad.from_numpy(v.copy())))
        np.testing.assert_allclose(dfw.unpack_dual(out).tangent.numpy(), want)
    _, t = dyngrad.autograd.functional.jvp(_NumpyCube.apply, dyngrad.from_numpy(a.copy()),
                                           dyngrad.from_numpy(v.copy()))
    np.testing.assert_allclose(t.numpy(), want)
    big = np.ones(5000)
    with dfw.dual_level():
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
            _NumpyCube.apply(dfw.make_dual(dyngrad.from_numpy(big), dyngrad.from_numpy(big)))
    with pytest.raises(NotImplementedError, match="Trying to use forward AD with"):
        dyngrad.autograd.functional.jvp(_NumpyCube.apply, dyngrad.from_numpy(big),
                                        dyngrad.from_numpy(big))


# --- 4./5. empty inputs, dim=(), degrees of freedom <= 0 ------------------------------------------
def _red(name):
    def f(L, x, dim, keep):
        if name in ("softmax", "log_softmax", "softmin"):
            return getattr(L.nn.functional, name)(x, 0 if dim is None else dim)
        if name in ("argmax", "argmin", "max", "min"):
            r = getattr(x, name)() if dim is None else getattr(x, name)(dim, keepdim=keep)
            return r[0] if name in ("max", "min") and dim is not None else r
        if name in ("var_mean", "std_mean"):
            return getattr(L, name)(x) if dim is None else getattr(L, name)(x, dim, keepdim=keep)
        return getattr(x, name)() if dim is None else getattr(x, name)(dim, keepdim=keep)
    return f


REDUCTIONS = ["sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std",
              "var_mean", "std_mean", "softmax", "log_softmax", "softmin", "logsumexp"]
CASES = [((0,), None), ((0,), 0), ((0,), -1), ((2, 0), -1), ((2, 0), 0), ((0, 3), 1),
         ((0, 3), (0, 1)), ((), None), ((), 0), ((3, 4), ()), ((1,), 0), ((3, 1), -1),
         ((2, 3, 4), (0, -1))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_on_empty_and_edge_shapes_match_torch(name, dtype):
    f = _red(name)
    for shape, dim in CASES:
        if name == "logsumexp" and dim is None:
            dim = tuple(range(len(shape)))
        if name == "logsumexp" and dim == ():
            continue  # PyTorch's own logsumexp(dim=()) fails with a broadcast error
        if isinstance(dim, tuple) and name in ("max", "min", "argmax", "argmin", "softmax",
                                               "log_softmax", "softmin"):
            continue
        if dim == () and name in ("var", "std", "var_mean", "std_mean"):
            continue  # PyTorch's backward of var(dim=()) disagrees with its own forward
        a = np.random.RandomState(0).standard_normal(shape).astype(dtype)
        for keep in (False, True):
            for grad in (False, True):
                def run(L):
                    x = L.from_numpy(a.copy()).requires_grad_(grad)
                    with warnings.catch_warnings(record=True) as w:
                        warnings.simplefilter("always")
                        y = f(L, x, dim, keep)
                        ys = y if isinstance(y, tuple) else (y,)
                        if grad and ys[0].requires_grad:
                            s = sum((t.double() * (1 + L.arange(t.numel()).reshape(t.shape))).sum()
                                    for t in ys)
                            s.backward()
                    msgs = sorted(str(m.message)[:70] for m in w)
                    return ys, x.grad, msgs

                d = outcome(dyngrad, run)
                t = outcome(torch, run)
                assert d[0] == t[0], (shape, dim, keep, grad, d, t)
                if t[0] == "err":
                    assert d[1:] == t[1:], (shape, dim, keep, d, t)
                else:
                    assert d[1][2] == t[1][2], (shape, dim, d[1][2], t[1][2])
                    close(d[1][:2], t[1][:2])


def test_var_with_no_degrees_of_freedom_is_nan_with_torchs_warning():
    def run(L):
        x = L.from_numpy(np.array([1.5])).requires_grad_()
        with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
            v = x.var()
        v.backward()
        s = L.from_numpy(np.array([1.5, 2.0])).requires_grad_()
        with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
            r = s.std(correction=3)
        r.backward()
        return v, x.grad, r, s.grad

    same(run)


def test_amax_of_0d_tensor_under_create_graph():
    def run(L):
        x = L.from_numpy(np.array(2.0)).requires_grad_()
        g, = L.autograd.grad(x.amax(), x, create_graph=True)
        return g, L.autograd.grad(g * x, x)[0]

    same(run)


def test_empty_amax_errors_name_the_dim_as_given():
    same(lambda L: L.from_numpy(np.zeros((2, 0))).amax(-1))
    same(lambda L: L.from_numpy(np.zeros(0)).amax())
    same(lambda L: L.from_numpy(np.zeros(0)).argmax())
    same(lambda L: L.from_numpy(np.zeros((0, 3))).max(0))


# --- 6. no NumPy RuntimeWarning -----------------------------------------------------------------
NOISY = {
    "log0": lambda L: L.log(L.tensor([0.0, -1.0])),
    "sqrt_neg": lambda L: L.sqrt(L.tensor([-1.0])),
    "div0": lambda L: L.tensor([1.0, 0.0]) / L.tensor([0.0, 0.0]),
    "div0_scalar": lambda L: L.tensor([1.0, 0.0]) / 0.0,
    "exp_overflow": lambda L: L.exp(L.tensor([1000.0])),
    "mul_overflow": lambda L: L.tensor([3e38]) * L.tensor([10.0]),
    "inf_minus_inf": lambda L: L.tensor([float("inf")]) - float("inf"),
    "pow_neg": lambda L: L.tensor([-8.0]) ** 0.5,
    "log_backward": lambda L: L.autograd.grad(
        L.log(L.tensor([0.0, 1.0], requires_grad=True)).sum(),
        L.tensor([0.0], requires_grad=True), allow_unused=True),
    "sqrt_backward": lambda L: _grad_of(L, lambda x: x.sqrt(), [0.0, 4.0]),
    "mean_empty": lambda L: L.zeros(0).mean(),
    "logsumexp_empty": lambda L: L.zeros(0).logsumexp(0),
}


def _grad_of(L, f, vals):
    x = L.tensor(vals, requires_grad=True)
    f(x).sum().backward()
    return x.grad


@pytest.mark.parametrize("name", list(NOISY))
def test_no_numpy_runtime_warning(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(NOISY[name])


def test_sign_matches_torch_on_integers_nan_and_bool():
    """sign/sgn of integer tensors give -1/0/1 (they were returned unchanged), NaN gives 0
    (PyTorch computes (0 < x) - (x < 0)), bool stays bool; abs's gradient at NaN is 0."""
    torch = pytest.importorskip("torch")
    for vals, dt in (([-3, 0, 5], "int64"), ([-2, 7], "int32"), ([3, 0], "uint8"),
                     ([float("nan"), -1.5, 0.0, -0.0, 2.0], "float64"),
                     ([float("nan"), -1.5, 2.0], "float32"), ([True, False], "bool")):
        for fn in ("sign", "sgn"):
            a = getattr(dyngrad, fn)(dyngrad.tensor(vals, dtype=getattr(dyngrad, dt)))
            b = getattr(torch, fn)(torch.tensor(vals, dtype=getattr(torch, dt)))
            assert str(a.dtype) == str(b.dtype)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    x = dyngrad.tensor([float("nan"), -1.0, 0.0, 2.0], requires_grad=True)
    x.abs().sum().backward()
    assert x.grad.tolist() == [0.0, -1.0, 0.0, 1.0]
