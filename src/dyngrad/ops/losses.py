"""The losses PyTorch computes with a node of their own (``MseLossBackward0``...), declared as
ops of arrays; ``nn.functional`` gives them PyTorch's signatures (reduction strings, legacy
``size_average``/``reduce``).  ``reduction`` is PyTorch's enum: 0 none, 1 mean, 2 sum (0 when
not given, as PyTorch's ``torch.binary_cross_entropy_with_logits(x, t)``)."""
from __future__ import annotations

import numpy as np

from . import OPS
from . import _dual as X
from .. import _dtype as D
from ._spec import batch_aligned, defop, edgeless
from .._fperr import quiet_off, quiet_on
from .._record import STATE, Saved, Tensor, edge_of, record, sum_to

_make = Tensor._make
_add_reduce = np.add.reduce
REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def reduce(loss, reduction):
    """The elementwise ``loss`` reduced (``reduction`` a string or PyTorch's enum); bfloat16
    is summed in float32, as PyTorch's kernels do."""
    if type(reduction) is str:
        reduction = REDUCTIONS[reduction]
    if reduction == 0:
        return loss
    acc = np.float32 if loss.dtype == D.BF16 else loss.dtype
    if reduction == 2:
        return np.asarray(_add_reduce(loss, None, acc), loss.dtype)
    if not loss.size:
        return np.asarray(np.nan, loss.dtype)
    if loss.dtype.kind == "c":  # (NumPy's mean divides a complex sum its own way)
        return np.asarray(loss.mean(dtype=acc), loss.dtype)
    # what mean computes, without its wrapper
    return np.asarray(_add_reduce(loss, None, acc) / loss.size, loss.dtype)


def reduce_grad(g, shape, reduction, n):
    """Gradient of the reduction: a scalar gradient expanded back to the elementwise loss."""
    if type(reduction) is str:
        reduction = REDUCTIONS[reduction]
    if reduction == 1:
        return X.expand_to(g / n, shape) if n else X.expand_to(g, shape)
    if reduction == 2:
        return X.expand_to(g, shape)
    return g


def loss_dtype(x, t, kernel, complex_ok=True):
    """The dtype of a pointwise loss of arrays ``x`` and ``t`` (PyTorch's promotion of the
    two); an integer result (and a complex one, ``complex_ok=False``) has no kernel, as in
    PyTorch."""
    rt = x.dtype if x.dtype is t.dtype else D.promote(D.FROM_NP[x.dtype], D.FROM_NP[t.dtype]).np
    if rt not in D.INEXACT or (complex_ok is False and rt.kind == "c"):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_type_name(rt)}\'')
    return rt


def _batch_reduced(spec, arrays, params):
    """Batching rule of a pointwise loss: unreduced on the aligned inputs, then each sample
    reduced on its own."""
    p = dict(params)
    red = p.get("reduction", 0)
    red = REDUCTIONS.get(red, red)
    p["reduction"] = 0
    r = spec.forward(*batch_aligned(arrays), **p)
    if red == 0:
        return r
    axes = tuple(range(1, r.ndim))
    acc = np.float32 if r.dtype == D.BF16 else r.dtype
    out = r.mean(axis=axes, dtype=acc) if red == 1 else r.sum(axis=axes, dtype=acc)
    return np.asarray(out, r.dtype)


def _declare_backward(spec, grads):
    """Declared loss ``spec``'s backward from ``grads(grad, x, t, params, need_x, need_t)``
    (params: its saved values after the two tensors), also as the node's backward without a
    Ctx (the hot path: self is unpacked before target, as PyTorch's)."""
    names = spec.saved[2:]
    n = len(names)
    summed = spec.broadcast

    @spec.backward
    def _(ctx, grad):
        return grads(grad, ctx.self, ctx.target, tuple(getattr(ctx, m) for m in names),
                     ctx.needs(0), ctx.needs(1))

    def fast_bw(self, g, graph):
        sv = self._saved  # self, target, params... (and the inputs' shapes, when summed)
        x = sv[0].get(self, graph)
        t = sv[1].get(self, graph)
        nf = self.next_functions
        gx, gt = grads(g, x, t, sv[2:2 + n], nf[0][0] is not None, nf[1][0] is not None)
        if summed:
            sa, sb = sv[-2], sv[-1]
            return (gx if gx is None or tuple(gx.shape) == sa else sum_to(gx, sa),
                    gt if gt is None or tuple(gt.shape) == sb else sum_to(gt, sb))
        return gx, gt

    spec.node_cls._bw = fast_bw


