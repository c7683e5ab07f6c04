"""``autograd.Function`` inside torch.func transforms, as PyTorch allows: a Function used in a
transform must define ``setup_context``; under ``vmap`` it runs through its ``vmap``
staticmethod, or, with ``generate_vmap_rule = True``, through a rule made from its forward,
setup_context and backward (each run once on the whole batch)."""
from __future__ import annotations

from collections import namedtuple

from .._tensor import Tensor
from ..autograd.function import APPLY_HOOKS, Function
from . import _batched as B
from ._pytree import tree_flatten, tree_unflatten

VmapInfo = namedtuple("VmapInfo", ["batch_size", "randomness"])
VmapInfo.__doc__ = "What a Function's vmap staticmethod is told: batch size and randomness."

_DOCS = "For more details, please see https://pytorch.org/docs/main/notes/extending.func.html"


def _apply_hook(cls, args, kwargs):
    if not B.KINDS:
        return NotImplemented
    if cls.setup_context is Function.setup_context:
        raise RuntimeError("In order to use an autograd.Function with functorch transforms (vmap, "
                           "grad, jvp, jacrev, ...), it must override the setup_context "
                           "staticmethod. " + _DOCS)
    if not B.LEVELS or not B.has_batched(args, kwargs):
        return NotImplemented
    if any(isinstance(v, Tensor) for v in tree_flatten(kwargs)[0]):
        raise NotImplementedError(f"Run vmap on autograd.Function with kwarg-only Tensor args. "
                                  f"Please do not pass kwarg-only Tensors to autograd.Function. "
                                  f"Got: {kwargs}")
    overridden = cls.vmap is not Function.vmap
    if cls.generate_vmap_rule:
        if overridden:
            raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it has both "
                               f"generate_vmap_rule=True and an overridden vmap staticmethod. "
                               f"Please set generate_vmap_rule=False or delete the overridden "
                               f"vmap staticmethod to avoid ambiguity. " + _DOCS)
        return _apply_generated(cls, args)
    elif not overridden:
        raise RuntimeError(f"You tried to vmap over {cls.__name__}, but it does not have vmap "
                           f"support. Please override and implement the vmap staticmethod or "
                           f"set generate_vmap_rule=True. " + _DOCS)
    else:
        rule = cls.vmap
    top = max(B._union(*[a for a in args if isinstance(a, Tensor)]))
    _, size, randomness = next(lv for lv in B.LEVELS if lv[0] == top)
    in_dims, unwrapped = [], []
    for a in args:
        if type(a) is B.BatchedTensor and top in a._levels:
            lv = a._levels
            unwrapped.append(B.wrap(a._phys, lv[:-1]))   # its batch dim is logical dim 0
            in_dims.append(0)
        else:
            unwrapped.append(a)
            in_dims.append(None)
    result = rule(VmapInfo(size, randomness), tuple(in_dims), *unwrapped, **kwargs)
    base = ("Expected the vmap staticmethod to have two returns, an output and out_dims with "
            "pytree structure compatible with the output. ")
    if not isinstance(result, tuple):
        raise RuntimeError(base + f"Got a {type(result)} instead")
    if len(result) != 2:
        raise RuntimeError(base + f"Got {len(result)} returns instead")
    output, out_dims = result
    flat, spec = tree_flatten(output)
    from ._vmap import _add_batch_dim, _broadcast_to_and_flatten
    fod = _broadcast_to_and_flatten(out_dims, spec)
    if fod is None:
        raise RuntimeError(f"The autograd.Function's vmap staticmethod returned an incompatible "
                           f"(output, out_dims) tuple. Expected out_dims={out_dims} to be "
                           f"compatible with the structure of `output`. out_dims has structure "
                           f"{tree_flatten(out_dims)[1]} but output has structure {spec}. "
                           + _DOCS)
    res = [o if d is None or not isinstance(o, Tensor) else
           _add_batch_dim(o, d % max(o.dim(), 1), top) for o, d in zip(flat, fod)]
    return tree_unflatten(res, spec)


