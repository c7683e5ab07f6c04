"""torch.save of whole objects (a model, a user's class) and torch.load's weights-only rules
with torch.serialization.safe_globals / add_safe_globals, against PyTorch."""
import io
import os
import pickle
import subprocess
import sys
import threading
from collections import OrderedDict
from pathlib import Path

import pytest

import dyngrad as dg
from dyngrad.serialization import CheckpointError, WeightsOnlyError

torch = pytest.importorskip("torch")


# --- the examples' models (word_language_model's RNNModel, super_resolution's Net) ----------
class RNNModel(dg.nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.ntoken = ntoken
        self.drop = dg.nn.Dropout(dropout)
        self.encoder = dg.nn.Embedding(ntoken, ninp)
        self.rnn = getattr(dg.nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = dg.nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return dg.nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


class Net(dg.nn.Module):
    def __init__(self, upscale_factor):
        super().__init__()
        self.relu = dg.nn.ReLU()
        self.conv1 = dg.nn.Conv2d(1, 8, (5, 5), (1, 1), (2, 2))
        self.conv2 = dg.nn.Conv2d(8, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = dg.nn.PixelShuffle(upscale_factor)
        dg.nn.init.orthogonal_(self.conv1.weight, dg.nn.init.calculate_gain("relu"))

    def forward(self, x):
        return self.pixel_shuffle(self.conv2(self.relu(self.conv1(x))))


RNN_SAFE = [RNNModel, dg.nn.modules.dropout.Dropout, dg.nn.modules.linear.Linear,
            dg.nn.modules.rnn.GRU, dg.nn.modules.rnn.LSTM, dg.nn.modules.rnn.RNN,
            dg.nn.modules.sparse.Embedding]
NET_SAFE = [Net, dg.nn.modules.activation.ReLU, dg.nn.modules.conv.Conv2d,
            dg.nn.modules.pixelshuffle.PixelShuffle]


class Plain:
    """A user's class holding a tensor (the same class for both libraries)."""

    def __init__(self, t=None):
        self.t, self.name = t, "plain"


class Stateful:
    calls = 0

    def __init__(self, v):
        self.v = v

    def __getstate__(self):
        return {"v": self.v}

    def __setstate__(self, state):
        type(self).calls += 1
        self.v, self.restored = state["v"], True


class Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.fixture(autouse=True)
def _no_leftover_allowlist():
    dg.serialization.clear_safe_globals()
    yield
    dg.serialization.clear_safe_globals()


def _roundtrip(obj, safe, **kw):
    buf = io.BytesIO()
    dg.save(obj, buf)
    buf.seek(0)
    with dg.serialization.safe_globals(safe):
        return dg.load(buf, **kw)


# --- whole modules ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_rnn_model_roundtrip_with_safe_globals(tmp_path, kind):
    m = RNNModel(kind, 11, 6, 5, 2, 0.2).eval()
    p = tmp_path / "model.pt"
    with open(p, "wb") as f:                  # as word_language_model/main.py saves it
        dg.save(m, f)
    with open(p, "rb") as f:
        with dg.serialization.safe_globals(RNN_SAFE):
            m2 = dg.load(f)
    assert dg.serialization.get_safe_globals() == []
    assert type(m2) is RNNModel and type(m2.rnn) is type(m.rnn) and not m2.training
    m2.rnn.flatten_parameters()
    x = dg.randint(0, 11, (4, 3))
    a, _ = m(x, m.init_hidden(3))
    b, _ = m2(x, m2.init_hidden(3))
    assert dg.equal(a, b)
    for (n1, p1), (n2, p2) in zip(m.named_parameters(), m2.named_parameters()):
        assert n1 == n2 and type(p2) is dg.nn.Parameter and p2.requires_grad
        assert dg.equal(p1, p2)
    b.sum().backward()                         # the loaded model trains
    assert m2.decoder.weight.grad is not None


def test_super_resolution_net_roundtrip(tmp_path):
    m = Net(2)
    p = tmp_path / "model_epoch_1.pth"
    dg.save(m, p)                              # as super_resolution/main.py saves it
    with open(p, "rb") as f:
        with dg.serialization.safe_globals(NET_SAFE):
            m2 = dg.load(f)
    x = dg.rand(1, 1, 6, 5)
    assert m2(x).shape == (1, 1, 12, 10) and dg.equal(m(x), m2(x))
    assert m2.state_dict().keys() == m.state_dict().keys()


def test_legacy_format_whole_module(tmp_path):
    m = Net(2)
    dg.save(m, tmp_path / "m.pt", _use_new_zipfile_serialization=False)
    with dg.serialization.safe_globals(NET_SAFE):
        m2 = dg.load(tmp_path / "m.pt")
    x = dg.rand(1, 1, 4, 4)
    assert dg.equal(m(x), m2(x))


def test_refused_without_allowlist_like_pytorch(tmp_path):
    p = tmp_path / "m.pt"
    dg.save(Net(2), p)
    with pytest.raises(pickle.UnpicklingError) as e:
        dg.load(p)
    assert isinstance(e.value, WeightsOnlyError) and isinstance(e.value, CheckpointError)
    msg = str(e.value)
    name = f"{__name__}.Net"
    assert msg.startswith(f"{p}: Weights only load failed. This file can still be loaded")
    assert (f"WeightsUnpickler error: Unsupported global: GLOBAL {name} was not an allowed "
            f"global by default. Please use `torch.serialization.add_safe_globals([{name}])` "
            f"or the `torch.serialization.safe_globals([{name}])` context manager") in msg
    # allowlisting the model but not its layers names the first layer class met
    with dg.serialization.safe_globals([Net]):
        with pytest.raises(WeightsOnlyError, match="GLOBAL dyngrad.nn.modules.activation.ReLU"):
            dg.load(p)


def _refusal(lib, obj):
    """The UnpicklingError of ``lib.load`` (weights-only) of what ``lib.save`` wrote."""
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError) as e:
        lib.load(buf)
    return e.value


@pytest.mark.parametrize("make", [
    lambda lib: {"x": Plain(lib.ones(2))},               # a class not allowlisted
    lambda lib: [Evil("never-made")],                    # a blocked module (posix.system)
    lambda lib: {"f": print},                            # a builtin: shown as "print"
])
def test_messages_match_pytorch(make, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ref = str(_refusal(torch, make(torch)))
    msg = str(_refusal(dg, make(dg)))
    prefix = "<file object>: "          # dyngrad names the file, and adds a last line
    assert msg.startswith(prefix)
    assert msg[len(prefix):msg.index("\n\n(dyngrad read the pickle")] == ref
    assert os.listdir(tmp_path) == []


# --- nothing runs ------------------------------------------------------------------------------
def test_malicious_pickle_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Stateful.calls = 0
    p = tmp_path / "evil.pt"
    dg.save([Stateful(dg.ones(1)), Evil("pwned")], p)
    for allow, refused in (([], "Stateful"), ([Stateful], "posix.system|nt.system"),
                           ([Stateful, os.system], "whose module (posix|nt) is blocked")):
        with dg.serialization.safe_globals(allow):      # os is blocked even if listed
            with pytest.raises(WeightsOnlyError, match=refused):
                dg.load(p)
    # weights_only=False still refuses what runs commands (PyTorch would run it)
    with pytest.raises(WeightsOnlyError, match="runs commands or code"):
        dg.load(p, weights_only=False)
    assert not (tmp_path / "pwned").exists()
    assert Stateful.calls == 0          # the allowlisted object before it was never built


def test_allowlisted_class_args_are_checked_before_construction(tmp_path):
    Stateful.calls = 0
    buf = io.BytesIO()
    dg.save({"a": Stateful(dg.ones(2)), "b": Plain()}, buf)
    buf.seek(0)
    with dg.serialization.safe_globals([Stateful]):
        with pytest.raises(WeightsOnlyError, match=f"GLOBAL {__name__}.Plain"):
            dg.load(buf)
    assert Stateful.calls == 0
    buf.seek(0)
    with dg.serialization.safe_globals([Stateful, Plain]):
        out = dg.load(buf)
    assert Stateful.calls == 1 and out["a"].restored and dg.equal(out["a"].v, dg.ones(2))
    assert type(out["b"]) is Plain and out["b"].t is None


# --- the allowlist API -----------------------------------------------------------------------
def test_safe_globals_api():
    ser = dg.serialization
    assert ser.get_safe_globals() == []
    ser.add_safe_globals([Plain])
    with ser.safe_globals([Stateful]):
        assert set(ser.get_safe_globals()) == {Plain, Stateful}
    assert ser.get_safe_globals() == [Plain]
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
    assert dg.serialization is ser and dg.load is ser.load


def test_safe_globals_name_pairs(tmp_path):
    buf = io.BytesIO()
    dg.save({"x": Plain(dg.ones(1))}, buf)

    class Other:
        pass

    buf.seek(0)
    with dg.serialization.safe_globals([(Other, f"{__name__}.Plain")]):
        out = dg.load(buf)       # the name in the checkpoint maps to the object given
    assert type(out["x"]) is Other and dg.equal(out["x"].t, dg.ones(1))
    for bad, exc in [((Plain, "a", "b"), ValueError), ((Plain, 3), TypeError)]:
        buf.seek(0)
        with dg.serialization.safe_globals([bad]):
            with pytest.raises(exc):
                dg.load(buf)
        buf.seek(0)
        with torch.serialization.safe_globals([bad]):
            with pytest.raises(exc):
                torch.load(buf)


def test_weights_only_defaults_like_pytorch(tmp_path, monkeypatch):
    p = tmp_path / "t.pt"
    dg.save({"w": dg.ones(2)}, p)
    for lib in (torch, dg):
        with pytest.raises(RuntimeError, match="Can not safely load weights when explicit "
                                               "pickle_module is specified"):
            lib.load(p, pickle_module=pickle, weights_only=True)
        assert lib.load(p, pickle_module=pickle)["w"].tolist() == [1.0, 1.0]
        with pytest.warns(UserWarning, match=r"pickle_load_args only works if "
                                             r"`weights_only=False`."):
            lib.load(p, encoding="utf-8")
    q = tmp_path / "m.pt"
    dg.save(Net(2), q)
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning, match="TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected"):
        assert type(dg.load(q)) is Net
    with pytest.raises(WeightsOnlyError):
        dg.load(q, weights_only=True)
    monkeypatch.setenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "1")
    with pytest.raises(RuntimeError, match="Only one of"):
        dg.load(q)


# --- weights_only=False ----------------------------------------------------------------------
def test_weights_only_false_loads_whole_module(tmp_path):
    m = RNNModel("GRU", 7, 4, 4, 1, 0.0)
    dg.save(m, tmp_path / "m.pt")
    m2 = dg.load(tmp_path / "m.pt", weights_only=False)
    assert type(m2) is RNNModel and dg.equal(m2.decoder.weight, m.decoder.weight)
    assert dg.serialization.get_safe_globals() == []


def test_whole_pytorch_module_cannot_load_into_dyngrad(tmp_path):
    torch.save(torch.nn.Linear(2, 2), tmp_path / "t.pt")
    with pytest.raises(WeightsOnlyError, match="torch.nn.modules.linear.Linear"):
        dg.load(tmp_path / "t.pt")
    with pytest.raises(WeightsOnlyError, match="one of PyTorch's own classes"):
        dg.load(tmp_path / "t.pt", weights_only=False)


# --- interoperation with PyTorch ---------------------------------------------------------------
def test_dyngrad_checkpoint_with_objects_loads_in_pytorch(tmp_path):
    lin = dg.nn.Linear(3, 2)
    p = tmp_path / "ckpt.pt"
    dg.save({"model": lin.state_dict(), "cfg": Plain(dg.arange(3.0)),
             "st": Stateful(dg.ones(2)), "epoch": 3}, p)
    with torch.serialization.safe_globals([Plain, Stateful]):
        out = torch.load(p)
    assert isinstance(out["model"], OrderedDict) and list(out["model"]) == ["weight", "bias"]
    assert out["model"]["weight"].tolist() == lin.weight.tolist()
    assert isinstance(out["cfg"].t, torch.Tensor) and out["cfg"].t.tolist() == [0.0, 1.0, 2.0]
    assert out["st"].restored and out["epoch"] == 3
    out = torch.load(p, weights_only=False)
    assert out["st"].v.tolist() == [1.0, 1.0]
    # a plain state dict, loaded weights-only with no allowlist
    dg.save(lin.state_dict(), tmp_path / "sd.pt")
    sd = torch.load(tmp_path / "sd.pt")
    tl = torch.nn.Linear(3, 2)
    tl.load_state_dict(sd)
    assert tl(torch.ones(3)).tolist() == pytest.approx(lin(dg.ones(3)).tolist(), abs=1e-6)


def test_pytorch_checkpoint_with_objects_loads_in_dyngrad(tmp_path):
    tl = torch.nn.Linear(3, 2)
    p = tmp_path / "ckpt.pt"
    shared = torch.arange(6.0)
    torch.save({"model": tl.state_dict(), "cfg": Plain(shared[2:5]), "st": Stateful(shared),
                "size": torch.Size([2, 3]), "dtype": torch.float64}, p)
    with pytest.raises(WeightsOnlyError, match=f"GLOBAL {__name__}.Plain"):
        dg.load(p)
    with dg.serialization.safe_globals([Plain, Stateful]):
        out = dg.load(p)
    assert type(out["cfg"].t) is dg.Tensor and out["cfg"].t.tolist() == [2.0, 3.0, 4.0]
    assert out["st"].restored and out["size"] == (2, 3) and out["dtype"] is dg.float64
    out["st"].v[3] = 100.0                  # views of one storage stay views of one array
    assert out["cfg"].t.tolist() == [2.0, 100.0, 4.0]
    lin = dg.nn.Linear(3, 2)
    lin.load_state_dict(out["model"])
    assert lin(dg.ones(3)).tolist() == pytest.approx(tl(torch.ones(3)).tolist(), abs=1e-6)
    out = dg.load(p, weights_only=False)
    assert type(out["cfg"]) is Plain and type(out["cfg"].t) is dg.Tensor


# --- failed saves ----------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [lambda: threading.Lock(), lambda: (lambda: 0)])
def test_failed_save_of_object_leaves_old_file(tmp_path, bad):
    p = tmp_path / "m.pt"
    dg.save(Net(2), p)
    before = p.read_bytes()
    m = Net(2)
    m.extra = bad()
    with pytest.raises((TypeError, pickle.PicklingError, AttributeError)):
        dg.save(m, p)
    assert p.read_bytes() == before and os.listdir(tmp_path) == ["m.pt"]
    with dg.serialization.safe_globals(NET_SAFE):
        assert type(dg.load(p)) is Net


def test_unpicklable_object_errors_like_pytorch():
    for lib in (torch, dg):
        with pytest.raises(TypeError, match="cannot pickle '_thread.lock' object"):
            lib.save({"lock": threading.Lock()}, io.BytesIO())
    with pytest.raises(pickle.PicklingError):
        dg.save([lambda: 0], io.BytesIO())


# --- the examples' own code paths ---------------------------------------------------------------
def _examples() -> Path | None:
    for c in (Path("/tmp/pytorch-examples"), Path(__file__).parent / "pytorch-examples"):
        if (c / "word_language_model" / "model.py").exists():
            return c
    return None


_WLM = r"""
import sys
import dyngrad, dyngrad.nn, dyngrad.nn.functional, dyngrad.nn.init
sys.modules.update({"torch": dyngrad, "torch.nn": dyngrad.nn,
                    "torch.nn.functional": dyngrad.nn.functional,
                    "torch.nn.init": dyngrad.nn.init})
sys.path.insert(0, sys.argv[1] + "/word_language_model")
sys.path.insert(1, sys.argv[1] + "/super_resolution")
import torch
import model
from model import RNNModel, TransformerModel, PositionalEncoding
for kind in ["LSTM", "Transformer"]:
    if kind == "Transformer":
        m = TransformerModel(20, 8, 2, 8, 2, 0.2)
        safe_globals = [PositionalEncoding, TransformerModel, torch.nn.functional.relu,
            torch.nn.modules.activation.MultiheadAttention, torch.nn.modules.container.ModuleList,
            torch.nn.modules.dropout.Dropout, torch.nn.modules.linear.Linear,
            torch.nn.modules.linear.NonDynamicallyQuantizableLinear,
            torch.nn.modules.normalization.LayerNorm, torch.nn.modules.sparse.Embedding,
            torch.nn.modules.transformer.TransformerEncoder,
            torch.nn.modules.transformer.TransformerEncoderLayer]
    else:
        m = RNNModel(kind, 20, 8, 8, 2, 0.2)
        safe_globals = [RNNModel, torch.nn.modules.dropout.Dropout,
            torch.nn.modules.linear.Linear, torch.nn.modules.rnn.GRU, torch.nn.modules.rnn.LSTM,
            torch.nn.modules.rnn.RNN, torch.nn.modules.sparse.Embedding]
    m.eval()
    with open(sys.argv[2], "wb") as f:
        torch.save(m, f)
    with open(sys.argv[2], "rb") as f:
        with torch.serialization.safe_globals(safe_globals):
            m2 = torch.load(f)
    x = torch.randint(0, 20, (5, 2))
    if kind == "Transformer":
        ok = torch.equal(m(x), m2(x))
    else:
        m2.rnn.flatten_parameters()
        ok = torch.equal(m(x, m.init_hidden(2))[0], m2(x, m2.init_hidden(2))[0])
    print(kind, type(m2).__name__, ok)
del sys.modules["model"]
sys.path.pop(0)
from model import Net
torch.save(Net(upscale_factor=2), sys.argv[2])
with open(sys.argv[2], "rb") as f:
    safe_globals = [Net, torch.nn.modules.activation.ReLU, torch.nn.modules.conv.Conv2d,
                    torch.nn.modules.pixelshuffle.PixelShuffle]
    with torch.serialization.safe_globals(safe_globals):
        model = torch.load(f)
print("Net", type(model).__name__, tuple(model(torch.rand(1, 1, 4, 4)).shape))
"""


def test_examples_save_and_load_code(tmp_path):
    root = _examples()
    if root is None:
        pytest.skip("pytorch/examples is not checked out")
    script = tmp_path / "run.py"
    script.write_text(_WLM)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, str(script), str(root), str(tmp_path / "m.pt")],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split("\n")[:3] == ["LSTM RNNModel True",
                                          "Transformer TransformerModel True",
                                          "Net Net (1, 1, 8, 8)"]


