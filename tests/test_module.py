"""nn.Module: registration, traversal, state dicts, modes, hooks, reprs and containers."""
from collections import OrderedDict

import numpy as np
import pytest

import dyngrad as torch
from dyngrad import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.register_buffer("running", torch.zeros(4))
        self.register_buffer("scratch", torch.ones(1), persistent=False)
        self.seq = nn.Sequential(nn.Linear(4, 2), nn.Tanh())
        self.tied = self.fc

    def forward(self, x):
        return self.seq(self.fc(x) + self.running)


def test_registration_and_traversal_order():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["fc.weight", "fc.bias", "seq.0.weight",
                                                    "seq.0.bias"]
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)][-2:] == \
        ["tied.weight", "tied.bias"]
    assert [n for n, _ in m.named_buffers()] == ["running", "scratch"]
    assert [n for n, _ in m.named_children()] == ["fc", "seq"]
    assert [n for n, _ in m.named_modules()] == ["", "fc", "seq", "seq.0", "seq.1"]
    assert len(list(m.modules())) == 5 and len(list(m.children())) == 2
    assert len(list(m.parameters(recurse=False))) == 0


def test_state_dict_keys_and_non_persistent():
    sd = Net().state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["running", "fc.weight", "fc.bias", "seq.0.weight", "seq.0.bias",
                        "tied.weight", "tied.bias"]
    assert not sd["fc.weight"].requires_grad


def test_load_state_dict_all_or_nothing():
    m = Net()
    before = m.fc.weight.detach().numpy().copy()
    sd = m.state_dict()
    sd = OrderedDict((k, v.clone() + 1) for k, v in sd.items() if not k.startswith("tied"))
    sd["fc.bias"] = torch.zeros(5)
    with pytest.raises(RuntimeError) as e:
        m.load_state_dict(sd)
    msg = str(e.value)
    assert "fc.bias" in msg and "torch.Size([5])" in msg and "torch.Size([4])" in msg
    np.testing.assert_array_equal(m.fc.weight.detach().numpy(), before)
    del sd["fc.bias"]
    sd["bogus"] = torch.zeros(1)
    with pytest.raises(RuntimeError, match='Missing key.*"fc.bias"'):
        m.load_state_dict(sd)
    np.testing.assert_array_equal(m.fc.weight.detach().numpy(), before)
    r = m.load_state_dict(sd, strict=False)
    assert r.missing_keys == ["fc.bias", "tied.weight", "tied.bias"] and r.unexpected_keys == ["bogus"]
    np.testing.assert_allclose(m.fc.weight.detach().numpy(), before + 1)


def test_load_state_dict_round_trip():
    a, b = Net(), Net()
    assert str(b.load_state_dict(a.state_dict())) == "<All keys matched successfully>"
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_assignment_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(TypeError, match=r"cannot assign 'torch.FloatTensor' as parameter "
                                        r"'weight' \(torch.nn.Parameter or None expected\)"):
        m.weight = torch.ones(2, 2)
    m.weight = None
    assert [n for n, _ in m.named_parameters()] == ["bias"]
    with pytest.raises(KeyError):
        m.register_buffer("a.b", torch.ones(1))
    with pytest.raises(TypeError):
        m.register_buffer("x", 3)
    with pytest.raises(AttributeError):
        m.nope


def test_train_eval_zero_grad_requires_grad_apply_to():
    m = Net()
    assert m.training and m.eval() is m and not m.seq[0].training
    m.train()
    assert m.seq[1].training
    m(torch.randn(2, 3)).sum().backward()
    assert m.fc.weight.grad is not None
    m.zero_grad(set_to_none=False)
    assert (m.fc.weight.grad.numpy() == 0).all()
    m.zero_grad()
    assert m.fc.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen == ["Linear", "Linear", "Tanh", "Sequential", "Net"]
    m.double()
    assert m.fc.weight.dtype == torch.float64 and m.running.dtype == torch.float64
    m.to(torch.float32)
    assert m.fc.weight.dtype == torch.float32


