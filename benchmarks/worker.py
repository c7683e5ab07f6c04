"""The child process side: pins threads before NumPy loads, checks that the backends agree on
every workload, then times each one (warm-up, then repeats; min and median per step)."""
from __future__ import annotations

import json
import os
import sys
import time
import types

from . import spec
from .runner import THREAD_VARS


def _threads():
    """The thread count this child runs at; pins every BLAS/OpenMP variable to it (this only
    takes effect because NumPy is imported after it)."""
    n = os.environ.get("OMP_NUM_THREADS") or "1"
    for v in THREAD_VARS:
        os.environ.setdefault(v, n)
    return int(n)


def _log(msg):
    print(msg, file=sys.stderr, flush=True)


def load_backends(names, threads):
    """name -> module (None for NumPy), or name -> "skipped: reason" string."""
    mods = {}
    for name in names:
        if name == "numpy":
            mods[name] = None
        elif name == "dyngrad":
            import dyngrad
            mods[name] = dyngrad
        elif name == "torch":
            try:
                import torch
                torch.set_num_threads(threads)
                mods[name] = torch
            except Exception as e:  # noqa: BLE001 - any failure to load means skip it
                mods[name] = f"skipped: import torch failed ({type(e).__name__}: {e})"
    return mods


def versions(mods):
    import numpy as np
    v = {"python": sys.version.split()[0], "numpy": np.__version__}
    for name in ("dyngrad", "torch"):
        m = mods.get(name)
        v[name] = getattr(m, "__version__", None) if isinstance(m, types.ModuleType) else None
    try:
        import sklearn
        v["scikit-learn"] = sklearn.__version__
    except ImportError:
        v["scikit-learn"] = None
    return v


