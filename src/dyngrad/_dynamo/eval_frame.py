"""``dyngrad.compile``: a compiled function captures on its first call and replays after.

``CompiledFunction`` keeps one ``Entry`` per capture (its ``Program``, the generated replay and
its source).  A call tries the entries' replays newest first; each checks its guards first.
When every entry's guards fail, the function is captured again (the failed guards are the
recapture's reason, kept in ``recompile_reasons`` and logged under ``TORCH_LOGS=recompiles``),
up to ``config.recompile_limit`` captures; then it runs eagerly with PyTorch's warning.  A
function that cannot be captured (a graph break, an op without a replay kernel) is split
from then on (``split``: its own code eager, the Modules it calls compiled regions);
``eager_reason`` says why.  Under the ``eager`` backends a replay runs the
function itself behind the guards; a ``backend=`` callable is given the captured forward as a
GraphModule once per capture and what it returns runs for the forward's outputs in the replay
(docs/compile.md, "Backends").
"""
from __future__ import annotations

import functools
import inspect
import logging
import time

import numpy as np

from .._tensor import Tensor
from ..autograd.grad_mode import STATE
from ..func import _batched
from ..ops import _dual as _X
from ..nn.modules.module import Module
from ..optim.optimizer import Optimizer
from . import capture as C
from . import config
from . import numba_backend
from . import optimizers as O
from . import split
from .codegen import MISS, Emitter, generate
from .exc import ReplayMismatch, TorchDynamoException, Unsupported
from .program import Guard, Ref, refs_in, tensors_in

_LEVELS = _batched.LEVELS
recompiles_log = logging.getLogger("dyngrad._dynamo.recompiles")
_TROUBLESHOOTING = "https://pytorch.org/docs/main/torch.compiler_troubleshooting.html"

DISABLED = [0]       # >0 inside dyngrad.compiler.disable'd code
#: the backend names under which the function runs eagerly behind the guards (PyTorch's
#: ``eager`` runs the captured graph without compiling it)
EAGER_BACKENDS = frozenset({"eager", "aot_eager", "aot_eager_decomp_partition"})
ALL_COMPILED: list = []   # weak registry for reset()


def MISSING(args, kwargs):
    """The replay tried first before any capture: answers no call."""
    return MISS


class BackendCompilerFailed(TorchDynamoException):
    """A ``backend=`` callable raised when given the captured graph (PyTorch's type)."""

    def __init__(self, backend, inner: BaseException):
        name = getattr(backend, "__name__", None) or str(backend)
        super().__init__(f"backend={name!r} raised:\n{type(inner).__name__}: {inner}")
        self.backend_name = name
        self.inner_exception = inner


class Entry:
    """One capture: its program, the replay function and the replay's source."""

    def __init__(self, program, replay, source, optimizers, tensors, counter=None):
        self.program = program
        self.replay = replay
        self.source = source
        self.optimizers = optimizers
        self.tensors = tensors      # the tensors a replay reads or changes (for the check)
        self.checked = False
        self._count = counter if counter is not None else [0]
        self.graph_module = None    # what a ``backend=`` callable was given, if one was
        self.backend_fn = None      # and what it returned

    @property
    def replays(self) -> int:
        """How many calls this program answered (the replay counts itself)."""
        return self._count[0]


# --- recording forms of what a capture swaps ---------------------------------------------
_WRAPPERS: dict = {}


