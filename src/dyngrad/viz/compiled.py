"""The view of a compiled function (``dyngrad.compile``): each captured program's buffers,
instructions by phase with the buffers they read and write, guards in words, capture time and
replay count, and the recaptures with the guard failures that caused them (PyTorch's
``TORCH_LOGS=recompiles`` wording) up to the fall back to eager.

``compiled_data(fn)`` is the JSON-ready description; ``compiled_html(fn)`` the self-contained
page (``save_compiled_html`` writes it).  A ``record()`` run that calls compiled functions
shows the same view in a "compiled" section of the explorer page, with the calls counted.
"""
from __future__ import annotations

import inspect
import json
import re
from typing import Any

from .._dynamo.program import Program, refs_in, tensors_in

__all__ = ["compiled_data", "compiled_html", "save_compiled_html", "program_data",
           "CallCounter"]

def _compiled_function(fn):
    """The ``CompiledFunction`` behind ``fn`` (a compiled function or an OptimizedModule)."""
    from .._dynamo.eval_frame import CompiledFunction
    from .._dynamo.optimized_module import OptimizedModule
    if isinstance(fn, CompiledFunction):
        return fn
    if isinstance(fn, OptimizedModule):
        return fn.__dict__["_compiled"]
    raise TypeError(f"expected a function or module returned by dyngrad.compile, got "
                    f"{type(fn).__name__}")


# --- reads and writes ---------------------------------------------------------------------
def _uniq(xs):
    seen, out = set(), []
    for x in xs:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


_GRAD_OPS = ("set_grad", "accumulate_grad", "bump", "zero_grad")


def instr_io(program: Program, ins) -> tuple[list, list, list]:
    """``(reads, writes, grads)``: the buffer numbers an instruction reads and writes, and the
    buffers whose tensor's ``.grad`` it sets, adds into or clears.  Reads are the ``Ref``
    arguments (keyword ``out=`` aside); writes are its result buffers, its ``out=`` buffer and,
    for an instruction that changes tensors in place (an optimizer update), the buffers of
    those tensors."""
    reads: list = []
    refs_in(ins.args, reads)
    refs_in({k: v for k, v in ins.kwargs.items() if k != "out"}, reads)
    writes: list = []
    if type(ins.out) is tuple:
        writes.extend(ins.out)
    elif ins.out is not None:
        writes.append(ins.out)
    refs_in(ins.kwargs.get("out"), writes)
    grads: list = []
    if ins.mode == "effect":
        ts: list = []
        tensors_in(ins.args, ts)
        by_tensor = {id(b.value): b.i for b in program.buffers if b.kind in ("ext", "arg")}
        hit = [by_tensor[id(t)] for t in ts if id(t) in by_tensor]
        (grads if ins.op in _GRAD_OPS else writes).extend(hit)
    return _uniq(reads), _uniq(writes), _uniq(grads)


# --- guards in words ----------------------------------------------------------------------
def _defaults(fn) -> dict:
    try:
        return {k: p.default for k, p in inspect.signature(fn).parameters.items()
                if p.default is not inspect.Parameter.empty}
    except (TypeError, ValueError):
        return {}


def _shown(path: str) -> str:
    """A source file as the page shows it: relative to the working directory when inside it."""
    import os
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _dtype_name(dt) -> str:
    return f"torch.{dt}" if dt is not None else "?"


def _tensor_names(program: Program, consts: dict) -> dict:
    """Constant name (``T12``) -> ``b2`` for the tensors of buffers from outside."""
    ids = {id(b.value): f"b{b.i}" for b in program.buffers if b.kind in ("ext", "arg")}
    return {k: ids[id(v)] for k, v in consts.items() if id(v) in ids}


