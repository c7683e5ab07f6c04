"""Batched tensors: how ``vmap`` runs each op once on the whole batch.

A ``BatchedTensor`` is a logical tensor (what the vmapped function sees) backed by one
physical dyngrad Tensor whose leading dimensions are the batch dimensions of the active vmap
levels it varies over (in level order).  Every op on it runs once on the physical tensor,
through a batching rule that moves the op's dimension arguments past the batch dimensions
and lines the batch dimensions of several inputs up; the physical op is an ordinary recorded
dyngrad op, so autograd (and forward-mode AD) see one graph for the whole batch.  Ops with no
rule run in a loop over the batch, with a one-time warning naming the op, as functorch's
fallback does.

While a vmap is active, the public functions (``dyngrad.*``, ``nn.functional``, ``linalg``,
``special``) and the Tensor methods are wrapped so that a call with a batched argument goes to
its rule; so are the ops that composites' bodies take from the ops modules (``cat`` as
ops/shape.py holds it), so a composite's body runs batched op by op.  Outside vmap nothing is
wrapped and ops cost what they always cost.
"""
from __future__ import annotations

import types

from .._tensor import Tensor
from .._npnames import build_all
from ._pytree import tree_flatten, tree_unflatten
from .. import _warn

_new = object.__new__

# active vmap levels, innermost last: [level id, batch size, randomness]
LEVELS: list = []
_SIZES: dict = {}
KINDS: list = []   # the transforms running a function, innermost last ("vmap" or "grad")
_COUNTER = [0]


class BatchedTensor(Tensor):
    """A tensor inside ``vmap``: its physical tensor has one leading dimension per batched
    level (``_levels``, in order), the rest is the logical tensor the function sees."""

    __slots__ = ("_phys", "_levels")


def wrap(phys, levels):
    """``phys`` as a logical tensor batched over ``levels`` (the plain tensor when none)."""
    if not levels:
        return phys
    b = _new(BatchedTensor)
    b._phys = phys
    b._levels = levels
    return b


def unwrap(x):
    """``(physical tensor, levels)`` of a tensor."""
    if type(x) is BatchedTensor:
        return x._phys, x._levels
    return x, ()


def is_batched(x) -> bool:
    return type(x) is BatchedTensor


def level_size(level) -> int:
    return _SIZES[level]


def _lshape(x):
    p, lv = unwrap(x)
    return tuple(p.shape)[len(lv):]


def align(x, levels, lrank=None):
    """The physical tensor of ``x`` with one leading dim per level of ``levels`` (size 1 where
    ``x`` is not batched) and, when ``lrank`` is given and ``x`` is batched, its logical shape
    padded with leading 1s to that rank (so broadcasting lines logical dims up)."""
    phys, cur = unwrap(x)
    if not isinstance(phys, Tensor):
        return phys
    if not cur:
        # an unbatched tensor: size-1 batch dims, or (with lrank, for broadcasting ops) as it
        # is, since broadcasting lines it up from the right
        if lrank is None:
            for _ in levels:
                phys = phys.unsqueeze(0)
        return phys
    if cur != levels:
        cur = list(cur)
        for i, lv in enumerate(levels):
            if i >= len(cur) or cur[i] != lv:
                phys = phys.unsqueeze(i)
                cur.insert(i, lv)
    if lrank is not None:
        nb = len(levels)
        for _ in range(lrank - (phys.ndim - nb)):
            phys = phys.unsqueeze(nb)
    return phys


def expand_batch(phys, levels):
    """``phys`` (aligned to ``levels``) with its batch dims expanded to the levels' sizes."""
    nb = len(levels)
    sizes = tuple(_SIZES[lv] for lv in levels)
    if tuple(phys.shape[:nb]) == sizes:
        return phys
    return phys.expand(*sizes, *phys.shape[nb:])


def materialize(x, levels):
    """``x`` as a physical tensor batched (expanded) over all of ``levels``."""
    return expand_batch(align(x, levels), levels)


def _union(*xs):
    s = set()
    for x in xs:
        if type(x) is BatchedTensor:
            s.update(x._levels)
    return tuple(sorted(s))


def _leaves(args, kwargs):
    out = []
    for a in args:
        if type(a) in (list, tuple):
            out.extend(a)
        else:
            out.append(a)
    for a in kwargs.values():
        if type(a) in (list, tuple):
            out.extend(a)
        else:
            out.append(a)
    return out


