"""``optimizer.step()`` and ``zero_grad()`` in a captured program.

A step is one instruction.  SGD, Adam and AdamW run natively: NumPy updates over the replay's
parameter and gradient arrays, the same arithmetic as their eager ``step`` (SGD's plain update
inline in the generated code), with the param group's hyperparameters (lr, momentum, betas,
weight_decay...) read from the group at every call, so a scheduler changing them takes effect.
Any other optimizer's instruction calls its own eager ``step()`` on the live tensors.
"""
from __future__ import annotations


import numpy as np

from .._tensor import Tensor
from ..optim.adam import Adam, AdamW, adam_group
from ..optim.optimizer import _CHUNK
from ..optim.sgd import SGD, sgd_group
from .. import _dtype as D
from . import capture as C
from .program import Instr, Ref

_make = Tensor._make


# --- the updates, as the eager steps compute them -----------------------------------------
def sgd_update(opt, group, params, grads) -> None:
    """SGD.step over ``params`` with gradient arrays ``grads`` (SGD's own group update)."""
    sgd_group(opt.state, group, _items(group, params, grads))


def _items(group, params, grads):
    """``(p, data, gradient)`` as ``Optimizer._grads`` yields them, for the replay's gradient
    arrays: negated under ``maximize``, the version counted up after the update."""
    maximize = group["maximize"]
    for p, g in zip(params, grads):
        yield p, p._data, (-g if maximize else g)
        p._vc[0] += 1


def adam_update(opt, group, params, grads) -> None:
    """Adam.step (and AdamW's) over ``params`` with gradient arrays ``grads`` (Adam's own
    group update)."""
    adam_group(opt, group, _items(group, params, grads))


def run_step_hooks(opt) -> None:
    for h in list(opt._step_hooks):
        h(opt, (), {})


def eager_step(opt) -> None:
    """Another optimizer: its own step on the live tensors."""
    opt.step()


_NATIVE = {SGD: sgd_update, Adam: adam_update, AdamW: adam_update}


# --- generated code ----------------------------------------------------------------------
def _grad_expr(em, p, src):
    if type(src) is Ref:
        return f"b{src.i}"
    return f"{em.const(p, 'T')}._grad._data"


def _step_codegen(ins, em):
    opt, groups, flag = ins.args
    on = em.const(opt, "O")
    ind = "        "
    lines = []
    if flag:
        lines.append(f"{ind}{on}._opt_called = True")
    update = _NATIVE[type(opt)]
    for group, pairs in groups:
        if not pairs:
            continue
        gn = em.const(group, "G")
        ps = "(" + ", ".join(em.const(p, "T") for p, _ in pairs) + ",)"
        gs = "(" + ", ".join(_grad_expr(em, p, s) for p, s in pairs) + ",)"
        general = f"{em.const(update, 'f')}({on}, {gn}, {ps}, {gs})"
        fast = [] if update is not sgd_update else _sgd_fast(em, gn, pairs)
        if not fast:
            lines.append(ind + general)
            continue
        lines.append(f"{ind}_lr = {gn}['lr']")
        lines.append(f"{ind}if {gn}['momentum'] != 0 or {gn}['weight_decay'] != 0 or "
                     f"{gn}['maximize'] or type(_lr) is not float or _lr == 1:")
        lines.append(f"{ind}    {general}")
        lines.append(f"{ind}else:")
        lines.extend(f"{ind}    {x}" for x in fast)
    lines.append(f"{ind}if {on}._step_hooks:")
    lines.append(f"{ind}    {em.const(run_step_hooks, 'f')}({on})")
    return lines


def _sgd_fast(em, gn, pairs):
    """``d -= f(lr) * g`` as ``_sub_scaled_`` computes it for small arrays, into a scratch
    buffer, with ``f(lr)`` (a float ``lr`` rounded to the dtype) held in a 0-d array: only for
    gradients the program holds in its own buffers."""
    out = []
    scal = {}
    for p, src in pairs:
        d = p._data
        if type(src) is not Ref or d.dtype not in D.FLOATING or d.dtype == D.BF16 or \
                d.size >= 4 * _CHUNK or not d.flags.c_contiguous:
            return []
        b = em.program.buffers[src.i]
        if b.shape != d.shape or b.dtype != d.dtype:
            return []
        key = d.dtype
        if key not in scal:   # lr rounded to the dtype, in a 0-d array (a cheaper operand)
            sn = scal[key] = em.const(np.zeros((), d.dtype), "Z")
            out.append(f"{sn}[()] = _lr")
        tmp = em.const(np.empty_like(d), "S")
        pn = em.const(p, "T")
        dn = em.const(d, "P")
        out.append(f"np.multiply(b{src.i}, {scal[key]}, out={tmp})")
        out.append(f"np.subtract({dn}, {tmp}, out={dn})")
        out.append(f"{pn}._vc[0] += 1")
    return out


def _zero_codegen(ins, em):
    params, set_to_none = ins.args
    ind = "        "
    if set_to_none:
        return [f"{ind}{em.const(p, 'T')}._grad = None" for p in params]
    out = []
    for p in params:
        tn = em.const(p, "T")
        out.append(f"{ind}{tn}._grad._data[...] = 0")
        out.append(f"{ind}{tn}._grad._vc[0] += 1")
    return out


class _Step:
    """The callable of a step instruction (its ``codegen`` writes the replay's lines)."""

    def __init__(self, codegen):
        self.codegen = codegen

    def __call__(self, *a, **k):  # run through the generated code only
        raise RuntimeError("a step instruction runs through its generated code")


