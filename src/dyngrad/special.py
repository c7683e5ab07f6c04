"""``dyngrad.special``: PyTorch's ``torch.special`` namespace.

Every function of ``torch.special`` that dyngrad computes is here, with PyTorch's backward
nodes (``special.i0e`` records SpecialI0EBackward0, ``special.gammaln`` LgammaBackward0, ...);
the Bessel, Airy and polynomial functions record no gradient, as in PyTorch.  A name
``torch.special`` has and this module lacks raises AttributeError.

>>> import dyngrad as torch
>>> torch.special.expit(torch.tensor([0.0]))
tensor([0.5000])
"""
from ._argcheck import guard as _guard
from ._tensor import Tensor  # noqa: F401 - torch.special.Tensor
from .ops import binary as _B, reduction as _R, special as _S, unary as _U

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "digamma", "entr", "erf",
    "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln",
    "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
    "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy",
    "zeta",
]


def _g(fn, name):
    return _guard(fn, "special_" + name)


# the gamma family
gammaln = _g(_S.lgamma, "gammaln")
digamma = _g(_S.digamma, "digamma")
psi = _g(_S.digamma, "psi")
polygamma = _g(_S.polygamma, "polygamma")
multigammaln = _g(_S.mvlgamma, "multigammaln")
gammainc = _g(_S.igamma, "gammainc")
gammaincc = _g(_S.igammac, "gammaincc")
zeta = _g(_S.special_zeta, "zeta")

# error functions and the normal distribution
erf = _g(_U.erf, "erf")
erfc = _g(_U.erfc, "erfc")
erfcx = _g(_S.special_erfcx, "erfcx")
erfinv = _g(_S.erfinv, "erfinv")
ndtr = _g(_S.special_ndtr, "ndtr")
ndtri = _g(_S.special_ndtri, "ndtri")
log_ndtr = _g(_S.special_log_ndtr, "log_ndtr")

# modified Bessel functions (differentiable), and the ones PyTorch does not differentiate
i0 = _g(_S.i0, "i0")
i0e = _g(_S.special_i0e, "i0e")
i1 = _g(_S.special_i1, "i1")
i1e = _g(_S.special_i1e, "i1e")
bessel_j0 = _g(_S.special_bessel_j0, "bessel_j0")
bessel_j1 = _g(_S.special_bessel_j1, "bessel_j1")
bessel_y0 = _g(_S.special_bessel_y0, "bessel_y0")
bessel_y1 = _g(_S.special_bessel_y1, "bessel_y1")
modified_bessel_i0 = _g(_S.special_modified_bessel_i0, "modified_bessel_i0")
modified_bessel_i1 = _g(_S.special_modified_bessel_i1, "modified_bessel_i1")
modified_bessel_k0 = _g(_S.special_modified_bessel_k0, "modified_bessel_k0")
modified_bessel_k1 = _g(_S.special_modified_bessel_k1, "modified_bessel_k1")
scaled_modified_bessel_k0 = _g(_S.special_scaled_modified_bessel_k0, "scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _g(_S.special_scaled_modified_bessel_k1, "scaled_modified_bessel_k1")
spherical_bessel_j0 = _g(_S.special_spherical_bessel_j0, "spherical_bessel_j0")
airy_ai = _g(_S.special_airy_ai, "airy_ai")

# elementary functions under their torch.special names
entr = _g(_S.special_entr, "entr")
sinc = _g(_S.sinc, "sinc")
expit = _g(_U.sigmoid, "expit")
logit = _g(_U.logit, "logit")
exp2 = _g(_U.exp2, "exp2")
expm1 = _g(_U.expm1, "expm1")
log1p = _g(_U.log1p, "log1p")
round = _g(_U.special_round, "round")  # noqa: A001 - torch.special.round
xlogy = _g(_B.xlogy, "xlogy")
xlog1py = _g(_S.special_xlog1py, "xlog1py")
logsumexp = _g(_R.logsumexp, "logsumexp")


def softmax(input, dim, *, dtype=None):
    """softmax along ``dim`` (``input`` cast to ``dtype`` first when given)."""
    from .ops.activation import softmax as _softmax
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """log_softmax along ``dim`` (``input`` cast to ``dtype`` first when given)."""
    from .ops.activation import log_softmax as _log_softmax
    return _log_softmax(input, dim, dtype=dtype)


softmax = _g(softmax, "softmax")
log_softmax = _g(log_softmax, "log_softmax")
