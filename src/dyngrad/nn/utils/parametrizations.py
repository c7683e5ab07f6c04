"""``nn.utils.parametrizations``: ``orthogonal``, ``weight_norm`` and ``spectral_norm`` as
parametrizations (see ``parametrize``), with PyTorch's state-dict names and errors.

The orthogonal maps are built from existing differentiable ops: the matrix exponential by
scaling and squaring of a degree-18 Taylor polynomial (accurate to rounding in double), the
Cayley map with ``linalg.solve``, and the Householder product as a loop of rank-one updates.
The QR factorisations PyTorch runs without gradient (to orthogonalise an assigned matrix) use
NumPy's LAPACK QR.
"""
from __future__ import annotations

import math
from enum import Enum, auto

import numpy as np

from ..._dtype import np_finfo
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _eye(n, k, like):
    return Tensor._make(np.eye(n, k, dtype=like._data.dtype))


def _matrix_exp(A):
    """exp(A) of the last two dims: Taylor polynomial of A / 2^s (norm <= 1/2), squared s times."""
    from ...ops.linalg import matmul
    n = A.shape[-1]
    a = np.abs(A._data)
    norm = float(a.sum(-2).max()) if a.size else 0.0
    s = max(0, int(math.ceil(math.log2(norm / 0.5)))) if norm > 0.5 else 0
    B = A * (0.5 ** s) if s else A
    eye = _eye(n, n, A)
    E = eye
    for k in range(18, 0, -1):  # Horner: I + B/1 (I + B/2 (I + ... (I + B/18)))
        E = eye + matmul(B, E) * (1.0 / k)
    for _ in range(s):
        E = matmul(E, E)
    return E


def _householder_product(A, tau):
    """The first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T, v_i = e_i + A[i+1:, i]."""
    from ...ops.linalg import matmul
    n, k = A.shape[-2], A.shape[-1]
    V = A.tril(-1) + _eye(n, k, A)
    Q = _eye(n, n, A)
    for i in range(k):
        v = V[..., :, i:i + 1]
        Q = Q - matmul(matmul(Q, v), v.mT) * tau[..., i:i + 1].unsqueeze(-1)
    return Q[..., :, :k]


def _np_qr_orthogonal(a):
    """Q of the QR factorisation with R's diagonal made positive (``_make_orthogonal``)."""
    q, r = np.linalg.qr(a)
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    return q * d[..., None, :]


def _np_geqrf(a):
    """LAPACK geqrf of the last two dims: (R above, reflectors below the diagonal; tau)."""
    lead = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    hs, taus = [], []
    for m in flat:
        h, tau = np.linalg.qr(m, mode="raw")
        hs.append(h.T)
        taus.append(tau)
    return (np.stack(hs).reshape(a.shape),
            np.stack(taus).reshape(lead + (min(a.shape[-2:]),)))


def _is_orthogonal(Q):
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * np_finfo(Q._data.dtype).eps
    q = Q._data
    return bool(np.allclose(np.swapaxes(q, -1, -2).conj() @ q, np.eye(k), rtol=1e-5, atol=eps))


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        from ...ops.shape import cat
        from ...linalg import solve
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                z = Tensor._make(np.zeros(tuple(X.shape[:-2]) + (n, n - k), X._data.dtype))
                X = cat([X, z], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                Id = _eye(n, n, A)
                Q = solve(Id - A * 0.5, Id + A * 0.5)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            q = np.array(Q._data)
            if not hasattr(self, "base"):
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential or the Cayley "
                        "parametrizations when use_trivialization=False.")
                A, tau = _np_geqrf(q)
                d = np.diagonal(A, axis1=-2, axis2=-1)
                sgn = np.sign(d)
                sgn = np.where(tau == 0.0, -sgn, sgn)
                idx = np.arange(min(n, k))
                A[..., idx, idx] = sgn
                A = Tensor._make(A)
                return A.mT if transpose else A
            if n == k:
                if not _is_orthogonal(Q):
                    q = _np_qr_orthogonal(q)
            else:
                from ..._factories import randn
                N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype)
                q = _np_qr_orthogonal(np.concatenate([q, N._data], -1))
            self.base = Tensor._make(np.ascontiguousarray(q))
            neg_id = np.zeros(tuple(Q_init.shape), Q_init._data.dtype)
            m = min(neg_id.shape[-2:])
            neg_id[..., np.arange(m), np.arange(m)] = -1.0
            return Tensor._make(neg_id)


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` to orthogonal (or unitary) matrices, parametrized by
    ``"matrix_exp"``, ``"cayley"`` or ``"householder"``; the matrix it had is kept."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] \
            or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dim but ``dim`` (all of them for -1), shaped to broadcast."""
    if dim == -1:
        return v.norm()
    nd = v.dim()
    others = tuple(d for d in range(nd) if d != dim)
    return (v * v).sum(dim=others, keepdim=True).sqrt()


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``module.<name> = g * v / ||v||`` with magnitude ``original0`` (g) and direction
    ``original1`` (v), norms over every dim but ``dim`` (``None``: the whole tensor)."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            from ..._factories import randn
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            with no_grad():
                u = randn(h, dtype=weight.dtype)
                v = randn(w, dtype=weight.dtype)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(weight_mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = u.dot(weight_mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """``module.<name> / sigma``, sigma its largest singular value estimated by power
    iteration (buffers ``_u``/``_v``, one step per training forward)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules import conv
        transposed = tuple(getattr(conv, c) for c in ("ConvTranspose1d", "ConvTranspose2d",
                                                       "ConvTranspose3d") if hasattr(conv, c))
        dim = 1 if transposed and isinstance(module, transposed) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
