"""Modules as functions of their parameters: ``functional_call`` runs a module with given
tensors in place of its parameters and buffers (so transforms can differentiate or batch
over them); ``stack_module_state`` stacks the states of several like modules (ensembles)."""
from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

from .._tensor import Tensor


def _untie(module, pb: dict) -> dict:
    """Give every name tied to a given tensor (shared parameters) the given value."""
    named: dict = {}
    named.update(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    groups: dict = {}
    for name, t in named.items():
        groups.setdefault(id(t), set()).add(name)
    tied = {n: g for g in groups.values() if len(g) > 1 for n in g}
    given = {n for n in pb if n in tied}
    for n in given:
        names = tied[n]
        if len(names & given) > 1 and len({id(pb[m]) for m in names if m in pb}) != 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             f"which are tied. Consider using tie_weights=False")
    out = dict(pb)
    for n in given:
        for m in tied[n]:
            out[m] = pb[n]
    return out


def _owner(module, name):
    *path, leaf = name.split(".")
    mod = module
    for p in path:
        mod = getattr(mod, p, None)
        if mod is None:
            return None, leaf
    return mod, leaf


def _swap(module, name, value):
    """Put ``value`` at ``name``; returns what was there (None when nothing: not restored)."""
    mod, leaf = _owner(module, name)
    if mod is None:
        return None
    for k in ("_parameters", "_buffers"):
        d = mod.__dict__.get(k)
        if d is not None and leaf in d:
            old = d[leaf]
            d[leaf] = value
            return (d, leaf, old)
    if leaf in mod.__dict__:
        old = mod.__dict__[leaf]
        mod.__dict__[leaf] = value
        return (mod.__dict__, leaf, old)
    return None


@contextlib.contextmanager
def _reparametrize(module, pb, tie_weights, strict):
    if tie_weights:
        pb = _untie(module, pb)
    if strict:
        valid = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(valid - set(pb))
        unexpected = sorted(set(pb) - valid)
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(
                module._get_name(), "\n\t".join(msgs)))
    undo = []
    try:
        for name, value in pb.items():
            r = _swap(module, name, value)
            if r is not None:
                undo.append(r)
        yield
    finally:
        for d, leaf, old in reversed(undo):
            d[leaf] = old


def functional_call(module, parameter_and_buffer_dicts: dict | Sequence[dict],
                    args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the given tensors in place of its parameters and
    buffers (by state-dict name), as torch.func.functional_call; the module is unchanged
    afterwards."""
    if isinstance(parameter_and_buffer_dicts, dict):
        pb = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, Sequence):
        if not all(isinstance(d, dict) for d in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be "
                             "dictionaries")
        counts: dict = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                counts[k] = counts.get(k, 0) + 1
        repeated = [k for k, n in counts.items() if n > 1]
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of "
                             f"functional call is ambiguous")
        pb = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, pb, tie_weights, strict):
        return module(*args, **kwargs)


def _stacked_leaf(tensors, name):
    from .. import stack
    all_rg = all(t.requires_grad for t in tensors)
    none_rg = all(not t.requires_grad for t in tensors)
    if not all_rg and not none_rg:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    r = stack(tensors)
    if all_rg:
        r = r.detach().requires_grad_()
    return r


def stack_module_state(models) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """The parameters and buffers of like modules stacked along a new leading dimension
    (``(params, buffers)``), for ``vmap`` over an ensemble with ``functional_call``."""
    if len(models) == 0:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    t0 = type(models[0])
    if not all(type(m) is t0 for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_p = [dict(m.named_parameters()) for m in models]
    params = {k: _stacked_leaf(tuple(p[k] for p in all_p), k) for k in all_p[0]}
    all_b = [dict(m.named_buffers()) for m in models]
    buffers = {k: _stacked_leaf(tuple(b[k] for b in all_b), k) for k in all_b[0]}
    return params, buffers


__all__ = ["functional_call", "stack_module_state"]
