"""Rows for the dyngrad.special functions registered as private entries (``_special_i0e``
... reached only as ``dyngrad.special.<name>``) and the in-place ``polygamma_``."""
import numpy as np
import scipy.special as sp

import dyngrad as torch
from tests.optable import OpInfo, S

U = [S((3, 4)), S(()), S((0, 3))]
POS = [S((3, 4), domain=(0.3, 3.0)), S((), domain=(0.3, 3.0))]
PROB = [S((3, 4), domain=(0.05, 0.95)), S((), domain=(0.05, 0.95))]


def _entr(x):
    return -x * np.log(x)


ROWS = [
    OpInfo("special.i0e", lambda x: torch.special.i0e(x), sp.i0e, U, "SpecialI0EBackward0"),
    OpInfo("special.i1", lambda x: torch.special.i1(x), sp.i1, U, "SpecialI1Backward0"),
    OpInfo("special.i1e", lambda x: torch.special.i1e(x), sp.i1e, U, "SpecialI1EBackward0"),
    OpInfo("special.erfcx", lambda x: torch.special.erfcx(x), sp.erfcx, U,
           "SpecialErfcxBackward0"),
    OpInfo("special.ndtri", lambda x: torch.special.ndtri(x), sp.ndtri, PROB,
           "SpecialNdtriBackward0"),
    OpInfo("special.log_ndtr", lambda x: torch.special.log_ndtr(x), sp.log_ndtr,
           U + [S((4,), domain=(-30.0, -10.0))], "SpecialLogNdtrBackward0"),
    OpInfo("special.entr", lambda x: torch.special.entr(x), _entr, POS, "SpecialEntrBackward0"),
    OpInfo("polygamma_", lambda x: (x * 1).polygamma_(1), lambda x: sp.polygamma(1, x), POS,
           "PolygammaBackward1"),
    OpInfo("polygamma_0_", lambda x: (x * 1).polygamma_(0), sp.psi, POS[:1],
           "PolygammaBackward1"),
]
