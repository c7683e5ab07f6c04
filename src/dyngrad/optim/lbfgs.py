"""L-BFGS (limited-memory BFGS) with an optional strong-Wolfe line search, following PyTorch's
algorithm step by step.

Scalars that PyTorch keeps as 0-d tensors (``gtd``, ``ys``, ``ro[i]``, ``H_diag``, ``al[i]``
and, depending on the path taken, ``t``) are NumPy scalars of the parameters' dtype here, so
they round like PyTorch's and come out as 0-d tensors in ``state``; plain Python numbers stay
Python numbers."""
from __future__ import annotations

from copy import deepcopy

import numpy as np

from .._tensor import Tensor
from .optimizer import Optimizer, _check_lr
from .. import _dtype as _DT


def _dot(a, b):
    """Inner product as a sum of products (a BLAS ``dot`` may fuse multiply-adds, which for a
    2-vector already rounds differently from PyTorch's CPU ``dot``)."""
    return (a * b).sum()


_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's splitting constant for float64


def _axpy_(y, alpha, x):
    """``y += alpha * x`` rounded once per element, as PyTorch's ``add_(x, alpha=...)`` does
    on the CPU (a fused multiply-add).  float64: Dekker's exact product plus a two-sum;
    float32: the exact product and sum in float64, rounded to float32."""
    if y.dtype == np.float32:
        y[...] = (np.float64(np.float32(alpha)) * x.astype(np.float64) + y).astype(np.float32)
        return
    if y.dtype != np.float64:
        y += y.dtype.type(alpha) * x
        return
    a = np.float64(alpha)
    p = a * x
    ca = _SPLIT * a
    ah = ca - (ca - a)
    al = a - ah
    cx = _SPLIT * x
    xh = cx - (cx - x)
    xl = x - xh
    e = ((ah * xh - p) + ah * xl + al * xh) + al * xl  # p + e == a * x exactly
    s = p + y
    bb = s - p
    err = (p - (s - bb)) + (y - bb)  # s + err == p + y exactly
    with np.errstate(invalid="ignore"):
        fused = s + (err + e)
    # where the product or the sum overflows, the plain result is the IEEE one
    y[...] = np.where(np.isfinite(fused), fused, p + y)


def _rdiv(num, den):
    """``num / den``; a Python number over a 0-d tensor is ``den.reciprocal() * num`` in
    PyTorch (``Tensor.__rtruediv__``), which rounds differently from one division."""
    if isinstance(den, np.generic) and not isinstance(num, np.generic):
        return np.reciprocal(den) * num
    return num / den


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clamped to the bounds."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - _rdiv(3 * (f1 - f2), x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Line search along ``d`` for a step satisfying the strong Wolfe conditions (bracketing
    phase, then zoom), as in PyTorch / minFunc."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new.copy(), gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new.copy(), gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _to_state(v):
    """NumPy scalar/array -> 0-d/1-d Tensor; lists element-wise; anything else unchanged."""
    if isinstance(v, (np.ndarray, np.generic)):
        return Tensor._make(np.array(v))
    if isinstance(v, list):
        return [_to_state(x) for x in v]
    return v


def _from_state(v):
    if isinstance(v, Tensor):
        return v._data[()] if v._data.ndim == 0 else v._data
    if isinstance(v, list):
        return [_from_state(x) for x in v]
    return v


