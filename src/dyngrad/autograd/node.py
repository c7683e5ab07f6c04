"""Graph nodes: one recorded operation each (``grad_fn``), with PyTorch's class names.

A node holds ``next_functions`` -- one ``(node or None, input_nr)`` pair per input -- and
the values its backward formula needs.  Saved values are stamped with the version of the
tensor they came from, checked when backward unpacks them, and released after a backward
without ``retain_graph``.
"""
from __future__ import annotations

import itertools
from operator import itemgetter
import os
import sys
from weakref import ref as _weakref

import numpy as np

from . import errors

_seq = itertools.count()
_getframe = sys._getframe
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
ACCUMULATE_PRIORITY = 1 << 62
_new_acc = object.__new__
# Active saved-tensors hooks, innermost last: (pack, unpack) pairs; other entries disable them.
# Empty in normal use, so saving a tensor costs one truth test of this list.
SAVED_HOOKS: list = []


_DEPTH: dict = {}


_INSIDE: dict = {}  # code object -> whether it belongs to dyngrad (cached)


# dyngrad's own programs (the demo and its training app, the commands that run scripts) are
# user code: a node they create names their line, not the console script that started them
_USER = tuple(_PKG + d + os.sep for d in ("apps", "commands"))


def _inside(code) -> bool:
    """Whether a code object belongs to dyngrad's library (cached per code object)."""
    r = _INSIDE.get(code)
    if r is None:
        f = code.co_filename
        r = _INSIDE[code] = f.startswith(_PKG) and not f.startswith(_USER)
    return r


def _user_frame(cls):
    """The first frame outside dyngrad above ``Node.__init__``; remembers its depth for ``cls``."""
    try:
        f = _getframe(2)
    except ValueError:
        return None
    d = 1
    while f is not None and _inside(f.f_code):
        f = f.f_back
        d += 1
    if f is not None:
        _inside(f.f_code)
        _DEPTH[cls] = d  # the depth that held last: checked on every use, so it can only be slow
    return f


# node class -> positions in ``_saved`` of the values PyTorch keeps when a graph is freed (its
# non-tensor saved values: dims, flags, scalars), filled on first use
KEPT: dict = {}

# How many saved values packed by saved-tensors hooks are alive: their unpack hooks are user
# code that backward runs, so the engine takes its exact path while any exists.
LIVE_PACKS = [0]


class _PackToken:
    """Counts one packed saved value in LIVE_PACKS for as long as it lives."""

    __slots__ = ()

    def __init__(self):
        LIVE_PACKS[0] += 1

    def __del__(self):
        LIVE_PACKS[0] -= 1


def kept_positions(cls):
    """The positions of ``cls``'s saved values that stay readable once the graph is freed."""
    kp = KEPT[cls] = tuple(sorted({p for p, kind in cls._named_saved.values()
                                   if kind in ("same", "dim")}))
    return kp


# node class -> how backward frees it (see ``keeper``), filled on first use
KEEPERS: dict = {}


def keeper(cls):
    """How a node of class ``cls`` is freed: None when the class frees itself (its own
    ``_release``), False when nothing saved stays readable, else a function picking from
    ``_saved`` the values PyTorch keeps (dims, flags) as the tuple ``_kept``."""
    kind = None
    if cls._release is Node._release:
        kp = KEPT.get(cls)
        if kp is None:
            kp = kept_positions(cls)
        if not kp:
            kind = False
        elif len(kp) == 1:
            p = kp[0]
            kind = lambda s: (s[p],)  # noqa: E731
        else:
            kind = itemgetter(*kp)
    KEEPERS[cls] = kind
    return kind


def _conj(x):
    """The complex conjugate of a gradient (an array or a Tensor); others as they are."""
    if x is None:
        return None
    d = getattr(x, "_data", x)
    if getattr(d, "dtype", None) is None or d.dtype.kind != "c":
        return x
    return np.conj(x) if x is d else x.conj()


_CONJ_TWINS: dict = {}
# set while forward mode derives a tangent from a backward formula (a double vjp, which
# differentiates the formulas as written)
CONJ_OFF = [False]


