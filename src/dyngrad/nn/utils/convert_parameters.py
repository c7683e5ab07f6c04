"""Flatten parameters into one vector and back."""
from __future__ import annotations


from ..._tensor import Tensor


def parameters_to_vector(parameters) -> Tensor:
    """One 1-D tensor with every parameter's values, in order (differentiable)."""
    from ...ops.shape import cat
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of ``vec`` into the parameters' data."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for p in parameters:
        n = p._data.size
        if offset + n > vec._data.size:
            raise RuntimeError(f"vector of size {vec._data.size} is too short for the parameters")
        p._data = vec._data[offset:offset + n].reshape(p._data.shape).astype(p._data.dtype)
        offset += n
