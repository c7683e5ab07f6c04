"""Replay kernels: how a recorded op runs as NumPy on buffers.

``lower`` turns one op call into instructions.  It tries the op's candidates in order (a
ufunc writing into a preallocated buffer first, then the op's declared NumPy forward, then a
kernel written here for a hand-written op) and keeps the first whose result, run on the
capture's arrays, equals the eager result bit for bit; none does: ``NoKernel``.

Some kernels written here also give the arrays their op's backward reads (max pooling's
indices, the norms' statistics, a convolution's input columns): the backward forms in
``BACKWARD`` (keyed by node name) run the node's own array formula on those buffers, so a
replay's backward uses what the replay's forward computed.
"""
from __future__ import annotations

import inspect

import numpy as np

from .._tensor import Tensor
from . import conv_kernels
from .program import Instr, Ref

_make = Tensor._make


def _nokernel(msg):
    from .capture import NoKernel
    return NoKernel(msg)


def same(a, b) -> bool:
    """Bit-for-bit equality of two arrays (shape, dtype, values, NaNs where NaNs are)."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return a.tobytes() == np.ascontiguousarray(b).tobytes() if a.flags.c_contiguous \
            else np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    return bool(np.array_equal(a, b))


# --- helpers the generated code calls ------------------------------------------------------
def set_grad(p, g):
    """``p.grad`` becomes a new tensor on ``g`` (the first gradient of a leaf)."""
    p._grad = _make(g)


def accumulate_live(p, g):
    """Add ``g`` into the leaf's current ``.grad`` in place, as AccumulateGrad does."""
    old = p._grad
    od = old._data
    od += g
    old._vc[0] += 1


def c_order_copy(a):
    """A C-ordered copy of ``a`` (the first ``.grad`` of a leaf from a gradient in another
    layout, as AccumulateGrad makes it)."""
    return np.array(a, order="C")


def bump_grad_version(p):
    p._grad._vc[0] += 1


# --- names ------------------------------------------------------------------------------
_REFLECTED = {"__radd__": "add", "__rmul__": "mul", "__rsub__": "sub", "__rtruediv__": "div",
              "__rdiv__": "div", "__rpow__": "pow", "__rmatmul__": "matmul",
              "__rand__": "bitwise_and", "__ror__": "bitwise_or", "__rxor__": "bitwise_xor",
              "__rlshift__": "bitwise_left_shift", "__rrshift__": "bitwise_right_shift",
              "__rmod__": "remainder", "__rfloordiv__": "floor_divide"}
_DUNDER = {"__add__": "add", "__mul__": "mul", "__sub__": "sub", "__truediv__": "div",
           "__div__": "div", "__pow__": "pow", "__matmul__": "matmul", "__neg__": "neg",
           "__abs__": "abs", "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_",
           "__itruediv__": "div_", "__gt__": "gt", "__lt__": "lt", "__ge__": "ge",
           "__le__": "le", "__eq__": "eq", "__ne__": "ne", "__and__": "bitwise_and",
           "__or__": "bitwise_or", "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
           "__rshift__": "bitwise_right_shift", "__mod__": "remainder",
           "__floordiv__": "floor_divide", "__invert__": "bitwise_not",
           "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
           "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_",
           "__imod__": "remainder_", "__ifloordiv__": "floor_divide_", "__ipow__": "pow_"}
_ALIAS = {"F.relu": "relu", "F.tanh": "tanh", "F.sigmoid": "sigmoid", "true_divide": "div",
          "multiply": "mul", "subtract": "sub", "negative": "neg", "divide": "div",
          "F.log_softmax": "log_softmax", "F.softmax": "softmax", "F.nll_loss": "nll_loss",
          "swapaxes": "transpose", "swapdims": "transpose", "concat": "cat",
          "concatenate": "cat", "less": "lt", "less_equal": "le", "greater": "gt",
          "greater_equal": "ge", "not_equal": "ne", "clip": "clamp", "clip_": "clamp_"}
_UFUNC2 = {"add": np.add, "mul": np.multiply, "sub": np.subtract, "div": np.true_divide,
           "maximum": np.maximum, "minimum": np.minimum}
_CMP = {"gt": np.greater, "lt": np.less, "ge": np.greater_equal, "le": np.less_equal,
        "eq": np.equal, "ne": np.not_equal}
_UFUNC1 = {"tanh": np.tanh, "exp": np.exp, "log": np.log, "neg": np.negative, "sqrt": np.sqrt,
           "abs": np.absolute, "sin": np.sin, "cos": np.cos, "square": np.square,
           "log1p": np.log1p, "expm1": np.expm1, "reciprocal": np.reciprocal}
DATA_READS = {"item", "tolist", "numpy", "__bool__", "__float__", "__int__", "__index__",
               "__array__", "__repr__", "__str__", "__format__", "equal", "allclose",
               "is_nonzero", "__complex__"}
_INPLACE_DUNDER = {"__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                   "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__",
                   "__irshift__", "__imatmul__"}


def op_name(name: str):
    """``(op, reflected)``: the registry name of a public function or method."""
    if name in _REFLECTED:
        return _REFLECTED[name], True
    name = _DUNDER.get(name, name)
    name = _ALIAS.get(name, name)
    if name.startswith("F."):
        name = name[2:]
    return name, False


def is_inplace(name: str) -> bool:
    """Whether op ``name`` changes its first argument (``add_``, ``__iadd__``,
    ``__setitem__``)."""
    return name in _INPLACE_DUNDER or name == "__setitem__" or \
        (name.endswith("_") and not name.endswith("__"))


def snapshot_inplace(name, args, kwargs=None):
    """Copies of the tensor arguments' arrays before an in-place op (to check its kernel);
    for batch norm, ``{id(tensor): copy}`` of the running statistics it updates."""
    if name in ("F.batch_norm", "batch_norm"):
        ts = list(args[1:3]) + [(kwargs or {}).get(k) for k in ("running_mean", "running_var")]
        return {id(t): t._data.copy() for t in ts if isinstance(t, Tensor)}
    if not is_inplace(name):
        return None
    return [a._data.copy() if isinstance(a, Tensor) else None for a in args]



def prefers_inner(name, result) -> bool:
    """Whether op ``name`` is recorded as the ops it ran inside even when its own kernel
    reproduces its result: ``matmul`` with a graph, whose nodes (mm of a folded batch, bmm)
    keep the inner ops' tensors for the backward."""
    return op_name(name)[0] == "matmul" and isinstance(result, Tensor) and \
        result._grad_fn is not None


def reshaped_results(cap, result) -> list:
    """Instructions giving the tensors of ``result`` that are not buffers yet as reshaped
    views of buffers (matmul's closing ``_unsafe_view``, not recorded); NoKernel when one is
    neither."""
    out = []
    ts = _tensors(result)
    if not ts:
        raise _nokernel("no tensor result")
    for t in ts:
        if id(t._data) in cap.by_array:
            continue
        ref = _array_ref(cap, t._data)
        if ref is None or ref[1] is None:
            raise _nokernel("a result computed by code that was not captured")
        ins = Instr("reshape", np.reshape, ref, mode="view")
        ins.out = cap.new_buffer("tmp", t._data)
        out.append(ins)
    return out


def _tensors(r):
    if isinstance(r, Tensor):
        return [r]
    if isinstance(r, (tuple, list)):
        return [x for x in r if isinstance(x, Tensor)]
    return []


# --- running instructions (the check of each candidate) ---------------------------------
def _val(x, env):
    if type(x) is Ref:
        return env[x.i]
    if type(x) is tuple:
        return tuple(_val(v, env) for v in x)
    return x


# --- the lowering of one op call -------------------------------------------------------------
def lower(cap, name, args, kwargs, result, before, top, kernel=None, drawn=None):
    """The instructions of op call ``name(*args, **kwargs)`` that gave ``result``
    (``kernel``: the NumPy function taking the same arguments as arrays, when known;
    ``drawn``: for a random op, ``(the eager function, generators, their states before the
    call)``)."""
    if name in DATA_READS:
        return []
    if name == "__setitem__":
        return _setitem_lower(cap, args, kwargs, before, top)
    ts = _tensors(result)
    if not ts:
        if isinstance(result, (bool, int, float, complex)) and name not in _META:
            raise _nokernel("returns a Python number computed from tensor data")
        return []   # metadata (size, dim, dtype...): fixed by the guards
    if name in ("backward", "record"):
        raise _nokernel("not an op")
    op, reflected = op_name(name)
    if kwargs.get("inplace", True) is False:  # F.relu(x, inplace=False) is relu(x)
        kwargs = {k: v for k, v in kwargs.items() if k != "inplace"}
    elif name.startswith("F.") and args and args[-1] is False and drawn is None:
        args = _without_inplace(name, args)
    # a no-op returning an input as it is (contiguous, to the same dtype, detach's data)
    ins_arrays = {id(a._data) for a in list(args) + list(kwargs.values()) if isinstance(a, Tensor)}
    if isinstance(result, Tensor) and id(result._data) in ins_arrays and not is_inplace(name):
        if drawn is not None and rng_states(drawn[1]) != drawn[2]:
            raise _nokernel("a random op changing its input in place")
        return []   # (dropout in eval returns its input too)
    if isinstance(result, Tensor) and not is_inplace(name):
        i = cap.by_array.get(id(result._data))
        if i is not None and defined(cap, i):
            return []   # a tensor on a buffer's own array (from_numpy of a saved array)
    refs = {}

    def r(t):
        k = id(t)
        if k not in refs:
            refs[k] = cap.ref(t, top)
            if not defined(cap, refs[k].i):
                raise _nokernel("an input computed inside an op whose own kernel replaced "
                                "the ops it ran")
        return refs[k]

    if drawn is not None:
        return _random_lower(cap, name, op, drawn, args, kwargs, result, before, r)
    if op == "mul" and not reflected and len(args) == 2 and not kwargs and \
            all(isinstance(v, Tensor) for v in args):
        for one, other in (args, args[::-1]):
            if cap.by_array.get(id(one._data)) in cap.ones and \
                    other._data.shape == result._data.shape and \
                    other._data.dtype == result._data.dtype:
                cap.map_array(result._data, r(other).i)   # x * 1 is x, bit for bit
                return []
    if op == "batch_norm" and kernel is None:
        instrs = _batch_norm_lower(cap, args, kwargs, result, r, before or {}, top)
        if instrs is None:
            raise _nokernel("no kernel")
        return instrs
    candidates = []
    if kernel is not None:
        candidates = _kernel_candidates(name, kernel, args, kwargs, r, cap)
        candidates = _fast_bilinear(cap, kernel, candidates) + candidates
    elif is_inplace(name):
        candidates = _inplace_candidates(op, args, kwargs, result, r)
    else:
        special = _SPECIAL.get(op)
        if special is not None:
            candidates = special(cap, op, args, kwargs, result, r)
        else:
            if isinstance(result, Tensor):
                candidates = _ufunc_candidates(op, reflected, args, kwargs, result, r)
            c = _spec_candidate(op, reflected, args, kwargs, result, r)
            if c is not None:
                candidates.append(c)
    for instrs in candidates:
        if _check(cap, instrs, result, before, args):
            _place(cap, instrs, result)
            return instrs
    msg = "its kernel does not reproduce the eager result" if candidates else "no kernel"
    if is_inplace(name):
        # the ops an in-place op ran inside do not stand for it: its write would be lost
        if top:
            cap.fail(f"no replay kernel reproduces '{name}' ({name}: {msg})")
        elif cap.stack and cap.stack[-1].failed is None:
            cap.stack[-1].failed = f"{name}: {msg}"
    raise _nokernel(msg)


