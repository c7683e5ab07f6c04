"""The elementwise ops of ``ops/unary.py`` and ``ops/special.py`` are each one
``unary`` declaration (src/dyngrad/ops/_spec.py): the registry says so, and what the
declaration states -- complex refusal, integer promotion, what is saved, aliases, the
in-place form, derivatives of every order, batching -- matches PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad
from dyngrad.ops import OPS, special as S, unary as U
from tests.call_outcome import error_of
from dyngrad.ops._spec import apply_batched, defop, unary

torch = pytest.importorskip("torch")

# torch name -> registry key of the op declared in unary / special
DECLARED = {
    "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "arcsinh": "arcsinh",
    "arccosh": "arccosh", "arctanh": "arctanh", "deg2rad": "deg2rad", "rad2deg": "rad2deg",
    "angle": "angle", "lgamma": "lgamma", "digamma": "digamma", "erfinv": "erfinv", "i0": "i0",
    "sinc": "sinc", "special.i0e": "_special_i0e", "special.i1": "_special_i1",
    "special.i1e": "_special_i1e", "special.erfcx": "_special_erfcx",
    "special.ndtri": "_special_ndtri", "special.log_ndtr": "_special_log_ndtr",
    "special.entr": "_special_entr",
}
# a point inside each op's domain
POINT = {"acosh": 1.7, "arccosh": 1.7, "special.ndtri": 0.3, "special.entr": 0.4}


def _get(lib, name):
    for part in name.split("."):
        lib = getattr(lib, part)
    return lib


def test_no_op_of_these_modules_is_defined_outside_the_spec():
    for name, info in OPS.items():
        if info["module"] == "unary" and not name.endswith("_"):
            # a declaration, or a composite of declared ops (positive, square)
            assert info.get("spec") is not None or info.get("composite"), name
    for key in DECLARED.values():
        assert OPS[key].get("spec") is not None, key
    # the older mechanisms are gone
    assert not hasattr(U, "_define") and not hasattr(S, "_uop") and not hasattr(S, "_node")
    assert not hasattr(U, "_unary")


def test_torch_special_only_ops_are_registered_privately():
    for name, key in DECLARED.items():
        if key.startswith("_"):
            assert not hasattr(dyngrad, key[1:]) and not hasattr(dyngrad.Tensor, key[1:])
            assert _get(dyngrad, name).__wrapped__ is OPS[key]["fn"]
            assert OPS[key]["spec"].name == key[1:]


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_node_saved_values_and_dtypes_as_torch(name):
    v = POINT.get(name, 0.6)
    got, exp = [], []
    for lib, out in ((dyngrad, got), (torch, exp)):
        x = lib.tensor([v, v / 2], dtype=lib.float64, requires_grad=True)
        fn = _get(lib, name)(x).grad_fn
        saved = sorted(a for a in dir(fn) if a.startswith("_saved_"))
        out.append((type(fn).__name__, saved,
                    [getattr(fn, a).detach().numpy().tolist() for a in saved]))
        for dt in (lib.int64, lib.bool, lib.float32):
            out.append(str(_get(lib, name)(lib.tensor([1, 0], dtype=dt)).dtype))
    assert got[0][:2] == exp[0][:2]
    np.testing.assert_allclose(got[0][2], exp[0][2], rtol=1e-13)
    assert got[1:] == exp[1:]


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_complex_input_as_torch(name):
    got = error_of(lambda: _get(dyngrad, name)(dyngrad.tensor([0.5 + 0.25j])))
    exp = error_of(lambda: _get(torch, name)(torch.tensor([0.5 + 0.25j])))
    assert got == exp


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_third_derivative_as_torch(name):
    v = POINT.get(name, 0.6)
    res = []
    for lib in (dyngrad, torch):
        x = lib.tensor([v, v / 2], dtype=lib.float64, requires_grad=True)
        y = _get(lib, name)(x).sum()
        out = []
        for _ in range(3):
            if not y.requires_grad:  # a constant derivative: the chain ends, as in PyTorch
                out.append(None)
                break
            (y,) = lib.autograd.grad(y, x, create_graph=True)
            out.append(y.detach().numpy().copy())
            y = y.sum()
        res.append(out)
    assert [a is None for a in res[0]] == [b is None for b in res[1]]
    for a, b in zip(*res):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_batching_rule_is_the_op_on_the_stacked_batch(name):
    x = np.random.RandomState(0).uniform(0.1, 0.9, (3, 2, 4)) + (1 if "cosh" in name else 0)
    got = apply_batched(DECLARED[name], [x], {})
    exp = torch.func.vmap(_get(torch, name))(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, exp, rtol=1e-13)
    np.testing.assert_allclose(dyngrad.func.vmap(_get(dyngrad, name))(dyngrad.tensor(x)).numpy(),
                               exp, rtol=1e-13)


def test_second_backward_through_a_node_that_keeps_no_tensor_runs_as_torch():
    for lib in (dyngrad, torch):
        for name in ("deg2rad", "rad2deg", "floor"):
            x = lib.tensor([1.5, 2.0], requires_grad=True)
            s = getattr(x, name)().sum()
            s.backward()
            s.backward()  # nothing was freed
        x = lib.tensor([1.5, 2.0], requires_grad=True)
        s = x.asinh().sum()
        s.backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            s.backward()


@pytest.mark.parametrize("name", ["asinh_", "acosh_", "atanh_", "arcsinh_", "arccosh_",
                                  "arctanh_"])
def test_inplace_form_without_derivative_as_torch(name):
    res = []
    for lib in (dyngrad, torch):
        x = lib.tensor([1.3, 1.6], dtype=lib.float64, requires_grad=True)
        y = x * (1 if "cosh" in name else 0.5)
        v = y._version
        out = getattr(y, name)()
        assert out is y and y._version == v + 1
        res.append((type(y.grad_fn).__name__, error_of(lambda: y.sum().backward()),
                    y.detach().numpy()))
    assert res[0][:2] == res[1][:2]
    np.testing.assert_allclose(res[0][2], res[1][2], rtol=1e-14)


def test_spec_refuses_complex_in_the_general_path_too():
    spec = defop("_scaled_test", node="ScaledTestBackward0", complex_kernel="scaled_cpu",
                 promote="float", function=False, method=False)(lambda self, k: self * k)
    try:
        assert spec.fn(dyngrad.tensor([1, 2]), 2.0).dtype == dyngrad.float32
        with pytest.raises(NotImplementedError,
                           match="\"scaled_cpu\" not implemented for 'ComplexFloat'"):
            spec.fn(dyngrad.tensor([1j]), 2.0)
    finally:
        del OPS["_scaled_test"]


def test_aliases_share_the_declaration():
    spec = unary("_twice_test", lambda d: 2 * d, lambda g, x, y: 2 * g, module=__name__,
                 saved=(), aliases=("_double_test",), real_only=True)
    try:
        assert OPS["_double_test"]["fn"] is OPS["_twice_test"]["fn"] is spec.fn
        assert OPS["_double_test"]["spec"] is spec
        x = dyngrad.tensor([1.0, 2.0], requires_grad=True)
        assert type(OPS["_double_test"]["fn"](x).grad_fn).__name__ == "TwiceTestBackward0"
        with pytest.raises(RuntimeError, match="_twice_test is not supported for complex"):
            spec.fn(dyngrad.tensor([1j]))
    finally:
        for k in ("_twice_test", "_double_test"):
            del OPS[k]


def test_recording_waits_for_the_backward_declaration():
    spec = defop("_cube_test", node="CubeTestBackward0", saved=("self",), elementwise=True,
                 function=False, method=False)(lambda self: self ** 3)
    try:
        x = dyngrad.tensor([1.0, 2.0], requires_grad=True)
        assert spec.fn(x.detach()).tolist() == [1.0, 8.0]  # nothing to record
        with pytest.raises(RuntimeError, match="the derivative for '_cube_test' is not"):
            spec.fn(x)
        spec.backward(lambda ctx, g: (3 * g * ctx.self ** 2,))
        spec.fn(x).sum().backward()
        assert x.grad.tolist() == [3.0, 12.0]
    finally:
        del OPS["_cube_test"]


def test_python_abs_of_a_tensor_is_torch_abs():
    """``abs(t)`` (Python's builtin) is ``t.abs()``: AbsBackward0 and its gradient, as PyTorch."""
    out = []
    for lib in (torch, dyngrad):
        x = lib.tensor([-1.5, 2.0, 0.0], requires_grad=True)
        y = abs(x)
        y.sum().backward()
        out.append((y.detach().numpy(), type(y.grad_fn).__name__, x.grad.numpy(),
                    abs(lib.tensor([-3, 4])).numpy()))
    for a, b in zip(*out):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
