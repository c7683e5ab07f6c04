"""Packed variable-length sequences for the recurrent layers: ``PackedSequence``,
``pack_padded_sequence``, ``pad_packed_sequence``, ``pack_sequence``, ``pad_sequence``."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..._tensor import Tensor

_Packed = namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices",
                                        "unsorted_indices"])


class PackedSequence(_Packed):
    """Sequences of different lengths, stored time step by time step: ``data`` holds the
    ``batch_sizes[t]`` still-running sequences of step ``t`` (longest first)."""

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        return type(self)(self.data.to(*args, **kwargs), self.batch_sizes, self.sorted_indices,
                          self.unsorted_indices)

    @property
    def is_cuda(self):
        return False


def _invert(perm):
    inv = np.empty_like(perm._data)
    inv[perm._data] = np.arange(perm._data.size)
    return Tensor._make(inv)


def _lengths_array(lengths):
    if isinstance(lengths, Tensor):
        return lengths._data.astype(np.int64).reshape(-1)
    return np.asarray(list(lengths), dtype=np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (or (B, T, *) with ``batch_first``) given each length."""
    lens = _lengths_array(lengths)
    if batch_first:
        input = input.transpose(0, 1)
    if lens.size != input.shape[1]:
        raise ValueError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                         f"{lens.size} (batch_size={input.shape[1]})")
    if (lens <= 0).any():
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element "
                           "in 'lengths' that is <= 0")
    if enforce_sorted:
        if (np.diff(lens) > 0).any():
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                               "pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        order = None
    else:
        order = np.argsort(-lens, kind="stable")
        input = input.index_select(1, Tensor._make(order))
        lens = lens[order]
    if lens[0] > input.shape[0]:
        raise RuntimeError(f"lengths {lens.tolist()} exceed the padded length {input.shape[0]}")
    batch_sizes = np.array([(lens > t).sum() for t in range(int(lens[0]))], dtype=np.int64)
    from ...ops.shape import cat
    data = cat([input[t, :int(b)] for t, b in enumerate(batch_sizes)], 0)
    si = None if order is None else Tensor._make(order.astype(np.int64))
    return PackedSequence(data, Tensor._make(batch_sizes), si, None if si is None else _invert(si))


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: (padded (T, B, *), lengths), original batch order."""
    data, batch_sizes = sequence.data, sequence.batch_sizes._data
    T = len(batch_sizes)
    B = int(batch_sizes[0])
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {T}")
        T_out = total_length
    else:
        T_out = T
    from ..._factories import full
    from ...ops.shape import cat, stack
    rows = []
    off = 0
    feat = tuple(data.shape[1:])
    for t in range(T_out):
        b = int(batch_sizes[t]) if t < T else 0
        step = data[off:off + b]
        off += b
        if b < B:
            pad = full((B - b,) + feat, padding_value, dtype=data.dtype)
            step = cat([step, pad], 0) if b else pad
        rows.append(step)
    padded = stack(rows, 0)
    lengths = np.array([(batch_sizes > i).sum() for i in range(B)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices._data]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, Tensor._make(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors of different lengths (L_i, *) into (L_max, B, *), padding the ends."""
    from ..._factories import full
    from ...ops.shape import cat, stack
    L = max(s.shape[0] for s in sequences)
    out = []
    for s in sequences:
        n = s.shape[0]
        if n < L:
            pad = full((L - n,) + tuple(s.shape[1:]), padding_value, dtype=s.dtype)
            s = cat([s, pad] if padding_side == "right" else [pad, s], 0)
        out.append(s)
    return stack(out, 0 if batch_first else 1)


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of tensors (L_i, *) of decreasing (or, unsorted allowed, any) lengths."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(_lengths_array(lengths))]


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