def _without_inplace(name, args):
    """``args`` of nn.functional's ``name`` without a last positional ``inplace=False``
    (``F.leaky_relu(x, 0.2, False)`` is ``leaky_relu(x, 0.2)``)."""
    from ..func._batched import orig_fn
    try:
        params = list(inspect.signature(orig_fn(name)).parameters)
    except (KeyError, TypeError, ValueError):
        return args
    if len(args) <= len(params) and params[len(args) - 1] == "inplace":
        return args[:-1]
    return args


_META = {"size", "dim", "ndimension", "numel", "nelement", "is_floating_point", "is_complex",
         "element_size", "is_contiguous", "stride", "storage_offset", "get_device",
         "is_signed", "__len__", "data_ptr", "type", "is_leaf", "requires_grad_", "__hash__"}


def _kernel_candidates(name, kernel, args, kwargs, r, cap=None):
    shapes = {}

    def conv(v, pos=None):
        if isinstance(v, Tensor):
            return r(v)
        if _is_const(v) or _is_geometry(v):
            return v
        if cap is not None and isinstance(v, np.ndarray) and pos is not None:
            ref = _array_ref(cap, v)
            if ref is not None:
                if ref[1] is not None:
                    shapes[pos] = ref[1]
                return ref[0]
            if pos in _recomputed(kernel):
                return None
        if pos is not None and pos in _unused(kernel):
            return None
        if pos == 1 and _reads_saved(kernel) and all(
                _is_const(x) or (type(x) is slice and _basic_index(x)) for x in v._saved[:3]):
            return _NodeOnArrays(tuple(v._saved[:3]), ())   # the select's shape, dim, index
        if cap is not None and type(v) is tuple and pos is not None:   # an index of arrays
            out = []
            for x in v:
                ref = _array_ref(cap, x) if isinstance(x, np.ndarray) else None
                if ref is not None and ref[1] is None:
                    out.append(ref[0])
                elif _is_const(x) or x is Ellipsis or (type(x) is slice and _basic_index(x)):
                    out.append(x)
                else:
                    raise _nokernel(f"an argument of type {type(x).__name__} in a tuple")
            return tuple(out)
        raise _nokernel(f"an argument of type {type(v).__name__}")
    a2 = tuple(conv(a, i) for i, a in enumerate(args))
    k2 = {k: conv(v) for k, v in kwargs.items()}
    if shapes:
        kernel = _reshaping(kernel, shapes)
    return [[Instr(name, kernel, a2, k2, mode="new")]]


def _recomputed(kernel):
    """Positions of ``kernel``'s array arguments that only cache what it computes itself when
    given None (a convolution's im2col columns of the forward)."""
    from ..ops import conv
    return (4,) if kernel is conv._bilinear_np else ()


def _reads_saved(kernel) -> bool:
    """Whether ``kernel`` takes a node only to read its saved constants."""
    from ..ops import indexing
    return kernel is indexing._view_grad_np


def _unused(kernel):
    """Positions of arguments ``kernel`` takes but does not read (its Tensor twin's node class
    and saved values)."""
    from ..ops import shape
    return (3, 4) if kernel is shape._place_np else ()


def _is_geometry(v) -> bool:
    """A convolution's geometry (stride, padding, sizes: fixed by the guarded shapes)."""
    from ..ops.conv import _P
    return type(v) is _P and all(_is_const(getattr(v, k)) for k in _P.__slots__)


def _array_ref(cap, v):
    """``(Ref, shape or None)`` of an array argument that is a buffer, or a reshaped view of
    one (the indices a backward formula reshapes at array level)."""
    i = cap.by_array.get(id(v))
    if i is not None and defined(cap, i):
        return Ref(i), None
    b = v.base
    if b is None or not v.flags.c_contiguous:
        return None
    for i in range(len(cap.arrays) - 1, -1, -1):   # a buffer on the same memory, reshaped
        a = cap.arrays[i]
        if (a is b or a.base is b) and a.size == v.size and a.dtype == v.dtype and \
                a.flags.c_contiguous and np.shares_memory(a, v) and \
                a.__array_interface__["data"][0] == v.__array_interface__["data"][0] and \
                cap.by_array.get(id(a)) == i and defined(cap, i):
            return Ref(i), tuple(v.shape)
    return None


def _reshaping(kernel, shapes):
    """``kernel`` with the positional arguments in ``shapes`` reshaped first."""
    def k(*args, **kwargs):
        args = [a.reshape(shapes[i]) if i in shapes else a for i, a in enumerate(args)]
        return kernel(*args, **kwargs)
    k.__name__ = getattr(kernel, "__name__", "kernel")
    return k


def _random_names():
    from ..func._batched import RANDOM
    return RANDOM


# --- random ops: new numbers at every replay, from the generator eager draws from ----------
def is_random(name: str) -> bool:
    """Whether public op ``name`` draws random numbers (``randn``, ``F.dropout``,
    ``normal_``...)."""
    names = _random_names()
    return name in names or op_name(name)[0] in names


def generators_of(args, kwargs) -> list:
    """The generators a random op may draw from: the default one and those passed to it."""
    from .._random import Generator, default_generator
    gens = [default_generator]
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, Generator) and all(v is not g for g in gens):
            gens.append(v)
    return gens


def rng_states(gens) -> list:
    """The states of the bit generators behind ``gens`` (new dicts)."""
    return [g._rng.bit_generator.state for g in gens]


def _set_rng_states(gens, states):
    for g, st in zip(gens, states):
        g._rng.bit_generator.state = st


_AT = object()   # the place of a tensor among a rerun op's arguments
_DROPOUT_ND = {"F.dropout": 0, "F.dropout1d": 1, "F.dropout2d": 2, "F.dropout3d": 3}


def _random_lower(cap, name, op, drawn, args, kwargs, result, before, r):
    """A random op: instructions drawing new numbers at every replay, by eager's own code,
    from the generators eager draws from (the default one, or the ``generator=`` given), in
    the program's order.  Checked by drawing again from the generators' states before the
    eager call: the same numbers, and the generators left in eager's state after it."""
    fn, gens, st0 = drawn
    if kwargs.get("requires_grad"):
        raise _nokernel("a random tensor that requires grad made inside the function (a leaf "
                        "the replay would not keep)")
    st1 = rng_states(gens)
    if name in _DROPOUT_ND:
        return _dropout_lower(cap, name, args, kwargs, result, r, gens, st0, st1)
    instrs = [_rerun_instr(cap, op, name, fn, args, kwargs, r)]
    cap.internal += 1      # (eager's function runs again: what it calls is not recorded)
    try:
        _set_rng_states(gens, st0)
        ok = _check(cap, instrs, result, before, args) and rng_states(gens) == st1
    finally:
        _set_rng_states(gens, st1)
        cap.internal -= 1
    if not ok:
        raise _nokernel("drawing again from the same generator state does not give eager's "
                        "numbers")
    _place(cap, instrs, result)
    producers = cap.__dict__.get("_producers", {})
    for o in _outs(instrs[0]):
        producers.pop(o, None)   # (never run again at capture: it would draw)
    return instrs


def _random_const(v) -> bool:
    """A constant argument of a random op (numbers, sizes, dtypes, devices, generators)."""
    from .. import _dtype as D
    from .._random import Generator
    from .._tensor import device
    return _is_const(v) or isinstance(v, (Generator, D.dtype, device, np.dtype))


def _rerun_instr(cap, op, name, fn, args, kwargs, r):
    """The instruction running random op ``fn`` (eager's function) at replay on the buffers
    of its tensor arguments, with the other arguments as given."""
    refs = []

    def conv(v):
        if isinstance(v, Tensor):
            refs.append(r(v))
            return _AT
        if not _random_const(v):
            raise _nokernel(f"an argument of type {type(v).__name__}")
        return v
    a2 = tuple(conv(v) for v in args)
    k2 = {k: conv(v) for k, v in kwargs.items()}
    inplace = is_inplace(name)
    if inplace and (not refs or a2[0] is not _AT or
                    (args[0]._requires_grad and args[0]._grad_fn is None)):
        raise _nokernel("an in-place random fill of a leaf that requires grad")

    def rerun(*arrays, out=None):
        it = iter(arrays if out is None else (out,) + arrays)
        a = [_make(next(it)) if v is _AT else v for v in a2]
        k = {key: (_make(next(it)) if v is _AT else v) for key, v in k2.items()}
        r = fn(*a, **k)
        return None if inplace else r._data
    rerun.__name__ = op
    if inplace:   # (the filled tensor as ``out``: the replay bumps its version)
        return Instr(op, rerun, tuple(refs[1:]), {"out": refs[0]}, mode="effect",
                     note="draws new numbers")
    return Instr(op, rerun, tuple(refs), mode="new", note="draws new numbers")


