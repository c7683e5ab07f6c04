"""torch.distributed's process groups and collectives, on MPI (mpi4py).

Every rank is an MPI process: ``init_process_group`` (backend "gloo" or "mpi") takes the rank
and world size from its arguments, from torchrun's environment (RANK, WORLD_SIZE) or from the
MPI launcher's, and checks them against MPI's world.  Tensors are reduced in place in their
own NumPy buffers (no copy when contiguous).

Faults: each blocking call is watched; a call that does not finish within the group's
``timeout`` prints which rank and collective hung and aborts the job.  An exception nobody
catches on one rank aborts all ranks (instead of leaving them blocked).  Before each
collective the ranks compare a fingerprint (collective, sequence number, shape, dtype, root),
so different shapes or collectives called in a different order are reported by rank instead
of hanging or reducing garbage.
"""
from __future__ import annotations

import datetime
import enum
import os
import pickle
import sys
import threading
import time
import warnings

import numpy as np

from .._tensor import Tensor
from . import _mpi

__all__ = [
    "Backend", "ReduceOp", "RedOpType", "ProcessGroup", "GroupMember", "group", "Work",
    "DistError", "DistBackendError", "DistNetworkError", "DistStoreError",
    "init_process_group", "destroy_process_group", "is_initialized", "is_available",
    "is_mpi_available", "is_gloo_available", "is_nccl_available", "is_torchelastic_launched",
    "get_rank", "get_world_size", "get_backend", "new_group", "get_process_group_ranks",
    "get_global_rank", "get_group_rank", "barrier", "monitored_barrier", "broadcast",
    "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "scatter", "gather", "send", "recv", "isend", "irecv", "P2POp",
    "batch_isend_irecv", "broadcast_object_list", "all_gather_object", "gather_object",
    "scatter_object_list", "default_pg_timeout",
]

default_pg_timeout = datetime.timedelta(minutes=30)
NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")


class DistError(RuntimeError):
    """Base of torch.distributed's errors."""


class DistBackendError(DistError):
    """An error in the communication backend (here: MPI)."""


class DistNetworkError(DistError):
    pass


class DistStoreError(DistError):
    pass


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


class ReduceOp:
    """``ReduceOp.SUM`` ... as in torch.distributed (members of ``ReduceOp.RedOpType``)."""
    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX
    BAND = RedOpType.BAND
    BOR = RedOpType.BOR
    BXOR = RedOpType.BXOR
    PREMUL_SUM = RedOpType.PREMUL_SUM


class Backend(str):
    """A backend name: ``Backend("gloo") == "gloo"``.  "gloo" and "mpi" both run on MPI."""
    UNDEFINED = "undefined"
    GLOO = "gloo"
    MPI = "mpi"
    NCCL = "nccl"
    UCC = "ucc"
    XCCL = "xccl"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        return str.__new__(cls, name.lower())


class ProcessGroup:
    """A set of ranks sharing an MPI communicator."""

    def __init__(self, comm, ranks, backend, timeout):
        self._comm = comm
        self._ranks = list(ranks)
        self._backend = Backend(backend)
        self._timeout = timeout
        self._seq = 0

    def rank(self) -> int:
        return self._comm.Get_rank()

    def size(self) -> int:
        return self._comm.Get_size()

    def name(self) -> str:
        return str(self._backend)

    def __repr__(self):
        return f"<ProcessGroup backend={self._backend} ranks={self._ranks}>"


class GroupMember:
    """``GroupMember.WORLD`` is the default group once initialised; ranks outside a group get
    ``NON_GROUP_MEMBER`` from ``new_group``."""
    WORLD = None
    NON_GROUP_MEMBER = -100


class group:  # noqa: N801 - torch.distributed.group
    WORLD = None


class _State:
    default = None       # the world ProcessGroup
    groups = []          # groups made by new_group, freed with the world
    inflight = None      # (deadline, description, group) of the blocking call in progress
    watchdog = None
    MPI = None


_S = _State


# -- init / teardown -------------------------------------------------------------------------
def _parse_backend(backend):
    if backend is None:
        return Backend.GLOO
    name = str(backend).lower()
    if ":" in name:  # "cpu:gloo,cuda:nccl"
        pairs = dict(p.split(":", 1) for p in name.split(",") if ":" in p)
        name = pairs.get("cpu", next(iter(pairs.values())))
    if name in (Backend.GLOO, Backend.MPI):
        return Backend(name)
    if name in (Backend.NCCL, Backend.UCC, Backend.XCCL):
        raise RuntimeError(f"Distributed package doesn't have {name.upper()} built in")
    raise AssertionError(f"Unknown backend type {backend}")


