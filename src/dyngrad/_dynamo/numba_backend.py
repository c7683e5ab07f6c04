"""The ``"numba"`` backend of ``dyngrad.compile``: runs of elementwise instructions, small
matmuls and sums compiled into one numba kernel each.

A NumPy replay pays NumPy's per-call cost (about half a microsecond) for every instruction,
however small its arrays.  ``fuse(program)`` returns the program's instructions with each
maximal run of instructions it can fuse (two or more in a row) replaced by one instruction
whose generated line calls an ``@njit`` kernel: one loop nest over the elements for
consecutive elementwise steps of the same shape (the intermediate values stay in registers;
each result is still stored in its buffer, as later instructions and ``.grad`` read them),
explicit loops for matmuls and sums.  The backend is optional: numba is imported only when
a function compiled with ``backend="numba"`` is captured; without it that raises
``ImportError`` naming the package, as PyTorch's backends whose package is missing do.

Fused arithmetic follows NumPy's dtypes (each step rounded to the buffer's dtype), so sums,
products and quotients are the same; ``tanh``, ``exp``, ``log`` come from another math
library than NumPy's and matmuls and sums add in another order, so results can differ from
the NumPy replay in the last bits (see docs/compile.md, "The numba backend").

Kernels are compiled once per distinct generated source and kept in memory for the process.
"""
from __future__ import annotations

import numpy as np

from .optimizers import STEP
from .program import Instr, Ref

NAME = "numba"

# ufunc -> expression of its operands (valid on numba scalars and on NumPy arrays)
_UFUNCS = {
    np.add: "({0} + {1})",
    np.subtract: "({0} - {1})",
    np.multiply: "({0} * {1})",
    np.true_divide: "({0} / {1})",
    np.negative: "(-{0})",
    np.square: "({0} * {0})",
    np.tanh: "np.tanh({0})",
    np.exp: "np.exp({0})",
    np.log: "np.log({0})",
    np.sqrt: "np.sqrt({0})",
    np.sin: "np.sin({0})",
    np.cos: "np.cos({0})",
    np.absolute: "np.abs({0})",
    # NaN in either operand gives NaN, as NumPy's
    np.maximum: "({0} if {0} >= {1} or {0} != {0} else {1})",
    np.minimum: "({0} if {0} <= {1} or {0} != {0} else {1})",
}
# one-input elementwise backward formulas ``f(g, x, y)`` (``x`` the op's input, ``y`` its
# output), as expressions of ``{0}``, ``{1}``, ``{2}``; the recorded kernel is checked to be
# one of them (on sample values) before it is fused
_BACKWARD = {
    "TanhBackward0": ("({0} * (1 - {2} * {2}))", "(1 - {2} * {2})"),
    "SigmoidBackward0": ("({0} * ((1 - {2}) * {2}))", "({0} * ({2} * (1 - {2})))",
                         "({2} * (1 - {2}))"),
    "ExpBackward0": ("({0} * {2})", "{2}"),
    "LogBackward0": ("({0} / {1})",),
    "SqrtBackward0": ("({0} / (2 * {2}))", "({0} / ({2} * 2))"),
    "SinBackward0": ("({0} * np.cos({1}))",),
    "CosBackward0": ("({0} * -np.sin({1}))", "(-({0} * np.sin({1})))"),
    "NegBackward0": ("(-{0})",),
    "ReluBackward0": ("(0 if {2} <= 0 else {0})",),
}
# matmuls of at most this many multiply-adds are fused (explicit loops beat NumPy's call
# overhead there; larger ones run on NumPy's BLAS)
MATMUL_MAX = 4096
# runs are cut at this many instructions: numba's compile time grows faster than a kernel
RUN_MAX = 32
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_KERNELS: dict = {}      # generated source -> compiled kernel


def available() -> bool:
    """Whether numba can be imported."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def require():
    """numba's ``njit``; ``ImportError`` naming the package when numba is not installed."""
    try:
        from numba import njit
    except ImportError as e:
        raise ImportError(f"backend='numba' needs the numba package, which is not "
                          f"installed ({e}); install it with `pip install numba` or "
                          f"`pip install dyngrad[numba]`") from None
    return njit


