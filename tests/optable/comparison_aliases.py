"""Rows for PyTorch's other names of the comparisons (``torch.less``, ``greater``,
``less_equal``, ``greater_equal``, ``not_equal``: functions and methods), and the complex
refusal of the ordered ones is in tests/test_compare_vs_torch.py."""

import dyngrad as torch
from tests.optable import OpInfo, S

BC = [S((3, 4), (3, 4)), S((3, 4), (4,)), S((), (3,))]

ROWS = [
    OpInfo("less", lambda a, b: torch.less(a, b) | a.less(0.5),
           lambda a, b: (a < b) | (a < 0.5), BC, grad=False),
    OpInfo("less_equal", lambda a, b: torch.less_equal(a, b) | a.less_equal(0.5),
           lambda a, b: (a <= b) | (a <= 0.5), BC, grad=False),
    OpInfo("greater", lambda a, b: torch.greater(a, b) | a.greater(0.5),
           lambda a, b: (a > b) | (a > 0.5), BC, grad=False),
    OpInfo("greater_equal", lambda a, b: torch.greater_equal(a, b) | a.greater_equal(0.5),
           lambda a, b: (a >= b) | (a >= 0.5), BC, grad=False),
    OpInfo("not_equal", lambda a, b: torch.not_equal(a, b) & a.not_equal(0.5),
           lambda a, b: (a != b) & (a != 0.5), BC, grad=False),
]
