"""gumbel_softmax: PyTorch's composition (Gumbel noise from -log of an exponential draw on
dyngrad's generator, softmax, and for ``hard`` a one-hot scatter with the straight-through
``y_hard - y_soft.detach() + y_soft``)."""
from __future__ import annotations

from .. import _warn


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample from the Gumbel-softmax distribution over ``dim``; one-hot (with the soft
    sample's gradient) when ``hard``."""
    from .. import _factories
    if eps != 1e-10:
        _warn.warn("`eps` parameter is deprecated and has no effect.")
    gumbels = -_factories.empty_like(logits).exponential_().log()  # ~Gumbel(0, 1)
    gumbels = (logits + gumbels) / tau  # ~Gumbel(logits, tau)
    y_soft = gumbels.softmax(dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = _factories.zeros_like(logits).scatter_(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft


gumbel_softmax.__module__ = "dyngrad.nn.functional"  # listed and argument-checked as F's own
