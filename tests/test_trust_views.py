"""Views and in-place correctness against PyTorch: single-piece split/chunk/unbind, unbind of
1-D tensors, retained gradients across in-place writes, double backward through in-place ops
on views, saved outputs of in-place ops, PyTorch's view + in-place errors (views of leaves,
views made under no_grad, multi-output views), in-place broadcast shape errors, and in-place
ops on expanded tensors.

Each case is one snippet run with ``torch`` bound to real PyTorch and to dyngrad; ``out``
(when set) is compared value by value, and an exception must match in type and in PyTorch's
leading message."""

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.twin import assert_same, plain, run_snippet  # noqa: E402


_run = run_snippet


def check(code):
    """Run ``code`` with PyTorch and dyngrad: same values, or the same error."""
    t = _run(torch, code)
    d = _run(dyngrad, code)
    if t[0] == "err":
        assert d[0] == "err", f"PyTorch raised {t[1]!r}; dyngrad returned {d[1]!r}"
        assert type(d[1]).__name__ == type(t[1]).__name__, (t[1], d[1])
        lead = str(t[1]).split("\n")[0]
        assert str(d[1]).startswith(lead), f"\ntorch:   {lead}\ndyngrad: {d[1]}"
        return
    if d[0] == "err":
        raise AssertionError(f"dyngrad raised {d[1]!r} where PyTorch gives {t[1]!r}") from d[1]
    assert_same(plain(t[1]), plain(d[1]))


# --- 1. split / chunk / unbind / tensor_split returning one piece ---------------------------
PIECES = ["x.split(3, 0)", "x.split(5, 1)", "x.split([3], 0)", "x.split([4], 1)",
          "x.split(3, -2)", "x.chunk(1, 0)", "x.chunk(1, 1)", "x[:1].chunk(3, 0)",
          "x[:, :1].unbind(1)", "x[:1].unbind(0)", "x.tensor_split(1, 0)",
          "x.tensor_split([], 1)", "x.split(2, 0)", "x.chunk(3, 1)", "x.unbind(1)"]


@pytest.mark.parametrize("expr", PIECES)
def test_split_family_single_piece_gradients(expr):
    check(f"""
    x = torch.arange(12.).reshape(3, 4).requires_grad_()
    ps = {expr}
    s = sum(((p * (torch.arange(float(p.numel())).reshape(p.shape) + i)).sum()
             for i, p in enumerate(ps)), torch.zeros(()))
    s.backward()
    out = [x.grad, [p.grad_fn.name() for p in ps], [p._is_view() for p in ps], len(ps)]
    """)


def test_chunk_single_piece_example():
    check("""
    x = torch.zeros(2, 1, 4, requires_grad=True)
    (c,) = x.chunk(2, 1)
    w = torch.arange(8.).reshape(2, 1, 4)
    (c * w).sum().backward()
    out = [x.grad, c.grad_fn.name()]
    """)


@pytest.mark.parametrize("expr", ["y.split(3, 0)", "y.split([3], 0)", "y.chunk(1, 0)",
                                  "y.chunk(1, 1)", "y[:1].unbind(0)", "y.split(2, 0)",
                                  "y.split([1, 2], 0)", "y.unbind(1)"])
def test_split_family_single_piece_inplace_refused(expr):
    check(f"""
    x = torch.arange(6.).reshape(3, 2).requires_grad_()
    y = x * 1
    ps = {expr}
    ps[0].mul_(2)
    """)


@pytest.mark.parametrize("expr", ["y.split(3, 0)", "y.chunk(1, 1)", "y[:1].unbind(0)",
                                  "y.tensor_split(1, 0)"])
def test_split_family_single_piece_create_graph(expr):
    check(f"""
    x = torch.arange(1., 7.).reshape(3, 2).requires_grad_()
    y = x * x
    ps = {expr}
    l = sum(((p ** 3).sum() for p in ps), torch.zeros(()))
    g, = torch.autograd.grad(l, x, create_graph=True)
    h, = torch.autograd.grad(g.sum(), x)
    out = [g, h]
    """)


def test_split_single_piece_untracked_inplace_shares_storage():
    check("""
    y = torch.arange(6.).reshape(3, 2)
    (a,) = y.split(3)
    a.mul_(2)
    out = [y, a]
    """)


