"""Special functions (``torch.special`` and the gamma family at top level): lgamma, digamma,
polygamma, mvlgamma, erfinv, the modified Bessel functions i0/i0e/i1/i1e, erfcx, ndtr, ndtri,
log_ndtr, entr, sinc, xlog1py, zeta, igamma/igammac, and the non-differentiable Bessel, Airy
and orthogonal-polynomial functions.

Values come from ``scipy.special`` (imported the first time one of these ops runs, never at
``import dyngrad``), with PyTorch's own algorithm where PyTorch's values differ (trigamma,
ndtr, the polynomials) or its edge cases do.  Gradient formulas are PyTorch's
(derivatives.yaml) and are written once with the ``_dual`` helpers below: on ndarrays in a
plain backward, on Tensors (dyngrad ops, so differentiable again) under ``create_graph`` --
which also gives forward-mode tangents."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from . import OPS, inplace_of, op
from . import _dual as X
from .._record import (STATE, Node, Saved, Tensor, edge_of, quiet_off, quiet_on, record, sum_to)
from ._special import sp as _sp, erfcx as _erfcx_np
from ..autograd.errors import no_derivative, without_rule
from ._spec import defop, inplace_node, unary
from .binary import _binary, _float_pair, _scalar_ok

_make = Tensor._make
_isT = isinstance
_PI = math.pi
_SQRT_PI_2 = 0.5 * math.sqrt(math.pi)      # erfinv' = sqrt(pi)/2 exp(erfinv(x)^2)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_M_SQRT1_2 = math.sqrt(0.5)


# --- kernels (ndarray in, ndarray out, the input's floating dtype) ---------------------------
def _kernel(fn):
    """``fn``'s result as an array of the input's dtype.  Callers silence NumPy's
    floating-point warnings (the public functions and the backward engine do)."""
    def k(d, *args):
        r = np.asarray(fn(d, *args))
        return r if r.dtype == d.dtype else r.astype(d.dtype)

    return k


def _lgamma_np(d):
    r = _sp().gammaln(d)
    return np.where(d == -np.inf, np.inf, r)  # log|Gamma(-inf)| is +inf, as PyTorch's


def _trigamma_np(x):
    """PyTorch's trigamma (calc_trigamma: reflection, six recurrence steps, asymptotic
    series), whose values differ from SciPy's in the tenth digit."""
    x = np.asarray(x, dtype=np.float64)
    neg = x < 0.5
    s = np.sin(_PI * x)
    result = np.where(neg, -(_PI * _PI) / (s * s), 0.0)
    x = np.where(neg, 1 - x, x)
    for _ in range(6):
        result = result + 1 / (x * x)
        x = x + 1
    ixx = 1 / (x * x)
    result = result + (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x
    return np.where(neg, -result, result)


def _zeta_np(x, q):
    r = _sp().zeta(x, q)
    # PyTorch's Cephes loop gives NaN at q = inf (after its x == 1 -> inf check)
    return np.where(np.isposinf(q) & (x != 1), np.nan, r)


def _igamma_np(a, x, upper):
    """PyTorch's calc_igamma/calc_igammac: its edge cases first (NaN in the other argument
    passes through some of them), then SciPy's gammainc/gammaincc."""
    r = (_sp().gammaincc if upper else _sp().gammainc)(a, x)
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    nan = np.nan
    return np.select([(x < 0) | (a < 0), a == 0, x == 0, np.isinf(a), np.isinf(x)],
                     [nan, np.where(x > 0, hi, nan), lo, np.where(np.isinf(x), nan, lo), hi], r)


def _polygamma_np(d, n):
    if n == 0:
        return _sp().psi(d)
    if n == 1:
        return _trigamma_np(d)
    return ((1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0))) * \
        _zeta_np(np.asarray(n + 1.0, d.dtype), d)


def _mvlgamma_args(p, dtype):
    return np.arange(-p / 2. + 0.5, 0.5, 0.5).astype(dtype)


