"""Random autograd programs: the generator and interpreter shared with the differential
fuzzer (tests/test_fuzz_vs_torch.py), and the replay of recorded failing programs.

A program is JSON: a few float64 leaves and a list of steps over numbered values.  The same
program runs on any module with PyTorch's API (``dyngrad`` or ``torch``); ``run`` returns what
is compared: every value, its requires_grad and grad_fn name, the error type of every step
that raised, the error type of backward, and the leaves' gradients.

``tests/data/fuzz_regressions.json`` keeps programs that once exposed a difference, with the
results PyTorch gave; this file replays them against dyngrad without needing PyTorch.
"""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "fuzz_regressions.json")

SHAPES = [(3, 4), (3, 4), (4,), (3, 1), (1, 4), (), (2, 3, 4), (3,)]
UNARY = ["neg", "tanh", "sigmoid", "sin", "cos", "exp_t", "log_s", "sqrt_s", "relu", "abs",
         "pow2", "rsub", "clone", "mul_s", "add_s"]
BINARY = ["add", "sub", "mul", "div_s"]
VIEWS = ["reshape_flat", "view_flat", "reshape_rev", "transpose", "unsqueeze", "slice0",
         "step1", "select0", "index0", "t"]
REDUCE = ["sum_all", "sum_dim", "mean_dim", "mean_all"]
INPLACE = ["add_", "mul_", "setitem", "setitem_t", "sub_"]


# --- generation -----------------------------------------------------------------------
def generate(seed, n_ops=None):
    """A random program, deterministic in ``seed`` (no library needed)."""
    r = random.Random(seed)
    n_leaves = r.randint(2, 4)
    leaves = []
    shapes = []
    for i in range(n_leaves):
        s = r.choice(SHAPES)
        leaves.append({"shape": list(s), "rg": r.random() < 0.8})
        shapes.append(tuple(s))
    steps = []
    n_ops = n_ops or r.randint(15, 40)
    no_grad_left = 0
    for _ in range(n_ops):
        if no_grad_left == 0 and r.random() < 0.06:
            no_grad_left = r.randint(1, 4)
        step = _gen_step(r, shapes)
        if step is None:
            continue
        if no_grad_left and step["op"] in VIEWS:
            # views made under no_grad follow PyTorch's special CreationMeta rules; those
            # are checked by directed tests, not mixed into random programs
            shapes.pop()
            continue
        if no_grad_left:
            step["ng"] = True
            no_grad_left -= 1
        steps.append(step)
    outs = r.sample(range(len(shapes)), k=min(len(shapes), r.randint(2, 6)))
    return {"seed": seed, "leaves": leaves, "steps": steps, "loss": sorted(outs)}


