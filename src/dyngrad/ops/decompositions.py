"""Matrix decompositions and what is computed through them: svd (torch.svd, linalg.svd,
linalg.svdvals), linalg.eigh, linalg.eigvalsh, linalg.cholesky (and cholesky_ex), linalg.qr,
and matrix_exp (its backward is the exponential of a block matrix).  Backward formulas follow
PyTorch's (FunctionsManual.cpp): they are written with dyngrad ops, so they have second
derivatives too.  Gradients through singular vectors / eigenvectors assume distinct singular
values / eigenvalues, as PyTorch's formulas do."""
from __future__ import annotations

import numpy as np

from . import composite
from . import _dual as X
from ._spec import defop, every_output, front, quick
from ._formula import FormulaNode
from .._record import STATE, Saved, Tensor, edge_of, notify
from .reduction import return_type
from .. import _dtype as D

_make = Tensor._make

RT_SVD = return_type("svd", ("U", "S", "V"))
RT_LSVD = return_type("linalg_svd", ("U", "S", "Vh"))
RT_EIGH = return_type("linalg_eigh", ("eigenvalues", "eigenvectors"))
RT_QR = return_type("linalg_qr", ("Q", "R"))
RT_CHOL = return_type("linalg_cholesky_ex", ("L", "info"))


def _pkg():
    import importlib
    return importlib.import_module(__name__.split(".")[0])


def _h(x):
    """``x.mH`` for complex values, ``x.mT`` (the same graph as before) for real ones: the
    factorizations' formulas below are PyTorch's complex ones, reducing to the real ones."""
    return x.mH if x.is_complex() else x.mT


def _lin_err():
    from .linalg import LinAlgError
    return LinAlgError


def _check(A, fn, square=False):
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_{fn}(): argument 'A' (position 1) must be Tensor, not "
                        f"{D.type_name(A)}")
    return _check_array(A._data, fn, square)


def _check_array(d, fn, square=False):
    """PyTorch's errors for a matrix argument ``d`` (an array) of linalg.<fn>."""
    if d.ndim < 2:
        raise RuntimeError(f"linalg.{fn}: The input tensor A must have at least 2 dimensions.")
    if d.dtype not in D.INEXACT:
        raise RuntimeError(f"linalg.{fn}: Expected a floating point or complex tensor as input. "
                           f"Got {D.scalar_type_name(d.dtype)}")
    if square and d.shape[-1] != d.shape[-2]:
        raise RuntimeError(f"linalg.{fn}: A must be batches of square matrices, but they are "
                           f"{d.shape[-2]} by {d.shape[-1]} matrices")
    return d


def _batched_strides(shape, f_contig):
    """PyTorch's ``batched_matrix_contiguous_strides`` (in elements): C-ordered batch dims, the
    last two dims column by column when ``f_contig``; empty dims count as 1."""
    st = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * max(shape[i + 1], 1)
    if f_contig and len(shape) >= 2:
        st[-1], st[-2] = max(shape[-2], 1), 1
    return st


def _col_major(a, f_contig=True):
    """``a`` laid out as PyTorch's LAPACK results: each matrix stored column by column (batch
    dims C-ordered; PyTorch's U, Vh, Q, R, L, inv have strides (..., 1, m)), or C-ordered when
    ``f_contig`` is false; empty arrays get PyTorch's strides too (NumPy's are zeros)."""
    a = np.asarray(a)
    want = tuple(s * a.itemsize for s in _batched_strides(a.shape, f_contig))
    if a.strides == want:
        return a
    out = np.ndarray(a.shape, a.dtype, np.empty(a.size, a.dtype), strides=want)
    if a.size:
        out[...] = a
    return out


def _outputs(arrays, node_fn, needs, layout=None):
    """Tensors for ``arrays``, all outputs of one node made by ``node_fn(outputs)``; an array
    whose ``layout`` entry is true is stored column-major, the others C-ordered (``_col_major``)."""
    layout = layout or (False,) * len(arrays)
    outs = [_make(_col_major(a, f)) for a, f in zip(arrays, layout)]
    if not needs:
        return outs
    for i, o in enumerate(outs):
        o._requires_grad = True
        if i:
            o._output_nr = i
    node = node_fn(outs)
    node._odt = None
    for o in outs:
        o._grad_fn = node
        notify(o)
    # complex factors beside real values (S, L): no one dtype to cast the gradients to
    if len({o._data.dtype for o in outs if o._data.dtype in D.INEXACT}) > 1:
        node._odt = None
    return outs


