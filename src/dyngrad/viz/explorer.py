"""The graph explorer's recorder: ``with record() as rec:`` logs, in order, every node forward
creates (op, inputs, output, source line, module path) and, during backward, every node run,
gradient accumulated and buffer freed; ``rec.save_html(path)`` writes a self-contained page."""
from __future__ import annotations

import json
import sys
import weakref

import numpy as np

from ..autograd import errors
from ..autograd.node import AccumulateGrad, Saved, _PKG

__all__ = ["record", "Recorder", "summarize"]

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
    if arr.size and arr.dtype.kind in "biuf":
        a = arr.astype(np.float64, copy=False)
        finite = np.isfinite(a)
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


class Recorder:
    """What happened to the graph, as a list of events (see ``events``) plus node tables."""

    def __init__(self, params=None, title="dyngrad graph explorer"):
        self.title = title
        self.events: list = []      # {"kind": "node"|"leaf"|"backward"|"accumulate"|"free"|...}
        self.nodes: list = []       # one dict per graph node or leaf, indexed by id
        self.groups: list = []      # one dict per module call
        self._ids = weakref.WeakKeyDictionary()   # Node -> id
        self._leaf_ids = {}                       # id(tensor) -> (weakref, node id)
        self._param_names = {id(v): k for k, v in (params or {}).items()}
        self._stack = []                          # module call group ids
        self._named_roots = set()
        self._incoming = {}
        self._prev = None
        self._active = False

    # -- context manager ---------------------------------------------------------------
    def __enter__(self):
        from ..ops import _graph
        from ..autograd.engine import HOOKS
        from ..nn.modules import module as _module
        self._prev = HOOKS.observer
        HOOKS.observer = self
        _graph.RECORD_HOOKS.append(self._on_record)
        _module._GLOBAL_HOOKS.append(self)
        self._active = True
        return self

    def __exit__(self, *exc):
        from ..ops import _graph
        from ..autograd.engine import HOOKS
        from ..nn.modules import module as _module
        if self._on_record in _graph.RECORD_HOOKS:
            _graph.RECORD_HOOKS.remove(self._on_record)
        if self in _module._GLOBAL_HOOKS:
            _module._GLOBAL_HOOKS.remove(self)
        HOOKS.observer = self._prev
        self._active = False
        return False

    # -- module calls (nn.Module global hooks) -------------------------------------------
    def enter(self, module):
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
                            "parent": parent, "t0": len(self.events), "_module": weakref.ref(module)})
        self._stack.append(gid)

    def exit(self, module):
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
        info = {"id": nid, "kind": "op", "op": type(node).__name__, "inputs": inputs,
                "out": summarize(tensor) if tensor is not None else None,
                "saved": _saved_summary(node), "src": src,
                "group": self._stack[-1] if self._stack else None,
                "t": len(self.events), "pre": pre}
        self.nodes.append(info)
        self._ids[node] = nid
        self.events.append({"kind": "node", "node": nid})

    def _leaf_id(self, t):
        ent = self._leaf_ids.get(id(t))
        if ent is not None and ent[0]() is t:
            return ent[1]
        nid = len(self.nodes)
        name = self._param_names.get(id(t)) or _guess_name(t)
        self.nodes.append({"id": nid, "kind": "leaf", "op": "AccumulateGrad", "name": name,
                           "inputs": [], "out": summarize(t), "saved": [], "src": None,
                           "group": self._stack[-1] if self._stack else None,
                           "t": len(self.events), "pre": False})
        self._leaf_ids[id(t)] = (weakref.ref(t), nid)
        self.events.append({"kind": "leaf", "node": nid})
        return nid

    # -- backward (engine observer protocol) ---------------------------------------------
    def on_node_start(self, node, grad):
        self._incoming[id(node)] = grad

    def on_node_done(self, node, grads_out):
        nid = self._node_id(node)
        g = self._incoming.pop(id(node), None)
        gin = [summarize(x) for x in g] if isinstance(g, list) else [summarize(g)]
        outs = [summarize(x) for x in (grads_out or ())]
        self.events.append({"kind": "backward", "node": nid, "grad_in": gin, "grads_out": outs})

    def on_accumulate(self, tensor, grad):
        nid = self._leaf_id(tensor)
        self.events.append({"kind": "accumulate", "node": nid, "grad": summarize(grad)})

    def on_free(self, node):
        nid = self._ids.get(node)
        if nid is not None:
            self.events.append({"kind": "free", "node": nid})

    # -- output -------------------------------------------------------------------------
    def data(self) -> dict:
        """Everything the page needs, JSON-serialisable."""
        groups = []
        for g in self.groups:
            d = {k: v for k, v in g.items() if not k.startswith("_")}
            d.setdefault("t1", len(self.events))
            groups.append(d)
        _fold_repeats(groups, self.nodes)
        return {"title": self.title, "nodes": self.nodes, "events": self.events,
                "groups": groups}

    def to_json(self) -> str:
        return json.dumps(self.data(), separators=(",", ":"), allow_nan=False)

    def html(self) -> str:
        """The page: one HTML document with its script and styles inline (no network)."""
        from ._page import PAGE
        payload = self.to_json().replace("</", "<\\/")
        return PAGE.replace("__TITLE__", _escape(self.title)).replace("__DATA__", payload)

    def save_html(self, path) -> str:
        """Write the self-contained explorer page to ``path``; returns the path."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html())
        return str(path)

    def __repr__(self):
        return (f"<Recorder: {len(self.nodes)} nodes, {len(self.events)} events, "
                f"{len(self.groups)} module calls>")


def record(params=None, title="dyngrad graph explorer") -> Recorder:
    """Context manager recording graph construction and backward for ``save_html``."""
    return Recorder(params=params, title=title)


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _saved_summary(node) -> list:
    from .dot import _SAVED_NAMES
    saved = node._saved
    if not saved or type(node) is AccumulateGrad:
        return []
    names = _SAVED_NAMES.get(type(node).__name__, ())
    out = []
    for i, v in enumerate(saved):
        nm = names[i] if i < len(names) else f"saved_{i}"
        if isinstance(v, Saved):
            s = summarize(v.value)
            s["name"] = "result" if v.is_output else nm
            out.append(s)
        elif hasattr(v, "_data") or isinstance(v, np.ndarray):
            s = summarize(v)
            s["name"] = nm
            out.append(s)
    return out


def _guess_name(t):
    """The user's variable name for a leaf, from the first frame outside dyngrad (if any)."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PKG):
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
