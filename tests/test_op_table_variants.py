"""Every op-table row on variants of its inputs against PyTorch: complex inputs (the float
samples given random imaginary parts) and empty inputs (each tensor of one or more
dimensions cut to length 0 along its first).  Compared: the outcome (a result, or an
exception of the same type), result dtypes and values, and the gradients for a random
upstream gradient.  Rows still differing are listed in KNOWN by variant (strict expected
failures, so a fix makes the test say so); the random ops' rows are left out (their stream
is dyngrad's own)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.optable import all_rows  # noqa: E402
from tests.twin import NoTwin, twin  # noqa: E402

# rows whose complex behaviour still differs from PyTorch's: what differs
KNOWN_COMPLEX = {
    'F.adaptive_avg_pool2d': 'computes where PyTorch refuses complex input',
    'F.adaptive_max_pool2d': 'computes where PyTorch refuses complex input',
    'F.avg_pool1d': 'computes where PyTorch refuses complex input',
    'F.avg_pool2d': 'computes where PyTorch refuses complex input',
    'F.batch_norm': 'raises RuntimeError where PyTorch raises NotImplementedError',
    'F.bilinear': 'computes where PyTorch refuses complex input',
    'F.embedding': 'computes where PyTorch refuses complex input',
    'F.group_norm': 'raises RuntimeError where PyTorch raises NotImplementedError',
    'F.interpolate_bilinear': 'computes where PyTorch refuses complex input',
    'F.interpolate_nearest': 'computes where PyTorch refuses complex input',
    'F.layer_norm': 'raises RuntimeError where PyTorch raises NotImplementedError',
    'F.max_pool1d': 'computes where PyTorch refuses complex input',
    'F.max_pool2d': 'raises ValueError where PyTorch raises NotImplementedError',
    'F.soft_margin_loss': 'computes where PyTorch refuses complex input',
    'abs_': 'computes where PyTorch refuses complex input',
    'absolute_': 'computes where PyTorch refuses complex input',
    'corrcoef': 'refuses where PyTorch computes',
    'corrcoef_1d': 'refuses where PyTorch computes',
    'cov': 'refuses where PyTorch computes',
    'cov_aweights': 'raises NotImplementedError where PyTorch raises RuntimeError',
    'cov_both_weights': 'raises NotImplementedError where PyTorch raises RuntimeError',
    'cov_correction': 'refuses where PyTorch computes',
    'cov_fweights': 'refuses where PyTorch computes',
    'igammac_': 'raises TypeError where PyTorch raises RuntimeError',
    'logcumsumexp': 'refuses where PyTorch computes',
    'nan_to_num': 'computes where PyTorch refuses complex input',
    'special.xlog1py': 'computes where PyTorch refuses complex input',
    'special.xlog1py_scalar_other': 'computes where PyTorch refuses complex input',
    'special.xlog1py_scalar_self': 'computes where PyTorch refuses complex input',
    'special.zeta_const_self': 'raises TypeError where PyTorch raises NotImplementedError',
    'special.zeta_forward': 'raises TypeError where PyTorch raises NotImplementedError',
    'special.zeta_scalar_self': 'raises TypeError where PyTorch raises NotImplementedError',
}

# rows whose empty-input behaviour still differs from PyTorch's: what differs
KNOWN_EMPTY = {
    'view_as_real': 'backward: gradients where PyTorch gives RuntimeError',
    'view_as_complex_slice': 'backward: gradients where PyTorch gives RuntimeError',
    'polar': 'backward: gradients where PyTorch gives RuntimeError',
    'complex': 'backward: gradients where PyTorch gives RuntimeError',
    'take_along_dim': 'ValueError where PyTorch gives RuntimeError',
    'masked_select': 'ValueError where PyTorch gives RuntimeError',
    'masked_scatter': 'ValueError where PyTorch gives RuntimeError',
    'index_fill_': 'IndexError where PyTorch gives RuntimeError',
    'masked_scatter_': 'ValueError where PyTorch gives RuntimeError',
    'kthvalue_keepdim': 'RuntimeError where PyTorch gives IndexError',
    'F.multi_margin_loss': 'values differ',
    'F.multilabel_margin_loss': 'values differ',
    'F.batch_norm': 'RuntimeError where PyTorch gives IndexError',
    'addmv_ab': 'RuntimeError where PyTorch gives IndexError',
}
# rows left out of the empty variant: PyTorch 2.13 itself crashes (segmentation fault) on
# pdist's; resize_ from an empty tensor shows uninitialized memory on both sides
SKIP_EMPTY = {"F.pdist", "resize_", "resize_shrink"}

ROWS = [r for r in all_rows() if r.fn.__module__ != "tests.optable.sampling"]


def _complex(lib, sample):
    out = []
    for i, t in enumerate(sample.make(lib)):
        if i in sample.int_args or not t.dtype.is_floating_point:
            out.append(t)
            continue
        im = np.random.RandomState(100 + i).uniform(-1, 1, size=tuple(t.shape))
        out.append(lib.complex(t.detach(), lib.tensor(im, dtype=t.dtype)).requires_grad_(True))
    return out


def _empty(lib, sample):
    out = []
    for t in sample.make(lib):
        if t.dim() >= 1:
            t = t.detach()[:0].requires_grad_(t.requires_grad)
        out.append(t)
    return out


VARIANTS = {"complex": _complex, "empty": _empty}


def _array(x):
    x = x.detach()
    # ``+ 0`` reads PyTorch's efficient-zero gradients, which refuse numpy()
    return (x + 0 if x.dtype.is_floating_point or x.dtype.is_complex else x).numpy().copy()


def _run(lib, fn, sample, variant):
    """('err', exception type) or ('ok', values, gradients or ('err', type))."""
    ts = VARIANTS[variant](lib, sample)
    try:
        o = fn(*ts, *sample.extra, **sample.kwargs)
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return ("err", type(e).__name__)
    o = [x for x in (o if isinstance(o, (tuple, list)) else (o,))
         if hasattr(x, "dtype") and hasattr(x, "requires_grad")]
    values = [_array(x) for x in o]
    diff = [x for x in o if x.requires_grad]
    grads = []
    if diff:
        rs = np.random.RandomState(7)
        ups = []
        for x in diff:
            shape = tuple(x.shape)
            u = rs.uniform(-1, 1, size=shape) + 1j * rs.uniform(-1, 1, size=shape)
            ups.append(lib.tensor(u if x.dtype.is_complex else u.real).to(x.dtype))
        ins = [t for t in ts if t.requires_grad]
        try:
            grads = [None if g is None else _array(g)
                     for g in lib.autograd.grad(diff, ins, ups, allow_unused=True)]
        except Exception as e:  # noqa: BLE001
            grads = ("err", type(e).__name__)
    return ("ok", values, grads)


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return np.allclose(a, b, rtol=1e-9, atol=1e-11, equal_nan=True)
    return np.array_equal(a, b)


def _differs(row, variant):
    sample = row.samples[0]
    try:
        theirs = _run(torch, twin(row.fn), sample, variant)
    except NoTwin:
        pytest.skip("PyTorch has no counterpart")
    mine = _run(dyngrad, row.fn, sample, variant)
    if mine[0] != theirs[0] or mine[0] == "err":
        return None if mine == theirs else f"outcome {mine} vs {theirs}"
    if len(mine[1]) != len(theirs[1]) or not all(map(_same, mine[1], theirs[1])):
        return "values differ"
    ga, gb = mine[2], theirs[2]
    if isinstance(ga, tuple) or isinstance(gb, tuple):
        return None if ga == gb else f"gradient outcome {ga} vs {gb}"
    if len(ga) != len(gb) or not all(map(_same, ga, gb)):
        return "gradients differ"
    return None


def _cases():
    for variant, known in (("complex", KNOWN_COMPLEX), ("empty", KNOWN_EMPTY)):
        for r in ROWS:
            if variant == "empty" and r.name in SKIP_EMPTY:
                continue
            marks = [pytest.mark.xfail(strict=True, reason=known[r.name])] if r.name in known else []
            yield pytest.param(r, variant, marks=marks, id=f"{variant}-{r.name}")


@pytest.mark.parametrize("row,variant", list(_cases()))
def test_inputs_as_torch(row, variant):
    problem = _differs(row, variant)
    assert problem is None, problem
