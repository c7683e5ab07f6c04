"""dtypes against PyTorch: result and gradient dtypes of mixed-dtype ops and losses (the engine
casts every gradient to its input's dtype), dtype inference of factories from NumPy scalars,
and PyTorch's errors for mixed dtypes and bad arguments."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")

LIBS = (("torch", torch), ("dyngrad", dyngrad))


def _outcome(fn, m):
    """What ``fn(m)`` gives: its value, or (exception type name, message's first line)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(m)
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            # the list of NumPy types PyTorch can hold names three dyngrad lacks (uint16/32/64)
            return (type(e).__name__, str(e).split("\n")[0].split(" The only supported")[0])


def _same(fn):
    t, d = _outcome(fn, torch), _outcome(fn, dyngrad)
    assert t == d, f"torch: {t!r}\ndyngrad: {d!r}"


# --- dtype promotion ------------------------------------------------------------------------
_DT_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
             "float64", "complex64", "complex128"]


@pytest.mark.parametrize("a", _DT_NAMES)
def test_promotion_table_matches_torch(a):
    # int64 + float32 is float32 (NumPy would say float64); a 0-d complex128 with a float32
    # tensor is complex64
    for b in _DT_NAMES:
        for na, nb in ((0, 1), (1, 0), (1, 1), (0, 0)):
            res = {}
            for name, m in LIBS:
                x = m.zeros([2] * na, dtype=getattr(m, a))
                y = m.zeros([2] * nb, dtype=getattr(m, b))
                res[name] = str(m.cat([x.reshape(-1), y.reshape(-1)]).dtype) if na and nb \
                    else str((x * y).dtype) if "bool" not in (a, b) else str((x == y).dtype)
            if "float16" in (a, b) and "complex" in a + b and na != nb:
                continue  # PyTorch gives complex32, which dyngrad has not
            assert res["torch"] == res["dyngrad"], (a, na, b, nb, res)


# --- gradient dtypes of mixed-dtype ops -------------------------------------------------------
def _F(m):
    return m.nn.functional


_MIXED = {
    "add": lambda m, a, b: a + b,
    "sub": lambda m, a, b: a - b,
    "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b,
    "pow": lambda m, a, b: a.abs() ** b,
    "where": lambda m, a, b: m.where(a > 0.5, a, b),
    "maximum": lambda m, a, b: m.maximum(a, b),
    "atan2": lambda m, a, b: m.atan2(a, b),
    "hypot": lambda m, a, b: m.hypot(a, b),
    "cat": lambda m, a, b: m.cat([a, b]),
    "stack": lambda m, a, b: m.stack([a, b]),
    "clamp": lambda m, a, b: m.clamp(a, min=b),
    "xlogy": lambda m, a, b: m.xlogy(a, b),
    "logaddexp": lambda m, a, b: m.logaddexp(a, b),
    "outer": lambda m, a, b: m.outer(a, b),
    "iadd": lambda m, a, b: a.clone().add_(b),
    "imul": lambda m, a, b: a.clone().mul_(b),
    "mse": lambda m, a, b: _F(m).mse_loss(a, b),
    "mse_none": lambda m, a, b: _F(m).mse_loss(a, b, reduction="none"),
    "l1": lambda m, a, b: _F(m).l1_loss(a, b),
    "smooth_l1": lambda m, a, b: _F(m).smooth_l1_loss(a, b),
    "bce_logits": lambda m, a, b: _F(m).binary_cross_entropy_with_logits(a, b),
    "kl_div": lambda m, a, b: _F(m).kl_div(a, b, reduction="batchmean"),
    "poisson_nll": lambda m, a, b: _F(m).poisson_nll_loss(a, b),
    "gaussian_nll": lambda m, a, b: _F(m).gaussian_nll_loss(a, b, m.ones(4)),
    "cosine_similarity": lambda m, a, b: _F(m).cosine_similarity(a, b, dim=0),
    "pairwise_distance": lambda m, a, b: _F(m).pairwise_distance(a, b),
    "margin_ranking": lambda m, a, b: _F(m).margin_ranking_loss(a, b, m.ones(4)),
    "hinge_embedding": lambda m, a, b: _F(m).hinge_embedding_loss(a, b),
    "triplet": lambda m, a, b: _F(m).triplet_margin_loss(a.reshape(1, 4), b.reshape(1, 4),
                                                         a.reshape(1, 4) * 2),
}
_PAIRS = [("float32", "float64"), ("float64", "float32"), ("float32", "float16"),
          ("float16", "float32"), ("float32", "int64"), ("int64", "float32"),
          ("float64", "int32")]
