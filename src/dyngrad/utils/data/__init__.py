"""Datasets, samplers, ``default_collate`` and ``DataLoader`` with PyTorch's behaviour
(single process: ``num_workers`` is accepted and the data is loaded in the caller)."""
from __future__ import annotations

import bisect
import collections.abc as abc
import math
import numbers
import warnings

import numpy as np

from ..._tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "Subset", "ConcatDataset",
           "random_split", "default_collate", "default_convert", "DataLoader", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler"]


# -- datasets ------------------------------------------------------------------------------
class Dataset:
    """A map-style dataset: ``__getitem__(index)`` and usually ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: implement ``__iter__``."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class ChainDataset(IterableDataset):
    """Iterates over several iterable datasets in turn."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; all tensors share their first size."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        sample = idx if d == 0 else idx - self.cumulative_sizes[d - 1]
        return self.datasets[d][sample]


def _perm(n, generator):
    from ..._random import rng
    return rng(generator).permutation(n).tolist()


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping random subsets of the given lengths (or fractions)."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        rem = n - sum(sizes)
        for i in range(rem):
            sizes[i % len(sizes)] += 1
        for i, s in enumerate(sizes):
            if s == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty "
                              f"dataset.", UserWarning)
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    idx = _perm(sum(lengths), generator)
    out, off = [], 0
    for length in lengths:
        out.append(Subset(dataset, idx[off:off + length]))
        off += length
    return out


