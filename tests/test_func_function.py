"""autograd.Function inside dyngrad.func transforms against torch.func: setup_context-style
Functions under grad/jacrev/jvp-free compositions, the vmap staticmethod, generate_vmap_rule,
and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.test_func import _t, both, both_raise  # noqa: E402

RS = np.random.RandomState(2)
X = RS.uniform(-1, 1, (4, 3))
W = RS.uniform(-1, 1, (3,))


def fns(lib):
    class Mul(lib.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x, w):
            return (x * w).sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.scale = 1.0

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            c = (x * w).cos() * g * ctx.scale
            return c * w, c * x

    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x.exp()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

        @staticmethod
        def vmap(info, in_dims, x):
            return Exp.apply(x), in_dims[0]

    class Old(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x.cos()

    class NoVmap(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class Both(NoVmap):
        generate_vmap_rule = True

        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2, 0

    class BadReturn(NoVmap):
        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2

    return Mul, Exp, Old, NoVmap, Both, BadReturn


def test_generated_vmap_rule_values_and_gradients():
    def f(lib, F):
        Mul = fns(lib)[0]
        x, w = _t(lib, X), _t(lib, W)
        return (F.vmap(Mul.apply, in_dims=(0, None))(x, w),
                F.vmap(F.grad(lambda x, w: Mul.apply(x, w).sum(), argnums=(0, 1)),
                       in_dims=(0, None))(x, w),
                F.grad(lambda w: F.vmap(Mul.apply, in_dims=(0, None))(x, w).sum())(w),
                F.vmap(Mul.apply)(x, x.flip(0)))
    both(f)


def test_vmap_staticmethod():
    def f(lib, F):
        Exp = fns(lib)[1]
        x = _t(lib, X)
        return (F.vmap(Exp.apply)(x), F.vmap(Exp.apply, in_dims=1)(x),
                F.vmap(F.grad(lambda x: Exp.apply(x).sum()))(x),
                F.jacrev(Exp.apply)(_t(lib, W)), F.vmap(F.vmap(Exp.apply))(x))
    both(f)


def test_function_under_grad_and_backward_through_vmap():
    def f(lib, F):
        Mul, Exp = fns(lib)[:2]
        x = _t(lib, X, requires_grad=True)
        y = F.vmap(Exp.apply)(x)
        (gx,) = lib.autograd.grad(y.sum(), x)
        return F.grad(lambda x: Mul.apply(x, x).sum())(_t(lib, W)), gx
    both(f)


@pytest.mark.parametrize("which", ["old_in_grad", "old_in_vmap", "no_vmap", "both"])
def test_function_transform_errors(which):
    def f(lib, F):
        Mul, Exp, Old, NoVmap, Both, BadReturn = fns(lib)
        x = _t(lib, X)
        if which == "old_in_grad":
            return F.grad(lambda x: Old.apply(x).sum())(x)
        if which == "old_in_vmap":
            return F.vmap(Old.apply)(x)
        if which == "no_vmap":
            return F.vmap(NoVmap.apply)(x)
        if which == "both":
            return F.vmap(Both.apply)(x)
        return F.vmap(BadReturn.apply)(x)
    both_raise(f)


def test_plain_use_outside_transforms_unchanged():
    def f(lib, F):
        Mul, Exp, Old = fns(lib)[:3]
        x = _t(lib, W, requires_grad=True)
        y = Old.apply(x) + Mul.apply(x, x) + Exp.apply(x)
        (g,) = lib.autograd.grad(y.sum(), x)
        return y, g
    both(f)


def test_vmap_staticmethod_must_return_two_things():
    BadReturn = fns(dyngrad)[5]
    with pytest.raises(RuntimeError) as e:
        dyngrad.func.vmap(BadReturn.apply)(_t(dyngrad, X))
    with pytest.raises(RuntimeError) as et:
        torch.func.vmap(fns(torch)[5].apply)(_t(torch, X))
    assert str(e.value) == str(et.value).replace("torch.Tensor", "dyngrad.Tensor")


def test_nested_vmap_over_functions():
    x3 = RS.uniform(-1, 1, (2, 3, 4))

    def f(lib, F):
        Mul, Exp = fns(lib)[:2]
        x, w = _t(lib, x3), _t(lib, x3[0, 0])
        inner = F.vmap(Mul.apply, in_dims=(0, None))
        return (F.vmap(inner, in_dims=(0, None))(x, w),
                F.vmap(F.vmap(F.grad(lambda x, w: Mul.apply(x, w).sum(), argnums=1),
                              in_dims=(0, None)), in_dims=(0, None))(x, w),
                F.vmap(F.vmap(Exp.apply))(x),
                F.vmap(F.vmap(F.grad(lambda x: Exp.apply(x).sum())))(x))
    both(f)