_A = np.array([0.25, 0.5, 0.75, 0.875])
_B = np.array([0.625, 0.125, 0.5, 0.375])


def _grad_dtypes(name, da, db, mode):
    def run(m):
        fa, fb = getattr(m, da).is_floating_point, getattr(m, db).is_floating_point
        ra = fa and mode != "b_only"
        rb = fb and mode in ("b_only", "both")
        a = m.tensor(_A if fa else (_A * 8), dtype=getattr(m, da), requires_grad=ra)
        b = m.tensor(_B if fb else (_B * 8), dtype=getattr(m, db), requires_grad=rb)
        if not (ra or rb):
            return None
        out = _MIXED[name](m, a, b)
        if mode == "graph":
            (g,) = m.autograd.grad(out.sum(), [a], create_graph=True)
            (gg,) = m.autograd.grad(g.sum(), [a], allow_unused=True)
            return str(out.dtype), str(g.dtype), None if gg is None else str(gg.dtype)
        mid = a * 1 if ra else b * 1
        mid.retain_grad()
        seen = []
        mid.register_hook(lambda g: seen.append(str(g.dtype)))
        out = _MIXED[name](m, mid, b) if ra else _MIXED[name](m, a, mid)
        out.sum().backward()
        return (str(out.dtype), str(mid.grad.dtype), seen,
                None if a.grad is None else str(a.grad.dtype),
                None if b.grad is None else str(b.grad.dtype))
    return run


@pytest.mark.parametrize("name", sorted(_MIXED))
def test_mixed_dtype_gradients_match_torch(name):
    for da, db in _PAIRS:
        for mode in ("a_only", "b_only", "both", "graph"):
            fn = _grad_dtypes(name, da, db, mode)
            t, d = _outcome(fn, torch), _outcome(fn, dyngrad)
            if isinstance(t, tuple) and t and t[0] in ("RuntimeError", "NotImplementedError") \
                    and isinstance(d, tuple) and d[0] == t[0]:
                continue  # both refuse (messages are checked in the error tests below)
            assert t == d, f"{name} {da} {db} {mode}\ntorch: {t!r}\ndyngrad: {d!r}"


def test_engine_casts_gradient_to_input_dtype_for_hooks_and_retain_grad():
    # the gradient reaching an intermediate float32 tensor from a float64 consumer is float32
    for m in (torch, dyngrad):
        x = m.ones(3, requires_grad=True)
        y = x * 2
        y.retain_grad()
        seen = []
        y.register_hook(lambda g: seen.append(g.dtype))
        m.nn.functional.mse_loss(y, m.zeros(3, dtype=m.float64)).backward()
        assert str(y.grad.dtype) == str(x.grad.dtype) == str(seen[0]) == str(m.float32)


def test_root_gradient_of_other_dtype_is_cast():
    for m in (torch, dyngrad):
        x = m.ones(3, requires_grad=True)
        (x * 2).backward(m.ones(3, dtype=m.float64))
        assert str(x.grad.dtype) == str(m.float32)
        (g,) = m.autograd.grad(x * 2, [x], m.ones(3, dtype=m.float64))
        assert str(g.dtype) == str(m.float32)


# --- mixed-dtype refusals and loss result dtypes: PyTorch's type and message -----------------
def _ab(m):
    return m.tensor([0.2, 0.4, 0.6, 0.9]), m.tensor([0.1, 0.5, 0.3, 0.8])


