"""Forward-mode AD: dual_level, make_dual, unpack_dual, tangents through many ops."""
import numpy as np
import pytest

import dyngrad as torch
import dyngrad.autograd.forward_ad as fwAD
from dyngrad.autograd.functional import jacobian


def _jvp(f, x, v):
    with fwAD.dual_level():
        out = f(fwAD.make_dual(x, v))
        return fwAD.unpack_dual(out).tangent


RS = np.random.RandomState(0)
A = torch.tensor(RS.standard_normal((3, 4)))
B = torch.tensor(RS.standard_normal((4, 2)))

FUNCS = {
    "mul": lambda x: x * x * 3,
    "div": lambda x: x / (x * x + 1),
    "exp_log": lambda x: torch.log(torch.exp(x) + 1),
    "tanh_sigmoid": lambda x: torch.tanh(x) * torch.sigmoid(x),
    "pow": lambda x: (x * x + 1) ** 1.5,
    "sum": lambda x: x.sum(dim=1),
    "mean": lambda x: x.mean(),
    "mm": lambda x: torch.mm(x, B),
    "matmul": lambda x: torch.matmul(A.t(), x) * 2,
    "softmax": lambda x: torch.nn.functional.softmax(x, dim=1),
    "reshape_t": lambda x: x.reshape(4, 3).t() * 2,
    "index": lambda x: x[1:, ::2] * x[:2, 1::2],
    "broadcast": lambda x: x + x.sum(0, keepdim=True),
}


@pytest.mark.parametrize("name", list(FUNCS))
def test_tangent_matches_jacobian(name):
    f = FUNCS[name]
    x = torch.tensor(RS.standard_normal((3, 4)))
    v = torch.tensor(RS.standard_normal((3, 4)))
    tan = _jvp(f, x, v)
    J = jacobian(f, x).numpy()
    out_shape = J.shape[: J.ndim - 2]
    ref = J.reshape(int(np.prod(out_shape)), -1) @ v.numpy().reshape(-1)
    np.testing.assert_allclose(tan.numpy().reshape(-1), ref, rtol=1e-9, atol=1e-12)


def test_dual_tensor_flags_and_repr():
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 1.0]))
        assert not d.requires_grad and d.grad_fn is None and d.is_leaf
        y = d * 3
        assert not y.requires_grad and y.grad_fn is None
        assert repr(y) == "tensor([3., 6.], tangent=tensor([1.5000, 3.0000]))"
        u = fwAD.unpack_dual(y)
        assert isinstance(u, fwAD.UnpackedDualTensor)
        assert u.primal.tolist() == [3.0, 6.0] and u.tangent.tolist() == [1.5, 3.0]
        assert fwAD.unpack_dual(torch.tensor(1.0)).tangent is None
        with pytest.raises(RuntimeError, match="does not require grad"):
            y.sum().backward()
    # tangents vanish with the level
    assert fwAD.unpack_dual(y).tangent is None
    assert repr(y) == "tensor([3., 6.])"
    z = y + 1
    assert not z.requires_grad and z.grad_fn is None


def test_make_dual_errors():
    x = torch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwAD.make_dual(x, torch.ones(3))
        with pytest.raises(ValueError, match="primal to be floating point"):
            fwAD.make_dual(torch.tensor([1, 2]), torch.tensor([1, 2]))
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            with fwAD.dual_level():
                pass


def test_forward_and_reverse_mixed():
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, torch.tensor([1.0, 0.0]))
        assert d.requires_grad and d.grad_fn is not None
        w = (d.sin() * 2).sum()
        assert w.grad_fn is not None
        assert abs(fwAD.unpack_dual(w).tangent.item() - 2 * np.cos(0.5)) < 1e-6
        w.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos([0.5, -1.0]), rtol=1e-6)


def test_tangent_through_constant_and_two_duals():
    with fwAD.dual_level():
        a = fwAD.make_dual(torch.tensor([2.0]), torch.tensor([1.0]))
        b = fwAD.make_dual(torch.tensor([3.0]), torch.tensor([10.0]))
        c = torch.ones(1) * 5
        y = a * b + c
        # d(ab) = a' b + a b' = 3 + 20
        assert fwAD.unpack_dual(y).tangent.tolist() == [23.0]


def test_custom_function_jvp_and_fallback():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * g

    class CubeJvp(Cube):
        @staticmethod
        def jvp(ctx, t):
            return t * 100

    x = torch.tensor([2.0])
    assert _jvp(Cube.apply, x, torch.tensor([1.0])).tolist() == [12.0]
    assert _jvp(CubeJvp.apply, x, torch.tensor([1.0])).tolist() == [100.0]


def test_gradcheck_forward_ad():
    x = torch.tensor([0.3, -0.2], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: torch.tanh(t) * t.exp(), (x,), check_forward_ad=True)
