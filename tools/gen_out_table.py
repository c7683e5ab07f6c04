"""Write src/dyngrad/_out_table.py: which of PyTorch's public functions take ``out=``, derived
from the installed PyTorch (its argument parser and signatures), with the name its autograd
error uses and whether ``out`` must have the result's exact dtype.

    .venv/bin/python tools/gen_out_table.py          # rewrite the module
    .venv/bin/python tools/gen_out_table.py --check  # exit 1 when it is out of date
"""
from __future__ import annotations

import inspect
import pathlib
import re
import sys
import warnings

import torch

NAMESPACES = {"torch": torch, "linalg": torch.linalg, "special": torch.special, "fft": torch.fft}
TARGET = pathlib.Path(__file__).resolve().parent.parent / "src" / "dyngrad" / "_out_table.py"


def _key(ns, name, f):
    """The name PyTorch's parser gives the function (``linalg_svd``, ``special_expit``)."""
    if not inspect.isfunction(f) and getattr(f, "__name__", None):
        return f.__name__
    return name if ns == "torch" else f"{ns}_{name}"


def _takes_out(f, name):
    """Whether PyTorch's function ``f`` accepts ``out=``: a Python function by its signature,
    a bound native function by what its argument parser answers to ``out=object()`` (its
    docstring's signature when no answer says)."""
    if inspect.isfunction(f):
        try:
            return "out" in inspect.signature(f).parameters
        except (TypeError, ValueError):
            return False
    forms = _forms(f)
    if forms is not None:
        return any(fm[-1] for fm in forms)
    x = torch.zeros(2, 2)
    for args in ((x,), (x, 0), ([x],), (x, x), (x, x, 0), (x, 0, 0), ()):
        try:
            f(*args, out=object())
        except TypeError as e:
            m = str(e)
            if "unexpected keyword argument 'out'" in m or "takes no keyword" in m:
                return False
            if "argument 'out'" in m or re.search(r"\bout = None\b", m):
                return True
        except Exception:  # noqa: BLE001 - any other refusal says nothing about out
            pass
    doc = (getattr(f, "__doc__", None) or "").strip().splitlines()
    return any(re.match(rf"\s*(torch\.)?({name}|\w+\.{name})\(.*\bout=None", ln) for ln in doc[:3])


def _split(params):
    """``params`` split at its top-level commas."""
    parts, depth, cur = [], 0, ""
    for ch in params:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _forms(f):
    """The overloads of ``f`` as PyTorch's parser lists them: (positional names, how many are
    required, keyword-only names, required ones, takes out); None when it lists none."""
    if inspect.isfunction(f):
        return None
    x = torch.zeros(2, 2)
    for args in ((x,) + (0,) * 7, (x,), (object(),), ()):
        try:
            f(*args, out=object(), __probe__=0)
        except TypeError as e:
            m = str(e)
            if "expected one of:" in m:
                break
        except Exception:  # noqa: BLE001
            pass
    else:
        return None
    forms = []
    for line in m.split("expected one of:", 1)[1].splitlines():
        line = line.strip()
        if not line.startswith("* ("):
            continue
        pos, req, kw, kwreq, out, star = [], 0, [], [], False, False
        for p in _split(line[3:line.rindex(")")]):
            if p == "*":
                star = True
                continue
            default = " = " in p
            name = p.split(" = ")[0].split()[-1]
            if name == "out":
                out = True
            elif star:
                kw.append(name)
                if not default:
                    kwreq.append(name)
            else:
                pos.append(name)
                req += not default
        forms.append((tuple(pos), req, tuple(kw), tuple(kwreq), out))
    return tuple(forms) or None


def _samples():
    """Argument lists tried to learn an op's autograd error and dtype rule."""
    def m():  # positive entries, symmetric positive definite: most ops take it
        x = torch.rand(3, 3) + 0.5
        return x @ x.T + 3 * torch.eye(3)
    def v():
        return torch.rand(3) + 0.5

    def b():
        return torch.stack([m(), m()])
    def i():  # integers, and index tensors
        return torch.tensor([[4, 1, 6], [3, 5, 2], [7, 0, 9]])
    j, k = torch.tensor([[0, 1, 2], [2, 1, 0], [1, 1, 0]]), torch.tensor([0, 2])
    return [(m(),), (m(), m()), (m(), m(), m()), ([m(), m()],), (m(), 1), (m(), 0),
            (m(), 2, 1), (v(), v()), (m(), v()), (m(), m(), v()), (v(), m(), v()), (b(), b()),
            (b(), b(), b()), (m(), b(), b()), (v(),), (i(),), (i(), i()), (m(), 0, j),
            (m(), 0, k), (m(), k), (m(), m() > 5), (1, m()), (m(), 2, 0, 1.0), (m(), 0, 0, 2),
            (m(), 0, j, m())]


