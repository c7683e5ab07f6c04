"""Autograd error messages: PyTorch's leading text (so users can search for it), then where
the problem comes from and what to do."""
from __future__ import annotations

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed). Saved intermediate values of the graph are freed "
         "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
         "backward through the graph a second time or if you need to access saved tensors after "
         "calling backward.")
LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
SCALAR_ONLY = "grad can be implicitly created only for scalar outputs"
NO_GRAD_FN = "element 0 of tensors does not require grad and does not have a grad_fn"
FLOAT_ONLY = "only Tensors of floating point and complex dtype can require gradients"
NONLEAF_GRAD = ("The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
                ".grad attribute won't be populated during autograd.backward(). If you indeed want "
                "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
                "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access "
                "the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more "
                "informations.")


def _where(node) -> str:
    meta = getattr(node, "_meta", None)
    line = meta.get("source") if meta else None
    return f"\n  {type(node).__name__} was created at {line}" if line else ""


def freed_graph(node) -> RuntimeError:
    return RuntimeError(FREED + _where(node)
                        + "\n  Fix: call backward(retain_graph=True) the first time, or detach() "
                          "tensors you reuse across graphs (as in GAN training).")


def modified_inplace(saved, node) -> RuntimeError:
    from .._dtype import FROM_NP, TYPE_NAMES
    v = saved.value
    data = v if saved.is_output else v._data
    tname = TYPE_NAMES.get(FROM_NP.get(data.dtype), "Tensor")
    shape = ", ".join(str(s) for s in data.shape)
    op = type(node).__name__
    producer = op if saved.is_output else (type(v._grad_fn).__name__ if v._grad_fn is not None else None)
    which = ""
    if producer is not None:
        base = producer
        for suffix in ("Backward0", "Backward1", "Backward2"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
        which = f", which is output 0 of {base},"
    msg = (f"one of the variables needed for gradient computation has been modified by an inplace "
           f"operation: [torch.{tname} [{shape}]]{which} is at version {saved.counter[0]}; expected "
           f"version {saved.version} instead. Hint: enable anomaly detection to find the operation "
           f"that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, "
           f"check_nan=False).")
    where = _where(node)
    return RuntimeError(msg + where + f"\n  {op} saved this tensor for backward; "
                        "Fix: use an out-of-place op (x = x * 2, not x *= 2) or clone() before "
                        "modifying it.")


def leaf_inplace(view: bool) -> RuntimeError:
    msg = VIEW_LEAF_INPLACE if view else LEAF_INPLACE
    return RuntimeError(msg + "\n  Fix: wrap the update in torch.no_grad(), or change "
                        "the values through .data")