_MIXED_ERRORS = [
    # losses: result dtypes and refusals
    "F.binary_cross_entropy_with_logits(a, b.long())",
    "F.binary_cross_entropy_with_logits(a.long(), b)",
    "F.binary_cross_entropy_with_logits(a.double(), b).dtype",
    "F.binary_cross_entropy_with_logits(a, b.double()).dtype",
    "F.binary_cross_entropy_with_logits(a, b.half(), pos_weight=m.ones(4, dtype=m.float64)).dtype",
    "F.binary_cross_entropy(a.double(), b)",
    "F.binary_cross_entropy(a, b.double())",
    "F.binary_cross_entropy(a.long(), b.long())",
    "F.binary_cross_entropy(a, b, weight=m.ones(4, dtype=m.float64)).dtype",
    "F.mse_loss(a.long(), b.long())",
    "F.mse_loss(a, b.long()).dtype",
    "F.mse_loss(a.long(), b).dtype",
    "F.mse_loss(a, m.tensor(0.5, dtype=m.float64)).dtype",
    "F.smooth_l1_loss(a.long(), b.long())",
    "F.smooth_l1_loss(a, b.double()).dtype",
    "F.huber_loss(a, b.double()).dtype",
    "F.huber_loss(a.double(), b).dtype",
    "F.huber_loss(a.long(), b)",
    "F.huber_loss(a.requires_grad_(), b.double()).backward()",
    "F.huber_loss(a, b.double().requires_grad_()).backward()",
    "F.huber_loss(a.requires_grad_(), b.long()).backward()",
    "F.soft_margin_loss(a.long(), b)",
    "F.soft_margin_loss(a, b.double()).dtype",
    "F.soft_margin_loss(a, b.requires_grad_())",
    "F.kl_div(a, b.long(), reduction='sum')",
    "F.kl_div(a.long(), b, reduction='sum')",
    "F.nll_loss(a.reshape(1, 4), m.tensor([1]), weight=m.ones(4, dtype=m.float64))",
    "F.nll_loss(a.reshape(1, 4), m.tensor([1]), weight=m.ones(4, dtype=m.int64))",
    "F.nll_loss(a.reshape(1, 4), m.tensor([1]), weight=m.ones(5))",
    "F.cross_entropy(a.reshape(1, 4), m.tensor([1]), weight=m.ones(4, dtype=m.float64))",
    "F.cross_entropy(a.reshape(1, 4), m.tensor([1]), label_smoothing=1.5)",
    "F.cross_entropy(a.reshape(1, 4), b.reshape(1, 4), label_smoothing=1.01)",
    "round(F.cross_entropy(a.reshape(1, 4), m.tensor([1]), label_smoothing=-0.1).item(), 5)",
    "round(F.cross_entropy(a.reshape(1, 4), m.tensor([1]), label_smoothing=1.0).item(), 5)",
    # matrix products
    "m.mm(a.reshape(1, 4), b.double().reshape(4, 1))",
    "m.mm(a.reshape(1, 4), b.long().reshape(4, 1))",
    "m.mm(a.reshape(1, 4), b.half().reshape(4, 1))",
    "m.bmm(a.reshape(1, 1, 4), b.double().reshape(1, 4, 1))",
    "m.mv(a.reshape(1, 4), b.double())",
    "m.mv(a.reshape(2, 2), b)",
    "m.dot(a, b.double())",
    "m.dot(a, b.long())",
    "m.matmul(a, b.double())",
    "m.matmul(a.reshape(2, 2), b.double()[:2])",
    "m.matmul(a, b.double().reshape(4, 1))",
    "m.matmul(a.reshape(1, 1, 4), b.double().reshape(1, 4, 1))",
    "m.matmul(a.reshape(1, 4), b.double().reshape(1, 4, 1))",
    "m.matmul(a.reshape(2, 1, 2), b.double().reshape(2, 2))",
    "m.matmul(a.reshape(2, 1, 2), b.reshape(2, 2, 1)[:, :1])",
    "m.matmul(a.reshape(2, 2), b.reshape(4))",
    "m.matmul(a.reshape(2, 1, 2), b.reshape(4))",
    "m.matmul(a.reshape(1, 2, 2), m.ones(3, 2, 2))",
    # PyTorch's bmm skips its dtype check for empty operands: the second operand's dtype
    "m.matmul(m.ones(0, 3), m.ones(2, 3, 4, dtype=m.float64)).dtype",
    "m.matmul(m.ones(1, 2, 0, dtype=m.float64), m.ones(1, 0, 2)).tolist()",
    "m.matmul(m.ones(0, 3), m.ones(3, 2, dtype=m.float64))",
    "m.addmm(m.ones(1, 1, dtype=m.float64), a.reshape(1, 4), b.reshape(4, 1))",
    "m.addmm(m.ones(1, 1), a.reshape(1, 4), b.double().reshape(4, 1))",
    "m.addmm(m.ones(1, 1), a.double().reshape(1, 4), b.reshape(4, 1))",
    "m.addmm(m.ones(1, 1), a.double().reshape(1, 4), b.reshape(2, 2))",
    "m.addmm(m.ones(1, 1), a, b.reshape(4, 1))",
    "m.addmm(m.ones(1, 1), a.reshape(1, 4), b)",
    "m.addmm(m.ones(1, 1), a.reshape(1, 4), b.reshape(2, 2))",
    "m.addmm(m.ones(5), a.reshape(1, 4), b.reshape(4, 1))",
    "m.addmm(m.ones(2, 1), a.reshape(1, 4), b.reshape(4, 1))",
    "m.baddbmm(m.ones(1, 1, 1), a.reshape(1, 1, 4), b.double().reshape(1, 4, 1))",
    "m.baddbmm(m.ones(1, 1, 1, dtype=m.float64), a.reshape(1, 1, 4), b.reshape(1, 4, 1))",
    "m.baddbmm(m.ones(1, 1, 1), a.double().reshape(1, 1, 4), b.reshape(1, 4, 1))",
    "m.baddbmm(m.ones(1, 1, 1), a.reshape(1, 1, 4), b.reshape(1, 2, 2))",
    "m.baddbmm(m.ones(1, 1, 1), a.reshape(1, 4), b.reshape(1, 4, 1))",
    "m.baddbmm(m.ones(1, 3, 1), a.reshape(1, 1, 4), b.reshape(1, 4, 1))",
    "m.baddbmm(m.ones(1, 1, 1), a.reshape(1, 1, 4), b.reshape(1, 4, 1), beta=0.5, alpha=2)",
    "F.linear(a.reshape(1, 4), b.double().reshape(1, 4))",
    "F.linear(a.reshape(1, 4), b.reshape(1, 4), m.ones(1, dtype=m.float64))",
    "F.linear(a.double().reshape(1, 4), b.reshape(1, 4), m.ones(1))",
    "F.linear(a, b.reshape(1, 4), m.ones(1, dtype=m.float64))",
    "F.linear(a.reshape(1, 1, 4), b.reshape(1, 4), m.ones(1, dtype=m.float64))",
    "F.linear(a.double().reshape(1, 1, 4), b.reshape(1, 4), m.ones(1))",
    "F.linear(a.reshape(1, 1, 4), b.double().reshape(1, 4))",
    "F.bilinear(a.reshape(1, 4), b.reshape(1, 4), m.ones(1, 4, 4, dtype=m.float64))",
    "F.bilinear(a.reshape(1, 4), b.reshape(1, 4), m.ones(1, 4, 4), m.ones(1, dtype=m.float64))",
    "m.einsum('i,i->', a, b.double())",
    # index_add
    "m.zeros(4).index_add_(0, m.tensor([0, 1]), m.ones(2, dtype=m.float64))",
    "m.zeros(4, dtype=m.float64).index_add(0, m.tensor([0, 1]), m.ones(2))",
    "m.zeros(4).index_add_(0, m.tensor([0., 1.]), m.ones(2))",
    "m.zeros(4).index_add_(0, m.tensor([0, 1]), m.ones(3))",
    "m.zeros(4).index_add_(0, m.tensor([0, 9]), m.ones(2))",
    "m.zeros(4).index_add_(0, m.tensor([-1]), m.ones(1))",
    "m.zeros(4).index_add_(0, m.tensor([[0, 1]]), m.ones(2))",
    "m.zeros(4, 3).index_add_(0, m.tensor([0, 1]), m.ones(2, 4))",
    "m.zeros(4, 3).index_add_(0, m.tensor([0, 1]), m.ones(6))",
    "m.zeros(4, 3).index_add_(0, m.tensor([5]), m.ones(1, 3))",
    "m.zeros(4).index_add_(0, m.tensor([0]), m.tensor(1.))",
    "m.tensor(1.).index_add_(0, m.tensor([0]), m.tensor([1.]))",
    "m.tensor(1.).index_add(0, m.tensor([0]), m.tensor(1.))",
    "m.zeros(4, 3).index_add(1, m.tensor([1, 1]), m.ones(4, 2), alpha=3).sum().item()",
]


