"""More binary elementwise ops: heaviside, gcd, lcm, the bit shifts (with the ``<<``/``>>``
operators), ldexp, frexp and nextafter, and their in-place forms where PyTorch has them.

dtypes follow PyTorch's promotion; the integer ops refuse other dtypes with PyTorch's
not-implemented errors.  Gradients: LdexpBackward0, FrexpBackward0 (mantissa), and
NextafterBackward0 (the gradient passes to ``input``, zeros to ``other``); heaviside has no
derivative (PyTorch's NotImplemented node)."""
from __future__ import annotations

from numbers import Number

import numpy as np

from .. import _dtype as D
from . import op
from .._record import STATE, Node, Saved, Tensor, edge_of, notify, record, sum_to
from . import _dual as X
from .pointwise import _call2
from .shape_more import dual

_make = Tensor._make
_LN2 = float(np.log(2.0))


def _not_impl(kernel, dt):
    return NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dt)}\'')


def _is_scalar(v):
    return isinstance(v, (Number, np.number, np.bool_)) and not isinstance(v, Tensor)


def _operands(a, b, fn, pos=1):
    """The data of two operands (tensors, or a tensor and a number) in PyTorch's result dtype."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        ad, bd = a._data, b._data
        rt = D.result_type(D.FROM_NP[ad.dtype], ad.ndim, D.FROM_NP[bd.dtype], bd.ndim).np
        return ad.astype(rt, copy=False), bd.astype(rt, copy=False), rt
    if isinstance(a, Tensor) and _is_scalar(b):
        rt = D.scalar_result(D.FROM_NP[a._data.dtype], b.item() if isinstance(
            b, (np.number, np.bool_)) else b).np
        return a._data.astype(rt, copy=False), np.asarray(b).astype(rt), rt
    if _is_scalar(a) and isinstance(b, Tensor):
        rt = D.scalar_result(D.FROM_NP[b._data.dtype], a.item() if isinstance(
            a, (np.number, np.bool_)) else a).np
        return np.asarray(a).astype(rt), b._data.astype(rt, copy=False), rt
    raise D.bad_combo(fn, [a, b])


def _need_tensor(fn, v, pos, arg="other"):
    if not isinstance(v, Tensor):
        raise D.not_tensor(fn, arg, pos, v)


def _arith_quiet(fn, a, b):
    with np.errstate(all="ignore"):
        return np.asarray(_call2(fn, a, b))


# --- gcd / lcm ---------------------------------------------------------------------------------
def _gcd_like(name, np_fn):
    def f(p, input, other):
        _need_tensor(name, input, 1, "input")
        _need_tensor(name, other, 1 + p)
        ad, bd, rt = _operands(input, other, name)
        if rt.kind not in "iu":
            raise _not_impl(name + "_cpu", rt)
        return _make(_arith_quiet(np_fn, ad, bd).astype(rt, copy=False))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name} of integer tensors (non-negative results)."
    return f


def _lcm_np(a, b):
    g = np.gcd(a, b)
    with np.errstate(all="ignore"):
        r = np.abs(a // np.where(g == 0, 1, g) * b)
    return np.where(g == 0, 0, r)


gcd = dual("gcd", _gcd_like("gcd", np.gcd))
lcm = dual("lcm", _gcd_like("lcm", _lcm_np))


# --- bit shifts --------------------------------------------------------------------------------
def _lshift_np(a, b):
    bits = a.dtype.itemsize * 8
    ub = b.astype(a.dtype.str.replace("i", "u"), copy=False) if a.dtype.kind == "i" else b
    big = ub >= bits
    r = np.left_shift(a, np.where(big, 0, b).astype(a.dtype, copy=False))
    return np.where(big, np.zeros((), a.dtype), r).astype(a.dtype, copy=False)


def _rshift_np(a, b):
    bits = a.dtype.itemsize * 8
    sb = b.astype(b.dtype.str.replace("u", "i"), copy=False) if b.dtype.kind == "u" else b
    big = (sb < 0) | (b >= bits)
    r = np.right_shift(a, np.where(big, 0, b).astype(a.dtype, copy=False))
    fill = np.right_shift(a, bits - 1) if a.dtype.kind == "i" else np.zeros((), a.dtype)
    return np.where(big, fill, r).astype(a.dtype, copy=False)


def _shift(name, kernel, np_fn):
    def f(input, other):
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            raise D.bad_combo(name, [input, other])
        ad, bd, rt = _operands(input, other, name)
        if rt.kind not in "iu":
            raise _not_impl(kernel, rt)
        return _make(np.asarray(_call2(np_fn, ad, bd)))

    f.__name__ = f.__qualname__ = name
    f.__doc__ = (f"Elementwise {name.replace('_', ' ')} of integer tensors (PyTorch's rules "
                 f"for negative and too-large shifts).")
    return f


bitwise_left_shift = op("bitwise_left_shift", methods=("__lshift__",))(
    _shift("bitwise_left_shift", "lshift_cpu", _lshift_np))
bitwise_right_shift = op("bitwise_right_shift", methods=("__rshift__",))(
    _shift("bitwise_right_shift", "rshift_cpu", _rshift_np))


def _reflected(fn):
    def r(self, other):
        if not _is_scalar(other):
            return NotImplemented
        return fn(other, self)
    return r


op("_rlshift", function=False, method=False, methods=("__rlshift__",))(
    _reflected(bitwise_left_shift))
op("_rrshift", function=False, method=False, methods=("__rrshift__",))(
    _reflected(bitwise_right_shift))


# --- heaviside ---------------------------------------------------------------------------------
def _heaviside(p, input, values):
    """0 where input < 0, 1 where input > 0, ``values`` where input == 0 (no derivative, as in
    PyTorch)."""
    _need_tensor("heaviside", input, 1, "input")
    _need_tensor("heaviside", values, 1 + p, "values")
    ad, vd = input._data, values._data
    if ad.dtype != vd.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if ad.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    # PyTorch's kernel: input == 0 ? values : input > 0 (NaN input gives 0)
    data = np.asarray(_call2(lambda a, v: np.where(a == 0, v, a > 0), ad, vd)).astype(
        ad.dtype, copy=False)
    from .elementwise_more import _no_derivative
    return _no_derivative(data, "heaviside", (input, values))


heaviside = dual("heaviside", _heaviside)


# --- ldexp -------------------------------------------------------------------------------------
class LdexpBackward0(Node):
    """d/dinput = g * 2^other, d/dother = g * result * ln 2 (PyTorch saves the result, and
    other when the input needs a gradient)."""
    __slots__ = ()

    def _bw(self, g, graph):
        sb, so, ash, bsh = self._saved
        # PyTorch unpacks every saved value (other, then the result) before computing
        other = sb.get(self, graph) if sb is not None else None
        result = so.get(self, graph)
        ga = gb = None
        if self.next_functions[0][0] is not None:  # (other is saved only then, as PyTorch)
            dt = g.dtype
            scale = 2.0 ** (other.to(dt) if isinstance(other, Tensor) else other.astype(dt))
            ga = sum_to(g * scale, ash)
        if self.next_functions[1][0] is not None:
            gb = sum_to(g * result * _LN2, bsh)
        return ga, gb


def _ldexp(p, input, other):
    """input * 2**other (integer operands give the default float); LdexpBackward0."""
    _need_tensor("ldexp", input, 1, "input")
    _need_tensor("ldexp", other, 1 + p)
    ad, bd, rt = _operands(input, other, "ldexp")
    if rt.kind not in "fc":
        rt = D.DEFAULTS.float.np
        ad, bd = ad.astype(rt), bd.astype(rt)
    with np.errstate(all="ignore"):
        data = np.asarray(_call2(lambda a, b: a * np.exp2(b), ad, bd)).astype(rt, copy=False)
    if STATE.enabled and (input._requires_grad or other._requires_grad):
        res = record(data, None)
        node = LdexpBackward0((edge_of(input), edge_of(other)),
                              (Saved(other) if input._requires_grad else None,
                               Saved(res, True), ad.shape, bd.shape))
        node._casts = (input._data.dtype if input._data.dtype != rt else None,
                       other._data.dtype if other._data.dtype != rt else None)
        res._grad_fn = node
        return notify(res)
    return _make(data)


ldexp = dual("ldexp", _ldexp)


# --- frexp -------------------------------------------------------------------------------------
class FrexpBackward0(Node):
    """The mantissa's gradient: g / 2^exponent."""
    __slots__ = ()

    def _bw(self, g, graph):
        e = self._saved[0].get(self, graph)
        return g / 2.0 ** (e.to(g.dtype) if isinstance(e, Tensor) else e.astype(g.dtype)),


