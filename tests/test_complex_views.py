"""view_as_real, view_as_complex and polar against PyTorch: values, dtypes, shapes, strides,
storage offsets, storage shared with the base (writes through either side seen by the other,
version counter shared), gradients (real losses through complex views, polar's gradients for
complex upstream gradients, double backward), grad_fn names and edges, and PyTorch's errors.

Each case is one snippet run with ``torch`` bound to real PyTorch and to dyngrad; ``out`` is
compared value by value (tensors by dtype and values; other values exactly), and an exception
must match in type and message."""

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.twin import assert_same, plain, run_snippet  # noqa: E402


_run = run_snippet


def _check(code):
    kt, vt = _run(torch, code)
    kd, vd = _run(dyngrad, code)
    assert kt == kd, (kt, vt, kd, vd)
    if kt == "err":
        assert type(vt) is type(vd), (vt, vd)
        assert str(vd) == str(vt), (str(vd), str(vt))
    else:
        assert_same(plain(vt), plain(vd))


CASES = {
    "real_values_strides": """
        z = torch.tensor([[1+2j, 3-1j, 0.5j], [5+0j, -1j, 2+2j]])
        r = torch.view_as_real(z)
        out = [r, r.shape, r.stride(), r.storage_offset(), r.dtype, r._is_view(), r._base is z]
    """,
    "real_double_and_0d": """
        z = torch.tensor(1.5-2j, dtype=torch.complex128)
        r = torch.view_as_real(z)
        out = [r, r.shape, r.stride(), r.dtype]
    """,
    "real_of_strided_views": """
        z = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(torch.complex64)
        a = torch.view_as_real(z[:, 1:])
        b = torch.view_as_real(z.t())
        c = torch.view_as_real(z[::2, ::3])
        out = [a, a.stride(), a.storage_offset(), b, b.stride(), c, c.stride(),
               c.storage_offset()]
    """,
    "real_shares_storage": """
        z = torch.zeros(2, 3, dtype=torch.complex64)
        r = torch.view_as_real(z)
        v0 = z._version
        r[0, 1, 1] = 7.0
        z[1, 2] = 3 - 4j
        out = [z, r, z._version, r._version, z._version - v0]
    """,
    "complex_values_strides": """
        x = torch.arange(12, dtype=torch.float64).reshape(3, 2, 2)
        c = torch.view_as_complex(x)
        y = torch.arange(24, dtype=torch.float32).reshape(6, 4)[:, 2:]
        d = torch.view_as_complex(y)
        e = torch.view_as_complex(torch.arange(12.).reshape(3, 2, 2).transpose(0, 1))
        out = [c, c.dtype, c.shape, c.stride(), c._base is x, d, d.stride(), d.storage_offset(),
               e, e.stride(), torch.view_as_complex(torch.zeros(0, 2)).shape]
    """,
    "complex_shares_storage": """
        x = torch.zeros(3, 2)
        c = torch.view_as_complex(x)
        c[1] = 2 + 5j
        x[2, 1] = -1.0
        out = [x, c, x._version, c._version]
    """,
    "round_trip_is_view_of_root": """
        x = torch.arange(8.).reshape(4, 2)
        r = torch.view_as_real(torch.view_as_complex(x))
        r.mul_(2)
        out = [x, r._base is x, r.stride()]
    """,
    "grad_through_view_as_real": """
        z = torch.tensor([[1+2j, 3-1j], [0.5+0j, -2j]], requires_grad=True)
        r = torch.view_as_real(z)
        w = torch.tensor([[1., 2.], [3., -1.]])
        loss = (r * r * w).sum()
        loss.backward()
        out = [z.grad, type(r.grad_fn).__name__,
               [type(f).__name__ for f, _ in r.grad_fn.next_functions]]
    """,
    "grad_through_view_as_complex": """
        x = torch.tensor([[1., 2.], [3., -1.], [0.5, 0.25]], requires_grad=True)
        c = torch.view_as_complex(x)
        loss = (torch.view_as_real(c).pow(3) * torch.tensor([1., 2.])).sum()
        loss.backward()
        out = [x.grad, type(c.grad_fn).__name__,
               [type(f).__name__ for f, _ in c.grad_fn.next_functions]]
    """,
    "grad_complex_upstream": """
        z = torch.tensor([1+2j, 3-1j], dtype=torch.complex128, requires_grad=True)
        r = torch.view_as_real(z)
        g, = torch.autograd.grad(r, z, torch.tensor([[1., 2.], [3., 4.]], dtype=torch.float64))
        x = torch.tensor([[1., 2.], [3., -1.]], requires_grad=True)
        c = torch.view_as_complex(x)
        h, = torch.autograd.grad(c, x, torch.tensor([1+2j, -3j]))
        out = [g, h]
    """,
    "double_backward_views": """
        x = torch.tensor([[1., 2.], [3., -1.]], dtype=torch.float64, requires_grad=True)
        c = torch.view_as_complex(x)
        loss = torch.view_as_real(c).pow(3).sum()
        g, = torch.autograd.grad(loss, x, create_graph=True)
        gg, = torch.autograd.grad(g.sum(), x)
        out = [g, gg]
    """,
    "inplace_on_view_of_leaf_view": """
        leaf = torch.tensor([[1+2j, 3-1j], [0.5j, 2+0j]], requires_grad=True)
        base = leaf.clone()
        r = torch.view_as_real(base)
        r.mul_(torch.tensor([2., 3.]))
        (r.pow(2) * torch.tensor([1., 5.])).sum().backward(retain_graph=True)
        g1 = leaf.grad
        leaf.grad = None
        torch.view_as_real(base).pow(2).sum().backward()
        # (PyTorch names r's regenerated node ViewAsRealBackward0; dyngrad AsStridedBackward0)
        out = [base, type(base.grad_fn).__name__, g1, leaf.grad,
               [type(f).__name__ for f, _ in r.grad_fn.next_functions]]
    """,
    "inplace_on_complex_view_grad": """
        a = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
        x = a * 1
        c = torch.view_as_complex(x)
        c.mul_(2.0)
        (x * torch.tensor([1., 3.])).sum().backward()
        out = [x, a.grad, type(x.grad_fn).__name__]
    """,
    "polar_values": """
        a = torch.tensor([1., -2., 0., 3.])
        t = torch.tensor([0.5, 1., 2., -3.])
        p = torch.polar(a, t)
        q = torch.polar(a.double(), t.double())
        b = torch.polar(torch.ones(2, 1), torch.tensor([0., 1., 2.]))
        out = [p, p.dtype, q, q.dtype, b, b.shape]
    """,
    "polar_grad": """
        a = torch.tensor([1., -2., 0., 3.], requires_grad=True)
        t = torch.tensor([0.5, 1., 2., -3.], requires_grad=True)
        p = torch.polar(a, t)
        g = torch.tensor([1+2j, 3-1j, 0.5+0.5j, -2j])
        ga, gt = torch.autograd.grad(p, (a, t), g)
        out = [ga, gt, type(p.grad_fn).__name__,
               [type(f).__name__ for f, _ in p.grad_fn.next_functions], p.grad_fn._saved_result]
    """,
    "polar_grad_broadcast_one_input": """
        a = torch.tensor([[2.], [0.5]], dtype=torch.float64, requires_grad=True)
        t = torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64)
        p = torch.polar(a, t)
        loss = torch.view_as_real(p).pow(3).sum()
        loss.backward()
        out = [a.grad, t.grad, p.grad_fn.next_functions[1][0]]
    """,
    "polar_double_backward": """
        a = torch.tensor([1.5, 2.], dtype=torch.float64, requires_grad=True)
        t = torch.tensor([0.3, -1.], dtype=torch.float64, requires_grad=True)
        loss = torch.view_as_real(torch.polar(a, t)).pow(2).sum()
        ga, gt = torch.autograd.grad(loss, (a, t), create_graph=True)
        h = torch.autograd.grad(ga.sum() + gt.sum(), (a, t))
        out = [ga, gt, h]
    """,
    "polar_out": """
        a = torch.tensor([1., 2.])
        t = torch.tensor([0.5, 1.])
        o = torch.empty(0, dtype=torch.complex64)
        r = torch.polar(a, t, out=o)
        out = [o, r is o]
    """,
}

