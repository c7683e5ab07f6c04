"""Argument errors of the public functions (``dyngrad.add``, ``nn.functional.relu`` ...) as
PyTorch's parser raises them.

A function called with an argument of the wrong kind (a string where a tensor goes, None, a
list) would otherwise fail somewhere inside with an AttributeError or a NumPy error.  Each
public function is wrapped once, at import: the wrapper costs nothing until something raises;
then an error that no ``raise`` statement of dyngrad made (an internal one) becomes PyTorch's
TypeError naming the function and the offending argument.  Errors dyngrad raises on purpose
pass through untouched.  A call refused for NumPy's parameter names (``axis=``) that PyTorch's
native functions accept is made again with PyTorch's names (``_npnames``).
"""
from __future__ import annotations

import functools
import os
import re

from . import _dtype as D

_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep


def internal(e: BaseException) -> bool:
    """Whether ``e`` escaped from inside NumPy or Python rather than a ``raise`` of dyngrad."""
    tb = e.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not code.co_filename.startswith(_PKG):
        return True
    import linecache
    line = linecache.getline(code.co_filename, tb.tb_lineno).lstrip()
    return not line.startswith("raise")


def translate(name: str, args, kwargs, e: BaseException, fn=None):
    """PyTorch's TypeError for the call ``name(*args, **kwargs)`` that failed internally with
    ``e``; None when ``e`` is one of dyngrad's own errors or the arguments look right.
    ``fn``: the function called (PyTorch's parser has its own words for a call of one of its
    native functions that Python refused)."""
    from ._tensor import Tensor
    if not isinstance(e, (AttributeError, TypeError, ValueError, IndexError, KeyError)) or \
            not internal(e):
        return None
    msg = str(e)
    if isinstance(e, TypeError) and fn is not None:
        from ._arity import arity_error
        t = arity_error(name, fn, e, args, kwargs)
        if t is not None:
            return t
    if isinstance(e, TypeError) and "required positional argument" in msg and ") " in msg:
        # Python's own arity error names the implementing function: name the public one
        return TypeError(f"{name}() {msg.split(') ', 1)[1]}")
    first = args[0] if args else kwargs.get("input", kwargs.get("self"))
    if isinstance(first, str) and isinstance(e, AttributeError):
        return TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not str")
    if first is not None and not isinstance(first, (Tensor, list, tuple, str)) or \
            (first is None and args):
        return TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                         f"{D.type_name(first)}")
    odd = any(isinstance(a, (str, bytes, dict, set)) for a in list(args[1:]) + list(kwargs.values()))
    if odd or isinstance(e, AttributeError):
        return D.bad_combo(name, args, kwargs)
    return None


# Called with (name, fn, args, kwargs) when a guarded call fails; returns NotImplemented when
# the failure is not its business (dyngrad.func registers the dispatch of batched tensors,
# dyngrad.fx the recording of calls on its Proxies).
ON_ERROR: list = []


def guard(fn, name=None):
    """``fn`` with PyTorch's argument errors in place of internal ones (see the module)."""
    name = name or fn.__name__
    from . import _out
    takes_out = name in _out.OUT  # PyTorch's function takes out=: Python refusing it is our cue
    if takes_out and _out.swallows_out(fn):  # an ignored out parameter: look for it
        fn, takes_out = _out.accepting(fn, name), False

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            r = fn(*args, **kwargs)
        except Exception as e:
            k = _numpy_names(name, fn, kwargs) if kwargs else None
            if k is not None:  # NumPy's parameter names (``axis=``): call with PyTorch's
                return call(*args, **k)
            if takes_out and _out.refused(e, kwargs):
                return _out.call(name, fn, args, kwargs)
            r = _hooked(name, fn, args, kwargs)
            if r is not NotImplemented:
                return r
            stale = _stale_input(args, kwargs)
            if stale is not None and not str(e).startswith(stale[:40]):
                # PyTorch collects the inputs' history before the kernel runs: a view whose
                # history cannot be rebuilt raises its error ahead of the op's own
                raise RuntimeError(stale) from None
            if not isinstance(e, (AttributeError, TypeError, ValueError, IndexError, KeyError)):
                raise
            base = fn.__name__
            if type(e) is TypeError and str(e).startswith(base + "("):
                p = _parser_form(name, TypeError(name + str(e)[len(base):]), args, kwargs)
                if p is not e and str(p) != str(e):
                    raise p from None
            t = translate(name, args, kwargs, e, fn)
            if t is None:
                raise
            raise _parser_form(name, t, args, kwargs) from None
        if r is NotImplemented:  # an operator's refusal of an operand: an error when called
            r = _hooked(name, fn, args, kwargs)
            if r is NotImplemented:
                raise D.bad_combo(name, args, kwargs)
        return r

    front = getattr(fn, "guard_front", None)
    if front is not None:  # the op's own lean path for its common call, ``call`` for the rest
        return functools.wraps(fn)(front(call))
    return call