def _env_int(name):
    v = os.environ.get(name)
    if v is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} expected, but not set")
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: "
                         f"environment variable {name} is not an integer: {v!r}") from None


def _timeout_seconds(timeout):
    if timeout is None:
        return default_pg_timeout.total_seconds()
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout)}")
    return timeout.total_seconds()


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Join the default process group.  Rank and world size come from the arguments, from
    ``RANK``/``WORLD_SIZE`` (as torchrun sets them) or from the MPI launcher; all processes
    must have been started by one MPI launcher (``dyngrad run --nproc-per-node N``,
    ``mpirun -n N``)."""
    if _S.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    seconds = _timeout_seconds(timeout)
    launched = _mpi.launcher_env()
    if init_method is not None and init_method != "env://" and store is None:
        if not (init_method.startswith("tcp://") or init_method.startswith("file://")):
            raise ValueError(f"No rendezvous handler for {init_method.split('://')[0]}://")
        if rank < 0 or world_size < 0:
            raise ValueError(f"Error initializing torch.distributed using "
                             f"{init_method.split('://')[0]}:// rendezvous: rank and world_size "
                             f"must be given")
    if rank < 0:
        rank = _env_int("RANK") if launched is None or "RANK" in os.environ else launched[0]
    if world_size < 0:
        world_size = (_env_int("WORLD_SIZE") if launched is None or "WORLD_SIZE" in os.environ
                      else launched[1])
    if launched is None and (init_method in (None, "env://")) and store is None:
        # torchrun's rendezvous address: not used on MPI, but PyTorch requires it here
        if not os.environ.get("MASTER_ADDR"):
            _env_int("MASTER_ADDR")
        _env_int("MASTER_PORT")
    backend = _parse_backend(backend)   # after the rendezvous checks, as PyTorch
    if not 0 <= rank < world_size:
        raise ValueError(f"Invalid rank {rank}, world size {world_size}: rank must be in "
                         f"[0, world_size)")
    MPI = _mpi.load()
    _S.MPI = MPI
    world = MPI.COMM_WORLD
    if world.Get_size() != world_size or world.Get_rank() != rank:
        how = (f"`dyngrad run --nproc-per-node {world_size} script.py` or "
               f"`mpirun -n {world_size} python script.py`")
        raise DistBackendError(
            f"init_process_group: this process was asked to be rank {rank} of {world_size}, but "
            f"it is rank {world.Get_rank()} of an MPI world of {world.Get_size()}. "
            f"dyngrad.distributed runs on MPI, so all ranks must be started together by an MPI "
            f"launcher: {how}")
    comm = world.Dup()
    pg = ProcessGroup(comm, range(world_size), backend, seconds)
    _S.default = pg
    _S.groups = []
    group.WORLD = GroupMember.WORLD = pg
    _install_fault_handlers()
    _blocking(pg, "init_process_group (barrier)", comm.Barrier)


def destroy_process_group(group=None):  # noqa: F811 - torch's argument name
    """Leave ``group`` (default: all groups, after which ``init_process_group`` may be called
    again)."""
    if _S.default is None:
        raise AssertionError("Process group cannot be None")
    if group is None or group is _S.default:
        for g in _S.groups + [_S.default]:
            try:
                g._comm.Free()
            except Exception:  # noqa: BLE001 - freeing is best effort
                pass
        _S.default = None
        _S.groups = []
        globals()["group"].WORLD = GroupMember.WORLD = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group in _S.groups:
        _S.groups.remove(group)
        group._comm.Free()


def is_initialized() -> bool:
    return _S.default is not None


def is_available() -> bool:
    return True


def is_mpi_available() -> bool:
    return _mpi.available()


def is_gloo_available() -> bool:
    """"gloo" is accepted and runs on MPI."""
    return _mpi.available()


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _get_default_group():
    if _S.default is None:
        raise ValueError(NOT_INITIALIZED)
    return _S.default


def _pg(group, op=None):
    """The group to use, or None (after PyTorch's warning) when this rank is not in it."""
    if _S.default is None:
        raise ValueError(NOT_INITIALIZED)
    if group is None or group is GroupMember.WORLD:
        return _S.default
    if group is GroupMember.NON_GROUP_MEMBER:
        if op is not None:
            warnings.warn(f"Running {op} on global rank {_S.default.rank()} which does not belong "
                          f"to the given group.")
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    return group


def get_rank(group=None) -> int:
    pg = _pg(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group=None) -> int:
    pg = _pg(group)
    return -1 if pg is None else pg.size()


def get_backend(group=None):
    pg = _pg(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg._backend


def get_process_group_ranks(group):
    pg = _pg(group)
    return list(pg._ranks)


def get_global_rank(group, group_rank: int) -> int:
    pg = _pg(group)
    if not 0 <= group_rank < len(pg._ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {pg}")
    return pg._ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    pg = _pg(group)
    try:
        return pg._ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}") from None


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None, sort_ranks=True):
    """A group of some ranks; every rank of the world must call it (as in PyTorch)."""
    world = _get_default_group()
    n = world.size()
    if ranks is None:
        ranks = list(range(n))
    ranks = sorted(int(r) for r in ranks) if sort_ranks else [int(r) for r in ranks]
    if len(ranks) > n:
        raise ValueError("the new group's world size should be less or equal to the world size "
                         "set by init_process_group")
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError("The new group's rank should be within the world_size set by "
                             "init_process_group")
    seconds = world._timeout if timeout is None else _timeout_seconds(timeout)
    _check(world, "NEW_GROUP", shape=tuple(ranks))
    wc = world._comm
    mg = wc.Get_group().Incl(ranks)
    comm = _blocking(world, "new_group", lambda: wc.Create(mg))
    mg.Free()
    if comm == _S.MPI.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, ranks, _parse_backend(backend) if backend else world._backend,
                      seconds)
    _S.groups.append(pg)
    return pg


