"""``nn.utils.prune`` as PyTorch's: pruning a tensor ``name`` of a module moves the parameter to
``name_orig``, registers a ``name_mask`` buffer, sets ``module.name = name_mask * name_orig``
and keeps it up to date with a forward pre-hook (the pruning method itself). Pruning the
same tensor again combines the masks in a ``PruningContainer``; ``remove`` makes the pruned
value the parameter again.

Masks are computed with NumPy from the tensors' values (they carry no gradient); the random
methods draw from dyngrad's generator.
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

import numpy as np

from ..._tensor import Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


def _np(t):
    return t._data if isinstance(t, Tensor) else np.asarray(t)


def _t(a):
    return Tensor._make(np.ascontiguousarray(a))


def _rand(n):
    from ..._factories import rand
    from ..._dtype import float32
    return rand(n, dtype=float32)._data


class BasePruningMethod(ABC):
    """A pruning method: ``compute_mask`` gives the new mask; applied as a forward pre-hook."""

    _tensor_name: str

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (same shape as ``t``) combining ``default_mask`` with this pruning."""

    def apply_mask(self, module):
        """``name_mask * name_orig`` (differentiable in ``name_orig``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` in place with this method (combined with earlier ones)."""
        def _get_composite_method(cls, module, name, *args, **kwargs):
            old_method = None
            found = 0
            hooks_to_remove = []
            for k, hook in module._forward_pre_hooks.items():
                if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                    old_method = hook
                    hooks_to_remove.append(k)
                    found += 1
            if found > 1:
                raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor "
                                     f"{name} of module {module}. Use a PruningContainer.")
            for k in hooks_to_remove:
                del module._forward_pre_hooks[k]
            method = cls(*args, **kwargs)
            method._tensor_name = name
            if old_method is not None:
                if isinstance(old_method, PruningContainer):
                    old_method.add_pruning_method(method)
                    method = old_method
                elif isinstance(old_method, BasePruningMethod):
                    container = PruningContainer(old_method)
                    container.add_pruning_method(method)
                    method = container
            return method

        method = _get_composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter "
                                     f"{name} of {module}, got {importance_scores.shape} vs "
                                     f"{orig.shape}")
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = _t(np.ones_like(_np(orig)))
        else:
            default_mask = _t(np.array(_np(getattr(module, name + "_mask"))))
        try:
            mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception as e:
            if not isinstance(method, PruningContainer):
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise e
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times its mask (without touching any module)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor t, "
                                     f"got {importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        if default_mask is None:
            default_mask = _t(np.ones_like(_np(t)))
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruned value the parameter ``name`` again (drops ``_orig``/``_mask``)."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 f"removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig._data = np.array(weight._data)
        orig._vc[0] += 1
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The sequence of pruning methods applied to one tensor (the last acting on what the
    earlier ones kept)."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if not isinstance(args, Iterable):
            self._tensor_name = args._tensor_name
            self.add_pruning_method(args)
        elif len(args) == 1:
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        elif method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on "
                             f"the parameter named '{self._tensor_name}' to PruningContainer "
                             f"{self}." + f" Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        method = self._pruning_methods[-1]
        tv = _np(t)
        mask = _np(default_mask).astype(tv.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have '
                                     'the attribute `dim` defined.')
            n_dims = tv.ndim
            dim = method.dim
            if dim < 0:
                dim = n_dims + dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep = mask.sum(axis=tuple(d for d in range(n_dims) if d != dim)) != 0
            slc = [slice(None)] * n_dims
            slc[dim] = keep
            slc = tuple(slc)
        elif method.PRUNING_TYPE == "global":
            slc = tuple([slice(None)] * tv.ndim)
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        new_mask = np.array(mask)
        partial = method.compute_mask(_t(tv[slc]), default_mask=_t(mask[slc]))
        new_mask[slc] = _np(partial).astype(new_mask.dtype)
        return _t(new_mask)


