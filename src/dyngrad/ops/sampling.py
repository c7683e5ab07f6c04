"""Random sampling in place (``uniform_``, ``normal_``, ``bernoulli_``, ``exponential_``,
``geometric_``, ``log_normal_``, ``cauchy_``, ``random_``) and the ``bernoulli`` and
``multinomial`` methods.

The numbers come from dyngrad's generator (``dyngrad.manual_seed`` or a ``Generator``
argument make them reproducible; they are not PyTorch's stream).  Arguments, dtypes and their
errors are checked in PyTorch's order.  Like every in-place op they bump the version counter,
refuse a leaf that requires grad while recording, and on a tensor with history record PyTorch's
node (UniformBackward0, NormalBackward0, ...) whose gradient is zero."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .. import _out
from .._out import handles_out
from .._random import rng
from ._spec import defop, defrandom, front
from . import _dual as X
from ._dual import zeros_like
from .._record import STATE, Node, Tensor, edge_of, record
from .. import _warn

_make = Tensor._make
_NUMBER = (int, float, np.integer, np.floating)


# --- nodes of the out-of-place samplers: the gradient of a sample is zero -----------------------
class _ZeroGrad(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return zeros_like(g),


def _zero_node(name):
    cls = type(name, (_ZeroGrad,), {"__slots__": (), "__module__": __name__})
    globals()[name] = cls
    return cls


NormalBackward1 = _zero_node("NormalBackward1")  # normal(Tensor mean, float std)
NormalBackward2 = _zero_node("NormalBackward2")  # normal(float mean, Tensor std)


class NormalBackward3(Node):
    """normal(Tensor mean, Tensor std): zero for both (their own shapes)."""
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        return tuple(X.zeros(s, g) for s in self._saved)


# --- helpers -----------------------------------------------------------------------------------
def _num(v):
    """A number as PyTorch prints it in messages (C++'s default stream format: 2, 0.5, 3e+38)."""
    return f"{float(v):g}"


def _float_arg(fn, name, pos, v):
    if isinstance(v, Tensor) and v._data.ndim == 0 and (v._data.dtype.kind in "biu"
                                                       or v._data.dtype in D.FLOATING):
        return float(v._data)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, _NUMBER):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be float, not "
                        f"{D.type_name(v)}")
    return float(v)


def _not_impl(kernel, dt):
    return NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(dt)}\'')


def _real_draw(dt, make):
    """``make(shape)`` for real dtypes; complex dtypes get independent real and imaginary
    parts (PyTorch samples the view as real)."""
    def draw(shape, dtype):
        if dtype.kind == "c":
            return make(shape) + 1j * make(shape)
        return make(shape)
    return draw


def _nothing(shape, dtype):
    """The draw of an empty tensor (PyTorch returns before its kernel, after counting the
    in-place change)."""
    return np.zeros(shape, dtype)


def _gen(generator):
    return rng(generator)


# --- uniform_ / normal_ --------------------------------------------------------------------------
def _finfo(dt):
    return D.np_finfo(np.float32 if dt.kind == "c" and dt.itemsize == 8 else
                    np.float64 if dt.kind == "c" else dt)


@defrandom("uniform_", node="UniformBackward0")
def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
    """Uniform numbers in [from, to), in place."""
    if "from" in kw:
        from_ = kw.pop("from")
    if kw:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kw))}'")
    lo = _float_arg("uniform_", "from", 1, from_)
    hi = _float_arg("uniform_", "to", 2, to)
    dt = self.dtype
    if dt.kind == "c" and not self.size:
        return _nothing, 0
    if dt not in D.INEXACT:
        raise _not_impl("check_uniform_bounds", dt)
    fi = _finfo(dt)
    name = D.c_name(dt if dt in D.FLOATING else fi.dtype)
    if not float(fi.min) <= lo <= float(fi.max):
        raise RuntimeError(f"from is out of bounds for {name}")
    if not float(fi.min) <= hi <= float(fi.max):
        raise RuntimeError(f"to is out of bounds for {name}")
    if lo > hi:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_num(lo)} > to={_num(hi)}")
    if hi - lo > float(fi.max):
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<"
                           f"{D.scalar_type_name(fi.dtype)}>::max(), but found to={_num(hi)} "
                           f"and from={_num(lo)} which result in to-from to exceed the limit")
    g = _gen(generator)
    return _real_draw(dt, lambda s: g.random(s) * (hi - lo) + lo), 0


