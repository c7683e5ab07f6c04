"""Differential test against a real PyTorch (skipped when it is not installed): values,
gradients, grad_fn names and error types of the math ops on the same inputs."""
import numpy as np
import pytest

real = pytest.importorskip("torch")
import dyngrad as dg  # noqa: E402


def _run(lib, fn, arrays, grad):
    ts = [lib.tensor(a, dtype=lib.float64, requires_grad=grad) for a in arrays]
    try:
        out = fn(lib, *ts)
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return ("error", type(e).__name__), None, None
    outs = [out] if isinstance(out, lib.Tensor) else [o for o in out if isinstance(o, lib.Tensor)]
    name = type(outs[0].grad_fn).__name__ if outs[0].grad_fn is not None else None
    grads = None
    if grad and outs[0].requires_grad:
        s = sum((o * (o.detach() * 0 + 1.5)).sum() for o in outs if o.is_floating_point()
                and o.requires_grad)
        gs = lib.autograd.grad(s, ts, allow_unused=True)
        grads = [None if g is None else g.numpy() for g in gs]
    return [o.detach().numpy() for o in outs], name, grads


TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
ZEROS = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 1.5]])
R = np.random.RandomState(0)
A = R.uniform(-2, 2, (3, 4))
B = R.uniform(-2, 2, (4,))
P = R.uniform(0.2, 2, (3, 4))
M = R.uniform(-1, 1, (3, 3)) + 3 * np.eye(3)

