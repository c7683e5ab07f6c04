"""Drawing and exploring the recorded graph: torchviz's ``make_dot``, a text ``walk``,
``record()``, which logs forward and backward step by step for an interactive HTML page, and
``compiled_html``, the page of what ``dyngrad.compile`` captured for a function.

``import torchviz`` resolves here under ``dyngrad run``, so tutorials' ``make_dot(out)`` works.
"""
from __future__ import annotations

from .dot import make_dot, make_dot_from_trace, resize_graph, GraphvizNotFound
from .explorer import record, Recorder
from .compiled import compiled_html, save_compiled_html

__all__ = ["make_dot", "make_dot_from_trace", "resize_graph", "walk", "walk_lines", "record",
           "Recorder", "explore", "GraphvizNotFound", "compiled_html", "save_compiled_html"]


def explore(script, *args, iterations="1", output=None) -> Recorder:
    """Run a PyTorch script (``import torch`` resolves to dyngrad) under the recorder, as
    ``dyngrad explore`` does, and return the recorder: in Jupyter it shows as the explorer
    page.  ``output`` also writes the page there.  The script's exception, if any, is on the
    page and in ``recorder.error`` (not raised)."""
    from .explorer import explore_script
    rec, _, _ = explore_script(str(script), [str(a) for a in args], iterations)
    if output is not None:
        rec.save_html(output)
    return rec


def walk_lines(node, depth: int = 0, indent: str = "  ") -> list:
    """The indented class names of ``node`` and everything it reaches, depth first (iterative)."""
    out = []
    stack = [(node, depth)]
    while stack:
        n, d = stack.pop()
        if n is None:
            continue
        out.append(indent * d + type(n).__name__)
        for fn, _ in reversed(n.next_functions):
            stack.append((fn, d + 1))
    return out


def walk(node, depth: int = 0, indent: str = "  ", file=None) -> None:
    """Print the graph below ``node`` as an indented tree, like the tutorials' ``walk_graph``."""
    if hasattr(node, "grad_fn") and not hasattr(node, "next_functions"):
        node = node.grad_fn
    for line in walk_lines(node, depth, indent):
        print(line, file=file)


def __getattr__(name):
    raise AttributeError(f"module 'dyngrad.viz' (standing in for torchviz) has no attribute "
                         f"'{name}' (dyngrad implements a subset of PyTorch; '{name}' is not part "
                         f"of it yet)")
