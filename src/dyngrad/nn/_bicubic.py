"""Bicubic and antialiased resampling for interpolate: like the linear modes, a separable
linear map (one matrix per spatial axis, ops/pool.axis_linear), here with PyTorch's cubic
convolution weights (A = -0.75, border samples clamped) for mode='bicubic'
(UpsampleBicubic2DBackward0), and with its antialias filters (a triangle for bilinear, Keys'
cubic with a = -0.5 for bicubic, Lanczos-3 for mode='lanczos', widened by the downscaling
factor and normalised) for antialias=True (UpsampleBilinear2DAaBackward0,
UpsampleBicubic2DAaBackward0, UpsampleLanczos2DAaBackward0).  The other
modes go to nn.functional's own interpolate."""
from __future__ import annotations

import math

import numpy as np

from .._tensor import Tensor
from ..ops import pool as _pool
from .._record import STATE, Node, edge_of, record
from ..ops import _dual as X

_make = Tensor._make
_MODES = ("nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact")



class _Resample(Node):
    """Backward of y = F x (per-axis matrices).  PyTorch's backward kernel can use other
    matrices B than its forward (one of the two copies when the size does not change), and
    its double backward runs the forward kernel again: the gradient is B^T g, recorded as
    the adjoint node, whose own gradient is F h."""
    __slots__ = ()
    _adjoint = None
    _named_saved = {"align_corners": (3, "same"), "output_size": (4, "same"),
                    "scales_h": (5, "same"), "scales_w": (6, "same"),
                    "self_sym_sizes": (7, "same")}

    def _bw(self, g, graph):
        fwd, bwd, is_fwd = self._saved[:3]
        mats, transpose = (bwd, True) if is_fwd else (fwd, False)
        return _resample_any(g, fwd, bwd, mats, transpose, type(self)._adjoint, not is_fwd,
                             self._saved[3:]),


def _resample(x, fwd, bwd, mats, transpose, cls, is_fwd, meta):
    """Apply ``mats`` to x, recording ``cls``; ``meta`` is PyTorch's saved arguments
    (align_corners, output_size, scales_h, scales_w, input sizes)."""
    if x._data.dtype.kind in "iu":  # uint8 images: PyTorch's rounded passes
        return _make(np.ascontiguousarray(_pool._apply_mats_int(x._data, mats, True)))
    y = np.ascontiguousarray(_pool._apply_mats(x._data, mats, transpose))
    if STATE.enabled and x._requires_grad:
        return record(y, cls((edge_of(x),), (fwd, bwd, is_fwd) + tuple(meta)))
    return _make(y)


# NumPy on arrays, recorded (differentiable) on Tensors
_resample_any = X.twin(lambda g, fwd, bwd, mats, transpose, cls, is_fwd, meta:
                       _pool._apply_mats(g, mats, transpose), _resample)


def _pair(name):
    fwd = type(name, (_Resample,), {"__slots__": (), "__module__": __name__})
    bwd = type(name.replace("Backward0", "BackwardBackward0"), (_Resample,),
               {"__slots__": (), "__module__": __name__})
    fwd._adjoint, bwd._adjoint = bwd, fwd
    return fwd


UpsampleBicubic2DBackward0 = _pair("UpsampleBicubic2DBackward0")
UpsampleBicubic2DAaBackward0 = _pair("UpsampleBicubic2DAaBackward0")
UpsampleBilinear2DAaBackward0 = _pair("UpsampleBilinear2DAaBackward0")
UpsampleLanczos2DAaBackward0 = _pair("UpsampleLanczos2DAaBackward0")


def _scale(n, o, align_corners, scale):
    """PyTorch's area_pixel_compute_scale: input step per output step."""
    if align_corners:
        return (n - 1) / (o - 1) if o > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n / o


def _cubic1(x, A):
    return ((A + 2) * x - (A + 3)) * x * x + 1


def _cubic2(x, A):
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A


def cubic_matrix(n, o, align_corners, scale=None):
    """(o, n) matrix of PyTorch's bicubic interpolation along one axis."""
    sc = _scale(n, o, align_corners, scale)
    j = np.arange(o, dtype=np.float64)
    src = sc * j if align_corners else sc * (j + 0.5) - 0.5
    i0 = np.floor(src)
    t = src - i0
    A = -0.75
    w = (_cubic2(t + 1, A), _cubic1(t, A), _cubic1(1 - t, A), _cubic2(2 - t, A))
    M = np.zeros((o, n))
    rows = np.arange(o)
    for k in range(4):
        np.add.at(M, (rows, np.clip(i0.astype(np.int64) - 1 + k, 0, n - 1)), w[k])
    return M