@pytest.mark.parametrize("expr", _MIXED_ERRORS)
def test_mixed_dtype_refusals_match_torch(expr):
    def run(m):
        F = m.nn.functional  # noqa: F841 - used by the expression
        a, b = _ab(m)
        r = eval(expr)
        return str(r) if isinstance(r, (m.dtype,)) else (r.tolist() if isinstance(r, m.Tensor)
                                                          else r)
    _same(run)


def test_baddbmm_values_and_gradients():
    rs = np.random.RandomState(0)
    vals = [rs.rand(2, 3, 4), rs.rand(2, 3, 5), rs.rand(2, 5, 4)]
    g = rs.rand(2, 3, 4)
    out = {}
    for name, m in LIBS:
        ts = [m.tensor(v, requires_grad=True) for v in vals]
        r = m.baddbmm(*ts, beta=0.5, alpha=2.0)
        r.backward(m.tensor(g))
        out[name] = (r.grad_fn.name(), r.detach().numpy(), [t.grad.numpy() for t in ts])
    assert out["torch"][0] == out["dyngrad"][0]
    np.testing.assert_allclose(out["torch"][1], out["dyngrad"][1], rtol=1e-12)
    for x, y in zip(out["torch"][2], out["dyngrad"][2]):
        np.testing.assert_allclose(x, y, rtol=1e-12)


