"""``nn.utils.weight_norm`` / ``remove_weight_norm``: PyTorch's hook-based weight normalisation
(deprecated there in favour of ``parametrizations.weight_norm``, with the same FutureWarning):
``name`` becomes ``name_g * name_v / ||name_v||``, recomputed by a forward pre-hook."""
from __future__ import annotations


from ..parameter import Parameter, UninitializedParameter
from .parametrizations import _norm_except_dim
from ... import _warn

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    def __init__(self, name, dim):
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module):
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm_except_dim(v, self.dim))

    @staticmethod
    def apply(module, name, dim):
        _warn.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                   "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same "
                                   f"parameter {name}")
        if dim is None:
            dim = -1
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized "
                             "parameters. Make sure to run the dummy forward before applying "
                             "weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(_norm_except_dim(weight.detach(), dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as magnitude ``<name>_g`` times direction ``<name>_v``."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
