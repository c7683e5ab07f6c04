"""NumPy's parameter names (``axis``, ``keepdims``, ``x`` / ``a`` / ``x1``, ``x2``) as PyTorch's
native functions and Tensor methods take them, compared with torch over the registry's ops."""
import inspect

import numpy as np
import pytest
import torch

import dyngrad
import dyngrad.nn.functional as DF
from dyngrad import _npnames
from dyngrad._arg_table import REQUIRED, SIGNATURES
from dyngrad.ops import OPS

_TABLE = set(REQUIRED) | set(SIGNATURES)


def _params(lib, name, method):
    """PyTorch's parameter names of ``name`` as dyngrad's function declares them."""
    f = getattr(dyngrad.Tensor, name) if method else getattr(dyngrad, name)
    f = inspect.unwrap(f)
    ps = list(inspect.signature(f).parameters)
    return ps[1:] if method else ps


def _names(param, method):
    out = []
    for key, info in OPS.items():
        names = (((key,) if info["method"] else ()) + info["methods"]) if method else \
            ((key,) if info["function"] and not key.startswith("_") else ())
        for n in names:
            if n.startswith("_") or n in out:
                continue
            if not method and (n not in _TABLE or not hasattr(torch, n)):
                continue
            if method and not hasattr(torch.Tensor, n):
                continue
            try:
                if param in _params(dyngrad, n, method):
                    out.append(n)
            except (TypeError, ValueError):
                pass
    return sorted(out)


def _values(lib):
    x = lib.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]])
    return {
        "input": x, "other": lib.tensor([[2.0, 1.0, -3.0], [0.5, 4.0, 2.0]]),
        "dim": 1, "index": lib.tensor([[0], [2]]), "tensors": [x, x], "src": x + 1,
        "chunks": 1, "k": 1, "sizes": (3, 1), "split_size": 1, "split_size_or_sections": 1,
        "value": 0.5, "values": x, "mask": x > 0, "indices": lib.tensor([0, 2]),
        "sections": 1, "indices_or_sections": 1, "size": 1, "step": 1, "shifts": 1,
        "source": x + 1, "dim0": 0, "dim1": 1, "p": 2.0, "maxnorm": 1.0, "q": 0.5,
        "dtype": None,
    }


def _call(lib, name, method, rename):
    """``lib.<name>`` (or the method) called with its required parameters (and ``dim``),
    ``rename`` mapping PyTorch's names to the keyword to pass them as."""
    vals = _values(lib)
    f = inspect.unwrap(getattr(dyngrad.Tensor, name) if method else getattr(dyngrad, name))
    sig = inspect.signature(f)
    ps = list(sig.parameters.values())
    if method:
        ps = ps[1:]
    args, kw = [], {}
    for p in ps:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        needed = p.default is p.empty or p.name in rename or p.name == "dim"
        if not needed:
            continue
        if p.name not in vals:
            return None
        v = vals[p.name]
        if p.name in rename:
            kw[rename[p.name]] = v
        elif kw or p.kind is p.KEYWORD_ONLY:
            kw[p.name] = v
        else:
            args.append(v)
    if method:
        return lambda: getattr(vals["input"], name)(*args, **kw)
    return lambda: getattr(lib, name)(*args, **kw)


def _outcome(thunk):
    try:
        r = thunk()
    except Exception as e:  # noqa: BLE001
        return type(e)
    return r


def _same(name, method, rename):
    ref = _call(torch, name, method, {k: k for k in rename})
    if ref is None:
        pytest.skip("no standard call")
    base = _outcome(ref)
    if isinstance(base, type):
        pytest.skip(f"torch refuses the plain call: {base.__name__}")
    t = _outcome(_call(torch, name, method, rename))
    d = _outcome(_call(dyngrad, name, method, rename))
    if isinstance(t, type) or isinstance(d, type):
        assert isinstance(t, type) and isinstance(d, type), (t, d)
        assert issubclass(d, t) or issubclass(t, d), (t, d)
        return
    # the same result as dyngrad's call with PyTorch's names (which other tests compare with
    # torch; a decomposition's signs may differ from torch's)
    t = _outcome(_call(dyngrad, name, method, {k: k for k in rename}))
    tl = t if isinstance(t, (tuple, list)) else (t,)
    dl = d if isinstance(d, (tuple, list)) else (d,)
    assert len(tl) == len(dl)
    for a, b in zip(tl, dl):
        if isinstance(a, dyngrad.Tensor):
            np.testing.assert_array_equal(b.detach().numpy(), a.detach().numpy())
        else:
            assert a == b


