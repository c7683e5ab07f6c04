"""More unary math: the inverse hyperbolic functions (and their ``arc`` aliases), deg2rad,
rad2deg and angle.  Same conventions as ``pointwise``: integer input becomes the default
float, gradients are written with operators and the dual helpers so they also run under
``create_graph`` (and give forward-mode tangents)."""
from __future__ import annotations

import math

import numpy as np

from . import op
from . import _dual as X
from .._record import Node
from .pointwise import _unary

_PI = math.pi
_DEG2RAD = math.pi / 180
_RAD2DEG = 180 / math.pi


def _rsqrt(x):
    return X._t().rsqrt(x) if isinstance(x, X.Tensor) else 1 / np.sqrt(x)


def _define(name, fn, formula, save_in=False, node=None, check=None):
    """The unary op ``name`` recording ``node`` with gradient ``formula(g, x)``."""
    node_name = node or name.capitalize() + "Backward0"

    def _bw(self, g, graph):
        sx = self._saved[0]
        return formula(g, sx.get(self, graph) if sx is not None else None),

    cls = type(node_name, (Node,), {"__slots__": (), "_bw": _bw, "__module__": __name__})
    if not save_in:
        cls._needs_saved = False

    def f(input):
        if check is not None:
            check(input)
        return _unary(input, fn, cls, save_in, False)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name}; records {node_name}."
    globals()[name] = f
    globals()[node_name] = cls
    return op(name)(f)


def _no_complex(name):
    def check(t):
        if t._data.dtype.kind == "c":
            raise RuntimeError(f"{name} is not supported for complex tensors.")

    return check


def _angle_np(d):
    if d.dtype.kind == "c":
        return np.angle(d)
    return np.where(np.isnan(d), d, np.where(d < 0, _PI, 0.0)).astype(d.dtype, copy=False)


def _angle_bw(g, x):
    """Zero for real input; for complex input ``g * i z / |z|^2`` (0 at z = 0), as PyTorch's
    angle_backward."""
    if X.data(x).dtype.kind != "c":
        return X.zeros_like(x)
    r = g * x / (X.abs(x) ** 2) * 1j
    return X.where(X.const(X.data(x) == 0, r), X.zeros_like(r), r)


_define("asinh", np.arcsinh, lambda g, x: g * _rsqrt(x ** 2 + 1), save_in=True)
_define("acosh", np.arccosh, lambda g, x: g * _rsqrt(x ** 2 - 1), save_in=True)
_define("atanh", np.arctanh, lambda g, x: g * 1 / (1 - x ** 2), save_in=True)
_define("deg2rad", lambda d: d * _DEG2RAD, lambda g, x: g * _DEG2RAD, node="Deg2RadBackward0",
        check=_no_complex("deg2rad"))
_define("rad2deg", lambda d: d * _RAD2DEG, lambda g, x: g * _RAD2DEG, node="Rad2DegBackward0",
        check=_no_complex("rad2deg"))
_define("angle", _angle_np, _angle_bw, save_in=True)
op("arcsinh")(asinh)  # noqa: F821 - defined by _define
op("arccosh")(acosh)  # noqa: F821
op("arctanh")(atanh)  # noqa: F821


def _inplace_hyperbolic(name, fn):
    """``asinh_``/``acosh_``/``atanh_``: PyTorch records <Name>Backward1, whose backward raises
    (it has no derivative for the in-place versions)."""
    msg = f"the derivative for 'inplace version of {name}' is not implemented."

    def _bw(self, g, graph):
        raise NotImplementedError(msg)

    cls = type(name.capitalize() + "Backward1", (Node,),
               {"__slots__": (), "_bw": _bw, "__module__": __name__, "_needs_saved": False})
    globals()[cls.__name__] = cls

    def f(self):
        from .inplace import apply
        return apply(self, lambda t: _unary(t, fn, cls, False, False))

    f.__name__ = f.__qualname__ = name + "_"
    f.__doc__ = f"In-place {name}; returns self (its derivative is not implemented, as in PyTorch)."
    return f


for _name, _fn in (("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh)):
    _f = _inplace_hyperbolic(_name, _fn)
    op(_name + "_", function=False, methods=("arc" + _name[1:] + "_",))(_f)