def _conjugating(cls):
    """The subclass of node class ``cls`` (same name) whose backward conjugates the incoming
    gradient, runs ``cls``'s formula and conjugates what it returns."""
    bw = cls._bw

    def _bw(self, g, graph):
        g = [_conj(x) for x in g] if type(g) is list else _conj(g)
        return tuple(_conj(x) for x in bw(self, g, graph))

    return type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__,
                                      "__qualname__": cls.__qualname__, "_bw": _bw,
                                      "_holomorphic": False, "_conj_of": cls,
                                      "__doc__": cls.__doc__})


# >0 while an in-place op runs its out-of-place form: PyTorch rebases the tensor's history
# there without the integer-dtype check that recording a new result makes
IN_PLACE = [0]


class Node:
    """Base class of every backward node.

    Subclasses set ``_saved`` (a tuple, released to ``None`` after backward) and implement
    ``_bw(grad, graph)`` returning one gradient (or None) per entry of ``next_functions``.
    ``graph`` is True under ``create_graph``: then ``grad`` and saved values are Tensors and
    the formula builds a differentiable graph; otherwise they are ndarrays.
    """

    # _odt: the dtype of the output a gradient flowing into this node must have (set when the
    # output is recorded; None when unknown or for several outputs): the engine casts
    # incoming gradients to it, as PyTorch's validate_outputs does
    __slots__ = ("next_functions", "_saved", "_seq", "_src", "_odt", "__dict__", "__weakref__")
    _nout = 1            # number of outputs (multi-output nodes override)
    _needs_saved = True  # False for nodes whose backward uses nothing saved
    # rarely used state: class defaults, set per instance only when needed.  Setting any of
    # the flagged ones marks the node not plain, so the engine checks one flag per node.
    _plain = True
    _user_code = False  # True for nodes whose backward is the user's (custom Function)
    _named_inplace = None  # nodes whose messages name the op: renamed when an in-place form records them
    # the formula is the op's complex derivative (or real-linear with real coefficients): for
    # a complex result the engine gets PyTorch's conjugate gradient from it (see
    # ``_conjugate_rule``); False for nodes that write their complex gradient themselves
    _holomorphic = True
    _conj_of = None  # on a conjugating twin (see ``_conjugate_rule``): the class it runs
    _meta = None
    # PyTorch's names of this node's saved values -> (position in ``_saved``, kind): how
    # ``grad_fn._saved_<name>`` / ``_raw_saved_<name>`` read them (see ``_saved_value``)
    _named_saved: dict = {}
    # the table of those names once ops/_saved_names.py has applied it: a node class defined
    # later (nn.functional's, ...) takes its entry when it is created
    _names_table = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        table = Node._names_table
        if table is not None and "_named_saved" not in cls.__dict__:
            spec = table.get(cls.__name__)
            if spec is not None:
                cls._named_saved = spec

    def __init__(self, next_functions=(), saved=(), odt=None):
        self.next_functions = next_functions
        self._saved = saved
        self._seq = next(_seq)
        self._odt = odt
        if odt is not None and odt.kind != "f":
            self._not_floating(odt)
        # Where user code created this node: (code, instruction offset) of the first frame
        # outside dyngrad, resolved to file:line only when an error or a viewer asks.  The
        # depth that held last for this class is tried first (and verified), so a hit looks at
        # two frames only.
        d = _DEPTH.get(self.__class__)
        if d is not None and d > 1:
            # the last dyngrad frame should sit at depth d - 1, the user's frame right above it
            try:
                f = _getframe(d - 1)
            except ValueError:  # a shallower stack than the learned depth
                f = None
            if f is not None:
                u = f.f_back
                if u is not None and _INSIDE.get(f.f_code) is True and \
                        _INSIDE.get(u.f_code) is False:
                    self._src = (u.f_code, u.f_lasti)
                    return
        f = _user_frame(self.__class__)
        self._src = None if f is None else (f.f_code, f.f_lasti)

    def _not_floating(self, dt) -> None:
        """The rules for an output of dtype ``dt`` that is not a real floating one: a complex
        output takes PyTorch's conjugate gradient (``_conjugate_rule``); an integer or bool one
        refuses a history, as PyTorch's (outside an in-place op, which rebases the tensor's
        history without that check)."""
        if dt.kind == "c":
            if self._holomorphic:
                self._conjugate_rule()
        elif dt.kind in "biu" and not IN_PLACE[0]:
            raise errors.integer_history(dt)

    def _conjugate_rule(self):
        """PyTorch's gradient for complex values is the conjugate Wirtinger one: for a
        holomorphic op ``grad * conj(f'(z))``.  A formula written as ``grad * f'(z)`` gives it
        as the conjugate of the formula applied to the conjugate gradient; this node (whose
        result is complex) becomes an instance of its class's twin that runs backward that
        way (same name, same saved values)."""
        if CONJ_OFF[0]:
            return
        cls = self.__class__
        twin = _CONJ_TWINS.get(cls)
        if twin is None:
            twin = _CONJ_TWINS[cls] = _conjugating(cls)
        self.__class__ = twin

    def name(self) -> str:
        """The node's class name, as PyTorch's ``grad_fn.name()``."""
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        """A free dict for user annotations (PyTorch's ``grad_fn.metadata``)."""
        if self._meta is None:
            self._meta = {}
        return self._meta

    # -- saved values ----------------------------------------------------------------
    def __getattr__(self, name):
        # only reached when normal lookup fails: the saved values by PyTorch's names
        raw = name.startswith("_raw_saved_")
        if raw or name.startswith("_saved_"):
            spec = type(self)._named_saved.get(name[11:] if raw else name[7:])
            if spec is not None and (not raw or spec[1] == "tensor"):
                return self._read_saved(spec, raw)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __dir__(self):
        extra = []
        for n, (_, kind) in type(self)._named_saved.items():
            extra.append("_saved_" + n)
            if kind == "tensor":
                extra.append("_raw_saved_" + n)
        return sorted(set(super().__dir__()) | set(extra))

    def _read_saved(self, spec, raw=False):
        """A saved value as PyTorch shows it.  Kinds: ``tensor`` (unpacked, version checked; an
        output comes back with this node as its grad_fn), ``array`` (an index or mask kept as
        an array), ``shape``/``strides`` (the sizes / strides of the saved tensor there), ``dim``/``same`` (as
        stored; a negative dim reads as PyTorch's unsigned 64-bit value), ``fixed`` (the dim in
        place of the position: one the op always passes, as a fused composite's)."""
        pos, kind = spec
        if kind == "fixed":
            return pos + (1 << 64) if pos < 0 else pos
        s = self._saved
        if s is None:
            # PyTorch frees only the saved tensors: the other values stay readable
            kp = KEPT.get(type(self))
            if not kp or pos not in kp or kind not in ("same", "dim"):
                raise RuntimeError(errors.FREED)
            s = dict(zip(kp, self.__dict__["_kept"]))
        v = s[pos]
        if kind == "tensor":
            if type(v) is Saved:
                return SavedTensor(self, v) if raw else v.get(self, True)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                # a Python number saved as PyTorch's wrapped-number tensor (int64 / float64)
                from .._tensor import Tensor
                return Tensor._make(np.asarray(v))
            return v
        if kind == "array":
            from .._tensor import Tensor
            return v if isinstance(v, Tensor) else Tensor._make(np.asarray(v))
        if kind == "shape" or kind == "strides":
            d = v.value if type(v) is Saved else v
            d = getattr(d, "_data", d)
            if d is None:  # not kept: the tensor was not needed
                return None
            if kind == "shape":
                return tuple(d.shape)
            return tuple(x // d.itemsize for x in d.strides)
        if isinstance(v, list):
            v = tuple(v)
        if kind == "dim":
            if v is None:
                return None
            if isinstance(v, tuple):
                return tuple(x + (1 << 64) if x < 0 else x for x in v)
            return v + (1 << 64) if v < 0 else v
        return v

    def _release(self):
        """Free what backward needed; a second backward through this node then raises."""
        if self._saved is not None and self._needs_saved:
            cls = self.__class__
            keep = KEEPERS[cls] if cls in KEEPERS else keeper(cls)
            if keep:  # PyTorch frees only the saved tensors
                self._kept = keep(self._saved)
            self._saved = None

    def _unpack(self):
        s = self._saved
        if s is None:
            raise errors.freed_graph(self)
        return s

    @property
    def saved_tensors_info(self) -> list:
        """Describe the values saved for backward: ``[(name, shape, dtype), ...]``."""
        s = self._saved
        if s is None:
            return []
        out = []
        for i, v in enumerate(s):
            arr = v.value if isinstance(v, Saved) else v
            if isinstance(arr, np.ndarray):
                out.append((f"saved_{i}", tuple(arr.shape), str(arr.dtype)))
            elif hasattr(arr, "_data"):
                out.append((f"saved_{i}", tuple(arr._data.shape), str(arr._data.dtype)))
        return out

    # -- hooks -----------------------------------------------------------------------
    def register_hook(self, fn):
        """``fn(grad_inputs, grad_outputs)`` runs after this node; it may return new grad_inputs."""
        if self._hooks is None:
            self._hooks = []
        return _Handle(self._hooks, fn)

    def register_prehook(self, fn):
        """``fn(grad_outputs)`` runs before this node; it may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        return _Handle(self._pre_hooks, fn)

    def _bw(self, grad, graph):  # pragma: no cover - every subclass defines it
        raise NotImplementedError


def _flagging(name):
    key = "_v" + name

    def get(self):
        return self.__dict__.get(key)

    def set_(self, value):
        d = self.__dict__
        d[key] = value
        d["_plain"] = False

    return property(get, set_)


Node._pre_hooks = _flagging("_pre_hooks")
Node._hooks = _flagging("_hooks")
Node._tensor_hooks = _flagging("_tensor_hooks")   # {output_nr: [hook]} from Tensor.register_hook
Node._retain = _flagging("_retain")               # {output_nr: weakref} from retain_grad()
Node._casts = _flagging("_casts")                 # input dtypes to cast gradients back to


class _Handle:
    """Removable hook handle (``handle.remove()``)."""

    __slots__ = ("_list", "_fn")

    def __init__(self, lst, fn):
        self._list = lst
        self._fn = fn
        lst.append(fn)

    def remove(self):
        try:
            self._list.remove(self._fn)
        except ValueError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class Saved:
    """A saved tensor: its data (or the Tensor itself) and the version it had when saved.

    Inputs are kept as the Tensor (so create_graph can differentiate through them); outputs
    are kept as raw data plus their version counter, so a node never holds its own output and
    no reference cycle forms.  ``is_output`` is True for an output of the saving node, or a
    weak reference to the node an output's gradient flows into when an in-place op on a view
    wrote it there (the saving node again once that one is gone, as in PyTorch).
    """

    __slots__ = ("value", "counter", "version", "is_output", "tensor_ref", "_token", "output_nr")

    def __init__(self, tensor, is_output=False):
        self.counter = tensor._vc
        self.version = tensor._vc[0]
        self.is_output = is_output
        # which output of its node it is (PyTorch names it in the saved-version error)
        self.output_nr = getattr(tensor, "_output_nr", 0) if is_output else 0
        if is_output:
            self.value = tensor._data
            self.tensor_ref = None
        else:
            self.value = tensor
            self.tensor_ref = None
        if SAVED_HOOKS:
            self._pack(tensor)

    def _pack(self, tensor):
        """Run the innermost saved-tensors pack hook; ``get`` then unpacks.  The version is set
        to -1 so the one version check in ``get`` routes packed values to ``_unpacked``."""
        top = SAVED_HOOKS[-1]
        if type(top) is not tuple:  # disabled
            return
        pack, unpack = top
        SAVED_HOOKS.append(None)  # hooks are disabled while a pack hook runs
        try:
            packed = pack(tensor)
        finally:
            SAVED_HOOKS.pop()
        self.tensor_ref = (unpack, packed, self.version)
        self.version = -1
        self._token = _PackToken()

    def _unpacked(self, node, graph):
        unpack, packed, version = self.tensor_ref
        if self.counter[0] != version:
            self.version = version
            try:
                raise errors.modified_inplace(self, node)
            finally:
                self.version = -1
        t = unpack(packed)
        from .._tensor import Tensor
        if not isinstance(t, Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got "
                            f"result of type {type(t).__name__}")
        if self.is_output and graph:
            if self.is_output is not True:
                node = self.is_output() or node
            if t._grad_fn is node:
                return t
            r = Tensor._make(t._data)
            r._requires_grad = True
            r._grad_fn = node
            r._vc = self.counter
            if self.output_nr:
                r._output_nr = self.output_nr  # its gradient flows into that output
            return r
        return t if graph else t._data

    def get(self, node, graph):
        if self.counter[0] != self.version:
            if self.tensor_ref is not None:
                return self._unpacked(node, graph)
            if not self.is_output and self.value._stale_view:
                # PyTorch reads a saved input's grad_fn first: a view whose history can no
                # longer be rebuilt reports that
                raise RuntimeError(self.value._stale_view)
            raise errors.modified_inplace(self, node)
        v = self.value
        if self.is_output:
            if graph:
                from .._tensor import Tensor
                t = Tensor._make(v)
                t._requires_grad = True
                # True, or the node of a view an in-place op wrote this output into
                t._grad_fn = node if self.is_output is True else (self.is_output() or node)
                t._vc = self.counter
                if self.output_nr:
                    t._output_nr = self.output_nr  # its gradient flows into that output
                return t
            return v
        return v if graph else v._data


class SavedTensor:
    """A node's saved tensor as a handle (PyTorch's ``torch._C._autograd.SavedTensor``): its
    ``register_hooks(pack_hook, unpack_hook)`` packs the tensor now and unpacks it when the
    node's backward (or ``_saved_<name>``) reads it."""

    __slots__ = ("_node", "_saved")

    def __init__(self, node, saved):
        self._node = node
        self._saved = saved

    def register_hooks(self, pack_hook, unpack_hook) -> None:
        if not callable(pack_hook) or not callable(unpack_hook):
            raise TypeError("incompatible function arguments. The following argument types are "
                            "supported:\n    1. (self: torch._C._autograd.SavedTensor, "
                            "pack_hook: Callable, unpack_hook: Callable) -> None")
        if self._node._saved is None:
            raise RuntimeError(errors.FREED)
        s = self._saved
        if s.tensor_ref is not None:
            raise RuntimeError("SavedTensor hooks have already been set")
        if s.counter[0] != s.version:
            s.get(self._node, True)  # raises the modified-in-place error
        t = s.get(self._node, True)
        SAVED_HOOKS.append((pack_hook, unpack_hook))
        try:
            s._pack(t)
        finally:
            SAVED_HOOKS.pop()

    def __repr__(self) -> str:
        return f"<torch._C._autograd.SavedTensor object at {hex(id(self))}>"