# --- SVD -----------------------------------------------------------------------------------
def _tensor_formula(formula, grads, *vals):
    """``formula`` (written with dyngrad ops) on Tensors as given (create_graph, forward
    mode), or on arrays as constant Tensors with recording off, its results handed back as
    arrays (a plain backward)."""
    if not any(isinstance(v, np.ndarray) for v in grads + vals):
        return formula(grads, *vals)
    with _pkg().no_grad():
        r = formula(tuple(None if g is None else _const(g) for g in grads),
                    *(_const(v) if isinstance(v, np.ndarray) else v for v in vals))
    return tuple(None if x is None else x._data for x in r)


def _const(a):
    return _make(a if a.flags.c_contiguous else a.copy(order="C"))


@defop("linalg_svd", node="LinalgSvdBackward0", inputs=("A",),
       saved=("full_matrices", "result", "S", "Vh"), names={"result": "U"},
       outputs=("U", "S", "Vh"), holomorphic=False, function=False, method=False,
       batch=lambda spec, arrays, params: spec.forward(arrays[0], **params))
def linalg_svd(A, full_matrices=True, *, driver=None):
    """``torch.linalg.svd``: (U, S, Vh) with ``A = U diag(S) Vh``; LinalgSvdBackward0."""
    d = _check_array(A, "svd")
    if d.dtype == np.float16:
        raise NotImplementedError("\"linalg_svd_cpu\" not implemented for 'Half'")
    u, s, vh = np.linalg.svd(d, full_matrices=full_matrices)
    s = s.astype(d.dtype.type(0).real.dtype, copy=False)
    return _col_major(u), _col_major(s, False), _col_major(vh)


@linalg_svd.backward
def _(ctx, grads):
    U, S, Vh = ctx.result, ctx.S, ctx.Vh
    for nr, v in ((1, S), (2, Vh)):  # (create_graph: each one's gradient flows to its output)
        if isinstance(v, Tensor) and v._grad_fn is ctx._node:
            v._output_nr = nr
    return _tensor_formula(_svd_backward, tuple(grads), U, S, Vh, ctx.full_matrices)


def _svd_backward(g, U, S, Vh, full):
    """PyTorch's svd_backward, U / Vh narrowed to the k singular vectors first when
    full_matrices; for complex A the formula is PyTorch's complex gradient itself."""
    t = _pkg()
    gU, gS, gVh = g
    k = S.shape[-1]
    if full:
        if gU is not None:
            gU = gU.narrow(-1, 0, k)
        if gVh is not None:
            gVh = gVh.narrow(-2, 0, k)
        U = U.narrow(-1, 0, k)
        Vh = Vh.narrow(-2, 0, k)
    m, n = U.shape[-2], Vh.shape[-1]
    if gU is None and gVh is None:
        if gS is None:
            return None,
        return (t.matmul(U, gS.unsqueeze(-1) * Vh) if m >= n
                else t.matmul(U * gS.unsqueeze(-2), Vh)),
    S2 = S * S
    eye = t.eye(k, dtype=S.dtype)
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye  # 1 on the diagonal
    UhgU = VhgV = None
    if gU is not None:
        x = t.matmul(_h(U), gU)
        UhgU = x - _h(x)
    if gVh is not None:
        x = t.matmul(Vh, _h(gVh))
        VhgV = x - _h(x)
    if U.is_complex():
        # PyTorch's check: a loss that depends on the phase the singular vectors share
        # has no gradient
        zero = np.zeros(tuple(S.shape))
        iu = zero if UhgU is None else np.imag(UhgU.diagonal(0, -2, -1)._data)
        iv = zero if VhgV is None else np.imag(VhgV.diagonal(0, -2, -1)._data)
        if not np.allclose(iu, -iv, rtol=1e-2, atol=1e-2):
            raise RuntimeError(
                "svd_backward: The singular vectors in the complex case are specified up "
                "to multiplication by e^{i phi}. The specified loss function depends on "
                "this phase term, making it ill-defined.")
    if UhgU is not None and VhgV is not None:
        gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E
    elif UhgU is not None:
        gA = UhgU * (S.unsqueeze(-2) / E)
    else:
        gA = (S.unsqueeze(-1) / E) * VhgV
    if gS is not None:
        gA = gA + t.diag_embed(gS)
    if UhgU is not None and VhgV is not None and UhgU.is_complex():
        # the imaginary diagonal of U^H gU (the phase the singular vectors share)
        gA = gA + t.diag_embed(UhgU.diagonal(0, -2, -1) / (S * 2))
    if m > n and gU is not None:
        gA = t.matmul(U, gA)
        gUSinv = gU / S.unsqueeze(-2)
        gA = gA + gUSinv - t.matmul(U, t.matmul(_h(U), gUSinv))
        gA = t.matmul(gA, Vh)
    elif m < n and gVh is not None:
        gA = t.matmul(gA, Vh)
        SinvgVh = gVh / S.unsqueeze(-1)
        gA = gA + SinvgVh - t.matmul(t.matmul(SinvgVh, _h(Vh)), Vh)
        gA = t.matmul(U, gA)
    else:
        gA = t.matmul(U, t.matmul(gA, Vh)) if m >= n else t.matmul(t.matmul(U, gA), Vh)
    return gA,


