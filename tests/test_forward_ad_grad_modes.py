"""Forward-mode AD whatever the grad mode, and through a backward without create_graph:
values, tangents and flags compared with PyTorch."""
import numpy as np
import pytest
import torch

import dyngrad


def _np(t):
    return None if t is None else np.asarray(t.detach().tolist())


def _same(a, b):
    if a is None or b is None:
        assert a is None and b is None, (a, b)
        return
    np.testing.assert_allclose(_np(a), _np(b), rtol=1e-6, atol=1e-6)


def _both(fn):
    """``fn(L)`` with PyTorch and dyngrad; the results compared element by element."""
    ra, rb = fn(torch), fn(dyngrad)
    assert len(ra) == len(rb)
    for a, b in zip(ra, rb):
        if isinstance(a, torch.Tensor) or a is None:
            _same(a, b)
        else:
            assert a == b, (ra, rb)
    return rb


def _modes(L):
    return {"no_grad": L.no_grad, "set_grad_enabled": lambda: L.set_grad_enabled(False),
            "inference_mode": L.inference_mode}


@pytest.mark.parametrize("mode", ["no_grad", "set_grad_enabled", "inference_mode"])
def test_tangent_flows_with_grad_mode_off(mode):
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]))
            with _modes(L)[mode]():
                y = (x * x).sum()
                z = L.sin(x) @ L.tensor([2.0, 3.0])
                enabled = L.is_grad_enabled()
            return (fw.unpack_dual(y).tangent, fw.unpack_dual(z).tangent, y.requires_grad,
                    y.grad_fn is None, z.requires_grad, enabled)
    _both(run)


def test_real_leaf_under_no_grad():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            p = L.tensor([1.0, 2.0], requires_grad=True)
            xp = fw.make_dual(p, L.tensor([1.0, 3.0]))
            with L.no_grad():
                y = xp * p
                z = p * 2
                p.mul_(1.0)   # a leaf changed in place under no_grad: allowed
            q = (y * p).sum()
            q.backward()
            return (fw.unpack_dual(y).tangent, y.requires_grad, y.grad_fn is None,
                    z.requires_grad, fw.unpack_dual(z).tangent, z.grad_fn is None, p.grad,
                    p.is_leaf, p.grad_fn is None)
    _both(run)


def test_no_grad_op_passes_no_gradient_to_its_inputs():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            p = L.tensor([1.0, 2.0, 4.0], requires_grad=True)
            x = fw.make_dual(p * 1.0, L.tensor([1.0, 0.0, 2.0]))
            with L.no_grad():
                y = x.exp()
            w = L.tensor([3.0, 1.0, 2.0], requires_grad=True)
            out = (y * w).sum()
            out.backward()
            fns = out.grad_fn.next_functions[0][0].next_functions
            return (p.grad, w.grad, fw.unpack_dual(out).tangent, fns[0][0] is None,
                    out.requires_grad)
    _both(run)


def test_enable_grad_inside_no_grad():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            p = L.tensor([0.5, 1.5], requires_grad=True)
            x = fw.make_dual(p, L.tensor([2.0, 1.0]))
            with L.no_grad():
                a = x * 3
                with L.enable_grad():
                    b = (x ** 2).sum()
                    inner = L.is_grad_enabled()
                c = x.cos()
            g, = L.autograd.grad(b, p)
            return (fw.unpack_dual(a).tangent, a.requires_grad, fw.unpack_dual(b).tangent,
                    b.requires_grad, b.grad_fn is None, inner, fw.unpack_dual(c).tangent,
                    c.requires_grad, g)
    _both(run)


def test_level_entered_inside_no_grad():
    def run(L):
        fw = L.autograd.forward_ad
        with L.no_grad():
            with fw.dual_level():
                x = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, -1.0]))
                y = x.tanh()
                t = fw.unpack_dual(y).tangent
                en = L.is_grad_enabled()
            after = L.is_grad_enabled()
        return t, y.requires_grad, en, after, L.is_grad_enabled()
    _both(run)


def test_set_grad_enabled_call_inside_level():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([0.5, 1.0]))
            L.set_grad_enabled(False)
            try:
                y = x * x
                en = L.is_grad_enabled()
            finally:
                L.set_grad_enabled(True)
            return fw.unpack_dual(y).tangent, y.requires_grad, en, L.is_grad_enabled()
    _both(run)


def test_inplace_under_no_grad_takes_tangent():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]))
            w = L.zeros(2)
            with L.no_grad():
                w.add_(x)
                x2 = x.clone()
                x2.mul_(3)
            return (fw.unpack_dual(w).tangent, w.requires_grad, w.grad_fn is None,
                    fw.unpack_dual(x2).tangent, x2.requires_grad)
    _both(run)


