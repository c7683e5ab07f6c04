"""Ops declared ``fp_safe`` skip quieting NumPy's floating-point error state on their hot
path: their kernel must never set a floating-point error, whatever the input (checked here on
every special value of every real and integer dtype the op takes; complex input is always
quieted), and no NumPy warning may leak from them."""
import warnings

import numpy as np
import pytest

import dyngrad
from dyngrad.ops import OPS

FP_SAFE = sorted(n for n, i in OPS.items()
                 if i.get("spec") is not None and getattr(i["spec"].forward, "fp_safe", False))
# the input alone (probed here on special values) / other arguments too (probed through
# their op-table rows, on special values in place of their floating inputs)
SAFE = [n for n in FP_SAFE if OPS[n]["spec"].forward.__code__.co_argcount == 1]
WITH_ARGS = [n for n in FP_SAFE if n not in SAFE]


def _specials(dt):
    dt = np.dtype(dt)
    if dt.kind in "iu":
        ii = np.iinfo(dt)
        return np.array([0, 1, ii.min, ii.max, ii.min + 1, ii.max - 1], dtype=dt)
    if dt.kind == "b":
        return np.array([False, True])
    fi = np.finfo(dt)  # of the real part for a complex dtype
    vals = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, fi.max, -fi.max, fi.tiny,
            fi.smallest_subnormal, -fi.smallest_subnormal, fi.eps]
    if dt.kind == "c":
        return np.array([complex(a, b) for a in vals for b in vals], dtype=dt)
    return np.array(vals, dtype=dt)


def test_the_hot_activations_are_fp_safe():
    assert {"tanh", "relu", "abs"} <= set(SAFE)


@pytest.mark.parametrize("name", SAFE)
@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "int8", "int64", "uint8",
                                "bool"])
def test_kernel_never_sets_a_floating_point_error(name, dt):
    spec = OPS[name]["spec"]
    x = _specials(dt)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dyngrad.tensor(x[:1]).__getattribute__(name)()
    except (RuntimeError, TypeError, NotImplementedError):
        pytest.skip(f"{name} refuses {dt}")
    with np.errstate(all="raise"):
        for v in x:  # one by one: a 0-d array takes NumPy's scalar loops
            spec.forward(np.array(v))
        spec.forward(x)


@pytest.mark.parametrize("name", SAFE)
def test_no_warning_leaks_even_when_numpy_raises(name):
    for dt in ("float32", "complex64"):
        _no_leak(name, dt)


def _no_leak(name, dt):
    x = dyngrad.tensor(_specials(dt), requires_grad=True)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        try:
            y = getattr(dyngrad, name)(x)
        except (RuntimeError, NotImplementedError):  # PyTorch's refusal of the dtype
            return
        if not y.is_complex() and y.requires_grad:
            y.sum().backward()
    if OPS[name]["spec"].elementwise:
        assert y.shape == x.shape


@pytest.mark.parametrize("name", WITH_ARGS)
def test_kernel_with_arguments_never_sets_a_floating_point_error(name):
    from tests.test_op_spec import _rows_of
    rows = _rows_of(name)
    assert rows, f"{name}: no op-table row to probe it with"
    for row in rows:
        for smp in row.samples:
            args = [dyngrad.tensor(np.resize(_specials("float64"), tuple(t.shape)))
                    if t.is_floating_point() else t
                    for t in smp.make(dyngrad, requires_grad=False)]
            with warnings.catch_warnings(), np.errstate(all="raise"):
                warnings.simplefilter("error")
                try:
                    row.fn(*args, *smp.extra, **smp.kwargs)
                except (RuntimeError, IndexError, TypeError, NotImplementedError):
                    continue  # an error row