# -- faults: watchdog and abort on an uncaught exception --------------------------------------
def _blocking(pg, what, fn):
    """Run one blocking MPI call under the watchdog."""
    _S.inflight = (time.monotonic() + pg._timeout, what, pg)
    try:
        return fn()
    finally:
        _S.inflight = None


def _abort(message):
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    _S.MPI.COMM_WORLD.Abort(1)


def _watch():
    while True:
        f = _S.inflight
        period = 0.2 if f is None else min(1.0, max(0.02, f[2]._timeout / 20))
        time.sleep(period)
        f = _S.inflight
        if f is not None and time.monotonic() > f[0]:
            pg = f[2]
            _abort(f"[rank {_S.MPI.COMM_WORLD.Get_rank()}] dyngrad.distributed: {f[1]} did not "
                   f"complete within the timeout of {pg._timeout:g} s; another rank of "
                   f"{pg._ranks} did not join it (it died, exited, hangs or called a different "
                   f"collective). Aborting all ranks.")


_PREV_HOOK = None


def _excepthook(tp, value, tb):
    (_PREV_HOOK or sys.__excepthook__)(tp, value, tb)
    pg = _S.default
    if pg is not None and _S.MPI.COMM_WORLD.Get_size() > 1:
        _abort(f"[rank {_S.MPI.COMM_WORLD.Get_rank()}] dyngrad.distributed: uncaught "
               f"{tp.__name__}; aborting all {_S.MPI.COMM_WORLD.Get_size()} ranks so that none "
               f"waits for this one.")


def _install_fault_handlers():
    global _PREV_HOOK
    if sys.excepthook is not _excepthook:
        _PREV_HOOK = sys.excepthook
        sys.excepthook = _excepthook
    if _S.watchdog is None:
        _S.watchdog = threading.Thread(target=_watch, name="dyngrad-distributed-watchdog",
                                       daemon=True)
        _S.watchdog.start()


# -- fingerprints: the same collective, in the same order, with matching tensors --------------
_OPS = ["BARRIER", "BROADCAST", "ALLREDUCE", "REDUCE", "ALLGATHER", "GATHER", "SCATTER",
        "REDUCE_SCATTER", "BROADCAST_OBJECT", "ALLGATHER_OBJECT", "GATHER_OBJECT",
        "SCATTER_OBJECT", "NEW_GROUP", "DDP_INIT"]
