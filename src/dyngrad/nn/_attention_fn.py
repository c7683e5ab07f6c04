"""``scaled_dot_product_attention``, ``pixel_shuffle`` and ``pixel_unshuffle`` of
``nn.functional``, built from existing differentiable ops (matmul, softmax, dropout, reshape,
permute) with PyTorch's argument errors."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from .._argcheck import guard as _guard
from .._record import STATE, Node, Saved, edge_of, notify, record
from ..ops import _dual as X
from ..autograd.node import NotImplemented_
from .. import _warn


def _const(arr):
    return Tensor._make(np.ascontiguousarray(arr))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q K^T * scale + mask) V over the last two dims (PyTorch's math path).

    A bool ``attn_mask`` marks the positions that take part (True = attend); a float mask is
    added to the scores. Rows with every position masked give zeros, as PyTorch's.
    ``dropout_p`` drops attention weights with dyngrad's generator, whatever the mode.
    ``enable_gqa`` repeats each key/value head for its group of query heads.
    """
    for n, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{n}' must be Tensor, "
                            f"not {D.type_name(t)}")
    qd, kd, vd = query._data.dtype, key._data.dtype, value._data.dtype
    if not (qd == kd == vd):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {D.c_name(qd)} key.dtype: {D.c_name(kd)} and "
                           f"value.dtype: {D.c_name(vd)} instead.")
    if qd not in D.FLOATING:
        names = {"int32": "Int", "int64": "Long", "int16": "Short", "int8": "Char",
                 "uint8": "Byte", "bool": "Bool"}
        raise RuntimeError(f"expected scalar type Float but found {names.get(str(qd), str(qd))}")
    if attn_mask is not None:
        md = attn_mask._data.dtype
        if md != np.bool_ and md not in D.FLOATING and md != qd:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {D.c_name(md)} and  query.dtype: "
                               f"{D.c_name(qd)} instead.")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
    if dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa:
        for t in (query, key, value):
            if t.dim() < 3:
                nd = t.dim()
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[-{nd}, {nd - 1}], but got -3)")
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            # (PyTorch's message stops there)
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               "heads in ")
    out_shape = query._data.shape[:-1] + value._data.shape[-1:]
    if value._data.size == 0 or 0 in out_shape:
        # PyTorch's empty case: zeros, kept connected to q, k and v by a product with 0
        from . import functional as F
        z = _const(np.zeros(out_shape, qd))
        return z + F._mul_scalar(query.sum() + key.sum() + value.sum(), 0.0)
    if _use_flash(query, key, value, attn_mask, dropout_p, enable_gqa):
        return _flash_attention(query, key, value, attn_mask, is_causal, scale)
    return _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
                           enable_gqa)


def _default_scale(query):
    e = query.shape[-1]
    return 1.0 / math.sqrt(e) if e else math.inf


def _float_mask(mask, dtype):
    """PyTorch's convert_boolean_attn_mask: True (attend) -> 0, False -> -inf; a float mask
    as it is."""
    if mask is not None and mask._data.dtype == np.bool_:
        return _const(np.where(mask._data, 0.0, -np.inf).astype(dtype))
    return mask


# --- PyTorch's math path --------------------------------------------------------------------
class SafeSoftmaxBackward0(Node):
    """_safe_softmax: softmax with rows that are all -inf giving zeros; the backward is
    softmax's (from the saved result)."""
    __slots__ = ()

    def _bw(self, g, graph):
        sy, dim = self._saved[:2]
        y = sy.get(self, graph)
        gy = g * y
        return gy - y * X.sum_dims(gy, dim),


def _safe_softmax(x, dim):
    d = x._data
    raw, dim = dim, dim % d.ndim  # the node shows the caller's dim
    with np.errstate(invalid="ignore", over="ignore"):
        m = d.max(axis=dim, keepdims=True) if d.size else d
        e = np.exp(d - m) if d.size else d
        y = e / e.sum(axis=dim, keepdims=True) if d.size else d.copy()
    if d.size:
        full = np.all(d == -np.inf, axis=dim, keepdims=True)
        if full.any():
            y = np.where(full, 0, y)
    y = np.ascontiguousarray(y, dtype=d.dtype)
    if STATE.enabled and x._requires_grad:
        res = record(y, None)
        res._grad_fn = SafeSoftmaxBackward0((edge_of(x),), (Saved(res, True), dim, raw))
        return notify(res)
    return Tensor._make(y)


