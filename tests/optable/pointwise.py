"""Rows for the elementwise math ops (unary, binary, clamp, where, lerp, rounding)."""
import math

import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

try:
    from scipy.special import erf as _erf, erfc as _erfc
except ImportError:  # pragma: no cover
    _erf = np.vectorize(math.erf)
    _erfc = np.vectorize(math.erfc)

U = [S((3, 4)), S(()), S((0, 3))]
POS = dict(domain=(0.3, 2.0))
UPOS = [S((3, 4), **POS), S((), **POS), S((0, 3), **POS)]
UNIT = [S((3, 4), domain=(-0.8, 0.8)), S((), domain=(-0.8, 0.8))]
BC = [S((3, 4), (3, 4)), S((3, 4), (4,)), S((2, 1, 3), (4, 1)), S((), (3,)), S((3,), ())]
BCPOS = [S(*s.shapes, **POS) for s in BC]


def _lerp(a, b, w):
    return a + w * (b - a)


def _infs(a):
    """``a`` with +inf above 1 and -inf below -1 (for the inf predicates); NumPy or dyngrad."""
    if isinstance(a, np.ndarray):
        return np.where(a > 1.0, np.inf, np.where(a < -1.0, -np.inf, a))
    return torch.where(a > 1.0, float("inf"), torch.where(a < -1.0, float("-inf"), a))


def _away(lo, hi, shapes, step=0.5):
    """Samples whose values avoid the jump points of rounding-like functions."""
    return [S(*shp, domain=(lo, hi)) for shp in shapes]