# --- what can be fused -------------------------------------------------------------------
class _Step:
    """One fusable instruction: ``kind`` is "ew" (elementwise, ``expr`` over ``ins`` with
    ``{0}``...), "mm" (matmul, optional bias ``ins[2]``) or "sum" (over ``axes``)."""

    def __init__(self, kind, ins, out, expr=None, axes=None):
        self.kind, self.ins, self.out, self.expr, self.axes = kind, ins, out, expr, axes


def _float_buf(prog, a):
    return type(a) is Ref and np.dtype(prog.buffers[a.i].dtype) in _FLOATS


def _scalar_ok(v):
    return type(v) in (float, int) or (isinstance(v, np.generic) and
                                       np.dtype(type(v)) in _FLOATS)


def _broadcasts(shape, to):
    if len(shape) > len(to):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], to[::-1]))


def _backward_expr(ins, prog):
    """The expression of a one-input elementwise backward formula, when the recorded kernel
    is one of the known formulas (checked element by element on sample values)."""
    forms = _BACKWARD.get(ins.op)
    if forms is None or ins.mode != "new" or len(ins.args) != 3 or type(ins.out) is not int:
        return None
    ob = prog.buffers[ins.out]
    if ob.kind != "tmp":
        return None
    shape, dt = tuple(ob.shape), np.dtype(ob.dtype)
    if dt not in _FLOATS or type(ins.args[0]) is not Ref:
        return None
    for a in ins.args:
        if a is not None and (type(a) is not Ref or tuple(prog.buffers[a.i].shape) != shape or
                              np.dtype(prog.buffers[a.i].dtype) != dt):
            return None
    rng = np.random.default_rng(0)
    n = int(np.prod(shape))
    samples = []
    for lo in (0.1, -0.9):
        vals = [None if a is None else rng.uniform(lo, 0.9, shape).astype(dt)
                for a in ins.args]
        try:
            with np.errstate(all="ignore"):
                want = np.asarray(ins.fn(*vals))
        except Exception:
            return None
        if want.shape != shape:
            return None
        samples.append((vals, want.reshape(-1)))
    for form in forms:
        ok = True
        for vals, want in samples:
            flat = [None if v is None else v.reshape(-1) for v in vals]
            with np.errstate(all="ignore"):
                got = np.array([eval(form.format("g", "x", "y"), {"np": np},
                                     {"g": flat[0][k],
                                      "x": None if flat[1] is None else flat[1][k],
                                      "y": None if flat[2] is None else flat[2][k]})
                                for k in range(n)], dtype=dt)
            if not np.allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True):
                ok = False
                break
        if ok:
            return _Step("ew", list(ins.args), ins.out, form)
    return None


def _matmul_formula(ins, prog):
    """A two-matrix kernel (a backward formula such as ``(g.T @ m1).T``) recognised as a
    product of its arguments, each maybe transposed (checked on random arrays)."""
    if len(ins.args) != 2 or ins.kwargs or not all(_float_buf(prog, a) for a in ins.args) \
            or type(ins.out) is not int or prog.buffers[ins.out].kind != "tmp":
        return None
    ob = prog.buffers[ins.out]
    shapes = [tuple(prog.buffers[a.i].shape) for a in ins.args]
    dts = {np.dtype(prog.buffers[a.i].dtype) for a in ins.args}
    if any(len(sh) != 2 for sh in shapes) or len(tuple(ob.shape)) != 2 or \
            dts != {np.dtype(ob.dtype)}:
        return None
    if max(shapes[0][0], shapes[0][1]) * shapes[1][0] * shapes[1][1] > MATMUL_MAX:
        return None     # larger than any product of these shapes: BLAS is faster
    rng = np.random.default_rng(0)
    vals = [rng.uniform(-1, 1, sh).astype(ob.dtype) for sh in shapes]
    try:
        want = np.asarray(ins.fn(*vals))
    except Exception:
        return None
    if want.shape != tuple(ob.shape) or want.dtype != np.dtype(ob.dtype):
        return None
    for first in (0, 1):
        for ta in (False, True):
            for tb in (False, True):
                a, b = vals[first], vals[1 - first]
                a, b = (a.T if ta else a), (b.T if tb else b)
                if a.shape[1] != b.shape[0] or (a.shape[0], b.shape[1]) != want.shape:
                    continue
                if np.allclose(a @ b, want, rtol=1e-5, atol=1e-6):
                    return _Step("mm", [ins.args[first], ins.args[1 - first]], ins.out,
                                 axes=(ta, tb))
    return None