class LBFGS(Optimizer):
    """L-BFGS over all parameters flattened into one vector (a single parameter group).
    ``step(closure)`` re-evaluates the loss through ``closure`` up to ``max_eval`` times.

    >>> import dyngrad as torch
    >>> w = torch.nn.Parameter(torch.tensor([3.0, -2.0]))
    >>> opt = torch.optim.LBFGS([w])
    >>> def closure():
    ...     opt.zero_grad(); loss = ((w - 1) ** 2).sum(); loss.backward(); return loss
    >>> _ = opt.step(closure); [round(v, 4) for v in w.tolist()]
    [1.0, 1.0]
    """

    _STATE_KEYS = ("d", "t", "old_dirs", "old_stps", "ro", "H_diag", "prev_flat_grad",
                   "prev_loss")

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        lr = _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        self._numel_cache = None

    def _numel(self):
        if self._numel_cache is None:
            self._numel_cache = sum(p._data.size for p in self._params)
        return self._numel_cache

    def _gather_flat_grad(self):
        views = [np.zeros(p._data.size, p._data.dtype) if p._grad is None
                 else p._grad._data.reshape(-1) for p in self._params]
        return np.concatenate(views, 0)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            d = p._data
            n = d.size
            flat = d.reshape(-1)
            if not np.shares_memory(flat, d):
                flat = d.ravel().copy()
            _axpy_(flat, step_size, update[offset:offset + n])
            if not np.shares_memory(flat, d):
                d[...] = flat.reshape(d.shape)
            p._vc[0] += 1
            offset += n
        if offset != self._numel():
            raise AssertionError(f"Expected offset {offset} to equal {self._numel()}")

    def _clone_param(self):
        return [p._data.copy() for p in self._params]

    def _set_param(self, params_data):
        for p, pdata in zip(self._params, params_data):
            p._data[...] = pdata
            p._vc[0] += 1

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_param(x)
        return loss, flat_grad

    def step(self, closure):
        """Run up to ``max_iter`` L-BFGS iterations; returns the loss of the first evaluation."""
        if len(self.param_groups) != 1:
            raise AssertionError(
                f"Expected exactly one param_group, but got {len(self.param_groups)}")
        from ..autograd.grad_mode import enable_grad, no_grad

        def run_closure():
            with enable_grad():
                return closure()

        with no_grad():
            loss = self._run(run_closure)
        for h in self._step_hooks:
            h(self, (), {})
        return loss

    def _run(self, closure):
        group = self.param_groups[0]
        lr = group["lr"]
        if isinstance(lr, Tensor):
            lr = lr.item()
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        if np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss = (
            _from_state(state.get(k)) for k in self._STATE_KEYS)
        if "al" in state:
            al = _from_state(state["al"])
            state["al"] = al

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * d.dtype.type(t)
                ys = _dot(y, s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(_rdiv(1.0, ys))
                    H_diag = ys / _dot(y, y)
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                f = q.dtype.type
                for i in range(num_old - 1, -1, -1):
                    al[i] = _dot(old_stps[i], q) * ro[i]
                    _axpy_(q, -al[i], old_dirs[i])
                d = r = q * f(H_diag)
                for i in range(num_old):
                    be_i = _dot(old_dirs[i], r) * ro[i]
                    _axpy_(r, al[i] - be_i, old_stps[i])

            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.copy()
            else:
                prev_flat_grad[...] = flat_grad
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, _rdiv(1.0, np.abs(flat_grad).sum())) * lr
            else:
                t = lr

            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = self._clone_param()

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1

            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            if np.abs(d * d.dtype.type(t)).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        if "al" in state:
            state["al"] = _to_state(state["al"])
        for k, v in zip(self._STATE_KEYS, (d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad,
                                           prev_loss)):
            state[k] = _to_state(v)
        return orig_loss

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a saved state (the flat history vectors are not shaped like a parameter, so
        they are taken as they are, cast to the parameters' dtype)."""
        if "state" not in state_dict:
            super().load_state_dict(state_dict)  # raises PyTorch's KeyError
        super().load_state_dict({"state": {}, "param_groups": state_dict["param_groups"]})
        dtype = self._params[0]._data.dtype

        def cast(v):
            if isinstance(v, Tensor):
                a = v._data.copy()
                return Tensor._make(a.astype(dtype) if a.dtype in _DT.FLOATING else a)
            if isinstance(v, list):
                return [cast(x) for x in v]
            return deepcopy(v)

        ids = state_dict["param_groups"][0]["params"]
        for k, st in state_dict["state"].items():
            if int(k) in ids:
                self.state[self._params[ids.index(int(k))]] = {n: cast(v) for n, v in st.items()}
