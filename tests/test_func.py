"""dyngrad.func against torch.func: grad, grad_and_value, vjp, jvp, linearize, jacrev,
jacfwd, hessian, their nesting, functional_call and stack_module_state; values, gradients,
shapes, flags and errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

RS = np.random.RandomState(0)
X5 = RS.uniform(-1, 1, 5)
Y5 = RS.uniform(-1, 1, 5)
W35 = RS.uniform(-1, 1, (3, 5))
XS45 = RS.uniform(-1, 1, (4, 5))


def _t(lib, a, **kw):
    return lib.tensor(np.asarray(a), dtype=lib.float64, **kw)


def _leaves(x):
    if isinstance(x, (tuple, list)):
        out = []
        for e in x:
            out.extend(_leaves(e))
        return out
    if isinstance(x, dict):
        out = []
        for k in x:
            out.extend(_leaves(x[k]))
        return out
    return [x]


def _same_structure(a, b):
    if isinstance(a, (tuple, list)):
        assert type(b) is type(a) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _same_structure(x, y)
    elif isinstance(a, dict):
        assert isinstance(b, dict) and list(a) == list(b)
        for k in a:
            _same_structure(a[k], b[k])


def both(fn, rtol=1e-7, atol=1e-9, flags=True):
    """Run ``fn(lib, func)`` with torch and dyngrad; compare structure, shapes, values and
    requires_grad of every tensor in the result."""
    exp = fn(torch, torch.func)
    got = fn(dyngrad, dyngrad.func)
    _same_structure(exp, got)
    for e, g in zip(_leaves(exp), _leaves(got)):
        if isinstance(e, torch.Tensor):
            assert isinstance(g, dyngrad.Tensor), type(g)
            assert tuple(e.shape) == tuple(g.shape)
            assert str(e.dtype) == str(g.dtype)
            np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=rtol,
                                       atol=atol)
            if flags:
                assert g.requires_grad == e.requires_grad
        else:
            assert e == g
    return got


def both_raise(fn):
    """The same exception type and message from both libraries."""
    with pytest.raises(Exception) as et:
        fn(torch, torch.func)
    with pytest.raises(Exception) as ed:
        fn(dyngrad, dyngrad.func)
    assert type(ed.value).__name__ == type(et.value).__name__
    assert str(ed.value) == str(et.value)


# --- grad ---------------------------------------------------------------------------------
def f_sin(lib):
    return lambda x: (x.sin() * x).sum()


def test_grad_value():
    both(lambda lib, F: F.grad(f_sin(lib))(_t(lib, X5)))


def test_grad_argnums_tuple_and_pytrees():
    def f(lib, F):
        def g(a, b):
            return (a["u"] * b[0]).sum() + (b[1] ** 2).sum()
        return F.grad(g, argnums=(0, 1))({"u": _t(lib, X5)}, [_t(lib, Y5), _t(lib, W35)])
    both(f)


def test_grad_negative_argnum_and_kwargs():
    both(lambda lib, F: F.grad(lambda a, b, scale=1.0: (a * b).sum() * scale, argnums=-1)(
        _t(lib, X5), _t(lib, Y5), scale=3.0))


def test_grad_has_aux_and_grad_and_value():
    def f(lib, F):
        def g(x):
            y = x.tanh()
            return y.sum(), {"y": y, "n": (y * 3,)}
        return F.grad_and_value(g, has_aux=True)(_t(lib, X5))
    both(f)
    both_raise(lambda lib, F: F.grad(lambda x: (x.sum(), 3), has_aux=True)(_t(lib, X5)))
    both(lambda lib, F: F.grad(lambda x: (x.exp().sum(), x * 2), has_aux=True)(_t(lib, X5)))


def test_grad_of_grad():
    both(lambda lib, F: F.grad(F.grad(lambda x: x ** 3))(_t(lib, 2.0)))
    both(lambda lib, F: F.grad(lambda x: F.grad(f_sin(lib))(x).sum())(_t(lib, X5)))


def test_grad_input_requiring_grad_stays_differentiable_outside():
    def f(lib, F):
        x = _t(lib, X5, requires_grad=True)
        g = F.grad(lambda x: (x ** 3).sum())(x)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return g, gg, x.requires_grad
    both(f)


def test_grad_does_not_leak_flags():
    def f(lib, F):
        x = _t(lib, X5)
        g, v = F.grad_and_value(lambda x: (x * x).sum())(x)
        return x.requires_grad, x.grad is None, g.requires_grad, v.requires_grad, g, v
    both(f)


def test_grad_closure_over_parameter():
    def f(lib, F):
        w = _t(lib, Y5, requires_grad=True)
        g = F.grad(lambda x: (x * w).sin().sum())(_t(lib, X5))
        (gw,) = lib.autograd.grad(g.sum(), w)
        return g, gw
    both(f)


def test_grad_ignores_outer_no_grad_but_obeys_inner():
    def f(lib, F):
        with lib.no_grad():
            a = F.grad(lambda x: (x * x).sum())(_t(lib, X5))

        def g(x):
            with lib.no_grad():
                c = x ** 2
            return (x - c).sum()
        return a, F.grad(g)(_t(lib, X5))
    both(f)


def test_grad_unused_input_gives_zeros():
    both(lambda lib, F: F.grad(lambda x, y: (y * 2).sum(), argnums=(0, 1))(
        _t(lib, X5), _t(lib, Y5)))


@pytest.mark.parametrize("case", ["nonscalar", "nottensor", "aux_not_tuple", "bad_argnum",
                                  "dup_argnums", "empty_argnums", "int_input", "argnum_type"])
def test_grad_errors(case):
    def f(lib, F):
        x = _t(lib, X5)
        if case == "nonscalar":
            return F.grad(lambda x: x * 2)(x)
        if case == "nottensor":
            return F.grad(lambda x: 3.0)(x)
        if case == "aux_not_tuple":
            return F.grad(lambda x: x.sum(), has_aux=True)(x)
        if case == "bad_argnum":
            return F.grad(lambda x: x.sum(), argnums=2)(x)
        if case == "dup_argnums":
            return F.grad(lambda x, y: x.sum(), argnums=(0, 0))(x, x)
        if case == "empty_argnums":
            return F.grad(lambda x, y: x.sum(), argnums=())(x, x)
        if case == "int_input":
            return F.grad(lambda x: x)(3)
        return F.grad(lambda x: x.sum(), argnums=1.0)(x)
    both_raise(f)


# --- vjp / jvp / linearize ---------------------------------------------------------------
def test_vjp_pytree_outputs():
    def f(lib, F):
        out, fn = F.vjp(lambda x, y: {"a": x * y, "b": (x.sin(), y.exp())},
                        _t(lib, X5), _t(lib, Y5))
        ct = {"a": _t(lib, Y5), "b": (_t(lib, X5), _t(lib, X5))}
        return out, fn(ct), fn(ct)
    both(f)


def test_vjp_has_aux():
    def f(lib, F):
        out, fn, aux = F.vjp(lambda x: (x.tanh(), x.cos()), _t(lib, X5), has_aux=True)
        return out, fn(_t(lib, Y5)), aux
    both(f)


def test_vjp_errors():
    def bad_ct(lib, F):
        _, fn = F.vjp(lambda x: (x, x), _t(lib, X5))
        fn(_t(lib, X5))
    both_raise(bad_ct)

    def int_out(lib, F):
        F.vjp(lambda x: (x > 0).long(), _t(lib, X5))
    both_raise(int_out)

    def aux(lib, F):
        F.vjp(lambda x: x, _t(lib, X5), has_aux=True)
    both_raise(aux)


def test_jvp_values_and_aux():
    both(lambda lib, F: F.jvp(lambda x, y: (x * y).sin(), (_t(lib, X5), _t(lib, Y5)),
                              (_t(lib, Y5), _t(lib, X5))))
    both(lambda lib, F: F.jvp(lambda x: (x.exp(), {"c": x.sum()}), (_t(lib, X5),),
                              (_t(lib, Y5),), has_aux=True))


def test_jvp_errors():
    both_raise(lambda lib, F: F.jvp(lambda x: x, _t(lib, X5), (_t(lib, X5),)))
    both_raise(lambda lib, F: F.jvp(lambda x: x, (_t(lib, X5),), [_t(lib, X5)]))
    both_raise(lambda lib, F: F.jvp(lambda x: x, (_t(lib, X5),), (_t(lib, W35),)))
    both_raise(lambda lib, F: F.jvp(lambda x: x, (_t(lib, X5),), (_t(lib, X5),),
                                    has_aux=True))


def test_linearize():
    def f(lib, F):
        out, fn = F.linearize(lambda x: (x.sin() * x).exp(), _t(lib, X5))
        return out, fn(_t(lib, Y5)), fn(_t(lib, X5))
    both(f)


def test_jvp_of_grad_is_hessian_vector_product():
    both(lambda lib, F: F.jvp(F.grad(lambda x: (x.sin() * x ** 2).sum()), (_t(lib, X5),),
                              (_t(lib, Y5),)))


def test_hvp_reverse_over_reverse():
    def f(lib, F):
        g = F.grad(lambda x: (x.sin() * x ** 2).sum())
        _, fn = F.vjp(g, _t(lib, X5))
        return fn(_t(lib, Y5))
    both(f)


def test_grad_of_jvp():
    both(lambda lib, F: F.grad(lambda x: F.jvp(lambda z: z.sin().sum(), (x,),
                                               (_t(lib, Y5),))[1])(_t(lib, X5)))


def test_jvp_of_jvp():
    both(lambda lib, F: F.jvp(lambda x: F.jvp(lambda z: (z ** 3).sum(), (x,),
                                              (_t(lib, Y5),))[1], (_t(lib, X5),),
                              (_t(lib, X5),)))


# --- Jacobians and Hessians --------------------------------------------------------------
def mlp(lib):
    w1, w2 = _t(lib, W35), _t(lib, W35[:2, :3])

    def f(x):
        return w2 @ (w1 @ x).tanh()
    return f


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_of_mlp(jac):
    both(lambda lib, F: getattr(F, jac)(mlp(lib))(_t(lib, X5)))


@pytest.mark.parametrize("jac", ["jacrev", "jacfwd"])
def test_jacobian_argnums_pytrees_and_aux(jac):
    def f(lib, F):
        def g(x, y):
            return {"s": x * y.sum(), "t": (x ** 2, y.exp())}, x.sum()
        kw = {"has_aux": True}
        return getattr(F, jac)(g, argnums=(0, 1), **kw)(_t(lib, X5), _t(lib, W35))
    both(f)


def test_jacrev_chunk_size():
    for cs in (1, 2, 7):
        both(lambda lib, F: F.jacrev(lambda x: x.sin() * x.sum(), chunk_size=cs)(_t(lib, X5)))
    both_raise(lambda lib, F: F.jacrev(lambda x: x, chunk_size=0))


@pytest.mark.parametrize("outer,inner", [("jacrev", "jacrev"), ("jacrev", "jacfwd"),
                                         ("jacfwd", "jacrev"), ("jacfwd", "jacfwd")])
def test_hessian_of_mlp_all_modes(outer, inner):
    def f(lib, F):
        net = mlp(lib)

        def g(x):
            return net(x).pow(2).sum()
        return getattr(F, outer)(getattr(F, inner)(g))(_t(lib, X5))
    both(f)


def test_hessian_argnums():
    both(lambda lib, F: F.hessian(lambda x, y: (x.sin() * y).sum(), argnums=(0, 1))(
        _t(lib, X5), _t(lib, Y5)))


def test_jacobian_scalar_in_and_out():
    both(lambda lib, F: F.jacrev(lambda x: x.sin())(_t(lib, 0.3)))
    both(lambda lib, F: F.jacfwd(lambda x: x.sin().sum())(_t(lib, X5)))


# --- functional_call / stack_module_state ----------------------------------------------
class _Net:
    @staticmethod
    def make(lib, seed=0):
        lib.manual_seed(seed)
        m = lib.nn.Sequential(lib.nn.Linear(5, 4), lib.nn.Tanh(), lib.nn.Linear(4, 3))
        rs = np.random.RandomState(seed)
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.tensor(rs.uniform(-1, 1, tuple(p.shape))))
        return m.double()


def test_functional_call_and_module_unchanged():
    def f(lib, F):
        m = _Net.make(lib)
        params = {k: v.detach() * 2 for k, v in m.named_parameters()}
        x = _t(lib, XS45)
        out = F.functional_call(m, params, (x,))
        after = m(x)
        part = F.functional_call(m, ({"0.weight": params["0.weight"]},
                                     {"2.bias": params["2.bias"]}), x)
        return out, after, part
    both(f)


def test_functional_call_errors():
    def dup(lib, F):
        m = _Net.make(lib)
        F.functional_call(m, ({"0.bias": _t(lib, X5[:4])}, {"0.bias": _t(lib, X5[:4])}),
                          (_t(lib, XS45),))
    both_raise(dup)

    def strict(lib, F):
        m = _Net.make(lib)
        F.functional_call(m, {"0.bias": _t(lib, X5[:4]), "zz": _t(lib, X5)},
                          (_t(lib, XS45),), strict=True)
    both_raise(strict)

    def kind(lib, F):
        F.functional_call(_Net.make(lib), 3, (_t(lib, XS45),))
    both_raise(kind)


def test_functional_call_tied_weights():
    def f(lib, F):
        lin = lib.nn.Linear(3, 3, bias=False).double()
        m = lib.nn.Sequential(lin, lib.nn.Tanh(), lin)
        w = _t(lib, W35[:, :3])
        return F.functional_call(m, {"0.weight": w}, (_t(lib, W35[:2, :3]),)), \
            F.functional_call(m, {"0.weight": w}, (_t(lib, W35[:2, :3]),), tie_weights=False)
    both(f)


def test_grad_through_functional_call():
    def f(lib, F):
        m = _Net.make(lib)
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, x):
            return F.functional_call(m, p, (x,)).pow(2).mean()
        return F.grad(loss)(params, _t(lib, XS45))
    both(f)


def test_stack_module_state():
    def f(lib, F):
        models = [_Net.make(lib, s) for s in range(3)]
        params, buffers = F.stack_module_state(models)
        return {k: (v, v.requires_grad, v.is_leaf) for k, v in params.items()}, buffers
    both(f)


def test_stack_module_state_errors():
    both_raise(lambda lib, F: F.stack_module_state([]))

    def mixed(lib, F):
        a, b = _Net.make(lib), _Net.make(lib)
        b.eval()
        F.stack_module_state([a, b])
    both_raise(mixed)


def test_torch_namespace():
    assert dyngrad.func.vmap is dyngrad.vmap
    import dyngrad.func as df
    assert set(df.__all__) >= {"grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev",
                               "jacfwd", "hessian", "vmap", "functional_call",
                               "stack_module_state"}


# --- Jacobians, Hessians and their vmapped forms over a set of functions ---------------------
M35 = RS.uniform(-1, 1, (3, 5))
XB35 = RS.uniform(-1, 1, (3, 5))
FUNCS = {
    "softmax": lambda L, x: x.softmax(0),
    "logsoftmax_mm": lambda L, x: (L.tensor(M35) @ x).log_softmax(0),
    "norm": lambda L, x: x / x.norm(),
    "cumsum_prod": lambda L, x: x.cumsum(0) * x.prod(),
    "max": lambda L, x: x.max() * x,
    "sort": lambda L, x: x.sort()[0],
    "where": lambda L, x: L.where(x > 0, x ** 2, -x),
    "index": lambda L, x: x[[0, 2, 2]] * x[1:4].sum(),
    "cat_stack": lambda L, x: L.cat([x, x.flip(0)]) * L.stack([x, x]).sum(0).repeat(2),
    "std_var": lambda L, x: L.stack([x.std(), x.var(), x.mean()]),
    "outer": lambda L, x: L.outer(x, x).sum(1),
    "logsumexp": lambda L, x: x.logsumexp(0) * x,
    "einsum": lambda L, x: L.einsum("i,ij->j", x, L.tensor(M35).T),
    "activations": lambda L, x: L.nn.functional.gelu(x) + L.nn.functional.softplus(x),
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(L.tensor(M35) @ x,
                                                                L.tensor(1)).reshape(1),
}
TRANSFORMS = {
    "jacrev": lambda F, f: F.jacrev(f),
    "jacfwd": lambda F, f: F.jacfwd(f),
    "hessian": lambda F, f: F.hessian(lambda x: f(x).sum()),
    "vmap_jacrev": lambda F, f: F.vmap(F.jacrev(f)),
    "vmap_jacfwd": lambda F, f: F.vmap(F.jacfwd(f)),
    "vmap_hessian": lambda F, f: F.vmap(F.hessian(lambda x: f(x).sum())),
    "vmap_grad": lambda F, f: F.vmap(F.grad(lambda x: f(x).sum())),
    "vmap_jvp": lambda F, f: F.vmap(lambda x: F.jvp(f, (x,), (x.flip(0),))[1]),
}


@pytest.mark.parametrize("tr", sorted(TRANSFORMS))
@pytest.mark.parametrize("fname", sorted(FUNCS))
def test_transform_of_function(fname, tr):
    arr = XB35 if tr.startswith("vmap") else X5
    both(lambda lib, F: TRANSFORMS[tr](F, lambda x: FUNCS[fname](lib, x))(_t(lib, arr)),
         rtol=1e-6, atol=1e-8)


def test_jvp_strict():
    both(lambda lib, F: F.jvp(lambda x: x.sin(), (_t(lib, X5),), (_t(lib, Y5),), strict=True))
    both_raise(lambda lib, F: F.jvp(lambda x: lib.ones(3), (_t(lib, X5),), (_t(lib, Y5),),
                                    strict=True))
