"""Tensor: one NumPy array plus the autograd state PyTorch keeps beside it.

Hot fields are slots; rarely used ones (hooks, the AccumulateGrad reference, view data)
are class-level defaults that an instance overrides only when it needs them, so making a
tensor costs a handful of attribute stores.  Operators and methods come from the op
modules (see ``ops/__init__.py``), which attach themselves to this class.
"""
from __future__ import annotations

import numbers
import re
import weakref

import numpy as np

from . import _dtype as D
from . import _warn


class _Late:
    """What Tensor's own methods call from the layers above, registered by them when they load
    (the core imports nothing above it): ``run_backward`` and ``backward`` (autograd),
    ``to_dtype`` (ops.tensor_basics), ``live_views`` (ops.views), ``rebase_view`` (ops.inplace),
    ``stack`` (ops.shape; autograd's batched grad and jacobians)."""

    run_backward = backward = to_dtype = live_views = rebase_view = stack = None


LATE = _Late()  # defined before the imports below: autograd registers into it as it loads

from .autograd import errors  # noqa: E402
from .autograd.grad_mode import STATE as _GRAD_STATE, INFERENCE_BLOCKS as _INFERENCE_BLOCKS  # noqa: E402

_INFERENCE_REQUIRES_GRAD = ("Setting requires_grad=True on inference tensor outside InferenceMode "
                            "is not allowed.")
# PyTorch's names for a dtype in the grad-assignment error: the C++ type of the gradient and the
# ScalarType of the tensor
_C_TYPE = {np.dtype(k): v for k, v in (
    ("float32", "float"), ("float64", "double"), ("float16", "c10::Half"), ("int64", "long int"),
    ("int32", "int"), ("int16", "short int"), ("int8", "signed char"), ("uint8", "unsigned char"),
    ("bool", "bool"), ("complex64", "c10::complex<float>"), ("complex128", "c10::complex<double>"))}
_SCALAR_TYPE = {np.dtype(k): v for k, v in (
    ("float32", "Float"), ("float64", "Double"), ("float16", "Half"), ("int64", "Long"),
    ("int32", "Int"), ("int16", "Short"), ("int8", "Char"), ("uint8", "Byte"), ("bool", "Bool"),
    ("complex64", "ComplexFloat"), ("complex128", "ComplexDouble"))}
_ONES: dict = {}  # read-only arrays of ones used as the implicit gradient of a scalar loss

_new = object.__new__
_ndarray = np.ndarray
_np_asarray = np.asarray


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``torch.Size([3, 2])``."""

    def __repr__(self) -> str:
        return f"torch.Size([{', '.join(str(s) for s in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, k):
        r = tuple.__getitem__(self, k)
        return Size(r) if isinstance(k, slice) else r


_DEVICE_TYPES = ("cpu", "cuda", "mps", "meta")
_DEVICE_RE = re.compile(r"([a-zA-Z_]+)(?::([1-9]\d*|0))?")  # PyTorch's device-string grammar


class device:
    """A device; only the CPU exists here (``device('cpu')``)."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        t = str(type)
        if isinstance(type, str) and t not in _DEVICE_TYPES:
            if not t:
                raise RuntimeError("Device string must not be empty")
            m = _DEVICE_RE.fullmatch(t)
            if m is None:
                raise RuntimeError(f"Invalid device string: '{t}'")
            t = m.group(1)
            if m.group(2) is not None:
                index = int(m.group(2))
        elif ":" in t:
            t, idx = t.split(":", 1)
            index = int(idx)
        if t not in _DEVICE_TYPES:
            raise RuntimeError(f"Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, "
                               f"hip, ve, fpga, maia, xla, lazy, vulkan, mps, meta, hpu, mtia, "
                               f"privateuseone device type at start of device string: {type}")
        self.type = t
        self.index = index

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __enter__(self):
        prev = _DEFAULT_DEVICE[0]
        set_default_device(self)
        _DEVICE_STACK.append(prev)
        return self

    def __exit__(self, *exc):
        _DEFAULT_DEVICE[0] = _DEVICE_STACK.pop()
        return False