# --- 2. unbind of a 1-D tensor gives views --------------------------------------------------
def test_unbind_1d_pieces_are_views():
    check("""
    y = torch.arange(3.)
    a, b, c = y.unbind()
    b.add_(10)
    out = [y, b, b._is_view(), b._base is y, b.data_ptr() == y.data_ptr() + 4]
    """)


def test_unbind_1d_pieces_are_views_with_grad():
    check("""
    x = torch.arange(3.).requires_grad_()
    a, b, c = (x * 1).unbind()
    (a * 2 + b * 3).backward()
    out = [x.grad, a.grad_fn.name(), a._is_view()]
    """)


def test_iterating_1d_tensor_yields_views():
    check("""
    y = torch.arange(3.)
    for e in y:
        e.mul_(2)
    out = [y]
    """)


# --- 3. retain_grad on a non-leaf written in place ------------------------------------------
SETITEMS = ["y[1] = w * 3", "y[[0, 2]] = w * 3", "y[1, 0] = 5.", "y[y > 4] = 0.",
            "y[...] = torch.ones(3, 2) * w", "y[0] = 1.\ny[1, 1] = x[0, 0] * 5",
            "y.mul_(3)", "y[1:].mul_(3)", "y[:, 0] = w[0]", "y.t()[1].exp_()"]


@pytest.mark.parametrize("stmt", SETITEMS)
def test_retain_grad_of_nonleaf_written_in_place(stmt):
    check(f"""
    x = torch.arange(6.).reshape(3, 2).div(4).requires_grad_()
    w = torch.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    {stmt}
    (y * torch.arange(6.).reshape(3, 2)).sum().backward()
    out = [x.grad, w.grad, y.grad]
    """)


def test_retain_grad_of_view_written_through():
    check("""
    x = torch.arange(6.).reshape(3, 2).requires_grad_()
    w = torch.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    v = y[1:]
    v.retain_grad()
    v[0] = w * 3
    (y * torch.arange(6.).reshape(3, 2)).sum().backward()
    out = [x.grad, w.grad, y.grad, v.grad]
    """)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_retain_grad_of_view_survives_base_inplace(grad_mode):
    check(f"""
    x = torch.arange(6.).reshape(3, 2).requires_grad_()
    y = x * 2
    v = y[1:]
    v.retain_grad()
    with torch.set_grad_enabled({grad_mode}):
        y.mul_(3)
    (v * torch.arange(4.).reshape(2, 2)).sum().backward()
    out = [x.grad, v.grad]
    """)


def test_retain_grad_views_of_views_of_views():
    check("""
    x = torch.arange(24.).reshape(2, 3, 4).div(10).requires_grad_()
    y = x * 1
    v1 = y[1]; v2 = v1.t(); v3 = v2[1:3]
    for t in (y, v1, v2, v3):
        t.retain_grad()
    v3.mul_(2)
    y.add_(1)
    v1.mul_(x[0])
    l = (y * y).sum() + (v3 * v3).sum() + (v2 ** 3).sum()
    l.backward()
    out = [x.grad, y.grad, v1.grad, v2.grad, v3.grad,
           [t.grad_fn.name() for t in (y, v1, v2, v3)]]
    """)


# --- 4. backward twice / create_graph after an in-place op on a view ------------------------
INPLACE = ["v.mul_(2)", "v.exp_()", "v.sigmoid_()", "v.tanh_()", "v.pow_(2)", "v.sqrt_()",
           "v.copy_(x[0] * 3)", "v.mul_(x[2])", "v.reciprocal_()"]


@pytest.mark.parametrize("op", INPLACE)
def test_backward_twice_after_inplace_on_view(op):
    check(f"""
    x = torch.arange(1., 7.).reshape(3, 2).div(4).requires_grad_()
    y = x * x
    v = y[1]
    {op}
    l = (y * y).sum() + (v * v).sum()
    l.backward(retain_graph=True)
    l.backward()
    out = [x.grad]
    """)


