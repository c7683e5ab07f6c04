"""``vmap``: a function of one sample run once on a whole batch (see ``_batched``)."""
from __future__ import annotations

import functools
from typing import Any, Callable

from .._tensor import Tensor, _dim
from . import _batched as B
from ._pytree import LEAF, TreeSpec, tree_flatten, tree_unflatten
from .. import _warn


def _name(func) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _broadcast_to_and_flatten(tree, spec: TreeSpec):
    """``tree`` (a prefix of ``spec``'s structure) with each leaf repeated over the subtree
    it stands for; None when the structures do not match."""
    out: list = []

    def go(t, s):
        if not isinstance(t, (tuple, list, dict)):
            out.extend([t] * s.num_leaves)
            return True
        if s.type is None or type(t) is not s.type and not (
                isinstance(t, tuple) and issubclass(s.type, tuple)):
            return False
        if s.type is dict:
            if set(t) != set(s.context):
                return False
            return all(go(t[k], c) for k, c in zip(s.context, s.children))
        if len(t) != len(s.children):
            return False
        return all(go(a, c) for a, c in zip(t, s.children))
    return out if go(tree, spec) else None


def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _check_out_dims(out_dims, func):
    if isinstance(out_dims, int) or out_dims is None:
        return
    leaves, _ = tree_flatten(out_dims)
    for x in leaves:
        if not (isinstance(x, int) or x is None):
            raise ValueError(
                f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                f"None or a python collection of ints representing where in the outputs the "
                f"vmapped dimension should appear.")


def _process_inputs(in_dims, args, func):
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected "
                         f"`in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if len(args) == 0:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add "
                         f"inputs, or you are trying to vmap over a function with no inputs. "
                         f"The latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_in = _broadcast_to_and_flatten(in_dims, spec)
    if flat_in is None:
        raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): in_dims is "
                         f"not compatible with the structure of `inputs`. in_dims has structure "
                         f"{tree_flatten(in_dims)[1]} but inputs has structure {spec}.")
    for i, (arg, d) in enumerate(zip(flat_args, flat_in)):
        if not isinstance(d, int) and d is not None:
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but in_dim must be either an integer "
                             f"dimension or None.")
        if isinstance(d, int) and not isinstance(arg, Tensor):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for an input but the input is of type {type(arg)}. We "
                             f"cannot vmap over non-Tensor arguments, please use None as the "
                             f"respective in_dim")
        if d is not None and (d < -arg.dim() or d >= arg.dim()):
            raise ValueError(f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): Got "
                             f"in_dim={d} for some input, but that input is a Tensor of "
                             f"dimensionality {arg.dim()} so expected in_dim to satisfy "
                             f"-{arg.dim()} <= in_dim < {arg.dim()}.")
        if d is not None and d < 0:
            flat_in[i] = d % arg.dim()
    return flat_in, flat_args, spec


def _batch_size(flat_in, flat_args):
    sizes = [a.size(d) for d, a in zip(flat_in, flat_args) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _add_batch_dim(x, d, level):
    phys, levels = B.unwrap(x)
    nb = len(levels)
    if d + nb != nb:
        phys = phys.movedim(d + nb, nb)
    return B.wrap(phys, levels + (level,))


def _remove_batch_dim(name, out, level, size, od):
    if od is None:
        if isinstance(out, Tensor) and B.is_batched(out) and level in out._levels:
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                             f"when out_dim is None")
        return out
    if not isinstance(out, Tensor):
        raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                         f"{type(out)}. Did you mean to set out_dims= to None for output?")
    phys, levels = B.unwrap(out)
    if level not in levels:
        # not batched at this level: every sample gets the same value
        nb = len(levels)
        lr = phys.ndim - nb
        od_n = _dim(od, lr + 1)
        p = phys.unsqueeze(nb + od_n)
        shape = list(p.shape)
        shape[nb + od_n] = size
        return B.wrap(p.expand(*shape), levels)
    pos = levels.index(level)
    rest = levels[:pos] + levels[pos + 1:]
    nb = len(rest)
    lr = phys.ndim - len(levels)
    od_n = _dim(od, lr + 1)
    if pos != nb + od_n:
        phys = phys.movedim(pos, nb + od_n)
    return B.wrap(phys, rest)