def _mvlgamma_np(d, p):
    r = _lgamma_np(d[..., None] + _mvlgamma_args(p, d.dtype)).sum(-1)
    return r + (p * (p - 1.0)) * math.log(_PI) * 0.25


def _sinc_np(d):
    xp = d * _PI
    return np.where(d == 0, np.ones((), d.dtype), np.sin(xp) / xp)


def _angle_np(d):
    if d.dtype.kind == "c":
        return np.angle(d)
    return np.where(np.isnan(d), d, np.where(d < 0, _PI, 0.0)).astype(d.dtype)


K = {name: _kernel(fn) for name, fn in {
    "lgamma": _lgamma_np,
    "digamma": lambda d: _sp().psi(d),
    "polygamma": _polygamma_np,
    "mvlgamma": _mvlgamma_np,
    "erfinv": lambda d: _sp().erfinv(d),
    "i0": lambda d: _sp().i0(d),
    "i0e": lambda d: _sp().i0e(d),
    "i1": lambda d: _sp().i1(d),
    "i1e": lambda d: _sp().i1e(d),
    "erfcx": _erfcx_np,
    "ndtri": lambda d: _sp().ndtri(d),
    "log_ndtr": lambda d: _sp().log_ndtr(d),
    "entr": lambda d: _sp().entr(d),
    "sinc": _sinc_np,
    "angle": _angle_np,
    "xlog1py": lambda a, b: _sp().xlog1py(a, b),
    "zeta": _zeta_np,
    "igamma": lambda a, b: _igamma_np(a, b, False),
    "igammac": lambda a, b: _igamma_np(a, b, True),
    "bessel_j0": lambda d: _sp().j0(d),
    "bessel_j1": lambda d: _sp().j1(d),
    "bessel_y0": lambda d: _sp().y0(d),
    "bessel_y1": lambda d: _sp().y1(d),
    "modified_bessel_i0": lambda d: _sp().i0(d),
    "modified_bessel_i1": lambda d: _sp().i1(d),
    "modified_bessel_k0": lambda d: _sp().k0(d),
    "modified_bessel_k1": lambda d: _sp().k1(d),
    "scaled_modified_bessel_k0": lambda d: _sp().k0e(d),
    "scaled_modified_bessel_k1": lambda d: _sp().k1e(d),
    "spherical_bessel_j0": lambda d: _sp().spherical_jn(0, d),
    "airy_ai": lambda d: _sp().airy(d)[0],
}.items()}


# --- dual helpers: the ndarray kernel in a plain backward, the dyngrad op under create_graph --
def _dual(name):
    k = K[name]

    def f(x):
        if _isT(x, Tensor):
            return globals()[name](x)
        return k(x)

    f.__name__ = name
    return f


lgamma_d, digamma_d, erfinv_d, i0_d, i0e_d, i1_d, i1e_d = map(
    _dual, ("lgamma", "digamma", "erfinv", "i0", "i0e", "i1", "i1e"))


def polygamma_d(n, x):
    if _isT(x, Tensor):
        return polygamma(n, x)
    return K["polygamma"](x, n)


def _zeta_d(a, q):
    """zeta(a, q) with ``a`` a tensor/array or a number."""
    if _isT(a, Tensor) or _isT(q, Tensor):
        return special_zeta(a, q)
    return K["zeta"](np.asarray(a, np.result_type(a, q)), q)


def _xlog1py_d(a, b):
    if _isT(a, Tensor) or _isT(b, Tensor):
        return special_xlog1py(a, b)
    return K["xlog1py"](np.asarray(a), b)


def _rsqrt(x):
    return X._t().rsqrt(x) if _isT(x, Tensor) else 1 / np.sqrt(x)


def _where(mask, a, b):
    """``a`` where ``mask`` (an ndarray of bools, broadcast to ``a``), else ``b`` (a number)."""
    mask = np.broadcast_to(mask, np.shape(a))
    if _isT(a, Tensor):
        return X._t().where(X.const(mask, a), a, b)
    return np.where(mask, a, np.asarray(b, a.dtype))


