"""``DistributedDataParallel``: each rank runs the module on its part of the batch; gradients
are averaged over the ranks during ``backward`` so every replica takes the same step.

As in PyTorch: parameters and buffers are broadcast from rank 0 at construction (buffers again
before each forward); gradients are copied, divided by the world size, into per-dtype buckets
(1 MB for the first with the default cap, ``bucket_cap_mb`` = 25 MB for the rest, filled in
reverse parameter order) from post-accumulate-grad hooks, and each bucket's all-reduce is started (non-blocking)
as soon as all its gradients are in, in bucket order; the last hook waits for them and writes
the averages back into ``.grad``.  ``no_sync()`` skips the reduction (gradients accumulate
locally and the next synchronised backward reduces the sum).  ``find_unused_parameters``
walks the output's graph after forward and counts parameters it does not reach as ready; a
parameter no rank used keeps its ``.grad`` untouched.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np

from ..._tensor import Tensor
from ..modules.module import Module

_FIRST_BUCKET_BYTES = 1024 * 1024
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


class _Bucket:
    __slots__ = ("index", "params", "offsets", "flat", "pending", "req")

    def __init__(self, index, params, dtype):
        self.index = index
        self.params = params            # indices into DDP's parameter list
        self.offsets = []
        self.flat = None
        self.pending = 0
        self.req = None


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
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        # PyTorch's smaller first bucket only with the default cap
        self._first_cap = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._c10d = c10d
        self._params = params
        self._verify_same_model()
        if init_sync:
            self._broadcast([p._data for p in params] + [b._data for b in module.buffers()])
        self._make_buckets()
        self._comm_seconds = 0.0  # time inside the all-reduce calls, summed (for benchmarks)
        self._expect = False      # hooks of this backward reduce (set by a synchronised forward)
        self._started = False     # a hook has fired since the last forward
        self._grad_hooks = [p.register_post_accumulate_grad_hook(self._hook_for(i))
                       for i, p in enumerate(params)]

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
        cap) then the cap."""
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
        self._buckets = []
        self._where = [None] * len(self._params)
        for k, idx in enumerate(buckets):
            b = _Bucket(k, idx, self._params[idx[0]]._data.dtype)
            off = 0
            for i in idx:
                n = self._params[i]._data.size
                b.offsets.append(off)
                self._where[i] = (b, off, n)
                off += n
            b.flat = np.zeros(off, self._params[idx[0]]._data.dtype)
            self._buckets.append(b)

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
            self._mark_unused(out)
        return out

    def _prepare(self):
        self._expect = True
        self._ready = [False] * len(self._params)
        self._local_used = np.zeros(len(self._params), np.int32)
        self._next = 0
        for b in self._buckets:
            b.pending = len(b.params)
            b.req = None

    def _mark_unused(self, out):
        """Parameters the output's graph does not reach get zeros and count as ready."""
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
            var = getattr(fn, "_var", None)
            if var is not None:
                v = var()
                if v is not None:
                    used.add(id(v))
            for nxt, _ in fn.next_functions:
                if nxt is not None and id(nxt) not in seen:
                    stack.append(nxt)
        for i, p in enumerate(self._params):
            if id(p) not in used:
                b, off, n = self._where[i]
                b.flat[off:off + n] = 0
                self._ready[i] = True
                b.pending -= 1

    def _hook_for(self, i):
        def hook(p):
            if not self._expect:
                return
            if self._ready[i]:
                if self._local_used[i]:
                    raise RuntimeError(
                        f"Expected to mark a variable ready only once. This error is caused by "
                        f"one of the following reasons: 1) Use of a module parameter outside the "
                        f"`forward` function. 2) Reused parameters in multiple reentrant backward "
                        f"passes. Parameter at index {i} has been marked as ready twice.")
                # counted as unused after forward, but a gradient came after all
                b, off, n = self._where[i]
                b.pending += 1
            self._started = True
            self._ready[i] = True
            self._local_used[i] = 1
            b, off, n = self._where[i]
            g = p._grad
            if g is None:
                b.flat[off:off + n] = 0
            else:
                np.divide(g._data.reshape(-1), self.process_group.size(),
                          out=b.flat[off:off + n], casting="unsafe")
            b.pending -= 1
            if b.pending == 0:
                self._launch_ready()
        return hook

    def _launch_ready(self):
        pg = self.process_group
        c10d = self._c10d
        MPI = c10d._S.MPI
        buckets = self._buckets
        while self._next < len(buckets) and buckets[self._next].pending == 0:
            b = buckets[self._next]
            if pg.size() > 1:
                # a blocking all-reduce as soon as the bucket is full: MPI libraries without an
                # asynchronous progress thread (Open MPI's and MPICH's defaults) move a
                # non-blocking one only inside MPI calls, so Iallreduce + Waitall ran every
                # bucket at the end anyway, and through the slower non-blocking algorithms
                t0 = time.perf_counter()
                c10d._blocking(pg, "DistributedDataParallel gradient all-reduce",
                               lambda: pg._comm.Allreduce(MPI.IN_PLACE, b.flat, MPI.SUM))
                self._comm_seconds += time.perf_counter() - t0
            self._next += 1
        if self._next == len(buckets):
            self._finalize()

    def _finalize(self):
        pg, c10d = self.process_group, self._c10d
        reqs = [b.req for b in self._buckets if b.req is not None]
        used = None
        if reqs:
            MPI = c10d._S.MPI
            t0 = time.perf_counter()
            c10d._blocking(pg, "DistributedDataParallel gradient all-reduce",
                           lambda: MPI.Request.Waitall(reqs))
            self._comm_seconds += time.perf_counter() - t0
        if self.find_unused_parameters:
            used = self._local_used.copy()
            if pg.size() > 1:
                c10d._blocking(pg, "DistributedDataParallel unused-parameter map",
                               lambda: pg._comm.Allreduce(c10d._S.MPI.IN_PLACE, used,
                                                          c10d._S.MPI.MAX))
        for i, p in enumerate(self._params):
            if used is not None and not used[i]:
                continue   # no rank used it: .grad stays as it was
            b, off, n = self._where[i]
            avg = b.flat[off:off + n].reshape(p._data.shape)
            g = p._grad
            if g is None:
                p._grad = Tensor._make(avg.astype(p._data.dtype, copy=True))
            else:
                g._data[...] = avg
                g._vc[0] += 1
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
