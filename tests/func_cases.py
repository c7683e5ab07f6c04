"""Programs of torch.func's transforms, each written once against a library module ``L``
(torch or dyngrad) on NumPy inputs from a fixed seed: recorded from PyTorch by
tests/test_func_recorded.py and replayed with dyngrad alone.

A case returns a pytree (tuples, lists, str-keyed dicts) of tensors and Python scalars, or,
for an error case, raises; ``CASES[name] = (transform, fn, raises)``."""
from __future__ import annotations

import numpy as np

_RS = np.random.RandomState(20240613)


def _u(*shape, lo=-1.0, hi=1.0):
    return _RS.uniform(lo, hi, shape)


X5, Y5, Z5 = _u(5), _u(5), _u(5)
W35 = _u(3, 5)
W53 = _u(5, 3)
B45 = _u(4, 5)
B45b = _u(4, 5)
A345 = _u(3, 4, 5)
A2345 = _u(2, 3, 4, 5)
C52 = _u(5, 2)
X6 = _u(6)
W32 = _u(3, 2)
IMG = _u(3, 1, 8, 8)
XS = _u(4, 4, 3)
YS = _u(4, 4, 2)

CASES: dict = {}


def case(transform, raises=False, name=None):
    """Register ``fn(L)`` under its name (without the leading ``c_``)."""
    def deco(fn):
        key = name or fn.__name__.removeprefix("c_")
        assert key not in CASES, key
        CASES[key] = (transform, fn, raises)
        return fn
    return deco


def T(L, a, dtype=None, **kw):
    """A float64 (or ``dtype``) tensor of ``a`` in library ``L``."""
    return L.tensor(np.asarray(a), dtype=dtype or L.float64, **kw)


def T32(L, a, **kw):
    return T(L, a, dtype=L.float32, **kw)


def _fill(L, module, seed, lo=-1.0, hi=1.0):
    """Set every parameter of ``module`` from NumPy so both libraries hold the same weights."""
    rs = np.random.RandomState(seed)
    with L.no_grad():
        for p in module.parameters():
            p.copy_(L.tensor(rs.uniform(lo, hi, tuple(p.shape))))
    return module


def _mlp(L, seed=0, sizes=(5, 4, 3), act="Tanh"):
    m = L.nn.Sequential(L.nn.Linear(sizes[0], sizes[1]), getattr(L.nn, act)(),
                        L.nn.Linear(sizes[1], sizes[2])).double()
    return _fill(L, m, seed)


