"""Autograd error messages: PyTorch's leading text (so users can search for it), then where
the problem comes from and what to do."""
from __future__ import annotations

import sys

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
                "information.")


def source_of(node) -> dict | None:
    """Where user code created ``node``: ``{"file", "line", "code", "func"}``, or None."""
    src = getattr(node, "_src", None) if node is not None else None
    if src is None:
        return None
    code, lasti = src
    lineno = code.co_firstlineno
    for start, end, line in code.co_lines():
        if start <= lasti < end and line is not None:
            lineno = line
            break
    import linecache
    text = linecache.getline(code.co_filename, lineno).strip()
    return {"file": code.co_filename, "line": lineno, "code": text, "func": code.co_name}


def _ipython_cell(filename):
    """``In[n]`` for code an IPython/Jupyter cell compiled to ``filename``, else None."""
    ip = sys.modules.get("IPython")
    if ip is None:
        return None
    try:
        shell = ip.get_ipython()
        name = shell.compile.format_code_name(filename) if shell is not None else None
    except Exception:  # noqa: BLE001 - an older or unusual IPython: plain file names
        return None
    return name[1] if name else None


def where_text(src) -> str:
    """``file:line`` (relative to the working folder when below it), or ``Cell In[n], line m``
    for code typed into IPython/Jupyter, as IPython's own tracebacks say."""
    import os
    cell = _ipython_cell(src["file"])
    if cell is not None:
        return f"Cell {cell}, line {src['line']}"
    name = src["file"]
    try:
        rel = os.path.relpath(name)
        if not rel.startswith(".."):
            name = rel
    except ValueError:
        pass
    return f"{name}:{src['line']}"


def _fmt(src) -> str:
    code = f": {src['code']}" if src["code"] else ""
    return where_text(src) + code


def _where(node) -> str:
    src = source_of(node)
    if src is None:
        meta = getattr(node, "_meta", None)
        line = meta.get("source") if meta else None
        return f"\n  {type(node).__name__} was created at {line}" if line else ""
    return f"\n  {type(node).__name__} was created at {_fmt(src)}"


def _modifier_of(counter):
    """The node of the in-place op that last bumped ``counter`` (a tensor's version), if any."""
    import gc
    from .._tensor import Tensor
    for r in gc.get_referrers(counter):
        if isinstance(r, Tensor) and r._vc is counter and r._grad_fn is not None:
            return r._grad_fn
    return None


def freed_graph(node) -> RuntimeError:
    return RuntimeError(FREED + _where(node)
                        + "\n  Fix: call backward(retain_graph=True) the first time, or detach() "
                          "tensors you reuse across graphs (as in GAN training).")


def short_name(name: str) -> str:
    """A node's name as PyTorch's messages print it: "Backward" and a 0 overload number
    dropped (AmaxBackward0 -> Amax, MaxBackward1 -> Max1, PowBackward2 -> Pow2)."""
    for n in "0123456789":
        if name.endswith("Backward" + n):
            return name[: -len("Backward" + n)] + ("" if n == "0" else n)
    return name


def modified_inplace(saved, node) -> RuntimeError:
    from .._dtype import FROM_NP, TYPE_NAMES
    v = saved.value
    data = v if saved.is_output else v._data
    tname = "torch." + TYPE_NAMES.get(FROM_NP.get(data.dtype), "Tensor")
    if data.dtype.kind in "cb":  # PyTorch prints the backend's name for complex and bool
        tname = "CPU" + tname[6:-len("Tensor")] + "Type"
    shape = ", ".join(str(s) for s in data.shape)
    # an output saved by an in-place op on a view belongs to the view's new node
    owner = saved.is_output() if type(saved.is_output) is not bool else None
    # name() as PyTorch prints it (CopySlices is torch::autograd::CopySlices)
    op = (owner or node).name()
    producer = op if saved.is_output else (v._grad_fn.name() if v._grad_fn is not None else None)
    which = ""
    if producer is not None:
        nr = getattr(saved, "output_nr", 0) if saved.is_output else 0
        which = f", which is output {nr} of {short_name(producer)},"
    msg = (f"one of the variables needed for gradient computation has been modified by an inplace "
           f"operation: [{tname} [{shape}]]{which} is at version {saved.counter[0]}; expected "
           f"version {saved.version} instead. Hint: enable anomaly detection to find the operation "
           f"that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, "
           f"check_nan=False).")
    where = _where(node)
    changed = ""
    # a saved input changed in place has that op as its grad_fn, made after this node: no
    # scan of every object for the tensor holding the counter
    mod = v._grad_fn if not saved.is_output else None
    if mod is None or mod._seq < node._seq:
        mod = _modifier_of(saved.counter)
    if mod is not None and mod is not node and source_of(mod) is not None:
        changed = f"\n  it was modified in place ({type(mod).__name__}) at {_fmt(source_of(mod))}"
    return RuntimeError(msg + where + " (it saved this tensor for backward)" + changed
                        + "\n  Fix: use an out-of-place op (x = x * 2, not x *= 2), or clone() "
                          "the tensor before modifying it.")