@pytest.mark.parametrize("op", INPLACE)
def test_create_graph_after_inplace_on_view(op):
    check(f"""
    x = torch.arange(1., 7.).reshape(3, 2).div(4).requires_grad_()
    y = x * x
    v = y[1]
    {op}
    l = (y * y).sum()
    g, = torch.autograd.grad(l, x, create_graph=True)
    h, = torch.autograd.grad((g * g).sum(), x)
    out = [g, h]
    """)


def test_backward_create_graph_then_backward_after_inplace_on_view():
    check("""
    x = torch.arange(1., 7.).reshape(3, 2).div(4).requires_grad_()
    y = x * x
    y[1].exp_()
    y[:, 0].tanh_()
    (y ** 3).sum().backward(create_graph=True)
    g = x.grad
    x.grad = None
    g.sum().backward()
    out = [g, x.grad]
    """)


def test_second_backward_without_retain_still_refused():
    check("""
    x = torch.arange(1., 7.).reshape(3, 2).requires_grad_()
    y = x * x
    y[1].exp_()
    l = y.sum()
    l.backward()
    l.backward()
    """)


# --- saved outputs of in-place ops are version checked ---------------------------------------
@pytest.mark.parametrize("code", [
    "y.exp_(); y.mul_(2)",
    "v = y[1]; v.exp_(); v.mul_(2)",
    "y.sigmoid_(); y[0].zero_()",
    "v = y[1]; v.tanh_(); y.add_(1)",
])
def test_saved_output_of_inplace_op_is_version_checked(code):
    check(f"""
    x = torch.arange(1., 7.).reshape(3, 2).div(4).requires_grad_()
    y = x * 1
    {code}
    y.sum().backward()
    out = [x.grad]
    """)


# --- 5. PyTorch's view + in-place errors -----------------------------------------------------
@pytest.mark.parametrize("code", [
    # views of a leaf that is itself a view
    "b = torch.ones(3, 2); v = b[1:].requires_grad_(); v.view(4).add_(1)",
    "b = torch.ones(3, 2); v = b[1:].requires_grad_(); v.add_(1)",
    "b = torch.ones(3, 2); v = b[1:].requires_grad_(); v[0].view(2).add_(1)",
    "x = torch.ones(3, 2, requires_grad=True); v = x.detach()[1:].requires_grad_(); v.t().add_(1)",
    "x = torch.ones(3, 2, requires_grad=True); v = x[0]; v.view(2).add_(1)",
    # views made under no_grad
    "x = torch.ones(3, 2, requires_grad=True)\nwith torch.no_grad(): v = x[0]\nv[1:].mul_(2)",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1\nwith torch.no_grad(): v = y[0]\nv[1:].mul_(2)",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1\nwith torch.no_grad(): v = y.t()\nv.mul_(2)",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1\nwith torch.no_grad(): v = y[0]; w = v.t()\nw.mul_(2)",
    "y = torch.ones(3, 2); w = torch.ones(2, requires_grad=True)\nwith torch.no_grad(): v = y[0]\nv.mul_(w)",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1\nwith torch.no_grad(): v = y[0]; v.mul_(2)\nout = v.grad_fn",
    "x = torch.ones(3, 2, requires_grad=True)\nwith torch.no_grad(): v = x[0]; x.mul_(2)\nout = v.is_leaf",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1\nwith torch.no_grad(): v = y[0]\ny.mul_(2)\nz = v * 2",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1\nwith torch.no_grad(): a, b = y.split(2)\na.mul_(2)",
    # outputs of multi-view ops, and views of them
    "x = torch.ones(3, 2, requires_grad=True); a, b, c = (x * 1).unbind(); a[0].mul_(2)",
    "x = torch.ones(3, 2, requires_grad=True); a, b, c = (x * 1).unbind(); a.view(2).mul_(2)",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; y.t().unbind(0)[0].t().mul_(2)",
    "y = torch.ones(3, 2); w = torch.ones(2, 2, requires_grad=True); a, b = y.split(2); a.mul_(w)",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.split(2)\n"
    "with torch.no_grad(): a.mul_(2)\nout = a.grad_fn",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.split(2); y.mul_(2); out = b.grad_fn",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.split(2); y.mul_(2); b.sum()",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.split(2); a.detach().mul_(2); out = a.grad_fn",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.split(2); y.mul_(2); a.mul_(2)",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.split(2); y.mul_(2); a.retain_grad()",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.chunk(2); l = (a * a).sum()\n"
    "with torch.no_grad(): b.mul_(2)\nl.backward()",
    # allowed: untracked changes, views whose base needs no grad
    "y = torch.ones(3, 2); a, b = y.split(2); y.mul_(2); out = [a.grad_fn, a.is_leaf, a * 2]",
    "x = torch.ones(3, 2, requires_grad=True); y = x * 1; a, b = y.split(2); y.mul_(2)\n"
    "with torch.no_grad(): a.mul_(2)\nout = y",
    "x = torch.arange(6.).reshape(3, 2).requires_grad_(); y = x * 1; a, b = y.split(2)\n"
    "l = (a * 3).sum(); y.mul_(2); l.backward(); out = x.grad",
])
def test_view_inplace_errors(code):
    check(code)