def _cnn(L):
    class CNN(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = L.nn.Conv2d(1, 3, 3)
            self.conv2 = L.nn.Conv2d(3, 4, 2)
            self.fc = L.nn.Linear(4 * 2 * 2, 3)

        def forward(self, x):
            x = L.nn.functional.relu(self.conv1(x))
            x = L.nn.functional.max_pool2d(x, 2)
            x = L.nn.functional.relu(self.conv2(x))
            return self.fc(x.flatten(1))
    return _fill(L, CNN().double(), 0, -0.5, 0.5)


def _params(m):
    return {k: v.detach() for k, v in m.named_parameters()}


# --- grad / grad_and_value ------------------------------------------------------------------
@case("grad")
def c_grad_basic(L):
    return L.func.grad(lambda x: (x.sin() * x).sum())(T(L, X5))


@case("grad")
def c_grad_float32(L):
    return L.func.grad(lambda x: (x.exp() * x.cos()).mean())(T32(L, X5))


@case("grad")
def c_grad_scalar_input(L):
    return L.func.grad(lambda x: x ** 3 - 2 * x)(T(L, 1.5))


@case("grad")
def c_grad_argnums_tuple_pytrees(L):
    def g(a, b):
        return (a["u"] * b[0]).sum() + (b[1] ** 2).sum()
    return L.func.grad(g, argnums=(0, 1))({"u": T(L, X5)}, [T(L, Y5), T(L, W35)])


@case("grad")
def c_grad_nested_pytree_single_argnum(L):
    def g(p, x):
        return (p[0] * x).sum() + (p[1][0] @ x).pow(2).sum() + p[1][1]["b"].tanh().sum()
    p = (T(L, Y5), [T(L, W35), {"b": T(L, Z5)}])
    return L.func.grad(g)(p, T(L, X5))


@case("grad")
def c_grad_argnum_second(L):
    return L.func.grad(lambda a, b: (a @ b).sin().sum(), argnums=1)(T(L, W35), T(L, X5))


@case("grad")
def c_grad_negative_argnum_kwargs(L):
    return L.func.grad(lambda a, b, scale=1.0: (a * b).sum() * scale, argnums=-1)(
        T(L, X5), T(L, Y5), scale=3.0)


@case("grad")
def c_grad_has_aux(L):
    return L.func.grad(lambda x: (x.exp().sum(), {"d": x * 2, "s": (x.sum(),)}),
                       has_aux=True)(T(L, X5))


@case("grad")
def c_grad_unused_input_zeros(L):
    return L.func.grad(lambda x, y: (y * 2).sum(), argnums=(0, 1))(T(L, X5), T(L, Y5))


@case("grad")
def c_grad_output_not_depending_on_input(L):
    return L.func.grad(lambda x: L.ones((), dtype=L.float64))(T(L, X5))


@case("grad")
def c_grad_flags_do_not_leak(L):
    x = T(L, X5)
    g, v = L.func.grad_and_value(lambda x: (x * x).sum())(x)
    return x.requires_grad, x.grad is None, g.requires_grad, v.requires_grad, g, v


@case("grad")
def c_grad_input_requiring_grad_stays_differentiable(L):
    x = T(L, X5, requires_grad=True)
    g = L.func.grad(lambda x: (x ** 3).sum())(x)
    (gg,) = L.autograd.grad(g.sum(), x)
    return g, gg, x.requires_grad


@case("grad")
def c_grad_closure_over_parameter(L):
    w = T(L, Y5, requires_grad=True)
    g = L.func.grad(lambda x: (x * w).sin().sum())(T(L, X5))
    (gw,) = L.autograd.grad(g.sum(), w)
    return g, gw


@case("grad")
def c_grad_outer_no_grad_inner_no_grad(L):
    with L.no_grad():
        a = L.func.grad(lambda x: (x * x).sum())(T(L, X5))

    def g(x):
        with L.no_grad():
            c = x ** 2
        return (x - c).sum()
    return a, L.func.grad(g)(T(L, X5))


@case("grad")
def c_grad_of_nn_losses(L):
    F = L.nn.functional

    def loss(x, w):
        logits = x @ w
        return F.cross_entropy(logits, L.tensor([0, 2, 1, 1])) + F.mse_loss(logits.tanh(),
                                                                             logits * 0.5)
    return L.func.grad(loss, argnums=(0, 1))(T(L, B45), T(L, W53))


@case("grad_and_value")
def c_grad_and_value_basic(L):
    return L.func.grad_and_value(lambda x: (x.tanh() ** 2).sum())(T(L, X5))


@case("grad_and_value")
def c_grad_and_value_has_aux(L):
    def g(x):
        y = x.tanh()
        return y.sum(), {"y": y, "n": (y * 3,)}
    return L.func.grad_and_value(g, has_aux=True)(T(L, X5))


@case("grad_and_value")
def c_grad_and_value_argnums(L):
    return L.func.grad_and_value(lambda a, b, c: (a * b * c).sum(), argnums=(2, 0))(
        T(L, X5), T(L, Y5), T(L, Z5))


# --- vjp ------------------------------------------------------------------------------------
@case("vjp")
def c_vjp_basic(L):
    out, fn = L.func.vjp(lambda x: x.sin() * x.sum(), T(L, X5))
    return out, fn(T(L, Y5))


@case("vjp")
def c_vjp_pytree_outputs_called_twice(L):
    out, fn = L.func.vjp(lambda x, y: {"a": x * y, "b": (x.sin(), y.exp())}, T(L, X5),
                         T(L, Y5))
    ct = {"a": T(L, Y5), "b": (T(L, X5), T(L, Z5))}
    return out, fn(ct), fn(ct)


@case("vjp")
def c_vjp_pytree_primal(L):
    out, fn = L.func.vjp(lambda p: p["w"] @ p["x"][0] + p["x"][1], {"w": T(L, W35),
                                                                     "x": [T(L, X5),
                                                                           T(L, X5[:3])]})
    return out, fn(T(L, Y5[:3]))


@case("vjp")
def c_vjp_has_aux(L):
    out, fn, aux = L.func.vjp(lambda x: (x.tanh(), {"c": x.cos()}), T(L, X5), has_aux=True)
    return out, fn(T(L, Y5)), aux


@case("vjp")
def c_vjp_scalar_output_float32(L):
    out, fn = L.func.vjp(lambda x: (x * x).sum(), T32(L, X5))
    return out, fn(T32(L, 2.0))


# --- jvp / linearize ------------------------------------------------------------------------
@case("jvp")
def c_jvp_two_primals(L):
    return L.func.jvp(lambda x, y: (x * y).sin(), (T(L, X5), T(L, Y5)), (T(L, Y5), T(L, X5)))


@case("jvp")
def c_jvp_has_aux(L):
    return L.func.jvp(lambda x: (x.exp(), {"c": x.sum()}), (T(L, X5),), (T(L, Y5),),
                      has_aux=True)


@case("jvp")
def c_jvp_pytree_output(L):
    return L.func.jvp(lambda x: {"a": x.cumsum(0), "b": [x.prod(), x.flip(0) * x]}, (T(L, X5),),
                      (T(L, Z5),))


@case("jvp")
def c_jvp_matrix_strict(L):
    return L.func.jvp(lambda w: (w @ T(L, X5)).tanh(), (T(L, W35),), (T(L, W35[::-1].copy()),),
                      strict=True)


@case("jvp")
def c_jvp_float32(L):
    return L.func.jvp(lambda x: x.softmax(0), (T32(L, X5),), (T32(L, Y5),))


@case("linearize")
def c_linearize_basic(L):
    out, fn = L.func.linearize(lambda x: (x.sin() * x).exp(), T(L, X5))
    return out, fn(T(L, Y5)), fn(T(L, X5))


@case("linearize")
def c_linearize_two_primals_pytree_out(L):
    out, fn = L.func.linearize(lambda x, w: (w @ x, (x * x).sum()), T(L, X5), T(L, W35))
    return out, fn(T(L, Y5), T(L, W35 * 0.5))


# --- jacrev / jacfwd / hessian --------------------------------------------------------------
def _net(L):
    w1, w2 = T(L, W35), T(L, W35[:2, :3])
    return lambda x: w2 @ (w1 @ x).tanh()


for _jac in ("jacrev", "jacfwd"):
    def _mk(jac):
        @case(jac, name=f"{jac}_mlp")
        def c_mlp(L):
            return getattr(L.func, jac)(_net(L))(T(L, X5))

        @case(jac, name=f"{jac}_argnums_pytrees_aux")
        def c_aux(L):
            def g(x, y):
                return {"s": x * y.sum(), "t": (x ** 2, y.exp())}, x.sum()
            return getattr(L.func, jac)(g, argnums=(0, 1), has_aux=True)(T(L, X5), T(L, W35))

        @case(jac, name=f"{jac}_dict_input")
        def c_dict(L):
            return getattr(L.func, jac)(lambda p: p["w"] @ p["x"].sin())(
                {"w": T(L, W35), "x": T(L, X5)})

        @case(jac, name=f"{jac}_scalar_in")
        def c_scalar_in(L):
            return getattr(L.func, jac)(lambda x: L.stack([x.sin(), x * x]))(T(L, 0.3))

        @case(jac, name=f"{jac}_scalar_out")
        def c_scalar_out(L):
            return getattr(L.func, jac)(lambda x: x.logsumexp(0))(T(L, W35))

        @case(jac, name=f"{jac}_float32")
        def c_f32(L):
            return getattr(L.func, jac)(lambda x: x.tanh() * x.sum())(T32(L, X5))

        @case(jac, name=f"{jac}_argnum_1")
        def c_arg1(L):
            return getattr(L.func, jac)(lambda x, w: (w @ x).sigmoid(), argnums=1)(
                T(L, X5), T(L, W35))
    _mk(_jac)


def _chunk(cs):
    @case("jacrev", name=f"jacrev_chunk_size_{cs}")
    def c(L):
        return L.func.jacrev(lambda x: x.sin() * x.sum(), chunk_size=cs)(T(L, X5))


for _cs in (1, 2, 7):
    _chunk(_cs)


@case("jacfwd")
def c_jacfwd_randomness_same(L):
    return L.func.jacfwd(lambda x: x.exp() * x[0], randomness="same")(T(L, X5))


@case("hessian")
def c_hessian_basic(L):
    return L.func.hessian(lambda x: (x.sin() * x.sum()).sum())(T(L, X5))


@case("hessian")
def c_hessian_argnums(L):
    return L.func.hessian(lambda x, y: (x.sin() * y).sum(), argnums=(0, 1))(T(L, X5), T(L, Y5))


@case("hessian")
def c_hessian_matrix_input(L):
    return L.func.hessian(lambda w: (w @ T(L, X5)).tanh().pow(2).sum())(T(L, W35))


FUNCS = {
    "softmax": lambda L, x: x.softmax(0),
    "logsoftmax_mm": lambda L, x: (T(L, W35) @ x).log_softmax(0),
    "norm": lambda L, x: x / x.norm(),
    "max": lambda L, x: x.max() * x,
    "where": lambda L, x: L.where(x > 0, x ** 2, -x),
    "index_cat": lambda L, x: L.cat([x[[0, 2, 2]], x[1:4] * x.sum()]),
    "std_var": lambda L, x: L.stack([x.std(), x.var(), x.mean()]),
    "einsum": lambda L, x: L.einsum("i,ij->j", x, T(L, W53)),
    "gelu_softplus": lambda L, x: L.nn.functional.gelu(x) + L.nn.functional.softplus(x),
    "cross_entropy": lambda L, x: L.nn.functional.cross_entropy(
        T(L, W35) @ x, L.tensor(1)).reshape(1),
}


def _func_case(fname):
    @case("hessian", name=f"hessian_{fname}")
    def c_h(L):
        return L.func.hessian(lambda x: FUNCS[fname](L, x).sum())(T(L, X5))

    @case("vmap", name=f"vmap_jacrev_{fname}")
    def c_vj(L):
        return L.func.vmap(L.func.jacrev(lambda x: FUNCS[fname](L, x)))(T(L, B45))


for _f in FUNCS:
    _func_case(_f)


# --- vmap -----------------------------------------------------------------------------------
@case("vmap")
def c_vmap_basic(L):
    return L.func.vmap(lambda a, b: (a * b).sum() + a.max())(T(L, B45), T(L, B45b))


@case("vmap")
def c_vmap_in_dims_1(L):
    return L.func.vmap(lambda a, b: a * b, in_dims=(0, 1))(T(L, B45), T(L, B45b.T.copy()))


@case("vmap")
def c_vmap_negative_in_dims(L):
    return L.func.vmap(lambda a, b: a @ b, in_dims=(-1, 0))(T(L, W35.T.copy()), T(L, W35))


@case("vmap")
def c_vmap_negative_in_dim_3d(L):
    return L.func.vmap(lambda a, b: a * b, in_dims=(-3, 0))(T(L, A345), T(L, A345[::-1].copy()))


@case("vmap")
def c_vmap_out_dims(L):
    return L.func.vmap(lambda a: (a, a.sum(0)), out_dims=(1, -1))(T(L, A345))


@case("vmap")
def c_vmap_out_dims_negative(L):
    return L.func.vmap(lambda a: a.sum(0), out_dims=-1)(T(L, A345))


@case("vmap")
def c_vmap_in_dims_nested_pytree(L):
    d = {"x": T(L, B45), "y": (T(L, X5[:4]), T(L, C52))}
    return L.func.vmap(lambda d: d["x"].sum() * d["y"][0] + d["y"][1].sum(),
                       in_dims=({"x": 0, "y": (0, None)},))(d)


@case("vmap")
def c_vmap_list_and_dict_inputs_outputs(L):
    def f(xs, p):
        return {"a": xs[0] @ p["w"], "b": [xs[1].exp(), (xs[0] * xs[1]).sum()]}
    return L.func.vmap(f, in_dims=([0, 1], {"w": None}))(
        [T(L, B45), T(L, B45b.T.copy())], {"w": T(L, W53)})


@case("vmap")
def c_vmap_none_in_and_out(L):
    return L.func.vmap(lambda a, n: (a * 2, n), in_dims=(0, None), out_dims=(0, None))(
        T(L, B45), 3)


@case("vmap")
def c_vmap_unbatched_output_broadcast(L):
    c = T(L, C52)
    return L.func.vmap(lambda a: c * 2)(T(L, B45))


@case("vmap")
def c_vmap_kwargs_unbatched(L):
    return L.func.vmap(lambda a, scale=1.0, shift=None: a * scale + shift)(
        T(L, B45), scale=2.0, shift=T(L, X5))


@case("vmap")
def c_vmap_float32_matmul_shared_weight(L):
    w = T32(L, W53)
    return L.func.vmap(lambda x: (x @ w).relu())(T32(L, B45))


@case("vmap")
def c_vmap_nested_in_dims(L):
    return L.func.vmap(L.func.vmap(lambda a, b: (a * b).sum() + a.max(), in_dims=(0, None)),
                       in_dims=(None, 0))(T(L, A345[0]), T(L, A345[1:]))


@case("vmap")
def c_vmap_of_vmap(L):
    return L.func.vmap(L.func.vmap(lambda a: a.sum(-1).softmax(0)))(T(L, A2345))


@case("vmap")
def c_vmap_triple(L):
    return L.func.vmap(L.func.vmap(L.func.vmap(lambda x, y: x @ y)), in_dims=(0, None))(
        T(L, A2345), T(L, A345))


@case("vmap")
def c_vmap_vmap_out_dims(L):
    return L.func.vmap(L.func.vmap(lambda a: a * 2, out_dims=1), in_dims=1, out_dims=-1)(
        T(L, A345))


def _vmap_chunk(cs):
    @case("vmap", name=f"vmap_chunk_size_{cs}")
    def c(L):
        return L.func.vmap(lambda a, b: (a @ b, a.sum()), chunk_size=cs)(
            T(L, A345), T(L, A345.transpose(0, 2, 1)[:, :, :2].copy()))


for _cs in (1, 2, 10):
    _vmap_chunk(_cs)


@case("vmap")
def c_vmap_randomness_same(L):
    L.manual_seed(0)
    x = L.ones(4, 50, dtype=L.float64)
    out = L.func.vmap(lambda x: x + L.rand(50, dtype=L.float64), randomness="same")(x)
    drop = L.func.vmap(lambda x: L.nn.functional.dropout(x, 0.5), randomness="same")(x)
    return (tuple(out.shape), out.dtype == L.float64, bool((out == out[0]).all()),
            bool((drop == drop[0]).all()), bool(((drop == 0) | (drop == 2)).all()))


@case("vmap")
def c_vmap_randomness_same_deterministic_function(L):
    return L.func.vmap(lambda x: L.nn.functional.dropout(x, 0.0) * x.sum(),
                       randomness="same")(T(L, B45))


@case("vmap")
def c_vmap_randomness_different(L):
    L.manual_seed(0)
    x = L.ones(4, 50, dtype=L.float64)
    out = L.func.vmap(lambda x: x + L.rand(50, dtype=L.float64), randomness="different")(x)
    return tuple(out.shape), bool((out == out[0]).all()), bool(((out >= 1) & (out < 2)).all())


@case("vmap")
def c_vmap_module_linear(L):
    lin = _fill(L, L.nn.Linear(5, 3).double(), 4)
    return L.func.vmap(lin)(T(L, A345))


@case("vmap")
def c_vmap_normalization_layers(L):
    def make(mod, **kw):
        m = mod(**kw).double()
        with L.no_grad():
            for p in m.parameters():
                p.copy_(L.tensor(np.linspace(0.5, 1.5, p.numel()).reshape(tuple(p.shape))))
        return m
    x = T(L, A2345[:, :, :, :2])
    bn_eval = make(L.nn.BatchNorm1d, num_features=4).eval()
    gn = make(L.nn.GroupNorm, num_groups=2, num_channels=4)
    ln = make(L.nn.LayerNorm, normalized_shape=2)
    return L.func.vmap(bn_eval)(x), L.func.vmap(gn)(x), L.func.vmap(ln)(x)


@case("vmap")
def c_vmap_indexing_and_shape_ops(L):
    def f(a):
        return L.cat([a[1:3].flip(0), a[[0, 0]]]).reshape(2, 2, 5).transpose(0, 1).sum(0)
    return L.func.vmap(f)(T(L, A345))


@case("vmap")
def c_vmap_backward_through(L):
    x = T(L, A345, requires_grad=True)
    w = T(L, C52, requires_grad=True)
    y = L.func.vmap(lambda a: (a @ w).tanh().sum(0))(x)
    gx, gw = L.autograd.grad((y ** 2).sum(), (x, w))
    return y, gx, gw


# --- compositions ---------------------------------------------------------------------------
@case("composition")
def c_grad_grad_scalar(L):
    return L.func.grad(L.func.grad(lambda x: x ** 3))(T(L, 2.0))


@case("composition")
def c_grad_grad_vector(L):
    return L.func.grad(lambda x: L.func.grad(lambda z: (z.sin() * z).sum())(x).sum())(T(L, X5))


@case("composition")
def c_grad_grad_grad(L):
    F = L.func
    return F.grad(F.grad(F.grad(lambda x: x.sin() * x ** 4)))(T(L, 0.7))


def _jac_pair(outer, inner):
    @case("composition", name=f"{outer}_{inner}")
    def c(L):
        net = _net(L)
        F = L.func
        return getattr(F, outer)(getattr(F, inner)(lambda x: net(x).pow(2).sum()))(T(L, X5))


for _o in ("jacrev", "jacfwd"):
    for _i in ("jacrev", "jacfwd"):
        _jac_pair(_o, _i)


@case("composition")
def c_jacrev_jacfwd_vector_output(L):
    return L.func.jacrev(L.func.jacfwd(lambda x: x.sin() * x.prod()))(T(L, X5[:3]))


@case("composition")
def c_jacfwd_jacrev_argnums(L):
    F = L.func
    return F.jacfwd(F.jacrev(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1)), argnums=1)(
        T(L, X5), T(L, Y5))


