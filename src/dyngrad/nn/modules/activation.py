"""Activation modules: thin wrappers over ``nn.functional``."""
from __future__ import annotations

from .. import functional as F
from .module import Module


def _simple(name, fn_name, doc, **defaults):
    """A module whose forward is ``F.<fn_name>(input, **its settings)``."""
    params = list(defaults)

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        vals = dict(defaults)
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
        return fn(input, **{k: getattr(self, k) for k in params if k != "inplace"})

    def extra_repr(self):
        parts = []
        for k in params:
            v = getattr(self, k)
            if k == "inplace":
                if v:
                    parts.append("inplace=True")
                continue
            parts.append(f"{k}={v}")
        return ", ".join(parts)

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr, "__doc__": doc,
                                  "__module__": __name__})


ReLU = _simple("ReLU", "relu", "max(0, x) elementwise.", inplace=False)
Tanh = _simple("Tanh", "tanh", "Hyperbolic tangent elementwise.")
Sigmoid = _simple("Sigmoid", "sigmoid", "1 / (1 + exp(-x)) elementwise.")
Softmax = _simple("Softmax", "softmax", "Softmax along ``dim``.", dim=None)
LogSoftmax = _simple("LogSoftmax", "log_softmax", "Log-softmax along ``dim``.", dim=None)