@defrandom("normal_", node="NormalBackward0")
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Normal numbers of ``mean`` and ``std``, in place (complex: std/sqrt(2) per part)."""
    m = _float_arg("normal_", "mean", 1, mean)
    s = _float_arg("normal_", "std", 2, std)
    if not s >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(s)}")
    dt = self.dtype
    if dt not in D.INEXACT and self.size:
        raise _not_impl("normal_kernel_cpu", dt)
    g = _gen(generator)
    if dt.kind == "c":
        s = s / math.sqrt(2.0)
    return _real_draw(dt, lambda sh: g.standard_normal(sh) * s + m), 0


# --- bernoulli_ / bernoulli ----------------------------------------------------------------------
def _check_p_tensor(p):
    _check_p_array(p._data)


def _check_p_array(pd):
    if pd.dtype not in D.FLOATING:
        raise _not_impl("bernoulli_tensor_cpu_p_", pd.dtype)
    if not ((pd >= 0) & (pd <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                           "this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")


@defrandom("bernoulli_", node=("BernoulliBackward2", "BernoulliBackward1"),
           inputs=("self", "p"))
def bernoulli_(self, p=0.5, *, generator=None):
    """1 with probability ``p`` (a number, or a tensor broadcast to this one), else 0, in
    place; BernoulliBackward2 (number) / BernoulliBackward1 (tensor)."""
    g = _gen(generator)
    d = self
    if isinstance(p, Tensor):
        if not d.size:
            return _nothing, 1, p
        if d.dtype.kind == "c":
            raise _not_impl("bernoulli_tensor_cpu_self_", d.dtype)
        _check_p_tensor(p)
        from .views import expand_shape
        expand_shape(p._data.shape, p._data.dtype, d.shape)  # PyTorch's expand error
        probs = p._data
        return (lambda s, dt: g.random(s) < probs), 1, p
    pv = _float_arg("bernoulli_", "p", 1, p)
    if not 0.0 <= pv <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(pv)}")
    if d.dtype.kind == "c" and d.size:
        raise _not_impl("bernoulli_scalar_cpu_", d.dtype)
    return (lambda s, dt: g.random(s) < pv), 0


@defop("bernoulli", node="BernoulliBackward0", function=False,
       batch=lambda spec, arrays, params: spec.forward(*arrays, **params))
def _bernoulli_probs(self, *, generator=None):
    """1 with probability ``input`` at each element, else 0: a new tensor of the input's
    dtype; BernoulliBackward0 (its gradient is zero)."""
    g = _gen(generator)
    if self.size:  # PyTorch: empty_like(input).bernoulli_(input)
        if self.dtype.kind == "c":
            raise _not_impl("bernoulli_tensor_cpu_self_", self.dtype)
        _check_p_array(self)
    return (g.random(self.shape) < self).astype(self.dtype)


_bernoulli_probs.backward(lambda ctx, grad: (X.zeros_like(grad),))
_bernoulli_probs.jvp(lambda ctx, tangent: X.zeros_like(tangent))


def _bernoulli(input, p=None, *, generator=None):
    """1 with probability ``input`` (or ``p``) at each element, else 0: a new tensor of the
    input's dtype; BernoulliBackward0 (no ``p``; its gradient is zero), PyTorch's
    not-implemented node with ``p``."""
    if p is None:
        if generator is None:
            return _bernoulli_probs.declared(input)  # (the quick call)
        return _bernoulli_probs.declared(input, generator=generator)
    if not isinstance(input, Tensor):
        raise D.not_tensor("bernoulli", "input", 1, input)
    d = input._data
    g = _gen(generator)
    pv = _float_arg("bernoulli", "p", 2, p)
    if not 0.0 <= pv <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={_num(pv)}")
    if d.dtype.kind == "c" and d.size:
        raise _not_impl("bernoulli_scalar_cpu_", d.dtype)
    data = (g.random(d.shape) < pv).astype(d.dtype)
    from .binary import _no_derivative
    return _no_derivative(data, "bernoulli", (input,))


front(_bernoulli_probs, _bernoulli)


@handles_out
def bernoulli(input, p=None, *, generator=None, out=None) -> Tensor:
    """1 with probability ``input`` (or ``p``) at each element, else 0."""
    if out is None:
        return _bernoulli(input, p, generator=generator)
    # PyTorch's bernoulli_out: any dtype, resized without a warning
    return _out.call("bernoulli", _bernoulli, (input,) if p is None else (input, p),
                     {"generator": generator, "out": out}, rule="any", warn_resize=False)


# --- exponential_ / geometric_ / log_normal_ / cauchy_ --------------------------------------------
@defrandom("exponential_", node="ExponentialBackward0")
def exponential_(self, lambd=1.0, *, generator=None):
    """Exponential numbers of rate ``lambd``, in place."""
    lam = _float_arg("exponential_", "lambd", 1, lambd)
    if not lam > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lam)}")
    dt = self.dtype
    if dt not in D.FLOATING and self.size:
        raise RuntimeError(f"Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{D.scalar_type_name(dt)}")
    g = _gen(generator)
    return (lambda s, d: g.exponential(1.0 / lam, s)), 0


@defrandom("geometric_", node="GeometricBackward0")
def geometric_(self, p=None, *, generator=None):
    """The number of Bernoulli(``p``) trials up to the first success (1, 2, ...), in place."""
    if p is None:
        raise TypeError('geometric_() missing 1 required positional arguments: "p"')
    pv = _float_arg("geometric_", "p", 1, p)
    if not 0.0 < pv < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(pv)}")
    dt = self.dtype
    if dt.kind not in "iu" and dt not in D.FLOATING and self.size:
        raise _not_impl("geometric_cpu", dt)
    g = _gen(generator)
    return (lambda s, d: g.geometric(pv, s)), 0


@defrandom("log_normal_", node="LogNormalBackward0")
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """exp of normal numbers of ``mean`` and ``std``, in place."""
    m = _float_arg("log_normal_", "mean", 1, mean)
    s = _float_arg("log_normal_", "std", 2, std)
    if not s > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(s)}")
    dt = self.dtype
    if dt not in D.FLOATING and self.size:
        raise _not_impl("log_normal_cpu", dt)
    g = _gen(generator)
    return (lambda sh, d: np.exp(g.standard_normal(sh) * s + m)), 0


@defrandom("cauchy_", node="CauchyBackward0")
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Cauchy numbers of ``median`` and scale ``sigma``, in place."""
    m = _float_arg("cauchy_", "median", 1, median)
    s = _float_arg("cauchy_", "sigma", 2, sigma)
    if not s > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(s)}")
    dt = self.dtype
    if dt not in D.FLOATING:
        raise RuntimeError(f"Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {D.c_name(dt)}")
    g = _gen(generator)
    return (lambda sh, d: g.standard_cauchy(sh) * s + m), 0


