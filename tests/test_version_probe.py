"""Version-counter probe over every differentiable op-table row (tests/optable/).

For each row and sample the same callable runs twice, once with dyngrad and once with
PyTorch (the row's function is rebuilt with its module globals ``torch``/``F``/tensor
constants mapped to PyTorch's, see ``twin``).  The inputs are leaves requiring grad, passed
to the op through an intermediate ``leaf.clone()``, so they can be modified in place.  After
the forward one of these in-place modifications is made, then backward runs with a fixed
upstream gradient:

* ``out<k>``       -- output k modified in place (``out.add_(1)``);
* ``out<k>-view``  -- output k modified through a view of it (``out[:1].add_(1)``);
* ``in<i>``        -- input i modified in place after the op;
* ``in<i>-view``   -- input i modified through a view of it;
* ``none``         -- nothing modified (the baseline).

Each also runs with ``create_graph=True`` followed by a second backward (variant suffix
``+cg``) for rows with second derivatives.  To keep the default run short, the view variants
and ``+cg`` run on each row's first sample only (``+cg`` not after a view variant).

dyngrad must raise where PyTorch raises, at the same step (forward, in-place, backward), with
the same exception type and leading message (for the saved-version error: the whole first
sentence, node name and version numbers included), and give PyTorch's leaf gradients
everywhere else.

Rows are skipped only by rule: not differentiable (``grad=False``), or a callable that has no
PyTorch counterpart (``test_rows_without_torch_twin_are_few`` checks those are few).
"""
from __future__ import annotations


import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402

import dyngrad  # noqa: E402
import dyngrad.nn.functional as DF  # noqa: E402
from tests.optable import all_rows  # noqa: E402

ROWS = [r for r in all_rows() if r.grad and r.samples]


from tests.twin import NoTwin, twin  # noqa: E402


def _twins():
    out, missing = {}, {}
    for r in ROWS:
        try:
            out[r.name] = twin(r.fn)
        except NoTwin as e:
            missing[r.name] = str(e)
    return out, missing


TWINS, NO_TWIN = _twins()


# --- one run -------------------------------------------------------------------------------
VERSION_MSG = "one of the variables needed for gradient computation has been modified by an inplace"


def _err(step, e):
    msg = str(e)
    if msg.startswith(VERSION_MSG):
        msg = msg.split(" Hint:")[0]
    else:
        msg = msg.split("\n")[0][:60]
    return (step, type(e).__name__, msg)


def _tensors(o, lib):
    if isinstance(o, lib.Tensor):
        return [o]
    if isinstance(o, (tuple, list)):
        return [x for x in o if isinstance(x, lib.Tensor)]
    return []


def _diff_outs(outs):
    return [o for o in outs if o.is_floating_point() and o.requires_grad]


def _modify(t, view, is_float):
    if view:
        v = t.unsqueeze(0) if t.dim() == 0 else t[:1]
    else:
        v = t
    if is_float:
        v.add_(1)
    else:
        v.mul_(1)


def _np(t):
    """A gradient as a NumPy array (PyTorch's ZeroTensors included)."""
    if t is None:
        return None
    t = t.detach()
    return t.numpy(force=True).copy() if isinstance(t, torch.Tensor) else t.numpy().copy()


def run(lib, row, sample, variant, create_graph):
    """Leaf gradients (and, under create_graph, the first-order gradients' values) or the
    error as (step, type name, leading message)."""
    fn = row.fn if lib is dyngrad else TWINS[row.name]
    leaves = sample.make(lib)
    xs = [t.clone() if t.requires_grad else t for t in leaves]
    try:
        outs = _diff_outs(_tensors(fn(*xs, *sample.extra, **sample.kwargs), lib))
    except Exception as e:  # noqa: BLE001
        return _err("forward", e)
    if not outs:
        return ("no differentiable output",)
    try:
        if variant != "none":
            kind, rest = variant[:2], variant
            view = rest.endswith("-view")
            k = int(rest.split("-")[0][len("out"):] if kind == "ou" else rest.split("-")[0][2:])
            t = outs[k] if kind == "ou" else xs[k]
            _modify(t, view, t.is_floating_point())
    except Exception as e:  # noqa: BLE001
        return _err("inplace", e)
    rs = np.random.RandomState(1)
    grads = [lib.from_numpy(rs.uniform(-1, 1, size=tuple(o.shape))).to(o.dtype) for o in outs]
    diff = [t for t in leaves if t.requires_grad]
    try:
        if not create_graph:
            lib.autograd.backward(outs, grads)
            return [_np(t.grad) for t in leaves]
        gs = lib.autograd.grad(outs, diff, grads, create_graph=True, allow_unused=True)
        first = [_np(g) for g in gs]
        terms = [(g * lib.from_numpy(rs.uniform(-1, 1, size=tuple(g.shape))).to(g.dtype)).sum()
                 for g in gs if g is not None and g.requires_grad]
        if terms:
            sum(terms).backward()
        return first + [_np(t.grad) for t in diff]
    except Exception as e:  # noqa: BLE001
        return _err("backward", e)


