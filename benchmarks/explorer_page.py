"""The explorer page at scale: page size and time-to-interactive in headless Chromium for
graphs of about 100, 1,000 and 10,000 recorded nodes (a residual MLP of N blocks, the shape of
a small transformer's step: repeated blocks of Linear, Tanh, Linear and a residual add).

    python -m benchmarks.explorer_page [--sizes 100 1000 10000] [--json out.json]

Per size it reports the recorded nodes, the page's bytes (and bytes per node: the page grows
linearly), the time until the first view is laid out and drawn (time-to-interactive, the page's
own ``performance.now()`` when it sets ``data-ready``), the time to open every level with
repeats unrolled ("expand all": every node laid out, off the main thread, drawn on a canvas
above 1,500 boxes) and the time one step of the slider takes in that view."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))


def recorded_step(n_nodes: int):
    """A recorder holding one training step of a residual MLP with about ``n_nodes`` nodes."""
    import dyngrad as torch
    from dyngrad import nn
    from dyngrad.viz import record

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.fc1 = nn.Linear(d, d)
            self.fc2 = nn.Linear(d, d)

        def forward(self, x):
            return x + self.fc2(torch.tanh(self.fc1(x)))

    blocks = max(1, (n_nodes - 4) // 10)   # 6 ops and 4 parameters per block
    torch.manual_seed(0)
    model = nn.Sequential(*[Block(8) for _ in range(blocks)])
    x = torch.randn(4, 8)
    with record(title=f"residual MLP, {blocks} blocks") as rec:
        model(x).pow(2).mean().backward()
    return rec


def measure(d, path, timeout=600.0):
    d.get("file://" + path)
    t = _wait(d, timeout)
    tti = d.execute_script("return window.__tti")
    boxes = d.execute_script("return view.units.size")
    t0 = time.time()
    d.execute_script("document.getElementById('expandAll').click()")
    d.execute_script("document.body.dataset.ready = document.body.dataset.ready")  # no-op sync point
    _wait(d, timeout)
    expand = time.time() - t0
    all_boxes = d.execute_script("return view.units.size")
    canvas = d.execute_script("return useCanvas")
    step = d.execute_script("const t = performance.now(); go(step - 1); go(step + 1); "
                            "return (performance.now() - t) / 2")
    return {"tti_ms": round(tti, 1), "first_view_boxes": boxes, "expand_all_s": round(expand, 2),
            "expanded_boxes": all_boxes, "canvas": canvas, "step_ms": round(step, 1),
            "load_s": round(t, 2)}


def _wait(d, timeout):
    t0 = time.time()
    while d.execute_script("return document.body.dataset.ready") != "1":
        if time.time() - t0 > timeout:
            raise TimeoutError("the page did not become ready")
        time.sleep(0.02)
    return time.time() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    p.add_argument("--json", default=None, help="also write the results here")
    a = p.parse_args(argv)
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from test_explorer_browser import close, driver
    d = driver(1400, 900)
    tmp = tempfile.mkdtemp(prefix="dyngrad-explorer-bench-")
    rows = []
    try:
        for n in a.sizes:
            rec = recorded_step(n)
            path = os.path.join(tmp, f"page{n}.html")
            rec.save_html(path)
            size = os.path.getsize(path)
            row = {"target": n, "nodes": len(rec.nodes), "events": len(rec.events),
                   "page_bytes": size, "bytes_per_node": round(size / len(rec.nodes))}
            row.update(measure(d, path))
            rows.append(row)
            print(f"{row['nodes']:>6} nodes  page {size / 1e6:6.2f} MB ({row['bytes_per_node']} B/node)"
                  f"  interactive {row['tti_ms']:>7.0f} ms ({row['first_view_boxes']} boxes)"
                  f"  expand all {row['expand_all_s']:6.2f} s ({row['expanded_boxes']} boxes"
                  f"{', canvas' if row['canvas'] else ''})  step {row['step_ms']:.0f} ms", flush=True)
    finally:
        close(d)
        shutil.rmtree(tmp, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
