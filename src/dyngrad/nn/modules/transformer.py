"""``MultiheadAttention``, ``Transformer``, ``TransformerEncoder``/``TransformerEncoderLayer`` and
``TransformerDecoder``/``TransformerDecoderLayer`` with PyTorch's parameter names,
initialisation, masks and (post- or pre-norm) residual structure."""
from __future__ import annotations

import copy
import math
import warnings

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
        p = self.dropout if self.training else 0.0
        if not need_weights:
            # PyTorch's path without weights: scaled_dot_product_attention (rows with every
            # key masked give zeros there, not NaN)
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=amask, dropout_p=p)
        else:
            scores = (q * math.sqrt(1.0 / hd)).bmm(k.transpose(1, 2))
            if amask is not None:
                scores = scores + amask
            weights = F.softmax(scores, dim=-1)
            if p > 0:
                weights = F.dropout(weights, p, True)
            out = weights.bmm(v)
        out = out.transpose(0, 1).reshape(tgt_len * bsz, e)
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


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: -inf above the diagonal, 0 on and below it."""
    from ..._factories import full
    from ...ops.shape import triu
    return triu(full((sz, sz), float("-inf"), dtype=dtype), diagonal=1)


def _get_seq_len(src, batch_first):
    if src.dim() == 2:
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """``is_causal`` when given; else whether ``mask`` is the square subsequent mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.shape[-2]
        cmp = np.triu(np.full((sz, sz), -np.inf), 1)
        if tuple(mask.shape) == (sz, sz):
            m = mask._data
            if m.dtype == np.bool_:
                m = np.where(m, -np.inf, 0.0)
            make_causal = bool((m == cmp).all())
    return make_causal


def _left_aligned(valid):
    """Whether every row of the bool array ``valid`` is True...True False...False."""
    v = valid.astype(np.int8)
    return bool((np.diff(v, axis=-1) <= 0).all())


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
            activation = _get_activation_fn(activation)
        from .activation import ReLU, GELU
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
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
    """``num_layers`` copies of an encoder layer applied in turn, then an optional norm.

    As PyTorch's, in evaluation mode with gradients off (its nested-tensor fast path) the
    outputs at the positions ``src_key_padding_mask`` pads are zeros before the final norm.
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        enc_layer = "encoder_layer"
        why = ""
        if not isinstance(encoder_layer, TransformerEncoderLayer):
            why = f"{enc_layer} was not TransformerEncoderLayer"
        elif encoder_layer.norm_first:
            why = f"{enc_layer}.norm_first was True"
        elif not encoder_layer.self_attn.batch_first:
            why = (f"{enc_layer}.self_attn.batch_first was not True"
                   + "(use batch_first for better inference performance)")
        elif not encoder_layer.self_attn._qkv_same_embed_dim:
            why = f"{enc_layer}.self_attn._qkv_same_embed_dim was not True"
        elif encoder_layer.self_attn.in_proj_bias is None:
            why = f"{enc_layer}.self_attn was passed bias=False"
        elif not encoder_layer.activation_relu_or_gelu:
            why = f"{enc_layer}.activation_relu_or_gelu was not True"
        elif encoder_layer.norm1.eps != encoder_layer.norm2.eps:
            why = f"{enc_layer}.norm1.eps was not equal to {enc_layer}.norm2.eps"
        elif encoder_layer.self_attn.num_heads % 2 == 1:
            why = f"{enc_layer}.self_attn.num_heads is odd"
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why}", stacklevel=2)
            self.use_nested_tensor = False

    def _nested_path(self, src, mask, kpm):
        """Whether PyTorch would run this call on nested tensors (padded outputs zeroed)."""
        from ...autograd.grad_mode import is_grad_enabled
        first = self.layers[0]
        if not getattr(self, "use_nested_tensor", False) or first.training or src.dim() != 3 \
                or kpm is None or mask is not None:
            return False
        if kpm._data.dtype != np.bool_:
            return False
        if getattr(self, "mask_check", True) and not _left_aligned(~kpm._data):
            return False
        sa = first.self_attn
        args = (src, sa.in_proj_weight, sa.in_proj_bias, sa.out_proj.weight, sa.out_proj.bias,
                first.norm1.weight, first.norm1.bias, first.norm2.weight, first.norm2.bias,
                first.linear1.weight, first.linear1.bias, first.linear2.weight,
                first.linear2.bias)
        return not (is_grad_enabled() and any(a is not None and a.requires_grad for a in args))

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        nested = self._nested_path(src, mask, src_key_padding_mask)
        seq_len = _get_seq_len(src, self.layers[0].self_attn.batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        for mod in self.layers:
            out = mod(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=is_causal)
        if nested:
            keep = (~src_key_padding_mask._data).astype(out._data.dtype)[..., None]
            out = out * Tensor._make(keep)
        if self.norm is not None:
            out = self.norm(out)
        return out


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's ``memory`` and a feed-forward block, each
    with a residual connection and layer norm (after the block, or before with ``norm_first``)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True, device=None,
                 dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            self.activation = _get_activation_fn(activation)
        else:
            self.activation = activation

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                    memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal=False):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """``num_layers`` copies of a decoder layer applied in turn, then an optional norm."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        out = tgt
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """Encoder-decoder transformer ("Attention Is All You Need") with PyTorch's structure,
    parameter names and initialisation (xavier-uniform of every matrix)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias,
                                            dtype=dtype)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        is_batched = src.dim() == 3
        if not self.batch_first and src.shape[1] != tgt.shape[1] and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        elif self.batch_first and src.shape[0] != tgt.shape[0] and is_batched:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """A (sz, sz) causal mask: -inf above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