def variants(row, sample):
    leaves = sample.make(dyngrad)
    outs = _diff_outs(_tensors(row.fn(*[t.clone() if t.requires_grad else t for t in leaves],
                                      *sample.extra, **sample.kwargs), dyngrad))
    vs = ["none"]
    for k in range(len(outs)):
        vs += [f"out{k}", f"out{k}-view"]
    for i in range(len(leaves)):
        vs += [f"in{i}", f"in{i}-view"]
    return vs


def _same(a, b):
    """Whether two run results agree: the same error, or the same gradients."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b, f"dyngrad {a!r}\n      torch   {b!r}"
    if len(a) != len(b):
        return False, f"{len(a)} gradients vs {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if (x is None) != (y is None):
            return False, f"gradient {i}: dyngrad {'None' if x is None else 'tensor'}, " \
                          f"torch {'None' if y is None else 'tensor'}"
        if x is None:
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, f"gradient {i}: {x.dtype}{x.shape} vs {y.dtype}{y.shape}"
        if not np.allclose(x, y, rtol=1e-6, atol=1e-9, equal_nan=True):
            return False, f"gradient {i}: max diff {np.nanmax(np.abs(x - y))}"
    return True, ""


def probe(row):
    """Every difference between dyngrad and PyTorch for one row: a list of strings."""
    diffs = []
    for n, s in enumerate(row.samples):
        for v in variants(row, s):
            if n and v.endswith("-view"):
                continue  # views: on the first sample only (keeps the default run short)
            cgs = (False, True) if row.gradgrad and not n and not v.endswith("-view") else (False,)
            for cg in cgs:
                a = run(dyngrad, row, s, v, cg)
                b = run(torch, row, s, v, cg)
                ok, why = _same(a, b)
                if not ok:
                    diffs.append(f"{s!r} {v}{'+cg' if cg else ''}: {why}")
    return diffs


# Rows with known differences left, by root cause (xfail while they differ; a listed row that
# matches PyTorch fails, so the table only holds live differences).
_EINSUM = "einsum saves its operands differently (fixed with einsum's operand saving)"
_MATMUL_MSG = ("PyTorch saves reshaped/transposed views of the operands: its message names "
               "those (another shape, AsStrided); the error itself is raised")
KNOWN = {
}


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_version_counters_match_torch(row):
    if row.name in NO_TWIN:
        pytest.skip(f"no PyTorch counterpart: {NO_TWIN[row.name]}")
    diffs = probe(row)
    if row.name in KNOWN:
        if diffs:
            pytest.xfail(KNOWN[row.name])
        pytest.fail(f"{row.name} now matches PyTorch: remove it from KNOWN")
    assert not diffs, f"{row.name}:\n  " + "\n  ".join(diffs)


def test_rows_without_torch_twin_are_few():
    assert len(NO_TWIN) <= 3, NO_TWIN


def test_twin_runs_torch():
    """The rebuilt callables really call PyTorch, module constants included."""
    by = {r.name: r for r in ROWS}
    a = by["gather"].samples[0].make(torch)
    assert isinstance(TWINS["gather"](*a), torch.Tensor)
    a = by["setitem_basic"].samples[0].make(torch)
    assert type(TWINS["setitem_basic"](*a).grad_fn).__name__ == "CopySlices"


# --- activation gradients at the kinks (first and second order) -------------------------------
_KINK_X = [-3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 2.0, -2.0]
_KINKS = {
    "hardswish": lambda L, F: F.hardswish, "hardsigmoid": lambda L, F: F.hardsigmoid,
    "hardtanh": lambda L, F: F.hardtanh, "relu6": lambda L, F: F.relu6,
    "threshold": lambda L, F: lambda x: F.threshold(x, 1.0, 0.5),
    "clamp": lambda L, F: lambda x: L.clamp(x, -1.0, 1.0),
    "leaky_relu": lambda L, F: F.leaky_relu, "elu": lambda L, F: F.elu,
    "celu": lambda L, F: F.celu, "selu": lambda L, F: F.selu,
    "hardswish_": lambda L, F: lambda x: F.hardswish(x * 1, inplace=True),
    "elu_": lambda L, F: lambda x: F.elu(x * 1, inplace=True),
}


@pytest.mark.parametrize("name", list(_KINKS))
def test_activation_gradient_at_kinks_matches_torch(name):
    """First and second derivatives at the boundaries (-3, 0, 3, ...) use PyTorch's sides."""
    outs = []
    for L, F in ((torch, TF), (dyngrad, DF)):
        x = L.tensor(_KINK_X, requires_grad=True)
        g, = L.autograd.grad(_KINKS[name](L, F)(x).sum(), x, create_graph=True)
        res = [np.asarray(g.detach().numpy())]
        if name != "hardsigmoid" and g.requires_grad:
            gg, = L.autograd.grad(g.sum(), x, allow_unused=True)
            res.append(None if gg is None else np.asarray(gg.detach().numpy(force=True)))
        outs.append(res)
    assert len(outs[0]) == len(outs[1])
    for a, b in zip(*outs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


_LINEAR_BW = {
    "max_pool2d": lambda L, F, x: F.max_pool2d(x, 2),
    "max_pool2d_overlap": lambda L, F, x: F.max_pool2d(x, 3, 1),
    "avg_pool2d": lambda L, F, x: F.avg_pool2d(x, 2),
    "adaptive_avg_pool2d": lambda L, F, x: F.adaptive_avg_pool2d(x, 3),
    "adaptive_max_pool2d": lambda L, F, x: F.adaptive_max_pool2d(x, 3),
    "pad_reflect": lambda L, F, x: F.pad(x, (1, 2, 2, 1), mode="reflect"),
    "pad_replicate": lambda L, F, x: F.pad(x, (1, 2, 2, 1), mode="replicate"),
    "upsample": lambda L, F, x: F.interpolate(x, scale_factor=2, mode="bilinear"),
}


@pytest.mark.parametrize("name", list(_LINEAR_BW))
def test_linear_backward_under_create_graph_matches_torch(name):
    """Pooling/padding backward under create_graph depends on the saved input as PyTorch's
    (its first-order gradient requires grad, the second-order one is zeros, not None), and
    third order still works."""
    xs = np.random.RandomState(0).randn(1, 2, 5, 5)
    outs = []
    for L, F in ((torch, TF), (dyngrad, DF)):
        x = L.tensor(xs, requires_grad=True)
        w = L.tensor(np.random.RandomState(1).randn(*_LINEAR_BW[name](L, F, x).shape),
                     requires_grad=True)
        g, = L.autograd.grad(_LINEAR_BW[name](L, F, x), x, L.ones_like(_LINEAR_BW[name](
            L, F, x)), create_graph=True)
        res = [g.requires_grad, [type(f).__name__ for f, _ in g.grad_fn.next_functions]
               if g.grad_fn is not None else None]
        gg = L.autograd.grad(g.sum(), x, allow_unused=True)[0] if g.requires_grad else None
        res.append(None if gg is None else gg.detach().numpy())
        g2, = L.autograd.grad(_LINEAR_BW[name](L, F, x), x, w, create_graph=True)
        gw, = L.autograd.grad((g2 * g2).sum(), w, create_graph=True)
        res.append(gw.detach().numpy())
        res.append(L.autograd.grad((gw * gw).sum(), w)[0].detach().numpy())
        outs.append(res)
    a, b = outs
    assert a[:2] == b[:2]
    for u, v in zip(a[2:], b[2:]):
        assert (u is None) == (v is None)
        if u is not None:
            np.testing.assert_allclose(v, u, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2, 2), (4,)])
