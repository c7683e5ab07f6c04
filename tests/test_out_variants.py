"""``out=`` against PyTorch: every function PyTorch gives ``out=`` (src/dyngrad/_out_table.py,
generated from PyTorch) that dyngrad implements is called with an ``out`` in both libraries
and must agree: the returned object is ``out``, its values, dtype, shape, kept strides, version
counter, the resize warning, the cast, autograd and overlap errors; methods and functions
without ``out=`` keep refusing it."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import dyngrad
from dyngrad._out_table import NAMES, OUT
from tests.optable import all_rows

torch = pytest.importorskip("torch")

NS_D = {"torch": dyngrad, "linalg": dyngrad.linalg, "special": dyngrad.special}
NS_T = {"torch": torch, "linalg": torch.linalg, "special": torch.special}

# factories and samplers have their own out= rules (tests/test_factories_out.py) or random values
_SKIP = {"bernoulli", "normal", "multinomial", "poisson", "rand", "randn", "randint", "randperm",
         "zeros", "ones", "empty", "full", "arange", "range", "linspace", "logspace", "eye",
         "tril_indices", "triu_indices"}


def _ver(t):
    """A tensor's version counter (dyngrad keeps it in a one-element list)."""
    v = t._version
    return v if isinstance(v, int) else v[0]


def _dy(ns, name):
    """dyngrad's function ``ns.name``, or None when dyngrad lacks it."""
    try:
        return getattr(NS_D[ns], name)
    except AttributeError:
        return None


def _cases():
    rows = {}
    for row in all_rows():
        rows.setdefault(id(row.fn), []).append(row)
    cases = []
    for ns, names in NAMES.items():
        if ns not in NS_D:
            continue
        for name in sorted(names):
            f = _dy(ns, name)
            if f is None or name in _SKIP or not callable(f):
                continue
            cases.append(pytest.param(ns, name, [s for r in rows.get(id(f), []) for s in r.samples],
                                      id=f"{ns}.{name}"))
    return cases


_M = np.array([[4.5, 1.0, 0.5], [1.0, 3.5, 0.25], [0.5, 0.25, 5.0]])  # symmetric positive definite


def _generic():
    """Argument lists tried when the op table has no sample: 'T' marks a 3x3 tensor, 'V' a
    vector, 'B' a batch of two 3x3 matrices, 'I' integers, 'J' and 'K' indices, 'M' a mask."""
    return [("T",), ("T", "T"), ("T", "T", "T"), (["T", "T"],), ("T", 1), ("T", 0), ("T", 2, 1),
            ("T", "T", 1), ("V", "V"), ("T", "V"), ("T", "T", "V"), ("V", "T", "V"), ("B", "B"),
            ("B", "B", "B"), ("T", "B", "B"), ("V",), ("I",), ("I", "I"), ("T", 0, "J"),
            ("T", 0, "K"), ("T", "K"), ("T", "M"), (1, "T"), ("T", 2, 0, 1.0), ("T", 0, 0, 2),
            ("T", 0, "J", "T")]


_SHAPE = {"V": lambda i: _M[0] + i, "B": lambda i: np.stack([_M + i, _M.T * 0.5 + i]),
          "T": lambda i: _M + i, "I": lambda i: np.array([[4, 1, 6], [3, 5, 2], [7, 0, 9]]) + i,
          "J": lambda i: np.array([[0, 1, 2], [2, 1, 0], [1, 1, 0]]),
          "K": lambda i: np.array([0, 2]), "M": lambda i: _M > 1.0}


def _build(lib, spec, arrays, grad=False):
    """``spec`` with each 'T' replaced by a tensor of ``lib`` made from the next array."""
    it = iter(arrays)

    def one(x):
        if isinstance(x, list):
            return [one(v) for v in x]
        if isinstance(x, str) and x in _SHAPE:
            t = lib.tensor(next(it))
            return t.requires_grad_() if grad and t.is_floating_point() else t
        return x
    return [one(x) for x in spec]


def _arg_sets(samples):
    """(spec, arrays, kwargs) candidates: the op table's samples first, then generic ones."""
    for s in samples:
        rs = np.random.RandomState(0)
        arrays = []
        for i, shp in enumerate(s.shapes):
            if i in s.int_args:
                arrays.append(rs.randint(0, s.int_high or 2, size=shp).astype(np.int64))
            else:
                arrays.append(rs.uniform(*s.domain, size=shp))
        yield ("T",) * len(s.shapes) + tuple(s.extra), arrays, dict(s.kwargs)
    for spec in _generic():
        flat = [y for x in spec for y in (x if isinstance(x, list) else [x])]
        yield spec, [_SHAPE[x](i) for i, x in enumerate(y for y in flat if y in _SHAPE)], {}


