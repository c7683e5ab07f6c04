"""A table of misuses of the public API, each run against dyngrad and against PyTorch: the
exception types must be equal and dyngrad's message must name the problem (share PyTorch's
leading words, or contain the offending value).  Part of the table is written by hand (Tensor
methods, nn.functional, modules, optimizers, DataLoader, save/load); the rest is derived from
the package: every function of ``dyngrad`` that PyTorch also has is called with a string, with
None, and with a tensor and a string.  No exception dyngrad raises may come from inside NumPy,
or be one of Python's internal errors where PyTorch raises something else."""
from __future__ import annotations

import inspect
import io
import os
import traceback
import warnings

import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")

_NP_DIR = os.path.dirname(np.__file__)


def _run(expr, m):
    """Evaluate ``expr`` with ``T`` = the library: ("ok",) or the exception raised."""
    env = {"T": m, "F": m.nn.functional, "nn": m.nn, "optim": m.optim, "np": np, "io": io,
           "DataLoader": m.utils.data.DataLoader, "TensorDataset": m.utils.data.TensorDataset}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = eval(expr, env)
            if hasattr(r, "__next__"):  # iterate DataLoader misuse
                list(r)
            return ("ok",)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            return e


def _lead(msg, n=3):
    return " ".join(str(msg).split("\n")[0].split()[:n])


