"""register_forward_hook(always_call=True) against torch: such hooks also run when forward
raises (after any that already ran, with the result so far), their own errors become
warnings, and the forward's error is the one raised."""
from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _run(L, fail, hook_fails):
    log = []

    class Boom(L.nn.Module):
        def forward(self, x):
            if fail:
                raise ValueError("forward failed")
            return x * 2

    m = Boom()

    def always(mod, args, out):
        log.append(("always", None if out is None else out.tolist()))
        if hook_fails:
            raise KeyError("hook failed")

    m.register_forward_hook(lambda mod, args, out: log.append(("plain",)))
    m.register_forward_hook(always, always_call=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            m(L.ones(2))
            outcome = "ok"
        except Exception as e:  # noqa: BLE001 - the error is the outcome
            outcome = (type(e).__name__, str(e))
    return outcome, log, [str(x.message).split(":")[0] for x in w]


@pytest.mark.parametrize("fail", [False, True])
@pytest.mark.parametrize("hook_fails", [False, True])
def test_always_call_matches_torch(fail, hook_fails):
    assert _run(dyngrad, fail, hook_fails) == _run(torch, fail, hook_fails)
