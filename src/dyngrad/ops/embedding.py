"""Embedding lookups: PyTorch's embedding (EmbeddingBackward0) and its gradient op
embedding_dense_backward (EmbeddingDenseBackwardBackward0), both keeping the indices without
an edge.  ``padding_idx`` is PyTorch's SymInt as its nodes show it: -1 (none) as the unsigned
2**64 - 1."""
from __future__ import annotations

import numpy as np

from . import OPS
from . import _dual as X
from .. import _dtype as D
from .._record import STATE, Saved, Tensor, edge_of, record
from ..autograd.errors import without_rule
from ..autograd.node import NotImplemented_
from ._spec import defop, edgeless

NO_PADDING = (1 << 64) - 1


def _padding(padding_idx, num_weights):
    return padding_idx if 0 <= padding_idx < num_weights else None


def _scale(idx, num, pad, scale):
    """Per-lookup gradient factor: 0 at padding_idx, 1 / frequency with scale_grad_by_freq."""
    f = None
    if scale:
        cnt = np.bincount(idx.ravel(), minlength=num)
        f = 1.0 / cnt[idx]
    if pad is not None:
        m = (idx != pad).astype(np.float64)
        f = m if f is None else f * m
    return f


@defop("embedding_dense_backward", node="EmbeddingDenseBackwardBackward0",
       inputs=("grad_output", "indices"), saved=("indices", "padding_idx"), function=False,
       method=False)
def embedding_dense_backward(grad_output, indices, num_weights, padding_idx,
                             scale_grad_by_freq):
    """The gradient of embedding's weight: each lookup's gradient added to its row (none to
    padding_idx's, divided by the row's frequency with scale_grad_by_freq)."""
    dim = grad_output.shape[-1]
    g2 = grad_output.reshape(-1, dim)
    f = _scale(indices, num_weights, _padding(padding_idx, num_weights), scale_grad_by_freq)
    if f is not None:
        g2 = g2 * f.reshape(-1, 1).astype(grad_output.dtype)
    out = np.zeros((num_weights, dim), grad_output.dtype)
    np.add.at(out, indices.ravel(), g2)
    return out


def _double_backward(grad, indices, padding_idx):
    """PyTorch's embedding_dense_double_backward: the rows of ``grad`` at the indices, zero at
    padding_idx (its frequency scale not applied, as PyTorch's)."""
    num = X.data(grad).shape[0]
    pad = _padding(padding_idx, num)
    size = tuple(X.data(indices).shape) + (-1,)
    r = grad.index_select(0, indices.reshape(-1))
    if pad is not None:
        r = r.masked_fill(X.const((X.data(indices) == pad).reshape(-1, 1), r), 0)
    return r.view(size)


@embedding_dense_backward.backward
def _(ctx, grad):
    if isinstance(grad, np.ndarray):
        idx = ctx.indices
        r = grad[idx]
        pad = _padding(ctx.padding_idx, grad.shape[0])
        if pad is not None:
            r = np.where((idx == pad)[..., None], np.zeros((), r.dtype), r)
        return r,
    return _double_backward(grad, ctx.indices, ctx.padding_idx),


edgeless(embedding_dense_backward, "indices")
_dense_bw = X.twin(embedding_dense_backward.forward, embedding_dense_backward.fn)


# (its tangent, linear in grad_output, is derived from the backward: the node keeps neither
# num_weights nor scale_grad_by_freq, as PyTorch's)
embedding_dense_backward.node_cls._fw_rule = None


@defop("embedding", node="EmbeddingBackward0", inputs=("weight", "indices"),
       saved=("indices", "padding_idx", "scale_grad_by_freq", "sparse", "num_weights"),
       names={"num_weights": "weight_sym_argsize_0"}, function=False, method=False)
def embedding(weight, indices, num_weights, padding_idx=NO_PADDING, scale_grad_by_freq=False,
              sparse=False):
    """The rows of ``weight`` at ``indices``; EmbeddingBackward0 (no gradient reaches
    padding_idx's row)."""
    return weight[indices]


@embedding.backward
def _(ctx, grad):
    return _dense_bw(grad, ctx.indices, ctx.num_weights, ctx.padding_idx,
                     ctx.scale_grad_by_freq),


@embedding.jvp
def _(ctx, t_w, *_):
    return embedding.fn(t_w, ctx.indices, ctx.num_weights, ctx.padding_idx,
                        ctx.scale_grad_by_freq, ctx.sparse)


edgeless(embedding, "indices")
for _spec in (embedding, embedding_dense_backward):
    OPS.pop(_spec.key)  # reached through nn.functional.embedding only