@pytest.mark.parametrize("kw", [{}, {"weight": True}, {"ignore_index": 1}])
def test_nll_loss_double_backward_matches_torch(red, shape, kw):
    """nll_loss's gradient under create_graph: PyTorch's NllLoss(2D)BackwardBackward0, which
    depends on the incoming gradient and the input (zero gradient); third order too."""
    outs = []
    for L in (torch, dyngrad):
        rs = np.random.RandomState(0)
        C = shape[1] if len(shape) > 1 else shape[0]
        x = L.tensor(rs.randn(*shape), requires_grad=True)
        t = L.tensor(rs.randint(0, C, (shape[0],) + shape[2:] if len(shape) > 1 else ()))
        kws = dict(kw)
        if "weight" in kws:
            kws["weight"] = L.tensor(rs.rand(C))
        y = L.nn.functional.nll_loss(x, t, reduction=red, **kws)
        v = L.tensor(rs.randn(*y.shape), requires_grad=True)
        g, = L.autograd.grad(y, x, v, create_graph=True)
        r = [g.grad_fn.name(), [type(f).__name__ for f, _ in g.grad_fn.next_functions]]
        gg = L.autograd.grad((g * g).sum(), [x, v], create_graph=True)
        r += [a.detach().numpy() for a in gg]
        r.append(L.autograd.grad((gg[1] ** 2).sum(), v)[0].numpy())
        outs.append(r)
    a, b = outs
    assert b[:2] == a[:2]
    for u, w in zip(a[2:], b[2:]):
        np.testing.assert_allclose(w, u, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(dim=1), dict(dim=None), dict(dim=1, keepdim=True),
                                dict(dim=(0, 1))])
