"""``dyngrad.autograd.graph``: the Node type, gradient edges and hooks on saved tensors."""
from __future__ import annotations

from collections import namedtuple

from .node import Node, SAVED_HOOKS, edge_of

__all__ = ["Node", "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "GradientEdge", "get_gradient_edge", "increment_version", "register_multi_grad_hook"]

GradientEdge = namedtuple("GradientEdge", ("node", "output_nr"))
GradientEdge.__doc__ = "The place a gradient flows into: a graph node and its input number."


def get_gradient_edge(tensor):
    """The ``GradientEdge`` that gradients for ``tensor`` flow into (its grad_fn, or its
    AccumulateGrad for a leaf)."""
    if not tensor._requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does "
                           "not require gradients")
    fn, nr = edge_of(tensor)
    return GradientEdge(fn, nr)


def increment_version(tensor):
    """Bump the version counter, as an in-place write would (invalidates saved copies)."""
    from .._tensor import Tensor
    for t in ([tensor] if isinstance(tensor, Tensor) else tensor):
        t._vc[0] += 1


class saved_tensors_hooks:
    """Pack/unpack hooks for every tensor saved for backward (built-in ops and custom
    Functions): ``pack_hook(tensor)`` runs when saving, ``unpack_hook(packed)`` in backward.

    >>> import dyngrad as torch
    >>> x = torch.ones(2, requires_grad=True)
    >>> with torch.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t):
    ...     y = x * x
    >>> y.sum().backward(); x.grad
    tensor([4., 4.])
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if SAVED_HOOKS and isinstance(SAVED_HOOKS[-1], _Disabled):
            raise RuntimeError(SAVED_HOOKS[-1].message)
        SAVED_HOOKS.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.pop()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept as copies "on the CPU" (every dyngrad tensor already is)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        super().__init__(lambda t: t.detach().clone(), lambda t: t)


class _Disabled:
    __slots__ = ("message",)

    def __init__(self, message):
        self.message = message


class disable_saved_tensors_hooks:
    """Forbid ``saved_tensors_hooks`` inside this block (entering one raises ``error_message``)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        SAVED_HOOKS.append(_Disabled(self.error_message))
        return self

    def __exit__(self, *exc):
        SAVED_HOOKS.pop()
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **k):
            with disable_saved_tensors_hooks(self.error_message):
                return fn(*a, **k)
        return wrapper


class _MultiHandle:
    def __init__(self, handles):
        self.handles = handles

    def remove(self):
        for h in self.handles:
            h.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call ``fn`` when gradients for ``tensors`` are computed.

    ``mode="any"``: ``fn(grad)`` with the first gradient of each round; ``mode="all"``:
    ``fn(grads)`` (one per tensor) once every tensor has received its gradient.
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = list(tensors)
    grads = [None] * len(tensors)
    seen = set()

    def make(i):
        def hook(g):
            if mode == "any":
                if i in seen:  # a tensor seen again: a new backward
                    seen.clear()
                if not seen:
                    fn(g)
                seen.add(i)
                return None
            grads[i] = g
            seen.add(i)
            if len(seen) == len(tensors):
                out = tuple(grads)
                seen.clear()
                grads[:] = [None] * len(tensors)
                fn(out)
            return None
        return hook

    return _MultiHandle([t.register_hook(make(i)) for i, t in enumerate(tensors)])