class AccumulateGrad(Node):
    """Sink of a leaf that requires grad: adds incoming gradients into ``variable.grad``.

    As in PyTorch, the node holds its leaf (so ``variable`` is the leaf for as long as a graph
    or the user holds the node) and the leaf refers to its node weakly (``_acc``, a weak
    reference), so no reference cycle forms: the node lives while a graph reaches it (every
    graph built from the leaf meanwhile shares it), and the next graph after it is gone gets
    a new one.
    """

    def __lt__(self, other) -> bool:
        """Never: the backward engine's ready queue orders nodes by priority alone, and every
        AccumulateGrad has the same one (ties keep the heap's own order, as PyTorch's)."""
        return False


    __slots__ = ("_var",)
    _needs_saved = False

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __init__(self, *args, **kwargs):
        # PyTorch's node types cannot be constructed from Python; dyngrad makes them with
        # ``accumulator`` (below), which skips the type call on this per-graph path
        raise RuntimeError("Cannot construct")

    @property
    def variable(self):
        """The leaf tensor this node accumulates into."""
        return self._var

    @staticmethod
    def for_leaf(t):
        """The leaf's AccumulateGrad node: the live one, else a new one."""
        ref = t._acc
        if ref is not None:
            acc = ref()
            if acc is not None:
                return acc
        return accumulator(t)

    @staticmethod
    def live(t):
        """The leaf's AccumulateGrad node if one is alive, else None."""
        ref = t._acc
        return None if ref is None else ref()


