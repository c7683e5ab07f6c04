"""``resize_``/``resize_as_`` against PyTorch: shapes, values kept in the storage, aliasing
with views, the version counter, growth of the storage, and the errors (a tensor requiring
grad, memory lent by NumPy, negative sizes, bad argument types, memory formats)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _ver(t):
    v = t._version
    return v if isinstance(v, int) else v[0]


CASES = {
    "shrink": lambda L: (lambda a: (a.resize_(2, 2).tolist(), _ver(a), a.is_contiguous()))(L.arange(6.)),
    "same_shape_no_bump": lambda L: (lambda a: (a.resize_(6).tolist(), _ver(a)))(L.arange(6.)),
    "grow_keeps_values": lambda L: (lambda a: (a.resize_(2, 2), a.resize_(8).shape, a[:6].tolist()))(L.arange(6.))[1:],
    "shrink_then_views_alias": lambda L: (lambda a, v: (a.resize_(3), a.fill_(7.), v.tolist()))(
        *(lambda a: (a, a[1:3]))(L.arange(6.)))[2],
    "grow_moves_views": lambda L: (lambda a, v: (a.resize_(50), a[1:3].fill_(9.), v.tolist()))(
        *(lambda a: (a, a[1:3]))(L.arange(6.)))[2],
    "transposed_same": lambda L: L.ones(2, 3).t().resize_(3, 2).stride(),
    "transposed_flat": lambda L: (lambda c: c.t().resize_(4).stride())(L.arange(4.).view(2, 2)),
    "resize_as_": lambda L: L.ones(2).resize_as_(L.ones(3, 1)).shape,
    "tuple_size": lambda L: L.ones(2).resize_((2, 2)).shape,
    "requires_grad": lambda L: L.ones(2, requires_grad=True).resize_(3),
    "view_requires_grad": lambda L: L.ones(2, requires_grad=True).view(2).resize_(3),
    "no_grad_still_refused": lambda L: (lambda: [L.ones(2, requires_grad=True).resize_(3) for _ in [L.no_grad().__enter__()]])(),
    "numpy_grow": lambda L: L.from_numpy(np.ones(3)).resize_(5),
    "numpy_shrink": lambda L: L.from_numpy(np.ones(3)).resize_(2).tolist(),
    "as_tensor_grow": lambda L: L.as_tensor(np.ones(3)).resize_(5),
    "negative": lambda L: L.ones(2).resize_(-1),
    "negative_inner": lambda L: L.ones(2).resize_(2, -3),
    "str": lambda L: L.ones(2).resize_("a"),
    "channels_last_rank": lambda L: L.ones(2).resize_(2, memory_format=L.channels_last),
    "channels_last_ok": lambda L: L.ones(2).resize_(1, 2, 3, 4, memory_format=L.channels_last).stride(),
    "resize_as_bad": lambda L: L.ones(2).resize_as_(3),
    # storage in another dimension order: resize_ reads it in memory order (clone keeps it)
    "fortran_shrink": lambda L: L.arange(12.).view(3, 4).t().contiguous().t().clone().resize_(2, 3).tolist(),
    "fortran_grow": lambda L: L.arange(12.).view(3, 4).t().contiguous().t().clone().resize_(20)[:12].tolist(),
    "permuted_3d": lambda L: L.arange(24.).view(4, 2, 3).permute(1, 2, 0).clone().resize_(7).tolist(),
}


def _outcome(f):
    try:
        r = f()
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e).__name__, str(e).split("\n")[0][:80]
    return "ok", tuple(r) if isinstance(r, (tuple, list, torch.Size, dyngrad.Size)) else r


@pytest.mark.parametrize("name", sorted(CASES))
def test_resize_matches_torch(name):
    f = CASES[name]
    try:
        assert _outcome(lambda: f(dyngrad)) == _outcome(lambda: f(torch))
    finally:
        torch.set_grad_enabled(True)
        dyngrad.set_grad_enabled(True)