_CHECKS = os.environ.get("DYNGRAD_DISTRIBUTED_CHECKS", "1") != "0"


_DTYPE_NAMES = {np.dtype(k).num: v for k, v in (
    ("float32", "Float"), ("float64", "Double"), ("float16", "Half"), ("int64", "Long"),
    ("int32", "Int"), ("int16", "Short"), ("int8", "Char"), ("uint8", "Byte"), ("bool", "Bool"),
    ("complex64", "ComplexFloat"), ("complex128", "ComplexDouble"))}


def _describe(row):
    seq, op, dt, numel, ndim, *rest = row.tolist()
    shape = rest[:ndim] if ndim <= 4 else rest[:4] + ["..."]
    dname = _DTYPE_NAMES.get(dt, "-" if dt < 0 else str(dt))
    return (f"CollectiveFingerPrint(SequenceNumber={seq}, OpType={_OPS[op]}, "
            f"TensorShape={shape}, TensorDtypes={dname}, Root={row[-1]})")


def _check(pg, op, arr=None, root=-1, shape=None):
    """Compare (sequence, collective, dtype, shape, root) across the group's ranks."""
    pg._seq += 1
    if not _CHECKS or pg._comm.Get_size() == 1:
        return
    fp = np.full(11, -1, np.int64)
    fp[0] = pg._seq
    fp[1] = _OPS.index(op)
    if arr is not None:
        shape = arr.shape
        fp[2] = arr.dtype.num
    if shape is not None:
        fp[3] = int(np.prod(shape)) if len(shape) else 1
        fp[4] = len(shape)
        fp[5:5 + min(len(shape), 4)] = shape[:4]
        fp[9] = hash(tuple(shape)) & 0x7FFFFFFFFFFF
    fp[10] = root
    n = pg._comm.Get_size()
    rows = np.empty((n, 11), np.int64)
    _blocking(pg, f"{op.lower()} (sequence {pg._seq})", lambda: pg._comm.Allgather(fp, rows))
    bad = [r for r in range(n) if not np.array_equal(rows[r], fp)]
    if bad:
        me = pg.rank()
        raise RuntimeError(
            f"Detected mismatch between collectives on ranks. Rank {pg._ranks[me]} is running "
            f"collective: {_describe(fp)}, but Rank {pg._ranks[bad[0]]} is running collective: "
            f"{_describe(rows[bad[0]])}.")


# -- tensors and buffers ----------------------------------------------------------------------
def _tensor(t, name="tensor"):
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(t)} instead.")
    return t


def _tensor_list(ts, name):
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(ts)} instead.")
    return ts


_NATIVE = set("fdFDbhilqBHILQ?")


def _buf(t):
    """A C-contiguous MPI-typed array for ``t``: its own data when possible, else a copy
    (float16/bfloat16 as float32); ``_done`` writes a copy back."""
    a = t._data
    if a.flags.c_contiguous and a.flags.writeable and a.dtype.char in _NATIVE:
        return a
    if a.dtype.char in _NATIVE:
        return np.ascontiguousarray(a)
    return a.astype(np.float32)


def _done(t, buf):
    a = t._data
    if buf is not a:
        a[...] = buf.reshape(a.shape).astype(a.dtype, copy=False)


def _mpi_op(op, arr):
    if not isinstance(op, RedOpType):
        raise TypeError(f"all_reduce(): incompatible function arguments: op must be a "
                        f"torch.distributed.ReduceOp, got {op!r}")
    MPI = _S.MPI
    if arr.dtype.char == "?":
        return {RedOpType.SUM: MPI.LOR, RedOpType.MAX: MPI.LOR, RedOpType.BOR: MPI.LOR,
                RedOpType.PRODUCT: MPI.LAND, RedOpType.MIN: MPI.LAND, RedOpType.BAND: MPI.LAND,
                RedOpType.BXOR: MPI.LXOR}.get(op) or _bad_op(op)
    if op in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR) and arr.dtype.kind not in "iub":
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op == RedOpType.AVG and arr.dtype.kind in "iub":
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_type_name(arr)}")
    return {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
            RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX, RedOpType.BAND: MPI.BAND,
            RedOpType.BOR: MPI.BOR, RedOpType.BXOR: MPI.BXOR}.get(op) or _bad_op(op)


