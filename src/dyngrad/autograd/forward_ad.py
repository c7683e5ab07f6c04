"""Forward-mode AD: tangents carried along with tensors inside a ``dual_level``.

While a level is active, a graph observer computes, for every recorded op with an input that
carries a tangent, the output tangent as the op's Jacobian-vector product.  The JVP comes from
the op's own differentiable backward formula (the "double vjp": jvp(v) = d/du <vjp(u), v>), so
every op with a differentiable backward works.  Tensors that only carry a tangent (their primal
does not require grad) record internally but report ``requires_grad=False`` as in PyTorch.

Grad mode does not stop tangents (only inference mode does): under ``no_grad`` ops still
record while a level is active, and an output keeps its node only if an input carried a
tangent (it is then tangent-only); a backward without ``create_graph`` that meets tangents
runs its formulas on tensors, so its gradients carry them.

>>> import dyngrad as torch
>>> import dyngrad.autograd.forward_ad as fwAD
>>> with fwAD.dual_level():
...     d = fwAD.make_dual(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0]))
...     fwAD.unpack_dual((d * d).sum()).tangent
tensor(2.)
"""
from __future__ import annotations

import weakref
from collections import namedtuple

import numpy as np

from .grad_mode import DUAL_LEVEL, STATE
from .node import CONJ_OFF, AccumulateGrad, Node, NO_EDGE, Saved
from .. import _dtype as _DT

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual",
           "UnpackedDualTensor"]

_LEVEL = DUAL_LEVEL  # the active level (at most one: nesting is not supported, as in PyTorch)
_TENSORS: list = []    # weakrefs to tensors given a tangent at this level (cleared on exit)
_NODES: list = []      # weakrefs to nodes holding tangents of their outputs
_BUSY = [False]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "The primal and tangent of a dual tensor (``unpack_dual``)."


def _tensor_cls():
    from .._tensor import Tensor
    return Tensor


def enter_dual_level():
    """Start a forward-AD level (prefer the ``dual_level`` context manager); returns it."""
    if _LEVEL:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    from .._record import RECORD_HOOKS
    _LEVEL.append(0)
    RECORD_HOOKS.append(_observe)
    if not STATE.enabled and not STATE.inference:
        STATE.enabled = STATE.fw_only = True  # grad mode is off: record for the tangents only
    return 0


def exit_dual_level(*, level=None):
    """End the level: every tangent created in it is dropped."""
    if not _LEVEL:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was "
                           "created. This is not supported.")
    from .._record import RECORD_HOOKS
    Tensor = _tensor_cls()
    _LEVEL.pop()
    try:
        RECORD_HOOKS.remove(_observe)
    except ValueError:
        pass
    if STATE.fw_only:
        STATE.enabled = STATE.fw_only = False
    for ref in _TENSORS:
        t = ref()
        if t is None:
            continue
        d = t.__dict__
        d.pop("_fw_grad", None)
        if type(t) is _Dual:
            if d.pop("_dual_only", False):
                t._requires_grad = False
                t._grad_fn = None
                d.pop("_output_nr", None)
            t.__class__ = Tensor
    for ref in _NODES:
        n = ref()
        if n is not None:
            for k in ("_fw_out", "_fw_pending", "_fw_in_edges"):
                n.__dict__.pop(k, None)
    _TENSORS.clear()
    _NODES.clear()


