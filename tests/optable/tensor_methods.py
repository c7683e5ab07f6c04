"""Rows for Tensor methods: sum_to_size, narrow_copy, the unsafe_ splits, hsplit/vsplit/
dsplit, unfold, diagflat, diff, fill_diagonal_, conj_physical_, and the binary math
(heaviside, ldexp, nextafter, ...), statistics (quantile, cov, corrcoef), renorm and the
matrix functions (matrix_power, pinverse)."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S


def _windows(a, dim, size, step):
    a = np.moveaxis(a, dim, -1)
    n = (a.shape[-1] - size) // step + 1
    w = np.stack([a[..., i * step:i * step + size] for i in range(n)], -2)
    return np.moveaxis(w, -2, dim)


def _fill_diag(a, v, wrap=False):
    r = a.copy()
    h, w = r.shape[:2]
    flat = r.reshape(-1)
    step = sum(int(np.prod(r.shape[i + 1:])) for i in range(r.ndim))
    n = min(h, w) if not wrap else len(flat[::step])
    flat[:step * (n - 1) + 1:step] = v
    return r


ROWS = [
    OpInfo("sum_to_size", lambda a: a.sum_to_size(1, 4), lambda a: a.sum(0, keepdims=True),
           [S((3, 4))], "SumBackward1"),
    OpInfo("sum_to_size_lead", lambda a: a.sum_to_size(4), lambda a: a.reshape(-1, 4).sum(0),
           [S((3, 4)), S((2, 3, 4))], "ViewBackward0"),
    OpInfo("sum_to_size_empty", lambda a: a.sum_to_size(()), lambda a: a.sum(),
           [S((3, 4)), S(())], "SumBackward0"),
    OpInfo("narrow_copy", lambda a: a.narrow_copy(1, 1, 2), lambda a: a[:, 1:3], [S((3, 4))],
           "NarrowCopyBackward0"),
    OpInfo("narrow_copy_neg", lambda a: torch.narrow_copy(a, -1, -3, 2), lambda a: a[..., -3:-1],
           [S((5,)), S((2, 4))], "NarrowCopyBackward0"),
    OpInfo("unsafe_split", lambda a: a.unsafe_split(2, 1), lambda a: np.array_split(a, [2, 4], 1),
           [S((3, 5))], "UnsafeSplitBackward0"),
    OpInfo("unsafe_chunk", lambda a: torch.unsafe_chunk(a, 3),
           lambda a: np.split(a, range(2, len(a), 2)),
           [S((6,)), S((4, 2))], "UnsafeSplitBackward0"),
    OpInfo("unsafe_split_with_sizes", lambda a: a.unsafe_split_with_sizes([1, 3], -1),
           lambda a: np.split(a, [1], -1), [S((2, 4))], "UnsafeSplitWithSizesBackward0"),
    OpInfo("unsafe_split_first", lambda a: a.unsafe_split(2)[0] * 2, lambda a: a[:2] * 2,
           [S((5,))], "MulBackward0"),
    OpInfo("hsplit", lambda a: a.hsplit(2), lambda a: np.hsplit(a, 2), [S((3, 4)), S((6,))],
           "SliceBackward0"),
    OpInfo("hsplit_indices", lambda a: torch.hsplit(a, [1, 3]), lambda a: np.hsplit(a, [1, 3]),
           [S((2, 5))], "SliceBackward0"),
    OpInfo("vsplit", lambda a: a.vsplit([1]), lambda a: np.vsplit(a, [1]), [S((3, 2))],
           "SliceBackward0"),
    OpInfo("dsplit", lambda a: torch.dsplit(a, 2), lambda a: np.dsplit(a, 2), [S((2, 1, 4))],
           "SliceBackward0"),
    OpInfo("unfold", lambda a: a.unfold(1, 2, 1), lambda a: _windows(a, 1, 2, 1), [S((3, 4))],
           "UnfoldBackward0"),
    OpInfo("unfold_step", lambda a: a.unfold(0, 3, 2), lambda a: _windows(a, 0, 3, 2),
           [S((7,)), S((6, 2))], "UnfoldBackward0"),
    OpInfo("unfold_0d", lambda a: a.unfold(0, 1, 1), lambda a: a.reshape(1), [S(())],
           "UnfoldBackward0"),
    OpInfo("diagflat", lambda a: a.diagflat(), lambda a: np.diagflat(a), [S((2, 3)), S((3,))],
           "DiagEmbedBackward0"),
    OpInfo("diagflat_offset", lambda a: torch.diagflat(a.t(), -1), lambda a: np.diagflat(a.T, -1),
           [S((2, 2))], "DiagEmbedBackward0"),
    OpInfo("diff", lambda a: a.diff(), lambda a: np.diff(a), [S((3, 4)), S((5,))],
           "SubBackward0"),
    OpInfo("diff_n_dim", lambda a: torch.diff(a, n=2, dim=0), lambda a: np.diff(a, 2, 0),
           [S((4, 3))], "SubBackward0"),
    OpInfo("diff_prepend_append", lambda a, p, q: a.diff(prepend=p, append=q),
           lambda a, p, q: np.diff(np.concatenate([p, a, q], -1)), [S((2, 3), (2, 1), (2, 2))],
           "SubBackward0"),
    OpInfo("diff_0", lambda a: a.diff(0), lambda a: a, [S((3,))], "CopyBackwards"),
    OpInfo("fill_diagonal_", lambda a: (a * 1).fill_diagonal_(0.5), lambda a: _fill_diag(a, 0.5),
           [S((3, 4)), S((4, 2))], "CopySlices"),
    OpInfo("fill_diagonal_wrap", lambda a: (a * 1).fill_diagonal_(-1.0, wrap=True),
           lambda a: _fill_diag(a, -1.0, True), [S((7, 2))], "CopySlices"),
    OpInfo("fill_diagonal_3d", lambda a: (a * 1).fill_diagonal_(2.0), lambda a: _fill_diag(a, 2.0),
           [S((2, 2, 2))], "CopySlices"),
    OpInfo("conj_physical_", lambda a: (a * 1).conj_physical_(), lambda a: a, [S((3,))],
           "ConjPhysicalBackward1"),
]
