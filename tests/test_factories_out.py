"""Factories with ``out=`` and without a size, against PyTorch: the values land in ``out``
(resized when its shape differs, strides kept when it does not), ``out``'s dtype is used unless
``dtype`` contradicts it, its version counter moves, and the errors are PyTorch's."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _outcome(L, f):
    """What ``f(L)`` gives, comparable across libraries: (shape, dtype, strides, version,
    requires_grad, values unless random) of ``out``, or the error type and first line."""
    try:
        out, random = f(L)
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return type(e).__name__, str(e).split("\n")[0]
    v = out._version
    return (tuple(out.shape), str(out.dtype), out.stride(), v if isinstance(v, int) else v[0],
            out.requires_grad, None if random else out.detach().tolist())


CASES = {
    "zeros_resized": lambda L: (L.zeros(2, out=L.empty(3)), False),
    "zeros_2d_from_empty": lambda L: (L.zeros(2, 2, out=L.empty(0)), False),
    "ones_out_dtype": lambda L: (L.ones(2, out=L.empty(2, dtype=L.long)), False),
    "ones_dtype_mismatch": lambda L: (L.ones(2, out=L.empty(2, dtype=L.long), dtype=L.float32),
                                      False),
    "randn_integer_out": lambda L: (L.randn(2, out=L.empty(2, dtype=L.long)), True),
    "rand_integer_out": lambda L: (L.rand(2, out=L.empty(2, dtype=L.long)), True),
    "ones_requires_grad": lambda L: (L.ones(2, out=L.empty(2), requires_grad=True), False),
    "out_requires_grad": lambda L: (L.ones(2, out=L.empty(2, requires_grad=True)), False),
    "arange": lambda L: (L.arange(3, out=L.empty(0)), False),
    "full_integer_out": lambda L: (L.full((2,), 3., out=L.empty(2, dtype=L.long)), False),
    "eye": lambda L: (L.eye(2, out=L.empty(0)), False),
    "linspace": lambda L: (L.linspace(0, 1, 3, out=L.empty(0)), False),
    "logspace": lambda L: (L.logspace(0, 1, 3, out=L.empty(0)), False),
    "randint": lambda L: (L.randint(5, (3,), out=L.empty(0, dtype=L.long)), True),
    "randint_float_out": lambda L: (L.randint(5, (3,), out=L.empty(0)), True),
    "normal": lambda L: (L.normal(0., 1., (2,), out=L.empty(0)), True),
    "randperm": lambda L: (L.randperm(3, out=L.empty(0, dtype=L.long)), True),
    "strided_out_kept": lambda L: (L.ones(2, out=L.empty(4)[::2]), False),
    "out_not_tensor": lambda L: (L.ones(2, out=[1, 2]), False),
    "randn_no_size": lambda L: (L.randn(), True),
    "rand_no_size": lambda L: (L.rand(), True),
    "zeros_no_size": lambda L: (L.zeros(), False),
    "ones_no_size": lambda L: (L.ones(), False),
    "empty_no_size": lambda L: (L.empty(), True),
    "zeros_empty_tuple": lambda L: (L.zeros(()), False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_factory_matches_torch(name):
    assert _outcome(dyngrad, CASES[name]) == _outcome(torch, CASES[name])


def test_out_is_returned_and_written_in_place():
    out = dyngrad.empty(2, 3)
    keep = out._data
    r = dyngrad.ones(2, 3, out=out)
    assert r is out and out._data is keep and keep.sum() == 6


def test_out_under_no_grad_accepts_a_leaf_requiring_grad():
    for L in (torch, dyngrad):
        leaf = L.empty(2, requires_grad=True)
        with L.no_grad():
            L.ones(2, out=leaf)
        assert leaf.detach().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("name", ["rand_like", "randn_like", "randint_like"])
def test_like_factories_use_the_generator(name):
    x = dyngrad.zeros(4)
    extra = (10,) if name == "randint_like" else ()
    draws = []
    for _ in range(2):
        g = dyngrad.Generator().manual_seed(7)
        draws.append(getattr(dyngrad, name)(x, *extra, generator=g).tolist())
    assert draws[0] == draws[1]
    with pytest.raises(TypeError):
        getattr(dyngrad, name)(x, *extra, not_an_argument=1)