class dual_level:
    """Context manager of a forward-AD level: tangents exist only inside it."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _no_level():
    return RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make "
                        "sure to enter_dual_level() first.")


def make_dual(tensor, tangent, *, level=None):
    """A tensor with value ``tensor`` carrying ``tangent`` as its forward gradient (a view of
    ``tensor``)."""
    if not _LEVEL:
        raise _no_level()
    from .._dtype import FROM_NP
    if tensor._data.dtype not in _DT.INEXACT:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"{FROM_NP[tensor._data.dtype]}")
    if tangent._data.dtype not in _DT.INEXACT:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"{FROM_NP[tangent._data.dtype]}")
    if tensor._data.shape != tangent._data.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor._data.shape)} while the given forward gradient is "
                           f"of size {list(tangent._data.shape)}.")
    Tensor = _tensor_cls()
    if tensor.requires_grad:
        from .grad_mode import enable_grad
        with enable_grad():
            out = tensor.view_as(tensor)
        out.__class__ = _Dual
        out.__dict__["_fw_grad"] = tangent
        fn = out._grad_fn
        fn.__dict__["_fw_out"] = {out._output_nr: tangent}
        _NODES.append(weakref.ref(fn))
    else:
        out = Tensor._make(tensor._data)
        out._vc = tensor._vc
        out._base = tensor if tensor._base is None else tensor._base
        out._requires_grad = True
        out.__class__ = _Dual
        out.__dict__["_dual_only"] = True
        out.__dict__["_fw_grad"] = tangent
    _TENSORS.append(weakref.ref(out))
    return out


def _tangent(t):
    fn = t._grad_fn
    if fn is not None:
        return _edge_tangent(fn, t._output_nr)
    return t._fw_grad


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of a tensor: a view without the tangent, and the tangent (None
    outside a level or for a tensor without one)."""
    Tensor = _tensor_cls()
    tangent = _tangent(tensor) if _LEVEL else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    if type(tensor) is _Dual and tensor.__dict__.get("_dual_only"):
        primal = Tensor._make(tensor._data)
        primal._vc = tensor._vc
    else:
        primal = Tensor._make(tensor._data)
        primal._vc = tensor._vc
        if tensor.requires_grad:
            primal._requires_grad = True
            primal._grad_fn = _Identity(((tensor._grad_fn, tensor._output_nr)
                                         if tensor._grad_fn is not None else
                                         (AccumulateGrad.for_leaf(tensor), 0),), ())
    return UnpackedDualTensor(primal, tangent)


class _Identity(Node):
    """Gradient of the primal view returned by ``unpack_dual``."""

    __slots__ = ()
    _needs_saved = False

    def name(self):
        return "Identity"

    def _bw(self, g, graph):
        return (g,)


_Identity.__name__ = "Identity"


# --- tensors whose tangent makes them record -------------------------------------------
class _Dual(_tensor_cls()):
    """A tensor carrying a tangent.  If only the tangent made it record (``_dual_only``), it
    reports ``requires_grad=False`` and no ``grad_fn``, as PyTorch's dual tensors do."""

    __slots__ = ()

    def _only(self):
        return self.__dict__.get("_dual_only", False)

    @property
    def requires_grad(self):
        return False if self._only() else self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        if self._only():
            if requires_grad:
                self.__dict__["_dual_only"] = False
                self.__dict__["_fw_grad"] = _tangent(self)
                self._grad_fn = None
                self.__dict__.pop("_output_nr", None)
                self._acc = None
            return self
        return super().requires_grad_(requires_grad)

    @property
    def grad_fn(self):
        return None if self._only() else self._grad_fn

    @property
    def is_leaf(self):
        return self._only() or self._grad_fn is None

    @property
    def grad(self):
        return None if self._only() else super().grad

    @grad.setter
    def grad(self, value):
        Tensor = _tensor_cls()
        Tensor.grad.fset(self, value)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from . import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        if self._only():
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        return super().register_hook(hook)

    def retain_grad(self):
        if self._only():
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        return super().retain_grad()

    def __repr__(self, *args, **kwargs):
        Tensor = _tensor_cls()
        p = Tensor._make(self._data)
        if not self._only():
            p._requires_grad = self._requires_grad
            p._grad_fn = self._grad_fn
        tan = _tangent(self) if _LEVEL else None
        if tan is not None:
            p.__dict__["_fw_grad"] = tan
        return repr(p)

    __str__ = __repr__


def _real(t):
    """Does ``t`` (a tensor that records) require grad in the user's sense?"""
    return t._requires_grad and not t.__dict__.get("_dual_only", False)


def _edge_real(fn):
    if fn is None:
        return False
    if fn.__class__ is AccumulateGrad:
        v = fn.variable
        return not v.__dict__.get("_dual_only", False)
    return not fn.__dict__.get("_dual_only", False)


def _edge_tangent(fn, nr):
    if fn.__class__ is AccumulateGrad:
        return fn.variable.__dict__.get("_fw_grad")
    d = fn.__dict__
    c = d.get("_fw_out")
    if c is None:
        pend = d.get("_fw_pending")
        if pend is None:
            return None
        _finish(fn, pend)
        c = d.get("_fw_out") or {}
    return c.get(nr)


