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
    mods = sorted(n for n, v in vars(dyngrad.nn).items()
                  if inspect.isclass(v) and issubclass(v, dyngrad.nn.Module))
    opts = sorted(n for n, v in vars(dyngrad.optim).items()
                  if inspect.isclass(v) and issubclass(v, dyngrad.optim.Optimizer) and n != "Optimizer"
                  and not n.startswith("_"))
    sched = []
    ls = getattr(dyngrad.optim, "lr_scheduler", None)
    if ls is not None:
        sched = sorted(n for n, v in vars(ls).items() if inspect.isclass(v) and n.endswith(("LR", "Plateau")))
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
    lines.append("")
    lines.append(f"{len([k for k in OPS if not k.startswith('_')])} registered tensor ops, "
                 f"{len(checked)} op-table rows.")
    return "\n".join(lines)


def bench_table() -> str | None:
    p = os.path.join(ROOT, "benchmarks", "results", "latest.md")
    if os.path.exists(p):
        with open(p, encoding="utf-8") as f:
            return f.read().strip()
    return None


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
    with open(readme, "w", encoding="utf-8") as f:
        f.write(text)
    print("README tables updated")


if __name__ == "__main__":
    main()
