"""Ops declared with ``defop`` (src/dyngrad/ops/_spec.py), each checked for what its one
declaration promises: an op-table row (whose forward-mode tangent
tests/test_op_table_forward_mode.py compares with PyTorch's), a batching rule that agrees with a
loop over the batch, saved values under PyTorch's names, and a clear error where forward
mode has no rule.  The list of declared ops comes from the registry."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
import dyngrad.autograd.forward_ad as fwAD  # noqa: E402
from dyngrad.ops import OPS  # noqa: E402
from dyngrad.ops._spec import apply_batched, defop  # noqa: E402
from tests.optable import all_rows  # noqa: E402

DECLARED = sorted(n for n, info in OPS.items() if info.get("spec") is not None)
# ops with a derivative; those without (``differentiable=False``: isnan, logical_not...) have
# no gradient or tangent to check, and are compared with PyTorch in tests/test_spec_predicates.py
DIFFERENTIABLE = [n for n in DECLARED if OPS[n]["spec"].differentiable]
ROWS = {r.name: r for r in all_rows()}


def _rows_of(name):
    if name.startswith("_") and name.endswith("_method"):  # the method of a declared op
        name = name[1:-7]
    fn = OPS[name]["fn"]
    fns = (fn, getattr(dyngrad, name, None))
    # the op's torch.special names (dyngrad.special wraps the registered function)
    special = {n for n, v in vars(dyngrad.special).items()
               if getattr(v, "__wrapped__", None) is fn}
    # an operator entry (``_and``) is reached through its dunder methods (``a.__and__(b)``)
    dunders = {m for m in OPS[name]["methods"] if m.startswith("__")}
    out = []
    for r in ROWS.values():
        code = getattr(r.fn, "__code__", None)
        names = code.co_names if code is not None else ()
        # (a private op, ``_mse_loss``, is reached through its nn.functional name)
        if r.fn in fns or getattr(r.fn, "__wrapped__", None) is fn or name in names or (
                name.startswith("_") and name[1:] in names) or (
                "special" in names and special & set(names)) or dunders & set(names):
            out.append(r)
    return out


def test_some_ops_are_declared():
    assert "logcumsumexp" in DECLARED


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_declared_op_has_an_op_table_row(name):
    assert _rows_of(name), f"{name}: add a row to tests/optable"


@pytest.mark.parametrize("name", DECLARED)
def test_batching_rule_agrees_with_a_loop(name):
    spec = OPS[name]["spec"]
    for row in _rows_of(name):
        for s in row.samples:
            if not s.kwargs and not s.extra and spec.batch is not None:
                continue  # needs the op's parameters
            params = dict(zip(list(spec.forward.__code__.co_varnames)[len(spec.inputs):],
                              s.extra))
            params.update(s.kwargs)
            for p in spec.dims:
                if p in params:
                    params[p] = int(params[p])
            batch = [[t.numpy() for t in s.make(dyngrad, seed=k, requires_grad=False)]
                     for k in range(3)]
            stacked = [np.stack(a) for a in zip(*batch)]
            if any(a.ndim < 2 for a in stacked) and spec.dims:
                continue  # a 0-d sample has no dim to move
            got = apply_batched(name, stacked, params)
            each = [spec.forward(*b, **{k: (v + b[0].ndim if k in spec.dims and v < 0 else v)
                                        for k, v in params.items()}) for b in batch]
            if not spec.outputs:  # one output, else each of them (values, indices)
                got, each = (got,), [(e,) for e in each]
            for i, g in enumerate(got):
                np.testing.assert_allclose(g, np.stack([e[i] for e in each]), rtol=1e-12, atol=0,
                                           equal_nan=True)


def test_an_op_without_a_forward_rule_raises_in_forward_mode():
    spec = defop("_twice_nonlinear_test", node="TwiceNonlinearTestBackward0", saved=("self",),
                 function=False, method=False)(lambda self: self * self)
    spec.backward(lambda ctx, g: (2 * g * ctx.self,))
    x = dyngrad.tensor([1.0, 2.0], requires_grad=True)
    y = spec.fn(x)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    with fwAD.dual_level():
        d = fwAD.make_dual(dyngrad.tensor([1.0, 2.0]), dyngrad.ones(2))
        with pytest.raises(NotImplementedError, match="forward AD with _twice_nonlinear_test"):
            spec.fn(d)
    del OPS["_twice_nonlinear_test"]


def test_saved_values_by_declared_names():
    x = dyngrad.rand(3, 4, dtype=dyngrad.float64, requires_grad=True)
    y = dyngrad.logcumsumexp(x, -1)
    n = y.grad_fn
    assert type(n).__name__ == "LogcumsumexpBackward0"
    assert n._saved_self is x and n._saved_dim == (1 << 64) - 1
    assert np.array_equal(n._saved_result.detach().numpy(), y.detach().numpy())
    t = torch.from_numpy(x.detach().numpy()).requires_grad_()
    tn = torch.logcumsumexp(t, -1).grad_fn
    assert sorted(a for a in dir(n) if a.startswith("_saved_")) == \
        sorted(a for a in dir(tn) if a.startswith("_saved_"))