def _observe(t, node):
    """Graph observer: give the new output ``t`` of ``node`` its tangent."""
    if _BUSY[0] or node is None:
        return
    if STATE.fw_only:
        _observe_fw_only(t, node)
        return
    d = node.__dict__
    if "_fw_out" in d:  # a node already finished (a re-announced tensor)
        tan = d["_fw_out"].get(t._output_nr)
        if tan is not None:
            _attach(t, tan, d.get("_dual_only", False))
        return
    pend = d.get("_fw_pending")
    if pend is None:
        if not any(fn is not None and _edge_tangent(fn, nr) is not None
                   for fn, nr in node.next_functions):
            return
        pend = d["_fw_pending"] = []
        _NODES.append(weakref.ref(node))
        _classify(node)
    pend.append(t)
    if node._nout == 1:
        _finish(node, pend)
    else:
        # several outputs: their output numbers may be set after they are announced, so
        # the tangents are computed when first asked for
        _attach(t, None, d.get("_dual_only", False))


def _observe_fw_only(t, node):
    """Grad mode is off but the op recorded so that tangents flow: an output of an op with
    an input carrying a tangent is tangent-only (no history, ``requires_grad=False``, and the
    node passes no gradient on); any other output loses the history it was given."""
    d = node.__dict__
    if "_fw_out" not in d and "_fw_pending" not in d:
        if not any(fn is not None and _edge_tangent(fn, nr) is not None
                   for fn, nr in node.next_functions):
            _strip(t)
            return
        d["_dual_only"] = True
    prev = STATE.fw_only
    STATE.fw_only = False
    try:
        _observe(t, node)
    finally:
        STATE.fw_only = prev
    if type(t) is not _Dual:  # an output without a tangent (an integer result)
        _strip(t)


def _strip(t):
    t._grad_fn = None
    t.__dict__.pop("_output_nr", None)
    if t._base is not None and t._view_fn is not None:
        # a view made under no_grad of a tensor that requires grad: it still requires grad,
        # has no history and refuses in-place changes while recording (as ops/views.py
        # makes it when nothing records)
        t._creation = "no_grad"
        t._nograd_view = True
        return
    t._requires_grad = False


def _classify(node):
    """Mark a node whose inputs only carry tangents; cut its edges into such history."""
    nf = node.next_functions
    only = not any(_edge_real(fn) for fn, _ in nf)
    if only:
        node.__dict__["_dual_only"] = True
    elif any(fn is not None and not _edge_real(fn) for fn, _ in nf):
        # a gradient never needs to flow into tangent-only history
        node.__dict__["_fw_in_edges"] = nf
        node.next_functions = tuple(NO_EDGE if (fn is not None and not _edge_real(fn)) else (fn, nr)
                                    for fn, nr in nf)


def _finish(node, pend):
    d = node.__dict__
    tangents = [None if fn is None else _edge_tangent(fn, nr) for fn, nr in
                d.get("_fw_in_edges", node.next_functions)]
    nout = node._nout
    outs = [None] * nout
    for k, o in enumerate(pend):
        j = o._output_nr if o._output_nr < nout and outs[o._output_nr] is None else k
        if j < nout:
            outs[j] = o
    ws = _jvp(node, tangents, outs)
    d.pop("_fw_pending", None)
    d["_fw_out"] = {j: w for j, w in enumerate(ws) if w is not None}
    only = d.get("_dual_only", False)
    for o, w in zip(outs, ws):
        if o is not None and w is not None:
            _attach(o, w, only)


def _attach(t, tan, only):
    if tan is not None:
        t.__dict__["_fw_grad"] = tan
    if type(t) is not _Dual:
        t.__class__ = _Dual
    if only:
        t.__dict__["_dual_only"] = True
    _TENSORS.append(weakref.ref(t))


class _Stub(Node):
    """Where a copied node's edges point: gradients stop here (see ``_jvp``)."""

    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):  # never runs: nothing below it is a target
        return ()


_STUB = _Stub((), ())