def _step(ins, prog):
    """``ins`` as a ``_Step``, or None when it cannot be fused."""
    if ins.mode == "new":
        return _backward_expr(ins, prog) or _matmul_formula(ins, prog)
    if ins.mode != "out" or type(ins.out) is not int:
        return None
    ob = prog.buffers[ins.out]
    if ob.kind != "tmp":     # a result written into an argument or a tensor from outside
        return None
    if np.dtype(ob.dtype) not in _FLOATS:
        return None
    oshape = tuple(ob.shape)
    fn = ins.fn
    expr = _UFUNCS.get(fn) if isinstance(fn, np.ufunc) else None
    if expr is not None and not ins.kwargs and len(ins.args) == fn.nin:
        for a in ins.args:
            if type(a) is Ref:
                b = prog.buffers[a.i]
                if np.dtype(b.dtype) != np.dtype(ob.dtype) or \
                        not _broadcasts(tuple(b.shape), oshape):
                    return None
            elif not _scalar_ok(a):
                return None
        return _Step("ew", list(ins.args), ins.out, expr)
    if fn is np.matmul or (ins.op == "addmm" and getattr(fn, "inline", None)):
        mats = ins.args if fn is np.matmul else ins.args[1:]
        if ins.kwargs or len(mats) != 2 or not all(_float_buf(prog, a) for a in mats):
            return None
        a, b = (tuple(prog.buffers[m.i].shape) for m in mats)
        if len(a) != 2 or len(b) != 2 or oshape != (a[0], b[1]) or \
                a[0] * a[1] * b[1] > MATMUL_MAX:
            return None
        if any(np.dtype(prog.buffers[m.i].dtype) != np.dtype(ob.dtype) for m in mats):
            return None
        if fn is np.matmul:
            return _Step("mm", [mats[0], mats[1]], ins.out, axes=(False, False))
        c = ins.args[0]
        if not _float_buf(prog, c) or not _broadcasts(tuple(prog.buffers[c.i].shape), oshape):
            return None
        return _Step("mm", [mats[0], mats[1], c], ins.out, axes=(False, False))
    if getattr(fn, "__self__", None) is np.add and getattr(fn, "__name__", "") == "reduce":
        if len(ins.args) != 2 or not _float_buf(prog, ins.args[0]):
            return None
        x = ins.args[0]
        shape = tuple(prog.buffers[x.i].shape)
        axis = ins.args[1]
        keep = ins.kwargs.get("keepdims", False)
        if set(ins.kwargs) - {"keepdims"}:
            return None
        axes = tuple(range(len(shape))) if axis is None else \
            tuple(sorted(a % len(shape) for a in ((axis,) if type(axis) is int else axis)))
        want = tuple(1 if d in axes else s for d, s in enumerate(shape)) if keep else \
            tuple(s for d, s in enumerate(shape) if d not in axes)
        if want != oshape or np.dtype(prog.buffers[x.i].dtype) != np.dtype(ob.dtype):
            return None
        return _Step("sum", [x], ins.out, axes=(axes, keep))
    return None


def _fixed(a, prog, stable):
    return type(a) is not Ref or prog.buffers[a.i].kind in ("ext", "const") or a.i in stable


