"""``Optimizer``: parameter groups, per-parameter state, state dicts, zero_grad."""
from __future__ import annotations

from collections import defaultdict
from copy import deepcopy

import numpy as np

from .._tensor import Tensor
from .. import _warn
from .. import _dtype as _DT


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: holds ``param_groups`` (dicts with 'params' and hyper-parameters) and
    ``state`` (per parameter).  Subclasses implement ``step``."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state = defaultdict(dict)
        self.param_groups = []
        self._step_hooks = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + params.type())
        if isinstance(params, dict):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got dict (wrap a param group dict in a list)")
        try:
            param_groups = list(params)
        except TypeError:
            raise TypeError(f"params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}") from None
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for g in param_groups:
            self.add_param_group(g)
        if any(g.get("differentiable") for g in self.param_groups):
            # the update would have to be recorded for autograd; refused rather than ignored
            raise NotImplementedError("differentiable=True is not supported by dyngrad's "
                                      "optimizers: their updates are not recorded for autograd")

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own hyper-parameters (defaults fill the rest)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but "
                            "the ordering of tensors in sets will change between runs. Please use a "
                            "list instead.")
        else:
            params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if p._grad_fn is not None:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group)
        group["params"] = params
        for k, v in self.defaults.items():
            if v is required and k not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization "
                                 f"parameter {k}")
            group.setdefault(k, v)
        existing = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in existing for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        if len({id(p) for p in params}) != len(params):
            _warn.warn("optimizer contains a parameter group with duplicate parameters; in "
                       "future, this will cause an error; see "
                       "github.com/pytorch/pytorch/issues/40967 for more information", UserWarning)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all optimized parameters (to None by default)."""
        for g in self.param_groups:
            for p in g["params"]:
                if p._grad is None:
                    continue
                if set_to_none:
                    p._grad = None
                else:
                    if p._grad._grad_fn is not None:
                        p._grad = p._grad.detach()
                    p._grad._data[...] = 0
                    p._grad._vc[0] += 1

    def step(self, closure=None):
        raise NotImplementedError

    def _grads(self, group):
        """Yield ``(p, d, g)`` for each parameter of ``group`` that has a gradient: its data and
        its gradient's data (negated under ``maximize``).  The parameter's version is counted up
        once the caller has updated ``d`` in place."""
        for p in group["params"]:
            if p._grad is None:
                continue
            g = p._grad._data
            if group["maximize"]:
                g = -g
            yield p, p._data, g
            p._vc[0] += 1

    def _updates(self, group, buffers=(), scalars=None, init=True, items=None):
        """Yield ``(p, d, f, g, st, step)`` for each parameter of ``group`` that has a gradient,
        as ``_grads`` does, with ``f`` the data's scalar type and ``st`` its state.  On first
        use (when ``init``) the state gets a float32 0-d ``step``, then the float32 0-d
        ``scalars`` (name: initial value) and zero ``buffers`` shaped as the parameter, in that
        order.  ``step`` is counted up first and handed over as a float.  ``items``: the
        ``(p, d, g)`` to update in place of ``_grads(group)``'s (a compiled step's arrays)."""
        for p, d, g in (self._grads(group) if items is None else items):
            st = self.state[p]
            if init and not st:
                st["step"] = Tensor._make(np.asarray(0.0, np.float32))
                for name, value in (scalars or {}).items():
                    st[name] = Tensor._make(np.asarray(value, np.float32))
                for name in buffers:
                    st[name] = Tensor._make(np.zeros_like(d))
            st["step"]._data = np.asarray(st["step"]._data + 1, np.float32)
            yield p, d, d.dtype.type, g, st, float(st["step"]._data)

    def _stepped(self, loss):
        """End of ``step``: run the step hooks and hand back the closure's loss."""
        for h in self._step_hooks:
            h(self, (), {})
        return loss

    def _closure(self, closure):
        if closure is None:
            return None
        from ..autograd.grad_mode import enable_grad
        with enable_grad():
            return closure()

    def state_dict(self) -> dict:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [indices]}]}``."""
        index = {}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            ids = []
            for p in g["params"]:
                if id(p) not in index:
                    index[id(p)] = len(index)
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        state = {}
        for g in self.param_groups:
            for p in g["params"]:
                if p in self.state and self.state[p]:
                    state[index[id(p)]] = {k: (v.clone() if isinstance(v, Tensor) else v)
                                           for k, v in self.state[p].items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore state saved by ``state_dict`` (checked first; nothing changes on error)."""
        groups = state_dict["param_groups"]  # PyTorch's KeyError when an entry is missing
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for mine, theirs in zip(self.param_groups, groups):
            if len(mine["params"]) != len(theirs["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't match "
                                 "the size of optimizer's group")
        if "state" not in state_dict:
            raise KeyError("state")
        id_map = {}
        for mine, theirs in zip(self.param_groups, groups):
            for p, i in zip(mine["params"], theirs["params"]):
                id_map[i] = p
        for k, st in state_dict["state"].items():
            p = id_map.get(int(k))
            if p is None:
                continue
            for name, v in st.items():
                if isinstance(v, Tensor) and name != "step" and v._data.shape != p._data.shape \
                        and v._data.ndim:
                    raise ValueError(f"optimizer state '{name}' of parameter {k} has shape "
                                     f"{list(v.shape)}, expected {list(p.shape)}")
        new_state = defaultdict(dict)
        for k, st in state_dict["state"].items():
            p = id_map.get(int(k))
            if p is not None:
                new_state[p] = {n: (v.clone().to(p.dtype) if isinstance(v, Tensor) and
                                    v.is_floating_point() and n != "step" else
                                    (v.clone() if isinstance(v, Tensor) else deepcopy(v)))
                                for n, v in st.items()}
        self.state = new_state
        for mine, theirs in zip(self.param_groups, groups):
            for key, v in theirs.items():
                if key != "params":
                    mine[key] = v

    def register_step_post_hook(self, hook):
        self._step_hooks.append(hook)

        class H:
            def remove(_):
                self._step_hooks.remove(hook)

        return H()

    def __repr__(self):
        s = type(self).__name__ + " ("
        for i, g in enumerate(self.param_groups):
            s += f"\nParameter Group {i}"
            for k in sorted(g):
                if k != "params":
                    s += f"\n    {k}: {g[k]}"
        return s + "\n)"

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__.update(state)


def _check_lr(lr, one_element=False):
    if one_element and isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if isinstance(lr, Tensor):
        lr = lr.item()
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    return lr


def _check_adam_args(eps, betas, weight_decay):
    """The Adam family's checks of ``eps``, ``betas`` and ``weight_decay``, in PyTorch's order."""
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _weight_decay(d, g, wd, lr=None, decoupled=False):
    """PyTorch's weight-decay term: the gradient plus ``wd * d`` or, decoupled, ``d`` scaled by
    ``1 - lr * wd`` in place.  Returns the gradient to use."""
    if wd != 0:
        if decoupled:
            d *= d.dtype.type(1 - lr * wd)
        else:
            g = g + d.dtype.type(wd) * d
    return g


def _lerp_(m, g, beta, f):
    """``m.lerp_(g, 1 - beta)`` as PyTorch computes it on either side of a weight of 0.5, with
    the weights as scalars of type ``f`` (the parameter's)."""
    if 1 - beta < 0.5:
        m += (g - m) * f(1 - beta)
    else:
        m[...] = g - (g - m) * f(beta)


_CHUNK = 1 << 15  # elements per pass: a chunk of both operands stays in the core's cache


def _sub_scaled_(d, g, lr) -> None:
    """``d -= lr * g`` in place, the same arithmetic and rounding, but through a cache-sized
    scratch chunk for large arrays: the full-size temporary ``lr * g`` would be written and
    read back through memory (about half of an SGD step's time on a BLAS-sized model)."""
    if d.dtype == _DT.BF16:  # PyTorch's add_(g, alpha=-lr): alpha in bfloat16, one rounding
        d[...] = d.astype(np.float32) - np.float32(_DT.BF16.type(lr)) * g.astype(np.float32)
        return
    n = d.size
    if (n < 4 * _CHUNK or d.dtype not in _DT.FLOATING or g.dtype != d.dtype or g.shape != d.shape
            or not (d.flags.c_contiguous and g.flags.c_contiguous)):
        d -= d.dtype.type(lr) * g if d.dtype in _DT.FLOATING else lr * g
        return
    lr = d.dtype.type(lr)
    tmp = np.empty(_CHUNK, d.dtype)  # per call: steps may run in several threads
    fd, fg = d.reshape(-1), g.reshape(-1)
    for i in range(0, n, _CHUNK):
        j = min(i + _CHUNK, n)
        t = tmp[:j - i]
        np.multiply(fg[i:j], lr, out=t)
        np.subtract(fd[i:j], t, out=fd[i:j])
