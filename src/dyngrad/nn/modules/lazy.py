"""``LazyModuleMixin``: modules whose parameter shapes are read from their first input."""
from __future__ import annotations

import itertools
from typing import Any, Literal, Union

from ..parameter import is_lazy

__all__ = ["LazyModuleMixin"]


class LazyModuleMixin:
    """A mixin for modules that create their parameters on the first call: until then they
    hold ``UninitializedParameter``/``UninitializedBuffer``; a forward pre-hook calls
    ``initialize_parameters(*args, **kwargs)`` and the module then becomes ``cls_to_become``.

    >>> import dyngrad as torch
    >>> m = torch.nn.LazyLinear(2)
    >>> _ = m(torch.ones(1, 3))
    >>> m
    Linear(in_features=3, out_features=2, bias=True)
    """

    cls_to_become: type[Any] | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        """As ``Module``'s, but uninitialized tensors are saved as they are (not detached)."""
        for name, param in self._parameters.items():
            if param is not None:
                if not (is_lazy(param) or keep_vars):
                    param = param.detach()
                destination[prefix + name] = param
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                if not (is_lazy(buf) or keep_vars):
                    buf = buf.detach()
                destination[prefix + name] = buf

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs) -> None:
        """Load pre-hook: an uninitialized tensor given a real one takes that one's shape."""
        from ...autograd.grad_mode import no_grad
        for name, param in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and param is not None:
                input_param = state_dict[key]
                if is_lazy(param) and not is_lazy(input_param):
                    with no_grad():
                        param.materialize(input_param.shape)

    def initialize_parameters(self, *args, **kwargs) -> None:
        """Create the parameters from the first input (each lazy module defines it)."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module is still uninitialized."""
        for param in itertools.chain(self._parameters.values(), self._buffers.values()):
            if is_lazy(param):
                return True
        return False

    def _infer_parameters(self, module, args, kwargs=None) -> None:
        """Forward pre-hook: initialize, then drop the hooks and become ``cls_to_become``."""
        kwargs = kwargs if kwargs else {}
        module.initialize_parameters(*args, **kwargs)
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def __getstate__(self):
        # the two hooks are bound methods of the module: pickled as a flag, made again on load
        state = dict(self.__dict__)
        hooks = [state.pop(k, None) for k in ("_initialize_hook", "_load_hook")]
        if hooks[0] is not None:
            for store, h in (("_forward_pre_hooks", hooks[0]),
                             ("_forward_pre_hooks_with_kwargs", hooks[0]),
                             ("_load_state_dict_pre_hooks", hooks[1])):
                state[store] = type(state[store])(
                    (k, v) for k, v in state[store].items() if k != h.id)
            state["_lazy_hooks_pending"] = True
        return state

    def __setstate__(self, state) -> None:
        pending = state.pop("_lazy_hooks_pending", False)
        self.__dict__.update(state)
        if pending:
            self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
            self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                                   with_kwargs=True)

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with "
                           "`DataParallel`. Run a dummy forward pass to correctly initialize "
                           "the modules")


def _size_t(n: int):
    """PyTorch's ``_size_<n>_t`` annotation: an int or a tuple of ``n`` ints."""
    return Union[int, tuple[(int,) * n]]


_PADDING_MODE = Literal["zeros", "reflect", "replicate", "circular"]


def _annotate(cls: type, **annotations) -> type:
    """Give ``cls.__init__`` PyTorch's annotation objects (the module is written with postponed
    string annotations), so ``inspect.signature`` equals PyTorch's."""
    cls.__init__.__annotations__ = {**annotations, "return": None}
    return cls
