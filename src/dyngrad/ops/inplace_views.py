"""In-place view ops: ``unsqueeze_``, ``squeeze_``, ``t_``, ``transpose_`` (and its aliases
``swapaxes_``, ``swapdims_``).  As in PyTorch they change the tensor's own shape and strides
(its storage is untouched), bump its version counter and give it PyTorch's in-place view node
(UnsqueezeBackward1, SqueezeBackward3/4/5, TBackward1, TransposeBackward1), the out-of-place
declaration's node under another name."""
from __future__ import annotations

from . import OPS, inplace_of, op
from .._record import STATE, notify
from .inplace import _guard, _set_history


def _inplace_view(name, nodes, methods=(), check=None):
    """Register ``Tensor.<name>_``: the view ``<name>(self, ...)`` made ``self``'s own shape
    and strides, recording ``nodes[k]`` for the out-of-place overload ``k``."""
    spec = OPS[name]["spec"]
    view = spec.fn
    classes = {}
    for base, n in zip(spec.view_classes, nodes):
        classes[base] = type(n, (base,), {"__slots__": (), "__module__": __name__,
                                          "__doc__": f"Backward of {name}_ (in place)."})

    def f(self, *args, **kwargs):
        if check is not None:
            check(self)
        if STATE.enabled and self._requires_grad:
            _guard(self)  # PyTorch's leaf / multi-output-view errors
        v = view(self, *args, **kwargs)  # checks the arguments with the out-of-place op's errors
        self._data = v._data
        self._vc[0] += 1
        if self._base is not None and v._view_fn is not None:
            self._view_fn = v._view_fn  # in-place ops on it rewrite the base through the new shape
        old = v._grad_fn
        if old is not None:
            cls = type(old)._conj_of or type(old)  # (a complex result's node is its twin)
            _set_history(self, classes[cls](old.next_functions, old._saved,
                                                  self._data.dtype))
            notify(self)
        return self

    f.__name__ = f.__qualname__ = name + "_"
    f.__doc__ = f"{name} in place (returns self)."
    op(name + "_", function=False, methods=tuple(methods))(f)
    inplace_of(name + "_", name)
    return f


def _at_most_2d(self):
    if self._data.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{self._data.ndim}D")


unsqueeze_ = _inplace_view("unsqueeze", ("UnsqueezeBackward1",))
squeeze_ = _inplace_view("squeeze", ("SqueezeBackward3", "SqueezeBackward4", "SqueezeBackward5"))
t_ = _inplace_view("t", ("TBackward1",), check=_at_most_2d)
transpose_ = _inplace_view("transpose", ("TransposeBackward1",),
                           methods=("swapaxes_", "swapdims_"))
