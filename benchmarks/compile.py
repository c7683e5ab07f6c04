"""Compiled training steps: dyngrad.compile against dyngrad eager, the hand-written NumPy step
(the floor), PyTorch eager and, when asked, torch.compile, on the suite's workloads.

    python -m benchmarks.compile [--torch-compile] [--backend numba] [--only KEY ...]
                                 [--json out.json]

Each step is forward, backward and (where the workload trains) the SGD update and zero_grad;
the MLP and conv steps take their batch as arguments, cycling over the workload's batches, as
a compiled training step is written.  Before timing, the compiled step runs the same steps as
an eager copy and their losses and parameters are compared.  Goals (issue 16): compiled within
1.1x of the NumPy floor on tiny-chain, mininet-step and digits-mlp-step and faster than
torch.compile's steady state there; capture (the first call) under 50 ms; conv-step and
rnn-unroll compiled at least 1.5x faster than eager.  Times are the minimum over repeats of
the median of a block of steps, after warm-up.  ``--backend numba`` also times
``dyngrad.compile(step, backend="numba")`` (the optional numba backend, docs/compile.md); its
capture time includes numba's compiling of the kernels.  ``--torch-compile`` times PyTorch's
``torch.compile`` twice: of the step as written (``torch compiled``; dynamo's graph breaks at
``loss.backward()`` and around ``optimizer.step()``), and, for the three floor workloads, of
the same step written with ``torch.func`` under ``fullgraph=True``, forward, backward and
update in one graph (``torch.func compiled``, see ``func_step_of``)."""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks import workloads as W  # noqa: E402
from benchmarks.spec import SEED  # noqa: E402

KEYS = ("tiny-chain", "mininet-step", "digits-mlp-step", "conv-step", "rnn-unroll")
FLOOR_GOAL = {"tiny-chain": 1.1, "mininet-step": 1.1, "digits-mlp-step": 1.1}
SPEEDUP_GOAL = {"conv-step": 1.5, "rnn-unroll": 1.5}
CAPTURE_GOAL_S = 0.05


def _data(key):
    return W.WORKLOADS[key].init(np.random.default_rng(SEED))


def step_of(key, T, d):
    """``(step, args_for(i))``: the workload's training step for library ``T`` as a function of
    its inputs, and the inputs of step ``i``."""
    impl = W.WORKLOADS[key].framework(T, d)
    if key in ("digits-mlp-step", "conv-step"):
        xs, ys = impl.xs, impl.ys
        if key == "digits-mlp-step":
            def forward(x):
                return impl.net(x)
        else:
            F = impl.F

            def forward(x):
                h = F.max_pool2d(F.relu(impl.c1(x)), 2)
                h = F.max_pool2d(F.relu(impl.c2(h)), 2)
                return impl.fc(h.reshape(h.shape[0], -1))

        def step(x, y):
            loss = T.nn.functional.cross_entropy(forward(x), y)
            loss.backward()
            impl.opt.step()
            impl.opt.zero_grad()
            return loss

        return step, (lambda i: (xs[i % len(xs)], ys[i % len(ys)])), impl
    if key == "mininet-step":
        def step():
            loss = impl.forward_backward()
            impl.update()
            return loss
    else:  # tiny-chain, rnn-unroll: gradients accumulate, as the workloads do
        def step():
            return impl.forward_backward()
    return step, (lambda i: ()), impl


