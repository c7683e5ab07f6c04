"""Every nn module beside PyTorch's, with PyTorch's weights loaded into dyngrad's: the
state-dict keys and shapes, repr, outputs in training and evaluation mode, the gradients of
the inputs and parameters, and the buffers after a training-mode call.  Modules that draw
random numbers in their forward (dropout, RReLU in training) are compared in evaluation mode
only."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

# module -> (constructor, input shapes, targets): a target is ("int", high, shape) for class
# indices, ("sign", shape) for +-1 labels, ("unit", shape) for values in (0, 1)
S = {
    "Linear": ("Linear(4, 3)", [(2, 4)]),
    "Bilinear": ("Bilinear(3, 2, 4)", [(5, 3), (5, 2)]),
    "Conv1d": ("Conv1d(2, 3, 3, stride=2, padding=1)", [(2, 2, 7)]),
    "Conv2d": ("Conv2d(2, 4, (3, 2), padding='same', dilation=2, groups=2)", [(1, 2, 6, 5)]),
    "Conv3d": ("Conv3d(2, 2, 2)", [(1, 2, 3, 4, 3)]),
    "ConvTranspose1d": ("ConvTranspose1d(2, 3, 3, stride=2, output_padding=1)", [(2, 2, 4)]),
    "ConvTranspose2d": ("ConvTranspose2d(4, 2, 2, groups=2)", [(1, 4, 3, 3)]),
    "ConvTranspose3d": ("ConvTranspose3d(2, 1, 2)", [(1, 2, 2, 3, 2)]),
    "BatchNorm1d": ("BatchNorm1d(3)", [(4, 3)]),
    "BatchNorm2d": ("BatchNorm2d(2, momentum=0.3)", [(3, 2, 2, 2)]),
    "BatchNorm3d": ("BatchNorm3d(2, affine=False)", [(2, 2, 2, 2, 2)]),
    "InstanceNorm1d": ("InstanceNorm1d(3, affine=True, track_running_stats=True)", [(2, 3, 5)]),
    "InstanceNorm2d": ("InstanceNorm2d(2)", [(2, 2, 3, 3)]),
    "InstanceNorm3d": ("InstanceNorm3d(2, affine=True)", [(1, 2, 2, 3, 2)]),
    "GroupNorm": ("GroupNorm(2, 4)", [(3, 4, 5)]),
    "LayerNorm": ("LayerNorm((3, 4))", [(2, 3, 4)]),
    "RMSNorm": ("RMSNorm(4, eps=1e-5)", [(2, 3, 4)]),
    "LocalResponseNorm": ("LocalResponseNorm(3)", [(2, 5, 3, 3)]),
    "Embedding": ("Embedding(6, 3, padding_idx=1)", [], [("int", 6, (2, 4))]),
    "EmbeddingBag": ("EmbeddingBag(6, 3, mode='max')", [], [("int", 6, (2, 4))]),
    "RNN": ("RNN(3, 4, num_layers=2, nonlinearity='relu')", [(5, 2, 3)]),
    "LSTM": ("LSTM(3, 4, bidirectional=True, batch_first=True)", [(2, 5, 3)]),
    "LSTM_proj": ("LSTM(3, 4, proj_size=2)", [(5, 2, 3)]),
    "GRU": ("GRU(3, 4, num_layers=2)", [(5, 2, 3)]),
    "RNNCell": ("RNNCell(3, 4)", [(2, 3)]),
    "LSTMCell": ("LSTMCell(3, 4)", [(2, 3)]),
    "GRUCell": ("GRUCell(3, 4, bias=False)", [(2, 3)]),
    "MultiheadAttention": ("MultiheadAttention(4, 2)", [(3, 2, 4), (5, 2, 4), (5, 2, 4)]),
    "MultiheadAttention_kdim": ("MultiheadAttention(4, 2, kdim=3, vdim=5, batch_first=True)",
                                [(2, 3, 4), (2, 6, 3), (2, 6, 5)]),
    "TransformerEncoderLayer": ("TransformerEncoderLayer(4, 2, dim_feedforward=8, dropout=0.0)",
                                [(3, 2, 4)]),
    "TransformerDecoderLayer": ("TransformerDecoderLayer(4, 2, dim_feedforward=8, dropout=0.0, "
                                "norm_first=True)", [(3, 2, 4), (5, 2, 4)]),
    "Transformer": ("Transformer(4, 2, 1, 1, dim_feedforward=8, dropout=0.0)",
                    [(3, 2, 4), (5, 2, 4)]),
    "PReLU": ("PReLU(3)", [(2, 3, 4)]),
    "ReLU": ("ReLU()", [(3, 4)]), "ReLU6": ("ReLU6()", [(3, 4)]), "ELU": ("ELU(0.5)", [(3, 4)]),
    "SELU": ("SELU()", [(3, 4)]), "CELU": ("CELU(0.7)", [(3, 4)]), "GELU": ("GELU('tanh')", [(3, 4)]),
    "SiLU": ("SiLU()", [(3, 4)]), "Mish": ("Mish()", [(3, 4)]), "Sigmoid": ("Sigmoid()", [(3, 4)]),
    "Tanh": ("Tanh()", [(3, 4)]), "Softplus": ("Softplus(2.0, 1.0)", [(3, 4)]),
    "Softshrink": ("Softshrink(0.3)", [(3, 4)]), "Hardshrink": ("Hardshrink(0.3)", [(3, 4)]),
    "Hardtanh": ("Hardtanh(-0.5, 0.7)", [(3, 4)]), "Hardsigmoid": ("Hardsigmoid()", [(3, 4)]),
    "Hardswish": ("Hardswish()", [(3, 4)]), "LeakyReLU": ("LeakyReLU(0.2)", [(3, 4)]),
    "LogSigmoid": ("LogSigmoid()", [(3, 4)]), "Softsign": ("Softsign()", [(3, 4)]),
    "Tanhshrink": ("Tanhshrink()", [(3, 4)]), "Threshold": ("Threshold(0.1, 2.0)", [(3, 4)]),
    "GLU": ("GLU(1)", [(3, 4)]), "Softmax": ("Softmax(1)", [(3, 4)]),
    "LogSoftmax": ("LogSoftmax(0)", [(3, 4)]), "Softmin": ("Softmin(1)", [(3, 4)]),
    "Softmax2d": ("Softmax2d()", [(2, 3, 2, 2)]), "RReLU": ("RReLU()", [(3, 4)]),
    "Identity": ("Identity()", [(3, 4)]), "Flatten": ("Flatten()", [(2, 3, 4)]),
    "Unflatten": ("Unflatten(1, (2, 2))", [(3, 4)]),
    "MaxPool1d": ("MaxPool1d(2, stride=1)", [(2, 3, 6)]),
    "MaxPool2d": ("MaxPool2d(3, stride=2, padding=1, ceil_mode=True)", [(1, 2, 5, 6)]),
    "AvgPool1d": ("AvgPool1d(3, stride=2, count_include_pad=False, padding=1)", [(2, 3, 6)]),
    "AvgPool2d": ("AvgPool2d(2, divisor_override=3)", [(1, 2, 4, 4)]),
    "LPPool2d": ("LPPool2d(2, 2)", [(1, 2, 4, 4)]),
    "AdaptiveAvgPool1d": ("AdaptiveAvgPool1d(4)", [(2, 3, 7)]),
    "AdaptiveAvgPool2d": ("AdaptiveAvgPool2d((2, 3))", [(1, 2, 5, 7)]),
    "AdaptiveMaxPool1d": ("AdaptiveMaxPool1d(3)", [(2, 3, 7)]),
    "AdaptiveMaxPool2d": ("AdaptiveMaxPool2d(2)", [(1, 2, 5, 5)]),
    "PixelShuffle": ("PixelShuffle(2)", [(1, 8, 2, 3)]),
    "PixelUnshuffle": ("PixelUnshuffle(2)", [(1, 2, 4, 6)]),
    "Upsample": ("Upsample(scale_factor=2, mode='bilinear', align_corners=False)", [(1, 2, 3, 3)]),
    "UpsamplingNearest2d": ("UpsamplingNearest2d(size=(5, 4))", [(1, 2, 3, 3)]),
    "UpsamplingBilinear2d": ("UpsamplingBilinear2d(scale_factor=2)", [(1, 2, 3, 3)]),
    "ZeroPad2d": ("ZeroPad2d((1, 0, 2, 1))", [(1, 2, 3, 3)]),
    "ConstantPad1d": ("ConstantPad1d(2, 3.5)", [(2, 3, 4)]),
    "ConstantPad3d": ("ConstantPad3d(1, -1.0)", [(1, 1, 2, 2, 2)]),
    "ReflectionPad1d": ("ReflectionPad1d((2, 1))", [(2, 3, 4)]),
    "ReflectionPad2d": ("ReflectionPad2d(1)", [(1, 2, 3, 3)]),
    "ReplicationPad1d": ("ReplicationPad1d(2)", [(2, 3, 4)]),
    "ReplicationPad2d": ("ReplicationPad2d((1, 2, 0, 1))", [(1, 2, 3, 3)]),
    "CircularPad1d": ("CircularPad1d(1)", [(2, 3, 4)]),
    "CircularPad2d": ("CircularPad2d((1, 1, 2, 0))", [(1, 2, 3, 3)]),
    "Fold": ("Fold((4, 5), (2, 2))", [(2, 12, 12)]),
    "Unfold": ("Unfold((2, 3), padding=1, stride=2)", [(2, 3, 4, 5)]),
    "CosineSimilarity": ("CosineSimilarity(dim=1)", [(3, 4), (3, 4)]),
    "PairwiseDistance": ("PairwiseDistance(p=3.0, keepdim=True)", [(3, 4), (3, 4)]),
    "Dropout": ("Dropout(0.3)", [(3, 4)]), "AlphaDropout": ("AlphaDropout(0.2)", [(3, 4)]),
    "MSELoss": ("MSELoss()", [(3, 4), (3, 4)]), "L1Loss": ("L1Loss(reduction='sum')", [(3, 4), (3, 4)]),
    "SmoothL1Loss": ("SmoothL1Loss(beta=0.5)", [(3, 4), (3, 4)]),
    "HuberLoss": ("HuberLoss(delta=0.3)", [(3, 4), (3, 4)]),
    "SoftMarginLoss": ("SoftMarginLoss()", [(3, 4)], [("sign", (3, 4))]),
    "CrossEntropyLoss": ("CrossEntropyLoss(label_smoothing=0.1)", [(3, 5)], [("int", 5, (3,))]),
    "CrossEntropyLoss_2d": ("CrossEntropyLoss(reduction='none')", [(2, 3, 2, 2)],
                            [("int", 3, (2, 2, 2))]),
    "NLLLoss": ("NLLLoss()", [(3, 5)], [("int", 5, (3,))]),
    "BCELoss": ("BCELoss()", [], [("unit", (3, 4)), ("unit", (3, 4))]),
    "BCEWithLogitsLoss": ("BCEWithLogitsLoss()", [(3, 4)], [("unit", (3, 4))]),
    "KLDivLoss": ("KLDivLoss(reduction='batchmean', log_target=True)", [(3, 4), (3, 4)]),
    "PoissonNLLLoss": ("PoissonNLLLoss()", [(3, 4), (3, 4)]),
    "GaussianNLLLoss": ("GaussianNLLLoss()", [(3, 4), (3, 4)], [("unit", (3, 4))]),
    "HingeEmbeddingLoss": ("HingeEmbeddingLoss()", [(3, 4)], [("sign", (3, 4))]),
    "MarginRankingLoss": ("MarginRankingLoss(0.2)", [(5,), (5,)], [("sign", (5,))]),
    "CosineEmbeddingLoss": ("CosineEmbeddingLoss()", [(3, 4), (3, 4)], [("sign", (3,))]),
    "MultiMarginLoss": ("MultiMarginLoss()", [(3, 5)], [("int", 5, (3,))]),
    "MultiLabelSoftMarginLoss": ("MultiLabelSoftMarginLoss()", [(3, 4)], [("int", 2, (3, 4))]),
    "TripletMarginLoss": ("TripletMarginLoss(margin=0.5)", [(3, 4), (3, 4), (3, 4)]),
}
RANDOM = {"Dropout", "AlphaDropout", "RReLU"}
KNOWN: dict = {}  # module -> what still differs (none at present)


def _inputs(L, spec):
    rs = np.random.RandomState(0)
    xs = [L.tensor(rs.randn(*s), dtype=L.float32, requires_grad=True) for s in spec[1]]
    for t in (spec[2] if len(spec) > 2 else []):
        if t[0] == "int":
            xs.append(L.tensor(rs.randint(0, t[1], size=t[2]), dtype=L.int64))
        elif t[0] == "sign":
            xs.append(L.tensor(np.where(rs.rand(*t[1]) > 0.5, 1.0, -1.0), dtype=L.float32))
        else:
            xs.append(L.tensor(rs.uniform(0.05, 0.95, size=t[1]), dtype=L.float32,
                               requires_grad=True))
    return xs


def _flat(o):
    if isinstance(o, (tuple, list)):
        return [y for x in o for y in _flat(x)]
    return [o] if hasattr(o, "detach") else []


def _run(L, name, state):
    spec = S[name]
    L.manual_seed(0)
    m = eval(spec[0], {"__builtins__": {}}, {n: getattr(L.nn, n) for n in dir(L.nn)})
    if state is None:  # PyTorch's side: its weights are the ones used
        with L.no_grad():
            rs = np.random.RandomState(1)
            for p in m.parameters():
                p.copy_(L.tensor(rs.uniform(-0.8, 0.8, size=tuple(p.shape)), dtype=p.dtype))
        state = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    else:
        m.load_state_dict({k: L.tensor(v) for k, v in state.items()})
    out = {"keys": [(k, tuple(v.shape)) for k, v in m.state_dict().items()], "repr": repr(m)}
    for mode in ("eval",) if name in RANDOM else ("train", "eval"):
        m.train(mode == "train")
        xs = _inputs(L, spec)
        ys = _flat(m(*xs))
        out[mode] = [y.detach().numpy().copy() for y in ys]
        diff = [y for y in ys if y.requires_grad]
        if diff:
            ws = [t for t in xs if t.requires_grad] + list(m.parameters())
            rs = np.random.RandomState(2)
            ups = [L.tensor(rs.randn(*y.shape), dtype=y.dtype) for y in diff]
            gs = L.autograd.grad(diff, ws, ups, allow_unused=True)
            out[mode + "_grads"] = [None if g is None else g.numpy().copy() for g in gs]
        out[mode + "_buffers"] = {k: v.detach().numpy().copy() for k, v in m.named_buffers()}
    return out, state


def _same(a, b, what):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), what
        for k in a:
            _same(a[k], b[k], f"{what}.{k}")
    elif isinstance(a, list):
        assert len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{what}[{i}]")
    elif isinstance(a, np.ndarray):
        assert b is not None and a.shape == b.shape and a.dtype == b.dtype, what
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5, err_msg=what)
    else:
        assert a == b, what


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=KNOWN[n])) if n in KNOWN else n
    for n in sorted(S)])
def test_module_matches_torch(name):
    theirs, state = _run(torch, name, None)
    mine, _ = _run(dyngrad, name, state)
    _same(mine, theirs, name)


CONVERSIONS = ["m.to(L.int64)", "m.to(L.bool)", "m.to(L.complex64)", "m.to(L.float64)", "m.half()",
               "m.to('cpu', L.float64)", "m.to(L.ones(1, dtype=L.float64))", "m.type(L.float64)",
               "m.double().float()"]


@pytest.mark.parametrize("expr", CONVERSIONS)
def test_module_conversions_as_torch(expr):
    """Which tensors a conversion changes (floating and complex ones for ``to``, all for
    ``type``), gradients included, its warnings and its refusals."""
    import warnings

    def run(L):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Linear(2, 2), L.nn.BatchNorm1d(2))
        m[0].weight.grad = L.ones(2, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                r = eval(expr, {"m": m, "L": L})
            except Exception as e:  # noqa: BLE001 - compared with PyTorch's
                return type(e).__name__, str(e)
        return (r is m, [str(v.dtype) for v in m.state_dict().values()],
                str(m[0].weight.grad.dtype), type(m[0].weight).__name__,
                [str(x.message) for x in w])
    assert run(dyngrad) == run(torch)


def test_uninitialized_parameter_as_torch():
    def run(L):
        p = L.nn.UninitializedParameter()
        out = [repr(p)]
        try:
            p.shape
        except RuntimeError as e:
            out.append(str(e))
        p.materialize((2, 3))
        q = L.nn.UninitializedParameter(requires_grad=False)
        q.materialize(4, dtype=L.float64)
        return out + [type(p).__name__, tuple(p.shape), p.requires_grad, type(q).__name__,
                      str(q.dtype), q.requires_grad]
    assert run(dyngrad) == run(torch)


def _takes_device(name):
    ctor = S[name][0]
    cls = getattr(dyngrad.nn, ctor.split("(")[0])
    import inspect
    return "device" in inspect.signature(cls.__init__).parameters


@pytest.mark.parametrize("name", sorted(n for n in S if _takes_device(n)))
def test_module_device_argument_is_honoured(name):
    """A module built on another device: PyTorch makes its parameters and buffers there
    (meta) or fails (cuda on a CPU build); dyngrad, CPU only, refuses both rather than silently
    building on the CPU (a module with no tensors is built anywhere, as in PyTorch), and
    device='cpu' builds the module as without it."""
    ctor = S[name][0]
    t = eval(f"L.nn.{ctor[:-1]}, device='meta')", {"L": torch})
    tensors = list(t.parameters()) + list(t.buffers())
    assert all(p.device.type == "meta" for p in tensors)
    for dev in ("meta", "cuda"):
        if tensors:
            with pytest.raises(RuntimeError, match="CPU only"):
                eval(f"L.nn.{ctor[:-1]}, device={dev!r})", {"L": dyngrad})
        else:
            eval(f"L.nn.{ctor[:-1]}, device={dev!r})", {"L": dyngrad})
    m = eval(f"L.nn.{ctor[:-1]}, device='cpu')", {"L": dyngrad})
    assert all(p.device.type == "cpu" for p in m.parameters())
