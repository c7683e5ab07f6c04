"""``Optimizer``: parameter groups, per-parameter state, state dicts, zero_grad."""
from __future__ import annotations

from collections import defaultdict
from copy import deepcopy

from .._tensor import Tensor


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
            import warnings
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error", UserWarning, stacklevel=3)
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
                    p._grad._version[0] += 1

    def step(self, closure=None):
        raise NotImplementedError

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


def _check_lr(lr):
    if isinstance(lr, Tensor):
        lr = lr.item()
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    return lr
