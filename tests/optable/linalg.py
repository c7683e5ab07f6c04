"""Rows for matrix products, einsum and the dyngrad.linalg routines."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S


def _wellcond(a):
    """A well-conditioned matrix (or batch) built from ``a``: a + n * I."""
    n = a.shape[-1]
    return a + torch.eye(n, dtype=a.dtype) * n


def _wellcond_np(a):
    return a + np.eye(a.shape[-1]) * a.shape[-1]


ROWS = [
    OpInfo("matmul_2d", torch.matmul, np.matmul, [S((2, 3), (3, 4)), S((0, 3), (3, 2))],
           "MmBackward0"),
    OpInfo("matmul_dot", torch.matmul, np.matmul, [S((3,), (3,))], "DotBackward0"),
    OpInfo("matmul_mv", torch.matmul, np.matmul, [S((2, 3), (3,))], "MvBackward0"),
    OpInfo("matmul_vm", torch.matmul, np.matmul, [S((3,), (3, 2))], "SqueezeBackward4"),
    OpInfo("matmul_bcast", torch.matmul, np.matmul,
           [S((2, 2, 3), (2, 3, 4)), S((2, 1, 2, 3), (4, 3, 2)), S((2, 2, 3), (3, 4)),
            S((3,), (2, 3, 2)), S((2, 2, 3), (3,))], "UnsafeViewBackward0"),
    OpInfo("matmul_2d_3d", torch.matmul, np.matmul, [S((2, 3), (2, 3, 4)), S((1, 2, 3), (2, 3, 4))],
           "CloneBackward0"),
    OpInfo("matmul_op", lambda a, b: a @ b, np.matmul, [S((2, 3), (3, 4))], "MmBackward0"),
    OpInfo("mm_fn", torch.mm, np.matmul, [S((2, 3), (3, 4)), S((1, 1), (1, 2))], "MmBackward0"),
    OpInfo("mm_method", lambda a, b: a.mm(b), np.matmul, [S((2, 3), (3, 4)), S((0, 2), (2, 3))],
           "MmBackward0"),
    OpInfo("bmm", torch.bmm, np.matmul, [S((2, 2, 3), (2, 3, 4))], "BmmBackward0"),
    OpInfo("mv", torch.mv, np.matmul, [S((2, 3), (3,))], "MvBackward0"),
    OpInfo("dot", torch.dot, np.dot, [S((4,), (4,))], "DotBackward0"),
    OpInfo("bmm_method", lambda a, b: a.bmm(b), np.matmul, [S((2, 2, 3), (2, 3, 4)),
                                                           S((0, 2, 3), (0, 3, 1))],
           "BmmBackward0"),
    OpInfo("mv_method", lambda a, b: a.mv(b), np.matmul, [S((2, 3), (3,)), S((0, 2), (2,))],
           "MvBackward0"),
    OpInfo("dot_method", lambda a, b: a.dot(b), np.dot, [S((4,), (4,)), S((0,), (0,))],
           "DotBackward0"),
    OpInfo("outer", torch.outer, np.outer, [S((3,), (4,)), S((0,), (2,))], "MulBackward0"),
    OpInfo("addmm_full", lambda b, x, w: torch.addmm(b, x, w, beta=0.5, alpha=2.0),
           lambda b, x, w: 0.5 * b + 2.0 * (x @ w), [S((2, 4), (2, 3), (3, 4)), S((), (2, 3), (3, 4))],
           "AddmmBackward0"),
    OpInfo("addmm_method", lambda b, x, w: b.addmm(x, w, alpha=0.5), lambda b, x, w: b + 0.5 * (x @ w),
           [S((2, 4), (2, 3), (3, 4)), S((4,), (2, 3), (3, 4))], "AddmmBackward0"),
    OpInfo("einsum_mm", lambda a, b: torch.einsum("ij,jk->ik", a, b),
           lambda a, b: np.einsum("ij,jk->ik", a, b), [S((2, 3), (3, 4))], "ViewBackward0"),
    OpInfo("einsum_batch", lambda a, b: torch.einsum("bij,bjk->bik", a, b),
           lambda a, b: np.einsum("bij,bjk->bik", a, b), [S((2, 2, 3), (2, 3, 4))], "ViewBackward0"),
    OpInfo("einsum_ellipsis", lambda a, b: torch.einsum("...ij,...jk", a, b),
           lambda a, b: np.einsum("...ij,...jk", a, b), [S((2, 2, 3), (3, 4)), S((1, 2, 3), (2, 3, 2))],
           "ViewBackward0"),
    OpInfo("einsum_outer", lambda a, b: torch.einsum("i,j->ij", a, b),
           lambda a, b: np.einsum("i,j->ij", a, b), [S((3,), (4,))], "MulBackward0"),
    OpInfo("einsum_trace", lambda a: torch.einsum("ii->", a), np.trace, [S((3, 3))], "SumBackward1"),
    OpInfo("einsum_diag", lambda a: torch.einsum("ii->i", a), np.diag, [S((3, 3))],
           "PermuteBackward0"),
    OpInfo("einsum_sum", lambda a: torch.einsum("ij->j", a), lambda a: a.sum(0), [S((3, 4))],
           "SumBackward1"),
    OpInfo("einsum_T", lambda a: torch.einsum("ij->ji", a), np.transpose, [S((3, 4))],
           "PermuteBackward0"),
    OpInfo("einsum_three", lambda a, b, c: torch.einsum("ij,jk,k->i", a, b, c),
           lambda a, b, c: a @ b @ c, [S((2, 3), (3, 4), (4,))], "ViewBackward0"),
    OpInfo("inv", lambda a: torch.linalg.inv(_wellcond(a)), lambda a: np.linalg.inv(_wellcond_np(a)),
           [S((3, 3)), S((2, 3, 3))], "LinalgInvExBackward0"),
    OpInfo("inverse", lambda a: _wellcond(a).inverse(), lambda a: np.linalg.inv(_wellcond_np(a)),
           [S((2, 2))], "LinalgInvExBackward0"),
    OpInfo("det", lambda a: torch.det(a), np.linalg.det, [S((3, 3)), S((2, 2, 2)), S((1, 1))],
           "LinalgDetBackward0"),
    OpInfo("slogdet", lambda a: torch.linalg.slogdet(_wellcond(a)).logabsdet,
           lambda a: np.linalg.slogdet(_wellcond_np(a))[1], [S((3, 3)), S((2, 2, 2))],
           "LinalgSlogdetBackward0"),
    OpInfo("slogdet_top", lambda a: torch.slogdet(_wellcond(a)),
           lambda a: tuple(np.linalg.slogdet(_wellcond_np(a))), [S((3, 3)), S((2, 2, 2))],
           "LinalgSlogdetBackward0"),
    OpInfo("slogdet_method", lambda a: _wellcond(a).slogdet().logabsdet,
           lambda a: np.linalg.slogdet(_wellcond_np(a))[1], [S((2, 2))], "LinalgSlogdetBackward0"),
    OpInfo("solve", lambda a, b: torch.linalg.solve(_wellcond(a), b),
           lambda a, b: np.linalg.solve(_wellcond_np(a), b), [S((3, 3), (3, 2)), S((2, 3, 3), (2, 3, 1))],
           "LinalgSolveExBackward0"),
    OpInfo("solve_vec", lambda a, b: torch.linalg.solve(_wellcond(a), b),
           lambda a, b: np.linalg.solve(_wellcond_np(a), b[..., None])[..., 0], [S((3, 3), (3,))],
           "LinalgSolveExBackward0"),
    OpInfo("linalg_vector_norm", lambda a: torch.linalg.vector_norm(a, 3, dim=1),
           lambda a: (np.abs(a) ** 3).sum(1) ** (1 / 3), [S((3, 4))], "LinalgVectorNormBackward0"),
    OpInfo("linalg_norm", torch.linalg.norm, lambda a: np.sqrt((a * a).sum()), [S((3, 4)), S((2, 3, 4))],
           "LinalgVectorNormBackward0"),
    OpInfo("matrix_norm_fro", torch.linalg.matrix_norm, lambda a: np.linalg.norm(a, axis=(-2, -1)),
           [S((3, 4)), S((2, 3, 4))], "LinalgVectorNormBackward0"),
    OpInfo("matrix_norm_1", lambda a: torch.linalg.matrix_norm(a, 1),
           lambda a: np.linalg.norm(a, 1, axis=(-2, -1)), [S((3, 4)), S((2, 3, 4))], "AmaxBackward0"),
    OpInfo("matrix_norm_inf", lambda a: torch.linalg.norm(a, float("inf")),
           lambda a: np.linalg.norm(a, np.inf), [S((3, 4))], "AmaxBackward0"),
    OpInfo("matrix_norm_nuc", lambda a: torch.linalg.matrix_norm(a, "nuc"),
           lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1)), [S((3, 4))], "SumBackward1",
           gradgrad=False),
]


def _spd(a):
    """A symmetric positive-definite matrix (batch) from ``a``."""
    return a @ a.mT + torch.eye(a.shape[-1], dtype=a.dtype)


ROWS += [
    OpInfo("baddbmm", lambda x, b1, b2: torch.baddbmm(x, b1, b2, beta=0.5, alpha=2.0),
           lambda x, b1, b2: 0.5 * x + 2.0 * b1 @ b2,
           [S((2, 2, 4), (2, 2, 3), (2, 3, 4)), S((4,), (2, 2, 3), (2, 3, 4))], "BaddbmmBackward0"),
    OpInfo("baddbmm_method", lambda x, b1, b2: x.baddbmm(b1, b2), lambda x, b1, b2: x + b1 @ b2,
           [S((1, 2, 1), (3, 2, 3), (3, 3, 2))], "BaddbmmBackward0"),
    OpInfo("baddbmm_kw", lambda x, b1, b2, **kw: torch.baddbmm(x, b1, b2, **kw),
           lambda x, b1, b2, beta=1, alpha=1: beta * x + alpha * (b1 @ b2),
           [S((2, 1), (3, 2, 3), (3, 3, 1), kwargs={"beta": 0.5, "alpha": -1.5}),
            S((), (2, 2, 3), (2, 3, 2), kwargs={"beta": 0.0})], "BaddbmmBackward0"),
    OpInfo("ger", lambda a, b: torch.ger(a, b), np.outer, [S((3,), (4,)), S((0,), (2,))],
           "MulBackward0"),
    OpInfo("logdet", lambda a: torch.logdet(_spd(a)),
           lambda a: np.linalg.slogdet(a @ np.swapaxes(a, -1, -2) + np.eye(a.shape[-1]))[1],
           [S((3, 3)), S((2, 2, 2))], "WhereBackward0"),
    OpInfo("logdet_method", lambda a: (a + 3 * torch.eye(3, dtype=a.dtype)).logdet(),
           lambda a: np.log(np.linalg.det(a + 3 * np.eye(3))), [S((3, 3), domain=(-0.5, 0.5))],
           "WhereBackward0"),
]