def _frexp_type():
    from .reduction import return_type
    return return_type("frexp", ("mantissa", "exponent"))


RT_FREXP = _frexp_type()


@op()
def frexp(input):
    """(mantissa, exponent) with input = mantissa * 2**exponent, 0.5 <= |mantissa| < 1;
    FrexpBackward0 on the mantissa."""
    _need_tensor("frexp", input, 1, "input")
    d = input._data
    if d.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(d)
    m = np.asarray(m).astype(d.dtype, copy=False)
    ex = _make(np.asarray(e).astype(np.int32))
    if STATE.enabled and input._requires_grad:
        return RT_FREXP(record(m, FrexpBackward0((edge_of(input),), (Saved(ex),))), ex)
    return RT_FREXP(_make(m), ex)


# --- nextafter ---------------------------------------------------------------------------------
class NextafterBackward0(Node):
    """The gradient passes to ``input`` where it differs from ``other``; ``other`` gets
    zeros (PyTorch saves both)."""
    __slots__ = ()

    def _bw(self, g, graph):
        sa, sb, ash, bsh = self._saved
        a, b = sa.get(self, graph), sb.get(self, graph)
        ga = gb = None
        if self.next_functions[0][0] is not None:
            same = X.const(np.asarray(X.data(a) == X.data(b)), g)
            ga = sum_to(X.where(same, X.zeros_like(g), g), ash)
        if self.next_functions[1][0] is not None:
            gb = X.zeros_like(sum_to(g, bsh))
        return ga, gb


