"""In-place view ops: ``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_`` (and its aliases
``swapaxes_``, ``swapdims_``).  As in PyTorch they change the tensor's own shape and strides
(its storage is untouched), bump its version counter and give it PyTorch's in-place view node
(UnsqueezeBackward1, SqueezeBackward3/4/5, TBackward1, TransposeBackward1)."""
from __future__ import annotations

from . import op
from .._record import STATE, notify
from .inplace import _guard, _set_history
from . import views as V


class UnsqueezeBackward1(V.UnsqueezeBackward0):
    __slots__ = ()


class SqueezeBackward3(V.UnsqueezeBackward0):
    __slots__ = ()


class SqueezeBackward4(V.UnsqueezeBackward0):
    __slots__ = ()


class SqueezeBackward5(V.UnsqueezeBackward0):
    __slots__ = ()


class TBackward1(V.TBackward0):
    __slots__ = ()


class TransposeBackward1(V.TransposeBackward0):
    __slots__ = ()


def _inplace_view(self, view, node_cls, *args):
    """Make ``self`` the view ``view(self, *args)`` of its own storage."""
    if STATE.enabled and self._requires_grad:
        _guard(self)  # PyTorch's leaf / multi-output-view errors
    v = view(self, *args)  # checks the arguments with the out-of-place op's errors
    self._data = v._data
    self._vc[0] += 1
    if self._base is not None and v._view_fn is not None:
        self._view_fn = v._view_fn  # in-place ops on it rewrite the base through the new shape
    old = v._grad_fn
    if old is not None:
        node = node_cls(old.next_functions, old._saved, self._data.dtype)
        _set_history(self, node)
        notify(self)
    return self


@op(function=False)
def unsqueeze_(self, dim):
    """Insert a size-1 dimension at ``dim`` in place (returns self)."""
    return _inplace_view(self, V.unsqueeze, UnsqueezeBackward1, dim)


@op(function=False)
def squeeze_(self, dim=None):
    """Remove size-1 dimensions (all, or those in ``dim``) in place (returns self)."""
    if dim is None:
        return _inplace_view(self, V.squeeze, SqueezeBackward3)
    cls = SqueezeBackward5 if isinstance(dim, (tuple, list)) else SqueezeBackward4
    return _inplace_view(self, V.squeeze, cls, dim)


@op(function=False)
def t_(self):
    """Transpose a matrix in place (returns self)."""
    d = self._data
    if d.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {d.ndim}D")
    return _inplace_view(self, V.t, TBackward1)


@op(function=False, methods=("swapaxes_", "swapdims_"))
def transpose_(self, dim0, dim1):
    """Swap two dimensions in place (returns self)."""
    return _inplace_view(self, V.transpose, TransposeBackward1, dim0, dim1)