def _call(f, lib, spec, arrays, kwargs, grad=False, **more):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f(*_build(lib, spec, arrays, grad), **kwargs, **more)
        except Exception as e:  # noqa: BLE001 - compared between the libraries
            r = e
    return r, [_msg(x) for x in w if "resized" in str(x.message)]


def _msg(w):
    """A warning's text without PyTorch's C++ source location."""
    return str(w.message).split(" (Triggered internally")[0]


def _outcome(r):
    """What a call gave, comparable across the libraries."""
    if isinstance(r, Exception):
        return ("error", type(r).__name__, str(r).split("\n")[0])
    rs = r if isinstance(r, tuple) else (r,)
    return ("ok", tuple((str(t.dtype).split(".")[-1], tuple(t.shape), tuple(t.stride()))
                        for t in rs))


def _values(r):
    rs = r if isinstance(r, tuple) else (r,)
    return [np.asarray(t.detach().numpy() if hasattr(t, "detach") else t) for t in rs]


def _find_args(ft, fd, samples):
    for spec, arrays, kwargs in _arg_sets(samples):
        rt, _ = _call(ft, torch, spec, arrays, kwargs)
        if isinstance(rt, Exception) or not (isinstance(rt, torch.Tensor) or (
                isinstance(rt, tuple) and rt and all(isinstance(t, torch.Tensor) for t in rt))):
            continue
        rd, _ = _call(fd, dyngrad, spec, arrays, kwargs)
        if isinstance(rd, Exception):
            continue
        plain = _values(rd)
        same = len(plain) == len(_values(rt)) and all(
            a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-8, equal_nan=True)
            for a, b in zip(plain, _values(rt)))
        return spec, arrays, kwargs, rt, None if same else plain
    return None


def _outs(lib, ref, make):
    """``out`` for a result like ``ref`` (a tensor or a tuple), each made by ``make(lib, t)``."""
    if isinstance(ref, tuple):
        return tuple(make(lib, t) for t in ref)
    return make(lib, ref)


def _dtype(lib, t):
    return getattr(lib, str(t.dtype).split(".")[-1])


def _same(rt, rd, ot, od, plain):
    """dyngrad's call with out (``rd`` into ``od``) as PyTorch's; the values are PyTorch's, or
    those dyngrad gives without out where they already differ (``plain``)."""
    assert _outcome(rd) == _outcome(rt)
    if isinstance(rt, Exception):
        return
    if isinstance(ot, tuple):
        assert isinstance(rd, tuple) and all(a is b for a, b in zip(rd, od))
        assert [_ver(o) for o in od] == [_ver(o) for o in ot]
    else:
        assert rd is od
        assert _ver(od) == _ver(ot)
    for a, b in zip(_values(rd), plain if plain is not None else _values(rt)):
        np.testing.assert_allclose(a, b.astype(a.dtype), rtol=1e-6, atol=1e-8, equal_nan=True)


# where dyngrad's out= still differs from PyTorch's, and how
KNOWN = {
    "torch.kthvalue": "PyTorch resizes a keepdim=False out to the kept-dim shape first, so its "
                      "resize warning names [n, 1]",
    "torch.mode": "as kthvalue: the resize warning names the kept-dim shape",
    "torch.matmul": "PyTorch's matmul with out= refuses batch dims that broadcast",
    "torch.nansum": "PyTorch's nansum has no complex out kernel (NotImplementedError)",
    "torch.nanmean": "as nansum: no complex out kernel",
    "torch.heaviside": "PyTorch's dtype error for a complex out is its complex-input message",
    "torch.narrow_copy": "PyTorch's narrow_copy copies into out's memory in C order whatever "
                         "out's strides",
}


def _cases_known():
    for p in _cases():
        ns, name = p.values[0], p.values[1]
        why = KNOWN.get(f"{ns}.{name}")
        yield pytest.param(*p.values, id=p.id, marks=pytest.mark.xfail(reason=why, strict=True)) \
            if why else p


