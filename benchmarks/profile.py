"""Where the time of one small op goes (``a*b`` on 3x3 float32): forward compute, node
creation, the backward formula, AccumulateGrad and the engine around them; plus cProfile of a
workload.  The dyngrad-only rows call engine internals and show '-' if those move."""
from __future__ import annotations

import sys
from time import perf_counter


def per_call_us(fn, quick):
    """Min over repeats of microseconds per call of ``fn()``."""
    target, repeats = (0.005, 3) if quick else (0.01, 25)
    n, t0 = 0, perf_counter()
    while perf_counter() - t0 < target / 4 or n < 3:
        fn()
        n += 1
    inner = max(1, int(target / ((perf_counter() - t0) / n)))
    best = float("inf")
    for _ in range(repeats):
        t = perf_counter()
        for _ in range(inner):
            fn()
        best = min(best, (perf_counter() - t) / inner)
    return best * 1e6


def _try(fn, quick):
    try:
        return per_call_us(fn, quick)
    except Exception:  # noqa: BLE001 - an internal moved; the row shows '-'
        return None


def _framework_rows(T, quick):
    """User-level timings that exist in both dyngrad and PyTorch."""
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 3)).astype(np.float32)
    y = rng.standard_normal((3, 3)).astype(np.float32)
    a0, b0 = T.tensor(x), T.tensor(y)
    a, b = T.tensor(x, requires_grad=True), T.tensor(y, requires_grad=True)
    g = T.ones(3, 3)
    r = {}
    r["fwd"] = per_call_us(lambda: a0 * b0, quick)
    r["fwd_graph"] = per_call_us(lambda: a * b, quick)
    (a * b).backward(g)
    r["build_bw"] = per_call_us(lambda: (a * b).backward(g), quick)
    r["bw"] = r["build_bw"] - r["fwd_graph"]

    def fresh():
        a.grad = None
        b.grad = None
        (a * b).backward(g)
    r["bw_fresh"] = per_call_us(fresh, quick) - r["fwd_graph"]

    r["build_sum"] = per_call_us(lambda: (a * b).sum(), quick)
    r["bw_sum"] = per_call_us(lambda: (a * b).sum().backward(), quick) - r["build_sum"]

    def chain():
        T.tanh(a * b).sum().backward()
    r["tiny_chain"] = per_call_us(chain, quick)
    return r, (a, b, g)


def _dyngrad_internals(quick, a, b, g):
    """Pieces of node creation and backward, timed by calling dyngrad's internals directly."""
    from dyngrad.autograd.node import Saved, edge_of, AccumulateGrad
    from dyngrad.autograd import engine
    from dyngrad import _record as _graph
    r = {}
    c = a * b
    node = c.grad_fn
    cls = type(node)
    nf, saved = node.next_functions, node._saved
    data = c.detach().numpy()
    gd = g.detach().numpy()
    r["edge_of"] = _try(lambda: edge_of(a), quick)
    r["saved"] = _try(lambda: Saved(a), quick)
    r["node_init"] = _try(lambda: cls(nf, saved), quick)
    r["record"] = _try(lambda: _graph.record(data, node), quick)
    r["formula"] = _try(lambda: node._bw(gd, False), quick)
    acc = AccumulateGrad.for_leaf(a)
    if a.grad is None:
        a.grad = g.clone()
    r["accumulate"] = _try(lambda: engine._accumulate(acc, gd, False, None), quick)
    return r


