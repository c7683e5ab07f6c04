"""The seven workloads, each written twice: once against the PyTorch API (run by dyngrad and by
PyTorch, the same code) and once as hand-written NumPy forward+backward, the floor a NumPy
engine can reach.  All three start from the same float32 arrays made by ``init``."""
from __future__ import annotations

import numpy as np

LR = 0.1


def _uniform(rng, shape, fan_in):
    """PyTorch's default Linear/Conv init range, so activations stay in a sensible range."""
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, size=shape).astype(np.float32)


def _np(t):
    """A framework tensor's values as a private float ndarray (dtype kept, to be checked)."""
    return np.array(t.detach().numpy(), copy=True)


class Impl:
    """One backend's version of a workload: ``step()`` is what gets timed; ``check()`` runs one
    forward+backward on fresh state and returns (loss, dtype of loss, [gradients])."""

    def forward_backward(self):
        raise NotImplementedError

    def update(self):
        pass

    def step(self):
        self.forward_backward()
        self.update()


class FrameworkImpl(Impl):
    def params(self):
        raise NotImplementedError

    def check(self):
        loss = self.forward_backward()
        params = self.params()
        for i, p in enumerate(params):
            if p.grad is None:
                raise RuntimeError(f"no gradient reached parameter {i} {tuple(p.shape)}")
        return float(loss.item()), str(loss.dtype), [_np(p.grad) for p in params]


class NumpyImpl(Impl):
    def check(self):
        loss = self.forward_backward()
        return float(loss), str(np.asarray(loss).dtype), [np.array(g) for g in self.grads()]


def _load(T, pairs):
    """Copy NumPy arrays into framework parameters, so every backend starts equal."""
    with T.no_grad():
        for p, a in pairs:
            p.copy_(T.from_numpy(np.ascontiguousarray(a)))


def _sgd_numpy(params, grads):
    for p, g in zip(params, grads):
        p -= LR * g


# ----------------------------------------------------------------------------- tiny-chain
class TinyChain:
    key = "tiny-chain"
    needs = ("tanh",)

    def init(self, rng):
        return {"a": rng.standard_normal((3, 3)).astype(np.float32),
                "b": rng.standard_normal((3, 3)).astype(np.float32)}

    def framework(self, T, d):
        return _TinyChainFW(T, d)

    def numpy(self, d):
        return _TinyChainNP(d)


class _TinyChainFW(FrameworkImpl):
    def __init__(self, T, d):
        self.T = T
        self.a = T.tensor(d["a"], requires_grad=True)
        self.b = T.tensor(d["b"], requires_grad=True)

    def forward_backward(self):
        c = self.a * self.b
        d = self.T.tanh(c)
        e = d.sum()
        e.backward()
        return e

    step = forward_backward

    def params(self):
        return [self.a, self.b]


class _TinyChainNP(NumpyImpl):
    def __init__(self, d):
        self.a, self.b = d["a"].copy(), d["b"].copy()
        self.ga = self.gb = None

    def forward_backward(self):
        a, b = self.a, self.b
        d = np.tanh(a * b)
        e = d.sum()
        gc = 1 - d * d
        ga, gb = gc * b, gc * a
        if self.ga is None:
            self.ga, self.gb = ga, gb
        else:
            self.ga += ga
            self.gb += gb
        return e

    step = forward_backward

    def grads(self):
        return [self.ga, self.gb]


# ----------------------------------------------------------------------------- mininet-step
class MiniNet:
    key = "mininet-step"
    needs = ("nn.Linear", "optim.SGD", "tanh")

    def init(self, rng):
        return {"W1": _uniform(rng, (3, 2), 2), "b1": _uniform(rng, (3,), 2),
                "W2": _uniform(rng, (2, 3), 3), "b2": _uniform(rng, (2,), 3),
                "x": rng.standard_normal((1, 2)).astype(np.float32),
                "y": rng.standard_normal((1, 2)).astype(np.float32)}

    def framework(self, T, d):
        return _MiniNetFW(T, d)

    def numpy(self, d):
        return _MiniNetNP(d)


class _MiniNetFW(FrameworkImpl):
    def __init__(self, T, d):
        self.T = T
        self.l1, self.l2 = T.nn.Linear(2, 3), T.nn.Linear(3, 2)
        _load(T, [(self.l1.weight, d["W1"]), (self.l1.bias, d["b1"]),
                  (self.l2.weight, d["W2"]), (self.l2.bias, d["b2"])])
        self.opt = T.optim.SGD(self.params(), lr=LR)
        self.x, self.y = T.tensor(d["x"]), T.tensor(d["y"])

    def params(self):
        return [self.l1.weight, self.l1.bias, self.l2.weight, self.l2.bias]

    def forward_backward(self):
        T = self.T
        out = T.tanh(self.l2(T.tanh(self.l1(self.x))))
        loss = ((out - self.y) ** 2).sum()
        loss.backward()
        return loss

    def update(self):
        self.opt.step()
        self.opt.zero_grad()


