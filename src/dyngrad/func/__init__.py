"""PyTorch's composable function transforms (``torch.func``) on dyngrad's tape engine:
``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``, ``jacrev``, ``jacfwd``,
``hessian`` and ``vmap``, which nest and compose in any order, plus ``functional_call`` and
``stack_module_state`` to use them on modules."""
from __future__ import annotations

from ._vmap import vmap
from ._transforms import grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd, hessian
from ._functional_call import functional_call, stack_module_state
from . import _rules, _function  # noqa: F401 - batching rules, autograd.Function support

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "functional_call", "stack_module_state"]
