"""The same op-table callable with PyTorch: a row's function rebuilt with its module globals
(``torch``/``F``/``linalg``, tensor constants, helper functions of the tests) mapped to
PyTorch's, so one row drives both libraries."""
from __future__ import annotations

import re
import types

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

import dyngrad  # noqa: E402
import dyngrad.nn.functional as DF  # noqa: E402

_MODULES = {id(dyngrad): torch, id(DF): TF, id(dyngrad.linalg): torch.linalg,
            id(dyngrad.nn): torch.nn}
_NAMESPACES = [(dyngrad, torch), (DF, TF), (dyngrad.linalg, torch.linalg)]


class NoTwin(Exception):
    """A row callable that has no PyTorch counterpart."""


def _names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


def _twin_value(v, memo):
    if id(v) in memo:
        return memo[id(v)]
    if isinstance(v, types.ModuleType):
        return _MODULES.get(id(v), v)
    if isinstance(v, dyngrad.Tensor):
        r = torch.from_numpy(v.detach().numpy().copy())
        memo[id(v)] = r
        return r
    if isinstance(v, (list, tuple)) and any(isinstance(x, dyngrad.Tensor) for x in v):
        return type(v)(_twin_value(x, memo) for x in v)
    if callable(v) and not isinstance(v, type):
        mod = getattr(v, "__module__", None) or ""
        if mod.startswith("dyngrad"):
            for dg, tt in _NAMESPACES:
                name = getattr(v, "__name__", None)
                if name and getattr(dg, name, None) is v:
                    if not hasattr(tt, name):
                        raise NoTwin(f"{dg.__name__}.{name}")
                    return getattr(tt, name)
            raise NoTwin(repr(v))
        if isinstance(v, types.FunctionType) and mod.startswith("tests"):
            return _twin_function(v, memo)
    return v


def _twin_function(fn, memo):
    g = dict(fn.__globals__)
    # cells filled after the function is memoised, so a closure that refers back to it works
    cells = tuple(types.CellType() for _ in fn.__closure__ or ()) or None
    new = types.FunctionType(fn.__code__, g, fn.__name__, None, cells)
    memo[id(fn)] = new
    for name in _names(fn.__code__):
        if name in fn.__globals__:
            g[name] = _twin_value(fn.__globals__[name], memo)
    if fn.__defaults__:
        new.__defaults__ = tuple(_twin_value(d, memo) for d in fn.__defaults__)
    if fn.__kwdefaults__:
        new.__kwdefaults__ = {k: _twin_value(d, memo) for k, d in fn.__kwdefaults__.items()}
    for cell, c in zip(cells or (), fn.__closure__ or ()):
        cell.cell_contents = _twin_value(c.cell_contents, memo)
    return new


def twin(fn):
    """``fn`` with PyTorch in place of dyngrad (raises NoTwin when PyTorch lacks a part)."""
    return _twin_value(fn, {})


def run_snippet(lib, code: str):
    """Run a code snippet with ``torch`` bound to ``lib`` (dyngrad or PyTorch) and ``np`` to
    NumPy: ``("ok", the value it left in ``out``)`` or ``("err", the exception)``."""
    import textwrap

    import numpy as np
    ns = {"torch": lib, "np": np}
    try:
        exec(textwrap.dedent(code), ns)
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return "err", e
    return "ok", ns.get("out")


ADDR = re.compile(r" at 0x[0-9a-f]+")  # an object address, blanked in printed output


def run_program(src: str, lib, name: str) -> tuple[str, dict]:
    """Run the program ``src`` as module ``name`` with ``torch`` bound to ``lib`` (``import
    torch`` inside it resolving to dyngrad too when ``lib`` is dyngrad): what it printed
    (object addresses blanked) and its namespace."""
    import contextlib
    import io
    import sys
    import textwrap
    import warnings
    from dyngrad._script import install_aliases, uninstall_aliases
    mod = types.ModuleType(name)
    mod.__dict__.update(torch=lib)
    buf = io.StringIO()
    sys.modules[name] = mod  # so that pickle finds the program's classes and functions
    if lib is dyngrad:
        install_aliases()
    try:
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(textwrap.dedent(src), f"<{name}>", "exec"), mod.__dict__)
    finally:
        del sys.modules[name]
        if lib is dyngrad:
            uninstall_aliases()
    return ADDR.sub(" at 0x?", buf.getvalue()), mod.__dict__


def same_program_output(src: str, name: str) -> tuple[str, dict, dict]:
    """Run ``src`` on PyTorch and on dyngrad and check they print the same: dyngrad's output
    and both namespaces."""
    t_out, t_ns = run_program(src, torch, name)
    d_out, d_ns = run_program(src, dyngrad, name)
    assert d_out == t_out
    return d_out, t_ns, d_ns


def plain(v):
    """A snippet's result in comparable form: a tensor as ("tensor", dtype name, shape,
    values), a dtype as its name, sequences and other iterables item by item."""
    if hasattr(v, "detach") and hasattr(v, "shape"):
        return ("tensor", str(v.dtype).replace("torch.", "").replace("dyngrad.", ""),
                tuple(v.shape), v.detach().numpy().copy())
    if type(v).__name__ == "dtype":
        return str(v).replace("torch.", "").replace("dyngrad.", "")
    if isinstance(v, (list, tuple)) or \
            hasattr(v, "__iter__") and not isinstance(v, (str, bytes, dict)):
        return [plain(x) for x in v]
    return v


def assert_same(expected, got):
    """``plain`` results of PyTorch (``expected``) and dyngrad agree: tensors in dtype, shape
    and values (to float32 rounding), everything else exactly."""
    import numpy as np
    if isinstance(expected, list):
        assert isinstance(got, list) and len(expected) == len(got), (expected, got)
        for x, y in zip(expected, got):
            assert_same(x, y)
    elif isinstance(expected, tuple) and expected and expected[0] == "tensor":
        assert isinstance(got, tuple) and got[0] == "tensor", (expected, got)
        assert expected[1:3] == got[1:3], f"dtype/shape {got[1:3]} != torch's {expected[1:3]}"
        np.testing.assert_allclose(got[3], expected[3], rtol=1e-5, atol=1e-6)
    else:
        assert expected == got, (expected, got)