def has_batched(args, kwargs) -> bool:
    for a in args:
        t = type(a)
        if t is BatchedTensor:
            return True
        if (t is list or t is tuple) and any(type(b) is BatchedTensor for b in a):
            return True
    for a in kwargs.values():
        t = type(a)
        if t is BatchedTensor:
            return True
        if (t is list or t is tuple) and any(type(b) is BatchedTensor for b in a):
            return True
    return False


def wrap_out(r, levels):
    """Wrap every tensor of an op's result as batched over ``levels``."""
    if isinstance(r, Tensor):
        return wrap(r, levels)
    if isinstance(r, (tuple, list)):
        vals = [wrap_out(v, levels) for v in r]
        if type(r) in (tuple, list):
            return type(r)(vals)
        return type(r)(*vals)
    return r


# --- errors ----------------------------------------------------------------------------
ITEM_MSG = ("vmap: It looks like you're calling .item() on a Tensor. We don't support vmap over "
            "calling .item() on a Tensor, please try to rewrite what you're doing with other "
            "operations. If error is occurring somewhere inside PyTorch internals, please file a "
            "bug report.")
CONTROL_MSG = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
               "control flow. We don't support that yet, please file an issue at "
               "https://github.com/pytorch/pytorch/issues .")
RANDOM_MSG = ("vmap: called random operation while in randomness error mode. Please either use "
              "the 'same' or 'different' randomness flags on vmap or perform the randomness "
              "operation out of vmap")
INPLACE_MSG = ("vmap: {op}(self, *extra_args) is not possible because there exists a Tensor "
               "`other` in extra_args that has more elements than `self`. This happened due to "
               "`other` being vmapped over but `self` not being vmapped over in a vmap. Please "
               "try to use out-of-place operators instead of {op}. If said operator is being "
               "called inside the PyTorch framework, please file a bug report instead.")


COMBINED_MSG = (
    "vmap: It looks like you're either (1) calling .item() on a Tensor or (2) attempting to use "
    "a Tensor in some data-dependent control flow or (3) encountering this error in PyTorch "
    "internals. For (1): we don't support vmap over calling .item() on a Tensor, please try to "
    "rewrite what you're doing with other operations. For (2): we don't support "
    "data-dependent control flow in vmap yet, please file an issue at "
    "https://github.com/pytorch/pytorch/issues . For (3): please file an issue.")


def _control(*a, **k):
    # under a differentiating transform inside the vmap, PyTorch's message covers both cases
    raise RuntimeError(COMBINED_MSG if KINDS and KINDS[-1] != "vmap" else CONTROL_MSG)


# --- dispatch ---------------------------------------------------------------------------
RULES: dict = {}
_WARNED: set = set()
LOOPED: dict = {}   # how many times each op ran through the loop fallback


def dispatch(name, orig, args, kwargs):
    """Run op ``name`` (``orig``: the unwrapped callable) on arguments some of which are
    batched: through its batching rule, else in a loop over the batch."""
    rule = RULES.get(name)
    if rule is None and name.startswith("F."):
        rule = RULES.get(name[2:])
    if rule is not None:
        r = rule(orig, args, kwargs)
        if r is not NotImplemented:
            return r
    if _runs_composite(name, orig):  # an op composed of other ops (a call its rule does not
        return orig(*args, **kwargs)  # take): they dispatch themselves
    return fallback(name, orig, args, kwargs)


def _runs_composite(name, orig) -> bool:
    """Whether ``orig`` is the body of the registry's composite ``name`` (``ops.composite``):
    its function, or its Tensor method (a method of that name may be another op's alias)."""
    from ..ops import OPS
    info = OPS.get(name)
    if info is None and name.startswith("F."):  # an op nn.functional also holds (F.conv3d)
        name = name[2:]
        info = OPS.get(name)
    if info is None or not info.get("composite", False):
        return False
    if info.get("method", False):
        return True
    fn = getattr(orig, "__wrapped__", orig)
    method = OPS.get(f"_{name}_method")  # the method registered apart (``ops.declared``)
    return fn is getattr(info["fn"], "__wrapped__", info["fn"]) or \
        method is not None and fn is method["fn"]


def call(name, orig, args, kwargs):
    """``orig(*args, **kwargs)``, dispatched when an argument is batched."""
    if has_batched(args, kwargs):
        return dispatch(name, orig, args, kwargs)
    return orig(*args, **kwargs)


