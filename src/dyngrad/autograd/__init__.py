"""``dyngrad.autograd``: backward, grad, custom Functions, grad modes."""
from __future__ import annotations

import numpy as np

from .grad_mode import DUAL_LEVEL
from .grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled,
                        STATE)
from .node import Node, AccumulateGrad
from .function import Function, FunctionCtx, once_differentiable
from .anomaly import (detect_anomaly, set_detect_anomaly, is_anomaly_enabled,
                      is_anomaly_check_nan_enabled)
from . import errors, graph
from .gradcheck import gradcheck, gradgradcheck, GradcheckError
from .. import _warn
from .. import _dtype as _DT

__all__ = ["backward", "grad", "Variable", "Function", "FunctionCtx", "once_differentiable",
           "no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "detect_anomaly", "set_detect_anomaly", "Node", "graph", "functional", "forward_ad",
           "gradcheck", "gradgradcheck"]


def __getattr__(name):
    # submodules that need the Tensor class: loaded on first use
    if name in ("functional", "forward_ad"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _rg(t) -> bool:
    """requires_grad as the user sees it (a tensor carrying only a tangent records internally)."""
    return t._requires_grad and not t.__dict__.get("_dual_only", False)


_CYCLE_WARNING = ("Using backward() with create_graph=True will create a reference cycle between "
                  "the parameter and its gradient which can cause a memory leak. We recommend "
                  "using autograd.grad when creating the graph to avoid this. If you have to use "
                  "this function, make sure to reset the .grad fields of your parameters to None "
                  "after use to break the cycle and avoid the leak.")


_TENSOR_CLS = []


def _tensor_cls():
    """The Tensor class (imported once, lazily: this package loads before it)."""
    if not _TENSOR_CLS:
        from .._tensor import Tensor
        _TENSOR_CLS.append(Tensor)
    return _TENSOR_CLS[0]


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _tensor_cls())


Variable = _VariableMeta("Variable", (), {"__new__": lambda cls, data=None, requires_grad=False,
                                          volatile=False: _variable_new(data, requires_grad),
                                          "__doc__": "Deprecated: every Tensor is a Variable."})


def _variable_new(data, requires_grad):
    """``Variable(t, requires_grad=...)``: the tensor itself, with the flag set."""
    Tensor = _tensor_cls()
    t = data if isinstance(data, Tensor) else Tensor._make(np.asarray(data))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _as_list(x):
    if x is None:
        return None
    Tensor = _tensor_cls()
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _is_dual(t) -> bool:
    """Whether ``t`` carries a forward-mode tangent (a dual level is active)."""
    from .forward_ad import _Dual
    return type(t) is _Dual