CASES = {
    "max_ties": (lambda t, x: x.max(), [TIES]),
    "max_dim_ties": (lambda t, x: x.max(1), [TIES]),
    "min_dim_keep": (lambda t, x: t.min(x, 0, keepdim=True), [TIES]),
    "amax_ties": (lambda t, x: x.amax(1), [TIES]),
    "amin_all": (lambda t, x: t.amin(x), [TIES]),
    "maximum_ties": (lambda t, x, y: t.maximum(x, y), [TIES, TIES[::-1].copy()]),
    "prod_zeros": (lambda t, x: x.prod(), [ZEROS]),
    "prod_dim_zeros": (lambda t, x: x.prod(1), [ZEROS]),
    "cumprod_zeros": (lambda t, x: x.cumprod(1), [ZEROS]),
    "cumsum": (lambda t, x: t.cumsum(x, 0), [A]),
    "std_mean": (lambda t, x: t.std_mean(x, 1), [A]),
    "var_mean": (lambda t, x: t.var_mean(x, correction=0), [A]),
    "std_const": (lambda t, x: x.std(1), [np.ones((2, 3))]),
    "norm_zero": (lambda t, x: x.norm(), [np.zeros(3)]),
    "norm_inf_ties": (lambda t, x: x.norm(float("inf")), [np.array([2.0, -2.0, 1.0])]),
    "norm_p": (lambda t, x: t.norm(x, 3, dim=1), [A]),
    "logsumexp": (lambda t, x: x.logsumexp(1), [A]),
    "clamp_edges": (lambda t, x: x.clamp(0.0, 1.0), [np.array([0.0, 1.0, 2.0, -1.0])]),
    "clamp_tensor": (lambda t, x, lo, hi: t.clamp(x, lo, hi), [A, B, np.full((3, 1), 0.5)]),
    "clamp_min_tensor": (lambda t, x, y: t.clamp_min(x, y), [A, B]),
    "where": (lambda t, x, y: t.where(x > 0, x, y), [A, B]),
    "where_scalar": (lambda t, x: t.where(x > 0, 1.0, x), [A]),
    "abs_zero": (lambda t, x: x.abs(), [np.array([0.0, -1.0, 2.0])]),
    "sign": (lambda t, x: x.sign(), [A]),
    "round_dec": (lambda t, x: t.round(x, decimals=1), [A]),
    "frac": (lambda t, x: x.frac(), [A]),
    "fmod": (lambda t, x, y: t.fmod(x, y), [A, B]),
    "remainder": (lambda t, x, y: t.remainder(x, y), [A, B]),
    "atan2_zero": (lambda t, x, y: t.atan2(x, y), [np.array([0.0, 1.0]), np.array([0.0, 2.0])]),
    "hypot": (lambda t, x, y: t.hypot(x, y), [A, B]),
    "xlogy_zero": (lambda t, x, y: t.xlogy(x, y), [np.array([0.0, 1.0, 0.0]), np.array([0.0, 2.0, 3.0])]),
    "copysign": (lambda t, x, y: t.copysign(x, y), [A, B]),
    "lerp": (lambda t, x, y, w: t.lerp(x, y, w), [A, B, P]),
    "logit_eps": (lambda t, x: x.logit(eps=0.2), [np.array([0.1, 0.5, 0.9])]),
    "nan_to_num": (lambda t, x: x.nan_to_num(), [np.array([np.nan, np.inf, 1.0])]),
    "erf": (lambda t, x: t.erf(x), [A]),
    "log1p": (lambda t, x: t.log1p(x), [P]),
    "einsum_trace": (lambda t, x: t.einsum("ii->", x), [M]),
    "einsum_bij": (lambda t, x, y: t.einsum("ij,j->i", x, y), [A, B]),
    "matmul_2d3d": (lambda t, x, y: t.matmul(x, y), [A.T.copy(), np.stack([A, A])]),
    "inv": (lambda t, x: t.linalg.inv(x), [M]),
    "det": (lambda t, x: t.det(x), [M]),
    "slogdet": (lambda t, x: t.linalg.slogdet(x), [M]),
    "solve": (lambda t, x, y: t.linalg.solve(x, y), [M, A[:, :3].T.copy()]),
    "matrix_norm_1": (lambda t, x: t.linalg.matrix_norm(x, 1), [A]),
    "matrix_norm_nuc": (lambda t, x: t.linalg.matrix_norm(x, "nuc"), [A]),
    "bad_broadcast": (lambda t, x, y: x + y, [A, np.ones(5)]),
    "bad_dim": (lambda t, x: x.sum(4), [A]),
    "bad_clamp": (lambda t, x: t.clamp(x), [A]),
    "bad_max_empty": (lambda t, x: x.max(), [np.zeros(0)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    fn, arrays = CASES[name]
    exp, ename, egrads = _run(real, fn, arrays, True)
    got, gname, ggrads = _run(dg, fn, arrays, True)
    if isinstance(exp, tuple):
        assert got == exp
        return
    assert gname == ename
    for g, e in zip(got, exp):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)
    if egrads is not None:
        for g, e in zip(ggrads, egrads):
            if e is None:
                assert g is None or not np.any(g)
            else:
                np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-8)


# A number with a tensor of another dtype: clamp's bounds are converted as PyTorch converts a
# Scalar (refused when the dtype cannot hold them; an unsigned dtype wraps a negative integer
# down to -max), complex and bool inputs refused with PyTorch's messages; the shifts wrap a
# number the tensor's integer dtype cannot hold (either side).
NUMBER_CASES = {
    "clamp_uint8_negative": lambda t: t.clamp(t.tensor([0, 1, 2, 3], dtype=t.uint8), -1, 2),
    "clamp_min_uint8_wraps": lambda t: t.clamp_min(t.tensor([0, 3], dtype=t.uint8), -255),
    "clamp_uint8_too_negative": lambda t: t.clamp(t.tensor([1, 2], dtype=t.uint8), -256),
    "clamp_int8_too_big": lambda t: t.clamp(t.tensor([1, 2], dtype=t.int8), 200),
    "clamp_int64_2_63": lambda t: t.clamp(t.tensor([1, 2]), max=2 ** 63),
    "clamp_int_beyond_uint64": lambda t: t.clamp(t.tensor([1, 2]), 2 ** 64 + 1),
    "clamp_float32_too_big": lambda t: t.clamp(t.tensor([1.0, 2.0]), 1e39),
    "clamp_half_too_big": lambda t: t.clamp(t.tensor([1.0, 2.0], dtype=t.float16), max=1e6),
    "clamp_inf": lambda t: t.clamp(t.tensor([1.0, 2.0]), float("inf")),
    "clamp_complex_bound": lambda t: t.clamp(t.tensor([1.0, 2.0]), 1j),
    "clamp_complex_bound_real": lambda t: t.clamp(t.tensor([1.0, 2.0]), 1.5 + 0j),
    "clamp_complex": lambda t: t.clamp(t.tensor([1j, 2]), 0, 1),
    "clip_complex": lambda t: t.clip(t.tensor([1j, 2]), max=1),
    "clamp_complex_tensors": lambda t: t.clamp(t.tensor([1j]), t.tensor(0.0), t.tensor(1.0)),
    "clamp_min_complex": lambda t: t.clamp_min(t.tensor([1j]), 0),
    "clamp_min_complex_tensor": lambda t: t.clamp_min(t.tensor([1j]), t.tensor(0.0)),
    "clamp_max_complex_tensor": lambda t: t.clamp_max(t.tensor([1j]), t.tensor(0.0)),
    "clamp_complex_min_tensor": lambda t: t.clamp(t.tensor([1.0, 2.0]), t.tensor([0j])),
    "clamp__complex": lambda t: t.tensor([1j]).clamp_(0, 1),
    "clamp_bool": lambda t: t.clamp(t.tensor([True, False]), True, False),
    "clamp_min_bool": lambda t: t.clamp_min(t.tensor([True, False]), True),
    "clamp_max_bool": lambda t: t.tensor([True, False]).clamp_max(False),
    "clamp_bool_int": lambda t: t.clamp(t.tensor([True, False]), 2),
    "clamp_bool_tensor": lambda t: t.clamp(t.tensor([True, False]), t.tensor(True)),
    "lshift_int8_200": lambda t: t.tensor([1, -2, 3], dtype=t.int8) << 200,
    "rshift_int8_200": lambda t: t.tensor([1, -2, 3], dtype=t.int8) >> 200,
    "rshift_uint8_negative": lambda t: t.tensor([1, 200], dtype=t.uint8) >> -3,
    "rlshift_int8_200": lambda t: 200 << t.tensor([0, 1, 2, 7], dtype=t.int8),
    "rrshift_int8_300": lambda t: 300 >> t.tensor([1, 2], dtype=t.int8),
    "rrshift_uint8_negative": lambda t: -3 >> t.tensor([0, 1, 7], dtype=t.uint8),
    "rshift_fn_number_first": lambda t: t.bitwise_right_shift(200, t.tensor([1, 2, 3],
                                                                        dtype=t.int8)),
    "lshift_method_int8_200": lambda t: t.tensor([1, 2], dtype=t.int8).bitwise_left_shift(200),
    "rmod_uint8_negative": lambda t: -1 % t.tensor([3, 0, 6], dtype=t.uint8),
    "rmod_uint8_wraps": lambda t: -1 % t.tensor([3, 7, 6], dtype=t.uint8),
    "rfloordiv_int8_300": lambda t: 300 // t.tensor([3, 7, -6], dtype=t.int8),
    # in place: a signed integer result written into an unsigned tensor (PyTorch's can_cast
    # allows it, wrapping around); heaviside_'s own dtype check comes first
    "add__uint8_int64": lambda t: t.tensor([3, 0, 250], dtype=t.uint8).add_(t.tensor([2, -5, 9])),
    "remainder__uint8_int8": lambda t: t.tensor([3, 0, 250], dtype=t.uint8).remainder_(
        t.tensor([2, -5, 9], dtype=t.int8)),
    "gcd__uint8_int16": lambda t: t.gcd_(t.tensor([3, 0, 250], dtype=t.uint8),
                                         t.tensor([2, -5, 9], dtype=t.int16)),
    "ilshift_uint8_int64": lambda t: t.tensor([3, 0, 250], dtype=t.uint8).__ilshift__(
        t.tensor([2, 5, 1])),
    "float_into_int_refused": lambda t: t.tensor([3, 0]).fmod_(t.tensor([1.5, 2.0])),
    "heaviside__dtypes": lambda t: t.tensor([3, 0]).heaviside_(t.tensor([1.5, 2.0])),
    "heaviside__bool_int": lambda t: t.tensor([True, False]).heaviside_(t.tensor([1, 2])),
    # an lcm the dtype cannot hold: PyTorch takes the abs in C++'s int, then narrows
    "lcm_int16_overflow": lambda t: t.lcm(t.tensor([32767, -32768, 300], dtype=t.int16),
                                          t.tensor([6, 3, -7], dtype=t.int16)),
    "lcm_int8_overflow": lambda t: t.tensor([127, -128, 100], dtype=t.int8).lcm(
        t.tensor([6, 3, 9], dtype=t.int8)),
    "lcm_int64_overflow": lambda t: t.lcm(t.tensor([2 ** 62, -2 ** 63]), t.tensor([3, -1])),
}


@pytest.mark.parametrize("name", sorted(NUMBER_CASES))
def test_numbers_with_tensors_match_torch(name):
    def run(lib):
        try:
            r = NUMBER_CASES[name](lib)
        except Exception as e:  # noqa: BLE001 - the type and message are what is compared
            return type(e).__name__, str(e)
        return str(r.dtype).split(".")[-1], r.numpy().tolist()

    assert run(dg) == run(real)


@pytest.mark.parametrize("sym", ["&", "|", "^", "%", "//", "**", "<<", ">>", "+", "-", "*"])
def test_augmented_assignment_is_in_place(sym):
    """``x op= y`` changes ``x`` itself (Tensor.__iand__, __imod__, ... as PyTorch's), so an
    alias of ``x`` sees the new values."""
    def run(lib):
        x = lib.tensor([6, 3, 5])
        alias = x
        ns = {"x": x, "y": lib.tensor([3, 1, 2])}
        exec(f"x {sym}= y", ns)  # noqa: S102 - the operator under test
        return ns["x"] is alias, alias.tolist()

    assert run(dg) == run(real)