def fallback(name, orig, args, kwargs):
    """An op without a batching rule: run it once per sample of the innermost level and
    stack the results (warning once per op, as functorch does)."""
    LOOPED[name] = LOOPED.get(name, 0) + 1
    if name not in _WARNED:
        _WARNED.add(name)
        op = name[2:] if name.startswith("F.") else name
        op = op.strip("_") if op.startswith("__") else op
        _warn.warn(f"There is a performance drop because we have not yet implemented the "
                   f"batching rule for aten::{op}. Please file us an issue on GitHub so "
                   f"that we can prioritize its implementation.", UserWarning)
    top = max(_union(*_leaves(args, kwargs)))
    size = _SIZES.get(top)
    if size is None:
        raise RuntimeError("vmap: a batched tensor was used outside the vmap that made it")
    (flat, spec) = tree_flatten((list(args), dict(kwargs)))
    outs = []
    for i in range(size):
        fi = [_select(x, top, i) for x in flat]
        a, k = tree_unflatten(fi, spec)
        outs.append(call(name, orig, tuple(a), k))
    inplace = name.endswith("_") and not name.startswith("__") or name.startswith("__i") and \
        name not in ("__index__", "__int__", "__invert__", "__iter__")
    if inplace and args and type(args[0]) is BatchedTensor:
        return args[0]
    return stack_results(outs, top)


def _select(x, level, i):
    if type(x) is BatchedTensor and level in x._levels:
        pos = x._levels.index(level)
        lv = x._levels[:pos] + x._levels[pos + 1:]
        return wrap(x._phys.select(pos, i), lv)
    return x


def stack_results(outs, level):
    """Per-sample results of a loop over ``level`` stacked into one batched result."""
    flats = []
    spec = None
    for o in outs:
        f, spec = tree_flatten(o)
        flats.append(f)
    res = []
    for j in range(len(flats[0]) if flats else 0):
        items = [f[j] for f in flats]
        if not isinstance(items[0], Tensor):
            if any(it != items[0] for it in items):
                raise RuntimeError(CONTROL_MSG)
            res.append(items[0])
            continue
        levels = _union(*items)
        phys = [expand_batch(align(it, levels), levels) for it in items]
        from .. import stack
        st = _ORIG.get(("", "stack"), stack)
        res.append(wrap(st(phys, len(levels)), levels + (level,)))
    return tree_unflatten(res, spec)


# --- wrapping the public functions while a vmap is active -------------------------------
_ORIG: dict = {}
_TARGETS: list = []
_DEPTH = [0]

_SKIP_FUNCS = {
    "is_grad_enabled", "set_grad_enabled", "no_grad", "enable_grad", "inference_mode",
    "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "set_default_dtype", "get_default_dtype", "set_printoptions", "get_printoptions",
    "set_default_device", "get_default_device", "set_num_threads", "get_num_threads",
    "is_inference_mode_enabled", "compile", "save", "load", "typename",
    "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
}
_SKIP_METHODS = {
    "__init__", "__new__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__",
    "__del__", "__hash__", "__repr__", "__str__", "__reduce_ex__", "__reduce__", "__dir__",
    "__sizeof__", "__init_subclass__", "__subclasshook__", "__class_getitem__", "__format__",
    "_make", "_new", "__copy__", "__deepcopy__", "__getstate__", "__setstate__",
}
RANDOM = {"rand", "randn", "randint", "normal", "rand_like", "randn_like", "randint_like",
          "bernoulli", "multinomial", "randperm", "poisson", "F.dropout", "F.dropout1d",
          "F.dropout2d", "F.dropout3d", "F.alpha_dropout", "F.feature_alpha_dropout",
          "F.rrelu", "uniform_", "normal_", "bernoulli_", "exponential_", "geometric_",
          "log_normal_", "cauchy_", "random_", "dropout"}


