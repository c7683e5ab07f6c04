"""More shape ops: ``narrow_copy``, the ``unsafe_`` split family (pieces that share memory
with the input without being views), ``diagflat``, ``diff`` and ``fill_diagonal_``.  The
composites record what PyTorch's composition records (diff: SliceBackward0 / SubBackward0 /
CatBackward0; diagflat: ViewBackward0 under DiagEmbedBackward0)."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from . import composite, op
from ._spec import batch_along, defop, defpieces, fp_safe, front, int64_saved
from .._record import Node, Tensor
from .._tensor import _dim
from .shape import cat
from .views import _pieces as _pieces_of, _split_sizes_of, checked_split_sizes
from . import _dual as X

_make = Tensor._make


def _int(v, fn, arg, pos):
    """An int argument as PyTorch's parser takes it (a 0-d integer tensor too; not a bool)."""
    if isinstance(v, Tensor) and v._data.ndim == 0 and v._data.dtype.kind in "iu":
        return int(v._data)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{fn}(): argument '{arg}' (position {pos}) must be int, not "
                        f"{D.type_name(v)}")
    return int(v)


def declared_dual(spec, impl):
    """``dual`` for declared op ``spec``: ``impl(p, input, ...)`` (checking the arguments
    with PyTorch's positions, then calling ``spec.declared``) becomes its public function and
    its Tensor method."""
    def function(input, *args, **kwargs):
        return impl(1, input, *args, **kwargs)

    def method(self, *args, **kwargs):
        return impl(0, self, *args, **kwargs)

    method.__name__ = method.__qualname__ = spec.name
    method.__doc__ = impl.__doc__
    front(spec, function)
    op("_" + spec.name + "_method", function=False, method=False, methods=(spec.name,))(method)
    return function


def dual(name, impl, composite=False):
    """Register ``impl(p, input, ...)`` as ``dyngrad.<name>`` (``p`` = 1: argument positions
    count the input) and as ``Tensor.<name>`` (``p`` = 0), so type errors name PyTorch's
    positions for each form; ``composite``: the op is one (see ``ops.composite``)."""
    def function(input, *args, **kwargs):
        return impl(1, input, *args, **kwargs)

    def method(self, *args, **kwargs):
        return impl(0, self, *args, **kwargs)

    function.__name__ = function.__qualname__ = method.__name__ = method.__qualname__ = name
    function.__doc__ = method.__doc__ = impl.__doc__
    op(name, method=False, composite=composite)(function)
    op("_" + name + "_method", function=False, method=False, methods=(name,))(method)
    return function


# --- narrow_copy -----------------------------------------------------------------------------
@defop("narrow_copy", node="NarrowCopyBackward0",
       saved=("self_sym_sizes", "dim", "start", "length"), linear=True, method=False,
       batch=batch_along("dim"))
@fp_safe
def narrow_copy(self, dim, start, length):
    """A copy of ``length`` elements from ``start`` along ``dim``; NarrowCopyBackward0."""
    if self.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if dim >= self.ndim:  # PyTorch's size lookup asserts before the dim is wrapped
        raise RuntimeError("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, "
                           "but got false.  (Could this error message be improved?  If so, "
                           "please report an enhancement request to PyTorch.)")
    k = _dim(dim, self.ndim)
    n = self.shape[k]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    if start < 0:
        start += n
    if length < 0 or start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return self[(slice(None),) * k + (slice(start, start + length),)].copy()


@narrow_copy.backward
def _(ctx, grad):
    shape, dim, start, length = ctx.self_sym_sizes, ctx.dim, ctx.start, ctx.length
    k = _dim(dim, len(shape))
    if start < 0 and start + length == 0 and length:
        # PyTorch's backward slices [start, start + length) with the start as given: a
        # negative start whose slice reaches the end selects nothing there
        raise RuntimeError(f"The size of tensor a (0) must match the size of tensor b "
                           f"({length}) at non-singleton dimension {k}")
    return _narrow_place_any(grad, shape, k, start % shape[k] if start < 0 else start,
                             length),


int64_saved(narrow_copy, "start")


def _narrow_place_np(g, shape, dim, start, length):
    r = np.zeros(shape, g.dtype)
    r[(slice(None),) * dim + (slice(start, start + length),)] = g
    return r


