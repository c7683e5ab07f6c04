"""Saved values by PyTorch's names (``grad_fn._saved_self``, ``_saved_result``,
``_raw_saved_mat2``, ...), against PyTorch over every op-table row.

For each row and sample the graphs recorded by dyngrad and PyTorch are walked side by side;
on each pair of nodes of the same name, every name dyngrad exposes must exist on PyTorch's
node and hold the same value.  The names PyTorch shows that dyngrad does not expose yet are
counted (``test_coverage``).  The table lives in ``src/dyngrad/ops/_saved_names.py``; new
candidates, matched by value, are proposed with::

    PYTHONPATH=src:. python tests/test_saved_names.py propose
"""
from __future__ import annotations

import collections
import json
import os
import sys
import warnings

import numpy as np
import pytest

if __name__ != "__main__":
    torch = pytest.importorskip("torch")
else:  # pragma: no cover - the proposal command
    import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import dyngrad  # noqa: E402
from dyngrad.autograd.node import Saved  # noqa: E402
from tests.optable import all_rows  # noqa: E402
from tests.twin import NoTwin, twin  # noqa: E402

U64 = 1 << 64


def _name(fn):
    return fn.name().replace("torch::autograd::", "")


def node_pairs():
    """(torch node, dyngrad node) of the same name, over every op-table row and sample."""
    for r in all_rows():
        if not (r.grad and r.samples):
            continue
        try:
            tw = twin(r.fn)
        except NoTwin:
            continue
        for s in r.samples:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    to = tw(*s.make(torch), *s.extra, **s.kwargs)
                    do = r.fn(*s.make(dyngrad), *s.extra, **s.kwargs)
                except Exception:  # noqa: BLE001 - a sample one side refuses
                    continue
            tos = [to] if isinstance(to, torch.Tensor) else \
                [x for x in to if isinstance(x, torch.Tensor)] if isinstance(to, (tuple, list)) else []
            dos = [do] if isinstance(do, dyngrad.Tensor) else \
                [x for x in do if isinstance(x, dyngrad.Tensor)] if isinstance(do, (tuple, list)) else []
            seen = set()
            stack = [(a.grad_fn, b.grad_fn) for a, b in zip(tos, dos)]
            while stack:
                tf, df = stack.pop()
                if tf is None or df is None or id(tf) in seen or _name(tf) != _name(df):
                    continue
                seen.add(id(tf))
                if "AccumulateGrad" not in _name(tf):
                    yield r.name, tf, df
                stack.extend((a, b) for (a, _), (b, _) in zip(tf.next_functions, df.next_functions))


def _torch_saved(tf):
    out = {}
    for a in dir(tf):
        if a.startswith("_saved_"):
            try:
                out[a[7:]] = getattr(tf, a)
            except Exception:  # noqa: BLE001 - freed or undefined on PyTorch's side
                pass
    return out


def same_value(tv, dv):
    """Whether dyngrad's saved value ``dv`` shows what PyTorch's ``tv`` shows."""
    if isinstance(tv, torch.Tensor):
        if not isinstance(dv, dyngrad.Tensor):
            return False
        ta, da = tv.detach().numpy(), dv.detach().numpy()
        if ta.shape != da.shape or ta.dtype.kind != da.dtype.kind:
            return False
        if ta.dtype.kind == "f":
            return bool(np.allclose(ta, da, rtol=1e-5, atol=1e-7, equal_nan=True))
        return bool(np.array_equal(ta, da))
    if isinstance(dv, (dyngrad.Tensor, np.ndarray, Saved)):
        return False
    if isinstance(tv, (tuple, list)):
        return isinstance(dv, (tuple, list)) and len(tv) == len(dv) and \
            all(same_value(a, b) for a, b in zip(tv, dv))
    if isinstance(tv, bool) or isinstance(dv, bool):
        return tv is dv
    if isinstance(tv, (int, float)) and isinstance(dv, (int, float)):
        return float(tv) == float(dv)
    try:
        return bool(tv == dv)
    except Exception:  # noqa: BLE001 - values that do not compare
        return False


