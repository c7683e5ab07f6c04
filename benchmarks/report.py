"""Plain-text tables of a suite result (the dict also written as JSON)."""
from __future__ import annotations

from . import spec

NAMES = {"dyngrad": "dyngrad", "numpy": "numpy", "torch": "pytorch"}


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f}us"
    if s < 1:
        return f"{s * 1e3:.2f}ms"
    return f"{s:.2f}s"


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}x"


def _mark(met):
    return {True: "met", False: "MISS", None: ""}[met]


def _goal(key):
    base, g = spec.GOALS[key]
    return f"<={g}x {NAMES[base]}"


def _cell(b):
    st = b.get("status", "-")
    if st != "ok":
        return st.split(":")[0] if len(st) > 18 else st
    return f"{fmt_time(b['min_s'])} ({fmt_time(b['median_s'])})"


def _machine(res):
    m = res["machine"]
    v = m.get("versions", {})
    lines = [f"machine: {m.get('cpu_model')}, {m.get('logical_cpus')} logical CPUs "
             f"({m.get('physical_cores_per_socket')} cores per socket); "
             f"{m.get('platform')}",
             "versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if val)
             + (f"; commit {m['dyngrad_commit']}" if m.get("dyngrad_commit") else "")]
    if m.get("load_average_at_start") is not None:
        la = m["load_average_at_start"]
        lines.append(f"load average (1/5/15 min) at start: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}"
                     + (f", at end: {m['load_average_at_end'][0]:.2f}"
                        if m.get("load_average_at_end") else "")
                     + "  (other work on the machine makes times noisier; minima suffer least)")
    blas = m.get("blas")
    if blas:
        lines.append("thread pools: " + ", ".join(
            f"{b.get('internal_api')} {b.get('version') or ''} ({b.get('num_threads')} threads)"
            for b in blas))
    return lines


