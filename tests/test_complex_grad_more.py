"""Complex values through more of the library against PyTorch: views, indexing, cat/stack,
gather/scatter, masked ops, reductions, products, linalg factorizations and nn.functional ops
on complex inputs.  Each case compares the result, the inputs' first gradients and a second
derivative (reverse mode), and the forward-mode tangent, with PyTorch's (the conjugate
Wirtinger convention: ``tests/test_complex_grad.py``)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")

_rng = np.random.default_rng(0)


def _c(*shape):
    return _rng.standard_normal(shape) + 1j * _rng.standard_normal(shape)


A, B, M, V = _c(3, 4), _c(3, 4), _c(4, 3), _c(4)
S = _c(3, 3) + 3 * np.eye(3)
R = _rng.standard_normal((3, 4))
IDX = np.array([[0, 2, 1, 0], [1, 1, 0, 2]])
MASK = np.array([[True, False, True, False]] * 3)


def _setitem(L, a, b):
    t = a * 1
    t[:, 1] = b[:, 0] * 2
    return t


def _add_into_view(L, a, b):
    t = a * 1
    t[:, 1].add_(b[:, 0] * b[:, 1])
    return t


def _copy_into_view(L, a, b):
    t = a * 1
    t[1:].copy_(b[:2] ** 2)
    return t


def _flat(xs):
    return lambda L: L.cat([x.reshape(-1) for x in xs(L)])


def _square_fn(L):
    """A custom Function whose backward is written in PyTorch's convention (grad * 2 conj(x)):
    its gradient is used as given, never conjugated."""
    class Square(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x.conj()
    return Square


# name -> (function of (library, *inputs), inputs)
CASES = {
    # views and shapes
    "reshape": (lambda L, a: a.reshape(4, 3), [A]),
    "view": (lambda L, a: a.view(2, 6), [A]),
    "transpose": (lambda L, a: a.transpose(0, 1), [A]),
    "permute": (lambda L, a: a.permute(1, 0), [A]),
    "unsqueeze_squeeze": (lambda L, a: a.unsqueeze(0).squeeze(0).unsqueeze(1), [A]),
    "expand": (lambda L, a: a[:, :1].expand(3, 5), [A]),
    "select": (lambda L, a: a[1], [A]),
    "slice": (lambda L, a: a[:, 1:3], [A]),
    "narrow": (lambda L, a: a.narrow(1, 1, 2), [A]),
    "diagonal": (lambda L, a: a.diagonal(), [A]),
    "unfold": (lambda L, a: a.unfold(1, 2, 1), [A]),
    "split": (lambda L, a: L.cat([p * (i + 1) for i, p in enumerate(a.split(2, 1))], 1), [A]),
    "chunk": (lambda L, a: L.cat([p * (i + 1j) for i, p in enumerate(a.chunk(2, 0))], 0), [A]),
    "unbind": (lambda L, a: L.stack([p * (i + 1j) for i, p in enumerate(a.unbind(0))]), [A]),
    "tensor_split": (lambda L, a: L.cat([p * (i + 1j) for i, p in
                                         enumerate(a.tensor_split(3, 1))], 1), [A]),
    "movedim": (lambda L, a: a.movedim(0, 1), [A]),
    "flatten": (lambda L, a: a.flatten(), [A]),
    "roll": (lambda L, a: a.roll(1, 1), [A]),
    "repeat": (lambda L, a: a.repeat(2, 1), [A]),
    "tile": (lambda L, a: a.tile((1, 2)), [A]),
    "rot90": (lambda L, a: a.rot90(1, (0, 1)), [A]),
    "tril": (lambda L, a: a.tril(), [A]),
    "triu": (lambda L, a: a.triu(1), [A]),
    "diag": (lambda L, v: L.diag(v), [V]),
    "diag_embed": (lambda L, a: L.diag_embed(a), [A]),
    "conj": (lambda L, a: a.conj() * a, [A]),
    "real_imag": (lambda L, a: a.real * a.imag, [A]),
    "view_as_real": (lambda L, a: L.view_as_real(a) ** 3, [A]),
    "view_as_complex": (lambda L, a: L.view_as_complex(L.view_as_real(a) * 2) ** 2, [A]),
    "polar": (lambda L, a: L.polar(a.abs(), a.angle()), [A]),
    "flip": (lambda L, a: a.flip(1), [A]),
    "fliplr": (lambda L, a: a.fliplr(), [A]),
    "atleast_3d": (lambda L, a: L.atleast_3d(a), [A]),
    "broadcast_to": (lambda L, v: L.broadcast_to(v, (3, 4)), [V]),
    "contiguous": (lambda L, a: a.t().contiguous(), [A]),
    "diff": (lambda L, a: L.diff(a, dim=1), [A]),
    "sum_to_size": (lambda L, a: a.sum_to_size(1, 4), [A]),
    "expand_as": (lambda L, a: a[:1].expand_as(a) * a, [A]),
    "unsafe_split": (lambda L, a: L.cat([p * (i + 1j) for i, p in
                                         enumerate(a.unsafe_split(2, 1))], 1), [A]),
    "t_": (lambda L, a: (a * 1).t_() * (1 + 1j), [A]),
    "unsqueeze_": (lambda L, a: (a * 1).unsqueeze_(0) ** 2, [A]),
    # dtype conversions
    "to_complex64_and_back": (lambda L, a: a.to(L.complex64).to(L.complex128), [A]),
    "real_to_complex": (lambda L, r: r.to(L.complex128) * (1 + 2j), [R]),
    "complex_times_real": (lambda L, a, r: a * r, [A, R]),
    "real_times_complex_scalar": (lambda L, r: (r * (1 - 2j)) ** 2, [R]),
    "cumsum_of_real_times_i": (lambda L, r: (r * 1j).cumsum(0), [R]),
    "angle_sgn_polar_of_real": (lambda L, r, q: L.polar(r.abs(), q) * r.angle() + r.sgn(),
                                [R, R * 2]),
    # indexing, gather / scatter, masked ops
    "index_int": (lambda L, a: a[L.tensor([0, 2, 2])], [A]),
    "index_bool": (lambda L, a: a[L.tensor(MASK)], [A]),
    "index_select": (lambda L, a: a.index_select(1, L.tensor([3, 0, 0])), [A]),
    "gather": (lambda L, a: a.gather(0, L.tensor(IDX)), [A]),
    "take": (lambda L, a: L.take(a, L.tensor([0, 5, 5, 11])), [A]),
    "take_along_dim": (lambda L, a: L.take_along_dim(a, L.tensor(IDX), 0), [A]),
    "scatter": (lambda L, a, b: a.scatter(0, L.tensor(IDX), b[:2]), [A, B]),
    "scatter_add": (lambda L, a, b: a.scatter_add(0, L.tensor(IDX), b[:2]), [A, B]),
    "index_add": (lambda L, a, b: a.index_add(0, L.tensor([0, 2, 0]), b * 1j), [A, B]),
    "index_copy": (lambda L, a, b: a.index_copy(0, L.tensor([2, 0]), b[:2]), [A, B]),
    "index_put": (lambda L, a, b: a.index_put((L.tensor([0, 2]),), b[:2], accumulate=True),
                  [A, B]),
    "index_fill": (lambda L, a: a.index_fill(1, L.tensor([1]), 2 + 1j), [A]),
    "masked_fill": (lambda L, a: a.masked_fill(L.tensor(MASK), 1j), [A]),
    "masked_scatter": (lambda L, a, b: a.masked_scatter(L.tensor(MASK), b), [A, B]),
    "masked_select": (lambda L, a: a.masked_select(L.tensor(MASK)), [A]),
    "where": (lambda L, a, b: L.where(L.tensor(MASK), a, b), [A, B]),
    "setitem": (_setitem, [A, B]),
    "add_into_view": (_add_into_view, [A, B]),
    "copy_into_view": (_copy_into_view, [A, B]),
    "mul_": (lambda L, a, b: (a * 1).mul_(b), [A, B]),
    "sigmoid_": (lambda L, a: (a * 1).sigmoid_(), [A]),
    "copy_real_into_complex": (lambda L, a, r: (a * 1).copy_(r * 2), [A, R]),
    "masked_fill_": (lambda L, a: (a * 1).masked_fill_(L.tensor(R > 0), 2j), [A]),
    "index_put_": (lambda L, a, b: (a * 1).index_put_((L.tensor([0, 2]),), b[:2] * 1j,
                                                      accumulate=True), [A, B]),
    # cat / stack
    "cat": (lambda L, a, b: L.cat([a, b * a], 0), [A, B]),
    "stack": (lambda L, a, b: L.stack([a, b], 1), [A, B]),
    "hstack": (lambda L, a, b: L.hstack([a, b]), [A, B]),
    "vstack": (lambda L, a, b: L.vstack([a, b]), [A, B]),
    "dstack": (lambda L, a, b: L.dstack([a, b]), [A, B]),
    # reductions
    "sum_dim": (lambda L, a: a.sum(1), [A]),
    "mean_dim": (lambda L, a: a.mean(0, keepdim=True), [A]),
    "prod_all": (lambda L, a: a.prod(), [A]),
    "prod_dim": (lambda L, a: a.prod(1), [A]),
    "cumsum": (lambda L, a: a.cumsum(1), [A]),
    "cumprod": (lambda L, a: a.cumprod(1), [A]),
    "logsumexp": (lambda L, a: a.logsumexp(1), [A]),
    "var": (lambda L, a: a.var(1), [A]),
    "std": (lambda L, a: a.std(1), [A]),
    "var_mean": (lambda L, a: L.cat([x.reshape(-1) for x in L.var_mean(a, 1)]), [A]),
    "std_mean": (lambda L, a: L.cat([x.reshape(-1) for x in L.std_mean(a, 1)]), [A]),
    "norm": (lambda L, a: a.norm(), [A]),
    "norm_dim": (lambda L, a: a.norm(dim=1), [A]),
    "norm_p1": (lambda L, a: a.norm(p=1, dim=1), [A]),
    "norm_p3": (lambda L, a: a.norm(p=3), [A]),
    "norm_p3_dim": (lambda L, a: a.norm(p=3, dim=1), [A]),
    "norm_p1_all": (lambda L, a: a.norm(p=1), [A]),
    "norm_inf_dim": (lambda L, a: a.norm(p=float("inf"), dim=1), [A]),
    "norm_fro_dims": (lambda L, a: L.norm(a, "fro", dim=(0, 1)), [A]),
    "norm_nuc": (lambda L, a: L.norm(a, "nuc"), [A]),
    "mean_all": (lambda L, a: a.mean((0, 1)), [A]),
    "std_all": (lambda L, a: a.std(), [A]),
    "vector_norm": (lambda L, a: L.linalg.vector_norm(a, 3, 1), [A]),
    "vector_norm_inf": (lambda L, a: L.linalg.vector_norm(a, float("inf"), 1), [A]),
    "matrix_norm": (lambda L, a: L.linalg.matrix_norm(a), [A]),
    "matrix_norm_nuc": (lambda L, a: L.linalg.matrix_norm(a, "nuc"), [A]),
    "dist": (lambda L, a, b: L.dist(a, b, 3), [A, B]),
    "renorm": (lambda L, a: a.renorm(2, 0, 1.0), [A]),
    "trace": (lambda L, s: s.trace(), [S]),
    # products
    "mm": (lambda L, a, m: a @ m, [A, M]),
    "matmul_batched": (lambda L, a, b: L.matmul(a.reshape(3, 1, 4), b.reshape(3, 4, 1)), [A, B]),
    "bmm": (lambda L, a, b: L.bmm(a.reshape(3, 2, 2), b.reshape(3, 2, 2)), [A, B]),
    "mv": (lambda L, a, v: L.mv(a, v), [A, V]),
    "outer": (lambda L, a, v: L.outer(a[0], v), [A, V]),
    "inner": (lambda L, a, b: L.inner(a, b), [A, B]),
    "addmm": (lambda L, s, a, m: L.addmm(s, a, m, beta=0.5, alpha=2j), [S, A, M]),
    "addmv": (lambda L, s, a, v: L.addmv(s[0], a, v), [S, A, V]),
    "baddbmm": (lambda L, a, b: L.baddbmm(a.reshape(3, 2, 2), a.reshape(3, 2, 2),
                                          b.reshape(3, 2, 2)), [A, B]),
    "einsum": (lambda L, a, m: L.einsum("ij,jk->ik", a, m), [A, M]),
    "tensordot": (lambda L, a, b: L.tensordot(a, b, ([1], [1])), [A, B]),
    "kron": (lambda L, a, b: L.kron(a[:2, :2], b[:2, :2]), [A, B]),
    "cross": (lambda L, a, b: L.linalg.cross(a[:, :3], b[:, :3]), [A, B]),
    "addcmul": (lambda L, a, b: L.addcmul(a, a, b, value=0.5), [A, B]),
    "addcdiv": (lambda L, a, b: L.addcdiv(a, a, b, value=0.5), [A, B]),
    "lerp": (lambda L, a, b: L.lerp(a, b, 0.3), [A, B]),
    "lerp_tensor": (lambda L, a, b: L.lerp(a, b, b), [A, B]),
    "logaddexp": (lambda L, a, b: L.logaddexp(a, b * 0.5), [A, B]),
    # powers
    "pow_real_scalar": (lambda L, a: a ** 2.5, [A]),
    "pow_complex_scalar": (lambda L, a: a ** (1.5 + 0.5j), [A]),
    "pow_tensor": (lambda L, a, b: a ** (b * 0.3), [A, B]),
    "rpow": (lambda L, a: 2 ** a, [A]),
    "rpow_complex_base": (lambda L, a: (1 + 1j) ** a, [A]),
    "float_power": (lambda L, a: L.float_power(a, 2), [A]),
    "rsub": (lambda L, a: 1j - a, [A]),
    "rdiv": (lambda L, a: (2 - 1j) / a, [A]),
    "sgn_times": (lambda L, a: a.sgn() * a, [A]),
    "abs_squared": (lambda L, a: a.abs() ** 2, [A]),
    "sinc": (lambda L, a: L.sinc(a), [A]),
    # linalg
    "inv": (lambda L, s: L.linalg.inv(s), [S]),
    "det": (lambda L, s: L.linalg.det(s), [S]),
    "slogdet": (lambda L, s: L.cat([x.reshape(1) * 1 for x in L.linalg.slogdet(s)]), [S]),
    "logdet": (lambda L, s: L.logdet(s @ s.mH), [S]),
    "solve": (lambda L, s, a: L.linalg.solve(s, a), [S, A]),
    "solve_vector": (lambda L, s, a: L.linalg.solve(s, a[:, 0]), [S, A]),
    "matrix_exp": (lambda L, s: L.linalg.matrix_exp(s * 0.3), [S]),
    "pinverse_wide": (lambda L, a: L.pinverse(a), [A]),
    "pinverse_tall": (lambda L, a: L.pinverse(a.mT), [A]),
    "multi_dot": (lambda L, a, m, s: L.linalg.multi_dot([a, m, s]), [A, M, S]),
    "cholesky": (lambda L, s: L.linalg.cholesky(s @ s.mH), [S]),
    "cholesky_upper": (lambda L, s: L.linalg.cholesky(s @ s.mH, upper=True), [S]),
    "qr": (lambda L, a: L.cat([x.reshape(-1) for x in L.linalg.qr(a)]), [A]),
    "qr_wide": (lambda L, a: L.cat([x.reshape(-1) for x in L.linalg.qr(a.mT)]), [A]),
    "svdvals": (lambda L, a: L.linalg.svdvals(a), [A]),
    # the singular vectors and eigenvectors only through phase-invariant functions of them
    "svd_abs": (lambda L, a: L.cat([x.abs().reshape(-1) for x in
                                    L.linalg.svd(a, full_matrices=False)]), [A]),
    "svd_wide_abs": (lambda L, a: L.cat([x.abs().reshape(-1) for x in
                                         L.linalg.svd(a.mT, full_matrices=False)]), [A]),
    "svd_full_abs": (lambda L, a: L.cat([x.abs().reshape(-1) for x in
                                         L.linalg.svd(a, full_matrices=True)]), [A]),
    "svd_product": (lambda L, a: (lambda u, s, vh: (u * s) @ vh)(
        *L.linalg.svd(a, full_matrices=False)), [A]),
    "eigvalsh": (lambda L, s: L.linalg.eigvalsh(s + s.mH), [S]),
    "eigh_abs": (lambda L, s: L.cat([x.abs().reshape(-1) for x in L.linalg.eigh(s + s.mH)]),
                 [S]),
    "eigh_product": (lambda L, s: (lambda w, v: (v * w) @ v.mH)(*L.linalg.eigh(s + s.mH)), [S]),
    # nn.functional
    "dropout_eval": (lambda L, a: L.nn.functional.dropout(a, 0.5, training=False), [A]),
    "linear": (lambda L, a, m: L.nn.functional.linear(a, m.t(), m[0]), [A, M]),
    "pad_constant": (lambda L, a: L.nn.functional.pad(a, (1, 2)), [A]),
    "pad_reflect": (lambda L, a: L.nn.functional.pad(a.unsqueeze(0), (2, 1), mode="reflect"),
                    [A]),
    "pad_replicate": (lambda L, a: L.nn.functional.pad(a.unsqueeze(0), (2, 1),
                                                       mode="replicate"), [A]),
    "pad_circular": (lambda L, a: L.nn.functional.pad(a.unsqueeze(0), (2, 1), mode="circular"),
                     [A]),
    "conv1d": (lambda L, a, b: L.nn.functional.conv1d(
        a.unsqueeze(0), b[:, :2].reshape(2, 3, 1).expand(2, 3, 2).contiguous()), [A, B]),
    "conv2d": (lambda L, a, b: L.nn.functional.conv2d(a.reshape(1, 1, 3, 4),
                                                      b[:2, :2].reshape(1, 1, 2, 2)), [A, B]),
    "conv_transpose1d": (lambda L, a, b: L.nn.functional.conv_transpose1d(
        a.unsqueeze(0), b[:, :2].reshape(3, 1, 2)), [A, B]),
    "normalize": (lambda L, a: L.nn.functional.normalize(a, dim=1), [A]),
    "l1_loss": (lambda L, a, b: L.nn.functional.l1_loss(a, b), [A, B]),
    "pairwise_distance": (lambda L, a, b: L.nn.functional.pairwise_distance(a, b), [A, B]),
    "pixel_shuffle": (lambda L, a: L.nn.functional.pixel_shuffle(a.reshape(1, 4, 3, 1), 2), [A]),
    "unfold_patches": (lambda L, a: L.nn.functional.unfold(a.reshape(1, 1, 3, 4), 2), [A]),
    "tanh": (lambda L, a: L.nn.functional.tanh(a), [A]),
    "custom_function": (lambda L, a: _square_fn(L).apply(a), [A]),
}


def _weights(key, shape):
    return np.random.default_rng(zlib.crc32(key.encode())).standard_normal(shape)


def _loss(L, y, key):
    """A real loss that is not symmetric in the real and imaginary parts."""
    yr = L.view_as_real(y) if y.is_complex() else y
    return (yr ** 2 * L.tensor(_weights(key, tuple(yr.shape)))).sum()


def _reverse(L, name):
    f, arrays = CASES[name]
    ins = [L.tensor(a, requires_grad=True) for a in arrays]
    y = f(L, *ins)
    gs = L.autograd.grad(_loss(L, y, name), ins, create_graph=True, allow_unused=True)
    out = [y.detach().numpy()] + [None if g is None else g.detach().numpy() for g in gs]
    live = [(i, g) for i, g in enumerate(gs) if g is not None and g.requires_grad]
    if live:
        second = sum(_loss(L, g, f"{name}{i}") for i, g in live)
        out += [None if h is None else h.numpy()
                for h in L.autograd.grad(second, ins, allow_unused=True)]
    return out


def _same(got, exp):
    assert len(got) == len(exp)
    for a, b in zip(got, exp):
        if a is None or b is None:  # an unused input: no gradient, or zeros
            assert not np.any(a if b is None else b)
            continue
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_two_orders_of_gradients_are_pytorchs(name):
    _same(_reverse(dyngrad, name), _reverse(torch, name))


def _forward(L, name):
    f, arrays = CASES[name]
    fw = L.autograd.forward_ad
    with fw.dual_level():
        ins = []
        for i, a in enumerate(arrays):
            t = _weights(f"{name}t{i}", a.shape) + (1j * _weights(f"{name}u{i}", a.shape)
                                                    if np.iscomplexobj(a) else 0)
            ins.append(fw.make_dual(L.tensor(a), L.tensor(t)))
        tangent = fw.unpack_dual(f(L, *ins)).tangent
        return [None if tangent is None else tangent.numpy()]


@pytest.mark.parametrize("name", [n for n in CASES if n != "custom_function"])
def test_forward_mode_tangent_is_pytorchs(name):
    _same(_forward(dyngrad, name), _forward(torch, name))


# --- forward mode of the ops in test_complex_grad.py --------------------------------------------
Z = np.array([1 + 2j, -0.5 + 0.3j, 0.7 - 0.2j])
T = np.array([0.4 - 1j, 1j, -0.3 + 0.8j])
UNARY = ["exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "abs", "neg", "reciprocal",
         "square", "sgn", "angle", "log1p", "expm1", "sinh", "cosh", "tan", "asin", "acos",
         "atan", "rsqrt", "log2", "log10", "exp2", "asinh", "acosh", "atanh", "conj_physical"]
MORE = {"real": lambda L, a: a.real * 1, "imag": lambda L, a: a.imag * 1,
        "view_as_real": lambda L, a: L.view_as_real(a) * 1,
        "view_as_complex": lambda L, a: L.view_as_complex(L.view_as_real(a) * 1) * 1,
        "abs_of_sum": lambda L, a: (a * (2 - 1j)).sum().abs(),
        "var": lambda L, a: a.var(), "norm": lambda L, a: a.norm(),
        "sum": lambda L, a: a.sum(), "prod": lambda L, a: a.prod(),
        "cumsum": lambda L, a: a.cumsum(0), "mul": lambda L, a: a * a * (0.5 - 1j),
        "div": lambda L, a: a / (a * (0.5 - 1j) + 1), "pow": lambda L, a: a ** (a * 0.5),
        "dot": lambda L, a: L.dot(a, a * 1j)}


def _jvp(L, fn):
    fw = L.autograd.forward_ad
    with fw.dual_level():
        y = fn(L, fw.make_dual(L.tensor(Z), L.tensor(T)))
        p, t = fw.unpack_dual(y)
        return [p.numpy(), t.numpy()]


@pytest.mark.parametrize("name", UNARY + list(MORE))
def test_forward_mode_on_complex_input_is_pytorchs(name):
    fn = MORE.get(name) or (lambda L, a: getattr(L, name)(a))
    _same(_jvp(dyngrad, fn), _jvp(torch, fn))


def test_abs_tangent_is_real_part_of_conj_sgn_times_tangent():
    # PyTorch's abs jvp for complex input: real(conj(sgn(z)) * t)
    got = _jvp(dyngrad, lambda L, a: a.abs())[1]
    np.testing.assert_allclose(got, (np.conj(Z / np.abs(Z)) * T).real, rtol=1e-12)


# --- dtypes and values around complex numbers ---------------------------------------------------
def test_complex_results_of_real_inputs_as_pytorch():
    def run(L):
        x = L.tensor([1.0, -2.0], requires_grad=True)
        out = [(x * (1 + 2j)).dtype, (L.tensor([1, 2]) * 1j).dtype, (1j - x).dtype,
               L.float_power(x, 1j).dtype, L.float_power(L.tensor([1 + 1j]), 2).dtype,
               L.tensor([1 + 2j, 3j]).var().dtype, L.dist(L.tensor([1j]), L.tensor([0j])).dtype]
        out = [str(d).split(".")[-1] for d in out]
        y = x.to(L.complex128)
        out.append(y.grad_fn.name())
        (y * (1 - 1j)).abs().sum().backward()
        out.append(x.grad.tolist())
        return out
    assert run(dyngrad) == run(torch)


def test_scalar_base_gradient_for_negative_and_complex_bases():
    def run(L):
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        g1, = L.autograd.grad(((-2.0) ** x).sum(), x)
        z = L.tensor([1 + 1j, 0.5j], dtype=L.complex128, requires_grad=True)
        g2, = L.autograd.grad(((1 - 2j) ** z).abs().sum(), z)
        return [g1.numpy(), g2.numpy()]
    _same(run(dyngrad), run(torch))


@pytest.mark.parametrize("k", [0, 2])
@pytest.mark.parametrize("shape", [(3, 2), (2, 3)])
def test_phase_dependent_loss_through_svd_or_eigh_raises_as_pytorch(shape, k):
    def run(L):
        a = L.tensor(A[:shape[0], :shape[1]], requires_grad=True)
        out = []
        for f in (lambda: L.view_as_real(L.linalg.svd(a, full_matrices=False)[k]).sum(),
                  lambda: L.view_as_real(L.linalg.eigh(a @ a.mH)[1]).sum()):
            with pytest.raises(RuntimeError) as e:
                f().backward()
            out.append(str(e.value))
        return out
    assert run(dyngrad) == run(torch)


# --- open differences (docs/reliability.md) -----------------------------------------------------
@pytest.mark.xfail(strict=True, reason="PyTorch's silu tangent for complex input is "
                                       "conj(silu'(z)) * t (docs/reliability.md)")
def test_silu_tangent_on_complex_input_is_pytorchs():
    def fn(L, a):
        return L.nn.functional.silu(a)
    _same(_jvp(dyngrad, fn), _jvp(torch, fn))
