"""The backward engine: counts, for every node reachable from the roots, how many consumers
will send it a gradient, then runs nodes from a ready queue as PyTorch does (a leaf's
AccumulateGrad as soon as its gradient is complete, then the highest sequence number), summing
incoming gradients in one buffer per node.  Iterative: graphs a million nodes deep need no
recursion."""
from __future__ import annotations

import heapq
import sys

import numpy as np

from . import errors
from .grad_mode import DUAL_LEVEL as _FW_LEVEL, STATE
from .node import KEEPERS, LIVE_PACKS, AccumulateGrad, cast_grad, edge_of, keeper
from .._fperr import quiet_on, quiet_off


def _to_dtype(g, dt):
    """A gradient flowing into a node, in the dtype of that node's output (PyTorch's
    validate_outputs, run on the differing dtypes only); none may flow into an integer tensor
    (PyTorch's assertion, raised there, before later nodes run)."""
    if dt.kind in "biu":
        raise errors.integer_gradient(dt)
    return cast_grad(g, dt)

_getrefcount = sys.getrefcount
_ACC_LOCK = __import__('threading').Lock()
_ndarray = np.ndarray
_asarray = np.asarray


class _Hooks:
    """Process-wide switches read once per backward: anomaly mode and graph observers."""

    anomaly = False
    anomaly_check_nan = True
    observer = None  # an object with on_node / on_accumulate / on_free (the graph explorer)


HOOKS = _Hooks()


def _dependencies(root_nodes):
    """How many edges of nodes reachable from the roots point at each node (PyTorch's
    compute_dependencies), by an iterative DFS."""
    deps = {}
    get = deps.get
    stack = list(root_nodes)
    pop = stack.pop
    push = stack.append
    roots = set(root_nodes) if len(root_nodes) > 1 else ()  # already on the stack
    while stack:
        for fn, _ in pop().next_functions:
            if fn is not None:
                d = get(fn)
                if d is None:
                    deps[fn] = 1
                    if fn.next_functions and fn not in roots:
                        push(fn)
                else:
                    deps[fn] = d + 1
    return deps


def _collect(root_nodes):
    """Dependency counts and the set of nodes reachable from the roots."""
    deps = _dependencies(root_nodes)
    seen = set(deps)
    seen.update(root_nodes)
    return deps, seen


def _runnable(nodes, targets):
    """Nodes that must run so that gradients reach ``targets``: those with an input edge into a
    node that reaches a target.  Children always have lower sequence numbers than their
    consumers, so one pass in sequence order suffices."""
    reach = set(targets)
    run = set()
    for n in sorted((n for n in nodes if type(n) is not AccumulateGrad), key=lambda n: n._seq):
        for fn, _ in n.next_functions:
            if fn is not None and fn in reach:
                run.add(n)
                reach.add(n)
                break
    return run


def _wrap(g):
    from .._tensor import Tensor
    return Tensor._make(g if type(g) is _ndarray else _asarray(g))



def run_backward(roots, grads, retain_graph, create_graph, inputs=None, capture=False,
                 allow_unused=False):
    """Propagate ``grads`` (one per root tensor) back through the graph.

    Without ``capture``, gradients accumulate into leaves' ``.grad`` (only into ``inputs``
    when given).  With ``capture`` (``autograd.grad``), the gradients reaching ``inputs`` are
    returned instead and no ``.grad`` is touched.
    """
    if _FW_LEVEL and not create_graph:
        from .forward_ad import carries_tangents, tangent_backward
        if carries_tangents(roots, grads):
            return tangent_backward(roots, grads, retain_graph, inputs, capture, allow_unused)
    state = STATE
    prev_mode = state.enabled
    state.enabled = create_graph
    if _FW_LEVEL:
        prev_fw = state.fw_only
        state.fw_only = False
    quiet = quiet_on()  # backward formulas give inf/nan without NumPy warnings, as PyTorch
    try:
        if inputs is None:
            return _run_fast(roots, grads, retain_graph, create_graph, edge_of)
        return _run(roots, grads, retain_graph, create_graph, inputs, capture, allow_unused, edge_of)
    except Exception as e:
        if HOOKS.anomaly:
            from .anomaly import report_failure
            report_failure(e)
        raise
    finally:
        state.enabled = prev_mode
        if _FW_LEVEL:
            state.fw_only = prev_fw
        quiet_off(quiet)


