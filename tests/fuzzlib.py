"""Random autograd programs: the generator, the interpreter and the comparison shared by the
differential fuzzer (tests/test_fuzz_vs_torch.py) and the replay of recorded failing programs
(tests/test_fuzz_regressions.py).

A program is JSON: a few leaves (float32, float64 or int64; 0-d, size-0 and size-1 shapes),
a list of steps over numbered values, the values the loss is built from and a mode
(``backward``, or ``double``: first derivatives by ``autograd.grad(create_graph=True)``, then
a second backward).  The same program runs on any module with PyTorch's API (``dyngrad`` or
``torch``); ``run`` returns what is compared: every value (shape, dtype, data, requires_grad,
is_leaf, grad_fn name, ``.grad`` when it has one), every step that raised (exception type and
leading message), backward's error, the leaves' gradients and, in double mode, the first
derivatives.  Generation needs no library: a program is deterministic in its seed.
"""
from __future__ import annotations

import random
import warnings

import numpy as np

F32, F64, I64 = "float32", "float64", "int64"
FLOATS = (F32, F64)

SHAPES = [(3, 4), (3, 4), (4,), (3, 1), (1, 4), (), (2, 3, 4), (3,), (0,), (3, 0), (0, 4),
          (1,), (2, 1, 4), (1, 1), (2, 3, 4)]

UNARY = ["neg", "tanh", "sigmoid", "sin", "cos", "exp_t", "log_s", "sqrt_s", "relu", "abs",
         "pow2", "rsub", "clone", "mul_s", "add_s", "exp", "log", "sqrt", "clamp", "clamp_min",
         "pow_s", "add_int", "div_int", "mul_int", "rpow"]
BINARY = ["add", "sub", "mul", "div_s", "div", "maximum", "minimum", "logaddexp", "where",
          "where_s", "sub_alpha"]
VIEWS = ["reshape_flat", "view_flat", "reshape_rev", "transpose", "unsqueeze", "slice0",
         "step1", "select0", "index0", "t", "view", "reshape", "transpose_d", "permute",
         "expand", "squeeze", "squeeze_d", "narrow", "select", "slice_d", "diagonal",
         "movedim", "flatten", "none_idx", "split", "split_list", "chunk", "unbind",
         "tensor_split", "tensor_split_idx"]
MULTI = {"split", "split_list", "chunk", "unbind", "tensor_split", "tensor_split_idx",
         "max_dim", "min_dim"}
REDUCE = ["sum_all", "sum_dim", "mean_dim", "mean_all", "amax", "amin", "max_dim", "min_dim",
          "max_all", "var", "std", "var_all", "softmax", "log_softmax", "cumsum", "cumprod",
          "logsumexp", "prod_dim"]
# steps that modify a value (or its flags) and produce no new value
INPLACE = ["add_", "mul_", "setitem", "setitem_t", "sub_", "mul_t_", "div_", "copy_", "fill_",
           "zero_", "clamp_", "exp_", "tanh_", "sigmoid_", "setitem_b", "setitem_slice",
           "setitem_mask", "add_bcast_"]
FLAG_OPS = ["retain_grad", "requires_grad_", "requires_grad_false"]
NO_OUTPUT = set(INPLACE) | set(FLAG_OPS)


# --- generation -----------------------------------------------------------------------
def _promote(a, b):
    """Result dtype of a binary op between two tensors (approximate: generation only)."""
    if a == b:
        return a
    if a == I64:
        return b
    if b == I64:
        return a
    return F64 if F64 in (a, b) else F32


def _bcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def generate(seed, n_ops=None):
    """A random program, deterministic in ``seed`` (no library needed)."""
    r = random.Random(seed)
    n_leaves = r.randint(2, 4)
    leaves = []
    vals = []  # (shape, dtype) of every value, as the generator expects it
    for _ in range(n_leaves):
        s = r.choice(SHAPES)
        dt = r.choices([F64, F32, I64], weights=[55, 35, 10])[0]
        leaves.append({"shape": list(s), "dtype": dt, "rg": dt != I64 and r.random() < 0.8})
        vals.append((tuple(s), dt))
    steps = []
    n_ops = n_ops or r.randint(15, 40)
    no_grad_left = 0
    for _ in range(n_ops):
        if no_grad_left == 0 and r.random() < 0.06:
            no_grad_left = r.randint(1, 4)
        n_before = len(vals)
        step = _gen_step(r, vals)
        if step is None:
            del vals[n_before:]
            continue
        if no_grad_left and step["op"] in VIEWS:
            # views made under no_grad follow PyTorch's special CreationMeta rules; those
            # are checked by directed tests, not mixed into random programs
            del vals[n_before:]
            continue
        if no_grad_left:
            step["ng"] = True
            no_grad_left -= 1
        steps.append(step)
    outs = r.sample(range(len(vals)), k=min(len(vals), r.randint(2, 6)))
    mode = "double" if r.random() < 0.15 else "backward"
    return {"seed": seed, "version": 2, "mode": mode, "leaves": leaves, "steps": steps,
            "loss": sorted(outs)}


