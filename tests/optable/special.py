"""Rows for the special functions (``dyngrad.special`` and the gamma family at top level) and
the inverse hyperbolic functions, deg2rad, rad2deg, angle.  Domains keep away from poles and
branch points; references are SciPy's and NumPy's."""
import numpy as np
import scipy.special as sp

import dyngrad as torch
from tests.optable import OpInfo, S


def _dom(lo, hi, shapes=((3, 4), (), (0, 3))):
    return [S(shp, domain=(lo, hi)) for shp in shapes]


U = _dom(-2.0, 2.0)
POS = _dom(0.3, 3.0)
UNIT = _dom(-0.8, 0.8)
PROB = _dom(0.05, 0.95)
BCPOS = [S((3, 4), (3, 4), domain=(0.3, 2.0)), S((3, 4), (4,), domain=(0.3, 2.0)),
         S((2, 1, 3), (4, 1), domain=(0.3, 2.0)), S((), (3,), domain=(0.3, 2.0))]

# constant first arguments of the ops differentiable only in their second (zeta, igamma)
A34 = torch.tensor(np.random.RandomState(5).uniform(1.5, 3.0, (3, 4)))
A4 = torch.tensor(np.random.RandomState(6).uniform(0.5, 2.5, (4,)))


def _mvlgamma(x, p):
    return sum(sp.gammaln(x - i / 2) for i in range(p)) + p * (p - 1) / 4 * np.log(np.pi)


def _softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


def _sinc(x):
    return np.sinc(x)


def _angle(x):
    return np.where(x < 0, np.pi, 0.0)