def _dropout_sig(input, p=0.5, training=True, inplace=False):
    pass


def _dropout_lower(cap, name, args, kwargs, result, r, gens, st0, st1):
    """F.dropout (dropout1d/2d/3d) in training: the mask drawn by eager's own function
    (``_dropout_mask``), then the product, whose backward reads the replay's mask."""
    from ..nn import functional as F
    try:
        ba = inspect.signature(_dropout_sig).bind(*args, **kwargs)
    except TypeError:
        raise _nokernel("arguments") from None
    ba.apply_defaults()
    x, p, inplace = ba.arguments["input"], ba.arguments["p"], ba.arguments["inplace"]
    if not isinstance(x, Tensor) or x._data.dtype not in (np.float32, np.float64) or \
            inplace is not False or type(p) not in (int, float) or \
            not isinstance(result, Tensor) or result is x:
        raise _nokernel("dropout in place, or of a tensor that is not float32/float64")
    xd = x._data
    nd = _DROPOUT_ND[name]
    if nd == 0:
        kernel, margs = F._dropout_mask, (tuple(xd.shape), p, xd.dtype)
    else:
        kernel, margs = F._feature_dropout_mask, (tuple(xd.shape), nd, p, xd.dtype)
    xr = r(x)
    _set_rng_states(gens, st0)
    try:
        mask = kernel(*margs)
        ok = rng_states(gens) == st1
    finally:
        _set_rng_states(gens, st1)
    out = np.empty_like(result._data)
    with np.errstate(all="ignore"):
        np.multiply(cap.arrays[xr.i], mask, out=out)
    if not ok or not same(out, result._data):
        raise _nokernel("drawing again from the same generator state does not give eager's "
                        "mask")
    # eager's mask, the product's saved operand (its backward reads it): the mask's buffer
    node = result._grad_fn
    m = None
    if node is not None and type(node).__name__ == "MulBackward0":
        sv = node._saved[type(node)._named_saved["other"][0]]
        m = sv.get(node, False) if sv is not None else None
        m = m._data if isinstance(m, Tensor) else m
    mk = Instr("dropout_mask", kernel, margs, mode="new", note="draws a new mask")
    mk.out = cap.new_buffer("tmp", m if m is not None and same(m, mask) else mask)
    mul = Instr("mul", np.multiply, (xr, Ref(mk.out)), mode="out")
    mul.out = cap.new_buffer("tmp", result._data, "", np.empty_like(result._data))
    return [mk, mul]


def _scalar_for(x, dtype):
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)) and dtype.kind == "f":
        return dtype.type(x)
    return None


def _ufunc_candidates(op, reflected, args, kwargs, result, r):
    rd = result._data
    out = []
    if op in _UFUNC1 and len(args) == 1 and not kwargs and isinstance(args[0], Tensor):
        a = args[0]
        if a._data.dtype == rd.dtype:
            out.append([Instr(op, _UFUNC1[op], (r(a),), mode="out")])
    elif op in _UFUNC2 and len(args) == 2 and not kwargs:
        a, b = args
        if reflected:
            a, b = b, a
        xs = []
        for v in (a, b):
            if isinstance(v, Tensor):
                if v._data.dtype != rd.dtype:
                    return out
                xs.append(r(v))
            else:
                s = _scalar_for(v, rd.dtype)
                if s is None:
                    return out
                xs.append(s)
        out.append([Instr(op, _UFUNC2[op], tuple(xs), mode="out")])
    elif op in _CMP and len(args) == 2 and not kwargs and isinstance(args[0], Tensor):
        a, b = args
        dt = a._data.dtype
        if isinstance(b, Tensor):
            if b._data.dtype == dt:
                out.append([Instr(op, _CMP[op], (r(a), r(b)), mode="out")])
        else:
            s = _scalar_for(b, dt)
            if s is not None:
                out.append([Instr(op, _CMP[op], (r(a), s), mode="out")])
    elif op == "relu" and len(args) == 1 and not kwargs:
        out.append([Instr(op, np.maximum, (r(args[0]), rd.dtype.type(0)), mode="out")])
    elif op == "pow" and len(args) == 2 and not kwargs and isinstance(args[0], Tensor) \
            and not reflected and type(args[1]) in (int, float) and args[1] == 2:
        out.append([Instr(op, np.square, (r(args[0]),), mode="out")])
        out.append([Instr(op, np.multiply, (r(args[0]), r(args[0])), mode="out")])
    elif op == "pow" and len(args) == 2 and not kwargs and isinstance(args[0], Tensor) \
            and not reflected and _scalar_for(args[1], rd.dtype) is not None:
        out.append([Instr(op, np.power, (r(args[0]), _scalar_for(args[1], rd.dtype)),
                          mode="out")])
    elif op == "rsub" and len(args) == 2 and not kwargs and isinstance(args[0], Tensor):
        s = _scalar_for(args[1], rd.dtype)
        if s is not None and args[0]._data.dtype == rd.dtype:
            out.append([Instr(op, np.subtract, (s, r(args[0])), mode="out")])
    elif op in ("mm", "matmul") and len(args) == 2 and not kwargs and \
            all(isinstance(v, Tensor) and v._data.dtype == rd.dtype for v in args) and \
            rd.dtype.kind == "f":
        a, b = args if not reflected else args[::-1]
        out.append([Instr(op, np.matmul, (r(a), r(b)), mode="out")])
    elif op == "sum" and isinstance(args[0], Tensor) and args[0]._data.dtype == rd.dtype \
            and rd.dtype.kind == "f" and rd.dtype.itemsize >= 4:
        try:
            ba = inspect.signature(_sum_sig).bind(*args, **kwargs)
        except TypeError:
            return out
        dim, keep, dt = (ba.arguments.get(k, dflt) for k, dflt in
                         (("dim", None), ("keepdim", False), ("dtype", None)))
        if dt is not None or type(keep) is not bool:
            return out
        if dim is None and not keep:
            out.append([Instr(op, np.add.reduce, (r(args[0]), None), mode="out")])
        elif dim is not None:
            dims = dim if isinstance(dim, (tuple, list)) else (dim,)
            nd = args[0]._data.ndim
            if all(type(k) is int for k in dims) and nd:
                dims = tuple(sorted(k % nd for k in dims))
                out.append([Instr(op, np.add.reduce, (r(args[0]), dims), {"keepdims": keep},
                                  mode="out")])
    elif op == "addmm" and len(args) == 3 and not kwargs and \
            all(isinstance(v, Tensor) and v._data.dtype == rd.dtype for v in args) and \
            rd.dtype.kind == "f" and rd.dtype.itemsize >= 4:
        out.append([Instr(op, addmm_out, (r(args[0]), r(args[1]), r(args[2])), mode="out")])
    return out


def _sum_sig(input, dim=None, keepdim=False, *, dtype=None):
    pass


def addmm_out(c, a, b, out):
    """``a @ b + c`` into ``out``: addmm's forward for float matrices."""
    np.matmul(a, b, out=out)
    np.add(out, c, out=out)


addmm_out.inline = ("np.matmul({1}, {2}, out={o})", "np.add({o}, {0}, out={o})")


_SIG_CACHE: dict = {}


def _spec_candidate(op, reflected, args, kwargs, result, r):
    """The declared op's own NumPy forward on the arrays."""
    from ..ops import OPS
    from ..ops._spec import _signatures
    info = OPS.get(op)
    if info is None and "." in op:   # linalg.cross, special.xlogy: the declared op's own name
        head, _, base = op.rpartition(".")
        info = OPS.get(f"{head.replace('.', '_')}_{base}") or \
            OPS.get(f"_{head.replace('.', '_')}_{base}")
    if info is None:   # linalg.vector_norm as ops.reduction holds it: vector_norm
        info = OPS.get(f"_linalg_{op}")
    spec = info.get("spec") if info else None
    if spec is None:
        spec = _activation_spec(op)
    if spec is None:
        return None
    if spec.outputs and (not isinstance(result, tuple) or len(result) != len(spec.outputs) or
                         not all(isinstance(t, Tensor) for t in result)):
        return None
    # views or pieces of the input (unbind, split): one kernel giving them all
    pieces = not spec.outputs and type(result) in (tuple, list) and len(result) > 0 and \
        all(isinstance(t, Tensor) for t in result)
    listed = spec.inputs == ("tensors",)
    if reflected:
        args = tuple(args)[::-1]
    kw = dict(kwargs)
    if "input" in kw:
        kw["self"] = kw.pop("input")
    sig = _signatures(spec.forward)[0]
    try:
        ba = sig.bind(*args, **kw)
    except TypeError:
        return None
    ba.apply_defaults()
    a2 = []
    k2 = {}
    for pname, p in sig.parameters.items():
        v = ba.arguments.get(pname, inspect.Parameter.empty)
        if v is inspect.Parameter.empty:
            continue
        if listed and pname == "tensors":
            if not isinstance(v, (list, tuple)) or not all(isinstance(t, Tensor) for t in v):
                return None
            v = tuple(r(t) for t in v)
        elif pname in spec.inputs:
            if isinstance(v, Tensor):
                v = r(v)
            elif v is None and pname in _OPTIONAL_INPUTS:
                pass
            else:   # a number where a tensor goes: a 0-d array of the result's dtype
                v = _wrapped_number(v, result)
                if v is None:
                    return None
        elif not _is_const(v):
            return None
        if p.kind == inspect.Parameter.VAR_POSITIONAL:
            a2.extend(v)
        elif p.kind == inspect.Parameter.KEYWORD_ONLY:
            k2[pname] = v
        elif p.kind == inspect.Parameter.VAR_KEYWORD:
            k2.update(v)
        else:
            a2.append(v)
    if not isinstance(result, Tensor) and not spec.outputs and not pieces:
        return None
    first = result if isinstance(result, Tensor) else result[0]
    fdts = {t._data.dtype for t in ba.arguments.values()
            if isinstance(t, Tensor) and t._data.dtype.kind in "fc"}
    if len(fdts) > 1 or (fdts and first._data.dtype.kind in "fc" and
                         first._data.dtype not in fdts):
        return None   # (promotion happens before the forward)
    fn = spec.forward
    if pieces:
        fn = _pieces_kernel(fn, len(result))
    elif isinstance(result, Tensor) and result._data.ndim == 0:
        fn = _zero_d(fn)
    return [Instr(op, fn, tuple(a2), k2, mode="new")]


