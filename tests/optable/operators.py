"""Rows for Python's operators on tensors that PyTorch maps onto its ops (``&``, ``|``, ``^``,
``~``, ``<<``, ``>>``, ``%``, ``//`` and their reflected forms), called as the Tensor's dunder
methods so each row names the operator it tests."""

import numpy as np

from tests.optable import OpInfo, S

INT2 = [S((3, 4), (3, 4), int_args=(0, 1), int_high=8), S((3, 4), (4,), int_args=(0, 1),
                                                           int_high=8)]
INT1 = [S((3, 4), int_args=(0,), int_high=8), S((), int_args=(0,), int_high=8)]
INT1N = [S((3, 4), int_args=(0,), int_high=8, extra=(3,))]
BC = [S((3, 4), (3, 4), domain=(0.5, 2.0)), S((3, 4), (4,), domain=(0.5, 2.0))]
F1N = [S((3, 4), extra=(2.5,), domain=(0.5, 2.0))]

ROWS = [
    OpInfo("and_operator", lambda a, b: a.__and__(b), np.bitwise_and, INT2, grad=False),
    OpInfo("or_operator", lambda a, b: a.__or__(b), np.bitwise_or, INT2, grad=False),
    OpInfo("xor_operator", lambda a, b: a.__xor__(b), np.bitwise_xor, INT2, grad=False),
    OpInfo("invert_operator", lambda a: a.__invert__(), np.invert, INT1, grad=False),
    OpInfo("lshift_operator_dunder", lambda a, b: a.__lshift__(b), np.left_shift, INT2, grad=False),
    OpInfo("rshift_operator_dunder", lambda a, b: a.__rshift__(b), np.right_shift, INT2, grad=False),
    OpInfo("rlshift_operator", lambda a, b: a.__rlshift__(b), lambda a, n: np.left_shift(n, a), INT1N,
           grad=False),
    OpInfo("rrshift_operator", lambda a, b: a.__rrshift__(b), lambda a, n: np.right_shift(n, a), INT1N,
           grad=False),
    OpInfo("mod_operator", lambda a, b: a.__mod__(b), np.remainder, BC, grad=False),
    OpInfo("rmod_operator", lambda a, b: a.__rmod__(b), lambda a, n: np.remainder(n, a), F1N, grad=False),
    OpInfo("rpow_operator", lambda a: a.__rpow__(2.5), lambda a: np.power(2.5, a), [S((3, 4))],
           "PowBackward2"),
    OpInfo("floordiv_operator", lambda a, b: a.__floordiv__(b), np.floor_divide, BC, grad=False),
    OpInfo("rfloordiv_operator", lambda a, b: a.__rfloordiv__(b), lambda a, n: np.floor_divide(n, a), F1N,
           grad=False),
]
