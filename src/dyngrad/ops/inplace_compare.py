"""In-place comparisons (``eq_``, ``ne_``, ``lt_``, ``le_``, ``gt_``, ``ge_`` and their
aliases): the 0/1 result is written into the tensor in its own dtype and, as in PyTorch, the
history records a node whose gradients are zeros (EqBackward0 with a number, EqBackward1 with
a tensor)."""
from __future__ import annotations

from . import inplace_of, op
from ._formula import FormulaNode
from .._record import STATE, Tensor, edge_of, record
from .inplace import apply

_make = Tensor._make


class _CompareBackward(FormulaNode):
    __slots__ = ()

    def formula(self, g, other_shape):
        t = _pkg()
        gs = t.zeros_like(g)
        if len(self.next_functions) == 1:
            return gs,
        go = t.zeros(other_shape, dtype=g.dtype) if self.needs(1) else None
        return gs, go


def _pkg():
    import importlib
    return importlib.import_module(__name__.split(".")[0])


_NODES = {}
for _short in ("Eq", "Ne", "Lt", "Le", "Gt", "Ge"):
    for _k in (0, 1):
        _n = f"{_short}Backward{_k}"
        _NODES[_n] = type(_n, (_CompareBackward,), {"__slots__": ()})


def _compare_fn(name):
    def f(old, other):
        from . import OPS
        r = OPS[name]["fn"](old.detach(), other.detach() if isinstance(other, Tensor) else other)
        is_t = isinstance(other, Tensor)
        if STATE.enabled and (old._requires_grad or (is_t and other._requires_grad)):
            cls = _NODES[f"{name.capitalize()}Backward{1 if is_t else 0}"]
            edges = (edge_of(old), edge_of(other)) if is_t else (edge_of(old),)
            out = record(r._data.astype(old._data.dtype), cls(edges, (
                tuple(other._data.shape) if is_t else (),)))
            return out
        return r

    return f


def _register(name, aliases):
    fn = _compare_fn(name)

    def inplace(self, other):
        return apply(self, fn, other)

    inplace.__name__ = name + "_"
    inplace.__doc__ = f"In-place {name}: 1 where true, else 0, in the tensor's dtype."
    op(name + "_", function=False, methods=tuple(a + "_" for a in aliases))(inplace)
    inplace_of(name + "_", name)  # (PyTorch's own node for the in-place form: zero gradients)


for _name, _aliases in (("eq", ()), ("ne", ("not_equal",)), ("lt", ("less",)),
                        ("le", ("less_equal",)), ("gt", ("greater",)),
                        ("ge", ("greater_equal",))):
    _register(_name, _aliases)