def _bad_op(op):
    raise RuntimeError(f"Cannot use ReduceOp.{op.name} with this tensor's dtype")


def _type_name(arr):
    from .._dtype import FROM_NP
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(arr.dtype.name, str(FROM_NP.get(arr.dtype, arr.dtype)))


class Work:
    """The handle of an asynchronous call: ``wait()``, ``is_completed()``."""

    def __init__(self, pg, what, reqs, post=None):
        self._pg = pg
        self._what = what
        self._reqs = reqs
        self._post = post
        self._finished = False
        self._source = None

    def _finish(self, status=None):
        if not self._finished:
            self._finished = True
            if self._post is not None:
                self._post()

    def wait(self, timeout=None):
        if not self._finished:
            MPI = _S.MPI
            st = MPI.Status()
            _blocking(self._pg, self._what, lambda: MPI.Request.Waitall(self._reqs, [st]))
            self._source = st.Get_source()
            self._finish()
        return True

    def is_completed(self) -> bool:
        if not self._finished and _S.MPI.Request.Testall(self._reqs):
            self._finish()
        return self._finished

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def source_rank(self) -> int:
        self.wait()
        return self._pg._ranks[self._source] if self._source is not None else -1

    def result(self):
        self.wait()
        return []


def _run(pg, what, call, icall, post, async_op):
    if async_op:
        return Work(pg, what, [icall()], post)
    _blocking(pg, what, call)
    if post is not None:
        post()
    return None


def _root(pg, rank, group_rank, name, opname):
    if group_rank is not None:
        if rank is not None:
            raise ValueError(f"Can not specify both {name} and group_{name}")
        root = group_rank
    else:
        rank = 0 if rank is None else rank
        if pg is _S.default:
            root = rank
        else:
            root = get_group_rank(pg, rank)
    if not 0 <= root < pg.size():
        backend = "Gloo" if pg._backend == Backend.GLOO else "MPI"
        raise RuntimeError(f"ProcessGroup{backend}::{opname}: invalid root rank: {root}")
    return root


# -- collectives --------------------------------------------------------------------------------
def barrier(group=None, async_op=False, device_ids=None, timeout=None):  # noqa: F811
    pg = _pg(group, "barrier")
    if pg is None:
        return None
    _check(pg, "BARRIER")
    return _run(pg, "barrier", pg._comm.Barrier, pg._comm.Ibarrier, None, async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):  # noqa: F811
    return barrier(group)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):  # noqa: F811
    _tensor(tensor)
    pg = _pg(group, "broadcast")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src", "broadcast")
    buf = _buf(tensor)
    _check(pg, "BROADCAST", buf, root)
    c = pg._comm
    return _run(pg, "broadcast", lambda: c.Bcast(buf, root), lambda: c.Ibcast(buf, root),
                (lambda: _done(tensor, buf)) if buf is not tensor._data else None, async_op)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):  # noqa: F811
    """Reduce ``tensor`` over the group, in place, on every rank."""
    _tensor(tensor)
    pg = _pg(group, "all_reduce")
    if pg is None:
        return None
    buf = _buf(tensor)
    mop = _mpi_op(op, buf)
    _check(pg, "ALLREDUCE", buf)
    c = pg._comm
    IN_PLACE = _S.MPI.IN_PLACE
    post = _post_reduce(tensor, buf, op, pg.size())
    return _run(pg, "all_reduce", lambda: c.Allreduce(IN_PLACE, buf, mop),
                lambda: c.Iallreduce(IN_PLACE, buf, mop), post, async_op)


def _post_reduce(tensor, buf, op, n):
    if op == RedOpType.AVG:
        def post():
            np.divide(buf, n, out=buf)
            _done(tensor, buf)
        return post
    return (lambda: _done(tensor, buf)) if buf is not tensor._data else None


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):  # noqa
    """Reduce ``tensor`` over the group into ``dst``'s tensor."""
    _tensor(tensor)
    pg = _pg(group, "reduce")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst", "reduce")
    buf = _buf(tensor)
    mop = _mpi_op(op, buf)
    _check(pg, "REDUCE", buf, root)
    c = pg._comm
    if pg.rank() == root:
        send, recv = _S.MPI.IN_PLACE, buf
        post = _post_reduce(tensor, buf, op, pg.size())
    else:
        send, recv, post = buf, None, None
    return _run(pg, "reduce", lambda: c.Reduce(send, recv, mop, root),
                lambda: c.Ireduce(send, recv, mop, root), post, async_op)


