"""Lazy modules (``nn.modules.lazy.LazyModuleMixin`` and the ``Lazy*`` layers) beside
PyTorch's: class, repr, parameters and buffers before and after the first call, outputs and
gradients with PyTorch's values loaded, state dicts of uninitialized modules, loading into
them, the errors, copying and pickling."""
from __future__ import annotations

import copy
import inspect
import pickle
import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

# lazy module -> (constructor arguments, first input shape)
CASES = {
    "LazyLinear": ("3", (2, 4)),
    "LazyConv1d": ("3, 3, stride=2, padding=1", (2, 2, 7)),
    "LazyConv2d": ("4, (3, 2), padding=1, groups=2", (1, 2, 5, 4)),
    "LazyConv3d": ("2, 2, bias=False", (1, 2, 3, 3, 3)),
    "LazyConvTranspose1d": ("3, 3, stride=2, output_padding=1", (2, 2, 4)),
    "LazyConvTranspose2d": ("2, 2, groups=2", (1, 4, 3, 3)),
    "LazyConvTranspose3d": ("1, 2", (1, 2, 2, 3, 2)),
    "LazyBatchNorm1d": ("", (4, 3)),
    "LazyBatchNorm2d": ("momentum=0.3, bias=False", (3, 2, 2, 2)),
    "LazyBatchNorm3d": ("affine=False", (2, 2, 2, 2, 2)),
    "LazyInstanceNorm1d": ("", (2, 3, 5)),
    "LazyInstanceNorm2d": ("affine=False, track_running_stats=False", (2, 2, 3, 3)),
    "LazyInstanceNorm3d": ("eps=1e-3", (1, 2, 2, 3, 2)),
}
NAMES = sorted(CASES)


def build(lib, name):
    return eval(f"lib.nn.{name}({CASES[name][0]})", {"lib": lib})


def inputs(name, seed=0):
    x = np.random.default_rng(seed).standard_normal(CASES[name][1]).astype(np.float32)
    return torch.tensor(x, requires_grad=True), dyngrad.tensor(x, requires_grad=True)


def entries(m):
    """(name, type name, shape or repr) of each parameter and buffer."""
    out = []
    for n, t in list(m.named_parameters()) + list(m.named_buffers()):
        shape = repr(t) if "Uninitialized" in type(t).__name__ else tuple(t.shape)
        out.append((n, type(t).__name__, shape))
    return out


def sd_view(sd):
    return [(k, repr(v) if "Uninitialized" in type(v).__name__ else
             (type(v).__name__, tuple(v.shape))) for k, v in sd.items()]


def to_dg(sd):
    return {k: dyngrad.tensor(v.detach().numpy()) for k, v in sd.items()}