def blas_info():
    """The BLAS libraries loaded and their thread counts (when threadpoolctl is installed)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return None
    return [{k: d.get(k) for k in ("internal_api", "version", "num_threads", "architecture")}
            for d in threadpool_info()]


def build(wl, backend, mod, arrs):
    return wl.numpy(arrs) if backend == "numpy" else wl.framework(mod, arrs)


def _unavailable(e, backend):
    """The 'unavailable: ...' status for a missing dyngrad op, else None (a real error)."""
    if backend != "dyngrad":
        return None
    if isinstance(e, AttributeError) and isinstance(getattr(e, "obj", None), types.ModuleType):
        return f"unavailable: {e.obj.__name__}.{e.name}"
    if isinstance(e, NotImplementedError):
        return f"unavailable: {e}"
    return None


def check_one(wl, backend, mod, arrs):
    """Run one forward+backward on fresh state: (status, (loss, loss dtype, grads) or None)."""
    from .workloads import missing_attr
    if isinstance(mod, str):
        return mod, None
    if backend != "numpy":
        miss = missing_attr(mod, wl.needs)
        if miss:
            return f"unavailable: {mod.__name__}.{miss}", None
    try:
        return "ok", build(wl, backend, mod, arrs).check()
    except Exception as e:  # noqa: BLE001 - reported per workload, the suite goes on
        return _unavailable(e, backend) or f"error: {type(e).__name__}: {e}", None


def compare(checks):
    """Compare every backend's loss and gradients with the reference backend's."""
    import numpy as np
    out = {}
    ref = checks.get(spec.REFERENCE)
    for be, got in checks.items():
        if got is None:
            continue
        loss, dt, grads = got
        problems = []
        if dt != "float32" and not dt.endswith(".float32"):
            problems.append(f"loss dtype {dt}")
        for i, g in enumerate(grads):
            if str(g.dtype) != "float32":
                problems.append(f"grad {i} dtype {g.dtype}")
        rec = {"loss": loss, "loss_dtype": dt, "max_abs_diff_loss": 0.0,
               "max_abs_diff_grad": 0.0}
        if ref is not None and be != spec.REFERENCE:
            rloss, _, rgrads = ref
            d = abs(loss - rloss)
            rec["max_abs_diff_loss"] = d
            if not d <= spec.ATOL + spec.RTOL * max(abs(rloss), 1.0):
                problems.append(f"loss {loss!r} vs {rloss!r}")
            if len(grads) != len(rgrads):
                problems.append(f"{len(grads)} gradients vs {len(rgrads)}")
            worst = 0.0
            for i, (g, r) in enumerate(zip(grads, rgrads)):
                g, r = np.asarray(g, np.float64), np.asarray(r, np.float64)
                if g.shape != r.shape:
                    problems.append(f"grad {i} shape {g.shape} vs {r.shape}")
                    continue
                diff = float(np.max(np.abs(g - r))) if g.size else 0.0
                worst = max(worst, diff)
                tol = spec.ATOL + spec.RTOL * float(np.max(np.abs(r)) if r.size else 0.0)
                if not diff <= tol:
                    problems.append(f"grad {i} {tuple(g.shape)}: max abs diff {diff:.3g} > "
                                    f"tolerance {tol:.3g}")
            rec["max_abs_diff_grad"] = worst
        rec["ok"] = not problems
        rec["problems"] = problems
        out[be] = rec
    return out


def measure(steps, quick):
    """Seconds per step of each backend.  Each is warmed up and gets an inner count so a repeat
    lasts ~target; then the repeats of all backends are interleaved (in rotating order), so
    load from other processes falls on every backend alike."""
    from time import perf_counter, process_time
    warm, target, repeats = (0.02, 0.005, 3) if quick else (0.3, 0.05, 15)
    inner, warmups = {}, {}
    for be, step in steps.items():
        n, t0 = 0, perf_counter()
        while True:
            step()
            n += 1
            el = perf_counter() - t0
            if el >= warm and (n >= 2 or quick):
                break
        inner[be], warmups[be] = max(1, int(target / (el / n))), n
    samples = {be: [] for be in steps}
    cpu = {be: [] for be in steps}
    order = list(steps)
    for r in range(repeats):
        for be in order[r % len(order):] + order[:r % len(order)]:
            step, k = steps[be], inner[be]
            c, t = process_time(), perf_counter()
            for _ in range(k):
                step()
            samples[be].append((perf_counter() - t) / k)
            cpu[be].append((process_time() - c) / k)
    out = {}
    for be, xs in samples.items():
        xs.sort()
        out[be] = {"min_s": xs[0], "median_s": xs[len(xs) // 2], "inner": inner[be],
                   "repeats": repeats, "warmup_steps": warmups[be],
                   "cpu_min_s": min(cpu[be])}   # process CPU time: all threads, no waiting
    return out


def suite(args):
    n = _threads()
    import numpy as np
    from .workloads import WORKLOADS
    names = [b for b in args.backends.split(",") if b]
    mods = load_backends(names, n)
    res = {"threads": n, "env": {v: os.environ.get(v) for v in THREAD_VARS},
           "versions": versions(mods), "blas": blas_info(), "workloads": {}}
    keys = args.only or spec.KEYS
    tag = f"[{n} thread{'s' if n > 1 else ''}]"

    # 1. correctness first: same initial numbers, same loss and gradients
    for key in keys:
        wl = WORKLOADS[key]
        arrs = wl.init(np.random.default_rng(spec.SEED))
        status, checks = {}, {}
        for be in names:
            status[be], checks[be] = check_one(wl, be, mods[be], arrs)
        cmp = compare(checks)
        for be, c in cmp.items():
            if not c["ok"]:
                status[be] = "mismatch: " + "; ".join(c["problems"])
        entry = {"description": spec.DESCRIPTIONS[key], "data": arrs.get("source"),
                 "check": cmp, "backends": {be: {"status": s} for be, s in status.items()}}
        entry["ok"] = not any(s.startswith(("error", "mismatch")) for s in status.values())
        res["workloads"][key] = entry
        _log(f"{tag} check {key}: " + ", ".join(
            f"{be} {s}" + (f" (max diff {cmp[be]['max_abs_diff_grad']:.1e})"
                           if be in cmp and be != spec.REFERENCE and s == "ok" else "")
            for be, s in status.items()))

    # 2. timing, only of what computed the right numbers
    for key in keys:
        wl = WORKLOADS[key]
        entry = res["workloads"][key]
        arrs = wl.init(np.random.default_rng(spec.SEED))
        steps = {be: build(wl, be, mods[be], arrs).step for be in names
                 if entry["backends"][be]["status"] == "ok"}
        try:
            for be, m in measure(steps, args.quick).items():
                entry["backends"][be].update(m)
        except Exception as e:  # noqa: BLE001 - checked once, failed later: report, go on
            for be in steps:
                entry["backends"][be]["status"] = f"error while timing: {type(e).__name__}: {e}"
            entry["ok"] = False
        entry["ratios"] = ratios(entry["backends"])
        base, goal = spec.GOALS[key]
        r = entry["ratios"].get(f"dyngrad/{base}")
        entry["goal"] = {"against": base, "max_ratio": goal,
                         "met": None if r is None else r <= goal}
        _log(f"{tag} time  {key}: " + ", ".join(
            f"{be} {b['min_s'] * 1e6:.1f}us" for be, b in entry["backends"].items()
            if "min_s" in b))
    res["ok"] = all(e["ok"] for e in res["workloads"].values())
    return res


def ratios(backends):
    """dyngrad over each other backend, from wall-time minima and from CPU-time minima."""
    out = {}
    for field, suffix in (("min_s", ""), ("cpu_min_s", " cpu")):
        d = backends.get("dyngrad", {}).get(field)
        for other in ("torch", "numpy"):
            o = backends.get(other, {}).get(field)
            out[f"dyngrad/{other}{suffix}"] = d / o if d and o else None
    return out


def _rss_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def memory(args):
    """Peak extra resident memory of one wide-mlp step (after one warm-up step), and the
    tracemalloc peak for the NumPy-based backends (PyTorch's allocator is invisible to it)."""
    n = _threads()
    import gc
    import tracemalloc
    import numpy as np
    from .workloads import WORKLOADS
    be = args.backends
    mod = load_backends([be], n)[be]
    if isinstance(mod, str):
        return {"status": mod}
    wl = WORKLOADS[spec.MEMORY_WORKLOAD]
    impl = build(wl, be, mod, wl.init(np.random.default_rng(spec.SEED)))
    impl.step()
    gc.collect()
    out = {"status": "ok"}
    before = _rss_kb("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets the peak (VmHWM) to the current resident size
        impl.step()
        out["rss_delta_mb"] = (_rss_kb("VmHWM") - before) / 1024
        out["method"] = "VmHWM after reset, minus VmRSS before the step"
    except OSError:
        import resource
        impl.step()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out["rss_delta_mb"] = max(0, peak - before) / 1024
        out["method"] = "ru_maxrss minus VmRSS before the step (a lower bound)"
    out["baseline_rss_mb"] = before / 1024
    if be != "torch":
        gc.collect()
        tracemalloc.start()
        impl.step()
        out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
    else:
        out["tracemalloc_peak_mb"] = None
    return out


def main(args) -> int:
    t = time.perf_counter()
    if args.worker == "suite":
        res = suite(args)
    elif args.worker == "memory":
        res = memory(args)
    elif args.worker == "profile":
        _threads()
        from . import profile
        res = profile.op_profile(args.quick, args.backends.split(","))
    else:
        _threads()
        from . import profile
        profile.cprofile(args.cprofile, args.quick)
        res = {}
    res["child_elapsed_s"] = time.perf_counter() - t
    with open(args.out, "w") as f:
        json.dump(res, f)
    return 0