def op_profile(quick, backends):
    import numpy as np
    rows = []
    cols = {}
    fw = {}
    for name in ("dyngrad", "torch"):
        if name not in backends:
            continue
        try:
            T = __import__(name)
        except Exception:  # noqa: BLE001 - no torch: that column is left out
            continue
        if name == "torch":
            T.set_num_threads(1)
        fw[name], leaves = _framework_rows(T, quick)
        if name == "dyngrad":
            dg_leaves = leaves
        cols[name] = True
    cols["numpy"] = True
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 3)).astype(np.float32)
    y = rng.standard_normal((3, 3)).astype(np.float32)
    gx = np.ones((3, 3), np.float32)
    acc = np.zeros((3, 3), np.float32)

    def np_acc():
        acc.__iadd__(gx)
    npr = {"fwd": per_call_us(lambda: x * y, quick),
           "formula": per_call_us(lambda: (gx * y, gx * x), quick),
           "accumulate": per_call_us(np_acc, quick)}
    dg = fw.get("dyngrad", {})
    internals = _dyngrad_internals(quick, *dg_leaves) if "dyngrad" in fw else {}

    def row(what, **vals):
        rows.append({"what": what, **vals})

    def sub(d, k1, k2):
        return None if d.get(k1) is None or d.get(k2) is None else d[k1] - d[k2]

    tc = fw.get("torch", {})
    row("forward compute, no grad: c = a * b",
        dyngrad=dg.get("fwd"), torch=tc.get("fwd"), numpy=npr["fwd"])
    row("forward recording a node (a, b require grad)",
        dyngrad=dg.get("fwd_graph"), torch=tc.get("fwd_graph"))
    row("  node creation = difference of the two rows above",
        dyngrad=sub(dg, "fwd_graph", "fwd"), torch=sub(tc, "fwd_graph", "fwd"))
    row("    edge_of(input), per input", dyngrad=internals.get("edge_of"))
    row("    Saved(input), per saved input", dyngrad=internals.get("saved"))
    row("    MulBackward0(edges, saved) construction alone", dyngrad=internals.get("node_init"))
    row("    record(): wrap output Tensor, link grad_fn", dyngrad=internals.get("record"))
    row("c.backward(g), 1-node graph, .grad present", dyngrad=dg.get("bw"), torch=tc.get("bw"),
        numpy=npr["formula"] + 2 * npr["accumulate"])
    row("  backward formula alone (MulBackward0: g*b, g*a)",
        dyngrad=internals.get("formula"), numpy=npr["formula"])
    row("  AccumulateGrad in place, per leaf", dyngrad=internals.get("accumulate"),
        numpy=npr["accumulate"])
    eng = None
    if None not in (dg.get("bw"), internals.get("formula"), internals.get("accumulate")):
        eng = dg["bw"] - internals["formula"] - 2 * internals["accumulate"]
    row("  engine overhead = backward - formula - 2 x accumulate", dyngrad=eng)
    row("c.backward(g) with .grad None (first accumulation)",
        dyngrad=dg.get("bw_fresh"), torch=tc.get("bw_fresh"))
    row("s.backward(), s = (a*b).sum(): scalar root, 2 nodes",
        dyngrad=dg.get("bw_sum"), torch=tc.get("bw_sum"))
    row("tiny-chain: tanh(a*b).sum().backward(), whole step",
        dyngrad=dg.get("tiny_chain"), torch=tc.get("tiny_chain"))
    return {"op": "a * b on 3x3 float32, 1 thread", "columns": list(cols), "rows": rows,
            "notes": ["backward rows are (build + backward) minus build; indented dyngrad rows "
                      "call internals directly"]}


def cprofile(key, quick, top=25):
    """Print cProfile statistics of dyngrad running ``key``, by own time and by cumulative."""
    import cProfile
    import pstats
    import numpy as np
    import dyngrad
    from . import spec
    from .workloads import WORKLOADS
    wl = WORKLOADS[key]
    impl = wl.framework(dyngrad, wl.init(np.random.default_rng(spec.SEED)))
    impl.step()
    t0 = perf_counter()
    impl.step()
    one = perf_counter() - t0
    n = max(1, int((0.3 if quick else 2.0) / max(one, 1e-7)))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        impl.step()
    prof.disable()
    print(f"cProfile of dyngrad {key}: {n} steps ({one * 1e6:.1f} us per step unprofiled)")
    st = pstats.Stats(prof, stream=sys.stdout)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top // 2)
