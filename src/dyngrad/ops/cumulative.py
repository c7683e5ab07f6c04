"""Cumulative ops declared with ``defop`` (ops/_spec.py): one declaration each gives the
function, the Tensor method, the node, its saved values, the forward-mode and batching rules."""
from __future__ import annotations

import numpy as np

from . import _dual as X
from .._dtype import np_finfo
from ._spec import batch_along, defop


@defop("logcumsumexp", node="LogcumsumexpBackward0", saved=("self", "dim", "result"),
       dims=("dim",), floating_kernel="logcumsumexp_out_cpu", batch=batch_along("dim"))
def logcumsumexp(self, dim):
    """log(cumsum(exp(input), dim)) computed without overflow; LogcumsumexpBackward0."""
    if self.ndim == 0:
        return self.copy()
    return np.ascontiguousarray(np.logaddexp.accumulate(self, axis=dim))  # as PyTorch's


@logcumsumexp.backward
def _(ctx, grad):
    # PyTorch's formula: the positive and negative parts of the gradient summed in log space
    # by a reversed logcumsumexp, so that large inputs neither overflow nor lose the sum
    self, result, dim = ctx.self, ctx.result, ctx.dim
    if X.data(self).ndim == 0:
        return (grad,)
    lowest = np_finfo(X.data(result).dtype).min
    floor = X.const(np.asarray(lowest, X.data(result).dtype), grad)

    def rev(x):
        return X.flip(ctx.op("logcumsumexp", X.flip(x, (dim,)), dim), (dim,))

    log_abs = X.log(X.abs(grad))
    pos = X.where(X.data(grad) > 0, log_abs, floor)
    neg = X.where(X.data(grad) < 0, log_abs, floor)
    return (X.exp(rev(pos - result) + self) - X.exp(rev(neg - result) + self),)


@logcumsumexp.jvp
def _(ctx, tangent):
    # sum_{k<=i} t_k exp(x_k - y_i): the tangent weighted by the prefix's softmax, computed as
    # cumsum(t * exp(x - m)) * exp(m - y) with m the (constant) maximum along dim for range
    self, result, dim = ctx.self, ctx.result, ctx.dim
    if self.dim() == 0:
        return tangent
    m = self.detach().amax(dim=dim, keepdim=True)
    m = m.where(m.isfinite(), m.new_zeros(()) if hasattr(m, "new_zeros") else m * 0)
    return (tangent * (self - m).exp()).cumsum(dim) * (m - result).exp()