def _aa_filter(x, mode):
    x = np.abs(x)
    if mode == "bilinear":
        return np.where(x < 1, 1 - x, 0.0)
    if mode == "lanczos":  # Lanczos-3: sinc(x) sinc(x / 3)
        return np.where(x < 3, np.sinc(x) * np.sinc(x / 3), 0.0)
    a = -0.5
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, (((x - 5) * x + 8) * x - 4) * a, 0.0))


def aa_matrix(n, o, align_corners, scale, mode):
    """(o, n) matrix of PyTorch's antialiased bilinear / bicubic / lanczos resampling along
    one axis."""
    sc = _scale(n, o, align_corners, scale)
    half = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[mode]  # half the filter width
    support = half * (sc if sc >= 1.0 else 1.0)
    inv = 1.0 / sc if sc >= 1.0 else 1.0
    M = np.zeros((o, n))
    for i in range(o):
        center = sc * (i + 0.5)
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), n)
        if xmax <= xmin:
            continue
        k = np.arange(xmin, xmax)
        w = _aa_filter((k - center + 0.5) * inv, mode)
        tot = w.sum()
        if tot != 0:
            w = w / tot
        M[i, xmin:xmax] = w
    return M


def _sizes(input, size, scale_factor, recompute_scale_factor):
    """Output sizes and the scales the kernel is given, as PyTorch's interpolate works them
    out."""
    dim = input.dim() - 2
    insz = list(input._data.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {insz} and output size of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * dim
        scales = [None] * dim
    elif scale_factor is not None:
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, "
                    f"but got input with spatial dimensions of {insz} and scale_factor of "
                    f"shape {scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK)"
                    " format and scale_factor in (s1, s2, ...,sK) format.")
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        out = [int(math.floor(n * s)) for n, s in zip(insz, scales)]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if recompute_scale_factor:
        scales = [None] * dim
    return insz, out, scales


def filtered_resize(input, size, scale_factor, mode, align_corners, recompute_scale_factor,
                    antialias):
    """interpolate's bicubic mode and antialiased (bilinear, bicubic, lanczos) resizes, as
    separable per-axis maps, with PyTorch's errors for them and for unknown modes."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    insz, outsz, scales = _sizes(input, size, scale_factor, recompute_scale_factor)
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes "
                         "and requires a 4-D tensor as input")
    if mode not in ("bicubic", "lanczos") or input.dim() != 4:
        if mode == "bilinear" and input.dim() == 4:
            pass
        else:
            raise NotImplementedError(
                f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                f"for the modes: {_MODES} (got {mode})")
    if any(n <= 0 for n in insz) or any(o <= 0 for o in outsz):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"(H: {insz[0]}, W: {insz[1]}) output (H: {outsz[0]}, W: {outsz[1]})")
    if mode == "lanczos":
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    x = input._data
    if antialias:
        _pool.need_kernel(x, "compute_index_ranges_weights", "uint8", half=False, complex=False)
    else:
        _pool.need_kernel(x, "compute_indices_weights_cubic", "uint8", complex=False)
    mats = []
    for ax, (n, o, sc) in enumerate(zip(insz, outsz, scales)):
        if antialias:
            M = aa_matrix(n, o, align_corners, sc, mode)
        else:
            M = cubic_matrix(n, o, align_corners, sc)
        mats.append((2 + ax, M))
    # when the size does not change PyTorch copies: the antialiased forward, the bicubic
    # backward
    same = [(ax, np.eye(n)) for ax, n in zip((2, 3), insz)] if insz == outsz else mats
    if antialias:
        cls = {"bicubic": UpsampleBicubic2DAaBackward0, "bilinear": UpsampleBilinear2DAaBackward0,
               "lanczos": UpsampleLanczos2DAaBackward0}[mode]
        fwd, bwd = same, mats
    else:
        cls = UpsampleBicubic2DBackward0
        fwd, bwd = mats, same
    meta = (bool(align_corners), tuple(outsz), scales[0], scales[1], tuple(x.shape))
    return _resample(input, fwd, bwd, fwd, False, cls, True, meta)

