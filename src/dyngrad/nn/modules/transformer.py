"""``MultiheadAttention``, ``TransformerEncoderLayer`` and ``TransformerEncoder`` with PyTorch's
parameter names, initialisation, masks and (post- or pre-norm) residual structure."""
from __future__ import annotations

import copy
import math

import numpy as np

from ..._factories import empty
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ...ops.shape import cat
from .dropout import Dropout
from .normalization import LayerNorm
from .container import ModuleList
from .linear import Linear, NonDynamicallyQuantizableLinear
from .module import Module


def _float_mask(mask, dtype, name):
    """A boolean mask (True = not allowed) as -inf/0; float masks are used as given."""
    if mask is None:
        return None
    if mask._data.dtype == np.bool_:
        return Tensor._make(np.where(mask._data, -np.inf, 0.0).astype(dtype))
    if mask._data.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads: softmax(Q K^T / sqrt(d_head) + mask) V, projected.

    >>> import dyngrad as torch
    >>> mha = torch.nn.MultiheadAttention(8, 2)
    >>> [n for n, _ in mha.named_parameters()]
    ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads} instead")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty((embed_dim, embed_dim), dtype=dtype))
            self.k_proj_weight = Parameter(empty((embed_dim, self.kdim), dtype=dtype))
            self.v_proj_weight = Parameter(empty((embed_dim, self.vdim), dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty((3 * embed_dim, embed_dim), dtype=dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(empty((1, 1, embed_dim), dtype=dtype))
            self.bias_v = Parameter(empty((1, 1, embed_dim), dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def _project(self, query, key, value):
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[0:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            wq, wk, wv = w[0:e], w[e:2 * e], w[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """-> (attn_output, attn_weights or None); shapes follow ``batch_first``."""
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                               "Transformer module method `generate_square_subsequent_mask` to "
                               "create this mask.")
        batched = query.dim() == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        tgt_len, bsz, e = query.shape
        if e != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got "
                                 f"{e}")
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        heads, hd = self.num_heads, self.head_dim
        dt = query._data.dtype
        amask = _float_mask(attn_mask, dt, "attn_mask")
        kpm = _float_mask(key_padding_mask, dt, "key_padding_mask")
        if amask is not None:
            if amask.dim() == 2:
                if tuple(amask.shape) != (tgt_len, key.shape[0]):
                    raise RuntimeError(f"The shape of the 2D attn_mask is {amask.shape}, but "
                                       f"should be {(tgt_len, key.shape[0])}.")
                amask = amask.unsqueeze(0)
            elif amask.dim() == 3:
                if tuple(amask.shape) != (bsz * heads, tgt_len, key.shape[0]):
                    raise RuntimeError(f"The shape of the 3D attn_mask is {amask.shape}, but "
                                       f"should be {(bsz * heads, tgt_len, key.shape[0])}.")
            else:
                raise RuntimeError(f"attn_mask's dimension {amask.dim()} is not supported")
        q, k, v = self._project(query, key, value)
        if self.bias_k is not None:
            k = cat([k, self.bias_k.expand(1, bsz, e)], 0)
            v = cat([v, self.bias_v.expand(1, bsz, e)], 0)
            amask = _pad_last(amask)
            kpm = _pad_last(kpm)
        q = q.reshape(tgt_len, bsz * heads, hd).transpose(0, 1)
        k = k.reshape(k.shape[0], bsz * heads, hd).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * heads, hd).transpose(0, 1)
        if self.add_zero_attn:
            z = Tensor._make(np.zeros((bsz * heads, 1, hd), dt))
            k = cat([k, z], 1)
            v = cat([v, z], 1)
            amask = _pad_last(amask)
            kpm = _pad_last(kpm)
        src_len = k.shape[1]
        if kpm is not None:
            if tuple(kpm.shape) != (bsz, src_len):
                raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
                                     f"got {tuple(kpm.shape)}")
            kpm = kpm.reshape(bsz, 1, 1, src_len).expand(bsz, heads, 1, src_len) \
                .reshape(bsz * heads, 1, src_len)
            amask = kpm if amask is None else amask + kpm
        scores = (q * math.sqrt(1.0 / hd)).bmm(k.transpose(1, 2))
        if amask is not None:
            scores = scores + amask
        weights = F.softmax(scores, dim=-1)
        p = self.dropout if self.training else 0.0
        if p > 0:
            weights = F.dropout(weights, p, True)
        out = weights.bmm(v).transpose(0, 1).reshape(tgt_len * bsz, e)
        out = F.linear(out, self.out_proj.weight, self.out_proj.bias).reshape(tgt_len, bsz, e)
        if not batched:
            out = out.squeeze(1)
        elif self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        weights = weights.reshape(bsz, heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights


def _pad_last(mask):
    """Append a zero (allowed) column to a float mask's last dimension."""
    if mask is None:
        return None
    z = Tensor._make(np.zeros(tuple(mask.shape[:-1]) + (1,), mask._data.dtype))
    return cat([mask, z], -1)


def _relu(x):
    return F.relu(x)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and layer
    norm (after the block, or before it with ``norm_first``)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            if activation == "relu":
                activation = _relu
            elif activation == "gelu":
                activation = F.gelu
            else:
                raise RuntimeError(f"activation should be relu/gelu, not {activation}")
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal and attn_mask is not None)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """``num_layers`` copies of an encoder layer applied in turn, then an optional norm."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        if self.norm is not None:
            out = self.norm(out)
        return out
