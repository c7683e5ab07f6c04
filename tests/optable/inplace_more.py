"""Rows for the in-place ops of src/dyngrad/ops/inplace.py that no out-of-place row derives
(copy_, fill_, zero_, add_/sub_/mul_ with their scalar forms, the augmented assignments
``+=``, ``%=``, ``//=``, ``**=``, clamp_/clip_, index_put_,
igammac_, float_power_, cumprod_, addmm_, baddbmm_, mvlgamma_), each on a non-leaf copy of its
first input."""
import numpy as np
import scipy.special as sp

import dyngrad as torch
from tests.optable import OpInfo, S

A34 = torch.tensor(np.random.RandomState(7).uniform(0.5, 2.5, (3, 4)))


def _mvlgamma(x, p):
    return sum(sp.gammaln(x - i / 2) for i in range(p)) + p * (p - 1) / 4 * np.log(np.pi)


def _index_add(a, idx, v):
    r = a.copy()
    np.add.at(r, idx, v)
    return r


ROWS = [
    OpInfo("copy_", lambda a, b: (a * 1).copy_(b), lambda a, b: np.broadcast_to(b, a.shape) + 0,
           [S((3, 4), (3, 4)), S((3, 4), (4,)), S((3,), ())], "CopyBackwards"),
    OpInfo("copy_view", lambda a, b: _copy_into_row(a, b), None, [S((3, 4), (4,))],
           "CopySlices"),
    OpInfo("fill_", lambda a: (a * 1).fill_(0.5), lambda a: np.full_like(a, 0.5),
           [S((3, 4)), S(())], "FillBackward2"),
    OpInfo("fill_tensor_", lambda a, v: (a * 1).fill_(v), lambda a, v: np.full_like(a, v),
           [S((3, 4), ())], "FillBackward3"),
    OpInfo("zero_", lambda a: (a * 1).zero_(), np.zeros_like, [S((3, 4)), S(())], "ZeroBackward0"),
    OpInfo("add_", lambda a, b: (a * 1).add_(b, alpha=2), lambda a, b: a + 2 * b,
           [S((3, 4), (3, 4)), S((3, 4), (4,))], "AddBackward0"),
    OpInfo("add_scalar_", lambda a: (a * 1).add_(1.5), lambda a: a + 1.5, [S((3,))],
           "AddBackward0"),
    OpInfo("iadd", lambda a, b: _iadd(a, b), np.add, [S((3, 4), (4,))], "AddBackward0"),
    OpInfo("imod", lambda a, b: _imod(a, b), np.remainder,
           [S((3, 4), (4,), domain=(0.6, 2.0))], "RemainderBackward1", float32_ok=False),
    OpInfo("ifloordiv", lambda a, b: _ifloordiv(a, b), np.floor_divide,
           [S((3, 4), (3, 4), domain=(0.6, 2.0))], grad=False, float32_ok=False),
    OpInfo("ipow", lambda a: _ipow(a, 3), lambda a: a ** 3, [S((3, 4)), S(())], "PowBackward0"),
    OpInfo("sub_", lambda a, b: (a * 1).sub_(b), np.subtract, [S((3, 4), (4,)), S((), ())],
           "SubBackward0"),
    OpInfo("sub_scalar_", lambda a: (a * 1).sub_(0.5, alpha=2), lambda a: a - 1.0, [S((3,))],
           "SubBackward0"),
    OpInfo("mul_", lambda a, b: (a * 1).mul_(b), np.multiply, [S((3, 4), (4,)), S((3,), ())],
           "MulBackward0"),
    OpInfo("mul_scalar_", lambda a: (a * 1).mul_(3.0), lambda a: a * 3.0, [S((3,))],
           "MulBackward0"),
    OpInfo("clamp_", lambda a: (a * 1).clamp_(-0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7),
           [S((3, 4)), S(())], "ClampBackward1"),
    OpInfo("clamp_tensor_", lambda a, lo: (a * 1).clamp_(min=lo), lambda a, lo: np.maximum(a, lo),
           [S((3, 4), (4,))], "ClampBackward0"),
    OpInfo("clip_", lambda a: (a * 1).clip_(max=0.25), lambda a: np.minimum(a, 0.25), [S((3, 4))],
           "ClampBackward1"),
    OpInfo("index_put_", lambda a, v: (a * 1).index_put_((torch.tensor([0, 2, 0]),), v,
                                                         accumulate=True),
           lambda a, v: _index_add(a, [0, 2, 0], v), [S((3, 2), (3, 2)), S((3, 2), (2,))],
           "IndexPutBackward0"),
    OpInfo("index_put_set_", lambda a, v: (a * 1).index_put_((torch.tensor([1]),
                                                              torch.tensor([0])), v),
           None, [S((3, 2), ())], "IndexPutBackward0"),
    OpInfo("igammac_", lambda x: (A34 * 1).igammac_(x), lambda x: sp.gammaincc(A34.numpy(), x),
           [S((3, 4), domain=(0.3, 3.0)), S((4,), domain=(0.3, 3.0))], "IgammacBackward0",
           float32_ok=False),
    OpInfo("float_power_", lambda a: (a * 1).float_power_(2), lambda a: a ** 2, [S((3, 4))],
           "PowBackward0", float32_ok=False),
    OpInfo("float_power_tensor_", lambda a, b: (a * 1).float_power_(b), np.power,
           [S((3, 4), (4,), domain=(0.3, 2.0))], "PowBackward1", float32_ok=False),
    OpInfo("cumprod_", lambda a: (a * 1).cumprod_(1), lambda a: np.cumprod(a, 1),
           [S((3, 4))], "CumprodBackward0"),
    OpInfo("addmm_", lambda x, m1, m2: (x * 1).addmm_(m1, m2, beta=0.5, alpha=2.0),
           lambda x, m1, m2: 0.5 * x + 2.0 * m1 @ m2, [S((2, 4), (2, 3), (3, 4))],
           "AddmmBackward0"),
    OpInfo("baddbmm_", lambda x, b1, b2: (x * 1).baddbmm_(b1, b2, alpha=-1.0),
           lambda x, b1, b2: x - b1 @ b2, [S((2, 2, 4), (2, 2, 3), (2, 3, 4))],
           "BaddbmmBackward0"),
    OpInfo("mvlgamma_", lambda a: (a * 1).mvlgamma_(p=2), lambda a: _mvlgamma(a, 2),
           [S((3, 4), domain=(1.0, 3.0))], "MvlgammaBackward0"),
]


def _copy_into_row(a, b):
    c = a * 1
    c[1].copy_(b)
    return c


def _iadd(a, b):
    c = a * 1
    c += b
    return c


def _imod(a, b):
    c = a * 1
    c %= b
    return c


def _ifloordiv(a, b):
    c = a * 1
    c //= b
    return c


def _ipow(a, e):
    c = a * 1
    c **= e
    return c