CPU = device("cpu")
_DEFAULT_DEVICE = [None]   # what set_default_device chose (None: the CPU)
_DEVICE_STACK = []         # the defaults that open ``with device(...)`` blocks replaced


def set_default_device(dev) -> None:
    """Set the device factories use by default; only the CPU exists here, so anything but
    'cpu' (or None) raises PyTorch's error for a CPU-only build."""
    if dev is None:
        _DEFAULT_DEVICE[0] = None
        return
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cuda":
        raise AssertionError("Torch not compiled with CUDA enabled")
    if d.type == "mps":
        raise RuntimeError("PyTorch is not linked with support for mps devices")
    if d.type == "meta":
        raise NotImplementedError("dyngrad has no meta tensors: every tensor holds its values on "
                                  "the CPU, so 'meta' cannot be the default device")
    _DEFAULT_DEVICE[0] = d


def get_default_device() -> device:
    """The device factories use by default (the CPU)."""
    d = _DEFAULT_DEVICE[0]
    return CPU if d is None else d


def _check_device(dev):
    if dev is None:
        return
    d = dev if isinstance(dev, device) else device(dev)
    if d.type != "cpu":
        raise RuntimeError(f"dyngrad runs on the CPU only; device '{d}' is not available "
                           f"(torch.cuda.is_available() is False)")



# the dimension order, fastest first, of the channels-last memory formats
_CHANNELS_LAST_ORDER = {"torch.channels_last": (1, 3, 2, 0),
                        "torch.channels_last_3d": (1, 4, 3, 2, 0)}
_CHANNELS_LAST_OF_RANK = {len(v): k for k, v in _CHANNELS_LAST_ORDER.items()}


def channels_last_format(d: np.ndarray):
    """The channels-last memory format ``d`` (4-d or 5-d) is stored in, checked as PyTorch
    checks it (size-1 dims aside), else None."""
    fmt = _CHANNELS_LAST_OF_RANK.get(d.ndim)
    if fmt is None:
        return None
    expected = 1
    for k in _CHANNELS_LAST_ORDER[fmt]:
        n = d.shape[k]
        if n != 1:
            if d.strides[k] != expected * d.itemsize:
                return None
            expected *= n
    return fmt