def _targets():
    if _TARGETS:
        return _TARGETS
    import dyngrad
    from .. import linalg, special
    from ..nn import functional as F
    for mod, prefix in ((dyngrad, ""), (F, "F."), (linalg, "linalg."), (special, "special.")):
        for k, v in list(vars(mod).items()):
            if k.startswith("_") or k in _SKIP_FUNCS or isinstance(v, type):
                continue
            if not isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
                continue
            m = getattr(v, "__module__", "") or ""
            if not m.startswith("dyngrad") or m.startswith("dyngrad.func") or \
                    m.startswith("dyngrad.autograd"):
                continue
            _ORIG[(prefix, k)] = v
            inner = getattr(v, "__wrapped__", None)
            if inner is not None:
                _NAME_OF.setdefault(id(inner), prefix + k)
            entry = (mod, k, v, prefix + k)
            _ALL.append(entry)
            # guarded functions reach dispatch through the guard's error hook (they fail on
            # a batched argument before doing anything); only the others, and the random
            # ops (which must see vmap's randomness mode), are wrapped while vmap runs
            if not _is_guarded(v) or prefix + k in RANDOM or k in RANDOM:
                _TARGETS.append(entry)
    build_all(Tensor)
    for k, v in list(vars(Tensor).items()):
        if k in _SKIP_METHODS or not isinstance(v, types.FunctionType):
            continue
        if k.startswith("_") and not k.startswith("__"):
            continue
        entry = (Tensor, k, v, k)
        _ALL.append(entry)
        # a batched tensor's own methods dispatch by themselves, and a plain tensor's
        # operators defer to the batched operand's reflected ones: only the methods a plain
        # tensor is commonly called with a batched argument are wrapped
        if k in _PLAIN_METHODS or k in RANDOM:
            _TARGETS.append(entry)
    for owner, k, v, name in _ALL:
        w = _WRAPPERS[(id(owner), k)] = _wrapper(v, name)
        _BY_ID.setdefault(id(v), w)
    # layers that keep an op as a class attribute (nn.Conv2d._conv = staticmethod(F.conv2d))
    from .. import nn
    nn._load_all()  # the layer files not loaded yet
    for cls in list(vars(nn).values()):
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            continue
        for k, v in list(vars(cls).items()):
            if isinstance(v, staticmethod) and id(v.__func__) in _BY_ID:
                _STATIC.append((cls, k, v, staticmethod(_BY_ID[id(v.__func__)])))
    by_owner: dict = {}
    for owner, k, v, name in _TARGETS:
        if owner is Tensor:
            _TENSOR_SWAP[0][k] = v
            _TENSOR_SWAP[1][k] = _WRAPPERS[(id(owner), k)]
        else:
            by_owner.setdefault(id(owner), (vars(owner), {}, {}))
            _, w, o = by_owner[id(owner)]
            w[k] = _WRAPPERS[(id(owner), k)]
            o[k] = v
    _MODULE_SWAP.extend(by_owner.values())
    return _TARGETS


def _module_swap():
    """``_MODULE_SWAP`` with the ops modules' copies that composites call (found by reading
    their code once, on the first vmap: ``swap_all`` does not need them)."""
    _targets()
    if not _OPS_SWAP_DONE:
        _OPS_SWAP_DONE.append(True)
        _MODULE_SWAP.extend(_ops_globals())
    return _MODULE_SWAP


_OPS_SWAP_DONE: list = []


def _ops_globals():
    """The public ops as the ops modules hold them (a composite's body calls ``cat`` from
    ops/shape.py, not ``dyngrad.cat``): the ones the composites' bodies name are swapped for
    their dispatching forms while vmap runs, as the public names are."""
    import sys
    public = {}
    for (prefix, k), v in _ORIG.items():
        for f in (v, getattr(v, "__wrapped__", None)):
            # an op public under several names goes by its own (``cat``, not ``concat``)
            if f is not None and (id(f) not in public or k == f.__name__):
                public[id(f)] = (f, prefix + k)
    from ..ops import OPS
    ops = {id(getattr(info["fn"], "__wrapped__", info["fn"])) for info in OPS.values()}
    called = _composite_names()
    # a vmap entered during a capture (``swap_all``) reads the originals under its wrappers
    captured = {(id(o), k): v for done in _SWAPS for o, k, v in done if isinstance(o, dict)}
    swaps = []
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or not mod_name.startswith("dyngrad.ops."):
            continue
        d = vars(mod)
        wrapped, orig = {}, {}
        for k in called.intersection(d):
            v = captured.get((id(d), k), d[k])
            hit = public.get(id(v)) if isinstance(v, types.FunctionType) else None
            # a registry op, or a public function with a batching rule (``pad``, which
            # conv<n>d's padding="same" calls as F.pad)
            if hit is not None and hit[0] is v and (id(v) in ops or hit[1] in RULES) and \
                    hit[1] not in RANDOM:
                w = _BY_ID.get(id(v))
                if w is None:
                    w = _BY_ID[id(v)] = _wrapper(v, hit[1])
                wrapped[k], orig[k] = w, v
        if wrapped:
            swaps.append((d, wrapped, orig))
    return swaps


