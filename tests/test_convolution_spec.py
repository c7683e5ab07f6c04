"""torch.convolution (the op conv1d/conv2d/... compose over) against PyTorch 2.13: the
recorded node and its edges, values, gradients, double backward, forward mode, and its
batching rule against a loop."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
import dyngrad.autograd.forward_ad as fwAD  # noqa: E402
from dyngrad.ops import OPS  # noqa: E402
from dyngrad.ops._spec import apply_batched  # noqa: E402

R = np.random.RandomState(0)
CASES = [  # input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
    ((2, 4, 6, 5), (6, 2, 3, 2), (6,), (2, 1), (1, 0), (1, 2), False, (0, 0), 2),
    ((2, 4, 7), (3, 4, 2), None, [1], [0], [2], False, [0], 1),
    ((1, 2, 4, 3, 4), (3, 2, 2, 2, 2), (3,), (1, 2, 1), (1, 1, 1), (1, 1, 1), False,
     (0, 0, 0), 1),
    ((2, 4, 3, 4), (4, 3, 3, 2), (6,), (2, 2), (1, 0), (1, 1), True, (1, 1), 2),
    ((2, 4, 5), (4, 1, 3), None, [2], [1], [1], True, [1], 2),
    ((1, 2, 2, 3, 2), (2, 3, 2, 2, 2), None, (2, 2, 2), (1, 1, 1), (1, 1, 1), True,
     (1, 0, 1), 1),
]


def _arrays(case):
    return [None if sh is None else R.randn(*sh) for sh in case[:3]]


def _make(L, arrays, rg=True):
    return [None if a is None else L.tensor(a, requires_grad=rg) for a in arrays]


def _names(fn):
    return None if fn is None else type(fn).__name__


@pytest.mark.parametrize("case", CASES)
def test_node_values_gradients_as_torch(case):
    arrays = _arrays(case)
    out = {}
    for L in (torch, dyngrad):
        ts = _make(L, arrays)
        y = L.convolution(*ts, *case[3:])
        fn = y.grad_fn
        edges = [(_names(f), i) for f, i in fn.next_functions]
        saved = {k: getattr(fn, k) for k in dir(fn) if k.startswith("_saved_")
                 and k not in ("_saved_input", "_saved_weight")}
        saved = {k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in saved.items()}
        g = L.tensor(R.randn(*y.shape)) if L is torch else L.tensor(out[torch][4])
        grads = L.autograd.grad(y, [t for t in ts if t is not None], g, create_graph=True)
        gg = L.autograd.grad(sum((q * q).sum() for q in grads), ts[0])[0]
        out[L] = (type(fn).__name__, edges, saved, y.detach().numpy(), g.numpy(),
                  [q.detach().numpy() for q in grads], gg.numpy())
    a, b = out[torch], out[dyngrad]
    assert a[0] == b[0] == "ConvolutionBackward0"
    assert a[1] == b[1]
    assert a[2] == b[2]
    np.testing.assert_allclose(b[3], a[3], rtol=1e-10, atol=1e-10)
    for x, y in zip(b[5], a[5]):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(b[6], a[6], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", CASES)
def test_forward_mode_as_torch_jvp(case):
    arrays = _arrays(case)
    tangents = [None if a is None else R.randn(*a.shape) for a in arrays]
    n = sum(a is not None for a in arrays)

    def tf(*ts):
        ts = list(ts) + [None] * (3 - len(ts))
        return torch.convolution(*ts, *case[3:])
    prim = [torch.tensor(a) for a in arrays if a is not None]
    tans = [torch.tensor(t) for t in tangents if t is not None]
    want = torch.func.jvp(tf, tuple(prim), tuple(tans))[1].numpy()
    before = dict(fwAD.DERIVED)
    with fwAD.dual_level():
        duals = [None if a is None else fwAD.make_dual(dyngrad.tensor(a), dyngrad.tensor(t))
                 for a, t in zip(arrays, tangents)]
        y = dyngrad.convolution(*duals, *case[3:])
        got = fwAD.unpack_dual(y).tangent.numpy()
    assert dict(fwAD.DERIVED) == before
    assert n >= 2
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", CASES)
def test_batching_rule_agrees_with_a_loop(case):
    spec = OPS["convolution"]["spec"]
    params = dict(zip(("stride", "padding", "dilation", "transposed", "output_padding",
                       "groups"), case[3:]))
    batch = [_arrays(case) for _ in range(3)]
    stacked = [None if a[0] is None else np.stack(a) for a in zip(*batch)]
    got = apply_batched("convolution", stacked, params)
    each = np.stack([spec.forward(*b, **params) for b in batch])
    np.testing.assert_allclose(got, each, rtol=1e-12, atol=1e-12)


def test_errors_as_torch():
    x, w = np.zeros((2, 3, 5)), np.zeros((4, 3, 2, 2))
    for L in (torch, dyngrad):
        with pytest.raises(RuntimeError, match="Expected 4-dimensional input for 4-dimensional"
                                               " weight"):
            L.convolution(L.tensor(x), L.tensor(w), None, [1], [0], [1], False, [0], 1)
        with pytest.raises(TypeError):
            L.convolution(L.tensor(x), 3, None, [1], [0], [1], False, [0], 1)


def _complex(L, shape, seed):
    r = np.random.RandomState(seed)
    return L.complex(L.tensor(r.randn(*shape)), L.tensor(r.randn(*shape))).requires_grad_()


@pytest.mark.parametrize("name,shapes,kw", [
    ("conv2d", ((2, 2, 5, 6), (3, 2, 3, 2), (3,)), {"stride": (2, 1), "padding": 1}),
    ("conv1d", ((2, 4, 7), (3, 4, 2), None), {"dilation": 2}),
    ("conv_transpose1d", ((2, 3, 4), (3, 2, 3), (2,)), {"stride": 2}),
])
def test_complex_input_composes_real_convolutions(name, shapes, kw):
    """conv<n>d of complex input: PyTorch's three real convolutions (values, gradients, the
    recorded sum); torch.convolution itself refuses complex input."""
    out = {}
    for L in (torch, dyngrad):
        ts = [None if sh is None else _complex(L, sh, i) for i, sh in enumerate(shapes)]
        y = getattr(L.nn.functional, name)(*ts, **kw)
        fn = y.grad_fn
        y.abs().sum().backward()
        out[L] = (type(fn).__name__, type(fn.next_functions[0][0]).__name__, y.detach().numpy(),
                  [t.grad.numpy() for t in ts if t is not None])
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexDouble'"):
            n = len(shapes[1]) - 2
            L.convolution(ts[0].detach(), ts[1].detach(), None, [1] * n, [0] * n, [1] * n,
                          name.startswith("conv_t"), [0] * n, 1)
    a, b = out[torch], out[dyngrad]
    assert a[:2] == b[:2] == ("AddBackward0", "SubBackward0")
    np.testing.assert_allclose(b[2], a[2], rtol=1e-10, atol=1e-10)
    for x, y in zip(b[3], a[3]):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-10)


def test_fewer_output_channels_than_groups_as_torch():
    for L in (torch, dyngrad):
        x, w = L.zeros(1, 4, 5, 5), L.zeros(1, 2, 3, 3)
        with pytest.raises(RuntimeError, match=r"Given groups=2, expected weight to be at least "
                                               r"2 at dimension 0, but got weight of size "
                                               r"\[1, 2, 3, 3\] instead"):
            L.nn.functional.conv2d(x, w, groups=2)
