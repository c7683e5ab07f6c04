"""The ``dyngrad`` command.  Each subcommand lives in ``dyngrad/commands/<name>.py`` with
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``; this module only
finds and dispatches them.  Bad arguments and expected failures print one line, not a
traceback."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from ._usage import UsageError  # noqa: F401 - the commands raise it from here


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, except where there is none to show (None,
    False) or the help text already says it."""

    def _get_help_string(self, action):
        h = action.help or ""
        if action.default is None or action.default is False or "default" in h:
            return h
        return super()._get_help_string(action)


def check_writable(path) -> None:
    """Raise the one-line UsageError now when the output file ``path`` could not be written
    later (its folder cannot be made or written, or it is a folder itself)."""
    import os
    full = os.path.abspath(path)
    if os.path.isdir(full):
        raise UsageError(f"cannot write {path}: it is a directory")
    parent = os.path.dirname(full)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {path}: permission denied in {parent}")


def check_out_dir(path) -> None:
    """Raise the one-line UsageError now when the output folder ``path`` cannot be made or
    written."""
    import os
    full = os.path.abspath(path)
    parent = full
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(f"cannot write to {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write to {path}: permission denied in {parent}")


def oserror_line(e: OSError) -> str:
    """One line for a file that cannot be read or written."""
    return f"{e.filename}: {e.strerror}" if e.filename and e.strerror else str(e).split("\n")[0]


def cannot_write(path, e: OSError) -> UsageError:
    """The one-line error for an output that cannot be written."""
    return UsageError(f"cannot write {path}: {e.strerror or e}")


def _commands():
    from . import commands
    found = {}
    for m in pkgutil.iter_modules(commands.__path__):
        if m.name.startswith("_"):
            continue
        found[m.name] = f"{commands.__name__}.{m.name}"
    return found


def build_parser():
    from . import __version__
    parser = argparse.ArgumentParser(
        prog="dyngrad", formatter_class=HelpFormatter,
        description="dyngrad: a define-by-run autograd engine with PyTorch's API that shows its "
                    "graphs.")
    parser.add_argument("--version", action="version", version=f"dyngrad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, modname in sorted(_commands().items()):
        mod = importlib.import_module(modname)
        p = sub.add_parser(name, help=getattr(mod, "HELP", ""), formatter_class=HelpFormatter,
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
