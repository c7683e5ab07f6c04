"""Batching rules: each runs an op once on the physical tensors of its batched arguments.

A rule gets the unwrapped op (``orig``) and the call's arguments, and returns the batched
result, or ``NotImplemented`` for a case it does not handle (the op then loops).  Ops
declared with ``ops/_spec.py`` bring their own rule (``ELEMENTWISE`` or ``batch_along``)."""
from __future__ import annotations

from .._tensor import Tensor, _dim
from ..autograd.function import Function
from ..ops import OPS
from ..ops._spec import ELEMENTWISE
from ..ops.conv import _ABSENT as _ABSENT_BIAS
from ._batched import (BatchedTensor, INPLACE_MSG, LEVELS, RANDOM_MSG, RULES, _union,
                       align, call, dispatch, expand_batch, fallback, orig_fn, unwrap, wrap,
                       wrap_out)

_BT = BatchedTensor


def _is_t(x):
    return isinstance(x, Tensor)


def _lrank(x):
    p, lv = unwrap(x)
    return p.ndim - len(lv)


def _arg(args, kwargs, pos, name, default=None):
    if len(args) > pos:
        return args[pos]
    return kwargs.get(name, default)


def _set(args, kwargs, pos, name, value):
    if len(args) > pos:
        args = list(args)
        args[pos] = value
        return tuple(args), kwargs
    kwargs = dict(kwargs)
    kwargs[name] = value
    return args, kwargs


def _inplace_name(name):
    return (name.endswith("_") and not name.startswith("__")) or (
        name.startswith("__i") and name not in ("__index__", "__int__", "__invert__",
                                                 "__iter__"))


# --- elementwise, with broadcasting ------------------------------------------------------
def elementwise(name):
    inplace = _inplace_name(name)

    def rule(orig, args, kwargs):
        flat = [a for a in args if _is_t(a)] + [v for v in kwargs.values() if _is_t(v)]
        if any(type(a) in (list, tuple) and any(type(b) is _BT for b in a) for a in args):
            return NotImplemented
        levels = _union(*flat)
        lrank = max(_lrank(t) for t in flat)
        if inplace:
            self = args[0]
            if not set(unwrap(self)[1]) >= set(levels):
                _inplace_error(self, flat, levels)

        def conv(a):
            return align(a, levels, lrank) if type(a) is _BT else a
        a2 = tuple(conv(a) for a in args)
        k2 = {k: conv(v) for k, v in kwargs.items()}
        r = orig(*a2, **k2)
        if inplace:
            return args[0]
        return wrap_out(r, levels)
    return rule


def _inplace_error(self, tensors, levels):
    """PyTorch's errors for an in-place op whose self is not batched where another input is:
    the logical shapes already disagree, or only the batch does."""
    import numpy as np
    logical = np.broadcast_shapes(*[tuple(t.shape) for t in tensors])
    if tuple(logical) != tuple(self.shape):
        raise RuntimeError(INPLACE_MSG.format(op="inplace arithmetic"))
    lrank = max(_lrank(t) for t in tensors)
    phys = [tuple(align(t, levels, lrank).shape) if type(t) is _BT else tuple(t.shape)
            for t in tensors]
    raise RuntimeError(f"output with shape {list(unwrap(self)[0].shape)} doesn't match the "
                       f"broadcast shape {list(np.broadcast_shapes(*phys))}")


# --- ops along dimensions ---------------------------------------------------------------
def _norm_dims(d, lr, extra=0):
    n = lr + extra
    if isinstance(d, (tuple, list)):
        return type(d)(_dim(int(x), n) for x in d)
    return _dim(int(d), n)


def _shift(d, nb):
    if isinstance(d, (tuple, list)):
        return type(d)(x + nb for x in d)
    return d + nb


def along(pos, name="dim", *, extra=0, full=None, multi=False, default=None):
    """Rule of an op whose dimension argument is at ``pos``/``name``; ``full``: what a
    missing dim means ("flat": the op on the flattened logical tensor, "all": every logical
    dim); ``extra``: the op's output has that many more dims (unsqueeze)."""
    def rule(orig, args, kwargs):
        x = args[0]
        d = _arg(args, kwargs, pos, name)
        if isinstance(d, Tensor) or (type(x) is not _BT and pos == 1):
            return elementwise("max")(orig, args, kwargs)   # max(x, other) and friends
        if type(x) is not _BT:
            return NotImplemented
        others = [a for a in list(args[1:]) + list(kwargs.values()) if type(a) is _BT]
        if others:
            return NotImplemented
        phys, levels = x._phys, x._levels
        nb = len(levels)
        lr = phys.ndim - nb
        if d is None and default is not None:
            d = default
            args, kwargs = _set(args, kwargs, pos, name, d)
        if d is None or (multi and isinstance(d, (tuple, list)) and len(d) == 0
                         and full == "all"):
            if full is None:
                return NotImplemented
            if full == "flat":
                p2 = phys.reshape(*phys.shape[:nb], -1)
                a2, k2 = _set((p2,) + tuple(args[1:]), kwargs, pos, name, nb)
                r = orig(*a2, **k2)
                if isinstance(r, tuple) and not isinstance(r, Tensor):
                    r = r[0]
                return wrap_out(r, levels)
            if lr == 0:
                return _scalar(orig, phys, levels, args, kwargs, pos, name, nb)
            d = tuple(range(lr))
        if lr == 0 and extra == 0:
            _norm_dims(d, 0)
            return _scalar(orig, phys, levels, args, kwargs, pos, name, nb)
        d = _norm_dims(d, lr, extra)
        a2, k2 = _set((phys,) + tuple(args[1:]), kwargs, pos, name, _shift(d, nb))
        return wrap_out(orig(*a2, **k2), levels)
    return rule


def _scalar(orig, phys, levels, args, kwargs, pos, name, nb):
    # a logical 0-d tensor: give it a dim of size 1, run along it, drop it again
    p1 = phys.unsqueeze(nb)
    a2, k2 = _set((p1,) + tuple(args[1:]), kwargs, pos, name, nb)
    r = orig(*a2, **k2)

    def fix(t):
        if isinstance(t, Tensor) and t.ndim == nb + 1:
            return t.squeeze(nb)
        return t
    if isinstance(r, Tensor):
        return wrap(fix(r), levels)
    if isinstance(r, tuple):
        vals = [wrap_out(fix(v), levels) for v in r]
        return type(r)(vals) if type(r) is tuple else type(r)(*vals)
    return r


def _two_dims(orig, args, kwargs):
    # transpose / swapaxes / swapdims / movedim / moveaxis (two dim arguments)
    x = args[0]
    if type(x) is not _BT or len(args) < 3 and not kwargs:
        return NotImplemented
    phys, levels = x._phys, x._levels
    nb = len(levels)
    lr = phys.ndim - nb
    vals = list(args[1:]) + list(kwargs.values())
    if len(vals) != 2:
        return NotImplemented
    if lr == 0:
        for v in vals:
            _norm_dims(v, 0)
        return wrap(phys, levels)
    a, b = (_norm_dims(v, lr) for v in vals)
    if isinstance(a, (tuple, list)) and (len(set(a)) != len(a) or not isinstance(
            b, (tuple, list)) or len(set(b)) != len(b) or len(a) != len(b)):
        return NotImplemented  # movedim's errors name the dims as given: the body raises them
    return wrap(orig(phys, _shift(a, nb), _shift(b, nb)), levels)