def method_failed(name: str, fn, given: dict, e: BaseException | None):
    """The outcome of the Tensor method call ``self.<name>(...)`` (``given``: the wrapper's
    parameters by name, ``self`` first) that failed inside with ``e``, or whose op refused an
    operand (``e`` None: the ``NotImplemented`` of Python's operator protocol, which a method
    never returns): ``(error to raise, None)``, or ``(None, NotImplemented)`` to leave ``e``
    (or the refusal) as it is: one of dyngrad's own errors, or a tensor subclass's.  An error is the function form's, with positions and the
    argument listing counted after ``self``, as a method's are."""
    args, kwargs = _as_call(fn, given)
    if _foreign(args, kwargs):
        # a tensor subclass's own failure (vmap's batched tensors run the whole function per
        # sample on it): left as it is
        return None, NotImplemented
    if e is None:
        return _method_form(name, D.bad_combo(name, args, kwargs)), None
    t = translate(name, args, kwargs, e, fn)
    if t is None:
        return None, NotImplemented
    return _method_form(name, _parser_form(name, t, args, kwargs)), None


def _foreign(args, kwargs) -> bool:
    """Whether an argument is a tensor without data of its own (vmap's batched tensor)."""
    from ._tensor import Tensor
    for a in list(args) + list(kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, Tensor) and type(t) is not Tensor and not hasattr(t, "_data"):
                return True
    return False


def _as_call(fn, given):
    """Positional and keyword arguments as a caller would most likely have given ``given``:
    parameters up to the first one left at its default by position, the rest that differ
    from their defaults by keyword."""
    import inspect
    args, kwargs, by_position = [], {}, True
    for n, p in inspect.signature(fn).parameters.items():
        v = given.get(n, p.default)
        if p.kind is p.VAR_POSITIONAL:
            args.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(v)
        elif p.default is not p.empty and v is p.default:
            by_position = False
        elif by_position and p.kind is not p.KEYWORD_ONLY:
            args.append(v)
        else:
            kwargs[n] = v
    return tuple(args), kwargs


def _method_form(name, err):
    """A function-form parser error of ``name`` reworded for the method: argument positions
    count after ``self``; an invalid combination lists the arguments after ``self`` and the
    signatures without the input tensor and ``out``."""
    msg = str(err)
    head = f"{name}(): argument "
    if msg.startswith(head):
        return type(err)(re.sub(r"\(position (\d+)\)",
                                lambda m: f"(position {int(m.group(1)) - 1})", msg, count=1))
    combo = f"{name}() received an invalid combination of arguments - got ("
    if not msg.startswith(combo) or "), but expected" not in msg:
        return err
    got, rest = msg[len(combo):].split("), but expected", 1)
    items = [g for g in got.split(", ") if g][1:]
    positional = any("=" not in g for g in items)
    got = ", ".join(items) if positional else "".join(g + ", " for g in items)

    def strip(sig):
        for drop in (", *, Tensor out = None", ", Tensor out = None",
                     ", *, tuple of Tensors out = None", ", tuple of Tensors out = None"):
            sig = sig.replace(drop, "")
        sig = sig.replace("Tensor input, ", "", 1).replace("Tensor input", "", 1)
        return "" if sig in ("*", "*, ") else sig

    rest = re.sub(r"\(([^()]*)\)", lambda m: f"({strip(m.group(1))})", rest)
    return TypeError(f"{combo}{got}), but expected{rest}")


def _parser_form(name, err, args, kwargs):
    """``err`` as PyTorch's argument parser words it for ``name``: an alias's errors name the
    alias (the caller renames them), and a function of several signatures reports a wrong
    argument as an invalid combination of arguments."""
    from ._arg_table import SIGNATURES
    sigs = SIGNATURES.get(name)
    if sigs is None or type(err) is not TypeError or \
            not str(err).startswith(name + "(): argument "):
        return err
    # PyTorch's parser words the error of the one signature that fits the argument count
    # (its min to max number of arguments); with several, it lists them all
    n = len(args) + len(kwargs)
    fits = sum(1 for _, params in sigs
               if sum(1 for _, f in params if not f & 1) <= n <= len(params))
    return err if fits == 1 else D.bad_combo(name, args, kwargs)


def _numpy_names(name, fn, kwargs):
    """``kwargs`` with NumPy's parameter names renamed when ``dyngrad.<name>`` stands for a
    native function of PyTorch (which takes them), else None (see ``_npnames``)."""
    from . import _npnames
    if not _npnames.native(name, fn):
        return None
    return _npnames.renamed(fn, kwargs, name)


def _hooked(name, fn, args, kwargs):
    """The first ON_ERROR hook's handling of a failed call, else NotImplemented: vmap's
    batched tensors reach ops taken before vmap started, fx's Proxies ops called outside a
    trace."""
    for hook in ON_ERROR:
        r = hook(name, fn, args, kwargs)
        if r is not NotImplemented:
            return r
    return NotImplemented


def _stale_input(args, kwargs):
    """The error of a tensor argument whose view history can no longer be rebuilt (recording
    on), else None."""
    from ._tensor import Tensor
    from .autograd.grad_mode import STATE
    if not STATE.enabled:
        return None
    for a in list(args) + list(kwargs.values()):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(t, Tensor) and t._stale_view:
                return t._stale_view
    return None


def guard_module(namespace: dict, module_name: str) -> None:
    """Wrap every public function defined in module ``module_name`` found in ``namespace``."""
    import inspect
    for k, v in list(namespace.items()):
        if k.startswith("_") or not inspect.isfunction(v) or v.__module__ != module_name or \
                getattr(v, "own_errors", False):
            continue
        namespace[k] = guard(v, k)
