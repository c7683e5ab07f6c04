"""Rows for in-place forms given by the rule in src/dyngrad/ops/inplace.py, the in-place
comparisons and the in-place view ops (each applied to a non-leaf copy of the input)."""
import numpy as np

from tests.optable import OpInfo, S

POS = dict(domain=(0.3, 2.0))

ROWS = [
    OpInfo("sin_", lambda a: (a * 1).sin_(), np.sin, [S((3, 4)), S(())], "SinBackward0"),
    OpInfo("sqrt_", lambda a: (a * 1).sqrt_(), np.sqrt, [S((3, 4), **POS)], "SqrtBackward0"),
    OpInfo("negative_", lambda a: (a * 1).negative_(), np.negative, [S((3,))], "NegBackward0"),
    OpInfo("arctan2_", lambda a, b: (a * 1).arctan2_(b), np.arctan2, [S((3, 4), (4,))],
           "Atan2Backward0"),
    OpInfo("pow_scalar_", lambda a: (a * 1).pow_(3), lambda a: a ** 3, [S((3, 4))],
           "PowBackward0"),
    OpInfo("clamp_min_", lambda a: (a * 1).clamp_min_(0.25), lambda a: np.maximum(a, 0.25),
           [S((3, 4))], "ClampMinBackward0"),
    OpInfo("cumsum_", lambda a: (a * 1).cumsum_(1), lambda a: np.cumsum(a, 1), [S((3, 4))],
           "CumsumBackward0"),
    OpInfo("addmv_", lambda x, m, v: (x * 1).addmv_(m, v, alpha=2.0),
           lambda x, m, v: x + 2.0 * (m @ v), [S((2,), (2, 3), (3,))], "AddmvBackward0"),
    OpInfo("addr_", lambda x, a, b: (x * 1).addr_(a, b), lambda x, a, b: x + np.outer(a, b),
           [S((2, 3), (2,), (3,))], "AddrBackward0"),
    OpInfo("lt_", lambda a, b: (a * 1).lt_(b), lambda a, b: (a < b).astype(a.dtype),
           [S((3, 4), (3, 4))], "LtBackward1"),
    OpInfo("eq_scalar_", lambda a: (a * 1).eq_(0.5), lambda a: (a == 0.5).astype(a.dtype),
           [S((3,))], "EqBackward0"),
    OpInfo("unsqueeze_", lambda a, d: (a * 1).unsqueeze_(d), np.expand_dims,
           [S((3, 4), extra=(1,)), S((), extra=(0,))], "UnsqueezeBackward1"),
    OpInfo("squeeze_", lambda a: (a * 1).squeeze_(), np.squeeze, [S((1, 3, 1))],
           "SqueezeBackward3"),
    OpInfo("squeeze_dim_", lambda a: (a * 1).squeeze_(0), lambda a: a[0], [S((1, 3, 1))],
           "SqueezeBackward4"),
    OpInfo("t_", lambda a: (a * 1).t_(), np.transpose, [S((3, 4)), S((3,))], "TBackward1"),
    OpInfo("transpose_", lambda a: (a * 1).transpose_(0, 2), lambda a: a.swapaxes(0, 2),
           [S((2, 3, 4))], "TransposeBackward1"),
]