class Tensor:
    """A multi-dimensional array that records the operations applied to it.

    >>> import dyngrad as torch
    >>> a = torch.tensor([1.0, 2.0], requires_grad=True)
    >>> (a * a).sum().backward()
    >>> a.grad
    tensor([2., 4.])
    """

    __slots__ = ("_data", "_requires_grad", "_grad", "_grad_fn", "_vc", "_base",
                 "__dict__", "__weakref__")
    # rarely used state: class defaults, overridden per instance when needed
    _output_nr = 0
    _acc = None
    _hooks = None
    _post_acc_hooks = None
    _retains_grad = False
    _view_fn = None
    _fw_grad = None
    _nograd_view = False   # a view of a tensor requiring grad, made under no_grad
    _creation = None       # how a view was made (ops/views.py: no_grad, multi-output), else None
    _stale_view = False    # PyTorch's error (a str) for such a view after an in-place change
    _inference = False     # made under inference_mode
    __array_ufunc__ = None  # ndarray (op) Tensor defers to Tensor's reflected operator
    __array_priority__ = 1000

    def __init__(self, *args, device=None, dtype=None):
        _check_device(device)
        dt = D.DEFAULTS.float if dtype is None else D.to_dtype(dtype)
        if not args:
            data = np.empty((0,), dt.np)
        elif len(args) == 1 and not isinstance(args[0], (int, np.integer, Size)):
            a = args[0]
            data = np.array(a._data if isinstance(a, Tensor) else a, dtype=dt.np)
        else:
            shape = tuple(args[0]) if isinstance(args[0], Size) else args
            for s in shape:
                if not isinstance(s, (int, np.integer)):
                    raise TypeError(f"Tensor(): sizes must be ints, got {type(s).__name__}")
                if s < 0:
                    raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                       f"{list(shape)}")
            data = np.zeros(shape, dt.np)
        self._data = data
        self._requires_grad = False
        self._grad = None
        self._grad_fn = None
        self._vc = [0]
        self._base = None
        if _INFERENCE_BLOCKS[0] and _GRAD_STATE.inference:
            self._inference = True

    @classmethod
    def _make(cls, data):
        """Wrap an ndarray without copying; no graph, no checks (the hot path)."""
        t = _new(Tensor)
        t._data = data if type(data) is _ndarray else _np_asarray(data)
        t._requires_grad = False
        t._grad = None
        t._grad_fn = None
        t._vc = [0]
        t._base = None
        if _INFERENCE_BLOCKS[0] and _GRAD_STATE.inference:
            t._inference = True
        return t

    # -- autograd state --------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        value = bool(value)
        if self._grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if value and self._data.dtype not in D.INEXACT:
            raise RuntimeError(errors.FLOAT_ONLY)
        if value and self._inference and not _GRAD_STATE.inference:
            raise RuntimeError(_INFERENCE_REQUIRES_GRAD)
        self._requires_grad = value
        if len(self._vc) > 1:
            _views_follow(self, value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place and return self."""
        if requires_grad and self._data.dtype not in D.INEXACT:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference and not _GRAD_STATE.inference:
            raise RuntimeError(_INFERENCE_REQUIRES_GRAD)
        # PyTorch asks the raw grad_fn: a view whose history is stale or rebuilt but unused
        # counts as interior only if it had a history before
        fn = self._grad_fn
        interior = (fn is not None and fn._seq != -2) or "_stale_fn" in self.__dict__
        if interior and not requires_grad:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if not interior:
            base = self._base
            if not requires_grad and base is not None and base._requires_grad and \
                    self._data.dtype in D.INEXACT:
                self.__dict__.pop("_own_rg", None)
                return self  # a view of a base that requires grad still does (PyTorch)
            self._requires_grad = bool(requires_grad)
            if base is not None:  # a view's own flag: PyTorch ORs it with its base's
                if requires_grad:
                    self.__dict__["_own_rg"] = True
                else:
                    self.__dict__.pop("_own_rg", None)
            if len(self._vc) > 1:
                _views_follow(self, self._requires_grad)
        return self

    def is_inference(self) -> bool:
        """True for a tensor made under ``inference_mode`` (a view is one when its base is)."""
        if not self._inference:
            return False
        base = self._base
        return base is None or base.is_inference()

    @property
    def grad_fn(self):
        """The node that made this tensor (None for leaves)."""
        if self._stale_view:
            raise RuntimeError(self._stale_view)
        fn = self._grad_fn
        if fn is not None and fn._seq < 0:
            from .autograd.node import first_use
            first_use(fn)
        return fn

    @property
    def is_leaf(self) -> bool:
        """True for tensors that no recorded op produced."""
        if self._stale_view:
            raise RuntimeError(self._stale_view)
        fn = self._grad_fn
        if fn is not None and fn._seq < 0:  # a view's history rebuilt lazily: made now, as
            from .autograd.node import first_use  # PyTorch's is_leaf asks for grad_fn
            first_use(fn)
        return fn is None

    @property
    def grad(self):
        """The accumulated gradient of a leaf (None until a backward reaches it)."""
        fn = self._grad_fn
        # PyTorch warns for a non-leaf without a gradient, judging by the history as it
        # stands (a view's history rebuilt lazily and never used counts as none)
        if fn is not None and self._grad is None and not self._retains_grad and fn._seq != -2:
            _warn.warn(errors.NONLEAF_GRAD, UserWarning)
        return self._grad

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._data.dtype != self._data.dtype:   # PyTorch checks the dtype first
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{_C_TYPE[value._data.dtype]}' to "
                    f"a tensor with grad_dtype '{_SCALAR_TYPE[self._data.dtype]}'. The gradient "
                    f"must match the tensor's grad_dtype (defaults to the tensor's dtype). You can "
                    f"set the tensor's grad_dtype attribute with a specific dtype, or None to allow "
                    f"any dtype. Set grad_dtype with caution. Diverging the dtypes of a tensor and "
                    f"its gradient may break downstream systems that assume they match.")
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value._data.shape)}' to a "
                    f"tensor of size '{list(self._data.shape)}'. Please ensure that the gradient "
                    f"and the tensor are the same size")
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad and self._grad_fn is not None

    def retain_grad(self) -> None:
        """Keep this non-leaf's gradient in ``.grad`` during backward."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._stale_view:
            if "_stale_fn" not in self.__dict__:
                return  # it never had a history: a leaf to PyTorch's check, nothing to keep
            raise RuntimeError(self._stale_view)
        fn = self._grad_fn
        if fn is None or self._retains_grad:
            return
        if fn._retain is None:
            fn._retain = {}
        fn._retain[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor
        replaces the gradient.  Returns a handle with ``remove()``."""
        from .autograd.node import _Handle
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._stale_view:
            raise RuntimeError(self._stale_view)
        fn = self._grad_fn
        if fn is None:
            if self._hooks is None:
                self._hooks = []
            return _Handle(self._hooks, hook)
        if fn._tensor_hooks is None:
            fn._tensor_hooks = {}
        return _Handle(fn._tensor_hooks.setdefault(self._output_nr, []), hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after a gradient has been accumulated into this leaf."""
        from .autograd.node import _Handle
        if self._grad_fn is not None:
            raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        return _Handle(self._post_acc_hooks, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Compute the gradient of this tensor w.r.t. the graph leaves and add it to their
        ``.grad``.  A non-scalar tensor needs ``gradient`` (dL/dself)."""
        if (gradient is not None and inputs is None and not create_graph
                and self._grad_fn is not None and type(gradient) is Tensor
                and gradient._data.shape == self._data.shape
                and gradient._data.dtype == self._data.dtype):
            # backward(gradient) with a gradient of the right shape and dtype
            # a copy: the engine may adopt gradient buffers as a leaf's .grad
            LATE.run_backward((self,), (gradient._data.copy(),), bool(retain_graph), False)
            return
        if (gradient is None and inputs is None and not create_graph and self._grad_fn is not None
                and self._data.size == 1 and self._data.dtype in D.FLOATING):
            # the common loss.backward(): skip argument normalisation
            one = _ONES.get((self._data.dtype, self._data.shape))
            if one is None:
                one = np.ones(self._data.shape, self._data.dtype)
                one.flags.writeable = False
                _ONES[(self._data.dtype, self._data.shape)] = one
            LATE.run_backward((self,), (one,), bool(retain_graph), False)
            return
        LATE.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def detach(self) -> "Tensor":
        """A tensor sharing this one's data (and version counter) outside the graph."""
        t = Tensor._make(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> "Tensor":
        """Cut this tensor from the graph in place; it becomes a leaf."""
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        """The values as a tensor outside autograd's tracking (shares storage)."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data

    # -- metadata --------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape, or the length of one dimension."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> D.dtype:
        return D.FROM_NP[self._data.dtype]

    @property
    def device(self) -> device:
        return CPU

    is_cuda = False
    is_sparse = False
    is_quantized = False
    is_meta = False
    layout = "torch.strided"

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    def is_floating_point(self) -> bool:
        return self._data.dtype in D.FLOATING

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements sit in memory in row-major order (``memory_format``:
        channels-last order for 4-d / 5-d tensors, as PyTorch checks it: size-1 dims aside)."""
        if memory_format not in _CHANNELS_LAST_ORDER:
            return bool(self._data.flags.c_contiguous)
        return channels_last_format(self._data) == memory_format

    @property
    def _version(self) -> int:
        """How many times this tensor's memory has been changed in place (PyTorch's version
        counter, shared with its views)."""
        return self._vc[0]

    def stride(self, dim=None):
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[_dim(dim, self._data.ndim)]

    def data_ptr(self) -> int:
        return self._data.__array_interface__["data"][0]

    def storage_offset(self) -> int:
        base = _storage_root(self._data)
        return (self.data_ptr() - base.__array_interface__["data"][0]) // self._data.itemsize

    def _is_view(self) -> bool:
        return self._base is not None

    def get_device(self) -> int:
        return -1

    def type(self, dtype=None):
        """Without an argument, the legacy type name ('torch.FloatTensor'); with one, a cast."""
        if dtype is None:
            return "torch." + D.TYPE_NAMES[self.dtype]
        if isinstance(dtype, str) and dtype.endswith("Tensor"):
            for k, v in D.TYPE_NAMES.items():
                if dtype.endswith(v):
                    return self.to(k)
        legacy = getattr(dtype, "_dtype", None)  # a legacy type such as dyngrad.FloatTensor
        return self.to(legacy if type(legacy) is D.dtype else D.to_dtype(dtype))

    def type_as(self, other) -> "Tensor":
        """This tensor cast to ``other``'s dtype (itself when they match)."""
        if not isinstance(other, Tensor):
            raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not "
                            f"{D.type_name(other)}")
        return self.to(D.FROM_NP[other._data.dtype])

    def is_signed(self) -> bool:
        """Whether the dtype holds negative values (False for uint8 and bool)."""
        return self._data.dtype.kind not in "ub"

    def is_same_size(self, other) -> bool:
        if not isinstance(other, Tensor):
            raise TypeError(f"is_same_size(): argument 'other' (position 1) must be Tensor, not "
                            f"{D.type_name(other)}")
        return self._data.shape == other._data.shape

    @property
    def is_cpu(self) -> bool:
        return True

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    # -- conversion ------------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to "
                               f"Scalar")
        return self._data.item() if self._data.ndim == 0 else self._data.reshape(()).item()

    def tolist(self):
        """The values as (nested) Python lists of numbers."""
        return self._data.tolist()

    def numpy(self, force: bool = False) -> np.ndarray:
        """The values as an ndarray sharing memory with this tensor."""
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._data.dtype == D.BF16:
            raise TypeError("Got unsupported ScalarType BFloat16")  # PyTorch's NumPy bridge
        return self._data

    def __array__(self, dtype=None, copy=None):
        return self.numpy() if dtype is None else self.numpy().astype(dtype)

    def to(self, *args, **kwargs) -> "Tensor":
        """Convert dtype and/or device; returns self when nothing changes."""
        dt = kwargs.pop("dtype", None)
        dev = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        mf = kwargs.pop("memory_format", None)
        if mf == "torch.preserve_format":
            mf = None
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, D.dtype):
                dt = a
            elif isinstance(a, Tensor):
                dt = a.dtype
            elif isinstance(a, (str, device)):
                dev = a
            elif isinstance(a, bool):
                pass
            elif a is not None:
                dt = D.to_dtype(a)
        _check_device(dev)
        relayout = mf is not None and not self.is_contiguous(memory_format=mf)
        if (dt is None or D.to_dtype(dt).np == self._data.dtype) and not relayout:
            if copy:
                return self.clone()
            return self
        return LATE.to_dtype(self, D.to_dtype(dt) if dt is not None else self.dtype, mf)

    def cpu(self, memory_format=None) -> "Tensor":
        return self

    def cuda(self, *a, **k):
        raise AssertionError("Torch not compiled with CUDA enabled")

    def float(self):
        return self.to(D.float32)

    def double(self):
        return self.to(D.float64)

    def half(self):
        return self.to(D.float16)

    def bfloat16(self):
        return self.to(D.bfloat16)

    def long(self):
        return self.to(D.int64)

    def int(self):
        return self.to(D.int32)

    def short(self):
        return self.to(D.int16)

    def bool(self):
        return self.to(D.bool_)

    def byte(self):
        return self.to(D.uint8)

    def char(self):
        return self.to(D.int8)

    def pin_memory(self):
        return self

    def share_memory_(self):
        """Move the data into shared memory (``multiprocessing.shared_memory``), in place:
        processes forked afterwards, or that receive this tensor, share its values."""
        from ._shared_memory import share
        return share(self)

    def is_shared(self) -> bool:
        from ._shared_memory import is_shared
        return is_shared(self)

    def cfloat(self) -> "Tensor":
        return self.to(D.complex64)

    def cdouble(self) -> "Tensor":
        return self.to(D.complex128)

    def is_set_to(self, tensor) -> bool:
        """Whether both tensors view the same storage with the same offset, sizes and
        strides."""
        a, b = self._data, tensor._data
        return (_storage_root(a) is _storage_root(b) and a.shape == b.shape
                and a.strides == b.strides and a.dtype == b.dtype
                and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])

    def is_pinned(self) -> bool:
        """Never: the CPU build has no pinned memory."""
        return False

    is_mkldnn = False

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for leaves)."""
        return self._output_nr

    def dim_order(self) -> tuple:
        """The dimensions from outermost to innermost in memory (by stride, largest first)."""
        st = self.stride()
        return tuple(sorted(range(len(st)), key=lambda i: -st[i]))

    def new(self, *args, device=None) -> "Tensor":
        """PyTorch's legacy constructor: ``new()`` (empty), ``new(*sizes)`` or
        ``new(torch.Size)`` (uninitialised, this tensor's dtype), ``new(tensor)`` (an alias of
        a tensor of this dtype), ``new(data)`` (a copy of a sequence in this dtype)."""
        from . import _factories as F
        if not args:
            return F.empty(0, dtype=self.dtype)
        a = args[0]
        if len(args) == 1 and isinstance(a, Tensor):
            if a._data.dtype != self._data.dtype:
                raise TypeError(f"expected TensorOptions(dtype={D.c_name(self._data.dtype)}, "
                                "device=cpu, layout=Strided, requires_grad=false (default), "
                                "pinned_memory=false (default), memory_format=(nullopt))")
            return a.detach()
        if len(args) > 1 or isinstance(a, Size) or isinstance(a, int) and not isinstance(a, bool):
            sizes = tuple(a) if len(args) == 1 and isinstance(a, Size) else args
            return F.empty(*sizes, dtype=self.dtype)
        if isinstance(a, str) or not hasattr(a, "__len__"):
            what = "invalid data type 'str'" if isinstance(a, str) else \
                f"data must be a sequence (got {type(a).__name__})"
            raise TypeError(f"new(): {what}")
        return F.tensor(a, dtype=self.dtype)

    def apply_(self, callable) -> "Tensor":
        """Replace each element ``v`` by ``callable(v)``, in place (a Python loop)."""
        return self._map_elements("apply_", callable, ())

    def map_(self, tensor, callable) -> "Tensor":
        """Replace each element ``v`` by ``callable(v, w)``, ``w`` the matching element of
        ``tensor`` (broadcast), in place."""
        return self._map_elements("map_", callable, (tensor,))

    def _map_elements(self, name, fn, others):
        if self._requires_grad:
            raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                               f"var.detach().{name}() instead.")
        d = self._data
        arrays = [np.broadcast_to(o._data, d.shape) for o in others]
        kind = D.FROM_NP[d.dtype]
        cast = complex if kind.is_complex else float if kind.is_floating_point else \
            bool if d.dtype == np.bool_ else int
        for idx in np.ndindex(d.shape):
            d[idx] = cast(fn(d[idx].item(), *(a[idx].item() for a in arrays)))
        self._vc[0] += 1
        return self

    def __contains__(self, element) -> bool:
        if isinstance(element, (Tensor, numbers.Number)):
            return bool((element == self).any().item())
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed "
                           f"in a {type(element)}.")

    # -- Python protocol -------------------------------------------------------------
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with "
                               f"{'no values' if not self._data.size else 'more than one value'} "
                               f"is ambiguous")
        return bool(self._data.reshape(()))

    def _py_scalar(self, ctype=None):
        """The value of a one-element tensor for float()/int()/complex(); ``ctype`` names the
        real C type a complex value must fit (PyTorch's overflow error when it has an imaginary
        part)."""
        d = self._data
        if d.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        v = d.reshape(()).item()
        if ctype is not None and type(v) is complex:
            if v.imag:
                raise RuntimeError(f"value cannot be converted to type {ctype} without overflow")
            v = v.real
        return v

    def __float__(self) -> float:
        return float(self._py_scalar("double"))

    def __int__(self) -> int:
        return int(self._py_scalar("int64_t"))

    def __complex__(self) -> complex:
        return complex(self._py_scalar())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __repr__(self, *, tensor_contents=None) -> str:
        from ._printing import tensor_repr
        return tensor_repr(self)

    def __reduce_ex__(self, proto):
        # PyTorch pickles the whole storage under the tensor, its offset, size and stride,
        # requires_grad and the attributes set on the tensor; not its grad, history or hooks
        _warn_unpickled_hooks(self)
        root, offset, strides = _storage_layout(self._data)
        return (_rebuild_tensor, (type(self), root.tobytes(), D.FROM_NP[self._data.dtype].name,
                                  offset, tuple(self._data.shape), strides, self._requires_grad,
                                  _user_state(self)))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        if self._grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support "
                               "the deepcopy protocol at the moment.  If you were attempting to "
                               "deepcopy a module, this may be because of a torch.nn.utils."
                               "weight_norm usage, see https://github.com/pytorch/pytorch/pull/103001")
        import copy
        new = _new(type(self))
        Tensor.__init__(new)
        # tensors sharing memory share the copy of it (PyTorch copies each storage once)
        root, offset, strides = _storage_layout(self._data)
        key = ("dyngrad.storage", id(root))
        if key not in memo:
            memo[key] = root.copy()
            memo.setdefault(id(memo), []).append(root)  # kept alive while the memo is in use
        new._data = _view_of(memo[key], self._data.dtype, offset, self._data.shape, strides)
        new._requires_grad = self._requires_grad
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = self._grad.__deepcopy__(memo)
        for k, v in _user_state(self).items():
            new.__dict__[k] = copy.deepcopy(v, memo)
        return new

    def __copy__(self):
        # a new leaf over the same memory, with requires_grad and the attributes (not the grad)
        new = _new(type(self))
        Tensor.__init__(new)
        new._data = self._data.view()
        new._requires_grad = self._requires_grad
        new.__dict__.update(_user_state(self))
        return new


def _user_state(t) -> dict:
    """The attributes set on ``t`` by its user (dyngrad's own bookkeeping starts with '_')."""
    return {k: v for k, v in t.__dict__.items() if not k.startswith("_") or k == "_is_param"}


def _warn_unpickled_hooks(t) -> None:
    hooks = t._hooks if t._grad_fn is None else \
        (t._grad_fn._tensor_hooks or {}).get(t._output_nr)
    for hook in hooks or ():
        if not hasattr(hook, "__torch_unserializable__"):
            _warn.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is "
                       "expected, you can decorate the function with "
                       "@torch.utils.hooks.unserializable_hook to suppress this warning")


