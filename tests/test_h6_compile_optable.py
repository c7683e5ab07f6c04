"""The op table run through dyngrad.compile: for every row (the rows tests/test_op_table.py
runs), a function calling the op on the row's first sample (and, for a differentiable row,
summing its outputs and calling backward) is compiled with ``config.check_replay`` on and
called twice; each call must give the values, gradients and errors eager gives.  Where a
capture runs eagerly instead, the op that caused it (from ``eager_reason``) must be the one
listed in ``FALLS_BACK``: an op that replays must keep replaying, and a listed row that
replays now must leave the list."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import dyngrad as torch
from dyngrad import _dynamo
from tests.optable import all_rows

ROWS = all_rows()
IDS = [f"{i}-{r.name}" for i, r in enumerate(ROWS)]

# row id -> the op (or backward node) that makes its capture run eagerly; derived by running
# this file with PRINT_FALLBACKS (see _fallback_op); it may only shrink.
FALLS_BACK: dict = {}


@pytest.fixture(autouse=True)
def _checked():
    old = _dynamo.config.check_replay
    _dynamo.config.check_replay = True
    yield
    _dynamo.config.check_replay = old


def _outputs(o):
    if isinstance(o, torch.Tensor):
        return [o]
    if isinstance(o, (tuple, list)):
        return [x for x in o if isinstance(x, torch.Tensor)]
    return []


def _public_names():
    """id of each public function -> (module, name): a row whose callable is the function
    itself (``torch.exp``) calls it by name, as user code does, so a capture sees the call."""
    out = {}
    for mod in (torch, torch.nn.functional, torch.linalg, torch.special):
        for k in dir(mod):
            if not k.startswith("_"):
                out.setdefault(id(getattr(mod, k)), (mod, k))
    return out


_PUBLIC = _public_names()


def _step(row, sample):
    """The compiled function: the op, then the backward of the sum of its outputs."""
    by_name = _PUBLIC.get(id(row.fn))

    def step(*ts):
        fn = row.fn if by_name is None else getattr(*by_name)
        out = fn(*ts, *sample.extra, **sample.kwargs)
        outs = _outputs(out)
        if row.grad:
            diff = [o for o in outs if o.requires_grad and o.grad_fn is not None]
            if diff:
                total = diff[0].sum()
                for o in diff[1:]:
                    total = total + o.sum()
                total.backward()
        if isinstance(out, torch.Tensor):
            return out.detach()
        if isinstance(out, (tuple, list)):
            return [o.detach() if isinstance(o, torch.Tensor) else o for o in out]
        return out
    return step


def _run(f, ts):
    """``(outputs as arrays, grads of the inputs, error)`` of one call."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = f(*ts)
    except Exception as e:  # the same error must come from both
        return None, None, (type(e), str(e))
    vals = [(o.dtype, tuple(o.shape), np.ascontiguousarray(o._data).tobytes())
            for o in _outputs(out)]
    if not isinstance(out, (torch.Tensor, tuple, list)):
        vals.append(out)
    grads = [None if t.grad is None else
             (t.grad.dtype, tuple(t.grad.shape), np.ascontiguousarray(t.grad._data).tobytes())
             for t in ts]
    return vals, grads, None


def _fallback_op(reason: str) -> str:
    """The op or node named in an ``eager_reason``."""
    m = re.search(r"no replay kernel reproduces '([^']+)'", reason)
    if m:
        return m.group(1)
    m = re.search(r"(\w+Backward\w*)", reason)
    if m:
        return m.group(1)
    return reason.split(":")[0]


def _make(sample, row):
    return sample.make(torch, requires_grad=row.grad)


@pytest.mark.parametrize("i", range(len(ROWS)), ids=IDS)
def test_op_table_row_compiled_equals_eager(i):
    row = ROWS[i]
    sample = row.samples[0]
    step = _step(row, sample)
    cf = torch.compile(step)
    for _ in range(2):
        got = _run(cf, _make(sample, row))
        want = _run(step, _make(sample, row))
        assert got == want, f"{IDS[i]}: compiled differs from eager"
    rid = IDS[i]
    known = FALLS_BACK.get(rid)
    if cf.eager_reason is None or got[2] is not None:
        assert known is None, f"{rid} replays now: remove it from FALLS_BACK"
        return
    op = _fallback_op(cf.eager_reason)
    assert known is not None, f"{rid} ran eagerly ({cf.eager_reason}); it replayed before"
    assert op == known, f"{rid} ran eagerly because of {op}, listed as {known}"
