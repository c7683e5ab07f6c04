"""utils.data: datasets, samplers, DataLoader batching/shuffling, default_collate, splits."""
from collections import namedtuple

import numpy as np
import pytest

import dyngrad as torch
from dyngrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                                IterableDataset, SequentialSampler, Subset, TensorDataset,
                                default_collate, random_split)


def ds(n=10):
    return TensorDataset(torch.arange(n), torch.arange(n * 2.0).reshape(n, 2))


def test_tensor_dataset():
    d = ds()
    assert len(d) == 10
    i, x = d[3]
    assert i.item() == 3 and x.tolist() == [6.0, 7.0]
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(torch.ones(3), torch.ones(4))


def test_loader_batches_and_drop_last():
    batches = list(DataLoader(ds(), batch_size=4))
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][1].shape == (4, 2)
    assert len(DataLoader(ds(), batch_size=4)) == 3
    dl = DataLoader(ds(), batch_size=4, drop_last=True)
    assert len(dl) == 2 and len(list(dl)) == 2


def test_shuffle_with_seeded_generator():
    def order(seed):
        g = torch.Generator().manual_seed(seed)
        return [b[0].tolist() for b in DataLoader(ds(), batch_size=5, shuffle=True,
                                                  generator=g)]
    a, b = order(1), order(1)
    assert a == b and sorted(sum(a, [])) == list(range(10))
    assert order(1) != order(2)


def test_sampler_batch_sampler_collate_fn():
    dl = DataLoader(ds(), sampler=[9, 8, 7], batch_size=2)
    assert [b[0].tolist() for b in dl] == [[9, 8], [7]]
    bs = BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)
    assert list(bs) == [[0, 1], [2, 3], [4]]
    dl = DataLoader(ds(), batch_sampler=[[0, 2], [4]])
    assert [b[0].tolist() for b in dl] == [[0, 2], [4]]
    dl = DataLoader(ds(), batch_size=3, collate_fn=lambda batch: len(batch))
    assert list(dl) == [3, 3, 3, 1]
    dl = DataLoader(ds(3), batch_size=None)
    assert [x[0].item() for x in dl] == [0, 1, 2]
    with pytest.raises(ValueError, match="mutually exclusive"):
        DataLoader(ds(), batch_sampler=bs, batch_size=2)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds(), sampler=[1], shuffle=True)


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_batch_size(bad):
    with pytest.raises(ValueError, match=f"batch_size should be a positive integer value, but "
                                         f"got batch_size={bad}"):
        DataLoader(ds(), batch_size=bad)


def test_default_collate():
    P = namedtuple("P", "a b")
    batch = [{"x": np.ones(3, np.float32), "n": 1, "f": 0.5, "s": "u", "t": (torch.ones(2), [1]),
              "p": P(1, 2.0)}] * 4
    out = default_collate(batch)
    assert out["x"].shape == (4, 3) and out["x"].dtype == torch.float32
    assert out["n"].dtype == torch.int64 and out["f"].dtype == torch.float64
    assert out["s"] == ["u"] * 4
    assert out["t"][0].shape == (4, 2) and out["t"][1][0].tolist() == [1] * 4
    assert isinstance(out["p"], P) and out["p"].a.tolist() == [1] * 4
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([torch.ones(2), torch.ones(3)])


def test_iterable_dataset():
    class Stream(IterableDataset):
        def __iter__(self):
            return iter(range(7))

    assert [b.tolist() for b in DataLoader(Stream(), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                       [6]]
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(Stream(), shuffle=True)


def test_subset_concat_random_split():
    d = ds()
    sub = Subset(d, [1, 3])
    assert len(sub) == 2 and sub[1][0].item() == 3
    cat = ConcatDataset([Subset(d, [0, 1]), Subset(d, [5])])
    assert len(cat) == 3 and cat[2][0].item() == 5 and cat[-1][0].item() == 5
    a, b = random_split(d, [7, 3], generator=torch.Generator().manual_seed(0))
    assert len(a) == 7 and len(b) == 3
    assert sorted(a.indices + b.indices) == list(range(10))
    parts = random_split(d, [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(d, [3, 3])

    class Plain(Dataset):
        def __getitem__(self, i):
            return i

        def __len__(self):
            return 2

    assert len(Plain() + Plain()) == 4


def test_workers_give_the_same_batches_in_order():
    import dyngrad as torch
    from dyngrad.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.arange(100.0).view(100, 1), torch.arange(100))
    plain = [y.tolist() for _, y in DataLoader(ds, batch_size=7)]
    threaded = [y.tolist() for _, y in DataLoader(ds, batch_size=7, num_workers=3)]
    assert plain == threaded and len(threaded) == 15
    g1 = torch.Generator().manual_seed(3)
    g2 = torch.Generator().manual_seed(3)
    a = [y.tolist() for _, y in DataLoader(ds, batch_size=10, shuffle=True, generator=g1,
                                           num_workers=2)]
    b = [y.tolist() for _, y in DataLoader(ds, batch_size=10, shuffle=True, generator=g2)]
    assert a == b


def test_worker_errors_reach_the_caller_and_worker_info():
    import pytest
    import dyngrad as torch
    from dyngrad.utils.data import DataLoader, Dataset, get_worker_info

    class Bad(Dataset):
        def __len__(self):
            return 10

        def __getitem__(self, i):
            if i == 5:
                raise ValueError("bad item 5")
            return torch.tensor(float(get_worker_info().id))

    with pytest.raises(ValueError, match="bad item 5"):
        list(DataLoader(Bad(), batch_size=2, num_workers=2))
    assert get_worker_info() is None
    seen = []
    DataLoader(Bad(), batch_size=1, num_workers=2, worker_init_fn=seen.append)
    first = next(iter(DataLoader(Bad(), batch_size=1, num_workers=2, worker_init_fn=seen.append)))
    assert first.item() in (0.0, 1.0) and sorted(set(seen)) == [0, 1]
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(Bad(), prefetch_factor=2)
