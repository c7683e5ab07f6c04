"""Special functions (dyngrad.special, lgamma & co, asinh & co) against PyTorch: values at
edge points, forward-mode tangents, errors, dtypes, the namespace and the Tensor methods."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import dyngrad
from tests.optable.special import ROWS

torch = pytest.importorskip("torch")
from tests.twin import twin  # noqa: E402

EDGE = np.array([0.0, -0.0, -1.0, -2.5, 1e-300, 1e-5, 0.5, 3.0, 50.0, 200.0, -200.0, np.inf,
                 -np.inf, np.nan, 1.0, -1e-20, 0.999, -0.3])

UNARY = ["lgamma", "digamma", "erfinv", "i0", "sinc", "asinh", "acosh", "atanh", "deg2rad",
         "rad2deg", "angle", "special.i0e", "special.i1", "special.i1e", "special.erfcx",
         "special.ndtr", "special.ndtri", "special.log_ndtr", "special.entr", "special.erf",
         "special.erfc", "special.expit", "special.gammaln", "special.psi",
         "special.modified_bessel_k0", "special.scaled_modified_bessel_k1",
         "special.spherical_bessel_j0"]


def _get(lib, name):
    obj = lib
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _same_values(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(np.isnan(a), np.isnan(b)), (a, b)
    assert np.array_equal(np.isinf(a) & (a > 0), np.isinf(b) & (b > 0)), (a, b)
    assert np.array_equal(np.isinf(a) & (a < 0), np.isinf(b) & (b < 0)), (a, b)
    fin = np.isfinite(b) & (np.abs(b) > 1e-290)  # subnormal results keep fewer digits
    np.testing.assert_allclose(a[fin], b[fin], rtol=rtol, atol=1e-15)


@pytest.mark.parametrize("name", UNARY)
def test_values_at_edge_points_match_torch(name):
    got = _get(dyngrad, name)(dyngrad.tensor(EDGE)).numpy()
    exp = _get(torch, name)(torch.tensor(EDGE)).numpy()
    _same_values(got, exp, 1e-13)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma_matches_torch(n):
    x = np.concatenate([EDGE, np.linspace(-7.3, 9.1, 41)])
    _same_values(dyngrad.polygamma(n, dyngrad.tensor(x)).numpy(),
                 torch.polygamma(n, torch.tensor(x)).numpy(), 1e-12)


def test_binary_values_match_torch():
    x, q = np.meshgrid(np.array([0.5, 1.0, 1.5, 2.0, 3.5, np.inf, np.nan, 10.0]),
                       np.array([-1.5, -0.5, 0.0, 0.5, 1.0, 2.0, np.inf, np.nan, 1e-3, 100.0]))
    for name in ("special.zeta", "special.xlog1py", "igamma", "igammac"):
        a, b = (np.abs(x), np.abs(q)) if "igamma" in name else (x, q)
        got = _get(dyngrad, name)(dyngrad.tensor(a), dyngrad.tensor(b)).numpy()
        exp = _get(torch, name)(torch.tensor(a), torch.tensor(b)).numpy()
        _same_values(got, exp, 1e-12)


def test_mvlgamma_matches_torch():
    x = np.linspace(1.2, 9.0, 17)
    for p in (1, 2, 5):
        _same_values(dyngrad.mvlgamma(dyngrad.tensor(x), p).numpy(),
                     torch.mvlgamma(torch.tensor(x), p).numpy(), 1e-13)


def test_erf_family_matches_torch_to_double_precision():
    x = np.linspace(-27, 27, 20001)
    for name in ("erf", "erfc", "special.erfcx"):
        _same_values(_get(dyngrad, name)(dyngrad.tensor(x)).numpy(),
                     _get(torch, name)(torch.tensor(x)).numpy(), 1e-13)


@pytest.mark.parametrize("row", [r for r in ROWS if r.grad], ids=lambda r: r.name)
def test_forward_mode_tangents(row):
    """Forward-mode tangents pass gradcheck; where PyTorch has no forward-mode formula
    (zeta, igamma, igammac), dyngrad refuses with PyTorch's error."""
    s = row.samples[0]
    ts = s.make(dyngrad)
    try:
        tw = twin(row.fn)
        torch.autograd.gradcheck(lambda *a: tw(*a, *s.extra, **s.kwargs), s.make(torch),
                                 atol=row.atol, rtol=row.rtol, check_forward_ad=True)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError) as got:
            dyngrad.autograd.gradcheck(lambda *a: row.fn(*a, *s.extra, **s.kwargs), ts,
                                       atol=row.atol, rtol=row.rtol, check_forward_ad=True)
        assert str(got.value).splitlines()[0] == str(e).splitlines()[0]
        return
    assert dyngrad.autograd.gradcheck(lambda *a: row.fn(*a, *s.extra, **s.kwargs), ts,
                                      atol=row.atol, rtol=row.rtol, check_forward_ad=True)


def test_integer_input_becomes_default_float():
    i = dyngrad.tensor([1, 2, 3])
    ti = torch.tensor([1, 2, 3])
    for name in UNARY:
        assert str(_get(dyngrad, name)(i).dtype) == str(_get(torch, name)(ti).dtype), name
    assert dyngrad.polygamma(1, i).dtype == dyngrad.float32
    assert dyngrad.mvlgamma(i, 2).dtype == dyngrad.float32
    assert dyngrad.special.zeta(i, i).dtype == dyngrad.float32
    assert dyngrad.special.xlog1py(i, 2).dtype == dyngrad.float32


def _error(fn, lib):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).split("\n")[0]
    return None


def _leaf(lib, v=(0.3, 0.7)):
    return lib.tensor(list(v), dtype=lib.float64, requires_grad=True)


