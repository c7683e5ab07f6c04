"""PyTorch's names for the values backward nodes save (``grad_fn._saved_self``,
``_saved_result``, ``_raw_saved_mat2``, ...): node class name -> {name: (position in the node's
``_saved`` tuple, kind)}; kinds are read by ``Node._read_saved``.

Checked against PyTorch 2.13 over every op-table row by tests/test_saved_names.py (each name
must exist on PyTorch's node and hold the same value); that test also reports the names
PyTorch shows that no entry gives yet.  Regenerate the candidates with
``python tests/test_saved_names.py propose``."""
from __future__ import annotations

SAVED_NAMES: dict = {
    "AdaptiveAvgPool2DBackward0": {"self": (2, "tensor")},
    "AdaptiveMaxPool2DBackward0": {"result1": (0, "array"), "self": (4, "tensor")},
    "AddBackward0": {"alpha": (4, "same")},
    "AvgPool2DBackward0": {"ceil_mode": (1, "same"), "self": (2, "tensor")},
    "ClampBackward0": {"self": (0, "tensor"), "min": (1, "tensor"), "max": (2, "tensor")},
    "ClampBackward1": {"self": (0, "tensor"), "min": (1, "same"), "max": (2, "same")},
    "ClampMaxBackward0": {"self": (0, "tensor"), "max": (2, "same")},
    "ClampMaxBackward1": {"self": (0, "tensor"), "max": (2, "tensor")},
    "ClampMinBackward0": {"self": (0, "tensor"), "min": (1, "same")},
    "ClampMinBackward1": {"self": (0, "tensor"), "min": (1, "tensor")},
    "ConstantPadNdBackward0": {"pad": (0, "same")},
    "ConvolutionBackward0": {
        "input": (1, "tensor"),
        "weight": (2, "tensor"),
        "stride": (7, "same"),
        "padding": (8, "same"),
        "dilation": (9, "same"),
        "transposed": (10, "same"),
        "output_padding": (11, "same"),
        "groups": (12, "same"),
        "bias_sym_sizes_opt": (13, "same"),
    },
    "DiagonalBackward0": {"self_sym_sizes": (0, "same"), "dim1": (4, "dim"), "dim2": (5, "dim")},
    "DivBackward0": {"self": (0, "tensor"), "other": (1, "tensor")},
    "DivBackward2": {"self": (0, "tensor"), "other": (1, "tensor"), "rounding_mode": (4, "same")},
    "GatherBackward0": {"dim": (4, "dim"), "index": (2, "array"), "self": (3, "tensor")},
    "IndexAddBackward0": {
        "dim": (5, "dim"),
        "source_dim": (6, "same"),
        "index": (1, "array"),
        "alpha": (3, "same"),
        "source": (4, "tensor"),
    },
    "IndexBackward0": {"self_sym_sizes": (0, "same")},
    "IndexCopyBackward0": {
        "dim": (4, "dim"),
        "index": (1, "array"),
        "source": (3, "tensor"),
        "source_dim": (5, "same"),
    },
    "IndexFillBackward0": {"dim": (2, "dim"), "index": (1, "array")},
    "IndexPutBackward0": {"accumulate": (2, "same")},
    "LerpBackward0": {"weight": (0, "same")},
    "LerpBackward1": {"self": (0, "tensor"), "end": (1, "tensor"), "weight": (2, "tensor")},
    "LinalgCholeskyExBackward0": {"L": (0, "tensor"), "upper": (1, "same")},
    "LinalgEighBackward0": {"eigenvalues": (0, "tensor")},
    "LinalgQrBackward0": {"Q": (0, "tensor"), "R": (1, "tensor"), "mode": (2, "same")},
    "LinalgSolveExBackward0": {"A": (0, "tensor"), "result": (1, "tensor"), "left": (3, "same")},
    "LinalgVectorNormBackward0": {
        "self": (0, "tensor"),
        "result": (1, "tensor"),
        "ord": (2, "same"),
        "dim": (5, "dim"),
        "keepdim": (4, "same"),
    },
    "MaskedFillBackward0": {"mask": (0, "array")},
    "MaskedScatterBackward0": {"mask": (0, "array"), "source_sym_sizes": (2, "same")},
    "MaxPool2DWithIndicesBackward0": {"result1": (0, "array"), "self": (4, "tensor")},
    "MulBackward0": {"self": (0, "tensor"), "other": (1, "tensor")},
    "MulBackward1": {"other": (0, "same")},
    "NarrowCopyBackward0": {"self_sym_sizes": (0, "same"), "dim": (5, "dim"), "length": (3, "same")},
    "NativeBatchNormBackward0": {
        "input": (0, "tensor"),
        "weight": (1, "tensor"),
        "eps": (9, "same"),
    },
    "NativeGroupNormBackward0": {
        "input": (0, "tensor"),
        "weight": (1, "tensor"),
        "eps": (9, "same"),
    },
    "NativeLayerNormBackward0": {
        "input": (0, "tensor"),
        "weight": (1, "tensor"),
        "result1": (2, "array"),
        "result2": (3, "array"),
        "bias": (10, "tensor"),
    },
    "NllLossBackward0": {"total_weight": (4, "tensor"), "self": (6, "tensor")},
    "NormBackward1": {
        "self": (0, "tensor"),
        "result": (1, "tensor"),
        "p": (2, "same"),
        "dim": (5, "dim"),
        "keepdim": (4, "same"),
    },
    "ReflectionPad2DBackward0": {"self": (2, "tensor")},
    "ReplicationPad2DBackward0": {"self": (2, "tensor")},
    "RsubBackward1": {"alpha": (0, "same")},
    "ScatterAddBackward0": {"dim": (3, "dim"), "index": (1, "array")},
    "ScatterBackward0": {"dim": (3, "dim"), "index": (1, "array")},
    "SelectBackward0": {"self_sym_sizes": (0, "same"), "dim": (3, "dim"), "index": (4, "dim")},
    "SliceBackward0": {
        "self_sym_sizes": (0, "same"),
        "dim": (3, "dim"),
        "start": (4, "dim"),
        "end": (5, "dim"),
        "step": (6, "same"),
    },
    "SafeSoftmaxBackward0": {"result": (0, "tensor"), "dim": (2, "dim")},
    "SpecialXlog1PyBackward0": {"self": (0, "tensor"), "other": (1, "tensor")},
    "SpecialXlog1PyBackward1": {"self": (0, "same"), "other": (1, "tensor")},
    "SpecialXlog1PyBackward2": {"self": (0, "tensor"), "other": (1, "same")},
    "SpecialZetaBackward0": {"self": (0, "tensor"), "other": (1, "tensor")},
    "SpecialZetaBackward1": {"self": (0, "same"), "other": (1, "tensor")},
    "SplitBackward0": {"dim": (4, "dim"), "self_sym_sizes": (2, "same")},
    "SubBackward0": {"alpha": (4, "same")},
    "TakeBackward0": {"self": (2, "tensor")},
    "UnsafeSplitWithSizesBackward0": {
        "dim": (4, "dim"),
        "split_sizes": (1, "same"),
        "self_sym_sizes": (2, "same"),
    },
    "UnsafeViewBackward0": {"self_sym_sizes": (0, "same")},
    "WhereBackward0": {"condition": (0, "array")},
}


def apply(node_classes) -> None:
    """Give each node class (by name) its ``_named_saved``; classes defined later take theirs
    when they are created (``Node.__init_subclass__``)."""
    from ..autograd.node import Node
    Node._names_table = SAVED_NAMES
    for cls in node_classes:
        spec = SAVED_NAMES.get(cls.__name__)
        if spec is not None and "_named_saved" not in cls.__dict__:  # declared ops name theirs
            cls._named_saved = spec