def leaf_inplace(view: bool) -> RuntimeError:
    msg = VIEW_LEAF_INPLACE if view else LEAF_INPLACE
    at = _caller()
    return RuntimeError(msg + (f"\n  the in-place op is at {at}" if at else "")
                        + "\n  Fix: wrap the update in torch.no_grad(), or change "
                          "the values through .data (w.data[:] = ...)")


def no_grad_fn(t=None) -> RuntimeError:
    """``backward()`` on a tensor that is not part of any graph."""
    at = _caller()
    return RuntimeError(NO_GRAD_FN + (f"\n  backward() was called at {at}" if at else "")
                        + "\n  Fix: the tensor was computed from inputs that do not require grad "
                          "(or under torch.no_grad()); set requires_grad=True on the leaves you "
                          "want gradients for.")


def scalar_only(t=None) -> RuntimeError:
    """Implicit gradient for a non-scalar output."""
    where = _where(t.grad_fn) if t is not None and t.grad_fn is not None else ""
    shape = f"\n  the output has shape {tuple(t.shape)}" if t is not None else ""
    return RuntimeError(SCALAR_ONLY + shape + where + "\n  Fix: reduce it first (out.sum()."
                        "backward()) or pass a gradient of the same shape: "
                        "out.backward(torch.ones_like(out)).")


def _caller():
    """``file:line: code`` of the first frame outside dyngrad on the current stack."""
    from .node import _inside
    f = sys._getframe(1)
    while f is not None and _inside(f.f_code):
        f = f.f_back
    if f is None:
        return None
    import linecache
    return _fmt({"file": f.f_code.co_filename, "line": f.f_lineno,
                 "code": linecache.getline(f.f_code.co_filename, f.f_lineno).strip()})


def without_rule(op: str, *, kind: str = "formula"):
    """A node class's ``_fw_rule`` for an op PyTorch has no forward-mode derivative for: it
    raises PyTorch's error naming ``op``.  ``kind="formula"``: the op has a backward but no
    forward formula ("... because it has not been implemented yet."); ``kind="derivative"``:
    the op has no derivative at all (PyTorch's NotImplemented node)."""
    if kind == "formula":
        msg = (f"Trying to use forward AD with {op} that does not support it because it has "
               f"not been implemented yet.\nPlease file an issue to PyTorch at "
               f"https://github.com/pytorch/pytorch/issues/new?template=feature-request.yml so "
               f"that we can prioritize its implementation or submit a PR adding the "
               f"implementation to derivatives.yaml")
    else:
        msg = f"Trying to use forward AD with {op} that does not support it."

    def rule(node, tangents):
        raise NotImplementedError(msg)

    return rule


def no_derivative(what: str) -> NotImplementedError:
    """PyTorch's error for a backward it declares no derivative for."""
    return NotImplementedError(f"the derivative for '{what}' is not implemented.")


def integer_history(dt) -> RuntimeError:
    """PyTorch's error for an op recording a history on a result of integer or bool dtype
    (possible only for an integer tensor that an in-place copy of a tensor requiring grad
    gave a history, ``a[0] = w``)."""
    from .._dtype import scalar_type_name
    return RuntimeError(f"Autograd not support dtype: {scalar_type_name(dt)}")


def integer_gradient(dt) -> RuntimeError:
    """PyTorch's (internal) error when a gradient would flow into a tensor of integer or bool
    dtype, which only the history an in-place copy gave an integer tensor leads to."""
    from .._dtype import scalar_type_name
    return RuntimeError("isDifferentiableType(grad.scalar_type()) INTERNAL ASSERT FAILED: a "
                        f"gradient cannot flow into a tensor of dtype {scalar_type_name(dt)} (an "
                        "integer tensor that an in-place copy of a tensor requiring grad gave a "
                        "history)")