_TENSOR = re.compile(r"^type\(\w+ := (?P<expr>.+?)\) is \w+ and \(\w+ := \w+\._data\)\.shape == "
                     r"(?P<shape>\(.*?\)) and (?:\(\w+\.dtype is \w+ or )?\w+\.dtype == \w+\)? "
                     r"and \w+\.strides == "
                     r"(?P<strides>\(.*?\)) and \w+\._requires_grad is (?P<rg>True|False)$")
_EXT = re.compile(r"^(?P<t>\w+)\._data is (?P<b>b\d+) and \w+\._requires_grad is "
                  r"(?P<rg>True|False)$")
_GRAD_NONE = re.compile(r"^\((?P<t>\w+)\._grad is None\) is (?P<v>True|False)$")
_GRAD_SHAPE = re.compile(r"^(?P<t>\w+)\._grad\._data\.shape == (?P<shape>.*?) and \w+\._grad\."
                         r"_grad_fn is None$")
_TRAINING = re.compile(r"^(?P<m>\w+)\.training is (?P<v>True|False)$")
_NARGS = re.compile(r"^len\(args\) == (?P<n>\d+) and (?:len\(kwargs\) == (?P<m>\d+)|"
                    r"(?P<none>not kwargs))$")
_SEQ = re.compile(r"^type\((?P<e>.+)\) is (?P<t>tuple|list) and len\((?P=e)\) == (?P<n>\d+)$")
_DICT = re.compile(r"^type\((?P<e>.+)\) is dict and tuple\((?P=e)\) == (?P<keys>\(.*\))$")
_GROUPS = re.compile(r"^len\((?P<o>\w+)\.param_groups\) == (?P<n>\d+) and ")


def guard_words(guard, program: Program, consts: dict | None = None) -> str:
    """The condition a guard checks, in words (what must still hold for the replay to run)."""
    if getattr(guard, "words", ""):  # the words the compiler gave the guard
        return guard.words
    consts = consts or {}
    e = guard.expr
    d = _defaults(guard.describe)
    label = d.get("label")
    names = _tensor_names(program, consts)
    m = _NARGS.match(e)
    if m:
        return f"called with {m['n']} positional and {m['m'] or 0} keyword arguments"
    m = _TENSOR.match(e)
    if m:
        who = label or m["expr"]
        cls = d["t"].__name__ if isinstance(d.get("t"), type) else "Tensor"
        return (f"{who} is a {cls} of shape {m['shape']}, dtype {_dtype_name(d.get('dt'))}, strides {m['strides']}, "
                f"requires_grad={m['rg']}")
    if e in ("_STATE.enabled is True", "_STATE.enabled is False"):
        return f"grad mode is {'enabled' if e.endswith('True') else 'disabled'}"
    m = _TRAINING.match(e)
    if m:
        mod = consts.get(m["m"])
        cls = type(mod).__name__ if mod is not None else "module"
        return f"{cls}.training is {m['v']}"
    m = _EXT.match(e)
    if m:
        b = program.buffers[int(m["b"][1:])]
        return (f"{m['b']} (a tensor of shape {list(b.shape)} from outside the function) is "
                f"the same tensor on the same data, requires_grad={m['rg']}")
    m = _GRAD_NONE.match(e)
    if m:
        who = names.get(m["t"], "a parameter")
        return f"{who}.grad is {'None' if m['v'] == 'True' else 'not None'}"
    m = _GRAD_SHAPE.match(e)
    if m:
        who = names.get(m["t"], "a parameter")
        return f"{who}.grad has shape {m['shape']} and no history"
    m = _SEQ.match(e)
    if m:
        return f"{label or m['e']} is a {m['t']} of {m['n']} item{'' if m['n'] == '1' else 's'}"
    m = _GROUPS.match(e)
    if m:
        opt = consts.get(m["o"])
        cls = type(opt).__name__ if opt is not None else "the optimizer"
        n = sum(len(g["params"]) for g in opt.param_groups) if opt is not None else None
        what = f"{m['n']} param group{'s' if m['n'] != '1' else ''}" + \
            (f" holding the same {n} parameters" if n is not None else "")
        return f"{cls} has the same {what}, and its step is not replaced"
    if label is not None:
        if e.endswith(" is None") or e.endswith(" is True") or e.endswith(" is False"):
            return f"{label} is {e.rsplit(' is ', 1)[1]}"
        if "obj" in d:
            return f"{label} == {d['obj']!r} ({type(d['obj']).__name__})"
        m = _DICT.match(e)
        if m:
            return f"{label} is a dict with the keys {m['keys']}"
        if e.endswith(tuple(f"is {k}" for k in consts)) and " is " in e:
            return f"{label} is the same object as at capture"
    return e


