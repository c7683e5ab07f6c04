"""The graph nn.functional ops and nn modules record, against PyTorch, beyond the op table.

Each case builds the same inputs (and, for a module, the same weights: PyTorch's initialised
state copied into dyngrad's module) in both libraries, runs the same callable, and walks the
graph under every differentiable output exactly as tests/test_graph_structure.py does: node
names, ``next_functions`` with their input numbers and None edges, down to the leaves'
``AccumulateGrad`` (named by which input or parameter they accumulate into).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
import tests.test_graph_structure as gs  # noqa: E402
from tests.test_graph_structure import _first_difference, walk  # noqa: E402


# --- inputs --------------------------------------------------------------------------------
class T:
    """A float64 input requiring grad (``grad=False``: a constant); ``fn`` maps the random
    array first (a domain), ``arr`` gives it outright."""

    def __init__(self, *shape, grad=True, fn=None, arr=None):
        self.shape, self.grad, self.fn, self.arr = shape, grad, fn, arr

    def make(self, lib, rs):
        a = np.asarray(self.arr, dtype=np.float64) if self.arr is not None else \
            rs.randn(*self.shape)
        if self.fn is not None:
            a = self.fn(a)
        return lib.tensor(a, dtype=lib.float64, requires_grad=self.grad)


class I:
    """An int64 (or bool) constant input: random in [0, high) or the given values."""

    def __init__(self, *shape, high=2, arr=None, dtype="int64"):
        self.shape, self.high, self.arr, self.dtype = shape, high, arr, dtype

    def make(self, lib, rs):
        a = np.asarray(self.arr) if self.arr is not None else rs.randint(0, self.high, self.shape)
        return lib.tensor(a.astype(self.dtype))


def _sig(a):
    return 1 / (1 + np.exp(-a))


def _pos(a):
    return np.abs(a) + 0.1


# --- functional cases: name -> (fn(L, F, *inputs), [inputs]) ----------------------------------
F_CASES: dict = {}


def case(name, fn, *inputs):
    assert name not in F_CASES, name
    F_CASES[name] = (fn, list(inputs))


# linear
case("linear_bias_2d", lambda L, F, x, w, b: F.linear(x, w, b), T(3, 4), T(5, 4), T(5))
case("linear_bias_3d", lambda L, F, x, w, b: F.linear(x, w, b), T(2, 3, 4), T(5, 4), T(5))
case("linear_bias_1d", lambda L, F, x, w, b: F.linear(x, w, b), T(4), T(5, 4), T(5))
case("linear_nobias_2d", lambda L, F, x, w: F.linear(x, w), T(3, 4), T(5, 4))
case("linear_nobias_3d", lambda L, F, x, w: F.linear(x, w), T(2, 3, 4), T(5, 4))
case("linear_nobias_1d", lambda L, F, x, w: F.linear(x, w), T(4), T(5, 4))
case("linear_const_w", lambda L, F, x, w, b: F.linear(x, w, b), T(3, 4), T(5, 4, grad=False),
     T(5))
case("linear_const_x", lambda L, F, x, w, b: F.linear(x, w, b), T(2, 3, 4, grad=False), T(5, 4),
     T(5, grad=False))
case("linear_noncontig", lambda L, F, x, w, b: F.linear(x.transpose(0, 1), w, b), T(3, 2, 4),
     T(5, 4), T(5))
case("bilinear_nobias", lambda L, F, a, b, w: F.bilinear(a, b, w), T(3, 2), T(3, 4), T(5, 2, 4))

# convolution
case("conv1d", lambda L, F, x, w, b: F.conv1d(x, w, b, stride=2, padding=1), T(2, 4, 9),
     T(6, 4, 3), T(6))
case("conv1d_nobias_groups", lambda L, F, x, w: F.conv1d(x, w, groups=2, dilation=2), T(2, 4, 9),
     T(6, 2, 3))
case("conv1d_unbatched", lambda L, F, x, w, b: F.conv1d(x, w, b), T(4, 9), T(6, 4, 3), T(6))
case("conv1d_same_even", lambda L, F, x, w: F.conv1d(x, w, padding="same"), T(2, 4, 9),
     T(3, 4, 4))
case("conv2d", lambda L, F, x, w, b: F.conv2d(x, w, b, padding=1), T(2, 3, 5, 6), T(4, 3, 3, 3),
     T(4))
case("conv2d_nobias", lambda L, F, x, w: F.conv2d(x, w, stride=(2, 1)), T(2, 3, 5, 6),
     T(4, 3, 3, 2))
case("conv2d_unbatched", lambda L, F, x, w, b: F.conv2d(x, w, b), T(3, 5, 6), T(4, 3, 3, 3), T(4))
case("conv2d_same_even", lambda L, F, x, w, b: F.conv2d(x, w, b, padding="same"), T(1, 3, 5, 6),
     T(4, 3, 2, 4), T(4))
case("conv2d_const_input", lambda L, F, x, w, b: F.conv2d(x, w, b), T(2, 3, 5, 6, grad=False),
     T(4, 3, 3, 3), T(4))
case("conv2d_const_weight", lambda L, F, x, w, b: F.conv2d(x, w, b), T(2, 3, 5, 6),
     T(4, 3, 3, 3, grad=False), T(4, grad=False))
case("conv3d", lambda L, F, x, w, b: F.conv3d(x, w, b, padding=1), T(2, 2, 4, 4, 5),
     T(3, 2, 3, 3, 2), T(3))
case("conv3d_nobias", lambda L, F, x, w: F.conv3d(x, w, stride=2), T(1, 2, 5, 4, 5),
     T(3, 2, 2, 2, 2))
case("conv3d_unbatched", lambda L, F, x, w: F.conv3d(x, w), T(2, 4, 4, 5), T(3, 2, 2, 2, 2))
case("conv_transpose1d", lambda L, F, x, w, b: F.conv_transpose1d(x, w, b, stride=2), T(2, 4, 5),
     T(4, 3, 3), T(3))
case("conv_transpose1d_nobias", lambda L, F, x, w: F.conv_transpose1d(x, w, groups=2),
     T(2, 4, 5), T(4, 3, 3))
case("conv_transpose1d_unbatched", lambda L, F, x, w: F.conv_transpose1d(x, w), T(4, 5),
     T(4, 3, 3))
case("conv_transpose2d", lambda L, F, x, w, b: F.conv_transpose2d(
    x, w, b, stride=2, padding=1, output_padding=1), T(2, 4, 3, 4), T(4, 3, 3, 2), T(3))
case("conv_transpose2d_nobias", lambda L, F, x, w: F.conv_transpose2d(x, w, dilation=2),
     T(2, 4, 3, 4), T(4, 3, 3, 2))
case("conv_transpose2d_unbatched", lambda L, F, x, w, b: F.conv_transpose2d(x, w, b),
     T(4, 3, 4), T(4, 3, 3, 2), T(3))
case("conv_transpose3d", lambda L, F, x, w, b: F.conv_transpose3d(x, w, b, stride=2),
     T(1, 2, 3, 2, 3), T(2, 3, 2, 2, 2), T(3))
case("conv_transpose3d_nobias", lambda L, F, x, w: F.conv_transpose3d(x, w),
     T(1, 2, 3, 2, 3), T(2, 3, 2, 2, 2))

# pooling
case("max_pool1d", lambda L, F, x: F.max_pool1d(x, 2), T(2, 3, 8))
case("max_pool1d_indices", lambda L, F, x: F.max_pool1d(x, 3, 2, 1, return_indices=True),
     T(2, 3, 8))
case("max_pool1d_unbatched", lambda L, F, x: F.max_pool1d(x, 2), T(3, 8))
case("max_pool2d", lambda L, F, x: F.max_pool2d(x, 2), T(2, 3, 6, 6))
case("max_pool2d_indices", lambda L, F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True),
     T(2, 3, 6, 6))
case("max_pool2d_ceil_dil", lambda L, F, x: F.max_pool2d(x, 2, 2, 1, dilation=2, ceil_mode=True),
     T(2, 3, 7, 7))
case("max_pool2d_unbatched", lambda L, F, x: F.max_pool2d(x, 2), T(3, 6, 6))
case("max_pool3d", lambda L, F, x: F.max_pool3d(x, 2), T(2, 2, 4, 4, 4))
case("avg_pool1d", lambda L, F, x: F.avg_pool1d(x, 3, 2, 1), T(2, 3, 8))
case("avg_pool1d_unbatched", lambda L, F, x: F.avg_pool1d(x, 2), T(3, 8))
case("avg_pool2d", lambda L, F, x: F.avg_pool2d(x, 2), T(2, 3, 6, 6))
case("avg_pool2d_pad_ceil", lambda L, F, x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                         count_include_pad=False), T(2, 3, 6, 6))
case("avg_pool2d_divisor", lambda L, F, x: F.avg_pool2d(x, 2, divisor_override=3), T(2, 3, 6, 6))
case("avg_pool2d_unbatched", lambda L, F, x: F.avg_pool2d(x, 2), T(3, 6, 6))
case("avg_pool3d", lambda L, F, x: F.avg_pool3d(x, 2), T(2, 2, 4, 4, 4))
case("lp_pool2d", lambda L, F, x: F.lp_pool2d(x, 2, 2), T(2, 3, 6, 6))
case("adaptive_avg_pool1d", lambda L, F, x: F.adaptive_avg_pool1d(x, 3), T(2, 3, 8))
case("adaptive_avg_pool2d", lambda L, F, x: F.adaptive_avg_pool2d(x, (2, 3)), T(2, 3, 6, 7))
case("adaptive_avg_pool2d_1", lambda L, F, x: F.adaptive_avg_pool2d(x, 1), T(2, 3, 6, 7))
case("adaptive_avg_pool2d_unbatched", lambda L, F, x: F.adaptive_avg_pool2d(x, 2), T(3, 6, 7))
case("adaptive_avg_pool3d", lambda L, F, x: F.adaptive_avg_pool3d(x, 2), T(2, 2, 4, 4, 5))
case("adaptive_max_pool1d", lambda L, F, x: F.adaptive_max_pool1d(x, 3), T(2, 3, 8))
case("adaptive_max_pool1d_indices", lambda L, F, x: F.adaptive_max_pool1d(x, 3, True),
     T(2, 3, 8))
case("adaptive_max_pool2d", lambda L, F, x: F.adaptive_max_pool2d(x, (2, 3)), T(2, 3, 6, 7))
case("adaptive_max_pool2d_indices", lambda L, F, x: F.adaptive_max_pool2d(x, 2, True),
     T(2, 3, 6, 7))
case("adaptive_max_pool3d", lambda L, F, x: F.adaptive_max_pool3d(x, 2), T(2, 2, 4, 4, 5))

# normalisation
case("batch_norm_train", lambda L, F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
     T(4, 3, 2, 2), T(3), T(3))
case("batch_norm_train_stats", lambda L, F, x, w, b: F.batch_norm(
    x, L.zeros(3, dtype=L.float64), L.ones(3, dtype=L.float64), w, b, training=True),
     T(4, 3, 2, 2), T(3), T(3))
case("batch_norm_train_noaffine", lambda L, F, x: F.batch_norm(x, None, None, training=True),
     T(4, 3, 5))
case("batch_norm_eval", lambda L, F, x, w, b, m, v: F.batch_norm(x, m, v, w, b, training=False),
     T(4, 3, 2, 2), T(3), T(3), T(3, grad=False), T(3, grad=False, fn=_pos))
case("batch_norm_eval_noaffine", lambda L, F, x, m, v: F.batch_norm(x, m, v),
     T(4, 3), T(3, grad=False), T(3, grad=False, fn=_pos))
case("batch_norm_2d_input", lambda L, F, x, w, b: F.batch_norm(x, None, None, w, b, True),
     T(5, 3), T(3), T(3))
case("layer_norm", lambda L, F, x, w, b: F.layer_norm(x, (4,), w, b), T(3, 4), T(4), T(4))
case("layer_norm_2dims", lambda L, F, x, w, b: F.layer_norm(x, (3, 4), w, b), T(2, 3, 4),
     T(3, 4), T(3, 4))
case("layer_norm_noaffine", lambda L, F, x: F.layer_norm(x, (4,)), T(3, 4))
case("layer_norm_weight_only", lambda L, F, x, w: F.layer_norm(x, (4,), w), T(3, 4), T(4))
case("group_norm", lambda L, F, x, w, b: F.group_norm(x, 2, w, b), T(2, 4, 3), T(4), T(4))
case("group_norm_noaffine", lambda L, F, x: F.group_norm(x, 2), T(2, 4, 3, 2))
case("instance_norm", lambda L, F, x, w, b: F.instance_norm(x, weight=w, bias=b), T(2, 3, 4, 4),
     T(3), T(3))
case("instance_norm_noaffine", lambda L, F, x: F.instance_norm(x), T(2, 3, 5))
case("rms_norm", lambda L, F, x, w: F.rms_norm(x, (4,), w), T(3, 4), T(4))
case("rms_norm_noweight", lambda L, F, x: F.rms_norm(x, (4,)), T(3, 4))
case("local_response_norm", lambda L, F, x: F.local_response_norm(x, 3), T(2, 5, 3, 3))
case("normalize_dim0", lambda L, F, x: F.normalize(x, 1.0, 0), T(3, 4))

# embedding
case("embedding", lambda L, F, i, w: F.embedding(i, w), I(2, 3, high=5), T(5, 3))
case("embedding_padding", lambda L, F, i, w: F.embedding(i, w, padding_idx=1), I(2, 3, high=5),
     T(5, 3))
case("embedding_1d", lambda L, F, i, w: F.embedding(i, w), I(4, high=5), T(5, 3))
case("embedding_scale_freq", lambda L, F, i, w: F.embedding(i, w, scale_grad_by_freq=True),
     I(4, high=5), T(5, 3))
case("embedding_bag_mean", lambda L, F, i, w: F.embedding_bag(i, w, mode="mean"),
     I(2, 3, high=5), T(5, 3))
case("embedding_bag_sum_offsets", lambda L, F, i, w, o: F.embedding_bag(i, w, o, mode="sum"),
     I(6, high=5), T(5, 3), I(arr=[0, 2, 5]))

# dropout
case("dropout_eval", lambda L, F, x: F.dropout(x, 0.3, training=False), T(3, 4))
case("dropout_train", lambda L, F, x: F.dropout(x, 0.3), T(3, 4))
case("dropout_p0", lambda L, F, x: F.dropout(x, 0.0), T(3, 4))
case("dropout_p1", lambda L, F, x: F.dropout(x, 1.0), T(3, 4))
case("dropout2d_eval", lambda L, F, x: F.dropout2d(x, 0.3, training=False), T(2, 3, 4, 4))
case("dropout2d_train", lambda L, F, x: F.dropout2d(x, 0.3), T(2, 3, 4, 4))
case("dropout1d_train", lambda L, F, x: F.dropout1d(x, 0.3), T(2, 3, 4))
case("alpha_dropout_eval", lambda L, F, x: F.alpha_dropout(x, 0.3), T(3, 4))
case("alpha_dropout_train", lambda L, F, x: F.alpha_dropout(x, 0.3, training=True), T(3, 4))
case("feature_alpha_dropout_train", lambda L, F, x: F.feature_alpha_dropout(x, 0.3, True),
     T(2, 3, 4))

# softmax family
for _d in (0, 1, -1):
    case(f"softmax_dim{_d}", lambda L, F, x, d=_d: F.softmax(x, d), T(3, 4))
    case(f"log_softmax_dim{_d}", lambda L, F, x, d=_d: F.log_softmax(x, d), T(3, 4))
case("softmax_dtype", lambda L, F, x: F.softmax(x.float(), 1, dtype=L.float64), T(3, 4))
case("log_softmax_dtype", lambda L, F, x: F.log_softmax(x.float(), 1, dtype=L.float64), T(3, 4))
case("softmin", lambda L, F, x: F.softmin(x, 1), T(3, 4))
case("softmax_0d", lambda L, F, x: F.softmax(x, 0), T())
case("gumbel_softmax_hard", lambda L, F, x: F.gumbel_softmax(x, hard=True), T(3, 4))
case("gumbel_softmax_soft_dim0", lambda L, F, x: F.gumbel_softmax(x, tau=0.5, dim=0), T(3, 4))

# activations
_ACTS = {
    "relu": lambda L, F, x: F.relu(x), "relu6": lambda L, F, x: F.relu6(x),
    "elu": lambda L, F, x: F.elu(x, 0.7), "selu": lambda L, F, x: F.selu(x),
    "celu": lambda L, F, x: F.celu(x, 0.5), "gelu": lambda L, F, x: F.gelu(x),
    "gelu_tanh": lambda L, F, x: F.gelu(x, approximate="tanh"), "silu": lambda L, F, x: F.silu(x),
    "mish": lambda L, F, x: F.mish(x), "leaky_relu": lambda L, F, x: F.leaky_relu(x, 0.1),
    "hardtanh": lambda L, F, x: F.hardtanh(x, -0.5, 0.5),
    "hardsigmoid": lambda L, F, x: F.hardsigmoid(x), "hardswish": lambda L, F, x: F.hardswish(x),
    "softplus": lambda L, F, x: F.softplus(x, 2, 3), "softsign": lambda L, F, x: F.softsign(x),
    "softshrink": lambda L, F, x: F.softshrink(x, 0.3),
    "hardshrink": lambda L, F, x: F.hardshrink(x, 0.3),
    "tanhshrink": lambda L, F, x: F.tanhshrink(x), "logsigmoid": lambda L, F, x: F.logsigmoid(x),
    "sigmoid": lambda L, F, x: F.sigmoid(x), "tanh": lambda L, F, x: F.tanh(x),
    "threshold": lambda L, F, x: F.threshold(x, 0.1, -1.0),
    "glu": lambda L, F, x: F.glu(x, -1), "glu_dim0": lambda L, F, x: F.glu(x, 0),
    "rrelu_eval": lambda L, F, x: F.rrelu(x),
    "rrelu_train": lambda L, F, x: F.rrelu(x, training=True),
    "prelu_scalar_weight": lambda L, F, x: F.prelu(x, L.tensor([0.25], dtype=L.float64)),
}
for _n, _f in _ACTS.items():
    case(_n, _f, T(4, 6))
for _n in ("relu", "relu6", "elu", "selu", "celu", "silu", "mish", "leaky_relu", "hardtanh",
           "hardsigmoid", "hardswish", "threshold", "rrelu"):
    case(f"{_n}_inplace", lambda L, F, x, n=_n: getattr(F, n)(x * 1, inplace=True) if n not in (
        "leaky_relu", "threshold", "hardtanh") else
        {"leaky_relu": lambda y: F.leaky_relu(y, 0.1, True),
         "threshold": lambda y: F.threshold(y, 0.1, -1.0, True),
         "hardtanh": lambda y: F.hardtanh(y, -0.5, 0.5, True)}[n](x * 1), T(4, 6))
case("prelu_channels_4d", lambda L, F, x, w: F.prelu(x, w), T(2, 3, 2, 2), T(3))
case("prelu_1d_input", lambda L, F, x, w: F.prelu(x, w), T(5), T(1))
case("prelu_0d_weight", lambda L, F, x, w: F.prelu(x, w), T(2, 3), T())

# losses, each reduction
_LOSSES = {
    "mse_loss": (lambda L, F, a, b, r: F.mse_loss(a, b, reduction=r), [T(3, 4), T(3, 4)]),
    "mse_loss_const_target": (lambda L, F, a, b, r: F.mse_loss(a, b, reduction=r),
                              [T(3, 4), T(3, 4, grad=False)]),
    "l1_loss": (lambda L, F, a, b, r: F.l1_loss(a, b, reduction=r), [T(3, 4), T(3, 4)]),
    "smooth_l1_loss": (lambda L, F, a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.5),
                       [T(3, 4), T(3, 4)]),
    "smooth_l1_loss_beta0": (lambda L, F, a, b, r: F.smooth_l1_loss(a, b, reduction=r, beta=0.0),
                             [T(3, 4), T(3, 4)]),
    "huber_loss": (lambda L, F, a, b, r: F.huber_loss(a, b, reduction=r, delta=0.7),
                   [T(3, 4), T(3, 4)]),
    "bce": (lambda L, F, a, b, r: F.binary_cross_entropy(a.sigmoid(), b, reduction=r),
            [T(3, 4), T(3, 4, grad=False, fn=_sig)]),
    "bce_weight": (lambda L, F, a, b, w, r: F.binary_cross_entropy(a.sigmoid(), b, w,
                                                                   reduction=r),
                   [T(3, 4), T(3, 4, grad=False, fn=_sig), T(4, grad=False, fn=_pos)]),
    "bce_target_grad": (lambda L, F, a, b, r: F.binary_cross_entropy(a.sigmoid(), b.sigmoid(),
                                                                     reduction=r),
                        [T(3, 4), T(3, 4)]),
    "bce_with_logits": (lambda L, F, a, b, r: F.binary_cross_entropy_with_logits(a, b,
                                                                                 reduction=r),
                        [T(3, 4), T(3, 4, grad=False, fn=_sig)]),
    "bce_with_logits_weights": (lambda L, F, a, b, w, pw, r: F.binary_cross_entropy_with_logits(
        a, b, w, reduction=r, pos_weight=pw), [T(3, 4), T(3, 4, fn=_sig),
                                               T(4, grad=False, fn=_pos),
                                               T(4, grad=False, fn=_pos)]),
    "kl_div": (lambda L, F, a, b, r: F.kl_div(a, b, reduction=r), [T(3, 4), T(3, 4, fn=_sig)]),
    "kl_div_log_target": (lambda L, F, a, b, r: F.kl_div(a, b, reduction=r, log_target=True),
                          [T(3, 4), T(3, 4)]),
    "nll_loss": (lambda L, F, a, t, r: F.nll_loss(a, t, reduction=r), [T(3, 4), I(3, high=4)]),
    "nll_loss_weight_ignore": (lambda L, F, a, t, w, r: F.nll_loss(a, t, w, ignore_index=1,
                                                                   reduction=r),
                               [T(3, 4), I(arr=[0, 1, 3]), T(4, grad=False, fn=_pos)]),
    "nll_loss_1d": (lambda L, F, a, t, r: F.nll_loss(a, t, reduction=r), [T(4), I(arr=2)]),
    "nll_loss_3d": (lambda L, F, a, t, r: F.nll_loss(a, t, reduction=r),
                    [T(2, 4, 3), I(2, 3, high=4)]),
    "nll_loss_4d": (lambda L, F, a, t, r: F.nll_loss(a, t, reduction=r),
                    [T(2, 4, 3, 2), I(2, 3, 2, high=4)]),
    "nll_loss_5d": (lambda L, F, a, t, r: F.nll_loss(a, t, reduction=r),
                    [T(2, 4, 3, 2, 2), I(2, 3, 2, 2, high=4)]),
    "cross_entropy": (lambda L, F, a, t, r: F.cross_entropy(a, t, reduction=r),
                      [T(3, 4), I(3, high=4)]),
    "cross_entropy_1d": (lambda L, F, a, t, r: F.cross_entropy(a, t, reduction=r),
                         [T(4), I(arr=1)]),
    "cross_entropy_3d": (lambda L, F, a, t, r: F.cross_entropy(a, t, reduction=r),
                         [T(2, 4, 3), I(2, 3, high=4)]),
    "cross_entropy_weight": (lambda L, F, a, t, w, r: F.cross_entropy(a, t, w, reduction=r),
                             [T(3, 4), I(3, high=4), T(4, grad=False, fn=_pos)]),
    "cross_entropy_smooth": (lambda L, F, a, t, r: F.cross_entropy(a, t, reduction=r,
                                                                   label_smoothing=0.2),
                             [T(3, 4), I(3, high=4)]),
    "cross_entropy_smooth_weight_ignore": (
        lambda L, F, a, t, w, r: F.cross_entropy(a, t, w, reduction=r, label_smoothing=0.2,
                                                 ignore_index=1),
        [T(3, 4), I(arr=[0, 1, 3]), T(4, grad=False, fn=_pos)]),
    "cross_entropy_smooth_4d": (lambda L, F, a, t, r: F.cross_entropy(a, t, reduction=r,
                                                                      label_smoothing=0.2),
                                [T(2, 4, 3, 2), I(2, 3, 2, high=4)]),
    "cross_entropy_probs": (lambda L, F, a, t, r: F.cross_entropy(a, t.softmax(1), reduction=r),
                            [T(3, 4), T(3, 4)]),
    "cross_entropy_probs_smooth_weight": (
        lambda L, F, a, t, w, r: F.cross_entropy(a, t, w, reduction=r, label_smoothing=0.1),
        [T(3, 4), T(3, 4, grad=False, fn=_sig), T(4, grad=False, fn=_pos)]),
    "cross_entropy_probs_3d": (lambda L, F, a, t, r: F.cross_entropy(a, t, reduction=r),
                               [T(2, 4, 3), T(2, 4, 3, grad=False, fn=_sig)]),
    "soft_margin_loss": (lambda L, F, a, t, r: F.soft_margin_loss(a, t, reduction=r),
                         [T(3, 4), T(3, 4, grad=False, fn=np.sign)]),
    "margin_ranking_loss": (lambda L, F, a, b, t, r: F.margin_ranking_loss(a, b, t, 0.1,
                                                                           reduction=r),
                            [T(5), T(5), T(5, grad=False, fn=np.sign)]),
    "hinge_embedding_loss": (lambda L, F, a, t, r: F.hinge_embedding_loss(a, t, reduction=r),
                             [T(3, 4), T(3, 4, grad=False, fn=np.sign)]),
    "cosine_embedding_loss": (lambda L, F, a, b, t, r: F.cosine_embedding_loss(a, b, t,
                                                                               reduction=r),
                              [T(3, 4), T(3, 4), T(3, grad=False, fn=np.sign)]),
    "poisson_nll_loss": (lambda L, F, a, t, r: F.poisson_nll_loss(a, t, reduction=r),
                         [T(3, 4), T(3, 4, grad=False, fn=_pos)]),
    "poisson_nll_loss_full": (lambda L, F, a, t, r: F.poisson_nll_loss(
        a.exp(), t, log_input=False, full=True, reduction=r),
        [T(3, 4), T(3, 4, grad=False, fn=lambda v: np.abs(v) * 3)]),
    "gaussian_nll_loss": (lambda L, F, a, t, v, r: F.gaussian_nll_loss(a, t, v, reduction=r),
                          [T(3, 4), T(3, 4), T(3, 4, fn=_pos)]),
    "gaussian_nll_loss_full": (lambda L, F, a, t, v, r: F.gaussian_nll_loss(a, t, v, full=True,
                                                                            reduction=r),
                               [T(3, 4), T(3, 4, grad=False), T(3, 1, fn=_pos)]),
    "triplet_margin_loss": (lambda L, F, a, p, n, r: F.triplet_margin_loss(a, p, n,
                                                                           reduction=r),
                            [T(3, 4), T(3, 4), T(3, 4)]),
    "triplet_margin_loss_swap": (lambda L, F, a, p, n, r: F.triplet_margin_loss(
        a, p, n, p=1, swap=True, reduction=r), [T(3, 4), T(3, 4), T(3, 4)]),
    "multilabel_soft_margin_loss": (lambda L, F, a, t, r: F.multilabel_soft_margin_loss(
        a, t, reduction=r), [T(3, 4), T(3, 4, grad=False, fn=lambda v: (v > 0) * 1.0)]),
    "multi_margin_loss": (lambda L, F, a, t, r: F.multi_margin_loss(a, t, reduction=r),
                          [T(3, 4), I(3, high=4)]),
    "multilabel_margin_loss": (lambda L, F, a, t, r: F.multilabel_margin_loss(a, t, reduction=r),
                               [T(2, 4), I(arr=[[3, 0, -1, 1], [1, 2, 3, -1]])]),
}
for _n, (_f, _ins) in _LOSSES.items():
    for _r in ("mean", "sum", "none"):
        case(f"{_n}_{_r}", lambda L, F, *a, f=_f, r=_r: f(L, F, *a, r), *_ins)
    if _n.startswith("kl_div"):
        case(f"{_n}_batchmean", lambda L, F, *a, f=_f: f(L, F, *a, "batchmean"), *_ins)

# distances and similarity
case("cosine_similarity_bcast", lambda L, F, a, b: F.cosine_similarity(a, b, -1), T(3, 4),
     T(4))
case("pairwise_distance_p1", lambda L, F, a, b: F.pairwise_distance(a, b, 1.0), T(3, 4), T(3, 4))
case("pairwise_distance_keepdim", lambda L, F, a, b: F.pairwise_distance(a, b, keepdim=True),
     T(3, 4), T(3, 4))
case("pdist", lambda L, F, a: F.pdist(a), T(4, 3))
case("pdist_p1_noncontig", lambda L, F, a: F.pdist(a.t(), 1), T(3, 4))

# resampling and padding
case("interpolate_nearest", lambda L, F, x: F.interpolate(x, scale_factor=2), T(1, 2, 3, 3))
case("interpolate_nearest_1d", lambda L, F, x: F.interpolate(x, size=7), T(1, 2, 3))
case("interpolate_nearest_exact", lambda L, F, x: F.interpolate(x, size=(5, 4),
                                                                mode="nearest-exact"),
     T(1, 2, 3, 3))
case("interpolate_bilinear", lambda L, F, x: F.interpolate(x, size=(5, 4), mode="bilinear"),
     T(1, 2, 3, 3))
case("interpolate_bilinear_ac", lambda L, F, x: F.interpolate(
    x, scale_factor=1.5, mode="bilinear", align_corners=True), T(1, 2, 3, 3))
case("interpolate_linear", lambda L, F, x: F.interpolate(x, size=6, mode="linear"), T(1, 2, 3))
case("interpolate_bicubic", lambda L, F, x: F.interpolate(x, size=(5, 4), mode="bicubic"),
     T(1, 2, 3, 3))
case("interpolate_area", lambda L, F, x: F.interpolate(x, size=(2, 2), mode="area"),
     T(1, 2, 4, 4))
case("interpolate_trilinear", lambda L, F, x: F.interpolate(x, scale_factor=2,
                                                            mode="trilinear"), T(1, 2, 2, 2, 2))
case("interpolate_nearest_3d", lambda L, F, x: F.interpolate(x, scale_factor=2),
     T(1, 2, 2, 2, 2))
case("upsample_bilinear", lambda L, F, x: F.upsample_bilinear(x, scale_factor=2), T(1, 2, 3, 3))
case("pad_constant", lambda L, F, x: F.pad(x, (1, 2), value=0.5), T(2, 3, 4))
case("pad_constant_neg", lambda L, F, x: F.pad(x, (-1, 2, 1, -1)), T(2, 3, 4))
case("pad_reflect_1d", lambda L, F, x: F.pad(x, (2, 1), mode="reflect"), T(2, 3, 4))
case("pad_reflect_2d", lambda L, F, x: F.pad(x, (1, 2, 2, 1), mode="reflect"), T(1, 2, 4, 4))
case("pad_reflect_3d", lambda L, F, x: F.pad(x, (1, 1, 1, 1, 1, 1), mode="reflect"),
     T(1, 2, 3, 3, 3))
case("pad_replicate_1d", lambda L, F, x: F.pad(x, (2, 1), mode="replicate"), T(2, 3, 4))
case("pad_replicate_2d", lambda L, F, x: F.pad(x, (1, 2, 2, 1), mode="replicate"),
     T(1, 2, 4, 4))
case("pad_replicate_3d", lambda L, F, x: F.pad(x, (1, 0, 1, 0, 0, 1), mode="replicate"),
     T(1, 2, 3, 3, 3))
case("pad_circular_1d", lambda L, F, x: F.pad(x, (2, 1), mode="circular"), T(2, 3, 4))
case("pad_circular_2d", lambda L, F, x: F.pad(x, (1, 2, 2, 1), mode="circular"), T(1, 2, 4, 4))
case("pixel_shuffle", lambda L, F, x: F.pixel_shuffle(x, 2), T(1, 8, 2, 3))
case("pixel_unshuffle", lambda L, F, x: F.pixel_unshuffle(x, 2), T(1, 2, 4, 6))
case("unfold", lambda L, F, x: F.unfold(x, 2, padding=1), T(1, 2, 3, 3))
case("fold", lambda L, F, x: F.fold(x, (3, 3), 2), T(1, 8, 4))
case("unfold_unbatched", lambda L, F, x: F.unfold(x, (2, 1), stride=2), T(2, 4, 3))
case("fold_unbatched", lambda L, F, x: F.fold(x, (4, 3), (2, 2), padding=1), T(8, 20))
case("interpolate_bicubic_aa", lambda L, F, x: F.interpolate(x, scale_factor=0.5, mode="bicubic",
                                                             antialias=True), T(1, 2, 6, 6))
case("interpolate_bilinear_aa", lambda L, F, x: F.interpolate(x, size=(2, 3), mode="bilinear",
                                                              antialias=True), T(1, 2, 5, 6))
case("interpolate_lanczos", lambda L, F, x: F.interpolate(x, size=(4, 2), mode="lanczos",
                                                          antialias=True), T(1, 2, 5, 6))
case("conv_transpose3d_unbatched", lambda L, F, x, w: F.conv_transpose3d(x, w, stride=(2, 1, 1)),
     T(2, 2, 3, 2), T(2, 3, 2, 2, 2))
case("conv3d_same_even", lambda L, F, x, w: F.conv3d(x, w, padding="same"), T(1, 2, 4, 3, 4),
     T(3, 2, 2, 3, 2))

# one_hot-based use
case("one_hot_mul", lambda L, F, t, x: (F.one_hot(t, 4).to(x.dtype) * x).sum(1),
     I(3, high=4), T(3, 4))
case("one_hot_matmul", lambda L, F, t, w: F.one_hot(t, 4).double() @ w, I(5, high=4), T(4, 3))
case("one_hot_soft_target", lambda L, F, t, x: -(F.one_hot(t, 4) * F.log_softmax(x, -1))
     .sum(-1).mean(), I(3, high=4), T(3, 4))

# attention
case("sdpa", lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v), T(2, 3, 4),
     T(2, 5, 4), T(2, 5, 4))
case("sdpa_4d", lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v), T(1, 2, 3, 4),
     T(1, 2, 5, 4), T(1, 2, 5, 4))
case("sdpa_causal", lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                         is_causal=True),
     T(2, 3, 4), T(2, 3, 4), T(2, 3, 4))
case("sdpa_bool_mask", lambda L, F, q, k, v, m: F.scaled_dot_product_attention(
    q, k, v, attn_mask=m), T(2, 3, 4), T(2, 5, 4), T(2, 5, 4),
     I(arr=[[1, 1, 0, 1, 1], [1, 0, 1, 1, 1], [1, 1, 1, 1, 0]], dtype="bool"))
case("sdpa_float_mask", lambda L, F, q, k, v, m: F.scaled_dot_product_attention(
    q, k, v, attn_mask=m), T(2, 3, 4), T(2, 5, 4), T(2, 5, 4), T(3, 5, grad=False))
case("sdpa_float_mask_grad", lambda L, F, q, k, v, m: F.scaled_dot_product_attention(
    q, k, v, attn_mask=m), T(2, 3, 4), T(2, 5, 4), T(2, 5, 4), T(3, 5))
case("sdpa_scale", lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.3),
     T(2, 3, 4), T(2, 5, 4), T(2, 5, 4))
case("sdpa_dropout", lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v,
                                                                          dropout_p=0.3),
     T(2, 3, 4), T(2, 5, 4), T(2, 5, 4))
case("sdpa_gqa", lambda L, F, q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
     T(1, 4, 3, 4), T(1, 2, 5, 4), T(1, 2, 5, 4))


# --- module cases: name -> (make(nn), [inputs], train, call(m, *inputs)) ---------------------
M_CASES: dict = {}


def mcase(name, make, inputs, train=True, call=None):
    assert name not in M_CASES, name
    M_CASES[name] = (make, inputs, train, call or (lambda m, *a: m(*a)))


for _mode in ("RNN", "LSTM", "GRU"):
    for _layers in (1, 2):
        for _bi in (False, True):
            for _bf in (False, True):
                _n = f"{_mode}_l{_layers}{'_bi' if _bi else ''}{'_bf' if _bf else ''}"
                mcase(_n, lambda nn, m=_mode, l=_layers, b=_bi, f=_bf: getattr(nn, m)(
                    3, 4, num_layers=l, bidirectional=b, batch_first=f), [T(2, 3, 3)])
    mcase(f"{_mode}_h0", lambda nn, m=_mode: getattr(nn, m)(3, 4, num_layers=2),
          [T(5, 2, 3), T(2, 2, 4)] if _mode != "LSTM" else [T(5, 2, 3)],
          call=(lambda m, x, h: m(x, h)) if _mode != "LSTM" else None)
    mcase(f"{_mode}_unbatched", lambda nn, m=_mode: getattr(nn, m)(3, 4), [T(5, 3)])
    mcase(f"{_mode}_nobias_dropout_eval", lambda nn, m=_mode: getattr(nn, m)(
        3, 4, num_layers=2, bias=False, dropout=0.5), [T(5, 2, 3)], train=False)
mcase("LSTM_h0c0", lambda nn: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
      [T(5, 2, 3), T(4, 2, 4), T(4, 2, 4)], call=lambda m, x, h, c: m(x, (h, c)))
mcase("LSTM_proj", lambda nn: nn.LSTM(3, 4, proj_size=2), [T(5, 2, 3)])
mcase("RNN_relu", lambda nn: nn.RNN(3, 4, nonlinearity="relu"), [T(5, 2, 3)])
mcase("RNNCell", lambda nn: nn.RNNCell(3, 4), [T(2, 3), T(2, 4)])
mcase("LSTMCell", lambda nn: nn.LSTMCell(3, 4), [T(2, 3), T(2, 4), T(2, 4)],
      call=lambda m, x, h, c: m(x, (h, c)))
mcase("GRUCell", lambda nn: nn.GRUCell(3, 4), [T(2, 3)])
mcase("MultiheadAttention", lambda nn: nn.MultiheadAttention(8, 2), [T(3, 2, 8)],
      call=lambda m, x: m(x, x, x))
mcase("MultiheadAttention_no_weights", lambda nn: nn.MultiheadAttention(8, 2),
      [T(3, 2, 8), T(4, 2, 8)], call=lambda m, q, k: m(q, k, k, need_weights=False))
mcase("MultiheadAttention_batch_first", lambda nn: nn.MultiheadAttention(8, 2, batch_first=True),
      [T(2, 3, 8), T(2, 4, 8), T(2, 4, 8)], call=lambda m, q, k, v: m(q, k, v))
mcase("MultiheadAttention_unbatched", lambda nn: nn.MultiheadAttention(8, 2), [T(3, 8)],
      call=lambda m, x: m(x, x, x))
mcase("MultiheadAttention_masks", lambda nn: nn.MultiheadAttention(8, 2), [T(3, 2, 8)],
      call=lambda m, x: m(x, x, x, attn_mask=_causal(m, 3),
                          key_padding_mask=_lib(m).tensor([[False, False, True],
                                                           [False, False, False]])))
mcase("MultiheadAttention_avg_off", lambda nn: nn.MultiheadAttention(8, 2), [T(3, 2, 8)],
      call=lambda m, x: m(x, x, x, average_attn_weights=False))
mcase("MultiheadAttention_kdim_bias_kv", lambda nn: nn.MultiheadAttention(
    8, 2, kdim=5, vdim=6, add_bias_kv=True, add_zero_attn=True),
      [T(3, 2, 8), T(4, 2, 5), T(4, 2, 6)], call=lambda m, q, k, v: m(q, k, v))
mcase("MultiheadAttention_nobias", lambda nn: nn.MultiheadAttention(8, 2, bias=False),
      [T(3, 2, 8)], call=lambda m, x: m(x, x, x))
mcase("MultiheadAttention_dropout_train", lambda nn: nn.MultiheadAttention(8, 2, dropout=0.3),
      [T(3, 2, 8)], call=lambda m, x: m(x, x, x))
for _train in (False, True):
    _s = "train" if _train else "eval"
    mcase(f"TransformerEncoderLayer_{_s}", lambda nn: nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16), [T(3, 2, 8)], train=_train)
    mcase(f"TransformerEncoderLayer_norm_first_gelu_bf_{_s}", lambda nn: nn.TransformerEncoderLayer(
        8, 2, dim_feedforward=16, norm_first=True, activation="gelu", batch_first=True),
          [T(2, 3, 8)], train=_train)
mcase("TransformerEncoderLayer_causal", lambda nn: nn.TransformerEncoderLayer(
    8, 2, dim_feedforward=16, dropout=0.0), [T(3, 2, 8)],
      call=lambda m, x: m(x, src_mask=_causal(m, 3), is_causal=True))
mcase("TransformerEncoder_2", lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(
    8, 2, dim_feedforward=16, dropout=0.0), 2, enable_nested_tensor=False), [T(3, 2, 8)])
mcase("TransformerDecoderLayer", lambda nn: nn.TransformerDecoderLayer(
    8, 2, dim_feedforward=16, dropout=0.0), [T(3, 2, 8), T(4, 2, 8)])
mcase("MultiheadAttention_unbatched_kpm", lambda nn: nn.MultiheadAttention(8, 2),
      [T(3, 8), T(4, 8)], call=lambda m, q, k: m(q, k, k, key_padding_mask=_lib(m).tensor(
          [False, True, False, False])))
mcase("MultiheadAttention_causal_no_weights", lambda nn: nn.MultiheadAttention(8, 2),
      [T(3, 2, 8)], call=lambda m, x: m(x, x, x, attn_mask=_causal(m, 3), is_causal=True,
                                        need_weights=False))
mcase("MultiheadAttention_bf_kv", lambda nn: nn.MultiheadAttention(8, 2, batch_first=True),
      [T(2, 3, 8), T(2, 4, 8)], call=lambda m, q, k: m(q, k, k))
mcase("TransformerEncoderLayer_kpm", lambda nn: nn.TransformerEncoderLayer(
    8, 2, dim_feedforward=16, dropout=0.0), [T(3, 2, 8)],
      call=lambda m, x: m(x, src_key_padding_mask=_lib(m).tensor([[False, False, True],
                                                                  [False, False, False]])))
mcase("TransformerDecoder_causal_norm_first", lambda nn: nn.TransformerDecoder(
    nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=True), 2,
    norm=nn.LayerNorm(8)), [T(4, 2, 8), T(3, 2, 8)],
      call=lambda m, tgt, mem: m(tgt, mem, tgt_mask=_causal(m, 4)))
mcase("Transformer_bf_kpm", lambda nn: nn.Transformer(
    8, 2, 1, 1, 16, dropout=0.0, batch_first=True), [T(2, 3, 8), T(2, 4, 8)],
      call=lambda m, src, tgt: m(src, tgt, src_key_padding_mask=_lib(m).tensor(
          [[False, False, True], [False, False, False]])))
mcase("Linear", lambda nn: nn.Linear(4, 3), [T(2, 4)])
mcase("Linear_nobias", lambda nn: nn.Linear(4, 3, bias=False), [T(2, 5, 4)])
mcase("Bilinear", lambda nn: nn.Bilinear(3, 4, 2), [T(5, 3), T(5, 4)])
mcase("Conv1d", lambda nn: nn.Conv1d(3, 4, 3, padding=1), [T(2, 3, 6)])
mcase("Conv2d_nobias", lambda nn: nn.Conv2d(3, 4, 3, bias=False), [T(2, 3, 5, 5)])
mcase("Conv2d_reflect", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
      [T(2, 2, 5, 5)])
mcase("Conv2d_circular", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"),
      [T(2, 2, 5, 5)])
mcase("Conv2d_same", lambda nn: nn.Conv2d(2, 3, 4, padding="same"), [T(2, 2, 5, 5)])
mcase("Conv3d", lambda nn: nn.Conv3d(2, 3, 2), [T(1, 2, 3, 3, 3)])
mcase("Conv3d_reflect", lambda nn: nn.Conv3d(2, 3, 3, padding=1, padding_mode="reflect"),
      [T(1, 2, 3, 3, 3)])
mcase("ConvTranspose3d", lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2), [T(1, 2, 2, 3, 2)])
mcase("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2), [T(2, 3, 3, 3)])
mcase("ConvTranspose2d_output_size", lambda nn: nn.ConvTranspose2d(3, 2, 3, stride=2),
      [T(2, 3, 3, 3)], call=lambda m, x: m(x, output_size=[8, 8]))
mcase("BatchNorm1d_train", lambda nn: nn.BatchNorm1d(3), [T(4, 3)])
mcase("BatchNorm2d_train", lambda nn: nn.BatchNorm2d(3), [T(4, 3, 2, 2)])
mcase("BatchNorm2d_eval", lambda nn: nn.BatchNorm2d(3), [T(4, 3, 2, 2)], train=False)
mcase("BatchNorm2d_no_stats", lambda nn: nn.BatchNorm2d(3, track_running_stats=False),
      [T(4, 3, 2, 2)], train=False)
mcase("BatchNorm2d_momentum_none", lambda nn: nn.BatchNorm2d(3, momentum=None),
      [T(4, 3, 2, 2)])
mcase("BatchNorm2d_noaffine", lambda nn: nn.BatchNorm2d(3, affine=False), [T(4, 3, 2, 2)])
mcase("LayerNorm", lambda nn: nn.LayerNorm(4), [T(2, 3, 4)])
mcase("LayerNorm_nobias", lambda nn: nn.LayerNorm(4, bias=False), [T(2, 3, 4)])
mcase("GroupNorm", lambda nn: nn.GroupNorm(2, 4), [T(2, 4, 3)])
mcase("InstanceNorm2d_affine", lambda nn: nn.InstanceNorm2d(3, affine=True), [T(2, 3, 4, 4)])
mcase("InstanceNorm1d_stats", lambda nn: nn.InstanceNorm1d(3, track_running_stats=True),
      [T(2, 3, 4)])
mcase("RMSNorm", lambda nn: nn.RMSNorm(4), [T(2, 3, 4)])
mcase("Embedding", lambda nn: nn.Embedding(5, 3), [I(2, 3, high=5)])
mcase("Embedding_padding", lambda nn: nn.Embedding(5, 3, padding_idx=0), [I(2, 3, high=5)])
mcase("EmbeddingBag", lambda nn: nn.EmbeddingBag(5, 3), [I(2, 3, high=5)])
mcase("Dropout_eval", lambda nn: nn.Dropout(0.3), [T(3, 4)], train=False)
mcase("Dropout_train", lambda nn: nn.Dropout(0.3), [T(3, 4)])
mcase("PReLU", lambda nn: nn.PReLU(3), [T(2, 3, 4)])
mcase("PReLU_shared", lambda nn: nn.PReLU(), [T(2, 3, 4)])
mcase("Softmax2d", lambda nn: nn.Softmax2d(), [T(2, 3, 2, 2)])
mcase("Flatten_Unflatten", lambda nn: nn.Sequential(nn.Flatten(), nn.Unflatten(1, (2, 6))),
      [T(2, 3, 4)])
mcase("Upsample", lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"), [T(1, 2, 3, 3)])
mcase("Upsample_bicubic", lambda nn: nn.Upsample(size=(4, 5), mode="bicubic", align_corners=True),
      [T(1, 2, 3, 3)])
mcase("Unfold_Fold", lambda nn: nn.Sequential(nn.Unfold(2, padding=1),
                                              nn.Fold((3, 4), 2, padding=1)), [T(2, 3, 3, 4)])
mcase("MultiMarginLoss_weight", lambda nn: nn.MultiMarginLoss(p=2, weight=_lib_of(nn).ones(4,
      dtype=_lib_of(nn).float64)), [T(3, 4), I(3, high=4)])
mcase("MultiLabelMarginLoss", lambda nn: nn.MultiLabelMarginLoss(reduction="sum"),
      [T(2, 4), I(arr=[[3, 0, -1, 1], [1, 2, 3, -1]])])
mcase("MultiLabelSoftMarginLoss", lambda nn: nn.MultiLabelSoftMarginLoss(reduction="none"),
      [T(3, 4), T(3, 4, grad=False, fn=_sig)])
mcase("MaxPool2d", lambda nn: nn.MaxPool2d(2), [T(2, 3, 4, 4)])
mcase("AvgPool1d", lambda nn: nn.AvgPool1d(2), [T(2, 3, 4)])
mcase("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((1, 2)), [T(2, 3, 4, 4)])
mcase("CrossEntropyLoss_smooth", lambda nn: nn.CrossEntropyLoss(label_smoothing=0.1),
      [T(3, 4), I(3, high=4)])
mcase("CTC_free_mlp", lambda nn: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.0),
                                               nn.Linear(8, 2), nn.LogSoftmax(-1)), [T(3, 4)])


def _lib_of(nn):
    return torch if nn is torch.nn else dyngrad


def _lib(m):
    return torch if isinstance(m, torch.nn.Module) else dyngrad


def _causal(m, n):
    lib = _lib(m)
    return lib.triu(lib.full((n, n), float("-inf"), dtype=lib.float64), 1)


# --- running and comparing -------------------------------------------------------------------
def _outs(out, lib):
    if isinstance(out, lib.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r += _outs(o, lib)
        return r
    return []


def _walks(outs, leaves):
    return [walk(o, leaves) for o in outs if o.grad_fn is not None]


def _run_f(lib, name):
    fn, specs = F_CASES[name]
    rs = np.random.RandomState(0)
    leaves = [s.make(lib, rs) for s in specs]
    lib.manual_seed(0)
    F = lib.nn.functional
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(lib, F, *leaves)
    return _walks(_outs(out, lib), leaves)


def _state(mt):
    return {k: dyngrad.tensor(v.detach().numpy().copy()) for k, v in mt.state_dict().items()}


def _run_m(name):
    make, specs, train, call = M_CASES[name]
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mt = make(torch.nn).double()
        md = make(dyngrad.nn).double()
    md.load_state_dict(_state(mt))
    mt.train(train)
    md.train(train)
    res = []
    for lib, m in ((torch, mt), (dyngrad, md)):
        rs = np.random.RandomState(0)
        xs = [s.make(lib, rs) for s in specs]
        params = dict(m.named_parameters())
        leaves = xs + [params[k] for k, _ in mt.named_parameters()]
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call(m, *xs)
        res.append(_walks(_outs(out, lib), leaves))
    return res


def _differences(got, exp):
    if len(got) != len(exp):
        return [f"{len(got)} outputs with a graph, torch {len(exp)}"]
    diffs = []
    for k, (g, e) in enumerate(zip(got, exp)):
        d = _first_difference(g, e, f"out{k}")
        if d:
            diffs.append(d)
    return diffs


# Cases whose graph differs from PyTorch's, with the reason (expected failures while they do;
# a listed case that matches fails, so the list holds only live differences).
_MISSING = "not in dyngrad yet"
KNOWN: dict = {
}


@pytest.fixture(autouse=True)
def _deep_walk(monkeypatch):
    monkeypatch.setattr(gs, "MAX_NODES", 3000)  # whole recurrent/transformer graphs


def _check(name, got, exp):
    diffs = _differences(got, exp)
    if name in KNOWN:
        if diffs:
            pytest.xfail(KNOWN[name])
        pytest.fail(f"{name} now matches PyTorch: remove it from KNOWN")
    assert not diffs, "\n".join(diffs)


@pytest.mark.parametrize("name", list(F_CASES))
def test_functional_graph_matches_pytorch(name):
    exp = _run_f(torch, name)
    try:
        got = _run_f(dyngrad, name)
    except (AttributeError, NotImplementedError):
        if KNOWN.get(name) == _MISSING:
            pytest.xfail(_MISSING)
        raise
    _check(name, got, exp)


@pytest.mark.parametrize("name", list(M_CASES))
def test_module_graph_matches_pytorch(name):
    try:
        exp, got = _run_m(name)
    except (AttributeError, NotImplementedError):
        if KNOWN.get(name) == _MISSING:
            pytest.xfail(_MISSING)
        raise
    _check(name, got, exp)
