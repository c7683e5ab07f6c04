"""NumPy's names for parameters, as PyTorch's argument parser accepts them.

Every native function and Tensor method of PyTorch takes ``axis`` for ``dim``, ``keepdims`` for
``keepdim``, ``x`` / ``a`` / ``x1`` for ``input`` and ``x2`` for ``other``
(``numpy_compatibility_arg_names`` in torch/csrc/utils/python_arg_parser.cpp); functions written
in Python (most of ``torch.nn.functional``, Tensor methods of torch/_tensor.py) do not.

dyngrad's functions name only PyTorch's parameters, so Python refuses a NumPy name before the
function runs.  The renaming happens on that error path only (the argument guard for the
package's functions, a thin wrapper for the methods that have such a parameter): a call that
succeeds costs nothing more.  A NumPy name is renamed when the function has the parameter, does
not have the NumPy name itself, and the call does not also give the parameter (PyTorch's error
then: the NumPy name is unexpected).
"""
from __future__ import annotations

import os

import inspect

ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input",
           "x2": "other"}
TARGETS = frozenset(ALIASES.values())

# Tensor methods that are Python code in PyTorch (torch/_tensor.py) although ``torch.<name>``
# is native, or that PyTorch does not have: they take no NumPy names (the others written in
# Python are those of a ``torch.<name>`` written in Python, which the argument table does not
# know; tests/test_numpy_kwargs.py checks both with torch)
PY_METHODS = frozenset({"unflatten", "rsub"})

_PARAMS: dict = {}


def params(fn, name=None) -> frozenset:
    """The parameter names of ``fn``, plus those of PyTorch's signatures of ``torch.<name>``
    (a function of dyngrad taking ``*args`` names its parameters there)."""
    key = (fn, name)
    p = _PARAMS.get(key)
    if p is None:
        try:
            ps = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            ps = {}
        names = set(ps)
        if name is not None and any(v.kind in (v.VAR_POSITIONAL, v.VAR_KEYWORD)
                                    for v in ps.values()):
            from ._arg_table import SIGNATURES
            for _, sig in SIGNATURES.get(name, ()):
                names.update(n for n, _ in sig)
        p = _PARAMS[key] = frozenset(names)
    return p


def native(name: str, fn) -> bool:
    """Whether ``dyngrad.<name>`` (``fn``) stands for a native function of PyTorch (its
    argument table knows it), not one written in Python."""
    from ._arg_table import NN_PYTHON, REQUIRED, SIGNATURES
    if name not in REQUIRED and name not in SIGNATURES:
        return False
    return not (name in NN_PYTHON and getattr(fn, "__module__", "").startswith("dyngrad.nn"))


def renamed(fn, kwargs: dict, name=None, method=False):
    """``kwargs`` with NumPy's names replaced by the parameters of ``fn`` they stand for; None
    when there is nothing to rename or PyTorch would refuse the names.  ``name``: PyTorch's
    function ``fn`` stands for; ``method``: ``fn`` is a Tensor method (its input is ``self``)."""
    if not any(k in ALIASES for k in kwargs):
        return None
    have = params(fn, name)
    out, done = {}, False
    for k, v in kwargs.items():
        t = ALIASES.get(k)
        if t is None or k in have:
            out[k] = v
            continue
        if t not in have or t in kwargs or t in out or method and t == "input":
            return None  # no such parameter, or it is given as well: PyTorch's error
        out[t], done = v, True
    return out if done else None


_M = object()  # a wrapper's default: the argument was not given


def method(fn, name: str, function: bool = False):
    """``fn`` as the Tensor method ``name``: when it has a parameter that NumPy's names stand
    for (its ``self`` is the input) and PyTorch's method is native, a wrapper with ``fn``'s own
    parameters plus the NumPy names as keyword-only ones, which calls ``fn`` straight on unless
    one of those is given; else ``fn`` itself.  ``function``: ``dyngrad.<name>`` exists too
    (then PyTorch's method is native when its function is)."""
    from ._arg_table import REQUIRED, SIGNATURES
    if name.startswith("__"):
        return fn
    try:
        ps = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn
    extra = []
    if not (name in PY_METHODS or
            function and name not in REQUIRED and name not in SIGNATURES):
        names = {p.name for p in ps}
        extra = [a for a, t in ALIASES.items()
                 if t != "input" and t in names and a not in names and t != ps[0].name]
    return _exact(fn, name, ps, extra)


class Pending:
    """A Tensor method not built yet: its first lookup builds it (``method``: reading the
    op's signature, perhaps generating a wrapper) and puts the result in ``owner`` in its
    place, so importing dyngrad does not inspect every op."""

    __slots__ = ("fn", "name", "function", "owner")

    def __init__(self, fn, name: str, function: bool, owner: type):
        self.fn, self.name, self.function, self.owner = fn, name, function, owner

    def build(self):
        """The method, now in ``owner``."""
        m = method(self.fn, self.name, self.function)
        setattr(self.owner, self.name, m)
        return m

    def __get__(self, obj, cls=None):
        m = self.build()
        return m if obj is None else m.__get__(obj, cls)


def build_all(cls: type) -> None:
    """Build every pending method of ``cls`` (for code that reads the class's functions from
    its ``__dict__``: tracing, batching)."""
    for v in list(vars(cls).values()):
        if type(v) is Pending:
            v.build()


