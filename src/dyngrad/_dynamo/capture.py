"""Capture: run a function once eagerly and record its op program.

While a capture runs, the public functions, the Tensor methods and the ops modules' copies of
the public ops are swapped for recording forms (``func._batched.swap_all``, the machinery vmap
uses), as are ``Tensor.backward``, the optimizers' ``step``/``zero_grad`` and the methods that
read tensor data into Python (``item``, ``__bool__``...).  Each op the user's code calls is run
eagerly as usual and recorded as one instruction whose NumPy kernel is checked, on the spot,
to give the eager result bit for bit (an op without such a kernel is recorded as the ops it
ran inside, if those have one).  ``backward()`` runs each node's formula on Tensors (as under
``create_graph``) in the engine's order, so the formulas' ops are recorded like forward ops;
then the real backward runs and its gradients are checked against the recorded ones.
Anything that cannot be replayed faithfully ends the capture with a reason: the function then
runs eagerly.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import STATE
from ..autograd.node import AccumulateGrad
from ..func import _batched
from .program import Buffer, Instr, Program, Ref
from . import lowering as L

_make = Tensor._make
ACTIVE: list = [None]   # the capture running, if any


_UNRECORDED_DRAW = ("random numbers drawn or reseeded outside the recorded random ops (a "
                    "replay would reuse the capture's numbers)")


class GraphBreak(Exception):
    """Data-dependent Python met during a capture (raised under ``fullgraph=True``)."""


class NoKernel(Exception):
    """An op with no replay kernel that reproduces its eager result."""


class _Frame:
    __slots__ = ("instrs", "failed")

    def __init__(self):
        self.instrs = []
        self.failed = None


_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_frame():
    """``(filename, line number, function name, source line)`` of the innermost caller outside
    dyngrad (the user's code that did what is reported)."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PKG + os.sep):
        f = f.f_back
    if f is None:
        return ("<unknown>", 0, "<unknown>", "")
    import linecache
    line = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return (f.f_code.co_filename, f.f_lineno, f.f_code.co_name, line)


class Capture:
    """The recording state of one capture (see the module docstring)."""

    def __init__(self, name: str, fullgraph: bool = False):
        self.program = Program(name)
        self.fullgraph = fullgraph
        self.by_array: dict = {}     # id(ndarray) -> buffer number
        self.keep: list = []         # arrays mapped, kept alive so their ids stay unique
        self.arrays: list = []       # each buffer's array at capture
        self.stack: list = []        # frames of nested op calls
        self.failed = None           # why this capture cannot be replayed
        self.graph_break = None      # (reason, (file, line, function, source)) of a break
        self.phase = "forward"
        self.node_name = None        # the backward node whose formula runs (names its steps)
        self.internal = 0            # >0 while dyngrad's own code runs (no graph breaks)
        self.ext: dict = {}          # id(tensor) -> buffer number, tensors from outside
        self.modules: dict = {}      # id(module) -> (module, training)
        self.grad_entry: dict = {}   # id(leaf) -> (leaf, grad was None at entry)
        self.grad_buf: dict = {}     # id(leaf) -> buffer of its .grad when the program owns it
        self.optimizers: dict = {}   # id(optimizer) -> optimizer
        self.step_open = None        # optimizer whose step is running
        self.backwarded: set = set()  # ids of roots backward ran from
        self.aot_out = None           # see aot_backward
        self.versions: dict = {}      # id(version counter) -> [counter, at start, recorded]
        self.ones: set = set()       # buffers known to hold ones (the root gradient)
        self.extra_guards: list = []  # (condition, describe, constants) of the optimizers
        self.nll_by_node: dict = {}  # id(NllLossBackward0) -> (forward instr, aux buffers)

    # -- buffers ---------------------------------------------------------------------------
    def new_buffer(self, kind, arr, source="", value=None, map_id=True) -> int:
        i = len(self.program.buffers)
        self.program.buffers.append(Buffer(i, kind, tuple(arr.shape), arr.dtype, source, value))
        self.arrays.append(arr)
        if map_id:
            self.by_array[id(arr)] = i
        self.keep.append(arr)
        return i

    def map_array(self, arr, i):
        self.by_array[id(arr)] = i
        self.keep.append(arr)

    def add_arg(self, t: Tensor, path: str) -> None:
        d = t._data
        if id(d) not in self.by_array:
            self.new_buffer("arg", d, path, t)
        self.watch(t)

    def watch(self, t) -> None:
        """Note ``t``'s version: at the end every change of it must be a recorded one."""
        vc = t._vc
        if id(vc) not in self.versions:
            self.versions[id(vc)] = [vc, vc[0], 0]

    def bumped(self, t) -> None:
        """A recorded instruction changes ``t`` in place (its version goes up by one)."""
        v = self.versions.get(id(t._vc))
        if v is not None:
            v[2] += 1

    def unrecorded_change(self) -> bool:
        """Whether a watched tensor was changed in place by code that was not recorded (or a
        generator drew numbers for code that was not recorded: the capture fails with that
        reason)."""
        for g, bits, st in self.rng_expect.values():
            if g._rng is not bits or L.rng_states([g]) != [st]:
                self.fail(_UNRECORDED_DRAW)
                return True
        return any(vc[0] - v0 != n for vc, v0, n in self.versions.values())

    def _drawn_before(self, gens, states) -> None:
        """A random op is about to draw: no number was drawn since the last recorded one."""
        for g, st in zip(gens, states):
            e = self.rng_expect.get(id(g))
            if e is not None and (g._rng is not e[1] or e[2] != st):   # (a reseed: new bits)
                self.fail(_UNRECORDED_DRAW)

    def ref(self, t, top: bool):
        """The buffer of tensor ``t`` (a Ref), registering a tensor from outside at top level."""
        i = self.by_array.get(id(t._data))
        if i is not None:
            return Ref(i)
        if not top or self.phase != "forward":
            raise NoKernel("an input tensor was computed by code that was not captured")

        if t._grad_fn is not None:
            raise NoKernel("an input tensor has a history from outside the captured function")
        j = self.new_buffer("ext", t._data, f"tensor {tuple(t.shape)}", t)
        self.ext[id(t)] = j
        self.watch(t)
        return Ref(j)

    def emit(self, ins: Instr) -> None:
        ins.phase = self.phase
        if self.stack:
            self.stack[-1].instrs.append(ins)
        elif self.phase == "aot":
            ins.phase = "backward"
            self.aot_instrs.append(ins)
        else:
            self.program.instrs.append(ins)

    def fail(self, reason: str) -> None:
        if self.failed is None:
            self.failed = reason

    # -- op calls --------------------------------------------------------------------------
    def twin(self, fast, diff, args, kwargs):
        """A backward formula's step (``_dual.twin``, ``Ctx.op``) on Tensors: recorded with
        its NumPy kernel ``fast``, the one a plain backward runs."""
        name = getattr(diff, "__name__", "twin")
        if name == "<lambda>" and self.node_name is not None:
            name = self.node_name  # an unnamed step of a node's formula: named by the node
        return self.call(name, diff, args, kwargs, fast)

    def call(self, name, orig, args, kwargs, kernel=None):
        """Run op ``name`` eagerly and record it (see the module docstring)."""
        if name in L.DATA_READS and not self.internal and not self.stack and not (
                self.counting is not None and args and
                args[0] is self.counting.num_batches_tracked):   # (BatchNorm's count)
            self.data_read(f"Tensor.{name}()" if not name.startswith("__") else name)
        if self.failed is not None or self.internal:
            return orig(*args, **kwargs)
        if _batched.LEVELS:   # vmap swaps the same functions while it runs
            self.fail("vmap inside a compiled function is not captured")
            return orig(*args, **kwargs)
        top = not self.stack
        if top and self.phase == "forward":  # tensors from outside enter as the op's inputs
            try:
                for a in list(args) + list(kwargs.values()):
                    for t in (a if type(a) in (list, tuple) else (a,)):
                        if isinstance(t, Tensor) and id(t._data) not in self.by_array:
                            self.ref(t, True)
            except NoKernel as e:
                self.fail(f"'{name}': {e}")
                return orig(*args, **kwargs)
        drawn = gens = None
        if L.is_random(name):    # the generators' states before it draws (its check)
            gens = L.generators_of(args, kwargs)
            drawn = (orig, gens, L.rng_states(gens))
            self._drawn_before(gens, drawn[2])
        frame = _Frame()
        self.stack.append(frame)
        before = L.snapshot_inplace(name, args)
        try:
            result = orig(*args, **kwargs)
        finally:
            self.stack.pop()
            if gens is not None:
                self.rng_expect.update((id(g), (g, g._rng, st)) for g, st in
                                       zip(gens, L.rng_states(gens)))
        try:
            instrs = None
            if L.prefers_inner(name, result):
                instrs = self._inner(frame, result)
            if instrs is None:
                instrs = L.lower(self, name, args, kwargs, result, before, top, kernel, drawn)
        except NoKernel as e:
            reason = f"{name}: {e}"
            # the ops it ran inside stand for it (not for a random fill: its draw is lost)
            instrs = None if drawn is not None and L.is_inplace(name) else \
                self._inner(frame, result)
            if instrs is None:
                reason = frame.failed or reason
                if top:
                    self.fail(f"no replay kernel reproduces '{name}' ({reason})")
                else:
                    parent = self.stack[-1]
                    if parent.failed is None:
                        parent.failed = reason
                return result
        for ins in instrs:
            self.emit(ins)
        if instrs and L.is_inplace(name) and isinstance(args[0], Tensor):
            self.bumped(args[0])
        return result

    def _inner(self, frame, result):
        """The instructions of the ops an op ran inside, standing for it (its results that
        are reshaped views of their buffers made so), or None."""
        if frame.failed is not None or not frame.instrs:
            return None
        self.stack.append(frame)     # (their buffers are defined while it is on the stack)
        try:
            return frame.instrs + L.reshaped_results(self, result)
        except NoKernel:
            return None
        finally:
            self.stack.pop()

    # -- data read into Python -------------------------------------------------------------
    def data_read(self, what: str):
        """Tensor data reached Python (``what``: ``Tensor.item()``...): a graph break."""
        self.graph_break_at(f"{what} reads a tensor's value into Python")

    def graph_break_at(self, reason: str):
        """A graph break in the user's code: recorded, raised under ``fullgraph``."""
        if self.internal or self.stack or self.graph_break is not None:
            return
        where = user_frame()
        self.graph_break = (reason, where)
        self.fail(f"graph break: {reason} at {where[0]}:{where[1]}")
        if self.fullgraph:
            raise GraphBreak(reason, where)

    # -- modules and gradients -------------------------------------------------------------
    def module_called(self, m) -> None:
        self.counting = None
        if self.failed is None and not self.internal and not self.stack and \
                self.phase == "forward" and isinstance(m, _batch_norm_class()):
            self._count_batch(m)
        if id(m) not in self.modules:
            self.modules[id(m)] = (m, m.training)
            for slot in ("_parameters", "_buffers"):
                for t in (m.__dict__.get(slot) or {}).values():
                    if isinstance(t, Tensor):
                        self.watch(t)

    def _count_batch(self, m) -> None:
        """A BatchNorm module about to count a batch (training, tracking its statistics):
        record its ``num_batches_tracked += 1`` (eager's in-place add, and version bump) and
        note the module, so that its cumulative average (``momentum=None``) reads the count
        without a graph break and the replay reads ``momentum`` from the module at every
        call."""
        if not (m.training and m.track_running_stats and m.num_batches_tracked is not None):
            return
        t = m.num_batches_tracked
        j = self.ref(t, True).i
        self.emit(Instr("num_batches_tracked", np.add, (Ref(j), 1), {"out": Ref(j)},
                        mode="effect", note="BatchNorm counts the batch"))
        self.bumped(t)
        self.counting = m

    counting = None     # the BatchNorm module whose forward runs (see _count_batch)

    def touch_grad(self, p) -> None:
        if id(p) not in self.grad_entry:
            self.grad_entry[id(p)] = (p, p._grad is None)
            if id(p) not in self.ext and id(p._data) not in self.by_array:
                j = self.new_buffer("ext", p._data, f"tensor {tuple(p.shape)}", p)
                self.ext[id(p)] = j
            self.watch(p)

    # -- backward --------------------------------------------------------------------------
    def backward(self, orig, root, gradient, retain_graph, create_graph, inputs):
        """Record ``root.backward(...)``, then run it for real."""
        if self.failed is None and not self.internal and not self.stack:
            try:
                self._record_backward(root, gradient, retain_graph, create_graph, inputs)
            except NoKernel as e:
                self.fail(f"backward: {e}")
        self.internal += 1
        try:
            orig(root, gradient, retain_graph, create_graph, inputs)
        finally:
            self.internal -= 1
        if self.failed is None:
            self._check_grads()

    def _record_backward(self, root, gradient, retain_graph, create_graph, inputs):
        if create_graph or inputs is not None:
            raise NoKernel("create_graph and inputs= are not captured")
        fn = root._grad_fn
        if fn is None:
            raise NoKernel("backward of a tensor without a history")
        if id(root._data) not in self.by_array:
            raise NoKernel("backward of a tensor computed outside the capture")
        if gradient is None:
            g0 = np.ones(root._data.shape, root._data.dtype)
            gi = self.new_buffer("const", g0, "ones", g0)
            self.ones.add(gi)
        else:
            gi = self.ref(gradient, True).i
        nodes = _reachable(fn)
        for n in sorted(nodes, key=_engine_order):   # (the first the engine meets is named)
            if not n._plain:
                raise NoKernel(f"{type(n).__name__} has hooks or runs user code")
            if n._saved is None and getattr(n, "_needs_saved", True) and \
                    not isinstance(n, AccumulateGrad):
                raise NoKernel("the graph was already freed")
        self.phase = "backward"
        prev = STATE.enabled
        STATE.enabled = False
        try:
            accs, bufs = self._walk(fn, gi, nodes)
            for acc in accs:
                self._accumulate(acc, bufs.pop(acc))
        finally:
            STATE.enabled = prev
            self.phase = "forward"
        self.node_name = None        # the backward node whose formula runs (names its steps)
        self.backwarded.add(id(root))

    def _walk(self, fn, gi, nodes):
        """Run the nodes' formulas in the engine's order; returns the leaves reached
        (AccumulateGrad nodes, in order) and the gradients left for them and for nodes
        outside ``nodes``."""
        bufs = {fn: _make(self.arrays[gi])}
        order = sorted((n for n in nodes if not isinstance(n, AccumulateGrad)),
                       key=lambda n: -n._seq)
        accs = []
        for node in order:
            g = bufs.pop(node, None)
            nf = node.next_functions
            if g is None:
                continue
            several = node._nout != 1   # (unbind, split: one gradient per output, or None)
            if several and all(x is None for x in g):
                raise NoKernel(f"{type(node).__name__} received no gradient")
            special = L.BACKWARD.get(type(node).__name__) if not several else None
            uf = getattr(getattr(type(node), "_spec", None), "unary_formula", None) \
                if not several else None
            if special is not None:
                outs = special(self, node, g)
            elif uf is not None and node._odt is not None and node._odt.kind == "f" and \
                    node._odt.itemsize >= 4:
                outs = L.unary_backward(self, node, g, uf)
            else:
                self.node_name = type(node).__name__
                outs = node._bw(g, True)
                self.node_name = None
            for (nxt, nr), go in zip(nf, outs):
                if nxt is None or go is None:
                    continue
                if not isinstance(go, Tensor):
                    raise NoKernel(f"{type(node).__name__}'s formula left the recorded ops")
                dt = nxt._odt
                if dt is not None and go._data.dtype != dt:
                    go = go.to(_dtype_of(dt))
                if id(go._data) not in self.by_array:
                    raise NoKernel(f"{type(node).__name__}'s formula ran an op that was not "
                                   f"captured")
                if isinstance(nxt, AccumulateGrad):
                    if nxt not in bufs:
                        accs.append(nxt)
                if nxt._nout != 1:   # summed per output, as the engine's _deposit
                    b = bufs.setdefault(nxt, [None] * nxt._nout)
                    b[nr] = go if b[nr] is None else b[nr] + go
                    continue
                b = bufs.get(nxt)
                bufs[nxt] = go if b is None else b + go
        return accs, bufs

    # -- a forward whose result is differentiated outside the function ----------------------
    def aot_backward(self, out):
        """Record the backward of ``out`` from a gradient given at replay (the graph of a
        compiled forward that autograd goes through after the call): its instructions go to
        ``aot_instrs``; ``aot_outputs`` lists ``(tensor, buffer)``, the gradient each input
        tensor (a leaf, or an argument with a history) receives."""
        fn = out._grad_fn
        boundary = {}
        for b in self.program.buffers:
            if b.kind == "arg" and b.value._grad_fn is not None:
                t = b.value
                if t._grad_fn._nout != 1:
                    raise NoKernel("an input made by an op of several outputs")
                boundary[t._grad_fn] = t
        nodes = {fn}
        todo = [fn]
        while todo:
            n = todo.pop()
            for nxt, _ in n.next_functions:
                if nxt is not None and nxt not in nodes and nxt not in boundary:
                    nodes.add(nxt)
                    todo.append(nxt)
        for n in nodes:
            if not n._plain:
                raise NoKernel(f"{type(n).__name__} has hooks or runs user code")
        g0 = np.ones(out._data.shape, out._data.dtype)
        gi = self.new_buffer("gout", g0, "grad_output", g0)
        self.phase = "aot"
        self.aot_instrs = []
        prev = STATE.enabled
        STATE.enabled = False
        try:
            accs, bufs = self._walk(fn, gi, nodes)
        finally:
            STATE.enabled = prev
            self.phase = "forward"
        self.node_name = None        # the backward node whose formula runs (names its steps)
        outs = []
        for acc in accs:
            var = acc._var
            if var._hooks or var._post_acc_hooks or not var._requires_grad:
                raise NoKernel("a leaf with hooks")
            g = bufs.pop(acc)
            if g._data.shape != var._data.shape or g._data.dtype != var._data.dtype:
                raise NoKernel("a gradient of another shape or dtype than its leaf")
            outs.append((var, self.by_array[id(g._data)]))
        for node, t in boundary.items():
            g = bufs.pop(node, None)
            if g is not None:
                outs.append((t, self.by_array[id(g._data)]))
        if bufs:
            raise NoKernel("a gradient flows to a graph outside the function")
        self.aot_outputs = outs
        self.aot_out = out

    def _accumulate(self, acc, g):
        var = acc._var
        if var._hooks or var._post_acc_hooks or var._grad_fn is not None:
            raise NoKernel("a leaf with hooks")
        if not var._requires_grad:
            return
        vd = var._data
        if g._data.shape != vd.shape or g._data.dtype != vd.dtype:
            raise NoKernel("a gradient of another shape or dtype than its leaf")
        self.touch_grad(var)
        old = var._grad
        gd = g._data
        if old is None and not (gd.flags.c_contiguous and gd.flags.writeable):
            # eager's AccumulateGrad keeps a C-ordered copy (a reduction over .grad sums in
            # that order)
            g = L.emit_kernel(self, "grad_c_order", L.c_order_copy, (g,))
        gb = self.by_array[id(g._data)]
        if old is None:
            self.emit_phase(Instr("set_grad", L.set_grad, (var, Ref(gb)), mode="effect",
                                  note="first gradient of a leaf"), "backward")
            self.grad_buf[id(var)] = gb
            self._expect_grad[id(var)] = gb
        else:
            if old._grad_fn is not None or old._requires_grad:
                raise NoKernel("a .grad that has a history")
            own = self.grad_buf.get(id(var))
            if own is not None:
                self.emit_phase(Instr("add_", np.add, (Ref(own), Ref(gb)), {"out": Ref(own)},
                                      mode="effect", note="accumulate into .grad"), "backward")
                self.emit_phase(Instr("bump", L.bump_grad_version, (var,), mode="effect"),
                                "backward")
            else:
                self.emit_phase(Instr("accumulate_grad", L.accumulate_live, (var, Ref(gb)),
                                      mode="effect", note="add into the live .grad"),
                                "backward")
            self._expect_acc[id(var)] = (old, old._data.copy(), gb)

    def emit_phase(self, ins, phase):
        ins.phase = phase
        self.program.instrs.append(ins)

    _expect_grad: dict
    _expect_acc: dict

    def _check_grads(self):
        """The real backward's gradients equal the recorded ones, bit for bit."""
        for pid, gb in list(self._expect_grad.items()):
            p = self.grad_entry[pid][0]
            got = p._grad._data if p._grad is not None else None
            want = self.arrays[gb]
            if got is None or not L.same(got, want):
                self.fail("the recorded backward differs from eager backward")
                return
            self.map_array(got, gb)
        self._expect_grad.clear()
        for pid, (old, before, gb) in list(self._expect_acc.items()):
            want = before + self.arrays[gb]
            if not L.same(old._data, want):
                self.fail("the recorded gradient accumulation differs from eager")
                return
            own = self.grad_buf.get(pid)
            if own is not None:   # the buffer the sum went into holds it now
                self.arrays[own] = old._data
        self._expect_acc.clear()


def _batch_norm_class():
    from ..nn.modules.batchnorm import _BatchNorm
    return _BatchNorm


def _dtype_of(npdt):
    from .. import _dtype as D
    return D.from_numpy(npdt) if hasattr(D, "from_numpy") else npdt


def _engine_order(n):
    """Sort key of a node in the engine's order (largest sequence number first)."""
    return -getattr(n, "_seq", 0)


def _reachable(fn):
    seen = {fn}
    todo = [fn]
    while todo:
        n = todo.pop()
        for nxt, _ in n.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def begin(name: str, fullgraph: bool) -> Capture:
    cap = Capture(name, fullgraph)
    cap._expect_grad = {}
    cap._expect_acc = {}
    gens = L.generators_of((), {})   # (the default generator's state at the start)
    cap.rng_expect = {id(g): (g, g._rng, st) for g, st in zip(gens, L.rng_states(gens))}
    cap.t0 = time.perf_counter()
    return cap


__all__ = ["Capture", "GraphBreak", "NoKernel", "ACTIVE", "begin", "user_frame"]