@pytest.mark.parametrize("op", ["a.lerp_(b, 0.5)", "a.lerp_(b, w)", "a.copy_(b)", "a.add_(b)",
                                "a.mul_(b)", "a.sub_(b, alpha=2)", "a.div_(b)", "a.pow_(b)",
                                "a.clamp_(b)", "a.clamp_(max=b)", "a.atan2_(b)", "a.fmod_(b)",
                                "a.remainder_(b)", "a.copysign_(b)", "a.hypot_(b)",
                                "a.xlogy_(b)", "a.floor_divide_(b)"])
@pytest.mark.parametrize("shapes", [((3, 1), (3, 4)), ((1,), (3,)), ((3,), (2, 3)),
                                    ((3,), (4,)), ((), (2,))])
@pytest.mark.parametrize("grad", [False, True])
def test_inplace_operand_must_broadcast_to_self(op, shapes, grad):
    check(f"""
    x = torch.full({shapes[0]}, 2.).requires_grad_({grad})
    a = x * 1
    b = torch.full({shapes[1]}, 3.)
    w = torch.full({shapes[1]}, .25)
    {op}
    out = [a]
    """)


# --- 6. in-place on expanded tensors ---------------------------------------------------------
@pytest.mark.parametrize("expr", [
    "b.expand(1, 3).fill_(2)", "b.expand(1, 3).zero_()", "b.expand(1, 3).clamp_(0, 1)",
    "b.expand(1, 3).add_(1)", "b.expand(1, 3).mul_(torch.full((3,), 2.))",
    "b.expand(1, 1, 3).exp_()", "b.expand(1, 3).add_(1, alpha=2)", "b.expand(1, 3).copy_(b + 5)",
    "b.expand(2, 3)[0].add_(1)", "b.expand(2, 3).fill_(1)", "b.expand(2, 3).zero_()",
    "b.expand(2, 3).add_(1)", "b.expand(2, 3).clamp_(1)", "b.expand(2, 3).mul_(2)",
    "b.expand(2, 3).copy_(torch.ones(2, 3))", "b.expand(2, 3).exp_()",
    "b.expand(2, 3).add_(1, alpha=2)",
])
def test_inplace_on_expanded(expr):
    check(f"""
    b = torch.zeros(1, 3)
    out = [{expr}, b]
    """)


def test_inplace_on_empty_expand():
    check("""
    z = torch.zeros(0, 1)
    e = z.expand(0, 5).zero_()
    out = [e, e.shape]
    """)


def test_inplace_on_expanded_with_grad():
    check("""
    x = torch.arange(3.).requires_grad_()
    y = x * 1
    e = y.expand(1, 3)
    e.mul_(torch.arange(3.))
    (y * y).sum().backward()
    out = [x.grad, y, e.grad_fn.name(), y.grad_fn.name()]
    """)
    check("""
    x = torch.arange(3.).requires_grad_()
    y = x * 1
    y.expand(2, 3).mul_(2)
    """)


