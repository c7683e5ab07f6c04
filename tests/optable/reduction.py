"""Rows for reductions: prod, max/min (with and without dim), amax/amin, var/std (and their
``_mean`` forms), norms, logsumexp, cumulative ops and the boolean reductions."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

M = [S((3, 4)), S((2, 3, 4))]


def _axes(dim):
    """A dim argument as NumPy's axis (an empty list: every axis)."""
    if isinstance(dim, (tuple, list)):
        return tuple(dim) or None
    return dim


def _lse(a, axis, keepdims=False):
    axis = _axes(axis)
    m = a.max(axis=axis, keepdims=True)
    r = np.log(np.exp(a - m).sum(axis=axis, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis)


def _pnorm(a, p, axis=None, keepdims=False):
    return (np.abs(a) ** p).sum(axis=axis, keepdims=keepdims) ** (1 / p)


ROWS = [
    OpInfo("prod", torch.prod, np.prod, [S((3, 4)), S(()), S((0, 2))], "ProdBackward0"),
    OpInfo("prod_dim", lambda a: a.prod(1), lambda a: a.prod(1), M, "ProdBackward1"),
    OpInfo("prod_keepdim", lambda a: a.prod(-1, keepdim=True), lambda a: a.prod(-1, keepdims=True),
           [S((3, 4)), S(())], "ProdBackward1"),
    OpInfo("max_all", torch.max, np.max, [S((3, 4)), S(())], "MaxBackward1"),
    OpInfo("min_all", lambda a: a.min(), np.min, [S((3, 4))], "MinBackward1"),
    OpInfo("max_dim", lambda a: a.max(1).values, lambda a: a.max(1), M, "MaxBackward0"),
    OpInfo("max_dim_tuple", lambda a: a.max(1), lambda a: (a.max(1), a.argmax(1)), M, grad=False),
    OpInfo("min_dim_keepdim", lambda a: torch.min(a, -1, keepdim=True)[0],
           lambda a: a.min(-1, keepdims=True), M, "MinBackward0"),
    OpInfo("min_dim_tuple", lambda a: torch.min(a, -1, keepdim=True),
           lambda a: (a.min(-1, keepdims=True), a.argmin(-1)[..., None]), M, grad=False),
    OpInfo("max_binary", lambda a, b: torch.max(a, b), np.maximum, [S((3, 4), (4,))],
           "MaximumBackward0"),
    OpInfo("amax", torch.amax, np.max, [S((3, 4)), S(())], "AmaxBackward0"),
    OpInfo("amax_dims", lambda a: a.amax((0, 2)), lambda a: a.max((0, 2)), [S((2, 3, 4))],
           "AmaxBackward0"),
    OpInfo("amin_keepdim", lambda a: a.amin(1, keepdim=True), lambda a: a.min(1, keepdims=True),
           M, "AminBackward0"),
    OpInfo("amax_kw", torch.amax, lambda a, dim=(), keepdim=False: a.max(_axes(dim), keepdims=keepdim),
           [S((2, 3, 4), kwargs={"dim": (-1, 0)}), S((3, 4), kwargs={"dim": 1, "keepdim": True}),
            S((3, 4), kwargs={"dim": ()})], "AmaxBackward0"),
    OpInfo("amin_kw", torch.amin, lambda a, dim=(), keepdim=False: a.min(_axes(dim), keepdims=keepdim),
           [S((2, 3, 4), kwargs={"dim": [2, 1], "keepdim": True}), S((3, 4), kwargs={"dim": -1})],
           "AminBackward0"),
    OpInfo("argmax", lambda a: a.argmax(), lambda a: np.argmax(a), M, grad=False),
    OpInfo("argmin_dim", lambda a: torch.argmin(a, 1, keepdim=True),
           lambda a: np.argmin(a, 1)[:, None], M, grad=False),
    OpInfo("var", torch.var, lambda a: a.var(ddof=1), [S((3, 4)), S((5,))], "VarBackward0"),
    OpInfo("var_dim", lambda a: a.var(1, correction=0), lambda a: a.var(1), M, "VarBackward0"),
    OpInfo("std", torch.std, lambda a: a.std(ddof=1), [S((3, 4))], "StdBackward0"),
    OpInfo("std_dim", lambda a: a.std((0, 1), keepdim=True, unbiased=False),
           lambda a: a.std((0, 1), keepdims=True), [S((3, 4)), S((2, 3, 4))], "StdBackward0"),
    OpInfo("std_mean", lambda a: torch.std_mean(a, 1), lambda a: (a.std(1, ddof=1), a.mean(1)), M,
           "StdMeanBackward0"),
    OpInfo("var_mean", lambda a: torch.var_mean(a, correction=0),
           lambda a: (a.var(), a.mean()), [S((3, 4))], "VarMeanBackward0"),
    OpInfo("var_mean_sum", lambda a: sum(torch.var_mean(a, -1)), lambda a: a.var(-1, ddof=1) + a.mean(-1),
           M, "AddBackward0"),
    OpInfo("norm", torch.norm, lambda a: np.sqrt((a * a).sum()), [S((3, 4)), S(())],
           "LinalgVectorNormBackward0"),
    OpInfo("norm_1", lambda a: a.norm(1), lambda a: np.abs(a).sum(), [S((3, 4))],
           "LinalgVectorNormBackward0"),
    OpInfo("norm_inf", lambda a: a.norm(float("inf"), dim=1), lambda a: np.abs(a).max(1), M,
           "LinalgVectorNormBackward0"),
    OpInfo("norm_3", lambda a: torch.norm(a, 3, dim=-1, keepdim=True),
           lambda a: _pnorm(a, 3, -1, True), M, "LinalgVectorNormBackward0"),
    OpInfo("norm_fro_dim", lambda a: torch.norm(a, "fro", dim=(0, 1)),
           lambda a: np.sqrt((a * a).sum((0, 1))), M, "LinalgVectorNormBackward0"),
    OpInfo("norm_0", lambda a: a.norm(0), lambda a: (a != 0).sum().astype(float), [S((3, 4))],
           "LinalgVectorNormBackward0"),
    OpInfo("linalg.vector_norm", torch.linalg.vector_norm, lambda a: np.sqrt((a * a).sum()),
           [S((3, 4)), S(()), S((2, 0))], "LinalgVectorNormBackward0"),
    OpInfo("linalg.vector_norm_dims", lambda a: torch.linalg.vector_norm(a, 2.5, (0, -1), True),
           lambda a: _pnorm(a, 2.5, (0, -1), True), M, "LinalgVectorNormBackward0"),
    OpInfo("linalg.vector_norm_inf", lambda a: torch.linalg.vector_norm(a, float("-inf"), 1),
           lambda a: np.abs(a).min(1), M, "LinalgVectorNormBackward0"),
    OpInfo("linalg.vector_norm_1", lambda a: torch.linalg.vector_norm(a, 1, -1),
           lambda a: np.abs(a).sum(-1), M, "LinalgVectorNormBackward0"),
    OpInfo("logsumexp", lambda a: torch.logsumexp(a, 1), lambda a: _lse(a, 1), M,
           "LogsumexpBackward0"),
    OpInfo("logsumexp_keep", lambda a: a.logsumexp((0, 1), keepdim=True),
           lambda a: _lse(a, (0, 1), True), [S((3, 4))], "LogsumexpBackward0"),
    OpInfo("logsumexp_kw", torch.logsumexp, lambda a, dim, keepdim=False: _lse(a, dim, keepdim),
           [S((2, 3, 4), kwargs={"dim": (-1, 0)}), S((3, 4), kwargs={"dim": -2, "keepdim": True})],
           "LogsumexpBackward0"),
    OpInfo("cumsum", lambda a: torch.cumsum(a, 1), lambda a: np.cumsum(a, 1), M, "CumsumBackward0"),
    OpInfo("cumsum_0d", lambda a: a.cumsum(0), lambda a: a, [S(()), S((0,))], "CumsumBackward0"),
    OpInfo("cumprod", lambda a: torch.cumprod(a, -1), lambda a: np.cumprod(a, -1), M,
           "CumprodBackward0"),
    OpInfo("cumsum_kw", lambda a, **kw: torch.cumsum(a, **kw), lambda a, dim: np.cumsum(a, dim),
           [S((2, 3, 4), kwargs={"dim": -2}), S((3,), kwargs={"dim": 0})], "CumsumBackward0"),
    OpInfo("cumprod_kw", lambda a, **kw: torch.cumprod(a, **kw), lambda a, dim: np.cumprod(a, dim),
           [S((2, 3, 4), kwargs={"dim": 2}), S((4, 2), kwargs={"dim": -2})], "CumprodBackward0"),
    OpInfo("cumprod_zeros", lambda a: torch.cumprod(a * (a > 0), 1),
           lambda a: np.cumprod(a * (a > 0), 1), [S((3, 4)), S((2, 5))], "CumprodBackward0"),
    OpInfo("all", lambda a: torch.all(a > 0), lambda a: np.all(a > 0), M, grad=False),
    OpInfo("any_dim", lambda a: (a > 1).any(1, keepdim=True), lambda a: (a > 1).any(1, keepdims=True),
           M, grad=False),
    OpInfo("count_nonzero", lambda a: torch.count_nonzero(a > 0, 0),
           lambda a: np.count_nonzero(a > 0, 0), M, grad=False),
]

ROWS += [
    OpInfo("aminmax", lambda a: torch.aminmax(a), lambda a: (a.min(), a.max()), M,
           "AminmaxBackward0"),
    OpInfo("aminmax_dim", lambda a: a.aminmax(dim=1, keepdim=True),
           lambda a: (a.min(1, keepdims=True), a.max(1, keepdims=True)), [S((3, 4)), S((2, 3, 2))],
           "AminmaxBackward0"),
]
