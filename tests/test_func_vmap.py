"""dyngrad.func.vmap against torch.func.vmap: values, shapes and errors of batched ops, in_dims
and out_dims, nesting, randomness, the loop fallback, composition with grad/jacrev/jvp in any
order (per-sample gradients, ensembles, Hessian-vector products), and every op-table row
vmapped against a loop over its samples (values and gradients)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from dyngrad.func import _batched  # noqa: E402
from tests.test_func import _t, both, both_raise  # noqa: E402

RS = np.random.RandomState(1)
A = RS.uniform(-1, 1, (4, 3, 5))
B = RS.uniform(-1, 1, (4, 5))
C = RS.uniform(-1, 1, (5, 2))
V = RS.uniform(-1, 1, (4,))
I4 = np.array([0, 2, 1, 2])


def _case(f, *arrays, in_dims=0, out_dims=0, ints=()):
    def run(lib, F):
        args = [lib.tensor(a) if i in ints else _t(lib, a) for i, a in enumerate(arrays)]
        return F.vmap(lambda *a: f(lib, *a), in_dims=in_dims, out_dims=out_dims)(*args)
    return run


OPS = {
    "add_bcast": (lambda lib, a, b: a + b, (A, B)),
    "mul_unbatched": (lambda lib, a, b: a * b, (A, C[:, 0]), (0, None)),
    "div_scalar": (lambda lib, a: 2.0 / (a.abs() + 1), (A,)),
    "pow_sub": (lambda lib, a, b: (a - b) ** 2, (B, B[0]), (0, None)),
    "compare_where": (lambda lib, a, b: lib.where(a > 0, a, b), (A, B)),
    "maximum": (lambda lib, a, b: lib.maximum(a, b), (B, B[::-1].copy())),
    "matmul_vec_mat": (lambda lib, a, c: a @ c, (B, C), (0, None)),
    "matmul_mat_vec": (lambda lib, a, v: a @ v, (A, B)),
    "matmul_vec_vec": (lambda lib, a, b: lib.matmul(a, b), (B, B)),
    "matmul_unbatched_left": (lambda lib, c, a: c.T @ a.T, (C, A), (None, 0)),
    "mm": (lambda lib, a, c: lib.mm(a, c), (A, C), (0, None)),
    "bmm": (lambda lib, a: lib.bmm(a.unsqueeze(0), a.transpose(0, 1).unsqueeze(0)), (A,)),
    "mv_dot": (lambda lib, a, b: lib.mv(a, b) + lib.dot(b, b), (A, B)),
    "linear": (lambda lib, x, w, b: lib.nn.functional.linear(x, w, b), (B, C.T.copy(), C[0]),
               (0, None, None)),
    "linear_batched_weight": (lambda lib, x, w: lib.nn.functional.linear(x, w), (B, A)),
    "sum_dims": (lambda lib, a: (a.sum(), a.sum(0), a.sum(-1, keepdim=True), a.sum((0, 1))),
                 (A,)),
    "mean_std_var": (lambda lib, a: (a.mean(), a.mean(1), a.std(0), a.var()), (A,)),
    "max_min_arg": (lambda lib, a: (a.max(), a.max(1).values, a.min(0)[1], a.argmax(),
                                    a.amax(-1)), (A,)),
    "logsumexp_norm": (lambda lib, a: (a.logsumexp(1), a.norm(), a.norm(dim=0)), (A,)),
    "reshape_view": (lambda lib, a: (a.reshape(15), a.view(5, 3), a.reshape(-1, 5),
                                     a.flatten(), a.view_as(a.T)), (A,)),
    "transpose_permute": (lambda lib, a: (a.transpose(0, 1), a.permute(1, 0), a.T, a.t(),
                                          a.mT), (A,)),
    "unsqueeze_squeeze": (lambda lib, a: (a.unsqueeze(0), a.unsqueeze(-1).squeeze(-1),
                                          a[:1].squeeze(), a[:1].squeeze(0)), (A,)),
    "expand": (lambda lib, v: (v.expand(3), v.expand(2, 3), v.unsqueeze(0).expand(3, -1)),
               (V,)),
    "indexing": (lambda lib, a: (a[0], a[:, 1:4], a[..., -1], a[None, 1], a[1, ::2],
                                 a[:, [0, 2]]), (A,)),
    "index_tensor": (lambda lib, a, i: a[i], (A, I4), (0, None), (1,)),
    "setitem": (lambda lib, a, b: _setitem(a, b), (A, B)),
    "cat_stack": (lambda lib, a, b: (lib.cat([a, b.unsqueeze(0)]), lib.stack([b, b], 1),
                                     lib.cat((a, a), dim=-1)), (A, B)),
    "cat_unbatched": (lambda lib, a, c: lib.cat([a, c.T], 0), (A, C), (0, None)),
    "softmax": (lambda lib, a: (a.softmax(-1), lib.log_softmax(a, 0),
                                lib.nn.functional.softmax(a, dim=1)), (A,)),
    "unbind_split_chunk": (lambda lib, a: (a.unbind(1), a.split(2, 1), a.chunk(3, -1)), (A,)),
    "gather_select": (lambda lib, a, i: (a.gather(1, lib.tensor([[0], [1], [2]])),
                                         a.index_select(1, i), a.select(1, 2),
                                         a.narrow(1, 1, 2)), (A, I4[:2]), (0, None), (1,)),
    "activations": (lambda lib, a: (lib.relu(a), a.sigmoid(), lib.nn.functional.gelu(a),
                                    lib.nn.functional.leaky_relu(a, 0.1), a.tanh().exp()),
                    (A,)),
    "mse": (lambda lib, a, b: (lib.nn.functional.mse_loss(a, b),
                               lib.nn.functional.mse_loss(a, b, reduction="none")), (B, B[::-1].copy())),
    "cross_entropy": (lambda lib, x, t: (lib.nn.functional.cross_entropy(x, t),
                                         lib.nn.functional.cross_entropy(x[0], t[0]),
                                         lib.nn.functional.nll_loss(x.log_softmax(1), t,
                                                                    reduction="sum")),
                      (A, np.array([[0, 1, 4]] * 4)), 0, (1,)),
    "bce": (lambda lib, x, t: (lib.nn.functional.binary_cross_entropy_with_logits(x, t),
                               lib.nn.functional.binary_cross_entropy(x.sigmoid(), t)),
            (B, (B > 0).astype(float))),
    "like_factories": (lambda lib, a: (lib.zeros_like(a), lib.ones_like(a) * a, a.clone(),
                                       a.detach(), a.new_zeros(2)), (A,)),
    "repeat_flip": (lambda lib, a: (a.repeat(2, 1), a.flip(0), a.cumsum(1)), (A,)),
    "einsum": (lambda lib, a, c: (lib.einsum("ij,jk->ik", a, c), lib.einsum("ij,ij", a, a),
                                  lib.einsum("...j,jk", a, c)), (A, C), (0, None)),
    "elementwise_losses": (lambda lib, a, b: (
        lib.nn.functional.smooth_l1_loss(a, b), lib.nn.functional.huber_loss(a, b, delta=0.5),
        lib.nn.functional.kl_div(a.log_softmax(0), b.softmax(0), reduction="batchmean"),
        lib.nn.functional.soft_margin_loss(a, b, reduction="sum")), (B, B[::-1].copy())),
    "dropout_eval": (lambda lib, a: lib.nn.functional.dropout(a, 0.5, training=False), (A,)),
    "inplace_chain": (lambda lib, a, b: _inplace(a, b), (B, B[::-1].copy())),
    "dtype_casts": (lambda lib, a: (a.to(lib.float32), a.float(), a.type(lib.float32),
                                    a.int(), (a > 0).long().sum()), (A,)),
    "shape_queries": (lambda lib, a: a.reshape(a.shape[0] * a.size(1)) * a.dim() * len(a), (A,)),
    "index_scatter": (lambda lib, a, b: (
        a.index_add(1, lib.tensor([0, 2]), b[:, :2]), lib.index_copy(a, 0, lib.tensor([2]), b[:1]),
        a.index_fill(1, lib.tensor([1]), -1.0),
        a.scatter(1, lib.tensor([[0], [1], [4]]), b[:, :1].contiguous()),
        a.scatter_add(0, lib.tensor([[1, 0, 2, 2, 0]]), b[:1])), (A, A[:, ::-1].copy())),
    "pad_interp_diag_diff": (lambda lib, a: (
        lib.nn.functional.pad(a, (1, 2), value=0.5),
        lib.nn.functional.interpolate(a.unsqueeze(0), scale_factor=2, mode="linear"),
        lib.diag(a[0]), lib.diag(a), lib.diff(a), lib.diff(a, dim=0),
        lib.diag_embed(a)), (A,)),
    "factories_mixed": (lambda lib, a: (lib.zeros(a.shape[-1], dtype=a.dtype) + a,
                                        lib.arange(5, dtype=a.dtype) * a,
                                        lib.cat([a, lib.ones(1, 5, dtype=a.dtype)])), (A,)),
}


def _inplace(a, b):
    y = a.clone()
    y += 1
    y *= b
    y.add_(2).clamp_(max=1.5)
    y[0] = b.sum()
    return y


def _setitem(a, b):
    a = a.clone()
    a[0] = b
    a[1, 2:] = 0.5
    return a


@pytest.mark.parametrize("name", sorted(OPS))
def test_vmap_op_matches_torch_without_looping(name):
    f, arrays, *rest = OPS[name]
    in_dims = rest[0] if rest else 0
    ints = rest[1] if len(rest) > 1 else ()
    _batched.LOOPED.clear()
    both(_case(f, *arrays, in_dims=in_dims, ints=ints))
    assert not _batched.LOOPED, f"looped over the batch for {dict(_batched.LOOPED)}"


def test_in_dims_and_out_dims():
    both(_case(lambda lib, a, b: a * b, A, B.T.copy(), in_dims=(0, 1)))
    both(_case(lambda lib, a, b: a * b, A, B, in_dims=(-3, 0)))
    both(_case(lambda lib, a: (a, a.sum(0)), A, out_dims=(1, -1)))
    both(_case(lambda lib, a: a.sum(0), A, out_dims=-1))

    def nested(lib, F):
        d = {"x": _t(lib, B), "y": (_t(lib, V), _t(lib, C))}
        return F.vmap(lambda d: d["x"].sum() * d["y"][0] + d["y"][1].sum(),
                      in_dims=({"x": 0, "y": (0, None)},))(d)
    both(nested)

    def none_out(lib, F):
        return F.vmap(lambda a, n: (a * 2, n), in_dims=(0, None), out_dims=(0, None))(
            _t(lib, B), 3)
    both(none_out)

    def unbatched_output(lib, F):
        c = _t(lib, C)
        return F.vmap(lambda a: c * 2)(_t(lib, B))
    both(unbatched_output)


def test_vmap_errors():
    def case(fn, *args, **kw):
        return lambda lib, F: F.vmap(fn, **kw)(*[_t(lib, a) for a in args])
    both_raise(case(lambda a: a, V, in_dims=1))
    both_raise(case(lambda a, b: a, V, B[:3], in_dims=(0, 0)))
    both_raise(case(lambda a: a, V, in_dims=(0, 0)))
    both_raise(case(lambda a: a, V, in_dims=[0]))
    both_raise(case(lambda a: a, V, in_dims=(1.5,)))
    both_raise(case(lambda a: 1, V))
    both_raise(case(lambda a: a, V, out_dims="x"))
    both_raise(case(lambda a: (a, a), V, out_dims=(0, 0, 0)))
    both_raise(case(lambda a: a, V, in_dims=None))
    both_raise(case(lambda a: a, V, out_dims=None))
    both_raise(lambda lib, F: F.vmap(lambda a: a)())
    both_raise(lambda lib, F: F.vmap(lambda a, n: a, in_dims=(0, 0))(_t(lib, V), 3))
    both_raise(lambda lib, F: F.vmap(lambda a: a, randomness="maybe")(_t(lib, V)))
    both_raise(lambda lib, F: F.vmap(lambda a: a, chunk_size=0)(_t(lib, V)))


@pytest.mark.parametrize("what", ["item", "bool", "if", "int", "float", "tolist"])
def test_data_dependent_control_flow_raises(what):
    def fn(lib, F):
        def g(x):
            if what == "item":
                return x.sum().item()
            if what == "bool":
                return bool(x.sum())
            if what == "if":
                return x if x.sum() > 0 else -x
            if what == "int":
                return int(x.sum())
            if what == "float":
                return float(x.sum())
            return x.tolist()
        return F.vmap(g)(_t(lib, B))
    both_raise(fn)


def test_nested_vmap():
    both(_case(lambda lib, a: a.sum(-1).softmax(0), A))

    def nest(lib, F):
        return F.vmap(F.vmap(lambda a, b: (a * b).sum() + a.max(), in_dims=(0, None)),
                      in_dims=(None, 0))(_t(lib, A[0]), _t(lib, A[1:]))
    both(nest)

    x4, y3 = RS.uniform(-1, 1, (2, 3, 4, 5)), RS.uniform(-1, 1, (3, 4, 5))

    def triple(lib, F):
        return F.vmap(F.vmap(F.vmap(lambda x, y: x @ y)), in_dims=(0, None))(
            _t(lib, x4), _t(lib, y3))
    both(triple)


def test_randomness():
    both_raise(lambda lib, F: F.vmap(lambda x: x + lib.randn(()))(_t(lib, B)))
    both_raise(lambda lib, F: F.vmap(lambda x: lib.nn.functional.dropout(x, 0.5))(_t(lib, B)))
    x = dyngrad.ones(6, 500, dtype=dyngrad.float64)
    same = dyngrad.func.vmap(lambda x: x + dyngrad.rand(500), randomness="same")(x)
    assert same.shape == (6, 500) and bool((same == same[0]).all())
    diff = dyngrad.func.vmap(lambda x: x + dyngrad.rand(500), randomness="different")(x)
    assert diff.shape == (6, 500) and not bool((diff == diff[0]).all())
    drop = dyngrad.func.vmap(lambda x: dyngrad.nn.functional.dropout(x, 0.5),
                             randomness="same")(x)
    assert bool((drop == drop[0]).all()) and 0.3 < float((drop == 0).double().mean()) < 0.7
    drop = dyngrad.func.vmap(lambda x: dyngrad.nn.functional.dropout(x, 0.5),
                             randomness="different")(x)
    assert not bool((drop == drop[0]).all())


def test_chunk_size():
    for cs in (1, 3, 10):
        both(lambda lib, F: F.vmap(lambda a, b: (a @ b, a.sum()), chunk_size=cs)(
            _t(lib, A), _t(lib, B)))


def test_fallback_loops_and_warns_once():
    x = dyngrad.tensor(RS.uniform(-1, 1, (3, 2, 2)))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        _batched._WARNED.discard("histc")
        r1 = dyngrad.func.vmap(dyngrad.histc)(x)
        r2 = dyngrad.func.vmap(lambda a: dyngrad.histc(a, 100, -1, 1))(x)
    msgs = [str(m.message) for m in w if "performance drop" in str(m.message)]
    assert len(msgs) == 1 and "aten::histc" in msgs[0]
    tx = torch.tensor(x.numpy())
    exp1 = torch.stack([torch.histc(a) for a in tx])
    exp2 = torch.stack([torch.histc(a, 100, -1, 1) for a in tx])
    np.testing.assert_allclose(r1.numpy(), exp1.numpy(), rtol=1e-10)
    np.testing.assert_allclose(r2.numpy(), exp2.numpy(), rtol=1e-10)


def test_no_wrapping_left_after_vmap():
    orig = dyngrad.Tensor.__add__
    dyngrad.func.vmap(lambda a: a + 1)(dyngrad.ones(3))
    assert dyngrad.Tensor.__add__ is orig
    with pytest.raises(ZeroDivisionError):
        dyngrad.func.vmap(lambda a: 1 / 0)(dyngrad.ones(3))
    assert dyngrad.Tensor.__add__ is orig and not _batched.LEVELS


def test_backward_through_vmap():
    def f(lib, F):
        x = _t(lib, A, requires_grad=True)
        w = _t(lib, C, requires_grad=True)
        y = F.vmap(lambda a: (a @ w).tanh().sum(0))(x)
        gx, gw = lib.autograd.grad((y ** 2).sum(), (x, w))
        return y, gx, gw
    both(f)


# --- composition with the other transforms ---------------------------------------------------
def test_per_sample_grads_unbatched_weights_are_not_summed():
    def f(lib, F):
        def loss(w, b, x, t):
            return ((x @ w + b).tanh() - t).pow(2).sum()
        return F.vmap(F.grad(loss, argnums=(0, 1)), in_dims=(None, None, 0, 0))(
            _t(lib, C), _t(lib, C[0]), _t(lib, B), _t(lib, B[:, :2]))
    got = both(f)
    assert tuple(got[0].shape) == (4, 5, 2)


def test_vmap_of_jacrev_jacfwd_hessian_and_jvp():
    g = lambda lib: (lambda x: (x.sin() * x.sum()))  # noqa: E731
    for tr in ("jacrev", "jacfwd"):
        both(lambda lib, F: F.vmap(getattr(F, tr)(g(lib)))(_t(lib, B)))
    both(lambda lib, F: F.vmap(F.hessian(lambda x: (x.sin() * x.sum()).sum()))(_t(lib, B)))
    both(lambda lib, F: F.vmap(lambda x, v: F.jvp(g(lib), (x,), (v,)))(_t(lib, B),
                                                                        _t(lib, B[::-1].copy())))
    both(lambda lib, F: F.vmap(lambda x, v: F.vjp(g(lib), x)[1](v))(_t(lib, B),
                                                                    _t(lib, B[::-1].copy())))


def test_transforms_of_vmap():
    f = lambda lib: (lambda x: (x @ _t(lib, C)).tanh())  # noqa: E731
    both(lambda lib, F: F.jacrev(F.vmap(f(lib)))(_t(lib, B)))
    both(lambda lib, F: F.jacfwd(F.vmap(f(lib)))(_t(lib, B)))
    both(lambda lib, F: F.grad(lambda x: F.vmap(f(lib))(x).sum())(_t(lib, B)))
    both(lambda lib, F: F.vmap(F.vmap(F.grad(lambda x: x.sin().sum())))(_t(lib, A)))
    both(lambda lib, F: F.vmap(F.grad(F.grad(lambda x: (x ** 3).sum() * x.sum())))(
        _t(lib, V)))


def test_hessian_vector_products():
    def f(lib, F):
        def loss(x):
            return (x.sin() * x ** 2).sum()
        x, v = _t(lib, B[0]), _t(lib, B[1])
        fwd_rev = F.jvp(F.grad(loss), (x,), (v,))[1]
        rev_rev = F.vjp(F.grad(loss), x)[1](v)[0]
        batched = F.vmap(lambda v: F.jvp(F.grad(loss), (x,), (v,))[1])(_t(lib, B))
        return fwd_rev, rev_rev, batched
    both(f)


class _MLP:
    @staticmethod
    def make(lib, seed=0):
        m = lib.nn.Sequential(lib.nn.Linear(5, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3)).double()
        rs = np.random.RandomState(seed)
        with lib.no_grad():
            for p in m.parameters():
                p.copy_(lib.tensor(rs.uniform(-1, 1, tuple(p.shape))))
        return m


def test_per_sample_grads_of_mlp_tutorial_pattern():
    def f(lib, F):
        model = _MLP.make(lib)
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def loss_fn(params, buffers, sample, target):
            out = F.functional_call(model, (params, buffers), (sample.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, target.unsqueeze(0))
        return F.vmap(F.grad(loss_fn), in_dims=(None, None, 0, 0))(
            params, buffers, _t(lib, B), lib.tensor([0, 2, 1, 1]))
    got = both(f)
    # the same as a loop of per-sample backward passes
    model = _MLP.make(dyngrad)
    for i in range(4):
        model.zero_grad()
        x = dyngrad.tensor(B[i:i + 1])
        dyngrad.nn.functional.cross_entropy(model(x), dyngrad.tensor([[0, 2, 1, 1][i]])).backward()
        for k, p in model.named_parameters():
            np.testing.assert_allclose(got[k][i].numpy(), p.grad.numpy(), rtol=1e-10)


def test_model_ensemble_with_stack_module_state():
    def f(lib, F):
        models = [_MLP.make(lib, s) for s in range(3)]
        params, buffers = F.stack_module_state(models)
        base = _MLP.make(lib, 9)

        def call(p, b, x):
            return F.functional_call(base, (p, b), (x,))
        same_data = F.vmap(call, in_dims=(0, 0, None))(params, buffers, _t(lib, B))
        own_data = F.vmap(call)(params, buffers, _t(lib, A[:3, :, :]))
        loss = lambda p, b, x: call(p, b, x).pow(2).mean()  # noqa: E731
        grads = F.vmap(F.grad(loss), in_dims=(0, 0, None))(params, buffers, _t(lib, B))
        return same_data, own_data, grads
    both(f, flags=False)


def test_ensemble_training_step_updates_each_model():
    models = [_MLP.make(dyngrad, s) for s in range(3)]
    params, buffers = dyngrad.func.stack_module_state(models)
    base = _MLP.make(dyngrad, 9)
    x = dyngrad.tensor(B)
    t = dyngrad.tensor([0, 1, 2, 1])

    def loss(p, b):
        out = dyngrad.func.functional_call(base, (p, b), (x,))
        return dyngrad.nn.functional.cross_entropy(out, t)
    opt = dyngrad.optim.SGD(params.values(), lr=0.5)
    first = None
    for _ in range(20):
        opt.zero_grad()
        losses = dyngrad.func.vmap(loss)(params, buffers)
        losses.sum().backward()
        opt.step()
        first = losses.detach() if first is None else first
    assert bool((losses < first).all())
    # each model's loss is its own: the same as running it alone
    p0 = {k: v[0].detach() for k, v in params.items()}
    np.testing.assert_allclose(loss(p0, {}).item(), dyngrad.func.vmap(loss)(params, buffers)[0].item())


def _cnn(lib):
    class CNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = lib.nn.Conv2d(1, 4, 3)
            self.conv2 = lib.nn.Conv2d(4, 6, 3)
            self.fc = lib.nn.Linear(6 * 2 * 2, 3)

        def forward(self, x):
            x = lib.nn.functional.relu(self.conv1(x))
            x = lib.nn.functional.max_pool2d(x, 2)
            x = lib.nn.functional.relu(self.conv2(x))
            return self.fc(x.flatten(1))
    m = CNN().double()
    rs = np.random.RandomState(0)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.tensor(rs.uniform(-0.5, 0.5, tuple(p.shape))))
    return m


IMG = RS.uniform(-1, 1, (6, 1, 10, 10))


def test_per_sample_grads_of_cnn():
    def f(lib, F):
        m = _cnn(lib)
        params = {k: v.detach() for k, v in m.named_parameters()}

        def loss(p, x, t):
            out = F.functional_call(m, p, (x.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, t.unsqueeze(0))
        return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, _t(lib, IMG),
                                                         lib.tensor([0, 1, 2, 2, 1, 0]))
    _batched.LOOPED.clear()
    both(f)
    assert not _batched.LOOPED


def test_empirical_ntk():
    def f(lib, F):
        m = _cnn(lib)
        params = {k: v.detach() for k, v in m.named_parameters()}

        def f1(p, x):
            return F.functional_call(m, p, (x.unsqueeze(0),)).squeeze(0)
        j1 = [j.flatten(2) for j in F.vmap(F.jacrev(f1), (None, 0))(params, _t(lib, IMG[:3]))
              .values()]
        j2 = [j.flatten(2) for j in F.vmap(F.jacrev(f1), (None, 0))(params, _t(lib, IMG[3:5]))
              .values()]
        return lib.stack([lib.einsum("Naf,Mbf->NMab", a, b) for a, b in zip(j1, j2)]).sum(0)
    both(f, rtol=1e-6)


def test_function_reading_storage_runs_per_sample():
    # an op that reads a batched tensor's storage directly (no rule, not reachable by the
    # dispatch) makes vmap run the whole function once per sample
    def raw(x):
        return dyngrad.tensor(x._data * 2)

    x = dyngrad.tensor(B)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = dyngrad.func.vmap(lambda a: raw(a) + a)(x)
    assert any("performance drop" in str(m.message) and "raw" in str(m.message) for m in w)
    np.testing.assert_allclose(out.numpy(), 3 * B)


def test_per_sample_grads_example_script():
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "examples"))
    import per_sample_grads
    g, ref, worst = per_sample_grads.main(batch=8, log=lambda *a: None)
    assert worst < 1e-5 and tuple(g["fc1.weight"].shape) == (8, 64, 32)


@pytest.mark.parametrize("case", ["add_", "iadd", "mul_logical", "setitem", "nested_add_",
                                  "bool_under_grad", "item_under_jacrev", "bool_in_inner_vmap"])
def test_inplace_and_control_flow_errors_as_pytorch(case):
    def f(lib, F):
        if case == "add_":
            return F.vmap(lambda x: lib.ones(3).add_(x))(lib.ones(2, 1))
        if case == "iadd":
            return F.vmap(lambda x: lib.zeros(3).__iadd__(x))(lib.ones(2, 3))
        if case == "mul_logical":
            return F.vmap(lambda x: lib.ones(3).mul_(x))(lib.ones(2, 3, 1))
        if case == "setitem":
            return F.vmap(lambda x: lib.zeros(3).__setitem__(0, x.sum()))(lib.ones(2, 3))
        if case == "nested_add_":
            return F.vmap(F.vmap(lambda x, y: x.add_(y)), in_dims=(None, 0))(
                lib.ones(2, 3), lib.ones(4, 2, 3))
        if case == "bool_under_grad":
            return F.vmap(F.grad(lambda x: x.sum() if x.sum() > 0 else -x.sum()))(
                lib.ones(2, 3))
        if case == "item_under_jacrev":
            return F.vmap(F.jacrev(lambda x: x * x.sum().item()))(lib.ones(2, 3))
        return F.grad(lambda x: F.vmap(lambda y: y.sum() if y.sum() > 0 else y)(x).sum())(
            lib.ones(2, 3))
    both_raise(f)


def test_normalization_layers():
    x = RS.uniform(-1, 1, (4, 5, 3, 2))

    def f(lib, F):
        def make(mod, **kw):
            lib.manual_seed(0)
            m = mod(**kw).double()
            with lib.no_grad():
                for p in m.parameters():
                    p.copy_(lib.tensor(np.linspace(0.5, 1.5, p.numel()).reshape(tuple(p.shape))))
            return m
        bn_eval = make(lib.nn.BatchNorm1d, num_features=3).eval()
        bn_free = make(lib.nn.BatchNorm1d, num_features=3, track_running_stats=False)
        gn = make(lib.nn.GroupNorm, num_groups=1, num_channels=3)
        ln = make(lib.nn.LayerNorm, normalized_shape=2)
        t = _t(lib, x)
        return (F.vmap(bn_eval)(t), F.vmap(bn_free)(t), F.vmap(gn)(t), F.vmap(ln)(t),
                F.vmap(F.grad(lambda xi: bn_free(xi).pow(3).sum()))(t))
    _batched.LOOPED.clear()
    both(f, flags=False)
    assert not _batched.LOOPED
    both_raise(lambda lib, F: F.vmap(lib.nn.BatchNorm1d(3).double())(_t(lib, x)))


@pytest.mark.parametrize("case", ["add", "matmul", "mm", "linear", "sum_dim", "view", "cat",
                                  "index", "softmax", "transpose", "cross_entropy"])
def test_shape_errors_inside_vmap_as_pytorch(case):
    def f(lib, F):
        o = lib.ones
        if case == "add":
            return F.vmap(lambda x, y: x + y)(o(2, 3), o(2, 4))
        if case == "matmul":
            return F.vmap(lambda x, y: x @ y)(o(2, 3, 4), o(2, 5, 6))
        if case == "mm":
            return F.vmap(lambda x, y: lib.mm(x, y))(o(2, 3, 4), o(2, 5, 6))
        if case == "linear":
            return F.vmap(lambda x: lib.nn.functional.linear(x, o(3, 5)))(o(2, 4))
        if case == "sum_dim":
            return F.vmap(lambda x: x.sum(3))(o(2, 4))
        if case == "view":
            return F.vmap(lambda x: x.view(5))(o(2, 4))
        if case == "cat":
            return F.vmap(lambda x: lib.cat([x, o(3, 3)]))(o(2, 4, 2))
        if case == "index":
            return F.vmap(lambda x: x[7])(o(2, 4))
        if case == "softmax":
            return F.vmap(lambda x: x.softmax(2))(o(2, 4))
        if case == "transpose":
            return F.vmap(lambda x: x.transpose(0, 2))(o(2, 4))
        return F.vmap(lambda x, t: lib.nn.functional.cross_entropy(x, t))(
            o(2, 4, 3), lib.zeros(2, 5, dtype=lib.long))
    both_raise(f)


def test_per_sample_second_derivatives_of_shared_weights():
    """Weights shared by the batch (unbatched inputs of grad under vmap) take the one-product
    path; their per-sample second derivatives keep their per-sample meaning."""
    def f(lib, F):
        w, v = _t(lib, C), _t(lib, C[::-1].copy())

        def loss(w, x):
            return lib.nn.functional.linear(x, w.T).tanh().pow(2).sum() + (x @ w).sin().sum()
        hv = F.vmap(lambda x: F.jvp(lambda w: F.grad(loss)(w, x), (w,), (v,))[1])(_t(lib, B))
        hr = F.vmap(lambda x: F.vjp(lambda w: F.grad(loss)(w, x), w)[1](v)[0])(_t(lib, B))
        h = F.vmap(F.hessian(loss), in_dims=(None, 0))(w, _t(lib, B))
        g = F.vmap(F.grad(loss), in_dims=(None, 0))(w, _t(lib, B))
        return hv, hr, h, g
    both(f)


def test_per_sample_grads_of_a_small_transformer_block():
    """Embedding, layer norm, attention and linear layers with per-sample gradients of every
    parameter, without the loop."""
    def f(lib, F):
        lib.manual_seed(0)
        emb = lib.nn.Embedding(11, 8).double()
        ln = lib.nn.LayerNorm(8).double()
        lin = lib.nn.Linear(8, 8).double()
        rs = np.random.RandomState(3)
        mods = {"emb": emb, "ln": ln, "lin": lin}
        with lib.no_grad():
            for m in mods.values():
                for p in m.parameters():
                    p.copy_(lib.tensor(rs.uniform(-1, 1, tuple(p.shape))))

        def loss(p, tokens):
            h = F.functional_call(emb, {"weight": p["emb"]}, (tokens,))
            h = F.functional_call(ln, {"weight": p["ln_w"], "bias": p["ln_b"]}, (h,))
            q = F.functional_call(lin, {"weight": p["lin_w"], "bias": p["lin_b"]}, (h,))
            a = lib.nn.functional.scaled_dot_product_attention(q, h, h)
            return a.pow(2).mean()
        params = {"emb": emb.weight.detach(), "ln_w": ln.weight.detach(),
                  "ln_b": ln.bias.detach(), "lin_w": lin.weight.detach(),
                  "lin_b": lin.bias.detach()}
        tokens = lib.tensor(rs.randint(0, 11, (4, 5)))
        return F.vmap(F.grad(loss), in_dims=(None, 0))(params, tokens)
    _batched.LOOPED.clear()
    both(f)
    assert not _batched.LOOPED, _batched.LOOPED


def test_maml_jacobian_over_params_and_ntk_by_vjp_of_jvp():
    xs, ys = RS.uniform(-1, 1, (5, 4, 3)), RS.uniform(-1, 1, (5, 4, 2))

    def f(lib, F):
        net = lib.nn.Sequential(lib.nn.Linear(3, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2)).double()
        rs = np.random.RandomState(1)
        with lib.no_grad():
            for p in net.parameters():
                p.copy_(lib.tensor(rs.uniform(-1, 1, tuple(p.shape))))
        params = {k: v.detach() for k, v in net.named_parameters()}

        def loss(p, x, y):
            return lib.nn.functional.mse_loss(F.functional_call(net, p, (x,)), y)

        def maml_loss(p, x, y):
            g = F.grad(loss)(p, x, y)
            return loss({k: p[k] - 0.1 * g[k] for k in p}, x, y)
        meta = F.vmap(F.grad(maml_loss), in_dims=(None, 0, 0))(params, _t(lib, xs), _t(lib, ys))
        jac = F.jacrev(lambda p: F.functional_call(net, p, (_t(lib, xs[0]),)))(params)

        x1, x2 = _t(lib, xs[0]), _t(lib, xs[1])
        _, vjp_fn = F.vjp(lambda p: F.functional_call(net, p, (x2,)), params)

        def column(v):
            return F.jvp(lambda p: F.functional_call(net, p, (x1,)), (params,), vjp_fn(v))[1]
        eye = lib.eye(2, dtype=lib.float64).unsqueeze(0).expand(4, 2, 2).permute(1, 0, 2)
        return meta, jac, F.vmap(column)(eye)
    both(f)


def test_more_composition_orders():
    def f(lib, F):
        x, v = _t(lib, A[:, 0]), _t(lib, A[:, 1])

        def g(z):
            return (z.sin() * z.sum()).exp()
        return (F.jvp(F.vmap(g), (x,), (v,)),
                F.grad(lambda x: F.vmap(F.grad(lambda z: (z ** 3).sum()))(x).pow(2).sum())(x),
                F.vmap(F.jacfwd(F.jacrev(lambda z: z.sin().sum() * z)))(x),
                F.hessian(lambda x: F.vmap(lambda z: z.tanh().sum())(x).sum())(x),
                F.jacfwd(F.vmap(F.grad(lambda z: (z.cos() * z).sum())))(x))
    both(f)


def test_jacobians_through_products_of_the_same_input():
    """Under jacfwd/jacrev the input is the same for every basis vector, so products of it
    take the shared-operand path, in forward and reverse mode and at second order."""
    x6, w32 = RS.uniform(-1, 1, 6), RS.uniform(-1, 1, (3, 2))

    def f(lib, F):
        def g(x):
            return (x.reshape(2, 3) @ x.reshape(3, 2)).tanh().reshape(-1)

        def h(x, w):
            return lib.nn.functional.linear(x.reshape(2, 3), w.T).sin().reshape(-1)
        x, w = _t(lib, x6), _t(lib, w32)
        return (F.jacfwd(g)(x), F.jacrev(g)(x), F.hessian(lambda x: g(x).sum())(x),
                F.jacfwd(h, argnums=(0, 1))(x, w), F.jacrev(h, argnums=(0, 1))(x, w),
                F.hessian(lambda x, w: h(x, w).sum(), argnums=1)(x, w))
    both(f)