def _unwrap_outputs(outs, out_dims, level, size, func):
    flat, spec = tree_flatten(outs)
    name = _name(func)

    def incompatible():
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                         f"compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    if isinstance(outs, Tensor):
        if isinstance(out_dims, int) or out_dims is None:
            fod = [out_dims]
        elif isinstance(out_dims, tuple) and len(out_dims) == 1:
            fod = list(out_dims)
        else:
            incompatible()
    else:
        fod = _broadcast_to_and_flatten(out_dims, spec)
        if fod is None:
            incompatible()
    res = [_remove_batch_dim(name, o, level, size, d) for o, d in zip(flat, fod)]
    return tree_unflatten(res, spec)


def _flat_vmap(func, size, flat_in, flat_args, spec, out_dims, randomness, kwargs):
    B._COUNTER[0] += 1
    level = B._COUNTER[0]
    B.LEVELS.append((level, size, randomness))
    B._SIZES[level] = size
    B.install()
    B.KINDS.append("vmap")
    try:
        args = tree_unflatten([a if d is None else _add_batch_dim(a, d, level)
                               for d, a in zip(flat_in, flat_args)], spec)
        try:
            outs = func(*args, **kwargs)
        except AttributeError as e:
            if "'BatchedTensor' object has no attribute '_" not in str(e):
                raise
            # code that read a batched tensor's storage (an op kept by reference from
            # before vmap, without a rule): run the whole function once per sample
            outs = _loop_whole(func, args, kwargs, level, size, e)
        return _unwrap_outputs(outs, out_dims, level, size, func)
    finally:
        B.KINDS.pop()
        B.uninstall()
        B.LEVELS.pop()
        B._SIZES.pop(level, None)


def _loop_whole(func, args, kwargs, level, size, err):
    import traceback
    tb = traceback.extract_tb(err.__traceback__)
    where = tb[-1].name if tb else _name(func)
    key = "fn:" + where
    B.LOOPED[key] = B.LOOPED.get(key, 0) + 1
    if key not in B._WARNED:
        B._WARNED.add(key)
        _warn.warn(f"There is a performance drop because we have not yet implemented the "
                   f"batching rule for {where}. Please file us an issue on GitHub so that "
                   f"we can prioritize its implementation.", UserWarning)
    flat, spec = tree_flatten((list(args), dict(kwargs)))
    outs = []
    for i in range(size):
        a, k = tree_unflatten([B._select(x, level, i) for x in flat], spec)
        outs.append(func(*a, **k))
    return B.stack_results(outs, level)


def _chunks(size, chunk):
    n = size // chunk
    sizes = [chunk] * n
    if size % chunk:
        sizes.append(size % chunk)
    return sizes


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """``func`` of one sample, applied to every sample of the batch dimension ``in_dims`` of
    its inputs, with each op run once on the whole batch (PyTorch's torch.func.vmap)."""
    _check_randomness(randomness)
    func = B.dispatching(func)
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(out_dims, func)
        flat_in, flat_args, spec = _process_inputs(in_dims, args, func)
        size = _batch_size(flat_in, flat_args)
        if chunk_size is None or chunk_size >= size:
            return _flat_vmap(func, size, flat_in, flat_args, spec, out_dims, randomness,
                              kwargs)
        from .. import get_rng_state, set_rng_state, cat
        import itertools
        idx = tuple(itertools.accumulate(_chunks(size, chunk_size)))
        parts = [a.tensor_split(idx, dim=d) if d is not None else [a] * len(idx)
                 for a, d in zip(flat_args, flat_in)]
        rs = get_rng_state() if randomness == "same" else None
        outs = []
        for chunk in zip(*parts):
            chunk = list(chunk)
            n = _batch_size(flat_in, chunk)
            if n == 0:
                continue
            if rs is not None:
                set_rng_state(rs)
            outs.append(_flat_vmap(func, n, flat_in, chunk, spec, out_dims, randomness,
                                   kwargs))
        flats = []
        ospec = None
        for o in outs:
            f, ospec = tree_flatten(o)
            flats.append(f)
        fod = _broadcast_to_and_flatten(out_dims, ospec) if ospec is not LEAF else [out_dims]
        res = [cat([f[i] for f in flats], dim=fod[i]) for i in range(len(flats[0]))]
        return tree_unflatten(res, ospec)

    return wrapped


__all__ = ["vmap"]
