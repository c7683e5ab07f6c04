"""Rows for the comparisons (eq/ne/lt/le/gt/ge as functions, methods and operators, their
in-place forms, equal, allclose) and the bitwise and logical ops on integer and bool tensors,
gcd/lcm and the bit shifts (functions, methods, the ``<<``/``>>`` operators with a number on
either side, ``<<=``/``>>=`` and the in-place forms).

Comparisons of float tensors give bool tensors: not differentiable (``grad=False``); the
in-place comparisons (``a.ge_(b)``) write 0/1 into a float tensor and record a node whose
gradient is zero, as PyTorch's.  ``equal``/``allclose`` return Python bools: the rows wrap
them in a 0-d tensor so the value is compared."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

BC = [S((3, 4), (3, 4)), S((3, 4), (4,)), S((), (3,)), S((0, 3), (3,))]
# integer tensors (both arguments, values 0..7)
INT2 = [S((3, 4), (3, 4), int_args=(0, 1), int_high=8), S((3, 4), (4,), int_args=(0, 1),
                                                          int_high=8)]
INT1 = [S((3, 4), int_args=(0,), int_high=8), S((), int_args=(0,), int_high=8)]


def _f(cmp):
    return lambda a, b: cmp(a, b).astype(a.dtype)


def _ilshift(a, b):
    c = a * 1
    c <<= b
    return c


def _irshift(a, b):
    c = a * 1
    c >>= b
    return c


def _ibitwise(a, b):
    c = a * 1
    c &= b + 1
    c |= b
    c ^= 5
    return c


ROWS = [
    OpInfo("eq", torch.eq, np.equal, BC, grad=False),
    OpInfo("ne", lambda a, b: a.ne(b), np.not_equal, BC, grad=False),
    OpInfo("lt", lambda a, b: torch.lt(a, b), np.less, BC, grad=False),
    OpInfo("le", lambda a, b: torch.le(a, 0.5) | a.le(b), lambda a, b: (a <= 0.5) | (a <= b),
           BC, grad=False),
    OpInfo("gt", lambda a, b: torch.gt(a, b), np.greater, BC, grad=False),
    OpInfo("ge", lambda a, b: a.ge(b), np.greater_equal, BC, grad=False),
    OpInfo("compare_methods", lambda a, b: a.eq(b) | a.lt(0.5) & a.gt(b) | a.eq(0.25),
           lambda a, b: (a == b) | (a < 0.5) & (a > b) | (a == 0.25), BC, grad=False),
    OpInfo("compare_operators", lambda a, b: (a == b) | (a != 0.5) & (a < b) | (a <= b) & (a > 0)
           | (a >= b), lambda a, b: (a == b) | (a != 0.5) & (a < b) | (a <= b) & (a > 0)
           | (a >= b), BC[:2], grad=False),
    OpInfo("compare_self", lambda a: torch.eq(a, a) & a.ne(a + 1), lambda a: np.ones(a.shape, bool),
           [S((3, 4))], grad=False),
    OpInfo("ne_", lambda a, b: (a * 1).ne_(b), _f(np.not_equal), [S((3, 4), (4,))], "NeBackward1"),
    OpInfo("le_", lambda a, b: (a * 1).le_(b), _f(np.less_equal), [S((3, 4), (3, 4))],
           "LeBackward1"),
    OpInfo("gt_", lambda a: (a * 1).gt_(0.25), lambda a: (a > 0.25).astype(a.dtype), [S((3,))],
           "GtBackward0"),
    OpInfo("ge_", lambda a, b: (a * 1).ge_(b), _f(np.greater_equal), [S((3, 4), ())],
           "GeBackward1"),
    OpInfo("equal", lambda a, b: torch.tensor(torch.equal(a, b)),
           lambda a, b: np.array(np.array_equal(a, b)), [S((3, 4), (3, 4)), S((3,), (4,))],
           grad=False),
    OpInfo("equal_same", lambda a: torch.tensor(a.equal(a.clone())), lambda a: np.array(True),
           [S((3, 4)), S(())], grad=False),
    OpInfo("allclose", lambda a, b: torch.tensor(torch.allclose(a, b, atol=3.0)),
           lambda a, b: np.array(np.allclose(a, b, atol=3.0)), [S((3, 4), (4,))], grad=False),
    OpInfo("allclose_method", lambda a, b: torch.tensor(a.allclose(b, rtol=0.1)),
           lambda a, b: np.array(np.allclose(a, b, rtol=0.1)), [S((3, 4), (3, 4))], grad=False),
    # --- bitwise ops on integer tensors -----------------------------------------------------
    OpInfo("bitwise_and", torch.bitwise_and, np.bitwise_and, INT2, grad=False),
    OpInfo("bitwise_and_method", lambda a, b: a.bitwise_and(b) | (3 & a),
           lambda a, b: np.bitwise_and(a, b) | (3 & a), INT2, grad=False),
    OpInfo("bitwise_or", lambda a, b: a.bitwise_or(b), np.bitwise_or, INT2, grad=False),
    OpInfo("bitwise_xor", lambda a, b: torch.bitwise_xor(a, b) ^ a.bitwise_xor(3),
           lambda a, b: np.bitwise_xor(a, b) ^ (a ^ 3), INT2, grad=False),
    OpInfo("bitwise_not", torch.bitwise_not, np.invert, INT1, grad=False),
    OpInfo("bitwise_not_method", lambda a: a.bitwise_not() | ~(a > 3), lambda a: ~a | ~(a > 3),
           INT1, grad=False),
    OpInfo("bitwise_bool", lambda a, b: torch.bitwise_and(a > 0, b > 0) ^ torch.bitwise_or(
        a > 1, b < 0), lambda a, b: (a > 0) & (b > 0) ^ ((a > 1) | (b < 0)), BC[:2], grad=False),
    OpInfo("bitwise_and_", lambda a, b: (a * 1).bitwise_and_(b), np.bitwise_and, INT2,
           grad=False),
    OpInfo("bitwise_or_", lambda a, b: (a * 1).bitwise_or_(b), np.bitwise_or, INT2, grad=False),
    OpInfo("bitwise_xor_", lambda a, b: (a * 1).bitwise_xor_(b), np.bitwise_xor, INT2,
           grad=False),
    OpInfo("bitwise_not_", lambda a: (a * 1).bitwise_not_(), np.invert, INT1, grad=False),
    OpInfo("iand_ior_ixor", _ibitwise, lambda a, b: (a & (b + 1) | b) ^ 5, INT2, grad=False),
    # --- in-place logical ops (bool results written into the first tensor) -----------------
    OpInfo("logical_and_", lambda a, b: (a * 1).logical_and_(b > 0),
           lambda a, b: np.logical_and(a, b > 0).astype(a.dtype), [S((3, 4), (4,))],
           grad=False, float32_ok=False,
           notes="PyTorch records no node (the output keeps MulBackward0): not differentiable"),
    OpInfo("logical_or_", lambda a, b: (a > 0).logical_or_(b > 0),
           lambda a, b: (a > 0) | (b > 0), [S((3, 4), (3, 4))], grad=False),
    OpInfo("logical_xor_", lambda a, b: (a > 0).logical_xor_(b),
           lambda a, b: np.logical_xor(a > 0, b), [S((3, 4), (4,))], grad=False),
    OpInfo("logical_not_", lambda a: (a > 0).logical_not_(), lambda a: a <= 0, [S((3, 4)), S(())],
           grad=False),
    OpInfo("logical_not_float_", lambda a: (a * 1).logical_not_(),
           lambda a: np.logical_not(a).astype(a.dtype), [S((3,))], grad=False,
           notes="PyTorch records no node (the output keeps MulBackward0): not differentiable"),
    # --- gcd / lcm on integer tensors ----------------------------------------------------
    OpInfo("gcd", torch.gcd, np.gcd, INT2, grad=False),
    OpInfo("gcd_method", lambda a, b: a.gcd(b), np.gcd, INT2, grad=False),
    OpInfo("gcd_", lambda a, b: torch.gcd_(a * 1, b), np.gcd, INT2, grad=False),
    OpInfo("gcd__method", lambda a, b: (a * 1).gcd_(b), np.gcd, INT2, grad=False),
    OpInfo("lcm", torch.lcm, np.lcm, INT2, grad=False),
    OpInfo("lcm_method", lambda a, b: a.lcm(b), np.lcm, INT2, grad=False),
    OpInfo("lcm_", lambda a, b: torch.lcm_(a * 1, b), np.lcm, INT2, grad=False),
    OpInfo("lcm__method", lambda a, b: (a * 1).lcm_(b), np.lcm, INT2, grad=False),
    # --- bit shifts on integer tensors (shift counts 0..7) ---------------------------------
    OpInfo("bitwise_left_shift", torch.bitwise_left_shift, np.left_shift, INT2, grad=False),
    OpInfo("bitwise_left_shift_method", lambda a, b: a.bitwise_left_shift(b) | a
           .bitwise_left_shift(2), lambda a, b: (a << b) | (a << 2), INT2, grad=False),
    OpInfo("lshift_operator", lambda a, b: (a << b) ^ (a << 3), lambda a, b: (a << b) ^ (a << 3),
           INT2, grad=False),
    OpInfo("rlshift_number", lambda a: 3 << a, lambda a: 3 << a, INT1, grad=False),
    OpInfo("bitwise_left_shift_", lambda a, b: (a * 1).bitwise_left_shift_(b), np.left_shift,
           INT2, grad=False),
    OpInfo("ilshift", _ilshift, np.left_shift, INT2, grad=False),
    OpInfo("bitwise_right_shift", torch.bitwise_right_shift, np.right_shift,
           [S((3, 4), (3, 4), int_args=(0, 1), int_high=8), S((3, 4), (), int_args=(0, 1),
                                                              int_high=8)], grad=False),
    OpInfo("bitwise_right_shift_method", lambda a, b: a.bitwise_right_shift(b) + a
           .bitwise_right_shift(1), lambda a, b: (a >> b) + (a >> 1), INT2, grad=False),
    OpInfo("rshift_operator", lambda a, b: (a >> b) - (a >> 2), lambda a, b: (a >> b) - (a >> 2),
           INT2, grad=False),
    OpInfo("rrshift_number", lambda a: 200 >> a, lambda a: 200 >> a, INT1, grad=False),
    OpInfo("bitwise_right_shift_", lambda a, b: (a * 1).bitwise_right_shift_(b), np.right_shift,
           INT2, grad=False),
    OpInfo("irshift", _irshift, np.right_shift, INT2, grad=False),
]
