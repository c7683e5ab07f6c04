"""``dyngrad explore SCRIPT [-o FILE]``: run a PyTorch script and write the graph explorer page."""
from __future__ import annotations

import argparse
import os
import sys

HELP = "run a PyTorch script under the graph recorder and write an interactive HTML page"


def add_arguments(parser):
    parser.add_argument("script", help="the Python script to run (import torch works)")
    parser.add_argument("-o", "--output", default=None,
                        help="the HTML file to write (default: SCRIPT's name with .html)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def run(args) -> int:
    from .run import run_script
    from ..viz import record
    rest = list(args.args)
    while rest and (rest[0] in ("-o", "--output") or rest[0].startswith("--output=")):
        if "=" in rest[0]:
            args.output = rest.pop(0).split("=", 1)[1]
        elif len(rest) > 1:
            rest.pop(0)
            args.output = rest.pop(0)
        else:
            from ..cli import UsageError
            raise UsageError("-o needs a file name")
    if rest and rest[0] == "--":
        rest.pop(0)
    args.args = rest
    out = args.output or os.path.splitext(os.path.basename(args.script))[0] + ".html"
    rec = record(title=f"dyngrad explore {os.path.basename(args.script)}")
    code = 0
    try:
        run_script(args.script, args.args, wrap=rec)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    rec.save_html(out)
    print(f"wrote {out}: {len(rec.nodes)} nodes, {len(rec.events)} events, "
          f"{len(rec.groups)} module calls", file=sys.stderr)
    return code