# -- samplers ------------------------------------------------------------------------------
class Sampler:
    """Yields dataset indices."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation (or ``num_samples`` draws with replacement) from ``generator``."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement="
                            f"{replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        from ..._random import rng
        n = len(self.data_source)
        if self.replacement:
            yield from rng(self.generator).integers(0, n, self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from _perm(n, self.generator)
        yield from _perm(n, self.generator)[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _perm(len(self.indices), self.generator):
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


# -- collation -----------------------------------------------------------------------------
def _stack(tensors):
    from ...ops.shape import stack
    return stack(tensors, 0)


def default_collate(batch):
    """Stack a list of samples into a batch, recursing into tuples, lists and dicts:
    tensors and numpy arrays are stacked, numbers become tensors, strings stay lists."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        shapes = {tuple(t.shape) for t in batch}
        if len(shapes) > 1:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(batch[0].shape)} at entry 0 and "
                               f"{list(next(t for t in batch if tuple(t.shape) != tuple(elem.shape)).shape)}"
                               f" at entry {next(i for i, t in enumerate(batch) if tuple(t.shape) != tuple(elem.shape))}")
        return _stack(list(batch))
    if isinstance(elem, np.ndarray) and elem.dtype.kind not in "USO":
        return default_collate([Tensor._make(np.asarray(b)) for b in batch])
    if isinstance(elem, np.generic) and elem.dtype.kind not in "USO":
        return Tensor._make(np.asarray(batch))
    if isinstance(elem, bool):
        return Tensor._make(np.asarray(batch, dtype=np.bool_))
    if isinstance(elem, float):
        return Tensor._make(np.asarray(batch, dtype=np.float64))
    if isinstance(elem, int):
        return Tensor._make(np.asarray(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, abc.Mapping):
        out = {k: default_collate([d[k] for d in batch]) for k in elem}
        try:
            return type(elem)(out)
        except TypeError:
            return out
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        it = iter(batch)
        n = len(next(it))
        if not all(len(e) == n for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        cols = [default_collate(list(s)) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return cols
        try:
            return type(elem)(cols)
        except TypeError:
            return cols
    if isinstance(elem, numbers.Number):
        return Tensor._make(np.asarray(batch))
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                    f"or lists; found {type(elem)}")


def default_convert(data):
    """Numpy arrays to tensors, recursively (used when batching is off)."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "USO":
        return Tensor._make(data)
    if isinstance(data, abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(d) for d in data)
    return data


# -- the loader ----------------------------------------------------------------------------
_WORKER = __import__("threading").local()


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a loader worker."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers})"


def get_worker_info():
    """Inside a DataLoader worker: its id and count; None in the main thread."""
    return getattr(_WORKER, "info", None)


def _threaded(load, keys, num_workers, prefetch, worker_init_fn, dataset=None):
    """Load batches on ``num_workers`` threads, ``prefetch`` each ahead, in sampler order.

    Workers are threads rather than processes: NumPy releases the GIL in its heavy loops, a
    dataset needs no pickling, and results come back in order."""
    import queue
    import threading
    keys = iter(keys)
    lock = threading.Lock()
    out = {}
    cond = threading.Condition()
    state = {"next": 0, "done": False, "error": None}
    inflight = threading.Semaphore(num_workers * prefetch)

    def worker(wid):
        _WORKER.info = WorkerInfo(wid, num_workers, wid, dataset)
        if worker_init_fn is not None:
            worker_init_fn(wid)
        while True:
            inflight.acquire()
            with lock:
                if state["done"] or state["error"] is not None:
                    inflight.release()
                    return
                try:
                    k = next(keys)
                except StopIteration:
                    state["done"] = True
                    inflight.release()
                    with cond:
                        cond.notify_all()
                    return
                n = state["next"]
                state["next"] += 1
            try:
                r = load(k)
            except BaseException as e:  # noqa: BLE001 - re-raised in the main thread
                with cond:
                    state["error"] = e
                    cond.notify_all()
                return
            with cond:
                out[n] = r
                cond.notify_all()

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in range(num_workers)]
    for t in threads:
        t.start()
    i = 0
    try:
        while True:
            with cond:
                while i not in out and state["error"] is None and not (
                        state["done"] and i >= state["next"]):
                    cond.wait()
                if state["error"] is not None:
                    raise state["error"]
                if i not in out:
                    return
                r = out.pop(i)
            inflight.release()
            i += 1
            yield r
    finally:
        with lock:
            state["done"] = True
        for _ in threads:
            inflight.release()


class DataLoader:
    """Iterate over a dataset in batches (optionally shuffled with a seeded generator).

    >>> import dyngrad as torch
    >>> from dyngrad.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(torch.arange(5))
    >>> [b[0].tolist() for b in DataLoader(ds, batch_size=2)]
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.generator = generator
        if prefetch_factor is not None and num_workers == 0:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set "
                             "prefetch_factor to None.")
        self.prefetch_factor = prefetch_factor if prefetch_factor is not None else (
            2 if num_workers > 0 else None)
        iterable = isinstance(dataset, IterableDataset)
        self._iterable = iterable
        if iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually "
                                 "exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else \
                SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            if not iterable:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
            elif not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
                raise ValueError(f"batch_size should be a positive integer value, but got "
                                 f"batch_size={batch_size}")
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation or (iterable and batch_size) \
                else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    def __iter__(self):
        ds = self.dataset
        if self._iterable:
            if self.batch_size is None:
                for x in ds:
                    yield self.collate_fn(x)
                return
            batch = []
            for x in ds:
                batch.append(x)
                if len(batch) == self.batch_size:
                    yield self.collate_fn(batch)
                    batch = []
            if batch and not self.drop_last:
                yield self.collate_fn(batch)
            return
        if self._auto_collation:
            getitems = getattr(ds, "__getitems__", None)

            def load(idx):
                return self.collate_fn(getitems(idx) if getitems else [ds[i] for i in idx])

            keys = self.batch_sampler
        else:
            def load(i):
                return self.collate_fn(ds[i])

            keys = self.sampler
        if self.num_workers > 0:
            yield from _threaded(load, keys, self.num_workers, self.prefetch_factor or 2,
                                 self.worker_init_fn, self.dataset)
            return
        for k in keys:
            yield load(k)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        if self._auto_collation:
            return len(self.batch_sampler)
        return len(self.sampler)


from .distributed import DistributedSampler  # noqa: E402  (it subclasses Sampler)

__all__.append("DistributedSampler")
