"""Activation modules: thin wrappers over ``nn.functional`` with PyTorch's reprs."""
from __future__ import annotations

from ... import _factories
from .. import functional as F
from ..parameter import Parameter
from .module import Module


def _simple(name, fn_name, doc, repr_fmt=None, fixed=None, **defaults):
    """A module whose forward is ``F.<fn_name>(input, **its settings)``; ``repr_fmt(self)``
    gives the extra repr (default: every setting as ``k=v``, inplace only when True)."""
    params = list(defaults)
    fixed = fixed or {}

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        vals = dict(defaults)
        if len(args) > len(params):
            raise TypeError(f"{name}.__init__() takes {len(params) + 1} positional arguments but "
                            f"{len(args) + 1} were given")
        for k, v in zip(params, args):
            vals[k] = v
        for k, v in kwargs.items():
            if k not in vals:
                raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{k}'")
            vals[k] = v
        for k, v in vals.items():
            setattr(self, k, v)

    def forward(self, input):
        fn = getattr(F, fn_name)
        kw = {k: getattr(self, k) for k in params}
        kw.update(fixed)
        return fn(input, **kw)

    def extra_repr(self):
        if repr_fmt is not None:
            return repr_fmt(self)
        parts = []
        for k in params:
            v = getattr(self, k)
            if k == "inplace":
                if v:
                    parts.append("inplace=True")
                continue
            parts.append(f"{k}={v!r}" if isinstance(v, str) else f"{k}={v}")
        return ", ".join(parts)

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr, "__doc__": doc,
                                  "__module__": __name__})


def _inpl(self):
    return ", inplace=True" if self.inplace else ""


ReLU = _simple("ReLU", "relu", "max(0, x) elementwise.", inplace=False)
ReLU6 = _simple("ReLU6", "relu6", "min(max(0, x), 6) elementwise.",
                lambda s: "inplace=True" if s.inplace else "", inplace=False)
LeakyReLU = _simple("LeakyReLU", "leaky_relu", "x if x > 0 else negative_slope * x.",
                    lambda s: f"negative_slope={s.negative_slope}{_inpl(s)}",
                    negative_slope=0.01, inplace=False)
ELU = _simple("ELU", "elu", "x if x > 0 else alpha * (exp(x) - 1).",
              lambda s: f"alpha={s.alpha}{_inpl(s)}", alpha=1.0, inplace=False)
SELU = _simple("SELU", "selu", "Scaled ELU with the self-normalising constants.",
               lambda s: "inplace=True" if s.inplace else "", inplace=False)
CELU = _simple("CELU", "celu", "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).",
               lambda s: f"alpha={s.alpha}{_inpl(s)}", alpha=1.0, inplace=False)
GELU = _simple("GELU", "gelu", "x * Phi(x) (or its tanh approximation).",
               lambda s: f"approximate={s.approximate!r}", approximate="none")
SiLU = _simple("SiLU", "silu", "x * sigmoid(x).", lambda s: "inplace=True" if s.inplace else "",
               inplace=False)
Mish = _simple("Mish", "mish", "x * tanh(softplus(x)).",
               lambda s: "inplace=True" if s.inplace else "", inplace=False)
Softplus = _simple("Softplus", "softplus", "log(1 + exp(beta x)) / beta.",
                   lambda s: f"beta={s.beta}, threshold={s.threshold}", beta=1.0, threshold=20.0)
Hardtanh = _simple("Hardtanh", "hardtanh", "Clamp to [min_val, max_val].",
                   lambda s: f"min_val={s.min_val}, max_val={s.max_val}{_inpl(s)}",
                   min_val=-1.0, max_val=1.0, inplace=False)
Hardsigmoid = _simple("Hardsigmoid", "hardsigmoid", "clamp(x / 6 + 1/2, 0, 1).",
                      lambda s: "inplace=True" if s.inplace else "", inplace=False)
Hardswish = _simple("Hardswish", "hardswish", "x * hardsigmoid(x).",
                    lambda s: "inplace=True" if s.inplace else "", inplace=False)
LogSigmoid = _simple("LogSigmoid", "logsigmoid", "log(sigmoid(x)).")
Softsign = _simple("Softsign", "softsign", "x / (1 + |x|).")
Tanhshrink = _simple("Tanhshrink", "tanhshrink", "x - tanh(x).")
Softshrink = _simple("Softshrink", "softshrink", "Shrink towards zero by lambd.",
                     lambda s: f"{s.lambd}", lambd=0.5)
Hardshrink = _simple("Hardshrink", "hardshrink", "Zero where |x| <= lambd.",
                     lambda s: f"{s.lambd}", lambd=0.5)
Tanh = _simple("Tanh", "tanh", "Hyperbolic tangent elementwise.")
Sigmoid = _simple("Sigmoid", "sigmoid", "1 / (1 + exp(-x)) elementwise.")
Softmax = _simple("Softmax", "softmax", "Softmax along ``dim``.", dim=None)
LogSoftmax = _simple("LogSoftmax", "log_softmax", "Log-softmax along ``dim``.", dim=None)
Softmin = _simple("Softmin", "softmin", "softmax(-x) along ``dim``.", dim=None)
Threshold = _simple("Threshold", "threshold", "x if x > threshold else value.",
                    lambda s: f"threshold={s.threshold}, value={s.value}{_inpl(s)}",
                    threshold=None, value=None, inplace=False)
GLU = _simple("GLU", "glu", "a * sigmoid(b) for the two halves of ``dim``.", dim=-1)
RReLU = _simple("RReLU", "rrelu", "Leaky ReLU with a random slope in training.",
                lambda s: f"lower={s.lower}, upper={s.upper}{_inpl(s)}",
                lower=1. / 8, upper=1. / 3, inplace=False)


def _rrelu_forward(self, input):
    return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


RReLU.forward = _rrelu_forward  # random slopes in training mode, as PyTorch's


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of 3-d or 4-d input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             f"instead")
        return F.softmax(input, -3, _stacklevel=5)


class PReLU(Module):
    """x if x > 0 else a * x, with a learnable slope (one, or one per channel)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_factories.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        self.weight.data.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


def _rrelu_forward(self, input):
    return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


RReLU.forward = _rrelu_forward


# PyTorch defines MultiheadAttention in torch.nn.modules.activation (checkpoints' allowlists
# name it there); dyngrad's lives with the transformer layers that use it: the same class
from .transformer import MultiheadAttention  # noqa: E402,F401