# --- random_ -------------------------------------------------------------------------------------
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _int_arg(v, what):
    if isinstance(v, Tensor) and v._data.ndim == 0 and v._data.dtype.kind in "iu":
        return int(v._data)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(what)
    return int(v)


def _digits(dt):
    return {np.dtype(np.float16): 11, D.BF16: 8, np.dtype(np.float32): 24,
            np.dtype(np.float64): 53}[dt]


def _as_float(v, dt):
    """``int(dt(v))`` computed as C++'s static_cast<int64_t>(static_cast<scalar_t>(v))."""
    with np.errstate(over="ignore"):
        r = float(np.asarray(v, np.float64).astype(dt))
    if not -2.0 ** 63 <= r < 2.0 ** 63:
        return _I64_MIN  # out of int64's range: x86 gives the lowest value
    return int(r)


def _update_from(v, dt):
    p1 = _as_float(v + 1, dt)
    if p1 < v:
        n = abs(v + 1).bit_length() - 1
        v = p1 + (1 << (n - _digits(dt) + 1))
    return v


def _update_to(v, dt):
    m1 = _as_float(v - 1, dt)
    if m1 >= v:
        n = abs(v - 1).bit_length() - 1
        v = m1 - (1 << (n - _digits(dt) + 1))
    return v


def _check_range(lo, hi_inc, dt):
    if dt in D.FLOATING:
        fi = D.np_finfo(dt)
        for v, name in ((lo, "from"), (hi_inc, "to - 1")):
            if not float(fi.min) <= v <= float(fi.max):
                raise RuntimeError(f"{name} is out of bounds for {D.c_name(dt)}")
        digits = _digits(dt)
        for v, name in ((lo, "from"), (hi_inc, "to - 1")):
            if v < -(1 << digits) or v > (1 << digits):
                _warn.warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to "
                           f"precision limitations {D.c_name(dt)} can support discrete "
                           f"uniform distribution only within this range. This warning will "
                           f"become an error in version 1.7 release, please fix the code in "
                           f"advance", UserWarning)
        return
    if dt.kind not in "biu":
        raise RuntimeError("check_random_bounds handles only integral, floating-point and "
                           "boolean types")
    info = (0, 1) if dt.kind == "b" else (int(np.iinfo(dt).min), int(np.iinfo(dt).max))
    for v, name in ((lo, "from"), (hi_inc, "to - 1")):
        if not info[0] <= v <= info[1]:
            raise RuntimeError(f"{name} is out of bounds for {D.c_name(dt)}")


