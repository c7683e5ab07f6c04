"""Bad arguments fixed at their source (indexing keys, masks, bool subtraction, ``dim``
types, flags, nn/optim/save-load arguments): PyTorch's exception type and leading message,
compared with real PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")


def _err(fn, m):
    try:
        fn(m)
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return e
    return None


def _same(fn, n=None):
    t, d = _err(fn, torch), _err(fn, dyngrad)
    assert t is not None and d is not None, (t, d)
    assert type(d).__name__ == type(t).__name__ or isinstance(d, type(t)), (t, d)
    tm, dm = str(t).split("\n")[0], str(d).split("\n")[0]
    if n is None:
        assert dm == tm, (tm, dm)
    else:
        assert dm.split()[:n] == tm.split()[:n], (tm, dm)


@pytest.mark.parametrize("key", ["a", ["a"], (1, "a"), object(), {}])
def test_index_with_bad_key(key):
    _same(lambda m: m.ones(2, 3)[key])


@pytest.mark.parametrize("expr", [
    "T.ones(2, 3).masked_fill(T.ones(3, 3, dtype=T.bool), 1.)",
    "T.ones(2, 3).masked_fill_(T.ones(3, 3, dtype=T.bool), 1.)",
    "T.ones(2, 3).masked_fill_(T.ones(2, 2, 3, dtype=T.bool), 1.)",
])
def test_masked_fill_mask_not_broadcastable(expr):
    _same(lambda m: eval(expr, {"T": m}))


@pytest.mark.parametrize("expr", [
    "b - b", "b - True", "True - b", "b - 1", "1 - b", "b - 1.5", "T.sub(b, b)", "b.sub_(b)",
    "T.rsub(b, b)", "b - T.tensor(True)", "b.sub(b, alpha=2)", "T.ones(2) - b", "b - T.ones(2)",
    "T.ones(2).sub_(b)", "T.ones(2) - True", "T.ones(2, dtype=T.int64) - True",
])
def test_bool_subtraction(expr):
    _same(lambda m: eval(expr, {"T": m, "b": m.ones(2, dtype=m.bool)}))


def test_bool_subtraction_keeps_other_dtypes():
    assert (dyngrad.ones(2, dtype=dyngrad.int64) - 1).tolist() == [0, 0]
    assert (1 - dyngrad.ones(2)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("expr", [
    "T.ones(2).sum(dim='a')", "T.ones(2).sum('a')", "T.ones(2).mean(dim='a')",
    "T.ones(2).sum(dim=1.5)", "T.sum(T.ones(2), 'a')", "T.ones(2).std(dim='a')",
    "T.ones(2).sum(dim=(0, 'a'))",
])
def test_reduction_dim_of_wrong_type(expr):
    """PyTorch's TypeError naming the function: PyTorch's own message, or (for a method, where
    PyTorch lists the method's signatures) one naming the argument."""
    t, d = _err(lambda m: eval(expr, {"T": m}), torch), _err(lambda m: eval(expr, {"T": m}), dyngrad)
    assert type(t) is TypeError and type(d) is TypeError, (t, d)
    assert str(d).splitlines()[0] == str(t).splitlines()[0] or \
        str(d).startswith(str(t).split("(")[0] + "(): argument 'dim' must be tuple of ints"), (t, d)


def test_amax_dim_of_wrong_type():
    _same(lambda m: m.ones(2).amax(dim="a"))


@pytest.mark.parametrize("dim", ["T.tensor(0)", "[T.tensor(0)]", "np.int64(0)", "[np.int64(0)]",
                                 "T.Size([0])"])
def test_reduction_dim_as_tensor_or_numpy_int(dim):
    t = eval(f"T.ones(2, 3).sum(dim={dim})", {"T": torch, "np": np})
    d = eval(f"T.ones(2, 3).sum(dim={dim})", {"T": dyngrad, "np": np})
    assert d.tolist() == t.tolist()


@pytest.mark.parametrize("expr", [
    "T.logical_and(T.ones(2), 1)", "T.logical_or(T.ones(2), True)", "T.logical_xor(T.ones(2), 'abc')",
    "T.searchsorted(T.ones(2), 'abc')", "T.searchsorted(T.ones(2), T.ones(2), right='x')",
    "T.unique(T.ones(2), 'abc')", "T.unique(T.ones(2), return_counts='x')", "T.unique(T.ones(2), None)",
    "T.unique_consecutive(T.ones(2), 1)", "T.positive('abc')", "T.positive(None)",
    "T.positive(T.ones(2, dtype=T.bool))", "+T.ones(2, dtype=T.bool)",
])
def test_flags_and_operands_of_the_wrong_type(expr):
    _same(lambda m: eval(expr, {"T": m}), 4)


def test_flags_still_work():
    for m in (torch, dyngrad):
        assert m.unique(m.tensor([2., 1., 2.]), return_counts=True)[1].tolist() == [1, 2]
        assert m.searchsorted(m.tensor([1., 2.]), m.ones(2), right=True).tolist() == [1, 1]
        assert m.searchsorted(m.tensor([1., 2.]), 1.5).item() == 1
        assert m.logical_xor(m.ones(2), m.zeros(2)).tolist() == [True, True]
        assert (+m.ones(2)).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("expr", [
    "nn.Linear(-1, 2)", "nn.Linear(2, -3)", "nn.Bilinear(-1, 2, 3)",
    "nn.Linear(2, 2).register_buffer('weight', T.ones(1))",
    "nn.Linear(2, 2).register_buffer('training', T.ones(1))",
    "nn.Linear(2, 2).register_buffer('forward', T.ones(1))",
    "nn.Linear(2, 2).register_parameter('forward', None)",
    "nn.Linear(2, 2).register_parameter('x', T.ones(1))",
    "nn.Linear(2, 2).register_parameter('x', T.ones(1, dtype=T.int64))",
    "setattr(nn.Linear(2, 2), 'weight', T.ones(2, 2))",
    "nn.MSELoss(reduction='x')(T.ones(2), T.ones(2))",
    "optim.SGD([T.ones(2, requires_grad=True)], lr=0.1).load_state_dict({})",
    "optim.SGD([T.ones(2, requires_grad=True)], lr=0.1).load_state_dict({'state': {}})",
    "optim.SGD([T.ones(2, requires_grad=True)], lr=0.1).load_state_dict("
    "{'param_groups': [{'params': [0]}]})",
])
def test_nn_optim_argument_errors(expr):
    _same(lambda m: eval(expr, {"T": m, "nn": m.nn, "optim": m.optim}))


def test_loss_reduction_checked_at_call():
    names = [n for n in dir(dyngrad.nn) if n.endswith("Loss") and hasattr(torch.nn, n)]
    assert names
    for n in names:
        getattr(dyngrad.nn, n)(reduction="x")  # PyTorch accepts it at construction
        getattr(torch.nn, n)(reduction="x")


def test_module_registration_still_works():
    for m in (torch, dyngrad):
        lin = m.nn.Linear(2, 2)
        lin.register_buffer("b", m.ones(1))
        lin.register_buffer("b", m.ones(2))
        lin.register_parameter("bias", None)
        assert lin.b.shape == (2,) and lin.bias is None


@pytest.mark.parametrize("expr", [
    "T.load(None)", "T.load(5)", "T.save(T.ones(2), 5)", "T.save(T.ones(2), None)",
    "T.save(T.ones(2), '/nonexistent/dir/x.pt')", "T.save(T.ones(2), 'no_such_dir_here/x.pt')",
])
def test_save_load_argument_errors(expr):
    _same(lambda m: eval(expr, {"T": m}))


@pytest.mark.parametrize("expr", [
    "T.tril(T.ones(2), 'abc')", "T.triu(T.ones(2, 2), 1.5)", "T.rot90(T.ones(2), 'abc')",
    "T.diagonal(T.ones(2), 'abc')", "T.bmm(T.ones(2), 'abc')", "T.mv(T.ones(2), 'abc')",
    "T.take(T.ones(2), 'abc')", "T.take_along_dim(T.ones(2), 'abc')",
    "T.masked_select(T.ones(2), 'abc')",
])
def test_argument_type_checked_first(expr):
    """The wrong type of an argument is PyTorch's TypeError, before any shape check."""
    _same(lambda m: eval(expr, {"T": m}))


def test_int_arguments_accept_numpy_ints():
    for m in (torch, dyngrad):
        assert m.triu(m.ones(2, 2), np.int64(1)).tolist() == [[0.0, 1.0], [0.0, 0.0]]
        assert m.diagonal(m.ones(2, 2), 1).tolist() == [1.0]


@pytest.mark.parametrize("expr", [
    "T.concat(T.ones(2), 'abc')", "T.concatenate(T.ones(2), 'abc')",
    "T.concatenate([T.ones(2)], dim='a')", "T.clamp('abc')", "T.clamp(None)", "T.clip('abc')",
    "T.clip(None)", "T.clamp('abc', 1)",
    "F.alpha_dropout('abc')", "F.alpha_dropout(None)", "F.feature_alpha_dropout('abc')",
    "F.feature_alpha_dropout(None)",
])
def test_aliases_and_dropouts_name_themselves(expr):
    _same(lambda m: eval(expr, {"T": m, "F": m.nn.functional}), 4)


def test_aliases_still_work():
    for m in (torch, dyngrad):
        assert m.concat([m.ones(2, 1), m.ones(2, 1)], 1).shape == (2, 2)
        assert m.clip(m.ones(2), max=0.5).tolist() == [0.5, 0.5]
        assert m.ones(2).clip(0, 0.25).tolist() == [0.25, 0.25]


@pytest.mark.parametrize("args", ["None", "2, (1,)", "[2], [2, 2]", "(2, 1), (3,)", "T.Size([2])",
                                  "", "1.5", "(1.5,)", "T.ones(2), 'abc'"])
def test_broadcast_shapes_arguments(args):
    def f(m):
        return eval(f"T.broadcast_shapes({args})", {"T": m})
    if _err(f, torch) is None:
        assert tuple(f(dyngrad)) == tuple(f(torch))
    else:
        _same(f)


def test_broadcast_shapes_string_is_type_error():
    t = _err(lambda m: m.broadcast_shapes("abc"), torch)
    d = _err(lambda m: m.broadcast_shapes("abc"), dyngrad)
    assert type(t) is TypeError and type(d) is TypeError and "str" in str(d)


def test_normalize_non_tensor():
    d = _err(lambda m: m.nn.functional.normalize("abc"), dyngrad)
    assert type(d) is TypeError and "must be Tensor, not str" in str(d)


@pytest.mark.parametrize("expr", [
    "T.broadcast_to(T.ones(2), 'abc')", "T.broadcast_to(T.ones(2), (2, 'a'))",
    "T.broadcast_to(T.ones(2), 2)", "T.broadcast_to(T.ones(2), None)",
    "T.normal('abc')", "T.normal(None)",
    "T.einsum('abc')", "T.einsum(None)", "T.einsum('i', [])", "T.einsum(None, T.ones(2))",
    "T.einsum('i', 'abc')", "T.einsum('i', ['abc'])",
])
def test_size_mean_and_einsum_arguments(expr):
    _same(lambda m: eval(expr, {"T": m}))


def test_size_mean_and_einsum_still_work():
    for m in (torch, dyngrad):
        assert m.broadcast_to(m.ones(2), m.Size([3, 2])).shape == (3, 2)
        assert m.broadcast_to(m.ones(2), (-1,)).shape == (2,)
        assert m.normal(2, 3, size=(1,)).shape == (1,)
        assert m.einsum("i,i->", [m.ones(2), m.ones(2)]).item() == 2.0


@pytest.mark.parametrize("expr", [
    "T.where(T.ones(2), 'abc')", "T.where(T.ones(2) > 0, 1.)", "T.where(T.ones(2) > 0, T.ones(2))",
    "T.where(T.ones(2) > 0, 1., 'a')",
    "T.arange(T.ones(2), 'abc')", "T.arange(T.ones(2))", "T.arange(T.ones(2), 5)",
])
def test_where_and_arange_argument_combinations(expr):
    _same(lambda m: eval(expr, {"T": m}), 6)


def test_where_and_arange_still_work():
    for m in (torch, dyngrad):
        assert m.where(m.ones(2) > 0, 1, 2).tolist() == [1, 1]
        assert m.where(m.ones(2) > 0, True, False).tolist() == [True, True]
        assert m.ones(2).where(m.ones(2) > 0, 0.).tolist() == [1.0, 1.0]
        assert m.arange(m.tensor(1), m.tensor(4)).tolist() == [1, 2, 3]


@pytest.mark.parametrize("expr", [
    "T.device('float32')", "T.device('cuda:x')", "T.device('cuda:01')", "T.device('')",
    "T.ones(2).to('float32')", "T.ones(2).to(device='float32')", "T.zeros(2, device='float32')",
])
def test_invalid_device_strings(expr):
    _same(lambda m: eval(expr, {"T": m}))


def test_device_strings_still_parse():
    for m in (torch, dyngrad):
        assert str(m.device("cpu:0")) == "cpu:0" and str(m.device("cuda", 1)) == "cuda:1"
        assert str(m.ones(2).to("cpu").device) == "cpu"


@pytest.mark.parametrize("expr", ["T.norm(T.ones(2), 'abc')", "T.norm(T.ones(2, 2), 'abc', dim=0)",
                                  "T.norm(T.ones(2), 'nuc')"])
def test_norm_unknown_order(expr):
    _same(lambda m: eval(expr, {"T": m}))