ERRORS = {
    "zeta_self_grad": lambda L: L.special.zeta(_leaf(L, (2.5, 3.0)), _leaf(L)).sum().backward(),
    "zeta_scalar_other": lambda L: L.special.zeta(_leaf(L, (2.5, 3.0)), 2.0).sum().backward(),
    "igamma_self_grad": lambda L: L.igamma(_leaf(L), _leaf(L)).sum().backward(),
    "igammac_self_grad": lambda L: L.special.gammaincc(_leaf(L), _leaf(L)).sum().backward(),
    "igamma_scalar": lambda L: L.igamma(_leaf(L), 2.0),
    "polygamma_negative": lambda L: L.polygamma(-1, _leaf(L)),
    "polygamma_float_n": lambda L: L.polygamma(1.5, _leaf(L)),
    "mvlgamma_p0": lambda L: L.mvlgamma(_leaf(L), 0),
    "lgamma_complex": lambda L: L.lgamma(L.tensor([1 + 1j])),
    "i0e_complex": lambda L: L.special.i0e(L.tensor([1 + 1j])),
    "bessel_complex": lambda L: L.special.bessel_j0(L.tensor([1 + 1j])),
    "deg2rad_complex": lambda L: L.deg2rad(L.tensor([1 + 1j])),
    "zeta_numbers": lambda L: L.special.zeta(2.0, 3.0),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    got, exp = _error(ERRORS[name], dyngrad), _error(ERRORS[name], torch)
    assert exp is not None
    assert got is not None and got[0] == exp[0], (got, exp)
    if not exp[1].endswith("expected one of:"):
        assert got[1] == exp[1]


def test_zeta_and_igamma_differentiate_in_other():
    for lib in (dyngrad, torch):
        a = lib.tensor([2.5, 3.0], dtype=lib.float64)
        x = _leaf(lib)
        lib.special.zeta(a, x).sum().backward()
        g1 = x.grad.numpy().copy()
        x.grad = None
        lib.igamma(a, x).sum().backward()
        if lib is dyngrad:
            d1, d2 = g1, x.grad.numpy().copy()
        else:
            np.testing.assert_allclose(d1, g1, rtol=1e-12)
            np.testing.assert_allclose(d2, x.grad.numpy(), rtol=1e-12)


def test_non_differentiable_functions_record_nothing():
    x = _leaf(dyngrad)
    for name in ("bessel_j0", "bessel_y1", "modified_bessel_k1", "airy_ai", "spherical_bessel_j0"):
        y = getattr(dyngrad.special, name)(x)
        assert not y.requires_grad and y.grad_fn is None
        assert not getattr(torch.special, name)(_leaf(torch)).requires_grad


def test_special_namespace_covers_torch_special():
    theirs = {n for n in dir(torch.special) if not n.startswith("_")} - {
        "torch", "common_args", "multi_dim_common"}
    missing = sorted(n for n in theirs if not hasattr(dyngrad.special, n))
    assert not missing or all("polynomial" in n for n in missing), missing
    for n in missing:
        with pytest.raises(AttributeError):
            getattr(dyngrad.special, n)
    ours = {n for n in dir(dyngrad.special) if not n.startswith("_")}
    assert ours <= theirs, ours - theirs


def test_tensor_methods_and_inplace_forms_as_torch():
    names = ["lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "i0", "asinh", "acosh",
             "atanh", "arcsinh", "arccosh", "arctanh", "deg2rad", "rad2deg", "sinc", "angle",
             "igamma", "igammac"]
    for n in names:
        for m in (n, n + "_"):
            assert hasattr(dyngrad.Tensor, m) == hasattr(torch.Tensor, m), m
        assert hasattr(dyngrad, n)


@pytest.mark.parametrize("call", [
    lambda t, L: t.lgamma_(), lambda t, L: t.digamma_(), lambda t, L: t.polygamma_(2),
    lambda t, L: t.mvlgamma_(2), lambda t, L: t.erfinv_(), lambda t, L: t.i0_(),
    lambda t, L: t.asinh_(), lambda t, L: t.arctanh_(), lambda t, L: t.sinc_(),
    lambda t, L: t.deg2rad_(), lambda t, L: L.tensor([1.5, 2.0], dtype=L.float64).igamma_(t),
    lambda t, L: t.polygamma(1), lambda t, L: L.tensor([1.5, 2.0], dtype=L.float64).igammac(t),
    lambda t, L: t.acosh_(), lambda t, L: t.arcsinh_(),
], ids=["lgamma_", "digamma_", "polygamma_", "mvlgamma_", "erfinv_", "i0_", "asinh_",
        "arctanh_", "sinc_", "deg2rad_", "igamma_", "polygamma", "igammac", "acosh_",
        "arcsinh_"])
def test_inplace_forms_give_torch_values_and_gradients(call):
    res = []
    for lib in (dyngrad, torch):
        x = lib.tensor([1.3, 0.6], dtype=lib.float64, requires_grad=True)
        y = x / 2  # a non-leaf in atanh's domain
        out = call(y, lib)
        try:
            (out * out).sum().backward()
            grad = x.grad.numpy().copy()
        except NotImplementedError as e:  # PyTorch's in-place asinh_/acosh_/atanh_
            grad = str(e)
        res.append((out.detach().numpy().copy(), grad, type(out.grad_fn).__name__))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-12, equal_nan=True)
    if isinstance(res[1][1], str):
        assert res[0][1] == res[1][1]
    else:
        np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-9)
    assert res[0][2] == res[1][2]


def test_import_does_not_load_scipy():
    code = "import sys, dyngrad; print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = "import sys, dyngrad; dyngrad.lgamma(dyngrad.ones(1)); print('scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
