"""What ``ops.declared`` promises for the ops that are not ``defop`` declarations of their own:
a ``composite`` (an op PyTorch composes from other ops) needs nothing beyond its parts, so its
forward-mode tangents come from declared rules (never derived from a backward formula) and
vmap runs it through batching rules (never the per-sample loop); an in-place form made by the
registry's rule comes from a declared op.  The lists come from the registry."""
from __future__ import annotations

import warnings

import pytest

import dyngrad
import dyngrad.autograd.forward_ad as fwAD
from dyngrad.func import _batched
from dyngrad.ops import OPS, declared
from tests.test_op_spec import _rows_of

COMPOSITES = sorted(n for n, info in OPS.items() if info.get("composite"))
INPLACE = sorted(n for n, info in OPS.items() if info.get("inplace_of"))

# registry entries not declared: none (the number may only go down)
UNDECLARED_AT_MOST = 0


def test_undeclared_entries_only_go_down():
    left = sorted(n for n in OPS if not declared(n))
    assert len(left) <= UNDECLARED_AT_MOST, left


def test_the_registry_has_inplace_forms():
    assert INPLACE


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_form_names_a_registered_op(name):
    base = OPS[name]["inplace_of"]
    assert base in OPS and not OPS[base].get("inplace_of")


def _float_rows(name):
    for row in _rows_of(name):
        for s in row.samples[:2]:
            if s.int_args and len(s.int_args) == len(s.shapes):
                continue
            yield row, s


@pytest.mark.parametrize("name", COMPOSITES)
def test_composite_has_an_op_table_row(name):
    assert _rows_of(name), f"{name}: add a row to tests/optable"


@pytest.mark.parametrize("name", COMPOSITES)
def test_composite_forward_mode_uses_declared_rules(name):
    """Every node a composite records has a declared forward-mode rule."""
    before = dict(fwAD.DERIVED)
    for row, s in _float_rows(name):
        prim = s.make(dyngrad, requires_grad=False)
        with fwAD.dual_level():
            args = list(prim)
            for i, p in enumerate(prim):
                if i not in s.int_args and p.is_floating_point():
                    args[i] = fwAD.make_dual(p, dyngrad.ones_like(p))
            try:
                row.fn(*args, *s.extra, **s.kwargs)
            except (RuntimeError, ValueError, IndexError, TypeError, NotImplementedError):
                continue  # an error row
    new = {k: v - before.get(k, 0) for k, v in fwAD.DERIVED.items() if v != before.get(k, 0)}
    assert not new, f"{name}: tangents derived from backward formulas of {sorted(new)}"


@pytest.mark.parametrize("name", COMPOSITES)
def test_composite_vmap_uses_batching_rules(name):
    """vmap runs a composite through its parts' batching rules, never the per-sample loop."""
    before = dict(_batched.LOOPED)
    for row, s in _float_rows(name):
        batch = [s.make(dyngrad, seed=k, requires_grad=False) for k in range(3)]
        stacked = [dyngrad.stack([b[i] for b in batch]) for i in range(len(batch[0]))]
        op = _batched.dispatching(row.fn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                loop = [op(*b, *s.extra, **s.kwargs) for b in batch]
            except (RuntimeError, ValueError, IndexError, TypeError, NotImplementedError):
                continue  # invalid per sample
            shapes = {tuple(o.shape) for o in loop if isinstance(o, dyngrad.Tensor)}
            if len(shapes) > 1:
                continue  # outputs vmap cannot stack
            got = dyngrad.func.vmap(lambda *a: op(*a, *s.extra, **s.kwargs))(*stacked)
        assert got is not None
    new = {k: v - before.get(k, 0) for k, v in _batched.LOOPED.items()
           if v != before.get(k, 0)}
    assert not new, f"{name}: vmap looped over the batch for {sorted(new)}"



def test_every_saved_names_entry_is_read():
    """An entry of ops/_saved_names.py names a node class that takes its names from it (a
    declared op's node names its saved values itself)."""
    from dyngrad.ops._extra_loader import _node_classes
    from dyngrad.ops._saved_names import SAVED_NAMES
    by: dict = {}
    for c in _node_classes():
        by.setdefault(c.__name__, []).append(c)
    unread = []
    for name, entry in SAVED_NAMES.items():
        used = False
        for c in by.get(name, ()):
            if c.__dict__.get("_named_saved") is entry:
                inherited = next((b.__dict__["_named_saved"] for b in c.__mro__[1:]
                                  if "_named_saved" in b.__dict__), None)
                used = used or inherited != entry
        if not used:
            unread.append(name)
    assert not unread, unread