@linalg_svd.jvp
def _(ctx, dA):
    # PyTorch's linalg_svd_jvp
    t = _pkg()
    U, S, Vh, full = ctx.result, ctx.S, ctx.Vh, ctx.full_matrices
    cplx = dA.is_complex()
    m, n = dA.shape[-2], dA.shape[-1]
    k = S.shape[-1]
    if full:
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
    V = _h(Vh)
    dP = (t.matmul(_h(U), t.matmul(dA, V)) if m >= n
          else t.matmul(t.matmul(_h(U), dA), V))
    dS = dP.diagonal(0, -2, -1)
    if cplx:
        dS = dS.real
    dP = dP - t.diag_embed(dS)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + t.eye(k, dtype=S.dtype)

    def sym(x):
        return x + _h(x)

    diag2S = dP.diagonal(0, -2, -1) / (2 * S) if cplx else None
    dUaux = sym(dP * S.unsqueeze(-2)) / E
    if cplx:
        dUaux = dUaux + t.diag_embed(diag2S)
    dU = t.matmul(U, dUaux)
    if m > n:
        dAVSinv = t.matmul(dA, V / S.unsqueeze(-2))
        dU = dU + dAVSinv - t.matmul(U, t.matmul(_h(U), dAVSinv))
        if full:
            dU = t.cat([dU, t.zeros(tuple(dU.shape[:-1]) + (m - n,), dtype=dU.dtype)], -1)
    dVhaux = sym(dP * (-S).unsqueeze(-1)) / E
    if cplx:
        dVhaux = dVhaux + t.diag_embed(diag2S)
    dVh = t.matmul(dVhaux, Vh)
    if m < n:
        UHdASinv = t.matmul(_h(U) / S.unsqueeze(-1), dA)
        dVh = dVh + UHdASinv - t.matmul(t.matmul(UHdASinv, V), Vh)
        if full:
            dVh = t.cat([dVh, t.zeros(tuple(dVh.shape[:-2]) + (n - m, n), dtype=dVh.dtype)], -2)
    return dU, dS, dVh


_svd_spec = every_output(linalg_svd)
# PyTorch's node also shows the number of singular values
_svd_spec.node_cls._saved_S_sym_argsize_minus_1 = property(lambda self: self._saved_S.shape[-1])


def linalg_svd(A, full_matrices=True, *, driver=None):
    """``torch.linalg.svd``: (U, S, Vh) with ``A = U diag(S) Vh``; LinalgSvdBackward0."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_svd(): argument 'A' (position 1) must be Tensor, not "
                        f"{D.type_name(A)}")
    if A._data.dtype == D.BF16 and A._data.ndim >= 2:
        raise NotImplementedError("\"linalg_svd_cpu\" not implemented for 'BFloat16'")
    p = {"full_matrices": full_matrices, "driver": driver}
    return RT_LSVD(*quick(_svd_spec, A, (), p, p))


linalg_svd = front(_svd_spec, linalg_svd)
linalg_svd.__name__ = linalg_svd.__qualname__ = "svd"


def svdvals(A, *, driver=None):
    """``torch.linalg.svdvals``: the singular values, descending (output 1 of
    LinalgSvdBackward0, as in PyTorch)."""
    if STATE.enabled and isinstance(A, Tensor) and A._requires_grad:
        return linalg_svd(A, False)[1]
    d = _check(A, "svdvals")
    return _make(_col_major(np.linalg.svd(d, compute_uv=False), False))


@composite()
def svd(input, some=True, compute_uv=True):
    """``torch.svd``: (U, S, V) with ``input = U diag(S) V^T`` (V, not Vh): linalg.svd's
    factors, V its Vh's conjugate transpose (TransposeBackward0), as PyTorch composes it."""
    for name, pos, v in (("some", 2, some), ("compute_uv", 3, compute_uv)):
        if not isinstance(v, (bool, np.bool_)):
            raise TypeError(f"svd(): argument '{name}' (position {pos}) must be bool, not "
                            f"{type(v).__name__}")
    if isinstance(input, Tensor) and input.dim() < 2:
        raise RuntimeError(f"linalg.svd: input should have at least 2 dimensions, but has "
                           f"{input.dim()} dimensions instead")
    if not compute_uv:
        d = _check(input, "svd")
        m, n = d.shape[-2:]
        s = svdvals(input)
        z = np.zeros(d.shape[:-2] + (m, m), d.dtype), np.zeros(d.shape[:-2] + (n, n), d.dtype)
        return RT_SVD(_make(_col_major(z[0], False)), s, _make(_col_major(z[1])))
    u, s, vh = linalg_svd(input, not some)
    return RT_SVD(u, s, _h(vh))