def _zero_d(forward):
    """A forward whose 0-d result may be a NumPy scalar, giving the 0-d array eager's tensor
    holds."""
    def zero_d(*args, **kwargs):
        r = forward(*args, **kwargs)   # (a view's forward: the array and its overload)
        return (np.asarray(r[0]),) + r[1:] if type(r) is tuple else np.asarray(r)
    zero_d.__name__ = getattr(forward, "__name__", "zero_d")
    return zero_d


def _pieces_kernel(forward, n):
    """A forward giving a list of arrays (``unbind``'s views, ``split``'s pieces) as the
    tuple the replay unpacks into ``n`` buffers (one piece: the array alone)."""
    def arrays(*args, **kwargs):
        r = forward(*args, **kwargs)   # (split by sizes: the list and its node's overload)
        return r[0] if type(r) is tuple and r and type(r[0]) is list else r
    if n == 1:
        def pieces(*args, **kwargs):
            (a,) = arrays(*args, **kwargs)
            return a
    else:
        def pieces(*args, **kwargs):
            return tuple(arrays(*args, **kwargs))
    pieces.__name__ = getattr(forward, "__name__", "pieces")
    return pieces


_OPTIONAL_INPUTS = frozenset({"bias"})   # tensor inputs a declared forward takes as None


def _activation_spec(op):
    """The declared op behind an activation of nn.functional that is not a public op itself
    (``F.leaky_relu`` runs ``ops.activation.leaky_relu``)."""
    from ..ops import activation as A
    from ..ops._spec import OpSpec
    spec = A.__dict__.get(op)
    return spec if isinstance(spec, OpSpec) else None


def _wrapped_number(v, result):
    """A Python number as the 0-d array of the result's dtype that eager computes with (the
    kernel check says whether that reproduces eager)."""
    first = result if isinstance(result, Tensor) else result[0]
    dt = first._data.dtype
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if dt.kind in "fc" or (type(v) is int and dt.kind in "iu"):
        try:
            return np.asarray(v, dt)
        except (OverflowError, ValueError):
            return None
    return None


def _is_const(v) -> bool:
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (tuple, list)):
        return all(_is_const(x) for x in v)
    return False


def _inplace_candidates(op, args, kwargs, result, r):
    base = op[:-1] if op.endswith("_") else op
    t = args[0]
    if not isinstance(t, Tensor) or (t._requires_grad and t._grad_fn is None) or result is not t:
        return []
    d = t._data
    if base in _UFUNC2 and len(args) == 2 and not kwargs:
        o = args[1]
        if isinstance(o, Tensor):
            if o._data.dtype != d.dtype:
                return []
            x = r(o)
        else:
            x = _scalar_for(o, d.dtype)
            if x is None:
                return []
        return [[Instr(op, _UFUNC2[base], (r(t), x), {"out": r(t)}, mode="effect")]]
    if base in _UFUNC1 and len(args) == 1 and not kwargs:
        return [[Instr(op, _UFUNC1[base], (r(t),), {"out": r(t)}, mode="effect")]]
    if op == "zero_" and len(args) == 1 and not kwargs:
        return [[Instr(op, np.copyto, (r(t), d.dtype.type(0)), mode="effect")]]
    c = _spec_candidate(base, False, args, kwargs, result, r)
    if c is not None:   # the out-of-place forward, written into the tensor
        fwd = c[0]
        return [[Instr(op, _into(fwd.fn), (r(t),) + fwd.args, fwd.kwargs, mode="effect")]]
    return []


def _into(fn):
    def into(dst, *args, **kwargs):
        dst[...] = fn(*args, **kwargs)
    into.__name__ = f"{getattr(fn, '__name__', 'op')}_into"
    return into


def _check(cap, instrs, result, before, args) -> bool:
    """Run ``instrs`` on the capture's arrays and compare with the eager result."""
    env = {}
    need = set()
    for ins in instrs:
        for a in list(ins.args) + list(ins.kwargs.values()):
            for v in (a if type(a) is tuple else (a,)):
                if type(v) is Ref:
                    need.add(v.i)
    for i in need:
        env[i] = cap.arrays[i]
    if before is not None:  # in place: run on copies of the inputs as they were
        for a, b in zip(args, before):
            if isinstance(a, Tensor) and b is not None:
                i = cap.by_array.get(id(a._data))
                if i is not None:
                    env[i] = b.copy()
    outs = _tensors(result)
    try:
        with np.errstate(all="ignore"):
            for ins in instrs:
                if ins.mode == "out":
                    ins.out = -1 - len(env)
                    buf = np.empty_like(outs[0]._data) if ins is instrs[-1] else None
                    if buf is None:
                        return False
                    args_ = [_val(a, env) for a in ins.args]
                    ins.fn(*args_, out=buf, **{k: _val(v, env) for k, v in ins.kwargs.items()})
                    env[ins.out] = buf
                    last = buf
                elif ins.mode == "effect":
                    ins.fn(*[_val(a, env) for a in ins.args],
                           **{k: _val(v, env) for k, v in ins.kwargs.items()})
                    last = None
                else:
                    last = ins.fn(*[_val(a, env) for a in ins.args],
                                  **{k: _val(v, env) for k, v in ins.kwargs.items()})
                    ins.value = last
                    if type(last) is tuple and len(outs) == 1:
                        last = last[0]
                    ins.out = -1 - len(env)
                    env[ins.out] = last
    except Exception:
        return False
    if before is not None:
        i = cap.by_array.get(id(args[0]._data))
        return i is not None and same(env[i], args[0]._data)
    ins = instrs[-1]
    if len(outs) > 1 and ins.mode == "new" and type(ins.value) is tuple and \
            len(ins.value) == len(outs) == len(result):   # several results (values, indices)
        return all(isinstance(v, np.ndarray) and same(v, t._data)
                   for v, t in zip(ins.value, outs))
    if len(outs) != 1 or not isinstance(last, np.ndarray):
        return False
    if not same(last, outs[0]._data):
        return False
    if ins.mode == "new" and type(ins.value) is not tuple:
        if any(np.shares_memory(last, cap.arrays[a.i]) for a in ins.args if type(a) is Ref):
            ins.mode = "view"
    return True


def _place(cap, instrs, result):
    """Give the instructions' results their buffers and map the eager result to them."""
    outs = _tensors(result)
    ins = instrs[-1]
    if ins.mode == "effect":
        return
    d = outs[0]._data
    if ins.mode == "out":
        pre = np.empty_like(d)
        ins.out = cap.new_buffer("tmp", d, "", pre)
        cap.__dict__.setdefault("_producers", {})[ins.out] = ins
    elif type(getattr(ins, "value", None)) is tuple:  # several arrays: the result first
        first = cap.new_buffer("tmp", d)
        if len(outs) == len(ins.value) > 1:   # every result is a tensor the program gives
            ins.out = (first,) + tuple(cap.new_buffer("tmp", t._data) for t in outs[1:])
        else:
            ins.out = (first,) + tuple(cap.new_buffer("tmp", np.asarray(v), map_id=False)
                                      for v in ins.value[1:])
        aux = getattr(ins, "aux", None)
        if aux is not None and aux[0] is not None:
            cap.nll_by_node[id(aux[0])] = (ins, ins.out[1:])
        for arr, k in getattr(ins, "alias", ()):   # eager's own array of that result
            if same(arr, cap.arrays[ins.out[k]]):
                cap.map_array(arr, ins.out[k])
    else:
        ins.out = cap.new_buffer("tmp", d)
        cap.__dict__.setdefault("_producers", {})[ins.out] = ins
        if ins.mode == "view" and any(type(a) is Ref and a.i in cap.ones for a in ins.args):
            cap.ones.add(ins.out)   # a view of ones is ones


# --- ops written here: the loss functions whose eager code is not one declared op ---------
def _nll_loss_np(x, t, ignore_index, reduction):
    """F.nll_loss of class indices without class weights: the declared op's forward
    (``ops.losses``), ``(loss, total weight)``."""
    from ..ops.losses import _nll_forward
    return _nll_forward(x, t, None, reduction, ignore_index)


def _nll_lines(ins, em):
    """The mean over (N, C) inputs with every target in ``[0, C)`` and an ``ignore_index``
    outside it (so no target is ignored: the total weight is N): one reduction of the targets
    seen as unsigned (a negative one is then out of range too) decides it, and the loss is
    ``_nll_forward``'s ``-picked``, sum and division; any other call runs the kernel (which
    raises eager's error for a target out of range).  None (always the kernel) when the
    shapes, dtypes or ``ignore_index`` do not allow it."""
    x, t, ignore_index, red = ins.args
    if type(x) is not Ref or type(t) is not Ref or type(ins.out) is not tuple or red != 1 \
            or type(ignore_index) is not int:
        return None
    bx, bt = em.program.buffers[x.i], em.program.buffers[t.i]
    dt, tdt = np.dtype(bx.dtype), np.dtype(bt.dtype)
    if len(bx.shape) != 2 or dt not in (np.dtype(np.float32), np.dtype(np.float64)) or \
            tdt.kind != "i" or tuple(bt.shape) != (bx.shape[0],) or not bx.shape[0]:
        return None
    n, c = bx.shape
    if 0 <= ignore_index < c:
        return None
    rows = em.const(np.arange(n), "R")
    total = em.const(np.asarray(n, dt), "R")
    lo, tot = ins.out
    em.nll_total[tot] = total      # (the backward's lines test for it)
    fn = em.const(ins.fn, "f")
    ind = "        "
    return [f"{ind}if np.maximum.reduce(b{t.i}.view({em.const(np.dtype(f'u{tdt.itemsize}'), 'D')}))"
            f" < {c}:",
            f"{ind}    b{tot} = {total}",
            f"{ind}    b{lo} = np.asarray((-b{x.i}[{rows}, b{t.i}]).sum() / {total}, "
            f"{em.const(dt, 'D')})",
            f"{ind}else:",
            f"{ind}    b{lo}, b{tot} = {fn}(b{x.i}, b{t.i}, {ignore_index!r}, {red!r})"]


