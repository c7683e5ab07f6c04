"""Every registered op that PyTorch also has, called with arguments of the wrong kind (a
string, None or a dict for the tensor; a string for its second argument): the same exception
type as PyTorch.  The list of ops comes from the registry."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from dyngrad.ops import OPS  # noqa: E402

NAMES = sorted(n for n in OPS if not n.startswith("_") and not n.endswith("_")
               and hasattr(torch, n) and hasattr(dyngrad, n))
CASES = {"str": lambda L: ("abc",), "none": lambda L: (None,), "dict": lambda L: ({},),
         "str_second": lambda L: (L.ones(2, 2), "x")}
# (op, case) -> why dyngrad's exception type differs from PyTorch's
DELIBERATE = {
    # PyTorch's norm reads .layout of its argument before checking it (an AttributeError);
    # dyngrad raises the TypeError naming the argument
    ("norm", "str"): "", ("norm", "none"): "", ("norm", "dict"): "",
}
KNOWN = {("permute", "str_second"): "RuntimeError where PyTorch raises TypeError (ops/views.py)"}


def _type(L, name, case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(L, name)(*CASES[case](L))
        except Exception as e:  # noqa: BLE001 - compared with PyTorch's
            return type(e).__name__
    return None


@pytest.mark.parametrize("name,case", [
    pytest.param(n, c, marks=[pytest.mark.xfail(strict=True, reason=KNOWN[(n, c)])]
                 if (n, c) in KNOWN else [])
    for n in NAMES for c in CASES if (n, c) not in DELIBERATE])
def test_exception_type_as_torch(name, case):
    assert _type(dyngrad, name, case) == _type(torch, name, case)
