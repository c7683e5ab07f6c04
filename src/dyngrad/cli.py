"""The ``dyngrad`` command.  Each subcommand lives in ``dyngrad/commands/<name>.py`` with
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``; this module only
finds and dispatches them.  Bad arguments and expected failures print one line, not a
traceback."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys


class UsageError(Exception):
    """An error the user can fix; printed as one line."""


def _commands():
    from . import commands
    found = {}
    for m in pkgutil.iter_modules(commands.__path__):
        if m.name.startswith("_"):
            continue
        found[m.name] = f"{commands.__name__}.{m.name}"
    return found


def build_parser():
    parser = argparse.ArgumentParser(
        prog="dyngrad",
        description="dyngrad: a define-by-run autograd engine with PyTorch's API that shows its "
                    "graphs.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, modname in sorted(_commands().items()):
        mod = importlib.import_module(modname)
        p = sub.add_parser(name, help=getattr(mod, "HELP", ""),
                           description=getattr(mod, "DESCRIPTION", getattr(mod, "HELP", "")))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except UsageError as e:
        print(f"dyngrad {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
