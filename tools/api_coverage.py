"""File-weighted coverage of PyTorch's names by dyngrad over a tree of Python programs (for
example a checkout of pytorch/examples).

Each file counts each PyTorch name it uses once: ``torch.X``, and through the module aliases
it makes (``import torch.nn as nn``, ``import torch.nn.functional as F``, ``from torch import
nn, optim``, ``from torch.optim import lr_scheduler``) ``nn.X``, ``F.X``, ``optim.X``,
``lr_scheduler.X``, and names of dotted submodules (``torch.distributed.X``, ``torch.fx.X``,
``torch.utils.data.X``); a name imported directly (``from torch.utils.data import
DataLoader``) counts too.  A name is written in full (``torch.nn.functional.relu``) and stops
at its first part that is not a module (``torch.Tensor.add`` counts as ``torch.Tensor``).
Coverage is the share of (file, name) pairs whose name dyngrad has (the same attribute chain
on ``dyngrad``, importing its submodules as needed).

    python tools/api_coverage.py /tmp/pytorch-examples            # the figure and the gaps
    python tools/api_coverage.py /tmp/pytorch-examples --json out.json
    python tools/api_coverage.py /tmp/pytorch-examples --shallow   # torch.X, nn.X, F.X, optim.X
"""
from __future__ import annotations

import argparse
import ast
import collections
import importlib
import importlib.util
import json
import pathlib
import sys
import types

ROOT = "torch"


def _torch_module(path: str) -> bool | None:
    """Whether ``path`` (``torch.nn``) is a module of the installed PyTorch; None when PyTorch
    is not installed."""
    try:
        if importlib.util.find_spec(ROOT) is None:
            return None
    except (ImportError, ValueError):
        return None
    if isinstance(sys.modules.get(path), types.ModuleType):  # loaded (its spec may be None)
        return True
    try:
        return importlib.util.find_spec(path) is not None
    except Exception:  # noqa: BLE001 - an attribute posing as a package (torch.classes)
        return isinstance(sys.modules.get(path), types.ModuleType)


class Names:
    """Decides which dotted paths are modules: PyTorch's own modules when it is installed,
    else a dotted part in lower case followed by another part."""

    def __init__(self, use_torch: bool = True):
        self.use_torch = use_torch and _torch_module(ROOT) is not None
        self._cache: dict[str, bool] = {ROOT: True}

    def is_module(self, path: str, followed: bool) -> bool:
        """Whether ``path`` is a module (``followed``: more parts come after it)."""
        if not self.use_torch:
            last = path.rsplit(".", 1)[-1]
            return followed and last.islower() and not last.startswith("_")
        r = self._cache.get(path)
        if r is None:
            r = self._cache[path] = bool(_torch_module(path))
        return r


def _aliases(tree: ast.AST) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The local names bound to PyTorch's modules and names (local name -> dotted path), and
    the names imported from its modules as (local name, dotted path)."""
    alias: dict[str, str] = {}
    imported: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == ROOT or a.name.startswith(ROOT + "."):
                    if a.asname:
                        alias[a.asname] = a.name
                    else:  # ``import torch.nn`` binds ``torch``
                        alias[ROOT] = ROOT
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                (node.module == ROOT or node.module.startswith(ROOT + ".")):
            for a in node.names:
                if a.name == "*":
                    continue
                full = f"{node.module}.{a.name}"
                alias[a.asname or a.name] = full
                imported.append((a.asname or a.name, full))
    return alias, imported


def _chain(node: ast.Attribute) -> list[str] | None:
    """``a.b.c`` as ['a', 'b', 'c'] when it starts from a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


def _trim(path: str, names: Names) -> str | None:
    """``path`` up to its first part that is not a module; None when it is all modules."""
    parts = path.split(".")
    for i in range(1, len(parts)):
        prefix = ".".join(parts[: i + 1])
        if not names.is_module(prefix, followed=i + 1 < len(parts)):
            return prefix
    return None