def _same_shapes(ts, shape, opname, backend):
    b = "Gloo" if backend == Backend.GLOO else "MPI"
    for i, t in enumerate(ts):
        if tuple(t._data.shape) != tuple(shape):
            raise RuntimeError(f"ProcessGroup{b}::{opname}: invalid tensor size at index {i} "
                               f"(expected ({', '.join(map(str, shape))}), got "
                               f"({', '.join(map(str, t._data.shape))}))")


def _scatter_into(ts, big):
    def post():
        for t, part in zip(ts, big):
            t._data[...] = part.astype(t._data.dtype, copy=False)
    return post


def all_gather(tensor_list, tensor, group=None, async_op=False):  # noqa: F811
    """Every rank's ``tensor`` into ``tensor_list`` (one per rank) on every rank."""
    _tensor_list(tensor_list, "tensor_list")
    _tensor(tensor)
    pg = _pg(group, "all_gather")
    if pg is None:
        return None
    n = pg.size()
    if len(tensor_list) != n:
        b = "Gloo" if pg._backend == Backend.GLOO else "MPI"
        raise RuntimeError(f"ProcessGroup{b}::allgather: invalid output tensor list at index 0 "
                           f"(expected length {n}, got {len(tensor_list)})")
    _same_shapes(tensor_list, tensor._data.shape, "allgather", pg._backend)
    buf = _buf(tensor)
    _check(pg, "ALLGATHER", buf)
    big = np.empty((n,) + buf.shape, buf.dtype)
    c = pg._comm
    return _run(pg, "all_gather", lambda: c.Allgather(buf, big), lambda: c.Iallgather(buf, big),
                _scatter_into(tensor_list, big), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):  # noqa
    """Every rank's ``input_tensor``, concatenated (or stacked) in ``output_tensor``."""
    _tensor(output_tensor, "output_tensor")
    _tensor(input_tensor, "input_tensor")
    pg = _pg(group, "all_gather_into_tensor")
    if pg is None:
        return None
    n = pg.size()
    if output_tensor._data.size != n * input_tensor._data.size \
            or output_tensor._data.dtype != input_tensor._data.dtype:
        raise ValueError(f"output tensor must have {n} times the elements of the input tensor and "
                         f"the same dtype (got {output_tensor._data.size} and "
                         f"{input_tensor._data.size} elements)")
    buf = _buf(input_tensor)
    out = _buf(output_tensor)
    _check(pg, "ALLGATHER", buf)
    c = pg._comm
    post = (lambda: _done(output_tensor, out)) if out is not output_tensor._data else None
    return _run(pg, "all_gather_into_tensor", lambda: c.Allgather(buf, out),
                lambda: c.Iallgather(buf, out), post, async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):  # noqa
    """Reduce ``input`` over the group; rank i keeps the i-th chunk in ``output``."""
    _tensor(output, "output")
    _tensor(input, "input")
    pg = _pg(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    n = pg.size()
    if input._data.size != n * output._data.size:
        raise ValueError(f"input tensor must have {n} times the elements of the output tensor "
                         f"(got {input._data.size} and {output._data.size} elements)")
    src = _buf(input)
    out = _buf(output)
    mop = _mpi_op(op, out)
    _check(pg, "REDUCE_SCATTER", out)
    c = pg._comm
    post = _post_reduce(output, out, op, n)
    return _run(pg, "reduce_scatter", lambda: c.Reduce_scatter_block(src, out, mop),
                lambda: c.Ireduce_scatter_block(src, out, mop), post, async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):  # noqa
    """Reduce the lists over the group; rank i keeps the reduced ``input_list[i]``."""
    _tensor(output, "output")
    _tensor_list(input_list, "input_list")
    pg = _pg(group, "reduce_scatter")
    if pg is None:
        return None
    n = pg.size()
    if len(input_list) != n:
        raise ValueError(f"Argument ``input_list`` must have {n} tensors (one per rank), got "
                         f"{len(input_list)}")
    _same_shapes(input_list, output._data.shape, "reduce_scatter", pg._backend)
    src = np.stack([np.asarray(t._data, output._data.dtype) for t in input_list])
    if src.dtype.char not in _NATIVE:
        src = src.astype(np.float32)
    out = _buf(output)
    mop = _mpi_op(op, out)
    _check(pg, "REDUCE_SCATTER", out)
    c = pg._comm
    return _run(pg, "reduce_scatter", lambda: c.Reduce_scatter_block(src, out, mop),
                lambda: c.Ireduce_scatter_block(src, out, mop),
                _post_reduce(output, out, op, n), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False,
            group_src=None):  # noqa: F811
    """``scatter_list[i]`` of ``src`` into rank i's ``tensor``."""
    _tensor(tensor)
    pg = _pg(group, "scatter")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src", "scatter")
    me = pg.rank()
    if me == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _tensor_list(scatter_list, "scatter_list")
        if len(scatter_list) != pg.size():
            raise ValueError(f"Argument ``scatter_list`` must have {pg.size()} tensors, got "
                             f"{len(scatter_list)}")
        _same_shapes(scatter_list, tensor._data.shape, "scatter", pg._backend)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    out = _buf(tensor)
    big = (np.stack([np.asarray(t._data, out.dtype) for t in scatter_list])
           if me == root else None)
    _check(pg, "SCATTER", out, root)
    c = pg._comm
    post = (lambda: _done(tensor, out)) if out is not tensor._data else None
    return _run(pg, "scatter", lambda: c.Scatter(big, out, root),
                lambda: c.Iscatter(big, out, root), post, async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False,
           group_dst=None):  # noqa: F811
    """Every rank's ``tensor`` into ``gather_list`` on ``dst``."""
    _tensor(tensor)
    pg = _pg(group, "gather")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst", "gather")
    me = pg.rank()
    if me == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _tensor_list(gather_list, "gather_list")
        if len(gather_list) != pg.size():
            raise ValueError(f"Argument ``gather_list`` must have {pg.size()} tensors, got "
                             f"{len(gather_list)}")
        _same_shapes(gather_list, tensor._data.shape, "gather", pg._backend)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination "
                         "ranks.")
    buf = _buf(tensor)
    big = np.empty((pg.size(),) + buf.shape, buf.dtype) if me == root else None
    _check(pg, "GATHER", buf, root)
    c = pg._comm
    post = _scatter_into(gather_list, big) if me == root else None
    return _run(pg, "gather", lambda: c.Gather(buf, big, root),
                lambda: c.Igather(buf, big, root), post, async_op)