# --- unary ops ----------------------------------------------------------------------------
def _run(x, kern, name):
    """Shared forward of the functions PyTorch does not differentiate: integer/bool input
    becomes the default float, complex input is refused naming kernel ``name``; the result
    never requires grad."""
    d = x._data
    if d.dtype not in D.INEXACT:
        d = d.astype(D.DEFAULTS.float.np)
    elif d.dtype.kind == "c":
        raise NotImplementedError(f'"{name}" not implemented for '
                                  f"'{D.TYPE_NAMES[D.FROM_NP[d.dtype]].replace('Tensor', '')}'")
    tok = quiet_on()
    try:
        return _make(kern(d))
    finally:
        quiet_off(tok)


def _lgamma_bw(g, x, y):
    return g * digamma_d(x)


def _digamma_bw(g, x, y):
    return g * polygamma_d(1, x)


def _erfinv_bw(g, x, y):
    return _SQRT_PI_2 * X.exp(erfinv_d(x) ** 2) * g


def _i0_bw(g, x, y):
    return g * i1_d(x)


def _i0e_bw(g, x, y):
    return g * (i1e_d(x) - X.sign(x) * y)


def _i1_safe(x):
    xd = X.data(x)
    not_tiny = np.abs(xd) > D.np_finfo(xd.dtype).eps
    return not_tiny, _where(not_tiny, x, float(D.np_finfo(xd.dtype).eps))


def _i1_bw(g, x, y):
    not_tiny, safe = _i1_safe(x)
    gradx = i0_d(safe) - y * (1 / safe)
    return g * _where(not_tiny, gradx, 0.5)


def _i1e_bw(g, x, y):
    not_tiny, safe = _i1_safe(x)
    gradx = i0e_d(safe) - y * (X.sign(safe) + 1 / safe)
    return g * _where(not_tiny, gradx, 0.5)


def _erfcx_bw(g, x, y):
    return (2.0 * x * y - _TWO_OVER_SQRT_PI) * g


def _ndtri_bw(g, x, y):
    return g * _SQRT_2PI * X.exp(y * y / 2)


def _log_ndtr_bw(g, x, y):
    return g / _SQRT_2PI * X.exp(-(y + x * x / 2))


def _entr_bw(g, x, y):
    return g * -(1 + X.log(x))


def _sinc_bw(g, x, y):
    xp = x * _PI
    sq = x * x * _PI
    out = g * (xp * X.cos(xp) - X.sin(xp)) / sq
    return _where(X.data(sq) != 0, out, 0.0)


# One declaration each (ops/_spec.py ``unary``): integer input computes in the default float;
# ``complex_kernel`` is the CPU kernel PyTorch names when it refuses complex input.  The
# ``special_`` ones are torch.special's only (exposed by dyngrad.special, neither as
# dyngrad.<name> nor as Tensor.<name>).
lgamma = unary("lgamma", K["lgamma"], _lgamma_bw, module=__name__,
               complex_kernel="lgamma_vml_cpu").fn
digamma = unary("digamma", K["digamma"], _digamma_bw, module=__name__,
                complex_kernel="digamma").fn
erfinv = unary("erfinv", K["erfinv"], _erfinv_bw, module=__name__,
               complex_kernel="erfinv_vml_cpu").fn
i0 = unary("i0", K["i0"], _i0_bw, module=__name__, complex_kernel="i0_vml_cpu").fn
sinc = unary("sinc", K["sinc"], _sinc_bw, module=__name__).fn
_ONLY_SPECIAL = dict(module=__name__, function=False, method=False)
special_i0e = unary("special_i0e", K["i0e"], _i0e_bw, saved=("self", "result"),
                    node="SpecialI0EBackward0", complex_kernel="i0e_cpu", **_ONLY_SPECIAL).fn