def _names_problem(t, d, hint):
    """dyngrad's message names the problem: PyTorch's leading words, the function PyTorch's
    argument parser names ("conv1d() ..."), or the offending value."""
    tm, dm = str(t).split("\n")[0], str(d).split("\n")[0]
    if _lead(tm) == _lead(dm) or (len(tm) > 3 and dm.startswith(tm[: max(12, len(tm) // 2)])):
        return True
    if "required positional argument" in tm and "required positional argument" in dm:
        return True  # both name the missing argument
    fn = tm.split("(")[0]
    if "(" in tm and fn.isidentifier() and dm.startswith(fn + "()"):
        return True
    return hint is not None and hint in dm


def _same_kind(t, d):
    """Equal exception types.  One tolerance: where PyTorch's own Python code fails on a
    non-tensor argument with an AttributeError ("'str' object has no attribute 'dim'"),
    dyngrad's TypeError naming the argument is accepted."""
    if type(d).__name__ == type(t).__name__ or isinstance(d, type(t)):
        return True
    return (type(t) is AttributeError and "object has no attribute" in str(t)
            and type(d) is TypeError and "must be Tensor" in str(d))


# (expression, offending value named in dyngrad's message when its words differ)
HAND = [
    # factories and conversions
    ("T.tensor([1, None])", None), ("T.tensor(['a'])", None), ("T.tensor([[1, 2], [3]])", None),
    ("T.tensor(object())", None), ("T.tensor([1.], dtype='float32')", None),
    ("T.zeros(2, dtype='float32')", None), ("T.zeros(-1)", None), ("T.ones(2.5)", None),
    ("T.zeros(2, None)", None), ("T.full(2, 1.)", None), ("T.full((2,), 'a')", None),
    ("T.arange(0, 5, 0)", None), ("T.arange('a')", None), ("T.linspace(0, 1, -1)", None),
    ("T.eye(-1)", None), ("T.eye('a')", None), ("T.randint(5, 0, (2,))", None),
    ("T.randint(0, 5, 2)", None), ("T.randperm(-1)", None), ("T.rand(2, dtype=T.int64)", None),
    ("T.from_numpy([1.0])", None), ("T.from_numpy(np.array(['a']))", None),
    ("T.as_tensor([1, None])", None), ("T.zeros_like([1, 2])", None),
    ("T.multinomial(T.tensor([0.5, -0.1]), 1)", None), ("T.multinomial(T.tensor([0., 0.]), 1)", None),
    ("T.multinomial(T.tensor([1., 1.]), 3)", None), ("T.multinomial(T.tensor(1.), 1)", None),
    ("T.normal(0., -1., (2,))", None), ("T.bernoulli(T.tensor([1.5]))", None),
    ("float(T.ones(6))", None), ("int(T.ones(6))", None), ("T.ones(6).item()", None),
    ("bool(T.ones(6))", None), ("bool(T.ones(0))", None), ("float(T.tensor(1j))", None),
    ("[1, 2][T.tensor(1.)]", None), ("T.ones(2, 2).tolist()[2]", None),
    # shapes, dims, indexing
    ("T.cat([T.ones(2), [1., 2.]])", None), ("T.cat([T.ones(2), T.ones(2, 2)])", None),
    ("T.cat([])", None), ("T.cat([T.ones(2)], dim='a')", None), ("T.stack([T.ones(2), T.ones(3)])", None),
    ("T.stack([])", None), ("T.ones(2, 3).view(4)", None), ("T.ones(2, 3).view(-1, -1)", None),
    ("T.ones(2, 3).reshape(5)", None), ("T.ones(2, 3).t().view(6)", None),
    ("T.ones(2, 3).permute(0)", None), ("T.ones(2, 3).permute(0, 0)", None),
    ("T.ones(2, 3).transpose(0, 2)", None), ("T.ones(2, 3).sum(2)", None),
    ("T.ones(2, 3).squeeze(3)", None), ("T.ones(2, 3).unsqueeze(4)", None),
    ("T.ones(2, 3).expand(3, 3)", None), ("T.ones(2, 3).expand(2)", None),
    ("T.ones(2, 3)[2]", None), ("T.ones(2, 3)[:, 5]", None), ("T.ones(2, 3)[0, 0, 0]", None),
    ("T.ones(2, 3)[T.tensor([0.5])]", None), ("T.ones(2, 3)[T.tensor([True])]", None),
    ("T.ones(2, 3)['a']", None), ("T.ones(3).index_select(0, T.tensor([5]))", None),
    ("T.ones(3).gather(0, T.tensor([5]))", None), ("T.ones(2, 3).gather(1, T.tensor([0]))", None),
    ("T.ones(3).scatter(0, T.tensor([5]), 1.)", None), ("T.ones(2, 3).split(0)", None),
    ("T.ones(2, 3).chunk(0)", None), ("T.ones(2, 3).flip(2)", None), ("T.ones(2, 3).roll(1, 5)", None),
    ("T.ones(2, 3).narrow(1, 2, 5)", None), ("T.ones(2, 3).unfold(1, 5, 1)", None),
    ("T.ones(2, 3).repeat(2)", None), ("T.ones(2, 3).topk(5)", None), ("T.ones(2, 3).kthvalue(5)", None),
    ("T.ones(2, dtype=T.complex64).topk(1)", None), ("T.ones(2, dtype=T.bool).topk(1)", None),
    ("T.ones(2, dtype=T.complex64).kthvalue(1)", None), ("T.ones(2, dtype=T.bool).kthvalue(1)", None),
    ("T.ones(2, 2, 2).diag()", None),
    ("T.ones(2, 3).masked_fill(T.ones(2, 3), 1.)", None),
    ("T.ones(2, 3).masked_fill(T.ones(3, 3, dtype=T.bool), 1.)", None),
    ("T.where(T.ones(2), T.ones(2), T.ones(2))", None), ("T.ones(2).index_add_(0, T.tensor([0]), T.ones(2))", None),
    # arithmetic and dtypes
    ("T.ones(2) + T.ones(3)", None), ("T.ones(2, 3) @ T.ones(2, 3)", None), ("T.ones(3) @ T.ones(4)", None),
    ("T.ones(2).mm(T.ones(2, 2))", None), ("T.mm(T.ones(2, 3), T.ones(3, 2, dtype=T.float64))", None),
    ("T.bmm(T.ones(2, 2), T.ones(2, 2))", None), ("T.ones(2) + 'a'", None), ("T.ones(2) * None", None),
    ("T.ones(2, dtype=T.int64) / 0", None), ("T.ones(2, dtype=T.int64).add_(1.5)", None),
    ("T.ones(2, dtype=T.int64).sqrt_()", None), ("T.ones(2, dtype=T.bool) - T.ones(2, dtype=T.bool)", None),
    ("-T.ones(2, dtype=T.bool)", None), ("T.ones(2, dtype=T.int64).mean()", None),
    ("T.ones(2).long().requires_grad_()", None), ("T.ones(2).to('float32')", None),
    ("T.ones(2).sum(dim='a')", None), ("T.ones(2).pow(T.ones(3))", None),
    ("T.lerp(T.ones(3), T.ones(3), T.ones(3, dtype=T.float64))", None),
    ("T.addmm(T.ones(2, 2), T.ones(2, 3), T.ones(4, 2))", None),
    ("T.addmm(T.ones(2, 2, dtype=T.float64), T.ones(2, 3), T.ones(3, 2))", None),
    ("T.ones(3).index_add_(0, T.tensor([0]), T.ones(1, dtype=T.float64))", None),
    ("T.ones(2).clamp()", None), ("T.ones(2).clamp(min=T.ones(3))", None),
    ("T.einsum('ij,jk->ik', T.ones(2, 3), T.ones(4, 2))", None), ("T.einsum('ij->k', T.ones(2, 3))", None),
    # autograd
    ("T.ones(2, requires_grad=True).sum().backward() or T.ones(2).backward()", None),
    ("(T.ones(2, requires_grad=True) * 2).backward()", None),
    ("T.autograd.grad(T.ones(2, requires_grad=True).sum(), [T.ones(2)])", None),
    ("T.ones(2, requires_grad=True).add_(1)", None),
    ("T.ones(2, requires_grad=True).numpy()", None),
    ("T.ones(2, dtype=T.int64, requires_grad=True)", None),
    ("T.ones(2, requires_grad=True).view(2).resize_(3)", None),
    ("T.ones(2).register_hook(lambda g: g)", None),
    ("(lambda x: (x.sum().backward(), x.sum().backward()))((T.ones(2, requires_grad=True) * 2).exp())", None),
    # nn.functional
    ("F.relu('a')", None), ("F.softmax(T.ones(2, 3), dim=2)", None), ("F.linear(T.ones(2, 3), T.ones(4, 5))", None),
    ("F.linear(T.ones(2, 3), T.ones(4, 3), T.ones(5))", None),
    ("F.conv2d(T.ones(1, 3, 5, 5), T.ones(2, 4, 3, 3))", None), ("F.conv2d(T.ones(3, 5), T.ones(2, 3, 3, 3))", None),
    ("F.conv1d(T.ones(1, 2, 5), T.ones(1, 2, 7))", None),
    ("F.max_pool2d(T.ones(1, 1, 2, 2), 3)", None), ("F.avg_pool2d(T.ones(1, 1, 2, 2), 3)", None),
    ("F.max_pool1d(T.ones(1, 1, 2), 3)", None), ("F.avg_pool1d(T.ones(1, 1, 2), 3)", None),
    ("F.max_pool2d(T.ones(1, 1, 4, 4), 2, padding=2)", None),
    ("F.cross_entropy(T.ones(2, 3), T.tensor([0, 3]))", None), ("F.cross_entropy(T.ones(2, 3), T.tensor([0]))", None),
    ("F.cross_entropy(T.ones(2, 3), T.tensor([0., 1.]))", None),
    ("F.cross_entropy(T.ones(2, 3), T.tensor([0, 1]), label_smoothing=1.5)", None),
    ("F.nll_loss(T.ones(2, 3), T.tensor([0, 1]), weight=T.ones(4))", None),
    ("F.mse_loss(T.ones(2), T.ones(3))", None), ("F.mse_loss(T.ones(2, dtype=T.int64), T.ones(2, dtype=T.int64))", None),
    ("F.binary_cross_entropy(T.ones(2) * 2, T.ones(2))", None), ("F.binary_cross_entropy(T.ones(2), T.ones(3))", None),
    ("F.binary_cross_entropy(T.ones(2), T.ones(2, dtype=T.float64))", None),
    ("F.binary_cross_entropy_with_logits(T.ones(2), T.ones(3))", None),
    ("F.mse_loss(T.ones(2), T.ones(2), reduction='avg')", None), ("F.dropout(T.ones(2), p=1.5)", None),
    ("F.embedding(T.tensor([5]), T.ones(3, 2))", None), ("F.embedding(T.tensor([0.]), T.ones(3, 2))", None),
    ("F.one_hot(T.tensor([3]), 2)", None), ("F.one_hot(T.tensor([0.]), 2)", None),
    ("F.pad(T.ones(2, 2), (1,))", None), ("F.layer_norm(T.ones(2, 3), (4,))", None),
    ("F.batch_norm(T.ones(2, 3), T.ones(4), T.ones(4))", None), ("F.glu(T.ones(3))", None),
    ("F.kl_div(T.ones(2), T.ones(2, dtype=T.int64), reduction='sum')", None),
    ("F.huber_loss(T.ones(2), T.ones(2), delta=-1.)", None), ("F.smooth_l1_loss(T.ones(2), T.ones(2), beta=-1.)", None),
    ("F.interpolate(T.ones(1, 1, 2, 2))", None), ("F.softmax(T.ones(2), dim='a')", None),
    # modules
    ("nn.Linear(3, 4)(T.ones(2, 5))", None), ("nn.Linear(-1, 2)", None), ("nn.Linear(2.5, 2)", None),
    ("nn.Conv2d(3, 4, 3)(T.ones(1, 2, 5, 5))", None), ("nn.Conv2d(3, 4, 0)", None),
    ("nn.Conv2d(3, 4, 3, groups=2)", None), ("nn.Conv2d(3, 4, 3, padding='bad')", None),
    ("nn.BatchNorm1d(3)(T.ones(2, 4))", None), ("nn.BatchNorm1d(3)(T.ones(1, 3))", None),
    ("nn.LayerNorm(3)(T.ones(2, 4))", None), ("nn.Embedding(3, 2)(T.tensor([3]))", None),
    ("nn.Embedding(3, 2)(T.tensor([0.5]))", None), ("nn.Dropout(p=2.)", None),
    ("nn.MaxPool2d(3)(T.ones(1, 1, 2, 2))", None), ("nn.Sequential(nn.Linear(2, 2))[3]", None),
    ("nn.Sequential(1)", None), ("nn.ModuleList([1])", None), ("nn.Linear(2, 2).load_state_dict({'weight': T.ones(3, 3)})", None),
    ("nn.Linear(2, 2).load_state_dict({'w': T.ones(2, 2)})", None), ("nn.Linear(2, 2).register_buffer('weight', T.ones(1))", None),
    ("nn.Linear(2, 2).register_parameter('x', T.ones(1))", None), ("nn.Module().missing_attr", None),
    ("nn.LSTM(3, 4)(T.ones(2, 5, 6))", None), ("nn.GRU(3, 4)(T.ones(5, 3))", None),
    ("nn.RNN(3, 4, nonlinearity='bad')", None), ("nn.MultiheadAttention(5, 2)", None),
    ("nn.CrossEntropyLoss()(T.ones(2, 3), T.tensor([0, 5]))", None), ("nn.MSELoss(reduction='x')", None),
    ("nn.Flatten()(T.ones(2, 3)).view(7)", None), ("nn.Parameter([1., 2.])", None),
    ("nn.utils.clip_grad_norm_([T.ones(2)], max_norm=1., norm_type='x')", None),
    # optimizers and schedulers
    ("optim.SGD([T.ones(2, requires_grad=True)], lr=-1.)", None), ("optim.SGD([], lr=0.1)", None),
    ("optim.SGD(T.ones(2, requires_grad=True), lr=0.1)", None),
    ("optim.SGD([T.ones(2, requires_grad=True)], lr=0.1, momentum=-1.)", None),
    ("optim.SGD([T.ones(2, requires_grad=True)], lr=0.1, nesterov=True)", None),
    ("optim.Adam([T.ones(2, requires_grad=True)], lr=0.1, betas=(1.5, 0.9))", None),
    ("optim.Adam([T.ones(2, requires_grad=True)], lr=0.1, eps=-1.)", None),
    ("optim.Adam([T.ones(2, requires_grad=True)], lr=0.1, weight_decay=-1.)", None),
    ("optim.AdamW([T.ones(2, requires_grad=True)], lr=-0.1)", None),
    ("optim.RMSprop([T.ones(2, requires_grad=True)], lr=0.1, alpha=-1.)", None),
    ("optim.SGD([T.ones(2)], lr=0.1)", None),
    ("optim.SGD([{'params': [T.ones(2, requires_grad=True)]}, {'params': 1}], lr=0.1)", None),
    ("optim.SGD([T.ones(2, requires_grad=True)], lr=0.1).load_state_dict({})", None),
    ("optim.lr_scheduler.StepLR(optim.SGD([T.ones(2, requires_grad=True)], lr=0.1), step_size=1, gamma='a').step()", None),
    ("optim.lr_scheduler.StepLR(1, step_size=1)", None),
    # data
    ("DataLoader([1, 2, 3], batch_size=0)", None), ("DataLoader([1, 2, 3], batch_size=-1)", None),
    ("DataLoader([1, 2, 3], batch_size=1.5)", None), ("DataLoader([1, 2, 3], num_workers=-1)", None),
    ("DataLoader([1, 2, 3], shuffle=True, sampler=[0, 1])", None),
    ("DataLoader([1, 2, 3], batch_size=2, batch_sampler=[[0, 1]])", None),
    ("DataLoader([1, 2, 3], prefetch_factor=2)", None),
    ("iter(DataLoader([{'a': 1}, [1, 2]], batch_size=2))", None),
    ("TensorDataset(T.ones(2), T.ones(3))", None), ("TensorDataset(T.ones(2))[5]", None),
    # save / load
    ("T.save(T.ones(2), 5)", None), ("T.load(io.BytesIO(b'not a checkpoint'))", "not a checkpoint"),
    ("T.load('/nonexistent/dir/x.pt')", None), ("T.save(T.ones(2), '/nonexistent/dir/x.pt')", None),
    ("T.load(None)", None),
]


# --- derived from the package -------------------------------------------------------------
_SKIP = {"manual_seed", "set_default_dtype", "set_printoptions", "set_grad_enabled", "compile",
         "save", "load", "seed", "set_rng_state", "use_deterministic_algorithms",
         "set_num_threads", "typename", "is_tensor", "diagnose", "no_grad", "enable_grad",
         "inference_mode", "get_default_dtype", "initial_seed", "get_rng_state",
         "get_num_threads", "is_grad_enabled", "is_inference_mode_enabled"}


def _public_functions():
    out = []
    for n in sorted(dir(dyngrad)):
        v = getattr(dyngrad, n, None)
        if n.startswith("_") or n in _SKIP or not callable(v) or inspect.isclass(v) or \
                inspect.ismodule(v) or not hasattr(torch, n):
            continue
        out.append(n)
    return out


DERIVED = []
for _n in _public_functions():
    DERIVED += [(f"T.{_n}('abc')", "str"), (f"T.{_n}(None)", "NoneType"),
                (f"T.{_n}(T.ones(2), 'abc')", "str")]
for _n in sorted(n for n in dir(dyngrad.nn.functional) if not n.startswith("_")):
    _v = getattr(dyngrad.nn.functional, _n)
    if inspect.isfunction(_v) and hasattr(torch.nn.functional, _n):
        DERIVED += [(f"F.{_n}('abc')", "str"), (f"F.{_n}(None)", "NoneType")]

# differences still open, by cause (xfail while they differ; a listed case that matches fails)
KNOWN = {
    "PyTorch itself fails internally (AttributeError) where dyngrad raises TypeError":
        ["nn.Parameter([1., 2.])"],
}
_KNOWN = {e: cause for cause, es in KNOWN.items() for e in es}

CASES = HAND + DERIVED


def _case_id(c):
    return c[0][:70]


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_misuse_matches_torch(case):
    expr, hint = case
    t, d = _run(expr, torch), _run(expr, dyngrad)
    problem = _difference(expr, hint, t, d)
    if expr in _KNOWN:
        if problem:
            pytest.xfail(_KNOWN[expr])
        pytest.fail(f"{expr} now matches PyTorch: remove it from KNOWN")
    assert not problem, problem


def _difference(expr, hint, t, d):
    """What differs between PyTorch's outcome ``t`` and dyngrad's ``d`` (None: nothing)."""
    if isinstance(t, tuple):
        return None if isinstance(d, tuple) else f"torch accepts {expr}; dyngrad raised {d!r}"
    if isinstance(d, tuple):
        return f"torch raised {t!r}; dyngrad accepted {expr}"
    if not (_same_kind(t, d) and _names_problem(t, d, hint)):
        return f"{expr}\ntorch: {type(t).__name__}: {t}\ndyngrad: {type(d).__name__}: {d}"
    return None


def _origin(e):
    tb = traceback.extract_tb(e.__traceback__)
    return tb[-1].filename if tb else ""


def test_no_internal_errors_leak():
    """No exception dyngrad raises for a case comes from inside NumPy, and none is one of
    Python's internal types (AttributeError, KeyError, IndexError from a random line, ...)
    where PyTorch raises something else."""
    bad = []
    for expr, _ in CASES:
        if expr in _KNOWN:
            continue
        d = _run(expr, dyngrad)
        if isinstance(d, tuple):
            continue
        if _origin(d).startswith(_NP_DIR):
            bad.append(f"{expr}: raised inside NumPy: {type(d).__name__}: {d}")
            continue
        t = _run(expr, torch)
        if type(d) in (AttributeError, KeyError, ZeroDivisionError, UnboundLocalError,
                       NameError, AssertionError) and (isinstance(t, tuple) or type(t) is not type(d)):
            bad.append(f"{expr}: {type(d).__name__}: {d} (PyTorch: {t!r})")
    assert not bad, "\n".join(bad)