def _pointwise_jvp(spec, grads):
    """The forward-mode rule of declared loss ``spec``, elementwise before its reduction: the
    tangents times the elementwise partial derivatives ``grads`` gives, then reduced."""
    names = spec.saved[2:]
    ri = names.index("reduction")

    @spec.jvp
    def _(ctx, ta, tb):
        x = ctx.self
        params = [getattr(ctx, n) for n in names]
        reduction, params[ri] = params[ri], 0
        one = X.const(np.ones(tuple(x.shape), X.data(x).dtype), x)
        gx, gt = grads(one, x, ctx.target, tuple(params), ta is not None, tb is not None)
        out = None if gx is None else gx * ta
        if gt is not None:
            out = gt * tb if out is None else out + gt * tb
        return _reduce_t(out, reduction)


def _diff_loss(spec, dl, check=None):
    """The backward and forward-mode rule of declared loss ``spec`` of d = self - target,
    elementwise then reduced: ``dl(d, *params)`` is the elementwise loss's derivative (params:
    the saved values after ``reduction``); ``check(x, t, need_x)`` PyTorch's checks of its
    backward."""
    names = spec.saved[3:]

    def grads(grad, x, t, params, need_x, need_t):
        if check is not None:
            check(x, t, need_x)
        d = x - t
        gd = reduce_grad(grad, tuple(d.shape), params[0], X.numel(d)) * dl(d, *params[1:])
        return (gd if need_x else None, -gd if need_t else None)

    _declare_backward(spec, grads)

    @spec.jvp
    def _(ctx, ta, tb):
        td = ta if tb is None else -tb if ta is None else ta - tb
        return _reduce_t(dl(ctx.self - ctx.target, *(getattr(ctx, n) for n in names)) * td,
                         ctx.reduction)


def _reduce_t(loss, reduction):
    """A Tensor's reduction (forward-mode rules)."""
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


def _diff(self, target, kernel, complex_ok=True):
    dt = loss_dtype(self, target, kernel, complex_ok)
    return self.astype(dt, copy=False) - target.astype(dt, copy=False)


@defop("mse_loss", node="MseLossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction"), function=False, method=False, broadcast=True,
       batch=_batch_reduced)
def mse_loss(self, target, reduction=0):
    """Mean squared error; MseLossBackward0."""
    d = _diff(self, target, "mse_cpu", False)
    return reduce(d * d, reduction)


_diff_loss(mse_loss, lambda d: d * 2)


@defop("smooth_l1_loss", node="SmoothL1LossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction", "beta"), function=False, method=False,
       broadcast=True, batch=_batch_reduced)
