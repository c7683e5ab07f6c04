"""Module state-dict protocol against PyTorch: state-dict pre/post hooks (public and
private), load_state_dict pre/post hooks (their order, arguments, and post-hooks forgiving
keys), get_extra_state/set_extra_state, the _metadata versions, get_buffer and set_submodule.
A load that fails after its post-hooks ran leaves the model as it was (dyngrad's promise)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _net(L):
    L.manual_seed(0)
    return L.nn.Sequential(L.nn.Linear(2, 3), L.nn.BatchNorm1d(3))


def _vals(sd):
    return {k: (np.asarray(v.detach().numpy()).tolist() if hasattr(v, "detach") else v)
            for k, v in sd.items()}


def test_state_dict_hooks_and_metadata_as_torch():
    def run(L):
        net = _net(L)
        log = []
        net[0].register_state_dict_pre_hook(lambda m, p, kv: log.append(("pre", p, kv)))
        net.register_state_dict_post_hook(
            lambda m, sd, p, meta: log.append(("post", p, sorted(sd), dict(meta))))

        def rename(m, sd, p, meta):
            sd[p + "extra"] = L.ones(1)
        net[1]._register_state_dict_hook(rename)
        sd = net.state_dict()
        return log, sorted(sd), dict(sd._metadata)
    assert run(dyngrad) == run(torch)


def test_public_post_hook_must_return_none():
    for L in (dyngrad, torch):
        net = _net(L)
        net.register_state_dict_post_hook(lambda m, sd, p, meta: {})
        with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
            net.state_dict()


def test_load_hooks_as_torch():
    def run(L):
        net = _net(L)
        sd = {k.replace("0.", "first."): v for k, v in _net(L).state_dict().items()}
        log = []

        def rename(module, state_dict, prefix, meta, strict, missing, unexpected, errors):
            log.append(("pre", type(module).__name__, prefix))
            for k in [k for k in state_dict if k.startswith("first.")]:
                state_dict[k.replace("first.", "0.")] = state_dict.pop(k)
        net.register_load_state_dict_pre_hook(rename)
        net[1].register_load_state_dict_pre_hook(
            lambda m, sd, p, *a: log.append(("pre", type(m).__name__, p)))
        net[0].register_load_state_dict_post_hook(
            lambda m, keys: log.append(("post", type(m).__name__, list(keys.missing_keys))))
        net.register_load_state_dict_post_hook(
            lambda m, keys: log.append(("post", type(m).__name__, list(keys.unexpected_keys))))
        r = net.load_state_dict(sd)
        return log, list(r.missing_keys), list(r.unexpected_keys), sorted(sd)
    assert run(dyngrad) == run(torch)


def test_post_hook_forgives_missing_keys_as_torch():
    def run(L):
        net = _net(L)
        sd = dict(_net(L).state_dict())
        del sd["1.running_var"]

        def forgive(m, keys):
            keys.missing_keys.clear()
        net.register_load_state_dict_post_hook(forgive)
        r = net.load_state_dict(sd)
        return list(r.missing_keys)
    assert run(dyngrad) == run(torch) == []


def test_failed_load_after_post_hooks_changes_nothing():
    net = _net(dyngrad)
    before = _vals(net.state_dict())
    other = _net(dyngrad)
    with dyngrad.no_grad():
        for p in other.parameters():
            p.add_(1.0)
    sd = dict(other.state_dict())
    del sd["1.bias"]
    seen = []
    net.register_load_state_dict_post_hook(lambda m, keys: seen.append(list(keys.missing_keys)))
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "1.bias"'):
        net.load_state_dict(sd)
    assert seen == [["1.bias"]]
    assert _vals(net.state_dict()) == before


class _Counter:
    """A module with extra state (defined for both libraries by ``_with_extra``)."""


def _with_extra(L):
    class Counter(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = L.nn.Linear(1, 1)
            self.count = 3

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]
    return Counter


def test_extra_state_as_torch():
    def run(L):
        C = _with_extra(L)
        a, b = C(), C()
        a.count = 7
        sd = a.state_dict()
        keys = sorted(sd)
        b.load_state_dict(sd)
        sd.pop("_extra_state")
        with pytest.raises(RuntimeError) as e:
            C().load_state_dict(sd)
        return keys, b.count, str(e.value).splitlines()[1]
    assert run(dyngrad) == run(torch)


def test_default_extra_state_errors_and_lookups_as_torch():
    def run(L):
        out = []
        m = _net(L)
        for f in (lambda: L.nn.Module().get_extra_state(), lambda: L.nn.Module().set_extra_state(1),
                  lambda: m.get_buffer("1.weight"), lambda: m.get_buffer("1.nothing"),
                  lambda: m.set_submodule("", L.nn.ReLU()), lambda: m.set_submodule("0", 3),
                  lambda: m.set_submodule("1.weight", L.nn.ReLU()),
                  lambda: m.set_submodule("2", L.nn.ReLU(), strict=True)):
            try:
                f()
                out.append("ok")
            except Exception as e:  # noqa: BLE001 - compared with PyTorch's
                out.append((type(e).__name__, str(e)))
        out.append(m.get_buffer("1.running_mean").tolist())
        m.set_submodule("1", L.nn.Tanh())
        out.append(repr(m))
        return out
    assert run(dyngrad) == run(torch)