STEP = _Step(_step_codegen)
ZERO = _Step(_zero_codegen)


# --- what the capture swaps in ---------------------------------------------------------------
def _group_guard(cap, opt):
    if id(opt) in cap.optimizers:
        return
    cap.optimizers[id(opt)] = opt
    on = f"O{id(opt)}"
    consts = {on: opt}
    # (the lists read once each, bound by name: one condition holds all of it)
    conds = [f"len(_pg{id(opt)} := {on}.param_groups) == {len(opt.param_groups)}"]
    for gi, g in enumerate(opt.param_groups):
        gn = f"G{id(g)}"
        consts[gn] = g
        ps = f"_ps{id(g)}"
        conds.append(f"_pg{id(opt)}[{gi}] is {gn}")
        conds.append(f"len({ps} := {gn}['params']) == {len(g['params'])}")
        for k, p in enumerate(g["params"]):
            pn = f"T{id(p)}"
            consts[pn] = p
            conds.append(f"{ps}[{k}] is {pn}")
    st = opt.__dict__.get("step")
    sn = f"S{id(opt)}"
    consts[sn] = st
    conds.append(f"{on}.__dict__.get('step') is {sn}")
    ng = len(opt.param_groups)
    words = (f"{type(opt).__name__} has the same {ng} param group{'s' if ng != 1 else ''} "
             f"holding the same {sum(len(g['params']) for g in opt.param_groups)} parameters, "
             f"and its step is not replaced")
    cap.extra_guards.append((" and ".join(conds), lambda a, k, o=opt:
                             f"the param groups of {type(o).__name__} changed", consts, words))


def step_begin(cap, opt, closure):
    cap.steps_seen = getattr(cap, "steps_seen", 0) + 1
    if cap.failed is not None or cap.internal or cap.stack:
        cap.internal += 1
        cap.step_open = (opt, None, None)
        return
    if closure is not None:
        cap.fail("optimizer.step(closure) is not captured")
    inst = opt.__dict__.get("step")
    flag = inst is not None and getattr(inst, "_wrapped_by_lr_sched", False)
    if inst is not None and not flag:
        cap.fail("optimizer.step was replaced on the optimizer object")
    _group_guard(cap, opt)
    groups = []
    for g in opt.param_groups:
        pairs = []
        for p in g["params"]:
            cap.touch_grad(p)
            if p._grad is None:
                continue
            j = cap.grad_buf.get(id(p))
            if j is None:
                if p._grad._grad_fn is not None:
                    cap.fail("a .grad with a history")
                src = None
            else:
                src = Ref(j)
            pairs.append((p, src))
        groups.append((g, pairs))
    cap.internal += 1
    cap.step_open = (opt, groups, flag)


def step_end(cap, opt):
    opened = cap.step_open
    cap.step_open = None
    cap.internal -= 1
    if opened is None or opened[1] is None or cap.failed is not None:
        return
    _, groups, flag = opened
    for _g, pairs in groups:
        for p, _src in pairs:
            cap.bumped(p)   # the update changes each parameter that has a gradient
    if type(opt) in _NATIVE:
        cap.emit_phase(Instr(f"{type(opt).__name__}.step", STEP, (opt, groups, flag),
                             mode="effect"), "optimizer")
    else:  # (the gradients it reads are written to .grad before it: see _elide_grads)
        cap.emit_phase(Instr("eager_step", eager_step, (opt,), mode="effect"), "optimizer")


def closure_wrapper(cap, orig):
    def _closure(self, closure):
        if C.ACTIVE[0] is cap:
            step_begin(cap, self, closure)
        return orig(self, closure)
    return _closure


def stepped_wrapper(cap, orig):
    def _stepped(self, loss):
        if C.ACTIVE[0] is cap and cap.step_open is not None and cap.step_open[0] is self:
            step_end(cap, self)
        return orig(self, loss)
    return _stepped


def step_wrapper(cap, orig):
    def step(self, *args, **kwargs):
        if C.ACTIVE[0] is not cap:
            return orig(self, *args, **kwargs)
        seen = getattr(cap, "steps_seen", 0)
        r = orig(self, *args, **kwargs)
        if getattr(cap, "steps_seen", 0) == seen:
            cap.fail(f"{type(self).__name__}.step is not captured")
        return r
    step.__wrapped__ = orig
    return step


def zero_grad(cap, params, set_to_none, owner):
    """Record ``zero_grad`` of ``params`` (an optimizer's or a module's)."""
    if C.ACTIVE[0] is not cap or cap.failed is not None or cap.internal or cap.stack:
        return
    if not isinstance(owner, Tensor) and hasattr(owner, "param_groups"):
        _group_guard(cap, owner)
    ps = []
    for p in params:
        if set_to_none and id(p) not in cap.grad_entry:
            # .grad becomes None whatever it was: the program needs no guard on it
            cap.grad_entry[id(p)] = (p, None)
            ps.append(p)
            continue
        cap.touch_grad(p)
        if p._grad is None:
            continue
        if p._grad._grad_fn is not None:
            cap.fail("zero_grad of a .grad with a history")
        ps.append(p)
        if set_to_none:
            cap.grad_buf.pop(id(p), None)
    cap.emit_phase(Instr("zero_grad", ZERO, (tuple(ps), bool(set_to_none)), mode="effect"),
                   "optimizer")


def zero_grad_wrapper(cap, orig):
    def zg(self, set_to_none=True):
        zero_grad(cap, [p for g in self.param_groups for p in g["params"]], set_to_none, self)
        return orig(self, set_to_none)
    return zg
