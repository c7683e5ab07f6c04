"""logical_and, logical_or and logical_xor are each one ``defop`` declaration of two tensor
inputs without a derivative (src/dyngrad/ops/_spec.py): the registry says so, and values,
broadcasting, dtypes, argument errors, autograd (no node), ``out=``, the in-place forms and
batching match PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad
from dyngrad.ops import OPS, comparison as E
from tests.call_outcome import outcome_of
from dyngrad.ops._spec import apply_batched, defop

torch = pytest.importorskip("torch")

NAMES = ["logical_and", "logical_or", "logical_xor"]
DTYPES = ["float16", "float32", "float64", "int8", "int64", "uint8", "bool", "complex64"]
NAN = float("nan")


def _values(dt):
    if dt == "bool":
        return [True, False, True]
    if dt.startswith("complex"):
        return [0j, 1j, complex(NAN, 0)]
    if dt.startswith("float"):
        return [0.0, NAN, -0.0]
    return [0, 1, 2]


def test_each_is_declared_without_a_derivative():
    for name in NAMES:
        info = OPS[name]
        spec = info["spec"]
        assert spec is not None and spec.name == name and spec.inputs == ("self", "other")
        assert info["fn"] is spec.fn is getattr(E, name)
        assert info["module"] == "comparison" and info["function"] and info["method"]
        assert not spec.differentiable and spec.node_cls is None and info["nodes"] == ()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("a", DTYPES)
@pytest.mark.parametrize("b", DTYPES)
def test_values_and_dtype_as_torch(name, a, b):
    def call(lib):
        return getattr(lib, name)(lib.tensor(_values(a), dtype=getattr(lib, a)),
                                  lib.tensor(_values(b)[::-1], dtype=getattr(lib, b)))
    assert outcome_of(dyngrad, call) == outcome_of(torch, call)


@pytest.mark.parametrize("name", NAMES)
def test_broadcasting_scalars_and_argument_errors_as_torch(name):
    calls = [
        lambda lib: getattr(lib.tensor([1.0, 0.0, 2.0]), name)(lib.tensor([[1], [0]])),
        lambda lib: getattr(lib, name)(lib.tensor([1.0, 0.0, 2.0]), lib.tensor(0)),
        lambda lib: getattr(lib, name)(lib.tensor(1.0), lib.tensor(0)),
        lambda lib: getattr(lib, name)(lib.zeros(0, 3), lib.ones(3)),
        lambda lib: getattr(lib, name)(lib.tensor([1.0, 0.0, 2.0]), lib.ones(2)),
        lambda lib: getattr(lib, name)(lib.tensor([1.0, 0.0]), 1),
        lambda lib: getattr(lib, name)(1, lib.tensor([1.0, 0.0])),
        lambda lib: getattr(lib, name)(lib.tensor([1.0, 0.0]), True),
        lambda lib: getattr(lib, name)(lib.tensor([1.0, 0.0])),
        lambda lib: getattr(lib, name)(),
        lambda lib: getattr(lib, name)(other=lib.tensor([1.0])),
        lambda lib: getattr(lib, name)(input=lib.tensor([1.0, 0.0]), other=lib.tensor([1, 1])),
        lambda lib: getattr(lib, name)(lib.tensor([1.0, 0.0]), other=lib.tensor([0, 1])),
        lambda lib: getattr(lib, name)(lib.ones(2), lib.ones(2), lib.ones(2)),
    ]
    for call in calls:
        assert outcome_of(dyngrad, call) == outcome_of(torch, call)


@pytest.mark.parametrize("name", NAMES)
def test_no_node_as_torch(name):
    res = []
    for lib in (dyngrad, torch):
        x = lib.tensor([1.0, 0.0], requires_grad=True)
        y = lib.tensor([1.0, 1.0], requires_grad=True) * 2
        r = getattr(lib, name)(x, y)
        res.append((r.requires_grad, r.grad_fn, r.tolist()))
        with lib.autograd.forward_ad.dual_level():
            d = lib.autograd.forward_ad.make_dual(lib.tensor([1.0, 0.0]), lib.ones(2))
            r = getattr(lib, name)(d, lib.tensor([0.0, 0.0]))
            res.append((r.tolist(), lib.autograd.forward_ad.unpack_dual(r).tangent))
    assert res[:2] == res[2:]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("out_dt", ["bool", "float32", "int64"])
def test_out_as_torch(name, out_dt):
    def call(lib):
        o = lib.empty(3, dtype=getattr(lib, out_dt))
        v = o._version
        r = getattr(lib, name)(lib.tensor([1.0, 0.0, 2.0]), lib.tensor([0, 1, 1]), out=o)
        return r is o, o._version - v, str(o.dtype).split(".")[-1], o.tolist()

    assert outcome_of(dyngrad, call) == outcome_of(torch, call)


@pytest.mark.parametrize("name", NAMES)
def test_out_resized_requiring_grad_and_aliasing_as_torch(name):
    def resized(lib):
        o = lib.empty(1, dtype=lib.bool)
        getattr(lib, name)(lib.tensor([1.0, 0.0, 2.0]), lib.tensor([[1], [0]]), out=o)
        return tuple(o.shape), o.tolist()

    def with_grad(lib):
        x = lib.tensor([1.0, 0.0], requires_grad=True)
        return getattr(lib, name)(x, lib.ones(2), out=lib.empty(2, dtype=lib.bool)).tolist()

    def into_input(lib):
        x = lib.tensor([1.0, 0.0, 2.0])
        return getattr(lib, name)(x, lib.tensor([1, 1, 0]), out=x).tolist()

    for call in (resized, with_grad, into_input):
        assert outcome_of(dyngrad, call) == outcome_of(torch, call)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dt", ["float32", "int64", "bool"])
def test_inplace_as_torch(name, dt):
    def call(lib):
        x = lib.tensor([1, 0, 2], dtype=getattr(lib, dt))
        v = x._version
        r = getattr(x, name + "_")(lib.tensor([0, 0, 1]))
        return r is x, x._version - v, str(x.dtype).split(".")[-1], x.tolist()

    def broadcast_into_smaller(lib):
        return getattr(lib.tensor([1.0, 0.0, 2.0]), name + "_")(lib.tensor([[1.0], [0.0]]))

    for c in (call, broadcast_into_smaller):
        assert outcome_of(dyngrad, c) == outcome_of(torch, c)


@pytest.mark.parametrize("name", NAMES)
def test_batching_as_torch(name):
    x = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 1.0]])
    y = np.array([1.0, 0.0, 0.0])
    np.testing.assert_array_equal(apply_batched(name, [x, x[::-1]], {}),
                                  getattr(np, name)(x, x[::-1]))
    for dims, args in (((0, 0), (x, x[::-1])), ((0, None), (x, y)), ((1, None), (x, y[:2])),
                       ((None, 0), (y, x))):
        got = dyngrad.func.vmap(getattr(dyngrad, name), in_dims=dims)(
            *(dyngrad.tensor(a) for a in args))
        exp = torch.func.vmap(getattr(torch, name), in_dims=dims)(
            *(torch.from_numpy(np.ascontiguousarray(a)) for a in args))
        assert got.dtype == dyngrad.bool
        np.testing.assert_array_equal(got.numpy(), exp.numpy())


def test_defop_takes_tensor_inputs_by_keyword():
    spec = defop("_both_test", node=None, inputs=("self", "other"), differentiable=False,
                 elementwise=True, function=False, method=False)(
                     lambda self, other: (self > 0) & (other > 0))
    try:
        a, b = dyngrad.tensor([1.0, -1.0]), dyngrad.tensor([1.0, 1.0])
        assert spec.fn(input=a, other=b).tolist() == [True, False]
        assert spec.fn(a, other=b).tolist() == [True, False]
        with pytest.raises(TypeError, match='missing 1 required positional arguments: "other"'):
            spec.fn(a)
        with pytest.raises(TypeError, match="takes 2 positional arguments but 3 were given"):
            spec.fn(a, b, b)
    finally:
        del OPS["_both_test"]