def _held(prog):
    """Buffers that outlive the call through an effect (a ``.grad`` set without a copy, an
    optimizer's own step), following views back to the arrays they show: their
    instructions keep making new arrays."""
    held: set = set()
    for ins in reversed(prog.instrs):
        if ins.mode == "effect":
            if ins.op == "set_grad" and ins.aux in ("copy", "elide"):
                continue
            for a in list(ins.args) + list(ins.kwargs.values()):
                for x in (a if type(a) in (tuple, list) else (a,)):
                    if type(x) is Ref:
                        held.add(x.i)
        elif ins.mode == "view" and ins.out in held:
            held.update(a.i for a in ins.args if type(a) is Ref)
    return held


def fuse(program) -> list:
    """``program``'s instructions with each run of two or more fusable instructions replaced
    by one that calls a numba kernel (the program itself is not changed).

    Views met inside a run do not end it: a view of arrays fixed before the run (a
    parameter's transpose) goes ahead of it, a view of the run's results after it (the run's
    results are preallocated arrays, so the view is made once)."""
    require()
    prog = program
    held = _held(prog)
    out: list = []
    run: list = []        # (instr, step)
    before: list = []     # views moved ahead of the run
    after: list = []      # views of the run's results, placed after it
    after_outs: set = set()
    stable: set = set()   # buffers whose array is the same at every call

    def flush():
        fused = len(run) >= 2
        out.extend(before)
        f = _fused_instr(prog, run) if fused else None
        if f is not None:
            out.append(f)
        else:
            out.extend(i for i, _ in run)
        for i, st in run:
            if f is not None or i.mode == "out":
                stable.add(st.out)
        for v in after:
            out.append(v)
            if all(_fixed(a, prog, stable) for a in v.args):
                stable.add(v.out)
        run.clear()
        before.clear()
        after.clear()
        after_outs.clear()

    for ins in prog.instrs:
        if ins.fn is STEP:
            ins = Instr(ins.op, _SGDStep(ins), ins.args, ins.kwargs, ins.out, ins.mode,
                        ins.phase, ins.note, ins.aux, ins.value)
        st = _step(ins, prog)
        if st is not None and ins.mode == "new" and ins.out in held:
            st = None
        if st is not None:
            if len(run) >= RUN_MAX or any(type(a) is Ref and a.i in after_outs
                                          for a in st.ins):
                flush()
            run.append((ins, st))
            continue
        if ins.mode == "view" and type(ins.out) is int:
            if all(_fixed(a, prog, stable) for a in ins.args):
                stable.add(ins.out)
                if run:
                    before.append(ins)
                    continue
            elif run and all(_fixed(a, prog, stable) or
                             any(a.i == s.out for _, s in run) for a in ins.args):
                after.append(ins)
                after_outs.add(ins.out)
                continue
        flush()
        out.append(ins)
        if ins.mode == "out" and type(ins.out) is int:
            stable.add(ins.out)
    flush()
    return out


