"""More unary math: the inverse hyperbolic functions (and their ``arc`` aliases), deg2rad,
rad2deg and angle, each one declaration (``ops/_spec.py`` ``unary``): integer input becomes
the default float, gradients are written with operators and the dual helpers so they also run
under ``create_graph`` (and give forward-mode tangents)."""
from __future__ import annotations

import math

import numpy as np

from . import _dual as X
from ._spec import unary

_PI = math.pi
_DEG2RAD = math.pi / 180
_RAD2DEG = 180 / math.pi


def _rsqrt(x):
    return X._t().rsqrt(x) if isinstance(x, X.Tensor) else 1 / np.sqrt(x)


def _angle_np(d):
    if d.dtype.kind == "c":
        return np.angle(d)
    return np.where(np.isnan(d), d, np.where(d < 0, _PI, 0.0)).astype(d.dtype, copy=False)


def _angle_bw(g, x, y):
    """Zero for real input; for complex input ``g * i z / |z|^2`` (0 at z = 0), as PyTorch's
    angle_backward."""
    if X.data(x).dtype.kind != "c":
        return X.zeros_like(x)
    r = g * x / (X.abs(x) ** 2) * 1j
    return X.where(X.const(X.data(x) == 0, r), X.zeros_like(r), r)


# PyTorch has no derivative for the in-place asinh_/acosh_/atanh_ (<Name>Backward1 raises)
asinh = unary("asinh", np.arcsinh, lambda g, x, y: g * _rsqrt(x ** 2 + 1), module=__name__,
              aliases=("arcsinh",), inplace_derivative=False).fn
def _acosh_bw(g, x, y):
    """1/sqrt(x**2 - 1); for complex x PyTorch's branch, 1/(sqrt(x - 1) sqrt(x + 1))."""
    if X.data(x).dtype.kind == "c":
        return g * _rsqrt(x - 1) * _rsqrt(x + 1)
    return g * _rsqrt(x ** 2 - 1)


acosh = unary("acosh", np.arccosh, _acosh_bw, module=__name__, aliases=("arccosh",),
              inplace_derivative=False).fn
atanh = unary("atanh", np.arctanh, lambda g, x, y: g * 1 / (1 - x ** 2), module=__name__,
              aliases=("arctanh",), inplace_derivative=False).fn
deg2rad = unary("deg2rad", lambda d: d * _DEG2RAD, lambda g, x, y: g * _DEG2RAD,
                module=__name__, saved=(), node="Deg2RadBackward0", real_only=True).fn
rad2deg = unary("rad2deg", lambda d: d * _RAD2DEG, lambda g, x, y: g * _RAD2DEG,
                module=__name__, saved=(), node="Rad2DegBackward0", real_only=True).fn
angle = unary("angle", _angle_np, _angle_bw, module=__name__).fn