# --- programs and compiled functions ---------------------------------------------------------
def _shape(s) -> list:
    return [int(x) for x in s]


def program_data(program: Program, consts: dict | None = None) -> dict:
    """A captured program as JSON-ready data: buffers, instructions (with reads and writes),
    the runs of consecutive instructions of one phase, guards in words."""
    bufs = [{"i": b.i, "kind": b.kind, "source": b.source, "shape": _shape(b.shape),
             "dtype": str(b.dtype)} for b in program.buffers]
    instrs, phases = [], []
    for k, ins in enumerate(program.instrs):
        reads, writes, grads = instr_io(program, ins)
        instrs.append({"i": k, "op": ins.op, "phase": ins.phase, "mode": ins.mode,
                       "note": ins.note, "text": str(ins), "reads": reads, "writes": writes,
                       "grads": grads})
        if phases and phases[-1]["phase"] == ins.phase:
            phases[-1]["end"] = k + 1
        else:
            phases.append({"phase": ins.phase, "start": k, "end": k + 1})
    guards = [{"expr": g.expr, "words": guard_words(g, program, consts)}
              for g in program.guards]
    return {"name": program.name, "capture_ms": round(float(program.capture_ms), 3),
            "buffers": bufs, "instrs": instrs, "phases": phases, "guards": guards}


def _replays(entry) -> int | None:
    """The calls the program answered (``Entry.replays``, counted by the replay itself)."""
    n = getattr(entry, "replays", None)
    return n if isinstance(n, int) else None


def compiled_data(fn) -> dict:
    """What ``compiled_html`` shows, JSON-ready: the function's captured programs (with their
    replay counts where counted), its recaptures with their reasons, its fall back to eager."""
    cf = _compiled_function(fn)
    code = getattr(cf.where, "__code__", None)
    name = getattr(cf, "name", None) or getattr(cf._fn, "__qualname__", None) or repr(cf._fn)
    progs = []
    for j, e in enumerate(cf.entries):
        p = program_data(e.program, getattr(e, "consts", None))
        p["index"] = j
        p["replays"] = _replays(e)
        p["source"] = getattr(e, "source", "")
        p["fx"] = _fx_code(e.program)
        progs.append(p)
    recaps = []
    for r, reasons in enumerate(cf.recompile_reasons):
        recaps.append({"after": r, "captured": r + 1 if r + 1 < len(cf.entries) else None,
                       "reasons": list(reasons),
                       "log": cf.recompile_message(reasons)})
    eager = None
    if cf.eager_reason is not None:
        hit = cf.eager_reason.startswith("hit config")
        last = cf.eager_reason.partition("; last reason: ")[2]
        eager = {"reason": cf.eager_reason, "limit_hit": hit,
                 "warning": cf.limit_message(last) if hit else None}
    return {"name": name, "where": f"{_shown(code.co_filename)}:{code.co_firstlineno}" if code else None,
            "backend": cf.backend if isinstance(cf.backend, str) else
            getattr(cf.backend, "__name__", repr(cf.backend)),
            "limit": cf.limit, "captures": cf.captures, "programs": progs,
            "recaptures": recaps, "eager": eager, "split": cf.split,
            "regions": [r.name for _, r in cf.split_regions.values()]}