class _MiniNetNP(NumpyImpl):
    def __init__(self, d):
        self.p = [d[k].copy() for k in ("W1", "b1", "W2", "b2")]
        self.x, self.y = d["x"], d["y"]

    def forward_backward(self):
        W1, b1, W2, b2 = self.p
        x = self.x
        h = np.tanh(x @ W1.T + b1)
        o = np.tanh(h @ W2.T + b2)
        r = o - self.y
        loss = (r * r).sum()
        gz2 = 2 * r * (1 - o * o)
        gz1 = (gz2 @ W2) * (1 - h * h)
        self.g = [gz1.T @ x, gz1.sum(0), gz2.T @ h, gz2.sum(0)]
        return loss

    def grads(self):
        return self.g

    def update(self):
        _sgd_numpy(self.p, self.g)


# ----------------------------------------------------------------------------- scalar-graph
N_SCALAR_STEPS = 40   # 5 ops each (mul, mul, add, add, tanh): 200 ops


class ScalarGraph:
    key = "scalar-graph"
    needs = ("tanh",)

    def init(self, rng):
        return {"w": np.float32(0.8), "u": np.float32(0.5), "b": np.float32(0.1),
                "h0": np.float32(0.2),
                "xs": rng.uniform(-1, 1, N_SCALAR_STEPS).astype(np.float32)}

    def framework(self, T, d):
        return _ScalarFW(T, d)

    def numpy(self, d):
        return _ScalarNP(d)


class _ScalarFW(FrameworkImpl):
    def __init__(self, T, d):
        self.T = T
        self.w, self.u, self.b = (T.tensor(np.array(d[k]), requires_grad=True)
                                  for k in ("w", "u", "b"))
        self.h0 = T.tensor(np.array(d["h0"]))
        self.xs = [float(x) for x in d["xs"]]

    def params(self):
        return [self.w, self.u, self.b]

    def forward_backward(self):
        tanh, w, u, b = self.T.tanh, self.w, self.u, self.b
        h = self.h0
        for x in self.xs:
            h = tanh(h * w + u * x + b)
        h.backward()
        return h

    step = forward_backward


class _ScalarNP(NumpyImpl):
    def __init__(self, d):
        self.w, self.u, self.b, self.h0 = (np.float32(d[k]) for k in ("w", "u", "b", "h0"))
        self.xs = [float(x) for x in d["xs"]]
        self.g = None

    def forward_backward(self):
        w, u, b, xs = self.w, self.u, self.b, self.xs
        hs = [self.h0]
        h = self.h0
        for x in xs:
            h = np.tanh(h * w + u * x + b)
            hs.append(h)
        g = np.float32(1)
        gw = gu = gb = np.float32(0)
        for i in range(len(xs) - 1, -1, -1):
            gz = g * (1 - hs[i + 1] * hs[i + 1])
            gw = gw + gz * hs[i]
            gu = gu + gz * xs[i]
            gb = gb + gz
            g = gz * w
        self.g = [gw, gu, gb] if self.g is None else [x + y for x, y in zip(self.g, (gw, gu, gb))]
        return h

    step = forward_backward

    def grads(self):
        return self.g


# ----------------------------------------------------------------------------- MLPs
def _digits(rng):
    """The digits data (bundled with scikit-learn, no download), else random data alike."""
    try:
        from sklearn.datasets import load_digits
        ds = load_digits()
        return (ds.data / 16.0).astype(np.float32), ds.target.astype(np.int64), "sklearn digits"
    except ImportError:
        x = rng.uniform(0, 1, (1797, 64)).astype(np.float32)
        return x, rng.integers(0, 10, 1797).astype(np.int64), "random (no scikit-learn)"