# --- the kernel ----------------------------------------------------------------------------
class _Fused:
    """The fused run's callable: its kernel source, and the replay line calling it."""

    def __init__(self, prog, steps, instrs):
        self.prog = prog
        self.steps = steps
        self.instrs = instrs
        self.bufs: list = []      # buffer numbers in the kernel's argument order
        self.source = self._source()
        self.__name__ = "fused"

    def _arg(self, i):
        """The kernel's name for buffer ``i``: by position, so that runs of the same
        structure (the steps of an unrolled loop) have the same source and one kernel."""
        if i not in self.bufs:
            self.bufs.append(i)
        return f"a{self.bufs.index(i)}"

    def _source(self):
        prog = self.prog
        lines = []
        groups: list = []        # consecutive "ew" steps of the same shape share a loop
        for st in self.steps:
            shape = tuple(prog.buffers[st.out].shape)
            if st.kind == "ew" and groups and groups[-1][0] == "ew" and groups[-1][1] == shape:
                groups[-1][2].append(st)
            else:
                groups.append((st.kind, shape, [st]))
        for kind, shape, sts in groups:
            if kind == "ew":
                lines.extend(self._ew(shape, sts))
            elif kind == "mm":
                lines.extend(self._mm(sts[0]))
            else:
                lines.extend(self._sum(sts[0]))
        params = ", ".join(f"a{k}" for k in range(len(self.bufs)))
        return "\n".join([f"def kernel({params}):"] + lines + ["    return 0"]) + "\n"

    def _dt(self, i):
        return "np." + np.dtype(self.prog.buffers[i].dtype).name

    def _index(self, i, shape, idx):
        bshape = tuple(self.prog.buffers[i].shape)
        if not bshape:
            return f"{self._arg(i)}[()]"
        off = len(shape) - len(bshape)
        parts = ["0" if s == 1 and shape[off + d] != 1 else idx[off + d]
                 for d, s in enumerate(bshape)]
        return f"{self._arg(i)}[{', '.join(parts)}]"

    def _ew(self, shape, sts):
        ind = "    "
        idx = [f"i{d}" for d in range(len(shape))]
        lines = []
        for d, n in enumerate(shape):
            lines.append(ind * (d + 1) + f"for {idx[d]} in range({n}):")
        ind = ind * (len(shape) + 1)
        local: dict = {}
        for st in sts:
            dt = self._dt(st.out)
            ops = []
            for a in st.ins:
                if a is None:
                    ops.append("None")
                elif type(a) is Ref:
                    ops.append(local.get(a.i) or self._index(a.i, shape, idx))
                else:
                    ops.append(f"{dt}({float(a)!r})")
            v = "t" + self._arg(st.out)[1:]
            lines.append(f"{ind}{v} = {dt}({st.expr.format(*ops)})")
            lines.append(f"{ind}{self._index(st.out, shape, idx)} = {v}")
            local[st.out] = v
        return lines

    def _mm(self, st):
        a, b = st.ins[0].i, st.ins[1].i
        ta, tb = st.axes
        m, k = self.prog.buffers[a].shape[::-1] if ta else self.prog.buffers[a].shape
        n = self.prog.buffers[b].shape[0 if tb else 1]
        o = st.out
        dt = self._dt(o)
        A, B, O = self._arg(a), self._arg(b), self._arg(o)
        ea = f"{A}[p, i]" if ta else f"{A}[i, p]"
        eb = f"{B}[j, p]" if tb else f"{B}[p, j]"
        lines = [f"    for i in range({m}):", f"        for j in range({n}):",
                 f"            acc = {dt}(0)", f"            for p in range({k}):",
                 f"                acc += {ea} * {eb}"]
        if len(st.ins) == 3:
            c = self._index(st.ins[2].i, (m, n), ["i", "j"])
            lines.append(f"            acc = {dt}(acc + {c})")
        lines.append(f"            {O}[i, j] = acc")
        return lines

    def _sum(self, st):
        x = st.ins[0].i
        axes, keep = st.axes
        shape = tuple(self.prog.buffers[x].shape)
        o = st.out
        dt = self._dt(o)
        X, O = self._arg(x), self._arg(o)
        idx = [f"i{d}" for d in range(len(shape))]
        oshape = tuple(self.prog.buffers[o].shape)
        if keep:
            oidx = ["0" if d in axes else idx[d] for d in range(len(shape))]
        else:
            oidx = [idx[d] for d in range(len(shape)) if d not in axes]
        oref = f"{O}[{', '.join(oidx)}]" if oshape else f"{O}[()]"
        lines = []
        if oshape:
            lines.append(f"    {O}[...] = 0")
        else:
            lines.append(f"    {O}[()] = {dt}(0)")
        xref = f"{X}[{', '.join(idx)}]" if shape else f"{X}[()]"
        for d, n in enumerate(shape):
            lines.append("    " * (d + 1) + f"for {idx[d]} in range({n}):")
        lines.append("    " * (len(shape) + 1) + f"{oref} += {xref}")
        return lines

    def kernel(self):
        """The compiled kernel (compiled once per distinct source in this process, and kept
        by numba's cache on disk, see ``cache_dir``)."""
        k = _KERNELS.get(self.source)
        if k is None:
            k = _compile(self.source)
            _KERNELS[self.source] = k
        return k

    def codegen(self, ins, em):
        """The replay's line: the kernel called on the run's buffers.  The run's results
        get preallocated arrays (also those its NumPy form made anew each call)."""
        for ins_of, st in zip(self.instrs, self.steps):
            o = st.out
            k = f"b{o}"
            if k not in em.consts:
                b = self.prog.buffers[o]
                fresh = ins_of.mode == "new" or not isinstance(b.value, np.ndarray)
                em.consts[k] = np.zeros(tuple(b.shape), np.dtype(b.dtype)) if fresh \
                    else b.value
            em.stable.add(o)
        kn = em.const(self.kernel(), "K")
        return [f"        {kn}({', '.join(f'b{i}' for i in self.bufs)})"]

    def compile_now(self):
        """Compile the kernel now for the arrays it will be called with (the program's
        arrays at capture; a fresh C-ordered array for each result the kernel gets a new
        buffer for), so that numba's compiling is part of the capture."""
        from numba import typeof
        fresh = {st.out for ins, st in zip(self.instrs, self.steps) if ins.mode == "new"}
        made = {ins.out: ins.value for ins in self.prog.instrs if type(ins.out) is int}
        arrays = []
        for i in self.bufs:
            b = self.prog.buffers[i]
            if i in fresh:
                a = np.zeros(tuple(b.shape), np.dtype(b.dtype))
            else:
                a = getattr(b.value, "_data", b.value)
                if not isinstance(a, np.ndarray):
                    a = getattr(made.get(i), "_data", made.get(i))
            if not isinstance(a, np.ndarray):
                return
            arrays.append(a)
        self.kernel().compile(tuple(typeof(a) for a in arrays))

    def __call__(self, *arrays):
        return self.kernel()(*arrays)