def close(a, b):
    np.testing.assert_allclose(b.detach().numpy() if hasattr(b, "numpy") else b,
                               a.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_before_first_call(name):
    t, d = build(torch, name), build(dyngrad, name)
    assert type(d).__name__ == type(t).__name__
    assert repr(d) == repr(t)
    assert d.has_uninitialized_params() == t.has_uninitialized_params()
    assert entries(d) == entries(t)
    assert sd_view(d.state_dict()) == sd_view(t.state_dict())
    assert sd_view(d.state_dict(keep_vars=True)) == sd_view(t.state_dict(keep_vars=True))
    assert isinstance(d, dyngrad.nn.modules.lazy.LazyModuleMixin)
    assert type(d).cls_to_become.__name__ == type(t).cls_to_become.__name__


@pytest.mark.parametrize("name", NAMES)
def test_first_call_and_training(name):
    t, d = build(torch, name), build(dyngrad, name)
    xt, xd = inputs(name)
    t(xt)
    d(xd)
    assert type(d).__name__ == type(t).__name__ and not type(d).__name__.startswith("Lazy")
    assert repr(d) == repr(t)
    assert entries(d) == entries(t)
    assert not hasattr(d, "_initialize_hook") and not hasattr(d, "_load_hook")
    assert len(d._forward_pre_hooks) == len(t._forward_pre_hooks) == 0
    assert not hasattr(d, "has_uninitialized_params")
    for k, v in t.state_dict().items():  # the running statistics of the first call
        if "running" in k or "num_batches" in k:
            close(v, d.state_dict()[k])
    d.load_state_dict(to_dg(t.state_dict()))
    xt, xd = inputs(name, 1)
    yt, yd = t(xt), d(xd)
    close(yt, yd)
    g = np.random.default_rng(2).standard_normal(tuple(yt.shape)).astype(np.float32)
    yt.backward(torch.tensor(g))
    yd.backward(dyngrad.tensor(g))
    close(xt.grad, xd.grad)
    for (n, pt), (m, pd) in zip(t.named_parameters(), d.named_parameters()):
        assert n == m
        close(pt.grad, pd.grad)


@pytest.mark.parametrize("name", NAMES)
def test_load_into_uninitialized(name):
    full = build(torch, name)
    full(inputs(name)[0])
    sd = full.state_dict()
    t, d = build(torch, name), build(dyngrad, name)
    rt, rd = t.load_state_dict(sd), d.load_state_dict(to_dg(sd))
    assert (list(rd.missing_keys), list(rd.unexpected_keys)) == \
        (list(rt.missing_keys), list(rt.unexpected_keys))
    assert type(d).__name__ == type(t).__name__
    assert repr(d) == repr(t)  # still lazy: in_features/num_features are set by the call
    assert entries(d) == entries(t)
    assert d.has_uninitialized_params() == t.has_uninitialized_params()
    for k, v in sd.items():
        close(v, d.state_dict()[k])
    xt, xd = inputs(name, 3)
    # the loaded values are kept by the first call (an instance norm, whose num_features
    # stays 0, refuses the input as PyTorch's does)
    ot, od = outcome(lambda: t(xt)), outcome(lambda: d(xd))
    assert od[0] == ot[0]
    if ot[0] == "ok":
        close(t(xt), d(xd))
    else:
        assert od == ot
    assert type(d).__name__ == type(t).__name__
    assert repr(d) == repr(t)


@pytest.mark.parametrize("name", ["LazyLinear", "LazyConv2d", "LazyBatchNorm1d"])
def test_load_uninitialized_state(name):
    t, d = build(torch, name), build(dyngrad, name)
    t.load_state_dict(build(torch, name).state_dict())  # uninitialized into uninitialized
    d.load_state_dict(build(dyngrad, name).state_dict())
    assert d.has_uninitialized_params() and t.has_uninitialized_params()
    t(inputs(name)[0])
    d(inputs(name)[1])
    with pytest.raises(RuntimeError) as et:
        t.load_state_dict(build(torch, name).state_dict())
    with pytest.raises(RuntimeError) as ed:
        d.load_state_dict(build(dyngrad, name).state_dict())
    assert str(ed.value) == str(et.value)


def test_failed_load_leaves_module_uninitialized():
    d = dyngrad.nn.LazyLinear(3)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        d.load_state_dict({"weight": dyngrad.ones(3, 2), "bias": dyngrad.ones(3),
                           "extra": dyngrad.ones(1)})
    assert d.has_uninitialized_params() and repr(d.weight) == "<UninitializedParameter>"


def test_signatures():
    for name in NAMES:
        st = inspect.signature(getattr(torch.nn, name))
        sd = inspect.signature(getattr(dyngrad.nn, name))
        assert sd == st, name


def test_exports():
    assert sorted(n for n in dir(dyngrad.nn) if n.startswith(("Lazy", "Uninit"))) == \
        sorted(n for n in dir(torch.nn) if n.startswith(("Lazy", "Uninit")))
    assert dyngrad.nn.modules.lazy.__all__ == torch.nn.modules.lazy.__all__


@pytest.mark.parametrize("name", NAMES)
def test_no_warning_on_construction(name):
    for lib in (torch, dyngrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            build(lib, name)
        assert [str(x.message) for x in w] == []


@pytest.mark.parametrize("name", NAMES)
def test_device(name):
    d = build(dyngrad, name)
    kw = f"{CASES[name][0]}{', ' if CASES[name][0] else ''}device='cuda'"
    if list(d.parameters()) or list(d.buffers()):
        with pytest.raises(RuntimeError, match="CPU only"):
            eval(f"dyngrad.nn.{name}({kw})", {"dyngrad": dyngrad})
    else:  # no tensors to place: PyTorch builds it on any device
        eval(f"dyngrad.nn.{name}({kw})", {"dyngrad": dyngrad})


def outcome(f):
    try:
        r = f()
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    return "ok", repr(r)


@pytest.mark.parametrize("expr", [
    "lib.nn.LazyConv2d(3, 2)(lib.ones(2, 3))",
    "lib.nn.LazyConv1d(3, 2)(lib.ones(2, 3, 4, 4))",
    "lib.nn.LazyConvTranspose3d(3, 2)(lib.ones(2, 3))",
    "lib.nn.LazyConv2d(4, 2, groups=2)(lib.ones(1, 3, 4, 4))",
    "lib.nn.LazyConv2d(4, 2, groups=2)(lib.ones(2, 4, 4)).shape",
    "lib.nn.LazyBatchNorm2d()(lib.ones(2, 3))",
    "lib.nn.LazyLinear(3)(lib.ones(2, 5)).shape",
    "lib.nn.modules.lazy.LazyModuleMixin.cls_to_become",
    "lib.nn.LazyLinear(3).has_uninitialized_params()",
    "lib.nn.LazyBatchNorm1d(affine=False, track_running_stats=False)"
    ".has_uninitialized_params()",
    "lib.nn.UninitializedParameter().shape",
    "lib.nn.UninitializedParameter().numel()",
    "lib.nn.UninitializedParameter().dim()",
    "lib.nn.UninitializedParameter().detach()",
    "lib.nn.UninitializedParameter().requires_grad_(False)",
    "lib.nn.UninitializedParameter().size()",
    "lib.nn.UninitializedParameter().share_memory_()",
    "lib.nn.UninitializedParameter().dtype",
    "lib.nn.UninitializedParameter(dtype=lib.float64).dtype",
    "lib.nn.UninitializedParameter().requires_grad",
    "lib.nn.UninitializedParameter(False).requires_grad",
    "lib.nn.UninitializedParameter().is_leaf",
    "lib.nn.UninitializedParameter().grad",
    "repr(lib.nn.UninitializedParameter())",
    "str(lib.nn.UninitializedParameter())",
    "repr(lib.nn.UninitializedBuffer())",
    "lib.nn.UninitializedBuffer().requires_grad",
    "lib.nn.UninitializedBuffer().persistent",
    "lib.nn.UninitializedBuffer().numel()",
    "lib.nn.UninitializedBuffer().shape",
    "type(lib.nn.UninitializedParameter().double()).__name__",
    "type(lib.nn.UninitializedParameter().to(lib.float64)).__name__",
    "lib.nn.LazyLinear(3).initialize_parameters",
    "lib.nn.modules.lazy.LazyModuleMixin.initialize_parameters(lib.nn.Linear(1, 1))",
    "type(copy.deepcopy(lib.nn.UninitializedParameter(dtype=lib.float64))).__name__",
    "copy.deepcopy(lib.nn.UninitializedParameter(dtype=lib.float64)).dtype",
])
def test_outcomes(expr):
    got = outcome(lambda: eval(expr, {"lib": dyngrad, "copy": copy}))
    want = outcome(lambda: eval(expr, {"lib": torch, "copy": copy}))
    if expr.endswith(".initialize_parameters"):  # bound-method reprs name the library
        got, want = got[0], want[0]
    assert got == want


@pytest.mark.parametrize("expr", [
    "p + 1", "1 + p", "p - 1", "1 - p", "p * 2", "2 * p", "p / 2", "2 / p", "p // 2", "p ** 2",
    "2 ** p", "p @ p", "p % 2", "p < 1", "p > 1", "p <= 1", "p >= 1", "p != 1", "p == p",
    "p & 1", "p | 1", "p ^ 1", "~p", "-p", "+p", "abs(p)", "p[0]", "bool(p)", "float(p)",
    "int(p)", "len(p)", "iter(p)", "p.sum()", "p.t()", "p.clone()", "p.tolist()", "p.numpy()",
    "hash(p) == id(p)", "{p: 1}[p]",
])
@pytest.mark.parametrize("cls", ["UninitializedParameter", "UninitializedBuffer"])
def test_uninitialized_refuses_ops(expr, cls):
    def run(lib):
        return outcome(lambda: eval(expr, {"p": getattr(lib.nn, cls)()}))
    want, got = run(torch), run(dyngrad)
    # PyTorch names Python functions with their address
    assert got == (want[0], re.sub(r" at 0x[0-9a-f]+>", ">", want[1]))


def test_materialize():
    for lib in (torch, dyngrad):
        p = lib.nn.UninitializedParameter(dtype=lib.float64)
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3)
        assert p.dtype == lib.float64 and p.requires_grad
        b = lib.nn.UninitializedBuffer()
        b.materialize(4, dtype=lib.float16)
        assert type(b) is lib.Tensor and tuple(b.shape) == (4,) and b.dtype == lib.float16


def test_zero_dim_input_to_lazy_linear():
    for lib in (torch, dyngrad):
        with pytest.raises(IndexError):
            lib.nn.LazyLinear(3)(lib.tensor(1.0))


def _half_lazy(lib):
    class Half(lib.nn.modules.lazy.LazyModuleMixin, lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.UninitializedParameter()

        def initialize_parameters(self, x):
            pass

        def forward(self, x):
            return x
    return Half()


def test_not_fully_initialized():
    with pytest.raises(RuntimeError) as et:
        _half_lazy(torch)(torch.ones(1))
    with pytest.raises(RuntimeError) as ed:
        _half_lazy(dyngrad)(dyngrad.ones(1))
    assert str(ed.value) == str(et.value)


def test_loaded_linear_checks_the_input():
    sd = {"weight": np.ones((3, 4), np.float32), "bias": np.ones(3, np.float32)}
    res = []
    for lib in (torch, dyngrad):
        m = lib.nn.LazyLinear(3)
        m.load_state_dict({k: lib.tensor(v) for k, v in sd.items()})
        res.append(outcome(lambda: m(lib.ones(2, 5))))
    assert res[1] == res[0]


def test_optimizer_over_uninitialized_params():
    # PyTorch builds it; the parameters are the same objects after the first call
    for lib in (torch, dyngrad):
        m = lib.nn.LazyLinear(2)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        m(lib.ones(3, 4)).sum().backward()
        before = m.weight.detach().clone()
        opt.step()
        assert tuple(m.weight.shape) == (2, 4)
        assert not np.allclose(before.numpy(), m.weight.detach().numpy())


def test_dtype_before_first_call():
    for lib in (torch, dyngrad):
        m = lib.nn.LazyLinear(2).double()
        assert type(m.weight).__name__ == "UninitializedParameter"
        assert m.weight.dtype == lib.float64
        m(lib.ones(1, 3, dtype=lib.float64))
        assert m.weight.dtype == lib.float64 and m.bias.dtype == lib.float64
        m = lib.nn.LazyConv1d(2, 1, dtype=lib.float64)
        m(lib.ones(1, 3, 2, dtype=lib.float64))
        assert m.weight.dtype == lib.float64


@pytest.mark.parametrize("name", NAMES)
def test_deepcopy(name):
    t, d = build(torch, name), build(dyngrad, name)
    ot = outcome(lambda: copy.deepcopy(t))
    od = outcome(lambda: copy.deepcopy(d))
    assert od[0] == ot[0]
    if ot[0] != "ok":  # an UninitializedBuffer refuses deepcopy; the message names a function
        assert od[1].split(" in <")[0] == ot[1].split(" in <")[0]
        return
    assert od == ot
    ct, cd = copy.deepcopy(t), copy.deepcopy(d)
    ct(inputs(name)[0])
    cd(inputs(name)[1])
    assert repr(cd) == repr(ct) and entries(cd) == entries(ct)
    assert d.has_uninitialized_params() == t.has_uninitialized_params()  # untouched


@pytest.mark.parametrize("name", NAMES)
def test_pickle(name):
    t = pickle.loads(pickle.dumps(build(torch, name)))
    d = pickle.loads(pickle.dumps(build(dyngrad, name)))
    assert type(d).__name__ == type(t).__name__ and repr(d) == repr(t)
    assert sd_view(d.state_dict()) == sd_view(t.state_dict())
    t(inputs(name)[0])
    d(inputs(name)[1])
    assert type(d).__name__ == type(t).__name__
    assert repr(d) == repr(t) and entries(d) == entries(t)


def test_uninitialized_pickles():
    for lib in (torch, dyngrad):
        p = pickle.loads(pickle.dumps(lib.nn.UninitializedParameter(False)))
        assert type(p) is lib.nn.UninitializedParameter and not p.requires_grad
        b = pickle.loads(pickle.dumps(lib.nn.UninitializedBuffer()))
        assert type(b) is lib.nn.UninitializedBuffer


def test_lazy_inside_a_model():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.LazyConv2d(4, 3), torch.nn.LazyBatchNorm2d(),
                            torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LazyLinear(2))
    d = dyngrad.nn.Sequential(dyngrad.nn.LazyConv2d(4, 3), dyngrad.nn.LazyBatchNorm2d(),
                              dyngrad.nn.ReLU(), dyngrad.nn.Flatten(), dyngrad.nn.LazyLinear(2))
    assert repr(d) == repr(t)
    assert sd_view(d.state_dict()) == sd_view(t.state_dict())
    xt, xd = inputs("LazyConv2d")
    t(xt)
    d(xd)
    assert repr(d) == repr(t)
    d.load_state_dict(to_dg(t.state_dict()))
    close(t(xt), d(xd))


@pytest.mark.parametrize("name", ["LazyLinear", "LazyBatchNorm1d"])
def test_pickled_module_keeps_its_lazy_hooks(name):
    d = build(dyngrad, name)
    data = pickle.dumps(d)
    assert b"getattr" not in data  # the hooks are made again on load, not pickled
    full = build(torch, name)
    full(inputs(name)[0])
    t, c = pickle.loads(pickle.dumps(build(torch, name))), pickle.loads(data)
    t.load_state_dict(full.state_dict())
    c.load_state_dict(to_dg(full.state_dict()))
    assert entries(c) == entries(t)
    assert len(c._forward_pre_hooks) == len(t._forward_pre_hooks) == 1


def test_instance_norm_checks_num_features():
    for lib in (torch, dyngrad):
        with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match "
                                             r"num_features \(4\), but got: 3\."):
            lib.nn.InstanceNorm1d(4, affine=True)(lib.ones(2, 3, 5))
    msgs = []
    for lib in (torch, dyngrad):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.nn.InstanceNorm2d(4)(lib.ones(3, 2, 2))
        msgs.append([(x.category, str(x.message)) for x in w])
    assert msgs[1] == msgs[0] and len(msgs[0]) == 1