@pytest.mark.parametrize("cg", [False, True])
def test_grad_with_dual_grad_outputs(cg):
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
            v = fw.make_dual(L.ones(3), L.tensor([1.0, 2.0, 3.0]))
            y = x ** 3
            gx, = L.autograd.grad(y, x, v, create_graph=cg)
            p, t = fw.unpack_dual(gx)
            return p, t, gx.requires_grad, gx.grad_fn is None
    _both(run)


def test_grad_of_dual_input_is_hessian_vector_product():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            p = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
            x = fw.make_dual(p, L.tensor([1.0, 0.5, 2.0]))
            y = (x ** 3).sum() + (x[0] * x[1])
            gx, = L.autograd.grad(y, x)
            p2, t = fw.unpack_dual(gx)
            return p2, t, gx.requires_grad, gx.grad_fn is None
    _both(run)


def test_backward_with_dual_gradient_into_grad():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
            v = fw.make_dual(L.ones(3), L.tensor([1.0, 2.0, 3.0]))
            (x ** 3).backward(v)
            first = fw.unpack_dual(x.grad)
            return (first.primal, first.tangent, x.grad.requires_grad, x.grad.grad_fn is None)
    _both(run)


def test_backward_of_dual_input_into_primal_grad():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            p = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
            x = fw.make_dual(p, L.tensor([1.0, 0.5, 2.0]))
            (x ** 3).sum().backward()
            u = fw.unpack_dual(p.grad)
            return u.primal, u.tangent, p.grad.requires_grad
    _both(run)


def test_grad_with_dual_saved_values_and_plain_gradient():
    def run(L):
        fw = L.autograd.forward_ad
        with fw.dual_level():
            w = L.tensor([[1.0, 2.0], [0.5, -1.0]], requires_grad=True)
            x = fw.make_dual(L.tensor([0.3, 0.7]), L.tensor([1.0, 2.0]))
            y = L.tanh(w @ x).sum()
            gw, = L.autograd.grad(y, w)
            u = fw.unpack_dual(gw)
            return u.primal, u.tangent, gw.requires_grad
    _both(run)


def test_func_jvp_over_vjp_with_cotangent_tangent():
    def run(L):
        F = L.func
        x = L.tensor([0.5, 1.0, 2.0])

        def f(z):
            return z.sin() * z

        c0, tc = L.tensor([1.0, 2.0, 3.0]), L.tensor([0.5, -1.0, 1.0])
        out, tan = F.jvp(lambda c: F.vjp(f, x)[1](c)[0], (c0,), (tc,))
        return out, tan
    _both(run)


def test_func_jvp_of_grad_and_jacfwd_of_jacrev():
    def run(L):
        F = L.func

        def f(z):
            return (z.sin() * z.exp()).sum()

        x = L.tensor([0.1, 0.4, 0.9])
        v = L.tensor([1.0, -2.0, 0.5])
        _, hvp = F.jvp(F.grad(f), (x,), (v,))
        return hvp, F.jacfwd(F.jacrev(f))(x)
    _both(run)


def test_grad_mode_restored_after_level_exit():
    fw = dyngrad.autograd.forward_ad
    with dyngrad.no_grad():
        with fw.dual_level():
            x = fw.make_dual(dyngrad.tensor([1.0]), dyngrad.tensor([1.0]))
            y = x * 2
        assert not dyngrad.is_grad_enabled()
        z = dyngrad.tensor([1.0], requires_grad=True) * 2
        assert not z.requires_grad and z.grad_fn is None
    assert dyngrad.is_grad_enabled()
    assert type(y) is dyngrad.Tensor and not y.requires_grad and y.grad_fn is None


def test_view_under_no_grad_in_level_is_a_no_grad_view():
    def run(L):
        fw = L.autograd.forward_ad
        p = L.tensor([1.0, 2.0], requires_grad=True)
        with fw.dual_level():
            x = fw.make_dual(L.tensor([1.0, 2.0]), L.tensor([1.0, 1.0]))
            with L.no_grad():
                v = p[0:1]
                w = p.view(2)
                z = p.exp()
                d = x[0:1]
            try:
                v.mul_(2)
                err = None
            except RuntimeError as e:
                err = str(e).split(".")[0]
            return (v.requires_grad, v.grad_fn is None, w.requires_grad, z.requires_grad, err,
                    fw.unpack_dual(d).tangent, d.requires_grad)
    _both(run)