def _integers(g, lo, hi_inc):
    def draw(shape, dt):
        return g.integers(lo, hi_inc, size=shape, dtype=np.int64, endpoint=True)
    return draw


def _dtype_max(dt):
    if dt in D.FLOATING:
        return 1 << _digits(dt)
    if dt.kind == "b":
        return 1
    return int(np.iinfo(dt).max)


@defrandom("random_", node=("RandomBackward0", "RandomBackward1", "RandomBackward2"))
def random_(self, *args, generator=None, **kwargs):
    """Random integers in place: ``random_()`` over [0, the dtype's largest exact integer],
    ``random_(to)`` over [0, to), ``random_(from, to)`` over [from, to) (``to=None``: up to
    the dtype's largest)."""
    names = ("from", "to")
    given = dict(zip(names[2 - len(args):] if len(args) == 1 else names, args))
    for k in kwargs:
        if k not in names or k in given:
            raise TypeError(f"random_() got an unexpected keyword argument '{k}'")
    given.update(kwargs)
    if len(args) > 2 or (len(args) == 1 and "to" in kwargs):
        raise TypeError("random_() received an invalid combination of arguments")
    bad = D.bad_combo("random_", list(args), kwargs)
    d = self
    dt = d.dtype
    g = _gen(generator)
    if not given:
        if dt.kind not in "biu" and dt not in D.FLOATING:
            if not d.size:
                return _nothing, 2
            raise _not_impl("random_kernel_cpu", dt)
        return _integers(g, 0, _dtype_max(dt)), 2
    lo = _int_arg(given.get("from", 0), bad.args[0])
    to = given.get("to")
    if to is not None:
        to = _int_arg(to, bad.args[0])
        if not lo < to:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} "
                               f">= to={to}")
        if dt in D.FLOATING:
            lo, to = _update_from(lo, dt), _update_to(to, dt)
            if not lo < to:
                raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than 'to' "
                                   f"casted to dtype, but got from={lo} >= to={to}")
        _check_range(lo, to - 1, dt)
        return _integers(g, lo, to - 1), 1 if "from" not in given else 0
    if lo == _I64_MIN:
        if not d.size:
            return _nothing, 0
        if dt.kind in "bc" or dt == np.float16:
            raise _not_impl("random_full_64_bits_range_kernel_cpu", dt)
        if dt not in (np.int64, np.float32, np.float64, D.BF16):
            raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, double, "
                               "float and bfloat16")
        return _integers(g, _I64_MIN, _I64_MAX), 0
    if dt in D.FLOATING:
        hi = min(1 << _digits(dt), _I64_MAX)
        lo = _update_from(lo, dt)
        if not lo < hi:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal "
                               f"to 'to_inc' casted to dtype, but got from={lo} > to_inc={hi}")
    elif dt.kind in "biu":
        hi = _dtype_max(dt)
    else:
        raise RuntimeError("random_from_to_impl handles only integral, floating-point and "
                           "boolean types")
    _check_range(lo, hi, dt)
    return _integers(g, lo, hi), 0


# --- multinomial (the method of dyngrad.multinomial) ---------------------------------------------
def _batch_multinomial(spec, arrays, params):
    x = arrays[0]
    r = spec.forward(x.reshape(-1, x.shape[-1]), **params)
    return r.reshape(x.shape[:-1] + r.shape[-1:])


@defop("multinomial", node=None, differentiable=False, function=False, batch=_batch_multinomial)
def _multinomial(self, num_samples, replacement=False, *, generator=None):
    """``num_samples`` category indices per row, drawn with the row as (unnormalised)
    probabilities (no derivative: indices)."""
    from .._factories import multinomial
    return multinomial(_make(self), num_samples, replacement, generator=generator)._data


