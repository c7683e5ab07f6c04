"""``diagnose(model, loss)``: the tutorials' ``check_computational_graph`` for any model --
parameters that are not trainable leaves, not reached by the loss, shared, or with NaN/inf
gradients -- as a readable report and as data."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from . import _dtype as _DT

__all__ = ["diagnose", "Diagnosis"]


@dataclass
class Diagnosis:
    """Findings per category; each list holds parameter names (``module.sub.weight``)."""

    not_leaf: list = field(default_factory=list)
    no_grad_required: list = field(default_factory=list)
    unreachable: list = field(default_factory=list)     # not in loss.grad_fn's graph
    no_gradient: list = field(default_factory=list)     # .grad is None after backward
    shared: list = field(default_factory=list)          # [(name, [other names...])]
    nonfinite_grad: list = field(default_factory=list)  # [(name, n_nan, n_inf)]
    checked: int = 0

    @property
    def ok(self) -> bool:
        return not (self.not_leaf or self.no_grad_required or self.unreachable
                    or self.no_gradient or self.shared or self.nonfinite_grad)

    def report(self) -> str:
        lines = [f"dyngrad.diagnose: {self.checked} parameters checked"]
        if self.ok:
            lines.append("All parameters seem correctly attached to the computational graph.")
            return "\n".join(lines)
        for n in self.not_leaf:
            lines.append(f"  ! {n} is not a leaf (an in-place op on it recorded history); "
                         "fix: update it under torch.no_grad() or through .data")
        for n in self.no_grad_required:
            lines.append(f"  ! {n} does not require grad (frozen?); fix: "
                         "p.requires_grad_(True) if it should train")
        for n in self.unreachable:
            lines.append(f"  ! {n} is not reached by the loss's graph (unused in forward, or "
                         "detached); it will get no gradient")
        for n in self.no_gradient:
            lines.append(f"  ! {n} has no gradient after backward (.grad is None)")
        for n, others in self.shared:
            lines.append(f"  ! {n} is shared with {', '.join(others)} (same tensor in several "
                         "modules; its gradient is the sum over all uses)")
        for n, nan, inf in self.nonfinite_grad:
            lines.append(f"  ! {n}.grad has {nan} NaN and {inf} infinite values")
        return "\n".join(lines)

    __str__ = report


def _reachable_leaves(loss) -> set:
    """ids of the leaf tensors whose AccumulateGrad nodes the loss's graph reaches."""
    out = set()
    fn = getattr(loss, "grad_fn", None)
    if fn is None:
        if loss is not None and getattr(loss, "requires_grad", False):
            out.add(id(loss))
        return out
    seen = {id(fn)}
    stack = [fn]
    while stack:
        n = stack.pop()
        v = getattr(n, "variable", None)
        if v is not None:
            out.add(id(v))
        for u, _ in n.next_functions:
            if u is not None and id(u) not in seen:
                seen.add(id(u))
                stack.append(u)
    return out


def diagnose(model, loss=None, print_report: bool = False) -> Diagnosis:
    """Check ``model``'s parameters (and, given ``loss``, what the loss reaches and the gradients)."""
    d = Diagnosis()
    owners = {}
    for mname, mod in model.named_modules(remove_duplicate=False):
        for pname, p in mod._parameters.items():
            if p is None:
                continue
            full = f"{mname}.{pname}" if mname else pname
            owners.setdefault(id(p), []).append(full)
    reach = _reachable_leaves(loss) if loss is not None else None
    seen = set()
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            continue
        seen.add(id(p))
        d.checked += 1
        if not p.is_leaf:
            d.not_leaf.append(name)
        if not p.requires_grad:
            d.no_grad_required.append(name)
        names = owners.get(id(p), [name])
        if len(names) > 1:
            d.shared.append((names[0], names[1:]))
        if loss is not None and p.requires_grad and p.is_leaf:
            if id(p) not in reach:
                d.unreachable.append(name)
            elif p.grad is None:
                d.no_gradient.append(name)
        g = p.grad if p.is_leaf else None
        if g is not None:
            a = np.asarray(g._data)
            if a.dtype in _DT.INEXACT:
                nan = int(np.isnan(a).sum())
                inf = int(np.isinf(a).sum())
                if nan or inf:
                    d.nonfinite_grad.append((name, nan, inf))
    if d.no_gradient and not any(p.grad is not None for p in model.parameters()):
        d.no_gradient = []   # backward has not run yet: nothing to say about gradients
    if print_report:
        print(d.report())
    return d