@pytest.mark.parametrize("xs", [np.random.RandomState(0).randn(3, 4),
                                np.array([[1.0, -1.0, 0.5], [2.0, 2.0, -2.0], [0.0, 1.0, 2.0]]),
                                np.array([[-1.0, 1.0, 1.0, -1.0]])], ids=["rand", "ties", "all"])
def test_norm_inf_double_backward_matches_torch(kw, xs):
    """The inf-norm gradient is sgn(x) * ((g / count) * mask), as PyTorch's: under
    create_graph it depends on x (second-order gradient zeros, not None); ties share it."""
    outs = []
    for L in (torch, dyngrad):
        x = L.tensor(xs, requires_grad=True)
        y = L.linalg.vector_norm(x, float("inf"), **kw)
        v = L.tensor(np.random.RandomState(1).randn(*y.shape), requires_grad=True)
        g, = L.autograd.grad(y, x, v, create_graph=True)
        gg = L.autograd.grad((g * g).sum(), [x, v], allow_unused=True)
        outs.append([g.detach().numpy()] + [None if a is None else a.numpy(force=True)
                                            for a in gg])
    for u, w in zip(*outs):
        assert (u is None) == (w is None)
        if u is not None:
            np.testing.assert_allclose(w, u, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dts", [("float32", "float32"), ("float64", "float32"),
                                 ("float32", "float64")])
@pytest.mark.parametrize("cg", [False, True])
def test_cat_skipped_empty_1d_gets_empty_gradient(dts, cg):
    """cat skips empty 1-D inputs (legacy rule), but PyTorch still gives them zeros(0)."""
    outs = []
    for L in (torch, dyngrad):
        a = L.zeros(0, dtype=getattr(L, dts[0]), requires_grad=True)
        b = L.ones(2, 3, dtype=getattr(L, dts[1]), requires_grad=True)
        c = L.zeros(0, dtype=getattr(L, dts[0]), requires_grad=True)
        ga, gb, gc = L.autograd.grad(L.cat([a, b, c], 1).sum(), [a, b, c], create_graph=cg)
        outs.append([(tuple(t.shape), str(t.dtype).split(".")[-1], t.requires_grad)
                     for t in (ga, gb, gc)])
    assert outs[1] == outs[0]


@pytest.mark.parametrize("red", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(3, 4), (0,), ()])
def test_soft_margin_loss_node_matches_torch(red, shape):
    """soft_margin_loss is one SoftMarginLossBackward0 saving input and target, as PyTorch's:
    values and first/second-order gradients agree, and changing the input in place after the
    forward is PyTorch's version error."""
    outs = []
    for L in (torch, dyngrad):
        rs = np.random.RandomState(0)
        x = L.tensor(rs.randn(*shape) * 3, requires_grad=True)
        t = L.tensor(np.sign(rs.randn(*shape)))
        y = L.nn.functional.soft_margin_loss(x, t, reduction=red)
        v = L.tensor(rs.randn(*y.shape), requires_grad=True)
        g, = L.autograd.grad(y, x, v, create_graph=True)
        gg = L.autograd.grad((g * g).sum(), [x, v], allow_unused=True)
        res = [y.grad_fn.name(), y.detach().numpy(), g.detach().numpy()]
        res += [a.numpy(force=True) for a in gg]
        xc = x.detach().clone().requires_grad_()
        xi = xc * 1
        y = L.nn.functional.soft_margin_loss(xi, t, reduction=red)
        xi.add_(1)
        with pytest.raises(RuntimeError) as e:
            y.backward(L.ones_like(y))
        res.append(str(e.value).split(" Hint")[0])
        outs.append(res)
    a, b = outs
    assert (b[0], b[-1]) == (a[0], a[-1])
    for u, w in zip(a[1:-1], b[1:-1]):
        np.testing.assert_allclose(w, u, rtol=2e-6, atol=1e-15)