del _spec


# --- embedding_bag: PyTorch's _embedding_bag and its gradient ops -----------------------------
# The forward returns PyTorch's four results (the bags' rows, offset2bag, bag_size,
# max_indices); EmbeddingBagBackward0 has the edges (weight, per_sample_weights) and keeps
# what PyTorch's keeps (the weight only for the per-sample weights' gradient).  Its weight
# gradient _embedding_bag_backward records EmbeddingBagBackwardBackward0, which PyTorch cannot
# differentiate; the per-sample weights' gradient has no derivative (a NotImplemented node).
# PyTorch has no forward-mode formula for _embedding_bag.  ``mode``: 0 sum, 1 mean, 2 max.
BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def _arr(v):
    return None if v is None else v._data if isinstance(v, Tensor) else v


def _bags(n, offsets, n_bags):
    """The bag of each of the ``n`` indices (-1: after the last bag, include_last_offset)."""
    bag = np.full(n, -1, np.int64)
    ends = np.append(offsets[1:], n)
    for b in range(n_bags):
        bag[offsets[b]:ends[b]] = b
    return bag


def _offset2bag(n, offsets):
    """PyTorch's offset2bag: a count of the offsets at or before each index, minus one."""
    o2b = np.zeros(n + 1, np.int64)
    np.add.at(o2b, offsets, 1)
    o2b[0] -= 1
    return np.cumsum(o2b)[:n]


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _bag_valid(idx, bag, padding_idx):
    valid = bag >= 0
    pad = _signed(padding_idx)
    if pad >= 0:
        valid &= idx != pad
    return valid


@defop("_embedding_bag", node="EmbeddingBagBackward0", inputs=("weight", "per_sample_weights"),
       outputs=("output", "offset2bag", "bag_size", "max_indices"),
       saved=("weight", "indices", "offsets", "offset2bag", "bag_size", "max_indices",
              "num_weights", "scale_grad_by_freq", "mode", "sparse", "per_sample_weights",
              "padding_idx"),
       names={"offset2bag": "result1", "bag_size": "result2", "max_indices": "result3",
              "num_weights": "weight_sym_argsize_0"},
       saved_for={"weight": (1,)}, index_args=("indices", "offsets"), function=False,
       method=False)
def embedding_bag(weight, per_sample_weights, indices, offsets, scale_grad_by_freq=False,
                  mode=0, sparse=False, include_last_offset=False, padding_idx=-1):
    """Sums (0), means (1) or maxima (2) of bags of rows of ``weight`` (bag b: the indices
    from ``offsets[b]`` to the next offset), skipping ``padding_idx``; EmbeddingBagBackward0."""
    idx = _arr(indices).astype(np.int64, copy=False).reshape(-1)
    offs = _arr(offsets).astype(np.int64, copy=False)
    psw = _arr(per_sample_weights)
    n, num = idx.size, weight.shape[0]
    if weight.dtype.kind in "iubc":  # PyTorch's kernel takes real floating weights only
        got = "CPUBoolType" if weight.dtype == np.bool_ else "CPUComplexFloatType" if \
            weight.dtype == np.complex64 else "CPUComplexDoubleType" if \
            weight.dtype.kind == "c" else f"torch.{D.TYPE_NAMES[D.FROM_NP[weight.dtype]]}"
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have one of the following "
                           f"scalar types: Half, BFloat16, Float, Double; but got {got} instead "
                           f"(while checking arguments for embedding_bag)")
    if offs.size and offs[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {int(offs[0])}")
    if offs.size and offs[-1] > n:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got "
                           f"offsets[-1] of {int(offs[-1])}")
    bad = (idx < 0) | (idx >= num)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise RuntimeError(f"Index {pos} of input takes value {int(idx[pos])} which is not in "
                           f"the valid range [0, {num})")
    nb = offs.size - 1 if include_last_offset else offs.size
    bag = _bags(n, offs, nb)
    valid = _bag_valid(idx, bag, padding_idx)
    dim = weight.shape[1]
    bag_size = np.bincount(bag[valid], minlength=nb)[:nb].astype(np.int64)
    out = np.zeros((nb, dim), weight.dtype)
    if mode == 2:
        maxi = np.zeros((nb, dim), np.int64)
        for b in range(nb):
            sel = idx[(bag == b) & valid]
            if sel.size:
                rows = weight[sel]
                a = rows.argmax(0)
                out[b] = rows[a, np.arange(dim)]
                maxi[b] = sel[a]
    else:
        rows = weight[idx[valid]]
        if psw is not None:
            rows = rows * psw.reshape(-1)[valid][:, None]
        np.add.at(out, bag[valid], rows)
        if mode == 1:
            out = out / np.maximum(bag_size, 1)[:, None].astype(weight.dtype)
        maxi = bag_size.copy() if mode == 1 else np.zeros(nb, np.int64)
    if mode == 0:
        bag_size = np.zeros(nb, np.int64)
    # (PyTorch's fast path, a sum of float32/float16/bfloat16 rows without padding_idx,
    # computes no offset2bag)
    fast = mode == 0 and _signed(padding_idx) < 0 and (
        weight.dtype == np.float32 or weight.dtype == np.float16 or weight.dtype == D.BF16)
    o2b = np.zeros(0, np.int64) if fast else _offset2bag(n, offs)
    return out.astype(weight.dtype, copy=False), o2b, bag_size, maxi