@pytest.mark.parametrize("op", ["v.exp_()", "v.sigmoid_()", "v.mul_(x[0])", "v.pow_(3)"])
def test_second_order_through_inplace_on_view_twice(op):
    check(f"""
    x = torch.arange(1., 7.).reshape(3, 2).div(4).requires_grad_()
    y = x * x
    v = y[1]
    {op}
    l = (v * v * v).sum() + (y ** 3).sum()
    g, = torch.autograd.grad(l, x, create_graph=True)
    (g * g).sum().backward(retain_graph=True)
    (g * g).sum().backward()
    h1, = torch.autograd.grad(g.sum(), x, retain_graph=True)
    h2, = torch.autograd.grad(g.sum(), x)
    out = [g, x.grad, h1, h2]
    """)


@pytest.mark.parametrize("src,size,mod", [
    ("(4,)", "(3, 4)", "i.add_(1)"), ("(1, 4)", "(3, 4)", "i[:, :1].add_(1)"),
    ("(3, 1)", "(3, 4)", "i.add_(1)"), ("(1, 4)", "(1, 4)", "i.add_(1)"),
    ("(4,)", "(3, 4)", "o[:1].mul_(3)"), ("(1, 4)", "(3, 4)", "o[1].mul_(3)"),
    ("(3, 1)", "(3, 4)", "o[:, 2].mul_(3)"), ("(1, 4)", "(2, 4)", "o[0, 1:3].mul_(3)"),
])
def test_expanded_view_after_inplace_change(src, size, mod):
    # the expand's history is rebuilt after the change: repeated elements' gradients add up
    check(f"""
    x = torch.arange(1., 5.)[:torch.zeros{src}.numel()].reshape{src}.requires_grad_()
    i = x * 1
    o = i.expand{size}
    {mod}
    g = torch.arange(float(o.numel())).reshape(o.shape)
    o.backward(g, retain_graph=True)
    a = x.grad.clone()
    x.grad = None
    gg, = torch.autograd.grad((o * o).sum(), x, create_graph=True)
    hh, = torch.autograd.grad((gg * gg).sum(), x)
    out = [a, gg, hh, i, o]
    """)


@pytest.mark.parametrize("how", ["fill_", "zero_", "copy_", "setitem"])
def test_overwritten_region_sends_zeros_not_nan(how):
    # a NaN gradient reaching a region that an in-place write replaced must not leak into
    # the old history: PyTorch sends zeros there, not 0 * NaN
    def prog(L):
        x = L.tensor([[0.5, -1.0], [2.0, 3.0]], dtype=L.float64, requires_grad=True)
        y = x * 2
        v = y[:, :1]
        w = v[0]
        if how == "fill_":
            v.fill_(1.5)
        elif how == "zero_":
            v.zero_()
        elif how == "copy_":
            v.copy_(L.ones(2, 1, dtype=L.float64))
        else:
            y[:, :1] = 4.0
        w.var(0, correction=1).backward()  # var of one element: NaN gradient
        return x.grad.tolist()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert prog(dyngrad) == prog(torch)


@pytest.mark.parametrize("how", ["copy_", "setitem", "setitem0", "fill_", "bool_copy_"])
def test_copy_into_integer_tensor_records_no_history(how):
    # an integer (or bool) tensor cannot require grad: copying a tensor that requires grad
    # into it records nothing, as PyTorch; fill_ with a 0-d tensor is PyTorch's exception
    def prog(L):
        x = L.zeros(3, dtype=L.bool if how == "bool_copy_" else L.long)
        s = L.ones(3, requires_grad=True)
        if how in ("copy_", "bool_copy_"):
            x.copy_(s)
        elif how == "setitem":
            x[1:] = s[1:]
        elif how == "setitem0":
            x[0] = s[0]
        else:
            x.fill_(s[0])
        return x.requires_grad, type(x.grad_fn).__name__, x.tolist()
    assert prog(dyngrad) == prog(torch)


@pytest.mark.parametrize("dtype", ["long", "float64"])
@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_setitem_zero_dim_value_fills_or_copies_as_torch(dtype, shape):
    # a 0-d value fills a region of other shape (fill_, recorded even into integers) and is
    # copied into a 0-d region (copy_, which records nothing into integers)
    def prog(L):
        x = L.zeros(*shape, dtype=getattr(L, dtype))
        if dtype == "float64":
            x = x * 1
        x[0] = L.ones((), dtype=L.float64, requires_grad=True) * 2
        return x.requires_grad, type(x.grad_fn).__name__, x.tolist()
    assert prog(dyngrad) == prog(torch)


