"""Runs the suite: the parent process starts one fresh child per thread setting (BLAS threads
are fixed when NumPy loads), each child checks that the backends agree and then times them;
the parent prints the ratio tables and writes JSON."""
from __future__ import annotations

import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import spec

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# ----------------------------------------------------------------------------- parent side
def _child_env(threads):
    """Environment of a child: pinned thread counts and a path finding benchmarks and dyngrad."""
    env = dict(os.environ)
    for v in THREAD_VARS:
        env[v] = str(threads)
    paths = [str(ROOT)]
    found = importlib.util.find_spec("dyngrad")
    if found is not None and found.origin:
        paths.append(str(Path(found.origin).resolve().parents[1]))
    elif (ROOT / "src" / "dyngrad").is_dir():
        paths.append(str(ROOT / "src"))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _pass_through(args):
    out = []
    if args.quick:
        out.append("--quick")
    if args.only:
        out += ["--only", *args.only]
    out += ["--backends", args.backends]
    return out


def spawn(kind, threads, args, extra=(), capture=True, env_extra=None):
    """Run ``python -m benchmarks --worker kind`` in a fresh process; return its JSON result."""
    env = _child_env(threads)
    env.update(env_extra or {})
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        cmd = [sys.executable, "-m", "benchmarks", "--worker", kind, "--out", str(out),
               *_pass_through(args), *extra]
        proc = subprocess.run(cmd, env=env, cwd=str(ROOT))
        if not out.exists():
            raise RuntimeError(f"benchmark child ({kind}, {threads} threads) failed with exit "
                               f"code {proc.returncode}")
        return json.loads(out.read_text())


def _import_seconds(module, env, samples=5):
    """Min over fresh processes of the time ``import module`` takes (interpreter start excluded)."""
    code = (f"import time; t = time.perf_counter(); import {module}; "
            f"print(time.perf_counter() - t)")
    best = None
    subprocess.run([sys.executable, "-c", f"import {module}"], env=env, cwd=str(ROOT),
                   capture_output=True)  # untimed: writes the bytecode cache
    for _ in range(samples):
        p = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(ROOT),
                           capture_output=True, text=True)
        if p.returncode != 0:
            return None
        t = float(p.stdout.strip().splitlines()[-1])
        best = t if best is None else min(best, t)
    return best


def measure_imports(backends, quick):
    env = _child_env(1)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # time imports as installed: bytecode cached
    out = {"goal_s": spec.IMPORT_GOAL_S, "samples": 2 if quick else 5, "bytecode_cached": True}
    for be, mod in (("dyngrad", "dyngrad"), ("torch", "torch"), ("numpy", "numpy")):
        out[be] = _import_seconds(mod, env, out["samples"]) if be in backends else None
    out["goal_met"] = None if out["dyngrad"] is None else out["dyngrad"] <= spec.IMPORT_GOAL_S
    return out


def measure_memory(args, backends):
    """Peak memory of one wide-mlp step per backend, each in its own fresh process."""
    out = {"workload": spec.MEMORY_WORKLOAD, "backends": {}}
    for be in backends:
        a = argparse_copy(args, backends=be, only=None)
        try:
            out["backends"][be] = spawn("memory", 1, a, env_extra={
                # a fixed mmap threshold keeps glibc from caching large freed blocks, so the
                # resident size tracks live memory in every backend alike
                "MALLOC_MMAP_THRESHOLD_": "131072"})
        except RuntimeError as e:
            out["backends"][be] = {"status": f"error: {e}"}
    rss = {be: r.get("rss_delta_mb") for be, r in out["backends"].items()}
    out["goal_met"] = (rss["dyngrad"] <= rss["torch"]
                       if rss.get("dyngrad") is not None and rss.get("torch") is not None else None)
    return out


def argparse_copy(args, **changes):
    import argparse
    d = dict(vars(args))
    d.update(changes)
    return argparse.Namespace(**d)


def machine_info():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "executable": sys.executable, "logical_cpus": os.cpu_count()}
    if hasattr(os, "getloadavg"):
        info["load_average_at_start"] = list(os.getloadavg())
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        info["dyngrad_commit"] = (rev + ("+uncommitted changes in src" if dirty else "")) or None
    except (OSError, subprocess.SubprocessError):
        info["dyngrad_commit"] = None
    try:
        text = Path("/proc/cpuinfo").read_text()
        models = [ln.split(":", 1)[1].strip() for ln in text.splitlines()
                  if ln.startswith("model name")]
        info["cpu_model"] = models[0] if models else platform.processor()
        cores = {ln.split(":", 1)[1].strip() for ln in text.splitlines()
                 if ln.startswith("core id")}
        info["physical_cores_per_socket"] = len(cores) or None
    except OSError:
        info["cpu_model"] = platform.processor()
    return info


def run(args) -> int:
    if args.worker:
        from . import worker
        return worker.main(args)
    try:
        threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        print(f"benchmarks: bad --threads {args.threads!r} (want e.g. 1,2)", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in backends if b not in spec.BACKENDS]
    if bad or spec.REFERENCE not in backends:
        print(f"benchmarks: --backends must be among {','.join(spec.BACKENDS)} and include "
              f"{spec.REFERENCE} (the reference)", file=sys.stderr)
        return 2
    if args.cprofile:
        spawn("cprofile", 1, args, extra=["--cprofile", args.cprofile])
        return 0
    if args.profile:
        from . import report
        res = {"machine": machine_info(), "profile": spawn("profile", 1, args)}
        print(report.profile_table(res["profile"]))
        _write_json(args.json, res)
        return 0

    started = time.perf_counter()
    result = {"machine": machine_info(),
              "config": {"quick": bool(args.quick), "threads": threads,
                         "only": args.only or spec.KEYS, "backends": backends,
                         "ratios_from": "min time per step"},
              "runs": {}}
    for n in threads:
        print(f"== {n} thread{'s' if n > 1 else ''} (fresh process) ==", file=sys.stderr,
              flush=True)
        result["runs"][str(n)] = spawn("suite", n, args)
    first = next(iter(result["runs"].values()))
    result["machine"]["versions"] = first.get("versions", {})
    result["machine"]["blas"] = first.get("blas")
    avail = [b for b in backends if b != "torch" or first.get("versions", {}).get("torch")]
    if not args.no_extras:
        print("== import time and peak memory (fresh processes) ==", file=sys.stderr, flush=True)
        result["import_time"] = measure_imports(avail, args.quick)
        result["memory"] = measure_memory(args, avail)
    result["elapsed_s"] = time.perf_counter() - started
    if hasattr(os, "getloadavg"):
        result["machine"]["load_average_at_end"] = list(os.getloadavg())
    result["ok"] = all(r.get("ok") for r in result["runs"].values())

    from . import report
    print(report.text(result))
    _write_json(args.json, result)
    if not result["ok"]:
        print("benchmarks: FAILED: the backends disagree or a workload raised; see the "
              "correctness section above", file=sys.stderr)
        return 1
    return 0


def _write_json(path, result):
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
        print(f"wrote {path}", file=sys.stderr)