def _detach(x, node, memo):
    Tensor = _tensor_cls()
    tx = type(x)
    if tx is Saved:
        if x.is_output:
            return x
        v = x.get(node, True)
        s = Saved.__new__(Saved)
        s.value = Tensor._make(v._data)
        s.value._vc = x.counter
        s.counter = x.counter
        s.version = x.counter[0]
        s.is_output = False
        s.tensor_ref = None
        return s
    if tx is tuple or tx is list:
        return tx(_detach(e, node, memo) for e in x)
    if isinstance(x, Tensor):
        r = Tensor._make(x._data)
        r._vc = x._vc
        return r
    if isinstance(x, Node) and not isinstance(x, AccumulateGrad):
        return _clone(x, memo)
    return x


def _clone(node, memo=None):
    """A copy of ``node`` whose saved inputs are detached and whose edges end in a stub, so
    differentiating its backward formula builds a small graph cut off from the forward one."""
    memo = {} if memo is None else memo
    c = memo.get(id(node))
    if c is not None:
        return c
    cls = type(node)
    cls = cls._conj_of or cls  # the formula as written (a double vjp differentiates it)
    c = object.__new__(cls)
    memo[id(node)] = c
    for k in cls.__mro__:
        for name in k.__dict__.get("__slots__", ()):
            if name in ("__dict__", "__weakref__"):
                continue
            try:
                setattr(c, name, getattr(node, name))
            except AttributeError:
                pass
    c.__dict__.update(node.__dict__)
    c.next_functions = tuple(NO_EDGE if fn is None else (_STUB, 0)
                             for fn, _ in node.__dict__.get("_fw_in_edges", node.next_functions))
    c._saved = _detach(node._saved, node, memo)
    return c


class _Done(Exception):
    """Leaves the double-vjp path when a declared rule gave the tangents."""


# how many times each node class's tangent was derived from its backward formula (no
# declared forward-mode rule); tests read it to check that declared ops never need it
DERIVED: dict = {}


def _jvp(node, tangents, outs):
    """Output tangents of ``node`` for input tangents ``tangents`` (double-vjp)."""
    Tensor = _tensor_cls()
    from .grad_mode import STATE
    from .engine import run_backward
    prev = STATE.enabled
    prev_fw = STATE.fw_only
    _BUSY[0] = CONJ_OFF[0] = True
    STATE.enabled = True
    STATE.fw_only = False
    try:
        rule = getattr(type(node), "_fw_rule", None)
        if rule is not None:  # the op's declared forward-mode rule (ops/_spec.py)
            # the tangent keeps a history only when something it is computed from needs one
            STATE.enabled = not node.__dict__.get("_dual_only", False) or any(
                v is not None and v._requires_grad for v in tangents)
            ws = rule(node, list(tangents))
            us = [o if o is not None and o._data.dtype in _DT.INEXACT else None for o in outs]
            raise _Done
        DERIVED[type(node).__name__] = DERIVED.get(type(node).__name__, 0) + 1
        # a node with complex values that is not a conjugating twin has a formula written as
        # PyTorch's complex gradient itself (var, the norms, view_as_real, ...): its vjp F is
        # only real-linear, so the tangent w is the gradient (PyTorch's convention, the
        # conjugating twins on) of Re sum(conj(v) F(u)), as Re<w, u> = Re<v, F(u)>
        wirtinger = type(node)._conj_of is None and (
            any(o is not None and o._data.dtype.kind == "c" for o in outs) or
            any(v is not None and v._data.dtype.kind == "c" for v in tangents))
        if wirtinger:
            CONJ_OFF[0] = False
        c = _clone(node)
        us = []
        for o in outs:
            if o is None or o._data.dtype not in _DT.INEXACT:
                us.append(None)
                continue
            u = Tensor._make(np.zeros(o._data.shape, o._data.dtype))
            u._requires_grad = True
            us.append(u)
        gin = c._bw(us[0] if len(us) == 1 else list(us), True)
        casts = node._casts
        if casts is not None:
            from .engine import _cast_back
            gin = _cast_back(gin, casts)
        s = None
        for gi, v in zip(gin, tangents):
            if gi is None or v is None or not isinstance(gi, Tensor):
                continue
            if wirtinger and (gi.is_complex() or v.is_complex()):
                term = (gi.conj() * v).real.sum()
            else:
                term = (gi * v).sum()
            s = term if s is None else s + term
        live = [u for u in us if u is not None]
        if not live:
            ws = [None] * len(us)
        elif s is None or not s._requires_grad:
            # the backward formula is not differentiable: build the products row by row
            ws = _jvp_by_rows(c, tangents, us, casts)
        else:
            got = run_backward([s], [Tensor._make(np.ones((), s._data.dtype))], False, False,
                               inputs=live, capture=True, allow_unused=True)
            it = iter(got)
            ws = [None if u is None else next(it) for u in us]
    except _Done:
        pass
    finally:
        STATE.enabled = prev
        STATE.fw_only = prev_fw
        _BUSY[0] = CONJ_OFF[0] = False
    res = []
    for o, w, u in zip(outs, ws, us):
        if u is None or o is None:
            res.append(None)
            continue
        if w is None:
            w = Tensor._make(np.zeros(o._data.shape, o._data.dtype))
        elif w._data.dtype != o._data.dtype:
            w = Tensor._make(w._data.astype(o._data.dtype))
        res.append(w)
    return res