def accumulator(t) -> AccumulateGrad:
    """A new AccumulateGrad for leaf ``t``, which refers to it weakly (``edge_of`` inlines
    this)."""
    acc = _new_acc(AccumulateGrad)
    acc.next_functions = ()
    acc._saved = ()
    acc._seq = ACCUMULATE_PRIORITY + next(_seq)
    acc._var = t
    acc._odt = t._data.dtype
    t._acc = _weakref(acc)
    return acc


class NotImplemented_(Node):
    """PyTorch's ``torch::autograd::NotImplemented``: recorded by ops whose derivative
    PyTorch does not implement (``_saved[0]`` names the op); backward and forward mode raise
    PyTorch's errors."""
    __slots__ = ()

    def name(self) -> str:
        return "torch::autograd::NotImplemented"

    def _bw(self, g, graph):
        raise RuntimeError(f"derivative for aten::{self._saved[0]} is not implemented")

    def _fw_rule(self, tangents):
        errors.without_rule(f"aten::{self._saved[0]}", kind="derivative")(self, tangents)

    def _named_inplace(self):
        """Recorded by an in-place form: PyTorch's messages name that op (``aten::scatter_``)."""
        self._saved = (self._saved[0] + "_",) + self._saved[1:]


NotImplemented_.__name__ = NotImplemented_.__qualname__ = "NotImplemented"