def smooth_l1_loss(self, target, reduction=0, beta=1.0):
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2; SmoothL1LossBackward0."""
    d = _diff(self, target, "smooth_l1_cpu", False)
    a = np.abs(d)
    return reduce(np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta).astype(
        d.dtype, copy=False), reduction)


def _smooth_l1_dl(d, beta):
    dd = X.data(d)
    inside = X.const((np.abs(dd) < beta).astype(dd.dtype) / beta, d)
    outside = X.const(np.where(np.abs(dd) < beta, 0, np.sign(dd)).astype(dd.dtype), d)
    return d * inside + outside


_diff_loss(smooth_l1_loss, _smooth_l1_dl)


@defop("huber_loss", node="HuberLossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction", "delta"), function=False, method=False,
       broadcast=True, batch=_batch_reduced)
def huber_loss(self, target, reduction=0, delta=1.0):
    """0.5 d^2 where |d| <= delta, else delta (|d| - delta / 2), in the input's dtype;
    HuberLossBackward0."""
    dt = loss_dtype(self, target, "huber_cpu")
    if dt != self.dtype and (self.dtype not in D.INEXACT or
                             (dt.kind == "c" and self.dtype.kind != "c")):
        raise cast_error(dt, self.dtype)
    if dt.kind == "c":
        raise NotImplementedError(f'"huber_cpu" not implemented for '
                                  f"'{D.scalar_type_name(dt)}'")
    d = self.astype(dt, copy=False) - target.astype(dt, copy=False)
    a = np.abs(d)
    return reduce(np.where(a <= delta, 0.5 * d * d, delta * (a - 0.5 * delta)).astype(
        self.dtype, copy=False), reduction)


def _huber_dl(d, delta):
    dd = X.data(d)
    inside = X.const((np.abs(dd) <= delta).astype(dd.dtype), d)
    outside = X.const(np.where(np.abs(dd) <= delta, 0, delta * np.sign(dd)).astype(dd.dtype), d)
    return d * inside + outside


def _huber_check(x, t, need_x):
    """PyTorch's huber_loss_backward needs one dtype."""
    xd, td = X.data(x).dtype, X.data(t).dtype
    if xd != td:
        if need_x:
            same_dtype(td, xd)
        same_dtype(xd, td)


_diff_loss(huber_loss, _huber_dl, _huber_check)


def same_dtype(found, expected):
    if found != expected:
        raise RuntimeError(f"Found dtype {D.scalar_type_name(found)} but expected "
                           f"{D.scalar_type_name(expected)}")


def cast_error(result, out):
    return RuntimeError(f"result type {D.scalar_type_name(result)} can't be cast to the desired "
                        f"output type {D.scalar_type_name(out)}")


def call(spec, input, target, *params):
    """Declared loss ``spec`` of ``input`` and ``target`` and its other arguments (in the
    declaration's order, each saved after the two tensors): for tensors of one float dtype and
    shape, its forward and node without the general path's argument binding (the hot case);
    else that path."""
    x, t = input._data, target._data
    if x.dtype is not t.dtype or x.shape != t.shape or (
            x.dtype.kind != "f" and x.dtype != D.BF16):  # (bfloat16: each step rounded)
        return spec.fn(input, target, *params)
    tok = quiet_on()
    try:
        r = spec.forward(x, t, *params)
    finally:
        quiet_off(tok)
    if STATE.enabled and (input._requires_grad or target._requires_grad):
        saved = (Saved(input), Saved(target)) + params
        return record(r, spec.node_cls((edge_of(input), edge_of(target)), saved +
                                       (x.shape, t.shape) if spec.broadcast else saved))
    return _make(r)


def _weight(w, x):
    """A weight Tensor (or None) broadcast to the input's shape and dtype, as an array or a
    constant of the formula."""
    if w is None:
        return None
    xd = X.data(x)
    return X.const(np.broadcast_to(w._data, xd.shape).astype(xd.dtype), x)


def _softplus(x):
    return X.clamp_min(x, 0) + X.log1p(X.exp(-X.abs(x)))


@defop("binary_cross_entropy", node="BinaryCrossEntropyBackward0", inputs=("self", "target"),
       saved=("self", "target", "weight", "reduction"), function=False, method=False,
       batch=_batch_reduced)