@pytest.mark.parametrize("ns,name,samples", list(_cases_known()))
def test_out_matches_torch(ns, name, samples):
    ft, fd = getattr(NS_T[ns], name), _dy(ns, name)
    found = _find_args(ft, fd, samples)
    if found is None:
        pytest.skip("no argument list both libraries take")
    spec, arrays, kwargs, ref, plain = found

    def empty(lib, t):
        return lib.empty(0, dtype=_dtype(lib, t))

    def wrong_size(lib, t):
        return lib.zeros(7 if t.numel() != 7 else 5, dtype=_dtype(lib, t))

    def transposed(lib, t):
        shape = list(t.shape)
        if len(shape) < 2:
            return lib.zeros(shape, dtype=_dtype(lib, t))
        shape[-1], shape[-2] = shape[-2], shape[-1]
        return lib.zeros(shape, dtype=_dtype(lib, t)).transpose(-1, -2)

    def long(lib, t):
        return lib.zeros(tuple(t.shape), dtype=lib.int64)

    def wide(lib, t):
        wide = {"float32": lib.float64, "float64": lib.complex128}.get(str(t.dtype).split(".")[-1])
        return lib.zeros(tuple(t.shape), dtype=wide or _dtype(lib, t))

    for make in (empty, wrong_size, transposed, long, wide):
        ot, od = _outs(torch, ref, make), _outs(dyngrad, ref, make)
        rt, wt = _call(ft, torch, spec, arrays, kwargs, out=ot)
        rd, wd = _call(fd, dyngrad, spec, arrays, kwargs, out=od)
        _same(rt, rd, ot, od, plain if make.__name__ in ("empty", "wrong_size", "transposed")
              else None)
        assert wd == wt, make.__name__
    # the method of the same name refuses out=
    if ns == "torch" and spec and isinstance(spec[0], str) and spec[0] in _SHAPE and \
            hasattr(torch.Tensor, name):
        for lib in (torch, dyngrad):
            t, *rest = _build(lib, spec, arrays)
            o = _outs(lib, ref, empty)
            with pytest.raises(TypeError):
                getattr(t, name)(*rest, **kwargs, out=o)
            assert all(_ver(x) == 0 for x in (o if isinstance(o, tuple) else (o,)))
    # autograd: a differentiable input with grad mode on
    ot, od = _outs(torch, ref, empty), _outs(dyngrad, ref, empty)
    rt, _ = _call(ft, torch, spec, arrays, kwargs, grad=True, out=ot)
    rd, _ = _call(fd, dyngrad, spec, arrays, kwargs, grad=True, out=od)
    assert _outcome(rd)[:3:2] == _outcome(rt)[:3:2] if isinstance(rt, Exception) else \
        not isinstance(rd, Exception)


def test_out_that_requires_grad_is_refused_under_grad_mode_only():
    for lib in (torch, dyngrad):
        a, o = lib.ones(2), lib.zeros(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=r"^exp\(\): functions with out=\.\.\. arguments "
                                               r"don't support automatic differentiation"):
            lib.exp(a, out=o)
    for lib in (torch, dyngrad):
        a = lib.ones(2, requires_grad=True)
        o = lib.zeros(2)
        with lib.no_grad():
            assert lib.exp(a, out=o) is o
        assert _ver(o) == 1 and not o.requires_grad


@pytest.mark.parametrize("op", ["exp", "neg", "sin", "add", "mul", "cumsum"])
def test_overlap(op):
    def run(lib):
        base = lib.arange(1.0, 17.0)
        args = {"exp": (base[:4],), "neg": (base[:4],), "sin": (base[:4],),
                "add": (base[:4], base[8:12]), "mul": (base[:4], 2.0),
                "cumsum": (base[:4], 0)}[op]
        out = base[1:5].view(args[0].shape)
        try:
            getattr(lib, op)(*args, out=out)
        except RuntimeError as e:
            return str(e)
        return base.tolist()
    assert run(dyngrad) == run(torch)


@pytest.mark.parametrize("op", ["exp", "neg", "sin", "tanh", "sigmoid"])
def test_exact_alias_is_allowed(op):
    res = []
    for lib in (torch, dyngrad):
        a = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64)
        r = getattr(lib, op)(a, out=a)
        res.append((r is a, _ver(a), a.numpy().copy()))
    assert res[0][:2] == res[1][:2]
    np.testing.assert_allclose(res[1][2], res[0][2], rtol=1e-12)