def _with_regions(cf) -> list:
    """``cf`` and, when it is split at a graph break, its compiled regions (theirs too)."""
    out = [cf]
    for _, region in cf.split_regions.values():
        out += _with_regions(region)
    return out


def _fx_code(program: Program) -> dict:
    """The program's forward as the code of a torch.fx GraphModule, or why it has none."""
    from .._dynamo.fx_graph import graph_module_of
    if not any(ins.phase == "forward" for ins in program.instrs):
        return {"code": None, "why": "the program has no forward instructions"}
    try:
        return {"code": graph_module_of(program).code.strip("\n"), "why": None}
    except (NotImplementedError, RuntimeError) as e:
        return {"code": None, "why": str(e)}


# --- counting calls while recording --------------------------------------------------------
class CallCounter:
    """Wraps ``CompiledFunction.__call__`` while a recorder runs: each call's outcome (a
    capture, a replay of program j, eager) is counted, per program for the replays."""

    def __init__(self):
        self.functions: list = []     # compiled functions called, in first-call order
        self.calls: dict = {}         # id(cf) -> {"capture": n, "replay": n, "eager": n}
        self._orig = None
        # (owner, name, original) of the recorder's own wrappers: a capture swaps the
        # package's functions for recording forms and leaves alone what is already wrapped,
        # so the originals are put back for the length of a compiled call
        self.unwrapped: list = []

    def install(self) -> None:
        from .._dynamo.eval_frame import CompiledFunction
        orig = CompiledFunction.__dict__["__call__"]
        self._orig = orig
        counter = self

        def __call__(cf, *args, **kwargs):
            before = (len(cf.entries), cf.eager_reason, [e.replays for e in cf.entries])
            now = [(o, k, o.__dict__[k]) for o, k, _ in counter.unwrapped]
            for o, k, v in counter.unwrapped:
                setattr(o, k, v)
            try:
                r = orig(cf, *args, **kwargs)
            finally:
                for o, k, v in now:
                    setattr(o, k, v)
            counter.note(cf, before)
            return r
        __call__.__wrapped__ = orig
        CompiledFunction.__call__ = __call__

    def uninstall(self) -> None:
        from .._dynamo.eval_frame import CompiledFunction
        if self._orig is not None:
            CompiledFunction.__call__ = self._orig
            self._orig = None

    def note(self, cf, before) -> None:
        n, eager, replays = before
        if all(f is not cf for f in self.functions):
            self.functions.append(cf)
        c = self.calls.setdefault(id(cf), {"capture": 0, "replay": 0, "eager": 0})
        if len(cf.entries) > n:
            c["capture"] += 1
            return
        if eager is not None or cf.eager_reason is not None:
            c["eager"] += 1
            return
        if any(e.replays > r for e, r in zip(cf.entries, replays)):
            c["replay"] += 1
        else:
            c["eager"] += 1

    def data(self) -> list:
        out = []
        for cf in self.functions:
            d = compiled_data(cf)
            d["calls"] = dict(self.calls.get(id(cf), {}))
            out.append(d)
        return out


# --- the page --------------------------------------------------------------------------------
def compiled_html(fn, title: str | None = None) -> str:
    """A self-contained HTML page (no network) showing a compiled function's programs,
    guards and recaptures."""
    from ._page import render_compiled_page
    data = [compiled_data(cf) for cf in _with_regions(_compiled_function(fn))]
    title = title or f"dyngrad.compile: {data[0]['name']}"
    return render_compiled_page(title, json.dumps({"title": title, "compiled": data},
                                                  separators=(",", ":"), allow_nan=False,
                                                  default=_json_default))


def save_compiled_html(fn, path, title: str | None = None) -> str:
    """Write ``compiled_html(fn)`` to ``path``; returns the path."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(compiled_html(fn, title))
    return str(path)


def _json_default(o: Any):
    return str(o)
