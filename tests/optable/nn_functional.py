"""Rows for nn.functional: activations, losses, convolution, pooling, padding, resampling,
normalisation and embedding (values are checked against PyTorch in test_vs_torch_nn.py;
here each op is gradchecked and gradgradchecked on small shapes)."""
import numpy as np

import dyngrad as torch
import dyngrad.nn.functional as F
from tests.optable import OpInfo, S


def _sig(x):
    return 1 / (1 + np.exp(-x))


X = [S((3, 4))]
# keep samples away from the kinks of piecewise ops so finite differences are valid
KINK = [S((3, 4), domain=(0.1, 2.0)), S((2, 3), domain=(-2.0, -0.1))]
T2 = [S((3, 4), (3, 4))]
IMG = [S((2, 2, 5, 6))]

ROWS = [
    OpInfo("F.relu6", lambda x: F.relu6(x * 4), lambda x: np.clip(x * 4, 0, 6), KINK,
           "HardtanhBackward0"),
    OpInfo("F.hardtanh", lambda x: F.hardtanh(x, -0.5, 0.5),
           lambda x: np.clip(x, -0.5, 0.5), [S((3, 4), domain=(0.6, 2.0)), S((4,), domain=(-0.4, 0.4))],
           "HardtanhBackward0"),
    OpInfo("F.leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
           KINK, "LeakyReluBackward0"),
    OpInfo("F.elu", lambda x: F.elu(x, 1.3), lambda x: np.where(x > 0, x, 1.3 * np.expm1(x)),
           KINK, "EluBackward0"),
    OpInfo("F.selu", F.selu, None, KINK, "EluBackward0"),
    OpInfo("F.celu", lambda x: F.celu(x, 0.7), None, KINK, "CeluBackward0"),
    OpInfo("F.gelu", F.gelu, None, X, "GeluBackward0"),
    OpInfo("F.gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
           lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))), X,
           "GeluBackward0"),
    OpInfo("F.silu", F.silu, lambda x: x * _sig(x), X, "SiluBackward0"),
    OpInfo("F.mish", F.mish, lambda x: x * np.tanh(np.log1p(np.exp(x))), X, "MishBackward0"),
    OpInfo("F.softplus", lambda x: F.softplus(x, beta=2, threshold=3),
           lambda x: np.where(2 * x > 3, x, np.log1p(np.exp(2 * x)) / 2), X, "SoftplusBackward0"),
    OpInfo("F.hardsigmoid", lambda x: F.hardsigmoid(x * 2), lambda x: np.clip(x / 3 + 0.5, 0, 1),
           [S((3, 4), domain=(-1.4, 1.4))], "HardsigmoidBackward0",
           gradgrad=False),  # PyTorch has no double backward for hardsigmoid
    OpInfo("F.hardswish", lambda x: F.hardswish(x * 2),
           lambda x: 2 * x * np.clip(2 * x + 3, 0, 6) / 6, [S((3, 4), domain=(-1.4, 1.4))],
           "HardswishBackward0"),
    OpInfo("F.logsigmoid", F.logsigmoid, lambda x: np.log(_sig(x)), X, "LogSigmoidBackward0"),
    OpInfo("F.softsign", F.softsign, lambda x: x / (1 + np.abs(x)), KINK),
    OpInfo("F.tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x), X),
    OpInfo("F.threshold", lambda x: F.threshold(x, 0.0, -2.0),
           lambda x: np.where(x > 0, x, -2.0), KINK, "ThresholdBackward0"),
    OpInfo("F.glu", lambda x: F.glu(x, 1), lambda x: x[:, :2] * _sig(x[:, 2:]), X, "GluBackward0"),
    OpInfo("F.prelu", F.prelu, None, [S((2, 3, 4), (3,))], "PreluKernelBackward0"),
    OpInfo("F.softmin", lambda x: F.softmin(x, 1), None, X, "SoftmaxBackward0"),
    # losses
    OpInfo("F.mse_loss", F.mse_loss, lambda a, b: ((a - b) ** 2).mean(), T2, "MseLossBackward0"),
    OpInfo("F.l1_loss", lambda a, b: F.l1_loss(a, b, reduction="sum"),
           lambda a, b: np.abs(a - b).sum(), T2),
    OpInfo("F.smooth_l1_loss", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), None, T2,
           "SmoothL1LossBackward0"),
    OpInfo("F.huber_loss", lambda a, b: F.huber_loss(a, b, reduction="none", delta=0.7), None,
           T2, "HuberLossBackward0"),
    OpInfo("F.bce_with_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b.sigmoid()),
           lambda a, b: np.mean(-(_sig(b) * np.log(_sig(a)) + (1 - _sig(b)) * np.log(1 - _sig(a)))),
           T2, "BinaryCrossEntropyWithLogitsBackward0"),
    OpInfo("F.bce_with_logits_pw", lambda a, b: F.binary_cross_entropy_with_logits(
        a, b.sigmoid(), pos_weight=torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=a.dtype),
        reduction="sum"), None, T2, "BinaryCrossEntropyWithLogitsBackward0"),
    OpInfo("F.kl_div", lambda a, b: F.kl_div(F.log_softmax(a, 1), F.softmax(b, 1),
                                             reduction="batchmean"), None, T2),
    OpInfo("F.soft_margin_loss", lambda a: F.soft_margin_loss(a, torch.ones_like(a)),
           lambda a: np.log1p(np.exp(-a)).mean(), X),
    OpInfo("F.cross_entropy", lambda a, t: F.cross_entropy(a, t), None,
           [S((3, 4), (3,), int_args=(1,), int_high=4)], "NllLossBackward0"),
    OpInfo("F.cross_entropy_smooth", lambda a, t: F.cross_entropy(a, t, label_smoothing=0.1),
           None, [S((3, 4), (3,), int_args=(1,), int_high=4)]),
    OpInfo("F.nll_loss_2d", lambda a, t: F.nll_loss(a, t), None,
           [S((2, 3, 2, 2), (2, 2, 2), int_args=(1,), int_high=3)], "NllLoss2DBackward0"),
    OpInfo("F.cosine_similarity", F.cosine_similarity, None, [S((3, 4), (3, 4))]),
    OpInfo("F.pairwise_distance", F.pairwise_distance, None, [S((3, 4), (3, 4))]),
    OpInfo("F.pdist", F.pdist, None, [S((4, 3))], "PdistBackward0", gradgrad=False),
    OpInfo("F.multi_margin_loss", lambda a, t: F.multi_margin_loss(a, t, p=2), None,
           [S((3, 4), (3,), int_args=(1,), int_high=4)], "MultiMarginLossBackward0",
           gradgrad=False),
    OpInfo("F.multilabel_margin_loss", lambda a, t: F.multilabel_margin_loss(a, t), None,
           [S((3, 4), (3, 4), int_args=(1,), int_high=4)], "MultilabelMarginLossBackward0",
           gradgrad=False),
    OpInfo("F.multilabel_soft_margin_loss",
           lambda a, b: F.multilabel_soft_margin_loss(a, b.sigmoid()), None,
           [S((3, 4), (3, 4))]),
    OpInfo("F.normalize", F.normalize, None, X),
    OpInfo("F.bilinear", F.bilinear, None, [S((3, 2), (3, 4), (5, 2, 4), (5,))]),
    # layers
    OpInfo("F.conv2d", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1), None,
           [S((2, 2, 5, 6), (3, 2, 3, 2), (3,))], "ConvolutionBackward0"),
    OpInfo("F.conv2d_groups_dil", lambda x, w: F.conv2d(x, w, groups=2, dilation=2,
                                                        padding="same"), None,
           [S((1, 4, 5, 5), (4, 2, 2, 3))], "ConvolutionBackward0"),
    OpInfo("F.conv1d", lambda x, w, b: F.conv1d(x, w, b, padding=2), None,
           [S((2, 2, 6), (3, 2, 3), (3,))], "ConvolutionBackward0"),
    OpInfo("F.conv_transpose2d", lambda x, w, b: F.conv_transpose2d(
        x, w, b, stride=2, padding=1, output_padding=1), None,
           [S((2, 2, 3, 4), (2, 3, 3, 2), (3,))], "ConvolutionBackward0"),
    OpInfo("F.conv3d", lambda x, w, b: F.conv3d(x, w, b, stride=(2, 1, 1), padding=1), None,
           [S((1, 2, 4, 3, 4), (3, 2, 2, 2, 2), (3,))], "ConvolutionBackward0"),
    OpInfo("F.conv_transpose3d", lambda x, w, b: F.conv_transpose3d(
        x, w, b, stride=2, padding=1, output_padding=(1, 0, 1)), None,
           [S((1, 2, 2, 3, 2), (2, 3, 2, 2, 2), (3,))], "ConvolutionBackward0"),
    OpInfo("F.unfold", lambda x: F.unfold(x, (2, 3), padding=1, stride=(2, 1)), None, IMG,
           "Im2ColBackward0"),
    OpInfo("F.fold", lambda c: F.fold(c, (4, 5), 2, padding=1), None, [S((2, 8, 30))],
           "Col2ImBackward0"),
    OpInfo("F.max_pool2d", lambda x: F.max_pool2d(x, 3, 2, 1), None, IMG,
           "MaxPool2DWithIndicesBackward0"),
    OpInfo("F.max_pool1d", lambda x: F.max_pool1d(x, 2), None, [S((2, 3, 6))]),
    OpInfo("F.avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), None,
           IMG, "AvgPool2DBackward0"),
    OpInfo("F.avg_pool1d", lambda x: F.avg_pool1d(x, 2), lambda x: x.reshape(2, 3, 3, 2).mean(-1),
           [S((2, 3, 6))]),
    OpInfo("F.adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (2, 4)), None, IMG,
           "AdaptiveAvgPool2DBackward0"),
    OpInfo("F.adaptive_max_pool2d", lambda x: F.adaptive_max_pool2d(x, (2, 4)), None, IMG,
           "AdaptiveMaxPool2DBackward0"),
    OpInfo("F.pad_constant", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), None, IMG,
           "ConstantPadNdBackward0"),
    OpInfo("F.pad_reflect", lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"),
           lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="reflect"), IMG,
           "ReflectionPad2DBackward0"),
    OpInfo("F.pad_replicate", lambda x: F.pad(x, (1, 2, 2, 1), mode="replicate"),
           lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1), (1, 2)), mode="edge"), IMG,
           "ReplicationPad2DBackward0"),
    OpInfo("F.interpolate_nearest", lambda x: F.interpolate(x, scale_factor=2),
           lambda x: x.repeat(2, -1).repeat(2, -2), IMG, "UpsampleNearest2DBackward0"),
    OpInfo("F.interpolate_bilinear", lambda x: F.interpolate(x, size=(7, 4), mode="bilinear",
                                                             align_corners=True), None, IMG,
           "UpsampleBilinear2DBackward0"),
    OpInfo("F.interpolate_bicubic", lambda x: F.interpolate(x, size=(7, 4), mode="bicubic"),
           None, IMG, "UpsampleBicubic2DBackward0"),
    OpInfo("F.interpolate_bicubic_aa", lambda x: F.interpolate(
        x, scale_factor=0.6, mode="bicubic", antialias=True), None, IMG,
           "UpsampleBicubic2DAaBackward0"),
    OpInfo("F.batch_norm", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
           None, [S((3, 2, 2, 2), (2,), (2,))], "NativeBatchNormBackward0"),
    OpInfo("F.layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), None,
           [S((3, 4), (4,), (4,))], "NativeLayerNormBackward0"),
    OpInfo("F.group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), None,
           [S((2, 4, 3), (4,), (4,))], "NativeGroupNormBackward0"),
    OpInfo("F.embedding", lambda i, w: F.embedding(i, w), None,
           [S((2, 3), (4, 2), int_args=(0,), int_high=4)], "EmbeddingBackward0"),
]

ROWS += [
    OpInfo("F.conv_transpose1d", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1,
                                                                    output_padding=1),
           None, [S((2, 4, 5), (4, 3, 3), (3,))], "ConvolutionBackward0"),
    OpInfo("F.conv_transpose1d_groups", lambda x, w: F.conv_transpose1d(x, w, groups=2,
                                                                        dilation=2),
           None, [S((1, 4, 3), (4, 1, 2))], "ConvolutionBackward0"),
]
