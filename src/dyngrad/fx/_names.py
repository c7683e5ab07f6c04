"""What tracing knows about dyngrad's public functions: the name each is printed under in
generated code (``torch.relu``, ``torch.nn.functional.relu``), the argument layout PyTorch
records for the functional API, and which calls are side effects.

The tables are built on first use (tracing or printing), never at ``import dyngrad``.
"""
from __future__ import annotations

import inspect
import operator
import types
from typing import Any, Callable

# dyngrad module -> the prefix PyTorch's generated code uses for it
_MODULES = (("dyngrad", "torch."), ("dyngrad.nn.functional", "torch.nn.functional."),
            ("dyngrad.linalg", "torch.linalg."), ("dyngrad.special", "torch.special."))
# public helpers that are not operations on tensors (PyTorch does not trace them either)
_NOT_OPS = frozenset({"is_tensor", "is_storage", "typename", "compile", "diagnose",
                      "is_grad_enabled", "is_inference_mode_enabled"})
# private functions PyTorch traces all the same
_PRIVATE_OPS = frozenset({"_assert"})

_PUBLIC: dict[int, tuple[Callable, str]] = {}     # id -> (function, "torch.xxx")
_INNER: dict[int, tuple[Callable, Callable]] = {}  # id of a guarded one's body -> (body, public)
_DICTS: list[tuple[dict, str, str]] = []          # (module dict, key, public name)

# The arguments PyTorch records for its Python-level functionals: how many lead as
# positionals, then these keywords with their values filled in (defaults included).
# Functions absent here record their arguments as called.
_F_LAYOUT: dict[str, tuple[int, tuple[str, ...]]] = {
    "adaptive_avg_pool2d": (2, ()), "adaptive_avg_pool3d": (2, ()),
    "adaptive_max_pool1d": (2, ("return_indices",)),
    "adaptive_max_pool2d": (2, ("return_indices",)),
    "adaptive_max_pool3d": (2, ("return_indices",)),
    "affine_grid": (2, ("align_corners",)),
    "alpha_dropout": (1, ("p", "training", "inplace")),
    "batch_norm": (3, ("weight", "bias", "training", "momentum", "eps")),
    "binary_cross_entropy": (2, ("weight", "size_average", "reduce", "reduction")),
    "binary_cross_entropy_with_logits": (2, ("weight", "size_average", "reduce", "reduction",
                                             "pos_weight")),
    "celu": (1, ("alpha", "inplace")),
    "cosine_embedding_loss": (3, ("margin", "size_average", "reduce", "reduction")),
    "cross_entropy": (2, ("weight", "size_average", "ignore_index", "reduce", "reduction",
                          "label_smoothing")),
    "ctc_loss": (4, ("blank", "reduction", "zero_infinity")),
    "dropout": (1, ("p", "training", "inplace")), "dropout1d": (1, ("p", "training", "inplace")),
    "dropout2d": (1, ("p", "training", "inplace")), "dropout3d": (1, ("p", "training", "inplace")),
    "elu": (1, ("alpha", "inplace")),
    "embedding": (2, ("padding_idx", "max_norm", "norm_type", "scale_grad_by_freq", "sparse")),
    "embedding_bag": (2, ("offsets", "max_norm", "norm_type", "scale_grad_by_freq", "mode",
                          "sparse", "per_sample_weights", "include_last_offset", "padding_idx")),
    "feature_alpha_dropout": (1, ("p", "training", "inplace")),
    "fold": (3, ("dilation", "padding", "stride")),
    "gaussian_nll_loss": (3, ("full", "eps", "reduction")),
    "glu": (1, ("dim",)),
    "grid_sample": (2, ("mode", "padding_mode", "align_corners")),
    "group_norm": (2, ("weight", "bias", "eps")),
    "gumbel_softmax": (1, ("tau", "hard", "eps", "dim")),
    "hardsigmoid": (1, ("inplace",)), "hardswish": (1, ("inplace",)),
    "hardtanh": (1, ("min_val", "max_val", "inplace")),
    "hinge_embedding_loss": (2, ("margin", "size_average", "reduce", "reduction")),
    "huber_loss": (2, ("reduction", "delta", "weight")),
    "instance_norm": (1, ("running_mean", "running_var", "weight", "bias", "use_input_stats",
                          "momentum", "eps")),
    "interpolate": (1, ("size", "scale_factor", "mode", "align_corners",
                        "recompute_scale_factor", "antialias")),
    "kl_div": (2, ("size_average", "reduce", "reduction", "log_target")),
    "l1_loss": (2, ("size_average", "reduce", "reduction")),
    "layer_norm": (2, ("weight", "bias", "eps")),
    "leaky_relu": (1, ("negative_slope", "inplace")),
    "local_response_norm": (2, ("alpha", "beta", "k")),
    "log_softmax": (1, ("dim", "_stacklevel", "dtype")),
    "lp_pool1d": (3, ("stride", "ceil_mode")), "lp_pool2d": (3, ("stride", "ceil_mode")),
    "lp_pool3d": (3, ("stride", "ceil_mode")),
    "margin_ranking_loss": (3, ("margin", "size_average", "reduce", "reduction")),
    "max_pool1d": (2, ("stride", "padding", "dilation", "ceil_mode", "return_indices")),
    "max_pool2d": (2, ("stride", "padding", "dilation", "ceil_mode", "return_indices")),
    "max_pool3d": (2, ("stride", "padding", "dilation", "ceil_mode", "return_indices")),
    "max_unpool1d": (3, ("stride", "padding", "output_size")),
    "max_unpool2d": (3, ("stride", "padding", "output_size")),
    "max_unpool3d": (3, ("stride", "padding", "output_size")),
    "mish": (1, ("inplace",)),
    "mse_loss": (2, ("size_average", "reduce", "reduction", "weight")),
    "multi_margin_loss": (2, ("p", "margin", "weight", "size_average", "reduce", "reduction")),
    "multilabel_margin_loss": (2, ("size_average", "reduce", "reduction")),
    "multilabel_soft_margin_loss": (2, ("weight", "size_average", "reduce", "reduction")),
    "nll_loss": (2, ("weight", "size_average", "ignore_index", "reduce", "reduction")),
    "normalize": (1, ("p", "dim", "eps", "out")),
    "pad": (2, ("mode", "value")),
    "poisson_nll_loss": (2, ("log_input", "full", "size_average", "eps", "reduce", "reduction")),
    "relu": (1, ("inplace",)), "relu6": (1, ("inplace",)),
    "rms_norm": (2, ("weight", "eps")),
    "rrelu": (1, ("lower", "upper", "training", "inplace")),
    "selu": (1, ("inplace",)), "silu": (1, ("inplace",)),
    "smooth_l1_loss": (2, ("size_average", "reduce", "reduction", "beta")),
    "soft_margin_loss": (2, ("size_average", "reduce", "reduction")),
    "softmax": (1, ("dim", "_stacklevel", "dtype")),
    "softmin": (1, ("dim", "_stacklevel", "dtype")),
    "softsign": (1, ()), "tanhshrink": (1, ()),
    "threshold": (3, ("inplace",)),
    "triplet_margin_loss": (3, ("margin", "p", "eps", "swap", "size_average", "reduce",
                                "reduction")),
    "triplet_margin_with_distance_loss": (3, ("distance_function", "margin", "swap",
                                              "reduction")),
    "unfold": (2, ("dilation", "padding", "stride")),
}

