"""The captured program: a list of instructions over numbered buffers.

A ``Program`` is what one capture of a compiled function produced.  It is plain data, meant
to be read (printed, drawn, turned into other forms) as well as run:

* ``buffers``: ``Buffer`` records, numbered from 0.  A buffer is one NumPy array of fixed shape
  and dtype at replay: a tensor argument (``kind="arg"``, read from the argument each call), a
  tensor the function reached from outside (``"ext"``: a parameter, a module buffer, a tensor in
  a closure; read from that same tensor object), a constant (``"const"``) or the output of an
  instruction (``"tmp"``).
* ``instrs``: ``Instr`` records in execution order: forward ops, then the backward formulas'
  ops in the engine's order with the gradient sums, the accumulation into ``.grad``, the
  optimizer update and ``zero_grad``.  ``Instr.fn`` is the NumPy function that runs, ``args``
  mixes ``Ref`` (a buffer) and constants.
* ``guards``: ``Guard`` records, each a condition the replay checks before running, with the
  words that say what changed when it fails.
* ``result``: the returned structure, with ``Ref`` where a tensor is returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


class Ref:
    """A buffer used as an instruction's argument."""

    __slots__ = ("i",)

    def __init__(self, i: int):
        self.i = i

    def __repr__(self):
        return f"b{self.i}"

    def __eq__(self, other):
        return type(other) is Ref and other.i == self.i

    def __hash__(self):
        return hash(("Ref", self.i))


def refs_in(x, out: list) -> None:
    """Append to ``out`` the buffer numbers of the ``Ref``s in ``x`` (nested tuples, lists
    and dicts), in order."""
    if type(x) is Ref:
        out.append(x.i)
    elif type(x) in (tuple, list):
        for v in x:
            refs_in(v, out)
    elif type(x) is dict:
        for v in x.values():
            refs_in(v, out)


def tensors_in(x, out: list) -> None:
    """Append to ``out`` the Tensors in ``x`` (nested tuples, lists and dicts) not already in
    it, in order."""
    from .._tensor import Tensor
    if isinstance(x, Tensor):
        if all(t is not x for t in out):
            out.append(x)
    elif type(x) in (tuple, list):
        for v in x:
            tensors_in(v, out)
    elif type(x) is dict:
        for v in x.values():
            tensors_in(v, out)


@dataclass
class Buffer:
    """One array of the program: where it comes from and its shape and dtype at capture."""

    i: int
    kind: str            # "arg", "ext", "const" or "tmp"
    shape: tuple
    dtype: Any
    source: str = ""     # for "arg": the argument's path (``x``, ``args[1][0]``); "ext": a name
    value: Any = None    # "const": the array; "ext": the tensor; "tmp": a preallocated array


@dataclass
class Instr:
    """One step of the program.

    ``mode`` says how its result is stored: ``"out"`` writes into the preallocated array of
    buffer ``out`` (``fn(*args, out=b)``), ``"new"`` makes a new array each call, ``"view"``
    is a view of an argument (computed once when its arguments never change), ``"effect"``
    changes its arguments or tensors in place and has no result.
    """

    op: str
    fn: Callable
    args: tuple
    kwargs: dict = field(default_factory=dict)
    out: int | None = None
    mode: str = "new"
    phase: str = "forward"   # "forward", "backward", "optimizer"
    note: str = ""
    aux: Any = field(default=None, repr=False)     # what a later instruction needs of this one
    value: Any = field(default=None, repr=False)   # the result at capture

    def __str__(self):
        a = ", ".join([repr(x) if type(x) is Ref else _short(x) for x in self.args] +
                      [f"{k}={_short(v)}" for k, v in self.kwargs.items()])
        lhs = f"b{self.out} = " if self.out is not None else ""
        return f"{lhs}{self.op}({a})" + (f"  # {self.note}" if self.note else "")


def _short(v) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


@dataclass
class Guard:
    """A condition checked on every call: ``expr`` is Python over the replay's names;
    ``describe(args)`` says in words what failed (PyTorch's style)."""

    expr: str
    describe: Callable
    setup: str = ""      # statement(s) run before the check (binding a name)
    words: str = ""      # what must hold, in words (the explorer shows it)


@dataclass
class Program:
    """One capture: buffers, instructions, guards and the returned structure."""

    name: str
    buffers: list = field(default_factory=list)
    instrs: list = field(default_factory=list)
    guards: list = field(default_factory=list)
    result: Any = None
    capture_ms: float = 0.0

    def __str__(self):
        lines = [f"program of {self.name}: {len(self.buffers)} buffers, "
                 f"{len(self.instrs)} instructions, {len(self.guards)} guards"]
        for b in self.buffers:
            if b.kind != "tmp":
                lines.append(f"  b{b.i}: {b.kind} {b.source} {tuple(b.shape)} {b.dtype}")
        phase = None
        for ins in self.instrs:
            if ins.phase != phase:
                phase = ins.phase
                lines.append(f"  -- {phase}")
            lines.append("  " + str(ins))
        return "\n".join(lines)