class MLP:
    """A ReLU MLP trained with cross-entropy and SGD, cycling over a few fixed batches."""

    needs = ("nn.Linear", "nn.ReLU", "nn.Sequential", "nn.functional.cross_entropy",
             "optim.SGD")

    def __init__(self, key, sizes, batch, n_batches, data):
        self.key, self.sizes, self.batch, self.n_batches, self.data = (key, sizes, batch,
                                                                      n_batches, data)

    def init(self, rng):
        d = {}
        for i, (m, n) in enumerate(zip(self.sizes[:-1], self.sizes[1:])):
            d[f"W{i}"] = _uniform(rng, (n, m), m)
            d[f"b{i}"] = _uniform(rng, (n,), m)
        nb = self.batch * self.n_batches
        if self.data == "digits":
            x, y, d["source"] = _digits(rng)
            idx = rng.permutation(len(x))[:nb]
            x, y = x[idx], y[idx]
        else:
            x = rng.standard_normal((nb, self.sizes[0])).astype(np.float32)
            y = rng.integers(0, self.sizes[-1], nb).astype(np.int64)
            d["source"] = "random"
        d["xs"] = x.reshape(self.n_batches, self.batch, -1)
        d["ys"] = y.reshape(self.n_batches, self.batch)
        return d

    def framework(self, T, d):
        return _MLPFW(T, d, self.sizes)

    def numpy(self, d):
        return _MLPNP(d, self.sizes)


class _Cycling:
    """Cycles over pre-built batches, so steps see different data as in training."""

    def _next(self):
        i = self.i
        self.i = (i + 1) % len(self.xs)
        return self.xs[i], self.ys[i]


class _MLPFW(FrameworkImpl, _Cycling):
    def __init__(self, T, d, sizes):
        self.T = T
        layers = []
        self.linears = []
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
            lin = T.nn.Linear(m, n)
            _load(T, [(lin.weight, d[f"W{i}"]), (lin.bias, d[f"b{i}"])])
            self.linears.append(lin)
            layers += [lin, T.nn.ReLU()]
        self.net = T.nn.Sequential(*layers[:-1])
        self.opt = T.optim.SGD(self.net.parameters(), lr=LR)
        self.ce = T.nn.functional.cross_entropy
        self.xs = [T.tensor(x) for x in d["xs"]]
        self.ys = [T.tensor(y) for y in d["ys"]]
        self.i = 0

    def params(self):
        return [p for lin in self.linears for p in (lin.weight, lin.bias)]

    def forward_backward(self):
        x, y = self._next()
        loss = self.ce(self.net(x), y)
        loss.backward()
        return loss

    def update(self):
        self.opt.step()
        self.opt.zero_grad()


def _cross_entropy_np(z, y):
    """Mean cross-entropy of logits ``z`` and its gradient with respect to ``z``."""
    n = z.shape[0]
    rows = np.arange(n)
    m = z.max(axis=1, keepdims=True)
    e = np.exp(z - m)
    s = e.sum(axis=1, keepdims=True)
    loss = (np.log(s[:, 0]) + m[:, 0] - z[rows, y]).mean()
    g = e / s
    g[rows, y] -= 1
    g /= n
    return loss, g


class _MLPNP(NumpyImpl, _Cycling):
    def __init__(self, d, sizes):
        k = len(sizes) - 1
        self.W = [d[f"W{i}"].copy() for i in range(k)]
        self.b = [d[f"b{i}"].copy() for i in range(k)]
        self.xs, self.ys = d["xs"], d["ys"]
        self.i = 0

    def forward_backward(self):
        x, y = self._next()
        acts = [x]
        h = x
        last = len(self.W) - 1
        for i, (W, b) in enumerate(zip(self.W, self.b)):
            h = h @ W.T
            h += b
            if i != last:
                np.maximum(h, 0, out=h)
                acts.append(h)
        loss, g = _cross_entropy_np(h, y)
        gW, gb = [None] * len(self.W), [None] * len(self.W)
        for i in range(last, -1, -1):
            gW[i] = g.T @ acts[i]
            gb[i] = g.sum(axis=0)
            if i:
                g = g @ self.W[i]
                g *= acts[i] > 0
        self.gW, self.gb = gW, gb
        return loss

    def grads(self):
        return [g for pair in zip(self.gW, self.gb) for g in pair]

    def update(self):
        _sgd_numpy(self.W, self.gW)
        _sgd_numpy(self.b, self.gb)


