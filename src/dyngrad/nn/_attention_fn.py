"""``scaled_dot_product_attention``, ``pixel_shuffle`` and ``pixel_unshuffle`` of
``nn.functional``, built from existing differentiable ops (matmul, softmax, dropout, reshape,
permute) with PyTorch's argument errors."""
from __future__ import annotations

import math

import numpy as np

from .. import _dtype as D
from .._tensor import Tensor
from .._argcheck import guard as _guard


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
    from . import functional as F
    from ..ops.linalg import matmul
    for n, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{n}' must be Tensor, "
                            f"not {D.type_name(t)}")
    qd, kd, vd = query._data.dtype, key._data.dtype, value._data.dtype
    if not (qd == kd == vd):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {D.c_name(qd)} key.dtype: {D.c_name(kd)} and "
                           f"value.dtype: {D.c_name(vd)} instead.")
    if qd.kind != "f":
        names = {"int32": "Int", "int64": "Long", "int16": "Short", "int8": "Char",
                 "uint8": "Byte", "bool": "Bool"}
        raise RuntimeError(f"expected scalar type Float but found {names.get(str(qd), str(qd))}")
    if attn_mask is not None:
        md = attn_mask._data.dtype
        if md != np.bool_ and md.kind != "f" and md != qd:
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                               f"dtype, but got attn_mask.dtype: {D.c_name(md)} and  query.dtype: "
                               f"{D.c_name(qd)} instead.")
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
    if dropout_p > 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    L, S = query.shape[-2], key.shape[-2]
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
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
        if hq != hk:
            key = key.repeat_interleave(hq // hk, -3)
        if hq != hv:
            value = value.repeat_interleave(hq // hv, -3)
    scores = matmul(query, key.transpose(-2, -1)) * sc
    if is_causal:
        causal = np.where(np.tril(np.ones((L, S), bool)), 0.0, -np.inf).astype(qd)
        scores = scores + _const(causal)
    if attn_mask is not None:
        if attn_mask._data.dtype == np.bool_:
            scores = scores + _const(np.where(attn_mask._data, 0.0, -np.inf).astype(qd))
        else:
            scores = scores + attn_mask
    full = np.all(np.isneginf(scores._data), -1, keepdims=True) if scores.shape[-1] else None
    if full is not None and full.any():
        ft = _const(full)
        weights = F.softmax(scores.masked_fill(ft, 0.0), dim=-1).masked_fill(ft, 0.0)
    else:
        weights = F.softmax(scores, dim=-1)
    if dropout_p > 0:
        weights = F.dropout(weights, dropout_p, True)
    return matmul(weights, value)


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


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    _check_input("pixel_shuffle", input)
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    n = len(lead)
    oc = c // (r * r)
    x = input.reshape(*lead, oc, r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    _check_input("pixel_unshuffle", input)
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


scaled_dot_product_attention = _guard(scaled_dot_product_attention)
pixel_shuffle = _guard(pixel_shuffle)
pixel_unshuffle = _guard(pixel_unshuffle)