def not_implemented(node):
    """PyTorch's error for an op without a forward-mode rule."""
    name = node.name()
    i = name.find("Backward")
    return NotImplementedError(
        f"Trying to use forward AD with {name[:i] if i > 0 else name} that does not support it "
        f"because it has not been implemented yet.\nPlease file us an issue at "
        f"https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so that we "
        f"can prioritize its implementation.\n(dyngrad derives this op's tangent from its backward "
        f"formula one output element at a time, up to {_ROWS_LIMIT} elements; this output has "
        f"more.)")


_ROWS_LIMIT = 4096


def _zero_jacobian(c, vs, us, casts):
    """Whether the backward formula maps a random output gradient to zero for every input
    with a tangent: then (it being linear) the Jacobian is zero, as for round or sign."""
    Tensor = _tensor_cls()
    rs = np.random.RandomState(0)
    gs = [None if x is None else rs.standard_normal(x._data.shape).astype(x._data.dtype)
          for x in us]
    gin = c._bw(gs[0] if len(gs) == 1 else gs, False)
    if casts is not None:
        from .engine import _cast_back
        gin = _cast_back(gin, casts)
    for gi, v in zip(gin, vs):
        if gi is not None and v is not None:
            gi = gi._data if isinstance(gi, Tensor) else np.asarray(gi)
            if np.any(gi != 0):
                return False
    return True


def _jvp_by_rows(c, tangents, us, casts, limit=_ROWS_LIMIT):
    """J v from one plain backward call per output element (for backward formulas that are
    not themselves differentiable)."""
    Tensor = _tensor_cls()
    from .grad_mode import STATE
    STATE.enabled = False
    vs = [None if v is None else v._data for v in tangents]
    if _zero_jacobian(c, vs, us, casts):
        STATE.enabled = True
        return [None] * len(us)  # zero tangents (round, sign, ...): no rows needed
    ws = []
    for j, u in enumerate(us):
        if u is None:
            ws.append(None)
            continue
        if u._data.size > limit:
            raise not_implemented(c)
        w = np.zeros(u._data.size, np.float64)
        for k in range(u._data.size):
            gs = [None if x is None else np.zeros(x._data.shape, x._data.dtype) for x in us]
            gs[j].reshape(-1)[k] = 1
            gin = c._bw(gs[0] if len(gs) == 1 else gs, False)
            if casts is not None:
                from .engine import _cast_back
                gin = _cast_back(gin, casts)
            tot = 0.0
            for gi, v in zip(gin, vs):
                if gi is not None and v is not None:
                    gi = gi._data if isinstance(gi, Tensor) else np.asarray(gi)
                    tot += float((np.broadcast_to(gi, v.shape) * v).sum())
            w[k] = tot
        ws.append(Tensor._make(w.reshape(u._data.shape).astype(u._data.dtype)))
    STATE.enabled = True
    return ws