# --- a view's history rebuilt lazily after its base gained one in place -------------------
# (PyTorch makes it when grad_fn or is_leaf is read, or when an op collects its edges, even an
# op whose kernel then fails; until then the in-place check sees a leaf that requires grad)
_LAZY_SETUP = """
    w = torch.ones(4, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, 4, 4, dtype=torch.float64)
    v = b.view(-1)
    b[0] = w
    """


@pytest.mark.parametrize("touch", ["pass", "v.is_leaf", "v.grad_fn", "v.requires_grad",
                                   "v.grad", "v.output_nr", "v._version", "v.sum()",
                                   "v.detach()", "b.exp_()"])
def test_lazy_view_history_made_by_what_reads_it(touch):
    check(_LAZY_SETUP + f"""
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        {touch}
    try:
        v.mul_(torch.ones(16, dtype=torch.float64))
        r = str(v.grad_fn is not None)
    except RuntimeError as e:
        r = str(e).splitlines()[0]
    out = [r, len(caught)]
    """)


@pytest.mark.parametrize("failing", ["torch.sub(v, torch.ones(4, 4))", "v.sub(torch.ones(4, 4))",
                                     "v - torch.ones(4, 4)", "torch.ones(4, 4) * v",
                                     "torch.cat([v, torch.ones(4, 4)])", "torch.sub(v, 'x')",
                                     "torch.sub(v.detach(), torch.ones(4, 4))"])
def test_lazy_view_history_made_by_a_failing_op(failing):
    check(_LAZY_SETUP + f"""
    try:
        {failing}
    except (RuntimeError, TypeError):
        pass
    try:
        v.mul_(torch.ones(16, dtype=torch.float64))
        out = "history made"
    except RuntimeError as e:
        out = str(e).splitlines()[0]
    """)


def test_grad_warning_only_for_a_non_leaf_without_a_gradient():
    check("""
    import warnings
    a = torch.ones(2, requires_grad=True)
    b, c = a * 2, a * 3
    b.grad = torch.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b.grad
        n_set = len(caught)
        c.grad
    out = [n_set, len(caught)]
    """)


# --- an integer tensor given a history by an in-place copy (PyTorch's CopySlices) ------------
_INT_SETUP = """
    a = torch.zeros(2, 2, dtype=torch.long)
    w = torch.ones((), requires_grad=True)
    a[0] = w * 2
    """


@pytest.mark.parametrize("use", ["a[1:]", "a[0]", "a.view(-1)", "a.sum()", "a * 2",
                                 "a.float() * 2", "a * 2.0", "a.t()", "a.clone()",
                                 "torch.cat([a, a])", "a.neg()", "a.abs()"])
def test_integer_history_results(use):
    check(_INT_SETUP + f"""
    r = {use}
    out = [r.requires_grad, r.dtype, type(r.grad_fn).__name__, a.requires_grad, a.is_leaf,
           type(a.grad_fn).__name__]
    """)


@pytest.mark.parametrize("loss", ["a.float().sum()", "(a * 1.5).sum()", "a.double().mean()"])
def test_integer_history_backward_is_refused(loss):
    t = _run(torch, _INT_SETUP + f"({loss}).backward()")
    d = _run(dyngrad, _INT_SETUP + f"({loss}).backward()")
    assert t[0] == d[0] == "err"
    assert type(t[1]) is RuntimeError and type(d[1]) is RuntimeError
    lead = "isDifferentiableType(grad.scalar_type()) INTERNAL ASSERT FAILED"
    assert str(t[1]).startswith(lead) and str(d[1]).startswith(lead)
    assert "dtype Long" in str(d[1])   # (dyngrad's says what went wrong, not where in C++)


@pytest.mark.parametrize("first", [True, False])
def test_integer_history_refused_before_other_leaves_accumulate(first):
    terms = ["(a * 1.5).sum()", "(x * 2).sum()"]
    check(_INT_SETUP + f"""
    x = torch.ones(3, requires_grad=True)
    loss = {' + '.join(terms if first else terms[::-1])}
    try:
        loss.backward()
        failed = False
    except RuntimeError:
        failed = True
    out = [failed, x.grad is None, w.grad is None]
    """)
