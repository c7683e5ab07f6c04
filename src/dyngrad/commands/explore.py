"""``dyngrad explore SCRIPT [-o FILE] [--iterations SPEC]``: run a PyTorch script under the
graph recorder and write the explorer page -- also when the script fails, so the failure can be
seen on the graph (the command then still exits with the script's error)."""
from __future__ import annotations

import argparse
import os
import sys

from ..viz.explorer import explore_script as explore

HELP = "run a PyTorch script under the graph recorder and write an interactive HTML page"


def add_arguments(parser):
    parser.add_argument("script", help="the Python script to run (import torch works)")
    parser.add_argument("-o", "--output", default=None,
                        help="the HTML file to write (default: SCRIPT's name with .html)")
    parser.add_argument("--iterations", default="1", metavar="SPEC",
                        help="training iterations recorded in full: '1' (default), '1,5,10-12' or "
                             "'all'; the others are counted and their losses plotted")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def _own_options(args):
    """Options of this command written after SCRIPT (argparse leaves them in ``args.args``)."""
    from ..cli import UsageError
    rest = list(args.args)
    while rest and rest[0] != "--":
        opt = rest[0]
        for name, dest in (("-o", "output"), ("--output", "output"), ("--iterations", "iterations")):
            if opt == name:
                if len(rest) < 2:
                    raise UsageError(f"{name} needs a value")
                rest.pop(0)
                setattr(args, dest, rest.pop(0))
                break
            if name.startswith("--") and opt.startswith(name + "="):
                setattr(args, dest, rest.pop(0).split("=", 1)[1])
                break
        else:
            break
    if rest and rest[0] == "--":
        rest.pop(0)
    args.args = rest


def run(args) -> int:
    from ..cli import UsageError
    _own_options(args)
    from ..viz.explorer import parse_iterations
    try:
        parse_iterations(args.iterations)
    except ValueError as e:
        raise UsageError(str(e)) from None
    out = args.output or os.path.splitext(os.path.basename(args.script))[0] + ".html"
    from ..cli import check_writable
    check_writable(out)
    rec, code, error = explore(args.script, args.args, args.iterations)
    try:
        rec.save_html(out)
    except OSError as e:
        from ..cli import cannot_write
        if error is not None:
            _print_script_error(error, args.script)
        raise cannot_write(out, e) from None
    it = rec.iterations
    print(f"wrote {out}: {len(rec.nodes)} nodes, {len(rec.events)} events, "
          f"{len(rec.groups)} module calls; {it} iteration{'s' if it != 1 else ''}"
          f"{' (the page shows where it failed)' if error is not None else ''}", file=sys.stderr)
    if error is not None:
        _print_script_error(error, args.script)
        return 1
    return code


def _print_script_error(error, script):
    """The script's traceback as Python prints it, from the script's first frame on, without
    the recorder's wrappers."""
    import traceback
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    wrappers = os.path.join(here, "viz", "explorer.py")
    te = traceback.TracebackException.from_exception(error)
    frames = list(te.stack)
    target = os.path.abspath(script)
    for i, f in enumerate(frames):
        if os.path.abspath(f.filename) == target:
            frames = frames[i:]
            break
    te.stack = traceback.StackSummary.from_list([f for f in frames if f.filename != wrappers])
    print("".join(te.format()), end="", file=sys.stderr)