# --- matrix exponential ----------------------------------------------------------------------
def _expm(a):
    try:
        from scipy.linalg import expm
    except ImportError:  # pragma: no cover - scipy is optional
        return _expm_np(a)
    return np.asarray(expm(a)).astype(a.dtype, copy=False)


def _expm_np(a):
    """Scaling and squaring with a degree-18 Taylor series (no scipy)."""
    norm = np.abs(a).sum(-2).max() if a.size else 0.0
    s = max(0, int(np.ceil(np.log2(norm))) + 1) if norm > 0 else 0
    x = a / (2.0 ** s)
    eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape)
    r, term = eye.copy(), eye.copy()
    for k in range(1, 19):
        term = term @ x / k
        r = r + term
    for _ in range(s):
        r = r @ r
    return r


@defop("matrix_exp", node="LinalgMatrixExpBackward0", saved=("self",),
       batch=lambda spec, arrays, params: spec.forward(arrays[0]))
def matrix_exp(self):
    """The matrix exponential of square matrices; LinalgMatrixExpBackward0."""
    d = _check_array(self, "matrix_exp", True)
    if d.shape[-1] == 0:
        # PyTorch returns a clone of 0 x 0 matrices, strides kept
        return np.ndarray(d.shape, d.dtype, np.empty(0, d.dtype), strides=d.strides)
    return _col_major(_expm(d) if d.size else d, False)


def _block_exp(ctx, A, E):
    """The top-right block of exp([[A, E], [0, A]]): the derivative of exp at A in the
    direction E (PyTorch's differential_analytic_matrix_function)."""
    n = X.data(A).shape[-1]
    top = X.cat([A, E], -1)
    bottom = X.cat([X.zeros_like(A), A], -1)
    big = ctx.op("matrix_exp", X.cat([top, bottom], -2))
    return big[..., :n, n:]


@matrix_exp.backward
def _(ctx, grad):
    return _block_exp(ctx, X.transpose_last(ctx.self), grad),


@matrix_exp.jvp
def _(ctx, t):
    return _block_exp(ctx, ctx.self, t)


matrix_exp = matrix_exp.fn


# --- symmetric eigendecomposition ------------------------------------------------------------
class LinalgEighBackward0(FormulaNode):
    """PyTorch's linalg_eig_backward for Hermitian input (distinct eigenvalues); for complex
    A the formula is PyTorch's complex gradient itself."""
    __slots__ = ()
    _nout = 2
    _holomorphic = False
    _saved_outputs = {0: 0, 1: 1}

    def formula(self, g, L, V):
        t = _pkg()
        gL, gV = g
        if gV is None:
            if gL is None:
                return None,
            return t.matmul(V * gL.unsqueeze(-2), _h(V)),
        n = L.shape[-1]
        x = t.matmul(_h(V), gV)
        if x.is_complex() and not np.allclose(np.imag(x.diagonal(0, -2, -1)._data), 0,
                                              rtol=1e-2, atol=1e-2):
            # PyTorch's check: a loss that depends on the eigenvectors' phases has no gradient
            raise RuntimeError(
                "linalg_eigh_backward: The eigenvectors in the complex case are specified up to "
                "multiplication by e^{i phi}. The specified loss function depends on this "
                "quantity, so it is ill-defined.")
        VhgV = 0.5 * (x - _h(x))
        E = L.unsqueeze(-2) - L.unsqueeze(-1) + t.eye(n, dtype=L.dtype)
        gA = VhgV / E
        if gL is not None:
            if gA.is_complex():  # PyTorch's diagonal is gL's (the imaginary part dropped)
                gA = gA - t.diag_embed(gA.diagonal(0, -2, -1))
            gA = gA + t.diag_embed(gL)
        return t.matmul(V, t.matmul(gA, _h(V))),


