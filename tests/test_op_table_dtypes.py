"""Every op-table row against PyTorch with integer, bool and float16 inputs: the outcome
(a result, or the exception type and the first line of its message), the result dtypes and
shapes and the values (exactly for integer and bool results, to float16 rounding for float16
ones) agree.  Bad input must raise PyTorch's exception, valid input give PyTorch's result
dtype; NumPy's own exceptions (UFuncTypeError, ...) must never leak.  One sample per row; the
random ops' rows (their stream is dyngrad's own) are compared on dtype and shape only.

KNOWN lists the differences whose code is not fixed yet, as strict expected failures: a fix
makes the test say so."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.optable import all_rows  # noqa: E402
from tests.twin import NoTwin, twin  # noqa: E402

DTYPES = ("int64", "int32", "uint8", "bool", "float16")
INTS = "int64 int32 uint8"

# (row names, dtypes they differ in, what differs; in the file whose code differs)
_DIFFERENCES = [
    ("view_as_real view_as_complex_slice real imag",
     "float16",
     'view_as_complex of float16 raises (no complex32) where PyTorch computes; in '
     'ops/views.py'),
    ("complex",
     "float16",
     'complex of float16 parts raises (no complex32) where PyTorch computes; in ops/views.py'),
    ("round_decimals",
     "float16",
     "round(decimals=2) of float16: values differ from PyTorch's beyond float16 rounding; "
     'in ops/unary.py'),
    ("float_power_ float_power_tensor_",
     INTS + " bool float16",
     "float_power_ on a non-double base: PyTorch's 'the base given to float_power_ has dtype"
     " ...' error (float16 computes); in ops/binary.py"),
    ("mvlgamma_",
     INTS + " bool",
     "mvlgamma_ cast error lacks PyTorch's 'mvlgamma: ' prefix and has the dtypes swapped; "
     'in ops/special.py'),
    ("special.zeta_scalar_self special.zeta_forward special.erfcx special.ndtri "
     "special.log_ndtr special.bessel_j0 special.bessel_j1 special.bessel_y0 special.bessel_y1 "
     "special.modified_bessel_i0 special.modified_bessel_i1 special.modified_bessel_k0 "
     "special.modified_bessel_k1 special.scaled_modified_bessel_k0 "
     "special.scaled_modified_bessel_k1 special.spherical_bessel_j0 special.airy_ai",
     "float16",
     'float16 computes where PyTorch\'s kernel has no Half version ("<op>_cpu" not '
     "implemented for 'Half'); in ops/special.py"),
    ("matmul_batched matmul_vm matmul_bcast "
     "matmul_2d_3d einsum_mm einsum_batch einsum_ellipsis einsum_three",
     "bool",
     'bool matrix products compute where PyTorch raises '
     '"addmm_impl_cpu_"/"bmm" not implemented; in ops/linalg.py'),
    ("matrix_power_batch",
     "bool",
     'matrix_power multiplies with matmul: bool matmul computes where PyTorch raises '
     '"addmm_impl_cpu_"/"bmm" not implemented; in ops/linalg.py'),
    ("einsum_trace einsum_sum",
     "int32 uint8 bool",
     "einsum's sums keep the small integer/bool dtype where PyTorch's give int64; in "
     'ops/linalg.py'),
    ("inv inverse det solve solve_vec",
     "float16",
     "float16 leaks NumPy's TypeError where PyTorch raises 'Low precision dtypes not "
     'supported\' / "lu_cpu" not implemented; in ops/linalg.py'),
    ("matrix_power_neg",
     "float16",
     "linalg.inv of float16 leaks NumPy's TypeError where PyTorch raises 'linalg.inv: Low "
     "precision dtypes not supported. Got Half'; in ops/linalg.py"),
    ("logdet",
     INTS + " float16",
     "logdet's errors name linalg.slogdet where PyTorch's name logdet (float16: NumPy's "
     "TypeError leaks); in ops/linalg.py"),
    ("logdet_method",
     INTS + " bool float16",
     "logdet's errors name linalg.slogdet where PyTorch's name logdet (bool: PyTorch's addmm"
     " error; float16: NumPy's TypeError leaks); in ops/linalg.py"),
    ("svdvals",
     INTS + " bool float16",
     "svdvals' error names linalg.svdvals where PyTorch's names linalg.svd (float16: NumPy's"
     ' TypeError leaks); in ops/decompositions.py'),
    ("cholesky cholesky_upper qr",
     "float16",
     'float16 leaks NumPy\'s TypeError where PyTorch raises "<kernel>_cpu" not implemented '
     "for 'Half'; in ops/decompositions.py"),
    ("eigvalsh eigh",
     INTS + " bool float16",
     'RuntimeError (float16: NumPy\'s TypeError) where PyTorch raises "linalg_eigh_cpu" not '
     'implemented; in ops/decompositions.py'),
    ("matrix_exp linalg_matrix_exp",
     "float16",
     "float16 values differ from PyTorch's beyond float16 rounding; in ops/decompositions.py"),
    ("setitem_adv setitem_mixed",
     "bool",
     "setitem of a bool value into an int64 tensor computes where PyTorch raises 'Index put "
     "requires the source and destination dtypes match'; in ops/indexing.py"),
    ("index_put_ index_put_set_",
     "bool",
     "index_put_ of bool values into int64 computes where PyTorch raises 'Index put requires"
     " the source and destination dtypes match'; in ops/inplace.py"),
    ("scatter_inplace scatter_ scatter_add_ scatter_view_",
     "bool",
     "scatter of a bool source into int64 computes where PyTorch raises 'scatter(): Expected"
     " self.dtype to be equal to src.dtype'; in ops/gather_scatter.py"),
    ("index_copy_",
     "bool",
     'index_copy_ of a bool source into int64 computes where PyTorch raises its same-dtype '
     'error; in ops/gather_scatter.py'),
    ("masked_scatter_",
     "bool",
     'masked_scatter_ of a bool source into int64 computes where PyTorch raises its same-'
     'dtype error; in ops/gather_scatter.py'),
    ("masked_fill",
     "uint8",
     "masked_fill of uint8 with -1.0 computes where PyTorch raises 'value cannot be "
     "converted to type uint8_t without overflow'; in ops/gather_scatter.py"),
    ("index_fill",
     "uint8",
     "index_fill of uint8 with -2.0 leaks NumPy's OverflowError where PyTorch raises 'value "
     "cannot be converted to type uint8_t without overflow'; in ops/gather_scatter.py"),
    ("fill_diagonal_wrap",
     "uint8",
     "fill_diagonal_ of uint8 with -1.0 computes where PyTorch raises 'value cannot be "
     "converted to type uint8_t without overflow'; in ops/shape.py"),
    ("histc histc_method",
     "uint8 bool",
     'histc of uint8 with a negative min raises "histogram_cpu" not implemented where '
     'PyTorch raises its overflow error (bool: PyTorch names "linspace_cpu"); in '
     'ops/statistics.py'),
    ("histc_minmax",
     "bool",
     'histc of bool: the kernel in the error is "histogram_cpu" where PyTorch\'s is '
     '"linspace_cpu"; in ops/statistics.py'),
]
# row name -> (dtypes, reason): a strict expected failure for each
KNOWN = {n: (d, r) for names, d, r in _DIFFERENCES for n in names.split()}


def _make(lib, sample, dtype):
    """The sample's tensors in ``dtype`` (integer arguments stay int64 indices)."""
    rs = np.random.RandomState(0)
    out = []
    for i, shp in enumerate(sample.shapes):
        if i in sample.int_args:
            hi = sample.int_high if sample.int_high is not None else 2
            out.append(lib.from_numpy(rs.randint(0, hi, size=shp).astype(np.int64)))
            continue
        lo, hi = sample.domain
        arr = rs.uniform(lo, hi, size=shp)
        if dtype in ("int64", "int32", "uint8"):
            arr = np.round(arr * 3)
        if dtype == "uint8":
            arr = np.abs(arr)
        if dtype == "bool":
            arr = arr > 0
        out.append(lib.tensor(arr, dtype=getattr(lib, dtype)))
    return out


