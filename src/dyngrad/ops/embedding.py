"""Embedding lookups: PyTorch's embedding (EmbeddingBackward0) and its gradient op
embedding_dense_backward (EmbeddingDenseBackwardBackward0), both keeping the indices without
an edge.  ``padding_idx`` is PyTorch's SymInt as its nodes show it: -1 (none) as the unsigned
2**64 - 1."""
from __future__ import annotations

import numpy as np

from . import OPS
from . import _dual as X
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
