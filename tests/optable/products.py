"""Rows for the products in src/dyngrad/ops/products.py (addmv, addr, addcmul, addcdiv, trace,
dist, cross, kron, tensordot, inner, multi_dot) and the softmax / swapaxes aliases."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S


def _dist(a, b, p=2):
    d = np.abs(a - b).reshape(-1)
    if p == np.inf:
        return d.max()
    return (d ** p).sum() ** (1 / p)


def _softmax(a, dim):
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _kron(a, b):
    return np.kron(a, b)


ROWS = [
    OpInfo("addmv", torch.addmv, lambda x, m, v: x + m @ v, [S((2,), (2, 3), (3,)),
                                                            S((1,), (2, 3), (3,))],
           "AddmvBackward0"),
    OpInfo("addmv_ab", lambda x, m, v: torch.addmv(x, m, v, beta=0.5, alpha=-2.0),
           lambda x, m, v: 0.5 * x + -2.0 * (m @ v), [S((), (2, 3), (3,))], "AddmvBackward0"),
    OpInfo("addmv_method", lambda x, m, v, **kw: x.addmv(m, v, **kw),
           lambda x, m, v, beta=1, alpha=1: beta * x + alpha * (m @ v),
           [S((2,), (2, 3), (3,), kwargs={"beta": 0.5, "alpha": 2.0}),
            S((), (2, 3), (3,), kwargs={"beta": 0.0}), S((1,), (2, 3), (3,), kwargs={"alpha": 3})],
           "AddmvBackward0"),
    OpInfo("addr", torch.addr, lambda x, a, b: x + np.outer(a, b),
           [S((2, 3), (2,), (3,)), S((3,), (2,), (3,))], "AddrBackward0"),
    OpInfo("addr_ab", lambda x, a, b: x.addr(a, b, beta=2.0, alpha=0.5),
           lambda x, a, b: 2.0 * x + 0.5 * np.outer(a, b), [S((2, 3), (2,), (3,))],
           "AddrBackward0"),
    OpInfo("addcmul", lambda x, a, b: torch.addcmul(x, a, b, value=0.5),
           lambda x, a, b: x + 0.5 * a * b, [S((3, 4), (3, 4), (3, 4)), S((3, 1), (4,), (2, 1, 1)),
                                             S((), (3,), ())], "AddcmulBackward0"),
    OpInfo("addcdiv", lambda x, a, b: torch.addcdiv(x, a, b, value=2.0),
           lambda x, a, b: x + 2.0 * a / b, [S((3, 4), (3, 4), (3, 4), domain=(0.5, 2.0)),
                                             S((4,), (3, 1), (), domain=(0.5, 2.0))],
           "AddcdivBackward0"),
    OpInfo("addcmul_method", lambda x, a, b: x.addcmul(a, b, value=0.5),
           lambda x, a, b: x + 0.5 * a * b, [S((3, 4), (3, 4), (4,))], "AddcmulBackward0"),
    OpInfo("addcdiv_method", lambda x, a, b: x.addcdiv(a, b),
           lambda x, a, b: x + a / b, [S((3, 4), (3, 1), (4,), domain=(0.5, 2.0))],
           "AddcdivBackward0"),
    OpInfo("addcmul_inplace", lambda x, a, b: (x * 1).addcmul_(a, b, value=2.0),
           lambda x, a, b: x + 2.0 * a * b, [S((3, 4), (3, 4), (4,))], "AddcmulBackward0"),
    OpInfo("addcdiv_inplace", lambda x, a, b: (x * 1).addcdiv_(a, b),
           lambda x, a, b: x + a / b, [S((3, 4), (3, 4), (4,), domain=(0.5, 2.0))],
           "AddcdivBackward0"),
    OpInfo("trace", torch.trace, np.trace, [S((3, 3)), S((2, 4))], "TraceBackward0"),
    OpInfo("dist", torch.dist, _dist, [S((3,), (3,)), S((2, 3), (3,)), S((), (2,))],
           "DistBackward0"),
    OpInfo("dist_p", lambda a, b: torch.dist(a, b, 3), lambda a, b: _dist(a, b, 3),
           [S((2, 3), (2, 3))], "DistBackward0"),
    OpInfo("dist_p1", lambda a, b: a.dist(b, 1.5), lambda a, b: _dist(a, b, 1.5),
           [S((4,), (4,))], "DistBackward0"),
    OpInfo("dist_inf", lambda a, b: torch.dist(a, b, float("inf")),
           lambda a, b: _dist(a, b, np.inf), [S((4,), (4,))], "DistBackward0"),
    OpInfo("dist_kw", lambda a, b, **kw: torch.dist(a, b, **kw), _dist,
           [S((2, 3), (3,), kwargs={"p": 3.0}), S((2, 1), (1, 3), kwargs={"p": 1}),
            S((3,), (2, 3), kwargs={"p": float("inf")})], "DistBackward0"),
    OpInfo("addr_kw", lambda x, a, b, **kw: torch.addr(x, a, b, **kw),
           lambda x, a, b, beta=1, alpha=1: beta * x + alpha * np.outer(a, b),
           [S((3,), (2,), (3,), kwargs={"beta": 0.5, "alpha": 2.0}),
            S((), (2,), (3,), kwargs={"beta": 0})], "AddrBackward0"),
    OpInfo("cross", lambda a, b: torch.cross(a, b, dim=1),
           lambda a, b: np.cross(a, b, axis=1), [S((2, 3), (2, 3)), S((1, 3, 2), (4, 3, 2))],
           "LinalgCrossBackward0"),
    OpInfo("linalg_cross", torch.linalg.cross, lambda a, b: np.cross(a, b),
           [S((3,), (3,)), S((2, 3), (1, 3))], "LinalgCrossBackward0"),
    OpInfo("linalg_cross_dim", lambda a, b, **kw: torch.linalg.cross(a, b, **kw),
           lambda a, b, dim: np.cross(a, b, axis=dim),
           [S((3, 2), (3, 1), kwargs={"dim": 0}), S((2, 3, 2), (2, 3, 2), kwargs={"dim": -2})],
           "LinalgCrossBackward0"),
    OpInfo("kron", torch.kron, _kron, [S((2, 3), (2, 2)), S((3,), (2,)), S((2, 1, 2), (3, 2))],
           "UnsafeViewBackward0"),
    OpInfo("tensordot", lambda a, b: torch.tensordot(a, b, dims=1),
           lambda a, b: np.tensordot(a, b, axes=1), [S((2, 3), (3, 4))], "ViewBackward0"),
    OpInfo("tensordot_lists", lambda a, b: torch.tensordot(a, b, dims=([1, 2], [1, 0])),
           lambda a, b: np.tensordot(a, b, axes=([1, 2], [1, 0])), [S((2, 3, 4), (4, 3, 5))],
           "ViewBackward0"),
    OpInfo("tensordot_outer", lambda a, b: torch.tensordot(a, b, dims=0),
           lambda a, b: np.tensordot(a, b, axes=0), [S((2,), (3, 2))], "ViewBackward0"),
    OpInfo("inner", torch.inner, np.inner, [S((2, 3), (4, 3)), S((3,), (3,)), S((2, 2, 3), (3,))],
           "ViewBackward0"),
    OpInfo("inner_scalar", torch.inner, np.inner, [S((), (3,))], "MulBackward0"),
    OpInfo("multi_dot", lambda a, b, c: torch.linalg.multi_dot([a, b, c]),
           lambda a, b, c: a @ b @ c, [S((2, 3), (3, 4), (4, 2)), S((3,), (3, 4), (4,))],
           "ViewBackward0"),
    OpInfo("multi_dot2", lambda a, b: torch.linalg.multi_dot((a, b)), np.matmul,
           [S((2, 3), (3, 4))], "ViewBackward0"),
    OpInfo("swapaxes", lambda a: torch.swapaxes(a, 0, 1), lambda a: a.swapaxes(0, 1),
           [S((2, 3))], "TransposeBackward0"),
    OpInfo("swapdims", lambda a: torch.swapdims(a, 0, -1), lambda a: a.swapaxes(0, -1),
           [S((2, 3, 4))], "TransposeBackward0"),
    OpInfo("softmax_top", lambda a: torch.softmax(a, 1), lambda a: _softmax(a, 1),
           [S((2, 3))], "SoftmaxBackward0"),
    OpInfo("log_softmax_top", lambda a: torch.log_softmax(a, dim=0),
           lambda a: np.log(_softmax(a, 0)), [S((2, 3))], "LogSoftmaxBackward0"),
    OpInfo("_softmax", lambda a: torch._softmax(a, 1, False), lambda a: _softmax(a, 1),
           [S((2, 3)), S((1, 4))], "SoftmaxBackward0"),
    OpInfo("_log_softmax", lambda a: torch._log_softmax(a, 0, False),
           lambda a: np.log(_softmax(a, 0)), [S((2, 3))], "LogSoftmaxBackward0"),
    OpInfo("softmax_method", lambda a: a.softmax(-1), lambda a: _softmax(a, -1), [S((2, 3))],
           "SoftmaxBackward0"),
    OpInfo("log_softmax_dtype", lambda a: a.log_softmax(1, dtype=torch.float64),
           lambda a: np.log(_softmax(a, 1)), [S((2, 3))], "LogSoftmaxBackward0",
           float32_ok=False),
]

ROWS += [
    OpInfo("chain_matmul", lambda a, b, c: torch.chain_matmul(a, b, c),
           lambda a, b, c: a @ b @ c, [S((2, 3), (3, 4), (4, 2))], "ViewBackward0"),
    OpInfo("chain_matmul_one", lambda a: torch.chain_matmul(a), lambda a: a, [S((2, 3))],
           "CloneBackward0"),
]
