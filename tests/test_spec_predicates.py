"""The bool-valued predicates of ``ops/comparison.py`` (isnan, isinf, isfinite,
isposinf, isneginf, isreal, logical_not, signbit) are each one ``unary`` declaration without
a derivative (src/dyngrad/ops/_spec.py): the registry says so, and values, result dtype,
integer/bool/complex inputs (with PyTorch's errors), autograd (no node, the result never
requires grad), ``out=``, the in-place form and batching match PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad
from dyngrad.ops import OPS, comparison as E
from tests.call_outcome import error_of, outcome_of
from dyngrad.ops._spec import apply_batched, defop, unary

torch = pytest.importorskip("torch")

NAMES = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "isreal", "logical_not",
         "signbit"]
DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128"]
INF, NAN = float("inf"), float("nan")


def _values(dt):
    if dt == "bool":
        return [True, False, True]
    if dt.startswith("complex"):
        return [0j, 1 + 0j, 1j, complex(INF, 0), complex(0, NAN), complex(-INF, 1), -0.0 + 0j]
    if dt.startswith("float"):
        return [0.0, -0.0, 1.5, -2.0, NAN, INF, -INF]
    return [0, 1, 3, 5] if dt == "uint8" else [0, 1, -3, 5]


def test_each_is_declared_without_a_derivative():
    for name in NAMES:
        info = OPS[name]
        spec = info["spec"]
        assert spec is not None and spec.name == name
        assert info["fn"] is spec.fn is getattr(E, name)
        assert info["module"] == "comparison" and info["function"] and info["method"]
        assert not spec.differentiable and spec.node_cls is None and info["nodes"] == ()
        m = getattr(dyngrad.Tensor, name)  # the method: the op, through its argument guard
        assert getattr(m, "__wrapped__", m) is spec.fn
    for name, info in OPS.items():  # no predicate of this module is hand-written any more
        if info["module"] == "comparison" and name.startswith(("is", "signbit")):
            assert info.get("spec") is not None, name


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dt", DTYPES)
def test_values_dtype_and_errors_as_torch(name, dt):
    v = _values(dt)
    for make in (lambda lib: getattr(lib, name)(lib.tensor(v, dtype=getattr(lib, dt))),
                 lambda lib: getattr(lib.tensor(v, dtype=getattr(lib, dt)), name)(),
                 lambda lib: getattr(lib, name)(lib.tensor(v[-1], dtype=getattr(lib, dt))),
                 lambda lib: getattr(lib, name)(lib.tensor(v, dtype=getattr(lib, dt))[::2])):
        assert outcome_of(dyngrad, make) == outcome_of(torch, make)


@pytest.mark.parametrize("name", NAMES)
def test_no_node_and_no_grad_as_torch(name):
    res = []
    for lib in (dyngrad, torch):
        x = lib.tensor([1.0, NAN, -0.0, INF], requires_grad=True)
        out = [getattr(lib, name)(x), getattr(x * 2, name)(), getattr(lib, name)(x.sum())]
        res.append([(r.requires_grad, r.grad_fn, r.dtype == lib.bool, r.tolist()) for r in out])
        # used in a differentiable expression, it is a constant
        y = lib.tensor([1.0, 0.0, -0.0], requires_grad=True)
        (g,) = lib.autograd.grad((y * getattr(lib, name)(y)).sum(), y)
        res.append(g.tolist())
        with lib.autograd.forward_ad.dual_level():
            d = lib.autograd.forward_ad.make_dual(lib.tensor([1.0, 0.0]), lib.ones(2))
            r = getattr(lib, name)(d)
            res.append((r.tolist(), lib.autograd.forward_ad.unpack_dual(r).tangent))
    assert res[:3] == res[3:]


@pytest.mark.parametrize("name", NAMES)
def test_argument_errors_as_torch(name):
    for call in (lambda lib: getattr(lib, name)([1.0]), lambda lib: getattr(lib, name)(1.0),
                 lambda lib: getattr(lib, name)(lib.tensor([1.0]), 2),
                 lambda lib: getattr(lib, name)(input=lib.tensor([1.0, NAN]))):
        assert outcome_of(dyngrad, call) == outcome_of(torch, call)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("out_dt", ["bool", "float32", "int64", "uint8"])
@pytest.mark.parametrize("in_dt", ["float32", "int64", "complex64"])
def test_out_as_torch(name, out_dt, in_dt):
    def call(lib):
        o = lib.empty(2, dtype=getattr(lib, out_dt))
        v = o._version
        r = getattr(lib, name)(lib.tensor([1, 0], dtype=getattr(lib, in_dt)), out=o)
        return r is o, o._version - v, str(o.dtype).split(".")[-1], o.tolist()

    assert error_of(lambda: call(dyngrad)) == error_of(lambda: call(torch))
    if error_of(lambda: call(torch)) is None:
        assert call(dyngrad) == call(torch)


@pytest.mark.parametrize("name", NAMES)
def test_out_resized_requiring_grad_and_aliasing_as_torch(name):
    def resized(lib):
        o = lib.empty(5, dtype=lib.bool)
        r = getattr(lib, name)(lib.tensor([1.0, -0.0]), out=o)
        return r is o, tuple(o.shape), o.tolist()

    def with_grad(lib):
        x = lib.tensor([1.0, -0.0], requires_grad=True)
        return getattr(lib, name)(x, out=lib.empty(2, dtype=lib.bool)).tolist()

    def into_input(lib):
        x = lib.tensor([1.0, 0.0])
        return getattr(lib, name)(x, out=x).tolist()

    for call in (resized, with_grad, into_input):
        got, exp = error_of(lambda: call(dyngrad)), error_of(lambda: call(torch))
        assert got == exp
        if exp is None:
            assert call(dyngrad) == call(torch)


def test_only_logical_not_has_an_inplace_form_as_torch():
    for name in NAMES:
        assert hasattr(dyngrad.Tensor, name + "_") == hasattr(torch.Tensor, name + "_"), name


@pytest.mark.parametrize("dt", ["float32", "int64", "bool", "complex64", "uint8"])
def test_logical_not_inplace_as_torch(dt):
    res = []
    for lib in (dyngrad, torch):
        x = lib.tensor([1, 0, 2], dtype=getattr(lib, dt))
        v = x._version
        r = x.logical_not_()
        res.append((r is x, x._version - v, str(x.dtype).split(".")[-1], x.tolist()))
        base = lib.tensor([1, 0, 0], dtype=getattr(lib, dt))
        base[1:].logical_not_()
        res.append(base.tolist())
    assert res[:2] == res[2:]


def test_logical_not_inplace_keeps_the_history_as_torch():
    res = []
    for lib in (dyngrad, torch):
        x = lib.tensor([1.0, 0.0], requires_grad=True)
        y = x * 1
        y.logical_not_()
        y.sum().backward()
        res.append((y.requires_grad, type(y.grad_fn).__name__, y.tolist(), x.grad.tolist()))
    assert res[0] == res[1]


@pytest.mark.parametrize("name", NAMES)
def test_batching_as_torch(name):
    x = np.array([[[1.0, NAN, -0.0], [INF, 2.0, -INF]], [[0.0, -1.5, NAN], [-INF, 3.0, 0.5]]])
    exp = torch.func.vmap(getattr(torch, name))(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(apply_batched(name, [x], {}), exp)
    for dims in (0, 1, 2):
        got = dyngrad.func.vmap(getattr(dyngrad, name), in_dims=dims)(dyngrad.tensor(x))
        exp = torch.func.vmap(getattr(torch, name), in_dims=dims)(torch.from_numpy(x))
        assert got.dtype == dyngrad.bool
        np.testing.assert_array_equal(got.numpy(), exp.numpy())
    xi = np.array([[1, 0, 3], [0, -2, 0]])
    got = dyngrad.func.vmap(lambda t: getattr(t, name)())(dyngrad.tensor(xi))
    exp = torch.func.vmap(lambda t: getattr(t, name)())(torch.from_numpy(xi))
    np.testing.assert_array_equal(got.numpy(), exp.numpy())


def test_unary_without_derivative_and_complex_error():
    spec = unary("_positive_test", lambda d: d > 0, None, module=__name__, promote=None,
                 complex_error=(ValueError, "_positive_test takes no complex"), function=False,
                 method=False)
    try:
        assert OPS["_positive_test"]["spec"] is spec and OPS["_positive_test"]["nodes"] == ()
        x = dyngrad.tensor([1.0, -2.0], requires_grad=True)
        r = spec.fn(x)
        assert r.tolist() == [True, False] and not r.requires_grad and r.grad_fn is None
        assert spec.fn(dyngrad.tensor([3, 0])).tolist() == [True, False]  # ints as they are
        with pytest.raises(ValueError, match="_positive_test takes no complex"):
            spec.fn(dyngrad.tensor([1j]))
    finally:
        del OPS["_positive_test"]


def test_defop_without_derivative_in_the_general_path():
    spec = defop("_above_test", node=None, differentiable=False, elementwise=True,
                 function=False, method=False)(lambda self, k: self > k)
    try:
        x = dyngrad.tensor([1.0, 3.0], requires_grad=True)
        r = spec.fn(x, 2.0)
        assert r.tolist() == [False, True] and not r.requires_grad and r.grad_fn is None
        assert OPS["_above_test"]["nodes"] == ()
    finally:
        del OPS["_above_test"]


def _isclose_calls():
    a = [1.0, 2.0, NAN, INF]
    b = [1.0, 2.1, NAN, INF]
    return [
        lambda lib: lib.isclose(lib.tensor(a), lib.tensor(b)),
        lambda lib: lib.isclose(lib.tensor(a), lib.tensor(b), equal_nan=True),
        lambda lib: lib.tensor(a).isclose(lib.tensor(b), 0.1, 0.1),
        lambda lib: lib.isclose(lib.tensor(a), lib.tensor(b), 1e-5, 1e-8, True),
        lambda lib: lib.isclose(input=lib.tensor(a), other=lib.tensor(b)),
        lambda lib: lib.isclose(lib.tensor([[1.0], [2.0]]), lib.tensor([1.0, 2.05]), atol=0.1),
        lambda lib: lib.isclose(lib.tensor([1, 2]), lib.tensor([2, 2]), atol=1.5),
        lambda lib: lib.isclose(lib.tensor([True, False]), lib.tensor([True, True])),
        lambda lib: lib.isclose(lib.tensor([1j, 2]), lib.tensor([1j, 3])),
        lambda lib: lib.isclose(lib.tensor(a, requires_grad=True), lib.tensor(b)).requires_grad,
        # PyTorch's errors, in its order
        lambda lib: lib.isclose(lib.tensor(a), 1.0),
        lambda lib: lib.isclose(1.0, lib.tensor(a)),
        lambda lib: lib.isclose(lib.tensor(a)),
        lambda lib: lib.isclose(lib.tensor(a), lib.tensor(b), 1e-5, 1e-8, True, 5),
        lambda lib: lib.isclose(lib.tensor(a), lib.tensor(b, dtype=lib.float64), rtol=-1),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(3), rtol=-1),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(3), atol=-0.5e-7),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(3)),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(2), rtol="x"),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(2), equal_nan=None),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(2), foo=1),
        lambda lib: lib.isclose(lib.ones(2), lib.ones(2), 0.1, rtol=0.1),
    ]


@pytest.mark.parametrize("i", range(len(_isclose_calls())))
def test_isclose_as_torch(i):
    call = _isclose_calls()[i]
    assert outcome_of(dyngrad, call) == outcome_of(torch, call)


def test_isclose_is_declared_and_batched_as_torch():
    spec = OPS["isclose"]["spec"]
    assert spec is not None and not spec.differentiable and OPS["isclose"]["fn"] is spec.fn
    x = np.array([[1.0, NAN, 2.0], [3.0, 4.0, INF]])
    y = np.array([[1.05, NAN, 2.5], [3.0, 4.2, INF]])
    exp = torch.func.vmap(lambda a, b: torch.isclose(a, b, atol=0.1, equal_nan=True))(
        torch.from_numpy(x), torch.from_numpy(y)).numpy()
    np.testing.assert_array_equal(
        apply_batched("isclose", [x, y], {"atol": 0.1, "equal_nan": True}), exp)