def underivable(cls_name: str, what: str, fw_op: str, module: str, **attrs):
    """A node class for an op PyTorch declares no derivative for: its backward raises
    "the derivative for '<what>' is not implemented." and forward mode PyTorch's refusal
    naming ``fw_op``."""
    def _bw(self, g, graph):
        raise errors.no_derivative(what)

    ns = {"__slots__": (), "__module__": module, "_bw": _bw, "_needs_saved": False,
          "_fw_rule": errors.without_rule(fw_op),
          "__doc__": f"Recorded by {fw_op}: no derivative, as in PyTorch."}
    ns.update(attrs)
    return type(cls_name, (Node,), ns)


def lazy(node, had_none=False):
    """Mark ``node`` (a view's history rebuilt after an in-place change) as made at its first
    use, as PyTorch regenerates a view's grad_fn lazily: its sequence number, which orders
    backward, is taken then.  ``had_none``: the view had no history before, and until the new
    one is first used PyTorch's in-place check still sees none (sequence number -2).  Returns
    the node."""
    node._seq = -2 if had_none else -1
    return node


def first_use(node):
    """Give a lazily made node its sequence number now (see ``lazy``), and move a retained
    gradient that still waits on the view's previous node."""
    node._seq = next(_seq)
    move = node.__dict__.pop("_move_retain", None)
    if move is not None:
        ref, old, nr = move
        t = ref()
        if old._retain is not None and old._retain.get(nr) is ref:
            del old._retain[nr]
        if t is not None and t._grad_fn is node:
            if node._retain is None:
                node._retain = {}
            node._retain[t._output_nr] = ref
    return node


