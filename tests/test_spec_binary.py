"""Elementwise ops of two tensors declared with ``defop`` (src/dyngrad/ops/_spec.py) against
PyTorch: result dtypes over the dtype pairs (integer, bool, float16, float64, complex, 0-d
against dimensioned), argument and dtype errors of the function and the method, broadcasting,
gradients cast back to each input's dtype and summed back to its shape, second derivatives,
saved values, the in-place form, and forward-mode tangents with broadcasting and mixed
dtypes."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
import dyngrad.autograd.forward_ad as fwAD  # noqa: E402
from dyngrad.ops import OPS  # noqa: E402

# name -> whether it has an in-place form
OPS2 = {
    "atan2": True, "hypot": True, "maximum": False, "minimum": False, "fmax": False,
    "fmin": False, "logaddexp": False, "logaddexp2": False, "nextafter": True, "ldexp": True,
    "fmod": True, "copysign": True, "remainder": True, "xlogy": True,
}
SCALAR_OPS = ["copysign", "fmod", "remainder", "xlogy"]  # with a number: Scalar overloads
NAMES = sorted(OPS2)
INTEGER_OPS = ["gcd", "lcm"]  # no derivative
DTYPES = ["int64", "int32", "bool", "float16", "float32", "float64", "complex64"]


def _outcome(fn):
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - the outcome compared is the exception
        return type(e).__name__, str(e).split("\n")[0]
    if isinstance(r, (tuple, list)):
        return tuple(_outcome(lambda v=v: v) for v in r)
    if hasattr(r, "dtype"):
        v = r.detach().numpy() if hasattr(r, "detach") else r
        return Val(str(r.dtype).replace("dyngrad.", "torch."), tuple(r.shape),
                   np.asarray(v, dtype=complex))
    return r


class Val:
    """A tensor's dtype, shape and values; equal to another within the dtype's precision."""

    loose = False  # a computation in float16 somewhere: float16's precision

    def __init__(self, dtype, shape, values):
        self.dtype, self.shape, self.values = dtype, shape, values

    def __eq__(self, other):
        if not isinstance(other, Val) or (self.dtype, self.shape) != (other.dtype, other.shape):
            return False
        tol = 3e-3 if "16" in self.dtype or Val.loose else 1e-5
        return bool(np.allclose(self.values, other.values, rtol=tol, atol=tol, equal_nan=True))

    def __repr__(self):
        return f"Val({self.dtype}, {self.shape}, {np.round(self.values, 4).tolist()})"


def _make(L, dt, shape, seed):
    rs = np.random.RandomState(seed)
    v = rs.uniform(0.5, 3.0, size=shape)
    if dt == "bool":
        v = v > 1.5
    elif dt.startswith("int"):
        v = np.round(v)
    elif dt.startswith("complex"):
        v = v + 1j * rs.uniform(0.5, 2.0, size=shape)
    return L.tensor(v.tolist() if shape else v.item(), dtype=getattr(L, dt))


def test_the_ops_are_declared():
    for n in NAMES + INTEGER_OPS:
        assert OPS[n].get("spec") is not None, n


@pytest.mark.parametrize("name", NAMES + INTEGER_OPS)
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_dtypes_as_torch(name, da, db):
    if {da, db} == {"float16", "complex64"}:
        pytest.skip("PyTorch gives complex32 (ComplexHalf), which dyngrad does not have")
    if name == "ldexp" and db in ("bool", "float16"):
        pytest.skip("PyTorch computes exp2 of the exponent in its own dtype (a bool one is "
                    "refused, a float16 one rounded) before promoting; dyngrad promotes first")
    for sa, sb in (((3,), (3,)), ((2, 3), ()), ((), (3,))):
        def call(L):
            return getattr(L, name)(_make(L, da, sa, 0), _make(L, db, sb, 1))
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch)), (sa, sb)


@pytest.mark.parametrize("name", NAMES + INTEGER_OPS)
def test_argument_and_shape_errors_as_torch(name):
    calls = [
        lambda L: getattr(L, name)(L.ones(3), 2.0),
        lambda L: getattr(L.ones(3), name)(2.0),
        lambda L: getattr(L, name)(2.0, L.ones(3)),
        lambda L: getattr(L, name)(L.ones(3), L.ones(2)),
        lambda L: getattr(L, name)(L.ones(3, dtype=L.int64), L.ones(2, dtype=L.int64)),
        lambda L: getattr(L.ones(2, 3), name)(L.ones(4, 1)),
        lambda L: getattr(L, name)(L.ones(3)),
        lambda L: getattr(L, name)(),
        lambda L: getattr(L, name)(input=L.ones(2), other=L.ones(2)),
        lambda L: getattr(L, name)(L.ones(2), other=L.ones(1)),
        lambda L: getattr(L, name)(L.ones(2), L.ones(2), L.ones(2)),
    ]
    for call in calls:
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch))


def _pair(L, name, dts=("float64", "float64"), shapes=((2, 3), (3,))):
    a = _make(L, dts[0], shapes[0], 2).requires_grad_()
    b = _make(L, dts[1], shapes[1], 3)
    if name == "nextafter":
        b = b * 0 + a.detach().flatten()[0]  # ties
        b = b.to(getattr(L, dts[1]))
    b.requires_grad_()
    return a, b


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dts", [("float64", "float64"), ("float32", "float64"),
                                 ("float64", "float16"), ("float32", "float32")])
@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((), (2, 1)), ((3,), ())])
def test_gradients_node_and_saved_values_as_torch(name, dts, shapes, monkeypatch):
    monkeypatch.setattr(Val, "loose", "float16" in dts)
    out = {}
    for L in (dyngrad, torch):
        a, b = _pair(L, name, dts, shapes)
        r = getattr(L, name)(a, b)
        fn = r.grad_fn
        names = sorted(n for n in dir(fn) if n.startswith("_saved_"))
        saved = [_outcome(lambda n=n: getattr(fn, n)) for n in names]
        (r * r).sum().backward()
        out[L] = (type(fn).__name__, names, saved, str(r.dtype)[-7:],
                  _outcome(lambda: a.grad), _outcome(lambda: b.grad),
                  [type(f).__name__ for f, _ in fn.next_functions])
    assert out[dyngrad] == out[torch]


@pytest.mark.parametrize("name", NAMES)
def test_one_input_requiring_grad_as_torch(name):
    out = {}
    for L in (dyngrad, torch):
        res = []
        for which in (0, 1):
            a, b = _pair(L, name)
            (a if which else b).requires_grad_(False)
            r = getattr(L, name)(a, b)
            fn = r.grad_fn
            res.append([type(fn).__name__, [f is None for f, _ in fn.next_functions],
                        [_outcome(lambda n=n: getattr(fn, n)) for n in sorted(dir(fn))
                         if n.startswith("_saved_")]])
            r.sum().backward()
            res.append(_outcome(lambda: (a if not which else b).grad))
        out[L] = res
    assert out[dyngrad] == out[torch]


@pytest.mark.parametrize("name", NAMES)
def test_second_derivatives_as_torch(name):
    out = {}
    for L in (dyngrad, torch):
        a, b = _pair(L, name)
        r = getattr(L, name)(a, b)
        ga, gb = L.autograd.grad((r * r).sum(), (a, b), create_graph=True)
        if not ga.requires_grad and not gb.requires_grad:
            out[L] = None
            continue
        s = (ga * ga).sum() + (gb * gb).sum() if gb.requires_grad else (ga * ga).sum()
        out[L] = [_outcome(lambda g=g: g) for g in L.autograd.grad(s, (a, b),
                                                                   allow_unused=True)]
    assert out[dyngrad] == out[torch]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dts", [("float64", "float64"), ("float32", "float64")])
def test_forward_mode_as_torch(name, dts):
    if name == "nextafter" and dts[0] != dts[1]:
        pytest.skip("PyTorch's tangent keeps input's dtype; dyngrad's forward mode gives every "
                    "tangent its output's dtype")
    shapes = ((2, 3), (3,))
    a, b = (_make(dyngrad, d, s, k) for d, s, k in zip(dts, shapes, (2, 3)))
    ta, tb = (_make(dyngrad, d, s, k) for d, s, k in zip(dts, shapes, (4, 5)))
    with fwAD.dual_level():
        r = getattr(dyngrad, name)(fwAD.make_dual(a, ta), fwAD.make_dual(b, tb))
        got = fwAD.unpack_dual(r).tangent
    T = [torch.from_numpy(v.numpy()) for v in (a, b, ta, tb)]
    _, exp = torch.func.jvp(getattr(torch, name), (T[0], T[1]), (T[2], T[3]))
    assert str(got.dtype)[-7:] == str(exp.dtype)[-7:]
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in NAMES if OPS2[n]])
def test_inplace_form_as_torch(name):
    out = {}
    for L in (dyngrad, torch):
        res = []
        a, b = _pair(L, name, ("float32", "float64"))
        x = a.detach().clone()
        v = x._version
        r = getattr(x, name + "_")(b.detach())
        res += [r is x, x._version - v, _outcome(lambda: x)]
        y = a * 1
        getattr(y, name + "_")(b)
        res += [type(y.grad_fn).__name__]
        y.sum().backward()
        res += [_outcome(lambda: a.grad), _outcome(lambda: b.grad)]
        res += [_outcome(lambda: getattr(a, name + "_")(b))]  # a leaf requiring grad
        res += [_outcome(lambda: getattr(L.ones(3, dtype=L.int64), name + "_")(
            L.ones(3)))]
        out[L] = res
    assert out[dyngrad] == out[torch]


@pytest.mark.parametrize("name", INTEGER_OPS)
def test_integer_ops_as_torch(name):
    calls = [
        lambda L: getattr(L, name)(L.tensor([4, -6, 0, 9]), L.tensor([6, 4, 0, -3])),
        lambda L: getattr(L, name)(L.tensor([[4], [6]], dtype=L.int16), L.tensor(10)),
        lambda L: getattr(L, name)(L.tensor([4, 6], dtype=L.uint8), L.tensor([6, 8],
                                                                             dtype=L.int8)),
        lambda L: getattr(L, name)(L.tensor([4, 6]), L.tensor(2.0)),
        lambda L: getattr(L, name + "_")(L.tensor([4, 6]), L.tensor([6, 9])),
        lambda L: getattr(L.tensor([4, 6], dtype=L.int32), name + "_")(L.tensor([6, 9])),
        lambda L: getattr(L, name)(L.tensor([4, 6]), L.tensor([6, 9, 1])),
    ]
    for call in calls:
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch))


def test_ldexp_integer_exponent_gradient_as_torch():
    # PyTorch's formula raises 2 to an integer exponent in integers: a negative one gives 0
    out = {}
    for L in (dyngrad, torch):
        x = L.ones(4, dtype=L.float64, requires_grad=True)
        e = L.tensor([1, -2, 0, 3])
        y = L.ldexp(x, e)
        g, = L.autograd.grad(y.sum(), x, create_graph=True)
        with fwAD.dual_level() if L is dyngrad else torch.autograd.forward_ad.dual_level():
            fw = fwAD if L is dyngrad else torch.autograd.forward_ad
            t = fw.unpack_dual(L.ldexp(fw.make_dual(x.detach(), L.ones(4, dtype=L.float64)),
                                       e)).tangent
        out[L] = [_outcome(lambda: y), _outcome(lambda: g), _outcome(lambda: t)]
    assert out[dyngrad] == out[torch]


@pytest.mark.parametrize("name", SCALAR_OPS)
@pytest.mark.parametrize("dt", DTYPES)
def test_scalar_overload_dtypes_and_errors_as_torch(name, dt):
    for v in (2, -1.5, True, 0, 1j, np.float32(0.5), np.float64(2.5), np.int64(3), "a", [1.0],
              None):
        if v == 1j and dt == "float16":
            continue  # PyTorch gives complex32 (ComplexHalf), which dyngrad does not have
        for call in (lambda L: getattr(L, name)(_make(L, dt, (3,), 0), v),
                     lambda L: getattr(_make(L, dt, (2, 1), 0), name)(v),
                     lambda L: getattr(L, name)(v, _make(L, dt, (3,), 0))):
            assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch)), v


@pytest.mark.parametrize("name", SCALAR_OPS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_scalar_overload_gradients_as_torch(name, dt):
    out = {}
    for L in (dyngrad, torch):
        res = []
        for v in (2, -1.5):
            a = _make(L, dt, (2, 3), 2).requires_grad_()
            r = getattr(L, name)(a, v)
            fn = r.grad_fn
            res.append([type(fn).__name__, len(fn.next_functions),
                        [_outcome(lambda n=n: getattr(fn, n)) for n in sorted(dir(fn))
                         if n.startswith("_saved_")]])
            g, = L.autograd.grad((r * r).sum(), a, create_graph=True)
            res.append(_outcome(lambda: g))
            if g.requires_grad:
                res.append(_outcome(lambda: L.autograd.grad(g.sum(), a)[0]))
            x = a.detach().clone()
            getattr(x, name + "_")(v)
            res += [x._version, _outcome(lambda: x)]
        out[L] = res
    assert out[dyngrad] == out[torch]


@pytest.mark.parametrize("name", SCALAR_OPS)
def test_scalar_overload_forward_mode_as_torch(name):
    a = _make(dyngrad, "float64", (2, 3), 2)
    t = _make(dyngrad, "float64", (2, 3), 4)
    with fwAD.dual_level():
        got = fwAD.unpack_dual(getattr(dyngrad, name)(fwAD.make_dual(a, t), -1.5)).tangent
    _, exp = torch.func.jvp(lambda x: getattr(torch, name)(x, -1.5),
                            (torch.from_numpy(a.numpy()),), (torch.from_numpy(t.numpy()),))
    np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-7)


@pytest.mark.parametrize("name", ["remainder", "xlogy"])
def test_scalar_first_overload_as_torch(name):
    out = {}
    for L in (dyngrad, torch):
        res = []
        for v in (2, 1.5, 0.0):
            b = _make(L, "float64", (2, 3), 2).requires_grad_()
            r = getattr(L, name)(v, b)
            fn = r.grad_fn
            res.append([type(fn).__name__, fn.name(), len(fn.next_functions),
                        [_outcome(lambda n=n: getattr(fn, n)) for n in sorted(dir(fn))
                         if n.startswith("_saved_")], _outcome(lambda: r)])
            res.append(_outcome(lambda: L.autograd.grad((r * r).sum(), b)))
        out[L] = res
    assert out[dyngrad] == out[torch]


def test_mod_operators_as_torch():
    calls = [lambda L: L.ones(2) % "a", lambda L: L.ones(2) % [1.0], lambda L: [2.0] % L.ones(2),
             lambda L: 2 % L.tensor([1.5, -2.0]), lambda L: L.tensor([1.5, -2.0]) % 0.75,
             lambda L: L.tensor([3, -7]) % L.tensor([2, 2]), lambda L: L.tensor([3]) % 0,
             lambda L: L.ones(2).remainder("a")]
    for call in calls:
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch))


SHIFTS = ["bitwise_left_shift", "bitwise_right_shift"]


@pytest.mark.parametrize("name", SHIFTS)
@pytest.mark.parametrize("da", DTYPES)
@pytest.mark.parametrize("db", DTYPES)
def test_shift_dtypes_as_torch(name, da, db):
    if {da, db} == {"float16", "complex64"}:
        pytest.skip("PyTorch gives complex32 (ComplexHalf), which dyngrad does not have")
    for sa, sb in (((3,), (3,)), ((2, 3), ()), ((), (3,))):
        def call(L):
            return getattr(L, name)(_make(L, da, sa, 0), _make(L, db, sb, 1))
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch)), (sa, sb)


@pytest.mark.parametrize("name", SHIFTS)
def test_shift_numbers_operators_and_errors_as_torch(name):
    op = "<<" if "left" in name else ">>"
    a = [5, -3, 0, 7]
    calls = [
        lambda L: getattr(L, name)(L.tensor(a), 2),
        lambda L: getattr(L, name)(L.tensor(a, dtype=L.int8), 70),
        lambda L: getattr(L, name)(L.tensor(a), -1),
        lambda L: getattr(L, name)(3, L.tensor([1, 2, 0])),
        lambda L: getattr(L, name)(L.tensor(a), 1.5),
        lambda L: getattr(L, name)(L.tensor([True, False]), 1),
        lambda L: getattr(L, name)(L.tensor([True, False]), True),
        lambda L: getattr(L, name)(2, 3),
        lambda L: getattr(L, name)(L.tensor(a), "x"),
        lambda L: getattr(L, name)(L.tensor(a)),
        lambda L: getattr(L.tensor(a), name)(np.int64(2)),
        lambda L: getattr(L.tensor(a), name)([1]),
        lambda L: eval(f"x {op} 2", {"x": L.tensor(a)}),
        lambda L: eval(f"2 {op} x", {"x": L.tensor([1, 2])}),
        lambda L: eval(f"x {op} y", {"x": L.tensor(a), "y": L.tensor([1, 0, 2, 3],
                                                                     dtype=L.int32)}),
        lambda L: eval(f"x {op} 'a'", {"x": L.tensor(a)}),
        lambda L: eval(f"x {op} 1.5", {"x": L.tensor(a)}),
    ]
    for call in calls:
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch))


@pytest.mark.parametrize("name", SHIFTS)
def test_shift_inplace_as_torch(name):
    op = "<<=" if "left" in name else ">>="
    out = {}
    for L in (dyngrad, torch):
        x = L.tensor([5, -3, 0, 7])
        getattr(x, name + "_")(L.tensor([1, 2, 3, 4]))
        getattr(x, name + "_")(1)
        ns = {"x": x}
        exec(f"x {op} 1", ns)
        out[L] = [_outcome(lambda: x), x._version, ns["x"] is x,
                  _outcome(lambda: getattr(L.tensor([1, 2], dtype=L.int8), name + "_")(
                      L.tensor([1, 2])))]
    assert out[dyngrad] == out[torch]


def test_floor_divide_as_torch():
    calls = [
        lambda L: L.floor_divide(L.tensor([7, -7, 3]), L.tensor([2, 2, -2])),
        lambda L: L.floor_divide(L.tensor([7.5, -7.0]), 2),
        lambda L: L.floor_divide(3, L.tensor([2, -2])),
        lambda L: L.floor_divide(L.tensor([3]), L.tensor([0])),
        lambda L: L.floor_divide(L.tensor([3.0]), L.tensor([0.0])),
        lambda L: L.floor_divide(L.tensor([True]), L.tensor([True])),
        lambda L: L.floor_divide(L.tensor([1 + 1j]), L.tensor([1.0])),
        lambda L: L.floor_divide(L.tensor([3], dtype=L.int8), 2.5),
        lambda L: L.floor_divide(L.ones(3), L.ones(2)),
        lambda L: L.floor_divide(L.ones(3), "a"),
        lambda L: L.ones(2) // "a",
        lambda L: L.tensor([7, 8]) // 3,
        lambda L: 7 // L.tensor([2, 3]),
    ]
    for call in calls:
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch))
    out = {}
    for L in (dyngrad, torch):
        res = []
        for f in (lambda x, y: L.floor_divide(x, y), lambda x, y: L.floor_divide(y, x),
                  lambda x, y: L.floor_divide(x, y.requires_grad_()), lambda x, y: x // 2,
                  lambda x, y: 2 // x, lambda x, y: (x * 1).floor_divide_(2),
                  lambda x, y: (x * 1).floor_divide_(y), lambda x, y: L.remainder(2.0, x)):
            x = L.rand(3, requires_grad=True)
            y = L.rand(3) + 1
            r = f(x, y)
            res.append([type(r.grad_fn).__name__, r.grad_fn.name(), r.requires_grad,
                        [(type(n).__name__ if n is not None else None, i)
                         for n, i in r.grad_fn.next_functions],
                        _outcome(lambda: r.sum().backward())])
        out[L] = res
    assert out[dyngrad] == out[torch]


# --- the comparisons (eq, ne, lt, le, gt, ge): no derivative, a bool result ----------------
CMP = ["eq", "ne", "lt", "le", "gt", "ge"]
CMP_DTYPES = ["float32", "float64", "float16", "int64", "int8", "uint8", "bool", "complex64"]
# numbers as PyTorch's Scalar takes them: wrapped into an integer dtype, beyond int64 read as
# uint64, beyond that an OverflowError; complex refused by the ordered comparisons
CMP_NUMBERS = [1, 1.5, True, -1, 300, -300, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63 - 1, 1j,
               float("nan"), 1e10]


def test_comparisons_are_declared():
    for name in CMP:
        spec = OPS[name]["spec"]
        assert spec is not None and not spec.differentiable and OPS[name]["fn"] is spec.fn


@pytest.mark.parametrize("name", CMP)
@pytest.mark.parametrize("da", CMP_DTYPES)
def test_comparison_dtypes_and_numbers_as_torch(name, da):
    for db in CMP_DTYPES:
        if {da, db} == {"float16", "complex64"}:
            continue  # a 0-d complex64 with float16 is ComplexHalf in PyTorch (not in dyngrad)
        for call in (lambda L: getattr(L, name)(_make(L, da, (3,), 0), _make(L, db, (3,), 1)),
                     lambda L: getattr(_make(L, da, (2, 3), 0), name)(_make(L, db, (), 1)),
                     lambda L: getattr(L, name)(_make(L, da, (), 0), _make(L, db, (3,), 1))):
            assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch)), db
    for v in CMP_NUMBERS:
        if da == "float16" and isinstance(v, complex):
            continue  # PyTorch names ComplexHalf, which dyngrad has no dtype for
        for call in (lambda L: getattr(L, name)(_make(L, da, (3,), 0), v),
                     lambda L: getattr(_make(L, da, (3,), 0), name)(v)):
            assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch)), v


@pytest.mark.parametrize("name", CMP)
def test_comparison_errors_operators_and_autograd_as_torch(name):
    sym = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}[name]
    for call in (lambda L: getattr(L, name)(2, L.ones(2)),
                 lambda L: getattr(L, name)(L.ones(2), "x"),
                 lambda L: getattr(L, name)(L.ones(2), L.ones(3)),
                 lambda L: getattr(L, name)(L.ones(2)),
                 lambda L: getattr(L, name)(input=L.ones(2), other=L.zeros(2)),
                 lambda L: eval(f"a {sym} 'x'", {"a": L.ones(2)}),
                 lambda L: eval(f"a {sym} None", {"a": L.ones(2)}),
                 lambda L: eval(f"1 {sym} a", {"a": L.tensor([0.5, 1.0, 2.0])}),
                 lambda L: eval(f"a {sym} b", {"a": L.tensor([0.5, 1.0]), "b": L.ones(2, 1)})):
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch))
    res = []
    for L in (dyngrad, torch):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        r = getattr(x * 2, name)(x)
        res.append((r.requires_grad, r.grad_fn is None, str(r.dtype).split(".")[-1]))
    assert res[0] == res[1]


# --- bitwise and/or/xor/not: integer or bool tensors, no derivative ------------------------
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]
BIT_DTYPES = ["int64", "int32", "int8", "uint8", "bool", "float32", "complex64"]


@pytest.mark.parametrize("name", BITWISE)
@pytest.mark.parametrize("da", BIT_DTYPES)
def test_bitwise_dtypes_numbers_and_errors_as_torch(name, da):
    assert OPS[name]["spec"] is not None and not OPS[name]["spec"].differentiable
    for db in BIT_DTYPES:
        for call in (lambda L: getattr(L, name)(_make(L, da, (3,), 0), _make(L, db, (3,), 1)),
                     lambda L: getattr(_make(L, da, (2, 3), 0), name)(_make(L, db, (), 1)),
                     lambda L: getattr(L, name)(_make(L, da, (2,), 0), _make(L, db, (3,), 1))):
            assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch)), db
    for v in (1, True, 1.5, -1, 300, 2 ** 64, 1j):
        for call in (lambda L: getattr(L, name)(_make(L, da, (3,), 0), v),
                     lambda L: getattr(L, name)(v, _make(L, da, (3,), 0)),
                     lambda L: getattr(_make(L, da, (3,), 0), name)(v)):
            assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch)), v


@pytest.mark.parametrize("da", BIT_DTYPES)
def test_bitwise_not_and_operators_as_torch(da):
    for call in (lambda L: L.bitwise_not(_make(L, da, (3,), 0)),
                 lambda L: _make(L, da, (3,), 0).bitwise_not(),
                 lambda L: ~_make(L, da, (3,), 0),
                 lambda L: _make(L, da, (3,), 0) & 3, lambda L: 3 | _make(L, da, (3,), 0),
                 lambda L: _make(L, da, (3,), 0) ^ _make(L, "bool", (3,), 1),
                 lambda L: _make(L, da, (3,), 0) & "x", lambda L: None | _make(L, da, (3,), 0),
                 lambda L: L.bitwise_not(1), lambda L: L.bitwise_not(_make(L, da, (3,), 0), 1)):
        assert _outcome(lambda: call(dyngrad)) == _outcome(lambda: call(torch))