def func_step_of(key, torch, d):
    """``(step, args_for(i))``: the workload's step for PyTorch written with ``torch.func`` so
    that ``torch.compile(fullgraph=True)`` takes it whole as one graph (forward, backward and
    the update; ``loss.backward()`` and ``optimizer.step()`` break dynamo's graph): the
    gradients and loss from ``torch.func.grad_and_value`` of the loss of the module's
    parameters, then SGD's update ``p += -lr * g`` in place (``_foreach_add_``, as
    ``torch.optim.SGD`` runs it), or (tiny-chain) the
    gradients added into accumulators, as the workload does."""
    from torch.func import functional_call, grad_and_value
    impl = W.WORKLOADS[key].framework(torch, d)
    F = torch.nn.functional
    if key == "tiny-chain":
        acc = [torch.zeros_like(impl.a), torch.zeros_like(impl.b)]

        def loss_fn(a, b):
            return torch.tanh(a * b).sum()
        gv = grad_and_value(loss_fn, argnums=(0, 1))

        def step():
            (ga, gb), loss = gv(impl.a.detach(), impl.b.detach())
            acc[0].add_(ga)
            acc[1].add_(gb)
            return loss
        return step, (lambda i: ())
    if key == "mininet-step":
        mods = {"l1": impl.l1, "l2": impl.l2}
        net = torch.nn.ModuleDict(mods)
        x, y = impl.x, impl.y

        def loss_fn(params):
            def lin(name, h):
                return F.linear(h, params[f"{name}.weight"], params[f"{name}.bias"])
            out = torch.tanh(lin("l2", torch.tanh(lin("l1", x))))
            return ((out - y) ** 2).sum()
        args_for = (lambda i: ())
    elif key == "digits-mlp-step":
        net = impl.net
        xs, ys = impl.xs, impl.ys

        def loss_fn(params, x, y):
            return F.cross_entropy(functional_call(net, params, (x,)), y)
        args_for = (lambda i: (xs[i % len(xs)], ys[i % len(ys)]))
    else:
        raise KeyError(key)
    params = dict(net.named_parameters())
    gv = grad_and_value(loss_fn)
    lr = W.LR

    plist = list(params.values())

    def step(*xy):
        grads, loss = gv(params, *xy)
        with torch.no_grad():   # (SGD's foreach update; a loop of add_ compiles wrongly here)
            torch._foreach_add_(plist, [grads[k] for k in params], alpha=-lr)
        return loss.detach()
    return step, args_for