# --- dtype inference of tensor data --------------------------------------------------------
_DATA = {
    "np.float64(0.1)": lambda: np.float64(0.1), "np.float32(0.1)": lambda: np.float32(0.1),
    "np.float16(0.1)": lambda: np.float16(0.1), "np.int32(3)": lambda: np.int32(3),
    "np.int8(3)": lambda: np.int8(3), "np.uint8(3)": lambda: np.uint8(3),
    "np.int16(3)": lambda: np.int16(3), "np.int64(3)": lambda: np.int64(3),
    "np.bool_(True)": lambda: np.bool_(True), "np.complex64(1j)": lambda: np.complex64(1j),
    "np.complex128(1j)": lambda: np.complex128(1j),
    "[np.float64(0.1)]": lambda: [np.float64(0.1)],
    "[np.float64(0.1), 1.0]": lambda: [np.float64(0.1), 1.0],
    "[1.0, np.float64(0.1)]": lambda: [1.0, np.float64(0.1)],
    "[np.int32(1), 2]": lambda: [np.int32(1), 2],
    "[np.int32(1), np.int8(2)]": lambda: [np.int32(1), np.int8(2)],
    "[np.uint8(1), 2.5]": lambda: [np.uint8(1), 2.5],
    "[np.float16(1), np.float32(2)]": lambda: [np.float16(1), np.float32(2)],
    "[np.float32(1), 2]": lambda: [np.float32(1), 2],
    "[[np.float64(1)], [2.0]]": lambda: [[np.float64(1)], [2.0]],
    "[np.int64(1), 2.0]": lambda: [np.int64(1), 2.0],
    "[np.float64(1), np.float32(2)]": lambda: [np.float64(1), np.float32(2)],
    "[np.array([1.0]), np.array([2.0])]": lambda: [np.array([1.0]), np.array([2.0])],
    "[np.array([1, 2], dtype=np.int32)]": lambda: [np.array([1, 2], dtype=np.int32)],
    "[np.array([1., 2.], dtype=np.float32), [3., 4.]]":
        lambda: [np.array([1., 2.], dtype=np.float32), [3., 4.]],
    "np.array(1.0)": lambda: np.array(1.0),
    "np.array([1, 2], dtype=np.int32)": lambda: np.array([1, 2], dtype=np.int32),
    "np.array([1.], dtype=np.float16)": lambda: np.array([1.], dtype=np.float16),
    "[tensor(1., float64), 2.0]": lambda: ("T", lambda m: [m.tensor(1., dtype=m.float64), 2.0]),
    "[tensor(1), 2.5]": lambda: ("T", lambda m: [m.tensor(1), 2.5]),
    "[np.float32(1.5), tensor(2, int8)]":
        lambda: ("T", lambda m: [np.float32(1.5), m.tensor(2, dtype=m.int8)]),
    "[ones(2), ones(2)]": lambda: ("T", lambda m: [m.ones(2), m.ones(2)]),
    "1": lambda: 1, "1.5": lambda: 1.5, "True": lambda: True, "1j": lambda: 1j,
    "[1, 2.5]": lambda: [1, 2.5], "[1, 1j]": lambda: [1, 1j], "[]": lambda: [],
    "[[]]": lambda: [[]], "[True, 1.5]": lambda: [True, 1.5], "[True, 2]": lambda: [True, 2],
    "(1, 2)": lambda: (1, 2), "range(3)": lambda: range(3),
    "[[1, 2], (3, 4)]": lambda: [[1, 2], (3, 4)],
    # PyTorch's errors for data it cannot hold
    "[[1, 2], [3]]": lambda: [[1, 2], [3]], '["a"]': lambda: ["a"], '"a"': lambda: "a",
    "b'ab'": lambda: b"ab", "[1, 'a']": lambda: [1, "a"], "[1, None]": lambda: [1, None],
    "None": lambda: None, "[1, [2]]": lambda: [1, [2]], "[[1], 2]": lambda: [[1], 2],
    "{1: 2}": lambda: {1: 2}, "{1, 2}": lambda: {1, 2}, "object()": lambda: object(),
    "2**63": lambda: 2 ** 63, "[2**63]": lambda: [2 ** 63], "-2**63-1": lambda: -2 ** 63 - 1,
    "np.array(['a'])": lambda: np.array(["a"]), "np.array([1, None])": lambda: np.array([1, None]),
}