ROWS = [
    OpInfo("abs_u", torch.abs, np.abs, [S((3, 4), domain=(0.2, 1.0)), S((), domain=(-1.0, -0.2))],
           "AbsBackward0"),
    OpInfo("neg_fn", torch.neg, np.negative, U, "NegBackward0"),
    OpInfo("sign", torch.sign, np.sign, U, "SignBackward0"),
    OpInfo("sgn", torch.sgn, np.sign, U[:2], "SgnBackward0"),
    OpInfo("sqrt_u", torch.sqrt, np.sqrt, UPOS, "SqrtBackward0"),
    OpInfo("rsqrt", torch.rsqrt, lambda a: 1 / np.sqrt(a), UPOS, "RsqrtBackward0"),
    OpInfo("exp_u", torch.exp, np.exp, U, "ExpBackward0"),
    OpInfo("expm1", torch.expm1, np.expm1, U, "Expm1Backward0"),
    OpInfo("exp2", torch.exp2, np.exp2, U, "Exp2Backward0"),
    OpInfo("log_u", torch.log, np.log, UPOS, "LogBackward0"),
    OpInfo("log1p", torch.log1p, np.log1p, UPOS, "Log1PBackward0"),
    OpInfo("log2", torch.log2, np.log2, UPOS, "Log2Backward0"),
    OpInfo("log10", torch.log10, np.log10, UPOS, "Log10Backward0"),
    OpInfo("sin_u", torch.sin, np.sin, U, "SinBackward0"),
    OpInfo("cos_u", torch.cos, np.cos, U, "CosBackward0"),
    OpInfo("tan", torch.tan, np.tan, [S((3, 4), domain=(-1.2, 1.2)), S(())], "TanBackward0"),
    OpInfo("asin", torch.asin, np.arcsin, UNIT, "AsinBackward0"),
    OpInfo("acos", torch.acos, np.arccos, UNIT, "AcosBackward0"),
    OpInfo("atan", torch.atan, np.arctan, U, "AtanBackward0"),
    OpInfo("sinh", torch.sinh, np.sinh, U, "SinhBackward0"),
    OpInfo("cosh", torch.cosh, np.cosh, U, "CoshBackward0"),
    OpInfo("tanh_u", torch.tanh, np.tanh, U, "TanhBackward0"),
    OpInfo("sigmoid_u", torch.sigmoid, lambda a: 1 / (1 + np.exp(-a)), U, "SigmoidBackward0"),
    OpInfo("erf", torch.erf, _erf, U, "ErfBackward0"),
    OpInfo("erfc", torch.erfc, _erfc, U, "ErfcBackward0"),
    OpInfo("reciprocal", torch.reciprocal, np.reciprocal, UPOS, "ReciprocalBackward0"),
    OpInfo("square", torch.square, np.square, U, "PowBackward0"),
    OpInfo("pow_fn", lambda a: torch.pow(a, 2.5), lambda a: a ** 2.5, UPOS, "PowBackward0"),
    OpInfo("pow_bcast", torch.pow, np.power, BCPOS, "PowBackward1"),
    OpInfo("floor", torch.floor, np.floor, U, "FloorBackward0", gradgrad=False),
    OpInfo("ceil", torch.ceil, np.ceil, U, "CeilBackward0", gradgrad=False),
    OpInfo("trunc", torch.trunc, np.trunc, U, "TruncBackward0", gradgrad=False),
    OpInfo("round", torch.round, np.round, U, "RoundBackward0", gradgrad=False),
    OpInfo("round_decimals", lambda a: torch.round(a, decimals=2), lambda a: np.round(a, 2), U[:2],
           "RoundBackward1", gradgrad=False),
    OpInfo("frac", torch.frac, lambda a: a - np.trunc(a), [S((3, 4), domain=(0.1, 0.9)), S(())],
           "FracBackward0"),
    OpInfo("fmod_scalar", lambda a: torch.fmod(a, 1.5), lambda a: np.fmod(a, 1.5),
           [S((3, 4), domain=(0.1, 1.4)), S(())], "FmodBackward0"),
    OpInfo("fmod", torch.fmod, np.fmod,
           [S((3, 4), (3, 4), domain=(0.6, 2.0)), S((3, 4), (4,), domain=(0.6, 2.0))],
           "FmodBackward1", float32_ok=False),
    OpInfo("remainder_scalar", lambda a: torch.remainder(a, 1.5), lambda a: np.remainder(a, 1.5),
           [S((3, 4), domain=(0.1, 1.4))], "RemainderBackward0"),
    OpInfo("remainder", torch.remainder, np.remainder,
           [S((3, 4), (3, 4), domain=(0.6, 2.0)), S((2, 1), (3,), domain=(0.6, 2.0))],
           "RemainderBackward1", float32_ok=False),
    OpInfo("floor_divide", torch.floor_divide, np.floor_divide,
           [S((3, 4), (3, 4), domain=(0.6, 2.0))], grad=False, float32_ok=False),
    OpInfo("atan2", torch.atan2, np.arctan2, BC, "Atan2Backward0"),
    OpInfo("arctan2", lambda a, b: torch.arctan2(a, b), np.arctan2, BC[:3], "Atan2Backward0"),
    OpInfo("hypot", torch.hypot, np.hypot, BC, "HypotBackward0"),
    OpInfo("xlogy", torch.xlogy, lambda a, b: a * np.log(b), BCPOS, "XlogyBackward0"),
    OpInfo("xlogy_scalar_other", lambda a: torch.xlogy(a, 3.0), lambda a: a * np.log(3.0), U[:2],
           "XlogyBackward2"),
    OpInfo("xlogy_scalar_self", lambda b: torch.xlogy(2.0, b), lambda b: 2.0 * np.log(b), UPOS[:2],
           "XlogyBackward1"),
    OpInfo("copysign", torch.copysign, np.copysign, BC, "CopysignBackward0"),
    OpInfo("copysign_scalar", lambda a: torch.copysign(a, -1.0), lambda a: np.copysign(a, -1.0),
           U[:2], "CopysignBackward1"),
    OpInfo("maximum", torch.maximum, np.maximum, BC, "MaximumBackward0", gradgrad=True),
    OpInfo("minimum", torch.minimum, np.minimum, BC, "MinimumBackward0"),
    OpInfo("clamp_scalar", lambda a: torch.clamp(a, -0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7),
           U, "ClampBackward1"),
    OpInfo("clamp_min_only", lambda a: a.clamp(min=0.1), lambda a: np.maximum(a, 0.1), U[:2],
           "ClampBackward1"),
    OpInfo("clip", lambda a: a.clip(max=0.3), lambda a: np.minimum(a, 0.3), U[:2], "ClampBackward1"),
    OpInfo("clamp_tensor", lambda a, lo, hi: torch.clamp(a, lo, hi),
           lambda a, lo, hi: np.minimum(np.maximum(a, lo), hi),
           [S((3, 4), (4,), (3, 1)), S((3,), (), ())], "ClampBackward0"),
    OpInfo("clamp_tensor_min", lambda a, lo: torch.clamp(a, min=lo), np.maximum, BC,
           "ClampBackward0"),
    OpInfo("clamp_min", lambda a: torch.clamp_min(a, 0.2), lambda a: np.maximum(a, 0.2), U,
           "ClampMinBackward0"),
    OpInfo("clamp_max", lambda a: a.clamp_max(0.2), lambda a: np.minimum(a, 0.2), U,
           "ClampMaxBackward0"),
    OpInfo("clamp_min_tensor", torch.clamp_min, np.maximum, BC, "ClampMinBackward1"),
    OpInfo("clamp_max_tensor", torch.clamp_max, np.minimum, BC, "ClampMaxBackward1"),
    OpInfo("where", lambda a, b: torch.where(a > 0, a, b), lambda a, b: np.where(a > 0, a, b), BC,
           "WhereBackward0"),
    OpInfo("where_scalar", lambda a: torch.where(a > 0, a, 0.5), lambda a: np.where(a > 0, a, 0.5),
           U, "WhereBackward0"),
    OpInfo("where_method", lambda a, b: a.where(b > 0, b), lambda a, b: np.where(b > 0, a, b),
           BC[:3], "WhereBackward0"),
    OpInfo("lerp", lambda a, b: torch.lerp(a, b, 0.3), lambda a, b: _lerp(a, b, 0.3), BC,
           "LerpBackward0"),
    OpInfo("lerp_tensor", torch.lerp, _lerp, [S((3, 4), (3, 4), (3, 4)), S((3, 4), (4,), ()),
                                             S((), (2,), (3, 1))], "LerpBackward1"),
    OpInfo("nan_to_num", torch.nan_to_num, np.nan_to_num, U, "NanToNumBackward0"),
    OpInfo("logit", torch.logit, lambda a: np.log(a / (1 - a)),
           [S((3, 4), domain=(0.1, 0.9)), S((), domain=(0.1, 0.9))], "LogitBackward0"),
    OpInfo("logit_eps", lambda a: torch.logit(a, eps=0.2),
           lambda a: np.log(np.clip(a, 0.2, 0.8) / (1 - np.clip(a, 0.2, 0.8))),
           [S((3, 4), domain=(0.25, 0.75))], "LogitBackward0"),
    OpInfo("div_floor", lambda a, b: torch.div(a, b, rounding_mode="floor"),
           lambda a, b: np.floor(a / b), [S((3, 4), (3, 4), domain=(0.6, 2.0))], "DivBackward2",
           gradgrad=False, float32_ok=False),
    OpInfo("div_trunc", lambda a, b: torch.div(a, b, rounding_mode="trunc"),
           lambda a, b: np.trunc(a / b), [S((3, 4), (4,), domain=(0.6, 2.0))], "DivBackward2",
           gradgrad=False, float32_ok=False),
    OpInfo("div_floor_scalar", lambda a: torch.div(a, -0.7, rounding_mode="floor"),
           lambda a: np.floor(a / -0.7), [S((3, 4), domain=(0.1, 0.6)), S(())], "DivBackward2",
           gradgrad=False, float32_ok=False),
    OpInfo("div_mode_none", lambda a, b: a.div(b, rounding_mode=None), lambda a, b: a / b,
           BCPOS, "DivBackward2"),
    OpInfo("div_floor_", lambda a, b: (a * 1).div_(b, rounding_mode="floor"),
           lambda a, b: np.floor(a / b), [S((3, 4), (3, 4), domain=(0.6, 2.0))], "DivBackward2",
           gradgrad=False, float32_ok=False),
    OpInfo("round_decimals0", lambda a: a.round(decimals=0), np.round, U[:2], "RoundBackward1",
           gradgrad=False),
    OpInfo("fmod_scalar_", lambda a: (a * 1).fmod_(1.5), lambda a: np.fmod(a, 1.5),
           [S((3, 4), domain=(0.1, 1.4))], "FmodBackward0"),
    OpInfo("remainder_op", lambda a: a % 1.5, lambda a: np.remainder(a, 1.5),
           [S((3, 4), domain=(0.1, 1.4))], "RemainderBackward0"),
    OpInfo("clamp_0d_and_number", lambda a: torch.clamp(a, torch.tensor(-0.5), 0.7),
           lambda a: np.clip(a, -0.5, 0.7), U[:2], "ClampBackward1"),
    OpInfo("isnan", torch.isnan, np.isnan, U, grad=False),
    OpInfo("isfinite", torch.isfinite, np.isfinite, U, grad=False),
    OpInfo("isclose", lambda a, b: torch.isclose(a, b, atol=0.5), lambda a, b: np.isclose(a, b, atol=0.5),
           BC, grad=False),
    OpInfo("logical_and", lambda a, b: torch.logical_and(a > 0, b > 0),
           lambda a, b: np.logical_and(a > 0, b > 0), BC, grad=False),
    OpInfo("logical_xor", lambda a, b: torch.logical_xor(a > 0, b), lambda a, b: np.logical_xor(a > 0, b),
           BC, grad=False),
    OpInfo("logical_not", lambda a: torch.logical_not(a > 0), lambda a: ~(a > 0), U, grad=False),
    OpInfo("float_power", lambda a: torch.float_power(a, 3), lambda a: np.power(a.astype(np.float64), 3),
           [S((3, 2)), S(())], "PowBackward0", float32_ok=False),
    OpInfo("fmax", torch.fmax, np.fmax, [S((3, 4), (3, 4)), S((3, 4), (4,))], "FmaxBackward0"),
    OpInfo("fmin", torch.fmin, np.fmin, [S((3, 4), (3, 4)), S((2, 1, 3), (4, 1))], "FminBackward0"),
    OpInfo("logaddexp", torch.logaddexp, np.logaddexp, [S((3, 4), (3, 4)), S((3, 4), (4,))],
           "LogaddexpBackward0"),
    OpInfo("logaddexp2", torch.logaddexp2, np.logaddexp2, [S((3, 4), (3, 4)), S((), (3,))],
           "Logaddexp2Backward0"),
    # --- the Tensor-method forms of the binary ops above, torch.clip ------------------------
    OpInfo("atan2_method", lambda a, b: a.atan2(b), np.arctan2, BC[:3], "Atan2Backward0"),
    OpInfo("arctan2_method", lambda a, b: a.arctan2(b), np.arctan2, BC[3:], "Atan2Backward0"),
    OpInfo("hypot_method", lambda a, b: a.hypot(b), np.hypot, BC[:2], "HypotBackward0"),
    OpInfo("xlogy_method", lambda a, b: a.xlogy(b), lambda a, b: a * np.log(b), BCPOS[:2],
           "XlogyBackward0"),
    OpInfo("copysign_method", lambda a, b: a.copysign(b), np.copysign, BC[:2],
           "CopysignBackward0"),
    OpInfo("maximum_method", lambda a, b: a.maximum(b), np.maximum, BC[:2], "MaximumBackward0"),
    OpInfo("minimum_method", lambda a, b: a.minimum(b), np.minimum, BC[:2], "MinimumBackward0"),
    OpInfo("fmax_method", lambda a, b: a.fmax(b), np.fmax, BC[:2], "FmaxBackward0"),
    OpInfo("fmin_method", lambda a, b: a.fmin(b), np.fmin, BC[:2], "FminBackward0"),
    OpInfo("logaddexp_method", lambda a, b: a.logaddexp(b), np.logaddexp, BC[:2],
           "LogaddexpBackward0"),
    OpInfo("logaddexp2_method", lambda a, b: a.logaddexp2(b), np.logaddexp2, BC[:2],
           "Logaddexp2Backward0"),
    OpInfo("fmod_method", lambda a, b: a.fmod(b), np.fmod,
           [S((3, 4), (4,), domain=(0.6, 2.0))], "FmodBackward1", float32_ok=False),
    OpInfo("remainder_method", lambda a, b: a.remainder(b), np.remainder,
           [S((3, 4), (3, 4), domain=(0.6, 2.0))], "RemainderBackward1", float32_ok=False),
    OpInfo("floor_divide_method", lambda a, b: a.floor_divide(b), np.floor_divide,
           [S((3, 4), (4,), domain=(0.6, 2.0))], grad=False, float32_ok=False),
    OpInfo("clip_fn", lambda a: torch.clip(a, -0.5, 0.7), lambda a: np.clip(a, -0.5, 0.7), U[:2],
           "ClampBackward1"),
    # --- % and // with a number on the left, // of two tensors (no derivative in PyTorch) --
    OpInfo("rmod_number", lambda a: 1.5 % a, lambda a: np.remainder(1.5, a),
           [S((3, 4), domain=(0.6, 2.0))], grad=False, float32_ok=False),
    OpInfo("floordiv_op", lambda a, b: a // b, np.floor_divide,
           [S((3, 4), (3, 4), domain=(0.6, 2.0)), S((3, 4), (), domain=(0.6, 2.0))], grad=False,
           float32_ok=False),
    OpInfo("rfloordiv_number", lambda a: 2.0 // a, lambda a: np.floor_divide(2.0, a),
           [S((3, 4), domain=(0.6, 2.0))], grad=False, float32_ok=False),
    # --- predicates (bool results) -----------------------------------------------------------
    OpInfo("isinf", lambda a: torch.isinf(_infs(a)), lambda a: np.isinf(_infs(a)), U, grad=False),
    OpInfo("isposinf", lambda a: torch.isposinf(_infs(a)), lambda a: np.isposinf(_infs(a)), U,
           grad=False),
    OpInfo("isneginf", lambda a: torch.isneginf(_infs(a)), lambda a: np.isneginf(_infs(a)), U,
           grad=False),
    OpInfo("isreal", torch.isreal, np.isreal, U, grad=False),
    OpInfo("signbit", lambda a: torch.signbit(torch.round(a)), lambda a: np.signbit(np.round(a)),
           U, grad=False),
    OpInfo("logical_or", lambda a, b: torch.logical_or(a > 0, b), lambda a, b: np.logical_or(
        a > 0, b), BC, grad=False),
    OpInfo("logical_and_method", lambda a, b: (a > 0).logical_and(b),
           lambda a, b: np.logical_and(a > 0, b), BC[:2], grad=False),
    OpInfo("logical_or_method", lambda a, b: a.logical_or(b < 0),
           lambda a, b: np.logical_or(a, b < 0), BC[:2], grad=False),
    OpInfo("logical_xor_method", lambda a, b: a.logical_xor(b > 0),
           lambda a, b: np.logical_xor(a, b > 0), BC[:2], grad=False),
]