def _composite_names():
    """The global names the registry's composites read, directly or through functions of
    their own module (a name imported inside a body counts too)."""
    import dis
    from ..ops import OPS
    todo = [info["fn"] for info in OPS.values() if info.get("composite")]
    seen, names = set(), set()
    while todo:
        f = todo.pop()
        f = getattr(f, "__wrapped__", f)
        code = getattr(f, "__code__", None)
        if code is None or code in seen:
            continue
        seen.add(code)
        g = f.__globals__
        codes = [code]
        while codes:
            c = codes.pop()
            codes.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
            for ins in dis.get_instructions(c):
                if ins.opname not in ("LOAD_GLOBAL", "IMPORT_FROM"):
                    continue  # a method's or attribute's name is not an op of a module
                n = ins.argval
                names.add(n)
                v = g.get(n)
                if isinstance(v, types.FunctionType) and v.__module__ == f.__module__:
                    todo.append(v)
        for cell in f.__closure__ or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if isinstance(v, types.FunctionType):
                todo.append(v)
    return names


_STATIC: list = []
_MODULE_SWAP: list = []          # (module dict, wrapped functions, original functions)
_TENSOR_SWAP: tuple = ({}, {})   # (original methods, wrapped methods)
_NAME_OF: dict = {}   # id of a guarded function's inner function -> its public name


_ALL: list = []
_PLAIN_METHODS = set("""
matmul mm mv bmm dot add sub mul div true_divide pow expand_as view_as reshape_as type_as
where masked_fill maximum minimum copy_ fill_ add_ sub_ mul_ div_ index_select gather lerp addcmul
addcdiv eq ne lt le gt ge logical_and logical_or atan2 __setitem__ __getitem__ fmod remainder
clamp clip outer cross kron __iadd__ __isub__ __imul__ __itruediv__ __ipow__ __ifloordiv__
__imod__ __iand__ __ior__ __ixor__
""".split())


def _is_guarded(fn) -> bool:
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_name == "call" and \
        fn.__code__.co_filename.endswith("_argcheck.py")


_BY_ID: dict = {}


def dispatching(func):
    """The batch-aware form of a public function or Tensor method that was taken before vmap
    wrapped them (``vmap(torch.dot)``, ``grad(torch.sin)``); other callables as they are."""
    if isinstance(func, (types.FunctionType, types.BuiltinFunctionType)):
        _targets()
        return _BY_ID.get(id(func), func)
    return func


def _wrapper(orig, name):
    is_random = name in RANDOM or (name.startswith("F.") and name in RANDOM)

    def w(*args, **kwargs):
        if is_random and LEVELS:
            from ._rules import random_op
            return random_op(name, orig, args, kwargs)
        if has_batched(args, kwargs):
            return dispatch(name, orig, args, kwargs)
        return orig(*args, **kwargs)

    w.__name__ = getattr(orig, "__name__", name)
    w.__qualname__ = getattr(orig, "__qualname__", name)
    w.__doc__ = getattr(orig, "__doc__", None)
    w.__wrapped__ = orig
    return w


_WRAPPERS: dict = {}


def install():
    """Wrap the public functions and Tensor methods (first vmap level entered)."""
    _DEPTH[0] += 1
    if _DEPTH[0] > 1:
        return
    _module_swap()
    for cls, k, v, w in _STATIC:
        setattr(cls, k, w)
    for k, w in _TENSOR_SWAP[1].items():
        setattr(Tensor, k, w)
    for d, wrapped, orig in _MODULE_SWAP:
        d.update(wrapped)


def uninstall():
    """Restore them (last vmap level left)."""
    _DEPTH[0] -= 1
    if _DEPTH[0]:
        return
    for cls, k, v, w in _STATIC:
        setattr(cls, k, v)
    for k, v in _TENSOR_SWAP[0].items():
        setattr(Tensor, k, v)
    for d, wrapped, orig in _MODULE_SWAP:
        d.update(orig)


_SWAPS: list = []   # what swap_all replaced: (owner dict or class, name, original)


