"""Regenerate the README's generated sections: the support table (from the op registry, the
op table in tests/optable and the nn/optim namespaces) and the benchmark table (from
benchmarks/results/latest.md when present).  Run from the project root."""
from __future__ import annotations

import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "src"), ROOT]

import dyngrad  # noqa: E402
from dyngrad.ops import OPS  # noqa: E402


def _optable_names():
    try:
        from tests.optable import all_rows
    except Exception:  # noqa: BLE001 - the table is optional for this script
        return set()
    return {r.name for r in all_rows()}


def support_table() -> str:
    checked = _optable_names()
    families: dict[str, list[str]] = {}
    for name, info in sorted(OPS.items()):
        if name.startswith("_"):
            continue
        fam = info["module"]
        mark = name
        if any(c == name or c.startswith(name + "_") for c in checked):
            mark += "✓"
        families.setdefault(fam, []).append(mark)
    lines = ["Tensor ops (`dyngrad.<name>` and/or `Tensor.<name>`; ✓ = a row of the op table "
             "checks forward values, gradients (gradcheck) and second derivatives):", "",
             "| family | ops |", "|---|---|"]
    for fam, names in sorted(families.items()):
        lines.append(f"| {fam} | {', '.join(f'`{n}`' for n in names)} |")
    F = dyngrad.nn.functional
    # public functions defined in nn.functional, plus the activations it re-exports
    fn_names = sorted(n for n, v in vars(F).items()
                      if inspect.isfunction(v) and not n.startswith("_")
                      and (v.__module__ == F.__name__ or n in ("relu", "tanh", "sigmoid")))
    # (through dir and getattr: a layer's file is loaded when its class is first asked for)
    mods = sorted(n for n in dir(dyngrad.nn)
                  if inspect.isclass(getattr(dyngrad.nn, n)) and
                  issubclass(getattr(dyngrad.nn, n), dyngrad.nn.Module))
    opts = sorted(n for n, v in vars(dyngrad.optim).items()
                  if inspect.isclass(v) and issubclass(v, dyngrad.optim.Optimizer) and n != "Optimizer"
                  and not n.startswith("_"))
    sched = []
    ls = getattr(dyngrad.optim, "lr_scheduler", None)
    if ls is not None:
        sched = sorted(n for n, v in vars(ls).items() if inspect.isclass(v)
                       and issubclass(v, ls.LRScheduler) and not n.startswith("_")
                       and v is not ls.LRScheduler)
    lines += ["", "| namespace | supported |", "|---|---|",
              f"| `nn.functional` | {', '.join(f'`{n}`' for n in fn_names)} |",
              f"| `nn` modules | {', '.join(f'`{n}`' for n in mods)} |",
              f"| `optim` | {', '.join(f'`{n}`' for n in opts)} |",
              f"| `optim.lr_scheduler` | {', '.join(f'`{n}`' for n in sched)} |"]
    auto = dyngrad.autograd
    api = [n for n in ("backward", "grad", "Function", "gradcheck", "gradgradcheck", "functional",
                       "forward_ad", "graph", "detect_anomaly", "set_detect_anomaly")
           if hasattr(auto, n)]
    lines.append(f"| `autograd` | {', '.join(f'`{n}`' for n in api)} |")
    import dyngrad.func as func
    lines.append(f"| `func` | {', '.join(f'`{n}`' for n in func.__all__)} |")
    lines.append("")
    lines.append(f"{len([k for k in OPS if not k.startswith('_')])} registered tensor ops, "
                 f"{len(checked)} op-table rows.")
    return "\n".join(lines)


GOALS = {"tiny-chain": ("torch", 0.35), "mininet-step": ("torch", 0.25),
         "scalar-graph": ("torch", 0.35), "digits-mlp-step": ("torch", 0.6),
         "wide-mlp-step": ("numpy", 1.05), "conv-step": ("torch", 1.5),
         "rnn-unroll": ("torch", 0.8)}