# Rows whose saved values legitimately differ: singular and eigen vectors are unique only up
# to sign, and NumPy's LAPACK and PyTorch's pick different signs (the op's outputs, their
# gradients and every sign-invariant result agree; docs/reliability.md).
SIGN_FREE = {"svd_polar", "svd_polar_batch", "torch_svd", "eigh", "svd", "svd_full", "svdvals",
             "eigvalsh", "linalg_svd", "linalg_eigh", "pinv"}


def _collect():
    checked, wrong, extra, shown, exposed = 0, [], collections.Counter(), 0, 0
    from tests.test_graph_structure import KNOWN as GRAPH_DIFFERS
    for row, tf, df in node_pairs():
        if row in SIGN_FREE or row in GRAPH_DIFFERS:  # another graph: other saved values
            continue
        ts = _torch_saved(tf)
        spec = type(df)._named_saved
        shown += len(ts)
        exposed += sum(1 for n in ts if n in spec)
        for n in spec:
            if n not in ts:
                if n not in {a[7:] for a in dir(tf) if a.startswith("_saved_")}:
                    wrong.append(f"{row}: {_name(tf)}._saved_{n} does not exist in PyTorch")
                continue
            tv = ts[n]
            dv = getattr(df, "_saved_" + n)
            if tv is None:
                # PyTorch skips a value no gradient needs; dyngrad saved it anyway
                extra[_name(tf)] += dv is not None
                continue
            checked += 1
            if not same_value(tv, dv):
                wrong.append(f"{row}: {_name(tf)}._saved_{n}: dyngrad {dv!r:.80} torch {tv!r:.80}")
    return checked, wrong, extra, shown, exposed


_RESULT = []


def _result():
    if not _RESULT:
        _RESULT.append(_collect())
    return _RESULT[0]


def test_exposed_saved_values_are_pytorchs():
    checked, wrong, _, _, _ = _result()
    assert checked > 300
    assert not wrong, "\n".join(wrong[:40])


def test_coverage():
    """At least this share of the saved values PyTorch shows on op-table graphs are exposed."""
    _, _, _, shown, exposed = _result()
    assert exposed / shown >= 0.65, (exposed, shown)


# --- behaviour ---------------------------------------------------------------------------------
def _both(fn):
    out = []
    for L in (torch, dyngrad):
        try:
            out.append(("ok", fn(L)))
        except Exception as e:  # noqa: BLE001
            out.append((type(e).__name__, str(e)[:100]))
    return out


def test_input_is_the_tensor_and_output_has_the_node():
    for L in (torch, dyngrad):
        a = L.rand(3, requires_grad=True)
        b = L.rand(3, requires_grad=True)
        m = a * b
        assert m.grad_fn._saved_self is a and m.grad_fn._saved_other is b
        y = a.exp()
        r = y.grad_fn._saved_result
        assert r is not y and r.grad_fn is y.grad_fn and r.requires_grad
        assert np.array_equal(r.detach().numpy(), y.detach().numpy())


def test_freed_and_modified_errors_are_pytorchs():
    def freed(L):
        a = L.rand(3, requires_grad=True)
        y = a.tanh()
        y.sum().backward()
        return y.grad_fn._saved_result

    def modified(L):
        c = L.rand(3, requires_grad=True) * 1
        m = c * c
        c.add_(1)
        return m.grad_fn._saved_self

    for f in (freed, modified):
        t, d = _both(f)
        assert t[0] == d[0] == "RuntimeError" and t[1][:60] == d[1][:60], (t, d)


def test_dir_lists_saved_names_and_missing_names_raise():
    for L in (torch, dyngrad):
        m = L.rand(3, requires_grad=True) * L.rand(3, requires_grad=True)
        names = [n for n in dir(m.grad_fn) if "saved" in n and not n.startswith("_saved_s")]
        assert {"_saved_other", "_raw_saved_other"} <= set(names)
        with pytest.raises(AttributeError):
            m.grad_fn._saved_nonexistent