# -- point to point ---------------------------------------------------------------------------
def _peer(pg, rank, group_rank, name):
    if group_rank is not None:
        peer = group_rank
    elif rank is None:
        return None
    else:
        peer = rank if pg is _S.default else get_group_rank(pg, rank)
    if not 0 <= peer < pg.size():
        raise ValueError(f"Invalid {'destination' if name == 'dst' else 'source'} rank {rank}: "
                         f"the group has {pg.size()} ranks")
    if peer == pg.rank():
        if name == "dst":
            raise ValueError("Invalid destination rank: destination rank should not be the same "
                             "as the rank of the current process.")
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    return peer


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    _tensor(tensor)
    pg = _pg(group, "isend")
    if pg is None:
        return None
    peer = _peer(pg, dst, group_dst, "dst")
    buf = np.ascontiguousarray(_buf(tensor))
    return Work(pg, f"send to rank {dst}", [pg._comm.Isend(buf, peer, tag)])


def send(tensor, dst=None, group=None, tag=0, group_dst=None) -> None:  # noqa: F811
    w = isend(tensor, dst, group, tag, group_dst)
    if w is not None:
        w.wait()


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    _tensor(tensor)
    pg = _pg(group, "irecv")
    if pg is None:
        return None
    peer = _peer(pg, src, group_src, "src")
    buf = _buf(tensor)
    MPI = _S.MPI
    req = pg._comm.Irecv(buf, MPI.ANY_SOURCE if peer is None else peer, tag)
    return Work(pg, f"recv from rank {src if src is not None else 'any'}", [req],
                (lambda: _done(tensor, buf)) if buf is not tensor._data else None)


def recv(tensor, src=None, group=None, tag=0, group_src=None) -> int:  # noqa: F811
    """Receive into ``tensor``; returns the sender's rank."""
    w = irecv(tensor, src, group, tag, group_src)
    if w is None:
        return -1
    w.wait()
    return w._pg._ranks[w._source]