_TYPE = {torch.float32: ("Float", "float"), torch.float64: ("Double", "double"),
         torch.complex128: ("ComplexDouble", "c10::complex<double>"),
         torch.int64: ("Long", "long int"), torch.int32: ("Int", "int"), torch.bool: ("Bool", "bool")}
# for a result dtype: an out dtype it cannot be cast to, and a wider one it can
_PROBES = {torch.float32: (torch.int64, torch.float64),
           torch.float64: (torch.int64, torch.complex128),
           torch.int64: (torch.bool, torch.float32), torch.int32: (torch.bool, torch.int64),
           torch.bool: (None, torch.int64)}


def _template(msg, r, o):
    """``msg`` with the result's and out's dtype names as {r} {rc} {o} {oc} placeholders."""
    msg = msg.split("\n")[0].replace("{", "{{").replace("}", "}}")
    for dt, (k1, k2) in ((r, ("r", "rc")), (o, ("o", "oc"))):
        name, cname = _TYPE[dt]
        msg = msg.replace(f"torch.{name}Tensor", "torch.{" + k1 + "}Tensor")
        msg = re.sub(rf"(?<![\w.]){re.escape(cname)}(?![\w>])", "{" + k2 + "}", msg)
        msg = re.sub(rf"(?<![\w.]){re.escape(name)}(?!\w)", "{" + k1 + "}", msg)
    return msg


def _version(t):
    return t._version


def _call(f, args, out):
    """What ``f(*args, out=out)`` gives: (True, out's versions) or (False, the error)."""
    try:
        f(*args, out=out)
    except Exception as e:  # noqa: BLE001 - recorded
        return False, e
    return True, tuple(_version(t) for t in (out if isinstance(out, tuple) else (out,)))


def _overlap(f, args, r):
    """Whether ``f`` refuses an ``out`` that partly overlaps its first input (None when the
    result's shape is not the input's)."""
    a = args[0]
    if not isinstance(r, torch.Tensor) or not isinstance(a, torch.Tensor) or \
            r.shape != a.shape or r.dtype != a.dtype:
        return None
    base = torch.empty(a.numel() + 1, dtype=a.dtype)
    base[:-1] = a.reshape(-1)
    try:
        f(base[:-1].view(a.shape), *args[1:], out=base[1:].view(a.shape))
    except RuntimeError as e:
        return "some elements of the input tensor and the written-to" in str(e)
    except Exception:  # noqa: BLE001
        return None
    return False


def _resizing(f, args, rs, multi):
    """(whether PyTorch warns when it resizes an out that had elements, the order it resizes
    a multi-output op's outs in: their indices as its warnings come, None when theirs)."""
    outs = tuple(torch.zeros(7 if t.numel() != 7 else 5, dtype=t.dtype) for t in rs)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            f(*args, out=outs if multi else outs[0])
        except Exception:  # noqa: BLE001
            return True, None
    warns = any("resized" in str(m.message) for m in w)
    if not multi:
        return warns, None
    left, order = list(range(len(rs))), []
    for m in w:
        mm = re.search(r"required output shape \[([\d, ]*)\]", str(m.message))
        if not mm:
            continue
        shape = [int(v) for v in mm.group(1).split(",") if v.strip()]
        i = next((i for i in left if list(rs[i].shape) == shape), None)
        if i is not None:
            left.remove(i)
            order.append(i)
    order += left
    return warns, None if order == sorted(order) else tuple(order)