# --- the ready queue -------------------------------------------------------------------------
# PyTorch keeps ready nodes in a std::priority_queue ordered by sequence number, with
# AccumulateGrad above everything (its sequence number is UINT64_MAX): a leaf's gradient is
# accumulated as soon as it is complete.  Sequence numbers are unique, so for other nodes any
# heap gives the same order; several AccumulateGrads ready at once tie, and then the order is
# the one libstdc++'s push_heap/pop_heap give.  Python's heapq runs the same sift algorithms
# (checked in tests/test_backward_order.py), so entries are (-key, node) with ties between
# AccumulateGrads comparing equal (AccumulateGrad.__lt__ is always False).
_ACC_KEY = 1 << 62
_NEG_ACC = -_ACC_KEY
_heappush = heapq.heappush
_heappop = heapq.heappop


def _key(fn):
    return _ACC_KEY if fn.__class__ is AccumulateGrad else fn._seq


def _push(h, key, node):
    """Push ``node`` with priority ``key`` (larger first)."""
    _heappush(h, (-key, node))


def _pop(h):
    """The node with the largest key (ties as libstdc++'s heap)."""
    return _heappop(h)[1]


def _start(roots, grads, edge_of):
    """Deposit the root gradients and count dependencies (PyTorch's compute_dependencies);
    returns the buffers, the dependency counts and the ready queue.  Several roots go through
    a GraphRoot as in PyTorch: each root is ready once no other reachable node feeds it."""
    edges = []
    for t in roots:
        e = edge_of(t)
        if e[0] is None:
            raise RuntimeError(errors.NO_GRAD_FN)
        edges.append(e)
    bufs = {}
    heap = []
    if len(edges) == 1:
        fn, nr = edges[0]
        _deposit(bufs, fn, nr, grads[0])
        deps = _dependencies((fn,)) if fn.next_functions else {}
        heap.append((_key(fn), fn))
        return bufs, deps, heap
    firsts = list(dict.fromkeys(fn for fn, _ in edges))
    deps = _dependencies(firsts)
    left = {}
    for fn, _ in edges:
        left[fn] = left.get(fn, 0) + 1
    for (fn, nr), g in zip(edges, grads):
        _deposit(bufs, fn, nr, g)
        k = left[fn] - 1
        left[fn] = k
        if not k and not deps.get(fn):
            _push(heap, _key(fn), fn)
    return bufs, deps, heap


def _run_fast(roots, grads, retain_graph, create_graph, edge_of):
    """backward() without ``inputs``, in PyTorch's ready-queue order (see above); a failing
    node leaves every gradient accumulated before it, as in PyTorch."""
    ACC = AccumulateGrad
    if len(roots) == 1:
        fn, nr = edge_of(roots[0])
        if fn is None:
            raise RuntimeError(errors.NO_GRAD_FN)
        if (not create_graph and fn.__class__ is not ACC and HOOKS.observer is None
                and not HOOKS.anomaly and not LIVE_PACKS[0]):
            return _run_seq(fn, nr, grads[0], retain_graph)
        bufs = {}
        _deposit(bufs, fn, nr, grads[0])
        deps = _dependencies((fn,)) if fn.next_functions else {}
        heap = [(_NEG_ACC if fn.__class__ is ACC else -fn._seq, fn)]
    else:
        bufs, deps, heap = _start(roots, grads, edge_of)
    return _exact(bufs, deps, heap, retain_graph, create_graph)


# --- the common case -------------------------------------------------------------------------
# With one root and nothing of the user's running during backward (no hooks, custom Function,
# saved-tensor hooks, observer or anomaly mode), PyTorch's order needs no dependency counts.
# Every node is created after the nodes it points to, so among the nodes that have received
# a gradient the one with the largest sequence number is always ready (any producer still to
# run has a larger number and is, or descends from, a node that received one): running them
# largest first is the ready queue's order.  Leaves are accumulated at the end, which nothing
# can tell apart from accumulating each as soon as it is complete while no user code runs in
# between; a node that fails first accumulates the leaves PyTorch had finished (``_flush``).
# The first node or leaf that would run user code switches to the exact engine: ``_resume``
# replays the queue up to that point (so even ties between leaves come out as PyTorch's).
_MISSING = object()