def names_in_source(source: str, names: Names | None = None) -> set[str]:
    """The PyTorch names (``torch.nn.Linear``, ``torch.optim.SGD``) a Python source uses."""
    names = names or Names()
    tree = ast.parse(source)
    alias, imported = _aliases(tree)
    found, roots = set(), set()
    inner = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            inner.add(id(node.value))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        parts = _chain(node)
        if parts is None or parts[0] not in alias:
            continue
        roots.add(parts[0])
        t = _trim(".".join([alias[parts[0]]] + parts[1:]), names)
        if t is not None:
            found.add(t)
    for local, full in imported:
        if names.use_torch:
            t = _trim(full, names)
        else:  # without PyTorch: a name the file reads attributes of is taken for a module
            t = None if local in roots else full
        if t is not None:
            found.add(t)
    return found


def has(path: str, package: str = "dyngrad") -> bool:
    """Whether ``package`` has the PyTorch name ``path`` (``torch.nn.Linear``): the same
    attribute chain, importing submodules on the way."""
    obj = importlib.import_module(package)
    for part in path.split(".")[1:]:
        try:
            obj = getattr(obj, part)
            continue
        except AttributeError:
            pass
        except Exception:  # noqa: BLE001 - a lazy attribute that fails to load is missing
            return False
        if not isinstance(obj, types.ModuleType):
            return False
        try:
            obj = importlib.import_module(f"{obj.__name__}.{part}")
        except Exception:  # noqa: BLE001 - no such submodule (or it cannot load here)
            return False
    return True


# the namespaces whose names ``shallow`` counts one level deep, longest first
SHALLOW = ("torch.nn.functional", "torch.optim", "torch.nn", "torch")


def shallow(path: str) -> str:
    """``path`` cut to one name below its namespace (``torch.distributed.rpc.init_rpc`` is
    ``torch.distributed``, ``torch.nn.functional.relu`` stays): the counting of names as
    ``torch.X``, ``nn.X``, ``F.X``, ``optim.X`` only."""
    for ns in SHALLOW:
        if path.startswith(ns + "."):
            return ns + "." + path[len(ns) + 1:].split(".", 1)[0]
    return path


def measure(root: pathlib.Path, package: str = "dyngrad", one_level: bool = False) -> dict:
    names = Names()
    per_file = {}
    for p in sorted(root.rglob("*.py")):
        try:
            found = names_in_source(p.read_text(errors="replace"), names)
        except SyntaxError:
            continue
        per_file[str(p.relative_to(root))] = {shallow(n) for n in found} if one_level else found
    counts = collections.Counter(n for s in per_file.values() for n in s)
    present = {n: has(n, package) for n in counts}
    pairs = sum(counts.values())
    covered = sum(c for n, c in counts.items() if present[n])
    missing = sorted(((n, c) for n, c in counts.items() if not present[n]),
                     key=lambda nc: (-nc[1], nc[0]))
    return {"files": len(per_file), "pairs": pairs, "covered": covered,
            "percent": 100.0 * covered / pairs if pairs else 100.0, "names": len(counts),
            "missing": missing}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=pathlib.Path, help="the tree of Python files (a checkout)")
    ap.add_argument("--package", default="dyngrad", help="the package measured (default dyngrad)")
    ap.add_argument("--json", type=pathlib.Path, help="also write the result as JSON here")
    ap.add_argument("--top", type=int, default=40, help="missing names listed (default 40)")
    ap.add_argument("--shallow", action="store_true",
                    help="count names one level below torch, nn, F and optim only "
                         "(torch.distributed.rpc.init_rpc counts as torch.distributed)")
    a = ap.parse_args(argv)
    if not a.path.is_dir():
        print(f"api_coverage: {a.path} is not a directory", file=sys.stderr)
        return 2
    r = measure(a.path, a.package, a.shallow)
    print(f"{a.package}: {r['percent']:.1f}% of (file, name) pairs covered ({r['covered']} of "
          f"{r['pairs']}; {r['names']} distinct names in {r['files']} files)")
    print(f"missing names by number of files ({len(r['missing'])} in all):")
    for n, c in r["missing"][: a.top]:
        print(f"  {c:4d}  {n}")
    if a.json:
        a.json.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