def binary_cross_entropy(self, target, weight=None, reduction=0):
    """-(t log x + (1 - t) log(1 - x)), logs clamped at -100; BinaryCrossEntropyBackward0."""
    same_dtype(target.dtype, self.dtype)
    if self.dtype not in D.INEXACT or self.dtype.kind == "c":
        raise NotImplementedError(f'"binary_cross_entropy" not implemented for '
                                  f"'{D.scalar_type_name(self.dtype)}'")
    if ((self < 0) | (self > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    lx = np.maximum(np.log(self), -100)
    l1x = np.maximum(np.log1p(-self), -100)
    loss = -(target * lx + (1 - target) * l1x)
    w = _weight(weight, self)
    if w is not None:
        loss = loss * w
    return reduce(loss.astype(self.dtype, copy=False), reduction)


def _bce_grads(grad, x, t, params, need_x, need_t):
    weight, reduction = params
    gl = reduce_grad(grad, tuple(x.shape), reduction, X.numel(x))
    w = _weight(weight, x)
    if w is not None:
        gl = gl * w
    gx = gl * (x - t) / X.clamp_min((1 - x) * x, 1e-12) if need_x else None
    gt = gl * (X.log(1 - x) - X.log(x)) if need_t else None
    return gx, gt


_declare_backward(binary_cross_entropy, _bce_grads)


_pointwise_jvp(binary_cross_entropy, _bce_grads)


@defop("binary_cross_entropy_with_logits", node="BinaryCrossEntropyWithLogitsBackward0",
       inputs=("self", "target"), saved=("self", "target", "weight", "pos_weight", "reduction"),
       method=False, batch=_batch_reduced)
def binary_cross_entropy_with_logits(self, target, weight=None, pos_weight=None, reduction=0):
    """Sigmoid and binary cross entropy in one stable formula;
    BinaryCrossEntropyWithLogitsBackward0."""
    if self.dtype not in D.INEXACT or self.dtype.kind == "c":
        raise NotImplementedError(f'"log_sigmoid_cpu" not implemented for '
                                  f"'{D.scalar_type_name(self.dtype)}'")
    # PyTorch computes (1 - target) * input - log_sigmoid(input) in place on (1 - target): the
    # loss has the target's dtype
    out_dt = target.dtype
    if out_dt not in D.INEXACT:
        raise cast_error(self.dtype, out_dt)
    x, t = self, target
    if out_dt != x.dtype:
        cdt = np.promote_types(x.dtype, out_dt)
        x, t = x.astype(cdt), t.astype(cdt)
    sp = _softplus(-x)
    pw = _weight(pos_weight, x)
    loss = (1 - t) * x + (sp if pw is None else ((pw - 1) * t + 1) * sp)
    w = _weight(weight, x)
    if w is not None:
        loss = loss * w
    return reduce(loss.astype(out_dt, copy=False), reduction)


def _bcel_grads(grad, x, t, params, need_x, need_t):
    weight, pos_weight, reduction = params
    gl = reduce_grad(grad, tuple(x.shape), reduction, X.numel(x))
    w = _weight(weight, x)
    if w is not None:
        gl = gl * w
    pw = _weight(pos_weight, x)
    if pw is None:
        return (gl * (X.sigmoid(x) - t) if need_x else None, gl * -x if need_t else None)
    scale = (pw - 1) * t + 1
    return (gl * ((1 - t) - scale * X.sigmoid(-x)) if need_x else None,
            gl * (-x + (pw - 1) * _softplus(-x)) if need_t else None)


_declare_backward(binary_cross_entropy_with_logits, _bcel_grads)
_pointwise_jvp(binary_cross_entropy_with_logits, _bcel_grads)


def _softplus_np(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def _sigmoid(x):
    if isinstance(x, Tensor):
        return x.sigmoid()
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


@defop("soft_margin_loss", node="SoftMarginLossBackward0", inputs=("self", "target"),
       saved=("self", "target", "reduction"), function=False, method=False,
       batch=_batch_reduced)
def soft_margin_loss(self, target, reduction=1):
    """log(1 + exp(-target * input)), reduced; SoftMarginLossBackward0 (the target is saved,
    without an edge: PyTorch refuses a target that requires grad)."""
    return reduce(_softplus_np(-(target * self)), reduction)


@soft_margin_loss.backward
def _(ctx, grad):
    x, t = ctx.self, ctx.target
    gl = reduce_grad(grad, tuple(X.data(x).shape), ctx.reduction, X.numel(x))
    return gl * -(t * _sigmoid(-(t * x))),


@soft_margin_loss.jvp
def _(ctx, tangent, *_):
    x, t = ctx.self, ctx.target
    return _reduce_t(tangent * -(t * _sigmoid(-(t * x))), ctx.reduction)


edgeless(soft_margin_loss, "target")
OPS.pop(soft_margin_loss.key)  # reached through nn.functional.soft_margin_loss only


# --- nll_loss: PyTorch's nll_loss_forward / nll_loss2d_forward and their gradient ops ---------
# The forward keeps its input, the target (as a SavedVariable: version-checked, freed after
# backward), the class weight, the reduction, ignore_index and the total weight it computed;
# its gradient is the op nll_loss_backward (NllLossBackwardBackward0 under create_graph),
# whose own gradient is nll_loss of the incoming gradient, so every order records PyTorch's
# nodes.  nn.functional.nll_loss gives them PyTorch's signature and argument checks.
def _arr(v):
    """An array argument that may come as a Tensor (a formula under create_graph)."""
    return None if v is None else v._data if isinstance(v, Tensor) else np.asarray(v)


def nll_index(shape, tgt):
    """Fancy index selecting the target class of every sample: input (C,) or (N, C, d1...)."""
    if len(shape) == 1:
        return (tgt,)
    rest = shape[2:]
    if not rest:  # (N, C): the common case
        return (np.arange(shape[0]), tgt.reshape(-1))
    grids = np.indices((shape[0],) + tuple(rest))
    return (grids[0].reshape(-1), tgt.reshape(-1)) + tuple(gr.reshape(-1) for gr in grids[1:])


def symint(v):
    """An int as PyTorch's nodes show a saved SymInt: a negative one as unsigned 64-bit."""
    return v % (1 << 64) if v < 0 else v


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _nll_pick(x, t, weight, ignore_index, check=True):
    """The per-sample weights (None: all 1), the mask of the targets not ignored (None: all
    of them), and the index of each sample's target class; ``check``: PyTorch's IndexError
    for a target out of range."""
    ignore_index = _signed(ignore_index)
    C = x.shape[0] if x.ndim == 1 else x.shape[1]
    valid = t != ignore_index
    if valid.all():
        valid, tc = None, t
        if check and t.size and (t.min() < 0 or t.max() >= C):
            bad = t[(t < 0) | (t >= C)][0]
            raise IndexError(f"Target {int(bad)} is out of bounds.")
        w_t = None if weight is None else weight.astype(x.dtype)[tc]
    else:
        if check:
            tv = t[valid]
            if tv.size and (tv.min() < 0 or tv.max() >= C):
                bad = tv[(tv < 0) | (tv >= C)][0]
                raise IndexError(f"Target {int(bad)} is out of bounds.")
        tc = np.where(valid, t, 0)
        w_t = valid.astype(x.dtype) if weight is None else \
            weight.astype(x.dtype)[tc] * valid
    return w_t, valid, nll_index(x.shape, tc), tc.shape


def _nll_forward(self, target, weight=None, reduction=1, ignore_index=-100):
    """Negative log likelihood of the target classes, weighted, reduced; returns the loss and
    the total weight (the mean's divisor; 0 for reduction none, as PyTorch's)."""
    w_t, _, idx, tshape = _nll_pick(self, _arr(target), _arr(weight), ignore_index)
    picked = self[idx].reshape(tshape)
    losses = -picked if w_t is None else -picked * w_t
    acc = np.float32 if self.dtype == D.BF16 else None  # bfloat16 summed in float32
    if reduction == 0 and self.ndim > 1:
        return losses.astype(self.dtype, copy=False), np.zeros((), self.dtype)
    # (a single sample, input (C,), is reduced even for none: its total weight is kept)
    total = np.asarray(losses.size if w_t is None else w_t.sum(dtype=acc), self.dtype)
    s = losses.sum(dtype=acc)
    if reduction != 1:
        return np.asarray(s, self.dtype), total
    return np.asarray(s / total if total else np.nan, self.dtype), total


def _nll_backward(grad_output, self, target, weight=None, reduction=1, ignore_index=-100,
                  total_weight=None):
    """nll_loss's gradient: ``-weight[target] * grad`` at each sample's target class (divided
    by the total weight for the mean; no gradient when it is 0), zero elsewhere."""
    g = grad_output
    t = target if target.__class__ is np.ndarray else _arr(target)
    tw = total_weight if total_weight.__class__ is np.ndarray else _arr(total_weight)
    if weight is None and reduction and self.ndim == 2 and t.size and tw == t.size:
        # the common call (cross_entropy's): no weight, and a total weight of one per target
        # says that none is ignored
        z = np.zeros(self.shape, self.dtype)
        z[np.arange(t.size), t] = -g / tw if reduction == 1 else -g
        return z
    w_t, valid, idx, tshape = _nll_pick(self, t, _arr(weight), ignore_index, False)
    if reduction == 1:
        g = g / tw if tw else g * 0
    z = np.zeros(self.shape, self.dtype)
    coef = -g if w_t is None else -w_t * g
    if valid is not None:  # an ignored target gets no gradient (not -0)
        coef = np.where(valid, coef, 0)
    z[idx] = coef.reshape(-1) if np.ndim(coef) else coef
    return z


def _batch_nll(spec, arrays, params):
    """Batching rule of nll_loss: the batch axis joins the samples' axis (a sample of one
    dimension, (C,), becomes a row), then each sample's losses are reduced on their own."""
    x, = arrays
    p = dict(params)
    t = _arr(p["target"])
    red = p.get("reduction", 1)
    B, nd = x.shape[0], x.ndim - 1  # nd: a sample's dimensions
    if red == 0 and nd == 1:
        red = 2  # (a single sample is reduced even for none)
    tb = t if t.ndim == x.ndim - 1 else np.broadcast_to(t, (B,) + t.shape)
    ts = tb.reshape((-1,) + tb.shape[2:]) if nd > 1 else tb
    xs = x.reshape((-1,) + x.shape[2:]) if nd > 1 else x
    w_t, _, idx, tshape = _nll_pick(xs, ts, _arr(p.get("weight")), p.get("ignore_index", -100))
    if w_t is None:
        w_t = np.ones(tshape, x.dtype)
    losses = -xs[idx].reshape(tshape) * w_t
    if red == 0:
        return losses.reshape(tb.shape).astype(x.dtype, copy=False), np.zeros(B, x.dtype)
    acc = np.float32 if x.dtype == D.BF16 else None
    total = w_t.reshape(B, -1).sum(1, dtype=acc)
    s = losses.reshape(B, -1).sum(1, dtype=acc)
    if red == 2:
        return s.astype(x.dtype), total.astype(x.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (s / total).astype(x.dtype), total.astype(x.dtype)


def _batch_nll_backward(spec, arrays, params):
    """Batching rule of nll_loss's gradient: each sample's gradient placed by its target (a
    target and total weight per sample, or one for all)."""
    g, x = arrays
    p = dict(params)
    t, tw = _arr(p["target"]), _arr(p.get("total_weight"))
    out = np.zeros(x.shape, x.dtype)
    for b in range(x.shape[0]):
        q = dict(p, target=t[b] if t.ndim == x.ndim - 1 else t,
                 total_weight=tw[b] if tw is not None and tw.ndim else tw)
        out[b] = spec.forward(g[b], x[b], **q)
    return out


def _declare_nll(suffix, node):
    """nll_loss<suffix>_forward recording ``node`` and its gradient op recording
    ``node``'s BackwardBackward0 (2D: the input (N, C, H, W), as PyTorch's nll_loss2d)."""
    fwd = defop(f"nll_loss{suffix}_forward", node=node, inputs=("self",),
                outputs=("output", "total_weight"),
                saved=("self", "target", "weight", "reduction", "ignore_index", "total_weight"),
                index_args=("target", "weight"), function=False, method=False, batch=_batch_nll)(
        _nll_forward)
    bwd = defop(f"nll_loss{suffix}_backward", node=node.replace("Backward0", "BackwardBackward0"),
                inputs=("grad_output", "self"),
                saved=("target", "weight", "reduction", "ignore_index", "self_sym_sizes"),
                index_args=("target", "weight"), function=False, method=False,
                batch=_batch_nll_backward)(_nll_backward)
    # (the input's shape is kept for the forward-mode rule; PyTorch's node does not show it)
    del bwd.node_cls._named_saved["self_sym_sizes"]
    loss = X.twin(lambda *a: fwd.forward(*a)[0], lambda *a: fwd.fn(*a)[0])
    grad_op = X.twin(bwd.forward, bwd.fn)

    @fwd.backward
    def _(ctx, grad):
        return grad_op(grad, ctx.self, ctx.target, ctx.weight, ctx.reduction, ctx.ignore_index,
                       ctx.total_weight),

    def fast_bw(self, g, graph):
        # the same formula without a Ctx (cross_entropy's hot path): the saved tensors
        # unpacked in the Ctx's order (self, target, total_weight, weight)
        sv = self._saved
        x, t = sv[0].get(self, graph), sv[1].get(self, graph)
        tw = sv[5].get(self, graph)
        w = sv[2] if sv[2] is None else sv[2].get(self, graph)
        return grad_op(g, x, t, w, sv[3], sv[4], tw),

    fwd.node_cls._bw = fast_bw

    @fwd.jvp
    def _(ctx, tangent):  # linear in the input
        return fwd.fn(tangent, ctx.target, ctx.weight, ctx.reduction, ctx.ignore_index)[0]

    @bwd.backward
    def _(ctx, gg):
        # linear in grad_output; the input only gives the shape (a zero gradient, as PyTorch's)
        return (loss(gg, ctx.target, ctx.weight, ctx.reduction, ctx.ignore_index)
                if ctx.needs(0) else None,
                X.zeros_like(gg) if ctx.needs(1) else None)

    @bwd.jvp
    def _(ctx, t_grad, t_self):
        shape = ctx.self_sym_sizes
        if t_grad is None:
            return X.zeros(shape, t_self)
        total = fwd.fn(X.zeros(shape, t_grad), ctx.target, ctx.weight, ctx.reduction,
                       ctx.ignore_index)[1]
        return bwd.fn(t_grad, X.zeros(shape, t_grad), ctx.target, ctx.weight, ctx.reduction,
                      ctx.ignore_index, total)

    for spec in (fwd, bwd):
        OPS.pop(spec.key)  # reached through nn.functional.nll_loss only
    return fwd, bwd


def nll_call(spec, input, target, weight, reduction, ignore_index):
    """Declared ``nll_loss(2d)_forward`` of Tensors ``input``, ``target`` and ``weight`` (or
    None), already checked, with its node when the input requires grad: the forward and
    node without the general path's argument binding (cross_entropy's hot path)."""
    out, total = spec.forward(input._data, target._data,
                              None if weight is None else weight._data, reduction, ignore_index)
    if STATE.enabled and input._requires_grad:
        return record(out, spec.node_cls((edge_of(input),), (
            Saved(input), Saved(target), None if weight is None else Saved(weight), reduction,
            symint(ignore_index),
            Saved(_make(total))), out.dtype))
    return _make(out)


nll_loss_forward, nll_loss_backward = _declare_nll("", "NllLossBackward0")
nll_loss2d_forward, nll_loss2d_backward = _declare_nll("2d", "NllLoss2DBackward0")
