"""Every registered op (``dyngrad.ops.OPS``) is reached by an op-table row (tests/optable/), so
the generic checks (values, gradcheck, graph and version counter vs PyTorch, forward mode,
vmap, ...) run on it.

"Reached" is read from the rows' code, not from running them: a row reaches an op when its
callable (its lambda, the code nested in it and the tests' helper functions it calls) names
one of the places the op is exposed:

* ``dyngrad.<name>`` (or ``dyngrad.special.<name>``, ``dyngrad.linalg.<name>``,
  ``F.<name>`` ...): the attribute access on the module, resolved to the registered function
  (an alias sharing its function with another op, ``subtract``/``sub``, is reached only
  under its own name);
* ``Tensor.<name>``: a method access ``x.<name>`` on something that is not a module, matched
  with the op's method names (``methods`` in the registry included);
* a Python operator: ``a / b`` reaches ``__truediv__``, ``2.0 / a`` (a number on the left)
  ``__rtruediv__``, ``a == b`` ``__eq__`` ...;
* a row whose callable is the registered function itself (``torch.median``);
* an in-place form derived from the registry (tests/optable/inplace_forms.py), by its name.
"""
from __future__ import annotations

import builtins
import dis
import types

import dyngrad
from dyngrad.ops import OPS
from tests.optable import all_rows
from tests.optable.inplace_forms import _inplace_call

# Registered ops no row reaches yet, each to be given a row (the test fails when an entry becomes
# reached: remove it then), so the set only shrinks; nothing else is exempt.  Empty: every
# registered op is reached.
PENDING: set = set()

_BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "truediv", "//": "floordiv", "%": "mod",
           "**": "pow", "@": "matmul", "&": "and", "|": "or", "^": "xor", "<<": "lshift",
           ">>": "rshift"}
_COMPARE = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}
_UNARY = {"UNARY_NEGATIVE": "__neg__", "UNARY_POSITIVE": "__pos__", "UNARY_INVERT": "__invert__",
          "BINARY_SUBSCR": "__getitem__", "STORE_SUBSCR": "__setitem__"}
_NUMBER = (int, float, complex, bool)


def _left_operand_is_number(instrs, i):
    """Whether the left operand of the binary operator at ``instrs[i]`` is a number constant
    (straight-line code: walk back until the two operands are accounted for)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        ins = instrs[j]
        try:
            depth += dis.stack_effect(ins.opcode, ins.arg)
        except ValueError:
            return False
        if depth == 2:
            return ins.opname == "LOAD_CONST" and isinstance(ins.argval, _NUMBER)
        if depth > 2 or ins.opname.startswith(("JUMP", "POP_JUMP")):
            return False
    return False


def _accesses(code, globs, seen, out):
    """``out`` gets ("attr", module, name) for attribute accesses on modules and ("method",
    name) for the rest, over ``code``, its nested code and the tests' helpers it calls."""
    if id(code) in seen:
        return
    seen.add(id(code))
    instrs = list(dis.get_instructions(code))
    obj = None  # the module an attribute chain started from, while it lasts
    for i, ins in enumerate(instrs):
        op = ins.opname
        if op == "LOAD_GLOBAL":
            name = ins.argval
            v = globs.get(name, getattr(builtins, name, None))
            obj = v if isinstance(v, types.ModuleType) else None
            if isinstance(v, types.FunctionType) and (v.__module__ or "").startswith("tests"):
                _accesses(v.__code__, v.__globals__, seen, out)
            elif callable(v):
                out.add(("value", v, name))
            continue
        if op in ("LOAD_ATTR", "LOAD_METHOD"):
            if obj is not None:
                out.add(("attr", obj, ins.argval))
                nxt = getattr(obj, ins.argval, None)
                obj = nxt if isinstance(nxt, types.ModuleType) else None
            else:
                out.add(("method", ins.argval))
            continue
        obj = None
        if op == "BINARY_OP":
            sym = ins.argrepr
            if sym.endswith("=") and sym[:-1] in _BINARY:
                out.add(("method", f"__i{_BINARY[sym[:-1]]}__"))
            elif sym in _BINARY:
                r = "r" if _left_operand_is_number(instrs, i) else ""
                out.add(("method", f"__{r}{_BINARY[sym]}__"))
        elif op == "COMPARE_OP" and ins.argval in _COMPARE:
            out.add(("method", f"__{_COMPARE[ins.argval]}__"))
        elif op in _UNARY:
            out.add(("method", _UNARY[op]))
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _accesses(c, globs, seen, out)