def _run(lib, fn, sample, dtype):
    """("ok", [(dtype name, shape, values) or a plain value, ...]) or ("err", exception type
    name, first line of its message)."""
    try:
        o = fn(*_make(lib, sample, dtype), *sample.extra, **sample.kwargs)
    except Exception as e:  # noqa: BLE001 - compared with the other library's
        return "err", type(e).__name__, str(e).split("\n")[0]
    res = []
    for x in o if isinstance(o, (tuple, list)) else (o,):
        if hasattr(x, "dtype") and hasattr(x, "shape"):
            res.append((str(x.dtype).split(".")[-1], tuple(x.shape), x.detach().numpy().copy()))
        else:
            res.append(x)
    return "ok", res


def _cases():
    out = []
    for row in all_rows():
        try:
            theirs = twin(row.fn)
        except NoTwin:
            continue
        random = row.fn.__module__ == "tests.optable.sampling"
        for dtype in DTYPES:
            marks = []
            dts, reason = KNOWN.get(row.name, ("", ""))
            if dtype in dts.split():
                marks = [pytest.mark.xfail(strict=True, reason=reason)]
            out.append(pytest.param(row, theirs, random, row.samples[0], dtype, marks=marks,
                                    id=f"{row.name}-{dtype}"))
    return out


@pytest.mark.parametrize("row,theirs,random,sample,dtype", _cases())
def test_dtype_outcome_matches_torch(row, theirs, random, sample, dtype):
    mine, ref = _run(dyngrad, row.fn, sample, dtype), _run(torch, theirs, sample, dtype)
    if ref[0] == "err" or mine[0] == "err":
        assert mine == ref
        return
    assert len(mine[1]) == len(ref[1]), (mine, ref)
    for i, (a, b) in enumerate(zip(mine[1], ref[1])):
        if not isinstance(b, tuple):
            assert a == b, f"output {i}"
            continue
        assert isinstance(a, tuple) and a[:2] == b[:2], f"output {i}: {a[:2]} != torch's {b[:2]}"
        if random:
            continue
        x, y = a[2], b[2]
        if y.dtype.kind in "fc":
            tol = (4e-3, 1e-3) if b[0] == "float16" else (1e-5, 1e-6)
            np.testing.assert_allclose(x, y, rtol=tol[0], atol=tol[1], equal_nan=True,
                                       err_msg=f"output {i}")
        else:
            np.testing.assert_array_equal(x, y, err_msg=f"output {i}")


@pytest.mark.parametrize("kw", [
    dict(scale_factor=2, mode="bilinear"), dict(size=(5, 13), mode="bilinear", align_corners=True),
    dict(size=(5, 4), mode="bicubic"), dict(size=(11, 17), mode="bicubic"),
    dict(size=(3, 4), mode="bilinear", antialias=True), dict(size=(3, 3), mode="bicubic", antialias=True),
    dict(size=(5, 4), mode="nearest-exact")], ids=repr)
def test_uint8_resampling_matches_torch_exactly(kw):
    """uint8 images over their whole range: PyTorch's fixed-point passes, to the last unit."""
    x = np.random.RandomState(0).randint(0, 256, (2, 3, 7, 9)).astype(np.uint8)
    ours = dyngrad.nn.functional.interpolate(dyngrad.from_numpy(x.copy()), **kw)
    theirs = torch.nn.functional.interpolate(torch.from_numpy(x.copy()), **kw)
    assert ours.dtype == dyngrad.uint8
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