def test_raw_saved_tensor_hooks_run():
    for L in (torch, dyngrad):
        calls = []
        a = L.rand(3, requires_grad=True)
        y = a.tanh()
        raw = y.grad_fn._raw_saved_result

        def pack(t):
            calls.append("pack")
            return t * 1

        def unpack(t):
            calls.append("unpack")
            return t

        raw.register_hooks(pack, unpack)
        assert calls == ["pack"]
        y.sum().backward()
        assert calls == ["pack", "unpack"]
        assert np.allclose(a.grad.numpy(), 1 - np.tanh(a.detach().numpy()) ** 2)
        with pytest.raises(RuntimeError):
            raw.register_hooks(pack, unpack)


# --- proposal ----------------------------------------------------------------------------------
def propose():  # pragma: no cover - a maintenance command
    """Match, by value, PyTorch's saved names to positions of dyngrad's ``_saved`` tuples and
    rewrite src/dyngrad/ops/_saved_names.py with the unambiguous matches."""
    stats = collections.defaultdict(lambda: collections.defaultdict(list))
    names_of = collections.defaultdict(list)
    for row, tf, df in node_pairs():
        if hasattr(type(df), "_spec"):  # a declared op names its saved values itself
            continue
        cands = list(enumerate(df._saved or ()))
        names_of[_name(tf)].append({a[7:] for a in dir(tf) if a.startswith("_saved_")})
        for n, tv in _torch_saved(tf).items():
            if tv is None:
                continue
            hits = set()
            for i, v in cands:
                for kind in ("tensor", "array", "shape", "strides", "dim", "same"):
                    try:
                        dv = df._read_saved((i, kind))
                    except Exception:  # noqa: BLE001
                        continue
                    if kind == "tensor" and (isinstance(v, bool) or not (
                            type(v) is Saved or isinstance(v, (dyngrad.Tensor, int, float)))):
                        continue
                    if kind == "array" and not isinstance(v, np.ndarray):
                        continue
                    if kind == "shape" and not (n.endswith("sym_sizes") and type(v) is Saved):
                        continue
                    if kind == "strides" and not (n.endswith("sym_strides") and type(v) is Saved):
                        continue
                    if kind == "dim" and not ("dim" in n and same_value(tv, dv) and not same_value(tv, v)):
                        continue
                    if same_value(tv, dv):
                        hits.add((i, kind))
                        break
            stats[_name(tf)][n].append(hits)
            if os.environ.get("SAVED_DEBUG") == _name(tf) and not hits:
                print("no match:", row, n, repr(tv)[:60], [type(v).__name__ for v in df._saved or ()])
    table = {}
    for node, names in sorted(stats.items()):
        pos = {}
        always = set.intersection(*names_of[node])  # a name every such node of PyTorch has
        for n, obs in sorted(names.items()):
            # the match that holds on (nearly) every observation; a composite that computes
            # another product than PyTorch's is reported by the test, not proposed away
            votes = collections.Counter(h for o in obs for h in o)
            best = [h for h, c in votes.items() if c >= max(2, 0.9 * len(obs)) or c == len(obs)]
            if len(best) > 1:  # a value stored as such beats one derived from a tensor
                stored = [h for h in best if h[1] in ("same", "dim", "tensor", "array")]
                best = stored if len(stored) == 1 else best
            inter = set(best) if n in always and len(best) == 1 else set()
            if len(inter) == 1:
                (i, kind), = inter
                if (i, kind) not in set(pos.values()):
                    pos[n] = (i, kind)
        if pos:
            table[node] = dict(sorted(pos.items(), key=lambda kv: kv[1][0]))
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "src", "dyngrad", "ops", "_saved_names.py")
    src = open(path).read()
    head, tail = src.split("SAVED_NAMES: dict = {", 1)
    tail = tail.split("\n}\n", 1)[1]
    lines = []
    for node, m in table.items():
        items = [f'"{n}": ({i}, "{k}")' for n, (i, k) in m.items()]
        line = f'    "{node}": {{{", ".join(items)}}},'
        if len(line) > 99:
            line = f'    "{node}": {{\n' + "".join(f"        {x},\n" for x in items) + "    },"
        lines.append(line)
    with open(path, "w") as f:
        f.write(head + "SAVED_NAMES: dict = {\n" + "\n".join(lines) + "\n}\n" + tail)
    print(json.dumps({"nodes": len(table), "names": sum(len(m) for m in table.values())}))


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] == ["propose"]:
        propose()