def _custom_function_jvp(cls, node, tensor_args, args, result):
    """Tangents of a custom Function's outputs: its ``jvp`` when defined, else the generic
    rule through its backward."""
    Tensor = _tensor_cls()
    tans = [_tangent(a) if isinstance(a, Tensor) else None for a in args]
    if not any(t is not None for t in tans):
        return
    from .function import Function
    outs = [o for o in result if isinstance(o, Tensor) and o._grad_fn is node]
    if cls.jvp is not Function.jvp:
        from .grad_mode import no_grad
        targs = [(t if t is not None else Tensor._make(np.zeros(a._data.shape, a._data.dtype)))
                 if isinstance(a, Tensor) else None for a, t in zip(args, tans)]
        with no_grad():
            r = cls.jvp(node, *targs)
        r = r if isinstance(r, tuple) else (r,)
        only = not any(_real(a) for a in tensor_args)
        d = node.__dict__
        d["_fw_out"] = {}
        _NODES.append(weakref.ref(node))
        if only:
            d["_dual_only"] = True
        for o, w in zip(outs, r):
            if w is not None:
                d["_fw_out"][o._output_nr] = w
                _attach(o, w, only)
    # otherwise the generic rule runs when the outputs are announced to the graph observers


# --- a backward without create_graph through values that carry tangents ----------------
def carries_tangents(roots, grads) -> bool:
    """Whether a backward from ``roots`` with ``grads`` meets a tangent: a gradient or root
    that carries one, or a node of the graph whose inputs carried one (so its saved values
    do).  Then the backward formulas must run on tensors for the tangents to come through."""
    if _BUSY[0]:
        return False
    for g in grads:
        if type(g) is _Dual:
            return True
    for r in roots:
        if type(r) is _Dual:
            return True
    if not _NODES:
        return False
    for n in _graph_nodes(roots):
        if n.__class__ is AccumulateGrad:
            if type(n.variable) is _Dual:
                return True
            continue
        d = getattr(n, "__dict__", None)
        if d and ("_fw_out" in d or "_fw_pending" in d):
            return True
    return False


def _graph_nodes(roots):
    """Every node of the graph below ``roots``, each once (depth first)."""
    seen = set()
    stack = [r._grad_fn for r in roots if r._grad_fn is not None]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        yield n
        stack.extend(fn for fn, _ in n.next_functions if fn is not None)


def _graph_leaves(roots):
    return [n.variable for n in _graph_nodes(roots) if n.__class__ is AccumulateGrad]


def _without_graph(r):
    """``r``'s value and tangent, with no history: a tangent-only tensor, or a plain one."""
    Tensor = _tensor_cls()
    tan = _tangent(r)
    out = Tensor._make(r._data)
    if tan is None:
        return out
    out._requires_grad = True
    out.__class__ = _Dual
    out.__dict__["_dual_only"] = True
    out.__dict__["_fw_grad"] = Tensor._make(tan._data)
    _TENSORS.append(weakref.ref(out))
    return out


def tangent_backward(roots, grads, retain_graph, inputs, capture, allow_unused):
    """A backward without ``create_graph`` that meets tangents (``carries_tangents``): the
    formulas run on tensors so the gradients carry their tangents, as PyTorch's forward AD
    does in a backward; the gradients handed back or accumulated have no history."""
    Tensor = _tensor_cls()
    from .engine import run_backward
    gs = [g if g is None or isinstance(g, Tensor) else Tensor._make(g) for g in grads]
    if capture:
        res = run_backward(roots, gs, retain_graph, True, inputs, capture, allow_unused)
        return [None if r is None else _without_graph(r) for r in res]
    targets = list(inputs) if inputs is not None else _graph_leaves(roots)
    before = [(t, t._grad) for t in targets]
    run_backward(roots, gs, retain_graph, True, inputs, capture, allow_unused)
    for t, old in before:
        new = t._grad
        if new is old or new is None:
            continue
        plain = _without_graph(new)
        if old is None:
            # a first gradient is stored without its tangent, as PyTorch's AccumulateGrad
            # stores a detached copy
            t._grad = Tensor._make(plain._data)
            continue
        if old._grad_fn is not None or old._requires_grad:
            t._grad = plain
            continue
        # accumulated in place into the existing gradient, as without tangents
        old._data[...] = plain._data
        old._vc[0] += 1
        tan = plain.__dict__.get("_fw_grad")
        if tan is not None:
            _attach(old, tan, True)
        t._grad = old
    return None


def inplace_records(self, args) -> bool:
    """Grad mode is off inside a dual level: whether an in-place op on ``self`` records, for
    the tangents' sake.  A tensor that requires grad keeps its history (as under ``no_grad``);
    otherwise the op records when ``self`` or an argument carries a tangent."""
    if _real(self):
        return False
    if type(self) is _Dual:
        return True
    for a in args:
        if type(a) is _Dual:
            return True
    return False