# (PyTorch's parameter the ops are chosen by, Tensor method?, the names to call with)
_KINDS = [
    ("dim", False, {"dim": "axis"}),
    ("dim", True, {"dim": "axis"}),
    ("keepdim", False, {"dim": "axis", "keepdim": "keepdims"}),
    ("keepdim", True, {"keepdim": "keepdims"}),
    ("input", False, {"input": "x"}),
    ("input", False, {"input": "a"}),
    ("input", False, {"input": "x1"}),
    ("other", False, {"input": "x1", "other": "x2"}),
    ("other", True, {"other": "x2"}),
]
_CASES = [pytest.param(n, m, r, id=f"{'Tensor.' if m else ''}{n}-{'-'.join(r.values())}")
          for p, m, r in _KINDS for n in _names(p, m)]


@pytest.mark.parametrize("name,method,rename", _CASES)
def test_numpy_names(name, method, rename):
    """Every op whose PyTorch counterpart has the parameter, called with NumPy's name: the
    result of the call with PyTorch's name, or torch's exception type."""
    _same(name, method, rename)


def test_examples():
    for lib in (torch, dyngrad):
        x = lib.arange(6.0).reshape(2, 3)
        assert lib.max(x, axis=1).values.tolist() == [2.0, 5.0]
        assert x.argmax(axis=1).tolist() == [2, 2]
        assert lib.cumsum(x, axis=1).tolist() == [[0, 1, 3], [3, 7, 12]]
        assert lib.softmax(x, axis=1).shape == (2, 3)
        assert x.unsqueeze(axis=0).shape == (1, 2, 3)
        assert lib.stack([x, x], axis=0).shape == (2, 2, 3)
        assert x[None].squeeze(axis=0).shape == (2, 3)
        assert lib.argsort(x, axis=1).tolist() == [[0, 1, 2], [0, 1, 2]]
        assert x.std(axis=0, keepdims=True).shape == (1, 3)
        assert lib.add(x=x, other=x).tolist() == (2 * x).tolist()
        assert x.add(x2=x).tolist() == (2 * x).tolist()


def _message(thunk):
    with pytest.raises(TypeError) as e:
        thunk()
    return str(e.value)


def test_python_level_functions_refuse():
    """``F.softmax`` is Python code in PyTorch: no NumPy names."""
    import torch.nn.functional as F
    assert _message(lambda: DF.softmax(dyngrad.ones(2, 3), axis=1)) == \
        _message(lambda: F.softmax(torch.ones(2, 3), axis=1))
    assert _message(lambda: dyngrad.ones(2, 3).split(1, axis=0)) == \
        _message(lambda: torch.ones(2, 3).split(1, axis=0)).replace("Tensor.", "")


@pytest.mark.parametrize("call", [
    lambda L, x: L.cumsum(x, dim=1, axis=1),
    lambda L, x: L.softmax(x, dim=1, axis=1),
    lambda L, x: x.unsqueeze(dim=0, axis=0),
    lambda L, x: x.argmax(dim=1, axis=1),
    lambda L, x: x.std(1, keepdim=True, keepdims=True),
    lambda L, x: L.add(x, x=x, other=x),
    lambda L, x: L.add(input=x, x=x, other=x),
    lambda L, x: x.add(x, x2=x),
    lambda L, x: L.argsort(x, dim=1, axis=1),
])
def test_both_names(call):
    """The PyTorch name given as well as NumPy's: PyTorch's TypeError."""
    _message(lambda: call(torch, torch.ones(2, 3)))
    _message(lambda: call(dyngrad, dyngrad.ones(2, 3)))


def test_methods_native_as_in_pytorch():
    """The methods that take NumPy's names are the ones native in PyTorch."""
    wrapped, missed = [], []
    fns = {info["fn"] for info in OPS.values()}
    for n, v in vars(dyngrad.Tensor).items():
        if n.startswith("_") or not inspect.isfunction(v):
            continue
        native = type(getattr(torch.Tensor, n, None)).__name__ == "method_descriptor"
        if getattr(v, "__wrapped__", None) is not None and \
                v.__code__.co_filename.startswith("<numpy names"):
            if not native:
                wrapped.append(n)
        elif native and v in fns:
            ps = list(inspect.signature(v).parameters)[1:]
            if any(t in ps and a not in ps for a, t in _npnames.ALIASES.items()
                   if t != "input"):
                missed.append(n)
    assert wrapped == [] and missed == []