ERRORS = {
    "real_of_float": "torch.view_as_real(torch.ones(3))",
    "real_of_int": "torch.view_as_real(torch.ones(3, 2, dtype=torch.int64))",
    "complex_of_0d": "torch.view_as_complex(torch.tensor(1.))",
    "complex_last_not_2": "torch.view_as_complex(torch.ones(3, 3))",
    "complex_of_transposed": "torch.view_as_complex(torch.ones(2, 3).t())",
    "complex_last_stride": "torch.view_as_complex(torch.ones(2, 2).t())",
    "complex_odd_stride": "torch.view_as_complex(torch.ones(2, 3)[:, :2])",
    "complex_odd_offset": "torch.view_as_complex(torch.ones(6, 4)[:, 1:3])",
    "complex_of_int": "torch.view_as_complex(torch.ones(3, 2, dtype=torch.int32))",
    "complex_of_complex": "torch.view_as_complex(torch.ones(3, 2, dtype=torch.complex64))",
    "complex_of_bool": "torch.view_as_complex(torch.ones(3, 2, dtype=torch.bool))",
    "polar_mixed_float": "torch.polar(torch.ones(2), torch.ones(2, dtype=torch.float64))",
    "polar_ints": "torch.polar(torch.ones(2, dtype=torch.int32), torch.ones(2, dtype=torch.int32))",
    "polar_float_int": "torch.polar(torch.ones(2), torch.ones(2, dtype=torch.int64))",
    "polar_complex": "torch.polar(torch.ones(2, dtype=torch.complex64), torch.ones(2))",
    "polar_broadcast": "torch.polar(torch.ones(3), torch.ones(2))",
    "polar_number": "torch.polar(torch.ones(2), 1.0)",
    "polar_out_requires_grad": """torch.polar(torch.ones(2, requires_grad=True), torch.ones(2),
                                              out=torch.empty(2, dtype=torch.complex64))""",
    "polar_out_wrong_complex": """torch.polar(torch.ones(2), torch.ones(2),
                                              out=torch.empty(2, dtype=torch.complex128))""",
    "polar_out_real": "torch.polar(torch.ones(2), torch.ones(2), out=torch.empty(2))",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_torch(name):
    _check(CASES[name])


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_against_torch(name):
    _check(ERRORS[name])


def test_half_has_no_complex32():
    with pytest.raises(RuntimeError, match="complex32"):
        dyngrad.view_as_complex(dyngrad.ones(3, 2, dtype=dyngrad.float16))


def test_not_methods():
    # PyTorch has no Tensor.view_as_real / view_as_complex / polar methods
    for n in ("view_as_real", "view_as_complex", "polar"):
        assert hasattr(torch.Tensor, n) == hasattr(dyngrad.Tensor, n)