_nll_loss_np.codegen = _nll_lines


def _nll_lower(cap, op, args, kwargs, result, r):
    from ..nn.functional import _reduction_enum
    sig = inspect.signature(_nll_sig)
    try:
        ba = sig.bind(*args, **kwargs)
    except TypeError:
        return []
    ba.apply_defaults()
    a = ba.arguments
    x, t = a["input"], a["target"]
    if a["weight"] is not None or not isinstance(x, Tensor) or not isinstance(t, Tensor):
        return []
    if x._data.dtype.kind != "f" or x._data.ndim not in (1, 2):
        return []
    from ..ops.losses import REDUCTIONS
    red = REDUCTIONS[_reduction_enum(a["reduction"], a["size_average"], a["reduce"])]
    node = result._grad_fn
    ins = Instr("nll_loss", _nll_loss_np, (r(x), r(t), a["ignore_index"], red), mode="new")
    ins.aux = (node, x._data.shape, red, x._data.dtype)
    return [[ins]]


def _nll_sig(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    pass


def _log_softmax_lower(cap, op, args, kwargs, result, r):
    from ..ops import OPS
    from ..ops.activation import _dim_arg
    try:
        ba = inspect.signature(_softmax_sig).bind(*args, **kwargs)
    except TypeError:
        return []
    ba.apply_defaults()
    x, dim, dtype = ba.arguments["input"], ba.arguments["dim"], ba.arguments["dtype"]
    if dtype is not None or not isinstance(x, Tensor) or isinstance(dim, Tensor):
        return []
    if dim is None:
        return []
    nd = x._data.ndim
    k = dim % nd if nd else 0
    del _dim_arg
    fwd = _LOG_SOFTMAX.get(op)
    if fwd is None:
        fwd = _LOG_SOFTMAX[op] = _softmax_kernel(OPS["_" + op]["spec"].forward, op)
    return [[Instr(op, fwd, (r(x), k, False), mode="new")]]


_LOG_SOFTMAX: dict = {}


def _softmax_kernel(forward, op):
    """The declared op's NumPy forward as the replay's kernel; for ``log_softmax`` over the
    last axis of a float32/float64 input its replay lines are the forward's own ufuncs and
    reductions, in its order, into arrays made once."""
    def kernel(x, dim, half_to_float):
        return forward(x, dim, half_to_float)
    kernel.__name__ = kernel.__qualname__ = op
    if op == "log_softmax":
        kernel.codegen = _log_softmax_lines
    return kernel


def _log_softmax_lines(ins, em):
    """``s = x - max(x)``, ``s - log(sum(exp(s)))`` along the last axis (``_log_softmax_np``)
    with each step's result in a buffer made once; None (the plain call) for another axis,
    dtype, an empty input or one that is not C-contiguous."""
    x, k, _ = ins.args
    if type(x) is not Ref or type(ins.out) is not int:
        return None
    b = em.program.buffers[x.i]
    shape, dt = tuple(b.shape), np.dtype(b.dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)) or not shape or \
            k != len(shape) - 1 or 0 in shape or \
            tuple(em.program.buffers[ins.out].shape) != shape or \
            not em.arrays[x.i].flags.c_contiguous:   # (a strided input sums in another order)
        return None
    red = shape[:-1] + (1,)
    m, se = em.scratch(red, dt), em.scratch(red, dt)
    s, e = em.scratch(shape, dt), em.scratch(shape, dt)
    o = em.out_buffer(ins.out)
    ind = "        "
    return [f"{ind}np.maximum.reduce(b{x.i}, {k}, None, {m}, True)",
            f"{ind}np.subtract(b{x.i}, {m}, out={s})",
            f"{ind}np.exp({s}, out={e})",
            f"{ind}np.add.reduce({e}, {k}, None, {se}, True)",
            f"{ind}np.log({se}, out={se})",
            f"{ind}np.subtract({s}, {se}, out={o})"]


def _softmax_sig(input, dim=None, _stacklevel=3, dtype=None):
    pass


def _getitem_lower(cap, op, args, kwargs, result, r):
    """Basic indexing (ints, slices, None, Ellipsis): a view of the array; with integer or
    bool tensors among the indices: NumPy's advanced indexing with the tensors' arrays."""
    if len(args) != 2 or kwargs or not isinstance(args[0], Tensor):
        return []
    if _basic_index(args[1]):
        return [[Instr("getitem", _getitem, (r(args[0]), args[1]), mode="new")]]
    idx = args[1] if type(args[1]) is tuple else (args[1],)
    template, refs = [], []
    for i in idx:
        if isinstance(i, Tensor) and i._data.dtype.kind in "iub":
            template.append(_TENSOR_AT)
            refs.append(r(i))
        elif _basic_index((i,)) or (type(i) is list and _is_const(i)):
            template.append(i)
        else:
            return []
    return [[Instr("getitem", _getitem_adv, (r(args[0]), tuple(template)) + tuple(refs),
                   {"one": type(args[1]) is not tuple}, mode="new")]]


_TENSOR_AT = "<tensor>"


def _getitem_adv(a, template, *arrays, one=False):
    """``a[index]``, the index rebuilt from ``template`` with ``arrays`` in the places of its
    tensors."""
    it = iter(arrays)
    idx = tuple(next(it) if type(v) is str else v for v in template)
    return a[idx[0] if one else idx]


def _setitem_lower(cap, args, kwargs, before, top):
    """``t[idx] = v`` with a basic index on a tensor that does not require grad: the same
    assignment on its buffer."""
    if len(args) != 3 or kwargs or not isinstance(args[0], Tensor) or args[0]._requires_grad:
        raise _nokernel("an assignment into a tensor that requires grad")
    t, idx, v = args
    if not _basic_index(idx):
        raise _nokernel("an assignment with tensor indices")
    if isinstance(v, Tensor):
        if v._data.dtype != t._data.dtype:
            raise _nokernel("an assignment of another dtype")
        val = cap.ref(v, top)
    elif isinstance(v, (int, float)) and not isinstance(v, bool) and t._data.dtype.kind == "f":
        val = t._data.dtype.type(v)
    else:
        raise _nokernel("an assignment of a value of another type")
    instrs = [Instr("setitem", _setitem, (cap.ref(t, top), idx, val), mode="effect")]
    if not _check(cap, instrs, t, before, args):
        raise _nokernel("its kernel does not reproduce the eager result")
    return instrs


def _basic_index(idx) -> bool:
    idx = idx if type(idx) is tuple else (idx,)
    return all(i is None or i is Ellipsis or type(i) is int or
               (type(i) is slice and all(v is None or type(v) is int
                                         for v in (i.start, i.stop, i.step))) for i in idx)


def _setitem(a, idx, v):
    a[idx] = v


def _getitem(a, idx):
    return a[idx]


def _factory_lower(cap, op, args, kwargs, result, r):
    """zeros, ones, full and their _like forms: a new array of the result's (guarded)
    shape and dtype."""
    if kwargs.get("requires_grad") or (op.endswith("_like") and args and
                                       isinstance(args[0], Tensor) and False):
        return []
    d = result._data
    fill = {"zeros": 0, "zeros_like": 0, "ones": 1, "ones_like": 1}.get(op)
    if fill is None:
        v = args[1] if len(args) > 1 else kwargs.get("fill_value")
        if not isinstance(v, (int, float, bool)):
            return []
        fill = v
    return [[Instr(op, np.full, (tuple(d.shape), d.dtype.type(fill)), {"dtype": d.dtype},
                   mode="new")]]


def _gelu_lower(cap, op, args, kwargs, result, r):
    """F.gelu: the declared gelu's NumPy forward."""
    from ..ops import activation as A
    try:
        ba = inspect.signature(_gelu_sig).bind(*args, **kwargs)
    except TypeError:
        return []
    x, approx = ba.arguments["input"], ba.arguments.get("approximate", "none")
    if not isinstance(x, Tensor) or approx not in ("none", "tanh"):
        return []
    return [[Instr("gelu", A.gelu.forward, (r(x), approx), mode="new")]]


def _gelu_sig(input, approximate="none"):
    pass


def _unweighted_loss(name: str, sig, extra: tuple = ()):
    """The lowering of loss ``name`` (``F.<name>``, of signature ``sig``) without weights, of
    two tensors of one dtype and shape: the declared loss's forward, with ``extra`` arguments
    before the reduction."""
    def lower(cap, op, args, kwargs, result, r):
        from ..ops import losses
        from ..nn.functional import _reduction_enum, _REDUCTIONS
        try:
            ba = inspect.signature(sig).bind(*args, **kwargs)
        except TypeError:
            return []
        ba.apply_defaults()
        a = ba.arguments
        x, t = a["input"], a["target"]
        if a["weight"] is not None or not isinstance(x, Tensor) or \
                not isinstance(t, Tensor) or x._data.shape != t._data.shape or \
                x._data.dtype != t._data.dtype:
            return []
        red = _REDUCTIONS[_reduction_enum(a["reduction"], a["size_average"], a["reduce"])]
        return [[Instr(name, getattr(losses, name).forward, (r(x), r(t), *extra, red),
                       mode="new")]]
    return lower