special_i1 = unary("special_i1", K["i1"], _i1_bw, saved=("self", "result"),
                   node="SpecialI1Backward0", complex_kernel="i1_cpu", **_ONLY_SPECIAL).fn
special_i1e = unary("special_i1e", K["i1e"], _i1e_bw, saved=("self", "result"),
                    node="SpecialI1EBackward0", complex_kernel="i1e_cpu", **_ONLY_SPECIAL).fn
special_erfcx = unary("special_erfcx", K["erfcx"], _erfcx_bw, saved=("self", "result"),
                      complex_kernel="erfcx_cpu", **_ONLY_SPECIAL).fn
special_ndtri = unary("special_ndtri", K["ndtri"], _ndtri_bw, saved=("result",),
                      complex_kernel="ndtri_cpu", **_ONLY_SPECIAL).fn
special_log_ndtr = unary("special_log_ndtr", K["log_ndtr"], _log_ndtr_bw,
                         saved=("self", "result"), complex_kernel="log_ndtr_cpu",
                         **_ONLY_SPECIAL).fn
special_entr = unary("special_entr", K["entr"], _entr_bw, complex_kernel="entr_cpu",
                     **_ONLY_SPECIAL).fn
i0e, i1, i1e = special_i0e, special_i1, special_i1e  # what the dual helpers call on Tensors


def special_ndtr(input):
    """The standard normal CDF, as PyTorch computes it: ``(1 + erf(x / sqrt(2))) * 0.5``."""
    from .binary import add_scalar, mul_scalar
    from .unary import erf
    # PyTorch's composition: (1 + erf(x * M_SQRT1_2)) * 0.5 with C++ Scalars (MulBackward1,
    # AddBackward1, ErfBackward0, MulBackward1)
    return mul_scalar(add_scalar(erf(mul_scalar(input, _M_SQRT1_2)), 1), 0.5)


# --- polygamma / mvlgamma ----------------------------------------------------------------
def _polygamma_check(n):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{D.type_name(n)}")


@defop("_polygamma", node="PolygammaBackward0", saved=("self", "n"), promote="float",
       elementwise=True, function=False, method=False)