def test_soft_margin_loss_broadcast_target_matches_torch():
    for L in (torch, dyngrad):
        x = L.ones(3, 4, requires_grad=True)
        y = L.nn.functional.soft_margin_loss(x, L.ones(1, 4))
        y.backward()
        assert y.grad_fn.name() == "SoftMarginLossBackward0" and tuple(x.grad.shape) == (3, 4)
        with pytest.raises(RuntimeError, match=r"output with shape \[3, 4\] doesn't match the "
                                               r"broadcast shape \[2, 3, 4\]"):
            L.nn.functional.soft_margin_loss(x, L.ones(2, 3, 4))


@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("grad_requires_grad", [False, True])
def test_hardsigmoid_has_no_double_backward(inplace, grad_requires_grad):
    """PyTorch has no double backward for hardsigmoid: the first-order gradient (right values)
    has a NotImplemented node that raises when differentiated."""
    outs = []
    for L in (torch, dyngrad):
        x = L.tensor([-4.0, -3.0, 0.0, 3.0, 4.0], requires_grad=True)
        y = L.nn.functional.hardsigmoid(x.clone(), inplace=inplace)
        v = L.ones(5, requires_grad=grad_requires_grad)
        g, = L.autograd.grad(y, x, v, create_graph=True)
        with pytest.raises(RuntimeError) as e:
            L.autograd.grad(g.sum(), x)
        # (in place, dyngrad's gradient also sums the copied-over input's zero: another node)
        outs.append((g.detach().numpy().tolist(), str(e.value)) + (() if inplace else (
            g.grad_fn.name(), len(g.grad_fn.next_functions))))
    assert outs[1] == outs[0]


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
@pytest.mark.parametrize("sshape", [(3, 3), (3, 2), (4, 2)])
@pytest.mark.parametrize("cg", [False, True])
def test_scatter_src_larger_than_index_matches_torch(op, sshape, cg):
    """The src gradient is index-shaped: for a src larger than index PyTorch's engine rejects
    it (no zero-padded gradient)."""
    outs = []
    for L in (torch, dyngrad):
        a = L.ones(3, 4, requires_grad=True)
        src = L.ones(*sshape, requires_grad=True)
        y = getattr(a, op)(1, L.tensor([[0, 2], [1, 3], [3, 0]]), src)
        try:
            r = tuple(L.autograd.grad(y.sum(), [a, src], create_graph=cg)[1].shape)
        except RuntimeError as e:
            r = str(e)
        outs.append(r)
    assert outs[1] == outs[0]


_SORT_CALLS = {
    "pos_dim_stable": lambda L, a: L.sort(a, 0, descending=True, stable=True),
    "pos_dim_desc_stable": lambda L, a: L.sort(a, 0, True, stable=True),
    "four_positional": lambda L, a: L.sort(a, 0, True, True),
    "method_pos_dim_stable": lambda L, a: a.sort(0, stable=True),
    "kw_stable": lambda L, a: L.sort(a, stable=True, dim=0, descending=True),
    "positional": lambda L, a: L.sort(a, 0, True),
    "method_kw": lambda L, a: a.sort(dim=0, descending=True),
}


@pytest.mark.parametrize("name", list(_SORT_CALLS))
def test_sort_signatures_match_torch(name):
    """stable= only goes with keyword dim/descending (PyTorch's two signatures)."""
    outs = []
    for L in (torch, dyngrad):
        a = L.tensor([[3.0, 1.0, 2.0], [1.0, 1.0, 0.0]])
        try:
            v, i = _SORT_CALLS[name](L, a)
            outs.append((v.tolist(), i.tolist()))
        except TypeError as e:
            outs.append(str(e).split(" - got")[0])
    assert outs[1] == outs[0]
