"""torch.autograd beyond backward(): hooks, saved-tensor hooks, custom Functions, anomaly
mode, autograd.functional and gradcheck, with PyTorch's messages."""
import warnings

import numpy as np
import pytest

import dyngrad as torch
from dyngrad.autograd import Function
from dyngrad.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp


def _x():
    return torch.tensor([1.0, 2.0], requires_grad=True)


# --- tensor hooks -------------------------------------------------------------------------
def test_hooks_run_in_registration_order_and_retain_grad_sees_final_value():
    log = []
    x = _x()
    y = x * 2
    y.register_hook(lambda g: log.append(("h1", g.tolist())))
    y.register_hook(lambda g: g * 10)
    y.retain_grad()
    y.register_hook(lambda g: log.append(("h3", g.tolist())))
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: log.append(("x", g.tolist())))
    (y * y).sum().backward()
    assert log == [("h1", [4.0, 8.0]), ("h3", [40.0, 80.0]), ("x", [81.0, 161.0])]
    assert y.grad.tolist() == [40.0, 80.0] and x.grad.tolist() == [81.0, 161.0]


def test_hook_handle_remove_and_context():
    x = _x()
    h = x.register_hook(lambda g: g * 100)
    h.remove()
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_hooks_apply_to_autograd_grad_targets():
    x = _x()
    y = x * 2
    y.register_hook(lambda g: g * 5)
    assert torch.autograd.grad((y * 3).sum(), y)[0].tolist() == [15.0, 15.0]
    # a target that must also run (x is below it) captures the raw gradient, as in PyTorch
    y = x * 2
    y.register_hook(lambda g: g * 5)
    y.retain_grad()
    gx, gy = torch.autograd.grad((y * 3).sum(), [x, y])
    assert gx.tolist() == [30.0, 30.0] and gy.tolist() == [3.0, 3.0]
    assert y.grad.tolist() == [15.0, 15.0]
    x2 = torch.tensor([1.0], requires_grad=True)
    x2.register_hook(lambda g: g * 7)
    assert torch.autograd.grad((x2 * 2).sum(), x2)[0].tolist() == [14.0]


def test_hook_result_checked():
    x = _x()
    y = x * 2
    y.register_hook(lambda g: torch.ones(3))
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        y.sum().backward()
    y = x * 2
    y.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError, match=r"changed the type of value \(was torch.FloatTensor "
                                           r"got torch.DoubleTensor\)"):
        y.sum().backward()
    y = x * 2
    y.register_hook(lambda g: 5)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.tensor([1.0]).register_hook(lambda g: g)


def test_node_hooks_and_prehooks():
    log = []
    x = _x()
    y = x * 3

    def post(gi, go):
        log.append(("post", gi[0].tolist(), go[0].tolist()))
        return (gi[0] * 2, gi[1])

    def pre(go):
        log.append(("pre", go[0].tolist()))
        return (go[0] + 1,)

    y.grad_fn.register_hook(post)
    y.grad_fn.register_prehook(pre)
    y.sum().backward()
    assert log == [("pre", [1.0, 1.0]), ("post", [6.0, 6.0], [2.0, 2.0])]
    assert x.grad.tolist() == [12.0, 12.0]
    y = x * 2
    y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    with pytest.raises(RuntimeError, match="returned an incorrect number of values "
                                           r"\(got 2, but expected 1\)"):
        y.sum().backward()


def test_post_accumulate_grad_hook_and_accumulate_node():
    x = _x()
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * x).sum().backward()
    assert seen == [[2.0, 4.0]]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    acc = (x * 1).grad_fn.next_functions[0][0]
    assert acc.name() == "torch::autograd::AccumulateGrad"
    with pytest.raises(RuntimeError, match="^Cannot construct$"):  # as PyTorch's node types
        type(acc)(x)
    x.grad = None
    y = x * 2
    y.grad_fn.next_functions[0][0].register_prehook(lambda go: (go[0] * 0 + 9,))
    y.sum().backward()
    assert x.grad.tolist() == [9.0, 9.0]


def test_multi_grad_hook():
    a, b = _x(), _x()
    got = []
    torch.autograd.graph.register_multi_grad_hook((a, b), lambda gs: got.append(len(gs)))
    (a * b).sum().backward()
    assert got == [2]


def test_gradient_edge():
    x = _x()
    y = x * 2
    e = torch.autograd.graph.get_gradient_edge(y)
    assert e.node is y.grad_fn and e.output_nr == 0
    assert isinstance(y.grad_fn, torch.autograd.graph.Node)


