"""The softmax family: softmax and log_softmax along a dimension (SoftmaxBackward0,
LogSoftmaxBackward0), computed stably."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._record import STATE, Node, Saved, edge_of, notify, raw_dim, record
from . import _dual as X
from .._tensor import Tensor, _dim
from .._warn import warn

_make = Tensor._make


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def _need_float_kernel(input, k, name):
    """PyTorch has no integer (or bool) softmax kernels: a non-empty one is an error."""
    d = input._data
    if d.dtype not in D.INEXACT and d.size:
        kernel = f"{name}_lastdim_kernel_impl" if d.ndim == 0 or k == d.ndim - 1 else \
            f"{name}_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(d.dtype)}'")


def _softmax_grad(g, y, dim):
    gy = g * y
    return gy - y * X.sum_dims(gy, dim)


def _log_softmax_grad(g, y, dim):
    return g - X.exp(y) * X.sum_dims(g, dim)


class SoftmaxBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sy, dim, _ = self._saved
        y = sy.get(self, graph)
        if graph:
            return _softmax_grad(g, y, dim),
        return D.opmath(_softmax_grad, g, y, dim),  # bfloat16 in float32, as PyTorch


class LogSoftmaxBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sy, dim, _ = self._saved
        y = sy.get(self, graph)
        if graph:
            return _log_softmax_grad(g, y, dim),
        return D.opmath(_log_softmax_grad, g, y, dim),  # bfloat16 in float32, as PyTorch


def _dim_arg(input, dim, name):
    if dim is None:
        warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
             f"include dim=X as an argument.")  # at the user's line, as PyTorch's
        dim = _softmax_dim(input._data.ndim)
    return _dim(dim, input._data.ndim)


def _along(input, dim, dtype, name, node_cls, scalar, kernel):
    """softmax or log_softmax of ``input`` along ``dim``: PyTorch's checks and dtype
    conversion, ``scalar(x)`` for a 0-d input, ``kernel(x, k)`` otherwise, and the node."""
    k = _dim_arg(input, dim, name)
    if dtype is not None:  # PyTorch converts first (ToCopyBackward0 when the dtype changes)
        input = input.to(D.to_dtype(dtype))
    _need_float_kernel(input, k, name)
    x = input._data
    if x.ndim == 0:  # NaN for a NaN or infinite input (inf - inf), as PyTorch
        with np.errstate(invalid="ignore"):
            y = scalar(x)
    elif x.size == 0:  # an empty tensor (e.g. over a size-0 dim): an empty result
        y = np.empty_like(x)
    else:
        y = np.ascontiguousarray(kernel(x, k) if x.dtype is not D.BF16 else
                                 D.opmath(kernel, x, k))  # PyTorch's layout
    if STATE.enabled and input._requires_grad:
        res = record(y, None)
        res._grad_fn = node_cls((edge_of(input),),
                                (Saved(res, True), k, k if dim is None else raw_dim(dim)))
        return notify(res)
    return _make(y)


def _softmax_np(x, k):
    e = np.exp(x - x.max(axis=k, keepdims=True))
    return e / e.sum(axis=k, keepdims=True)


def _log_softmax_np(x, k):
    s = x - x.max(axis=k, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=k, keepdims=True))


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``, computed stably; SoftmaxBackward0."""
    return _along(input, dim, dtype, "softmax", SoftmaxBackward0, lambda x: np.exp(x - x),
                  _softmax_np)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along ``dim``; LogSoftmaxBackward0."""
    return _along(input, dim, dtype, "log_softmax", LogSoftmaxBackward0, lambda x: x - x,
                  _log_softmax_np)

# public in nn.functional (whose module wraps them with PyTorch's argument errors)
softmax.__module__ = "dyngrad.nn.functional"
log_softmax.__module__ = "dyngrad.nn.functional"
