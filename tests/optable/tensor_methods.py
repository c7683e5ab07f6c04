"""Rows for Tensor methods: sum_to_size, narrow_copy, the unsafe_ splits, hsplit/vsplit/
dsplit, unfold, diagflat, diff, fill_diagonal_, conj_physical_, and the binary math
(heaviside, ldexp, nextafter, ...), statistics (quantile, cov, corrcoef), renorm and the
matrix functions (matrix_power, pinverse)."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S


def _windows(a, dim, size, step):
    a = np.moveaxis(a, dim, -1)
    n = (a.shape[-1] - size) // step + 1
    w = np.stack([a[..., i * step:i * step + size] for i in range(n)], -2)
    return np.moveaxis(w, -2, dim)


def _fill_diag(a, v, wrap=False):
    r = a.copy()
    h, w = r.shape[:2]
    flat = r.reshape(-1)
    step = sum(int(np.prod(r.shape[i + 1:])) for i in range(r.ndim))
    n = min(h, w) if not wrap else len(flat[::step])
    flat[:step * (n - 1) + 1:step] = v
    return r


ROWS = [
    OpInfo("sum_to_size", lambda a: a.sum_to_size(1, 4), lambda a: a.sum(0, keepdims=True),
           [S((3, 4))], "SumBackward1"),
    OpInfo("sum_to_size_lead", lambda a: a.sum_to_size(4), lambda a: a.reshape(-1, 4).sum(0),
           [S((3, 4)), S((2, 3, 4))], "ViewBackward0"),
    OpInfo("sum_to_size_empty", lambda a: a.sum_to_size(()), lambda a: a.sum(),
           [S((3, 4)), S(())], "SumBackward0"),
    OpInfo("narrow_copy", lambda a: a.narrow_copy(1, 1, 2), lambda a: a[:, 1:3], [S((3, 4))],
           "NarrowCopyBackward0"),
    OpInfo("narrow_copy_neg", lambda a: torch.narrow_copy(a, -1, -3, 2), lambda a: a[..., -3:-1],
           [S((5,)), S((2, 4))], "NarrowCopyBackward0"),
    OpInfo("unsafe_split", lambda a: a.unsafe_split(2, 1), lambda a: np.array_split(a, [2, 4], 1),
           [S((3, 5))], "UnsafeSplitBackward0"),
    OpInfo("unsafe_chunk", lambda a: torch.unsafe_chunk(a, 3),
           lambda a: np.split(a, range(2, len(a), 2)),
           [S((6,)), S((4, 2))], "UnsafeSplitBackward0"),
    OpInfo("unsafe_split_with_sizes", lambda a: a.unsafe_split_with_sizes([1, 3], -1),
           lambda a: np.split(a, [1], -1), [S((2, 4))], "UnsafeSplitWithSizesBackward0"),
    OpInfo("unsafe_split_first", lambda a: a.unsafe_split(2)[0] * 2, lambda a: a[:2] * 2,
           [S((5,))], "MulBackward0"),
    OpInfo("hsplit", lambda a: a.hsplit(2), lambda a: np.hsplit(a, 2), [S((3, 4)), S((6,))],
           "SliceBackward0"),
    OpInfo("hsplit_indices", lambda a: torch.hsplit(a, [1, 3]), lambda a: np.hsplit(a, [1, 3]),
           [S((2, 5))], "SliceBackward0"),
    OpInfo("vsplit", lambda a: a.vsplit([1]), lambda a: np.vsplit(a, [1]), [S((3, 2))],
           "SliceBackward0"),
    OpInfo("dsplit", lambda a: torch.dsplit(a, 2), lambda a: np.dsplit(a, 2), [S((2, 1, 4))],
           "SliceBackward0"),
    OpInfo("unfold", lambda a: a.unfold(1, 2, 1), lambda a: _windows(a, 1, 2, 1), [S((3, 4))],
           "UnfoldBackward0"),
    OpInfo("unfold_step", lambda a: a.unfold(0, 3, 2), lambda a: _windows(a, 0, 3, 2),
           [S((7,)), S((6, 2))], "UnfoldBackward0"),
    OpInfo("unfold_0d", lambda a: a.unfold(0, 1, 1), lambda a: a.reshape(1), [S(())],
           "UnfoldBackward0"),
    OpInfo("diagflat", lambda a: a.diagflat(), lambda a: np.diagflat(a), [S((2, 3)), S((3,))],
           "DiagEmbedBackward0"),
    OpInfo("diagflat_offset", lambda a: torch.diagflat(a.t(), -1), lambda a: np.diagflat(a.T, -1),
           [S((2, 2))], "DiagEmbedBackward0"),
    OpInfo("diff", lambda a: a.diff(), lambda a: np.diff(a), [S((3, 4)), S((5,))],
           "SubBackward0"),
    OpInfo("diff_n_dim", lambda a: torch.diff(a, n=2, dim=0), lambda a: np.diff(a, 2, 0),
           [S((4, 3))], "SubBackward0"),
    OpInfo("diff_prepend_append", lambda a, p, q: a.diff(prepend=p, append=q),
           lambda a, p, q: np.diff(np.concatenate([p, a, q], -1)), [S((2, 3), (2, 1), (2, 2))],
           "SubBackward0"),
    OpInfo("diff_0", lambda a: a.diff(0), lambda a: a, [S((3,))], "CopyBackwards"),
    OpInfo("fill_diagonal_", lambda a: (a * 1).fill_diagonal_(0.5), lambda a: _fill_diag(a, 0.5),
           [S((3, 4)), S((4, 2))], "CopySlices"),
    OpInfo("fill_diagonal_wrap", lambda a: (a * 1).fill_diagonal_(-1.0, wrap=True),
           lambda a: _fill_diag(a, -1.0, True), [S((7, 2))], "CopySlices"),
    OpInfo("fill_diagonal_3d", lambda a: (a * 1).fill_diagonal_(2.0), lambda a: _fill_diag(a, 2.0),
           [S((2, 2, 2))], "CopySlices"),
    OpInfo("conj_physical_", lambda a: (a * 1).conj_physical_(), lambda a: a, [S((3,))],
           "ConjPhysicalBackward1"),
]


def _quantile_ref(a, q, axis=None, keepdims=False, method="linear"):
    return np.quantile(a, q, axis=axis, keepdims=keepdims, method=method)


def _cov_ref(a, **kw):
    return np.cov(a, **kw)


def _renorm_ref(a, p, dim, maxnorm):
    dims = tuple(i for i in range(a.ndim) if i != dim % a.ndim)
    n = (np.abs(a) ** p).sum(dims, keepdims=True) ** (1 / p)
    return a * np.where(n > maxnorm, maxnorm / (n + 1e-7), 1.0)


POS = dict(domain=(0.3, 2.0))
_EXPONENT = torch.tensor([[1, 2, 0, 3]])  # an integer exponent (a constant: not differentiated)

ROWS += [
    OpInfo("ldexp", lambda a, b: a.ldexp(b), lambda a, b: a * 2.0 ** b, [S((3, 4), (4,))],
           "LdexpBackward0"),
    OpInfo("ldexp_int_exponent", lambda a: torch.ldexp(a, _EXPONENT),
           lambda a: a * 2.0 ** np.array([[1, 2, 0, 3]]), [S((3, 4)), S((4,))],
           "LdexpBackward0"),
    OpInfo("ldexp_", lambda a, b: (a * 1).ldexp_(b), lambda a, b: a * 2.0 ** b,
           [S((3,), (3,))], "LdexpBackward0"),
    OpInfo("frexp_mantissa", lambda a: a.frexp()[0], lambda a: np.frexp(a)[0],
           [S((3, 4)), S(())], "FrexpBackward0"),
    OpInfo("nextafter", lambda a, b: torch.nextafter(a, b), np.nextafter, [S((3, 4), (4,))],
           "NextafterBackward0"),
    OpInfo("nextafter_", lambda a, b: (a * 1).nextafter_(b), np.nextafter, [S((3,), (3,))],
           "NextafterBackward0"),
    OpInfo("nextafter_method", lambda a, b: a.nextafter(b), np.nextafter,
           [S((3, 4), (3, 4)), S((), (3,))], "NextafterBackward0"),
    OpInfo("ldexp_fn_", lambda a, b: torch.ldexp_(a * 1, b), lambda a, b: a * 2.0 ** b,
           [S((3, 4), (4,))], "LdexpBackward0"),
    OpInfo("quantile", lambda a: a.quantile(0.3), lambda a: _quantile_ref(a, 0.3),
           [S((3, 4)), S((5,)), S(())], "SqueezeBackward4"),
    OpInfo("quantile_dim", lambda a: torch.quantile(a, 0.6, dim=1),
           lambda a: _quantile_ref(a, 0.6, 1), [S((3, 4))], "SqueezeBackward4"),
    OpInfo("quantile_dim0_keepdim", lambda a: a.quantile(0.25, 0, True),
           lambda a: _quantile_ref(a, 0.25, 0, True), [S((3, 4)), S((2, 3, 2))],
           "SqueezeBackward4"),
    OpInfo("quantile_q_requires_grad", lambda a, q: a.quantile(q, dim=1),
           lambda a, q: _quantile_ref(a, q, 1), [S((2, 5), (3,), domain=(0.05, 0.95))],
           "SqueezeBackward4"),
    OpInfo("quantile_lower", lambda a: a.quantile(0.4, interpolation="lower"),
           lambda a: _quantile_ref(a, 0.4, method="lower"), [S((3, 4))], "SqueezeBackward4"),
    OpInfo("quantile_higher_dim", lambda a: a.quantile(0.4, 0, interpolation="higher"),
           lambda a: _quantile_ref(a, 0.4, 0, method="higher"), [S((3, 4))],
           "SqueezeBackward4"),
    OpInfo("quantile_midpoint", lambda a: a.quantile(0.5, 1, interpolation="midpoint"),
           lambda a: _quantile_ref(a, 0.5, 1, method="midpoint"), [S((3, 4))],
           "SqueezeBackward4"),
    OpInfo("quantile_nearest", lambda a: a.quantile(0.7, interpolation="nearest"),
           lambda a: _quantile_ref(a, 0.7, method="nearest"), [S((3, 4))], "SqueezeBackward4"),
    OpInfo("nanquantile", lambda a: a.nanquantile(0.3, dim=1),
           lambda a: np.nanquantile(a, 0.3, axis=1), [S((3, 4))], "SqueezeBackward4"),
    OpInfo("nanquantile_q_requires_grad", lambda a, q: torch.nanquantile(a, q, 0),
           lambda a, q: np.nanquantile(a, q, axis=0), [S((4, 3), (2,), domain=(0.05, 0.95))],
           "SqueezeBackward4"),
    OpInfo("cov", lambda a: a.cov(), _cov_ref, [S((3, 5)), S((4,))], "SqueezeBackward0"),
    OpInfo("cov_correction", lambda a: torch.cov(a, correction=0), lambda a: _cov_ref(a, ddof=0),
           [S((2, 4))], "SqueezeBackward0"),
    OpInfo("cov_fweights", lambda a, f: a.cov(fweights=f),
           lambda a, f: _cov_ref(a, fweights=f), [S((2, 4), (4,), int_args=(1,), int_high=3)],
           "SqueezeBackward0", float32_ok=False),
    OpInfo("cov_aweights", lambda a, w: a.cov(aweights=w), lambda a, w: _cov_ref(a, aweights=w),
           [S((3, 4), (4,), **POS)], "SqueezeBackward0"),
    OpInfo("cov_both_weights", lambda a, f, w: a.cov(correction=2, fweights=f, aweights=w),
           lambda a, f, w: _cov_ref(a, ddof=2, fweights=f, aweights=w),
           [S((2, 5), (5,), (5,), int_args=(1,), int_high=3, **POS)], "SqueezeBackward0",
           float32_ok=False),
    OpInfo("corrcoef", lambda a: torch.corrcoef(a), np.corrcoef, [S((3, 5))], "ClampBackward1"),
    OpInfo("corrcoef_1d", lambda a: a.corrcoef(), np.corrcoef, [S((4,))], "DivBackward0"),
    OpInfo("renorm", lambda a: a.renorm(2, 0, 2.0), lambda a: _renorm_ref(a, 2, 0, 2.0),
           [S((3, 4)), S((4, 2, 3))], "RenormBackward0"),
    OpInfo("renorm_p", lambda a: torch.renorm(a, 1.5, 1, 1.0), lambda a: _renorm_ref(a, 1.5, 1, 1.0),
           [S((3, 4))], "RenormBackward0"),
    OpInfo("renorm_p1_inf", lambda a: a.renorm(1, -1, 1.5) + a.renorm(float("inf"), 0, 1.0),
           lambda a: _renorm_ref(a, 1, -1, 1.5) + np.where(
               np.abs(a).max(1, keepdims=True) > 1.0,
               a / (np.abs(a).max(1, keepdims=True) + 1e-7), a),
           [S((3, 4))], "AddBackward0"),
    OpInfo("renorm_", lambda a: (a * 1).renorm_(3, 1, 0.5), lambda a: _renorm_ref(a, 3, 1, 0.5),
           [S((2, 3))], "RenormBackward0"),
    OpInfo("renorm_kw", lambda a, **kw: torch.renorm(a, **kw), _renorm_ref,
           [S((3, 4), kwargs={"p": 2, "dim": -1, "maxnorm": 0.5}),
            S((2, 3, 2), kwargs={"p": 0.5, "dim": 1, "maxnorm": 1.0})], "RenormBackward0"),
    OpInfo("matrix_power", lambda a: a.matrix_power(3), lambda a: np.linalg.matrix_power(a, 3),
           [S((3, 3))], "MmBackward0"),
    OpInfo("matrix_power_batch", lambda a: a.matrix_power(5),
           lambda a: np.linalg.matrix_power(a, 5), [S((2, 2, 2), domain=(-1.0, 1.0))],
           "UnsafeViewBackward0"),
    OpInfo("matrix_power_6", lambda a: torch.matrix_power(a, 6),
           lambda a: np.linalg.matrix_power(a, 6), [S((2, 2), domain=(-1.0, 1.0))],
           "MmBackward0"),
    OpInfo("matrix_power_0_1", lambda a: a.matrix_power(0) + a.matrix_power(1),
           lambda a: np.eye(3) + a, [S((3, 3))], "AddBackward0"),
    OpInfo("matrix_power_neg", lambda a: (a + 3 * torch.eye(3, dtype=a.dtype)).matrix_power(-2),
           lambda a: np.linalg.matrix_power(a + 3 * np.eye(3), -2), [S((3, 3))], "MmBackward0"),
    OpInfo("pinverse", lambda a: a.pinverse(), np.linalg.pinv, [S((3, 4)), S((4, 3)),
                                                                S((2, 3, 3))],
           "LinalgPinvBackward0", atol=1e-4),
    OpInfo("pinverse_rcond", lambda a: torch.pinverse(a, 1e-3), lambda a: np.linalg.pinv(a, 1e-3),
           [S((2, 3))], "LinalgPinvBackward0", atol=1e-4),
]


def _histc(a, bins, lo, hi):
    if lo == hi == 0:
        lo, hi = a.min(), a.max()
    return np.histogram(a, bins, (lo, hi))[0].astype(a.dtype)


W5 = torch.tensor([0.5, 1.0, 2.0, 0.25, 3.0, 1.5])

ROWS += [
    OpInfo("heaviside", lambda a, v: torch.heaviside(a, v), np.heaviside,
           [S((3, 4), (4,)), S((3,), ())], grad=False),
    OpInfo("heaviside_zero", lambda a, v: torch.heaviside(torch.round(a), v),
           lambda a, v: np.heaviside(np.round(a), v), [S((3, 4), (3, 4))], grad=False),
    OpInfo("heaviside_method", lambda a, v: a.heaviside(v), np.heaviside, [S((3, 4), (3, 4))],
           grad=False),
    OpInfo("heaviside_", lambda a, v: (torch.round(a) * 1).heaviside_(v),
           lambda a, v: np.heaviside(np.round(a), v), [S((3, 4), (3, 4)), S((3, 4), (4,))],
           grad=False),
    OpInfo("histc", lambda a: torch.histc(a, 5, -2.0, 2.0), lambda a: _histc(a, 5, -2.0, 2.0),
           [S((3, 4)), S((7,))], grad=False),
    OpInfo("histc_minmax", lambda a: torch.histc(a, bins=4), lambda a: _histc(a, 4, 0, 0),
           [S((10,))], grad=False),
    OpInfo("histc_method", lambda a: a.histc(3, min=-1.0, max=1.0),
           lambda a: _histc(a, 3, -1.0, 1.0), [S((4, 3))], grad=False),
    OpInfo("bincount", lambda i: torch.bincount(i), np.bincount,
           [S((6,), int_args=(0,), int_high=4), S((0,), int_args=(0,))], grad=False),
    OpInfo("bincount_minlength", lambda i: torch.bincount(i, minlength=7),
           lambda i: np.bincount(i, minlength=7), [S((5,), int_args=(0,), int_high=4)],
           grad=False),
    OpInfo("bincount_weights", lambda i: i.bincount(W5.to(torch.float64)),
           lambda i: np.bincount(i, W5.numpy()), [S((6,), int_args=(0,), int_high=3)],
           grad=False, float32_ok=False),
    OpInfo("unsafe_split_fn", lambda a: torch.unsafe_split(a, 2, 1),
           lambda a: np.array_split(a, [2, 4], 1), [S((3, 5))], "UnsafeSplitBackward0"),
    OpInfo("unsafe_split_with_sizes_fn", lambda a: torch.unsafe_split_with_sizes(a, [1, 3], -1),
           lambda a: np.split(a, [1], -1), [S((2, 4))], "UnsafeSplitWithSizesBackward0"),
    OpInfo("unsafe_chunk_method", lambda a: a.unsafe_chunk(2, 0),
           lambda a: np.array_split(a, 2, 0), [S((4, 2))], "UnsafeSplitBackward0"),
]
