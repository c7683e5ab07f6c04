"""sum, mean and prod with ``keepdim`` but no ``dim`` match no overload of PyTorch's parser:
the same TypeError as PyTorch's (the function form's message word for word), never a result."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

CALLS = [
    ("sum", {"keepdim": True}), ("sum", {"keepdim": False}),
    ("sum", {"keepdim": True, "dtype": "float64"}), ("mean", {"keepdim": True}),
    ("mean", {"keepdim": False}), ("prod", {"keepdim": True}),
    ("prod", {"keepdim": False, "dtype": "float64"}),
]


def _call(mod, name, kwargs, method):
    x = mod.ones(2, 3, requires_grad=True)
    kw = {k: getattr(mod, v) if k == "dtype" else v for k, v in kwargs.items()}
    try:
        r = getattr(x, name)(**kw) if method else getattr(mod, name)(x, **kw)
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e), str(e)
    return None, tuple(r.shape)


@pytest.mark.parametrize("method", [False, True], ids=["function", "method"])
@pytest.mark.parametrize("name,kwargs", CALLS)
def test_keepdim_without_dim_as_torch(name, kwargs, method):
    want = _call(torch, name, kwargs, method)
    got = _call(dyngrad, name, kwargs, method)
    assert got[0] is want[0] is TypeError
    if not method:  # a method's listing shows PyTorch's method signatures
        assert got[1] == want[1]


@pytest.mark.parametrize("name", ["sum", "mean", "prod"])
def test_dim_given_keeps_working(name):
    x = dyngrad.ones(2, 3, requires_grad=True)
    assert getattr(x, name)(1, keepdim=True).shape == (2, 1)
    assert getattr(x, name)().shape == ()
    if name != "prod":
        assert getattr(dyngrad, name)(x, None, True).shape == (1, 1)