def _run_seq(root, nr, g0, retain_graph):
    bufs = {}
    _deposit(bufs, root, nr, g0)
    accs = []
    done = _seq_loop(bufs, accs, root, retain_graph)
    if done >= 0:
        return _resume(root, done, bufs, retain_graph)
    bufs_pop = bufs.pop
    for acc in accs:
        g = bufs_pop(acc)
        if g is not None:
            _accumulate(acc, g, False, None)
    return None


def _seq_loop(bufs, accs, nxt, retain_graph):
    """Run nodes largest sequence number first.  Returns -1 when all have run, else how many
    ran before the exact engine must take over (before the next node runs, or after the last
    one reached a leaf needing care)."""
    ACC = AccumulateGrad
    nd = _ndarray
    asarray = _asarray
    bufs_pop = bufs.pop
    bufs_get = bufs.get
    heap = []
    push = _heappush
    pop = _heappop
    free_get = KEEPERS.get
    missing = _MISSING
    owned = set()
    count = 0
    switch = False
    node = nxt
    try:
        while True:
            if nxt is not None:
                node = nxt
                nxt = None
            elif heap:
                node = pop(heap)[1]
            else:
                return -1
            g = bufs_pop(node)
            nf = node.next_functions
            if not node._plain:
                if (node._user_code or node._tensor_hooks is not None
                        or node._retain is not None or node._pre_hooks or node._hooks):
                    bufs[node] = g
                    return count
                # only casts of the input gradients back to the inputs' dtypes
                if g is None:
                    outs = (None,) * len(nf)
                else:
                    if node._saved is None:
                        raise errors.freed_graph(node)
                    outs = _run_node(node, g, False, None, False)
            elif g is None:  # every gradient flowing in was None: nothing to compute
                outs = (None,) * len(nf)
            else:
                if node._saved is None:
                    raise errors.freed_graph(node)
                if node._nout == 1:
                    if type(g) is not nd:
                        g = asarray(g)
                else:
                    g = [x if x is None or type(x) is nd else asarray(x) for x in g]
                outs = node._bw(g, False)
            count += 1
            if not retain_graph:
                keep = free_get(node.__class__, missing)  # Node._release, inline
                if keep is missing:
                    keep = keeper(node.__class__)
                if keep is None:
                    node._release()
                elif node._needs_saved:
                    if keep:  # PyTorch frees only the saved tensors
                        s = node._saved
                        if s is not None:
                            node._kept = keep(s)
                    node._saved = None
            for (fn, nr), gi in zip(nf, outs):
                if fn is None:
                    continue
                if gi is not None:
                    dt = fn._odt
                    if dt is not None:
                        try:
                            if gi.dtype is not dt:
                                gi = _to_dtype(gi, dt)
                        except AttributeError:  # a Python number
                            gi = _to_dtype(gi, dt)
                if fn._nout == 1:
                    b = bufs_get(fn, missing)
                    if b is missing:
                        bufs[fn] = gi
                        if fn.__class__ is ACC:
                            accs.append(fn)
                            # accumulating into it may run user code or fail: the exact
                            # engine takes over (``_resume``)
                            if not fn._plain:
                                switch = True
                            else:
                                v = fn._var
                                if v._hooks or v._post_acc_hooks or v._grad_fn is not None:
                                    switch = True
                            continue
                    elif gi is None:
                        continue
                    elif b is None:
                        bufs[fn] = gi
                        continue
                    elif type(b) is not nd:  # a NumPy scalar
                        bufs[fn] = b + gi
                        continue
                    elif fn in owned:
                        b += gi  # a sum this engine made: nobody else sees it
                        continue
                    else:
                        bufs[fn] = b + gi
                        owned.add(fn)
                        continue
                elif fn in bufs:
                    if gi is not None:
                        _deposit(bufs, fn, nr, gi)
                    continue
                else:
                    bufs[fn] = [None] * fn._nout
                    if gi is not None:
                        _deposit(bufs, fn, nr, gi)
                # fn has just received its first gradient: it joins the queue
                if nxt is None and not heap:
                    nxt = fn
                else:
                    if nxt is not None:
                        push(heap, (-nxt._seq, nxt))
                        nxt = None
                    push(heap, (-fn._seq, fn))
            if switch:
                return count
    except Exception:
        _flush(bufs, accs, node)
        raise