def swap_all(make) -> None:
    """Replace every public function, Tensor method, layer op and ops-module copy of a public
    op (everything ``install`` may wrap, and the Tensor methods it leaves alone) by
    ``make(original, public name)``; ``restore_all`` puts the originals back.  ``dyngrad.compile``
    records a capture this way, so nothing is wrapped outside one."""
    _targets()
    done = []
    for owner, k, v, name in _ALL:
        if vars(owner).get(k) is not v:
            continue  # wrapped already (a vmap running): left as it is
        setattr(owner, k, make(v, name))  # (a module's attribute is its dict's entry)
        done.append((owner, k, v))
    for cls, k, v, _w in _STATIC:
        if vars(cls).get(k) is v:
            setattr(cls, k, staticmethod(make(v.__func__, k)))
            done.append((cls, k, v))
    for d, k, v, name in _op_globals():
        if d.get(k) is v:
            d[k] = make(v, name)
            done.append((d, k, v))
    _SWAPS.append(done)


_OP_GLOBALS: list = []
_SCANNED: set = set()          # the modules _OP_GLOBALS has looked through
_MODULES_SEEN = [-1]           # len(sys.modules) when it last looked


def _op_globals():
    """Every registered op as the ops modules and the nn modules hold it: ``(module dict,
    name, function, op name)`` (a backward formula calls ``t(grad)`` from ops/views.py, the
    LSTM ``stack`` from nn/modules/rnn.py).  A module loaded since the last call (a layer
    file, nn.utils, loaded on first use) is looked through then, so no copy it holds escapes
    a later swap."""
    import sys
    if len(sys.modules) == _MODULES_SEEN[0]:
        return _OP_GLOBALS
    if not _SCANNED:   # every nn file loaded before the first look (a capture's first call
        from .. import nn   # must not load clip_grad, say, unswapped)
        nn._load_all()
    _MODULES_SEEN[0] = len(sys.modules)
    from ..ops import OPS
    ops = {}
    for name, info in OPS.items():
        f = info["fn"]
        for g in (f, getattr(f, "__wrapped__", None)):
            if g is not None:
                ops.setdefault(id(g), name)
    for mod_name, mod in list(sys.modules.items()):
        if mod is None or mod_name in _SCANNED or not (mod_name.startswith("dyngrad.ops.") or
                                                       mod_name.startswith("dyngrad.nn.")):
            continue
        _SCANNED.add(mod_name)
        d = vars(mod)
        for k, v in list(d.items()):
            if isinstance(v, types.FunctionType) and id(v) in ops and not k.startswith("__"):
                # (a private alias, ``_stack``, is recorded by the op's name)
                _OP_GLOBALS.append((d, k, v, ops[id(v)] if k.startswith("_") else k))
    return _OP_GLOBALS


def restore_all() -> None:
    """Undo the last ``swap_all``."""
    for owner, k, v in reversed(_SWAPS.pop()):
        if isinstance(owner, dict):
            owner[k] = v
        else:
            setattr(owner, k, v)


def orig_fn(name):
    """The unwrapped public function ``name`` (``F.x``, ``linalg.x`` or a dyngrad one)."""
    prefix, _, k = name.rpartition(".")
    return _ORIG[(prefix + "." if prefix else "", k)]


# --- BatchedTensor's own methods --------------------------------------------------------
def _method(name):
    orig = Tensor.__dict__[name]

    def m(self, *args, **kwargs):
        if name in RANDOM and LEVELS:
            from ._rules import random_op
            return random_op(name, orig, (self,) + args, kwargs)
        return dispatch(name, orig, (self,) + args, kwargs)

    m.__name__ = name
    return m


def _build_methods():
    build_all(Tensor)
    for k, v in list(vars(Tensor).items()):
        if k in _SKIP_METHODS or k in vars(BatchedTensor) or not isinstance(v, types.FunctionType):
            continue
        if k.startswith("_") and not k.startswith("__"):
            continue
        setattr(BatchedTensor, k, _method(k))


def _prop(fn):
    return property(fn)


def _size(self, dim=None):
    s = _lshape(self)
    from .._tensor import Size
    if dim is None:
        return Size(s)
    from .._tensor import _dim
    return s[_dim(dim, len(s))]