# --- normal ------------------------------------------------------------------------------------
def _normal(mean, std=1.0, size=None, *, generator=None, dtype=None, layout=None, device=None,
            pin_memory=False, requires_grad=False):
    """Normal numbers of ``mean`` and ``std`` (tensors broadcast together, or numbers with a
    ``size``); PyTorch's overloads, dtypes, errors and zero-gradient nodes."""
    tm, ts = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not tm and (isinstance(mean, (bool, np.bool_)) or not isinstance(mean, _NUMBER)):
        raise D.not_tensor("normal", "mean", 1, mean)
    if not tm and not ts:
        if size is None:
            raise D.bad_combo("normal", (mean, std), None)
        m = _float_arg("normal", "mean", 1, mean)
        s = _float_arg("normal", "std", 2, std)
        if not s >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(s)}")
        from .._factories import _dt, _finish, _size
        dt = np.dtype(_dt(dtype, "normal"))
        if dt not in D.INEXACT:
            raise _not_impl("normal_kernel_cpu", dt)
        g = _gen(generator)
        shape = _size((size,), "normal")
        data = _real_draw(dt, lambda sh: g.standard_normal(sh) * s + m)(shape, dt)
        return _finish(np.asarray(data).astype(dt, copy=False), requires_grad)
    if size is not None or requires_grad or (
            dtype is not None and D.arg_dtype(dtype, "normal").np != (
                mean if tm else std)._data.dtype):
        raise D.bad_combo("normal", (mean, std) + ((size,) if size is not None else ()),
                          {"dtype": dtype} if dtype is not None else None)
    if tm and ts:
        if (std._data < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        dt, cls = mean._data.dtype, NormalBackward3
        shape = np.broadcast_shapes(mean._data.shape, std._data.shape)
        m, s = mean._data, std._data
    elif tm:
        s = _float_arg("normal", "std", 2, std)
        if not s >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(s)}")
        dt, cls, shape, m = mean._data.dtype, NormalBackward1, mean._data.shape, mean._data
    else:
        if (std._data < 0).any():
            raise RuntimeError("normal expects all elements of std >= 0.0")
        m = _float_arg("normal", "mean", 1, mean)
        dt, cls, shape, s = std._data.dtype, NormalBackward2, std._data.shape, std._data
    if dt not in D.INEXACT:
        raise _not_impl("normal_kernel_cpu", dt)
    g = _gen(generator)
    data = np.asarray(g.standard_normal(shape) * s + m).astype(dt, copy=False)
    ins = [t for t in (mean, std) if isinstance(t, Tensor)]
    if STATE.enabled and any(t._requires_grad for t in ins):
        saved = tuple(t._data.shape for t in ins) if cls is NormalBackward3 else ()
        return record(data, cls(tuple(edge_of(t) for t in ins), saved))
    return _make(data)


def _normal_out():
    """``normal``: the number forms write ``out`` as the factories do, the tensor forms as
    PyTorch's normal.Tensor_out (see ``_normal_tensor_out``)."""
    from .._factories import _out_variant
    from .._out import handles_out
    f = _out_variant("normal")(_normal)

    def normal(mean, std=1.0, size=None, *, generator=None, out=None, **kwargs):
        if out is not None and (isinstance(mean, Tensor) or isinstance(std, Tensor)):
            return _normal_tensor_out(mean, std, size, generator, out, kwargs)
        return f(mean, std, size, generator=generator, out=out, **kwargs)

    normal.__doc__ = _normal.__doc__
    return handles_out(normal)


def _normal_tensor_out(mean, std, size, generator, out, kwargs):
    """PyTorch's normal with tensor ``mean`` or ``std`` into ``out``: autograd refused, a
    floating ``out`` of any precision, resized as ops resize it; with a number ``std`` PyTorch
    adds ``mean`` into ``out`` in place first, so an ``out`` that does not broadcast with
    ``mean`` (an empty one too) raises that broadcast's error."""
    from .. import _out
    if not isinstance(out, Tensor):
        raise TypeError(f"normal(): argument 'out' must be Tensor, not {D.type_name(out)}")
    od = out._data.dtype
    if STATE.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in (mean, std, out)):
        raise RuntimeError("normal(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if od not in D.INEXACT:
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for "
                                  f"'{D.scalar_type_name(od)}'")
    from ..autograd.grad_mode import no_grad
    with no_grad():
        r = _normal(mean, std, size, generator=generator, **kwargs)
    have, want = out._data.shape, r._data.shape
    if not isinstance(std, Tensor) and have != want:
        for k in range(1, max(len(have), len(want)) + 1):
            a = want[-k] if k <= len(want) else 1
            b = have[-k] if k <= len(have) else 1
            if a != b and b != 1:
                raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                                   f"({b}) at non-singleton dimension {len(want) - k}")
    return _out.write(r, out, (), "any")


normal = _normal_out()
