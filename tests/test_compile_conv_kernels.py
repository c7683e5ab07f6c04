"""The replay kernels specialised for a convolution's and a max pooling's shapes
(``dyngrad._dynamo.conv_kernels``): compiled forward and backward equal eager bit for bit over
several replays on new data, agree with PyTorch 2.13, are the kernels the replay runs, and
the cases they do not cover run the general kernels."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad
from dyngrad._dynamo import conv_kernels as CK
import dyngrad.nn.functional as F

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _checked_and_reset(check_replay):
    """Every first replay checked against eager (tests/conftest.py); captures forgotten after."""
    yield
    dyngrad.compiler.reset()


def _fns(run):
    return [ins.fn for e in run.entries for ins in e.program.instrs]


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# --- convolution -------------------------------------------------------------------------
CONV_CASES = [
    # (N, C, H, W), (O, C/G, kh, kw), stride, padding, dilation, groups, bias
    ((4, 3, 10, 9), (5, 3, 3, 3), 1, 1, 1, 1, True),
    ((2, 4, 11, 12), (6, 2, 3, 2), (2, 1), (1, 0), 1, 2, True),
    ((3, 2, 13, 13), (4, 2, 3, 3), 2, 2, 2, 1, False),
    ((2, 6, 8, 8), (6, 1, 3, 3), 1, 0, 1, 6, True),       # depthwise
    ((2, 3, 7, 6), (4, 3, 1, 1), 1, 1, 1, 1, True),       # 1x1 with padding (no col2im sum)
    ((2, 3, 7, 6), (4, 3, 1, 1), 1, 0, 1, 1, False),      # 1x1
    ((1, 2, 9, 10), (3, 2, 4, 3), 3, (2, 1), 1, 1, True),  # stride larger than some offsets
    # stride 1 with output rows as wide as the input's (col2im by flat ranges)
    ((2, 4, 9, 8), (6, 2, 3, 3), 1, (0, 1), 1, 2, True),  # grouped, fewer output rows
    ((2, 3, 10, 11), (4, 3, 3, 3), 1, 2, 2, 1, True),     # dilated
    ((2, 3, 8, 9), (4, 3, 5, 5), 1, 2, 1, 1, False),
    ((2, 3, 6, 7), (4, 3, 2, 3), 1, (0, 1), 1, 1, True),
    ((2, 3, 8, 8), (4, 3, 3, 5), 1, "same", 1, 1, True),
]


def _conv_step(x, w, b, gout, stride, padding, dilation, groups):
    y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    (y * gout).sum().backward()
    return y


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_compiled_equals_eager_and_torch(case, dtype):
    xs, ws, s, p, d, g, has_b = CONV_CASES[case]
    rng = np.random.default_rng(case)
    w0 = rng.standard_normal(ws).astype(dtype)
    b0 = rng.standard_normal(ws[0]).astype(dtype) if has_b else None

    def params():
        w = dyngrad.tensor(w0.copy(), requires_grad=True)
        b = dyngrad.tensor(b0.copy(), requires_grad=True) if has_b else None
        return w, b

    we, be = params()
    wc, bc = params()

    def step(x, gout):
        y = _conv_step(x, wc, bc, gout, s, p, d, g)
        return y.detach(), x.grad

    run = dyngrad.compile(step)
    for i in range(4):
        x0 = rng.standard_normal(xs).astype(dtype)
        y0 = torch.nn.functional.conv2d(torch.tensor(x0), torch.tensor(w0),
                                        None if b0 is None else torch.tensor(b0),
                                        stride=s, padding=p, dilation=d, groups=g)
        gout0 = rng.standard_normal(tuple(y0.shape)).astype(dtype)
        xe = dyngrad.tensor(x0, requires_grad=True)
        ye = _conv_step(xe, we, be, dyngrad.tensor(gout0), s, p, d, g)
        xc = dyngrad.tensor(x0, requires_grad=True)
        yc, gxc = run(xc, dyngrad.tensor(gout0))
        assert _same(yc.detach().numpy(), ye.detach().numpy())
        assert _same(xc.grad.detach().numpy(), xe.grad.detach().numpy())
        assert _same(wc.grad.detach().numpy(), we.grad.detach().numpy())
        if has_b:
            assert _same(bc.grad.detach().numpy(), be.grad.detach().numpy())
        # torch 2.13
        xt = torch.tensor(x0, requires_grad=True)
        wt = torch.tensor(w0, requires_grad=True)
        bt = torch.tensor(b0, requires_grad=True) if has_b else None
        yt = torch.nn.functional.conv2d(xt, wt, bt, stride=s, padding=p, dilation=d, groups=g)
        (yt * torch.tensor(gout0)).sum().backward()
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(yc.detach().numpy(), yt.detach().numpy(), **tol)
        np.testing.assert_allclose(xc.grad.detach().numpy(), xt.grad.detach().numpy(), **tol)
        wt.grad.mul_(i + 1)   # the weight's gradient accumulates over the calls
        np.testing.assert_allclose(wc.grad.detach().numpy(), we.grad.detach().numpy())
    assert run.eager_reason is None, run.eager_reason
    # a capture with the weight's .grad None, one with it set (accumulated), then replays
    assert len(run.entries) == 2 and sum(e.replays for e in run.entries) == 2
    fns = _fns(run)
    assert any(isinstance(f, CK.ConvForward) for f in fns)
    assert any(isinstance(f, CK.ConvInputGrad) for f in fns)
    assert any(isinstance(f, CK.ConvWeightGrad) for f in fns)


@pytest.mark.parametrize("padding", [1, 0])
def test_conv_input_grad_with_non_finite_values(padding):
    """Infinities and NaNs in the output gradient (the products at the border that eager adds
    into the padding it crops) give eager's input gradient bit for bit."""
    rng = np.random.default_rng(7)
    w = dyngrad.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))

    def step(x, gout):
        (F.conv2d(x, w, padding=padding) * gout).sum().backward()
        return x.grad

    run = dyngrad.compile(step)
    for k in range(3):
        x0 = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        gout0 = rng.standard_normal((2, 4, 6 - 2 * (1 - padding), 6 - 2 * (1 - padding)))
        gout0 = gout0.astype(np.float32)
        gout0[0, 1, 0, k] = np.inf
        gout0[1, 2, -1, -1 - k] = -np.inf
        gout0[1, 0, 2, 0] = np.nan
        ge = step(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
        gc = run(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
        assert _same(gc.detach().numpy(), ge.detach().numpy())
    assert run.eager_reason is None, run.eager_reason
    assert any(isinstance(f, CK.ConvInputGrad) for f in _fns(run))


def test_conv_without_weight_grad_recomputes_columns():
    """A frozen first layer's input gradient and a second layer's weight gradient from
    columns the forward did not keep."""
    rng = np.random.default_rng(1)
    w1 = dyngrad.tensor(rng.standard_normal((4, 2, 3, 3)).astype(np.float32))
    w2 = dyngrad.tensor(rng.standard_normal((3, 4, 3, 3)).astype(np.float32),
                        requires_grad=True)

    def step(x):
        h = F.relu(F.conv2d(x, w1, padding=1))
        loss = F.conv2d(h, w2, stride=2).square().sum()
        loss.backward()
        return loss, x.grad

    run = dyngrad.compile(step)
    for _ in range(3):
        x0 = rng.standard_normal((2, 2, 9, 9)).astype(np.float32)
        xe = dyngrad.tensor(x0, requires_grad=True)
        le, ge = step(xe)
        ge_w2 = w2.grad.detach().numpy().copy()
        w2.grad = None
        xc = dyngrad.tensor(x0, requires_grad=True)
        lc, gc = run(xc)
        assert _same(lc.detach().numpy(), le.detach().numpy())
        assert _same(gc.detach().numpy(), ge.detach().numpy())
        assert _same(w2.grad.detach().numpy(), ge_w2)
        w2.grad = None
    assert run.eager_reason is None, run.eager_reason


@pytest.mark.parametrize("broken", ["forward", "backward", "declined"])
def test_conv_falls_back_to_the_general_kernels(monkeypatch, broken):
    """A specialised kernel that does not reproduce eager (here made wrong on purpose), or
    none offered, leaves the general kernels to run: the replay still equals eager."""
    if broken == "forward":
        call = CK.ConvForward.__call__
        monkeypatch.setattr(CK.ConvForward, "__call__",
                            lambda self, x, w, b: (call(self, x, w, b)[0] * 2,
                                                   call(self, x, w, b)[1]))
    elif broken == "backward":
        call = CK.ConvInputGrad.__call__
        monkeypatch.setattr(CK.ConvInputGrad, "__call__",
                            lambda self, *a, **k: call(self, *a, **k) + 1)
    else:
        monkeypatch.setattr(CK, "forward_kernel", lambda *a: None)
        monkeypatch.setattr(CK, "bilinear_kernel", lambda *a: None)
        monkeypatch.setattr(CK, "max_pool_kernel", lambda *a: None)
    se, pe = _convnet(1)
    sc, pc = _convnet(1)
    run = dyngrad.compile(sc)
    rng = np.random.default_rng(6)
    for _ in range(4):
        x = dyngrad.tensor(rng.standard_normal((4, 1, 16, 16)).astype(np.float32))
        y = dyngrad.tensor(rng.integers(0, 10, 4))
        assert _same(run(x, y).detach().numpy(), se(x, y).detach().numpy())
        for a, b in zip(pc, pe):
            assert _same(a.detach().numpy(), b.detach().numpy())
    assert run.eager_reason is None, run.eager_reason
    assert run.entries[0].replays == 3
    fns = _fns(run)
    if broken == "forward":
        assert not any(isinstance(f, CK.ConvForward) for f in fns)
        assert any(isinstance(f, CK.ConvInputGrad) for f in fns)
    elif broken == "backward":
        assert not any(isinstance(f, CK.ConvInputGrad) for f in fns)
        assert any(isinstance(f, CK.ConvForward) for f in fns)
    else:
        assert not any(isinstance(f, (CK.ConvForward, CK.ConvInputGrad, CK.ConvWeightGrad,
                                      CK.MaxPool2d)) for f in fns)


def test_kernel_factories_decline_what_they_do_not_cover():
    from dyngrad.ops.conv import _P
    P = _P((1, 1), (0, 0, 0, 0), (1, 1), 1, (5, 5), (3, 3), (3, 3))
    x = np.zeros((1, 2, 5, 5), np.float16)
    w = np.zeros((2, 2, 3, 3), np.float16)
    assert CK.forward_kernel(P, x, w, None) is None
    assert CK.forward_kernel(P, x.astype(np.float32), w.astype(np.float64), None) is None
    assert CK.forward_kernel(P, x.astype(np.float32), w.astype(np.float32), None) is not None
    x4 = np.zeros((1, 1, 8, 8), np.float32)
    assert CK.max_pool_kernel(x4, (2, 2), (2, 2), (0, 0), (1, 1), False) is not None
    assert CK.max_pool_kernel(x4, (3, 3), (2, 2), (0, 0), (1, 1), False) is None  # overlap
    assert CK.max_pool_kernel(x4, (2, 2), (2, 2), (1, 1), (1, 1), False) is None  # padding
    assert CK.max_pool_kernel(x4, (2, 2), (2, 2), (0, 0), (2, 2), False) is None  # dilation
    assert CK.max_pool_kernel(x4, (3, 3), (3, 3), (0, 0), (1, 1), True) is None   # past end
    assert CK.max_pool_kernel(x4.astype(np.int64), (2, 2), (2, 2), (0, 0), (1, 1),
                              False) is None


# --- max pooling -------------------------------------------------------------------------
POOL_CASES = [
    # input shape, kernel, stride, padding, dilation, ceil_mode, fast kernel expected
    ((3, 4, 8, 8), 2, None, 0, 1, False, True),
    ((2, 3, 9, 11), 3, None, 0, 1, False, True),          # a remainder the windows skip
    ((2, 3, 12, 10), (3, 2), (3, 2), 0, 1, True, True),
    ((4, 10, 10), 2, None, 0, 1, False, True),             # unbatched
    ((2, 3, 9, 9), 3, 2, 0, 1, False, False),              # overlapping windows
    ((2, 3, 8, 8), 2, 2, 1, 1, False, False),              # padding
    ((2, 3, 9, 9), 2, 2, 0, 1, True, False),               # ceil mode past the end
    ((2, 3, 9, 9), 2, 2, 0, 2, False, False),              # dilation
]


def _pool_input(rng, shape, dtype, kind):
    x = rng.standard_normal(shape).astype(dtype)
    if kind == "relu":       # many tied zeros, as after ReLU, some of them -0
        x = np.maximum(x, 0)
        x.reshape(-1)[::7] = -0.0
    elif kind == "ties":     # repeated values in windows
        x = np.round(x).astype(dtype)
    elif kind == "nan":
        x.reshape(-1)[::5] = np.nan
        x.reshape(-1)[1::9] = np.inf
    return x


@pytest.mark.parametrize("kind", ["plain", "relu", "ties", "nan"])
@pytest.mark.parametrize("case", range(len(POOL_CASES)))
def test_max_pool2d_compiled_equals_eager_and_torch(case, kind):
    shape, k, s, p, d, ceil, fast = POOL_CASES[case]
    rng = np.random.default_rng(10 + case)

    def step(x, gout):
        y = F.max_pool2d(x, k, s, p, d, ceil_mode=ceil)
        (y * gout).sum().backward()
        return y.detach(), x.grad

    run = dyngrad.compile(step)
    for _ in range(3):
        for dtype in (np.float32,):
            x0 = _pool_input(rng, shape, dtype, kind)
            yt = torch.nn.functional.max_pool2d(torch.tensor(x0, requires_grad=True), k, s, p,
                                                d, ceil_mode=ceil)
            gout0 = rng.standard_normal(tuple(yt.shape)).astype(dtype)
            ye, ge = step(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
            yc, gc = run(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
            assert _same(yc.detach().numpy(), ye.detach().numpy())
            assert _same(gc.detach().numpy(), ge.detach().numpy())
            xt = torch.tensor(x0, requires_grad=True)
            yt = torch.nn.functional.max_pool2d(xt, k, s, p, d, ceil_mode=ceil)
            (yt * torch.tensor(gout0)).sum().backward()
            np.testing.assert_array_equal(yc.detach().numpy(), yt.detach().numpy())
            if kind == "plain":   # (with ties torch may pick another of the maxima)
                np.testing.assert_allclose(gc.detach().numpy(), xt.grad.detach().numpy(),
                                           rtol=1e-6, atol=1e-6)
    assert run.eager_reason is None, run.eager_reason
    assert run.entries[0].replays == 2
    assert any(isinstance(f, CK.MaxPool2d) for f in _fns(run)) == fast


def test_max_pool2d_float64_and_kernel_directly():
    """The kernel's window codes give eager's values and gradient for float64, and a NaN
    wins its window whichever offset it is at."""
    from dyngrad.ops import pool
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 6))
    x[0, 0, 1, 1] = np.nan
    x[1, 2, 4, 5] = np.nan
    kern = CK.max_pool_kernel(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    vals, code = kern(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    idx, unique, best = pool.max_pool2d_indices(x, (2, 2), (2, 2), (0, 0), (1, 1), False)
    assert _same(vals, best)
    g = rng.standard_normal(vals.shape)
    assert _same(kern.backward(g, code), pool._scatter_np(g, idx, x.shape, unique, 2))


# --- a training step -----------------------------------------------------------------------
def _convnet(seed=0):
    dyngrad.manual_seed(seed)
    nn = dyngrad.nn
    c1 = nn.Conv2d(1, 8, 3, padding=1)
    c2 = nn.Conv2d(8, 16, 3, padding=1)
    fc = nn.Linear(16 * 4 * 4, 10)
    params = [*c1.parameters(), *c2.parameters(), *fc.parameters()]
    opt = dyngrad.optim.SGD(params, lr=0.05, momentum=0.9)

    def step(x, y):
        h = F.max_pool2d(F.relu(c1(x)), 2)
        h = F.max_pool2d(F.relu(c2(h)), 2)
        loss = F.cross_entropy(fc(h.reshape(h.shape[0], -1)), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step, params


def test_conv_training_step_compiled_equals_eager():
    se, pe = _convnet()
    sc, pc = _convnet()
    run = dyngrad.compile(sc)
    rng = np.random.default_rng(5)
    for _ in range(6):
        x = dyngrad.tensor(rng.standard_normal((8, 1, 16, 16)).astype(np.float32))
        y = dyngrad.tensor(rng.integers(0, 10, 8))
        assert _same(run(x, y).detach().numpy(), se(x, y).detach().numpy())
        for a, b in zip(pc, pe):
            assert _same(a.detach().numpy(), b.detach().numpy())
            assert a._version == b._version
    assert run.eager_reason is None, run.eager_reason
    assert run.entries[0].replays == 5
    fns = _fns(run)
    assert sum(isinstance(f, CK.ConvForward) for f in fns) == 2
    assert sum(isinstance(f, CK.MaxPool2d) for f in fns) == 2


def test_conv_forward_with_non_finite_inputs():
    """Infinities and NaNs at the input's border (which im2col by flat ranges first copies
    into columns that belong to the padding, then zeroes) give eager's output and weight
    gradient bit for bit."""
    rng = np.random.default_rng(8)
    w = dyngrad.tensor(rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
                       requires_grad=True)

    def step(x):
        y = F.conv2d(x, w, padding=1)
        y.sum().backward()
        return y.detach()

    run = dyngrad.compile(step)
    for k in range(3):
        x0 = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        x0[0, 1, k, 0] = np.inf
        x0[1, 2, -1, -1 - k] = -np.inf
        x0[1, 0, 0, 5] = np.nan
        yc = run(dyngrad.tensor(x0))
        gc = w.grad.detach().numpy().copy()
        w.grad = None
        ye = step(dyngrad.tensor(x0))
        assert _same(yc.detach().numpy(), ye.detach().numpy())
        assert _same(gc, w.grad.detach().numpy())
        w.grad = None
    assert run.eager_reason is None, run.eager_reason
    assert any(isinstance(f, CK.ConvForward) for f in _fns(run))


@pytest.mark.parametrize("also_read", [False, True])
def test_relu_gradient_applied_by_the_pooling(also_read):
    """A max pooling of a ReLU's output applies the ReLU's gradient on the windows' maxima
    (the ReLU's backward then records nothing); when the ReLU's output is read by another op
    too, its gradient is a sum and the ReLU's backward runs as usual: eager's bits either way."""
    rng = np.random.default_rng(9)

    def step(z, gout):
        r = F.relu(z)
        loss = (F.max_pool2d(r, 2) * gout).sum()
        if also_read:
            loss = loss + (r * 0.5).sum()
        loss.backward()
        return z.grad

    run = dyngrad.compile(step)
    for _ in range(3):
        z0 = rng.standard_normal((3, 4, 8, 8)).astype(np.float32)
        z0[0, 0, :2, :2] = 0.0          # a window of zeros (ties at 0)
        z0[1, 1, 2:4, 2:4] = -1.0       # a window whose maximum is negative
        gout0 = rng.standard_normal((3, 4, 4, 4)).astype(np.float32)
        gout0[2, 3, 1, 1] = -0.0
        ge = step(dyngrad.tensor(z0, requires_grad=True), dyngrad.tensor(gout0))
        gc = run(dyngrad.tensor(z0, requires_grad=True), dyngrad.tensor(gout0))
        assert _same(gc.detach().numpy(), ge.detach().numpy())
    assert run.eager_reason is None, run.eager_reason
    ops = [ins.op for ins in run.entries[0].program.instrs]
    assert ("ReluBackward0" in ops) == also_read
    pools = [f for f in _fns(run) if isinstance(f, CK.MaxPool2d)]
    assert pools and all(f.relu for f in pools)


def test_relu_gradient_by_the_pooling_with_its_output_changed_in_place():
    """The pooled output changed in place after the pooling (which eager allows: max
    pooling's backward does not read its output) leaves the ReLU's gradient as eager's."""
    rng = np.random.default_rng(15)

    def step(z, gout):
        p = F.max_pool2d(F.relu(z), 2)
        p.sub_(0.5)
        (p * gout).sum().backward()
        return z.grad

    run = dyngrad.compile(step)
    for _ in range(3):
        z0 = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
        gout0 = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
        ge = step(dyngrad.tensor(z0, requires_grad=True), dyngrad.tensor(gout0))
        gc = run(dyngrad.tensor(z0, requires_grad=True), dyngrad.tensor(gout0))
        assert _same(gc.detach().numpy(), ge.detach().numpy())
    assert run.eager_reason is None, run.eager_reason
    assert any(isinstance(f, CK.MaxPool2d) and f.relu for f in _fns(run))


@pytest.mark.parametrize("k", [3, 1])
@pytest.mark.parametrize("block", [1, 3, 7])
def test_conv_input_grad_by_blocks_of_samples(monkeypatch, block, k):
    """The input's gradient computed block by block of samples (a last, smaller block
    included) equals eager's bit for bit; a 1x1 kernel (no col2im sum) takes the batch at
    once."""
    N, C, O, H, W = 7, 3, 5, 6, 7
    monkeypatch.setattr(CK, "_BLOCK_BYTES", block * C * 9 * H * W * 4)
    rng = np.random.default_rng(11)
    w = dyngrad.tensor(rng.standard_normal((O, C, k, k)).astype(np.float32))

    def step(x, gout):
        (F.conv2d(x, w, padding=k // 2) * gout).sum().backward()
        return x.grad

    run = dyngrad.compile(step)
    for _ in range(3):
        x0 = rng.standard_normal((N, C, H, W)).astype(np.float32)
        gout0 = rng.standard_normal((N, O, H, W)).astype(np.float32)
        ge = step(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
        gc = run(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
        assert _same(gc.detach().numpy(), ge.detach().numpy())
    assert run.eager_reason is None, run.eager_reason
    kern = [f for f in _fns(run) if isinstance(f, CK.ConvInputGrad)]
    assert kern and kern[0].per_sample and kern[0].block == (block if k == 3 else N)


@pytest.mark.parametrize("kind", ["plain", "relu", "nan"])
def test_max_pool2d_by_blocks_of_images(monkeypatch, kind):
    """Max pooling block by block of images (a last, smaller block included), forward and
    backward, with and without the ReLU before it, equals eager bit for bit."""
    monkeypatch.setattr(CK, "_BLOCK_BYTES", 5 * 8 * 8 * 4)   # 5 of the 3 * 4 images
    rng = np.random.default_rng(12)

    def step(z, gout):
        h = F.relu(z) if kind == "relu" else z * 1.5
        y = F.max_pool2d(h, 2)
        (y * gout).sum().backward()
        return y.detach(), z.grad

    run = dyngrad.compile(step)
    for _ in range(3):
        z0 = _pool_input(rng, (3, 4, 8, 8), np.float32, kind)
        gout0 = rng.standard_normal((3, 4, 4, 4)).astype(np.float32)
        ye, ge = step(dyngrad.tensor(z0, requires_grad=True), dyngrad.tensor(gout0))
        yc, gc = run(dyngrad.tensor(z0, requires_grad=True), dyngrad.tensor(gout0))
        assert _same(yc.detach().numpy(), ye.detach().numpy())
        assert _same(gc.detach().numpy(), ge.detach().numpy())
    assert run.eager_reason is None, run.eager_reason
    kern = [f for f in _fns(run) if isinstance(f, CK.MaxPool2d)]
    assert kern and kern[0].block == 5


def test_compiled_conv_module_two_forwards_then_backwards():
    """A compiled module (its backward captured and run when autograd reaches it): two
    forwards before their backwards each keep their own columns and window codes."""
    nn = dyngrad.nn

    def make():
        dyngrad.manual_seed(3)
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(4, 3, 3, padding=1))

    me, mc = make(), make()
    run = dyngrad.compile(mc)
    rng = np.random.default_rng(13)
    for _ in range(3):
        xs = [rng.standard_normal((3, 2, 8, 8)).astype(np.float32) for _ in range(2)]
        gs = [rng.standard_normal((3, 3, 4, 4)).astype(np.float32) for _ in range(2)]
        outs_e = [me(dyngrad.tensor(x)) for x in xs]
        outs_c = [run(dyngrad.tensor(x)) for x in xs]
        for oe, oc, g in zip(outs_e[::-1], outs_c[::-1], gs):
            assert _same(oc.detach().numpy(), oe.detach().numpy())
            oe.backward(dyngrad.tensor(g))
            oc.backward(dyngrad.tensor(g))
        for a, b in zip(mc.parameters(), me.parameters()):
            assert _same(a.grad.detach().numpy(), b.grad.detach().numpy())
    comp = run._compiled
    assert comp.eager_reason is None, comp.eager_reason
    assert sum(e.replays for e in comp.entries) >= 4
    fns = _fns(comp)
    assert any(isinstance(f, CK.ConvForward) for f in fns)
    assert any(isinstance(f, CK.MaxPool2d) for f in fns)


@pytest.mark.parametrize("stride,padding", [(1, 1), (2, 0)])
def test_conv3d_compiled_equals_eager(stride, padding):
    rng = np.random.default_rng(14)
    w = dyngrad.tensor(rng.standard_normal((4, 2, 3, 3, 2)).astype(np.float32),
                       requires_grad=True)
    b = dyngrad.tensor(rng.standard_normal(4).astype(np.float32), requires_grad=True)

    def step(x, gout):
        y = F.conv3d(x, w, b, stride=stride, padding=padding)
        (y * gout).sum().backward()
        return y.detach(), x.grad

    run = dyngrad.compile(step)
    for _ in range(3):
        x0 = rng.standard_normal((2, 2, 5, 6, 5)).astype(np.float32)
        shape = F.conv3d(dyngrad.tensor(x0), w, b, stride=stride, padding=padding).shape
        gout0 = rng.standard_normal(tuple(shape)).astype(np.float32)
        yc, gc = run(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
        wc, bc = w.grad.detach().numpy().copy(), b.grad.detach().numpy().copy()
        w.grad = b.grad = None
        ye, ge = step(dyngrad.tensor(x0, requires_grad=True), dyngrad.tensor(gout0))
        assert _same(yc.detach().numpy(), ye.detach().numpy())
        assert _same(gc.detach().numpy(), ge.detach().numpy())
        assert _same(wc, w.grad.detach().numpy())
        assert _same(bc, b.grad.detach().numpy())
        w.grad = b.grad = None
    assert run.eager_reason is None, run.eager_reason
    fns = _fns(run)
    assert any(isinstance(f, CK.ConvForward) for f in fns)
    assert any(isinstance(f, CK.ConvInputGrad) for f in fns)
    assert any(isinstance(f, CK.ConvWeightGrad) for f in fns)