def cache_dir() -> str | None:
    """Where kernels' sources and numba's compiled forms are kept between processes: the
    user's cache (``$DYNGRAD_NUMBA_CACHE``, else ``$XDG_CACHE_HOME/dyngrad/numba`` or
    ``~/.cache/dyngrad/numba``); None when it cannot be written (kernels are then compiled
    in every process)."""
    import os
    d = os.environ.get("DYNGRAD_NUMBA_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "dyngrad", "numba")
    try:
        os.makedirs(d, exist_ok=True)
    except OSError:
        return None
    return d if os.access(d, os.W_OK) else None


def _compile(source):
    """``source``'s ``kernel`` compiled by numba: from a file named by the source's hash in
    ``cache_dir()`` with numba's ``cache=True`` (a later process loads the machine code),
    else from memory."""
    import hashlib
    import importlib.util
    import os
    import sys
    njit = require()
    d = cache_dir()
    if d is not None:
        name = "k" + hashlib.sha256(source.encode()).hexdigest()[:24]
        path = os.path.join(d, name + ".py")
        try:
            if not os.path.exists(path):
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write("import numpy as np\n\n\n" + source)
                os.replace(tmp, path)
            mname = f"_dyngrad_numba_{name}"
            mod = sys.modules.get(mname)
            if mod is None:   # registered: numba's cache finds the module by its name
                spec = importlib.util.spec_from_file_location(mname, path)
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                sys.modules[mname] = mod
            if getattr(mod.kernel, "__code__", None) is not None:
                return njit(cache=True, nogil=True)(mod.kernel)
        except (OSError, ImportError, SyntaxError):
            pass
    ns: dict = {"np": np}
    exec(compile(source, "<dyngrad numba kernel>", "exec"), ns)
    return njit(nogil=True)(ns["kernel"])


class _SGDStep:
    """An optimizer step instruction whose plain SGD update (``p -= lr * g`` per parameter,
    each product rounded to the parameter's dtype as NumPy's ``multiply`` then ``subtract``
    do) runs as one kernel over all the parameters; the rest of its lines are the NumPy
    replay's."""

    def __init__(self, ins):
        self.ins = ins
        self.__name__ = "step"

    def codegen(self, ins, em):
        import re
        lines = self.ins.fn.codegen(self.ins, em)
        # (the learning rate: a 0-d array ``Z..`` of the dtype, passed as its scalar)
        mul = re.compile(r"^(\s+)np\.multiply\((b\d+), (Z\d+), out=(S\d+)\)$")
        out, i = [], 0
        while i < len(lines):
            m = mul.match(lines[i])
            if m is None:
                out.append(lines[i])
                i += 1
                continue
            ind, scal, start = m.group(1), m.group(3), i
            pairs, vcs = [], []
            while i + 2 < len(lines):
                m = mul.match(lines[i])
                if m is None or m.group(3) != scal:
                    break
                g, tmp = m.group(2), m.group(4)
                sub = re.match(rf"^\s+np\.subtract\((P\d+), {tmp}, out=\1\)$", lines[i + 1])
                if sub is None or not lines[i + 2].strip().endswith("._vc[0] += 1"):
                    break
                pairs.append((g, sub.group(1)))
                vcs.append(lines[i + 2])
                i += 3
            call = self._kernel_call(pairs, scal, em) if pairs else None
            if call is None:   # as generated
                out.extend(lines[start:i])
                if not pairs:
                    out.append(lines[i])
                    i += 1
                continue
            out.append(ind + call)
            out.extend(vcs)
        return out

    def _kernel_call(self, pairs, scal, em):
        arrays, params, body = [], [], []
        for k, (g, p) in enumerate(pairs):
            pa = em.consts.get(p)
            ga = em.consts.get(g)
            if ga is None:
                ga = em.arrays[int(g[1:])] if int(g[1:]) < len(em.arrays) else None
            if not isinstance(pa, np.ndarray) or not isinstance(ga, np.ndarray) or \
                    pa.shape != ga.shape or pa.dtype not in _FLOATS or pa.dtype != ga.dtype:
                return None
            arrays += [ga, pa]
            params += [f"g{k}", f"p{k}"]
            idx = [f"i{d}" for d in range(pa.ndim)]
            ix = ", ".join(idx) if idx else "()"
            for d, n in enumerate(pa.shape):
                body.append("    " * (d + 1) + f"for {idx[d]} in range({n}):")
            body.append("    " * (pa.ndim + 1) +
                        f"p{k}[{ix}] = p{k}[{ix}] - np.{pa.dtype.name}(g{k}[{ix}] * s)")
        dts = {a.dtype for a in arrays}
        if len(dts) != 1:
            return None
        src = "\n".join([f"def kernel({', '.join(params)}, s):"] + body + ["    return 0"]) + "\n"
        try:
            from numba import typeof
            k = _KERNELS.get(src)
            if k is None:
                k = _KERNELS[src] = _compile(src)
            k.compile(tuple(typeof(a) for a in arrays) + (typeof(dts.pop().type(0.1)),))
        except Exception as e:
            if not _is_numba_error(e):
                raise
            return None
        kn = em.const(k, "K")
        return f"{kn}({', '.join(x for pair in pairs for x in pair)}, {scal}[()])"

    def __call__(self, *a, **k):
        return self.ins.fn(*a, **k)


def _is_numba_error(e) -> bool:
    from numba.core.errors import NumbaError
    return isinstance(e, NumbaError)


def _fused_instr(prog, run):
    instrs = [i for i, _ in run]
    steps = [s for _, s in run]
    f = _Fused(prog, steps, instrs)
    try:
        f.compile_now()
    except Exception as e:    # numba could not type or compile it: the run stays NumPy
        if not _is_numba_error(e):
            raise
        return None
    args = tuple(Ref(i) for i in f.bufs)
    return Instr("fused", f, args, mode="effect", phase=instrs[0].phase,
                 note=" + ".join(i.op for i in instrs))