@pytest.mark.parametrize("expr", ["lib.nn.UninitializedBuffer(persistent=False)",
                                  "lib.nn.UninitializedBuffer()",
                                  "lib.nn.Buffer(lib.ones(1), persistent=False)"])
def test_buffer_assignment_registers(expr):
    res = []
    for lib in (torch, dyngrad):
        m = lib.nn.Module()
        m.b = eval(expr, {"lib": lib})
        res.append((list(m._buffers), sorted(m._non_persistent_buffers_set),
                    outcome(lambda: sd_view(m.state_dict()))))  # detach is refused
    assert res[1] == res[0]


@pytest.mark.parametrize("make", [lambda m: m.nn.LazyLinear(3),
                                  lambda m: m.nn.LazyBatchNorm1d()])
def test_save_keeps_a_lazy_module_lazy(make, tmp_path):
    """torch.save of a lazy module not yet called keeps its UninitializedParameter/Buffer, so
    the module loads back lazy and infers its shapes on its first call."""
    m = make(dyngrad)
    dyngrad.save(m, tmp_path / "m.pt")
    back = dyngrad.load(tmp_path / "m.pt", weights_only=False)
    assert back.has_uninitialized_params()
    assert back(dyngrad.ones(2, 4)).shape == make(torch)(torch.ones(2, 4)).shape
    assert type(back.weight).__name__ == "Parameter"


def test_uninitialized_state_dict_across_libraries(tmp_path):
    """A state_dict holding uninitialized parameters: PyTorch's class names in the file,
    loaded by either library only with weights_only=False, as PyTorch does."""
    dyngrad.save(dyngrad.nn.LazyLinear(3).state_dict(), tmp_path / "d.pt")
    torch.save(torch.nn.LazyLinear(3).state_dict(), tmp_path / "t.pt")
    for f in ("d.pt", "t.pt"):
        got = torch.load(tmp_path / f, weights_only=False)
        assert {type(v).__name__ for v in got.values()} == {"UninitializedParameter"}
        got = dyngrad.load(tmp_path / f, weights_only=False)
        assert {type(v).__name__ for v in got.values()} == {"UninitializedParameter"}
        with pytest.raises(pickle.UnpicklingError):
            torch.load(tmp_path / f)
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            dyngrad.load(tmp_path / f)