def _data_for(m, key):
    d = _DATA[key]()
    if isinstance(d, tuple) and d and d[0] == "T":
        return d[1](m)
    return d


@pytest.mark.parametrize("key", list(_DATA))
@pytest.mark.parametrize("how", ["tensor", "as_tensor", "tensor_f64", "tensor_i64"])
def test_tensor_data_dtype_inference_matches_torch(key, how):
    def run(m):
        data = _data_for(m, key)
        if how == "tensor":
            r = m.tensor(data)
        elif how == "as_tensor":
            r = m.as_tensor(data)
        else:
            r = m.tensor(data, dtype=m.float64 if how == "tensor_f64" else m.int64)
        return str(r.dtype), r.tolist()
    _same(run)


def test_tensor_of_numpy_float64_keeps_its_precision():
    assert dyngrad.tensor(np.float64(0.1)).dtype is dyngrad.float64
    assert dyngrad.tensor(np.float64(0.1)).item() == 0.1
    assert dyngrad.tensor([np.float64(0.1), 1.0]).tolist() == [0.1, 1.0]


def test_from_numpy_errors_match_torch():
    for x in (np.float64(0.1), [1.0], np.array(["a"]), np.array([1, None])):
        _same(lambda m, x=x: m.from_numpy(x).dtype)


