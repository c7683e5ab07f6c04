"""Rows for the order statistics and NaN-aware reductions (src/dyngrad/ops/sorting.py)."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S


def _lower_median(a, axis=None):
    if axis is None:
        return np.sort(a.reshape(-1))[(a.size - 1) // 2]
    return np.take(np.sort(a, axis=axis), (a.shape[axis] - 1) // 2, axis=axis)


def _cum(fn):
    def ref(a, dim):
        return fn.accumulate(a, axis=dim) if a.ndim else a
    return ref


def _mode_input(a):
    """Values with repeats (so the mode is meaningful) that stay differentiable: a rounded
    copy plus a zero-valued multiple of ``a``."""
    return torch.round(a.detach() * 2) / 2 + a * 0


ROWS = [
    OpInfo("median_all", torch.median, _lower_median, [S((3, 4)), S((5,)), S(())],
           "MedianBackward0"),
    OpInfo("median_dim", lambda a: torch.median(a, 1), lambda a: _lower_median(a, 1),
           [S((3, 4)), S((2, 5, 3))], "MedianBackward1"),
    OpInfo("median_keepdim", lambda a: a.median(0, keepdim=True),
           lambda a: np.expand_dims(_lower_median(a, 0), 0), [S((4, 3))], "MedianBackward1"),
    OpInfo("nanmedian_all", torch.nanmedian, _lower_median, [S((3, 4)), S(())],
           "NanmedianBackward0"),
    OpInfo("nanmedian_dim", lambda a: torch.nanmedian(a, -1), lambda a: _lower_median(a, -1),
           [S((3, 4))], "NanmedianBackward1"),
    OpInfo("mode_dim", lambda a: torch.mode(a, 1), None, [S((3, 6))], "ModeBackward0"),
    OpInfo("mode_default", lambda a: a.mode(), None, [S((2, 5)), S(())], "ModeBackward0"),
    OpInfo("cummax", torch.cummax, _cum(np.maximum), [S((3, 4), extra=(1,)), S((5,), extra=(0,)),
                                                      S((), extra=(0,))], "CummaxBackward0"),
    OpInfo("cummin", lambda a, d: a.cummin(d), _cum(np.minimum),
           [S((3, 4), extra=(0,)), S((2, 3, 2), extra=(-1,))], "CumminBackward0"),
    OpInfo("logcumsumexp", torch.logcumsumexp, _cum(np.logaddexp),
           [S((3, 4), extra=(1,)), S((4,), extra=(0,)), S((), extra=(0,)),
            S((2, 3), extra=(0,), domain=(-30.0, 30.0))], "LogcumsumexpBackward0"),
    OpInfo("nansum", torch.nansum, np.nansum, [S((3, 4)), S(())], "NansumBackward0"),
    OpInfo("nansum_dim", lambda a: torch.nansum(a, 1, keepdim=True),
           lambda a: np.nansum(a, 1, keepdims=True), [S((3, 4))], "NansumBackward0"),
    OpInfo("nanmean", torch.nanmean, np.nanmean, [S((3, 4))], "DivBackward0"),
    OpInfo("nanmean_dim", lambda a: a.nanmean((0, 2)), lambda a: np.nanmean(a, (0, 2)),
           [S((2, 3, 2))], "DivBackward0"),
]

SORTED = torch.tensor([-1.0, -0.25, 0.0, 0.5, 1.5], dtype=torch.float64)
_SORTED = np.array([-1.0, -0.25, 0.0, 0.5, 1.5])

ROWS += [
    OpInfo("msort", lambda a: torch.msort(a), lambda a: np.sort(a, 0), [S((3, 4)), S((5,))],
           "SortBackward0"),
    OpInfo("msort_method", lambda a: a.msort(), lambda a: np.sort(a, 0), [S((4, 2))],
           "SortBackward0"),
    OpInfo("unique", lambda a: torch.unique(torch.round(a)), lambda a: np.unique(np.round(a)),
           [S((3, 4)), S((0,))], grad=False),
    OpInfo("unique_inverse_counts", lambda a: torch.round(a).unique(return_inverse=True,
                                                                    return_counts=True),
           lambda a: np.unique(np.round(a), return_inverse=True, return_counts=True)[:1] +
           (np.unique(np.round(a), return_inverse=True)[1].reshape(a.shape),
            np.unique(np.round(a), return_counts=True)[1]), [S((3, 4))], grad=False),
    OpInfo("unique_dim", lambda a: torch.unique(torch.round(a), dim=0),
           lambda a: np.unique(np.round(a), axis=0), [S((5, 2), domain=(-0.6, 0.6))], grad=False),
    OpInfo("unique_consecutive", lambda a: torch.unique_consecutive(torch.round(a)),
           lambda a: _unique_consecutive(np.round(a)), [S((8,)), S((3, 4))], grad=False),
    OpInfo("unique_consecutive_counts",
           lambda a: torch.round(a).unique_consecutive(return_counts=True),
           None, [S((10,))], grad=False),
    OpInfo("searchsorted", lambda v: torch.searchsorted(SORTED, v),
           lambda v: np.searchsorted(_SORTED, v), [S((3, 4)), S(())], grad=False),
    OpInfo("searchsorted_right", lambda v: torch.searchsorted(SORTED, v, right=True),
           lambda v: np.searchsorted(_SORTED, v, side="right"), [S((5,))], grad=False),
    OpInfo("searchsorted_sorter", lambda s, v: torch.searchsorted(s, v, sorter=s.argsort()),
           lambda s, v: np.searchsorted(s, v, sorter=np.argsort(s)), [S((6,), (3,))],
           grad=False),
    OpInfo("bucketize", lambda v: torch.bucketize(v, SORTED), lambda v: np.searchsorted(_SORTED, v),
           [S((3, 4)), S(())], grad=False),
    OpInfo("bucketize_right", lambda v: torch.bucketize(v, SORTED, right=True, out_int32=True),
           lambda v: np.searchsorted(_SORTED, v, side="right").astype(np.int32), [S((5,))],
           grad=False),
]


def _unique_consecutive(a):
    a = a.reshape(-1)
    return a[np.r_[True, a[1:] != a[:-1]]] if a.size else a