def _bag_weight_grad(grad, indices, offsets, num_weights, scale_grad_by_freq, mode,
                     per_sample_weights, padding_idx, max_indices):
    """_embedding_bag_backward on arrays: each index's bag gradient (divided by the bag's size
    for the mean, times its per-sample weight) added to its row; the max's to the rows that
    gave each maximum."""
    idx = indices.reshape(-1).astype(np.int64, copy=False)
    offs = offsets.astype(np.int64, copy=False)
    nb, dim = grad.shape
    bag = _bags(idx.size, offs, nb)
    valid = _bag_valid(idx, bag, padding_idx)
    gw = np.zeros((num_weights, dim), grad.dtype)
    if mode == 2:
        full = np.bincount(bag[valid], minlength=nb)[:nb] > 0
        cols = np.broadcast_to(np.arange(dim), max_indices.shape)
        np.add.at(gw, (max_indices[full], cols[full]), grad[full])
        return gw
    iv, bv = idx[valid], bag[valid]
    rows = grad[bv]
    if mode == 1:
        size = np.bincount(bv, minlength=nb)[:nb]
        rows = rows / size[bv][:, None].astype(grad.dtype)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape(-1)[valid][:, None]
    if scale_grad_by_freq:
        # PyTorch's dense backward scales the i-th distinct index (in sorted order) by
        # 1 / count of the i-th sorted index (not its own count, when indices repeat)
        srt = np.sort(idx)
        u = np.unique(srt)
        freq = np.ones(num_weights)
        freq[u] = 1.0 / np.bincount(idx, minlength=num_weights)[srt[:u.size]]
        rows = rows * freq[iv][:, None].astype(grad.dtype)
    np.add.at(gw, iv, rows)
    return gw


@defop("_embedding_bag_backward", node="EmbeddingBagBackwardBackward0",
       inputs=("grad", "per_sample_weights"), function=False, method=False)
def embedding_bag_backward(grad, per_sample_weights, indices, offsets, num_weights,
                           scale_grad_by_freq, mode, padding_idx, max_indices):
    """The weight's gradient of _embedding_bag (PyTorch cannot differentiate it)."""
    return _bag_weight_grad(grad, _arr(indices), _arr(offsets), num_weights,
                            scale_grad_by_freq, mode, _arr(per_sample_weights), padding_idx,
                            _arr(max_indices))


@embedding_bag_backward.backward
def _(ctx, grad):
    raise NotImplementedError("the derivative for '_embedding_bag_backward' is not "
                              "implemented.")


def _bag_weight_grad_op(grad, indices, offsets, num_weights, scale_grad_by_freq, mode,
                        per_sample_weights, padding_idx, max_indices):
    """_embedding_bag_backward of Tensors (create_graph): EmbeddingBagBackwardBackward0 with
    the edges (grad, per_sample_weights) when either requires grad."""
    r = embedding_bag_backward.forward(grad._data, _arr(per_sample_weights), indices, offsets,
                                       num_weights, scale_grad_by_freq, mode, padding_idx,
                                       max_indices)
    ins = (grad, per_sample_weights)
    if STATE.enabled and any(t is not None and t._requires_grad for t in ins):
        return record(r, embedding_bag_backward.node_cls(
            tuple((None, 0) if t is None else edge_of(t) for t in ins), (), r.dtype))
    return Tensor._make(r)


@defop("_embedding_bag_per_sample_weights_backward", node=NotImplemented_,
       inputs=("grad", "weight"), function=False, method=False)