# ----------------------------------------------------------------------------- conv-step
class ConvNet:
    key = "conv-step"
    needs = ("nn.Conv2d", "nn.Linear", "nn.functional.relu", "nn.functional.max_pool2d",
             "nn.functional.cross_entropy", "optim.SGD")
    batch, n_batches = 64, 2

    def init(self, rng):
        nb = self.batch * self.n_batches
        return {"c1w": _uniform(rng, (16, 1, 3, 3), 9), "c1b": _uniform(rng, (16,), 9),
                "c2w": _uniform(rng, (32, 16, 3, 3), 144), "c2b": _uniform(rng, (32,), 144),
                "fw": _uniform(rng, (10, 1568), 1568), "fb": _uniform(rng, (10,), 1568),
                "xs": rng.standard_normal((self.n_batches, self.batch, 1, 28, 28))
                         .astype(np.float32),
                "ys": rng.integers(0, 10, nb).astype(np.int64).reshape(self.n_batches, -1)}

    def framework(self, T, d):
        return _ConvFW(T, d)

    def numpy(self, d):
        return _ConvNP(d)


class _ConvFW(FrameworkImpl, _Cycling):
    def __init__(self, T, d):
        self.T = T
        nn = T.nn
        self.F = nn.functional
        self.c1 = nn.Conv2d(1, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(1568, 10)
        _load(T, zip(self.params(), [d[k] for k in ("c1w", "c1b", "c2w", "c2b", "fw", "fb")]))
        self.opt = T.optim.SGD(self.params(), lr=LR)
        self.xs = [T.tensor(x) for x in d["xs"]]
        self.ys = [T.tensor(y) for y in d["ys"]]
        self.i = 0

    def params(self):
        return [self.c1.weight, self.c1.bias, self.c2.weight, self.c2.bias,
                self.fc.weight, self.fc.bias]

    def forward_backward(self):
        F = self.F
        x, y = self._next()
        h = F.max_pool2d(F.relu(self.c1(x)), 2)
        h = F.max_pool2d(F.relu(self.c2(h)), 2)
        loss = F.cross_entropy(self.fc(h.reshape(h.shape[0], -1)), y)
        loss.backward()
        return loss

    def update(self):
        self.opt.step()
        self.opt.zero_grad()


def _conv3x3_np(x, W, b):
    """3x3 convolution, padding 1, on (C, N, H, W) data by im2col: channels-first keeps every
    product and its result contiguous.  Returns the output and the columns for backward."""
    c, n, h, w = x.shape
    xp = np.zeros((c, n, h + 2, w + 2), x.dtype)
    xp[:, :, 1:-1, 1:-1] = x
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # c n h w 3 3
    cols = win.transpose(0, 4, 5, 1, 2, 3).reshape(c * 9, n * h * w)
    out = W.reshape(W.shape[0], -1) @ cols
    out += b[:, None]
    return out.reshape(-1, n, h, w), cols


def _conv3x3_bw_np(g, cols, W, x_shape, need_dx):
    """Gradients of ``_conv3x3_np``: weight, bias and (when asked) input, by col2im."""
    c, n, h, w = x_shape
    g2 = g.reshape(g.shape[0], -1)
    gW = (g2 @ cols.T).reshape(W.shape)
    gb = g2.sum(axis=1)
    if not need_dx:
        return gW, gb, None
    dcols = (W.reshape(W.shape[0], -1).T @ g2).reshape(c, 3, 3, n, h, w)
    dxp = np.zeros((c, n, h + 2, w + 2), dtype=g.dtype)
    for i in range(3):
        for j in range(3):
            dxp[:, :, i:i + h, j:j + w] += dcols[:, i, j]
    return gW, gb, dxp[:, :, 1:-1, 1:-1]


_QUADRANTS = ((0, 0), (0, 1), (1, 0), (1, 1))


def _pool2_np(x):
    """2x2 max-pool as the maximum of four strided slices (a 6-d reduction is far slower)."""
    out = np.maximum(np.maximum(x[..., 0::2, 0::2], x[..., 0::2, 1::2]),
                     np.maximum(x[..., 1::2, 0::2], x[..., 1::2, 1::2]))
    return out, x


def _pool2_bw_np(g, x, out):
    """Max-pool backward; ties are only zeros after ReLU, whose gradient ReLU then drops."""
    gx = np.empty(x.shape, g.dtype)
    for i, j in _QUADRANTS:
        np.multiply(x[..., i::2, j::2] == out, g, out=gx[..., i::2, j::2])
    return gx


class _ConvNP(NumpyImpl, _Cycling):
    """Activations kept as (C, N, H, W) throughout; only the flatten before the Linear layer
    goes back to PyTorch's (N, C*H*W) order."""

    def __init__(self, d):
        self.p = [d[k].copy() for k in ("c1w", "c1b", "c2w", "c2b", "fw", "fb")]
        self.xs = [x.transpose(1, 0, 2, 3).copy() for x in d["xs"]]
        self.ys = d["ys"]
        self.i = 0

    def forward_backward(self):
        c1w, c1b, c2w, c2b, fw, fb = self.p
        x, y = self._next()
        z1, cols1 = _conv3x3_np(x, c1w, c1b)
        a1 = np.maximum(z1, 0)
        p1, r1 = _pool2_np(a1)
        z2, cols2 = _conv3x3_np(p1, c2w, c2b)
        a2 = np.maximum(z2, 0)
        p2, r2 = _pool2_np(a2)
        n = p2.shape[1]
        flat = p2.transpose(1, 0, 2, 3).reshape(n, -1)
        logits = flat @ fw.T + fb
        loss, g = _cross_entropy_np(logits, y)
        gfw, gfb = g.T @ flat, g.sum(axis=0)
        gp2 = (g @ fw).reshape(n, *p2.shape[:1], *p2.shape[2:]).transpose(1, 0, 2, 3)
        ga2 = _pool2_bw_np(gp2, r2, p2)
        ga2 *= a2 > 0
        gc2w, gc2b, gp1 = _conv3x3_bw_np(ga2, cols2, c2w, p1.shape, True)
        ga1 = _pool2_bw_np(gp1, r1, p1)
        ga1 *= a1 > 0
        gc1w, gc1b, _ = _conv3x3_bw_np(ga1, cols1, c1w, x.shape, False)
        self.g = [gc1w, gc1b, gc2w, gc2b, gfw, gfb]
        return loss

    def grads(self):
        return self.g

    def update(self):
        _sgd_numpy(self.p, self.g)


# ----------------------------------------------------------------------------- rnn-unroll
class RNN:
    key = "rnn-unroll"
    needs = ("tanh",)
    hidden, inputs, steps = 64, 32, 50

    def init(self, rng):
        return {"Wx": _uniform(rng, (self.hidden, self.inputs), self.inputs),
                "Wh": _uniform(rng, (self.hidden, self.hidden), self.hidden),
                "xs": rng.standard_normal((self.steps, self.inputs, 1)).astype(np.float32),
                "h0": np.zeros((self.hidden, 1), np.float32)}

    def framework(self, T, d):
        return _RNNFW(T, d)

    def numpy(self, d):
        return _RNNNP(d)


class _RNNFW(FrameworkImpl):
    def __init__(self, T, d):
        self.Wx = T.tensor(d["Wx"], requires_grad=True)
        self.Wh = T.tensor(d["Wh"], requires_grad=True)
        self.h0 = T.tensor(d["h0"])
        self.xs = [T.tensor(x) for x in d["xs"]]

    def params(self):
        return [self.Wx, self.Wh]

    def forward_backward(self):
        Wx, Wh = self.Wx, self.Wh
        h = self.h0
        for x in self.xs:
            h = (Wx.mm(x) + Wh.mm(h)).tanh()
        loss = h.sum()
        loss.backward()
        return loss

    step = forward_backward


class _RNNNP(NumpyImpl):
    def __init__(self, d):
        self.Wx, self.Wh = d["Wx"].copy(), d["Wh"].copy()
        self.h0, self.xs = d["h0"], list(d["xs"])
        self.gWx = self.gWh = None

    def forward_backward(self):
        Wx, Wh, xs = self.Wx, self.Wh, self.xs
        hs = [self.h0]
        h = self.h0
        for x in xs:
            h = np.tanh(Wx @ x + Wh @ h)
            hs.append(h)
        loss = h.sum()
        gWx = np.zeros_like(Wx)
        gWh = np.zeros_like(Wh)
        g = np.ones_like(h)
        for t in range(len(xs) - 1, -1, -1):
            gz = g * (1 - hs[t + 1] * hs[t + 1])
            gWx += gz @ xs[t].T
            gWh += gz @ hs[t].T
            g = Wh.T @ gz
        if self.gWx is None:
            self.gWx, self.gWh = gWx, gWh
        else:
            self.gWx += gWx
            self.gWh += gWh
        return loss

    step = forward_backward

    def grads(self):
        return [self.gWx, self.gWh]


WORKLOADS = {w.key: w for w in (
    TinyChain(), MiniNet(), ScalarGraph(),
    MLP("digits-mlp-step", (64, 128, 64, 10), 64, 8, "digits"),
    MLP("wide-mlp-step", (784, 1024, 1024, 10), 256, 2, "random"),
    ConvNet(), RNN())}


def missing_attr(T, needs):
    """The first dotted name in ``needs`` that module ``T`` lacks, else None."""
    for name in needs:
        obj = T
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                return name
    return None