def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def _view_like(orig, args, kwargs):
    # view / reshape: prepend the batch sizes (reshape: a view needs no contiguity here)
    x = args[0]
    if type(x) is not _BT or kwargs and set(kwargs) - {"shape", "size"}:
        return NotImplemented
    if len(args) == 2 and not isinstance(args[1], (tuple, list, int)) and not \
            hasattr(args[1], "__index__"):
        return NotImplemented   # view(dtype)
    shape = _sizes(args[1:]) if len(args) > 1 else tuple(next(iter(kwargs.values())))
    phys, levels = x._phys, x._levels
    nb = len(levels)
    lsh = tuple(phys.shape[nb:])
    n = 1
    for s in lsh:
        n *= s
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) == 1:
        known = 1
        for s in shape:
            if s != -1:
                known *= s
        if known and n % known == 0:
            shape = tuple(n // known if s == -1 else s for s in shape)
    m = 1
    for s in shape:
        m *= s
    if m != n or any(s < 0 for s in shape):
        # PyTorch's error, which speaks of the batched shape
        from .. import empty
        empty(tuple(phys.shape)).reshape(*phys.shape[:nb], *shape)
        return NotImplemented
    return wrap(phys.reshape(*phys.shape[:nb], *shape), levels)


def _view_as(orig, args, kwargs):
    other = args[1] if len(args) > 1 else next(iter(kwargs.values()))
    return args[0].reshape(tuple(other.shape))


def _expand(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    shape = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs.get("size", ()))
    p = _leading_ones(x, len(shape))
    if p is None:
        return NotImplemented
    nb = len(x._levels)
    full = tuple(x._phys.shape[:nb]) + tuple(-1 if s == -1 else int(s) for s in shape)
    return wrap(p.expand(*full), x._levels)


def _leading_ones(x, n):
    """``x``'s physical tensor with size-1 logical dims put in front (after the batch dims)
    until it has ``n`` logical dims; None when it already has more."""
    nb = len(x._levels)
    lr = x._phys.ndim - nb
    if n < lr:
        return None
    p = x._phys
    for _ in range(n - lr):
        p = p.unsqueeze(nb)
    return p


def _expand_as(orig, args, kwargs):
    return args[0].expand(*args[1].shape)


def _permute(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    dims = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs.get("dims", ()))
    phys, levels = x._phys, x._levels
    nb = len(levels)
    lr = phys.ndim - nb
    if len(dims) != lr:
        return NotImplemented
    dims = [_dim(int(d), lr) + nb for d in dims]
    return wrap(phys.permute(*range(nb), *dims), levels)


def _t(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    lr = _lrank(x)
    if lr < 2:
        return x if lr else wrap(x._phys, x._levels)
    if lr > 2:
        return NotImplemented
    return x.transpose(0, 1)


def _flatten(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    phys, levels = x._phys, x._levels
    nb = len(levels)
    lr = phys.ndim - nb
    s = _arg(args, kwargs, 1, "start_dim", 0)
    e = _arg(args, kwargs, 2, "end_dim", -1)
    if lr == 0:
        return wrap(phys.unsqueeze(nb), levels)
    s, e = _dim(s, lr) + nb, _dim(e, lr) + nb
    return wrap(phys.flatten(s, e), levels)


def _squeeze(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    phys, levels = x._phys, x._levels
    nb = len(levels)
    lr = phys.ndim - nb
    d = _arg(args, kwargs, 1, "dim")
    if d is None:
        dims = tuple(i + nb for i in range(lr) if phys.shape[i + nb] == 1)
    elif lr == 0:
        _norm_dims(d, 0)
        return wrap(phys, levels)
    else:
        dims = _shift(_norm_dims(d, lr), nb)
        if not isinstance(dims, tuple):
            dims = (dims,)
    out = phys
    for d in sorted(dims, reverse=True):
        if out.shape[d] == 1:
            out = out.squeeze(d)
    return wrap(out, levels)


def _getitem(orig, args, kwargs):
    x, idx = args[0], args[1]
    if type(x) is not _BT:
        return NotImplemented
    phys, levels = x._phys, x._levels
    nb = len(levels)
    items = idx if isinstance(idx, tuple) else (idx,)
    ntens = 0
    for it in items:
        if type(it) is _BT:
            return NotImplemented
        if isinstance(it, Tensor) or isinstance(it, list):
            if isinstance(it, Tensor) and it.dtype.is_floating_point:
                return NotImplemented
            ntens += 1
    if ntens > 1:
        pos = [i for i, it in enumerate(items) if isinstance(it, (Tensor, list))]
        if pos[-1] - pos[0] != len(pos) - 1:
            return NotImplemented
    if any(isinstance(it, Tensor) and it.dtype.name == "bool" for it in items if it is not None):
        return NotImplemented
    try:
        return wrap(phys[(slice(None),) * nb + items], levels)
    except IndexError:
        from .. import empty
        empty(tuple(phys.shape[nb:]))[idx]   # PyTorch's message names the logical dim
        raise


def _setitem(orig, args, kwargs):
    x, idx, value = args
    vl = _union(value) if type(value) is _BT else ()
    if not set(vl) <= set(unwrap(x)[1]):
        raise RuntimeError(INPLACE_MSG.format(op="inplace arithmetic"))
    if type(x) is not _BT or type(idx) is _BT or (isinstance(idx, tuple) and any(
            type(i) is _BT for i in idx)):
        return NotImplemented
    phys, levels = x._phys, x._levels
    nb = len(levels)
    items = idx if isinstance(idx, tuple) else (idx,)
    if any(isinstance(it, (Tensor, list)) for it in items):
        return NotImplemented
    sub = phys[(slice(None),) * nb + items]
    v = value
    if type(value) is _BT:
        v = align(value, levels, sub.ndim - nb)
    elif isinstance(value, Tensor):
        v = value
    phys[(slice(None),) * nb + items] = v
    return None


# --- products ---------------------------------------------------------------------------
def _matmul(orig, args, kwargs):
    a, b = args[0], args[1]
    if kwargs or not (_is_t(a) and _is_t(b)):
        return NotImplemented
    ra, rb = _lrank(a), _lrank(b)
    if ra == 0 or rb == 0:
        return NotImplemented
    levels = _union(a, b)
    if ra == 1 and rb == 1:
        return (a * b).sum(-1)
    mm = orig_fn("matmul")
    if rb == 1 and ra == 2 and type(a) is not _BT:
        # a plain matrix times batched vectors: one product of the stacked vectors
        return wrap(mm(b._phys, a.mT), b._levels)
    if ra == 1 and rb == 2 and type(b) is not _BT:
        return wrap(mm(a._phys, b), a._levels)
    sq = None
    if ra == 1:
        a = a.unsqueeze(0)
        sq = -2
    if rb == 1:
        b = b.unsqueeze(-1)
        sq = -1
    r = max(_lrank(a), _lrank(b))
    pa = align(a, levels, r) if type(a) is _BT else a
    pb = align(b, levels, r) if type(b) is _BT else b
    shared = _shared_side(pa, pb, levels) if type(a) is _BT and type(b) is _BT and \
        a._levels == levels and b._levels == levels else None
    if shared is not None:
        out = wrap(_SharedMatmul.apply(pa, pb, len(levels), shared), levels)
    else:
        out = wrap(mm(pa, pb), levels)
    return out.squeeze(sq) if sq is not None else out


def _is_shared(p, levels):
    """Whether ``p`` holds one matrix for every sample (batch dims of stride 0, full size):
    an unbatched operand made per-sample by a transform (a weight under vmap(grad))."""
    nb = len(levels)
    if p.ndim != nb + 2:
        return False
    d = p._data
    return all(st == 0 for st in d.strides[:nb]) and \
        tuple(d.shape[:nb]) == tuple(_SIZE(lv) for lv in levels)


def _shared_side(pa, pb, levels):
    nb = len(levels)
    if not levels:
        return None
    full = tuple(_SIZE(lv) for lv in levels)
    if _is_shared(pb, levels) and tuple(pa.shape[:nb]) == full:
        return 1
    if _is_shared(pa, levels) and tuple(pb.shape[:nb]) == full:
        return 0
    return None


def _outer_or_mm(u, v):
    """u @ v; with an inner size of 1 (one row per sample, the usual per-sample gradient) a
    broadcast product, which NumPy computes 10x faster than a batched matmul."""
    if u.shape[-1] == 1 and v.shape[-2] == 1:
        return u * v
    return u.matmul(v)


def _sum_middle(t, nb):
    """Sum the dims between the batch dims and the matrix dims."""
    extra = tuple(range(nb, t.ndim - 2))
    return t.sum(extra) if extra else t


class _SharedMatmul(Function):
    """a @ b when one operand is the same matrix for every sample: one matrix product on the
    whole batch forward (and for the other operand's gradient), the shared operand's gradient
    per sample.  Under create_graph the backward uses the per-sample operand, so higher
    derivatives keep their per-sample meaning."""

    @staticmethod
    def forward(a, b, nb, shared):
        if shared == 2:   # a @ b.mT with b shared (linear's weight, kept in its own layout)
            return a.matmul(b[(0,) * nb].mT)
        if shared == 1:
            return a.matmul(b[(0,) * nb])
        return a[(0,) * nb].matmul(b)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, b, nb, shared = inputs
        ctx.save_for_backward(a, b)
        ctx.nb, ctx.shared = nb, shared

    @staticmethod
    def backward(ctx, g):
        from ..autograd.grad_mode import is_grad_enabled
        a, b = ctx.saved_tensors
        nb, shared = ctx.nb, ctx.shared
        graph = is_grad_enabled()
        ga = gb = None
        if shared == 2:
            if ctx.needs_input_grad[0]:
                ga = g.matmul(b if graph else b[(0,) * nb])
            if ctx.needs_input_grad[1]:
                gb = _sum_middle(_outer_or_mm(g.mT, a), nb)
        elif shared == 1:
            if ctx.needs_input_grad[0]:
                ga = g.matmul((b if graph else b[(0,) * nb]).mT)
            if ctx.needs_input_grad[1]:
                gb = _sum_middle(_outer_or_mm(a.mT, g), nb)
        else:
            if ctx.needs_input_grad[1]:
                gb = _outer_or_mm((a if graph else a[(0,) * nb]).mT, g)
            if ctx.needs_input_grad[0]:
                ga = _sum_middle(_outer_or_mm(g, b.mT), nb)
        return ga, gb, None, None


def _rmatmul(orig, args, kwargs):
    return _matmul(orig, (args[1], args[0]), kwargs)


def _checked_mm(name, ra_need, rb_need):
    def rule(orig, args, kwargs):
        a, b = args[0], args[1] if len(args) > 1 else next(iter(kwargs.values()))
        ra, rb = _lrank(a), _lrank(b)
        if ra != ra_need or rb != rb_need:
            # PyTorch's own error for the logical shapes
            from .. import empty
            orig(empty(tuple(a.shape)), empty(tuple(b.shape)))
            return NotImplemented
        return _matmul(orig, (a, b), {})
    return rule


def _linear(orig, args, kwargs):
    x = args[0]
    w = _arg(args, kwargs, 1, "weight")
    b = _arg(args, kwargs, 2, "bias")
    if type(w) is not _BT and type(b) is not _BT and type(x) is _BT:
        levels = x._levels
        return wrap(orig(x._phys, w, b), levels)
    if type(w) is _BT and type(x) is _BT and w._levels == x._levels and _lrank(w) == 2 and \
            _lrank(x) >= 1:
        levels = _union(x, w)
        pw = align(w, levels)
        xx = x if _lrank(x) >= 2 else x.unsqueeze(0)
        px = align(xx, levels) if type(xx) is _BT else xx
        if _is_shared(pw, levels) and tuple(px.shape[:len(levels)]) == tuple(
                _SIZE(lv) for lv in levels):
            out = wrap(_SharedMatmul.apply(px, pw, len(levels), 2), levels)
            if _lrank(x) == 1:
                out = out.squeeze(0)
            return out + b if b is not None else out
    out = x.matmul(w.transpose(-1, -2) if _lrank(w) == 2 else w)
    return out + b if b is not None else out


def _cat(orig, args, kwargs):
    seq = args[0] if args else kwargs.get("tensors")
    d = _arg(args, kwargs, 1, "dim", 0)
    if kwargs.get("axis") is not None:  # NumPy's name for dim, which PyTorch takes
        d = kwargs["axis"]
    if not isinstance(seq, (list, tuple)) or not seq:
        return NotImplemented
    levels = _union(*seq)
    ranks = [_lrank(t) for t in seq]
    nb = len(levels)
    lr = max(ranks)
    phys = []
    for t, r in zip(seq, ranks):
        if r == 1 and tuple(t.shape) == (0,) and lr > 1:
            continue  # PyTorch skips legacy empty tensors in cat
        phys.append(expand_batch(align(t, levels) if type(t) is _BT else
                                 _lift(t, levels), levels))
    dd = _dim(int(d), lr) + nb
    return wrap(orig(phys, dd), levels)


def _lift(t, levels):
    p = t
    for _ in levels:
        p = p.unsqueeze(0)
    return p


def _stack(orig, args, kwargs):
    seq = args[0] if args else kwargs.get("tensors")
    d = _arg(args, kwargs, 1, "dim", 0)
    if not isinstance(seq, (list, tuple)) or not seq:
        return NotImplemented
    levels = _union(*seq)
    nb = len(levels)
    lr = _lrank(seq[0])
    phys = [expand_batch(align(t, levels) if type(t) is _BT else _lift(t, levels), levels)
            for t in seq]
    dd = _dim(int(d), lr + 1) + nb
    return wrap(orig(phys, dd), levels)


def _where(orig, args, kwargs):
    if len(args) + len(kwargs) < 3:
        return NotImplemented
    return elementwise("where")(orig, args, kwargs)


def _gather(orig, args, kwargs):
    x = args[0]
    d = _arg(args, kwargs, 1, "dim")
    idx = _arg(args, kwargs, 2, "index")
    if len(args) + len(kwargs) > 3 or d is None:
        return NotImplemented
    levels = _union(x, idx)
    lr = _lrank(x)
    if lr == 0 or _lrank(idx) != lr:
        return NotImplemented
    nb = len(levels)
    px = expand_batch(align(x, levels) if type(x) is _BT else _lift(x, levels), levels)
    pi = align(idx, levels) if type(idx) is _BT else _lift(idx, levels)
    pi = pi.expand(*px.shape[:nb], *pi.shape[nb:])
    return wrap(orig(px, _dim(int(d), lr) + nb, pi), levels)


def _index_select(orig, args, kwargs):
    x = args[0]
    d = _arg(args, kwargs, 1, "dim")
    idx = _arg(args, kwargs, 2, "index")
    if type(idx) is _BT or type(x) is not _BT:
        return NotImplemented
    lr = _lrank(x)
    if lr == 0:
        return NotImplemented
    return wrap(orig(x._phys, _dim(int(d), lr) + len(x._levels), idx), x._levels)


def _select(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    d = _arg(args, kwargs, 1, "dim")
    i = _arg(args, kwargs, 2, "index")
    if type(i) is _BT:
        return NotImplemented
    lr = _lrank(x)
    return wrap(orig(x._phys, _dim(int(d), lr) + len(x._levels), i), x._levels)


def _narrow(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT or len(args) != 4:
        return NotImplemented
    lr = _lrank(x)
    return wrap(orig(x._phys, _dim(int(args[1]), lr) + len(x._levels), args[2], args[3]),
                x._levels)


def _split(name):
    def rule(orig, args, kwargs):
        x = args[0]
        if type(x) is not _BT:
            return NotImplemented
        pos = 1 if name == "unbind" else 2
        d = _arg(args, kwargs, pos, "dim", 0)
        lr = _lrank(x)
        if lr == 0:
            return NotImplemented
        a2, k2 = _set((x._phys,) + tuple(args[1:]), kwargs, pos, "dim",
                      _dim(int(d), lr) + len(x._levels))
        return wrap_out(orig(*a2, **k2), x._levels)
    return rule


# --- losses written with the ops above ---------------------------------------------------
def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _loss_args(args, kwargs, extra=()):
    names = ("input", "target") + tuple(extra)
    vals = {}
    for i, a in enumerate(args):
        if i >= len(names):
            return None
        vals[names[i]] = a
    vals.update(kwargs)
    return vals


def _mse(orig, args, kwargs):
    v = _loss_args(args, kwargs, ("size_average", "reduce", "reduction", "weight"))
    if v is None or v.get("size_average") is not None or v.get("reduce") is not None or \
            v.get("weight") is not None:
        return NotImplemented
    x, t = v["input"], v["target"]
    if tuple(x.shape) != tuple(t.shape):
        return NotImplemented
    return _reduce((x - t) ** 2, v.get("reduction", "mean"))


def _l1(orig, args, kwargs):
    v = _loss_args(args, kwargs, ("size_average", "reduce", "reduction"))
    if v is None or v.get("size_average") is not None or v.get("reduce") is not None:
        return NotImplemented
    x, t = v["input"], v["target"]
    if tuple(x.shape) != tuple(t.shape):
        return NotImplemented
    return _reduce((x - t).abs(), v.get("reduction", "mean"))


def _nll(orig, args, kwargs):
    v = _loss_args(args, kwargs, ("weight", "size_average", "ignore_index", "reduce",
                                  "reduction"))
    if v is None or v.get("size_average") is not None or v.get("reduce") is not None:
        return NotImplemented
    return _nll_core(v["input"], v["target"], v.get("weight"), v.get("ignore_index", -100),
                     v.get("reduction", "mean"))


def _nll_core(logp, target, weight, ignore_index, reduction):
    if logp.ndim == 2 and target.ndim >= 1 and target.shape[0] != logp.shape[0]:
        raise ValueError(f"Expected input batch_size ({logp.shape[0]}) to match target "
                         f"batch_size ({target.shape[0]}).")
    if target.dtype.is_floating_point or logp.ndim not in (1, 2) or target.ndim != logp.ndim - 1:
        return NotImplemented
    from .. import where
    valid = target != ignore_index
    safe = where(valid, target, 0)
    if logp.ndim == 1:
        picked = -logp.gather(0, safe.unsqueeze(0)).squeeze(0)
    else:
        picked = -logp.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = valid.to(logp.dtype)
    if weight is not None:
        w = w * weight[safe] if type(safe) is not _BT else w * _take(weight, safe)
    loss = picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.sum() / w.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _take(weight, idx):
    # weight[idx] with a batched index: a gather on the weight broadcast over the batch
    flat = idx.reshape(-1)
    return weight.unsqueeze(0).expand(flat.shape[0], -1).gather(
        1, flat.unsqueeze(1)).reshape(tuple(idx.shape))


def _cross_entropy(orig, args, kwargs):
    v = _loss_args(args, kwargs, ("weight", "size_average", "ignore_index", "reduce",
                                  "reduction", "label_smoothing"))
    if v is None or v.get("size_average") is not None or v.get("reduce") is not None or \
            v.get("label_smoothing", 0.0):
        return NotImplemented
    x, t = v["input"], v["target"]
    if x.ndim not in (1, 2):
        return NotImplemented
    logp = x.log_softmax(0 if x.ndim == 1 else 1)
    if t.dtype.is_floating_point:
        if v.get("weight") is not None or tuple(t.shape) != tuple(x.shape):
            return NotImplemented
        loss = -(t * logp).sum(0 if x.ndim == 1 else 1)
        red = v.get("reduction", "mean")
        if red == "mean" and x.ndim == 2:
            return loss.sum() / x.shape[0]
        return _reduce(loss, red)
    return _nll_core(logp, t, v.get("weight"), v.get("ignore_index", -100),
                     v.get("reduction", "mean"))


def _bce_logits(orig, args, kwargs):
    v = _loss_args(args, kwargs, ("weight", "size_average", "reduce", "reduction",
                                  "pos_weight"))
    if v is None or v.get("size_average") is not None or v.get("reduce") is not None or \
            v.get("pos_weight") is not None:
        return NotImplemented
    x, t = v["input"], v["target"]
    if tuple(x.shape) != tuple(t.shape):
        return NotImplemented
    loss = (1 - t) * x + (-x).clamp(min=0) + ((-x.abs()).exp()).log1p()
    if v.get("weight") is not None:
        loss = loss * v["weight"]
    return _reduce(loss, v.get("reduction", "mean"))


def _bce(orig, args, kwargs):
    v = _loss_args(args, kwargs, ("weight", "size_average", "reduce", "reduction"))
    if v is None or v.get("size_average") is not None or v.get("reduce") is not None:
        return NotImplemented
    x, t = v["input"], v["target"]
    if tuple(x.shape) != tuple(t.shape):
        return NotImplemented
    loss = -(t * x.log().clamp(min=-100) + (1 - t) * (1 - x).log().clamp(min=-100))
    if v.get("weight") is not None:
        loss = loss * v["weight"]
    return _reduce(loss, v.get("reduction", "mean"))


def _softmax_like(name):
    base = along(1, "dim")

    def rule(orig, args, kwargs):
        d = _arg(args, kwargs, 1, "dim")
        if d is None:
            lr = _lrank(args[0])
            d = 0 if lr in (0, 1, 3) else 1
            args, kwargs = _set(args, kwargs, 1, "dim", d)
        return base(orig, args, kwargs)
    return rule


def _like(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT or any(type(a) is _BT for a in list(args[1:]) + list(kwargs.values())):
        return NotImplemented
    return wrap_out(orig(x._phys, *args[1:], **kwargs), x._levels)


def _new_factory(orig, args, kwargs):
    # x.new_zeros(size) and friends: an unbatched tensor of the given size
    return orig(args[0]._phys, *args[1:], **kwargs)


def _meta(fn):
    def rule(orig, args, kwargs):
        return fn(*args, **kwargs)
    return rule


def _repeat(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    reps = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs.get("repeats", ()))
    p = _leading_ones(x, len(reps))
    if p is None:
        return NotImplemented
    return wrap(p.repeat(*([1] * len(x._levels)), *reps), x._levels)


def _dropout(orig, args, kwargs, randomness):
    x = args[0]
    if randomness == "different" or type(x) is not _BT:
        return wrap_out(orig(*((unwrap(x)[0],) + tuple(args[1:])), **kwargs), unwrap(x)[1])
    # same: one mask for every sample
    from .. import ones
    m = orig(ones(tuple(x.shape), dtype=x.dtype), *args[1:], **kwargs)
    return x * m


def random_op(name, orig, args, kwargs):
    """A random op inside vmap: PyTorch's error in 'error' mode; one draw per sample
    ('different') or one shared draw ('same')."""
    level, size, randomness = LEVELS[-1]
    if name.startswith("F.") and name != "F.rrelu" and not (
            args[2] if len(args) > 2 else kwargs.get("training", True)):
        # not training: no randomness, the identity
        batched = any(type(a) is _BT for a in list(args) + list(kwargs.values()))
        return dispatch(name, orig, args, kwargs) if batched else orig(*args, **kwargs)
    if randomness == "error":
        raise RuntimeError(RANDOM_MSG)
    batched = any(type(a) is _BT for a in list(args) + list(kwargs.values()))
    if name.startswith("F.") and name != "F.rrelu":
        return _dropout(orig, args, kwargs, randomness)
    if batched and name.endswith("_") and randomness == "different":
        x = args[0]
        orig(x._phys, *args[1:], **kwargs)
        return x
    if batched and name.endswith("_like") and randomness == "different":
        x = args[0]
        p = orig(materialize_bt(x), *args[1:], **kwargs)
        return wrap(p, x._levels)
    if randomness == "same":
        if batched:
            if name.endswith("_") and type(args[0]) is _BT:
                # an in-place fill: one draw of a sample's shape, written into every sample
                x = args[0]
                phys = x._phys
                first = phys[(0,) * len(x._levels)]
                orig(first, *args[1:], **kwargs)
                phys.copy_(first.clone().expand(phys.shape))
                return x
            if name.endswith("_like"):
                x = args[0]
                return orig(x._phys[(0,) * len(x._levels)], *args[1:], **kwargs)
            return dispatch(name, orig, args, kwargs)
        return orig(*args, **kwargs)
    # different, no batched input: draw a batch of samples
    if name in ("rand", "randn"):
        shape = _sizes(args) if args else tuple(kwargs.pop("size", ()))
        kwargs = {k: v for k, v in kwargs.items() if k != "size"}
        return wrap(orig(size, *shape, **kwargs), (level,))
    if name == "normal" and len(args) >= 3 and not batched:
        return wrap(orig(args[0], args[1], (size,) + tuple(args[2]), *args[3:], **kwargs),
                    (level,))
    if batched:
        return dispatch(name, orig, args, kwargs)
    return _loop_random(name, orig, args, kwargs, level, size)


def materialize_bt(x):
    return expand_batch(x._phys, x._levels).clone()


def _loop_random(name, orig, args, kwargs, level, size):
    from ._batched import stack_results
    return stack_results([orig(*args, **kwargs) for _ in range(size)], level)


def _inplace_view(name):
    """squeeze_/unsqueeze_/t_/transpose_: the op on the physical tensor, in place."""
    def rule(orig, args, kwargs):
        x = args[0]
        if type(x) is not _BT:
            return NotImplemented
        phys, levels = x._phys, x._levels
        nb = len(levels)
        lr = phys.ndim - nb
        if name == "t_":
            if lr > 2:
                return NotImplemented
            if lr == 2:
                phys.transpose_(nb, nb + 1)
            return x
        if name == "transpose_":
            a, b = (list(args[1:]) + list(kwargs.values()))[:2]
            if lr:
                phys.transpose_(_dim(int(a), lr) + nb, _dim(int(b), lr) + nb)
            return x
        if name == "unsqueeze_":
            d = _arg(args, kwargs, 1, "dim")
            phys.unsqueeze_(_dim(int(d), lr + 1) + nb)
            return x
        d = _arg(args, kwargs, 1, "dim")
        if d is None:
            dims = [i + nb for i in range(lr) if phys.shape[i + nb] == 1]
        elif lr == 0:
            return x
        else:
            dims = _shift(_norm_dims(d, lr), nb)
            dims = list(dims) if isinstance(dims, (tuple, list)) else [dims]
        for dd in sorted(dims, reverse=True):
            if phys.shape[dd] == 1:
                phys.squeeze_(dd)
        return x
    return rule


def _resize_(orig, args, kwargs):
    """resize_ of a batched tensor: the physical tensor resized to (batch..., *sizes), as
    PyTorch's rule does (a sample of another size then reads on in the shared storage)."""
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    sizes = args[1:]
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    nb = len(x._levels)
    x._phys.resize_(*(tuple(x._phys.shape[:nb]) + tuple(int(s) for s in sizes)), **kwargs)
    return x


_DYNAMIC = ("vmap: We do not support batching operators that can output dynamic shape. "
            "Attempted to vmap over aten::{}. Please file an issue at "
            "https://github.com/pytorch/pytorch/issues if you need this feature.")


def _dynamic_shape(name):
    """Ops whose output shape depends on the values (nonzero, unique...): PyTorch's vmap
    refuses them, naming the aten op it reached."""
    def rule(orig, args, kwargs):
        if name == "nonzero" and kwargs.get("as_tuple"):
            raise RuntimeError("Batching rule not implemented for aten::nonzero_numpy. We could "
                               "not generate a fallback.")
        aten = name
        if name == "unique":
            aten = "_unique2" if _arg(args, kwargs, 4, "dim") is None else "unique_dim"
        raise RuntimeError(_DYNAMIC.format(aten))
    return rule


def _masked_fill(name):
    def rule(orig, args, kwargs):
        x = args[0]
        mask = _arg(args, kwargs, 1, "mask")
        value = _arg(args, kwargs, 2, "value")
        if type(value) is not _BT:
            return elementwise(name)(orig, args, kwargs)
        if value.dim() != 0:
            return NotImplemented
        from .. import where
        r = where(mask, value.to(x.dtype), x)
        if name.endswith("_"):
            x.copy_(r)
            return x
        return r
    return rule


def _batched_matrices(min_rank):
    """Ops that already batch over leading dims (det, inv, qr, tril...): every tensor input
    gets the batch dims of all (expanded), then one call."""
    def rule(orig, args, kwargs):
        tens = [a for a in list(args) + list(kwargs.values()) if _is_t(a)]
        if any(type(a) in (list, tuple) for a in args) or any(_lrank(t) < min_rank
                                                              for t in tens):
            return NotImplemented
        levels = _union(*tens)
        if len(tens) == 1:
            conv = {id(tens[0]): tens[0]._phys}
        else:
            rank = max(_lrank(t) for t in tens)
            conv = {id(t): expand_batch(align(t, levels, rank) if type(t) is _BT
                                        else _lift_pad(t, levels, rank), levels) for t in tens}
        a2 = tuple(conv.get(id(a), a) if _is_t(a) else a for a in args)
        k2 = {k: conv.get(id(v), v) if _is_t(v) else v for k, v in kwargs.items()}
        return wrap_out(orig(*a2, **k2), levels)
    return rule


def _lift_pad(t, levels, rank):
    p = t
    for _ in range(rank - t.ndim):
        p = p.unsqueeze(0)
    return _lift(p, levels)


def _diagonal(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    off = _arg(args, kwargs, 1, "offset", 0)
    d1 = _arg(args, kwargs, 2, "dim1", 0)
    d2 = _arg(args, kwargs, 3, "dim2", 1)
    lr = _lrank(x)
    nb = len(x._levels)
    return wrap(orig(x._phys, off, _dim(d1, lr) + nb, _dim(d2, lr) + nb), x._levels)


def _trace(orig, args, kwargs):
    x = args[0]
    if _lrank(x) != 2 or kwargs or len(args) != 1:
        return NotImplemented
    return x.diagonal(0, 0, 1).sum(-1)


def _outer(orig, args, kwargs):
    a, b = args[0], args[1] if len(args) > 1 else next(iter(kwargs.values()))
    if _lrank(a) != 1 or _lrank(b) != 1:
        return NotImplemented
    return a.unsqueeze(1) * b.unsqueeze(0)


def _addmm_like(mat):
    def rule(orig, args, kwargs):
        if set(kwargs) - {"beta", "alpha"} or len(args) != 3:
            return NotImplemented
        beta, alpha = kwargs.get("beta", 1), kwargs.get("alpha", 1)
        b, x, y = args
        prod = x.unsqueeze(1) * y.unsqueeze(0) if mat == "addr" else x.matmul(y)
        if alpha != 1:
            prod = prod * alpha
        if beta == 0:
            return prod
        return prod + (b if beta == 1 else b * beta)
    return rule


def _tile(orig, args, kwargs):
    x = args[0]
    reps = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs.get("dims", ()))
    lr = _lrank(x)
    reps = (1,) * (lr - len(reps)) + tuple(reps)
    return x.repeat(*reps)


def _broadcast_tensors(orig, args, kwargs):
    seq = args if not (len(args) == 1 and isinstance(args[0], (list, tuple))) else args[0]
    import numpy as np
    try:
        shape = np.broadcast_shapes(*[tuple(t.shape) for t in seq])
    except ValueError:
        return NotImplemented  # the body raises PyTorch's error
    return tuple(t.expand(*shape) for t in seq)


def _leading(spatial, names=("input",)):
    """Ops on (N, C, *spatial) or (C, *spatial) input with unbatched other arguments
    (pooling, padding, unbatched-weight convolution): fold the batch dims into N."""
    def rule(orig, args, kwargs):
        x = args[0]
        if type(x) is not _BT or any(type(a) is _BT for a in list(args[1:]) +
                                     list(kwargs.values())):
            return NotImplemented
        phys, levels = x._phys, x._levels
        nb = len(levels)
        lr = phys.ndim - nb
        if lr == spatial + 1:
            p = phys.reshape(-1, *phys.shape[nb:]) if nb != 1 else phys
            r = orig(p, *args[1:], **kwargs)
            lead = tuple(phys.shape[:nb])
        elif lr == spatial + 2:
            p = phys.reshape(-1, *phys.shape[nb + 1:])
            r = orig(p, *args[1:], **kwargs)
            lead = tuple(phys.shape[:nb + 1])
        else:
            return NotImplemented

        def back(t):
            if isinstance(t, Tensor):
                return wrap(t.reshape(*lead, *t.shape[1:]), levels)
            return t
        if isinstance(r, tuple):
            return tuple(back(t) for t in r)
        return back(r)
    return rule


_CONV_NAMES = ("input", "weight", "bias", "stride", "padding", "dilation", "transposed",
               "output_padding", "groups")


def _convolution(orig, args, kwargs):
    """torch.convolution: a batched input only folds its batch into N; a batched weight or
    bias makes the batch groups of one convolution (functorch's rule), the input's batch
    moved into its channels: (B, N, C, *s) -> (N, B*C, *s), weight (B, O, C/g, *k) ->
    (B*O, C/g, *k) (transposed: (B, C, O/g, *k) -> (B*C, O/g, *k)), groups g*B, and the
    output (N, B*O, *s') back to (B, N, O, *s')."""
    v = dict(zip(_CONV_NAMES, args))
    v.update(kwargs)
    if len(v) != len(_CONV_NAMES) or set(v) != set(_CONV_NAMES):
        return NotImplemented
    x, w, b = v["input"], v["weight"], v["bias"]
    if not (_is_t(x) and _is_t(w)) or (b is not None and not _is_t(b)):
        return NotImplemented
    if b is _ABSENT_BIAS:  # conv<n>d's absent bias (an unbatched marker)
        b = None
    nd = _lrank(w) - 2
    if nd < 1 or _lrank(x) != nd + 2 or (b is not None and _lrank(b) != 1):
        return NotImplemented  # the op's own errors, per sample
    rest = [v[n] for n in _CONV_NAMES[3:]]
    if type(w) is not _BT and type(b) is not _BT:
        phys, levels = x._phys, x._levels
        nb = len(levels)
        out = orig(phys.reshape(-1, *phys.shape[nb + 1:]), w, v["bias"], *rest)
        return wrap(out.reshape(*phys.shape[:nb + 1], *out.shape[1:]), levels)
    levels = _union(x, w, b)
    nb = len(levels)
    sizes = [_SIZE(lv) for lv in levels]
    size = 1
    for s in sizes:
        size *= s
    px = expand_batch(align(x, levels), levels)
    px = px.reshape(size, *px.shape[nb:])                    # (B, N, C, *s)
    n = px.shape[1]
    px = px.movedim(0, 1).reshape(n, -1, *px.shape[3:])      # (N, B*C, *s)
    pw = expand_batch(align(w, levels), levels)
    pw = pw.reshape(-1, *pw.shape[nb + 1:])                  # (B*O, C/g, *k)
    pb = v["bias"]
    if b is not None:
        pb = expand_batch(align(b, levels), levels).reshape(-1)
    rest[-1] = int(rest[-1]) * size
    out = orig(px, pw, pb, *rest)                            # (N, B*O, *s')
    out = out.reshape(n, size, -1, *out.shape[2:]).movedim(1, 0)
    return wrap(out.reshape(*sizes, *out.shape[1:]), levels)


def _kron(orig, args, kwargs):
    """kron of batched operands, computed on the physical tensors as kron's body does:
    each operand padded to the common logical rank, its logical dims interleaved with 1s
    (``a`` before, ``b`` after), one broadcasting product, the pairs merged."""
    if len(args) + len(kwargs) != 2:
        return NotImplemented
    a, b = _arg(args, kwargs, 0, "input"), _arg(args, kwargs, 1, "other")
    if not (_is_t(a) and _is_t(b)):
        return NotImplemented  # the body raises PyTorch's TypeError
    levels = _union(a, b)
    nb = len(levels)
    n = max(_lrank(a), _lrank(b))
    pa = align(a, levels) if type(a) is _BT else _lift(a, levels)
    pb = align(b, levels) if type(b) is _BT else _lift(b, levels)
    pa = pa.reshape(*pa.shape[:nb], *(1,) * (n - _lrank(a)), *pa.shape[nb:])
    pb = pb.reshape(*pb.shape[:nb], *(1,) * (n - _lrank(b)), *pb.shape[nb:])
    ash, bsh = tuple(pa.shape[nb:]), tuple(pb.shape[nb:])
    pa = pa.reshape(*pa.shape[:nb], *sum(((s, 1) for s in ash), ()))
    pb = pb.reshape(*pb.shape[:nb], *sum(((1, s) for s in bsh), ()))
    prod = pa * pb
    return wrap(prod.reshape(*prod.shape[:nb], *(x * y for x, y in zip(ash, bsh))), levels)


def _fill_diagonal_(orig, args, kwargs):
    """fill_diagonal_ of a batched tensor: every sample's diagonal (and, with ``wrap``, its
    continuation) filled at once through a mask of the sample's shape; the op's own checks
    and errors run per sample (NotImplemented) for anything else."""
    import numpy as np
    if len(args) + len(kwargs) > 3:
        return NotImplemented
    x = args[0]
    value = _arg(args, kwargs, 1, "fill_value")
    wrap_ = _arg(args, kwargs, 2, "wrap", False)
    if type(x) is not _BT or not isinstance(wrap_, (bool, np.bool_)) or (
            type(value) is _BT or not isinstance(value, (int, float, complex, np.number, Tensor))
            or isinstance(value, Tensor) and value.dim() != 0):
        return NotImplemented
    shape = tuple(x.shape)
    if len(shape) < 2 or len(shape) > 2 and any(n != shape[0] for n in shape[1:]):
        return NotImplemented
    h, w = shape[0], shape[1]
    step = sum(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
    mask = np.zeros(shape, bool)
    flat = mask.reshape(-1)
    flat[:min(h, w) * step:step] = True
    if wrap_ and len(shape) == 2 and h > w + 1:
        flat[::w + 1] = True  # the diagonal restarting every w + 1 rows
    x._phys.masked_fill_(Tensor._make(mask), value)
    return x


def _SIZE(level):
    from ._batched import _SIZES
    return _SIZES[level]


def _unbatched_params(start):
    """Ops batched over their input whose other tensor arguments (weights) act on trailing
    dims (layer_norm, embedding's indices): one call on the physical input."""
    def rule(orig, args, kwargs):
        x = args[0]
        if type(x) is not _BT or any(type(a) is _BT for a in list(args[1:]) +
                                     list(kwargs.values())):
            return NotImplemented
        return wrap_out(orig(x._phys, *args[1:], **kwargs), x._levels)
    return rule


def _elementwise_loss(orig, args, kwargs):
    """A loss that is elementwise before its reduction: the elementwise part on the aligned
    physical tensors (reduction='none'), then the reduction on the logical result."""
    import inspect
    try:
        bound = inspect.signature(orig).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return NotImplemented
    a = bound.arguments
    if a.get("size_average") is not None or a.get("reduce") is not None:
        return NotImplemented
    red = a.get("reduction", "mean")
    a["reduction"] = "none"
    loss = elementwise("loss")(orig, (), dict(a))
    if red == "batchmean":
        x = a.get("input")
        return loss.sum() / x.size(0) if x.dim() else loss.sum()
    return _reduce(loss, red)


def _linalg_cross(orig, args, kwargs):
    a, b = args[0], args[1] if len(args) > 1 else kwargs.get("other")
    d = _arg(args, kwargs, 2, "dim", -1)
    levels = _union(a, b)
    rank = max(_lrank(a), _lrank(b))
    pa = expand_batch(align(a, levels, rank) if type(a) is _BT else _lift_pad(a, levels, rank),
                      levels)
    pb = expand_batch(align(b, levels, rank) if type(b) is _BT else _lift_pad(b, levels, rank),
                      levels)
    return wrap(orig(pa, pb, dim=_dim(int(d), rank) + len(levels)), levels)


def _einsum(orig, args, kwargs):
    if kwargs or not args or not isinstance(args[0], str):
        return NotImplemented
    eq = args[0].replace(" ", "")
    ops = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else \
        list(args[1:])
    if "->" not in eq:
        # implicit output: the letters used once, in alphabetical order (after any ...)
        body = eq.replace("...", "")
        once = sorted(c for c in set(body) if c.isalpha() and body.count(c) == 1)
        eq = eq + "->" + ("..." if "..." in eq else "") + "".join(once)
    lhs, rhs = eq.split("->")
    subs = lhs.split(",")
    if len(subs) != len(ops):
        return NotImplemented
    levels = _union(*ops)
    used = set(eq)
    free = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba" if c not in used]
    if len(free) < len(levels):
        return NotImplemented
    letter = dict(zip(levels, free))
    new_subs, phys = [], []
    for sub, op in zip(subs, ops):
        p, lv = unwrap(op)
        new_subs.append("".join(letter[x] for x in lv) + sub)
        phys.append(p)
    out_eq = ",".join(new_subs) + "->" + "".join(letter[x] for x in levels) + rhs
    return wrap(orig(out_eq, *phys), levels)


def _fold_n(orig, args, kwargs):
    """Ops on (N, C, ...) input that treat every sample alike with unbatched parameters
    (group_norm, instance_norm without running stats, batch_norm in eval): the batch dims
    join N."""
    x = args[0]
    if type(x) is not _BT or any(type(a) is _BT for a in list(args[1:]) +
                                 list(kwargs.values())):
        return NotImplemented
    phys, levels = x._phys, x._levels
    nb = len(levels)
    if phys.ndim - nb < 2:
        return NotImplemented
    r = orig(phys.reshape(-1, *phys.shape[nb + 1:]), *args[1:], **kwargs)
    return wrap(r.reshape(*phys.shape[:nb + 1], *r.shape[1:]), levels)


_BN_MSG = ("Batch norm got a batched tensor as input while the running_mean or running_var, "
           "which will be updated in place, were not batched.\nIf you are using a module and do "
           "not need eval mode, please set `track_running_stats` to be False.If you are using a "
           "prebuilt module and do not need eval mode, please see the functorch website for "
           "resources on how to patch your module to work with vmap")


def _batch_norm(orig, args, kwargs):
    names = ("input", "running_mean", "running_var", "weight", "bias", "training", "momentum",
             "eps")
    v = dict(zip(names, args))
    v.update(kwargs)
    x = v["input"]
    rm, rv = v.get("running_mean"), v.get("running_var")
    if not v.get("training", False):
        return _fold_n(orig, args, kwargs)
    if rm is not None or rv is not None:
        lv = set(unwrap(x)[1])
        if any(s is not None and not set(unwrap(s)[1]) >= lv for s in (rm, rv)):
            raise RuntimeError(_BN_MSG)
        return NotImplemented
    if x.dim() < 2:
        return NotImplemented
    # batch statistics of each sample: over its N and spatial dims
    dims = (0,) + tuple(range(2, x.dim()))
    mean = x.mean(dims, keepdim=True)
    var = x.var(dims, unbiased=False, keepdim=True)
    y = (x - mean) / (var + v.get("eps", 1e-5)).sqrt()
    shape = (-1,) + (1,) * (x.dim() - 2)
    if v.get("weight") is not None:
        y = y * v["weight"].reshape(shape)
    if v.get("bias") is not None:
        y = y + v["bias"].reshape(shape)
    return y


def _embedding(orig, args, kwargs):
    names = ("input", "weight", "padding_idx", "max_norm", "norm_type", "scale_grad_by_freq",
             "sparse")
    v = dict(zip(names, args))
    v.update(kwargs)
    idx, w = v["input"], v["weight"]
    if type(w) is not _BT:
        return _unbatched_params(1)(orig, args, kwargs)
    if v.get("max_norm") is not None or v.get("scale_grad_by_freq") or \
            v.get("padding_idx") is not None or _lrank(w) != 2:
        return NotImplemented
    # a weight per sample: pick each sample's rows from its own weight
    levels = _union(idx, w)
    nb = len(levels)
    pw = expand_batch(align(w, levels), levels)
    pi = expand_batch(align(idx, levels) if type(idx) is _BT else _lift(idx, levels), levels)
    batch = tuple(pw.shape[:nb])
    n = 1
    for b in batch:
        n *= b
    from .. import arange
    rows = pi.reshape(n, -1)
    out = pw.reshape(n, *pw.shape[nb:])[arange(n).unsqueeze(1), rows]
    return wrap(out.reshape(*batch, *pi.shape[nb:], pw.shape[-1]), levels)


def _norm_affine(kind):
    """layer_norm/group_norm with per-sample (batched) affine parameters: normalize without
    them, then scale and shift elementwise (what the fused op computes)."""
    def rule(orig, args, kwargs):
        if kind == "layer":
            names = ("input", "normalized_shape", "weight", "bias", "eps")
        else:
            names = ("input", "num_groups", "weight", "bias", "eps")
        v = dict(zip(names, args))
        v.update(kwargs)
        x, w, b = v["input"], v.get("weight"), v.get("bias")
        if type(w) is not _BT and type(b) is not _BT:
            return (_unbatched_params(1) if kind == "layer" else _fold_n)(orig, args, kwargs)
        y = dispatch("F." + kind + "_norm", orig, (x, v[names[1]], None, None,
                                                   v.get("eps", 1e-5)), {})
        shape = tuple(w.shape if w is not None else b.shape)
        if kind == "group":
            shape = (shape[0],) + (1,) * (x.dim() - 2)
        if w is not None:
            y = y * w.reshape(shape)
        if b is not None:
            y = y + b.reshape(shape)
        return y
    return rule


def _sdpa(orig, args, kwargs):
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
             "enable_gqa")
    v = dict(zip(names, args))
    v.update(kwargs)
    if v.get("dropout_p", 0.0):
        return NotImplemented
    tens = [v[k] for k in ("query", "key", "value", "attn_mask") if v.get(k) is not None]
    levels = _union(*tens)
    rank = max(_lrank(t) for t in tens)
    conv = {}
    for k in ("query", "key", "value", "attn_mask"):
        t = v.get(k)
        if t is None:
            continue
        p = align(t, levels, rank) if type(t) is _BT else _lift_pad(t, levels, rank)
        conv[k] = expand_batch(p, levels) if k != "attn_mask" else p
    v.update(conv)
    return wrap(orig(**v), levels)


def _diag_embed(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT:
        return NotImplemented
    off = _arg(args, kwargs, 1, "offset", 0)
    d1 = _arg(args, kwargs, 2, "dim1", -2)
    d2 = _arg(args, kwargs, 3, "dim2", -1)
    lr = _lrank(x) + 1
    nb = len(x._levels)
    d1, d2 = _dim(d1, lr), _dim(d2, lr)
    return wrap(orig(x._phys, off, d1 + nb, d2 + nb), x._levels)


def _diag(orig, args, kwargs):
    x = args[0]
    off = _arg(args, kwargs, 1, "diagonal", 0)
    if type(x) is not _BT or _lrank(x) not in (1, 2):
        return NotImplemented
    if _lrank(x) == 1:
        return x.diag_embed(off)
    return x.diagonal(off, 0, 1)


def _pad(orig, args, kwargs):
    x = args[0]
    mode = _arg(args, kwargs, 2, "mode", "constant")
    if type(x) is not _BT or mode != "constant":
        return NotImplemented
    return wrap(orig(x._phys, *args[1:], **kwargs), x._levels)


def _interpolate(orig, args, kwargs):
    x = args[0]
    if type(x) is not _BT or _lrank(x) < 3:
        return NotImplemented
    return _leading(_lrank(x) - 2)(orig, args, kwargs)


def _index_op(name):
    """index_add/index_copy/index_fill (dim, index, source|value) with an unbatched index: the
    op along the shifted dim on the batch-aligned self and source."""
    inplace = name.endswith("_")

    def rule(orig, args, kwargs):
        x = args[0]
        d = _arg(args, kwargs, 1, "dim")
        idx = _arg(args, kwargs, 2, "index")
        src = _arg(args, kwargs, 3, "source" if "fill" not in name else "value")
        if type(idx) is _BT or d is None or not isinstance(d, int):
            return NotImplemented
        levels = _union(x, src)
        if inplace and not set(unwrap(x)[1]) >= set(levels):
            raise RuntimeError(INPLACE_MSG.format(op="inplace arithmetic"))
        lr = _lrank(x)
        if lr == 0:
            return NotImplemented
        nb = len(levels)
        px = unwrap(x)[0] if inplace else expand_batch(
            align(x, levels) if type(x) is _BT else _lift(x, levels), levels)
        if isinstance(src, Tensor):
            if src.dim() != lr and "fill" not in name:
                return NotImplemented
            ps = expand_batch(align(src, levels) if type(src) is _BT else _lift(src, levels),
                              levels) if "fill" not in name else src
            if "fill" in name and type(src) is _BT:
                return NotImplemented
        else:
            ps = src
        extra = {k: v for k, v in kwargs.items() if k not in ("dim", "index", "source",
                                                               "value")}
        r = orig(px, _dim(int(d), lr) + nb, idx, ps, **extra)
        return x if inplace else wrap(r, levels)
    return rule


def _scatter(name):
    """scatter/scatter_add (dim, index, src): like gather, the index is broadcast over the
    batch and every operand gets the batch dims."""
    inplace = name.endswith("_")

    def rule(orig, args, kwargs):
        x = args[0]
        d = _arg(args, kwargs, 1, "dim")
        idx = _arg(args, kwargs, 2, "index")
        src = _arg(args, kwargs, 3, "src")
        if kwargs.get("reduce") is not None or not isinstance(d, int) or \
                not isinstance(src, Tensor) or len(args) > 4:
            return NotImplemented
        levels = _union(x, idx, src)
        if inplace and not set(unwrap(x)[1]) >= set(levels):
            raise RuntimeError(INPLACE_MSG.format(op="inplace arithmetic"))
        lr = _lrank(x)
        if lr == 0 or _lrank(idx) != lr or _lrank(src) != lr:
            return NotImplemented
        nb = len(levels)

        def full(t):
            return expand_batch(align(t, levels) if type(t) is _BT else _lift(t, levels),
                                levels)
        px = unwrap(x)[0] if inplace else full(x)
        r = orig(px, _dim(int(d), lr) + nb, full(idx), full(src))
        return x if inplace else wrap(r, levels)
    return rule


def _xsplit(dim_of):
    def rule(orig, args, kwargs):
        x = args[0]
        if type(x) is not _BT or len(args) < 2 or kwargs:
            return NotImplemented
        d = dim_of(x.dim())
        if d is None or isinstance(args[1], int) and (
                args[1] == 0 or x.shape[d] % args[1]):
            return NotImplemented  # the body raises PyTorch's error
        return x.tensor_split(args[1], d)
    return rule


def _dist(orig, args, kwargs):
    a, b = args[0], args[1]
    p = args[2] if len(args) > 2 else kwargs.get("p", 2)
    d = a - b
    return d.reshape(-1).norm(p) if d.dim() else d.abs() if p != 0 else (d != 0).to(d.dtype)


def _multi_dot(orig, args, kwargs):
    seq = list(args[0]) if args else list(kwargs.get("tensors", ()))
    if len(seq) < 2:
        return NotImplemented
    out = seq[0]
    for t in seq[1:]:
        out = out.matmul(t)
    return out


def _sum_to_size(orig, args, kwargs):
    x = args[0]
    size = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs.get("size", ()))
    shape = tuple(x.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != t and s != 1 for s, t in zip(size, shape[lead:])):
        return NotImplemented  # not expandable: the body raises PyTorch's error
    out = x.sum(tuple(range(lead))) if lead else x
    dims = tuple(i for i, (s, t) in enumerate(zip(size, shape[lead:])) if s == 1 and t != 1)
    return out.sum(dims, keepdim=True) if dims else out


def _repeat_interleave(orig, args, kwargs):
    x = args[0]
    reps = _arg(args, kwargs, 1, "repeats")
    d = _arg(args, kwargs, 2, "dim")
    if reps is None:  # the counts form: a kernel of data-dependent size, looped as PyTorch's
        return fallback("repeat_interleave", orig, args, kwargs)
    if type(x) is not _BT or isinstance(reps, Tensor) or not isinstance(reps, int) or \
            set(kwargs) - {"repeats", "dim"}:
        return NotImplemented
    if d is None:
        return x.reshape(-1).repeat_interleave(reps, 0)
    return wrap(orig(x._phys, reps, _dim(int(d), max(_lrank(x), 1)) + len(x._levels)),
                x._levels)


def _quantile(orig, args, kwargs):
    q = _arg(args, kwargs, 1, "q")
    if isinstance(q, Tensor) and q.dim() > 0:
        return NotImplemented
    if type(q) is _BT:
        return NotImplemented
    return along(2, "dim", full="flat")(orig, args, kwargs)


# --- the table ----------------------------------------------------------------------------
_ELEMENTWISE_NAMES = """
add sub mul div true_divide divide multiply subtract rsub pow float_power maximum minimum fmax
fmin atan2 arctan2 hypot copysign remainder fmod floor_divide xlogy logaddexp logaddexp2 lerp
addcmul addcdiv eq ne lt le gt ge logical_and logical_or logical_xor logical_not bitwise_and
bitwise_or bitwise_xor bitwise_not clamp clip clamp_min clamp_max nan_to_num heaviside
nextafter ldexp isclose isnan isinf isfinite isposinf isneginf signbit sgn positive
negative neg abs absolute relu sigmoid tanh exp log sqrt rsqrt sin cos tan sinh cosh asin acos
atan asinh acosh atanh arcsin arccos arctan arcsinh arccosh arctanh exp2 expm1 log1p log2
log10 reciprocal sign floor ceil round trunc frac fix erf erfc erfinv lgamma digamma i0 sinc
logit deg2rad rad2deg angle conj conj_physical resolve_neg polygamma mvlgamma
igamma igammac gcd lcm bitwise_left_shift bitwise_right_shift
clone detach contiguous float double half int long bool short byte char to type_as cpu cuda
zeros_like ones_like empty_like full_like masked_fill type
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __div__ __rdiv__
__pow__ __rpow__ __floordiv__ __rfloordiv__ __mod__ __rmod__ __neg__ __abs__ __pos__
__invert__ __and__ __rand__ __or__ __ror__ __xor__ __rxor__ __lshift__ __rlshift__
__rshift__ __rrshift__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__
__iadd__ __isub__ __imul__ __itruediv__ __idiv__ __ipow__ __ifloordiv__ __imod__ __iand__
__ior__ __ixor__
F.relu F.relu6 F.elu F.selu F.celu F.gelu F.silu F.mish F.softplus F.softsign F.leaky_relu
F.hardtanh F.hardsigmoid F.hardswish F.logsigmoid F.tanhshrink F.softshrink F.hardshrink
F.threshold F.sigmoid F.tanh
special.expit special.erf special.erfc special.erfinv special.expm1 special.exp2
special.log1p special.sinc special.logit special.xlogy special.i0 special.ndtr
special.ndtri special.log_ndtr special.entr special.gammaln special.digamma special.psi
special.xlog1py special.zeta special.erfcx special.i0e special.i1 special.i1e special.bessel_j0
special.bessel_j1 special.bessel_y0 special.bessel_y1 special.modified_bessel_i0
special.modified_bessel_i1 special.modified_bessel_k0 special.modified_bessel_k1
special.scaled_modified_bessel_k0 special.scaled_modified_bessel_k1
special.spherical_bessel_j0 special.airy_ai special.multigammaln special.polygamma
special.sinc special.round
"""
for _n in _ELEMENTWISE_NAMES.split():
    RULES[_n] = elementwise(_n)
    if not _n.startswith("_") and not _n.startswith("F.") and "." not in _n:
        RULES[_n + "_"] = elementwise(_n + "_")
RULES["where"] = _where


def _fill_(orig, args, kwargs, _plain=elementwise("fill_")):
    """fill_ with a batched value tensor: each sample's value copied in, as PyTorch's rule."""
    self, value = args[0], _arg(args, kwargs, 1, "value")
    if type(value) is not _BT:
        return _plain(orig, args, kwargs)
    if value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    if type(self) is not _BT or not set(self._levels) >= set(value._levels):
        raise RuntimeError(INPLACE_MSG.format(op="fill_"))
    return self.copy_(value)


RULES["fill_"] = _fill_
for _n in ("squeeze_", "unsqueeze_", "t_", "transpose_"):
    RULES[_n] = _inplace_view(_n)
RULES["masked_fill"] = _masked_fill("masked_fill")
RULES["resize_"] = _resize_



# the complex views work on trailing dims, so the batch dims in front pass through
RULES["view_as_real"] = elementwise("view_as_real")
RULES["view_as_complex"] = elementwise("view_as_complex")
RULES["complex"] = elementwise("complex")  # elementwise on broadcast operands
RULES["polar"] = elementwise("polar")
for _n in ("nonzero", "unique", "unique_consecutive"):
    RULES[_n] = _dynamic_shape(_n)
RULES["masked_fill_"] = _masked_fill("masked_fill_")
RULES["copy_"] = elementwise("copy_")
RULES["_where_method"] = _where

for _n in ("sum", "mean", "nansum", "nanmean", "amax", "amin", "logsumexp", "std", "var",
           "count_nonzero", "std_mean", "var_mean"):
    RULES[_n] = along(1, "dim", full="all", multi=True)
RULES["logsumexp"] = along(1, "dim")
for _n in ("prod", "argmax", "argmin", "all", "any", "max", "min", "median", "nanmedian"):
    RULES[_n] = along(1, "dim", full="flat")
RULES["norm"] = along(2, "dim", full="flat")
RULES["linalg.vector_norm"] = along(2, "dim", full="flat", multi=True)
RULES["F.vector_norm"] = RULES["linalg.vector_norm"]


def _composed(orig, args, kwargs):
    """A function of ``dyngrad.linalg`` composed of that module's public ops (swapped for
    their dispatching forms while vmap runs): its body runs batched op by op."""
    return orig(*args, **kwargs)


RULES["linalg.norm"] = RULES["linalg.matrix_norm"] = _composed
for _n in ("softmax", "log_softmax", "F.softmax", "F.log_softmax", "F.softmin"):
    RULES[_n] = _softmax_like(_n)
for _n in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "sort", "argsort",
           "kthvalue", "mode"):
    RULES[_n] = along(1 if _n not in ("kthvalue",) else 2, "dim")
RULES["topk"] = along(2, "dim", default=-1)
for _n in ("sort", "argsort"):
    RULES[_n] = along(1, "dim", default=-1)
RULES["roll"] = along(2, "dims", multi=True)
for _n in ("det", "logdet", "slogdet", "inverse", "matrix_exp", "linalg.det", "linalg.inv",
           "linalg.slogdet", "linalg.cholesky", "linalg.qr", "linalg.svd", "svd",
           "linalg.svdvals", "linalg.eigh", "linalg.eigvalsh", "pinverse", "linalg.pinv",
           "linalg.matrix_exp", "tril", "triu", "matrix_power", "linalg.matrix_power",
           "linalg.solve"):
    RULES[_n] = _batched_matrices(2)
RULES["diagonal"] = _diagonal
RULES["trace"] = _trace
RULES["outer"] = RULES["ger"] = _outer
RULES["addmm"] = _addmm_like("addmm")
RULES["addmv"] = _addmm_like("addmv")
RULES["addr"] = _addmm_like("addr")
RULES["tile"] = _tile
RULES["broadcast_tensors"] = _broadcast_tensors
RULES["special.softmax"] = RULES["special.log_softmax"] = _softmax_like("special")
for _n, _k in (("F.max_pool1d", 1), ("F.max_pool2d", 2), ("F.max_pool3d", 3),
               ("F.avg_pool1d", 1), ("F.avg_pool2d", 2), ("F.avg_pool3d", 3),
               ("F.adaptive_avg_pool1d", 1), ("F.adaptive_avg_pool2d", 2),
               ("F.adaptive_max_pool1d", 1), ("F.adaptive_max_pool2d", 2),
               ("F.max_pool2d_with_indices", 2), ("F.lp_pool2d", 2), ("F.lp_pool1d", 1)):
    RULES[_n] = _leading(_k)
RULES["convolution"] = _convolution
RULES["kron"] = _kron
RULES["fill_diagonal_"] = _fill_diagonal_
RULES["F.layer_norm"] = _norm_affine("layer")
RULES["F.group_norm"] = _norm_affine("group")
RULES["F.batch_norm"] = _batch_norm
RULES["F.instance_norm"] = lambda orig, args, kwargs: _fold_n(orig, args, kwargs) \
    if _arg(args, kwargs, 1, "running_mean") is None else NotImplemented
RULES["F.embedding"] = _embedding
def _diff(orig, args, kwargs, _along=along(2, "dim", default=-1)):
    if type(args[0]) is _BT and _lrank(args[0]) == 0:
        return NotImplemented  # a 0-d sample: the composite's body raises PyTorch's error
    return _along(orig, args, kwargs)


RULES["diff"] = _diff
RULES["narrow_copy"] = _narrow
for _n in ("unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes"):
    RULES[_n] = _split(_n)
RULES["hsplit"] = _xsplit(lambda n: 0 if n == 1 else 1 if n > 1 else None)
RULES["vsplit"] = _xsplit(lambda n: 0 if n >= 2 else None)
RULES["dsplit"] = _xsplit(lambda n: 2 if n >= 3 else None)
RULES["dist"] = _dist
RULES["linalg.multi_dot"] = _multi_dot
RULES["sum_to_size"] = _sum_to_size
RULES["repeat_interleave"] = _repeat_interleave
RULES["quantile"] = RULES["nanquantile"] = _quantile
RULES["mode"] = along(1, "dim", default=-1)
RULES["frexp"] = elementwise("frexp")
RULES["diag_embed"] = _diag_embed
RULES["diag"] = _diag
RULES["F.pad"] = _pad
RULES["F.interpolate"] = _interpolate
for _n in ("index_add", "index_copy", "index_fill", "index_add_", "index_copy_",
           "index_fill_"):
    RULES[_n] = _index_op(_n)
for _n in ("scatter", "scatter_add", "scatter_", "scatter_add_"):
    RULES[_n] = _scatter(_n)
RULES["F.scaled_dot_product_attention"] = _sdpa
RULES["F.one_hot"] = lambda orig, args, kwargs: _unbatched_params(1)(orig, args, kwargs) \
    if _arg(args, kwargs, 1, "num_classes", -1) != -1 else NotImplemented
RULES["unsqueeze"] = along(1, "dim", extra=1)
def _unflatten(orig, args, kwargs, _along=along(1, "dim")):
    try:
        return _along(orig, args, kwargs)
    except RuntimeError:
        return NotImplemented  # the body's errors name the sample's dim, as PyTorch's


RULES["unflatten"] = _unflatten
RULES["flip"] = along(1, "dims", multi=True)
RULES["F.normalize"] = along(2, "dim")
RULES["F.glu"] = along(1, "dim")
# swapaxes, swapdims and moveaxis are composites, but their Tensor methods are transpose's and
# movedim's, which a batched tensor's method call would run unbatched without a rule
for _n in ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis"):
    RULES[_n] = _two_dims
for _n in ("view", "reshape"):
    RULES[_n] = _view_like
RULES["F.reshape"] = _view_like
RULES["view_as"] = RULES["reshape_as"] = _view_as
RULES["expand"] = RULES["broadcast_to"] = _expand
RULES["expand_as"] = _expand_as
RULES["permute"] = _permute
RULES["t"] = _t
RULES["flatten"] = _flatten
RULES["squeeze"] = _squeeze
RULES["__getitem__"] = _getitem
RULES["__setitem__"] = _setitem
RULES["matmul"] = RULES["__matmul__"] = RULES["F.matmul"] = _matmul
RULES["__rmatmul__"] = _rmatmul
RULES["mm"] = _checked_mm("mm", 2, 2)
RULES["bmm"] = _checked_mm("bmm", 3, 3)
RULES["mv"] = _checked_mm("mv", 2, 1)
RULES["dot"] = _checked_mm("dot", 1, 1)
RULES["F.linear"] = _linear
RULES["cat"] = RULES["concat"] = RULES["concatenate"] = _cat
RULES["stack"] = _stack
RULES["gather"] = _gather
RULES["index_select"] = _index_select
RULES["select"] = _select
RULES["narrow"] = _narrow
for _n in ("split", "chunk", "unbind", "tensor_split", "split_with_sizes"):
    RULES[_n] = _split(_n)
RULES["repeat"] = _repeat
RULES["F.mse_loss"] = _mse
RULES["F.l1_loss"] = _l1
RULES["F.nll_loss"] = _nll
RULES["F.cross_entropy"] = _cross_entropy
RULES["F.binary_cross_entropy_with_logits"] = _bce_logits
RULES["F.binary_cross_entropy"] = _bce
for _n in ("F.smooth_l1_loss", "F.huber_loss", "F.soft_margin_loss", "F.kl_div",
           "F.poisson_nll_loss", "F.margin_ranking_loss", "F.hinge_embedding_loss"):
    RULES[_n] = _elementwise_loss
RULES["einsum"] = _einsum
RULES["linalg.cross"] = _linalg_cross
for _n in ("F.dropout", "F.dropout1d", "F.dropout2d", "F.dropout3d", "F.alpha_dropout",
           "F.feature_alpha_dropout"):
    RULES[_n] = _unbatched_params(1)
for _n in ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"):
    RULES[_n] = _new_factory
RULES["is_tensor"] = _meta(lambda x: True)
RULES["is_floating_point"] = _meta(lambda x: x.dtype.is_floating_point)
RULES["is_complex"] = _meta(lambda x: x.dtype.is_complex)
RULES["numel"] = _meta(lambda x: x.numel())


def _spec_rule(name, spec):
    """The rule of an op declared with ops/_spec.py, from its stored batching rule."""
    b = spec.batch
    if b == ELEMENTWISE:
        return elementwise(name)
    along_param = getattr(b, "along", None)
    if along_param is not None:
        import inspect
        params = list(inspect.signature(spec.forward).parameters)
        pos = params.index(along_param)
        return along(pos, along_param)
    return None


for _name, _info in OPS.items():
    _spec = _info.get("spec")
    if _spec is not None and _spec.batch is not None and _name not in RULES:
        _r = _spec_rule(_name, _spec)
        if _r is not None:
            RULES[_name] = _r

__all__ = ["RULES", "random_op", "call"]
