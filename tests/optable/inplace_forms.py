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


def _inplace_call(name):
    def call(a, *rest, **kwargs):
        return getattr(a * 1, name)(*rest, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _keeps_input(row, sample):
    """Whether ``row``'s result on ``sample`` has its first input's shape and dtype (so the
    in-place form can write it back)."""
    import dyngrad
    if 0 in sample.int_args or not sample.shapes:
        return False
    ts = sample.make(dyngrad, requires_grad=False)
    try:
        out = row.fn(*ts, *sample.extra, **sample.kwargs)
    except Exception:
        return False
    return isinstance(out, dyngrad.Tensor) and out.shape == ts[0].shape and \
        out.dtype == ts[0].dtype


def derived_rows(rows):
    """The in-place form ``<name>_`` of every registered op whose out-of-place op has a row
    calling it directly: the same samples (those whose result keeps the first input's shape
    and dtype) on a non-leaf copy of the first input.  The list comes from the registry."""
    import dyngrad
    from dyngrad.ops import OPS
    have = {r.name for r in rows}
    by_fn: dict = {}
    for r in rows:
        by_fn.setdefault(id(r.fn), []).append(r)
    out = []
    for name in OPS:
        if not name.endswith("_") or name.startswith("_") or name.endswith("__") or \
                name in have or not hasattr(dyngrad.Tensor, name):
            continue
        base = name[:-1]
        cands = [r for obj in (getattr(dyngrad, base, None), OPS.get(base, {}).get("fn"))
                 if obj is not None for r in by_fn.get(id(obj), [])]
        samples = [s for r in cands[:1] for s in r.samples if _keeps_input(r, s)]
        if not samples:
            continue
        r = cands[0]
        # PyTorch declares no derivative for some in-place forms (asinh_): the op's declaration
        # records that (its ``inplace_node``)
        grad = r.grad and getattr(OPS.get(base, {}).get("spec"), "inplace_node", None) is None
        out.append(OpInfo(name, _inplace_call(name), r.ref, samples, r.grad_fn, grad=grad,
                          gradgrad=r.gradgrad and grad, atol=r.atol, rtol=r.rtol,
                          float32_ok=r.float32_ok, notes=f"in-place form of row {r.name}"))
    return out