def test_activation_module_paths_are_the_real_classes():
    mods = dg.nn.modules
    assert mods.activation.MultiheadAttention is dg.nn.MultiheadAttention
    assert issubclass(mods.linear.NonDynamicallyQuantizableLinear, mods.linear.Linear)
    assert type(dg.nn.MultiheadAttention(4, 2).out_proj) is \
        mods.linear.NonDynamicallyQuantizableLinear
    for path in ("sparse.Embedding", "transformer.TransformerEncoderLayer",
                 "pixelshuffle.PixelShuffle", "rnn.LSTM", "rnn.GRU", "rnn.RNN",
                 "container.ModuleList", "normalization.LayerNorm", "dropout.Dropout"):
        sub, name = path.split(".")
        assert getattr(getattr(mods, sub), name) is getattr(dg.nn, name)


def test_get_unsafe_globals_in_checkpoint(tmp_path):
    p = tmp_path / "m.pt"
    dg.save(Net(2), p)
    names = {f"{__name__}.Net", "dyngrad.nn.modules.activation.ReLU",
             "dyngrad.nn.modules.conv.Conv2d", "dyngrad.nn.modules.pixelshuffle.PixelShuffle"}
    assert set(dg.serialization.get_unsafe_globals_in_checkpoint(p)) == names
    with dg.serialization.safe_globals([Net]):
        assert set(dg.serialization.get_unsafe_globals_in_checkpoint(p)) == \
            names - {f"{__name__}.Net"}
    dg.save({"w": dg.ones(2)}, p)
    assert dg.serialization.get_unsafe_globals_in_checkpoint(p) == []
    torch.save({"x": Plain(torch.ones(1))}, p)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(p) == \
        dg.serialization.get_unsafe_globals_in_checkpoint(p) == [f"{__name__}.Plain"]
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by "
                                         "torch.save"):
        dg.serialization.get_unsafe_globals_in_checkpoint(io.BytesIO(b"\x80\x02N."))


