"""Tensor attributes and small methods beside PyTorch's: sizes, strides, flags, conversions,
the Python protocol (len, bool, int, float, index, contains, iteration), the legacy
constructor ``new``, ``apply_``/``map_`` and autograd flags: the same value (or the same
exception type and message)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

EXPRS = [
 "x.is_leaf", "(x*2).is_leaf", "x.requires_grad", "x.detach().requires_grad", "x.shape", "x.size()", "x.size(1)", "x.size(-1)",
 "x.dim()", "x.ndim", "x.numel()", "x.nelement()", "x.element_size()", "x.itemsize", "x.nbytes", "x.stride()", "x.stride(0)",
 "x.storage_offset()", "x[1:].storage_offset()", "x.is_contiguous()", "x.t().is_contiguous()", "x.T.shape", "x.mT.shape",
 "x.dtype", "str(x.device)", "str(x.layout)", "len(x)", "bool(x[0,0])", "int(x[0,0])", "float(x[0,0])", "complex(x[0,0])",
 "x[0,0].item()", "x.tolist()", "x.new_zeros(2)", "x.new_ones((1,2))", "x.new_full((2,), 3)", "x.new_tensor([1,2])",
 "x.new_tensor([1,2]).dtype", "x.new_empty(3).shape", "x.type()", "x.type(torch.float64 if L is torch else L.float64).dtype",
 "x.type('torch.DoubleTensor').dtype", "x.type_as(L.ones(1, dtype=L.int32)).dtype", "x.view_as(L.ones(6)).shape",
 "x.expand_as(L.ones(4, 2, 3)).shape", "x.reshape_as(L.ones(3, 2)).shape", "x.is_floating_point()", "x.is_complex()",
 "x.is_signed()", "L.ones(2, dtype=L.uint8).is_signed()", "np.asarray(x.detach()).dtype", "x.detach().__array__().shape",
 "format(x[0,0], '.2f')", "'%s' % x[0,0].item()", "hash(x) == id(x) or True", "1.0 in x", "x.clone().requires_grad",
 "x.clone().is_leaf", "x.data.requires_grad", "x.grad", "x.retain_grad()", "(x*2).retain_grad()", "x.requires_grad_(False).requires_grad",
 "L.ones(2).requires_grad_()", "L.ones(2, dtype=L.int64).requires_grad_()", "x.int().requires_grad", "x.sum().backward()",
 "x.H.shape", "x.mH.shape", "x.ravel().shape", "x.flatten(0).shape", "x.squeeze().shape", "x.is_set_to(x)", "x.data_ptr() == x.data_ptr()",
 "x.untyped_storage().nbytes()", "x.is_shared()", "x.is_pinned()", "x.get_device()", "x.is_cuda", "x.is_cpu", "x.is_quantized",
 "x.is_meta", "x.is_sparse", "x.is_mkldnn", "x.output_nr", "(x*2).output_nr", "x._version", "x.name", "x.names",
 "x.dim_order()", "x.bfloat16().dtype", "x.cdouble().dtype", "x.cfloat().dtype", "x.chalf().dtype", "x.half().dtype",
 "x.char().dtype", "x.short().dtype", "x.byte().dtype", "x.bool().dtype", "x.long().dtype", "x.__index__() if x.numel()==1 else 'skip'",
 "L.tensor(3).__index__()", "[1,2,3,4][L.tensor(2)]", "range(L.tensor(3))", "x.__len__()", "L.tensor(5).__len__()",
 "iter(L.tensor(5))", "list(L.ones(2, 2))[0].shape", "x.apply_(lambda v: v * 2)", "x.detach().apply_(lambda v: v * 2).sum().item()",
 "x.detach().map_(L.ones(2, 3), lambda a, b: a + b).sum().item()", "x.new(2, 3).shape", "x.new([1., 2.]).tolist()", "x.new().shape",
]
# PyTorch names dyngrad does not have (yet): storage objects, named tensors, complex32
ABSENT = {"x.untyped_storage().nbytes()", "x.name", "x.chalf().dtype", "x.bfloat16().dtype"}


def _run(L, e):
    x = L.tensor([[1.5, -2.0, 0.25], [3.0, 0.5, -1.0]], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            r = eval(e, {"L": L, "x": x, "torch": torch, "np": np})
        except Exception as ex:  # noqa: BLE001 - compared with PyTorch's
            return ("ERR", type(ex).__name__, str(ex).split("\n")[0][:100])
    if hasattr(r, "tolist") and hasattr(r, "dtype") and not isinstance(r, np.ndarray):
        return ("T", str(r.dtype).replace("dyngrad.", "torch."), tuple(r.shape), r.detach().tolist())
    if type(r).__name__ == "Size":
        return ("S", tuple(r))
    if type(r).__name__ == "dtype":
        return ("D", str(r).replace("dyngrad.", "torch."))
    if isinstance(r, (int, float, bool, str, tuple, list, type(None), complex, np.dtype)):
        return r
    return ("OBJ", type(r).__name__)


@pytest.mark.parametrize("expr", [e for e in EXPRS if e not in ABSENT])
def test_same_as_torch(expr):
    assert _run(dyngrad, expr) == _run(torch, expr)