# --- saved tensor hooks ----------------------------------------------------------------------
def test_saved_tensors_hooks_apply_to_builtin_ops():
    packed, unpacked = [], []

    def pack(t):
        packed.append(t)
        return t.detach() * 2

    def unpack(t):
        unpacked.append(t)
        return t

    x = _x()
    y = torch.tensor([3.0, 4.0], requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        z = (x * y).sum()
    assert len(packed) == 2
    z.backward()
    assert len(unpacked) == 2
    # the gradients were computed from the doubled saved values
    assert x.grad.tolist() == [6.0, 8.0] and y.grad.tolist() == [2.0, 4.0]
    # no hooks: unaffected
    x.grad = None
    (x * y).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]


def test_saved_tensors_hooks_on_outputs_and_functions_and_create_graph():
    x = _x()
    n = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: (n.append(1), t)[1], lambda t: t):
        y = torch.exp(x)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    (h,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    assert n

    class Sq(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 10, lambda t: t):
        out = Sq.apply(x)
    out.sum().backward()
    assert x.grad.tolist() == [20.0, 40.0]


def test_disable_saved_tensors_hooks():
    with torch.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
        x = _x()
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


# --- custom Function -------------------------------------------------------------------------
class MulK(Function):
    @staticmethod
    def forward(ctx, x, k, y):
        ctx.save_for_backward(x, y)
        ctx.k = k
        ctx.nig = ctx.needs_input_grad
        return x * y * k

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * ctx.k, None, g * x * ctx.k


def test_function_basic_and_needs_input_grad():
    x, y = _x(), torch.tensor([3.0, 4.0])
    o = MulK.apply(x, 2.0, y)
    assert type(o.grad_fn).__name__ == "MulKBackward" and o.grad_fn.name() == "MulKBackward"
    assert o.grad_fn.needs_input_grad == (True, False, False)
    o.sum().backward()
    assert x.grad.tolist() == [6.0, 8.0]
    assert len(o.grad_fn.next_functions) == 2
    o2 = MulK.apply(y, 2, y)
    assert not o2.requires_grad and o2.grad_fn is None


def test_function_wrong_gradient_counts_and_types():
    class Few(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    class NonT(Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return torch.ones(3)

    class RetInt(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return 3

    x = _x()
    with pytest.raises(RuntimeError, match=r"function FewBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)"):
        Few.apply(x, x).sum().backward()
    with pytest.raises(RuntimeError, match="returned a gradient different than None at position 2"):
        NonT.apply(x, 2).sum().backward()
    with pytest.raises(RuntimeError, match=r"returned an invalid gradient at index 0 - got \[3\] "
                                           r"but expected shape compatible with \[2\]"):
        BadShape.apply(x).backward()
    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got int\)"):
        RetInt.apply(x).sum().backward()
    with pytest.raises(TypeError, match="save_for_backward can only save variables, but argument "
                                        "1 is of type int"):
        class S(Function):
            @staticmethod
            def forward(ctx, a):
                ctx.save_for_backward(a, 3)
                return a

        S.apply(x)


def test_function_mark_dirty_non_differentiable_materialize():
    class Dirty(Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = _x()
    a = x.clone()
    b = Dirty.apply(a)
    assert b is a and a.grad_fn.name() == "DirtyBackward"
    b.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in "
                                           "an in-place operation."):
        Dirty.apply(x)

    class ND(Function):
        @staticmethod
        def forward(ctx, a):
            p, q = a * 2, a * 3
            ctx.mark_non_differentiable(q)
            return p, q

        @staticmethod
        def backward(ctx, gp, gq):
            assert gq.tolist() == [0.0, 0.0]  # materialized
            return gp * 2

    x.grad = None
    p, q = ND.apply(x)
    assert p.requires_grad and not q.requires_grad
    p.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]

    class Mat(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(False)
            return a * 2, a * 3

        @staticmethod
        def backward(ctx, ga, gb):
            assert gb is None
            return ga * 2

    x.grad = None
    Mat.apply(x)[0].sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_function_version_check_and_freed():
    class Keep(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a

    x = _x()
    a = x * 1
    o = Keep.apply(a)
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        o.sum().backward()
    o = Keep.apply(x).sum()
    o.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        o.backward()


def test_function_setup_context_identity_and_double_backward():
    class Setup(Function):
        @staticmethod
        def forward(a, k):
            return a * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = _x()
    Setup.apply(x, 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]

    class Ident(Function):
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 5

    o = Ident.apply(x)
    assert o is not x and o._base is x and o.grad_fn.name() == "IdentBackward"

    class Cube(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * a ** 2 * g

    (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    assert h.tolist() == [6.0, 12.0]


def test_once_differentiable():
    class Once(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 2

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = _x()
    (g,) = torch.autograd.grad(Once.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad
    v = torch.ones(2, requires_grad=True)
    (g,) = torch.autograd.grad(Once.apply(x), x, grad_outputs=v, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_function_instantiation_is_legacy():
    with pytest.warns(DeprecationWarning):
        f = MulK()
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        f(_x())


# --- anomaly ---------------------------------------------------------------------------------
def _fwd(x):
    return x / x


def test_anomaly_nan_names_node_and_forward_traceback():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch.autograd.detect_anomaly():
            assert torch.autograd.is_anomaly_enabled()
            y = _fwd(x)
            assert "traceback_" in y.grad_fn.metadata
            with pytest.raises(RuntimeError, match=r"Function 'DivBackward0' returned nan values "
                                                   r"in its 1th output."):
                y.sum().backward()
    assert not torch.autograd.is_anomaly_enabled()
    msgs = [str(m.message) for m in w]
    assert any("Anomaly Detection has been enabled" in m for m in msgs)
    err = [m for m in msgs if m.startswith("Error detected in DivBackward0")]
    assert err and "return x / x" in err[0] and "Traceback of forward call" in err[0]


def test_anomaly_exception_in_custom_backward():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")

    x = _x()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with torch.autograd.set_detect_anomaly(True, check_nan=False):
            assert not torch.autograd.is_anomaly_check_nan_enabled()
            with pytest.raises(ValueError, match="boom"):
                Bad.apply(x).sum().backward()
    assert any(str(m.message).startswith("Error detected in BadBackward") for m in w)
    # without anomaly mode: nan passes silently
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = _fwd(torch.tensor([0.0], requires_grad=True))
        y.sum().backward()


# --- functional ------------------------------------------------------------------------------
def test_functional_api():
    f = lambda x: x ** 2 * 3  # noqa: E731
    x = torch.tensor([1.0, 2.0])
    assert jacobian(f, x).tolist() == [[6.0, 0.0], [0.0, 12.0]]
    J = jacobian(lambda a, b: (a * b, a + b), (x, x))
    assert J[0][0].tolist() == [[1.0, 0.0], [0.0, 2.0]] and J[1][1].tolist() == [[1.0, 0.0],
                                                                                  [0.0, 1.0]]
    cube = lambda x: (x ** 3).sum()  # noqa: E731
    assert hessian(cube, x).tolist() == [[6.0, 0.0], [0.0, 12.0]]
    out, v = vjp(f, x, torch.ones(2))
    assert out.tolist() == [3.0, 12.0] and v.tolist() == [6.0, 12.0]
    out, v = jvp(f, x, torch.ones(2))
    assert v.tolist() == [6.0, 12.0]
    assert hvp(cube, x, torch.ones(2))[1].tolist() == [6.0, 12.0]
    assert vhp(cube, x, torch.ones(2))[1].tolist() == [6.0, 12.0]
    assert jacobian(lambda a, b: a * 2, (x, x))[1].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(RuntimeError, match="independent of input 1"):
        jacobian(lambda a, b: a * 2, (x, x), strict=True)
    with pytest.raises(RuntimeError, match="v can only be None"):
        vjp(f, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size"):
        vjp(f, x, torch.ones(3))
    xr = x.clone().requires_grad_()
    j = jacobian(f, xr, create_graph=True)
    assert j.requires_grad
    assert jacobian(lambda a: a.sum(), x, vectorize=True).tolist() == [1.0, 1.0]


# --- gradcheck -------------------------------------------------------------------------------
def test_gradcheck():
    x = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(torch.tanh, (x,), check_forward_ad=True)
    assert torch.autograd.gradgradcheck(torch.sin, (x,))

    class Bad(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    with pytest.raises(torch.autograd.GradcheckError,
                       match="Jacobian mismatch for output 0 with respect to input 0"):
        torch.autograd.gradcheck(Bad.apply, (x,))
    assert torch.autograd.gradcheck(Bad.apply, (x,), raise_exception=False) is False
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        torch.autograd.gradcheck(torch.tanh, (x.detach(),))
    with pytest.warns(UserWarning, match="not a double precision"):
        torch.autograd.gradcheck(torch.tanh, (torch.tensor([0.5], requires_grad=True),),
                                 atol=1e-2, rtol=1e-2, eps=1e-3)
    assert torch.autograd.gradcheck(lambda a, b: (a * b, a.exp()),
                                    (x, x.detach().clone().requires_grad_()), fast_mode=True,
                                    check_forward_ad=True)
