"""Replay: a captured ``Program`` as one generated Python function of straight-line NumPy.

The function takes the call's ``(args, kwargs)``, checks the guards in one expression
(returning ``MISS`` when one fails), counts the call, reads the arguments' arrays, runs every
instruction (ufuncs and matmul into preallocated buffers with ``out=``, other kernels making
their arrays), writes ``.grad`` and the parameters back as eager would, and returns the
function's result.  The source is compiled once with ``compile()``; it is kept on the entry
(``Entry.source``) for reading.
"""
from __future__ import annotations

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import STATE
from .program import Ref

MISS = object()
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class Emitter:
    """Names for the constants the generated code uses, and its lines."""

    def __init__(self, program, arrays):
        self.program = program
        self.arrays = arrays         # buffer number -> array at capture (or prealloc)
        self.consts: dict = {"_make": Tensor._make, "_STATE": STATE, "MISS": MISS,
                             "np": np}
        self.by_id: dict = {}
        self.lines: list = []
        self.stable: set = set()     # buffers whose array never changes between calls
        self.tensor_expr: dict = {}  # id(argument tensor) -> its name in the replay
        self.grad_names: dict = {}   # id(leaf) -> name the guards bind its entry .grad to
        self.entry_grads: set = set()  # ids of the instructions that may use those names
        self.grad_copied: dict = {}  # buffer -> leaf whose .grad was set to a copy of it
        self.nll_total: dict = {}    # buffer -> the total weight nll_loss's fast path sets

    def const(self, v, hint="c") -> str:
        """The replay's name for ``v`` (an argument tensor: the argument of this call)."""
        k = self.tensor_expr.get(id(v))
        if k is not None:
            return k
        k = self.by_id.get(id(v))
        if k is None:
            k = f"{hint}{len(self.consts)}"
            self.consts[k] = v
            self.by_id[id(v)] = k
        return k

    def expr(self, v) -> str:
        if type(v) is Ref:
            return f"b{v.i}"
        if v is None or isinstance(v, (bool, int, str)) and not isinstance(v, np.generic):
            return repr(v)
        if type(v) is float and v == v and v not in (float("inf"), float("-inf")):
            return repr(v)
        if type(v) is tuple and all(type(x) is int for x in v):
            return repr(v)
        if type(v) in (tuple, list) and any(type(x) is Ref for x in v):
            inner = ", ".join(self.expr(x) for x in v)
            return f"({inner},)" if type(v) is tuple else f"[{inner}]"
        return self.const(v)

    def line(self, s: str, indent: int = 2) -> None:
        self.lines.append("    " * indent + s)

    def scalar(self, v, dtype) -> str:
        """A 0-d array of ``dtype`` holding ``v``, made once: what NumPy converts a Python
        number (or a scalar of that dtype) to in a ufunc over ``dtype`` arrays, without the
        conversion at every call."""
        key = ("scalar", np.dtype(dtype).str, type(v), repr(v))   # (-0.0 is not 0.0)
        k = self.by_id.get(key)
        if k is None:
            k = self.const(np.full((), v, dtype), "Z")
            self.by_id[key] = k
        return k

    def ufunc_args(self, ins, dtype) -> list:
        """The expressions of ``ins``'s arguments, its scalars as ``scalar`` arrays where that
        leaves the computation as it is: a float ufunc whose array arguments and result all
        have ``dtype`` and that has a loop of ``dtype`` alone, a Python float, a Python int
        exact in ``dtype``, or a scalar of ``dtype``."""
        dt = np.dtype(dtype)
        fn = ins.fn
        refs = [a for a in ins.args if type(a) is Ref]
        if not isinstance(fn, np.ufunc) or dt not in _FLOATS or not refs or \
                len(ins.args) != fn.nin or \
                f"{dt.char * fn.nin}->{dt.char * fn.nout}" not in fn.types or \
                any(np.dtype(self.program.buffers[a.i].dtype) != dt for a in refs):
            return [self.expr(a) for a in ins.args]
        out = []
        for a in ins.args:
            t = type(a)
            if t is float or (t is int and abs(a) < 2 ** 24) or \
                    (isinstance(a, np.floating) and a.dtype == dt):
                out.append(self.scalar(a, dt))
            else:
                out.append(self.expr(a))
        return out

    def out_buffer(self, i: int) -> str:
        """Buffer ``i`` as an array made once that the replay writes into at every call (so
        what keeps its value past the call copies it, as for ``out=`` results)."""
        name = f"b{i}"
        if name not in self.consts:
            b = self.program.buffers[i]
            self.consts[name] = np.empty(b.shape, b.dtype)
        self.stable.add(i)
        return name

    def scratch(self, shape, dtype, hint: str = "W") -> str:
        """A new array of ``shape`` and ``dtype`` made once, for values that live within one
        instruction's lines."""
        arr = np.empty(shape, dtype)
        return self.const(arr, hint)

    def bits_view(self, i: int) -> str:
        """Buffer ``i`` (float) seen as signed integers of its width: made once when the
        buffer's array never changes, else an expression the replay evaluates."""
        b = self.program.buffers[i]
        it = np.dtype(f"i{np.dtype(b.dtype).itemsize}")
        if i in self.stable:
            return self.const(self.consts[f"b{i}"].view(it), "I")
        return f"b{i}.view({self.const(it, 'D')})"


def generate(program, em: Emitter, extra, guard_exprs, result_expr, body_lines):
    """The replay function's source (after ``extra``, lines of functions it uses): guards,
    argument reads, body, result.  ``em.consts`` must hold ``_n``, the one-item list counting
    the calls the replay answers, and ``_GATE``, the lists whose state bars any replay (a
    capture running, code marked ``disable`` running, a ``vmap`` level)."""
    src = ["def _factory(_ns):"]
    for k in em.consts:
        src.append(f"    {k} = _ns[{k!r}]")
    src.extend(extra or ())
    src.append("    def _replay(args, kwargs):")
    # one test of all the guards (which one failed is worked out on the slow path)
    conds = ["_ACTIVE[0] is None and not _DISABLED[0] and not _LEVELS"]
    conds += [f"({c})" for setup, c, k in guard_exprs]
    joined = " and\n                ".join(conds)
    src.append(f"        if not ({joined}):")
    src.append("            return MISS")
    src.append("        _n[0] += 1")
    src.extend(body_lines)
    src.append(f"        return {result_expr}")
    src.append("    return _replay")
    text = "\n".join(src) + "\n"
    ns: dict = {}
    exec(compile(text, f"<replay of {program.name}>", "exec"), ns)
    return ns["_factory"](em.consts), text