def _nextafter(p, input, other):
    """The next floating-point value after ``input`` towards ``other``; NextafterBackward0."""
    _need_tensor("nextafter", input, 1, "input")
    _need_tensor("nextafter", other, 1 + p)
    ad, bd, rt = _operands(input, other, "nextafter")
    if rt.kind != "f":
        raise _not_impl("nextafter_cpu", rt)
    data = _arith_quiet(np.nextafter, ad, bd).astype(rt, copy=False)
    if STATE.enabled and (input._requires_grad or other._requires_grad):
        node = NextafterBackward0((edge_of(input), edge_of(other)),
                                  (Saved(input), Saved(other), ad.shape, bd.shape))
        node._casts = (input._data.dtype if input._data.dtype != rt else None,
                       other._data.dtype if other._data.dtype != rt else None)
        return record(data, node)
    return _make(data)


nextafter = dual("nextafter", _nextafter)


# --- in-place forms --------------------------------------------------------------------------
def _inplace(name, fn, function=False, arg=None, pre=None, dunder=()):
    """``Tensor.<name>`` (and ``dyngrad.<name>`` when ``function``): ``fn`` in place.  ``arg``
    names the tensor argument PyTorch requires (a number is refused with its message)."""
    def make(p):
        def f(self, other):
            from .inplace import apply
            if arg is not None:
                _need_tensor(name, self, 1, "input")
                _need_tensor(name, other, 1 + p, arg)
            if pre is not None:
                pre(self, other)
            if isinstance(self, Tensor) and (isinstance(other, Tensor) or _is_scalar(other)):
                rt = _operands(self, other, name)[2]
                dt = self._data.dtype
                if not np.can_cast(rt, dt, casting="same_kind"):
                    raise RuntimeError(f"result type {D.scalar_type_name(rt)} can't be cast to "
                                       f"the desired output type {D.scalar_type_name(dt)}")
            return apply(self, fn, other)

        f.__name__ = f.__qualname__ = name
        f.__doc__ = f"In-place {name[:-1]}; returns self."
        return f

    if function:
        op(name, method=False)(make(1))
    op("_" + name + "_method", function=False, method=False, methods=(name,) + dunder)(make(0))
    return make(1)


def _ldexp_pre(self, other):
    if self._data.dtype.kind not in "fc":
        raise RuntimeError(f"ldexp can't be cast to the desired output type "
                           f"{D.scalar_type_name(self._data.dtype)}")


gcd_ = _inplace("gcd_", gcd, function=True, arg="other")
lcm_ = _inplace("lcm_", lcm, function=True, arg="other")
ldexp_ = _inplace("ldexp_", ldexp, function=True, arg="other", pre=_ldexp_pre)
heaviside_ = _inplace("heaviside_", heaviside, arg="values")
nextafter_ = _inplace("nextafter_", nextafter, arg="other")
bitwise_left_shift_ = _inplace("bitwise_left_shift_", bitwise_left_shift,
                               dunder=("__ilshift__",))
bitwise_right_shift_ = _inplace("bitwise_right_shift_", bitwise_right_shift,
                                dunder=("__irshift__",))