ROWS = [
    # --- gamma family ------------------------------------------------------------------------
    OpInfo("lgamma", torch.lgamma, sp.gammaln, POS + _dom(-0.8, -0.2, ((5,),)), "LgammaBackward0"),
    OpInfo("lgamma_method", lambda x: x.lgamma(), sp.gammaln, POS[:1], "LgammaBackward0"),
    OpInfo("digamma", torch.digamma, sp.psi, POS + _dom(-0.8, -0.2, ((5,),)), "DigammaBackward0"),
    OpInfo("polygamma_1", lambda x: torch.polygamma(1, x), lambda x: sp.polygamma(1, x), POS,
           "PolygammaBackward0"),
    OpInfo("polygamma_2", lambda x: torch.polygamma(2, x), lambda x: sp.polygamma(2, x), POS,
           "PolygammaBackward0"),
    OpInfo("polygamma_0", lambda x: torch.polygamma(0, x), sp.psi, POS[:2], "PolygammaBackward0"),
    OpInfo("polygamma_method", lambda x: x.polygamma(3), lambda x: sp.polygamma(3, x), POS[:2],
           "PolygammaBackward0"),
    OpInfo("mvlgamma_1", lambda x: torch.mvlgamma(x, 1), lambda x: _mvlgamma(x, 1), POS,
           "MvlgammaBackward0"),
    OpInfo("mvlgamma_3", lambda x: torch.mvlgamma(x, p=3), lambda x: _mvlgamma(x, 3),
           _dom(1.5, 4.0), "MvlgammaBackward0"),
    OpInfo("special.gammaln", lambda x: torch.special.gammaln(x), sp.gammaln, POS[:2],
           "LgammaBackward0"),
    OpInfo("special.digamma", lambda x: torch.special.digamma(x), sp.psi, POS[:2],
           "DigammaBackward0"),
    OpInfo("special.psi", lambda x: torch.special.psi(x), sp.psi, POS[:2], "DigammaBackward0"),
    OpInfo("special.polygamma", lambda x: torch.special.polygamma(2, x),
           lambda x: sp.polygamma(2, x), POS[:2], "PolygammaBackward0"),
    OpInfo("special.multigammaln", lambda x: torch.special.multigammaln(x, 2),
           lambda x: _mvlgamma(x, 2), _dom(1.0, 3.0), "MvlgammaBackward0"),
    OpInfo("special.zeta_scalar_self", lambda q: torch.special.zeta(3.0, q),
           lambda q: sp.zeta(3.0, q), POS, "SpecialZetaBackward1"),
    OpInfo("special.zeta_const_self", lambda q: torch.special.zeta(A34, q),
           lambda q: sp.zeta(A34.numpy(), q),
           [S((3, 4), domain=(0.3, 3.0)), S((4,), domain=(0.3, 3.0))], "SpecialZetaBackward0",
           float32_ok=False),
    OpInfo("special.zeta_forward", lambda x, q: torch.special.zeta(x, q), sp.zeta,
           [S((3, 4), (4,), domain=(1.5, 3.0)), S((), (3,), domain=(1.5, 3.0))], grad=False),
    OpInfo("igamma", lambda x: torch.igamma(A4, x), lambda x: sp.gammainc(A4.numpy(), x),
           [S((3, 4), domain=(0.3, 3.0)), S((4,), domain=(0.3, 3.0))], "IgammaBackward0",
           float32_ok=False),
    OpInfo("igammac", lambda x: torch.igammac(A4, x), lambda x: sp.gammaincc(A4.numpy(), x),
           [S((3, 4), domain=(0.3, 3.0)), S((), domain=(0.3, 3.0))], "IgammacBackward0",
           float32_ok=False),
    OpInfo("igamma_method", lambda a, x: a.igamma(x), sp.gammainc,
           [S((3, 4), (4,), domain=(0.3, 3.0))], grad=False),
    OpInfo("igammac_method", lambda a, x: a.igammac(x), sp.gammaincc,
           [S((4,), (3, 4), domain=(0.3, 3.0))], grad=False),
    OpInfo("special.gammainc", lambda x: torch.special.gammainc(A34, x),
           lambda x: sp.gammainc(A34.numpy(), x), [S((3, 4), domain=(0.3, 3.0))],
           "IgammaBackward0", float32_ok=False),
    OpInfo("special.gammaincc", lambda x: torch.special.gammaincc(A34, x),
           lambda x: sp.gammaincc(A34.numpy(), x), [S((4,), domain=(0.3, 3.0))],
           "IgammacBackward0", float32_ok=False),
    OpInfo("igamma_forward", torch.igamma, sp.gammainc,
           [S((3, 4), (4,), domain=(0.3, 3.0))], grad=False),
    # --- error functions and the normal distribution -------------------------------------------
    OpInfo("erfinv", torch.erfinv, sp.erfinv, UNIT, "ErfinvBackward0"),
    OpInfo("special.erfinv", lambda x: torch.special.erfinv(x), sp.erfinv, UNIT[:1],
           "ErfinvBackward0"),
    OpInfo("special.erf", lambda x: torch.special.erf(x), sp.erf, U[:2], "ErfBackward0"),
    OpInfo("special.erfc", lambda x: torch.special.erfc(x), sp.erfc, U[:2], "ErfcBackward0"),
    OpInfo("special.erfcx", lambda x: torch.special.erfcx(x), sp.erfcx, U,
           "SpecialErfcxBackward0"),
    OpInfo("special.ndtr", lambda x: torch.special.ndtr(x), sp.ndtr, U, "MulBackward1",
           notes="PyTorch's ndtr is composite: (1 + erf(x * M_SQRT1_2)) * 0.5"),
    OpInfo("special.ndtri", lambda x: torch.special.ndtri(x), sp.ndtri, PROB,
           "SpecialNdtriBackward0"),
    OpInfo("special.log_ndtr", lambda x: torch.special.log_ndtr(x), sp.log_ndtr,
           U + _dom(-6.0, -3.0, ((5,),)), "SpecialLogNdtrBackward0"),
    # --- modified Bessel functions -------------------------------------------------------------
    OpInfo("i0", torch.i0, sp.i0, U, "I0Backward0"),
    OpInfo("special.i0", lambda x: torch.special.i0(x), sp.i0, U[:1], "I0Backward0"),
    OpInfo("special.i0e", lambda x: torch.special.i0e(x), sp.i0e, U, "SpecialI0EBackward0"),
    OpInfo("special.i1", lambda x: torch.special.i1(x), sp.i1, U, "SpecialI1Backward0"),
    OpInfo("special.i1e", lambda x: torch.special.i1e(x), sp.i1e, U, "SpecialI1EBackward0"),
    # --- elementary functions under torch.special names ----------------------------------------
    OpInfo("special.entr", lambda x: torch.special.entr(x), sp.entr, POS, "SpecialEntrBackward0"),
    OpInfo("sinc", torch.sinc, _sinc, U, "SincBackward0"),
    OpInfo("special.sinc", lambda x: torch.special.sinc(x), _sinc, U[:2], "SincBackward0"),
    OpInfo("special.expit", lambda x: torch.special.expit(x), sp.expit, U[:2],
           "SigmoidBackward0"),
    OpInfo("special.logit", lambda x: torch.special.logit(x), sp.logit, PROB[:2],
           "LogitBackward0"),
    OpInfo("special.logit_eps", lambda x: torch.special.logit(x, eps=0.1),
           lambda x: sp.logit(np.clip(x, 0.1, 0.9)), PROB[:1], "LogitBackward0"),
    OpInfo("special.exp2", lambda x: torch.special.exp2(x), np.exp2, U[:2], "Exp2Backward0"),
    OpInfo("special.expm1", lambda x: torch.special.expm1(x), np.expm1, U[:2], "Expm1Backward0"),
    OpInfo("special.log1p", lambda x: torch.special.log1p(x), np.log1p, POS[:2], "Log1PBackward0"),
    OpInfo("special.round", lambda x: torch.special.round(x), np.round, U[:2], "RoundBackward1",
           gradgrad=False),
    OpInfo("special.xlogy", lambda x, y: torch.special.xlogy(x, y), sp.xlogy, BCPOS,
           "XlogyBackward0"),
    OpInfo("special.xlog1py", lambda x, y: torch.special.xlog1py(x, y), sp.xlog1py, BCPOS,
           "SpecialXlog1PyBackward0"),
    OpInfo("special.xlog1py_scalar_other", lambda x: torch.special.xlog1py(x, 2.5),
           lambda x: sp.xlog1py(x, 2.5), U, "SpecialXlog1PyBackward2"),
    OpInfo("special.xlog1py_scalar_self", lambda y: torch.special.xlog1py(2.0, y),
           lambda y: sp.xlog1py(2.0, y), POS, "SpecialXlog1PyBackward1"),
    OpInfo("special.logsumexp", lambda x: torch.special.logsumexp(x, 1),
           lambda x: sp.logsumexp(x, 1), [S((3, 4))], "LogsumexpBackward0"),
    OpInfo("special.softmax", lambda x: torch.special.softmax(x, 1), lambda x: _softmax(x, 1),
           [S((3, 4))], "SoftmaxBackward0"),
    OpInfo("special.log_softmax", lambda x: torch.special.log_softmax(x, 0),
           lambda x: np.log(_softmax(x, 0)), [S((3, 4))], "LogSoftmaxBackward0"),
    # --- functions PyTorch does not differentiate ----------------------------------------------
    *[OpInfo(f"special.{n}", (lambda n: lambda x: getattr(torch.special, n)(x))(n), ref, samples,
             grad=False)
      for n, ref, samples in [
          ("bessel_j0", sp.j0, U), ("bessel_j1", sp.j1, U), ("bessel_y0", sp.y0, POS),
          ("bessel_y1", sp.y1, POS), ("modified_bessel_i0", sp.i0, U),
          ("modified_bessel_i1", sp.i1, U), ("modified_bessel_k0", sp.k0, POS),
          ("modified_bessel_k1", sp.k1, POS), ("scaled_modified_bessel_k0", sp.k0e, POS),
          ("scaled_modified_bessel_k1", sp.k1e, POS),
          ("spherical_bessel_j0", lambda x: sp.spherical_jn(0, x), U),
          ("airy_ai", lambda x: sp.airy(x)[0], U)]],
    # --- inverse hyperbolic functions, degrees, angle ------------------------------------------
    OpInfo("asinh", torch.asinh, np.arcsinh, U, "AsinhBackward0"),
    OpInfo("arcsinh", lambda x: torch.arcsinh(x), np.arcsinh, U[:2], "AsinhBackward0"),
    OpInfo("acosh", torch.acosh, np.arccosh, _dom(1.2, 3.0), "AcoshBackward0"),
    OpInfo("arccosh", lambda x: x.arccosh(), np.arccosh, _dom(1.2, 3.0)[:1], "AcoshBackward0"),
    OpInfo("atanh", torch.atanh, np.arctanh, UNIT, "AtanhBackward0"),
    OpInfo("arctanh", lambda x: torch.arctanh(x), np.arctanh, UNIT[:2], "AtanhBackward0"),
    OpInfo("deg2rad", torch.deg2rad, np.deg2rad, U, "Deg2RadBackward0"),
    OpInfo("rad2deg", torch.rad2deg, np.rad2deg, U, "Rad2DegBackward0"),
    OpInfo("angle", torch.angle, _angle, U, "AngleBackward0"),
]