def _bcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _gen_step(r, shapes):
    n = len(shapes)
    recent = list(range(max(0, n - 6), n))
    pick = lambda: r.choice(recent if r.random() < 0.7 else list(range(n)))  # noqa: E731
    kind = r.choices(["unary", "binary", "view", "reduce", "matmul", "inplace", "detach"],
                     weights=[25, 25, 18, 8, 6, 12, 3])[0]
    a = pick()
    sa = shapes[a]
    if kind == "unary":
        op = r.choice(UNARY)
        shapes.append(sa)
        return {"op": op, "args": [a], "c": round(r.uniform(-2, 2), 3)}
    if kind == "binary":
        op = r.choice(BINARY)
        for _ in range(8):
            b = pick()
            out = _bcast(sa, shapes[b])
            if out is not None:
                shapes.append(out)
                return {"op": op, "args": [a, b]}
        return None
    if kind == "view":
        op = r.choice(VIEWS)
        nd = len(sa)
        if op in ("reshape_flat", "view_flat"):
            out = (int(np.prod(sa)),)
        elif op == "reshape_rev":
            out = tuple(reversed(sa))
        elif op == "transpose":
            if nd < 2:
                return None
            out = list(sa)
            out[0], out[-1] = out[-1], out[0]
            out = tuple(out)
        elif op == "t":
            if nd > 2:
                return None
            out = tuple(reversed(sa))
        elif op == "unsqueeze":
            d = r.randint(0, nd)
            shapes.append(sa[:d] + (1,) + sa[d:])
            return {"op": op, "args": [a], "d": d}
        elif op == "slice0":
            if nd < 1 or sa[0] < 1:
                return None
            out = (sa[0] - 1,) + sa[1:]
        elif op == "step1":
            if nd < 2:
                return None
            out = (sa[0], (sa[1] + 1) // 2) + sa[2:]
        elif op == "select0":
            if nd < 1 or sa[0] < 1:
                return None
            i = r.randrange(sa[0])
            shapes.append(sa[1:])
            return {"op": op, "args": [a], "i": i}
        else:  # index0
            if nd < 1 or sa[0] < 1:
                return None
            idx = [r.randrange(sa[0]) for _ in range(r.randint(1, 4))]
            shapes.append((len(idx),) + sa[1:])
            return {"op": op, "args": [a], "idx": idx}
        shapes.append(out)
        return {"op": op, "args": [a]}
    if kind == "reduce":
        op = r.choice(REDUCE)
        if op in ("sum_all", "mean_all"):
            shapes.append(())
            return {"op": op, "args": [a]}
        if not sa:
            return None
        d = r.randrange(len(sa))
        keep = r.random() < 0.3
        out = sa[:d] + ((1,) if keep else ()) + sa[d + 1:]
        shapes.append(out)
        return {"op": op, "args": [a], "d": d, "keep": keep}
    if kind == "matmul":
        for _ in range(8):
            b = pick()
            sb = shapes[b]
            if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[1]:
                shapes.append((sa[0], sb[0]))
                return {"op": "mm_t", "args": [a, b]}
            if len(sa) == 2 and len(sb) == 1 and sa[1] == sb[0]:
                shapes.append((sa[0],))
                return {"op": "mv", "args": [a, b]}
        return None
    if kind == "inplace":
        op = r.choice(INPLACE)
        if op in ("add_", "sub_"):
            b = pick()
            return {"op": op, "args": [a, b]}
        if op == "mul_":
            return {"op": op, "args": [a], "c": round(r.uniform(-2, 2), 3)}
        if not sa or sa[0] < 1:
            return None
        if op == "setitem":
            return {"op": op, "args": [a], "i": r.randrange(sa[0]), "c": round(r.uniform(-2, 2), 3)}
        b = pick()
        return {"op": op, "args": [a, b], "i": r.randrange(sa[0])}
    # detach
    shapes.append(sa)
    return {"op": "detach" if r.random() < 0.8 else "clone_detach", "args": [a]}


# --- running --------------------------------------------------------------------------
def _apply(lib, step, v):
    op = step["op"]
    args = [v[i] for i in step["args"]]
    a = args[0]
    c = step.get("c", 1.0)
    if op == "neg":
        return -a
    if op == "tanh":
        return lib.tanh(a)
    if op == "sigmoid":
        return lib.sigmoid(a)
    if op == "sin":
        return lib.sin(a)
    if op == "cos":
        return a.cos()
    if op == "exp_t":
        return lib.exp(lib.tanh(a))
    if op == "log_s":
        return lib.log(a * a + 1.0)
    if op == "sqrt_s":
        return (a * a + 0.5).sqrt()
    if op == "relu":
        return lib.relu(a)
    if op == "abs":
        return a.abs()
    if op == "pow2":
        return a ** 2
    if op == "rsub":
        return 1.0 - a
    if op == "clone":
        return a.clone()
    if op == "mul_s":
        return a * c
    if op == "add_s":
        return a + c
    if op == "add":
        return a + args[1]
    if op == "sub":
        return lib.sub(a, args[1])
    if op == "mul":
        return a * args[1]
    if op == "div_s":
        return a / (args[1] * args[1] + 0.5)
    if op == "reshape_flat":
        return a.reshape(-1)
    if op == "view_flat":
        return a.view(-1)
    if op == "reshape_rev":
        return a.reshape(tuple(reversed(tuple(a.shape))))
    if op == "transpose":
        return a.transpose(0, a.dim() - 1)
    if op == "t":
        return a.t()
    if op == "unsqueeze":
        return a.unsqueeze(step["d"])
    if op == "slice0":
        return a[1:]
    if op == "step1":
        return a[:, ::2]
    if op == "select0":
        return a[step["i"]]
    if op == "index0":
        return a[lib.tensor(step["idx"])]
    if op == "sum_all":
        return a.sum()
    if op == "mean_all":
        return a.mean()
    if op == "sum_dim":
        return a.sum(step["d"], keepdim=step["keep"])
    if op == "mean_dim":
        return lib.mean(a, step["d"], keepdim=step["keep"])
    if op == "mm_t":
        return lib.mm(a, args[1].t())
    if op == "mv":
        return lib.matmul(a, args[1])
    if op == "add_":
        a.add_(args[1])
        return None
    if op == "sub_":
        a.sub_(args[1], alpha=0.5)
        return None
    if op == "mul_":
        a.mul_(c)
        return None
    if op == "setitem":
        a[step["i"]] = c
        return None
    if op == "setitem_t":
        a[step["i"]] = args[1].sum()
        return None
    if op == "detach":
        return a.detach()
    if op == "clone_detach":
        return a.clone().detach()
    raise ValueError(f"unknown step {op}")


def _leaf_values(program):
    rs = np.random.RandomState(program["seed"] % (2 ** 32))
    return [rs.uniform(-1.5, 1.5, size=tuple(l["shape"])) for l in program["leaves"]]


def run(lib, program):
    """Run ``program`` with ``lib`` (dyngrad or torch); everything the comparison looks at."""
    vals = _leaf_values(program)
    v = []
    for arr, l in zip(vals, program["leaves"]):
        t = lib.tensor(arr, dtype=lib.float64)
        if l["rg"]:
            t.requires_grad_(True)
        v.append(t)
    leaves = list(v)
    errors = []
    for k, step in enumerate(program["steps"]):
        res = None
        if any(v[i] is None for i in step["args"]):
            err = "skipped"
        else:
            err = None
            try:
                if step.get("ng"):
                    with lib.no_grad():
                        res = _apply(lib, step, v)
                else:
                    res = _apply(lib, step, v)
            except Exception as e:  # compared by type
                err = type(e).__name__
        if err is not None:
            errors.append([k, err])
        if step["op"] not in ("add_", "sub_", "mul_", "setitem", "setitem_t"):
            v.append(res if err is None else None)
    # the loss: weighted sums of some values
    rs = np.random.RandomState(program["seed"] % (2 ** 32) + 1)
    loss = None
    for i in program["loss"]:
        t = v[i]
        if t is None:
            continue
        w = lib.tensor(rs.uniform(-1, 1, size=tuple(t.shape)), dtype=lib.float64)
        term = (t * w).sum()
        loss = term if loss is None else loss + term
    backward_error = None
    if loss is None or not loss.requires_grad:
        backward_error = "no_graph"
    else:
        try:
            loss.backward()
        except Exception as e:
            backward_error = type(e).__name__
    out = {"errors": errors, "backward_error": backward_error, "values": [], "grads": []}
    for t in v:
        if t is None:
            out["values"].append(None)
            continue
        d = {"shape": list(t.shape),
             "data": np.asarray(t.detach().numpy(), dtype=np.float64).tolist()}
        try:
            fn = t.grad_fn
            d.update(rg=bool(t.requires_grad), leaf=bool(t.is_leaf),
                     grad_fn=None if fn is None else type(fn).__name__)
        except Exception as e:  # PyTorch refuses some views' autograd metadata lazily
            d.update(rg=None, leaf=None, grad_fn="error:" + type(e).__name__)
        out["values"].append(d)
    for t in leaves:
        g = t.grad if t.is_leaf else None
        out["grads"].append(None if g is None else np.asarray(g.numpy(), dtype=np.float64).tolist())
    return out


def compare(got, exp, rtol=1e-7, atol=1e-9):
    """A list of differences between two ``run`` results (empty when they agree)."""
    diffs = []
    if got["errors"] != exp["errors"]:
        diffs.append(f"step errors: {got['errors']} vs {exp['errors']}")
    if got["backward_error"] != exp["backward_error"]:
        diffs.append(f"backward error: {got['backward_error']} vs {exp['backward_error']}")
    if len(got["values"]) != len(exp["values"]):
        diffs.append("number of values differs")
        return diffs
    for i, (g, e) in enumerate(zip(got["values"], exp["values"])):
        if (g is None) != (e is None):
            diffs.append(f"v{i}: {g is None} vs {e is None} missing")
            continue
        if g is None:
            continue
        if g["shape"] != e["shape"]:
            diffs.append(f"v{i}: shape {g['shape']} vs {e['shape']}")
            continue
        if g["rg"] != e["rg"]:
            diffs.append(f"v{i}: requires_grad {g['rg']} vs {e['rg']}")
        if g["leaf"] != e["leaf"]:
            diffs.append(f"v{i}: is_leaf {g['leaf']} vs {e['leaf']}")
        if g["grad_fn"] != e["grad_fn"]:
            diffs.append(f"v{i}: grad_fn {g['grad_fn']} vs {e['grad_fn']}")
        if not np.allclose(g["data"], e["data"], rtol=rtol, atol=atol, equal_nan=True):
            diffs.append(f"v{i}: values differ")
    for i, (g, e) in enumerate(zip(got["grads"], exp["grads"])):
        if (g is None) != (e is None):
            diffs.append(f"leaf {i}: grad is None: {g is None} vs {e is None}")
        elif g is not None and not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True):
            diffs.append(f"leaf {i}: gradients differ")
    return diffs