def _recording(orig, name):
    """The form of public op ``name`` that records while a capture runs."""
    key = (id(orig), name)
    w = _WRAPPERS.get(key)
    if w is not None:
        return w
    if name == "backward":
        def w(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
            cap = C.ACTIVE[0]
            if cap is None:
                return orig(self, gradient, retain_graph, create_graph, inputs)
            return cap.backward(orig, self, gradient, retain_graph, create_graph, inputs)
    else:
        def w(*args, **kwargs):
            cap = C.ACTIVE[0]
            if cap is None:
                return orig(*args, **kwargs)
            return cap.call(name, orig, args, kwargs)
    functools.update_wrapper(w, orig)
    _WRAPPERS[key] = w
    return w


_DATA_METHODS = ("__repr__", "__str__", "__format__")


def _data_method(name, orig):
    def w(self, *a, **k):
        cap = C.ACTIVE[0]
        if cap is not None:
            cap.data_read("printing a tensor" if name != "__format__" else "formatting a tensor")
        return orig(self, *a, **k)
    functools.update_wrapper(w, orig)
    return w


def _install(cap):
    """Swap the recording forms in (see ``capture``); returns what ``_uninstall`` undoes."""
    _batched.swap_all(_recording)
    undo = []

    def put(owner, k, new):
        undo.append((owner, k, owner.__dict__.get(k, _ABSENT)))
        setattr(owner, k, new)

    for k in _DATA_METHODS:
        put(Tensor, k, _data_method(k, getattr(Tensor, k)))
    mcall = Module.__call__

    def module_call(self, *args, **kwargs):
        cap.module_called(self)
        return mcall(self, *args, **kwargs)
    put(Module, "__call__", module_call)
    mzero = Module.zero_grad

    def module_zero_grad(self, set_to_none=True):
        O.zero_grad(cap, list(self.parameters()), set_to_none, self)
        return mzero(self, set_to_none)
    put(Module, "zero_grad", module_zero_grad)
    for cls in _optimizer_classes():
        if "zero_grad" in cls.__dict__:
            put(cls, "zero_grad", O.zero_grad_wrapper(cap, cls.__dict__["zero_grad"]))
        if "step" in cls.__dict__ and cls.__dict__["step"] is not Optimizer.step:
            put(cls, "step", O.step_wrapper(cap, cls.__dict__["step"]))
    put(Optimizer, "_closure", O.closure_wrapper(cap, Optimizer._closure))
    put(Optimizer, "_stepped", O.stepped_wrapper(cap, Optimizer._stepped))
    _X.TWIN_HOOK[0] = cap.twin
    return undo


_ABSENT = object()


def _uninstall(undo):
    _X.TWIN_HOOK[0] = None
    for owner, k, v in reversed(undo):
        if v is _ABSENT:
            delattr(owner, k)
        else:
            setattr(owner, k, v)
    _batched.restore_all()


def _optimizer_classes():
    out, todo = [], [Optimizer]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


# --- guards ---------------------------------------------------------------------------
def _names_of(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


class _GuardBuilder:
    def __init__(self, em: Emitter):
        self.em = em
        self.guards: list = []     # (setup lines, condition, Guard)
        self.tensor_vars: dict = {}  # buffer number -> name of the argument tensor

    def add(self, cond, describe, setup=(), words=""):
        g = Guard(cond, describe, "\n".join(setup), words)
        self.guards.append((list(setup), cond, g))

    def structure(self, obj, expr, label, cap):
        """Guards on the call's arguments: the structure, each tensor's metadata, each
        Python value the capture specialised on."""
        em = self.em
        t = type(obj)
        if isinstance(obj, Tensor):
            v = f"x{len(self.tensor_vars)}_{len(self.guards)}"
            d = obj._data
            cls = em.const(t, "K")
            shape, dt, st, rg = d.shape, d.dtype, d.strides, obj._requires_grad
            dtn = em.const(dt, "D")

            def describe(args, kwargs, expr=expr, label=label, shape=shape, dt=dt, st=st,
                         rg=rg, t=t):
                x = eval(expr, {"args": args, "kwargs": kwargs})
                if type(x) is not t:
                    return f"{label} is a {type(x).__name__}, expected {t.__name__}"
                xd = x._data
                if xd.ndim != len(shape):
                    return f"tensor {label!r} dimension mismatch. expected {len(shape)}, " \
                           f"actual {xd.ndim}"
                for i, (a, b) in enumerate(zip(shape, xd.shape)):
                    if a != b:
                        return f"tensor {label!r} size mismatch at index {i}. expected {a}, " \
                               f"actual {b}"
                if xd.dtype != dt:
                    return f"tensor {label!r} dtype mismatch. expected {dt}, actual {xd.dtype}"
                if xd.strides != st:
                    return f"tensor {label!r} stride mismatch. expected {st}, actual " \
                           f"{xd.strides}"
                if x._requires_grad is not rg:
                    return f"tensor {label!r} requires_grad mismatch. expected " \
                           f"requires_grad={int(rg)}"
                return f"tensor {label!r} changed"

            self.add(f"type({v} := {expr}) is {cls} and ({v}d := {v}._data).shape == "
                     f"{shape!r} and ({v}d.dtype is {dtn} or {v}d.dtype == {dtn}) and "
                     f"{v}d.strides == {st!r} and "
                     f"{v}._requires_grad is {rg}", describe)
            i = cap.by_array.get(id(d))
            if i is not None and cap.program.buffers[i].kind == "arg":
                if i not in self.tensor_vars:
                    self.tensor_vars[i] = v
            return
        if t in (tuple, list) and len(obj) <= 64:
            n = len(obj)
            self.add(f"type({expr}) is {t.__name__} and len({expr}) == {n}",
                     lambda a, k, expr=expr, label=label, n=n, t=t:
                     f"{label} changed: expected a {t.__name__} of {n} items")
            for i, x in enumerate(obj):
                self.structure(x, f"{expr}[{i}]", f"{label}[{i}]", cap)
            return
        if t is dict and len(obj) <= 64 and all(type(k) is str for k in obj):
            keys = tuple(obj)
            self.add(f"type({expr}) is dict and tuple({expr}) == {keys!r}",
                     lambda a, k, label=label: f"{label} changed its keys")
            for k, x in obj.items():
                self.structure(x, f"{expr}[{k!r}]", f"{label}[{k!r}]", cap)
            return
        if obj is None or t is bool:
            self.add(f"{expr} is {obj!r}", lambda a, k, label=label, obj=obj:
                     f"{label} == {obj!r} failed")
            return
        if t in (int, float, str):
            c = em.const(obj, "V")
            self.add(f"type({expr}) is {t.__name__} and {expr} == {c}",
                     lambda a, k, label=label, obj=obj, expr=expr:
                     f"{label} == {obj!r} failed (the function specialised on this value; "
                     f"it is now {eval(expr, {'args': a, 'kwargs': k})!r})")
            return
        c = em.const(obj, "O")
        self.add(f"{expr} is {c}", lambda a, k, label=label:
                 f"{label} is another object than at capture")


# --- the compiled function ----------------------------------------------------------------
class CompiledFunction:
    """``fn`` compiled: capture on the first call, replay after (see the module docstring)."""

    def __init__(self, fn, fullgraph=False, dynamic=None, backend="inductor", mode=None,
                 options=None, recompile_limit=None, name=None):
        self._fn = fn
        # the region's name in reprs, logs and the explorer (``compile(name=...)``)
        self.name = name if name is not None else getattr(fn, "__qualname__", repr(fn))
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = backend
        self.mode = mode
        self.options = options
        self._limit = recompile_limit
        self.entries: list = []
        self.recompile_reasons: list = []
        self.eager_reason = None
        self.captures = 0
        self._fast = MISSING   # the replay that ran last (tried first)
        # after a capture that stopped (a graph break, an op without a replay kernel): the
        # function's own code runs eagerly and the Modules it calls compiled (``split``)
        self.split = False
        self.split_regions: dict = {}   # id(module) -> (module, its compiled region)
        self.split_body = None          # (a region: the module's own call)
        # the function whose code names this one in logs and the explorer (a region: the
        # module's forward)
        self.where = fn
        functools.update_wrapper(self, fn, updated=())
        ALL_COMPILED.append(self)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __repr__(self):
        return f"<compiled {self.name!r}>"

    @property
    def limit(self) -> int:
        return self._limit if self._limit is not None else config.recompile_limit

    def __call__(self, *args, **kwargs):
        # the replay checks that no capture, vmap or disabled code runs, and its guards
        r = self._fast(args, kwargs)
        if r is not MISS:
            return r
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if self.eager_reason is not None or DISABLED[0] or C.ACTIVE[0] is not None or \
                _batched.LEVELS:
            if self.split and not (DISABLED[0] or C.ACTIVE[0] is not None or _batched.LEVELS):
                return split.run(self, args, kwargs)
            return self._fn(*args, **kwargs)
        entries = self.entries
        for i in range(len(entries) - 1, -1, -1):
            e = entries[i]
            if not e.checked and config.check_replay:
                snap = _Snapshot(e, args, kwargs)
                r = e.replay(args, kwargs)
                if r is not MISS:
                    e.checked = True
                    return snap.compare(self._fn, r)
                continue
            r = e.replay(args, kwargs)
            if r is not MISS:
                self._fast = e.replay
                return r
        if entries:
            reasons = [self._reason(j, e, args, kwargs) for j, e in enumerate(entries)]
            if len(entries) >= self.limit:
                self._give_up(reasons)
                return self._fn(*args, **kwargs)
            self.recompile_reasons.append(reasons)
            if config.log_recompiles:
                _emit_log(self.recompile_message(reasons))
        return self._capture(args, kwargs)

    def _reason(self, j, e, args, kwargs):
        """Why entry ``j``'s guards fail on these arguments (PyTorch's wording): the guards
        in order, as the replay tests them (a name one binds is read by a later one)."""
        ns = dict(e.consts)
        ns.update({"args": args, "kwargs": kwargs})
        for setup, cond, g in e.guard_list:
            try:
                for s in setup:
                    exec(s, ns)
                ok = eval(cond, ns)
            except Exception:
                ok = False
            if not ok:
                return f"{j}/{j}: {g.describe(args, kwargs)}"
        return f"{j}/{j}: guards passed"

    def recompile_message(self, reasons) -> str:
        """What ``TORCH_LOGS=recompiles`` prints for a recapture with these guard failures
        (PyTorch's wording)."""
        code = getattr(self.where, "__code__", None)
        where = f"{code.co_filename}:{code.co_firstlineno}" if code else "?"
        lines = [f"Recompiling function {getattr(self.where, '__name__', self._fn)} in {where}",
                 "    triggered by the following guard failure(s):"]
        lines += [f"    - {r}" for r in reasons]
        return "\n".join(lines)

    def limit_message(self, last: str) -> str:
        """The head of PyTorch's warning when the recompile limit is hit (``last``: the last
        guard failure)."""
        code = getattr(self.where, "__code__", None)
        info = f"'{code.co_name}' ({code.co_filename}:{code.co_firstlineno})" if code else \
            repr(self._fn)
        return (f"torch._dynamo hit config.recompile_limit ({self.limit})\n   function: "
                f"{info}\n   last reason: {last}")

    def _give_up(self, reasons):
        logging.getLogger("dyngrad._dynamo.convert_frame").warning(
            "%s\nTo log all recompilation reasons, use TORCH_LOGS=\"recompiles\".\n"
            "To diagnose recompilation issues, see %s",
            self.limit_message(reasons[-1] if reasons else ""), _TROUBLESHOOTING)
        self._fast = MISSING
        self.eager_reason = f"hit config.recompile_limit ({self.limit}); last reason: " \
                            f"{reasons[-1] if reasons else ''}"

    # -- capture ---------------------------------------------------------------------------
    def _capture(self, args, kwargs):
        cap = C.begin(self.name, self.fullgraph)
        grad_mode = STATE.enabled
        self.captures += 1
        for i, a in enumerate(args):
            _register_args(cap, a, f"args[{i}]")
        for k, a in kwargs.items():
            _register_args(cap, a, f"kwargs[{k!r}]")
        undo = _install(cap)
        C.ACTIVE[0] = cap
        try:
            result = self._fn(*args, **kwargs)
            if cap.failed is None and isinstance(result, Tensor) and \
                    result._grad_fn is not None and id(result) not in cap.backwarded and \
                    all(i.phase == "forward" for i in cap.program.instrs):
                try:   # autograd goes through the result after the call
                    cap.aot_backward(result)
                except C.NoKernel as e:
                    cap.fail(f"the backward of the result: {e}")
        except C.GraphBreak as e:
            reason, (fname, line, func, src) = e.args
            raise Unsupported(f"{reason}\n  Explanation: dyngrad.compile(fullgraph=True) "
                              f"captures the whole function as one program; reading a "
                              f"tensor's value into Python splits it.\n\nfrom user code:\n"
                              f'   File "{fname}", line {line}, in {func}\n    {src}\n') \
                from None
        finally:
            C.ACTIVE[0] = None
            _uninstall(undo)
        ms = (time.perf_counter() - cap.t0) * 1e3
        if cap.failed is None and cap.unrecorded_change():
            cap.fail("a tensor was changed in place by code that was not captured")
        if cap.failed is None:
            try:
                entry = _finalize(cap, self, args, kwargs, result, grad_mode)
            except C.NoKernel as e:
                cap.fail(str(e))
        if cap.failed is not None and self.fullgraph:
            raise Unsupported(f"dyngrad.compile(fullgraph=True) could not capture "
                              f"{self.name} as one program: "
                              f"{cap.failed}")
        if cap.failed is not None:
            gb = cap.graph_break
            self.eager_reason = cap.failed if gb is None else \
                f"graph break: {gb[0]} at {gb[1][0]}:{gb[1][1]}"
            self.split = True   # from now on (see ``split``)
            if cap.graph_break is not None and config.log_graph_breaks:
                _emit_log(f"Graph break: {cap.graph_break[0]} at "
                          f"{cap.graph_break[1][0]}:{cap.graph_break[1][1]}")
            return result
        entry.program.capture_ms = ms
        self.entries.append(entry)
        if not config.check_replay:
            self._fast = entry.replay
        return result



class _Snapshot:
    """The state a replay reads and changes (the tensors from outside and the arguments,
    their ``.grad``, the optimizers' state), taken before the first replay of a capture under
    ``config.check_replay``: ``compare`` keeps what the replay did, puts the state back,
    runs the function eagerly and compares the two."""

    def __init__(self, e, args, kwargs):
        self.args, self.kwargs = args, kwargs
        ts = list(e.tensors)
        tensors_in(args, ts)
        tensors_in(kwargs, ts)
        self.tensors = ts
        self.state = [self._take(t) for t in ts]
        self.opts = e.optimizers
        from .lowering import generators_of, rng_states
        self.gens = generators_of(args, kwargs)
        self.rng = rng_states(self.gens)    # (a replay draws random numbers as eager)
        self.opt_state = [{p: {k: (v, v._data.copy() if isinstance(v, Tensor) else v)
                               for k, v in st.items()} for p, st in o.state.items()}
                          for o in self.opts]

    @staticmethod
    def _take(t):
        g = t._grad
        return (t._data.copy(), t._vc[0], g, None if g is None else g._data.copy(),
                None if g is None else g._vc[0])

    def _now(self):
        out = []
        for t in self.tensors:
            out.append((t._data.copy(), None if t._grad is None else t._grad._data.copy()))
        opt = [{id(p): {k: (v._data.copy() if isinstance(v, Tensor) else v)
                        for k, v in st.items()} for p, st in o.state.items()}
               for o in self.opts]
        return out, opt

    def _restore(self):
        from .lowering import _set_rng_states
        _set_rng_states(self.gens, self.rng)
        for t, (d, vc, g, gd, gvc) in zip(self.tensors, self.state):
            t._data[...] = d
            t._vc[0] = vc
            t._grad = g
            if g is not None:
                g._data[...] = gd
                g._vc[0] = gvc
        for o, saved in zip(self.opts, self.opt_state):
            o.state.clear()
            for p, st in saved.items():
                o.state[p] = {k: v for k, (v, c) in st.items()}
                for k, (v, c) in st.items():
                    if isinstance(v, Tensor):
                        v._data = c.copy()

    def compare(self, fn, replayed):
        from .lowering import rng_states
        after, opt_after = self._now()
        rng_after = rng_states(self.gens)
        rep = _arrays_of(replayed)
        self._restore()
        eager = fn(*self.args, **self.kwargs)
        now, opt_now = self._now()
        what = None
        if rng_states(self.gens) != rng_after:
            what = "the random numbers drawn"
        eag = _arrays_of(eager)
        if len(rep) != len(eag) or not all(_same(a, b) for a, b in zip(rep, eag)):
            what = "the returned values"
        for k, ((d1, g1), (d2, g2)) in enumerate(zip(after, now)):
            if what is None and not _same(d1, d2):
                what = f"the values of a tensor of shape {list(d2.shape)}"
            if what is None and ((g1 is None) != (g2 is None) or
                                 (g1 is not None and not _same(g1, g2))):
                what = f"the .grad of a tensor of shape {list(d2.shape)}"
        for s1, s2 in zip(opt_after, opt_now):
            if what is None and (s1.keys() != s2.keys() or any(
                    s1[p].keys() != s2[p].keys() or not all(_same(s1[p][k], s2[p][k])
                                                            for k in s1[p]) for p in s1)):
                what = "the optimizer state"
        if what is not None:
            raise ReplayMismatch(f"dyngrad.compile: the replay of "
                                 f"{getattr(fn, '__qualname__', fn)} differs from eager in "
                                 f"{what}")
        return eager


def _arrays_of(r):
    out = []
    if isinstance(r, Tensor):
        out.append(r._data)
    elif type(r) in (tuple, list):
        for x in r:
            out.extend(_arrays_of(x))
    elif type(r) is dict:
        for x in r.values():
            out.extend(_arrays_of(x))
    return out


def _same(a, b):
    from .lowering import same
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return same(a, b)
    return a == b


def _emit_log(msg):
    if not recompiles_log.handlers and not logging.getLogger().handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("[__recompiles] %(message)s"))
        recompiles_log.addHandler(h)
        recompiles_log.setLevel(logging.DEBUG)
    recompiles_log.warning(msg)


def _register_args(cap, a, path):
    if isinstance(a, Tensor):
        cap.add_arg(a, path)
    elif type(a) in (tuple, list):
        for i, x in enumerate(a):
            _register_args(cap, x, f"{path}[{i}]")
    elif type(a) is dict:
        for k, x in a.items():
            _register_args(cap, x, f"{path}[{k!r}]")


def _finalize(cap, cf, args, kwargs, result, grad_mode):
    """Guards and generated replay of a finished capture."""
    prog = cap.program
    em = Emitter(prog, cap.arrays)
    gb = _GuardBuilder(em)
    names = _names_of(cf._fn)
    gb.add((f"len(args) == {len(args)}" if args else "not args") + " and " +
           ("not kwargs" if not kwargs else f"len(kwargs) == {len(kwargs)}"),
           lambda a, k, n=len(args), m=len(kwargs):
           f"len(args) == {n} and len(kwargs) == {m} failed",
           words=f"called with {len(args)} positional and {len(kwargs)} keyword arguments")
    for i, a in enumerate(args):
        gb.structure(a, f"args[{i}]", names[i] if i < len(names) else f"args[{i}]", cap)
    for k, a in kwargs.items():
        gb.structure(a, f"kwargs[{k!r}]", k, cap)
    for i, v in gb.tensor_vars.items():
        em.tensor_expr[id(prog.buffers[i].value)] = v
    gb.add(f"_STATE.enabled is {grad_mode}", lambda a, k:
           "GLOBAL_STATE changed: grad_mode")
    for mid, (m, training) in cap.modules.items():
        mn = em.const(m, "M")
        gb.add(f"{mn}.training is {training}", lambda a, k, m=m, tr=training:
               f"{type(m).__name__}.training == {tr} failed")
        # the module still holds the same parameters, buffers and submodules (in the dicts
        # it had: Module never replaces them, it changes their entries)
        d = m.__dict__
        conds = []
        for slot in ("_parameters", "_buffers", "_modules"):
            entries = d.get(slot)
            if entries is None:
                continue
            sn = em.const(entries, "E")
            conds.append(f"len({sn}) == {len(entries)}" if entries else f"not {sn}")
            for key, v in entries.items():
                conds.append(f"{sn}[{key!r}] is {em.const(v, 'V')}")
        kinds = (("_parameters", "parameters"), ("_buffers", "buffers"),
                 ("_modules", "submodules"))
        held = [f"{what} {', '.join(map(str, d[slot]))}" for slot, what in kinds if d.get(slot)]
        none = [what for slot, what in kinds if not d.get(slot)]
        none = ", ".join(none[:-1]) + " or " + none[-1] if len(none) > 1 else "".join(none)
        words = (f"{type(m).__name__} holds the same {', '.join(held)}" +
                 (f", and no {none}" if none else "") if held else
                 f"{type(m).__name__} holds no {none}")
        gb.add(" and ".join(conds), lambda a, k, m=m:
               f"a parameter, buffer or submodule of {type(m).__name__} was replaced",
               words=words)
    # a tensor from outside by the name its module gives it (``Linear.weight``)
    owned = {}
    for m, _ in cap.modules.values():
        for slot in ("_parameters", "_buffers"):
            for key, v in (m.__dict__.get(slot) or {}).items():
                if v is not None:
                    owned.setdefault(id(v), f"{type(m).__name__}.{key}")
    tensors = []
    for b in prog.buffers:
        if b.kind == "ext":
            t = b.value
            tn = em.const(t, "T")
            an = f"b{b.i}"
            em.consts[an] = t._data
            em.stable.add(b.i)
            tensors.append(t)
            who = owned.get(id(t), f"a tensor from outside the function ({an})")
            gb.add(f"{tn}._data is {an} and {tn}._requires_grad is {t._requires_grad}",
                   lambda a, k, t=t, b=b: f"a tensor of shape {list(b.shape)} read from outside "
                   f"the function was replaced or changed requires_grad",
                   words=f"{who} (shape {list(b.shape)}) keeps its data, "
                         f"requires_grad={t._requires_grad}")
        elif b.kind == "const":
            em.consts[f"b{b.i}"] = b.value
            em.stable.add(b.i)
    for pid, (p, was_none) in cap.grad_entry.items():
        if was_none is None:    # cleared by zero_grad before anything read it
            continue
        tn = em.const(p, "T")
        who = owned.get(id(p), f"a parameter of shape {list(p.shape)}")
        # the .grad and its array, bound for the accumulations that add into them (and
        # the array tested against the one at capture first: the same one is the same shape)
        gn = f"_g{len(em.grad_names)}"
        gb.add(f"{tn}._grad is None" if was_none else f"({gn} := {tn}._grad) is not None",
               lambda a, k, p=p, w=was_none:
               f"a parameter of shape {list(p.shape)}: .grad is None == {w} failed",
               words=f"{who}.grad is {'' if was_none else 'not '}None")
        if not was_none:
            shape = p._grad._data.shape if p._grad is not None else None
            em.grad_names[id(p)] = gn
            gd = em.const(p._grad._data, "GD")
            gb.add(f"(({gn}d := {gn}._data) is {gd} or {gn}d.shape == {shape!r}) and "
                   f"{gn}._grad_fn is None",
                   lambda a, k, p=p: f"the .grad of a parameter of shape {list(p.shape)} "
                   f"changed shape", words=f"{who}.grad has shape {list(shape or ())} and no "
                                         f"history")
    for cond, describe, consts, *words in cap.extra_guards:
        for k, v in consts.items():
            em.consts[k] = v
        gb.add(cond, describe, words="".join(words))
    prog.guards = [g for _, _, g in gb.guards]
    counter = [0]
    em.consts.update({"_n": counter, "_ACTIVE": C.ACTIVE, "_DISABLED": DISABLED,
                      "_LEVELS": _LEVELS})
    backend = cf.backend
    gm = backend_fn = None
    body, extra = [], []
    if isinstance(backend, str) and backend in EAGER_BACKENDS:
        # behind the guards, the function itself runs: nothing of the program replays
        em.consts["_fn"] = cf._fn
        res = "_fn(*args, **kwargs)"
    else:
        for i, v in gb.tensor_vars.items():   # arguments' arrays
            body.append(f"        b{i} = {v}d")
        _elide_grads(cap)
        instrs = prog.instrs if backend != "numba" else numba_backend.fuse(prog)
        if isinstance(backend, str):
            em.entry_grads = _entry_grads(instrs)
        if not isinstance(backend, str):
            gm, backend_fn, instrs, call = _with_backend(cap, em, gb, backend, result)
        nf = sum(ins.phase == "forward" for ins in instrs)
        for k, ins in enumerate(instrs):
            if gm is not None and k == nf:
                body.extend(call)
            body.extend(_lines(ins, em, cap, gb))
        if gm is not None and nf == len(instrs):
            body.extend(call)
        for ins in prog.instrs:   # a .grad on a reused buffer gets its own array
            if ins.op == "set_grad" and ins.aux == "late" and ins.args[1].i in em.stable:
                tn, b = em.const(ins.args[0], "T"), f"b{ins.args[1].i}"
                body.append(f"        if {tn}._grad is not None and {tn}._grad._data is {b}:")
                body.append(f"            {tn}._grad._data = {b}.copy()")
        if cap.aot_out is not None:
            extra, res = _aot(cap, em, gb, body)
        else:
            res = _result_expr(cap, result, em, gb, args, kwargs)
    replay, source = generate(prog, em, extra, [(s, c, k) for k, (s, c, g) in
                                               enumerate(gb.guards)], res, body)
    entry = Entry(prog, replay, source, list(cap.optimizers.values()), tensors, counter)
    entry.guard_list = gb.guards
    entry.consts = em.consts
    entry.graph_module, entry.backend_fn = gm, backend_fn
    return entry


def _forward_outputs(fwd) -> list:
    """The buffers the captured forward's GraphModule returns, in its order: the values no
    later forward instruction reads (the rule of ``fx_graph.graph_module_of``)."""
    last_read: dict = {}
    last_write: dict = {}
    for k, ins in enumerate(fwd):
        refs: list = []
        refs_in(ins.args, refs)
        refs_in({key: v for key, v in ins.kwargs.items() if key != "out"}, refs)
        for i in refs:
            last_read[i] = 2 * k
        if ins.mode == "effect":
            last_write[ins.kwargs["out"].i] = 2 * k + 1
        else:
            last_write[ins.out[0] if type(ins.out) is tuple else ins.out] = 2 * k + 1
    return [i for i, w in sorted(last_write.items(), key=lambda kv: kv[1])
            if last_read.get(i, -1) < w]


def _with_backend(cap, em, gb, backend, result):
    """A ``backend=`` callable given the captured forward: ``(gm, what it returned, the
    instructions still replayed, the replay's lines calling it)``.  The forward instructions
    kept are those whose values the backward, the optimizer step or the result read (other
    than the graph's outputs, which come from the backend's callable); the rest are left to
    the backend."""
    from .fx_graph import example_inputs_of, graph_module_of
    prog = cap.program
    fwd = [ins for ins in prog.instrs if ins.phase == "forward"]
    rest = [ins for ins in prog.instrs if ins.phase != "forward"]
    if any(ins.mode == "effect" for ins in fwd):
        raise C.NoKernel("a backend= callable is given the forward as a graph, and this "
                         "forward changes a tensor in place (its graph would run the change "
                         "a second time)")
    outs = _forward_outputs(fwd)
    ins_args = [b.i for b in prog.buffers if b.kind == "arg"]
    missing = [i for i in ins_args if i not in gb.tensor_vars]
    if missing:
        raise C.NoKernel("a backend= callable needs each tensor argument once by its place")
    try:
        gm = graph_module_of(prog)
    except (NotImplementedError, RuntimeError) as e:
        raise C.NoKernel(f"the forward has no torch.fx form for the backend: {e}") from None
    try:
        fn = backend(gm, example_inputs_of(prog))
    except Exception as e:   # (a backend that is not callable too: PyTorch's TypeError)
        raise BackendCompilerFailed(backend, e) from e
    if not callable(fn):
        raise BackendCompilerFailed(backend, TypeError(
            f"the backend returned a {type(fn).__name__}, expected a callable"))
    # the forward instructions the rest of the program (or the result) still needs
    need: set = set()
    for ins in rest + list(getattr(cap, "aot_instrs", ())):
        r: list = []
        refs_in(ins.args, r)
        refs_in(ins.kwargs, r)
        need.update(r)
    need.update(_result_buffers(cap, result))
    keep = []
    for ins in reversed(fwd):
        o = ins.out if type(ins.out) is tuple else (ins.out,)
        if any(i in need and i not in outs for i in o):
            keep.append(ins)
            r: list = []
            refs_in(ins.args, r)
            refs_in(ins.kwargs, r)
            need.update(r)
    keep.reverse()
    specs = tuple((tuple(prog.buffers[i].shape), prog.buffers[i].dtype) for i in outs)
    em.consts["_BK"] = fn
    em.consts["_run_backend"] = _run_backend
    em.consts["_BKS"] = specs
    xs = "".join(f"{gb.tensor_vars[i]}, " for i in ins_args)
    call = [f"        _o = _run_backend(_BK, ({xs}), _BKS)"]
    call += [f"        b{i} = _o[{k}]" for k, i in enumerate(outs)]
    for i in outs:
        em.stable.discard(i)
    return gm, fn, keep + rest, call


def _result_buffers(cap, result) -> list:
    """The buffers holding the tensors the function returns."""
    ts: list = []
    tensors_in(result, ts)
    if cap.aot_out is not None:
        ts.append(cap.aot_out)
    return [cap.by_array[id(t._data)] for t in ts if id(t._data) in cap.by_array]


def _run_backend(fn, inputs, specs):
    """The arrays of what the backend's callable returns for the forward's outputs; checked
    against the captured shapes and dtypes (the replayed backward writes into buffers of
    those).  It runs without recording a graph: the replay does the backward."""
    prev = STATE.enabled
    STATE.enabled = False
    try:
        out = fn(*inputs)
    finally:
        STATE.enabled = prev
    if isinstance(out, Tensor):
        out = (out,)
    if type(out) not in (tuple, list) or len(out) != len(specs):
        raise RuntimeError(f"dyngrad.compile: the backend's callable returned "
                           f"{type(out).__name__}, expected a tuple of {len(specs)} tensors "
                           f"(the captured graph's outputs)")
    arrays = []
    for k, (o, (shape, dtype)) in enumerate(zip(out, specs)):
        d = getattr(o, "_data", None)
        if not isinstance(o, Tensor) or d.shape != shape or d.dtype != dtype:
            got = (tuple(d.shape), d.dtype) if isinstance(o, Tensor) else type(o).__name__
            raise RuntimeError(f"dyngrad.compile: output {k} of the backend's callable is "
                               f"{got}, the captured graph's is {(shape, dtype)}")
        arrays.append(d)
    return arrays


def _elide_grads(cap):
    """A first gradient that a later ``zero_grad`` of the same program clears, with nothing
    reading ``.grad`` live in between, is never written to the tensor; one that survives to
    the end of the call is written as a copy (its buffer is reused by the next call); one
    that a later instruction changes in place (a second backward adding to it, clipping's
    ``mul_``) is written on the buffer and copied at the end of the call ("late")."""
    instrs = cap.program.instrs
    for i, ins in enumerate(instrs):
        if ins.op != "set_grad":
            continue
        p = ins.args[0]
        ins.aux = "copy"
        for later in instrs[i + 1:]:
            if later.op == "eager_step" or (later.op == "accumulate_grad" and
                                            later.args[0] is p):
                ins.aux = None
                break
            if later.mode == "effect" and ins.args[1] in (
                    later.kwargs.get("out"), later.args[0] if later.args else None):
                ins.aux = "late"   # (a second backward's sum, clipping's mul_, in place)
                break
            if later.op == "zero_grad" and any(q is p for q in later.args[0]):
                ins.aux = "elide"
                break


def _is_reduce(fn) -> bool:
    """Whether ``fn`` is a ufunc's ``reduce`` (``np.add.reduce``)."""
    return isinstance(getattr(fn, "__self__", None), np.ufunc) and \
        getattr(fn, "__name__", "") == "reduce"


def _entry_grads(instrs) -> set:
    """The ids of the ``accumulate_grad`` instructions that run before anything can change a
    ``.grad`` or run other code (a ``set_grad``, ``zero_grad``, an optimizer step and its
    hooks): those add into the ``.grad`` the guards read at entry."""
    out = set()
    for ins in instrs:
        if ins.op == "accumulate_grad":
            out.add(id(ins))
        elif ins.mode == "effect" and ins.op not in ("add_", "bump"):
            break
    return out


def _lines(ins, em, cap, gb):
    gen = getattr(ins.fn, "codegen", None)
    if gen is not None:
        lines = gen(ins, em)
        if lines is not None:     # (None: the kernel's plain call below)
            return lines
    ind = "        "
    if ins.op == "set_grad":
        p, g = ins.args
        if ins.aux == "elide":
            return []
        tn = em.const(p, "T")
        # a copy when the buffer is reused by the next call, or is not the program's own
        # (the gradient may be a parameter's or an argument's array, ``g * x`` with g ones)
        copy = ins.aux == "copy" and g.i in em.stable or \
            cap.program.buffers[g.i].kind != "tmp"
        if copy:     # a later add into this buffer goes to the .grad (see "add_")
            em.grad_copied[g.i] = tn
        return [f"{ind}{tn}._grad = _make(b{g.i}{'.copy()' if copy else ''})"]
    if ins.op == "add_" and ins.note == "accumulate into .grad" and \
            ins.kwargs["out"].i in em.grad_copied:
        tn = em.grad_copied[ins.kwargs["out"].i]
        return [f"{ind}_gd = {tn}._grad._data",
                f"{ind}np.add(_gd, {em.expr(ins.args[1])}, out=_gd)"]
    if ins.op == "accumulate_grad":   # AccumulateGrad's in-place add, inline
        gn = em.grad_names.get(id(ins.args[0])) if id(ins) in em.entry_grads else None
        if gn is not None:      # the .grad the guards read is still the tensor's
            return [f"{ind}{em.const(np.add, 'f')}({gn}d, {em.expr(ins.args[1])}, {gn}d)",
                    f"{ind}{gn}._vc[0] += 1"]
        tn = em.const(ins.args[0], "T")
        return [f"{ind}_g = {tn}._grad", f"{ind}_gd = _g._data",
                f"{ind}np.add(_gd, {em.expr(ins.args[1])}, out=_gd)", f"{ind}_g._vc[0] += 1"]
    fn = em.const(ins.fn, "f")
    out = ins.out
    if ins.mode == "out":
        parts = em.ufunc_args(ins, cap.program.buffers[out].dtype)
    else:
        parts = [em.expr(a) for a in ins.args]
    parts += [f"{k}={em.expr(v)}" for k, v in ins.kwargs.items()]
    a = ", ".join(parts)
    if ins.mode == "out":
        em.consts[f"b{out}"] = cap.program.buffers[out].value
        em.stable.add(out)
        inline = getattr(ins.fn, "inline", None)
        if inline is not None and not ins.kwargs:
            xs = [em.expr(x) for x in ins.args]
            return [ind + line.format(*xs, o=f"b{out}") for line in inline]
        # (out by position where the signature allows: a little cheaper than by keyword)
        if isinstance(ins.fn, np.ufunc) and not ins.kwargs and len(ins.args) == ins.fn.nin:
            return [f"{ind}{fn}({a}, b{out})"]
        if _is_reduce(ins.fn) and len(ins.args) == 2 and set(ins.kwargs) <= {"keepdims"}:
            keep = em.expr(ins.kwargs.get("keepdims", False))
            return [f"{ind}{fn}({em.expr(ins.args[0])}, {em.expr(ins.args[1])}, None, b{out}, "
                    f"{keep})"]
        return [f"{ind}{fn}({a}, out=b{out})"]
    if ins.mode == "view":
        refs = [x.i for x in ins.args if type(x) is Ref]
        if all(r in em.stable for r in refs):
            vals = [_stable_value(x, em, cap) for x in ins.args]
            em.consts[f"b{out}"] = ins.fn(*vals, **ins.kwargs)
            em.stable.add(out)
            return []
        if _is_t_kernel(ins, cap):
            return [f"{ind}b{out} = {a}.T"]     # what the kernel returns, without the call
        return [f"{ind}b{out} = {fn}({a})"]
    if ins.mode == "effect":
        lines = [f"{ind}{fn}({a})"]
        tgt = ins.kwargs.get("out")
        if type(tgt) is Ref:
            b = cap.program.buffers[tgt.i]
            if b.kind == "ext":
                lines.append(f"{ind}{em.const(b.value, 'T')}._vc[0] += 1")
            elif b.kind == "arg" and tgt.i in gb.tensor_vars:
                lines.append(f"{ind}{gb.tensor_vars[tgt.i]}._vc[0] += 1")
        return lines
    if type(out) is tuple:
        return [f"{ind}{', '.join(f'b{o}' for o in out)} = {fn}({a})"]
    expr = getattr(ins.fn, "inline_expr", None)
    b = cap.program.buffers[out]
    if expr is not None and not ins.kwargs and np.dtype(b.dtype) in (np.float32, np.float64) \
            and all(np.dtype(cap.program.buffers[x.i].dtype) == np.dtype(b.dtype)
                    for x in ins.args if type(x) is Ref):
        # the kernel's body, without the call (its 1 as an array of the result's dtype)
        return [f"{ind}b{out} = " + expr.format(*[em.expr(x) for x in ins.args],
                                                one=em.scalar(1, b.dtype))]
    return [f"{ind}b{out} = {fn}({a})"]


def _aot(cap, em, gb, body):
    """The backward function of a forward whose result autograd goes through (see
    ``aot.py``), and the result expression making that tensor with its node."""
    from . import aot
    prog = cap.program
    fwd_out = set()
    derived = {b.i for b in prog.buffers if b.kind in ("ext", "const")}
    root = {b.i: b.i for b in prog.buffers if b.kind == "ext"}  # a view's tensor from outside
    for ins in prog.instrs:
        outs = ins.out if type(ins.out) is tuple else (ins.out,)
        fwd_out.update(o for o in outs if o is not None)
        if ins.mode == "view" and all(a.i in derived for a in ins.args if type(a) is Ref):
            derived.update(outs)
            src = next((root[a.i] for a in ins.args if type(a) is Ref and a.i in root), None)
            if src is not None:
                root.update((o, src) for o in outs if o is not None)
    fwd_out.update(b.i for b in prog.buffers if b.kind == "arg")
    used = []
    for ins in cap.aot_instrs:
        for a in list(ins.args) + list(ins.kwargs.values()):
            if type(a) is Ref and a.i in fwd_out and a.i not in derived and a.i not in used:
                used.append(a.i)
    for _, j in cap.aot_outputs:
        if j in fwd_out and j not in derived and j not in used:
            used.append(j)
    gout = next(b.i for b in prog.buffers if b.kind == "gout")
    # the backward: forward arrays come in ``_s``, per call
    bem = Emitter(prog, cap.arrays)
    bem.consts = em.consts
    bem.by_id = em.by_id
    bem.nll_total = em.nll_total
    bem.stable = {i for i in em.stable if i not in fwd_out or i in derived}
    lines = ["    def _bwd(g, _s):", f"        b{gout} = g"]
    if used:
        lines.append(f"        {', '.join(f'b{i}' for i in used)}, = _s")
    for ins in cap.aot_instrs:
        lines.extend(_lines(ins, bem, cap, gb))
    rets = [f"b{j}.copy()" if j in bem.stable else f"b{j}" for _, j in cap.aot_outputs]
    lines.append(f"        return ({', '.join(rets)},)")
    # the forward's result: the saved arrays (copies of the reused buffers), the edges
    saved = ", ".join(f"b{i}.copy()" if i in em.stable else f"b{i}" for i in used)
    # the arguments and parameters whose arrays the backward reads: version-checked when it
    # runs, as eager's nodes check their saved tensors
    watched, seen = [], set()
    for ins in cap.aot_instrs:
        for a in list(ins.args) + list(ins.kwargs.values()):
            if type(a) is not Ref:
                continue
            i = root.get(a.i, a.i)
            if i not in seen and prog.buffers[i].kind in ("ext", "arg") and \
                    isinstance(prog.buffers[i].value, Tensor):
                seen.add(i)
                watched.append(em.const(prog.buffers[i].value, "T"))
    edges = ", ".join(f"_edge_of({em.const(t, 'T')})" for t, _ in cap.aot_outputs)
    em.consts["_edge_of"] = aot.edge_of
    em.consts["_aot_output"] = aot.aot_output
    o = cap.by_array[id(cap.aot_out._data)]
    data = f"b{o}.copy()" if o in em.stable else f"b{o}"
    return lines, (f"_aot_output({data}, ({edges},), ({saved}{',' if used else ''}), _bwd, "
                   f"({', '.join(watched)}{',' if watched else ''}))")


def _is_t_kernel(ins, cap) -> bool:
    """Whether ``ins`` is ``t`` of a matrix or vector by its array kernel (``a.T``)."""
    fn = ins.fn
    if ins.op != "t" or getattr(fn, "__name__", "") != "t" or \
            getattr(fn, "__module__", "") != "dyngrad.ops.views" or ins.kwargs or \
            len(ins.args) != 1 or type(ins.args[0]) is not Ref:
        return False
    return len(cap.program.buffers[ins.args[0].i].shape) <= 2


def _stable_value(x, em, cap):
    if type(x) is Ref:
        return em.consts[f"b{x.i}"]
    return x


def _result_expr(cap, result, em, gb, args, kwargs):
    """The returned structure as an expression of the replay's names."""
    if result is None:
        return "None"
    if isinstance(result, Tensor):
        i = cap.by_array.get(id(result._data))
        if i is None:
            raise C.NoKernel("the function returns a tensor computed outside the capture")
        if result._grad_fn is not None and id(result) not in cap.backwarded:
            raise C.NoKernel("the function returns a tensor whose graph is still needed "
                             "(its backward runs outside the function); its forward runs "
                             "eagerly so that autograd can go through it")
        b = cap.program.buffers[i]
        if b.kind == "ext" and b.value is result:
            return em.const(result, "T")
        if b.kind == "arg":
            if i in gb.tensor_vars and eval_path_is(result, args, kwargs, b.source):
                return gb.tensor_vars[i]
            return f"_make(b{i}.copy())"
        if i in em.stable:
            return f"_make(b{i}.copy())"
        return f"_make(b{i})"
    t = type(result)
    if t in (tuple, list):
        inner = ", ".join(_result_expr(cap, x, em, gb, args, kwargs) for x in result)
        return f"({inner},)" if t is tuple else f"[{inner}]"
    if t is dict and all(type(k) is str for k in result):
        return "{" + ", ".join(f"{k!r}: {_result_expr(cap, v, em, gb, args, kwargs)}"
                               for k, v in result.items()) + "}"
    raise C.NoKernel(f"the function returns a Python {t.__name__}, which a replay would "
                     f"freeze")


def eval_path_is(result, args, kwargs, path):
    try:
        return eval(path, {"args": args, "kwargs": kwargs}) is result
    except Exception:
        return False


__all__ = ["CompiledFunction", "Entry", "ReplayMismatch"]
