"""PyTorch's ``out=`` for every public function that takes it (the names come from PyTorch
itself: ``_out_table``).

Ops are written without an ``out`` parameter; the wrapper that exports them (``_argcheck.guard``,
``accepting``) calls ``call`` only when Python refused an ``out`` keyword, so a call without
``out`` costs nothing.  ``call`` checks what PyTorch checks (autograd, out's type), computes the
result and ``write`` stores it into ``out``: resized (with PyTorch's deprecation warning when
``out`` had elements) or written through its own strides, cast to its dtype when PyTorch's rules
allow, its version counter up by one.
"""
from __future__ import annotations

import functools
import numpy as np

from . import _dtype as D
from ._out_table import OUT
from ._warn import warn

_UNKNOWN = ("?", "cast", None, ((1,), (1,)), None, None, True, None)  # an op whose out= the table's probe could not run

def refused(e: BaseException, kwargs) -> bool:
    """Whether ``e`` is the refusal of an ``out`` keyword the implementation lacks: Python's,
    or an argument check's that lists it (``**kwargs`` implementations)."""
    if not isinstance(e, TypeError) or "out" not in kwargs:
        return False
    m = str(e)
    return "unexpected keyword argument 'out'" in m or \
        "invalid combination" in m and "out=" in m.split("expected one of")[0]


def _tensors(args, kwargs):
    """The Tensor arguments of a call (one level into lists and tuples)."""
    from ._tensor import Tensor
    found = []
    for a in list(args) + list(kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, Tensor):
                found.append(t)
    return found


def call(key: str, fn, args, kwargs, rule=None, warn_resize=True):
    """``fn(*args, **kwargs)`` with ``kwargs['out']`` handled as PyTorch's op ``key`` does
    (``rule`` and ``warn_resize`` as ``write``'s, the rule by default from the table)."""
    from ._tensor import Tensor
    from .autograd.grad_mode import STATE, no_grad
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    if out is None:
        return fn(*args, **kwargs)
    grad_name, table_rule, error, bumps, overlap, order, warns, forms = OUT.get(key, _UNKNOWN)
    rule = rule or table_rule
    warn_resize = warn_resize and warns
    if forms is not None:
        _check_form(key, forms, args, kwargs, out)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if STATE.enabled and grad_name is not None:
        if any(isinstance(t, Tensor) and t._requires_grad
               for t in _tensors(args, kwargs) + list(outs)):
            raise RuntimeError(f"{key if grad_name == '?' else grad_name}(): functions with "
                               f"out=... arguments don't support automatic differentiation, but "
                               f"one of the arguments requires grad.")
    if rule == "any" and isinstance(out, Tensor) and kwargs.get("dtype") is None and \
            _takes_dtype(fn):
        kwargs["dtype"] = out.dtype  # PyTorch computes in out's dtype (cumsum, sum, prod)
    with no_grad():
        r = fn(*args, **kwargs)
    multi = isinstance(r, tuple)
    if multi != isinstance(out, (tuple, list)) or \
            not all(isinstance(t, Tensor) for t in outs) or (multi and len(outs) != len(r)):
        want = "tuple of Tensors" if multi else "Tensor"
        raise TypeError(f"{key}(): argument 'out' must be {want}, not {D.type_name(out)}")
    # TensorIterator's overlap check (unknown: the ops whose dtype rule is TensorIterator's)
    inputs = _tensors(args, kwargs) if (overlap if overlap is not None else rule != "exact") \
        else ()
    if not multi:
        return write(r, out, inputs, rule, warn_resize, error, _bumps(bumps, 0))
    for i in order if order is not None and len(order) == len(r) else range(len(r)):
        write(r[i], outs[i], inputs, rule, warn_resize, error, _bumps(bumps, i))
    written = outs
    return type(r)(*written) if hasattr(r, "_fields") else tuple(written)


