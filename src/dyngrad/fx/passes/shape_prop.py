"""``ShapeProp``: run a GraphModule on example inputs and record each node's result shape,
dtype and layout in ``node.meta['tensor_meta']`` (and its type in ``node.meta['type']``)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import Node, map_aggregate

__all__ = ["TensorMetadata", "ShapeProp"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records about a tensor result."""
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple[int, ...]
    memory_format: Any
    is_quantized: bool
    qparams: dict[str, Any]


def _extract_tensor_metadata(result, include_contiguity: bool = True) -> TensorMetadata:
    import dyngrad
    memory_format = None
    if include_contiguity:
        for fmt in (dyngrad.contiguous_format, dyngrad.channels_last, dyngrad.channels_last_3d):
            try:
                if result.is_contiguous(memory_format=fmt):
                    memory_format = fmt
                    break
            except (RuntimeError, ValueError):
                continue  # a layout that does not apply to this rank
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, result.stride(),
                          memory_format, bool(getattr(result, "is_quantized", False)), {})


class ShapeProp(Interpreter):
    """An Interpreter that stores every node's result metadata while running.

    ``ShapeProp(gm).propagate(example_input)`` then ``node.meta['tensor_meta'].shape``.
    """

    def __init__(self, gm, fake_mode: Any = None) -> None:
        if fake_mode is not None:
            raise NotImplementedError("dyngrad has no fake tensors: ShapeProp runs on real "
                                      "inputs")
        super().__init__(gm)
        self.fake_module = None
        self.fake_mode = None
        self.real_module = self.module

    def run_node(self, n: Node) -> Any:
        from ..._tensor import Tensor
        try:
            result = super().run_node(n)
        except Exception as e:
            raise RuntimeError(f"ShapeProp error for: node={n.format_node()} with "
                               f"meta={n.meta}") from e
        found = []

        def meta_of(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return _extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, meta_of)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args: Any) -> Any:
        """Run the module on ``args``, recording metadata; returns its result."""
        return super().run(*args)