def _repr(self, *a, **k):
    p, lv = self._phys, self._levels
    inner = wrap(p, lv[:-1])
    body = repr(inner) if type(inner) is BatchedTensor else Tensor.__repr__(inner)
    return f"BatchedTensor(lvl={lv[-1]}, bdim={len(lv) - 1}, value=\n    " + \
        body.replace("\n", "\n    ") + "\n)"


def _item(self):
    raise RuntimeError(COMBINED_MSG if KINDS and KINDS[-1] != "vmap" else ITEM_MSG)


def _not_index(self):
    raise TypeError("only integer tensors of a single element can be converted to an index")


def _iter(self):
    s = _lshape(self)
    if not s:
        raise TypeError("iteration over a 0-d tensor")
    return iter(self.unbind(0))


def _len(self):
    s = _lshape(self)
    if not s:
        raise TypeError("len() of a 0-d tensor")
    return s[0]


def _requires_grad_(self, requires_grad=True):
    self._phys.requires_grad_(requires_grad)
    return self


def _no_storage(self, *a, **k):
    raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage")


def _set_rg(self, v):
    self._phys.requires_grad = v


def _backward(self, *a, **k):
    raise RuntimeError("backward() called inside a functorch transform. This is not supported, "
                       "please use functorch.grad or functorch.vjp instead or call backward() "
                       "outside of functorch transforms.")


_SPECIAL = {
    "shape": _prop(lambda self: _size(self)),
    "ndim": _prop(lambda self: len(_lshape(self))),
    "dtype": _prop(lambda self: self._phys.dtype),
    "device": _prop(lambda self: self._phys.device),
    "requires_grad": property(lambda self: self._phys.requires_grad, _set_rg),
    "grad_fn": _prop(lambda self: self._phys.grad_fn),
    "is_leaf": _prop(lambda self: self._phys.is_leaf),
    "grad": _prop(lambda self: None),
    "retains_grad": _prop(lambda self: False),
    "data": _prop(lambda self: wrap(self._phys.data, self._levels)),
    "itemsize": _prop(lambda self: self._phys.itemsize),
    "nbytes": _prop(lambda self: self._phys.itemsize * _numel(self)),
    "is_cpu": _prop(lambda self: True),
    "T": _prop(lambda self: self.permute(*range(self.ndim - 1, -1, -1))),
    "size": _size,
    "dim": lambda self: len(_lshape(self)),
    "ndimension": lambda self: len(_lshape(self)),
    "numel": lambda self: _numel(self),
    "nelement": lambda self: _numel(self),
    "element_size": lambda self: self._phys.element_size(),
    "is_floating_point": lambda self: self._phys.is_floating_point(),
    "is_complex": lambda self: self._phys.is_complex(),
    "is_contiguous": lambda self, *a, **k: True,
    "__repr__": _repr,
    "__str__": _repr,
    "__hash__": lambda self: id(self),
    "__format__": lambda self, spec: object.__format__(self, spec),
    "item": _item,
    "tolist": _no_storage,
    "numpy": _no_storage,
    "__bool__": _control,
    "__int__": _item,
    "__float__": _item,
    "__complex__": _item,
    "__index__": _not_index,
    "__iter__": _iter,
    "__len__": _len,
    "data_ptr": _no_storage,
    "untyped_storage": _no_storage,
    "requires_grad_": _requires_grad_,
    "backward": _backward,
    "__array__": _control,
}


def _numel(self):
    n = 1
    for s in _lshape(self):
        n *= s
    return n


def _rmatmul(self, other):
    # Tensor has no __rmatmul__: ``plain @ batched`` must still reach the batched operand
    return dispatch("matmul", Tensor.__matmul__, (other, self), {})


for _k, _v in _SPECIAL.items():
    setattr(BatchedTensor, _k, _v)
BatchedTensor.__rmatmul__ = _rmatmul
_build_methods()


def _on_error(name, fn, args, kwargs):
    """A guarded op taken before vmap started failed on batched arguments: dispatch it."""
    if not LEVELS or not has_batched(args, kwargs):
        return NotImplemented
    _targets()
    public = _NAME_OF.get(id(fn))
    if public is None:
        mod = getattr(fn, "__module__", "") or ""
        public = "F." + name if mod.endswith("nn.functional") else name
    return dispatch(public, fn, args, kwargs)


def _register():
    from .._argcheck import ON_ERROR
    if _on_error not in ON_ERROR:
        ON_ERROR.append(_on_error)


_register()
