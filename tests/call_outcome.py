"""What a call gives, in a form two libraries' results can be compared in: its error as
(type name, message), or a tensor result as (dtype name, shape, values, requires_grad,
whether it has no grad_fn)."""
from __future__ import annotations


def error_of(fn):
    """``fn()``'s error as (type name, message); None when it returns."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return type(e).__name__, str(e)
    return None


def outcome_of(lib, fn):
    """``fn(lib)``'s result (dtype, shape, values, autograd state; a non-tensor as it is) or
    its error."""
    try:
        r = fn(lib)
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return type(e).__name__, str(e)
    if not isinstance(r, lib.Tensor):
        return r
    return (str(r.dtype).split(".")[-1], tuple(r.shape), r.tolist(), r.requires_grad,
            r.grad_fn is None)