def _narrow_place_t(g, shape, dim, start, length):
    parts = []
    before = shape[:dim] + (start,) + shape[dim + 1:]
    after = shape[:dim] + (shape[dim] - start - length,) + shape[dim + 1:]
    if start:
        parts.append(X.zeros(before, g))
    parts.append(g)
    if after[dim]:
        parts.append(X.zeros(after, g))
    return cat(parts, dim) if len(parts) > 1 else g.clone()


# ``g`` placed at [start, start + length) along ``dim`` of zeros of ``shape``: NumPy on arrays,
# PyTorch's recorded composition (zeros joined by CatBackward0) on Tensors
_narrow_place_any = X.twin(_narrow_place_np, _narrow_place_t)


def _narrow_copy(p, input, dim, start, length):
    """A copy of ``length`` elements from ``start`` along ``dim``; NarrowCopyBackward0."""
    if type(dim) is not int or type(start) is not int or type(length) is not int:
        dim = _int(dim, "narrow_copy", "dim", 1 + p)
        start = _int(start, "narrow_copy", "start", 2 + p)
        length = _int(length, "narrow_copy", "length", 3 + p)
    return _narrow_copy_spec.declared(input, dim, start, length)


_narrow_copy_spec = narrow_copy
narrow_copy = declared_dual(narrow_copy, _narrow_copy)


# --- unsafe_split / unsafe_chunk / unsafe_split_with_sizes -----------------------------------
def _batch_pieces(spec, arrays, params):
    """A leading batch axis: the same pieces of every sample (``dim`` moved past it)."""
    x = arrays[0]
    sizes = params["split_size" if "split_size" in params else "split_sizes"]
    return spec.forward(x, sizes, _dim(params.get("dim", 0), x.ndim - 1) + 1)


@defpieces("unsafe_split", node="UnsafeSplitBackward0",
           saved=("dim", "self_sym_sizes", "split_size"), batch=_batch_pieces)
def _unsafe_split_spec(self, split_size, dim):
    """split's pieces without view tracking: equal sizes along ``dim`` (the last may be
    smaller); UnsafeSplitBackward0."""
    if self.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    k = _dim(dim, self.ndim)
    return _pieces_of(self, _split_sizes_of(self.shape[k], split_size), k)


@defpieces("unsafe_split_with_sizes", node="UnsafeSplitWithSizesBackward0",
           saved=("dim", "self_sym_sizes", "split_sizes"), batch=_batch_pieces)
def _unsafe_split_with_sizes_spec(self, split_sizes, dim):
    """split_with_sizes' pieces without view tracking; UnsafeSplitWithSizesBackward0."""
    sizes, k = checked_split_sizes(self.shape, split_sizes, dim)
    return _pieces_of(self, sizes, k)


def _pieces_grad(ctx, grads, sizes):
    """The pieces' gradients joined along the split dim, zeros where none arrived."""
    shape = ctx.self_sym_sizes
    k = _dim(ctx.dim, len(shape))
    like = next(g for g in grads if g is not None)
    return X.cat([g if g is not None else X.zeros(shape[:k] + (n,) + shape[k + 1:], like)
                  for g, n in zip(grads, sizes)], k),


def _pieces_tangent(t, sizes, dim):
    return _pieces_of(t, sizes, _dim(dim, t.dim()))


@_unsafe_split_spec.backward
def _(ctx, grads):
    n, ss = ctx.self_sym_sizes[_dim(ctx.dim, len(ctx.self_sym_sizes))], ctx.split_size
    return _pieces_grad(ctx, grads, _split_sizes_of(n, ss))


@_unsafe_split_spec.jvp
def _(ctx, t):
    n = ctx.self_sym_sizes[_dim(ctx.dim, len(ctx.self_sym_sizes))]
    return [p.contiguous() for p in _pieces_tangent(t, _split_sizes_of(n, ctx.split_size),
                                                    ctx.dim)]


@_unsafe_split_with_sizes_spec.backward
def _(ctx, grads):
    return _pieces_grad(ctx, grads, ctx.split_sizes)


@_unsafe_split_with_sizes_spec.jvp
def _(ctx, t):
    return [p.contiguous() for p in _pieces_tangent(t, ctx.split_sizes, ctx.dim)]