def write(result, out, inputs=(), rule="cast", warn_resize=True, error=None, bumps=(1, 1)):
    """Store ``result`` (a Tensor or array) into the Tensor ``out`` and return ``out``: dtype
    checked by ``rule`` ('cast': PyTorch's can_cast; 'exact': the same dtype; 'any': none; a
    refusal raises ``error``, (type name, template), else PyTorch's generic message), overlap
    with ``inputs`` refused, resized when its shape differs (with PyTorch's warning when
    ``warn_resize`` and it had elements), version counter up by ``bumps`` (resized, not)."""
    r = np.asarray(getattr(result, "_data", result))
    od = out._data.dtype
    if r.dtype != od and (rule == "exact" or rule != "any" and not _can_cast(r.dtype, od)):
        raise _dtype_error(r.dtype, od, rule, error)
    _check_overlap(out, inputs)
    version = out._vc[0]
    resized = out._data.shape != r.shape
    if resized:
        if warn_resize and out._data.size:
            old = "[" + ", ".join(str(s) for s in out._data.shape) + "]"
            new = "[" + ", ".join(str(s) for s in r.shape) + "]"
            warn(f"An output with one or more elements was resized since it had shape "
                          f"{old}, which does not match the required output shape {new}. This "
                          f"behavior is deprecated, and in a future PyTorch release outputs will "
                          f"not be resized unless they have zero elements. You can explicitly "
                          f"reuse an out tensor t by resizing it, inplace, to zero elements with "
                          f"t.resize_(0).")
        out.resize_(r.shape)
        if r.ndim >= 2 and not r.flags.c_contiguous and _dense(r):
            # a resized out takes the result's layout (LAPACK results are column-major)
            st = tuple(s // r.itemsize * out._data.itemsize for s in r.strides)
            out._data = np.lib.stride_tricks.as_strided(out._data, r.shape, st)
    out._data[...] = r
    out._vc[0] = version + bumps[0 if resized else 1]  # PyTorch's count of writes
    return out


def _bumps(bumps, i):
    """Output ``i``'s version bumps (resized, not) from the table's per-output lists."""
    res, same = bumps
    return res[min(i, len(res) - 1)], same[min(i, len(same) - 1)]


def _check_form(key, forms, args, kwargs, out):
    """PyTorch's parser error for a call that fits only overloads without ``out``: the one
    overload that could take that many arguments names what it misses, else the list."""
    fits = [fm for fm in forms if _fits(fm, args, kwargs)]
    if not fits or any(fm[4] for fm in fits):
        return
    n = len(args) + len(kwargs) + 1
    plausible = [fm for fm in forms
                 if fm[1] + len(fm[3]) <= n <= len(fm[0]) + len(fm[2]) + fm[4]]
    if len(plausible) == 1:
        pos, req = plausible[0][:2]
        missing = [p for p in pos[len(args):req] if p not in kwargs]
        if missing:
            names = ", ".join(f'"{p}"' for p in missing)
            raise TypeError(f"{key}() missing {len(missing)} required positional arguments: "
                            f"{names}")
    raise D.bad_combo(key, args, {**kwargs, "out": out})


def _fits(form, args, kwargs) -> bool:
    """Whether a call's arguments (``out`` aside) fit one of PyTorch's overloads ``form``."""
    pos, req, kw, kwreq, _ = form
    if len(args) > len(pos):
        return False
    rest = pos[len(args):]
    if any(k not in rest and k not in kw for k in kwargs):
        return False
    return all(p in kwargs for p in pos[len(args):req]) and all(k in kwargs for k in kwreq)


def _dense(a) -> bool:
    """Whether ``a``'s elements fill exactly ``a.size`` slots from its start (any order)."""
    order = sorted((s, n) for s, n in zip(a.strides, a.shape) if n > 1)
    acc = a.itemsize
    for s, n in order:
        if s != acc:
            return False
        acc *= n
    return True


def _dtype_error(rd, od, rule, error):
    """The error of an ``out`` of dtype ``od`` refused for a result of dtype ``rd``."""
    r, o = D.scalar_type_name(rd), D.scalar_type_name(od)
    if error is None:
        if rule == "exact":
            return RuntimeError(f"Expected out tensor to have dtype {D.c_name(rd)}, but got "
                                f"{D.c_name(od)} instead")
        return RuntimeError(f"result type {r} can't be cast to the desired output type {o}")
    kind, template = error
    cls = {"TypeError": TypeError, "NotImplementedError": NotImplementedError,
           "ValueError": ValueError}.get(kind, RuntimeError)
    return cls(template.format(r=r, o=o, rc=D.c_name(rd), oc=D.c_name(od)))


def _can_cast(src, dst) -> bool:
    """PyTorch's can_cast on NumPy dtypes."""
    if src.kind == "c" and dst.kind != "c":
        return False
    if src in D.FLOATING and dst not in D.INEXACT:
        return False
    return not (src.kind != "b" and dst.kind == "b")


def _check_overlap(out, inputs):
    """PyTorch's errors for an ``out`` whose elements repeat, or that partly overlaps an
    input (the very same tensor layout is allowed)."""
    d = out._data
    if any(s == 0 and n > 1 for s, n in zip(d.strides, d.shape)):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")
    for t in inputs:
        x = t._data
        if x is d or not np.may_share_memory(x, d):
            continue
        same = x.__array_interface__["data"][0] == d.__array_interface__["data"][0] and \
            x.shape == d.shape and x.strides == d.strides
        if not same and np.shares_memory(x, d):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                               "written-to tensor refer to a single memory location. Please "
                               "clone() the tensor before performing the operation.")


def swallows_out(fn) -> bool:
    """Whether an ``out`` keyword would reach ``fn``'s body unrefused: it names an ``out`` it
    does not write through this module (``handles_out``)."""
    if getattr(fn, "_handles_out", False):
        return False
    code = getattr(fn, "__code__", None)
    if code is not None and getattr(fn, "__signature__", None) is None:
        # a plain function: its own parameter names say it (no inspect.signature at import)
        return "out" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    import inspect
    try:
        params = inspect.signature(fn, follow_wrapped=False).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "out" for p in params)


def handles_out(fn):
    """Mark ``fn`` as writing its ``out=`` itself (the factories' rules differ from ops')."""
    fn._handles_out = True
    return fn


def _takes_dtype(fn) -> bool:
    import inspect
    try:
        return "dtype" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def accepting(fn, key: str):
    """``fn`` taking PyTorch's ``out=`` as op ``key`` does (for functions not guarded)."""
    @functools.wraps(fn)
    def f(*args, **kwargs):
        if kwargs and "out" in kwargs:
            return call(key, fn, args, kwargs)
        return fn(*args, **kwargs)
    return f


def expose(namespace: dict, names, prefix: str) -> None:
    """Give each function ``names`` of a namespace module PyTorch's ``out=`` where PyTorch's
    ``prefix + name`` takes it."""
    for n in names:
        if prefix + n in OUT:
            namespace[n] = accepting(namespace[n], prefix + n)
