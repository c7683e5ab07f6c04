"""select, narrow, diagonal (defview), diagonal_copy, complex/polar (defop) and the in-place
random fills (defrandom) against PyTorch: nodes, saved values, double-backward nodes,
forward-mode tangents, and the fills' in-place behaviour."""
import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")


def _saved(node):
    return sorted((a, getattr(node, a)) for a in dir(node) if a.startswith("_saved_"))


VIEWS = ["x.narrow(1, -3, 2)", "x.narrow(-1, 1, 2)", "x.narrow(0, 3, 0)", "x.select(1, -1)",
         "x.select(-2, 2)", "x.diagonal()", "x.diagonal(1, -1, 0)", "m.diagonal(x, -2)",
         "m.diag(x, -1)", "m.diagonal_copy(x, 1, -1, 0)", "x.split_with_sizes([1, 2])[1]"]


@pytest.mark.parametrize("expr", VIEWS)
def test_view_nodes_and_double_backward_as_torch(expr):
    out = []
    for m in (torch, dyngrad):
        x = m.tensor(np.arange(12.0).reshape(3, 4) * 0.5 - 1, dtype=m.float64,
                     requires_grad=True)
        y = eval(expr)
        g = m.ones_like(y).mul(1.5).requires_grad_()
        gx, = m.autograd.grad(y, x, g, create_graph=True)
        gg, = m.autograd.grad(gx.sum(), g)
        out.append((type(y.grad_fn).__name__, _saved(y.grad_fn), y.detach().tolist(),
                    gx.detach().tolist(), type(gx.grad_fn).__name__, _saved(gx.grad_fn),
                    gg.tolist()))
    assert out[0] == out[1]


@pytest.mark.parametrize("expr", ["x.narrow(1, 1, 2)", "x.select(0, 2)", "x.diagonal(1)",
                                  "m.diagonal_copy(x, -1)"])
def test_view_forward_mode_as_torch(expr):
    res = []
    for m in (torch, dyngrad):
        x = m.tensor(np.arange(12.0).reshape(3, 4), dtype=m.float64)
        t = m.tensor(np.arange(12.0).reshape(3, 4) * 0.1, dtype=m.float64)
        res.append(m.func.jvp(lambda x, m=m: eval(expr, {"m": m, "x": x}), (x,), (t,))[1].tolist())
    assert res[0] == res[1]


FILLS = [("uniform_", ()), ("normal_", ()), ("bernoulli_", (0.5,)), ("cauchy_", ()),
         ("exponential_", ()), ("geometric_", (0.5,)), ("log_normal_", ()), ("random_", ()),
         ("random_", (5,)), ("random_", (1, 5))]


@pytest.mark.parametrize("name,args", FILLS)
def test_fill_records_torchs_node_with_zero_gradient(name, args):
    out = []
    for m in (torch, dyngrad):
        x = m.ones(3, 4, dtype=m.float64, requires_grad=True)
        y = x * 1
        r = getattr(y, name)(*args)
        assert r is y
        node = y.grad_fn
        out.append((type(node).__name__, [type(f).__name__ for f, _ in node.next_functions],
                    _saved(node), y._version))
        y.sum().backward()
        assert x.grad.abs().sum().item() == 0
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            getattr(x, name)(*args)
    assert out[0] == out[1]


def test_bernoulli_tensor_p_has_an_edge_and_zero_gradient():
    for m in (torch, dyngrad):
        x = m.ones(3, 4, requires_grad=True)
        p = m.full((4,), 0.5, requires_grad=True)
        y = (x * 1).bernoulli_(p)
        assert type(y.grad_fn).__name__ == "BernoulliBackward1"
        assert len(y.grad_fn.next_functions) == 2
        y.sum().backward()
        assert p.grad.tolist() == [0.0] * 4


@pytest.mark.parametrize("name,args", FILLS[:3])
def test_fill_tangent_is_zero_as_torch(name, args):
    for m in (torch, dyngrad):
        x, t = m.ones(3, 4, dtype=m.float64), m.ones(3, 4, dtype=m.float64)
        _, tan = m.func.jvp(lambda x: getattr(x * 1, name)(*args), (x,), (t,))
        assert tan.abs().sum().item() == 0


def test_fill_consumes_the_generator_once_per_call():
    dyngrad.manual_seed(7)
    a = dyngrad.zeros(5).uniform_()
    b = dyngrad.zeros(5).normal_()
    dyngrad.manual_seed(7)
    a2 = dyngrad.zeros(5).uniform_()
    b2 = dyngrad.zeros(5).normal_()
    assert a.tolist() == a2.tolist() and b.tolist() == b2.tolist()


def test_complex_and_polar_nodes_as_torch():
    out = []
    for m in (torch, dyngrad):
        a = m.tensor([[0.5, 1.0], [2.0, 3.0]], dtype=m.float64, requires_grad=True)
        b = m.tensor([0.3, -1.0], dtype=m.float64, requires_grad=True)
        c, p = m.complex(a, b), m.polar(a, b)
        g = m.autograd.grad((m.view_as_real(c) ** 2).sum() + m.view_as_real(p).sum(), (a, b))
        out.append((type(c.grad_fn).__name__, sorted(n for n in dir(c.grad_fn)
                                                     if n.startswith("_saved_")),
                    type(p.grad_fn).__name__, sorted(n for n in dir(p.grad_fn)
                                                     if n.startswith("_saved_")),
                    [np.round(t.numpy(), 12).tolist() for t in g]))
    assert out[0] == out[1]


def test_resize_refuses_a_tensor_that_requires_grad():
    for m in (torch, dyngrad):
        x = m.zeros(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
            x.resize_(2)
        with m.no_grad():
            with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
                x.resize_(2)


@pytest.mark.parametrize("fill", ["uniform_", "normal_", "bernoulli_", "exponential_",
                                  "cauchy_", "log_normal_", "geometric_", "random_"])
def test_inplace_fill_under_vmap_same_randomness_is_one_draw(fill):
    """vmap(randomness="same"): every sample gets the same numbers, one draw of a sample's
    shape, as PyTorch's; the draw is the one the fill makes outside vmap from the same seed."""
    args = (0.5,) if fill in ("bernoulli_", "geometric_") else ()
    for lib in (torch, dyngrad):
        lib.manual_seed(3)
        out = lib.func.vmap(lambda t: getattr(t.clone(), fill)(*args), randomness="same")(
            lib.zeros(4, 5))
        assert all(lib.equal(out[0], out[i]) for i in range(1, 4)), (lib.__name__, out)
    dyngrad.manual_seed(3)
    alone = getattr(dyngrad.zeros(5), fill)(*args)
    assert dyngrad.equal(out[0], alone)


def test_fill_of_an_unbatched_tensor_with_a_batched_value_is_refused_as_pytorch():
    """vmap: fill_ writing each sample's value into one unbatched tensor raises PyTorch's
    in-place error (it filled in a loop, the last sample's value winning)."""
    msgs = []
    for lib in (torch, dyngrad):
        x = lib.zeros(3)
        with pytest.raises(RuntimeError) as e:
            lib.func.vmap(lambda val: x.fill_(val))(lib.arange(4.0))
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
