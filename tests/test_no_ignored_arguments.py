"""No public function accepts an argument and silently ignores it.

A parameter that the function body never reads is a PyTorch option that does nothing here: a
user who passes ``weight=`` to ``mse_loss`` or ``dim=`` to ``unique_consecutive`` would get
the wrong result without a word.  Each such parameter must either work or be listed below with
the reason ignoring it is right (the result is what PyTorch gives, e.g. a device argument on a
CPU-only library, or an option that only changes how PyTorch computes).
"""
from __future__ import annotations

import ast

# Parameters that name things this library has one of (the CPU, the strided layout, pageable
# memory); ``memory_format`` chooses only strides, never values (where results are laid out
# differently from PyTorch's is written up in docs/reliability.md).
ANYWHERE = {"layout", "device", "pin_memory", "memory_format", "non_blocking", "names"}

# function -> {parameter: why ignoring it gives PyTorch's result}
DELIBERATE = {
    "grad": {"only_inputs": "deprecated in PyTorch and ignored there too"},
    "exit_dual_level": {"level": "one dual level at a time, as PyTorch supports"},
    "make_dual": {"level": "one dual level at a time, as PyTorch supports"},
    "unpack_dual": {"level": "one dual level at a time, as PyTorch supports"},
    "gradcheck": {"check_undefined_grad": "extra checks of PyTorch's; the result is the same",
                  "check_grad_dtypes": "extra checks of PyTorch's; the result is the same",
                  "check_batched_grad": "extra checks of PyTorch's; the result is the same",
                  "check_batched_forward_grad": "extra checks of PyTorch's",
                  "fast_mode": "a faster path to the same answer",
                  "masked": "sparse tensors only"},
    "gradgradcheck": {"gen_non_contig_grad_outputs": "a variant of the same check",
                      "check_undefined_grad": "extra checks of PyTorch's",
                      "check_grad_dtypes": "extra checks of PyTorch's",
                      "check_batched_grad": "extra checks of PyTorch's",
                      "check_rev_over_rev": "extra checks of PyTorch's",
                      "fast_mode": "a faster path to the same answer",
                      "masked": "sparse tensors only"},
    "init_process_group": {"group_name": "deprecated and unused in PyTorch",
                           "pg_options": "backend tuning of NCCL/Gloo",
                           "device_id": "accelerator binding"},
    "new_group": {"pg_options": "backend tuning", "use_local_synchronization":
                  "a faster group creation with the same group",
                  "group_desc": "a label for logs", "device_id": "accelerator binding"},
    "barrier": {"device_ids": "accelerator binding", "timeout": "MPI barriers do not time out"},
    "wait": {"timeout": "MPI requests do not time out"},
    "__init__": {"device_ids": "DataParallel on a CPU-only machine runs the module as is, "
                               "as PyTorch's does",
                 "output_device": "as device_ids", "dim": "as device_ids",
                 "multiprocessing_context": "DataLoader: how worker processes start",
                 "persistent_workers": "DataLoader: whether workers outlive an epoch",
                 "pin_memory_device": "DataLoader: no accelerator memory",
                 "in_order": "DataLoader: batches always come in order, which in_order=False "
                             "allows"},
    "compute_mask": {"t": "PyTorch's CustomFromMask ignores it too"},
    "clip_grad_value_": {"foreach": "a faster path to the same result"},
    "svdvals": {"driver": "a CUDA-only choice of algorithm"},
    "load": {"mmap": "the file is read whole"},
    "save": {"pickle_module": "PyTorch's own format is written",
             "pickle_protocol": "PyTorch's own format is written"},
    "checkpoint": {"determinism_check": "recomputation is deterministic here",
                   "early_stop": "a speed-up of PyTorch's recomputation"},
    "add_graph": {"use_strict_trace": "the graph is recorded, not traced"},
}


def _namespaces():
    import importlib
    import dyngrad
    names = ["dyngrad", "dyngrad.nn.functional", "dyngrad.linalg", "dyngrad.special",
             "dyngrad.autograd", "dyngrad.autograd.forward_ad", "dyngrad.autograd.functional",
             "dyngrad.autograd.graph", "dyngrad.func", "dyngrad.distributed",
             "dyngrad.multiprocessing", "dyngrad.distributions", "dyngrad.optim",
             "dyngrad.optim.lr_scheduler", "dyngrad.nn", "dyngrad.nn.init", "dyngrad.nn.utils",
             "dyngrad.nn.utils.prune", "dyngrad.nn.utils.parametrize",
             "dyngrad.utils.checkpoint", "dyngrad.utils.data", "dyngrad.utils.tensorboard",
             "dyngrad.serialization"]
    yield dyngrad.Tensor
    for n in names:
        try:
            yield importlib.import_module(n)
        except ImportError:  # an optional extra not installed
            continue


def _public_functions():
    """(where, ast node) of every function and method reachable from the public API."""
    import inspect
    import textwrap
    from dyngrad import Tensor
    from dyngrad._npnames import build_all
    build_all(Tensor)  # methods are built on first use: read them all
    seen = set()
    todo = list(_namespaces())
    while todo:
        ns = todo.pop()
        for k in dir(ns):
            if k.startswith("_") and k not in ("__init__", "__call__"):
                continue
            try:
                # (a module's names loaded on first use are read through its __getattr__)
                v = getattr(ns, k) if inspect.ismodule(ns) else inspect.getattr_static(ns, k)
            except AttributeError:
                continue
            if isinstance(v, (staticmethod, classmethod)):
                v = v.__func__
            if inspect.isclass(v) and v.__module__.startswith("dyngrad") and v not in seen:
                seen.add(v)
                todo.append(v)
                continue
            v = inspect.unwrap(v) if callable(v) else v
            if not inspect.isfunction(v) or not v.__module__.startswith("dyngrad") or \
                    v.__code__ in seen:
                continue
            seen.add(v.__code__)
            try:
                src = textwrap.dedent(inspect.getsource(v))
            except (OSError, TypeError):
                continue
            node = ast.parse(src).body[0]
            if isinstance(node, ast.FunctionDef):
                yield f"{v.__module__}.{v.__qualname__}", node


def _ignored(node):
    a = node.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) <= 1 or isinstance(body[0], ast.Raise):
        return []  # a one-line delegation or a refusal reads nothing by design
    return [x for x in params if x not in read and x not in ("self", "cls")
            and not x.startswith("_") and x not in ANYWHERE]


def test_no_public_function_ignores_an_argument():
    found = []
    for where, node in _public_functions():
        ok = DELIBERATE.get(node.name, {})
        for x in _ignored(node):
            if x not in ok:
                found.append(f"{where}({x}=...) is accepted and ignored")
    assert not found, "\n".join(found)


def test_every_deliberate_entry_is_still_needed():
    seen = {(node.name, x) for _, node in _public_functions() for x in _ignored(node)}
    stale = [(f, x) for f, xs in DELIBERATE.items() for x in xs if (f, x) not in seen]
    assert not stale, f"listed but no longer ignored: {stale}"