def _probe(f):
    """(autograd error name or None, dtype rule, dtype error, version bumps, overlap refused,
    resize order, resize warned)
    found by calling ``f`` as PyTorch runs it.  The rule: 'any' (out's dtype wins), 'cast'
    (PyTorch's can_cast), 'exact' (out must have the result's dtype); the error: (exception
    type, message template) or None; bumps: each output's (when resized, when it has the
    result's shape); overlap: True, False or None (not probed); the order of writing a
    multi-output op's outs and whether resizing warns (``_resizing``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in _samples():
            try:
                r = f(*args)
            except Exception:  # noqa: BLE001
                continue
            rs = r if isinstance(r, tuple) else (r,)
            if not rs or not all(isinstance(t, torch.Tensor) for t in rs):
                continue

            def outs(make, first=None):
                o = [make(t, first if i == 0 and first is not None else t.dtype)
                     for i, t in enumerate(rs)]
                return tuple(o) if isinstance(r, tuple) else o[0]

            def empty(t, dt):
                return torch.empty(0, dtype=dt)

            def shaped(t, dt):
                return torch.empty(t.shape, dtype=dt)
            ok, res = _call(f, args, outs(empty))
            if not ok:
                continue
            bumps = (res, _call(f, args, outs(shaped))[1])
            grad_name = "?"
            gargs = [a.detach().requires_grad_() if isinstance(a, torch.Tensor) and
                     a.is_floating_point() else [t.detach().requires_grad_() for t in a]
                     if isinstance(a, list) else a for a in args]
            ok, err = _call(f, gargs, outs(empty))
            if ok:
                grad_name = None
            else:
                mm = re.match(r"(\S+)\(\): functions with out=", str(err))
                grad_name = mm.group(1) if mm else "?"
            rdt = rs[0].dtype
            bad, wide = _PROBES.get(rdt, (None, None))
            rule, error = "cast", None
            if bad is not None:
                ok, err = _call(f, args, outs(shaped, bad))
                if ok:
                    rule = "any"
                else:
                    error = (type(err).__name__, _template(str(err), rdt, bad))
            if wide is not None and rule != "any":
                ok, err = _call(f, args, outs(shaped, wide))
                if not ok:
                    rule = "exact"
                    error = error or (type(err).__name__, _template(str(err), rdt, wide))
            warns, order = _resizing(f, args, rs, isinstance(r, tuple))
            return grad_name, rule, error, bumps, _overlap(f, args, r), order, warns
    return "?", "?", None, ((1,), (1,)), None, None, True


def build():
    """{key: _probe's findings} and {namespace: {public name: key}}."""
    table, names = {}, {}
    torch.manual_seed(0)
    for ns, mod in NAMESPACES.items():
        names[ns] = {}
        for name in sorted(dir(mod)):
            if name.startswith("_"):
                continue
            f = getattr(mod, name)
            if not callable(f) or isinstance(f, type) or inspect.ismodule(f):
                continue
            if ns != "torch" and getattr(f, "__module__", "") not in (None, f"torch.{ns}") and \
                    inspect.isfunction(f):
                continue
            if not _takes_out(f, name):
                continue
            key = _key(ns, name, f)
            names[ns][name] = key
            if key not in table:
                forms = _forms(f)
                mixed = forms and not all(fm[-1] for fm in forms)
                table[key] = _probe(f) + (forms if mixed else None,)
    return table, names


def render(table, names) -> str:
    lines = ['# ruff: noqa: E501', '"""Which PyTorch functions take ``out=`` (generated by tools/gen_out_table.py from '
             f'PyTorch {torch.__version__.split("+")[0]};',
             "do not edit).", "",
             "``OUT[key]`` is (the op name PyTorch's autograd error uses, None when it raises "
             "none;",
             "the dtype rule: 'any', 'cast' or 'exact'; the dtype error: (exception type, message",
             "template) or None; each out's version bumps when resized and when not; whether a",
             "partly overlapping out is refused; the order its outs are written in; whether",
             "resizing an out warns), '?' where",
             "the probe",
             "found no call; the overloads when only some take out (see _forms)); ",
             "``NAMES[namespace][public name]`` is the key.", '"""', "",
             "OUT = {"]
    for k in sorted(table):
        lines.append(f"    {k!r}: {table[k]!r},")
    lines += ["}", "", "NAMES = {"]
    for ns, d in names.items():
        lines.append(f"    {ns!r}: {{")
        for n in sorted(d):
            lines.append(f"        {n!r}: {d[n]!r},")
        lines.append("    },")
    lines += ["}", ""]
    return "\n".join(lines)


def main(argv):
    text = render(*build())
    if "--check" in argv:
        return 0 if TARGET.exists() and TARGET.read_text() == text else 1
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