def _apply_generated(cls, args):
    """generate_vmap_rule=True: every batch level of the arguments at once, as one flat batch
    (so the generated Function sees plain tensors however deep the vmaps nest)."""
    levels = B._union(*[a for a in args if isinstance(a, Tensor)])
    sizes = tuple(B.level_size(lv) for lv in levels)
    n = 1
    for k in sizes:
        n *= k
    in_dims, flat = [], []
    for a in args:
        if type(a) is B.BatchedTensor:
            p = B.expand_batch(B.align(a, levels), levels)
            flat.append(p.reshape(n, *p.shape[len(levels):]))
            in_dims.append(0)
        else:
            flat.append(a)
            in_dims.append(None)
    randomness = B.LEVELS[-1][2]
    out, _ = _generated(cls)(VmapInfo(n, randomness), tuple(in_dims), *flat)
    leaves, spec = tree_flatten(out)
    res = [B.wrap(o.reshape(*sizes, *o.shape[1:]), levels) if isinstance(o, Tensor) else o
           for o in leaves]
    return tree_unflatten(res, spec)


class _GenCtx:
    """The ctx a generated rule gives setup_context and backward (one for the whole batch)."""

    def __init__(self):
        self._to_save = ()
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self._to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors):
        raise RuntimeError("mark_dirty is not supported with generate_vmap_rule=True")

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self):
        return tuple(self._to_save)


def _tensors_only(seq):
    """The tensors of ``seq`` and where the others (None...) were."""
    return [x for x in seq if isinstance(x, Tensor)], [
        None if isinstance(x, Tensor) else (x,) for x in seq]


def _refill(tensors, holes):
    it = iter(tensors)
    return tuple(next(it) if h is None else h[0] for h in holes)


def _generated(cls):
    """The vmap rule generate_vmap_rule=True asks for: forward and setup_context run once
    under vmap; a Function of the batched inputs holds what they saved; its backward runs the
    user's backward once under vmap."""
    from ._vmap import vmap

    def rule(info, in_dims, *args):
        state = {}
        moved = [a.movedim(d, 0) if d is not None and d != 0 else a
                 for a, d in zip(args, in_dims)]
        dims = tuple(None if d is None else 0 for d in in_dims)

        class Generated(Function):
            @staticmethod
            def forward(*xs):
                def body(*a):
                    out = cls.forward(*a)
                    ctx = _GenCtx()
                    cls.setup_context(ctx, a, out)
                    saved, holes = _tensors_only(ctx._to_save)
                    attrs = {k: v for k, v in vars(ctx).items() if isinstance(v, Tensor)}
                    state.update(ctx=ctx, holes=holes, attr_names=list(attrs))
                    return out, tuple(saved), tuple(attrs.values())
                out, saved, attrs = vmap(body, in_dims=dims, randomness=info.randomness)(*xs)
                state.update(saved=saved, attrs=attrs)
                return out

            @staticmethod
            def setup_context(ctx, inputs, output):
                pass

            @staticmethod
            def backward(ctx, *grads):
                needs = ctx.needs_input_grad

                def body(saved, attrs, *g):
                    c = _GenCtx()
                    c.__dict__.update({k: v for k, v in vars(state["ctx"]).items()
                                       if not isinstance(v, Tensor)})
                    c.__dict__.update(dict(zip(state["attr_names"], attrs)))
                    c._to_save = _refill(saved, state["holes"])
                    c.needs_input_grad = needs
                    r = cls.backward(c, *g)
                    r = r if isinstance(r, tuple) else (r,)
                    tens, holes = _tensors_only(r)
                    state["gholes"] = holes
                    return tuple(tens)
                gdims = tuple(None if g is None else 0 for g in grads)
                res = vmap(body, in_dims=(0, 0) + gdims)(state["saved"], state["attrs"], *grads)
                res = _refill(res, state["gholes"])
                # an input shared by the batch gets the sum of the per-sample gradients
                return tuple(r.sum(0) if (r is not None and d is None and isinstance(x, Tensor))
                             else r for r, d, x in zip(res, dims, args))

        Generated.__name__ = cls.__name__ + "Generated"
        out = Generated.apply(*moved)
        return out, tree_unflatten([0] * len(tree_flatten(out)[0]), tree_flatten(out)[1])
    return rule


if _apply_hook not in APPLY_HOOKS:
    APPLY_HOOKS.append(_apply_hook)