def _flush(bufs, accs, failed):
    """A node failed: accumulate the leaves whose gradients were complete (no node still to
    run points at them), as PyTorch had by then."""
    ACC = AccumulateGrad
    pending = [n for n in bufs if n.__class__ is not ACC]  # reached, not run yet
    pending.append(failed)
    reach = set(pending)
    stack = pending
    while stack:
        for fn, _ in stack.pop().next_functions:
            if fn is not None and fn not in reach:
                reach.add(fn)
                stack.append(fn)
    for acc in accs:
        if acc not in reach:
            g = bufs.pop(acc, None)
            if g is not None:
                _accumulate(acc, g, False, None)


def _resume(root, done, bufs, retain_graph):
    """Hand over to the exact engine after ``done`` nodes ran in ``_seq_loop``: count the
    dependencies, replay PyTorch's queue through those nodes (accumulating the leaves it had
    finished), and go on from there."""
    ACC = AccumulateGrad
    deps = _dependencies((root,))
    heap = [(-root._seq, root)]
    finished = []
    while done:
        node = _heappop(heap)[1]
        if node.__class__ is ACC:
            finished.append(node)
            continue
        done -= 1
        for fn, _ in node.next_functions:
            if fn is not None:
                d = deps[fn] - 1
                deps[fn] = d
                if not d:
                    _heappush(heap, (_NEG_ACC if fn.__class__ is ACC else -fn._seq, fn))
    for acc in finished:
        g = bufs.pop(acc, None)
        if g is not None:
            _accumulate(acc, g, False, None)
    return _exact(bufs, deps, heap, retain_graph, False)


def _exact(bufs, deps, heap, retain_graph, create_graph):
    """The ready queue itself: dependency counts decide when a node is ready, leaves are
    accumulated as soon as they are complete, hooks and observers see every step."""
    ACC = AccumulateGrad
    obs = HOOKS.observer
    anomaly = HOOKS.anomaly
    bufs_pop = bufs.pop
    bufs_get = bufs.get
    owned = set()
    simple = obs is None and not anomaly and not create_graph
    # ``nxt``: the one ready node when the queue is otherwise empty (the usual case on a
    # chain), kept out of the heap; pushed first as soon as another node gets ready, so the
    # queue sees the same pushes as PyTorch's
    push = _heappush
    pop = _heappop
    nxt = pop(heap)[1] if heap else None
    while True:
        if nxt is not None:
            node = nxt
            nxt = None
        elif heap:
            node = pop(heap)[1]
        else:
            break
        g = bufs_pop(node, None)
        if node.__class__ is ACC:
            if g is not None:
                _accumulate(node, g, create_graph, obs)
            continue
        if g is None:  # every gradient flowing in was None: nothing to compute
            outs = (None,) * len(node.next_functions)
        else:
            if node._saved is None:
                raise errors.freed_graph(node)
            if simple and node._plain and node._nout == 1:
                # the common case: no hooks, no observers, one output, plain backward
                if type(g) is not _ndarray:
                    g = _asarray(g)
                outs = node._bw(g, False)
            else:
                outs = _run_node(node, g, create_graph, obs, anomaly)
        if not retain_graph:
            node._release()
            if obs is not None:
                obs.on_free(node)
        for (fn, nr), gi in zip(node.next_functions, outs):
            if fn is None:
                continue
            if gi is not None:
                dt = fn._odt
                if dt is not None and getattr(gi, "dtype", None) is not dt:
                    gi = _to_dtype(gi, dt)
                if fn._nout == 1:
                    b = bufs_get(fn)
                    if b is None:
                        bufs[fn] = gi
                    elif fn in owned and type(b) is _ndarray and not create_graph:
                        b += gi  # a sum this engine made: nobody else sees it
                    else:
                        bufs[fn] = b + gi
                        owned.add(fn)
                else:
                    _deposit(bufs, fn, nr, gi)
            d = deps[fn] - 1
            if d:
                deps[fn] = d
            elif nxt is None and not heap:
                nxt = fn
            else:
                if nxt is not None:
                    push(heap, (_NEG_ACC if nxt.__class__ is ACC else -nxt._seq, nxt))
                    nxt = None
                push(heap, (_NEG_ACC if fn.__class__ is ACC else -fn._seq, fn))
    return None