class P2POp:
    """One send or receive for ``batch_isend_irecv``."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed"
                             ".isend`` or ``torch.distributed.irecv``.")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        self.group_peer = group_peer


def batch_isend_irecv(p2p_op_list):
    if not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type "
                         "``torch.distributed.P2POp``.")
    return [p.op(p.tensor, p.peer, p.group, p.tag, p.group_peer) for p in p2p_op_list]


# -- Python objects -----------------------------------------------------------------------------
def _pickles(objs):
    return [np.frombuffer(pickle.dumps(o), np.uint8) for o in objs]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace ``object_list``'s items on every rank by ``src``'s (pickled)."""
    pg = _pg(group, "broadcast_object_list")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src", "broadcast")
    _check(pg, "BROADCAST_OBJECT", shape=(len(object_list),), root=root)
    me, c = pg.rank(), pg._comm
    blobs = _pickles(object_list) if me == root else None
    sizes = (np.array([len(b) for b in blobs], np.int64) if me == root
             else np.empty(len(object_list), np.int64))
    _blocking(pg, "broadcast_object_list", lambda: c.Bcast(sizes, root))
    data = np.concatenate(blobs) if me == root and blobs else np.empty(int(sizes.sum()), np.uint8)
    _blocking(pg, "broadcast_object_list", lambda: c.Bcast(data, root))
    if me != root:
        off = 0
        for i, s in enumerate(sizes.tolist()):
            object_list[i] = pickle.loads(data[off:off + s].tobytes())
            off += s


def _gather_blobs(pg, obj, root=None):
    c, n = pg._comm, pg.size()
    blob = _pickles([obj])[0]
    sizes = np.empty(n, np.int64)
    mine = np.array([len(blob)], np.int64)
    if root is None:
        _blocking(pg, "all_gather_object", lambda: c.Allgather(mine, sizes))
    else:
        _blocking(pg, "gather_object", lambda: c.Gather(mine, sizes, root))
    if root is not None and pg.rank() != root:
        _blocking(pg, "gather_object", lambda: c.Gatherv(blob, None, root))
        return None
    data = np.empty(int(sizes.sum()), np.uint8)
    spec = [data, (sizes, np.concatenate([[0], np.cumsum(sizes)[:-1]])), _S.MPI.BYTE]
    if root is None:
        _blocking(pg, "all_gather_object", lambda: c.Allgatherv(blob, spec))
    else:
        _blocking(pg, "gather_object", lambda: c.Gatherv(blob, spec, root))
    out, off = [], 0
    for s in sizes.tolist():
        out.append(pickle.loads(data[off:off + s].tobytes()))
        off += s
    return out


def all_gather_object(object_list, obj, group=None):  # noqa: F811
    """Every rank's ``obj`` into ``object_list`` on every rank."""
    pg = _pg(group, "all_gather_object")
    if pg is None:
        return None
    _check(pg, "ALLGATHER_OBJECT")
    for i, o in enumerate(_gather_blobs(pg, obj)):
        object_list[i] = o


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):  # noqa
    pg = _pg(group, "gather_object")
    if pg is None:
        return None
    root = _root(pg, dst, group_dst, "dst", "gather")
    if pg.rank() == root and object_gather_list is None:
        raise ValueError("Argument ``object_gather_list`` must be specified on destination "
                         "rank.")
    if pg.rank() != root and object_gather_list:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    _check(pg, "GATHER_OBJECT", root=root)
    got = _gather_blobs(pg, obj, root)
    if got is not None:
        for i, o in enumerate(got):
            object_gather_list[i] = o


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):  # noqa: F811
    pg = _pg(group, "scatter_object_list")
    if pg is None:
        return None
    root = _root(pg, src, group_src, "src", "scatter")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    _check(pg, "SCATTER_OBJECT", root=root)
    me, c = pg.rank(), pg._comm
    if me == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != pg.size():
            raise ValueError(f"Argument ``scatter_object_input_list`` must have {pg.size()} "
                             f"items on the source rank.")
        obj = _blocking(pg, "scatter_object_list",
                        lambda: c.scatter(list(scatter_object_input_list), root))
    else:
        obj = _blocking(pg, "scatter_object_list", lambda: c.scatter(None, root))
    scatter_object_output_list[0] = obj
