"""Which error wins when two things are wrong at once, against PyTorch.

* A view that can no longer rebuild its history (an output of a multi-output view op whose base
  was then changed in place): PyTorch reads an op's input history before the op checks its
  arguments, so the view's error comes first, except for ops with no derivative and composite
  ops that check their arguments themselves.
* Several saved tensors modified in place: backward reports the first one PyTorch unpacks
  (its saved names in alphabetical order: ``exponent``/``other`` before ``self``).
"""
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

STALE_CALLS = {
    "view": lambda L, v: v.view(5), "reshape": lambda L, v: v.reshape(5),
    "expand": lambda L, v: v.expand(4), "permute": lambda L, v: v.permute(0),
    "transpose": lambda L, v: v.transpose(0, 5), "sum": lambda L, v: v.sum(7),
    "add": lambda L, v: v + L.ones(3), "matmul": lambda L, v: v @ L.ones(3),
    "mm": lambda L, v: v.mm(L.ones(3, 3)), "index_select": lambda L, v: v.index_select(5, L.tensor([0])),
    "narrow": lambda L, v: v.narrow(5, 0, 1), "unsqueeze": lambda L, v: v.unsqueeze(9),
    "squeeze": lambda L, v: v.squeeze(9), "select": lambda L, v: v.select(9, 0),
    "getitem": lambda L, v: v[9], "split": lambda L, v: v.split(1, 9), "chunk": lambda L, v: v.chunk(2, 9),
    "cat": lambda L, v: L.cat([v, L.ones(3)]), "softmax": lambda L, v: v.softmax(9),
    "cumsum": lambda L, v: v.cumsum(9), "mean": lambda L, v: v.mean(9), "max": lambda L, v: v.max(9),
    "flatten": lambda L, v: v.flatten(9), "repeat": lambda L, v: v.repeat(2), "t": lambda L, v: v.t(),
    "unbind": lambda L, v: v.unbind(9), "movedim": lambda L, v: v.movedim(0, 9),
    "clamp": lambda L, v: v.clamp(), "pow": lambda L, v: v.pow(L.ones(3)),
    "masked_fill": lambda L, v: v.masked_fill(L.ones(3, dtype=L.bool), 1.0),
    "linear": lambda L, v: L.nn.functional.linear(v, L.ones(3, 3)), "norm": lambda L, v: v.norm(dim=9),
    "std": lambda L, v: v.std(9), "prod": lambda L, v: v.prod(9), "roll": lambda L, v: v.roll(1, 9),
    "flip": lambda L, v: v.flip(9), "diagonal": lambda L, v: v.diagonal(0, 0, 9),
    "topk": lambda L, v: v.topk(9), "sort": lambda L, v: v.sort(9), "amax": lambda L, v: v.amax(9),
    "unflatten": lambda L, v: v.unflatten(9, (1, 1)), "tensor_split": lambda L, v: v.tensor_split(2, 9),
    "argmax": lambda L, v: v.argmax(9), "all": lambda L, v: v.all(9), "any": lambda L, v: v.any(9),
    "count_nonzero": lambda L, v: v.count_nonzero(9), "repeat_interleave": lambda L, v: v.repeat_interleave(2, 9),
    "scatter": lambda L, v: v.scatter(9, L.tensor([0]), 1.0), "numpy": lambda L, v: v.numpy(),
    "item": lambda L, v: v.item(), "size": lambda L, v: v.size(9), "zero_": lambda L, v: v.zero_(),
    "detach": lambda L, v: v.detach(), "setitem": lambda L, v: L.ones(3, 4).__setitem__(0, v),
    "log_softmax": lambda L, v: v.log_softmax(9), "kthvalue": lambda L, v: v.kthvalue(1, 9),
    "eq": lambda L, v: v == L.ones(3), "to": lambda L, v: v.to("meta2"),
}


def _stale(L):
    b = L.rand(2, 1, 4, requires_grad=True) * 1
    (v,) = b.split(2, 0)
    b.mul_(2)
    return v


def _outcome(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - compared with PyTorch's
        return type(e).__name__, str(e).split("\n")[0][:60]
    return "ok", ""


@pytest.mark.parametrize("name", sorted(STALE_CALLS))
def test_stale_view_error_comes_first_where_pytorchs_does(name):
    call = STALE_CALLS[name]
    exp = _outcome(lambda: call(torch, _stale(torch)))
    got = _outcome(lambda: call(dyngrad, _stale(dyngrad)))
    assert got == exp


def test_stale_view_class_is_still_a_tensor():
    v = _stale(dyngrad)
    assert isinstance(v, dyngrad.Tensor) and type(v).__name__ == "Tensor"
    with dyngrad.no_grad():  # without recording the view is usable, as in PyTorch
        assert v.sum().item() == pytest.approx(float(v.detach().numpy().sum()))


BINARY = {
    "mul": lambda L, a, b: a * b, "div": lambda L, a, b: a / b, "pow": lambda L, a, b: a ** b,
    "atan2": lambda L, a, b: L.atan2(a, b), "hypot": lambda L, a, b: L.hypot(a, b),
    "xlogy": lambda L, a, b: L.xlogy(a, b), "fmod": lambda L, a, b: L.fmod(a, b),
    "remainder": lambda L, a, b: L.remainder(a, b), "dist": lambda L, a, b: L.dist(a, b),
    "maximum": lambda L, a, b: L.maximum(a, b), "copysign": lambda L, a, b: L.copysign(a, b),
    "logaddexp": lambda L, a, b: L.logaddexp(a, b), "lerp": lambda L, a, b: L.lerp(a, b, b),
    "addcdiv": lambda L, a, b: L.addcdiv(a, a, b), "minimum": lambda L, a, b: L.minimum(a, b),
}


def _unpack_first(L, op, combo):
    a = L.rand(3, requires_grad=True) * 1
    b = L.rand(2, 1, requires_grad=True) * 1
    r = op(L, a, b)
    out = r.sum() * 1
    if combo[0]:
        a.add_(1)
    if combo[1]:
        b.add_(1)
    if combo[2]:
        r.add_(1)
    try:
        out.backward()
    except RuntimeError as e:
        m = str(e)
        return m[m.find("[torch"):m.find("], which") + 1]
    return None


@pytest.mark.parametrize("combo", [(1, 1, 0), (1, 1, 1), (1, 0, 1)])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_first_invalid_saved_tensor_reported_as_pytorch(name, combo):
    op = BINARY[name]
    assert _unpack_first(dyngrad, op, combo) == _unpack_first(torch, op, combo)