# --- bad arguments to factories ---------------------------------------------------------------
_FACTORY_MISUSE = [
    'T.ones(-1)', 'T.empty(-1)', 'T.full((-1,), 1.)', 'T.rand(-1)', 'T.zeros(2, -1)',
    'T.zeros((2, -1))', 'T.zeros(-1)', 'T.ones(2, -1)', 'T.ones(2.5)', 'T.rand(2.5)',
    'T.randn("a")', 'T.empty(None)', 'T.zeros(True)', 'T.zeros((2,), dtype="x")',
    'T.zeros(2, dtype="float32")', 'T.ones(3, dtype=int).dtype', 'T.ones(3, dtype=float).dtype',
    'T.ones(3, dtype=complex).dtype', 'T.ones(3, dtype=bool).dtype', 'T.ones(3, dtype=np.float32)',
    'T.zeros(T.tensor(3)).shape', 'T.zeros(T.tensor([3])).shape', 'T.zeros(T.tensor(3.))',
    'T.zeros([]).shape', 'T.zeros(()).shape', 'T.zeros([[2]])', 'T.zeros(2, (3,))',
    'T.zeros(2, 3.0)', 'T.zeros(2, None)', 'T.zeros((2, None))', 'T.zeros(2, True).shape',
    'T.full((2,), 1, dtype="x")', 'T.full((2.5,), 1)', 'T.full([2], T.tensor([1., 2.]))',
    'T.full([2], T.tensor(1.)).dtype', 'T.full([2], 1j).dtype', 'T.full([2], True).dtype',
    'T.full(2, 1.)', 'T.full((2,), "a")', 'T.full((2,), None)', 'T.arange(5, dtype="x")',
    'T.arange("a")', 'T.arange(0, 5, 0)', 'T.arange(0, float("nan"))', 'T.arange(0, float("inf"))',
    'T.linspace(0, 1, "a")', 'T.linspace(0, 1, 2.5)', 'T.linspace(0, 1, 3, dtype="x")',
    'T.linspace(0, 1, -1)', 'T.logspace(0, 1, -1)', 'T.eye(2, dtype="x")', 'T.eye("a")',
    'T.eye(2.5)', 'T.eye(-1)', 'T.eye(2, -1)', 'T.rand(2, dtype=T.int64)',
    'T.randn(2, dtype=T.int64)', 'T.randint(0, 5, (2,), dtype="x")', 'T.randint(0, 5.5, (2,))',
    'T.randint(0, 5, 2)', 'T.randint(5, 0, (2,))', 'T.randint(0, 5, (2, -1))',
    'T.randperm(3, dtype="x")', 'T.randperm(-1)', 'T.randperm(2.5)',
    'T.zeros_like(T.ones(2), dtype="x")', 'T.zeros_like([1, 2])', 'T.ones_like(None)',
    'T.full_like(T.ones(2), "a")', 'T.empty(2, 3, dtype=T.float64).dtype',
    'T.tensor([1], requires_grad=True)', 'T.tensor([1.], dtype="float32")',
    'T.tensor([1.], dtype=np.float32)', 'T.as_tensor([1.], dtype="float32")',
    'T.zeros(2, dtype=np.float64)', 'T.zeros(2, dtype=T.zeros(1))',
    'T.zeros(2).to(float).dtype', 'T.zeros(2).sum(dtype=float).dtype',
    'T.zeros(2).to(complex).dtype',
]


@pytest.mark.parametrize("expr", _FACTORY_MISUSE)
def test_factory_arguments_match_torch(expr):
    def run(T):
        r = eval(expr)
        return str(r) if isinstance(r, T.dtype) else (tuple(r) if isinstance(r, tuple) else r)
    _same(run)