def _eigh(A, UPLO, fn):
    d = _check(A, fn, True)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    w, v = np.linalg.eigh(d, UPLO=UPLO)
    needs = STATE.enabled and A._requires_grad
    return _outputs((w.astype(d.dtype.type(0).real.dtype, copy=False), v),
                    lambda o: LinalgEighBackward0((edge_of(A),), (Saved(o[0], True),
                                                                  Saved(o[1], True))), needs,
                    (False, True))


def eigh(A, UPLO="L"):
    """``torch.linalg.eigh``: (eigenvalues ascending, eigenvectors) of symmetric matrices."""
    return RT_EIGH(*_eigh(A, UPLO, "eigh"))


def eigvalsh(A, UPLO="L"):
    """``torch.linalg.eigvalsh``: the eigenvalues (ascending) of symmetric matrices."""
    if STATE.enabled and isinstance(A, Tensor) and A._requires_grad:
        return _eigh(A, UPLO, "eigvalsh")[0]
    d = _check(A, "eigvalsh", True)
    return _make(_col_major(np.linalg.eigvalsh(d, UPLO=UPLO), False))


# --- Cholesky --------------------------------------------------------------------------------
class LinalgCholeskyExBackward0(FormulaNode):
    """PyTorch's cholesky_backward: gA = L^{-H} phi(L^H gL) L^{-1}, symmetrised (for complex
    A, PyTorch's complex gradient itself)."""
    __slots__ = ()
    _nout = 2
    _holomorphic = False

    def formula(self, g, L, upper):
        t = _pkg()
        gL = g[0]
        if gL is None:
            return None,
        if upper:
            L, gL = _h(L), _h(gL)
        gA = t.matmul(_h(L), gL).tril()
        gA = 0.5 * (gA + _h(gA.tril(-1)))
        Lt = _h(L)
        gA = t.linalg.solve(Lt, gA)                 # L^{-H} gA
        gA = _h(t.linalg.solve(Lt, _h(gA)))         # (...) L^{-1}
        return gA,


def _cholesky(A, upper, fn):
    d = _check(A, fn, True)
    info = np.zeros(d.shape[:-2], np.int32)
    flat = d.reshape((_nbatch(d),) + d.shape[-2:])
    Ls = np.zeros_like(flat)
    bad = None
    for i, a in enumerate(flat):
        # the Hermitian matrix the named triangle defines
        sym = np.tril(a) + np.tril(a, -1).conj().T if not upper else \
            np.triu(a) + np.triu(a, 1).conj().T
        try:
            Ls[i] = np.linalg.cholesky(sym)
        except np.linalg.LinAlgError:
            # the order of the first leading minor that is not positive-definite
            k = next(j for j in range(1, a.shape[0] + 1)
                     if not _pd(sym[:j, :j]))
            info.reshape(-1)[i] = k
            if bad is None:
                bad = (i, k)
    L = Ls.reshape(d.shape)
    if upper:  # U = L^H
        L = np.swapaxes(L, -1, -2).conj() if L.dtype.kind == "c" else np.swapaxes(L, -1, -2)
    needs = STATE.enabled and A._requires_grad
    outs = _outputs((L, info), lambda o: LinalgCholeskyExBackward0(
        (edge_of(A),), (Saved(o[0], True), upper)), needs, (True, False))
    outs[1]._requires_grad = False
    outs[1]._grad_fn = None
    return outs, bad


def _nbatch(d):
    """The number of matrices in ``d`` (a reshape to -1 fails when a matrix is empty)."""
    return int(np.prod(d.shape[:-2], dtype=np.int64))


def _pd(a):
    try:
        np.linalg.cholesky(a)
        return True
    except np.linalg.LinAlgError:
        return False


def cholesky_ex(A, *, upper=False, check_errors=False):
    """``torch.linalg.cholesky_ex``: (L, info), info > 0 where A is not positive-definite."""
    (L, info), bad = _cholesky(A, upper, "cholesky")
    if check_errors and bad is not None:
        raise _chol_error(A, bad)
    return RT_CHOL(L, info)