def test_expanded_out_is_refused():
    msgs = []
    for lib in (torch, dyngrad):
        with pytest.raises(RuntimeError) as e:
            lib.exp(lib.ones(3), out=lib.zeros(1).expand(3))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_resize_warning_text():
    msgs = []
    for lib in (torch, dyngrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            o = lib.zeros(3)
            r = lib.exp(lib.zeros(2, 2), out=o)
        assert r is o and o.shape == (2, 2) and _ver(o) == 1
        msgs.append([(x.category, _msg(x)) for x in w])
    assert msgs[0] == msgs[1] and msgs[0]


def test_multi_output_returns_the_out_tuple():
    for lib in (torch, dyngrad):
        a = lib.tensor([[3.0, 1.0], [2.0, 5.0]])
        v, i = lib.empty(0), lib.empty(0, dtype=lib.int64)
        r = lib.sort(a, 1, out=(v, i))
        assert r[0] is v and r[1] is i and r.values is v and r.indices is i
        assert v.tolist() == [[1.0, 3.0], [2.0, 5.0]] and i.tolist() == [[1, 0], [0, 1]]
        m = lib.max(a, 1, out=(lib.empty(0), lib.empty(0, dtype=lib.int64)))
        assert m.values.tolist() == [3.0, 5.0] and m.indices.tolist() == [0, 1]


def test_wrong_out_type():
    msgs = []
    for lib in (torch, dyngrad):
        errs = []
        for f, out in ((lib.exp, 3), (lib.exp, (lib.empty(0),)), (lib.sort, lib.empty(0))):
            with pytest.raises(TypeError) as e:
                f(lib.ones(2), out=out)
            errs.append(str(e.value))
        msgs.append(errs)
    assert msgs[0][:2] == msgs[1][:2]
    assert "out" in msgs[1][2]


def test_methods_refuse_out():
    a = dyngrad.ones(2, 2)
    o = dyngrad.empty(0)
    checked = 0
    for name in sorted(NAMES["torch"]):
        m = getattr(a, name, None)
        if m is None or not callable(m) or not hasattr(torch.Tensor, name):
            continue
        with pytest.raises(TypeError):
            m(out=o)
        checked += 1
    assert checked > 100
    assert _ver(o) == 0


def test_functions_without_out_refuse_it():
    from dyngrad.ops import OPS
    a = dyngrad.ones(2, 2)
    checked = 0
    for name, info in sorted(OPS.items()):
        if not info["function"] or name.startswith("_") or name in NAMES["torch"] or \
                not callable(getattr(torch, name, None)) or not hasattr(dyngrad, name):
            continue
        o = dyngrad.empty(0)
        with pytest.raises(TypeError) as got:
            getattr(dyngrad, name)(a, out=o)
        with pytest.raises(TypeError) as want:
            getattr(torch, name)(torch.ones(2, 2), out=torch.empty(0))
        if "missing" in str(want.value):  # a required argument is missing: that is the error
            assert str(got.value) == str(want.value), name
        else:
            assert "out" in str(got.value), name
        assert _ver(o) == 0
        checked += 1
    assert checked > 30


def test_table_is_pytorchs():
    """The table regenerated from the installed PyTorch is the committed one."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "tools" / "gen_out_table.py"
    spec = importlib.util.spec_from_file_location("gen_out_table", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.render(*mod.build()) == pathlib.Path(inspect.getsourcefile(
        __import__("dyngrad._out_table", fromlist=["OUT"]))).read_text()
    assert OUT


def test_bernoulli_out():
    """bernoulli writes any dtype and resizes without a warning; p= with out is refused."""
    res = []
    for lib in (torch, dyngrad):
        p = lib.full((2, 2), 1.0)
        got = []
        for out in (lib.empty(3), lib.empty(2, 2, dtype=lib.int64), lib.empty(0, dtype=lib.float64)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                r = lib.bernoulli(p, out=out)
            got.append((r is out, str(out.dtype).split(".")[-1], tuple(out.shape), _ver(out),
                        out.tolist(), len(w)))
        for call in (lambda: lib.bernoulli(p, 0.5, out=lib.empty(0)),
                     lambda: lib.bernoulli(p.clone().requires_grad_(), out=lib.empty(0))):
            with pytest.raises((TypeError, RuntimeError)) as e:
                call()
            got.append((e.type, str(e.value).split("\n")[0]))
        res.append(got)
    assert res[0] == res[1]


def test_normal_tensor_out():
    """normal with a tensor mean or std writes out as PyTorch's normal.Tensor_out."""
    res = []
    for lib in (torch, dyngrad):
        m = lib.zeros(2, 2)
        got = []
        for call in (lambda o: lib.normal(m, 1.0, out=o), lambda o: lib.normal(0.0, m + 1, out=o),
                     lambda o: lib.normal(m, m + 1, out=o)):
            for out in (lib.empty(0), lib.empty(3), lib.empty(2, 2, dtype=lib.float64),
                        lib.empty(2, 2, dtype=lib.int64), lib.empty(1, 2), lib.empty(2, 2).t()):
                try:
                    with warnings.catch_warnings(record=True) as w:
                        warnings.simplefilter("always")
                        r = call(out)
                    got.append((r is out, str(out.dtype), tuple(out.shape), out.stride(), _ver(out),
                                len(w)))
                except Exception as e:  # noqa: BLE001 - compared
                    got.append((type(e).__name__, str(e)))
        with pytest.raises(RuntimeError) as e:
            lib.normal(m.clone().requires_grad_(), 1.0, out=lib.empty(0))
        got.append(str(e.value))
        res.append(got)
    assert res[0] == res[1]
