"""Rows for indexing, gather/scatter, masked ops and sorting."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

I = lambda *v: torch.tensor(list(v))  # noqa: E731 - an int64 index tensor
M = np.array([[True, False, True, False], [False, False, True, True], [True, True, False, False]])
MT = torch.from_numpy(M)
IDX = np.array([[0, 2], [1, 1], [3, 0]])
IDXT = torch.from_numpy(IDX)
IDXU = torch.from_numpy(np.array([[0, 2], [1, 3], [3, 0]]))  # no repeats within a row


def _gather_ref(a):
    return np.take_along_axis(a, IDX, 1)


def _scatter_ref(a, s, add=False):
    r = a.copy()
    for i in range(IDX.shape[0]):
        for j in range(IDX.shape[1]):
            if add:
                r[i, IDX[i, j]] += s[i, j]
            else:
                r[i, IDX[i, j]] = s[i, j]
    return r


ROWS = [
    OpInfo("idx_int_neg", lambda a: a[-1, 1:], lambda a: a[-1, 1:], [S((3, 4))], "SliceBackward0"),
    OpInfo("idx_step", lambda a: a[::2, 1::2], lambda a: a[::2, 1::2], [S((5, 4))], "SliceBackward0"),
    OpInfo("idx_none_ellipsis", lambda a: a[None, ..., 1], lambda a: a[None, ..., 1], [S((2, 3))],
           "SelectBackward0"),
    OpInfo("idx_full", lambda a: a[:], lambda a: a[:], [S((2, 3))], "SliceBackward0"),
    OpInfo("idx_ellipsis", lambda a: a[...], lambda a: a[...], [S((2, 3)), S(())], "AliasBackward0"),
    OpInfo("idx_bool_mask", lambda a: a[torch.from_numpy(M)], lambda a: a[M], [S((3, 4))], "IndexBackward0"),
    OpInfo("idx_bool_row", lambda a: a[torch.tensor([True, False, True])], lambda a: a[[0, 2]], [S((3, 4))],
           "IndexBackward0"),
    OpInfo("idx_list_repeat", lambda a: a[[1, 1, 0]], lambda a: a[[1, 1, 0]], [S((3, 2))], "IndexBackward0"),
    OpInfo("idx_2d_tensor", lambda a: a[:, torch.tensor([[0, 3], [3, 3]])], lambda a: a[:, [[0, 3], [3, 3]]],
           [S((2, 4))], "IndexBackward0"),
    OpInfo("idx_int_then_adv", lambda a: a[0, :, [1, 2, 1]], lambda a: a[0][:, [1, 2, 1]], [S((2, 3, 4))],
           "IndexBackward0"),
    OpInfo("idx_adv_split", lambda a: a[[0, 1], :, [1, -1]], lambda a: a[[0, 1], :, [1, -1]], [S((2, 3, 4))],
           "IndexBackward0"),
    OpInfo("idx_adv_pair", lambda a: a[I(0, 2), I(1, 1)], lambda a: a[[0, 2], [1, 1]], [S((3, 4))],
           "IndexBackward0"),
    OpInfo("idx_0d_tensor", lambda a: a[torch.tensor(1)], lambda a: a[1], [S((3, 2))], "SelectBackward0"),
    OpInfo("idx_nc", lambda a: a.t()[[0, 0]], lambda a: a.T[[0, 0]], [S((3, 2))], "IndexBackward0"),
    OpInfo("setitem_basic", lambda a, v: _setitem(a, (slice(None), 1), v),
           lambda a, v: _np_set(a, (slice(None), 1), v), [S((3, 4), (3,)), S((3, 4), ())], "CopySlices"),
    OpInfo("setitem_adv", lambda a, v: _setitem(a, [0, 2], v), lambda a, v: _np_set(a, [0, 2], v),
           [S((3, 4), (4,)), S((3, 4), (2, 4))], "IndexPutBackward0"),
    OpInfo("setitem_mask", lambda a, v: _setitem(a, torch.from_numpy(M), v), lambda a, v: _np_set(a, M, v),
           [S((3, 4), ())], "IndexPutBackward0"),
    OpInfo("setitem_mixed", lambda a, v: _setitem(a, (1, [0, 3]), v), lambda a, v: _np_set(a, (1, [0, 3]), v),
           [S((3, 4), (2,))], "CopySlices"),
    OpInfo("setitem_scalar", lambda a: _setitem(a, (0, slice(1, None)), 5.0),
           lambda a: _np_set(a, (0, slice(1, None)), 5.0), [S((2, 3))], "CopySlices"),
    OpInfo("index_select", lambda a: a.index_select(1, I(2, 0, 2)), lambda a: a[:, [2, 0, 2]],
           [S((3, 4)), S((0, 3))], "IndexSelectBackward0"),
    OpInfo("index_select_0d", lambda a: torch.index_select(a, 0, torch.tensor(0)), lambda a: a,
           [S(())], "IndexSelectBackward0"),
    OpInfo("gather", lambda a: a.gather(1, IDXT), _gather_ref, [S((3, 4))], "GatherBackward0"),
    OpInfo("take_along_dim", lambda a: torch.take_along_dim(a, IDXT, 1), _gather_ref, [S((3, 4))],
           "GatherBackward0"),
    OpInfo("scatter_src", lambda a, s: a.scatter(1, torch.tensor([[0, 2], [1, 3], [3, 0]]), s),
           None, [S((3, 4), (3, 2)), S((4, 5), (3, 2))], "ScatterBackward0"),
    OpInfo("scatter_value", lambda a: torch.scatter(a, 0, torch.tensor([[2, 0, 1, 1]]), 1.5), None,
           [S((3, 4))], "ScatterBackward1"),
    OpInfo("scatter_add", lambda a, s: a.scatter_add(1, IDXT, s), lambda a, s: _scatter_ref(a, s, True),
           [S((3, 4), (3, 2))], "ScatterAddBackward0"),
    OpInfo("scatter_inplace", lambda a, s: (a * 1).scatter_(1, IDXT, s, reduce="add"),
           lambda a, s: _scatter_ref(a, s, True), [S((3, 4), (3, 2))], grad=False),
    OpInfo("masked_fill", lambda a: a.masked_fill(MT, -1.0), lambda a: np.where(M, -1.0, a), [S((3, 4))],
           "MaskedFillBackward0"),
    OpInfo("masked_fill_bcast", lambda a: a.masked_fill(torch.tensor([True, False, True]), 2.0),
           lambda a: np.where([True, False, True], 2.0, a), [S((3,)), S((2, 3))], "MaskedFillBackward0"),
    OpInfo("masked_fill_tensor", lambda a, v: a.masked_fill(MT, v), lambda a, v: np.where(M, v, a),
           [S((3, 4), ())], "MaskedFillBackward1"),
    OpInfo("masked_fill_", lambda a: (a * 1).masked_fill_(MT, 0.5), lambda a: np.where(M, 0.5, a),
           [S((3, 4))], "MaskedFillBackward0"),
    OpInfo("masked_select", lambda a: a.masked_select(MT), lambda a: np.broadcast_to(a, M.shape)[M],
           [S((3, 4)), S((4,))],
           "MaskedSelectBackward0"),
    OpInfo("masked_scatter", lambda a, s: a.masked_scatter(MT, s), None, [S((3, 4), (8,))],
           "MaskedScatterBackward0"),
    OpInfo("take", lambda a: a.take(torch.tensor([[0, 5], [5, -1]])), lambda a: a.ravel()[[[0, 5], [5, -1]]],
           [S((2, 3))], "TakeBackward0"),
    OpInfo("index_add", lambda a, s: a.index_add(0, I(0, 2, 0), s, alpha=2.0),
           lambda a, s: _np_index_add(a, [0, 2, 0], 2 * s), [S((3, 2), (3, 2))], "IndexAddBackward0"),
    OpInfo("index_fill", lambda a: a.index_fill(1, I(0, 2), -2.0), lambda a: _np_set(a, (slice(None), [0, 2]), -2.0),
           [S((2, 3))], "IndexFillBackward0"),
    OpInfo("index_fill_tensor", lambda a, v: a.index_fill(1, I(0, 2), v),
           lambda a, v: _np_set(a, (slice(None), [0, 2]), v), [S((2, 3), ())], "IndexFillBackward1"),
    # a repeated index: the value's gradient counts each filled slice once
    OpInfo("index_fill_tensor_repeat", lambda a, v: a.index_fill(1, I(0, 2, 0), v),
           lambda a, v: _np_set(a, (slice(None), [0, 2]), v), [S((2, 3), ())], "IndexFillBackward1"),
    OpInfo("index_copy", lambda a, s: a.index_copy(0, I(2, 0), s), lambda a, s: _np_set(a, [2, 0], s),
           [S((3, 2), (2, 2))], "IndexCopyBackward0"),
    OpInfo("index_put", lambda a, v: a.index_put((I(0, 2, 0),), v, accumulate=True),
           lambda a, v: _np_index_add(a, [0, 2, 0], v), [S((3, 2), (3, 2)), S((3, 2), (2,))],
           "IndexPutBackward0"),
    OpInfo("index_put_fn", lambda a, v: torch.index_put(a, (I(1),), v), lambda a, v: _np_set(a, [1], v),
           [S((3, 2), ())], "IndexPutBackward0"),
    OpInfo("sort", lambda a: a.sort(1).values, lambda a: np.sort(a, 1), [S((3, 4)), S((0, 2))],
           "SortBackward0"),
    OpInfo("sort_0d", lambda a: a.sort().values, lambda a: a, [S(())], "SortBackward0"),
    OpInfo("sort_desc", lambda a: torch.sort(a, dim=0, descending=True, stable=True)[0],
           lambda a: -np.sort(-a, 0), [S((3, 4))], "SortBackward1"),
    OpInfo("sort_desc_positional", lambda a: torch.sort(a, 0, True)[0], lambda a: -np.sort(-a, 0),
           [S((3, 4))], "SortBackward0"),
    OpInfo("sort_stable_method", lambda a: a.sort(stable=False).values,
           lambda a: np.sort(a, -1) if a.ndim else a, [S((3, 4)), S(())], "SortBackward1"),
    OpInfo("scatter_", lambda a, s: (a * 1).scatter_(1, IDXU, s), None, [S((3, 4), (3, 2))],
           "ScatterBackward0"),
    OpInfo("scatter_value_", lambda a: (a * 1).scatter_(1, IDXU, 0.5), None, [S((3, 4))],
           "ScatterBackward1"),
    OpInfo("scatter_add_", lambda a, s: (a * 1).scatter_add_(1, IDXT, s),
           lambda a, s: _scatter_ref(a, s, True), [S((3, 4), (3, 2))], "ScatterAddBackward0"),
    OpInfo("index_add_", lambda a, s: (a * 1).index_add_(1, I(0, 2, 0), s),
           lambda a, s: _np_index_add(a.T, [0, 2, 0], s.T).T, [S((2, 3), (2, 3))],
           "IndexAddBackward0"),
    OpInfo("index_fill_", lambda a, v: (a * 1).index_fill_(0, I(1), v),
           lambda a, v: _np_set(a, [1], v), [S((2, 3), ())], "IndexFillBackward1"),
    OpInfo("index_copy_", lambda a, s: (a * 1).index_copy_(1, I(2, 0), s),
           lambda a, s: _np_set(a, (slice(None), [2, 0]), s), [S((2, 3), (2, 2))],
           "IndexCopyBackward0"),
    OpInfo("masked_fill_tensor_", lambda a, v: (a * 1).masked_fill_(MT, v),
           lambda a, v: np.where(M, v, a), [S((3, 4), ())], "MaskedFillBackward1"),
    OpInfo("masked_scatter_", lambda a, s: (a * 1).masked_scatter_(MT, s), None,
           [S((3, 4), (6,))], "MaskedScatterBackward0"),
    OpInfo("scatter_view_", lambda a, s: _scatter_view(a, s), None, [S((3, 4), (2, 2))],
           "CopySlices"),
    OpInfo("topk", lambda a: a.topk(2).values, lambda a: -np.sort(-a, -1)[..., :2], [S((3, 4)), S((5,))],
           "TopkBackward0"),
    OpInfo("topk_smallest", lambda a: torch.topk(a, 2, 0, largest=False)[0], lambda a: np.sort(a, 0)[:2],
           [S((3, 4))], "TopkBackward0"),
    OpInfo("kthvalue", lambda a: a.kthvalue(2, 1).values, lambda a: np.sort(a, 1)[:, 1], [S((3, 4))],
           "KthvalueBackward0"),
    OpInfo("kthvalue_keepdim", lambda a: a.kthvalue(1, 0, True)[0], lambda a: np.sort(a, 0)[:1], [S((3, 4))],
           "KthvalueBackward0"),
    OpInfo("argsort", lambda a: a.argsort(1, descending=True), lambda a: np.argsort(-a, 1, kind="stable"),
           [S((3, 4))], grad=False),
]


def _scatter_view(a, s):
    b = a * 1
    b[1:].scatter_(1, IDXU[:2], s)
    return b


def _setitem(a, key, v):
    b = a * 1
    b[key] = v
    return b


def _np_set(a, key, v):
    b = a.copy()
    b[tuple(key) if isinstance(key, tuple) else key] = v
    return b


def _np_index_add(a, idx, s):
    b = a.copy()
    np.add.at(b, idx, s)
    return b

ROWS += [
    OpInfo("nonzero", lambda a: torch.nonzero(torch.round(a)), lambda a: np.argwhere(np.round(a)),
           [S((3, 4)), S((5,)), S(()), S((), domain=(-0.4, 0.4))], grad=False),
    OpInfo("nonzero_tuple", lambda a: (a > 0).nonzero(as_tuple=True), lambda a: np.nonzero(a > 0),
           [S((3, 4))], grad=False),
    OpInfo("argwhere", lambda a: torch.argwhere(a > 0.5), lambda a: np.argwhere(a > 0.5),
           [S((3, 4)), S((2, 0))], grad=False),
    OpInfo("argwhere_method", lambda a: torch.round(a).argwhere(), lambda a: np.argwhere(np.round(a)),
           [S((6,))], grad=False),
]
