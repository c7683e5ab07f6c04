"""``DistributedDataParallel``: each rank runs the module on its part of the batch; gradients
are averaged over the ranks during ``backward`` so every replica takes the same step.

As in PyTorch: parameters and buffers are broadcast from rank 0 at construction (buffers again
before each forward); parameters are assigned to per-dtype buckets (1 MB for the first with the
default cap, ``bucket_cap_mb`` = 25 MB for the rest, in reverse parameter order); a
post-accumulate-grad hook, run after the parameter's own ones, hands each gradient times
1 / world size to its bucket, and a bucket whose gradients are all in is all-reduced at once,
in bucket order on every rank; when the last bucket is done the averages are in ``.grad``.
``no_sync()`` skips the reduction (gradients accumulate locally and the next synchronised
backward reduces the sum).  ``find_unused_parameters`` walks the output's graph after
forward; the parameters it does not reach count as ready at the first hook of backward (with
their current ``.grad``, zeros when it is ``None``), and a parameter no rank used keeps its
``.grad``.

Copies: with ``gradient_as_bucket_view=True`` each ``.grad`` becomes a view into its bucket
(PyTorch's option), so nothing is copied back.  By default a bucket's small gradients are
copied into its flat buffer and the averages copied back, while a gradient of at least
``_OWN_CALL_BYTES`` is scaled and all-reduced in place in its own ``.grad`` (one MPI call of
its own, in the bucket's fixed order): one pass over its memory instead of two.  The result is
PyTorch's (the same ``.grad`` tensors, updated in place); only code that reads such a
gradient later in the same backward, once its bucket was reduced, sees the average already
(PyTorch's would still show the local gradient there).
"""
from __future__ import annotations

import contextlib
import time

import numpy as np

from ..._tensor import Tensor
from ..modules.module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024
# gradients at least this large are reduced in their own .grad rather than through the bucket's
# flat buffer: a copy in and a copy out cost more than one more (bandwidth-bound) MPI call
_OWN_CALL_BYTES = 1024 * 1024
_UNFINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. This "
    "error indicates that your module has parameters that were not used in producing loss. You "
    "can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n"
    "making sure all `forward` function outputs participate in calculating loss. \n"
    "If you already have done the above, then the distributed data parallel module wasn't able "
    "to locate the output tensors in the return value of your module's `forward` function. "
    "Please include the loss function and the structure of the return value of `forward` of your "
    "module when reporting this issue (e.g. list, dict, iterable).")
_NOT_BUCKET_VIEW = (
    "Detected at least one parameter gradient is not the expected DDP bucket view with "
    "gradient_as_bucket_view=True. This may happen (for example) if multiple allreduce hooks "
    "were registered onto the same parameter. If you hit this error, please file an issue with "
    "a minimal repro.")


class _Bucket:
    __slots__ = ("index", "params", "flat", "small", "own", "pending")

    def __init__(self, index, params, flat, small, own):
        self.index = index
        self.params = params    # indices into DDP's parameter list, in assignment order
        self.flat = flat        # the bucket's buffer (allocated once)
        self.small = small      # flat[:small] holds the gradients reduced together
        self.own = own          # (index, staging view) of the gradients with a call of their own
        self.pending = 0


def _same_array(a, b):
    """``a`` is ``b``'s memory with ``b``'s shape and strides (PyTorch's is_alias_of for a
    gradient and its bucket view)."""
    return a is b or (type(a) is np.ndarray and a.shape == b.shape and a.strides == b.strides
                      and a.dtype == b.dtype and a.__array_interface__["data"][0]
                      == b.__array_interface__["data"][0])


def _tensors_in(obj, out):
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