def describe(program):
    """The program as readable Python-like lines (for failure messages)."""
    lines = [f"# seed {program['seed']}"]
    for i, l in enumerate(program["leaves"]):
        lines.append(f"v{i} = leaf{tuple(l['shape'])} requires_grad={l['rg']}")
    n = len(program["leaves"])
    for k, s in enumerate(program["steps"]):
        extra = {kk: vv for kk, vv in s.items() if kk not in ("op", "args")}
        lhs = "" if s["op"].endswith("_") or s["op"].startswith("setitem") else f"v{n} = "
        if lhs:
            n += 1
        lines.append(f"[{k}] {lhs}{s['op']}({', '.join(f'v{i}' for i in s['args'])}) {extra or ''}")
    lines.append(f"loss = weighted sum of {['v%d' % i for i in program['loss']]}")
    return "\n".join(lines)


# --- replay ---------------------------------------------------------------------------
def _cases():
    if not os.path.exists(DATA):
        return []
    with open(DATA) as fh:
        return json.load(fh)["cases"]


CASES = _cases()


def test_regression_file_is_valid():
    with open(DATA) as fh:
        doc = json.load(fh)
    assert doc["cases"], "no recorded programs"
    for c in doc["cases"]:
        assert {"program", "torch", "note"} <= set(c)


@pytest.mark.parametrize("case", CASES, ids=[f"seed{c['program']['seed']}" for c in CASES])
def test_replay_recorded_program(case):
    import dyngrad
    got = run(dyngrad, case["program"])
    diffs = compare(got, case["torch"])
    assert not diffs, case["note"] + "\n" + "\n".join(diffs) + "\n" + describe(case["program"])


def test_generator_is_deterministic():
    assert generate(123) == generate(123)
    assert generate(123) != generate(124)
    assert json.loads(json.dumps(generate(7))) == generate(7)