def _run_node(node, g, create_graph, obs, anomaly):
    """Run one node with everything a node may need: hooks, observers, casts, anomaly."""
    if node._nout == 1:
        if not create_graph and type(g) is not _ndarray:
            g = _asarray(g)
    elif not create_graph:
        g = [x if x is None or type(x) is _ndarray else _asarray(x) for x in g]
    if not node._plain and (node._tensor_hooks is not None or node._retain is not None
                            or node._pre_hooks):
        g = _run_pre_hooks(node, g, create_graph)
    if obs is not None:
        obs.on_node_start(node, g)
    outs = node._bw(g, create_graph)
    if not node._plain:
        if node._casts is not None:
            outs = _cast_back(outs, node._casts)
        if node._hooks:
            outs = _run_post_hooks(node, outs, g, create_graph)
    if obs is not None:
        obs.on_node_done(node, outs)
    if anomaly:
        from .anomaly import check_outputs
        check_outputs(node, outs)
    return outs


def _run(roots, grads, retain_graph, create_graph, inputs, capture, allow_unused, edge_of):
    """backward(inputs=...) and autograd.grad: count dependencies, run only what reaches
    the inputs, and capture (or accumulate) their gradients."""
    bufs = {}
    root_nodes = []
    for t, g in zip(roots, grads):
        fn, nr = edge_of(t)
        if fn is None:
            raise RuntimeError(errors.NO_GRAD_FN)
        _deposit(bufs, fn, nr, g)
        if fn not in root_nodes:
            root_nodes.append(fn)
    deps, reachable = _collect(root_nodes)
    hooked = set()  # target nodes whose pre-hooks already ran before capture

    targets = None
    captured = None
    runnable = None
    if inputs is not None:
        targets = {}
        for i, t in enumerate(inputs):
            fn, nr = edge_of(t)
            if fn is not None:
                targets.setdefault(fn, []).append((i, nr))
        runnable = _runnable(reachable, targets)
        captured = [None] * len(inputs)

    obs = HOOKS.observer
    anomaly = HOOKS.anomaly
    bufs_pop = bufs.pop
    bufs_get = bufs.get
    ACC = AccumulateGrad
    heap = []
    for fn in root_nodes:
        if deps.get(fn, 0) == 0:
            _push(heap, _key(fn), fn)

    while heap:
        node = _pop(heap)
        g = bufs_pop(node, None)
        run_it = True
        if targets is not None:
            tg = targets.get(node)
            if tg is not None and g is not None:
                if not node._plain or (capture and node.__class__ is ACC and getattr(node.variable, '_hooks', None)):
                    g = _capture_hooks(node, g, create_graph, capture, hooked, runnable)
                for i, nr in tg:
                    gi = g[nr] if node._nout > 1 else g
                    captured[i] = gi if captured[i] is None else captured[i] + gi
            run_it = node in runnable
        if node.__class__ is ACC:
            if g is not None and (targets is None or (not capture and node in targets)):
                _accumulate(node, g, create_graph, obs)
            continue
        outs = None
        if run_it and g is not None:
            if node._saved is None:
                raise errors.freed_graph(node)
            if not create_graph:
                if node._nout == 1:
                    if type(g) is not _ndarray:
                        g = _asarray(g)
                else:
                    g = [x if x is None or type(x) is _ndarray else _asarray(x) for x in g]
            if node._plain:
                if obs is not None:
                    obs.on_node_start(node, g)
                outs = node._bw(g, create_graph)
            else:
                if (node._tensor_hooks is not None or node._retain is not None
                        or node._pre_hooks) and node not in hooked:
                    g = _run_pre_hooks(node, g, create_graph)
                if obs is not None:
                    obs.on_node_start(node, g)
                outs = node._bw(g, create_graph)
                if node._casts is not None:
                    outs = _cast_back(outs, node._casts)
                if node._hooks:
                    outs = _run_post_hooks(node, outs, g, create_graph)
            if anomaly:
                from .anomaly import check_outputs
                check_outputs(node, outs)
            if obs is not None:
                obs.on_node_done(node, outs)
            if not retain_graph:
                node._release()
                if obs is not None:
                    obs.on_free(node)
        k = 0
        for fn, nr in node.next_functions:
            if fn is not None:
                if outs is not None:
                    gi = outs[k]
                    if gi is not None:
                        dt = fn._odt
                        if dt is not None and (type(gi) is not _ndarray or gi.dtype is not dt):
                            gi = _to_dtype(gi, dt)
                        if fn._nout == 1:
                            b = bufs_get(fn)
                            bufs[fn] = gi if b is None else b + gi
                        else:
                            _deposit(bufs, fn, nr, gi)
                d = deps[fn] - 1
                deps[fn] = d
                if d == 0:
                    _push(heap, _key(fn), fn)
            k += 1

    if inputs is not None and not capture:
        for i, t in enumerate(inputs):
            if t._grad_fn is not None and captured[i] is not None:
                c = captured[i] if create_graph else _wrap(_own(captured[i]))
                t._grad = c if t._grad is None else t._grad + c
        return None
    if capture:
        for i, t in enumerate(inputs):
            if captured[i] is None and not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                                   "in the graph. Set allow_unused=True if this is the desired "
                                   "behavior.")
        return [None if c is None else (c if create_graph else _wrap(_own(c)))
                for c in captured]
    return None


