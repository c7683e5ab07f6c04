"""The graph explorer's recorder: ``with record() as rec:`` logs, in order, every node forward
creates (op, inputs, output, source line, module path) and, during backward, every node run,
gradient accumulated and buffer freed, a failed backward (the node that raised, the error and
its fix) and optimizer steps; ``rec.save_html(path)`` writes a self-contained page.

Training scripts run many iterations: by default only the first is recorded in full; the rest
are counted (nodes, backward calls, optimizer steps) and their losses kept for a loss curve.
A new iteration starts when, after a ``backward()`` or ``optimizer.step()``, forward creates a
node at the same place (source line) as the current iteration's first node: the training loop
came round again.  Everything else (a second backward, a GAN's generator step) stays in the
iteration it belongs to.
"""
from __future__ import annotations

import json
import os
import sys
import weakref

import numpy as np

from ..autograd import errors
from ..autograd.node import AccumulateGrad, Saved
from .. import _dtype as _DT

__all__ = ["record", "Recorder", "summarize", "parse_iterations"]

_FEW = 6


def summarize(x) -> dict | None:
    """Shape, dtype, min/max/mean and a few values of an array or tensor (JSON-ready)."""
    if x is None:
        return None
    arr = getattr(x, "_data", x)
    if not isinstance(arr, np.ndarray):
        try:
            arr = np.asarray(arr)
        except Exception:
            return {"repr": repr(x)[:80]}
    out = {"shape": list(arr.shape), "dtype": str(arr.dtype)}
    if arr.size and (arr.dtype.kind in "biu" or arr.dtype in _DT.FLOATING):
        a = arr.astype(np.float64, copy=False)
        finite = np.isfinite(a)
        with np.errstate(all="ignore"):
            out["min"] = _num(np.nanmin(a)) if not np.all(np.isnan(a)) else None
            out["max"] = _num(np.nanmax(a)) if not np.all(np.isnan(a)) else None
            out["mean"] = _num(a.mean())
        out["nonfinite"] = int(a.size - int(finite.sum()))
        out["values"] = [_num(v) for v in a.reshape(-1)[:_FEW]]
        out["size"] = int(arr.size)
    elif arr.size and arr.dtype.kind == "c":
        out["values"] = [str(v) for v in arr.reshape(-1)[:_FEW]]
        out["size"] = int(arr.size)
    return out