def _dim(r, nd):
    return r.randrange(nd) - (nd if r.random() < 0.3 else 0)


def _norm(d, nd):
    return d + nd if d < 0 else d


def _split_sizes(n, size):
    if n == 0:
        return [0]
    return [min(size, n - i) for i in range(0, n, size)]


def _gen_step(r, vals):
    n = len(vals)
    recent = list(range(max(0, n - 6), n))
    pick = lambda: r.choice(recent if r.random() < 0.7 else list(range(n)))  # noqa: E731
    kind = r.choices(["unary", "binary", "view", "reduce", "matmul", "inplace", "detach",
                      "flags", "join"],
                     weights=[20, 20, 22, 12, 6, 14, 3, 3, 3])[0]
    a = pick()
    if kind == "view" and r.random() < 0.4:
        a = n - 1  # views of views of views
    sa, da = vals[a]
    nd = len(sa)
    c = round(r.uniform(-2, 2), 3)
    fdt = F32 if da == I64 else da

    def out(oshape, dt=None, **kw):
        vals.append((tuple(oshape), dt or da))
        return kw

    if kind == "unary":
        op = r.choice(UNARY)
        st = {"op": op, "args": [a], "c": c}
        if op in ("clamp",):
            st["lo"], st["hi"] = sorted([round(r.uniform(-1.5, 1.5), 3) for _ in range(2)])
        if op in ("add_int", "mul_int"):
            st["c"] = r.randint(-3, 3)
        keep = op in ("neg", "abs", "relu", "clone", "clamp", "clamp_min", "add_int",
                      "mul_int", "pow2")
        out(sa, da if keep else fdt)
        return st
    if kind == "binary":
        op = r.choice(BINARY)
        for _ in range(8):
            b = pick()
            sb, db = vals[b]
            o = _bcast(sa, sb)
            if o is None and r.random() < 0.8:
                continue
            if op == "where":
                cnd = pick()
                o2 = _bcast(o or sa, vals[cnd][0]) if o else None
                out(o2 or sa, _promote(da, db))
                return {"op": op, "args": [cnd, a, b]}
            out(o or sa, _promote(da, db))
            st = {"op": op, "args": [a, b]}
            if op == "where_s":
                st["args"] = [b, a]
                st["c"] = c
            return st
        return None
    if kind == "view":
        op = r.choice(VIEWS)
        if op in ("reshape_flat", "view_flat", "flatten"):
            if op == "flatten" and nd >= 2:
                s0 = r.randrange(nd)
                e0 = r.randrange(s0, nd)
                o = sa[:s0] + (int(np.prod(sa[s0:e0 + 1])),) + sa[e0 + 1:]
                return out(o, op=op, args=[a], s=s0, e=e0)
            return out((int(np.prod(sa)),), op=op, args=[a])
        if op == "reshape_rev":
            return out(tuple(reversed(sa)), op=op, args=[a])
        if op in ("view", "reshape"):
            tot = int(np.prod(sa))
            cands = [[tot], [1, tot], [tot, 1], list(reversed(sa)), list(sa) + [1]]
            if tot and tot % 2 == 0:
                cands += [[2, tot // 2], [-1, 2], [2, -1, 1]]
            if tot == 0:
                cands += [[0, 5], [3, 0, 2]]
            shape = r.choice(cands)
            o = [tot // max(1, int(np.prod([x for x in shape if x != -1]))) if x == -1 else x
                 for x in shape]
            return out(o, op=op, args=[a], shape=shape)
        if op in ("transpose", "t") or op == "transpose_d":
            if op == "t":
                if nd > 2:
                    return None
                return out(tuple(reversed(sa)), op=op, args=[a])
            if nd < 2 and op == "transpose":
                return None
            if op == "transpose":
                o = list(sa)
                o[0], o[-1] = o[-1], o[0]
                return out(o, op=op, args=[a])
            if nd == 0:
                return None
            d0, d1 = _dim(r, nd), _dim(r, nd)
            o = list(sa)
            o[_norm(d0, nd)], o[_norm(d1, nd)] = o[_norm(d1, nd)], o[_norm(d0, nd)]
            return out(o, op=op, args=[a], d0=d0, d1=d1)
        if op == "permute":
            p = list(range(nd))
            r.shuffle(p)
            return out([sa[i] for i in p], op=op, args=[a], p=p)
        if op == "movedim":
            if nd == 0:
                return None
            s0, d0 = r.randrange(nd), r.randrange(nd)
            p = [i for i in range(nd) if i != s0]
            p.insert(d0, s0)
            return out([sa[i] for i in p], op=op, args=[a], s=s0, d=d0)
        if op == "expand":
            o = [r.choice([2, 3]) if x == 1 and r.random() < 0.7 else (x if r.random() < 0.6 else -1)
                 for x in sa]
            if r.random() < 0.3:
                o = [2] + o
            shape = [sa[i - (len(o) - nd)] if x == -1 else x for i, x in enumerate(o)]
            return out(shape, op=op, args=[a], shape=o)
        if op == "squeeze":
            return out([x for x in sa if x != 1], op=op, args=[a])
        if op == "squeeze_d":
            if nd == 0:
                return None
            d = _dim(r, nd)
            o = list(sa)
            if o[_norm(d, nd)] == 1:
                del o[_norm(d, nd)]
            return out(o, op=op, args=[a], d=d)
        if op == "unsqueeze":
            d = r.randint(0, nd)
            return out(sa[:d] + (1,) + sa[d:], op=op, args=[a], d=d)
        if op == "none_idx":
            return out((1,) + sa, op=op, args=[a])
        if op == "slice0":
            if nd < 1 or sa[0] < 1:
                return None
            return out((sa[0] - 1,) + sa[1:], op=op, args=[a])
        if op == "step1":
            if nd < 2:
                return None
            return out((sa[0], (sa[1] + 1) // 2) + sa[2:], op=op, args=[a])
        if op == "select0":
            if nd < 1 or sa[0] < 1:
                return None
            return out(sa[1:], op=op, args=[a], i=r.randrange(sa[0]))
        if op == "index0":
            if nd < 1 or sa[0] < 1:
                return None
            idx = [r.randrange(sa[0]) for _ in range(r.randint(1, 4))]
            return out((len(idx),) + sa[1:], op=op, args=[a], idx=idx)
        if nd == 0:
            return None
        d = _dim(r, nd)
        dn = _norm(d, nd)
        m = sa[dn]
        if op == "narrow":
            st = r.randint(0, m)
            ln = r.randint(0, m - st)
            o = list(sa)
            o[dn] = ln
            return out(o, op=op, args=[a], d=d, start=st, length=ln)
        if op == "select":
            if m == 0:
                return None
            i = r.randrange(m) - (m if r.random() < 0.3 else 0)
            return out(sa[:dn] + sa[dn + 1:], op=op, args=[a], d=d, i=i)
        if op == "slice_d":
            lo = r.randint(0, m)
            hi = r.choice([None, r.randint(0, m)])
            stp = r.choice([1, 2, 3])
            o = list(sa)
            o[dn] = len(range(*slice(lo, hi, stp).indices(m)))
            return out(o, op=op, args=[a], d=dn, lo=lo, hi=hi, st=stp)
        if op == "diagonal":
            if nd < 2:
                return None
            off = r.randint(-1, 1)
            d1 = dn
            d2 = r.choice([i for i in range(nd) if i != d1])
            n1, n2 = sa[d1], sa[d2]
            ln = max(0, min(n1, n2 - off) if off >= 0 else min(n1 + off, n2))
            o = [x for i, x in enumerate(sa) if i not in (d1, d2)] + [ln]
            return out(o, op=op, args=[a], off=off, d1=d1, d2=d2)
        # multi-output views
        if op == "split":
            size = r.randint(1, 3)
            sizes = _split_sizes(m, size)
            extra = {"size": size}
        elif op == "split_list":
            if m == 0:
                sizes = [0]
            else:
                cut = sorted(r.randint(0, m) for _ in range(r.randint(0, 2)))
                sizes = [b - a_ for a_, b in zip([0] + cut, cut + [m])]
            extra = {"sizes": sizes}
        elif op == "chunk":
            k = r.randint(1, 4)
            sizes = [0] * k if m == 0 else _split_sizes(m, -(-m // k))
            extra = {"k": k}
        elif op == "unbind":
            sizes = [None] * m
            extra = {}
        elif op == "tensor_split":
            k = r.randint(1, 4)
            sizes = [m // k + (1 if i < m % k else 0) for i in range(k)]
            extra = {"k": k}
        else:  # tensor_split_idx
            idx = sorted(r.randint(0, m) for _ in range(r.randint(0, 2)))
            sizes = [b - a_ for a_, b in zip([0] + idx, idx + [m])]
            extra = {"idx": idx}
        for sz in sizes:
            o = list(sa)
            if sz is None:
                del o[dn]
            else:
                o[dn] = sz
            vals.append((tuple(o), da))
        return dict(op=op, args=[a], d=d, nout=len(sizes), **extra)
    if kind == "reduce":
        op = r.choice(REDUCE)
        if op in ("sum_all", "mean_all", "max_all", "var_all"):
            st = {"op": op, "args": [a]}
            if op == "var_all":
                st["corr"] = r.choice([0, 1])
            return out((), fdt if op in ("mean_all", "var_all") else da, **st)
        if nd == 0 and op not in ("softmax", "log_softmax", "cumsum", "cumprod", "amax", "amin"):
            return None
        d = _dim(r, max(nd, 1)) if nd else r.choice([0, -1])
        dn = _norm(d, max(nd, 1))
        keep = r.random() < 0.3
        red = sa[:dn] + ((1,) if keep else ()) + sa[dn + 1:]
        if op in ("softmax", "log_softmax", "cumsum", "cumprod"):
            return out(sa, fdt if op in ("softmax", "log_softmax") else da, op=op, args=[a], d=d)
        if op in ("amax", "amin") and nd >= 2 and r.random() < 0.4:
            ds = sorted(r.sample(range(nd), 2))
            o = [x for i, x in enumerate(sa) if i not in ds] if not keep else \
                [1 if i in ds else x for i, x in enumerate(sa)]
            return out(o, op=op, args=[a], d=ds, keep=keep)
        if op in ("max_dim", "min_dim"):
            vals.append((tuple(red), da))
            vals.append((tuple(red), I64))
            return {"op": op, "args": [a], "d": d, "keep": keep, "nout": 2}
        st = {"op": op, "args": [a], "d": d, "keep": keep}
        if op in ("var", "std"):
            st["corr"] = r.choice([0, 1])
        return out(red, fdt if op in ("mean_dim", "var", "std", "logsumexp") else da, **st)
    if kind == "matmul":
        kinds = ["mm_t", "mv", "matmul", "mm_c", "bmm", "matmul_c"]
        op = r.choice(kinds)
        if op in ("mm_c", "matmul_c"):
            if nd == 0 or (op == "mm_c" and nd != 2):
                return None
            k = r.choice([1, 2, 3])
            wdt = r.choice([F64, F32, da if da != I64 else F64])
            o = sa[:-1] + (k,) if nd >= 2 else (k,)
            return out(o, _promote(da, wdt), op=op, args=[a], k=k, wdt=wdt,
                       cs=r.randrange(1000))
        for _ in range(8):
            b = pick()
            sb, db = vals[b]
            if op == "mm_t" and len(sa) == 2 and len(sb) == 2 and sa[1] == sb[1]:
                return out((sa[0], sb[0]), _promote(da, db), op=op, args=[a, b])
            if op == "mv" and len(sa) == 2 and len(sb) == 1 and sa[1] == sb[0]:
                return out((sa[0],), _promote(da, db), op=op, args=[a, b])
            if op == "bmm" and len(sa) == 3 and len(sb) == 3:
                if sa[0] == sb[0] and sa[2] == sb[1]:
                    return out((sa[0], sa[1], sb[2]), _promote(da, db), op=op, args=[a, b])
                if sa[0] == sb[0] and sa[2] == sb[2]:
                    return out((sa[0], sa[1], sb[1]), _promote(da, db), op="bmm_t",
                               args=[a, b])
            if op == "matmul" and nd and sb:
                try:
                    o = np.matmul(np.empty(sa), np.empty(sb)).shape
                except ValueError:
                    continue
                return out(o, _promote(da, db), op=op, args=[a, b])
        return None
    if kind == "join":
        op = r.choice(["cat", "stack"])
        others = []
        for _ in range(r.randint(1, 3)):
            b = pick()
            sb, db = vals[b]
            if op == "stack" and sb == sa:
                others.append(b)
            if op == "cat" and (len(sb) == nd and nd and sb[1:] == sa[1:] or sb == (0,)):
                others.append(b)
        args = [a] + others
        dt = da
        for b in others:
            dt = _promote(dt, vals[b][1])
        if op == "stack":
            d = r.randint(0, nd)
            return out(sa[:d] + (len(args),) + sa[d:], dt, op=op, args=args, d=d)
        if nd == 0:
            return None
        o = list(sa)
        o[0] = sum(vals[b][0][0] for b in args if vals[b][0] != (0,) or sa == (0,))
        return out(o, dt, op=op, args=args, d=0)
    if kind == "flags":
        op = r.choice(FLAG_OPS + ["retain_grad"])
        return {"op": op, "args": [a]}
    if kind == "inplace":
        op = r.choice(INPLACE)
        st = {"op": op, "args": [a]}
        if op in ("add_", "sub_", "mul_t_", "copy_"):
            st["args"] = [a, pick()]
        elif op == "add_bcast_":
            # an operand that broadcasts to the target: a reduction of the target's shape
            st["keep"] = [r.random() < 0.5 for _ in sa]
            st["args"] = [a, pick()]
        elif op in ("mul_", "div_", "fill_"):
            st["c"] = c
        elif op == "clamp_":
            st["lo"], st["hi"] = sorted([round(r.uniform(-1.5, 1.5), 3) for _ in range(2)])
        elif op in ("setitem", "setitem_t", "setitem_b"):
            if not sa or sa[0] < 1:
                return None
            st["i"] = r.randrange(sa[0])
            if op == "setitem":
                st["c"] = c
            else:
                cands = [b for b in range(n) if _bcast(sa[1:], vals[b][0]) == sa[1:]]
                st["args"] = [a, r.choice(cands) if op == "setitem_b" and cands else pick()]
        elif op == "setitem_slice":
            if not sa:
                return None
            st.update(lo=r.randint(0, sa[0]), st=r.choice([1, 2]), c=c)
        elif op == "setitem_mask":
            st["c"] = c
        return st
    # detach
    return out(sa, op="detach" if r.random() < 0.8 else "clone_detach", args=[a])


# --- running --------------------------------------------------------------------------
def _const(lib, step, shape, dtype):
    rs = np.random.RandomState(step["cs"])
    return lib.tensor(rs.uniform(-1, 1, size=shape), dtype=getattr(lib, dtype))


def _apply(lib, step, v):
    op = step["op"]
    args = [v[i] for i in step["args"]]
    a = args[0]
    b = args[1] if len(args) > 1 else None
    c = step.get("c", 1.0)
    F = lib.nn.functional
    # pointwise
    if op == "neg":
        return -a
    if op == "tanh":
        return lib.tanh(a)
    if op == "sigmoid":
        return lib.sigmoid(a)
    if op == "sin":
        return lib.sin(a)
    if op == "cos":
        return a.cos()
    if op == "exp_t":
        return lib.exp(lib.tanh(a))
    if op == "exp":
        return a.exp()
    if op == "log":
        return lib.log(a)
    if op == "sqrt":
        return a.sqrt()
    if op == "log_s":
        return lib.log(a * a + 1.0)
    if op == "sqrt_s":
        return (a * a + 0.5).sqrt()
    if op == "relu":
        return lib.relu(a)
    if op == "abs":
        return a.abs()
    if op == "pow2":
        return a ** 2
    if op == "pow_s":
        return a.abs() ** abs(c)
    if op == "rpow":
        return 2.0 ** a
    if op == "rsub":
        return 1.0 - a
    if op == "clone":
        return a.clone()
    if op == "mul_s":
        return a * c
    if op == "add_s":
        return a + c
    if op == "add_int":
        return a + step["c"]
    if op == "mul_int":
        return step["c"] * a
    if op == "div_int":
        return a / 2
    if op == "clamp":
        return a.clamp(step["lo"], step["hi"])
    if op == "clamp_min":
        return lib.clamp(a, min=c)
    # binary
    if op == "add":
        return a + b
    if op == "sub":
        return lib.sub(a, b)
    if op == "sub_alpha":
        return lib.sub(a, b, alpha=2)
    if op == "mul":
        return a * b
    if op == "div_s":
        return a / (b * b + 0.5)
    if op == "div":
        return lib.div(a, b)
    if op == "maximum":
        return lib.maximum(a, b)
    if op == "minimum":
        return a.minimum(b)
    if op == "logaddexp":
        return lib.logaddexp(a, b)
    if op == "where":
        return lib.where(a > 0, b, args[2])
    if op == "where_s":
        return lib.where(a > 0, b, c)
    # views
    if op == "reshape_flat":
        return a.reshape(-1)
    if op == "view_flat":
        return a.view(-1)
    if op == "reshape_rev":
        return a.reshape(tuple(reversed(tuple(a.shape))))
    if op == "view":
        return a.view(*step["shape"]) if step["shape"] else a.view(step["shape"])
    if op == "reshape":
        return lib.reshape(a, step["shape"])
    if op == "flatten":
        return a.flatten(step.get("s", 0), step.get("e", -1))
    if op == "transpose":
        return a.transpose(0, a.dim() - 1)
    if op == "transpose_d":
        return lib.transpose(a, step["d0"], step["d1"])
    if op == "t":
        return a.t()
    if op == "permute":
        return a.permute(*step["p"]) if step["p"] else a.permute(step["p"])
    if op == "movedim":
        return lib.movedim(a, step["s"], step["d"])
    if op == "expand":
        return a.expand(*step["shape"]) if step["shape"] else a.expand(step["shape"])
    if op == "squeeze":
        return a.squeeze()
    if op == "squeeze_d":
        return lib.squeeze(a, step["d"])
    if op == "unsqueeze":
        return a.unsqueeze(step["d"])
    if op == "none_idx":
        return a[None]
    if op == "slice0":
        return a[1:]
    if op == "step1":
        return a[:, ::2]
    if op == "select0":
        return a[step["i"]]
    if op == "index0":
        return a[lib.tensor(step["idx"])]
    if op == "narrow":
        return a.narrow(step["d"], step["start"], step["length"])
    if op == "select":
        return a.select(step["d"], step["i"])
    if op == "slice_d":
        return a[(slice(None),) * step["d"] + (slice(step["lo"], step["hi"], step["st"]),)]
    if op == "diagonal":
        return lib.diagonal(a, step["off"], step["d1"], step["d2"])
    if op == "split":
        return a.split(step["size"], step["d"])
    if op == "split_list":
        return lib.split(a, step["sizes"], step["d"])
    if op == "chunk":
        return a.chunk(step["k"], step["d"])
    if op == "unbind":
        return a.unbind(step["d"])
    if op == "tensor_split":
        return lib.tensor_split(a, step["k"], step["d"])
    if op == "tensor_split_idx":
        return a.tensor_split(step["idx"], step["d"])
    # reductions
    if op == "sum_all":
        return a.sum()
    if op == "mean_all":
        return a.mean()
    if op == "max_all":
        return a.max()
    if op == "var_all":
        return a.var(correction=step["corr"])
    if op == "sum_dim":
        return a.sum(step["d"], keepdim=step["keep"])
    if op == "mean_dim":
        return lib.mean(a, step["d"], keepdim=step["keep"])
    if op == "amax":
        return a.amax(step["d"], keepdim=step["keep"])
    if op == "amin":
        return lib.amin(a, step["d"], keepdim=step["keep"])
    if op == "max_dim":
        return tuple(a.max(step["d"], keepdim=step["keep"]))
    if op == "min_dim":
        return tuple(lib.min(a, step["d"], keepdim=step["keep"]))
    if op == "var":
        return a.var(step["d"], keepdim=step["keep"], correction=step["corr"])
    if op == "std":
        return lib.std(a, step["d"], keepdim=step["keep"], correction=step["corr"])
    if op == "logsumexp":
        return a.logsumexp(step["d"], keepdim=step["keep"])
    if op == "prod_dim":
        return a.prod(step["d"], keepdim=step["keep"])
    if op == "softmax":
        return F.softmax(a, step["d"])
    if op == "log_softmax":
        return F.log_softmax(a, dim=step["d"])
    if op == "cumsum":
        return a.cumsum(step["d"])
    if op == "cumprod":
        return lib.cumprod(a, step["d"])
    # matmul
    if op == "mm_t":
        return lib.mm(a, b.t())
    if op == "mv":
        return lib.matmul(a, b)
    if op == "matmul":
        return a @ b
    if op == "bmm":
        return lib.bmm(a, b)
    if op == "bmm_t":
        return a.bmm(b.transpose(1, 2))
    if op == "mm_c":
        return a.mm(_const(lib, step, (a.shape[-1], step["k"]), step["wdt"]))
    if op == "matmul_c":
        return lib.matmul(a, _const(lib, step, (a.shape[-1], step["k"]), step["wdt"]))
    if op == "cat":
        return lib.cat(args, step["d"])
    if op == "stack":
        return lib.stack(args, dim=step["d"])
    # in place and flags
    if op == "add_":
        a.add_(b)
    elif op == "add_bcast_":
        dims = [i for i, k in enumerate(step["keep"]) if not k]
        a.add_(b.sum() if not dims or b.dim() != len(step["keep"])
               else b.sum(dims, keepdim=True))
    elif op == "sub_":
        a.sub_(b, alpha=0.5)
    elif op == "mul_":
        a.mul_(c)
    elif op == "mul_t_":
        a.mul_(b)
    elif op == "div_":
        a.div_(c)
    elif op == "copy_":
        a.copy_(b)
    elif op == "fill_":
        a.fill_(c)
    elif op == "zero_":
        a.zero_()
    elif op == "clamp_":
        a.clamp_(step["lo"], step["hi"])
    elif op == "exp_":
        a.exp_()
    elif op == "tanh_":
        a.tanh_()
    elif op == "sigmoid_":
        a.sigmoid_()
    elif op == "setitem":
        a[step["i"]] = c
    elif op == "setitem_t":
        a[step["i"]] = b.sum()
    elif op == "setitem_b":
        a[step["i"]] = b
    elif op == "setitem_slice":
        a[step["lo"]::step["st"]] = c
    elif op == "setitem_mask":
        a[a > 0] = c
    elif op == "retain_grad":
        a.retain_grad()
    elif op == "requires_grad_":
        a.requires_grad_()
    elif op == "requires_grad_false":
        a.requires_grad_(False)
    elif op == "detach":
        return a.detach()
    elif op == "clone_detach":
        return a.clone().detach()
    else:
        raise ValueError(f"unknown step {op}")
    return None


def _leaf_values(program):
    rs = np.random.RandomState(program["seed"] % (2 ** 32))
    out = []
    for l in program["leaves"]:
        dt = l.get("dtype", F64)
        if dt == I64:
            out.append(rs.randint(-3, 4, size=tuple(l["shape"])).astype(np.int64))
        else:
            out.append(rs.uniform(-1.5, 1.5, size=tuple(l["shape"])).astype(dt))
    return out


def _error(e):
    """An exception as compared: its type and the leading text of its first line."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0] if lines else ''}"


def _tensor_record(t):
    t = t.detach()
    try:
        a = np.asarray(t.numpy())
    except RuntimeError:  # PyTorch's ZeroTensor (an unused input's gradient) needs force
        a = np.asarray(t.numpy(force=True))
    return {"shape": list(a.shape), "dtype": str(a.dtype),
            "data": a.astype(np.float64).tolist()}


def _n_out(step):
    if step["op"] in NO_OUTPUT:
        return 0
    return step.get("nout", 1)


def run(lib, program):
    """Run ``program`` with ``lib`` (dyngrad or torch); everything the comparison looks at."""
    v = []
    for arr, l in zip(_leaf_values(program), program["leaves"]):
        t = lib.tensor(arr, dtype=getattr(lib, l.get("dtype", F64)))
        if l["rg"]:
            t.requires_grad_(True)
        v.append(t)
    leaves = list(v)
    errors = []
    for k, step in enumerate(program["steps"]):
        res = None
        nout = _n_out(step)
        if any(v[i] is None for i in step["args"]):
            err = "skipped"
        else:
            err = None
            try:
                if step.get("ng"):
                    with lib.no_grad():
                        res = _apply(lib, step, v)
                else:
                    res = _apply(lib, step, v)
            except Exception as e:  # noqa: BLE001 - compared by type and message
                err = _error(e)
        if err is not None:
            errors.append([k, err])
        if nout == 0:
            continue
        if step["op"] in MULTI:
            res = list(res) if err is None else []
            if err is None and len(res) != nout:
                errors.append([k, f"outputs: {len(res)}"])
            res = (res + [None] * nout)[:nout]
            v.extend(res)
        else:
            v.append(res if err is None else None)
    # the loss: weighted sums of some values
    rs = np.random.RandomState(program["seed"] % (2 ** 32) + 1)
    loss = None
    for n, i in enumerate(program["loss"]):
        t = v[i] if i < len(v) else None
        if t is None:
            continue
        wdt = lib.float64 if n % 2 == 0 or not t.is_floating_point() else t.dtype
        w = lib.tensor(rs.uniform(-1, 1, size=tuple(t.shape)), dtype=wdt)
        try:
            term = (t * w).sum()
        except Exception as e:  # noqa: BLE001 - e.g. a multi-output view modified in place
            errors.append([f"loss {i}", _error(e)])
            continue
        loss = term if loss is None else loss + term
    out = {"errors": errors, "values": [], "grads": []}
    double = program.get("mode") == "double"
    if loss is None or not loss.requires_grad:
        out["backward_error"] = "no_graph"
    elif not double:
        try:
            loss.backward()
            out["backward_error"] = None
        except Exception as e:  # noqa: BLE001
            out["backward_error"] = _error(e)
    else:
        out["backward_error"], out["first"] = _double(lib, loss, leaves)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # .grad of a non-leaf
        for t in v:
            if t is None:
                out["values"].append(None)
                continue
            d = _tensor_record(t)
            try:
                fn = t.grad_fn
                d.update(rg=bool(t.requires_grad), leaf=bool(t.is_leaf),
                         grad_fn=None if fn is None else type(fn).__name__)
                if fn is not None:  # the node's edges: names of the next nodes, input numbers
                    d["next"] = [[None if n is None else type(n).__name__, nr]
                                 for n, nr in fn.next_functions]
            except Exception as e:  # noqa: BLE001 - PyTorch refuses some views' metadata lazily
                d.update(rg=None, leaf=None, grad_fn="error:" + _error(e))
            g = t.grad
            d["grad"] = None if g is None else _tensor_record(g)
            out["values"].append(d)
        for t in leaves:
            g = t.grad if t.is_leaf else None
            out["grads"].append(None if g is None else _tensor_record(g))
    return out


def _double(lib, loss, leaves):
    """First derivatives with create_graph=True, then backward through them."""
    rg = [t for t in leaves if t.requires_grad]
    try:
        gs = lib.autograd.grad(loss, rg, create_graph=True, allow_unused=True)
    except Exception as e:  # noqa: BLE001
        return "grad: " + _error(e), None
    first = []
    s = None
    for g in gs:
        if g is None:
            first.append(None)
            continue
        d = _tensor_record(g)
        d["rg"] = bool(g.requires_grad)
        d["grad_fn"] = None if g.grad_fn is None else type(g.grad_fn).__name__
        first.append(d)
        if g.requires_grad:
            term = (g * g).sum()
            s = term if s is None else s + term
    if s is None:
        return "no_second_graph", first
    try:
        s.backward()
    except Exception as e:  # noqa: BLE001
        return "second: " + _error(e), first
    return None, first


# --- comparison -----------------------------------------------------------------------
def _lead(err):
    """The part of an error that must match PyTorch: its type and the first line of its
    message, less the deliberate differences:

    - the version error names the tensor as ``[torch.FloatTensor [3, 4]], which is output 0
      of XBackward0, is at version 1; ...``; dyngrad words that part its own way and adds the
      line that made the tensor and a fix, so only the sentence before `` [`` / ``: [`` counts;
    - anything after ``Hint:`` is advice, not the error;
    - PyTorch's internal assertions name its C++ source file and ask for a bug report, where
      dyngrad says what went wrong: only the assertion, to ``INTERNAL ASSERT FAILED``, counts.
    """
    if err is None or ":" not in err:
        return err
    typ, msg = err.split(":", 1)
    msg = msg.strip()
    if "INTERNAL ASSERT FAILED" in msg:
        msg = msg[:msg.index("INTERNAL ASSERT FAILED") + len("INTERNAL ASSERT FAILED")]
    for cut in ("Hint:", ": [", " [torch."):
        i = msg.find(cut)
        if i > 0:
            msg = msg[:i]
    return f"{typ}: {msg.strip()}"


def _tol(dtype, rtol, atol):
    if dtype in ("float32", "float16", "bfloat16"):
        return max(rtol, 1e-4), max(atol, 1e-5)
    return rtol, atol


def _same_tensor(g, e, rtol, atol):
    """None when the two tensor records agree, else what differs."""
    if g["shape"] != e["shape"]:
        return f"shape {g['shape']} vs {e['shape']}"
    if g["dtype"] != e["dtype"]:
        return f"dtype {g['dtype']} vs {e['dtype']}"
    rt, at = _tol(e["dtype"], rtol, atol)
    if not np.allclose(g["data"], e["data"], rtol=rt, atol=at, equal_nan=True):
        return "values differ"
    return None


def compare(got, exp, rtol=1e-7, atol=1e-9):
    """A list of differences between two ``run`` results (empty when they agree).

    Tolerances follow the dtype: float32 values within rtol 1e-4; and when a program
    computes anything in float32, its float64 results (computed from rounded float32 values)
    get the same tolerance.  Error messages are compared by ``_lead``."""
    if any(e is not None and e["dtype"] == "float32" for e in exp["values"]):
        rtol, atol = _tol("float32", rtol, atol)
    diffs = []
    ge = [[k, _lead(m)] for k, m in got["errors"]]
    ee = [[k, _lead(m)] for k, m in exp["errors"]]
    if ge != ee:
        gd, ed = dict(map(tuple, ge)), dict(map(tuple, ee))
        for k in sorted(set(gd) | set(ed), key=lambda k: (isinstance(k, str), str(k).zfill(6))):
            if gd.get(k) != ed.get(k):
                diffs.append(f"step {k} error: {gd.get(k)} vs {ed.get(k)}")
    gb, eb = _lead(got["backward_error"]), _lead(exp["backward_error"])
    if gb != eb:
        diffs.append(f"backward error: {gb} vs {eb}")
    if len(got["values"]) != len(exp["values"]):
        diffs.append("number of values differs")
        return diffs
    for i, (g, e) in enumerate(zip(got["values"], exp["values"])):
        if (g is None) != (e is None):
            diffs.append(f"v{i}: {g is None} vs {e is None} missing")
            continue
        if g is None:
            continue
        bad = _same_tensor(g, e, rtol, atol)
        if bad:
            diffs.append(f"v{i}: {bad}")
        for key, name in (("rg", "requires_grad"), ("leaf", "is_leaf"), ("grad_fn", "grad_fn")):
            gk, ek = g.get(key), e.get(key)
            if key == "grad_fn":
                gk, ek = _lead(gk), _lead(ek)
            if gk != ek:
                diffs.append(f"v{i}: {name} {g[key]} vs {e[key]}")
        if "next" in e and "next" in g and _lead(g.get("grad_fn")) == _lead(e.get("grad_fn")) \
                and [list(x) for x in g["next"]] != [list(x) for x in e["next"]]:
            diffs.append(f"v{i}: next_functions {g['next']} vs {e['next']}")
        if (g["grad"] is None) != (e["grad"] is None):
            diffs.append(f"v{i}: .grad is None: {g['grad'] is None} vs {e['grad'] is None}")
        elif e["grad"] is not None:
            bad = _same_tensor(g["grad"], e["grad"], rtol, atol)
            if bad:
                diffs.append(f"v{i}: .grad {bad}")
    for i, (g, e) in enumerate(zip(got["grads"], exp["grads"])):
        if (g is None) != (e is None):
            diffs.append(f"leaf {i}: grad is None: {g is None} vs {e is None}")
        elif g is not None:
            bad = _same_tensor(g, e, rtol, atol)
            if bad:
                diffs.append(f"leaf {i}: grad {bad}")
    for i, (g, e) in enumerate(zip(got.get("first") or [], exp.get("first") or [])):
        if (g is None) != (e is None):
            diffs.append(f"first derivative {i}: None {g is None} vs {e is None}")
        elif g is not None:
            bad = _same_tensor(g, e, rtol, atol)
            # not the grad_fn: a first derivative's graph is made of the ops its backward
            # formula uses (docs/engine.md), not of PyTorch's fused *BackwardBackward nodes
            if bad or g["rg"] != e["rg"]:
                diffs.append(f"first derivative {i}: {bad or ''} rg {g['rg']}/{e['rg']}")
    if (got.get("first") is None) != (exp.get("first") is None):
        diffs.append("first derivatives missing on one side")
    return diffs


def describe(program):
    """The program as readable Python-like lines (for failure messages)."""
    lines = [f"# seed {program['seed']} mode {program.get('mode', 'backward')}"]
    for i, l in enumerate(program["leaves"]):
        lines.append(f"v{i} = leaf{tuple(l['shape'])} {l.get('dtype', F64)} "
                     f"requires_grad={l['rg']}")
    n = len(program["leaves"])
    for k, s in enumerate(program["steps"]):
        extra = {kk: vv for kk, vv in s.items() if kk not in ("op", "args")}
        no = _n_out(s)
        lhs = ", ".join(f"v{n + j}" for j in range(no)) + " = " if no else ""
        n += no
        lines.append(f"[{k}] {lhs}{s['op']}({', '.join(f'v{i}' for i in s['args'])}) "
                     f"{extra or ''}")
    lines.append(f"loss = weighted sum of {['v%d' % i for i in program['loss']]}")
    return "\n".join(lines)