_BY_FN: dict = {}
for _k, _info in OPS.items():
    _BY_FN.setdefault(id(_info["fn"]), []).append(_k)
_METHOD_NAMES: dict = {}
for _k, _info in OPS.items():
    for _m in ((_k,) if _info["method"] else ()) + _info["methods"]:
        _METHOD_NAMES.setdefault(_m, []).append(_k)


def _ops_of_value(v, name):
    """The registered ops a module attribute ``name`` holding ``v`` exposes: those of its
    function (unwrapped from the namespace's argument guard), the one of that name when several
    ops share it."""
    while id(v) not in _BY_FN and hasattr(v, "__wrapped__"):
        v = v.__wrapped__
    cands = _BY_FN.get(id(v), [])
    named = [k for k in cands if k == name or k.lstrip("_").endswith(name)]
    return named or (cands if len(cands) == 1 else [])


def reached_ops(rows):
    """The registered ops some row reaches (see the module docstring)."""
    inplace_code = _inplace_call("x").__code__
    reached = set()
    for r in rows:
        fn = r.fn
        if getattr(fn, "__code__", None) is inplace_code:
            reached.add(r.name)
            continue
        if _ops_of_value(fn, getattr(fn, "__name__", "")):
            reached.update(_ops_of_value(fn, getattr(fn, "__name__", "")))
            continue
        if not isinstance(fn, types.FunctionType):
            continue
        acc: set = set()
        _accesses(fn.__code__, fn.__globals__, set(), acc)
        for c in fn.__closure__ or ():
            v = c.cell_contents
            if isinstance(v, types.FunctionType):
                _accesses(v.__code__, v.__globals__, set(), acc)
        for a in acc:
            if a[0] == "method":
                reached.update(_METHOD_NAMES.get(a[1], ()))
            elif a[0] == "attr":
                mod, name = a[1], a[2]
                if mod.__name__.startswith("dyngrad"):
                    reached.update(_ops_of_value(getattr(mod, name, None), name))
            else:
                reached.update(_ops_of_value(a[1], a[2]))
    return reached


REACHED = reached_ops(all_rows())


def test_every_registered_op_is_reached_by_a_row():
    missing = sorted(k for k in OPS if k not in REACHED and k not in PENDING)
    assert not missing, (f"{len(missing)} registered ops no op-table row reaches (add rows in "
                         f"tests/optable/): " + " ".join(
                             f"{k} ({OPS[k]['module']})" for k in missing))


def test_pending_gaps_are_still_gaps():
    done = sorted(k for k in PENDING if k in REACHED)
    assert not done, f"now reached by a row, remove from PENDING: {' '.join(done)}"
    unknown = sorted(k for k in PENDING if k not in OPS)
    assert not unknown, f"not registered ops, remove from PENDING: {' '.join(unknown)}"


def test_reach_is_read_from_the_code():
    """The reading tells the places apart: an alias by its own name, the reflected operator
    by the number on the left, a module's function from a Tensor method."""
    from tests.optable import OpInfo
    probe = [OpInfo("p", lambda a, b: dyngrad.sub(a, b) + 2.0 / a + a.heaviside(b)),
             OpInfo("q", lambda a: dyngrad.special.i0e(a).relu())]
    got = reached_ops(probe)
    assert {"sub", "_rtruediv", "_heaviside_method", "_special_i0e", "relu"} <= got
    assert not {"subtract", "div", "heaviside"} & got


def test_row_names_are_unique():
    """The checks against PyTorch key rows by name (a second row of a name would hide the
    first)."""
    seen: dict = {}
    for r in all_rows():
        seen[r.name] = seen.get(r.name, 0) + 1
    dup = sorted(k for k, n in seen.items() if n > 1)
    assert not dup, f"op-table rows sharing a name: {' '.join(dup)}"