def text(res) -> str:
    cfg = res["config"]
    out = [f"dyngrad benchmarks{' (quick mode: few repeats, noisy)' if cfg['quick'] else ''}: "
           "time per step in float32, min (median) over repeats; ratios use the minima"]
    out += _machine(res)
    runs = res["runs"]
    keys = cfg["only"]

    out.append("")
    out.append(f"Correctness, checked before timing: one forward+backward from the same "
               f"initial numbers, max abs difference from {spec.REFERENCE} "
               f"(loss / gradients; tolerance {spec.ATOL:g} + {spec.RTOL:g} * max|ref|)")
    for n, run in runs.items():
        out.append(f"  {n} thread{'s' if n != '1' else ''}:")
        for key in keys:
            w = run["workloads"][key]
            parts = []
            for be, b in w["backends"].items():
                if be == spec.REFERENCE:
                    continue
                c = w["check"].get(be)
                st = b["status"] if b["status"] != "ok" and "min_s" not in b else "ok"
                if c is not None and c["ok"]:
                    st = f"ok {c['max_abs_diff_loss']:.1e} / {c['max_abs_diff_grad']:.1e}"
                elif st.startswith("skipped"):
                    st = "skipped"
                parts.append(f"{NAMES[be]} {st}")
            data = f"   [data: {w['data']}]" if w.get("data") else ""
            out.append(f"    {key:<16} " + ";  ".join(parts) + data)

    for n, run in runs.items():
        out.append("")
        out.append(f"Time per step, {n} thread{'s' if n != '1' else ''} (BLAS/OpenMP pinned, "
                   "fresh process)")
        hdr = (f"  {'workload':<16} {'dyngrad':>20} {'numpy floor':>20} {'pytorch':>20}   "
               f"{'dg/pytorch':>10} {'dg/numpy':>9}   goal")
        out.append(hdr)
        for key in keys:
            w = run["workloads"][key]
            b = w["backends"]
            r = w.get("ratios", {})
            g = w.get("goal", {})
            out.append(f"  {key:<16} {_cell(b.get('dyngrad', {})):>20} "
                       f"{_cell(b.get('numpy', {})):>20} {_cell(b.get('torch', {})):>20}   "
                       f"{fmt_ratio(r.get('dyngrad/torch')):>10} "
                       f"{fmt_ratio(r.get('dyngrad/numpy')):>9}   "
                       f"{_goal(key)} {_mark(g.get('met'))}")
        for key in keys:
            for be, b in run["workloads"][key]["backends"].items():
                st = b["status"]
                if st != "ok" and not st.startswith("skipped"):
                    out.append(f"  note: {key} / {NAMES[be]}: {st}")
                elif st.startswith("skipped") and key == keys[0]:
                    out.append(f"  note: {NAMES[be]} {st}")

    out.append("")
    out.append("Ratios beside their goals (dyngrad time / other time, @ threads; lower is "
               "better).  In brackets: the same from process CPU time, which waiting for a "
               "busy CPU does not inflate")
    head = f"  {'workload':<16}"
    for n in runs:
        head += f" {'dg/pytorch @' + n:>21} {'dg/numpy @' + n:>21}"
    out.append(head + "   goal")
    for key in keys:
        line = f"  {key:<16}"
        mets = []
        for n, run in runs.items():
            r = run["workloads"][key].get("ratios", {})
            for o in ("torch", "numpy"):
                cell = (f"{fmt_ratio(r.get('dyngrad/' + o))} "
                        f"({fmt_ratio(r.get('dyngrad/' + o + ' cpu'))})")
                line += f" {cell:>21}"
            mets.append(_mark(run["workloads"][key].get("goal", {}).get("met")) or "-")
        out.append(line + f"   {_goal(key)}: " + "/".join(mets))

    imp = res.get("import_time")
    if imp:
        out.append("")
        out.append(f"Import time (fresh process, min of {imp['samples']} after one untimed "
                   "import that writes the bytecode cache; interpreter start excluded): " + ", ".join(
                       f"{NAMES[b]} {imp[b]:.3f}s" for b in ("dyngrad", "torch", "numpy")
                       if imp.get(b) is not None)
                   + f"   goal dyngrad <= {imp['goal_s']}s: {_mark(imp['goal_met']) or '-'}")
    mem = res.get("memory")
    if mem:
        out.append(f"Peak memory of one {mem['workload']} (resident-size rise over the step, "
                   "after one warm-up step; own process each):")
        for be, m in mem["backends"].items():
            if m.get("status") != "ok":
                out.append(f"  {NAMES[be]:<8} {m.get('status')}")
                continue
            tm = m.get("tracemalloc_peak_mb")
            out.append(f"  {NAMES[be]:<8} {m['rss_delta_mb']:7.1f} MB"
                       + (f"   (tracemalloc peak {tm:.1f} MB)" if tm is not None else ""))
        out.append(f"  goal dyngrad <= pytorch: {_mark(mem['goal_met']) or '-'}")
    if "elapsed_s" in res:
        out.append("")
        out.append(f"suite took {res['elapsed_s']:.1f}s; correctness "
                   f"{'passed' if res['ok'] else 'FAILED'}")
    return "\n".join(out)


def profile_table(prof) -> str:
    """Where the time of one small op (a*b on 3x3 float32) goes, per backend."""
    cols = [c for c in ("dyngrad", "torch", "numpy") if c in prof["columns"]]
    out = [f"Per-op profile: {prof['op']}, microseconds per call (min over repeats)",
           f"  {'':<56}" + "".join(f"{NAMES[c]:>10}" for c in cols)]
    for row in prof["rows"]:
        out.append(f"  {row['what']:<56}" + "".join(
            f"{row[c]:>10.2f}" if row.get(c) is not None else f"{'-':>10}" for c in cols))
    for note in prof.get("notes", []):
        out.append(f"  {note}")
    return "\n".join(out)