def embedding_bag_psw_backward(grad, weight, indices, offsets, offset2bag, mode, padding_idx):
    """The per-sample weights' gradient of _embedding_bag (sum mode): the bag's gradient dotted
    with each index's row; PyTorch has no derivative for it."""
    idx = _arr(indices).reshape(-1).astype(np.int64, copy=False)
    offs = _arr(offsets).astype(np.int64, copy=False)
    nb = grad.shape[0]
    bag = _bags(idx.size, offs, nb)
    valid = _bag_valid(idx, bag, padding_idx)
    gp = np.zeros(idx.shape, grad.dtype)
    gp[valid] = (grad[bag[valid]] * weight[idx[valid]]).sum(-1)
    return gp


_weight_grad = X.twin(_bag_weight_grad, _bag_weight_grad_op)
def _psw_grad_op(grad, weight, *args):
    """The per-sample weights' gradient of Tensors (create_graph): PyTorch's NotImplemented
    node, with the edges (grad, weight), when either requires grad."""
    r = embedding_bag_psw_backward.forward(grad._data, weight._data, *args)
    if STATE.enabled and (grad._requires_grad or weight._requires_grad):
        return record(r, NotImplemented_((edge_of(grad), edge_of(weight)),
                                         (embedding_bag_psw_backward.name,)))
    return Tensor._make(r)


_psw_grad = X.twin(embedding_bag_psw_backward.forward, _psw_grad_op)


@embedding_bag.backward
def _(ctx, grad):
    return (_weight_grad(grad, ctx.indices, ctx.offsets, ctx.num_weights,
                         ctx.scale_grad_by_freq, ctx.mode, ctx.per_sample_weights,
                         ctx.padding_idx, ctx.max_indices) if ctx.needs(0) else None,
            _psw_grad(grad, ctx.weight, ctx.indices, ctx.offsets, ctx.offset2bag, ctx.mode,
                      ctx.padding_idx) if ctx.needs(1) else None)


# PyTorch has no forward-mode formula for _embedding_bag
embedding_bag.node_cls._fw_rule = without_rule("_embedding_bag")


def _batch_bag(spec, arrays, params):
    """Batching rule of _embedding_bag: the samples' weights side by side as the columns of
    one weight (each column's sum, mean or maximum is its own), then split again; per-sample
    weights with a batch axis are taken one sample at a time."""
    w, psw = arrays
    B, num, dim = w.shape
    if psw is not None and psw.ndim == 2:
        outs = [spec.forward(w[b], psw[b], **params) for b in range(B)]
        return tuple(np.stack(o) for o in zip(*outs))
    wide = np.ascontiguousarray(w.transpose(1, 0, 2)).reshape(num, B * dim)
    out, o2b, size, maxi = spec.forward(wide, psw, **params)
    nb = out.shape[0]
    out = out.reshape(nb, B, dim).transpose(1, 0, 2)
    maxi = maxi.reshape(nb, B, dim).transpose(1, 0, 2) if maxi.ndim == 2 else \
        np.broadcast_to(maxi, (B, nb))
    return (out, np.broadcast_to(o2b, (B,) + o2b.shape), np.broadcast_to(size, (B, nb)), maxi)


embedding_bag.batch = _batch_bag
for _spec in (embedding_bag, embedding_bag_backward, embedding_bag_psw_backward):
    OPS.pop(_spec.key)  # reached through nn.functional.embedding_bag only
del _spec


def bag_call(weight, indices, offsets, scale_grad_by_freq, mode, sparse, per_sample_weights,
             include_last_offset, padding_idx):
    """_embedding_bag of ``weight`` and the optional ``per_sample_weights`` (Tensors) with the
    node PyTorch records when either requires grad; ``padding_idx`` -1 for none."""
    r = embedding_bag.forward(weight._data, _arr(per_sample_weights), indices._data,
                              offsets._data, scale_grad_by_freq, mode, sparse,
                              include_last_offset, padding_idx)
    ins = (weight, per_sample_weights)
    if not (STATE.enabled and any(t is not None and t._requires_grad for t in ins)):
        return Tensor._make(r[0])
    o2b, size, maxi = (Tensor._make(a) for a in r[1:])
    psw_grad = per_sample_weights is not None and per_sample_weights._requires_grad
    saved = (Saved(weight) if psw_grad else None, Saved(indices), Saved(offsets), Saved(o2b),
             Saved(size), Saved(maxi), weight._data.shape[0], scale_grad_by_freq, mode, sparse,
             None if per_sample_weights is None else Saved(per_sample_weights),
             padding_idx % (1 << 64))
    return record(r[0], embedding_bag.node_cls(
        tuple((None, 0) if t is None else edge_of(t) for t in ins), saved, r[0].dtype))
