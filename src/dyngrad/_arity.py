"""PyTorch's errors for a call of one of its native functions with arguments missing (or too
many), from the signatures PyTorch's parser has for it (``_arg_table``, generated).

PyTorch's parser, finding no signature that takes the call: with one signature, reports what
is wrong with the call against it (``sin() missing 1 required positional arguments:
"input"``); with several, the one signature whose argument count fits, else all of them
(``sum() received an invalid combination of arguments - got (), but expected one of: ...``).
Only reached after Python has refused the call: nothing here runs on a call that works.
"""
from __future__ import annotations

import re

from . import _dtype as D

# dyngrad's classes by the names PyTorch's messages give its own
_TORCH_NAMES = {"dtype": "torch.dtype", "device": "torch.device", "Size": "torch.Size"}


def _type_name(x) -> str:
    n = D.type_name(x)
    return _TORCH_NAMES.get(n, n) if type(x).__module__.startswith("dyngrad") else n


def _missing(name, params, args, kwargs):
    """PyTorch's error for the first required parameter the call leaves out, else None: it
    names every required parameter from there on."""
    for i in range(len(args), len(params)):
        p, flags = params[i]
        if p in kwargs or flags & 1:
            continue
        left = [q for q, fl in params[i:] if not fl & 1]
        n = len(left)
        # PyTorch's wording: "1 ... arguments", "2 ... argument"
        return TypeError(f"{name}() missing {n} required positional argument"
                         f"{'s' if n == 1 else ''}: " + ", ".join(f'"{q}"' for q in left))
    return None


def _combination(name, sigs, args, kwargs):
    head = f"{name}() received an invalid combination of arguments - got "
    if len(sigs) == 1 and kwargs:
        # keywords that cannot be the signature's last parameters
        params = [p for p, _ in sigs[0][1]]
        start = max(0, len(params) - len(kwargs) - ("out" in params and "out" not in kwargs))
        odd = [k for k in sorted(kwargs) if k not in params[start:]]
        if odd:
            return TypeError(head + "unrecognized keyword arguments: " + ", ".join(odd))
    # PyTorch's listing: each argument followed by ", ", the last one's dropped only when
    # some argument is positional
    got = "".join([_type_name(a) + ", " for a in args] +
                  [f"{k}={_type_name(v)}, " for k, v in sorted(kwargs.items())])
    got = f"({got[:-2] if args else got})"
    if len(sigs) == 1:
        return TypeError(f"{head}{got}, but expected ({sigs[0][0]})")
    return TypeError(f"{head}{got}, but expected one of:\n" +
                     "".join(f" * ({s})\n" for s, _ in sigs))


# Python's own refusal of a call for its arguments' number or names
_PY_ARITY = re.compile(r"^([\w.<>]+)\(\) (missing \d+ required|takes |got an unexpected keyword|"
                       r"got multiple values)")


def _refused(name, fn, e, args, kwargs) -> bool:
    """Whether ``e`` is Python refusing the public call itself: ``fn`` cannot bind the
    arguments, or a function it passes them on to (``_<name>``) refused them."""
    m = _PY_ARITY.match(str(e))
    if m is None:
        return False
    if m.group(1).rsplit(".", 1)[-1].lstrip("_") == name:
        return True
    import inspect
    try:
        inspect.signature(fn).bind(*args, **kwargs)
    except TypeError:
        return True
    except ValueError:  # no signature to check against
        return False
    return False


def combination(name, args, kwargs):
    """PyTorch's "received an invalid combination of arguments" error for ``torch.<name>``
    with its signatures as PyTorch lists them; None when the table does not have them."""
    from ._arg_table import SIGNATURES
    sigs = SIGNATURES.get(name)
    return None if sigs is None else _combination(name, sigs, args, kwargs)


def arity_error(name, fn, e, args, kwargs):
    """PyTorch's TypeError for ``torch.<name>(*args, **kwargs)`` (dyngrad's ``fn``) that
    Python refused (``e``) for its arguments' number or names; None when ``e`` is not that,
    when the table does not know ``name``, or when PyTorch would say what Python said.  An
    ``nn.functional`` function that is Python code in PyTorch has Python's words."""
    from ._arg_table import NN_PYTHON, REQUIRED, SIGNATURES
    if name not in REQUIRED and name not in SIGNATURES or \
            (name in NN_PYTHON and fn.__module__.startswith("dyngrad.nn")) or \
            not _refused(name, fn, e, args, kwargs):
        return None
    req = REQUIRED.get(name)
    if req is not None:
        return _missing(name, tuple((p, 0) for p in req), args, kwargs)
    sigs = SIGNATURES.get(name)
    if sigs is None:
        return None
    n = len(args) + len(kwargs)
    fits = [s for s in sigs if sum(not fl & 1 for _, fl in s[1]) <= n <= len(s[1])]
    if len(fits) != 1:
        return _combination(name, sigs, args, kwargs)
    params = fits[0][1]
    positional = [p for p in params if not p[1] & 2]
    if len(args) > len(positional):
        lo = sum(not fl & 1 for _, fl in params)
        hi = len(positional)
        if lo != hi:
            return TypeError(f"{name}() takes from {lo} to {hi} positional arguments but "
                             f"{len(args)} were given")
        return TypeError(f"{name}() takes {hi} positional argument{'s' * (hi != 1)} but "
                         f"{len(args)} {'was' if len(args) == 1 else 'were'} given")
    return _missing(name, params, args, kwargs)