def _chol_error(A, bad):
    i, k = bad
    where = f"(Batch element {i}): " if A._data.ndim > 2 else ""
    return _lin_err()(f"linalg.cholesky: {where}The factorization could not be completed because "
                      f"the input is not positive-definite (the leading minor of order {k} is "
                      f"not positive-definite).")


def cholesky(A, *, upper=False):
    """``torch.linalg.cholesky``: the lower (or upper) Cholesky factor."""
    (L, _), bad = _cholesky(A, upper, "cholesky")
    if bad is not None:
        raise _chol_error(A, bad)
    return L


# --- QR ------------------------------------------------------------------------------------
class LinalgQrBackward0(FormulaNode):
    """QR backward (reduced mode): for m >= n, M = R gR^T - gQ^T Q and
    gA = (gQ + Q copyltu(M)) R^{-T}; a wide A is split as [X | Y] with X square (for complex
    A with conjugate transposes: PyTorch's complex gradient itself)."""
    __slots__ = ()
    _nout = 2
    _holomorphic = False
    _saved_outputs = {0: 0, 1: 1}

    def formula(self, g, Q, R, mode):
        gQ, gR = g
        if gQ is None and gR is None:
            return None,
        return _qr_bw(gQ, gR, Q, R),


def _copyltu(M):
    low = M.tril(-1)
    d = M.diagonal(0, -2, -1)
    return low + _h(low) + _pkg().diag_embed(d.real if d.is_complex() else d)


def _qr_bw(gQ, gR, Q, R):
    t = _pkg()
    m, n = Q.shape[-2], R.shape[-1]
    if gQ is None:
        gQ = t.zeros_like(Q)
    if gR is None:
        gR = t.zeros_like(R)
    if m >= n:
        M = t.matmul(R, _h(gR)) - t.matmul(_h(gQ), Q)
        b = gQ + t.matmul(Q, _copyltu(M))
        # b R^{-H}: solve R X^H = b^H
        return _h(t.linalg.solve(R, _h(b)))
    # wide: A = [X | Y], X = Q U (square), Y = Q V
    U, V = R[..., :, :m], R[..., :, m:]
    gU, gV = gR[..., :, :m], gR[..., :, m:]
    Y = t.matmul(Q, V)
    gX = _qr_bw(gQ + t.matmul(Y, _h(gV)), gU, Q, U)
    gY = t.matmul(Q, gV)
    return t.cat([gX, gY], -1)


def qr(A, mode="reduced"):
    """``torch.linalg.qr``: (Q, R) with ``A = Q R`` (modes 'reduced', 'complete', 'r')."""
    d = _check(A, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    flat = d.reshape((_nbatch(d),) + d.shape[-2:])
    qs, rs = zip(*[np.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
                   for a in flat]) if flat.shape[0] else ((), ())
    m, n = d.shape[-2:]
    k = m if mode == "complete" else min(m, n)
    q = np.array(qs).reshape(d.shape[:-2] + (m, k)) if qs else np.zeros(d.shape[:-2] + (m, k),
                                                                         d.dtype)
    r = np.array(rs).reshape(d.shape[:-2] + (k, n)) if rs else np.zeros(d.shape[:-2] + (k, n),
                                                                         d.dtype)
    if mode == "r":
        q = np.zeros((0,), d.dtype)
    needs = STATE.enabled and A._requires_grad
    Q, R = _outputs((q.astype(d.dtype, copy=False), r.astype(d.dtype, copy=False)),
                    lambda o: LinalgQrBackward1(mode)((edge_of(A),),
                                                      (Saved(o[0], True), Saved(o[1], True),
                                                       mode)), needs, (True, True))
    return RT_QR(Q, R)


def LinalgQrBackward1(mode):
    """The node class for ``mode``: 'r' and wide 'complete' raise PyTorch's errors at backward."""
    return LinalgQrBackward0 if mode == "reduced" else _QR_CHECKED


class _QrChecked(LinalgQrBackward0):
    __slots__ = ()

    def formula(self, g, Q, R, mode):
        if mode == "r":
            raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you "
                               "are going to differentiate through linalg.qr.")
        if Q.shape[-2] > R.shape[-1]:
            raise RuntimeError("The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        return super().formula(g, Q, R, mode)


_QrChecked.__name__ = _QrChecked.__qualname__ = "LinalgQrBackward0"
_QR_CHECKED = _QrChecked
