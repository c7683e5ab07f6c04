"""Rows for the in-place ``polygamma_`` (src/dyngrad/ops/special.py), on a non-leaf copy of
its input.  (The private ``_special_*`` entries are reached by the ``special.<name>`` rows of
tests/optable/special.py.)"""
import scipy.special as sp

from tests.optable import OpInfo, S

POS = [S((3, 4), domain=(0.3, 3.0)), S((), domain=(0.3, 3.0))]

ROWS = [
    OpInfo("polygamma_", lambda x: (x * 1).polygamma_(1), lambda x: sp.polygamma(1, x), POS,
           "PolygammaBackward1"),
    OpInfo("polygamma_0_", lambda x: (x * 1).polygamma_(0), sp.psi, POS[:1],
           "PolygammaBackward1"),
]