class DistributedDataParallel(Module):
    """Data-parallel training of ``module`` over the ranks of ``process_group``."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=True, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None):
        super().__init__()
        from ...distributed import distributed_c10d as c10d
        pg = c10d._pg(process_group)
        if pg is None:
            raise RuntimeError("DistributedDataParallel: this rank is not in the process group")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self.module = module
        self.process_group = pg
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        # PyTorch's smaller first bucket only with the default cap
        self._first_cap = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._c10d = c10d
        self._params = params
        self._world = pg.size()
        self._scale = 1.0 / self._world   # PyTorch multiplies by 1 / world size
        self._verify_same_model()
        if init_sync:
            self._broadcast([p._data for p in params] + [b._data for b in module.buffers()])
        self._make_buckets()
        self._comm_seconds = 0.0  # time inside the all-reduce calls, summed (for benchmarks)
        self._expect = False      # hooks of this backward reduce (set by a synchronised forward)
        self._started = False     # a hook has fired since the last forward
        self._unused = ()         # parameters forward did not reach, marked at the first hook
        self._reducer_hooks = [self._hook_for(i) for i in range(len(params))]
        self._grad_hooks = [p.register_post_accumulate_grad_hook(h)
                            for p, h in zip(params, self._reducer_hooks)]

    # -- set-up ---------------------------------------------------------------------------
    def _verify_same_model(self):
        pg = self._c10d
        mine = [(tuple(p._data.shape), p._data.dtype.str) for p in self._params]
        self._c10d._check(self.process_group, "DDP_INIT")
        every = pg._gather_blobs(self.process_group, mine)
        for r, theirs in enumerate(every):
            if len(theirs) != len(mine):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank "
                                   f"{self.process_group.rank()} has {len(mine)} params, while "
                                   f"rank {r} has inconsistent {len(theirs)} params.")
            for i, (a, b) in enumerate(zip(mine, theirs)):
                if a != b:
                    raise RuntimeError(
                        f"DDP expects same model across all ranks, but Rank "
                        f"{self.process_group.rank()} has parameter {i} of shape {list(a[0])} "
                        f"({a[1]}), while rank {r} has {list(b[0])} ({b[1]}).")

    def _broadcast(self, arrays):
        """Rank 0's values into ``arrays`` on every rank, one broadcast per dtype."""
        c10d, pg = self._c10d, self.process_group
        if pg.size() == 1:
            return
        by_dtype = {}
        for a in arrays:
            by_dtype.setdefault(a.dtype, []).append(a)
        for dt, arrs in by_dtype.items():
            flat = np.concatenate([a.reshape(-1) for a in arrs])
            if flat.dtype.char not in c10d._NATIVE:
                flat = flat.view(np.uint8) if flat.dtype.itemsize else flat
            c10d._blocking(pg, "DistributedDataParallel broadcast",
                           lambda: pg._comm.Bcast(flat, 0))
            flat = flat.view(dt)
            off = 0
            for a in arrs:
                a[...] = flat[off:off + a.size].reshape(a.shape)
                off += a.size

    def _make_buckets(self):
        """PyTorch's assignment: reverse parameter order, per dtype, 1 MB (with the default
        cap) then the cap.  Each bucket gets one buffer; by default its small gradients come
        first in it (one all-reduce for all of them) and each large one has a slot of its own
        there, used only when its ``.grad`` cannot be reduced in place."""
        buckets, open_ = [], {}
        limits = {}
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            dt = p._data.dtype
            b = open_.get(dt)
            if b is None:
                b = open_[dt] = [[], 0]
            b[0].append(i)
            b[1] += p._data.nbytes
            limit = limits.get(dt, self._first_cap)
            if b[1] >= limit:
                buckets.append(b[0])
                limits[dt] = self.bucket_bytes_cap
                del open_[dt]
        buckets.extend(b[0] for b in open_.values())
        buckets.sort(key=lambda idx: -max(idx))   # launch order: the last parameters first
        params = self._params
        self._buckets = []
        self._bucket_of = [None] * len(params)
        self._views = [None] * len(params)     # each parameter's slot in its bucket's buffer
        self._own = [False] * len(params)      # reduced in place in its .grad when it can be
        for k, idx in enumerate(buckets):
            if self.gradient_as_bucket_view:
                small, own = idx, []
            else:
                small = [i for i in idx if params[i]._data.nbytes < _OWN_CALL_BYTES]
                own = [i for i in idx if params[i]._data.nbytes >= _OWN_CALL_BYTES]
            dt = params[idx[0]]._data.dtype
            flat = np.zeros(sum(params[i]._data.size for i in idx), dt)
            off = 0
            for i in small + own:
                d = params[i]._data
                self._views[i] = flat[off:off + d.size].reshape(d.shape)
                self._own[i] = i in own
                self._bucket_of[i] = k
                off += d.size
            b = _Bucket(k, idx, flat, sum(params[i]._data.size for i in small),
                        [(i, self._views[i]) for i in own])
            self._buckets.append(b)
        for i in range(len(params)):
            self._bucket_of[i] = self._buckets[self._bucket_of[i]]
        self._inplace = [None] * len(params)   # this step's .grad arrays reduced in place
        if self.gradient_as_bucket_view:
            from ...ops.views import make_view
            self._bucket_tensors = [Tensor._make(b.flat) for b in self._buckets]
            self._grad_views = [make_view(self._bucket_tensors[self._bucket_of[i].index],
                                          self._views[i]) for i in range(len(params))]
            # PyTorch's initialize_bucket_views: an existing gradient moves into its bucket
            for i, p in enumerate(params):
                g = p._grad
                if g is not None and not _same_array(g._data, self._views[i]):
                    np.copyto(self._views[i], g._data, casting="unsafe")
                    p._grad = self._grad_views[i]

    # -- each step ------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        from ...autograd.grad_mode import is_grad_enabled
        sync = is_grad_enabled() and self.require_backward_grad_sync
        if sync:
            if self._started:
                raise RuntimeError(_UNFINISHED)
            self._prepare()
        if self.broadcast_buffers and self.require_forward_param_sync:
            bufs = [b._data for b in self.module.buffers()]
            if bufs:
                self._broadcast(bufs)
        out = self.module(*inputs, **kwargs)
        if sync and self.find_unused_parameters:
            self._find_unused(out)
        return out

    def _prepare(self):
        self._expect = True
        n = len(self._params)
        for p, h in zip(self._params, self._reducer_hooks):
            hooks = p._post_acc_hooks
            if hooks and hooks[-1] is not h and h in hooks:
                # PyTorch's reducer runs after the tensor's own post-accumulate hooks, also
                # those registered after DDP
                hooks.remove(h)
                hooks.append(h)
        self._ready = [False] * n
        self._local_used = np.zeros(n, np.int32)
        self._inplace = [None] * n
        self._claimed = set()
        self._unused = ()
        self._next = 0
        for b in self._buckets:
            b.pending = len(b.params)

    def _find_unused(self, out):
        """The parameters the output's graph does not reach (marked ready at the first hook of
        backward, as PyTorch's reducer does)."""
        seen, stack, used = set(), [], set()
        for t in _tensors_in(out, []):
            if t._grad_fn is not None:
                stack.append(t._grad_fn)
            elif t._requires_grad:
                used.add(id(t))
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            var = getattr(fn, "_var", None)  # an AccumulateGrad's leaf
            if var is not None:
                used.add(id(var))
            for nxt, _ in fn.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    stack.append(nxt)
        self._unused = [i for i, p in enumerate(self._params) if id(p) not in used]

    def _mark_unused(self):
        unused, self._unused = self._unused, ()
        for i in unused:
            self._ready[i] = True
            self._copy_in(i, self._params[i], False)
            self._bucket_of[i].pending -= 1

    def _copy_in(self, i, p, in_place):
        """Put parameter ``i``'s gradient, times 1 / world size, where its bucket reduces it."""
        g = p._grad
        view = self._views[i]
        if g is None:
            view.fill(0)
        elif self.gradient_as_bucket_view:
            if _same_array(g._data, view):   # already the bucket view: scale it in place
                if self._world > 1:
                    np.multiply(view, self._scale, out=view)
            else:                            # a new or replaced gradient moves into the bucket
                np.multiply(g._data, self._scale, out=view, casting="unsafe")
                p._grad = self._grad_views[i]
        elif in_place and self._own[i] and self._reducible_in_place(i, p, g):
            self._inplace[i] = g._data       # scaled just before its all-reduce
        else:
            np.multiply(g._data, self._scale, out=view, casting="unsafe")

    def _reducible_in_place(self, i, p, g):
        """A gradient reduced in its own ``.grad``: a plain C-contiguous array of the bucket's
        dtype whose memory no other gradient of this step is reduced in, and DDP's hook the last
        of the parameter's (PyTorch runs the reducer after the tensor's own hooks)."""
        d = g._data
        if (g._grad_fn is not None or g._requires_grad or type(d) is not np.ndarray
                or not d.flags.c_contiguous or not d.flags.writeable
                or d.dtype != self._views[i].dtype
                or p._post_acc_hooks[-1] is not self._reducer_hooks[i]):
            return False
        root = id(d if d.base is None else d.base)
        if root in self._claimed:
            return False
        self._claimed.add(root)
        return True

    def _hook_for(self, i):
        def hook(p):
            if not self._expect:
                return
            if self._unused:
                self._mark_unused()
            b = self._bucket_of[i]
            if self._ready[i]:
                if self._local_used[i]:
                    raise RuntimeError(
                        f"Expected to mark a variable ready only once. This error is caused by "
                        f"one of the following reasons: 1) Use of a module parameter outside the "
                        f"`forward` function. 2) Reused parameters in multiple reentrant backward "
                        f"passes. Parameter at index {i} has been marked as ready twice.")
                b.pending += 1   # counted as unused after forward, but a gradient came after all
            self._started = True
            self._ready[i] = True
            self._local_used[i] = 1
            self._copy_in(i, p, True)
            b.pending -= 1
            if b.pending == 0:
                self._launch_ready()
        return hook

    def _launch_ready(self):
        buckets = self._buckets
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            self._reduce(buckets[self._next])
            self._next += 1
        if self._next == len(buckets):
            self._finalize()

    def _reduce(self, b):
        """All-reduce bucket ``b`` now (blocking, the same calls in the same order on every
        rank): its flat part, then each gradient with a call of its own.  A blocking call as
        soon as the bucket is full: MPI libraries without an asynchronous progress thread
        (Open MPI's and MPICH's defaults) move a non-blocking one only inside MPI calls, so
        Iallreduce + Waitall ran every bucket at the end anyway, and through the slower
        non-blocking algorithms."""
        world, scale, inplace = self._world, self._scale, self._inplace
        bufs = [b.flat[:b.small]] if b.small else []
        for i, view in b.own:
            a = inplace[i]
            if a is None:
                bufs.append(view)
            else:
                if world > 1:
                    np.multiply(a, scale, out=a)
                bufs.append(a)
        if world == 1:
            return
        pg, c10d = self.process_group, self._c10d
        MPI = c10d._S.MPI
        comm = pg._comm
        t0 = time.perf_counter()
        for buf in bufs:
            c10d._blocking(pg, "DistributedDataParallel gradient all-reduce",
                           lambda buf=buf: comm.Allreduce(MPI.IN_PLACE, buf, MPI.SUM))
        self._comm_seconds += time.perf_counter() - t0

    def _finalize(self):
        pg, c10d = self.process_group, self._c10d
        used = None
        if self.find_unused_parameters:
            used = self._local_used.copy()
            if pg.size() > 1:
                c10d._blocking(pg, "DistributedDataParallel unused-parameter map",
                               lambda: pg._comm.Allreduce(c10d._S.MPI.IN_PLACE, used,
                                                          c10d._S.MPI.MAX))
        views, inplace = self._views, self._inplace
        if self.gradient_as_bucket_view:
            for i, p in enumerate(self._params):
                if used is not None and not used[i]:
                    continue   # no rank used it: .grad stays as it was
                g = p._grad
                if g is None:
                    p._grad = self._grad_views[i]
                elif not _same_array(g._data, views[i]):
                    raise RuntimeError(_NOT_BUCKET_VIEW)
            for t in self._bucket_tensors:
                t._vc[0] += 1
        else:
            for i, p in enumerate(self._params):
                if used is not None and not used[i]:
                    continue
                g = p._grad
                avg = inplace[i]
                if avg is None:
                    avg = views[i]
                elif g is not None and g._data is avg:
                    g._vc[0] += 1
                    continue
                if g is None:
                    p._grad = Tensor._make(avg.astype(p._data.dtype, copy=True))
                else:
                    np.copyto(g._data, avg, casting="unsafe")
                    g._vc[0] += 1
            self._inplace = [None] * len(inplace)   # keeps no gradient alive
        self._expect = False
        self._started = False

    @contextlib.contextmanager
    def no_sync(self):
        """Within this context gradients accumulate locally without being all-reduced."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state, hook):
        raise NotImplementedError("DistributedDataParallel.register_comm_hook is not supported "
                                  "by dyngrad (gradients are averaged with MPI all-reduce)")

    def _get_ddp_logging_data(self):
        return {"world_size": self.process_group.size(), "bucket_cap_bytes": self.bucket_bytes_cap,
                "num_buckets": len(self._buckets), "backend_name": self.process_group.name()}