def _storage_root(a: np.ndarray) -> np.ndarray:
    """The array that owns the memory ``a`` looks into (``a`` itself if it owns it), also
    through the stand-ins NumPy's stride tricks (broadcast_to, as_strided) put between."""
    while True:
        b = a.base
        if not isinstance(b, np.ndarray):
            b = getattr(b, "base", None)
            if not isinstance(b, np.ndarray):
                return a
        a = b


def _extent(start: int, shape, strides) -> tuple:
    """The bytes ``[lo, hi)`` an array of ``shape`` and byte ``strides`` starting at byte
    ``start`` touches (with ``hi`` past its last element's first byte for an empty one)."""
    lo = hi = start
    if 0 not in shape:
        for n, s in zip(shape, strides):
            reach = (n - 1) * s
            lo, hi = (lo + reach, hi) if reach < 0 else (lo, hi + reach)
    return lo, hi


def _storage_layout(a: np.ndarray):
    """``(storage, offset, strides)``: a C-contiguous array holding the memory of ``a``, and
    where ``a`` starts in it and how it steps, in elements.  An array whose memory cannot be
    described so (an odd root, a misaligned reinterpretation) is its own storage, copied."""
    root = _storage_root(a)
    size = a.itemsize
    if root.flags.c_contiguous:
        start = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        lo, hi = _extent(start, a.shape, a.strides)
        if start % size == 0 and all(s % size == 0 for s in a.strides) and lo >= 0 and \
                (hi + size <= root.nbytes or (a.size == 0 and start <= root.nbytes)):
            return root, start // size, tuple(s // size for s in a.strides)
    own = np.ascontiguousarray(a)
    return own, 0, tuple(s // size for s in own.strides)


def _view_of(storage: np.ndarray, dtype, offset, shape, strides) -> np.ndarray:
    """An array of ``dtype`` over ``storage``'s memory, checked to stay inside it."""
    size = np.dtype(dtype).itemsize
    lo, hi = _extent(offset * size, shape, tuple(s * size for s in strides))
    if offset < 0 or lo < 0 or hi + (size if 0 not in shape else 0) > storage.nbytes:
        raise ValueError(f"a tensor of size {list(shape)}, stride {list(strides)} and offset "
                         f"{offset} does not fit a storage of {storage.nbytes} bytes")
    flat = storage.reshape(-1).view(np.uint8) if storage.nbytes else np.zeros(size, np.uint8)
    return np.ndarray(shape, dtype, buffer=flat, offset=offset * size,
                      strides=tuple(s * size for s in strides))


def _rebuild_tensor(cls, data, dtype_name, offset, shape, strides, requires_grad, state):
    """A tensor from its pickle (``Tensor.__reduce_ex__``): ``data`` is the bytes of its storage,
    the rest where and how the tensor lies in it.  Every argument is checked; nothing is called
    but the tensor's own construction."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"cannot rebuild a tensor as {cls!r}")
    if dtype_name not in D._NAMES or not isinstance(data, (bytes, bytearray)):
        raise TypeError("not a dyngrad tensor pickle")
    dims = (shape, strides)
    if not all(isinstance(d, tuple) and all(type(v) is int for v in d) for d in dims) or \
            len(shape) != len(strides) or min(shape, default=0) < 0 or type(offset) is not int:
        raise TypeError("not a dyngrad tensor pickle")
    storage = np.frombuffer(bytearray(data), np.uint8)
    t = _new(cls)
    Tensor.__init__(t)
    t._data = _view_of(storage, D._by_name(dtype_name).np, offset, shape, strides)
    if requires_grad:
        t.requires_grad_(True)
    if state:
        for k, v in dict(state).items():
            if isinstance(k, str):
                t.__dict__[k] = v
    return t


def _dim(dim, ndim):
    """Normalise a possibly negative dimension, with PyTorch's IndexError when out of range."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def typename(obj) -> str:
    """The type of ``obj`` as PyTorch names it (a tensor's ``type()``)."""
    if isinstance(obj, Tensor):
        return obj.type()
    return type(obj).__name__


def _views_follow(base, value):
    """PyTorch's view of a leaf requires grad exactly when its base does; a view that existed
    before its base started requiring grad has no history and sends nothing to the base (as a
    view made under no_grad)."""
    for v in LATE.live_views(base):
        # (a view whose history can no longer be rebuilt still has it to PyTorch: unchanged)
        if v._base is base and v._grad_fn is None and not v._stale_view:
            if not value and "_own_rg" in v.__dict__:
                continue  # the view was asked to require grad itself
            v._requires_grad = value
            if value and v.__dict__.pop("_moved", False):
                # its base changed in place since it was made: PyTorch regenerates its
                # grad_fn as AsStridedBackward0 on the base (or, for an output of a
                # multi-output view op, makes it unusable with its error)
                LATE.rebase_view(v, base)
            elif value:
                v._nograd_view = True



# the public names, as PyTorch's classes print as torch.Tensor, torch.Size and torch.device
Tensor.__module__ = Size.__module__ = device.__module__ = "dyngrad"