def _cast_back(outs, casts):
    from .._record import grad_dtype
    return tuple(o if (o is None or c is None) else grad_dtype(o, c) for o, c in zip(outs, casts))


def _deposit(bufs, fn, nr, g):
    dt = fn._odt
    if dt is not None and (type(g) is not _ndarray or g.dtype is not dt):
        g = _to_dtype(g, dt)
    nout = fn._nout
    if nout == 1:
        b = bufs.get(fn)
        bufs[fn] = g if b is None else b + g
    else:
        b = bufs.get(fn)
        if b is None:
            b = bufs[fn] = [None] * nout
        b[nr] = g if b[nr] is None else b[nr] + g


def _own(g):
    """A copy of ``g`` unless nothing else can see it (then it is reused as is)."""
    if isinstance(g, np.ndarray) and (g.base is not None or not g.flags.writeable):
        return g.copy()
    return g


def _capture_hooks(node, g, graph, capture, hooked, runnable):
    """Run a target's tensor hooks (and retain_grad) before its gradient is captured when the
    node itself will not run, as PyTorch does (a node that runs captures the raw gradient and
    runs its hooks as usual)."""
    if node.__class__ is AccumulateGrad:
        if not capture:
            return g
        var = node.variable
        if not node._plain and node._pre_hooks:
            for hook in list(node._pre_hooks):
                r = hook((g if graph else _wrap(g),))
                if r is not None:
                    g = r[0] if graph else r[0]._data
        for hook in list(var._hooks or ()):
            g = _hooked(hook, hook(g if graph else _wrap(g)), g, graph)
        return g
    if node in runnable or not (node._tensor_hooks is not None or node._retain is not None
                                or node._pre_hooks):
        return g
    if not graph:
        if node._nout == 1:
            g = _asarray(g)
        else:
            g = [x if x is None or type(x) is _ndarray else _asarray(x) for x in g]
    hooked.add(node)
    return _run_pre_hooks(node, g, graph)


def _hooked(hook, r, g, graph):
    """The gradient after a tensor hook returned ``r`` (checked like PyTorch)."""
    if r is None:
        return g
    from .._tensor import Tensor
    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
    name = getattr(hook, "__name__", type(hook).__name__)
    gd = g._data if isinstance(g, Tensor) else g
    if r._data.dtype != gd.dtype:
        from .._dtype import FROM_NP, TYPE_NAMES
        raise RuntimeError(f"hook '{name}' has changed the type of value (was torch."
                           f"{TYPE_NAMES.get(FROM_NP.get(gd.dtype), 'Tensor')} got torch."
                           f"{TYPE_NAMES.get(FROM_NP.get(r._data.dtype), 'Tensor')})")
    if r._data.shape != gd.shape:
        raise RuntimeError(f"hook '{name}' has changed the size of value")
    return r if graph else r._data


def _hooked_tuple(hook, r, gs, graph):
    """Gradients after a node hook returned ``r`` (a sequence replacing ``gs``)."""
    if r is None:
        return gs
    r = tuple(r)
    if len(r) != len(gs):
        name = getattr(hook, "__name__", type(hook).__name__)
        raise RuntimeError(f"hook '{name}' has returned an incorrect number of values (got "
                           f"{len(r)}, but expected {len(gs)})")
    for old, new in zip(gs, r):
        if old is None and new is not None:
            raise RuntimeError("can't replace a None gradient with a non-None value")
    return r