@case("composition")
def c_vmap_grad_per_sample_unbatched_params(L):
    def loss(w, b, x, t):
        return ((x @ w + b).tanh() - t).pow(2).sum()
    g = L.func.vmap(L.func.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(
        T(L, C52), T(L, C52[0]), T(L, B45), T(L, B45b[:, :2]))
    return g, tuple(g[0].shape)


@case("composition")
def c_vmap_grad_in_dims_none_first(L):
    return L.func.vmap(L.func.grad(lambda w, x: (x @ w).sin().sum()), in_dims=(None, 0))(
        T(L, W53), T(L, B45))


@case("composition")
def c_vmap_jacrev(L):
    return L.func.vmap(L.func.jacrev(lambda x: x.sin() * x.sum()))(T(L, B45))


@case("composition")
def c_vmap_jacfwd(L):
    return L.func.vmap(L.func.jacfwd(lambda x: x.sin() * x.sum()))(T(L, B45))


@case("composition")
def c_vmap_jacrev_in_dims_none(L):
    return L.func.vmap(L.func.jacrev(lambda w, x: (w @ x).tanh()), in_dims=(None, 0))(
        T(L, W35), T(L, B45))


@case("composition")
def c_vmap_hessian(L):
    return L.func.vmap(L.func.hessian(lambda x: (x.sin() * x.sum()).sum()))(T(L, B45))


@case("composition")
def c_vmap_jvp(L):
    g = lambda x: x.sin() * x.sum()  # noqa: E731
    return L.func.vmap(lambda x, v: L.func.jvp(g, (x,), (v,)))(T(L, B45), T(L, B45b))


@case("composition")
def c_vmap_vjp(L):
    g = lambda x: x.sin() * x.sum()  # noqa: E731
    return L.func.vmap(lambda x, v: L.func.vjp(g, x)[1](v))(T(L, B45), T(L, B45b))


@case("composition")
def c_jacrev_vmap(L):
    c = T(L, C52)
    return L.func.jacrev(L.func.vmap(lambda x: (x @ c).tanh()))(T(L, B45))


@case("composition")
def c_jacfwd_vmap(L):
    c = T(L, C52)
    return L.func.jacfwd(L.func.vmap(lambda x: (x @ c).tanh()))(T(L, B45))


@case("composition")
def c_grad_vmap(L):
    c = T(L, C52)
    return L.func.grad(lambda x: L.func.vmap(lambda z: (z @ c).tanh())(x).sum())(T(L, B45))


@case("composition")
def c_vmap_vmap_grad(L):
    return L.func.vmap(L.func.vmap(L.func.grad(lambda x: x.sin().sum())))(T(L, A345))


@case("composition")
def c_vmap_grad_grad(L):
    F = L.func
    return F.vmap(F.grad(F.grad(lambda x: (x ** 3).sum() * x.sum())))(T(L, X5))


@case("composition")
def c_jvp_grad_hvp(L):
    return L.func.jvp(L.func.grad(lambda x: (x.sin() * x ** 2).sum()), (T(L, X5),),
                      (T(L, Y5),))


@case("composition")
def c_vjp_grad_hvp(L):
    _, fn = L.func.vjp(L.func.grad(lambda x: (x.sin() * x ** 2).sum()), T(L, X5))
    return fn(T(L, Y5))


@case("composition")
def c_grad_jvp(L):
    return L.func.grad(lambda x: L.func.jvp(lambda z: z.sin().sum(), (x,), (T(L, Y5),))[1])(
        T(L, X5))


@case("composition")
def c_jvp_jvp(L):
    F = L.func
    return F.jvp(lambda x: F.jvp(lambda z: (z ** 3).sum(), (x,), (T(L, Y5),))[1], (T(L, X5),),
                 (T(L, X5),))


@case("composition")
def c_jvp_vmap(L):
    g = lambda z: (z.sin() * z.sum()).exp()  # noqa: E731
    return L.func.jvp(L.func.vmap(g), (T(L, A345[:, 0]),), (T(L, A345[:, 1]),))


@case("composition")
def c_grad_vmap_grad(L):
    F = L.func
    return F.grad(lambda x: F.vmap(F.grad(lambda z: (z ** 3).sum()))(x).pow(2).sum())(
        T(L, A345[:, 0]))


@case("composition")
def c_vmap_jacfwd_jacrev(L):
    F = L.func
    return F.vmap(F.jacfwd(F.jacrev(lambda z: z.sin().sum() * z)))(T(L, A345[:, 0]))


@case("composition")
def c_hessian_vmap(L):
    F = L.func
    return F.hessian(lambda x: F.vmap(lambda z: z.tanh().sum())(x).sum())(T(L, A345[:, 0]))


@case("composition")
def c_jacfwd_vmap_grad(L):
    F = L.func
    return F.jacfwd(F.vmap(F.grad(lambda z: (z.cos() * z).sum())))(T(L, A345[:, 0]))


@case("composition")
def c_jacobians_through_products_of_same_input(L):
    F = L.func

    def g(x):
        return (x.reshape(2, 3) @ x.reshape(3, 2)).tanh().reshape(-1)

    def h(x, w):
        return L.nn.functional.linear(x.reshape(2, 3), w.T).sin().reshape(-1)
    x, w = T(L, X6), T(L, W32)
    return (F.jacfwd(g)(x), F.jacrev(g)(x), F.hessian(lambda x: g(x).sum())(x),
            F.jacfwd(h, argnums=(0, 1))(x, w), F.jacrev(h, argnums=(0, 1))(x, w))


@case("composition")
def c_per_sample_second_derivatives_shared_weights(L):
    F = L.func
    w, v = T(L, C52), T(L, C52[::-1].copy())

    def loss(w, x):
        return L.nn.functional.linear(x, w.T).tanh().pow(2).sum() + (x @ w).sin().sum()
    hv = F.vmap(lambda x: F.jvp(lambda w: F.grad(loss)(w, x), (w,), (v,))[1])(T(L, B45))
    h = F.vmap(F.hessian(loss), in_dims=(None, 0))(w, T(L, B45))
    return hv, h


@case("composition")
def c_vmap_grad_and_value_has_aux(L):
    def loss(w, x):
        y = (x @ w).tanh()
        return y.pow(2).sum(), {"y": y, "m": y.mean()}
    return L.func.vmap(L.func.grad_and_value(loss, has_aux=True), in_dims=(None, 0))(
        T(L, W53), T(L, B45))


@case("composition")
def c_jacrev_chunked_argnums_has_aux(L):
    return L.func.jacrev(lambda x, w: ((w @ x).sin(), w.sum()), argnums=(0, 1), has_aux=True,
                         chunk_size=2)(T(L, X5), T(L, W35))


@case("composition")
def c_vmap_out_dims_pytree_of_jacfwd(L):
    F = L.func
    return F.vmap(lambda x: {"j": F.jacfwd(lambda z: z.exp() * z.sum())(x), "v": x.sum()},
                  out_dims={"j": 2, "v": 0})(T(L, B45))


@case("composition")
def c_vmap_in_dims_1_of_hessian_argnum_1(L):
    F = L.func
    return F.vmap(F.hessian(lambda a, b: (a * b.sin()).sum() * b.sum(), argnums=1),
                  in_dims=(None, 1))(T(L, X5[:4]), T(L, B45b.T[:4].copy()))


# --- functional_call / stack_module_state ---------------------------------------------------
@case("functional_call")
def c_functional_call_basic_module_unchanged(L):
    m = _mlp(L)
    params = {k: v * 2 for k, v in _params(m).items()}
    x = T(L, B45)
    out = L.func.functional_call(m, params, (x,))
    return out, m(x)


@case("functional_call")
def c_functional_call_tuple_of_dicts_partial(L):
    m = _mlp(L)
    p = _params(m)
    return L.func.functional_call(m, ({"0.weight": p["0.weight"] * 3},
                                       {"2.bias": p["2.bias"] - 1}), T(L, B45))


@case("functional_call")
def c_functional_call_tied_weights(L):
    lin = _fill(L, L.nn.Linear(3, 3, bias=False).double(), 2)
    m = L.nn.Sequential(lin, L.nn.Tanh(), lin)
    w = T(L, W35[:, :3])
    x = T(L, W35[:2, :3])
    return (L.func.functional_call(m, {"0.weight": w}, (x,)),
            L.func.functional_call(m, {"0.weight": w}, (x,), tie_weights=False))


@case("functional_call")
def c_functional_call_kwargs_and_buffers(L):
    bn = L.nn.BatchNorm1d(5).double().eval()
    state = {"weight": T(L, X5 + 2), "bias": T(L, Y5), "running_mean": T(L, Z5),
             "running_var": T(L, X5 ** 2 + 0.5)}
    out = L.func.functional_call(bn, state, (), {"input": T(L, B45)})
    return out, bn.running_mean


@case("functional_call")
def c_grad_through_functional_call(L):
    m = _mlp(L)

    def loss(p, x):
        return L.func.functional_call(m, p, (x,)).pow(2).mean()
    return L.func.grad(loss)(_params(m), T(L, B45))


@case("functional_call")
def c_jacrev_over_params(L):
    m = _mlp(L, 1, (3, 4, 2))
    return L.func.jacrev(lambda p: L.func.functional_call(m, p, (T(L, XS[0]),)))(_params(m))


@case("stack_module_state")
def c_stack_module_state_basic(L):
    models = [_mlp(L, s) for s in range(3)]
    params, buffers = L.func.stack_module_state(models)
    return {k: (v, v.requires_grad, v.is_leaf) for k, v in params.items()}, buffers


@case("stack_module_state")
def c_stack_module_state_buffers(L):
    models = []
    for s in range(2):
        m = L.nn.Sequential(L.nn.Linear(3, 2), L.nn.BatchNorm1d(2)).double()
        _fill(L, m, s)
        with L.no_grad():
            m[1].running_mean.copy_(T(L, W32[s]))
        models.append(m)
    params, buffers = L.func.stack_module_state(models)
    return sorted(params), buffers


@case("stack_module_state")
def c_ensemble_forward_and_grads(L):
    F = L.func
    models = [_mlp(L, s, (5, 6, 3), "ReLU") for s in range(3)]
    params, buffers = F.stack_module_state(models)
    base = _mlp(L, 9, (5, 6, 3), "ReLU")

    def call(p, b, x):
        return F.functional_call(base, (p, b), (x,))
    same_data = F.vmap(call, in_dims=(0, 0, None))(params, buffers, T(L, B45))
    own_data = F.vmap(call)(params, buffers, T(L, A345))
    grads = F.vmap(F.grad(lambda p, b, x: call(p, b, x).pow(2).mean()),
                   in_dims=(0, 0, None))(params, buffers, T(L, B45))
    return same_data.detach(), own_data.detach(), grads


@case("stack_module_state")
def c_ensemble_training_step(L):
    """Two SGD steps of three stacked models at once, in functional form."""
    F = L.func
    models = [_mlp(L, s, (5, 6, 3), "ReLU") for s in range(3)]
    params, buffers = F.stack_module_state(models)
    params = {k: v.detach() for k, v in params.items()}
    base = _mlp(L, 9, (5, 6, 3), "ReLU")
    x, t = T(L, B45), L.tensor([0, 1, 2, 1])

    def loss(p, b):
        return L.nn.functional.cross_entropy(F.functional_call(base, (p, b), (x,)), t)
    losses = []
    for _ in range(2):
        g, lv = F.vmap(F.grad_and_value(loss))(params, buffers)
        params = {k: params[k] - 0.5 * g[k] for k in params}
        losses.append(lv)
    return losses, params


# --- applications ---------------------------------------------------------------------------
@case("application")
def c_per_sample_grads_mlp(L):
    F = L.func
    model = _mlp(L, 0, (5, 8, 3), "ReLU")

    def loss_fn(params, buffers, sample, target):
        out = F.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return L.nn.functional.cross_entropy(out, target.unsqueeze(0))
    return F.vmap(F.grad(loss_fn), in_dims=(None, None, 0, 0))(
        _params(model), {}, T(L, B45), L.tensor([0, 2, 1, 1]))


@case("application")
def c_per_sample_grads_cnn(L):
    F = L.func
    m = _cnn(L)

    def loss(p, x, t):
        return L.nn.functional.cross_entropy(F.functional_call(m, p, (x.unsqueeze(0),)),
                                             t.unsqueeze(0))
    return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(_params(m), T(L, IMG),
                                                      L.tensor([0, 2, 1]))


@case("application")
def c_per_sample_grads_cnn_float32(L):
    F = L.func
    m = _cnn(L).float()

    def loss(p, x, t):
        return L.nn.functional.cross_entropy(F.functional_call(m, p, (x.unsqueeze(0),)),
                                             t.unsqueeze(0))
    return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(_params(m), T32(L, IMG),
                                                      L.tensor([1, 0, 2]))


@case("application")
def c_hessian_vector_products(L):
    F = L.func

    def loss(x):
        return (x.sin() * x ** 2).sum()
    x, v = T(L, B45[0]), T(L, B45[1])
    fwd_rev = F.jvp(F.grad(loss), (x,), (v,))[1]
    rev_rev = F.vjp(F.grad(loss), x)[1](v)[0]
    rev_fwd = F.grad(lambda x: F.jvp(loss, (x,), (v,))[1])(x)
    batched = F.vmap(lambda v: F.jvp(F.grad(loss), (x,), (v,))[1])(T(L, B45))
    full = F.hessian(loss)(x) @ v
    return fwd_rev, rev_rev, rev_fwd, batched, full


@case("application")
def c_hvp_of_model_params(L):
    F = L.func
    m = _mlp(L, 2, (3, 4, 2))
    p = _params(m)
    v = {k: t.cos() for k, t in p.items()}

    def loss(p):
        return (F.functional_call(m, p, (T(L, XS[0]),)) - T(L, YS[0])).pow(2).mean()
    return F.jvp(F.grad(loss), (p,), (v,))


@case("application")
def c_empirical_ntk_jacobian_contraction(L):
    F = L.func
    m = _cnn(L)
    params = _params(m)

    def f1(p, x):
        return F.functional_call(m, p, (x.unsqueeze(0),)).squeeze(0)
    j1 = [j.flatten(2) for j in F.vmap(F.jacrev(f1), (None, 0))(params, T(L, IMG[:2])).values()]
    j2 = [j.flatten(2) for j in F.vmap(F.jacrev(f1), (None, 0))(params, T(L, IMG[1:])).values()]
    return L.stack([L.einsum("Naf,Mbf->NMab", a, b) for a, b in zip(j1, j2)]).sum(0)


@case("application")
def c_empirical_ntk_vjp_of_jvp(L):
    F = L.func
    net = _mlp(L, 1, (3, 5, 2))
    params = _params(net)
    x1, x2 = T(L, XS[0]), T(L, XS[1])
    _, vjp_fn = F.vjp(lambda p: F.functional_call(net, p, (x2,)), params)

    def column(v):
        return F.jvp(lambda p: F.functional_call(net, p, (x1,)), (params,), vjp_fn(v))[1]
    eye = L.eye(2, dtype=L.float64).unsqueeze(0).expand(4, 2, 2).permute(1, 0, 2)
    return F.vmap(column)(eye)


@case("application")
def c_maml_meta_gradient(L):
    F = L.func
    net = _mlp(L, 1, (3, 5, 2))

    def loss(p, x, y):
        return L.nn.functional.mse_loss(F.functional_call(net, p, (x,)), y)

    def maml_loss(p, x, y):
        g = F.grad(loss)(p, x, y)
        return loss({k: p[k] - 0.1 * g[k] for k in p}, x, y)
    return F.vmap(F.grad(maml_loss), in_dims=(None, 0, 0))(_params(net), T(L, XS), T(L, YS))


# --- errors ---------------------------------------------------------------------------------
def _err(transform, name):
    return case(transform, raises=True, name=name)


_GRAD_ERRORS = {
    "nonscalar_output": lambda L, x: L.func.grad(lambda x: x * 2)(x),
    "non_tensor_output": lambda L, x: L.func.grad(lambda x: 3.0)(x),
    "has_aux_not_tuple": lambda L, x: L.func.grad(lambda x: x.sum(), has_aux=True)(x),
    "has_aux_tuple_of_3": lambda L, x: L.func.grad(lambda x: (x.sum(), x, x),
                                                   has_aux=True)(x),
    "argnum_out_of_range": lambda L, x: L.func.grad(lambda x: x.sum(), argnums=2)(x),
    "negative_argnum_out_of_range": lambda L, x: L.func.grad(lambda x: x.sum(),
                                                             argnums=-2)(x),
    "duplicate_argnums": lambda L, x: L.func.grad(lambda x, y: x.sum(), argnums=(0, 0))(x, x),
    "empty_argnums": lambda L, x: L.func.grad(lambda x, y: x.sum(), argnums=())(x, x),
    "int_input": lambda L, x: L.func.grad(lambda x: x)(3),
    "float_argnum": lambda L, x: L.func.grad(lambda x: x.sum(), argnums=1.0)(x),
    "integer_tensor_input": lambda L, x: L.func.grad(lambda x: x.sum())(L.tensor([1, 2])),
    "grad_and_value_nonscalar": lambda L, x: L.func.grad_and_value(lambda x: x)(x),
    "jacrev_argnum_out_of_range": lambda L, x: L.func.jacrev(lambda x: x, argnums=1)(x),
    "jacfwd_has_aux_not_tuple": lambda L, x: L.func.jacfwd(lambda x: x, has_aux=True)(x),
    "jacrev_chunk_size_0": lambda L, x: L.func.jacrev(lambda x: x, chunk_size=0),
    "jacrev_non_tensor_output": lambda L, x: L.func.jacrev(lambda x: 1.0)(x),
    "hessian_argnum_out_of_range": lambda L, x: L.func.hessian(lambda x: x.sum(),
                                                               argnums=3)(x),
}


def _grad_error(name):
    transform = next((t for t in ("grad_and_value", "jacrev", "jacfwd", "hessian")
                      if name.startswith(t)), "grad")

    @_err(transform, f"error_{name}")
    def c(L):
        return _GRAD_ERRORS[name](L, T(L, X5))


for _n in _GRAD_ERRORS:
    _grad_error(_n)


def _vjp_bad_ct(L):
    _, fn = L.func.vjp(lambda x: (x, x), T(L, X5))
    return fn(T(L, X5))


def _vjp_ct_shape(L):
    _, fn = L.func.vjp(lambda x: x * 2, T(L, X5))
    return fn(T(L, W35))


_VJP_JVP_ERRORS = {
    "vjp_cotangent_structure": _vjp_bad_ct,
    "vjp_cotangent_shape": _vjp_ct_shape,
    "vjp_integer_output": lambda L: L.func.vjp(lambda x: (x > 0).long(), T(L, X5)),
    "vjp_has_aux_not_tuple": lambda L: L.func.vjp(lambda x: x, T(L, X5), has_aux=True),
    "vjp_non_tensor_output": lambda L: L.func.vjp(lambda x: [x, 2], T(L, X5)),
    "jvp_primals_not_tuple": lambda L: L.func.jvp(lambda x: x, T(L, X5), (T(L, X5),)),
    "jvp_tangents_list": lambda L: L.func.jvp(lambda x: x, (T(L, X5),), [T(L, X5)]),
    "jvp_tangent_shape": lambda L: L.func.jvp(lambda x: x, (T(L, X5),), (T(L, W35),)),
    "jvp_has_aux_not_tuple": lambda L: L.func.jvp(lambda x: x, (T(L, X5),), (T(L, X5),),
                                                  has_aux=True),
    "jvp_strict_independent_output": lambda L: L.func.jvp(lambda x: L.ones(3), (T(L, X5),),
                                                          (T(L, Y5),), strict=True),
    "jvp_length_mismatch": lambda L: L.func.jvp(lambda x, y: x, (T(L, X5), T(L, Y5)),
                                                (T(L, X5),)),
    "jvp_non_tensor_output": lambda L: L.func.jvp(lambda x: 1.0, (T(L, X5),), (T(L, Y5),)),
}


def _vj_error(name):
    @_err(name.split("_")[0], f"error_{name}")
    def c(L):
        return _VJP_JVP_ERRORS[name](L)


for _n in _VJP_JVP_ERRORS:
    _vj_error(_n)


V3 = _u(3)


def _vm(fn, *arrays, **kw):
    return lambda L: L.func.vmap(fn, **kw)(*[T(L, a) for a in arrays])


_VMAP_ERRORS = {
    "in_dim_out_of_range": _vm(lambda a: a, V3, in_dims=1),
    "negative_in_dim_out_of_range": _vm(lambda a: a, V3, in_dims=-2),
    "batch_sizes_differ": _vm(lambda a, b: a, V3, B45[:2], in_dims=(0, 0)),
    "in_dims_length": _vm(lambda a: a, V3, in_dims=(0, 0)),
    "in_dims_list": _vm(lambda a: a, V3, in_dims=[0]),
    "in_dims_float": _vm(lambda a: a, V3, in_dims=(1.5,)),
    "output_not_tensor": _vm(lambda a: 1, V3),
    "out_dims_string": _vm(lambda a: a, V3, out_dims="x"),
    "out_dims_length": _vm(lambda a: (a, a), V3, out_dims=(0, 0, 0)),
    "in_dims_all_none": _vm(lambda a: a, V3, in_dims=None),
    "out_dims_none_batched_output": _vm(lambda a: a, V3, out_dims=None),
    "out_dim_out_of_range": _vm(lambda a: a, V3, out_dims=2),
    "no_inputs": lambda L: L.func.vmap(lambda a: a)(),
    "in_dim_for_python_int": lambda L: L.func.vmap(lambda a, n: a, in_dims=(0, 0))(
        T(L, V3), 3),
    "in_dims_pytree_mismatch": lambda L: L.func.vmap(lambda d: d["a"], in_dims=({"b": 0},))(
        {"a": T(L, V3)}),
    "randomness_bad_value": _vm(lambda a: a, V3, randomness="maybe"),
    "chunk_size_0": _vm(lambda a: a, V3, chunk_size=0),
    "randomness_error_rand": lambda L: L.func.vmap(lambda x: x + L.randn(()))(T(L, B45)),
    "randomness_error_dropout": lambda L: L.func.vmap(
        lambda x: L.nn.functional.dropout(x, 0.5))(T(L, B45)),
    "item": _vm(lambda x: x.sum().item(), B45),
    "bool": _vm(lambda x: bool(x.sum()), B45),
    "if_on_tensor": _vm(lambda x: x if x.sum() > 0 else -x, B45),
    "int": _vm(lambda x: int(x.sum()), B45),
    "float": _vm(lambda x: float(x.sum()), B45),
    "tolist": _vm(lambda x: x.tolist(), B45),
    "inplace_add_into_unbatched": lambda L: L.func.vmap(lambda x: L.ones(3).add_(x))(
        L.ones(2, 1)),
    "setitem_into_unbatched": lambda L: L.func.vmap(lambda x: L.zeros(3).__setitem__(
        0, x.sum()))(L.ones(2, 3)),
    "nested_inplace_add": lambda L: L.func.vmap(L.func.vmap(lambda x, y: x.add_(y)),
                                                in_dims=(None, 0))(L.ones(2, 3),
                                                                   L.ones(4, 2, 3)),
    "item_under_vmap_jacrev": lambda L: L.func.vmap(L.func.jacrev(
        lambda x: x * x.sum().item()))(L.ones(2, 3)),
    "bool_under_vmap_grad": lambda L: L.func.vmap(L.func.grad(
        lambda x: x.sum() if x.sum() > 0 else -x.sum()))(L.ones(2, 3)),
    "shape_add": lambda L: L.func.vmap(lambda x, y: x + y)(L.ones(2, 3), L.ones(2, 4)),
    "shape_matmul": lambda L: L.func.vmap(lambda x, y: x @ y)(L.ones(2, 3, 4), L.ones(2, 5, 6)),
    "shape_sum_dim": lambda L: L.func.vmap(lambda x: x.sum(3))(L.ones(2, 4)),
    "shape_view": lambda L: L.func.vmap(lambda x: x.view(5))(L.ones(2, 4)),
    "shape_index": lambda L: L.func.vmap(lambda x: x[7])(L.ones(2, 4)),
    "batchnorm_training": lambda L: L.func.vmap(L.nn.BatchNorm1d(3).double())(
        T(L, A2345[:, :, :3, :2])),
}


def _vmap_error(name):
    @_err("vmap", f"error_vmap_{name}")
    def c(L):
        return _VMAP_ERRORS[name](L)


for _n in _VMAP_ERRORS:
    _vmap_error(_n)


def _fc_dup(L):
    return L.func.functional_call(_mlp(L), ({"0.bias": T(L, X5[:4])},
                                            {"0.bias": T(L, X5[:4])}), (T(L, B45),))


_FC_ERRORS = {
    "functional_call_duplicate_keys": _fc_dup,
    "functional_call_strict": lambda L: L.func.functional_call(
        _mlp(L), {"0.bias": T(L, X5[:4]), "zz": T(L, X5)}, (T(L, B45),), strict=True),
    "functional_call_bad_dict_type": lambda L: L.func.functional_call(_mlp(L), 3, (T(L, B45),)),
    "stack_module_state_empty": lambda L: L.func.stack_module_state([]),
    "stack_module_state_mixed_modes": lambda L: L.func.stack_module_state(
        [_mlp(L), _mlp(L).eval()]),
}


def _fc_error(name):
    @_err("functional_call" if name.startswith("functional_call") else "stack_module_state",
          f"error_{name}")
    def c(L):
        return _FC_ERRORS[name](L)


for _n in _FC_ERRORS:
    _fc_error(_n)