def _time(fn, args_for, block, repeats):
    """Minimum over ``repeats`` of the median step time of a block of ``block`` steps."""
    best = float("inf")
    i = 0
    for _ in range(repeats):
        ts = []
        for _ in range(block):
            a = args_for(i)
            i += 1
            t0 = time.perf_counter()
            fn(*a)
            ts.append(time.perf_counter() - t0)
        best = min(best, sorted(ts)[len(ts) // 2])
    return best


def _floor(key, d, block, repeats):
    impl = W.WORKLOADS[key].numpy(d)
    for _ in range(3):
        impl.step()
    return _time(impl.step, lambda i: (), block, repeats)


def _agree(T, key, d, steps=5, backend=None):
    """Largest difference between ``steps`` compiled and eager steps (losses and parameters)."""
    eager, args_e, ie = step_of(key, T, d)
    comp, args_c, ic = step_of(key, T, d)
    comp = T.compile(comp, backend=backend)
    worst = 0.0
    for i in range(steps):
        le, lc = eager(*args_e(i)), comp(*args_c(i))
        worst = max(worst, abs(float(le.item()) - float(lc.item())))
    for pe, pc in zip(ie.params(), ic.params()):
        worst = max(worst, float(np.max(np.abs(pe.detach().numpy() - pc.detach().numpy()))))
        if pe.grad is not None or pc.grad is not None:
            worst = max(worst, float(np.max(np.abs(pe.grad.numpy() - pc.grad.numpy()))))
    return worst


def measure(key, libs, torch_compile, block, repeats, backends=()):
    d = _data(key)
    out = {"numpy": _floor(key, d, block, repeats)}
    for name, T in libs.items():
        step, args_for, _ = step_of(key, T, d)
        for i in range(3):
            step(*args_for(i))
        out[f"{name} eager"] = _time(step, args_for, block, repeats)
        if name == "dyngrad" or torch_compile:
            cstep, cargs, _ = step_of(key, T, d)
            compiled = T.compile(cstep)
            t0 = time.perf_counter()
            compiled(*cargs(0))
            out[f"{name} capture"] = time.perf_counter() - t0
            for i in range(1, 4):
                compiled(*cargs(i))
            out[f"{name} compiled"] = _time(compiled, cargs, block, repeats)
        if name == "torch" and torch_compile and key in FLOOR_GOAL:
            import torch._dynamo
            torch._dynamo.reset()
            fstep, fargs = func_step_of(key, T, d)
            compiled = T.compile(fstep, fullgraph=True)
            t0 = time.perf_counter()
            compiled(*fargs(0))
            out["torch.func capture"] = time.perf_counter() - t0
            for i in range(1, 4):
                compiled(*fargs(i))
            out["torch.func compiled"] = _time(compiled, fargs, block, repeats)
            torch._dynamo.reset()
            fstep, fargs = func_step_of(key, T, d)
            compiled = T.compile(fstep, fullgraph=True)
            estep, eargs, _ = step_of(key, T, d)
            out["torch.func agreement"] = max(
                abs(float(compiled(*fargs(i))) - float(estep(*eargs(i)).detach()))
                for i in range(5))
    out["dyngrad agreement"] = _agree(libs["dyngrad"], key, d)
    T = libs["dyngrad"]
    for be in backends:
        cstep, cargs, _ = step_of(key, T, d)
        compiled = T.compile(cstep, backend=be)
        t0 = time.perf_counter()
        compiled(*cargs(0))
        compiled(*cargs(1))     # numba compiles a kernel on its first call
        out[f"{be} capture"] = time.perf_counter() - t0
        for i in range(2, 5):
            compiled(*cargs(i))
        out[f"dyngrad {be}"] = _time(compiled, cargs, block, repeats)
        out[f"{be} agreement"] = _agree(T, key, d, backend=be)
    return out


def report(res):
    """The table and the goals, as lines."""
    lines = [f"{'workload':16s} {'what':20s} {'us/step':>10s} {'/ numpy':>8s}"]
    for key, r in res.items():
        for what, s in r.items():
            if what.endswith("agreement") or what.endswith("capture"):
                continue
            lines.append(f"{key:16s} {what:20s} {s * 1e6:10.1f} {s / r['numpy']:8.2f}")
        for what in [w for w in r if w.endswith("capture")]:
            lines.append(f"{key:16s} {what:20s} {r[what] * 1e3:9.1f}ms")
        for what in [w for w in r if w.endswith("agreement") and w != "dyngrad agreement"]:
            be = what.split()[0]
            lines.append(f"{key:16s} {be + ' vs eager':20s} differ by at most {r[what]:.1e}")
        lines.append(f"{key:16s} {'eager/compiled':20s} "
                     f"{r['dyngrad eager'] / r['dyngrad compiled']:10.2f}x   "
                     f"(compiled and eager differ by at most {r['dyngrad agreement']:.1e})")
    lines.append("")
    for key, r in res.items():
        ratio = r["dyngrad compiled"] / r["numpy"]
        if key in FLOOR_GOAL:
            ok = ratio <= FLOOR_GOAL[key]
            lines.append(f"goal {key}: compiled / numpy = {ratio:.2f} (<= {FLOOR_GOAL[key]}) "
                         f"{'MET' if ok else 'MISS'}")
            for what in ("torch compiled", "torch.func compiled"):
                if what in r:
                    ok = r["dyngrad compiled"] < r[what]
                    lines.append(f"goal {key}: compiled / {what.replace(' compiled', '')}"
                                 f"{'.compile' if what == 'torch compiled' else ' one graph'} = "
                                 f"{r['dyngrad compiled'] / r[what]:.2f} (< 1) "
                                 f"{'MET' if ok else 'MISS'}")
            cap = r["dyngrad capture"]
            lines.append(f"goal {key}: capture {cap * 1e3:.1f} ms (< {CAPTURE_GOAL_S * 1e3:.0f}) "
                         f"{'MET' if cap < CAPTURE_GOAL_S else 'MISS'}")
        if key in SPEEDUP_GOAL:
            sp = r["dyngrad eager"] / r["dyngrad compiled"]
            lines.append(f"goal {key}: eager / compiled = {sp:.2f} (>= {SPEEDUP_GOAL[key]}) "
                         f"{'MET' if sp >= SPEEDUP_GOAL[key] else 'MISS'}")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=KEYS, default=list(KEYS))
    ap.add_argument("--torch-compile", action="store_true",
                    help="also time torch.compile, of the step as written and as one graph "
                         "(several seconds of compiling per workload)")
    ap.add_argument("--no-torch", action="store_true", help="leave PyTorch out")
    ap.add_argument("--backend", action="append", default=[], choices=("numba",),
                    help="also time dyngrad.compile with this backend")
    ap.add_argument("--block", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    import dyngrad
    libs = {"dyngrad": dyngrad}
    if not a.no_torch:
        try:
            import torch
            torch.set_num_threads(1)
            libs["torch"] = torch
        except ImportError:
            pass
    res = {k: measure(k, libs, a.torch_compile, a.block, a.repeats, a.backend)
           for k in a.only}
    print("\n".join(report(res)))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
