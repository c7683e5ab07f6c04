"""``spawn``/``start_processes`` with PyTorch's behaviour: ``fn(i, *args)`` in ``nprocs``
processes; an exception in one is raised in the parent (after the others are stopped)."""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback


class ProcessException(Exception):
    __slots__ = ["error_index", "error_pid"]

    def __init__(self, msg: str, error_index: int, pid: int):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process exited with a non-zero code (or was killed by a signal)."""
    __slots__ = ["exit_code"]

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code,
                            self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass
    except Exception:  # noqa: BLE001 - sent to the parent
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    def __init__(self, processes, error_queues):
        self.error_queues = error_queues
        self.processes = processes
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None):
        """Wait for the processes; True when all have finished.  Raises if one failed."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for s in ready:
            i = self.sentinels.pop(s)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0:
                error_index = i
                break
        if error_index is None:
            return not self.sentinels
        for p in self.processes:
            if p.is_alive():
                p.terminate()
            p.join()
        failed = self.processes[error_index]
        if self.error_queues[error_index].empty():
            code = failed.exitcode
            if code < 0:
                name = signal.Signals(-code).name
                raise ProcessExitedException(
                    f"process {error_index} terminated with signal {name}", error_index,
                    failed.pid, code, name)
            raise ProcessExitedException(
                f"process {error_index} terminated with exit code {code}", error_index,
                failed.pid, code)
        tb = self.error_queues[error_index].get()
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n" + tb
        raise ProcessRaisedException(msg, error_index, failed.pid)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    ctx = multiprocessing.get_context(start_method)
    error_queues, processes = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        error_queues.append(q)
        processes.append(p)
    context = ProcessContext(processes, error_queues)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run ``fn(i, *args)`` for i in range(nprocs) in new processes (as torch.multiprocessing).
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
