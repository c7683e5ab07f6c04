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
    "AvgPool2DBackward0": {"ceil_mode": (1, "same"), "self": (2, "tensor")},
    "ConstantPadNdBackward0": {"pad": (0, "same")},
    "IndexBackward0": {"self_sym_sizes": (0, "same")},
    "LinalgCholeskyExBackward0": {"L": (0, "tensor"), "upper": (1, "same")},
    "LinalgEighBackward0": {"eigenvalues": (0, "tensor")},
    "LinalgQrBackward0": {"Q": (0, "tensor"), "R": (1, "tensor"), "mode": (2, "same")},
    "LinalgSolveExBackward0": {"A": (0, "tensor"), "result": (1, "tensor"), "left": (3, "same")},
    "MaxPool2DWithIndicesBackward0": {"result1": (0, "array"), "self": (4, "tensor")},
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
    "ReflectionPad2DBackward0": {"self": (2, "tensor")},
    "ReplicationPad2DBackward0": {"self": (2, "tensor")},
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
    "UnsafeViewBackward0": {"self_sym_sizes": (0, "same")},
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