def _unsafe_split(p, tensor, split_size, dim=0):
    """split's pieces without view tracking (in-place changes of them are not checked);
    UnsafeSplitBackward0."""
    split_size = _int(split_size, "unsafe_split", "split_size", 1 + p)
    dim = _int(dim, "unsafe_split", "dim", 2 + p)
    return _unsafe_split_spec.declared(_tensor_arg("unsafe_split", tensor), split_size, dim)


def _unsafe_split_with_sizes(p, input, split_sizes, dim=0):
    """split_with_sizes' pieces without view tracking; UnsafeSplitWithSizesBackward0."""
    fn = "unsafe_split_with_sizes"
    if not isinstance(split_sizes, (tuple, list)):
        raise TypeError(f"{fn}(): argument 'split_sizes' (position {1 + p}) must be tuple of "
                        f"ints, not {D.type_name(split_sizes)}")
    for i, s in enumerate(split_sizes):
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"{fn}(): argument 'split_sizes' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{D.type_name(s)}\"")
    dim = _int(dim, fn, "dim", 2 + p)
    return _unsafe_split_with_sizes_spec.declared(_tensor_arg(fn, input),
                                                  [int(s) for s in split_sizes], dim)


def _tensor_arg(fn, v):
    if not isinstance(v, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{D.type_name(v)}")
    return v


def _unsafe_chunk(p, input, chunks, dim=0):
    """chunk's pieces without view tracking; UnsafeSplitBackward0."""
    chunks = _int(chunks, "unsafe_chunk", "chunks", 1 + p)
    dim = _int(dim, "unsafe_chunk", "dim", 2 + p)
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    k = _dim(dim, d.ndim)
    n = d.shape[k]
    if n == 0:  # PyTorch: ``chunks`` empty pieces (UnsafeSplitWithSizesBackward0)
        return _unsafe_split_with_sizes(p, input, [0] * chunks, dim)
    return _unsafe_split(p, input, max(-(-n // chunks), 1), dim)


unsafe_split = declared_dual(_unsafe_split_spec, _unsafe_split)
unsafe_split_with_sizes = declared_dual(_unsafe_split_with_sizes_spec, _unsafe_split_with_sizes)
unsafe_chunk = dual("unsafe_chunk", _unsafe_chunk, composite=True)


# --- diagflat --------------------------------------------------------------------------------
def _diagflat(p, input, offset=0):
    """The flattened input as the ``offset`` diagonal of a square matrix:
    ``input.contiguous().view(-1)`` under DiagEmbedBackward0."""
    offset = _int(offset, "diagflat", "offset", 1 + p)
    # methods, so that vmap's batched tensors dispatch each part to its batching rule
    return input.contiguous().view(-1).diag_embed(offset, -2, -1)  # PyTorch's dims


diagflat = dual("diagflat", _diagflat, composite=True)


# --- diff ------------------------------------------------------------------------------------
def _diff_compatible(input, other, dim, name):
    if other is None:
        return
    if not isinstance(other, Tensor):
        raise TypeError(f"diff(): argument '{name}' must be Tensor, not {D.type_name(other)}")
    nd = input.dim()
    k = _dim(dim, nd)
    if other.dim() != nd:
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(nd):
        if i != k and other.shape[i] != input.shape[i]:
            raise RuntimeError(
                f"diff expects the shape of tensor to prepend or append to match that of input "
                f"except along the differencing dimension; input.size({i}) = "
                f"{input.shape[i]}, but got tensor.size({i}) = {other.shape[i]}")


def _diff_n(x, n, dim):
    # methods, so that vmap's batched tensors dispatch each part to its batching rule
    if n == 0:
        from .._factories import zeros_like
        return zeros_like(x).copy_(x)  # CopyBackwards, as PyTorch's
    size = x.shape[_dim(dim, x.dim())]
    out_len = size - 1
    n = min(n, size)
    boolean = x.dtype == D.bool_
    r = x
    for _ in range(n):
        hi, lo = r.narrow(dim, 1, out_len), r.narrow(dim, 0, out_len)
        r = hi.logical_xor(lo) if boolean else hi.sub(lo)
        out_len -= 1
    return r


def _diff(p, input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (``prepend``/``append`` concatenated first):
    differences of narrow slices, as PyTorch composes it."""
    n = _int(n, "diff", "n", 1 + p)
    dim = _int(dim, "diff", "dim", 2 + p)
    if input.dim() < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    _diff_compatible(input, prepend, dim, "prepend")
    _diff_compatible(input, append, dim, "append")
    if (prepend is None and append is None) or n == 0:
        return _diff_n(input, n, dim)
    parts = ([prepend] if prepend is not None else []) + [input] + \
        ([append] if append is not None else [])
    return _diff_n(cat(parts, dim), n, dim)


diff = dual("diff", _diff, composite=True)


# --- fill_diagonal_ --------------------------------------------------------------------------
def _diag_strided(x, count, offset_rows):
    """The ``count`` elements of ndarray ``x`` from row ``offset_rows`` on, stepping by the sum
    of the strides (PyTorch's as_strided of fill_diagonal_)."""
    start = x[offset_rows:] if offset_rows else x
    return np.lib.stride_tricks.as_strided(start, (count,), (sum(x.strides),),
                                           writeable=x.flags.writeable)


def _diag_positions(x, count, first, step):
    """The same elements of a (contiguous) Tensor, as a view: every ``step``-th element of its
    flattening from ``first``."""
    return x.reshape(-1)[first:first + step * (count - 1) + 1:step] if count else \
        x.reshape(-1)[:0]


class _DiagRegionBackward(Node):
    """History of the diagonal view fill_diagonal_ writes through (replaced by the fill)."""
    __slots__ = ()
    _needs_saved = False

    def _bw(self, g, graph):
        fn, shape = self._saved
        z = X.zeros(shape, g)
        X.assign(fn(z), g)
        return z,


_DiagRegionBackward.__name__ = _DiagRegionBackward.__qualname__ = "AsStridedBackward0"
# forward mode: the same diagonal of the base's tangent
_DiagRegionBackward._fw_rule = lambda node, tangents: [
    None if tangents[0] is None else node._saved[0](tangents[0].contiguous()).contiguous()]


def _diag_view(self, count, offset_rows):
    from .views import make_view
    d = self._data
    # where the elements lie in a contiguous layout: the first one, and the step between them
    cstep = sum(int(np.prod(d.shape[i + 1:])) for i in range(d.ndim))
    cfirst = offset_rows * int(np.prod(d.shape[1:])) if offset_rows else 0

    def fn(x, count=count, offset_rows=offset_rows, cfirst=cfirst, cstep=cstep):
        if isinstance(x, Tensor):
            return _diag_positions(x, count, cfirst, cstep)
        return _diag_strided(x, count, offset_rows)

    return make_view(self, _diag_strided(d, count, offset_rows), _DiagRegionBackward,
                     (fn, d.shape), fn)


@composite(function=False)
def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all indices equal) in place; ``wrap`` restarts it every
    ``width + 1`` rows of a tall matrix.  Composed as PyTorch's: ``fill_`` through a
    diagonal view, so the history becomes CopySlices (whose forward-mode rule gives the
    tangent its zero diagonal); vmap fills every sample's diagonal at once (its own rule)."""
    if not isinstance(wrap, (bool, np.bool_)):
        raise TypeError(f"fill_diagonal_(): argument 'wrap' must be bool, not {D.type_name(wrap)}")
    if not isinstance(fill_value, (int, float, complex, np.number, np.bool_)) and not (
            isinstance(fill_value, Tensor) and fill_value._data.ndim == 0):
        raise TypeError(f"fill_diagonal_(): argument 'fill_value' (position 1) must be Number, "
                        f"not {D.type_name(fill_value)}")
    d = self._data
    nd = d.ndim
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    height, width = d.shape[0], d.shape[1]
    if nd > 2 and any(s != height for s in d.shape[1:]):
        raise RuntimeError("all dimensions of input must be of equal length")
    size = min(height, width)
    _diag_view(self, size, 0).fill_(fill_value)
    if wrap and nd == 2 and height > width + 1:
        step = width + 1
        wrap_size = (d.size + step - 1) // step - size
        _diag_view(self, wrap_size, width + 1).fill_(fill_value)
    return self