# functionals PyTorch writes as a method call on their input, which is what tracing records
F_AS_METHOD = {"torch.nn.functional.sigmoid": "sigmoid", "torch.nn.functional.tanh": "tanh"}

# calls dead-code elimination keeps: asserts, item assignment, and the random generators
_RANDOM = frozenset({"rand", "randn", "randint", "randperm", "normal", "bernoulli",
                     "multinomial", "rand_like", "randn_like", "randint_like", "poisson"})


def _build() -> None:
    if _PUBLIC:
        return
    import importlib
    for modname, prefix in _MODULES:
        mod = importlib.import_module(modname)
        d = vars(mod)
        for k, v in list(d.items()):
            if (k.startswith("_") and k not in _PRIVATE_OPS) or k in _NOT_OPS or \
                    not isinstance(v, types.FunctionType):
                continue
            m = getattr(v, "__module__", "") or ""
            if not m.startswith("dyngrad") or m.startswith(("dyngrad.fx", "dyngrad.func")):
                continue
            _PUBLIC.setdefault(id(v), (v, prefix + k))
            inner = getattr(v, "__wrapped__", None)
            if inner is not None:
                _INNER.setdefault(id(inner), (inner, v))
            _DICTS.append((d, k, prefix + k))


def public_name(fn: Any) -> str | None:
    """``torch.xxx`` for a public dyngrad function (as generated code names it), else None."""
    _build()
    hit = _PUBLIC.get(id(fn))
    return hit[1] if hit is not None and hit[0] is fn else None


def public_of_body(fn: Any) -> Callable | None:
    """The public function whose argument guard wraps ``fn`` (what its failure reports)."""
    _build()
    hit = _INNER.get(id(fn))
    return hit[1] if hit is not None and hit[0] is fn else None


_STATIC: list[tuple[type, str, Callable, str]] = []  # (layer class, attribute, op, public name)


def static_ops() -> list[tuple[type, str, Callable, str]]:
    """Layers that keep a public op as a static method (``Conv2d._conv``): patched too."""
    _build()
    if not _STATIC:
        from .. import nn
        nn._load_all()  # the layer files not loaded yet
        for cls in vars(nn).values():
            if isinstance(cls, type) and issubclass(cls, nn.Module):
                for k, v in vars(cls).items():
                    if isinstance(v, staticmethod) and public_name(v.__func__) is not None:
                        _STATIC.append((cls, k, v.__func__, public_name(v.__func__)))
    return _STATIC


def op_dicts() -> list[tuple[dict, str, str]]:
    """Every (module dict, key, public name) holding a public operation, for patching while
    tracing."""
    _build()
    return _DICTS


def public_functions() -> list[Callable]:
    """The public operations (their ids decide which globals of user code get patched)."""
    _build()
    return [v for v, _ in _PUBLIC.values()]


def recorded_arguments(name: str, fn: Callable, args: tuple, kwargs: dict):
    """The (args, kwargs) PyTorch records for a call of the public function ``name``."""
    if not name.startswith("torch.nn.functional."):
        return args, kwargs
    layout = _F_LAYOUT.get(name[len("torch.nn.functional."):])
    if layout is None:
        return args, kwargs
    npos, kws = layout
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
    except (TypeError, ValueError):
        return args, kwargs
    bound.apply_defaults()
    values = bound.arguments
    names = list(sig.parameters)
    if any(k not in values for k in kws) or len(names) < npos or \
            any(sig.parameters[n].kind in (inspect.Parameter.VAR_POSITIONAL,
                                           inspect.Parameter.VAR_KEYWORD) for n in names):
        return args, kwargs
    return tuple(values[n] for n in names[:npos]), {k: values[k] for k in kws}


def is_impure_function(fn: Callable, impure_random: bool = True) -> bool:
    """Whether a call_function node on ``fn`` has effects beyond its result."""
    if fn is operator.setitem:
        return True
    name = public_name(fn)
    if name in ("torch._assert",):
        return True
    return name is not None and name[len("torch."):] in _RANDOM
