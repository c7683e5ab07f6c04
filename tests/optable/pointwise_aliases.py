"""Rows for the pointwise aliases (subtract, multiply, divide, absolute, arcsin, arccos, arctan,
fix, positive), rsub, the reflected operators with a number on the left (``2.0 / x``,
``2.0 ** x``) and the in-place forms of the aliases."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

BC = [S((3, 4), (3, 4)), S((3, 4), (4,)), S((), (3,))]
BCPOS = [S(*s.shapes, domain=(0.3, 2.0)) for s in BC]
POS = [S((3, 4), domain=(0.3, 2.0)), S((), domain=(0.3, 2.0))]
UNIT = [S((3, 4), domain=(-0.8, 0.8)), S((), domain=(-0.8, 0.8))]
AWAY = [S((3, 4), domain=(0.2, 1.8)), S((), domain=(-1.8, -0.2))]  # away from the kink at 0


ROWS = [
    OpInfo("negative", lambda a: torch.negative(a) + a.negative(), lambda a: -2 * a, UNIT,
           "AddBackward0"),
    OpInfo("subtract", lambda a, b: torch.subtract(a, b, alpha=2), lambda a, b: a - 2 * b, BC,
           "SubBackward0"),
    OpInfo("subtract_method", lambda a, b: a.subtract(b), np.subtract, BC[:2], "SubBackward0"),
    OpInfo("rsub", lambda a, b: torch.rsub(a, b), lambda a, b: b - a, BC, "RsubBackward0"),
    OpInfo("rsub_number_alpha", lambda a: torch.rsub(a, 2.0, alpha=3), lambda a: 2.0 - 3 * a, POS,
           "RsubBackward1"),
    OpInfo("multiply", lambda a, b: torch.multiply(a, b) + a.multiply(2.0),
           lambda a, b: a * b + a * 2.0, BC, "AddBackward0"),
    OpInfo("divide", lambda a, b: torch.divide(a, b), np.divide, BCPOS, "DivBackward0"),
    OpInfo("divide_method", lambda a, b: a.divide(b, rounding_mode=None), np.divide, BCPOS[:2],
           "DivBackward2"),
    OpInfo("rtruediv", lambda a: 2.0 / a, lambda a: 2.0 / a, POS, "MulBackward0"),
    OpInfo("rtruediv_int", lambda a: 3 / a, lambda a: 3 / a, POS[:1], "MulBackward0"),
    OpInfo("rtruediv_method", lambda a: a.__rtruediv__(2.0), lambda a: 2.0 / a, POS, "MulBackward0"),
    OpInfo("rpow_number", lambda a: 2.0 ** a, lambda a: 2.0 ** a, [S((3, 4)), S(())], "PowBackward2"),
    OpInfo("positive", lambda a: torch.positive(a * 2) + (+a), lambda a: 3 * a, POS,
           "AddBackward0"),
    OpInfo("positive_method", lambda a: (a * 2).positive(), lambda a: 2 * a, POS[:1],
           "MulBackward0"),
    OpInfo("absolute", lambda a: torch.absolute(a), np.abs, AWAY, "AbsBackward0"),
    OpInfo("absolute_method", lambda a: a.absolute(), np.abs, AWAY[:1], "AbsBackward0"),
    OpInfo("arcsin", lambda a: torch.arcsin(a), np.arcsin, UNIT, "AsinBackward0"),
    OpInfo("arccos", lambda a: a.arccos(), np.arccos, UNIT, "AcosBackward0"),
    OpInfo("arctan", lambda a: torch.arctan(a), np.arctan, [S((3, 4)), S(())], "AtanBackward0"),
    OpInfo("fix", lambda a: torch.fix(a), np.trunc, [S((3, 4)), S(())], "TruncBackward0", gradgrad=False),
    OpInfo("fix_method", lambda a: a.fix(), np.trunc, [S((3, 4))], "TruncBackward0",
           gradgrad=False),
    OpInfo("absolute_", lambda a: (a * 1).absolute_(), np.abs, AWAY, "AbsBackward0"),
    OpInfo("arcsin_", lambda a: (a * 1).arcsin_(), np.arcsin, UNIT, "AsinBackward0"),
    OpInfo("arccos_", lambda a: (a * 1).arccos_(), np.arccos, UNIT[:1], "AcosBackward0"),
    OpInfo("arctan_", lambda a: (a * 1).arctan_(), np.arctan, [S((3, 4))], "AtanBackward0"),
    OpInfo("fix_", lambda a: (a * 1).fix_(), np.trunc, [S((3, 4))], "TruncBackward0",
           gradgrad=False),
]
