"""Reductions return contiguous results as PyTorch's do, whatever the input's layout: the
strides users see, and whether a later view() or reshape() records a view or a copy."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

CASES = {
    "sum0": lambda L, x: x.sum(0), "sum0_keepdim": lambda L, x: x.sum(0, keepdim=True),
    "sum1": lambda L, x: x.sum(1), "sum01": lambda L, x: x.sum((0, 1)),
    "mean2": lambda L, x: x.mean(2), "amax": lambda L, x: x.amax(0),
    "prod": lambda L, x: x.prod(0), "std": lambda L, x: x.std(0),
    "var_keepdim": lambda L, x: x.var(1, keepdim=True), "logsumexp": lambda L, x: x.logsumexp(0),
    "norm": lambda L, x: x.norm(dim=0), "vector_norm": lambda L, x: L.linalg.vector_norm(x, 3, dim=1),
    "all": lambda L, x: (x > 0).all(0), "any": lambda L, x: (x > 0).any(1),
    "var_mean": lambda L, x: L.var_mean(x, 0)[0], "std_mean": lambda L, x: L.std_mean(x, 0)[1],
    "nansum": lambda L, x: x.nansum(0), "nanmean": lambda L, x: x.nanmean(0),
    "aminmax": lambda L, x: L.aminmax(x, dim=0)[0], "count_nonzero": lambda L, x: L.count_nonzero(x, 0),
    "max": lambda L, x: x.max(0)[0], "argmax": lambda L, x: x.argmax(0),
    "renorm": lambda L, x: x.renorm(2, 0, 1.0), "logcumsumexp": lambda L, x: x.logcumsumexp(1),
    "stack": lambda L, x: L.stack([x, x], 0), "repeat": lambda L, x: x.repeat(1, 1, 1),
    "masked_fill": lambda L, x: x.masked_fill(x > 0, 1.0),
    "sort_keeps_layout": lambda L, x: x.sort(0)[0], "argsort_keeps_layout": lambda L, x: x.argsort(1),
    "sort_indices": lambda L, x: x.sort(2)[1],
    "flip_keeps_layout": lambda L, x: x.flip(0), "flip_two_dims": lambda L, x: x.flip(0, 2),
    "addcmul_keeps_layout": lambda L, x: L.addcmul(x, x, x),
    "addcdiv_keeps_layout": lambda L, x: L.addcdiv(x, x, x + 3),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reduction_of_a_permuted_tensor_is_contiguous(name):
    a = np.random.RandomState(0).randn(2, 3, 4)
    got, exp = [], []
    for L, res in ((dyngrad, got), (torch, exp)):
        x = L.tensor(a, requires_grad=True).permute(2, 1, 0)
        y = CASES[name](L, x)
        res += [tuple(y.shape), y.stride(), y.is_contiguous()]
        if y.requires_grad and y.dim():
            res.append(y.reshape(-1).grad_fn.name())
    assert got == exp


NORMS = {
    "batch_norm": lambda L, x: L.nn.functional.batch_norm(x, None, None, training=True),
    "batch_norm_eval": lambda L, x: L.nn.functional.batch_norm(
        x, L.zeros(x.shape[1], dtype=L.float64), L.ones(x.shape[1], dtype=L.float64)),
    "group_norm": lambda L, x: L.nn.functional.group_norm(x, 1),
    "layer_norm": lambda L, x: L.nn.functional.layer_norm(x, tuple(x.shape[-1:])),
    "instance_norm": lambda L, x: L.nn.functional.instance_norm(x),
}


@pytest.mark.parametrize("name", list(NORMS))
@pytest.mark.parametrize("perm", [(0, 3, 1, 2), (0, 2, 1, 3)], ids=["channels_last", "other"])
def test_normalization_layout_matches_torch(name, perm):
    """Batch and group norm keep a channels-last input's layout (PyTorch's
    suggest_memory_format), other layouts become contiguous; layer norm is always contiguous."""
    a = np.random.RandomState(0).randn(2, 3, 4, 5)
    got, exp = [], []
    for L, res in ((dyngrad, got), (torch, exp)):
        y = NORMS[name](L, L.tensor(a).permute(*perm))
        res += [tuple(y.shape), y.stride()]
    assert got == exp


LAYOUTS = {
    "nchw": lambda L, a: L.tensor(a),
    "nhwc_permuted": lambda L, a: L.tensor(a.transpose(0, 2, 3, 1).copy()).permute(0, 3, 1, 2),
    "other_permutation": lambda L, a: L.tensor(a).permute(0, 2, 3, 1),
    "one_channel": lambda L, a: L.tensor(a[:, :1].transpose(0, 2, 3, 1).copy()).permute(0, 3, 1, 2),
    "sliced": lambda L, a: L.tensor(a)[:, :, ::2],
    "matrix": lambda L, a: L.tensor(a[0, 0]),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_is_contiguous_per_memory_format(name):
    a = np.random.RandomState(0).randn(2, 3, 4, 5)
    got, exp = [], []
    for L, res in ((dyngrad, got), (torch, exp)):
        t = LAYOUTS[name](L, a)
        res += [t.is_contiguous(), t.is_contiguous(memory_format=L.channels_last),
                t.is_contiguous(memory_format=L.contiguous_format),
                t.unsqueeze(2).is_contiguous(memory_format=L.channels_last_3d)]
    assert got == exp


MEMORY_FORMAT_CASES = {
    "to_channels_last": lambda L, y: y.to(memory_format=L.channels_last),
    "to_float64_channels_last": lambda L, y: y.to(L.float64, memory_format=L.channels_last),
    "to_contiguous_already": lambda L, y: y.to(memory_format=L.contiguous_format),
    "to_back_to_contiguous": lambda L, y: y.contiguous(memory_format=L.channels_last).to(
        memory_format=L.contiguous_format),
    "to_dtype_keeps_channels_last": lambda L, y: y.contiguous(
        memory_format=L.channels_last).to(L.float64),
    "clone_preserves": lambda L, y: y.contiguous(memory_format=L.channels_last).clone(),
    "clone_channels_last": lambda L, y: y.clone(memory_format=L.channels_last),
    "contiguous_channels_last": lambda L, y: y.contiguous(memory_format=L.channels_last),
    "contiguous_channels_last_twice": lambda L, y: y.contiguous(
        memory_format=L.channels_last).contiguous(memory_format=L.channels_last),
    "channels_last_of_a_matrix": lambda L, y: L.randn(2, 3).contiguous(
        memory_format=L.channels_last),
    "channels_last_3d_of_4d": lambda L, y: y.clone(memory_format=L.channels_last_3d),
}


@pytest.mark.parametrize("name", list(MEMORY_FORMAT_CASES))
def test_memory_format_conversions_match_torch(name):
    """clone / contiguous / to with a memory_format: PyTorch's strides, nodes, identity when
    nothing changes, and its rank errors."""
    out = []
    for L in (dyngrad, torch):
        y = L.randn(2, 3, 4, 5, requires_grad=True)
        try:
            t = MEMORY_FORMAT_CASES[name](L, y)
            out.append((t.stride(), str(t.dtype)[-7:], t.grad_fn.name() if t.grad_fn else None,
                        t is y))
        except RuntimeError as e:
            out.append(str(e))
    assert out[0] == out[1]