def cast_grad(g, dt):
    """Gradient ``g`` (an ndarray, a NumPy or Python scalar, or a Tensor) in NumPy dtype
    ``dt``, the dtype of the tensor it is the gradient of, as PyTorch's validate_outputs casts
    it: a complex gradient of a real tensor keeps its real part."""
    if type(g) is np.ndarray:
        if g.dtype == dt:
            return g
        if g.dtype.kind == "c" and dt.kind != "c":
            g = g.real
        return g.astype(dt)
    data = getattr(g, "_data", None)
    if data is None:  # a NumPy or Python scalar
        return cast_grad(np.asarray(g), dt)
    if data.dtype == dt:
        return g
    if data.dtype.kind == "c" and dt.kind != "c":
        g = g.real
    from .._dtype import FROM_NP
    return g.to(FROM_NP[dt])


def edge_of(t):
    """The ``(node, input_nr)`` pair that a gradient for tensor ``t`` flows into."""
    fn = t._grad_fn
    if fn is not None:
        if fn._seq < 0:
            first_use(fn)
        return (fn, t._output_nr)
    if t._requires_grad:
        acc = t._acc
        if acc is not None:
            acc = acc()
        if acc is None:
            if t._stale_view:  # its history can no longer be rebuilt (see ops/inplace.py)
                raise RuntimeError(t._stale_view)
            if t._nograd_view:  # a view made under no_grad: PyTorch sends it nothing
                return (None, 0)
            acc = accumulator(t)
        return (acc, 0)
    return (None, 0)


NO_EDGE = (None, 0)