class Identity(BasePruningMethod):
    """Prunes nothing: the mask is all ones."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class _UnstructuredAmount(BasePruningMethod):
    """Prunes ``amount`` (a fraction or a count) of the entries, those first in the (stable)
    order of the keys ``_keys`` gives (only asked for when something is pruned)."""
    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def _keys(self, t, size):
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        size = int(np.prod(t.shape))
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        mask = np.array(_np(default_mask))
        if k != 0:
            idx = np.argsort(self._keys(t, size), kind="stable")[:k]
            mask.reshape(-1)[idx] = 0
        return _t(mask)


class RandomUnstructured(_UnstructuredAmount):
    """Prunes ``amount`` (a fraction or a count) of the entries, chosen at random."""

    def _keys(self, t, size):
        return -_rand(size)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_UnstructuredAmount):
    """Prunes the ``amount`` entries of smallest absolute value."""

    def _keys(self, t, size):
        return np.abs(_np(t)).reshape(-1)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim, keep):
    mask = np.zeros(tuple(t.shape), _np(t).dtype)
    slc = [slice(None)] * mask.ndim
    slc[dim] = keep
    mask[tuple(slc)] = 1
    return mask


class _StructuredAmount(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim``; ``_keep`` says which channels stay."""
    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def _keep(self, t, size, k):
        raise NotImplementedError

    def compute_mask(self, t, default_mask):
        _validate_structured_pruning(t)
        _validate_pruning_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _compute_nparams_toprune(self.amount, size)
        _validate_pruning_amount(k, size)
        if k == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, self._keep(t, size, k))
        return _t(mask * _np(default_mask).astype(mask.dtype))


class RandomStructured(_StructuredAmount):
    """Prunes ``amount`` of the channels along ``dim``, chosen at random."""

    def _keep(self, t, size, k):
        prob = _rand(size)
        threshold = np.sort(prob)[k - 1]
        return prob > threshold

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_StructuredAmount):
    """Prunes the ``amount`` channels along ``dim`` of smallest ``n``-norm."""

    def __init__(self, amount, n, dim=-1):
        super().__init__(amount, dim)
        self.n = n

    def _keep(self, t, size, k):
        norm = _compute_norm(t, self.n, self.dim)
        keep_idx = np.argsort(-norm, kind="stable")[:size - k]
        keep = np.zeros(size, bool)
        keep[keep_idx] = True
        return keep

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given ``mask`` is zero."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match "
                                 f"self.mask shape {self.mask.shape}")
        d = _np(default_mask)
        return _t(d * _np(self.mask).astype(d.dtype))

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Register the pruning reparametrization of ``name`` without pruning anything."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the ``(module, name)`` tensors together, as if they were one vector."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = np.concatenate([_np(importance_scores.get((m, n), getattr(m, n))).reshape(-1)
                             for m, n in parameters])
    default_mask = np.concatenate([
        _np(getattr(m, n + "_mask")).reshape(-1) if hasattr(m, n + "_mask")
        else np.ones(int(np.prod(getattr(m, n).shape)), _np(getattr(m, n)).dtype)
        for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = _np(container.compute_mask(_t(scores), _t(default_mask)))
    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num = int(np.prod(param.shape))
        custom_from_mask(module, name, mask=_t(final_mask[pointer:pointer + num]
                                              .reshape(tuple(param.shape))))
        pointer += num


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Make the pruning of ``name`` permanent: ``name`` is a parameter holding the pruned
    values, ``name_orig``/``name_mask`` and the hook are gone."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module):
    """Whether any submodule of ``module`` has a pruning hook."""
    for _, submodule in module.named_modules():
        for hook in submodule._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False


def _validate_pruning_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={tensor_size}")


def _validate_structured_pruning(t):
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim):
    if dim >= len(t.shape):
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """The ``n``-norm of each slice of ``t`` along ``dim``."""
    a = _np(t)
    dim = dim % a.ndim
    flat = np.moveaxis(a, dim, 0).reshape(a.shape[dim], -1).astype(np.float64)
    if n == "fro":
        others = [d for d in range(a.ndim) if d != dim]
        if len(others) != 2:  # PyTorch's norm takes 'fro' over a list of dims as a matrix norm
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got "
                               + " ".join(map(str, others)))
        n = 2
    return np.linalg.norm(flat, ord=n, axis=1)