def _t(s):
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def bench_table() -> str | None:
    """The README's speed section from benchmarks/results/latest.json."""
    import json
    p = os.path.join(ROOT, "benchmarks", "results", "latest.json")
    if not os.path.exists(p):
        return None
    with open(p, encoding="utf-8") as f:
        res = json.load(f)
    m = res["machine"]
    v = m.get("versions", {})
    lines = [f"Measured with `dyngrad bench` (full run, PyTorch installed beside) on "
             f"{m.get('cpu_model', '?')}, {m.get('logical_cpus', '?')} logical CPUs, Python "
             f"{v.get('python')}, NumPy {v.get('numpy')}, PyTorch {v.get('torch')}; "
             f"minimum time per step, BLAS/OpenMP pinned to 1 and 2 threads. The NumPy column "
             f"is a hand-written forward+backward of the same step.", "",
             "| workload | dyngrad (1 thr) | NumPy floor | PyTorch | dyngrad / PyTorch @1 | "
             "@2 | dyngrad / NumPy @1 | goal | met @1 / @2 |",
             "|---|---|---|---|---|---|---|---|---|"]
    runs = res["runs"]
    for key, (other, goal) in GOALS.items():
        cells = {}
        for thr in ("1", "2"):
            w = runs.get(thr, {}).get("workloads", {}).get(key)
            if not w:
                continue
            b = w["backends"]
            cells[thr] = {k: b[k]["min_s"] for k in b if b[k].get("status") == "ok"}
        c1 = cells.get("1", {})
        c2 = cells.get("2", {})
        if "dyngrad" not in c1:
            continue

        def ratio(c, o):
            return c["dyngrad"] / c[o] if o in c and "dyngrad" in c else None

        r1t, r2t, r1n = ratio(c1, "torch"), ratio(c2, "torch"), ratio(c1, "numpy")
        g1 = ratio(c1, other)
        g2 = ratio(c2, other)
        met = "/".join("—" if g is None else ("yes" if g <= goal else "no") for g in (g1, g2))
        fmt = (lambda r: "—" if r is None else f"{r:.2f}×")
        lines.append(f"| {key} | {_t(c1['dyngrad'])} | {_t(c1['numpy']) if 'numpy' in c1 else '—'} | "
                     f"{_t(c1['torch']) if 'torch' in c1 else '—'} | {fmt(r1t)} | {fmt(r2t)} | "
                     f"{fmt(r1n)} | ≤ {goal}× {'PyTorch' if other == 'torch' else 'NumPy'} | {met} |")
    it = res.get("import_time", {})
    mem = res.get("memory", {}).get("backends", {})
    lines.append("")
    if it:
        lines.append(f"Import: dyngrad {it.get('dyngrad', 0):.3f} s, PyTorch {it.get('torch', 0):.3f} s, "
                     f"NumPy {it.get('numpy', 0):.3f} s (goal ≤ 0.1 s: "
                     f"{'met' if it.get('goal_met') else 'missed'}).")
    if mem:
        parts = [f"{k} {v['rss_delta_mb']:.1f} MB" for k, v in mem.items() if v.get("status") == "ok"]
        lines.append(f"Peak memory of one wide-mlp step (resident-size rise over the step, after a "
                     f"warm-up step): {', '.join(parts)}.")
        tm = [f"{k} {v['tracemalloc_peak_mb']:.1f} MB" for k, v in mem.items()
              if v.get("status") == "ok" and v.get("tracemalloc_peak_mb") is not None]
        if tm:
            lines.append(f"Arrays alive at the step's peak (tracemalloc): {', '.join(tm)}. dyngrad "
                         f"keeps freed blocks for reuse (glibc's mmap/trim thresholds raised at "
                         f"import, `DYNGRAD_MALLOC_TUNING=0` to disable), so a step reuses memory "
                         f"instead of page-faulting it in again.")
    prof = os.path.join(ROOT, "benchmarks", "results", "profile.txt")
    if os.path.exists(prof):
        with open(prof, encoding="utf-8") as f:
            lines += ["", "Where the time of one small op goes (`python -m benchmarks --profile`, "
                      "a*b on 3x3 float32):", "", "```", f.read().strip(), "```"]
    return "\n".join(lines)


def compile_table() -> str | None:
    """The compiled-step table, from benchmarks/results/compile.json (``python -m
    benchmarks.compile --torch-compile --backend numba --json ...``)."""
    path = os.path.join(ROOT, "benchmarks", "results", "compile.json")
    if not os.path.exists(path):
        return None
    import json
    with open(path, encoding="utf-8") as f:
        res = json.load(f)

    def us(r, k):
        v = r.get(k)
        if v is None:
            return ""
        v *= 1e6
        return f"{v:.1f}" if v < 1000 else f"{v:,.0f}"

    lines = ["| workload | dyngrad eager | compiled | numba backend | hand-written NumPy | "
             "compiled / NumPy | PyTorch eager | torch.compile (step as written) | "
             "torch.compile (one graph, torch.func) | capture |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, r in res.items():
        ratio = f"{r['dyngrad compiled'] / r['numpy']:.2f}x" if r.get("numpy") and \
            r.get("dyngrad compiled") else ""
        cap = f"{r['dyngrad capture'] * 1e3:.0f} ms" if r.get("dyngrad capture") else ""
        lines.append(f"| {key} | {us(r, 'dyngrad eager')} | {us(r, 'dyngrad compiled')} | "
                     f"{us(r, 'dyngrad numba')} | {us(r, 'numpy')} | {ratio} | "
                     f"{us(r, 'torch eager')} | {us(r, 'torch compiled')} | "
                     f"{us(r, 'torch.func compiled')} | {cap} |")
    return "\n".join(lines)


def replace(text, key, body):
    pat = re.compile(rf"(<!-- {key}:start -->\n).*?(\n<!-- {key}:end -->)", re.S)
    return pat.sub(lambda m: m.group(1) + body + m.group(2), text)


def main():
    readme = os.path.join(ROOT, "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    text = replace(text, "support-table", support_table())
    b = bench_table()
    if b:
        text = replace(text, "bench-table", b)
    c = compile_table()
    if c:
        text = replace(text, "compile-table", c)
    with open(readme, "w", encoding="utf-8") as f:
        f.write(text)
    print("README tables updated")


if __name__ == "__main__":
    main()