def _run_pre_hooks(node, g, graph):
    th = node._tensor_hooks
    if th is not None:
        if node._nout == 1:
            for hook in list(th.get(0, ())):
                g = _hooked(hook, hook(g if graph else _wrap(g)), g, graph)
        else:
            for nr, hooks in th.items():
                if g[nr] is None:
                    continue
                for hook in list(hooks):
                    g[nr] = _hooked(hook, hook(g[nr] if graph else _wrap(g[nr])), g[nr], graph)
    if node._pre_hooks:
        gs = (g,) if node._nout == 1 else tuple(g)
        for hook in list(node._pre_hooks):
            wrapped = tuple(x if (graph or x is None) else _wrap(x) for x in gs)
            r = _hooked_tuple(hook, hook(wrapped), wrapped, graph)
            gs = tuple(x if (graph or x is None) else x._data for x in r)
        g = gs[0] if node._nout == 1 else list(gs)
    ret = node._retain
    if ret is not None:
        for nr, ref in list(ret.items()):
            t = ref()
            gi = g if node._nout == 1 else g[nr]
            if t is None or gi is None:
                continue
            gt = gi.detach() if graph else _wrap(np.array(gi, copy=True))
            if t._grad is None:
                t._grad = gt if not graph else gi.clone().detach()
            else:
                t._grad = t._grad + gt
    return g


def _run_post_hooks(node, outs, g, graph):
    gin = tuple(x if (graph or x is None) else _wrap(x) for x in outs)
    gout = (g,) if node._nout == 1 else tuple(g)
    gout = tuple(x if (graph or x is None) else _wrap(x) for x in gout)
    for hook in list(node._hooks):
        gin = _hooked_tuple(hook, hook(gin, gout), gin, graph)
    return tuple(x if (graph or x is None) else x._data for x in gin)


_TENSOR = []


def _tensor_make():
    if not _TENSOR:
        from .._tensor import Tensor
        _TENSOR.append(Tensor._make)
    return _TENSOR[0]


def _stealable(g, dtype):
    """Whether the gradient buffer ``g`` can become a leaf's ``.grad`` as it is: nobody else
    can see it (the engine's local, the caller's argument, this call's and getrefcount's own
    are its only references), it is C-ordered, writeable and of the leaf's dtype."""
    if type(g) is not _ndarray or g.dtype != dtype or _getrefcount(g) > 4 or \
            not g.flags.writeable or not g.flags.c_contiguous:
        return False
    base = g.base
    # a fresh array, or a whole-array view of one nobody else holds
    return base is None or (type(base) is _ndarray and base.base is None
                            and base.size == g.size and _getrefcount(base) <= 3)


def _accumulate(acc, g, graph, obs):
    """Add gradient ``g`` into ``acc.variable.grad`` (a new tensor the first time, in place
    after, out of place under create_graph), running the leaf's hooks."""
    var = acc._var
    if not acc._plain and acc._pre_hooks:
        for hook in list(acc._pre_hooks):
            r = hook((g if graph else _wrap(g),))
            if r is not None:
                g = r[0] if graph else r[0]._data
    hooks = var._hooks
    if hooks:
        for hook in list(hooks):
            g = _hooked(hook, hook(g if graph else _wrap(g)), g, graph)
    if var._grad_fn is not None:  # an in-place op gave the former leaf a history
        raise RuntimeError("leaf variable has been moved into the graph interior")
    if not var._requires_grad:  # requires_grad_(False) after the graph was made: PyTorch
        return                  # runs the hooks but keeps no gradient
    if graph:
        old = var._grad
        var._grad = g if old is None else old + g
    else:
        vd = var._data
        if g.shape != vd.shape:
            g = np.broadcast_to(g, vd.shape)
        with _ACC_LOCK:  # two threads may accumulate into one shared leaf
            old = var._grad
            if old is None:
                var._grad = (_TENSOR[0] if _TENSOR else _tensor_make())(
                    g if _stealable(g, vd.dtype) else np.array(g, dtype=vd.dtype, order="C"))
            elif old._grad_fn is not None or old._requires_grad:
                var._grad = old + _wrap(g)
            else:
                od = old._data
                if od.dtype == g.dtype:
                    od += g
                else:
                    od += g.astype(od.dtype)
                old._vc[0] += 1
    if obs is not None:
        obs.on_accumulate(var, var._grad)
    post = var._post_acc_hooks
    if post:
        for hook in list(post):
            hook(var)
    if not acc._plain and acc._hooks:
        for hook in list(acc._hooks):
            hook((), (g if graph else _wrap(g),))
