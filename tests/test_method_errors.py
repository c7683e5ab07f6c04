"""Tensor methods given arguments of the wrong kind, against PyTorch: for every method of the
registry that PyTorch's Tensor has, three probes (a string, an int and a string, a dict);
where PyTorch raises TypeError, dyngrad raises TypeError too, and never
returns ``NotImplemented`` (Python's operator protocol) or lets a NumPy or Python error out.
The list of methods comes from the registry."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from dyngrad.ops import OPS  # noqa: E402

PROBES = [("a",), (1, "a"), ({},)]
METHODS = sorted({n for k, i in OPS.items()
                  for n in ((k,) if i["method"] else ()) + i["methods"]
                  if not n.startswith("_") and hasattr(torch.Tensor, n)})

# (method, probe) pairs where dyngrad still differs, by cause (strict: a pair that comes to
# match fails here and leaves the list)
KNOWN = {
    # a bool parameter given a string: PyTorch's parser refuses it, dyngrad reads it as true
    **{(m, 1): "a string taken as a bool" for m in (
        "argmax", "argmin", "argsort", "copy_", "logsumexp", "max", "median", "min", "mode",
        "multinomial", "nanmedian", "sort")},
    ("contiguous", 0): "memory_format is not checked",
    # the op's own check of the argument's value comes first: RuntimeError, not TypeError
    **{(m, k): "checked by value, not by kind" for m, ks in {
        "copy_": (0,), "expand": (0, 1, 2), "gather": (1,), "index_select": (1,),
        "masked_fill": (1,), "masked_fill_": (1,), "permute": (0, 2), "rot90": (1,),
        "scatter": (1,), "scatter_": (1,), "split_with_sizes": (2,)}.items() for k in ks},
}


def _outcome(mod, name, args):
    x = mod.ones(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return getattr(x, name)(*args)
        except Exception as e:  # noqa: BLE001 - compared with PyTorch's
            return e


def _cases():
    for name in METHODS:
        for k, args in enumerate(PROBES):
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name, k])] \
                if (name, k) in KNOWN else []
            yield pytest.param(name, args, marks=marks, id=f"{name}-{k}")


@pytest.mark.parametrize("name,args", list(_cases()))
def test_wrong_kind_of_argument(name, args):
    want = _outcome(torch, name, args)
    got = _outcome(dyngrad, name, args)
    assert got is not NotImplemented
    if isinstance(want, TypeError):
        assert isinstance(got, TypeError), (got, want)
        assert not any(s in str(got) for s in _INTERNAL), got


# words of errors raised inside NumPy or Python rather than by an argument check
_INTERNAL = ("ufunc", "numpy", "ndarray", "object has no attribute", "invalid literal",
             "not supported between instances", "object is not", "unhashable",
             "NotImplementedType")