def test_forward_hooks_and_pre_hooks():
    m = nn.Linear(2, 2)
    order = []
    m.register_forward_pre_hook(lambda mod, args: order.append("pre"))
    m.register_forward_pre_hook(lambda mod, args: order.append("pre0"), prepend=True)
    h = m.register_forward_hook(lambda mod, args, out: out * 0)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: order.append("kw"), with_kwargs=True)
    out = m(torch.ones(1, 2))
    assert order == ["pre0", "pre", "kw"]
    assert (out.detach().numpy() == 0).all()
    h.remove()
    assert not (m(torch.ones(1, 2)).detach().numpy() == 0).all()


def test_full_backward_hook():
    m = nn.Linear(3, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
    x = torch.randn(4, 3, requires_grad=True)
    (m(x) * 3).sum().backward()
    gi, go = seen[0]
    np.testing.assert_allclose(go[0].numpy(), np.full((4, 2), 3.0))
    np.testing.assert_allclose(gi[0].numpy(), x.grad.numpy())
    m(torch.randn(4, 3)).sum().backward()
    assert seen[1][0] == (None,)


def test_backward_hook_can_replace_grad_input():
    m = nn.Identity()
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0,))
    x = torch.ones(3, requires_grad=True)
    (m(x) * 2).sum().backward()
    assert (x.grad.numpy() == 0).all()


def test_repr_nested_and_extra():
    m = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Tanh()))
    assert repr(m) == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                       "  (1): Sequential(\n    (0): Tanh()\n  )\n)")
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"


def test_sequential_and_lists():
    s = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.Linear(2, 1))
    assert len(s) == 3 and isinstance(s[-1], nn.Linear)
    assert isinstance(s[1:], nn.Sequential) and len(s[1:]) == 2
    s.append(nn.Identity())
    s.insert(0, nn.Identity())
    assert [n for n, _ in s.named_children()] == ["0", "1", "2", "3", "4"]
    del s[0]
    assert isinstance(s[0], nn.Linear)
    with pytest.raises(IndexError):
        s[10]
    named = nn.Sequential(OrderedDict([("a", nn.Tanh()), ("b", nn.Identity())]))
    assert [n for n, _ in named.named_children()] == ["a", "b"]
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.extend([nn.Tanh()])
    ml.insert(0, nn.Identity())
    ml += [nn.ReLU()]
    assert [type(x).__name__ for x in ml] == ["Identity", "Linear", "Tanh", "ReLU"]
    assert len(ml[1:3]) == 2
    md = nn.ModuleDict({"x": nn.Tanh()})
    md["y"] = nn.Identity()
    assert list(md.keys()) == ["x", "y"] and "y" in md
    assert isinstance(md.pop("x"), nn.Tanh) and len(md) == 1


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(torch.ones(2)), torch.zeros(3)])
    assert isinstance(pl[1], nn.Parameter) and len(pl) == 2
    pl.append(nn.Parameter(torch.ones(1)))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    pd = nn.ParameterDict({"a": nn.Parameter(torch.ones(1))})
    pd["b"] = torch.zeros(2)
    assert list(pd.keys()) == ["a", "b"] and isinstance(pd["b"], nn.Parameter)
    holder = nn.Module()
    holder.pl = pl
    assert [n for n, _ in holder.named_parameters()] == ["pl.0", "pl.1", "pl.2"]


def test_layers_shapes():
    assert nn.Bilinear(2, 3, 4)(torch.randn(5, 2), torch.randn(5, 3)).shape == (5, 4)
    assert nn.Flatten()(torch.randn(2, 3, 4)).shape == (2, 12)
    assert nn.Unflatten(1, (3, 4))(torch.randn(2, 12)).shape == (2, 3, 4)
    x = torch.randn(2)
    assert nn.Identity(1, a=2)(x) is x
    lin = nn.Linear(4, 3)
    bound = 1 / 2
    assert np.abs(lin.weight.detach().numpy()).max() <= bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound


def test_lazy_linear_infers_in_features_and_becomes_linear():
    import dyngrad as torch
    lin = torch.nn.LazyLinear(3)
    assert repr(lin) == "LazyLinear(in_features=0, out_features=3, bias=True)"
    y = lin(torch.ones(2, 5))
    assert type(lin) is torch.nn.Linear and lin.in_features == 5
    assert tuple(lin.weight.shape) == (3, 5) and tuple(y.shape) == (2, 3)
    bound = 1 / 5 ** 0.5
    assert float(lin.weight.abs().max()) <= bound and float(lin.bias.abs().max()) <= bound
    y.sum().backward()
    assert lin.weight.grad is not None