def _exact(fn, name, ps, extra):
    """The wrapper of ``method`` (generated: an exact signature is cheaper to call through
    than ``*args, **kwargs``)."""
    from ._argcheck import method_failed
    ns = {"_fn": fn, "_M": _M, "_slow": _slow, "_d": [], "_name": name,
          "_failed": _failed, "_names": tuple(p.name for p in ps), "_check": method_failed,
          "_caught": (AttributeError, TypeError, ValueError, IndexError, KeyError)}
    targets = {ALIASES[a] for a in extra}
    sig, fwd, need, star, seen_default = [], [], [], False, False
    for p in ps:
        if p.kind is p.VAR_POSITIONAL:
            sig.append("*" + p.name)
            fwd.append("*" + p.name)
            star = True
        elif p.kind is p.VAR_KEYWORD:
            sig.append("**" + p.name)
            fwd.append("**" + p.name)
        else:
            if p.kind is p.KEYWORD_ONLY and not star:
                sig.append("*")
                star = True
            if p.default is not p.empty:
                ns["_d"].append(p.default)
                sig.append(f"{p.name}=_d[{len(ns['_d']) - 1}]")
                seen_default = seen_default or p.kind is not p.KEYWORD_ONLY
            elif p.name in targets or seen_default and p.kind is not p.KEYWORD_ONLY:
                sig.append(f"{p.name}=_M")  # NumPy's name may give it
                need.append(p.name)
                seen_default = seen_default or p.kind is not p.KEYWORD_ONLY
            else:
                sig.append(p.name)
            if p.kind is p.POSITIONAL_ONLY and ps[ps.index(p) + 1:] and \
                    ps[ps.index(p) + 1].kind is not p.POSITIONAL_ONLY:
                sig.append("/")
            fwd.append(p.name if p.kind is not p.KEYWORD_ONLY else f"{p.name}={p.name}")
    kw = [p for p in sig if "**" in p]
    sig = [p for p in sig if "**" not in p]
    if not star and extra:
        sig.append("*")
    sig += [f"{a}=_M" for a in extra] + kw
    cond = " and ".join([f"{a} is _M" for a in extra] + [f"{n} is not _M" for n in need])
    own = ", ".join(f"{p.name!r}: {p.name}" for p in ps)
    loc = own + ", " + ", ".join(f"{a!r}: {a}" for a in extra)
    body = (f"        if {cond}:\n"
            f"            _r = _fn({', '.join(fwd)})\n"
            f"        else:\n"
            f"            _r = _slow(_fn, _name, {{{loc}}})\n") if extra else \
        f"        _r = _fn({', '.join(fwd)})\n"
    # an error from inside (NumPy's, Python's) becomes PyTorch's TypeError naming the
    # method and the argument, and so does an operand the op refused (Python's operator
    # protocol); dyngrad's own errors pass through
    # the parameters' values as a tuple (a comprehension here would be a code object
    # nested in the wrapper's, which makes hashing the wrapper's code, as recording a node
    # does, slower)
    given = f"_check, _names, ({', '.join(p.name for p in ps)},)"
    src = (f"def _method({', '.join(sig)}):\n"
           f"    try:\n{body}"
           f"    except _caught as _e:\n"
           f"        _t, _r = _failed(_name, _fn, {given}, _e)\n"
           f"        if _t is not None:\n"
           f"            raise _t from None\n"
           f"        raise\n"
           f"    if _r is NotImplemented:\n"
           f"        _t, _r = _failed(_name, _fn, {given}, None)\n"
           f"        if _t is not None:\n"
           f"            raise _t\n"
           f"    return _r\n")
    # methods of the same signature share the compiled code (each runs it in its own
    # namespace); named inside the package, so that the frame of this wrapper counts as
    # dyngrad's where errors and warnings look for the user's line
    code = _CODE.get(src)
    if code is None:
        code = _CODE[src] = compile(src, os.path.join(_HERE, "<numpy names>"), "exec")
    exec(code, ns)
    call = ns["_method"]
    # Python's own argument errors name the function as its code does
    call.__code__ = call.__code__.replace(co_name=fn.__name__, co_qualname=fn.__qualname__)
    for a in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(call, a, getattr(fn, a, None))
    call.__wrapped__ = fn
    call.__dict__.update(fn.__dict__)
    return call


_HERE = os.path.dirname(os.path.abspath(__file__))
_CODE: dict = {}  # wrapper source -> its compiled code


def _failed(name, fn, check, names, values, e):
    """``check`` (``_argcheck.method_failed``) for a wrapper's parameters ``names`` holding
    ``values``, those not given left out."""
    return check(name, fn, {n: v for n, v in zip(names, values) if v is not _M}, e)


def _slow(fn, name, given):
    """A wrapped method called with a NumPy name, or without a parameter that NumPy's names
    may give: ``fn`` called with PyTorch's names, or PyTorch's error when both are given."""
    ps = inspect.signature(fn).parameters
    var = any(p.kind is p.VAR_POSITIONAL for p in ps.values())
    pos, kw, at = [], {}, {}
    for n, p in ps.items():
        v = given[n]
        if p.kind is p.VAR_POSITIONAL:
            pos.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            kw.update(v)
        elif p.kind is p.POSITIONAL_ONLY or p.kind is p.POSITIONAL_OR_KEYWORD and var:
            at[n] = len(pos)  # before ``*args``: given by position
            pos.append(v)
        elif v is not _M:
            kw[n] = v
    for a, t in ALIASES.items():
        v = given.get(a, _M)
        if v is _M or t not in ps:
            continue
        g = given[t]
        if g is not _M and g is not ps[t].default:
            raise TypeError(f"{name}() got an unexpected keyword argument '{a}'")
        if t in at:
            pos[at[t]] = v
        else:
            kw[t] = v
    while pos and pos[-1] is _M:
        pos.pop()
    return fn(*pos, **kw)
