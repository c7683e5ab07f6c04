"""PyTorch's _trilinear, the kernel of bilinear: three operands, each unsqueezed at its
``expand`` dims, multiplied (broadcast) and summed over ``sumdim``; TrilinearBackward0, whose
gradients are _trilinear again (PyTorch's _trilinear_backward)."""
from __future__ import annotations

import numpy as np

from . import OPS
from . import _dual as X
from ._spec import defop

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _trilinear_np(a, b, c, e1, e2, e3, sumdim):
    total = a.ndim + len(e1)
    subs = ["".join(_LETTERS[i] for i in range(total) if i not in e) for e in (e1, e2, e3)]
    keep = [i for i in range(total) if i not in sumdim]
    if any(i in e1 and i in e2 and i in e3 for i in keep):  # a dimension no operand has
        shape = [0 if (i in e1 and i in e2 and i in e3) else
                 (c if i not in e3 else b if i not in e2 else a).shape[
                     subs[2 if i not in e3 else 1 if i not in e2 else 0].index(_LETTERS[i])]
                 for i in keep]
        return np.zeros(shape, a.dtype)
    out = "".join(_LETTERS[i] for i in keep)
    r = X.einsum_np(f"{subs[0]},{subs[1]},{subs[2]}->{out}", a, b, c, optimize=True)
    return np.asarray(r, dtype=a.dtype)


@defop("_trilinear", node="TrilinearBackward0", inputs=("i1", "i2", "i3"),
       saved=("i1", "i2", "i3", "expand1", "expand2", "expand3", "sumdim"),
       saved_for={"i1": (1, 2), "i2": (0, 2), "i3": (0, 1)}, function=True, method=False)
def _trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim=1):
    """The product of the three operands, each unsqueezed at its ``expand`` dims, summed over
    ``sumdim``; TrilinearBackward0 (each input kept only for another's gradient)."""
    if not i1.ndim + len(expand1) == i2.ndim + len(expand2) == i3.ndim + len(expand3):
        raise RuntimeError("number of dimensions must match")
    if i1.dtype == np.bool_:  # PyTorch computes it with bmm, which has no bool kernel
        raise NotImplementedError("\"bmm\" not implemented for 'Bool'")
    return _trilinear_np(i1, i2, i3, expand1, expand2, expand3, sumdim)


_any = X.twin(_trilinear_np, _trilinear.fn)


@_trilinear.backward
def _(ctx, grad):
    a, b, c = ctx.i1, ctx.i2, ctx.i3
    e1, e2, e3, sd = ctx.expand1, ctx.expand2, ctx.expand3, ctx.sumdim
    return (_any(grad, b, c, sd, e2, e3, e1) if ctx.needs(0) else None,
            _any(a, grad, c, e1, sd, e3, e2) if ctx.needs(1) else None,
            _any(a, b, grad, e1, e2, sd, e3) if ctx.needs(2) else None)


@_trilinear.jvp
def _(ctx, t1, t2, t3):
    a, b, c = ctx.i1, ctx.i2, ctx.i3
    e = (ctx.expand1, ctx.expand2, ctx.expand3, ctx.sumdim)
    out = None
    for term in ((t1, b, c), (a, t2, c), (a, b, t3)):
        if not any(t is None for t in term):
            r = _trilinear.fn(*term, *e)
            out = r if out is None else out + r
    return out


OPS.pop(_trilinear.key)  # reached through nn.functional.bilinear only