def test_numpy_arrays_in_objects_pickle_as_numpy(tmp_path):
    p = tmp_path / "o.pt"
    o = Plain(dg.arange(4.0).flip(0))
    o.mean = __import__("numpy").ones(2)
    dg.save(o, p)
    with dg.serialization.safe_globals([Plain]):
        with pytest.raises(WeightsOnlyError, match="numpy"):   # as PyTorch: not by default
            dg.load(p)
    out = dg.load(p, weights_only=False)
    assert type(out.mean).__name__ == "ndarray" and out.t.tolist() == [3.0, 2.0, 1.0, 0.0]
    assert torch.load(p, weights_only=False).t.tolist() == [3.0, 2.0, 1.0, 0.0]


class MyTensor(dg.Tensor):
    pass


def test_tensor_attributes_and_subclasses_like_pytorch(tmp_path):
    p = tmp_path / "t.pt"
    t = dg.arange(3.0)
    t.note = "hi"
    w = dg.nn.Parameter(dg.ones(2))
    w.tag = 7
    dg.save({"t": t, "w": w}, p)
    for out in (dg.load(p), torch.load(p)):
        assert out["t"].note == "hi" and out["t"].tolist() == [0.0, 1.0, 2.0]
        assert out["w"].tag == 7 and out["w"].requires_grad
    assert type(dg.load(p)["w"]) is dg.nn.Parameter
    tt = torch.arange(2.0)
    tt.note = {"k": 1}
    torch.save([tt], p)
    got = dg.load(p)[0]
    assert type(got) is dg.Tensor and got.note == {"k": 1}
    # a subclass is a global to allowlist, as in PyTorch
    dg.save(MyTensor([1.0, 1.0]), p)
    with pytest.raises(WeightsOnlyError, match=f"GLOBAL {__name__}.MyTensor"):
        dg.load(p)
    with dg.serialization.safe_globals([MyTensor]):
        back = dg.load(p)
    assert type(back) is MyTensor and back.tolist() == [1.0, 1.0]


