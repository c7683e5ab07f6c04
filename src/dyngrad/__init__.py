"""dyngrad: a define-by-run autograd engine on NumPy with PyTorch's API.

``import dyngrad as torch`` runs ordinary PyTorch CPU code: tensors record the graph of every
operation, ``backward()`` walks it and frees it, and ``dyngrad.viz`` shows it.
"""
from __future__ import annotations

import gc as _gc

# the import makes many objects and no garbage: the collector is paused while it runs
_GC_ON = _gc.isenabled()
_gc.disable()
try:
    from .version import __version__

    from ._malloc import tune as _tune_malloc
    _tune_malloc()
    from . import _dtype  # noqa: E402
    from ._dtype import (dtype, float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8,
                         complex64, complex128, get_default_dtype, set_default_dtype, finfo)
    from ._dtype import bool_ as bool  # noqa: A001 - torch.bool
    from ._tensor import (Tensor, Size, device, is_tensor, set_default_device, get_default_device,
                          typename)
    from ._printing import set_printoptions, get_printoptions
    from ._promotion import result_type, promote_types, can_cast, is_floating_point, is_complex
    from ._random import Generator, manual_seed, seed, initial_seed, get_rng_state, set_rng_state, \
        default_generator
    from ._factories import (tensor, as_tensor, from_numpy, zeros, ones, empty, full, zeros_like,
                             ones_like, empty_like, full_like, rand_like, randn_like, randint_like,
                             arange, linspace, logspace, eye, rand, randn, randint, randperm,
                             multinomial, FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor,
                             LongTensor, IntTensor, ShortTensor, CharTensor, ByteTensor, BoolTensor)
    from .ops.sampling import bernoulli, normal
    from .autograd.grad_mode import (no_grad, enable_grad, set_grad_enabled, inference_mode,
                                     is_grad_enabled, is_inference_mode_enabled)
    from . import autograd
    from .ops import OPS as _OPS, attach_methods as _attach_methods
    from .ops import binary as _binary, unary as _unary, comparison as _comparison  # noqa: F401
    from .ops import reduction as _reduction, linalg as _linalg  # noqa: F401
    from .ops import views as _views, indexing as _indexing, inplace as _inplace  # noqa: F401
    from .ops import _extra_loader  # noqa: F401 - loads the optional op families that exist

    half = float16
    float = float32  # noqa: A001
    double = float64
    long = int64
    int = int32  # noqa: A001
    short = int16
    cfloat = complex64
    cdouble = complex128
    strided = "torch.strided"
    contiguous_format = "torch.contiguous_format"
    preserve_format = "torch.preserve_format"
    channels_last = "torch.channels_last"
    channels_last_3d = "torch.channels_last_3d"

    from ._argcheck import guard as _guard  # noqa: E402

    for _name, _info in _OPS.items():
        if _info["function"] and not _name.startswith("_"):
            globals().setdefault(_name, _guard(_info["fn"], _name))
    # the private ops PyTorch also exposes at top level (torch._softmax, torch._log_softmax)
    _softmax = _guard(_OPS["_softmax"]["fn"], "_softmax")
    _log_softmax = _guard(_OPS["_log_softmax"]["fn"], "_log_softmax")
    _attach_methods(Tensor)
    del _name, _info

    from . import nn, optim  # noqa: E402
    from .nn.functional import pdist  # noqa: E402  (torch.pdist is F.pdist)
    from . import utils  # noqa: E402
    from . import accelerator, cuda, backends  # noqa: E402
    from . import linalg  # noqa: E402
except BaseException:
    if _GC_ON:
        _gc.enable()
    raise


def diagnose(model, loss=None):
    """Check a model's graph health (see ``dyngrad.diagnosis``); imported on first use."""
    from .diagnosis import diagnose as _diagnose
    return _diagnose(model, loss)


def numel(input) -> int:
    return input.numel()


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",
            mode=None, options=None, name=None, disable: bool = False, recompile_limit=None):
    """Compile a training step, a loss function or a Module: the first call runs eagerly
    while capturing its op program (forward, backward, optimizer update); later calls
    replay it as generated NumPy code, behind guards (see docs/compile.md).  Without
    ``model``, a decorator.  ``name`` names the compiled region in its repr, logs and the
    explorer; PyTorch's ``isolate_recompiles`` and ``shapes_spec`` are absent (every compiled
    function keeps its own captures; shapes are never symbolic).

    >>> import dyngrad as torch
    >>> f = torch.compile(lambda x: torch.tanh(x) * 2)
    >>> f(torch.ones(2))
    tensor([1.5232, 1.5232])
    """
    from ._dynamo.api import compile_impl
    return compile_impl(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                        options=options, name=name, disable=disable,
                        recompile_limit=recompile_limit)


# (torch.compile is a Python function: Python's own argument errors, no tensor op's)
compile.own_errors = True


def _assert(condition, message):
    """torch._assert: raise AssertionError(message) unless ``condition``; a graph node when
    traced by dyngrad.fx."""
    assert condition, message


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    return None


from ._threads import (set_num_threads, get_num_threads, set_num_interop_threads,  # noqa: E402
                       get_num_interop_threads)


_LAZY = ("distributed", "multiprocessing", "distributions", "special", "func", "fx", "testing",
         "compiler",
         "vmap", "save", "load", "serialization")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def __getattr__(name):
    if name in ("distributed", "multiprocessing", "distributions", "special", "func", "fx",
                "testing", "futures", "compiler", "_dynamo"):  # loaded on first use, as they are rarer
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name == "Future":  # torch.Future is torch.futures.Future
        from .futures import Future
        return Future
    if name == "vmap":  # torch.vmap is torch.func.vmap
        from .func import vmap
        return vmap
    if name in ("save", "load", "serialization"):  # checkpoint formats load on first use
        import importlib
        ser = importlib.import_module(f"{__name__}.serialization")
        return ser if name == "serialization" else getattr(ser, name)
    raise AttributeError(f"module 'dyngrad' has no attribute '{name}' (dyngrad implements a subset "
                         f"of PyTorch; '{name}' is not part of it yet)")


# PyTorch's argument errors for the factories and helpers above (the ops are guarded where
# they are exported)
from ._argcheck import guard_module as _guard_module  # noqa: E402

try:
    _guard_module(globals(), "dyngrad._factories")
    _guard_module(globals(), __name__)
finally:
    # The objects the import made (functions, classes, closures of the declared ops) live as
    # long as the program: they join the oldest generation at once rather than being scanned
    # by two young collections first (freeze then unfreeze moves every tracked object there;
    # nothing is left frozen, and garbage among them is still found by a full collection).
    if _gc.get_freeze_count() == 0:
        _gc.freeze()
        _gc.unfreeze()
    if _GC_ON:
        _gc.enable()