def _num(v):
    v = float(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return float(f"{v:.6g}")


def parse_iterations(spec):
    """Which training iterations to record, from ``"1"``, ``"1,3,10-12"``, ``"all"``, an int
    or an iterable of ints (1-based): a set of ints, or None for all."""
    if spec is None:
        return {1}
    if isinstance(spec, int):
        return {spec}
    if isinstance(spec, str):
        s = spec.strip().lower()
        if s == "all":
            return None
        out = set()
        for part in s.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                if "-" in part:
                    a, b = part.split("-", 1)
                    out.update(range(int(a), int(b) + 1))
                else:
                    out.add(int(part))
            except ValueError:
                raise ValueError(f"iterations: expected numbers, ranges (3-5) or 'all', got "
                                 f"{spec!r}") from None
        if not out or min(out) < 1:
            raise ValueError(f"iterations are counted from 1, got {spec!r}")
        return out
    return {int(i) for i in spec}


def _fix_of(message: str) -> tuple[str, str | None]:
    """An error's text split into (message, fix): dyngrad's errors end with '  Fix: ...'."""
    head, sep, fix = message.partition("\n  Fix: ")
    return head, (fix.strip() if sep else None)


class Recorder:
    """What happened to the graph, as a list of events (see ``events``) plus node tables."""

    def __init__(self, params=None, title="dyngrad graph explorer", iterations=None):
        self.title = title
        self.events: list = []      # {"kind": "node"|"leaf"|"backward"|"accumulate"|"free"|...}
        self.nodes: list = []       # one dict per graph node or leaf, indexed by id
        self.groups: list = []      # one dict per module call
        self.error = None           # the exception that ended the recorded run (set by explore)
        self._want = parse_iterations(iterations)
        self._ids = weakref.WeakKeyDictionary()   # Node -> id
        self._leaf_ids = {}                       # id(tensor) -> (weakref, node id)
        self._param_names = {id(v): k for k, v in (params or {}).items()}
        self._stack = []                          # module call group ids
        self._skip = 0                            # module calls entered while not recording
        self._named_roots = set()
        self._incoming = {}
        self._prev = None
        self._active = False
        # iterations: 1-based index, whether it is recorded, what ends it
        self._it = 1
        self._live = self._want is None or 1 in self._want
        self._ended = False        # a backward or an optimizer step happened this iteration
        self._site = None          # where the iteration's first node was created (code, offset)
        self._depth = 0            # nested backward wrappers
        self._counts = [[0, 0, 0]]  # per iteration: nodes created, backward calls, optimizer steps
        self._losses = [None]       # per iteration: the first scalar backward root's value
        self._patched = []
        self._hooked = []          # optimizers whose step hooks hold this recorder
        from .compiled import CallCounter
        self.compiled = CallCounter()  # the dyngrad.compile'd functions called while recording

    # -- context manager ---------------------------------------------------------------
    def __enter__(self):
        from .. import _record as _graph
        from ..autograd.engine import HOOKS
        from ..nn.modules import module as _module
        self._prev = HOOKS.observer
        HOOKS.observer = self if self._live else self._prev
        _graph.RECORD_HOOKS.append(self._on_record)
        _module._GLOBAL_HOOKS.append(self)
        self._patch()
        self.compiled.unwrapped = [(o, k, v) for o, k, v in self._patched
                                   if k in ("backward", "grad")]
        self.compiled.install()
        self._active = True
        return self

    def __exit__(self, *exc):
        from .. import _record as _graph
        from ..autograd.engine import HOOKS
        from ..nn.modules import module as _module
        if self._on_record in _graph.RECORD_HOOKS:
            _graph.RECORD_HOOKS.remove(self._on_record)
        if self in _module._GLOBAL_HOOKS:
            _module._GLOBAL_HOOKS.remove(self)
        HOOKS.observer = self._prev
        self.compiled.uninstall()
        self._unpatch()
        self._active = False
        return False

    # -- backward calls and optimizer steps (wrapped while recording) --------------------
    def _patch(self):
        from .. import autograd
        from .._tensor import Tensor
        from ..optim.optimizer import Optimizer
        rec = self

        def wrap_call(orig, kind):
            def call(*args, **kwargs):
                return rec._call(orig, kind, args, kwargs)
            call.__wrapped__ = orig
            call.__name__ = getattr(orig, "__name__", kind)
            call.__doc__ = getattr(orig, "__doc__", None)
            return call

        self._patched.append((Tensor, "backward", Tensor.__dict__["backward"]))
        Tensor.backward = wrap_call(Tensor.__dict__["backward"], "backward")
        for name in ("backward", "grad"):
            orig = getattr(autograd, name)
            self._patched.append((autograd, name, orig))
            setattr(autograd, name, wrap_call(orig, name))
        # optimizer steps: every optimizer runs its ``_step_hooks`` after a step; hook the ones
        # that exist (a scheduler may already have wrapped their ``step``) and the ones created
        # while recording
        import gc
        hook = self._step_hook
        # (an optimizer whose constructor raised may still be alive, without its hooks)
        self._hooked = [o for o in gc.get_objects() if issubclass(type(o), Optimizer)
                        and isinstance(o.__dict__.get("_step_hooks"), list)]
        for o in self._hooked:
            o._step_hooks.append(hook)
        init = Optimizer.__dict__["__init__"]

        def __init__(opt, *args, **kwargs):
            init(opt, *args, **kwargs)
            opt._step_hooks.append(hook)
            rec._hooked.append(opt)
        __init__.__wrapped__ = init
        self._patched.append((Optimizer, "__init__", init))
        Optimizer.__init__ = __init__

    def _step_hook(self, opt, args, kwargs):
        self._on_step(opt)

    def _unpatch(self):
        for o in self._hooked:
            if self._step_hook in o._step_hooks:
                o._step_hooks.remove(self._step_hook)
        self._hooked = []
        while self._patched:
            owner, name, orig = self._patched.pop()
            setattr(owner, name, orig)

    def _call(self, orig, kind, args, kwargs):
        if self._depth:
            return orig(*args, **kwargs)
        self._depth += 1
        root = args[0] if args else kwargs.get("tensors", kwargs.get("outputs"))
        first = root[0] if isinstance(root, (list, tuple)) and root else root
        try:
            if kind != "grad":
                self._counts[-1][1] += 1
                if self._losses[-1] is None and getattr(first, "_data", None) is not None \
                        and first._data.size == 1 and first._data.dtype in _DT.FLOATING:
                    self._losses[-1] = _num(first._data.reshape(-1)[0])
            if self._live:
                fn = getattr(first, "_grad_fn", None)
                self.events.append({"kind": "call", "what": kind,
                                    "node": self._node_id(fn) if fn is not None else None,
                                    "value": summarize(first), "it": self._it})
            return orig(*args, **kwargs)
        except Exception as e:
            if self._live:
                self._on_error(e, first)
            raise
        finally:
            self._depth -= 1
            if kind != "grad":
                self._ended = True

    def _on_step(self, opt):
        self._counts[-1][2] += 1
        self._ended = True
        if self._live:
            n = sum(len(g["params"]) for g in opt.param_groups)
            self.events.append({"kind": "step", "node": None, "optimizer": type(opt).__name__,
                                "params": n, "it": self._it})

    def _on_error(self, e, root):
        """A failed backward: the node that raised (from the engine's frames), the error text
        and the fix, as one event."""
        node = None
        tb = e.__traceback__
        engine_file = sys.modules["dyngrad.autograd.engine"].__file__
        while tb is not None:
            f = tb.tb_frame
            if f.f_code.co_filename == engine_file and "node" in f.f_locals:
                node = f.f_locals["node"]
            tb = tb.tb_next
        if node is None:
            node = getattr(root, "_grad_fn", None)
        nid = self._node_id(node) if node is not None and type(node) is not AccumulateGrad \
            else (self._leaf_id(node.variable) if node is not None else None)
        msg, fix = _fix_of(str(e))
        self.events.append({"kind": "error", "node": nid, "type": type(e).__name__,
                            "message": msg, "fix": fix, "it": self._it})

    def _next_iteration(self):
        from ..autograd.engine import HOOKS
        self._it += 1
        self._ended = False
        self._counts.append([0, 0, 0])
        self._losses.append(None)
        self._live = self._want is None or self._it in self._want
        if self._active:
            HOOKS.observer = self if self._live else self._prev

    # -- module calls (nn.Module global hooks) -------------------------------------------
    def enter(self, module):
        if not self._live or self._skip:
            self._skip += 1
            return
        parent = self._stack[-1] if self._stack else None
        name = None
        if parent is not None:
            pm = self.groups[parent]["_module"]()
            if pm is not None:
                for k, m in pm._modules.items():
                    if m is module:
                        name = k
                        break
        if name is None:
            name = type(module).__name__
            self._name_params(module)
        path = (self.groups[parent]["path"] + "." + name) if parent is not None else name
        gid = len(self.groups)
        self.groups.append({"id": gid, "name": name, "cls": type(module).__name__, "path": path,
                            "parent": parent, "t0": len(self.events), "it": self._it,
                            "_module": weakref.ref(module)})
        self._stack.append(gid)

    def exit(self, module):
        if self._skip:
            self._skip -= 1
            return
        if self._stack:
            gid = self._stack.pop()
            self.groups[gid]["t1"] = len(self.events)

    def _name_params(self, module):
        if id(module) in self._named_roots:
            return
        self._named_roots.add(id(module))
        try:
            for k, p in module.named_parameters():
                self._param_names.setdefault(id(p), k)
        except Exception:
            pass

    # -- forward ------------------------------------------------------------------------
    def _on_record(self, tensor, node):
        if node is None:
            return
        if self._site is None:
            self._site = getattr(node, "_src", None)
        elif self._ended and self._depth == 0 and getattr(node, "_src", None) == self._site:
            self._next_iteration()
        self._counts[-1][0] += 1
        if not self._live:
            return
        nid = self._node_id(node, tensor)
        n = self.nodes[nid]
        if n.get("out") is None:
            n["out"] = summarize(tensor)

    def _node_id(self, node, tensor=None):
        nid = self._ids.get(node)
        if nid is not None:
            return nid
        # inputs first, so events stay in creation order (iterative over unseen ancestors)
        todo = [node]
        while todo:
            cur = todo[-1]
            missing = [fn for fn, _ in cur.next_functions
                       if fn is not None and fn not in self._ids and type(fn) is not AccumulateGrad]
            if missing:
                todo.extend(missing)
                continue
            todo.pop()
            if cur not in self._ids:
                self._add_node(cur, tensor if cur is node else None, pre=cur is not node)
        return self._ids[node]

    def _add_node(self, node, tensor, pre=False):
        inputs = []
        for fn, nr in node.next_functions:
            if fn is None:
                inputs.append(None)
            elif type(fn) is AccumulateGrad:
                inputs.append(self._leaf_id(fn.variable))
            else:
                inputs.append(self._ids[fn])
        nid = len(self.nodes)
        src = errors.source_of(node)
        if src is not None:
            src["where"] = errors.where_text(src)
        info = {"id": nid, "kind": "op", "op": type(node).__name__, "inputs": inputs,
                "out": summarize(tensor) if tensor is not None else None,
                "saved": _saved_summary(node), "src": src,
                "group": self._stack[-1] if self._stack else None,
                "t": len(self.events), "pre": pre, "it": self._it}
        self.nodes.append(info)
        self._ids[node] = nid
        self.events.append({"kind": "node", "node": nid, "it": self._it})

    def _leaf_id(self, t):
        ent = self._leaf_ids.get(id(t))
        if ent is not None and ent[0]() is t:
            return ent[1]
        nid = len(self.nodes)
        name = self._param_names.get(id(t)) or _guess_name(t)
        self.nodes.append({"id": nid, "kind": "leaf", "op": "AccumulateGrad", "name": name,
                           "inputs": [], "out": summarize(t), "saved": [], "src": None,
                           "group": self._stack[-1] if self._stack else None,
                           "t": len(self.events), "pre": False, "it": self._it})
        self._leaf_ids[id(t)] = (weakref.ref(t), nid)
        self.events.append({"kind": "leaf", "node": nid, "it": self._it})
        return nid

    # -- backward (engine observer protocol) ---------------------------------------------
    def on_node_start(self, node, grad):
        self._incoming[id(node)] = grad

    def on_node_done(self, node, grads_out):
        nid = self._node_id(node)
        g = self._incoming.pop(id(node), None)
        gin = [summarize(x) for x in g] if isinstance(g, list) else [summarize(g)]
        outs = [summarize(x) for x in (grads_out or ())]
        self.events.append({"kind": "backward", "node": nid, "grad_in": gin, "grads_out": outs,
                            "it": self._it})

    def on_accumulate(self, tensor, grad):
        nid = self._leaf_id(tensor)
        self.events.append({"kind": "accumulate", "node": nid, "grad": summarize(grad),
                            "it": self._it})

    def on_free(self, node):
        nid = self._ids.get(node)
        if nid is not None:
            self.events.append({"kind": "free", "node": nid, "it": self._it})

    # -- output -------------------------------------------------------------------------
    @property
    def iterations(self) -> int:
        """How many training iterations the run went through (recorded or not)."""
        return len(self._counts)

    def data(self) -> dict:
        """Everything the page needs, JSON-serialisable."""
        groups = []
        for g in self.groups:
            d = {k: v for k, v in g.items() if not k.startswith("_")}
            d.setdefault("t1", len(self.events))
            groups.append(d)
        _fold_repeats(groups, self.nodes)
        recorded = sorted({e["it"] for e in self.events})
        summary = {"iterations": len(self._counts), "recorded": recorded,
                   "nodes": [c[0] for c in self._counts],
                   "backward_calls": [c[1] for c in self._counts],
                   "steps": [c[2] for c in self._counts], "loss": self._losses}
        out = {"title": self.title, "nodes": self.nodes, "events": self.events,
               "groups": groups, "summary": summary}
        compiled = self.compiled.data()
        if compiled:
            out["compiled"] = compiled
        if self.error is not None:
            msg, fix = _fix_of(str(self.error))
            out["script_error"] = {"type": type(self.error).__name__, "message": msg, "fix": fix}
        return out

    def to_json(self) -> str:
        return json.dumps(self.data(), separators=(",", ":"), allow_nan=False, default=str)

    def html(self) -> str:
        """The page: one HTML document with its script and styles inline (no network)."""
        from ._page import render_page
        return render_page(self.title, self.to_json())

    def save_html(self, path) -> str:
        """Write the self-contained explorer page to ``path``; returns the path."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html())
        return str(path)

    def _repr_html_(self):
        """Jupyter shows the recorder as the explorer page itself (in an isolated frame)."""
        from ._page import inline_frame
        return inline_frame(self.html())

    def __repr__(self):
        return (f"<Recorder: {len(self.nodes)} nodes, {len(self.events)} events, "
                f"{len(self.groups)} module calls, {self.iterations} iteration"
                f"{'s' if self.iterations != 1 else ''}>")


def record(params=None, title="dyngrad graph explorer", iterations=None) -> Recorder:
    """Context manager recording graph construction and backward for ``save_html``.

    ``iterations`` chooses the training iterations recorded in full: ``1`` (the default),
    ``"1,5,10-12"``, a list of numbers or ``"all"``; the others are only counted."""
    return Recorder(params=params, title=title, iterations=iterations)


def _saved_summary(node) -> list:
    saved = node._saved
    if not saved or type(node) is AccumulateGrad:
        return []
    # PyTorch's names (``_saved_self``...) where the node has them
    names = {pos: n for n, (pos, kind) in type(node)._named_saved.items()
             if kind in ("tensor", "array")}
    out = []
    for i, v in enumerate(saved):
        nm = names.get(i, f"saved_{i}")
        if isinstance(v, Saved):
            s = summarize(v.value)
            s["name"] = nm if i in names else "result" if v.is_output else nm
            out.append(s)
        elif hasattr(v, "_data") or isinstance(v, np.ndarray):
            s = summarize(v)
            s["name"] = nm
            out.append(s)
    return out


def _guess_name(t):
    """The user's variable name for a leaf, from the first frame outside dyngrad (if any)."""
    from ..autograd.node import _inside
    f = sys._getframe(1)
    while f is not None and _inside(f.f_code):
        f = f.f_back
    if f is None:
        return None
    try:
        for k, v in f.f_locals.items():
            if v is t and not k.startswith("_"):
                return k
    except Exception:
        pass
    return None


def _fold_repeats(groups, nodes):
    """Mark runs of consecutive sibling module calls that did the same ops (foldable)."""
    sig = {}
    members = {}
    for n in nodes:
        if n["kind"] == "op" and n["group"] is not None:
            members.setdefault(n["group"], []).append(n["op"])
    children = {}
    for g in groups:
        children.setdefault(g["parent"], []).append(g["id"])
    for g in reversed(groups):   # children have larger ids than parents
        kids = children.get(g["id"], [])
        sig[g["id"]] = (g["cls"] + "(" + ",".join(members.get(g["id"], [])) + ";"
                        + ",".join(sig[k] for k in kids) + ")")
    # two sibling calls are consecutive when no node of the parent was created between them
    parent_nodes = {}
    for n in nodes:
        parent_nodes.setdefault(n["group"], []).append(n["t"])
    for parent, kids in children.items():
        run = []
        for k in kids:
            g = groups[k]
            if run:
                prev = groups[run[-1]]
                between = any(prev["t1"] <= t < g["t0"] for t in parent_nodes.get(parent, ()))
                if sig[k] == sig[prev["id"]] and not between:
                    run.append(k)
                    continue
                _mark(groups, run)
            run = [k]
        _mark(groups, run)


def _mark(groups, run):
    if len(run) > 1:
        for i, k in enumerate(run):
            groups[k]["run"] = run[0]
            groups[k]["run_index"] = i
            groups[k]["run_len"] = len(run)


def explore_script(script, args=(), iterations="1", title=None):
    """Run ``script`` with ``args`` under the recorder; returns ``(recorder, exit_code, error)``
    where ``error`` is the exception the script raised (None when it finished)."""
    from .._script import run_script
    from .._usage import UsageError
    if not os.path.isfile(script):
        raise UsageError(f"no such script: {script}")
    rec = record(title=title or f"dyngrad explore {os.path.basename(script)}",
                 iterations=iterations)
    code, error = 0, None
    try:
        run_script(script, list(args), wrap=rec)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except Exception as e:  # noqa: BLE001 - recorded on the page, then re-raised by the command
        code, error = 1, e
        rec.error = e
    return rec, code, error