class _Gadget:
    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def test_weights_only_false_loads_configs_but_refuses_code_gadgets(tmp_path, monkeypatch):
    import argparse
    import pydoc
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "c.pt"
    cfg = {"args": argparse.Namespace(lr=0.1), "path": Path("runs/1"), "w": dg.ones(1)}
    dg.save(cfg, p)
    out = dg.load(p, weights_only=False)
    assert out["args"].lr == 0.1 and out["path"] == Path("runs/1")
    with pytest.raises(WeightsOnlyError, match="argparse.Namespace"):
        dg.load(p)
    with dg.serialization.safe_globals([argparse.Namespace, type(Path("."))]):
        assert dg.load(p)["args"] == argparse.Namespace(lr=0.1)
    for gadget, name in [(_Gadget(eval, "print(1)"), "builtins.eval"),
                         (_Gadget(pydoc.locate, "os.system"), "pydoc.locate"),
                         (_Gadget(subprocess.call, ["true"]), "subprocess.call")]:
        dg.save({"x": gadget}, p)
        with pytest.raises(WeightsOnlyError, match=name):
            dg.load(p, weights_only=False)
    assert os.listdir(tmp_path) == ["c.pt"]


def test_tied_weights_stay_tied(tmp_path):
    m = RNNModel("LSTM", 9, 5, 5, 1, 0.0)
    m.decoder.weight = m.encoder.weight          # word_language_model's --tied
    dg.save(m, tmp_path / "m.pt")
    with dg.serialization.safe_globals(RNN_SAFE):
        m2 = dg.load(tmp_path / "m.pt")
    assert m2.decoder.weight is m2.encoder.weight
    assert len(list(m2.parameters())) == len(list(m.parameters()))