def _polygamma(self, n):
    """polygamma with the tensor first: the declaration behind ``polygamma(n, input)`` and
    ``Tensor.polygamma(n)``."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if self.dtype.kind == "c":  # PyTorch's kernel of that order names itself
        raise NotImplementedError(f'"{("digamma", "trigamma")[n] if n < 2 else "polygamma"}" '
                                  f"not implemented for '{D.scalar_type_name(self.dtype)}'")
    return K["polygamma"](self, n)


@_polygamma.backward
def _(ctx, grad):
    return (grad * polygamma_d(ctx.n + 1, ctx.self),)


_POLYGAMMA = _polygamma
_polygamma = _polygamma.fn


@op(method=False)
def polygamma(n, input):
    """The n-th derivative of digamma; PolygammaBackward0."""
    _polygamma_check(n)
    if not _isT(input, Tensor):
        raise D.not_tensor("polygamma", "input", 2, input)
    return _polygamma(input, int(n))


# the public function is the declaration's (its tensor second, as PyTorch's signature)
OPS["polygamma"].update(spec=_POLYGAMMA, nodes=("PolygammaBackward0",))
OPS.pop("_polygamma")


@op("_polygamma_method", function=False, method=False, methods=("polygamma",))
def _polygamma_method(self, n):
    """``x.polygamma(n)`` is ``polygamma(n, x)``."""
    return polygamma(n, self)


# the in-place ``polygamma_`` records PyTorch's own node for it
_polygamma1 = inplace_node(_POLYGAMMA, "PolygammaBackward1")
PolygammaBackward1 = _polygamma1.node_cls


def _polygamma_(self, n):
    """In-place ``polygamma(n, self)``; returns self (PolygammaBackward1)."""
    from .inplace import apply
    _polygamma_check(n)
    return apply(self, _polygamma1, int(n))


op("polygamma_", function=False)(_polygamma_)
inplace_of("polygamma_", "polygamma")


@defop("mvlgamma", node="MvlgammaBackward0", saved=("self", "p"), elementwise=True)
def mvlgamma(self, p):
    """The multivariate log-gamma function of dimension ``p``; MvlgammaBackward0."""
    if not isinstance(p, (int, np.integer)) or isinstance(p, bool):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{D.type_name(p)}")
    if self.dtype == np.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if self.dtype.kind == "c":  # PyTorch's arange of the input's dtype refuses it
        raise NotImplementedError(f'"arange_cpu" not implemented for '
                                  f"'{D.scalar_type_name(self.dtype)}'")
    if self.dtype.kind != "f":
        self = self.astype(D.DEFAULTS.float.np)
    return K["mvlgamma"](self, int(p))


@mvlgamma.backward
def _(ctx, grad):
    x, p = ctx.self, ctx.p
    # the sum of digamma over the p shifted arguments
    args = X.const(_mvlgamma_args(p, X.data(grad).dtype), grad)
    return (grad * X.sum_dims(digamma_d(X.unsqueeze_dims(x, (X.data(x).ndim,), 0) + args),
                              (X.data(x).ndim,), keepdim=False),)


mvlgamma = mvlgamma.fn


# --- binary ops: xlog1py, zeta, igamma, igammac --------------------------------------------
def _needs(node, i):
    return node.next_functions[i][0] is not None




def _xlog1py_self_grad(g, a, b):
    """xlog1py(g, other) with 0 where self == 0 and other <= -1."""
    r = _xlog1py_d(g, b)
    mask = (X.data(a) == 0) & (X.data(b) <= -1)
    return _where(~mask, r, 0.0)


class SpecialXlog1PyBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sa, sb, ash, bsh = self._saved
        a, b = sa.get(self, graph), sb.get(self, graph)
        ga = sum_to(_xlog1py_self_grad(g, a, b), ash) if _needs(self, 0) else None
        gb = sum_to(g * a / (b + 1), bsh) if _needs(self, 1) else None
        return ga, gb


class SpecialXlog1PyBackward1(Node):
    """Number self, tensor other."""
    __slots__ = ()

    def _bw(self, g, graph):
        a, sb = self._saved
        return g * a / (sb.get(self, graph) + 1),


class SpecialXlog1PyBackward2(Node):
    """Tensor self, number other."""
    __slots__ = ()

    def _bw(self, g, graph):
        sa, b = self._saved
        return _xlog1py_self_grad(g, sa.get(self, graph), b),


class SpecialZetaBackward0(Node):
    __slots__ = ()

    def _bw(self, g, graph):
        sa, sb, ash, bsh = self._saved
        if _needs(self, 0):
            raise no_derivative("zeta")
        a, b = sa.get(self, graph), sb.get(self, graph)
        return None, sum_to(g * -a * _zeta_d(a + 1., b), bsh)


class SpecialZetaBackward1(Node):
    """Number self, tensor other."""
    __slots__ = ()

    def _bw(self, g, graph):
        a, sb = self._saved
        return g * -a * _zeta_d(a + 1., sb.get(self, graph)),


class SpecialZetaBackward2(Node):
    """Tensor self, number other."""
    __slots__ = ()

    def _bw(self, g, graph):
        raise no_derivative("zeta")


# PyTorch has no forward-mode formula for zeta (nor for igamma and igammac, below)
for _cls, _op in ((SpecialZetaBackward0, "special_zeta"), (SpecialZetaBackward1, "special_zeta"),
                  (SpecialZetaBackward2, "special_zeta")):
    _cls._fw_rule = without_rule(_op)


def _binary_special(name, input, other, kern, cls0, cls1, cls2):
    """Tensor-tensor, number-tensor and tensor-number forms (int/bool become float)."""
    if not _isT(input, Tensor):
        if not _scalar_ok(input) or not _isT(other, Tensor):
            raise D.bad_combo(name, (input, other), {})
        b = other if other._data.dtype in D.INEXACT else other.to(D.DEFAULTS.float)
        a = float(input)
        tok = quiet_on()
        try:
            data = kern(np.asarray(a, b._data.dtype), b._data)
        finally:
            quiet_off(tok)
        if STATE.enabled and b._requires_grad:
            return record(data, cls1((edge_of(b),), (a, Saved(b))))
        return _make(data)
    if not _isT(other, Tensor) and not _scalar_ok(other):
        raise D.bad_combo(name, (input, other), {})
    a, b = _float_pair(input, other)
    if _isT(b, Tensor):
        return _binary(a, b, kern, cls0, True, True)
    tok = quiet_on()
    try:
        data = kern(a._data, np.asarray(b, a._data.dtype))
    finally:
        quiet_off(tok)
    if STATE.enabled and a._requires_grad:
        return record(data, cls2((edge_of(a),), (Saved(a), b)))
    return _make(data)


def special_xlog1py(input, other):
    """input * log1p(other), 0 where input is 0 (unless other is NaN);
    SpecialXlog1PyBackward0/1/2."""
    return _binary_special("special_xlog1py", input, other, K["xlog1py"],
                           SpecialXlog1PyBackward0, SpecialXlog1PyBackward1,
                           SpecialXlog1PyBackward2)


def special_zeta(input, other):
    """The Hurwitz zeta function zeta(input, other); SpecialZetaBackward0/1/2 (its derivative
    in ``input`` is not implemented, as in PyTorch)."""
    return _binary_special("special_zeta", input, other, K["zeta"], SpecialZetaBackward0,
                           SpecialZetaBackward1, SpecialZetaBackward2)


def _igamma_decl(name, upper, doc):
    """Declare igamma/igammac: an elementwise op of two floating tensors (integer ones are
    refused, as PyTorch's kernel refuses them) differentiable in ``other`` only, without a
    forward-mode formula (as in PyTorch)."""
    kern = K[name]

    def forward(self, other):
        return kern(self, other)

    forward.__name__ = forward.__qualname__ = name
    forward.__doc__ = doc
    forward.kernel = kern
    spec = defop(name, node=name.capitalize() + "Backward0", inputs=("self", "other"),
                 saved=("self", "other"), floating_kernel=name + "_cpu",
                 complex_kernel=name + "_cpu", elementwise=True)(forward)

    @spec.backward
    def _(ctx, grad):
        if ctx.needs(0):
            raise no_derivative(f"{name}: input")
        a, b = ctx.self, ctx.other
        # d/dx of the regularized gamma function: x**(a-1) e**-x / Gamma(a)
        g = grad * X.exp((a - 1) * X.log(b) - b - lgamma_d(a))
        return None, -g if upper else g

    spec.node_cls._fw_rule = without_rule(name)
    return spec.fn


igamma = _igamma_decl("igamma", False, "The regularized lower incomplete gamma function; "
                      "IgammaBackward0.")
igammac = _igamma_decl("igammac", True, "The regularized upper incomplete gamma function; "
                       "IgammacBackward0.")


# --- functions PyTorch does not differentiate (the result never requires grad) -------------
def _plain(name):
    kern = K[name]

    def f(input):
        return _run(input, kern, name + "_cpu")

    f.__name__ = f.__qualname__ = "special_" + name
    f.__doc__ = f"Elementwise {name} (PyTorch records no gradient for it)."
    globals()["special_" + name] = f
    return f


for _n in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
           "airy_ai"):
    _plain(_n)


# --- in-place forms that the shared list in ``inplace`` does not hold ----------------------
def _register_inplace():
    from .inplace import _unary_inplace
    from . import OPS
    for n in ("igamma", "igammac"):
        if n + "_" not in OPS:
            _unary_inplace(n + "_", n)


_register_inplace()