def _math_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
    """PyTorch's _scaled_dot_product_attention_math: q and k^T each scaled by sqrt(scale)
    (numbers: MulBackward1), their product, the mask added in place, _safe_softmax, dropout,
    the product with v (computed in float32 for float16 inputs)."""
    from . import functional as F
    from ..ops.linalg import matmul
    origin = query._data.dtype
    if origin == np.float16:
        query, key, value = (t.to(D.float32) for t in (query, key, value))
    dt = query._data.dtype
    mask = _float_mask(attn_mask, dt)
    neg = scale is not None and scale < 0
    sc = abs(scale) if neg else (scale if scale is not None else _default_scale(query))
    f = math.sqrt(sc)
    q = F._mul_scalar(query, (0.0 - f) if neg else f)
    if is_causal:
        L, S = q.shape[-2], key.shape[-2]
        mask = _const(np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf).astype(dt))
    if enable_gqa:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq != hk:
            key = key.repeat_interleave(hq // hk, -3)
        if hq != hv:
            value = value.repeat_interleave(hq // hv, -3)
    attn = matmul(q, F._mul_scalar(key.transpose(-2, -1), f))
    if mask is not None:
        attn.add_(mask)
    attn = _safe_softmax(attn, -1)
    if dropout_p > 0.0:
        attn = F.dropout(attn, dropout_p, True)
    out = matmul(attn, value)
    return out.to(D.FROM_NP[origin]) if origin != dt else out


# --- PyTorch's CPU flash attention ----------------------------------------------------------
def _use_flash(q, k, v, mask, dropout_p, enable_gqa):
    """Whether PyTorch's CPU kernel choice is its flash attention (sdp_utils_cpp): 4-d
    float inputs of one batch size, equal head sizes, heads equal (or grouped under
    enable_gqa), no dropout, non-empty sequences, unit last strides, and a mask (not requiring
    grad) of 2 or 4 dims broadcasting over (L, S)."""
    qd, kd, vd = q._data, k._data, v._data
    if qd.ndim != 4 or kd.ndim != 4 or vd.ndim != 4 or dropout_p != 0.0:
        return False
    if qd.dtype not in (np.float32, np.float64, np.float16):
        return False
    if not (qd.shape[0] == kd.shape[0] == vd.shape[0]):
        return False
    hq, hk, hv = qd.shape[1], kd.shape[1], vd.shape[1]
    if enable_gqa:
        if hk != hv or hk == 0 or hq % hk:
            return False
    elif not hq == hk == hv:
        return False
    if not qd.shape[3] == kd.shape[3] == vd.shape[3] or qd.shape[3] == 0:
        return False
    if qd.shape[2] == 0 or kd.shape[2] == 0:
        return False
    if any(t.strides[3] != t.itemsize for t in (qd, kd, vd)):
        return False
    if mask is not None:
        md = mask._data
        if mask._requires_grad and STATE.enabled:
            return False
        if md.ndim < 2 or md.shape[-2] not in (qd.shape[2], 1) or \
                md.shape[-1] not in (kd.shape[2], 1):
            return False
        if md.ndim == 4:
            return md.shape[0] in (1, qd.shape[0]) and md.shape[1] in (1, hq)
        return md.ndim == 2
    return True


def _flash_np(q, k, v, mask, is_causal, scale):
    """Attention on arrays, with the log-sum-exp of each row (0 for a fully masked row, whose
    output is zeros)."""
    odt = q.dtype
    if odt == np.float16:  # accumulated in float32, as PyTorch's kernel
        q, k, v = (a.astype(np.float32) for a in (q, k, v))
    rep = q.shape[1] // k.shape[1]
    if rep > 1:
        k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * q.dtype.type(scale)
    if mask is not None:
        s = s + mask
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        m = s.max(axis=-1, keepdims=True)
        full = m == -np.inf
        m = np.where(full, 0, m)
        e = np.exp(s - m)
        tot = e.sum(axis=-1, keepdims=True)
        lse = np.where(full, 0, np.log(tot) + m)
        p = np.where(full, 0, e / np.where(full, 1, tot))
    p = p.astype(q.dtype, copy=False)
    out = np.ascontiguousarray(np.matmul(p, v), dtype=odt)
    return out, lse[..., 0].astype(q.dtype), p, k, v


class _FlashBackwardNotImplemented(NotImplemented_):
    __slots__ = ()
    _nout = 3


def _flash_no_forward_ad(node, tangents):
    raise NotImplementedError(
        "Trying to use forward AD with _scaled_dot_product_flash_attention_for_cpu that does "
        "not support it because it has not been implemented yet.\nPlease file an issue to "
        "PyTorch at https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml "
        "so that we can prioritize its implementation or submit a PR adding the implementation "
        "to derivatives.yaml")


class ScaledDotProductFlashAttentionForCpuBackward0(Node):
    """PyTorch's CPU flash attention: one node for q, k and v (saving them, the output and
    the log-sum-exp); its backward has no derivative of its own (NotImplemented under
    create_graph) and it has no forward-mode rule."""
    __slots__ = ()
    _fw_rule = staticmethod(_flash_no_forward_ad)

    def _bw(self, g, graph):
        sq, sk, sv, so, lse, sm, is_causal, scale = self._saved
        q, k, v = (t.get(self, False) for t in (sq, sk, sv))
        out = so.get(self, False)
        mask = sm.get(self, False) if isinstance(sm, Saved) else sm
        gd = X.data(g)
        odt = q.dtype
        rep = q.shape[1] // k.shape[1]
        _, _, p, kx, vx = _flash_np(q, k, v, mask, is_causal, scale)
        if odt == np.float16:
            q, gd, out = (a.astype(np.float32) for a in (q, gd, out))
        dv = np.matmul(np.swapaxes(p, -1, -2), gd)
        dp = np.matmul(gd, np.swapaxes(vx, -1, -2))
        ds = p * (dp - (gd * out).sum(axis=-1, keepdims=True))
        sc = q.dtype.type(scale)
        dq = np.matmul(ds, kx) * sc
        dk = np.matmul(np.swapaxes(ds, -1, -2), q) * sc
        if rep > 1:
            B, H, S = k.shape[0], k.shape[1], k.shape[2]
            dk = dk.reshape(B, H, rep, S, -1).sum(axis=2)
            dv = dv.reshape(B, H, rep, S, -1).sum(axis=2)
        grads = [np.ascontiguousarray(a, dtype=odt) for a in (dq, dk, dv)]
        if not graph:
            return tuple(grads)
        # PyTorch has no derivative for this backward: its results come from one
        # NotImplemented node (over the incoming gradient, q, k, v and the output)
        ins = [g, sq.get(self, True), sk.get(self, True), sv.get(self, True), so.get(self, True)]
        edges = tuple(edge_of(t) for t in ins if t._requires_grad)
        if not (STATE.enabled and edges):
            return tuple(Tensor._make(a) for a in grads)
        node = _FlashBackwardNotImplemented(
            edges, ("_scaled_dot_product_flash_attention_for_cpu_backward",))
        res = []
        for i, a in enumerate(grads):
            t = record(a, node)
            if i:
                t._output_nr = i
            res.append(t)
        node._odt = None
        return tuple(res)


def _dense_order(shape, strides):
    """The dims from outermost to innermost in memory, as PyTorch's infer_dense_strides
    orders them (an insertion sort by stride, then size; stride-0 dims keep their place)."""
    perm = list(range(len(shape) - 1, -1, -1))  # innermost first
    for i in range(1, len(perm)):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            s0, s1 = strides[perm[d0]], strides[perm[d1]]
            if s0 == 0 or s1 == 0:
                continue
            if s0 < s1:
                break
            if s0 > s1 or shape[perm[d0]] > shape[perm[d1]]:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
    return perm[::-1]


def _layout_like(out, ref):
    """``out`` (C-contiguous, of ``ref``'s shape) in the memory order of ``ref``: PyTorch's CPU
    flash attention allocates its output like the query (so a permuted query gives an output
    whose matching permute is contiguous)."""
    if ref.flags.c_contiguous:
        return out
    order = _dense_order(ref.shape, ref.strides)
    if order == sorted(order):
        return out
    return np.ascontiguousarray(out.transpose(order)).transpose(np.argsort(order))


def _flash_attention(query, key, value, attn_mask, is_causal, scale):
    """PyTorch's _scaled_dot_product_flash_attention_for_cpu: one node of q, k and v."""
    dt = query._data.dtype
    sc = _default_scale(query) if scale is None else scale
    mask = _float_mask(attn_mask, dt)
    md = None if mask is None else mask._data
    out, lse, _, _, _ = _flash_np(query._data, key._data, value._data, md, is_causal, sc)
    out = _layout_like(out, query._data)
    if STATE.enabled and (query._requires_grad or key._requires_grad or value._requires_grad):
        res = record(out, None)
        sm = Saved(mask) if mask is attn_mask and mask is not None else md
        res._grad_fn = ScaledDotProductFlashAttentionForCpuBackward0(
            (edge_of(query), edge_of(key), edge_of(value)),
            (Saved(query), Saved(key), Saved(value), Saved(res, True), lse, sm, is_causal, sc))
        return notify(res)
    return Tensor._make(out)


def _factor(fn, arg, v):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{arg}' (position 2) must be int, not "
                        f"{D.type_name(v)}")
    if v <= 0:
        raise RuntimeError(f"{fn} expects a positive {arg}, but got {v}")
    return int(v)


def _check_input(fn, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(input)}")
    if input.dim() < 3:
        raise RuntimeError(f"{fn} expects input to have at least 3 dimensions, but got input "
                           f"with {input.dim()} dimension(s)")


def _shuffle_np(x, r):
    *lead, c, h, w = x.shape
    n = len(lead)
    oc = c // (r * r)
    y = x.reshape(*lead, oc, r, r, h, w)
    y = y.transpose(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return np.ascontiguousarray(y).reshape(*lead, oc, h * r, w * r)


def _unshuffle_np(x, r):
    *lead, c, h, w = x.shape
    n = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = y.transpose(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return np.ascontiguousarray(y).reshape(*lead, c * r * r, h // r, w // r)


class PixelShuffleBackward0(Node):
    """pixel_shuffle: its backward is pixel_unshuffle of the gradient (and vice versa)."""
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        r = self._saved[0]
        return _unshuffle_any(g, r),


class PixelUnshuffleBackward0(Node):
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        r = self._saved[0]
        return _shuffle_any(g, r),


# NumPy on arrays, the recorded op on Tensors
_shuffle_any = X.twin(_shuffle_np, lambda g, r: pixel_shuffle(g, r))
_unshuffle_any = X.twin(_unshuffle_np, lambda g, r: pixel_unshuffle(g, r))


def _record_shuffle(input, y, cls, r):
    if STATE.enabled and input._requires_grad:
        return record(y, cls((edge_of(input),), (r,)))
    return Tensor._make(y)


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r); PixelShuffleBackward0."""
    _check_input("pixel_shuffle", input)
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    c = input._data.shape[-3]
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    return _record_shuffle(input, _shuffle_np(input._data, r), PixelShuffleBackward0, r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W); PixelUnshuffleBackward0."""
    _check_input("pixel_unshuffle", input)
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    h, w = input._data.shape[-2:]
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    return _record_shuffle(input, _unshuffle_np(input._data, r), PixelUnshuffleBackward0, r)


scaled_dot_product_attention = _guard(scaled_dot_product_attention)
pixel_shuffle = _guard(pixel_shuffle)
pixel_unshuffle = _guard(pixel_unshuffle)


# --- PyTorch's multi_head_attention_forward -------------------------------------------------
def _none_or_dtype(input):
    if input is None:
        return None
    if isinstance(input, Tensor):
        return input.dtype
    raise RuntimeError("input to _none_or_dtype() must be None or torch.Tensor")


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked) as a float mask of ``target_type``: zeros with -inf filled
    in place where True; a float mask as it is (a warning when its dtype differs from
    ``other_type``)."""
    if mask is not None:
        dt = mask._data.dtype
        is_float = dt in D.FLOATING
        if dt != np.bool_ and not is_float:
            raise AssertionError(f"only bool and floating types of {mask_name} are supported")
        if check_other and other_type is not None and mask.dtype != other_type:
            _warn.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. "
                       f"Use same type for both instead.")
        if not is_float:
            from .._factories import zeros_like
            mask = zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (3-d query) or not (2-d), with PyTorch's shape errors."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                                 f" but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 f"respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 f"instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     f"instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if attn_mask.shape != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _in_projection_packed(q, k, v, w, b=None):
    """q, k, v projected by the packed (3E, E) weight: one linear for self-attention (its
    result split as (3, E), made contiguous and indexed), a query and a key/value linear when
    k is v (split by sizes), three otherwise (chunks)."""
    from . import functional as F
    E = q.shape[-1]
    if k is v:
        if q is k:
            proj = F.linear(q, w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2) \
                .contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = F.linear(q, w_q, b_q)
        kv_proj = F.linear(k, w_kv, b_kv)
        kv_proj = kv_proj.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2) \
            .contiguous()
        return q_proj, kv_proj[0], kv_proj[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b is None else b.chunk(3)
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def _in_projection(q, k, v, w_q, w_k, w_v, b_q=None, b_k=None, b_v=None):
    """Three linear projections with separate weights (query, key and value dims may differ)."""
    from . import functional as F
    Eq, Ek, Ev = q.shape[-1], k.shape[-1], v.shape[-1]
    for name, w, shape in (("query", w_q, (Eq, Eq)), ("key", w_k, (Eq, Ek)),
                           ("value", w_v, (Eq, Ev))):
        if w.shape != shape:
            raise AssertionError(f"expecting {name} weights shape of {shape}, but got {w.shape}")
    for name, b in (("query", b_q), ("key", b_k), ("value", b_v)):
        if b is not None and b.shape != (Eq,):
            raise AssertionError(f"expecting {name} bias shape of {(Eq,)}, but got {b.shape}")
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def _heads_first(x, static, name, batch_heads, head_dim):
    """Key or value as (bsz * num_heads, len, head_dim), or the given static one after
    PyTorch's size checks."""
    if static is None:
        return x.view(x.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.shape[0] != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got "
                             f"{static.shape[0]}")
    if static.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got "
                             f"{static.shape[2]}")
    return static


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """Multi-head attention as PyTorch's ``F.multi_head_attention_forward`` composes it:
    in-projection, heads batched first, then with ``need_weights`` scores by bmm (baddbmm
    with a mask), softmax, dropout, bmm (weights returned, averaged over heads by default);
    without, scaled_dot_product_attention on (N, heads, L, E/heads) views; then out_proj."""
    from . import functional as F
    from .._factories import zeros
    from ..ops.linalg import baddbmm, bmm
    from ..ops.shape import cat
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _none_or_dtype(attn_mask), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # scaled_dot_product_attention applies the causal mask itself
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False  # the merged mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")

    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        for n, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {n}_proj_weight is "
                                     f"None")
        b_q, b_k, b_v = (None, None, None) if in_proj_bias is None else in_proj_bias.chunk(3)
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, b_q, b_k, b_v)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if attn_mask.shape != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if attn_mask.shape != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")

    # heads batched first: (bsz * num_heads, len, head_dim)
    q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads_first(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _heads_first(v, static_v, "static_v", bsz * num_heads, head_dim)

    if add_zero_attn:
        shape = (bsz * num_heads, 1, head_dim)
        k = cat([k, zeros(shape, dtype=k.dtype)], dim=1)
        v = cat([v, zeros(shape, dtype=v.dtype)], dim=1)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len) \
            .expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        E = q.shape[2]
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise AssertionError("FIXME: is_causal not implemented for need_weights")
        if attn_mask is not None:
            weights = baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            weights = bmm(q_scaled, k.transpose(-2, -1))
        weights = F.softmax(weights, dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = bmm(weights, v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias)
        out = out.view(tgt_len, bsz, out.shape[1])
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias)
    out = out.view(tgt_len, bsz, out.shape[1])
    if not is_batched:
        out = out.squeeze(1)
    return out, None