def _make_grads(outputs, grad_outputs, create_graph, is_grads_batched=False):
    Tensor = _tensor_cls()
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:
            if out._data.size != 1:
                raise errors.scalar_only(out)
            if not out._requires_grad:
                grads.append(None)
                continue
            if out._data.dtype not in _DT.FLOATING:
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs "
                                   f"but got {out.dtype}")
            arr = np.ones(out._data.shape, out._data.dtype)
            grads.append(Tensor._make(arr) if create_graph else arr)
            continue
        if not isinstance(g, Tensor):
            g = Tensor._make(np.asarray(g, dtype=out._data.dtype))
        if g._data.shape != out._data.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"{g.shape} and output[{i}] has a shape of {out.shape}.")
        if g._data.dtype.kind != out._data.dtype.kind and not (
                g._data.dtype in _DT.INEXACT and out._data.dtype in _DT.INEXACT):
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required to "
                               f"have the same dtype. Mismatch in dtype: grad_output[{i}] has a dtype "
                               f"of {g.dtype} and output[{i}] has a dtype of {out.dtype}.")
        if create_graph or (DUAL_LEVEL and _is_dual(g)):
            # a gradient carrying a tangent stays a tensor: the tangent flows through backward
            grads.append(g if g._data.dtype == out._data.dtype else g.to(out.dtype))
        else:
            d = g._data
            # always a copy: the engine may adopt gradient buffers as a leaf's .grad
            grads.append(d.copy() if d.dtype == out._data.dtype else d.astype(out._data.dtype))
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None) -> None:
    """Accumulate into leaves' ``.grad`` the gradients of ``tensors`` (weighted by
    ``grad_tensors``)."""
    from .engine import run_backward
    outputs = _as_list(tensors)
    grads = _as_list(grad_tensors if grad_tensors is not None else grad_variables)
    if grads is None:
        grads = [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got "
                           f"{len(grads)} gradients for {len(outputs)} tensors")
    for t in outputs:
        if not _rg(t):
            raise errors.no_grad_fn(t)
    if retain_graph is None:
        retain_graph = create_graph
    g = _make_grads(outputs, grads, create_graph)
    ins = _as_list(inputs)
    if ins is not None and len(ins) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    if create_graph and (ins is None or any(t._grad_fn is None for t in ins)):
        import warnings
        _warn.warn(_CYCLE_WARNING, UserWarning)
    run_backward(outputs, g, retain_graph, create_graph, inputs=ins)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` w.r.t. ``inputs``, returned (``.grad`` is left alone)."""
    from .engine import run_backward
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    gos = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outs)
    if len(gos) != len(outs):
        raise RuntimeError(f"grad_outputs must be the same length as outputs: {len(gos)} vs "
                           f"{len(outs)}")
    if not ins:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    for i, t in enumerate(ins):
        if not _rg(t):
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    for t in outs:
        if not _rg(t):
            raise RuntimeError(errors.NO_GRAD_FN)
    if allow_unused is None:
        allow_unused = materialize_grads
    if retain_graph is None:
        retain_graph = create_graph
    if is_grads_batched:
        return _batched_grad(outs, ins, gos, retain_graph, create_graph, allow_unused,
                             materialize_grads)
    g = _make_grads(outs, gos, create_graph)
    res = run_backward(outs, g, retain_graph, create_graph, inputs=ins, capture=True,
                       allow_unused=allow_unused)
    if materialize_grads:
        from .._factories import zeros_like
        res = [zeros_like(i) if r is None else r for r, i in zip(res, ins)]
    return tuple(res)


def _batched_grad(outs, ins, gos, retain_graph, create_graph, allow_unused, materialize_grads):
    """``grad(..., is_grads_batched=True)``: one vector-Jacobian product per entry of the
    first dimension of every grad_output, stacked (PyTorch vmaps over it; the results are
    the same)."""
    from .._tensor import LATE, Size, Tensor
    n = None
    for i, (o, go) in enumerate(zip(outs, gos)):
        if not isinstance(go, Tensor):
            continue
        first = go[0]
        if tuple(first.shape) != tuple(o.shape):
            raise RuntimeError(
                f"If `is_grads_batched=True`, we interpret the first dimension of each "
                f"grad_output as the batch dimension. The sizes of the remaining dimensions "
                f"are expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {Size(tuple(first.shape)[1:])} "
                f"and output[{i}] has a shape of {Size(tuple(o.shape))}. If you only want some "
                f"tensors in `grad_output` to be considered batched, consider using vmap.")
        n = go.shape[0] if n is None else n
    per = []
    for b in range(n or 0):
        last = b == n - 1
        per.append(grad(outs, ins, [go[b] if isinstance(go, Tensor) else go for go in gos],
                        retain_graph=retain_graph if last else True, create_graph=create_graph,
                        allow_unused=allow_unused))
    res = [None if any(p[k] is None for p in per) else LATE.stack([p[k] for p in per])
           for k in range(len(ins))]
    if materialize_grads:  # zeros of the input's shape, unbatched, as PyTorch gives
        from .._factories import zeros_like
        res = [zeros_like(i) if r is None else r for r, i in zip(res, ins)]
    return tuple(res)


# Tensor.backward reaches the engine through the core's registry (the core imports nothing
# above it)
def _register():
    from .._tensor import LATE
    from .engine import run_backward
    LATE.run_backward = run_backward
    LATE.backward = backward


_register()