# --- internal errors that used to leak --------------------------------------------------------
_LEAKS = [
    'T.cat([T.ones(2), [1., 2.]])', 'T.cat([T.ones(2), 3])', 'T.cat([T.ones(2), None])',
    'T.cat([T.ones(2)], dim="a")', 'T.cat([T.ones(2)], dim=1.5)', 'T.cat("ab")', 'T.cat(5)',
    'T.cat(None)', 'T.cat({T.ones(2)})', 'T.cat([T.ones(2)], T.tensor(0)).tolist()',
    'T.stack([T.ones(2), [1., 2.]])', 'T.stack([T.ones(2), None])', 'T.stack("ab")',
    'T.stack([T.ones(2)], dim="a")', 'T.hstack([T.ones(2), [1.]])', 'T.vstack([T.ones(2), 1])',
    'T.lerp(T.ones(3), T.ones(4), 0.5)', 'T.lerp(T.ones(3), T.ones(3), T.ones(4))',
    'T.lerp(T.ones(3), T.ones(3), T.ones(3, dtype=T.float64))',
    'T.lerp(T.ones(3), T.ones(3), T.ones(3, dtype=T.float16))',
    'T.lerp(T.ones(3), T.ones(3, dtype=T.int64), 0.5)', 'T.lerp(T.ones(3), T.ones(3), "a")',
    'T.lerp(T.ones(3), T.ones(3), None)', 'T.lerp(T.ones(3), [1., 2., 3.], 0.5)',
    'T.lerp(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64), 0.5)',
    'T.lerp(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64))',
    'T.addmm(T.ones(2, 2), T.ones(2, 3), T.ones(4, 2))', 'T.addmm(T.ones(3, 3), T.ones(2, 3), T.ones(3, 2))',
    'T.addmm(T.ones(2), T.ones(2, 3), T.ones(3, 2)).shape',
    'float(T.ones(6))', 'int(T.ones(6))', 'complex(T.ones(6))', 'float(T.ones(0))', 'T.ones(6).item()',
    'T.ones(0).item()', 'bool(T.ones(6))', 'bool(T.ones(0))', 'int(T.tensor([2.7]))',
    'int(T.tensor(-2.7))', 'float(T.tensor(3))', 'float(T.tensor(1j))', 'int(T.tensor(1 + 1j))',
    'float(T.tensor(1 + 0j))', 'int(T.tensor(float("nan")))', 'int(T.tensor(float("inf")))',
    '[1, 2, 3][T.tensor(1)]', '[1, 2, 3][T.tensor(1.)]', 'float(T.ones(1, requires_grad=True))',
    'T.multinomial(T.tensor([0.5, -0.1]), 1)', 'T.multinomial(T.tensor([0., 0.]), 1)',
    'T.multinomial(T.tensor([1., float("inf")]), 1)', 'T.multinomial(T.tensor([1., float("nan")]), 1)',
    'T.multinomial(T.tensor([1., 1.]), 3)', 'T.multinomial(T.tensor([1., 1.]), 3, replacement=True).shape',
    'T.multinomial(T.tensor([1., 1.]), 0)', 'T.multinomial(T.tensor([1., 1.]), -1)',
    'T.multinomial(T.tensor(1.), 1)', 'T.multinomial(T.ones(2, 2, 2), 1)',
    'T.multinomial(T.tensor([1, 1]), 1)', 'T.multinomial(T.tensor([[0.5, 0.5], [0., 0.]]), 1)',
    'T.multinomial(T.tensor([1., 0.]), 2).tolist()', 'T.multinomial(T.tensor([1., 0.]), 1.5)',
    'T.multinomial(T.ones(0), 1)', 'T.multinomial(T.ones(2, 0), 1)',
    'T.multinomial(T.tensor([1., 0., 0.]), 2, replacement=True).tolist()',
    'T.multinomial(T.ones(3, 4), 2).shape', 'T.multinomial([0.5, 0.5], 1)',
]


@pytest.mark.parametrize("expr", _LEAKS)
def test_misuse_errors_match_torch(expr):
    def run(T):
        r = eval(expr)
        return tuple(r) if isinstance(r, tuple) else r
    _same(run)


def test_multinomial_frequencies():
    dyngrad.manual_seed(0)
    r = dyngrad.multinomial(dyngrad.tensor([0.1, 0.2, 0.7]), 20000, replacement=True).numpy()
    np.testing.assert_allclose(np.bincount(r) / 20000, [0.1, 0.2, 0.7], atol=0.02)
    r = dyngrad.multinomial(dyngrad.tensor([[0.1, 0.2, 0.7]] * 20000), 1).numpy().ravel()
    np.testing.assert_allclose(np.bincount(r) / 20000, [0.1, 0.2, 0.7], atol=0.02)
    r = dyngrad.multinomial(dyngrad.tensor([1., 0., 3.]), 3).tolist()
    assert r[2] == 1 and sorted(r) == [0, 1, 2]