def _mse_sig(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    pass


def _bce_sig(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    pass


def _max_pool2d_np(x, k, s, p, d, ceil_mode):
    """F.max_pool2d's window maxima and their flat indices, as its eager code finds them."""
    from ..ops import pool
    x4 = x if x.ndim == 4 else x[None]
    idx, _, vals = pool.max_pool2d_indices(x4, k, s, p, d, ceil_mode)
    if x.ndim == 3:
        idx, vals = idx[0], vals[0]
    return vals, idx


def _max_pool2d_lower(cap, op, args, kwargs, result, r):
    from ..nn.functional import _pool_args
    try:
        ba = inspect.signature(_max_pool2d_sig).bind(*args, **kwargs)
    except TypeError:
        return []
    ba.apply_defaults()
    a = ba.arguments
    x = a["input"]
    if a["return_indices"] or not isinstance(x, Tensor) or not isinstance(result, Tensor) or \
            not _is_const(tuple(v for k, v in a.items() if k != "input")):
        return []
    k, s, p, d = _pool_args(x, a["kernel_size"], a["stride"], a["padding"], a["dilation"],
                            "max_pool2d", ceil_mode=a["ceil_mode"])
    out = []
    relu = _relu_output(cap, x._grad_fn) == r(x).i   # (its gradient applied by the backward)
    for fn in (conv_kernels.max_pool_kernel(x._data, k, s, p, d, a["ceil_mode"], relu),
               _max_pool2d_np):   # disjoint windows specialised, else the general kernel
        if fn is not None:
            ins = Instr("max_pool2d", fn, (r(x), k, s, p, d, a["ceil_mode"]), mode="new")
            ins.aux = (result._grad_fn,)
            out.append([ins])
    return out


def _max_pool2d_sig(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                    return_indices=False):
    pass


def _normalize_np(x, w, b, rs, axes, wb, eps, layout, mean=None, var=None):
    """The normalisation of ``norm.normalize_affine`` on arrays of one float dtype (float32,
    float64): ``(y, mean, var, invstd)``; ``mean``/``var`` given: fixed statistics."""
    xr = x.reshape(rs)
    if mean is None:
        mean = xr.mean(axis=axes, keepdims=True)
        xc = xr - mean
        var = (xc * xc).mean(axis=axes, keepdims=True)
    else:
        mean = mean.astype(x.dtype, copy=False)
        var = var.astype(x.dtype, copy=False)
        xc = xr - mean
    invstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
    y = (xc * invstd).reshape(x.shape)
    if w is not None:
        y = y * w.reshape(wb)
    if b is not None:
        y = y + b.reshape(wb)
    return layout(x, y.astype(x.dtype, copy=False)), mean, var, invstd


def _norm_ok(x, *ts):
    return isinstance(x, Tensor) and x._data.dtype in (np.float32, np.float64) and \
        all(t is None or (isinstance(t, Tensor) and t._data.dtype == x._data.dtype) for t in ts)


def _layer_norm_lower(cap, op, args, kwargs, result, r):
    """F.layer_norm: the normalisation on arrays; its statistics kept for the backward."""
    from ..nn.functional import _c_layout
    try:
        ba = inspect.signature(_layer_norm_sig).bind(*args, **kwargs)
    except TypeError:
        return []
    ba.apply_defaults()
    a = ba.arguments
    x, w, b, eps = a["input"], a["weight"], a["bias"], a["eps"]
    ns = a["normalized_shape"]
    ns = (ns,) if isinstance(ns, int) else tuple(ns)
    if not _norm_ok(x, w, b) or not isinstance(eps, (int, float)) or not _is_const(ns):
        return []
    nd, k = x._data.ndim, len(ns)
    axes = tuple(range(nd - k, nd))
    wb = (1,) * (nd - k) + ns
    ins = Instr("layer_norm", _layer_norm_np(axes, wb, eps, _c_layout),
                (r(x), None if w is None else r(w), None if b is None else r(b)), mode="new")
    ins.aux = (result._grad_fn,)
    return [[ins]]


def _layer_norm_np(axes, wb, eps, layout):
    def layer_norm(x, w, b):
        y, mean, _, invstd = _normalize_np(x, w, b, x.shape, axes, wb, eps, layout)
        return y, mean, invstd
    return layer_norm


def _layer_norm_sig(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    pass


def _batch_norm_sig(input, running_mean, running_var, weight=None, bias=None, training=False,
                    momentum=0.1, eps=1e-05):
    pass


def _batch_norm_np(axes, bshape, eps, layout, C, n, momentum, module=None):
    """F.batch_norm on arrays: ``(y, mean, invstd)``; in training (``momentum`` not None)
    the running statistics given are updated in place as the eager code updates them, with
    ``momentum``, or the factor a BatchNorm ``module`` computes at each call (its
    ``momentum``, or ``1 / num_batches_tracked`` for the cumulative average)."""
    def batch_norm(x, w, b, rm, rv):
        if momentum is None:
            y, mean, _, invstd = _normalize_np(x, w, b, x.shape, axes, bshape, eps, layout,
                                               rm.reshape(bshape), rv.reshape(bshape))
            return y, mean, invstd
        y, mean, var, invstd = _normalize_np(x, w, b, x.shape, axes, bshape, eps, layout)
        m = momentum if module is None else _module_momentum(module)
        if rm is not None:
            rm[...] = (1 - m) * rm + m * mean.reshape(C)
        if rv is not None:
            rv[...] = (1 - m) * rv + m * var.reshape(C) * (n / (n - 1))
        return y, mean, invstd
    return batch_norm


def _module_momentum(m):
    """The factor BatchNorm module ``m``'s forward gives F.batch_norm in training (eager's
    expression, on the live module)."""
    if m.momentum is None:
        return 1.0 / float(m.num_batches_tracked._data)
    return m.momentum


def bump_version(t):
    """A tensor changed in place by a replayed kernel: its version goes up, as in eager."""
    t._vc[0] += 1


def _batch_norm_lower(cap, args, kwargs, result, r, before, top):
    """F.batch_norm (training: batch statistics, the running ones updated in place; eval:
    the running statistics).  Checked here against eager, the running statistics from their
    values before the call."""
    from ..ops.norm import suggested_layout
    try:
        ba = inspect.signature(_batch_norm_sig).bind(*args, **kwargs)
    except TypeError:
        return None
    ba.apply_defaults()
    a = ba.arguments
    x, rm, rv, w, b = (a[k] for k in ("input", "running_mean", "running_var", "weight", "bias"))
    eps, momentum, training = a["eps"], a["momentum"], a["training"]
    if not _norm_ok(x, w, b) or not isinstance(result, Tensor) or type(training) is not bool \
            or not isinstance(eps, (int, float)) or not isinstance(momentum, (int, float)):
        return None
    xd = x._data
    if xd.ndim < 2 or not xd.size:
        return None
    C = xd.shape[1]
    axes = (0,) + tuple(range(2, xd.ndim))
    bshape = (1, C) + (1,) * (xd.ndim - 2)
    use_batch = training or rm is None or rv is None
    stats = [t for t in (rm, rv) if t is not None] if training else []
    if not use_batch and not (isinstance(rm, Tensor) and isinstance(rv, Tensor)):
        return None
    for t in stats:
        if not isinstance(t, Tensor) or t._requires_grad or id(t) not in before:
            return None
    mod = cap.counting
    cap.counting = None
    if mod is None or not training or mod.running_mean is not rm or \
            mod.running_var is not rv or _module_momentum(mod) != momentum:
        mod = None
    kernel = _batch_norm_np(axes, bshape, eps, suggested_layout, C, xd.size // C,
                            momentum if training else None, mod)
    refs = [r(x), None if w is None else r(w), None if b is None else r(b)]
    refs += [None if t is None or (use_batch and not training) else r(t) for t in (rm, rv)]
    # check on the capture's arrays (the running statistics: copies as they were before)
    vals = [None if v is None else cap.arrays[v.i] for v in refs]
    for j, t in ((3, rm), (4, rv)):
        if t is not None and id(t) in before:
            vals[j] = before[id(t)].copy()
    try:
        with np.errstate(all="ignore"):
            out = kernel(*vals)
    except Exception:
        return None
    if not same(out[0], result._data):
        return None
    for j, t in ((3, rm), (4, rv)):
        if any(t is u for u in stats) and not same(vals[j], t._data):
            return None
    ins = Instr("batch_norm", kernel, tuple(refs), mode="new")
    ins.value = out
    ins.aux = (result._grad_fn,)
    _place(cap, [ins], result)
    instrs = [ins]
    for t in stats:
        instrs.append(Instr("bump_version", bump_version, (t,), mode="effect"))
        cap.bumped(t)
    return instrs


def _chunk_lower(cap, op, args, kwargs, result, r):
    """chunk / unsafe_chunk: the pieces of the sizes eager made, by split_with_sizes' (or
    unsafe_split_with_sizes') declared forward."""
    from ..ops import OPS
    try:
        ba = inspect.signature(_chunk_sig).bind(*args, **kwargs)
    except TypeError:
        return []
    x, dim = ba.arguments["input"], ba.arguments.get("dim", 0)
    if not isinstance(x, Tensor) or type(dim) is not int or not x._data.ndim or \
            type(result) not in (tuple, list) or not result:
        return []
    k = dim % x._data.ndim
    sizes = [t._data.shape[k] for t in result]
    spec = OPS["split_with_sizes" if op == "chunk" else "unsafe_split_with_sizes"]["spec"]
    return [[Instr(op, _pieces_kernel(spec.forward, len(result)), (r(x), sizes, k),
                   mode="new")]]


def _chunk_sig(input, chunks, dim=0):
    pass


def _cast_lower(cap, op, args, kwargs, result, r):
    """A dtype conversion (``to``, ``float``...) of a tensor: NumPy's ``astype`` to the
    result's dtype (the check says whether it gives eager's values)."""
    if not args or not isinstance(args[0], Tensor) or not isinstance(result, Tensor) or \
            result._data.shape != args[0]._data.shape or result._grad_fn is not None:
        return []
    return [[Instr(op, _astype, (r(args[0]), result._data.dtype), mode="new")]]


def _astype(a, dtype):
    """``a`` converted to ``dtype`` (a new array)."""
    return a.astype(dtype)


def _embedding_lower(cap, op, args, kwargs, result, r):
    """F.embedding without ``max_norm``: the rows of the weight at the indices."""
    try:
        ba = inspect.signature(_embedding_sig).bind(*args, **kwargs)
    except TypeError:
        return []
    ba.apply_defaults()
    a = ba.arguments
    x, w = a["input"], a["weight"]
    if a["max_norm"] is not None or not isinstance(x, Tensor) or not isinstance(w, Tensor) or \
            x._data.dtype.kind not in "iu":
        return []
    return [[Instr("embedding", _embedding_np, (r(w), r(x)), mode="new")]]


def _embedding_np(w, idx):
    """The rows of ``w`` at ``idx`` (indices out of range raise IndexError, as eager)."""
    if idx.size and (idx.min() < 0 or idx.max() >= w.shape[0]):
        raise IndexError("index out of range in self")
    return w[idx]


def _embedding_sig(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
                   scale_grad_by_freq=False, sparse=False):
    pass


def _eye_lower(cap, op, args, kwargs, result, r):
    """eye(n, m): a new identity array of the result's (guarded) shape and dtype."""
    if kwargs.get("requires_grad") or kwargs.get("out") is not None or \
            not all(type(a) is int for a in args) or result._data.ndim != 2:
        return []
    d = result._data
    return [[Instr("eye", np.eye, d.shape, {"dtype": d.dtype}, mode="new")]]


def _where_lower(cap, op, args, kwargs, result, r):
    """where(cond, a, b) with tensors or numbers of the result's dtype."""
    if kwargs or len(args) != 3 or not isinstance(args[0], Tensor) or \
            args[0]._data.dtype != np.bool_:
        return []
    dt = result._data.dtype
    xs = [r(args[0])]
    for v in args[1:]:
        if isinstance(v, Tensor):
            if v._data.dtype != dt:
                return []
            xs.append(r(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and dt.kind == "f":
            xs.append(dt.type(v))
        else:
            return []
    return [[Instr("where", _where_np, tuple(xs), mode="new")]]


def _where_np(c, a, b):
    r = np.where(c, a, b)
    return r if r.dtype == (a.dtype if isinstance(a, np.ndarray) else b.dtype) else \
        r.astype(a.dtype if isinstance(a, np.ndarray) else b.dtype)


def _convolution_lower(cap, op, args, kwargs, result, r):
    """torch.convolution recording its node (not transposed, batched 2-d or 3-d): the
    forward also gives the input's columns, which the weight's gradient reads, as eager keeps
    them; else the declared forward."""
    from ..ops import conv
    out = []
    node = result._grad_fn if isinstance(result, Tensor) else None
    if node is not None and type(node) is conv._NODE and len(args) >= 3 and not kwargs and \
            isinstance(args[0], Tensor) and isinstance(args[1], Tensor):
        kind, P, cols, lift = node._saved[-4:]
        b = args[2]
        if kind == "C" and lift is None and _is_geometry(P) and \
                (b is None or b is conv._ABSENT or isinstance(b, Tensor)):
            b = None if b is None or b is conv._ABSENT else b
            fast = conv_kernels.forward_kernel(P, args[0]._data, args[1]._data,
                                               None if b is None else b._data)
            # specialised for the shapes first; the general one where eager kept the columns
            for fn in (fast, _conv_cols(P) if cols is not None else None):
                if fn is not None:
                    ins = Instr("convolution", fn, (r(args[0]), r(args[1]),
                                                    None if b is None else r(b)), mode="new")
                    ins.alias = ((cols, 1),) if cols is not None else ()
                    out.append([ins])
    # (conv<n>d's absent bias is no bias for the declared forward)
    c = _spec_candidate(op, False, tuple(None if a is conv._ABSENT else a for a in args),
                        kwargs, result, r)
    if c is not None:
        out.append(c)
    return out


def _fast_bilinear(cap, kernel, candidates):
    """A convolution backward's map (``_bilinear_np``) specialised for its shapes, to try
    before the general one."""
    from ..ops import conv
    if kernel is not conv._bilinear_np or len(candidates) != 1 or \
            candidates[0][0].fn is not kernel:
        return []
    ins = candidates[0][0]
    fast = conv_kernels.bilinear_kernel(ins.args, [_val(a, cap.arrays) for a in ins.args])
    return [] if fast is None else [[Instr(ins.op, fast, ins.args, ins.kwargs, mode="new")]]


def _conv_cols(P):
    from ..ops import conv

    def convolution(x, w, b):
        cols = conv._im2col(x, P)
        return conv._apply_np("C", x, w, P, cols, b), cols
    return convolution


_SPECIAL = {"convolution": _convolution_lower, "__getitem__": _getitem_lower, "zeros": _factory_lower, "ones": _factory_lower,
            "full": _factory_lower, "zeros_like": _factory_lower,
            "ones_like": _factory_lower, "full_like": _factory_lower, "eye": _eye_lower,
            "nll_loss": _nll_lower, "log_softmax": _log_softmax_lower,
            "softmax": _log_softmax_lower, "gelu": _gelu_lower,
            "mse_loss": _unweighted_loss("mse_loss", _mse_sig),
            "binary_cross_entropy": _unweighted_loss("binary_cross_entropy", _bce_sig, (None,)),
            "embedding": _embedding_lower, "max_pool2d": _max_pool2d_lower,
            "layer_norm": _layer_norm_lower, "where": _where_lower, "chunk": _chunk_lower,
            "unsafe_chunk": _chunk_lower, "to": _cast_lower, "float": _cast_lower,
            "double": _cast_lower, "long": _cast_lower, "int": _cast_lower}


def _nll_backward(cap, node, g):
    """NllLossBackward0: the declared gradient op's kernel on the replay's own input, target
    and total weight (the forward's buffers)."""
    from ..ops.losses import _nll_backward as grad_kernel
    fwd = cap.nll_by_node.get(id(node))
    if fwd is None:
        from .capture import NoKernel
        raise NoKernel("NllLossBackward0 of an nll_loss that was not captured")
    ins, (totb,) = fwd
    xr, tr, ignore_index, red = ins.args

    def kernel(g, x, t, total):
        return grad_kernel(g, x, t, None, red, ignore_index, total)
    kernel.codegen = _nll_backward_lines

    gi = cap.by_array.get(id(g._data))
    if gi is None:
        from .capture import NoKernel
        raise NoKernel("a gradient from outside the capture")
    ins2 = Instr("nll_loss_backward", kernel, (Ref(gi), xr, tr, Ref(totb)), mode="new")
    val = kernel(g._data, cap.arrays[xr.i], cap.arrays[tr.i], cap.arrays[totb])
    j = cap.new_buffer("tmp", val)
    ins2.out = j
    cap.emit(ins2)
    return (_make(val),)


def _nll_backward_lines(ins, em):
    """After the forward's fast path (its total weight is then the array it set), the
    kernel's common case (no weight, mean, every target counted): zeros with
    ``-g / total`` at each sample's target; otherwise the kernel."""
    g, x, t, tot = ins.args
    name = em.nll_total.get(tot.i)
    if name is None or type(ins.out) is not int:
        return None
    b = em.program.buffers[x.i]
    rows = em.const(np.arange(b.shape[0]), "R")
    ind = "        "
    return [f"{ind}if b{tot.i} is {name}:",
            f"{ind}    b{ins.out} = np.zeros({tuple(b.shape)!r}, {em.const(np.dtype(b.dtype), 'D')})",
            f"{ind}    b{ins.out}[{rows}, b{t.i}] = -b{g.i} / {name}",
            f"{ind}else:",
            f"{ind}    b{ins.out} = {em.const(ins.fn, 'f')}(b{g.i}, b{x.i}, b{t.i}, b{tot.i})"]


def _outs(ins):
    o = ins.out
    return o if type(o) is tuple else (o,)


def defined(cap, i) -> bool:
    """Whether buffer ``i`` is an input of the program or the output of a recorded
    instruction.  A result of an op nested in another whose own kernel was recorded instead
    is not, until it is needed: then the instruction that made it is recorded at that point
    when, run on the arrays as they are now, it still gives that result."""
    if cap.program.buffers[i].kind != "tmp":
        return True
    seen = cap.__dict__.setdefault("_defined", {})
    outs = seen.setdefault("outs", set())
    for lst in (cap.program.instrs, getattr(cap, "aot_instrs", None)):
        if lst is None:
            continue
        n = seen.get(id(lst), (None, 0))
        start = n[1] if n[0] is lst else 0
        for ins in lst[start:]:
            outs.update(_outs(ins))
        seen[id(lst)] = (lst, len(lst))
    if i in outs:
        return True
    for f in cap.stack:
        for ins in f.instrs:
            if i in _outs(ins):
                return True
    return _reemit(cap, i)


def _reemit(cap, i) -> bool:
    ins = cap.__dict__.get("_producers", {}).get(i)
    if ins is None or ins.mode not in ("new", "view", "out") or type(ins.out) is tuple:
        return False
    refs = [v for a in list(ins.args) + list(ins.kwargs.values())
            for v in (a if type(a) is tuple else (a,)) if type(v) is Ref]
    if not all(defined(cap, r.i) for r in refs):
        return False
    try:
        with np.errstate(all="ignore"):
            a2 = [_val(a, cap.arrays) for a in ins.args]
            k2 = {k: _val(v, cap.arrays) for k, v in ins.kwargs.items()}
            if ins.mode == "out":
                val = np.empty_like(cap.arrays[i])
                ins.fn(*a2, out=val, **k2)
            else:
                val = ins.fn(*a2, **k2)
    except Exception:
        return False
    if not isinstance(val, np.ndarray) or not same(val, cap.arrays[i]):
        return False
    del cap._producers[i]
    cap.emit(ins)
    return True


def emit_kernel(cap, name, kernel, args, faster=None):
    """Record ``kernel(*args)`` (Tensors as buffers, other values as constants) computed on
    the capture's arrays; returns the result as a Tensor mapped to its new buffer.
    ``faster``: a cheaper kernel used instead when it gives the same bits here."""
    vals, refs = [], []
    for a in args:
        if isinstance(a, Tensor):
            i = cap.by_array.get(id(a._data))
            if i is None or not defined(cap, i):
                raise _nokernel(f"{name}: an input from outside the capture")
            refs.append(Ref(i))
            vals.append(a._data)
        else:
            if not _is_const(a):
                raise _nokernel(f"{name}: an argument of type {type(a).__name__}")
            refs.append(a)
            vals.append(a)
    with np.errstate(all="ignore"):
        val = kernel(*vals)
        if faster is not None:
            try:
                if same(faster(*vals), val):
                    kernel = faster
            except Exception:
                pass
    if not isinstance(val, np.ndarray):
        val = np.asarray(val)
    ins = Instr(name, kernel, tuple(refs), mode="new")
    ins.out = cap.new_buffer("tmp", val)
    cap.emit(ins)
    return _make(val)


def unary_backward(cap, node, g, uf):
    """The backward of a one-input elementwise op: its array formula on the buffers, the
    function a plain backward runs."""
    formula, ix, iy = uf
    sv = node._saved
    y = sv[iy].get(node, True) if iy is not None else None
    x = sv[ix].get(node, True) if ix is not None else None
    name = type(node).__name__
    if name == "ReluBackward0" and isinstance(y, Tensor) and \
            cap.__dict__.get("relu_masked", {}).get(cap.by_array.get(id(g._data)), -1) == \
            cap.by_array.get(id(y._data)):
        return (g,)   # a max pooling's gradient already zero where y <= 0
    faster = _FASTER.get(name)
    if cap.by_array.get(id(g._data)) in cap.ones and name in _FASTER_ONES:
        faster = _FASTER_ONES[name]   # the incoming gradient is ones: g * v is v
    return (emit_kernel(cap, name, formula, (g, x, y), faster),)


def _relu_bw(g, x, y):
    """ReluBackward0's ``where(y <= 0, zeros_like(g), g)`` with a scalar zero (no zeros
    array): the same values."""
    return np.where(y <= 0, g.dtype.type(0), g)


def _relu_bw_lines(ins, em):
    """``_relu_bw`` in the replay as three ufuncs into arrays made once: the mask of
    ``y <= 0`` as integers (1 or 0) minus one, all bits set where ``g`` is kept, ANDed with
    ``g``'s bits: ``+0.0`` where ``y <= 0`` (NaN ``y`` keeps ``g``), ``g`` bit for bit
    elsewhere, as ``np.where`` gives, at a third of its cost.  None (the plain call) unless
    ``g``, ``y`` and the result are float32/float64 of one shape and dtype."""
    g, _, y = ins.args
    bufs = em.program.buffers
    if type(g) is not Ref or type(y) is not Ref or type(ins.out) is not int:
        return None
    o = bufs[ins.out]
    dt = np.dtype(o.dtype)
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)) or any(
            tuple(bufs[r.i].shape) != tuple(o.shape) or np.dtype(bufs[r.i].dtype) != dt
            for r in (g, y)):
        return None
    it = np.dtype(f"i{dt.itemsize}")
    mask = em.scratch(o.shape, it)
    zero = em.const(np.zeros((), dt), "Z")
    minus1 = em.const(np.full((), -1, it), "Z")
    gbits = em.bits_view(g.i)
    em.out_buffer(ins.out)
    obits = em.bits_view(ins.out)
    ind = "        "
    return [f"{ind}np.less_equal(b{y.i}, {zero}, out={mask})",
            f"{ind}np.add({mask}, {minus1}, out={mask})",
            f"{ind}np.bitwise_and({gbits}, {mask}, out={obits})"]


_relu_bw.codegen = _relu_bw_lines


def _inline(expr):
    """Give a kernel ``f(g, x, y)`` of float arrays the expression the replay writes in its
    place (no call: the same NumPy operations in the same order); ``{0}``..``{2}`` are its
    arguments, ``{one}`` is its literal 1 (a 0-d array of the result's dtype there)."""
    def mark(fn):
        fn.inline_expr = expr
        return fn
    return mark


@_inline("{0} * ({one} - {2} * {2})")
def _tanh_bw(g, x, y):
    """TanhBackward0's array formula (``ops.unary``) for an ndarray gradient."""
    return g * (1 - y * y)


_FASTER = {"ReluBackward0": _relu_bw, "TanhBackward0": _tanh_bw}
# the formulas ``g * f(y)`` of a gradient of ones (a loss's first node), without the product
_FASTER_ONES = {"TanhBackward0": _inline("{one} - {2} * {2}")(lambda g, x, y: 1 - y * y),
                "SigmoidBackward0": _inline("{2} * ({one} - {2})")(lambda g, x, y: y * (1 - y)),
                "ExpBackward0": _inline("{2}.copy()")(lambda g, x, y: y.copy())}


def _saved_outputs(cap, node):
    """The buffers of the arrays the forward kernel of ``node``'s op gave besides its result
    (indices, statistics), computed by the replay itself."""
    fwd = cap.nll_by_node.get(id(node))
    if fwd is None:
        raise _nokernel(f"{type(node).__name__} of an op that was not captured by its kernel")
    return fwd[1]


def _emit_grads(cap, node, kernel, g, aux, n):
    """Record ``kernel(g, *aux)`` giving the gradients of ``node``'s ``n`` inputs."""
    gi = cap.by_array.get(id(g._data))
    if gi is None or not defined(cap, gi):
        raise _nokernel("a gradient from outside the capture")
    with np.errstate(all="ignore"):
        vals = kernel(g._data, *[cap.arrays[i] for i in aux])
    if (type(vals) is tuple) != (n > 1):
        raise _nokernel(f"{type(node).__name__}: its kernel gives another number of arrays")
    vals = vals if type(vals) is tuple else (vals,)
    if len(vals) != n:
        raise _nokernel(f"{type(node).__name__}: its kernel gives {len(vals)} gradients")
    ins = Instr(type(node).__name__, kernel, (Ref(gi),) + tuple(Ref(i) for i in aux),
                mode="new")
    if n == 1:
        ins.out = cap.new_buffer("tmp", vals[0])
    else:
        ins.value = vals
        ins.out = tuple(cap.new_buffer("tmp", v) for v in vals)
    cap.emit(ins)
    return tuple(_make(v) for v in vals)


def _relu_output(cap, node):
    """The buffer of the output of ``node`` when it is a ReLU's (else None)."""
    if type(node).__name__ != "ReluBackward0":
        return None
    uf = getattr(getattr(type(node), "_spec", None), "unary_formula", None)
    if uf is None or uf[2] is None:
        return None
    y = node._saved[uf[2]].get(node, True)
    return cap.by_array.get(id(y._data)) if isinstance(y, Tensor) else None


def _max_pool_backward(cap, node, g):
    """MaxPool2DWithIndicesBackward0: the gradient added at the replay's own indices."""
    from ..ops import pool
    (idxb,) = _saved_outputs(cap, node)
    _, xshape, unique, nl = node._saved[:4]
    if len(node._saved) > 5:
        raise _nokernel("max_pool2d's indices were returned")
    fwd = cap.nll_by_node[id(node)][0]
    if isinstance(fwd.fn, conv_kernels.MaxPool2d):   # its window codes, not indices
        out = _emit_grads(cap, node, fwd.fn.backward, g, (idxb,), 1)
        if fwd.fn.relu:   # the ReLU's gradient applied too: it then has nothing to do
            cap.__dict__.setdefault("relu_masked", {})[cap.by_array[id(out[0]._data)]] = \
                fwd.args[0].i
        return out

    def kernel(g, idx):
        return pool._scatter_np(g, idx, xshape, unique, nl)
    kernel.__name__ = "max_pool2d_backward"
    return _emit_grads(cap, node, kernel, g, (idxb,), 1)


class _FixedSaved:
    """A saved tensor standing for a buffer's array in a backward replayed on arrays."""
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def get(self, node, graph):
        return self.a


class _NodeOnArrays:
    """What a node's array backward (``_bw(g, False)``) reads: its saved values (the arrays
    the replay computes in their places) and its edges."""
    __slots__ = ("_saved", "next_functions")

    def __init__(self, saved, nf):
        self._saved = saved
        self.next_functions = nf


def _norm_backward(cap, node, g):
    """The backward of layer norm and batch norm: the node's own array formula, on the
    replay's input, weight and statistics."""
    from ..autograd.node import Saved
    mean_b, invstd_b = _saved_outputs(cap, node)
    sv = list(node._saved)
    if not isinstance(sv[0], Saved) or (sv[1] is not None and not isinstance(sv[1], Saved)):
        raise _nokernel("a norm without its saved input")
    ins_ = []
    for s in sv[:2]:
        if s is None:
            continue
        i = cap.by_array.get(id(s.get(node, False)))
        if i is None or not defined(cap, i):
            raise _nokernel("a norm of a tensor from outside the capture")
        ins_.append(i)
    if isinstance(sv[10], Saved):
        sv[10] = tuple(sv[10].get(node, False).shape)   # (only the bias's shape is read)
    nf = node.next_functions
    keep = [k for k, (n, _) in enumerate(nf) if n is not None]
    cls = type(node)
    has_w = sv[1] is not None

    def kernel(g, x, *rest):
        s2 = list(sv)
        s2[0] = _FixedSaved(x)
        if has_w:
            s2[1] = _FixedSaved(rest[0])
        s2[2], s2[3] = rest[-2], rest[-1]
        gs = cls._bw(_NodeOnArrays(tuple(s2), nf), g, False)
        return gs[keep[0]] if len(keep) == 1 else tuple(gs[k] for k in keep)
    kernel.__name__ = f"{cls.__name__}_arrays"
    got = _emit_grads(cap, node, kernel, g, tuple(ins_) + (mean_b, invstd_b), len(keep))
    out = [None] * len(nf)
    for k, t in zip(keep, got):
        out[k] = t
    return tuple(out)


BACKWARD = {"NllLossBackward0": _nll_backward, "NativeLayerNormBackward0": _norm_backward,
            "NativeBatchNormBackward0": _norm_backward,
            "MaxPool2DWithIndicesBackward0": _max_pool_backward}
