"""Differential tests against PyTorch: module traversal and reprs, recurrent and attention
layers with shared weights, optimizers over 100 steps, schedulers, hooks, data loading."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad as dg  # noqa: E402
from dyngrad.utils import data as dgdata  # noqa: E402

RS = np.random.RandomState(0)


def copy_params(tm, dm):
    tn = [n for n, _ in tm.named_parameters()]
    dn = [n for n, _ in dm.named_parameters()]
    assert tn == dn
    for n, p in tm.named_parameters():
        dm.get_parameter(n)._data[...] = p.detach().numpy()


def close(a, b, atol=2e-6, rtol=1e-5):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)


def build(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Linear(3, 4)
            self.register_buffer("scale", lib.ones(4))
            self.register_buffer("tmp", lib.zeros(1), persistent=False)
            self.body = nn.Sequential(nn.Linear(4, 4), nn.Tanh(),
                                      nn.ModuleList([nn.Linear(4, 2), nn.Linear(2, 2)]))
            self.heads = nn.ModuleDict({"b": nn.Linear(2, 1), "a": nn.Flatten()})
            self.shared = self.emb
            self.extra = nn.Parameter(lib.zeros(2))
            self.plist = nn.ParameterList([nn.Parameter(lib.ones(1)), nn.Parameter(lib.ones(2))])
            self.rnn = nn.GRU(2, 3, num_layers=2, bidirectional=True)

        def forward(self, x):
            return x

    return Net()


def test_traversal_names_and_order():
    t, d = build(torch), build(dg)
    for attr in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        assert [n for n, _ in getattr(t, attr)()] == [n for n, _ in getattr(d, attr)()], attr
    assert [n for n, _ in t.named_parameters(remove_duplicate=False)] == \
        [n for n, _ in d.named_parameters(remove_duplicate=False)]
    assert [n for n, _ in t.named_modules(remove_duplicate=False)] == \
        [n for n, _ in d.named_modules(remove_duplicate=False)]
    assert list(t.state_dict().keys()) == list(d.state_dict().keys())
    assert [n for n, _ in t.named_parameters(prefix="m", recurse=False)] == \
        [n for n, _ in d.named_parameters(prefix="m", recurse=False)]
    assert repr(t) == repr(d)


@pytest.mark.parametrize("make", [
    lambda nn: nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 3), nn.ReLU()]),
    lambda nn: nn.ModuleList(),
    lambda nn: nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Tanh(), nn.Linear(2, 1)))[1:],
    lambda nn: nn.Bilinear(2, 3, 4, bias=False),
    lambda nn: nn.Unflatten(1, (2, 3)),
    lambda nn: nn.Identity(),
    lambda nn: nn.LSTM(3, 4, 2, batch_first=True, dropout=0.5, bidirectional=True),
    lambda nn: nn.RNN(3, 4, nonlinearity="relu", bias=False),
    lambda nn: nn.GRUCell(3, 4),
    lambda nn: nn.RNNCell(3, 4, nonlinearity="relu"),
    lambda nn: nn.MultiheadAttention(8, 2, kdim=3, vdim=5),
    lambda nn: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 2,
                                     enable_nested_tensor=False),
])
def test_reprs(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert repr(make(torch.nn)) == repr(make(dg.nn))


def test_parameter_list_dict_repr():
    for n in (1, 2):
        tl = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 3)) for _ in range(n)])
        dl = dg.nn.ParameterList([dg.nn.Parameter(dg.ones(2, 3)) for _ in range(n)])
        assert repr(tl) == repr(dl)
        td = torch.nn.ParameterDict({str(i): torch.nn.Parameter(torch.ones(2)) for i in range(n)})
        dd = dg.nn.ParameterDict({str(i): dg.nn.Parameter(dg.ones(2)) for i in range(n)})
        assert repr(td) == repr(dd)


def test_tensor_assigned_to_parameter_message():
    msgs = []
    for lib in (torch, dg):
        m = lib.nn.Linear(2, 2)
        with pytest.raises(TypeError) as e:
            m.weight = lib.ones(2, 2)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_load_state_dict_messages_match():
    out = []
    for lib in (torch, dg):
        m = lib.nn.Linear(2, 3)
        sd = {"weight": lib.zeros(4, 2), "bias": lib.zeros(3), "extra": lib.zeros(1)}
        with pytest.raises(RuntimeError) as e:
            m.load_state_dict(sd)
        out.append(str(e.value))
        r = m.load_state_dict({"weight": lib.zeros(3, 2), "other": lib.zeros(1)}, strict=False)
        out.append((r.missing_keys, r.unexpected_keys))
    assert out[2].startswith(out[0])
    assert out[1] == out[3]


RNN_CASES = [("RNN", {}), ("RNN", dict(nonlinearity="relu", num_layers=2, bidirectional=True)),
             ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
             ("LSTM", dict(proj_size=2)), ("GRU", dict(num_layers=2, bias=False)),
             ("GRU", dict(bidirectional=True, batch_first=True))]


@pytest.mark.parametrize("cls,kw", RNN_CASES)
@pytest.mark.parametrize("with_h0", [False, True])
def test_recurrent_layers(cls, kw, with_h0):
    tm, dm = getattr(torch.nn, cls)(4, 5, **kw), getattr(dg.nn, cls)(4, 5, **kw)
    copy_params(tm, dm)
    x = RS.randn(6, 3, 4).astype(np.float32)
    tx, dx = torch.tensor(x, requires_grad=True), dg.tensor(x, requires_grad=True)
    targs, dargs = (tx,), (dx,)
    if with_h0:
        dirs = 2 if kw.get("bidirectional") else 1
        hsz = kw.get("proj_size") or 5
        n = 6 if kw.get("batch_first") else 3
        h0 = RS.randn(kw.get("num_layers", 1) * dirs, n, hsz).astype(np.float32)
        c0 = RS.randn(kw.get("num_layers", 1) * dirs, n, 5).astype(np.float32)
        if cls == "LSTM":
            targs += ((torch.tensor(h0), torch.tensor(c0)),)
            dargs += ((dg.tensor(h0), dg.tensor(c0)),)
        else:
            targs += (torch.tensor(h0),)
            dargs += (dg.tensor(h0),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        to, th = tm(*targs)
    do, dh = dm(*dargs)
    close(to, do)
    if cls == "LSTM":
        close(th[0], dh[0])
        close(th[1], dh[1])
        (to.pow(2).sum() + th[1].sum()).backward()
        (do.pow(2).sum() + dh[1].sum()).backward()
    else:
        close(th, dh)
        (to.pow(2).sum() + th.sum()).backward()
        (do.pow(2).sum() + dh.sum()).backward()
    close(tx.grad, dx.grad, atol=1e-5)
    for a, b in zip(tm.parameters(), dm.parameters()):
        close(a.grad, b.grad, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("cls", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells(cls, batched):
    tm, dm = getattr(torch.nn, cls)(3, 4), getattr(dg.nn, cls)(3, 4)
    copy_params(tm, dm)
    x = RS.randn(2, 3).astype(np.float32) if batched else RS.randn(3).astype(np.float32)
    to, do = tm(torch.tensor(x)), dm(dg.tensor(x))
    if cls == "LSTMCell":
        close(to[0], do[0])
        close(to[1], do[1])
    else:
        close(to, do)


def test_unbatched_rnn():
    tm, dm = torch.nn.LSTM(3, 4, 2), dg.nn.LSTM(3, 4, 2)
    copy_params(tm, dm)
    x = RS.randn(5, 3).astype(np.float32)
    to, (th, tc) = tm(torch.tensor(x))
    do, (dh, dc) = dm(dg.tensor(x))
    assert tuple(do.shape) == tuple(to.shape) and tuple(dh.shape) == tuple(th.shape)
    close(to, do)
    close(tc, dc)


MHA_KW = [{}, dict(batch_first=True), dict(add_bias_kv=True, add_zero_attn=True),
          dict(kdim=3, vdim=5), dict(bias=False)]
MASKS = [{}, dict(key_padding_mask=True), dict(attn_mask=True),
         dict(key_padding_mask=True, attn_mask=True, average_attn_weights=False)]


@pytest.mark.parametrize("kw", MHA_KW)
@pytest.mark.parametrize("masks", MASKS)
def test_multihead_attention(kw, masks):
    tm, dm = torch.nn.MultiheadAttention(8, 2, **kw), dg.nn.MultiheadAttention(8, 2, **kw)
    copy_params(tm, dm)
    q = RS.randn(4, 3, 8).astype(np.float32)
    k = RS.randn(6, 3, kw.get("kdim", 8)).astype(np.float32)
    v = RS.randn(6, 3, kw.get("vdim", 8)).astype(np.float32)
    if kw.get("batch_first"):
        q, k, v = [np.ascontiguousarray(a.transpose(1, 0, 2)) for a in (q, k, v)]
    extra = {}
    if masks.get("key_padding_mask"):
        kpm = np.zeros((3, 6), bool)
        kpm[0, -2:] = True
        extra["key_padding_mask"] = kpm
    if masks.get("attn_mask"):
        extra["attn_mask"] = np.triu(np.ones((4, 6), bool), k=3)
    if "average_attn_weights" in masks:
        extra["average_attn_weights"] = masks["average_attn_weights"]
    tq, tk, tv = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    dq, dk, dv = [dg.tensor(a, requires_grad=True) for a in (q, k, v)]
    to = tm(tq, tk, tv, **{n: torch.tensor(m) if isinstance(m, np.ndarray) else m
                           for n, m in extra.items()})
    do = dm(dq, dk, dv, **{n: dg.tensor(m) if isinstance(m, np.ndarray) else m
                           for n, m in extra.items()})
    close(to[0], do[0])
    close(to[1], do[1])
    (to[0].sum() + to[1].pow(2).sum()).backward()
    (do[0].sum() + do[1].pow(2).sum()).backward()
    for a, b in ((tq, dq), (tk, dk), (tv, dv)):
        close(a.grad, b.grad, atol=1e-5)
    for a, b in zip(tm.parameters(), dm.parameters()):
        close(a.grad, b.grad, atol=2e-5, rtol=1e-4)


def test_mha_need_weights_false_and_float_mask():
    tm, dm = torch.nn.MultiheadAttention(4, 2), dg.nn.MultiheadAttention(4, 2)
    copy_params(tm, dm)
    x = RS.randn(3, 2, 4).astype(np.float32)
    m = RS.randn(3, 3).astype(np.float32)
    to, tw = tm(torch.tensor(x), torch.tensor(x), torch.tensor(x), attn_mask=torch.tensor(m),
                need_weights=False)
    do, dw = dm(dg.tensor(x), dg.tensor(x), dg.tensor(x), attn_mask=dg.tensor(m),
                need_weights=False)
    assert tw is None and dw is None
    close(to, do)


@pytest.mark.parametrize("kw", [{}, dict(norm_first=True), dict(activation="gelu"),
                                dict(batch_first=True, norm_first=True, activation="gelu")])
def test_transformer_encoder_layer(kw):
    tm = torch.nn.TransformerEncoderLayer(8, 2, 16, **kw).eval()
    dm = dg.nn.TransformerEncoderLayer(8, 2, 16, **kw).eval()
    copy_params(tm, dm)
    assert repr(tm) == repr(dm)
    x = RS.randn(4, 3, 8).astype(np.float32)
    kpm = np.zeros((4, 4) if kw.get("batch_first") else (3, 4), bool)
    kpm[0, -1] = True
    close(tm(torch.tensor(x)), dm(dg.tensor(x)), atol=1e-5)
    if not kw.get("batch_first"):
        kpm = np.zeros((3, 4), bool)
        kpm[0, -1] = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tm.train()
            dm.train()
            for m in (tm, dm):
                for mod in m.modules():
                    if hasattr(mod, "p"):
                        mod.p = 0.0
                m.self_attn.dropout = 0.0
            close(tm(torch.tensor(x), src_key_padding_mask=torch.tensor(kpm)),
                  dm(dg.tensor(x), src_key_padding_mask=dg.tensor(kpm)), atol=1e-5)


def test_full_backward_hook_matches():
    got = {}
    for name, lib in (("t", torch), ("d", dg)):
        m = lib.nn.Linear(3, 2)
        copy_params(torch.nn.Linear(3, 2), m) if False else None
        m.weight.data = lib.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        seen = []
        m.register_full_backward_hook(lambda mod, gi, go: seen.append((gi, go)))
        x = lib.tensor(np.ones((4, 3), np.float32), requires_grad=True)
        (m(x) * 2).sum().backward()
        got[name] = seen
    (tgi, tgo), (dgi, dgo) = got["t"][0], got["d"][0]
    assert len(tgi) == len(dgi) and len(tgo) == len(dgo)
    close(tgi[0], dgi[0])
    close(tgo[0], dgo[0])


# -- optimizers ------------------------------------------------------------------------
OPTIMS = [
    ("SGD", dict(lr=0.05)), ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)), ("SGD", dict(lr=0.05, maximize=True)),
    ("Adam", dict(lr=0.01)), ("Adam", dict(lr=0.01, amsgrad=True)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, betas=(0.8, 0.99))),
    ("Adam", dict(lr=0.01, maximize=True)),
    ("AdamW", dict(lr=0.01)), ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.002)), ("RMSprop", dict(lr=0.002, alpha=0.9, eps=1e-6)),
    ("RMSprop", dict(lr=0.002, centered=True)), ("RMSprop", dict(lr=0.002, momentum=0.5)),
    ("RMSprop", dict(lr=0.002, centered=True, momentum=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.02)), ("Adagrad", dict(lr=0.02, lr_decay=0.01)),
    ("Adagrad", dict(lr=0.02, initial_accumulator_value=0.5, weight_decay=0.05)),
]


def _run_optimizer(lib, name, kw, steps, dtype=np.float32):
    w0 = np.random.RandomState(1).randn(3, 4).astype(dtype)
    a = lib.tensor(np.random.RandomState(2).randn(5, 3).astype(dtype))
    w = lib.nn.Parameter(lib.tensor(w0))
    unused = lib.nn.Parameter(lib.ones(2))
    opt = getattr(lib.optim, name)([w, unused], **kw)
    hist = []
    for _ in range(steps):
        opt.zero_grad()
        loss = (a.matmul(w).tanh() - 0.5).pow(2).sum() + 0.1 * w.pow(2).sum()
        loss.backward()
        opt.step()
        hist.append(w.detach().numpy().copy())
    assert (unused.detach().numpy() == 1).all()
    return hist, opt


@pytest.mark.parametrize("name,kw", OPTIMS)
def test_optimizer_100_steps(name, kw):
    """float64 parameters, so the comparison is not swamped by rounding that normalising
    optimizers amplify where a gradient passes through zero; must agree to float32 precision."""
    th, _ = _run_optimizer(torch, name, kw, 100, np.float64)
    dh, _ = _run_optimizer(dg, name, kw, 100, np.float64)
    for a, b in zip(th, dh):
        np.testing.assert_allclose(a, b, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("name,kw", OPTIMS)
def test_optimizer_float32_20_steps(name, kw):
    th, _ = _run_optimizer(torch, name, kw, 20)
    dh, _ = _run_optimizer(dg, name, kw, 20)
    for a, b in zip(th, dh):
        np.testing.assert_allclose(a, b, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("name,kw", [o for o in OPTIMS if o[1].get("momentum") or
                                     o[0] in ("Adam", "Adagrad")])
def test_optimizer_state_dict_keys_match(name, kw):
    _, topt = _run_optimizer(torch, name, kw, 2)
    _, dopt = _run_optimizer(dg, name, kw, 2)
    ts, ds = topt.state_dict(), dopt.state_dict()
    assert sorted(ts["state"]) == sorted(ds["state"])
    for k in ts["state"]:
        assert sorted(ts["state"][k]) == sorted(ds["state"][k])
        for n in ts["state"][k]:
            close(ts["state"][k][n], ds["state"][k][n], atol=1e-5)
    assert set(ts["param_groups"][0]) - set(ds["param_groups"][0]) <= {"decoupled_weight_decay"}


# -- schedulers ------------------------------------------------------------------------
SCHEDS = [
    ("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5, 5, 9])),
    ("ExponentialLR", dict(gamma=0.9)), ("CosineAnnealingLR", dict(T_max=7, eta_min=0.001)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1 / (e + 1))),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=25)),
    ("OneCycleLR", dict(max_lr=[1.0], total_steps=25, anneal_strategy="linear",
                        three_phase=True)),
]


@pytest.mark.parametrize("name,kw", SCHEDS)
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_schedulers(name, kw, opt):
    out = []
    for lib in (torch, dg):
        p = lib.nn.Parameter(lib.ones(1))
        o = getattr(lib.optim, opt)([p], lr=0.1, **({"momentum": 0.9} if opt == "SGD" else {}))
        s = getattr(lib.optim.lr_scheduler, name)(o, **kw)
        lrs = []
        for _ in range(24):
            p.grad = lib.ones(1)
            o.step()
            s.step()
            lrs.append((s.get_last_lr()[0], o.param_groups[0].get("momentum"),
                        o.param_groups[0].get("betas")))
        out.append(lrs)
    for a, b in zip(*out):
        assert a[0] == pytest.approx(b[0], rel=1e-9, abs=1e-12)
        assert a[1:] == pytest.approx(b[1:]) if a[1] is not None else a[2] == b[2] or \
            a[2] == pytest.approx(b[2])


def test_reduce_lr_on_plateau():
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.7, 0.7, 0.7, 0.7]
    out = []
    for lib in (torch, dg):
        o = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=1.0)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, cooldown=1, factor=0.5,
                                                     min_lr=0.1)
        lrs = []
        for m in metrics:
            s.step(m)
            lrs.append(s.get_last_lr()[0])
        out.append(lrs)
    assert out[0] == out[1]


# -- data ------------------------------------------------------------------------------
def test_default_collate_matches():
    samples = [{"x": np.ones(2, np.float32) * i, "y": i, "z": float(i), "s": "a",
                "t": (i, [i, i])} for i in range(3)]
    tb = torch.utils.data.default_collate(samples)
    db = dgdata.default_collate(samples)
    for k in ("x", "y", "z"):
        assert str(tb[k].dtype) == str(db[k].dtype)
        close(tb[k], db[k])
    assert tb["s"] == db["s"]
    close(tb["t"][0], db["t"][0])
    close(tb["t"][1][1], db["t"][1][1])


def test_dataloader_sequential_matches():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    tl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(x)),
                                     batch_size=4, drop_last=False)
    dl = dgdata.DataLoader(dgdata.TensorDataset(dg.tensor(x)), batch_size=4)
    assert len(tl) == len(dl)
    for a, b in zip(tl, dl):
        close(a[0], b[0])
    for lib, mod in ((torch, torch.utils.data), (dg, dgdata)):
        with pytest.raises(ValueError, match="batch_size=0"):
            mod.DataLoader(mod.TensorDataset(lib.tensor(x)), batch_size=0)
