"""Rows for svd, matrix_exp, eigh, cholesky and qr (src/dyngrad/ops/decompositions.py).
Singular vectors and eigenvectors are only defined up to sign, so rows differentiate
gauge-invariant functions of them (U @ Vh, V * V), as PyTorch's own tests do."""
import numpy as np

import dyngrad as torch
from tests.optable import OpInfo, S

try:
    from scipy.linalg import expm as _expm
except ImportError:  # pragma: no cover
    _expm = None


def _polar(a):
    U, S_, Vh = torch.linalg.svd(a, full_matrices=False)
    return U @ Vh, S_


def _polar_np(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u @ vh, s


def _rebuild_full(a):
    U, S_, Vh = torch.linalg.svd(a)
    return (U[..., :, :S_.shape[-1]] * S_.unsqueeze(-2)) @ Vh[..., :S_.shape[-1], :]


def _torch_svd(a):
    U, S_, V = torch.svd(a)
    return U @ V.mT, S_


def _sym(a):
    return a + a.mT


def _eigh(a):
    L, V = torch.linalg.eigh(_sym(a))
    return L, V * V


def _eigh_np(a):
    w, v = np.linalg.eigh(a + np.swapaxes(a, -1, -2))
    return w, v * v


def _spd(a):
    """Symmetric and diagonally dominant (entries of a in [-2, 2]): positive-definite."""
    n = a.shape[-1]
    return a + a.mT + torch.eye(n, dtype=a.dtype) * (4 * n + 1)


def _spd_np(a):
    n = a.shape[-1]
    return a + np.swapaxes(a, -1, -2) + np.eye(n) * (4 * n + 1)


def _qr_np(a):
    q, r = np.linalg.qr(a)
    return q, r


ROWS = [
    OpInfo("svdvals", torch.linalg.svdvals, lambda a: np.linalg.svd(a, compute_uv=False),
           [S((3, 2)), S((2, 3)), S((2, 3, 3))], "LinalgSvdBackward0"),
    OpInfo("svd_polar", _polar, _polar_np, [S((3, 3)), S((4, 2)), S((2, 4))], "MmBackward0"),
    OpInfo("svd_polar_batch", _polar, _polar_np, [S((2, 3, 2))], "UnsafeViewBackward0"),
    OpInfo("svd_full", _rebuild_full, lambda a: a, [S((3, 3)), S((3, 2))], "MmBackward0"),
    OpInfo("torch_svd", _torch_svd, _polar_np, [S((3, 2)), S((2, 3))], "MmBackward0"),
    OpInfo("linalg_svd", torch.linalg.svd,
           lambda a, full_matrices: tuple(np.linalg.svd(a, full_matrices=full_matrices)),
           [S((3, 3), extra=(False,)), S((3, 2), extra=(False,)), S((2, 3, 2), extra=(False,))],
           "LinalgSvdBackward0"),
    OpInfo("matrix_exp", torch.matrix_exp, _expm, [S((3, 3)), S((2, 2, 2)), S((1, 1))],
           "LinalgMatrixExpBackward0"),
    OpInfo("linalg_matrix_exp", lambda a: torch.linalg.matrix_exp(a), _expm, [S((2, 2))],
           "LinalgMatrixExpBackward0"),
    OpInfo("eigvalsh", lambda a: torch.linalg.eigvalsh(_sym(a)),
           lambda a: np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2)), [S((3, 3)), S((2, 2, 2))],
           "LinalgEighBackward0"),
    OpInfo("eigh", _eigh, _eigh_np, [S((3, 3)), S((2, 3, 3))], "LinalgEighBackward0"),
    OpInfo("cholesky", lambda a: torch.linalg.cholesky(_spd(a)),
           lambda a: np.linalg.cholesky(_spd_np(a)), [S((3, 3)), S((2, 2, 2))],
           "LinalgCholeskyExBackward0"),
    OpInfo("cholesky_upper", lambda a: torch.linalg.cholesky(_spd(a), upper=True),
           lambda a: np.swapaxes(np.linalg.cholesky(_spd_np(a)), -1, -2), [S((3, 3))],
           "LinalgCholeskyExBackward0"),
    OpInfo("qr", torch.linalg.qr, _qr_np, [S((3, 2)), S((3, 3)), S((2, 3)), S((2, 4, 3))],
           "LinalgQrBackward0"),
]
