"""``dyngrad.utils.tensorboard.SummaryWriter``: written with dyngrad, read back with
TensorBoard's own readers, and compared with ``torch.utils.tensorboard`` where torch is there."""
import glob
import io
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")

import dyngrad  # noqa: E402
from dyngrad import nn  # noqa: E402
from dyngrad.utils.tensorboard import SummaryWriter  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402
from tensorboard.backend.event_processing import event_file_loader  # noqa: E402
from tensorboard.compat.proto.graph_pb2 import GraphDef  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))


def events(logdir):
    """Every event of every event file directly in ``logdir``, in file order."""
    out = []
    for f in sorted(glob.glob(os.path.join(str(logdir), "events.out.tfevents.*"))):
        out.extend(event_file_loader.LegacyEventFileLoader(f).Load())
    return out


def summaries(logdir):
    """(step, Summary.Value) of every summary value in ``logdir``."""
    return [(e.step, v) for e in events(logdir) if e.HasField("summary") for v in e.summary.value]


def accumulator(logdir):
    acc = ea.EventAccumulator(str(logdir), size_guidance={k: 0 for k in ea.DEFAULT_SIZE_GUIDANCE})
    acc.Reload()
    return acc


def decode_png(data):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(data)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc2(dyngrad.relu(self.fc1(x)))


# -- import behaviour ---------------------------------------------------------------------

def test_import_dyngrad_does_not_import_tensorboard():
    code = ("import sys, dyngrad\n"
            "assert 'tensorboard' not in sys.modules\n"
            "assert 'dyngrad.utils.tensorboard' not in sys.modules\n"
            "print(dyngrad.utils.tensorboard.SummaryWriter.__name__)\n"
            "import dyngrad.utils.tensorboard as tb\n"
            "from dyngrad.utils.tensorboard import SummaryWriter, FileWriter\n"
            "assert tb.SummaryWriter is SummaryWriter\n"
            "assert 'torch' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "SummaryWriter"


def test_missing_tensorboard_says_to_install_it():
    code = ("import sys\nsys.modules['tensorboard'] = None\nimport dyngrad\n"
            "try:\n    import dyngrad.utils.tensorboard\n"
            "except ImportError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert "TensorBoard logging requires TensorBoard version 1.15 or above" in r.stdout
    assert "pip install tensorboard" in r.stdout


def test_torch_utils_tensorboard_under_dyngrad_run(tmp_path):
    script = tmp_path / "s.py"
    script.write_text(
        "import torch\nfrom torch.utils.tensorboard import SummaryWriter\n"
        "with SummaryWriter('logs') as w:\n"
        "    w.add_scalar('loss', torch.tensor(0.5), 1)\n"
        "print(SummaryWriter.__module__)\n")
    r = subprocess.run([sys.executable, "-m", "dyngrad", "run", str(script)], cwd=str(tmp_path),
                       env=ENV, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "dyngrad.utils.tensorboard.writer"
    assert accumulator(tmp_path / "logs").Scalars("loss")[0].value == 0.5


# -- writer basics ------------------------------------------------------------------------

def test_default_log_dir_is_runs_datetime_hostname_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    w = SummaryWriter(comment="_lr0.1")
    w.close()
    d = w.get_logdir()
    assert os.path.dirname(d) == "runs"
    name = os.path.basename(d)
    assert re.fullmatch(r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname())
                        + r"_lr0\.1", name), name
    assert glob.glob(os.path.join(tmp_path, d, "events.out.tfevents.*"))


def test_filename_suffix_and_file_version(tmp_path):
    with SummaryWriter(tmp_path, filename_suffix=".dyn") as w:
        w.add_scalar("x", 1.0, 0)
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("events.out.tfevents.")
    assert files[0].endswith(".dyn")
    assert events(tmp_path)[0].file_version == "brain.Event:2"


def test_purge_step_writes_a_restart_marker(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(10):
            w.add_scalar("loss", float(i), i)
    with SummaryWriter(tmp_path, purge_step=5) as w:
        for i in range(5, 8):
            w.add_scalar("loss", 100.0 + i, i)
    ev = [e for f in sorted(glob.glob(str(tmp_path / "events*")), key=os.path.getmtime)
          for e in event_file_loader.LegacyEventFileLoader(f).Load()]
    starts = [e for e in ev if e.HasField("session_log")]
    assert len(starts) == 1 and starts[0].step == 5
    assert starts[0].session_log.status == starts[0].session_log.START
    # TensorBoard drops the old run's steps >= 5 and keeps the new ones
    vals = {s.step: s.value for s in accumulator(tmp_path).Scalars("loss")}
    assert vals == {**{i: float(i) for i in range(5)}, **{i: 100.0 + i for i in range(5, 8)}}


def test_flush_close_and_reuse(tmp_path):
    w = SummaryWriter(tmp_path, flush_secs=1000)
    w.add_scalar("a", 1.0, 0)
    w.flush()
    assert [v.simple_value for _, v in summaries(tmp_path)] == [1.0]
    w.close()
    w.close()  # a second close does nothing
    w.add_scalar("a", 2.0, 1)  # a new event file
    w.close()
    assert len(glob.glob(str(tmp_path / "events*"))) == 2
    assert [s.value for s in accumulator(tmp_path).Scalars("a")] == [1.0, 2.0]


def test_context_manager_closes(tmp_path):
    with SummaryWriter(tmp_path, flush_secs=1000, max_queue=1000) as w:
        w.add_scalar("a", 3.0, 0)
    assert w.all_writers is None
    assert [v.simple_value for _, v in summaries(tmp_path)] == [3.0]


def test_unsupported_method_is_named(tmp_path):
    with SummaryWriter(tmp_path) as w:
        with pytest.raises(AttributeError, match="add_embedding.*not part of it yet"):
            w.add_embedding
        with pytest.raises(AttributeError, match="no attribute 'nope'"):
            w.nope


# -- scalars ------------------------------------------------------------------------------

def test_scalar_values_steps_and_walltime(tmp_path):
    x = dyngrad.tensor(1.5, requires_grad=True) * 2  # a tensor with history
    with SummaryWriter(tmp_path) as w:
        w.add_scalar("loss", x, 0)
        w.add_scalar("loss", np.float32(0.25), 1)
        w.add_scalar("loss", 7, 2, walltime=1234.5)
        w.add_scalar("loss", dyngrad.tensor([4.0]), np.int64(3))
        w.add_scalar("acc", np.array(0.5), 10)
        w.add_scalar("new", 0.125, 4, new_style=True)
        w.add_scalar("new64", 0.1, 5, new_style=True, double_precision=True)
    acc = accumulator(tmp_path)
    loss = acc.Scalars("loss")
    assert [(s.step, s.value) for s in loss] == [(0, 3.0), (1, 0.25), (2, 7.0), (3, 4.0)]
    assert loss[2].wall_time == 1234.5
    assert [(s.step, s.value) for s in acc.Scalars("acc")] == [(10, 0.5)]
    t = acc.Tensors("new")[0]
    assert t.step == 4 and t.tensor_proto.float_val == [0.125]
    assert acc.Tensors("new64")[0].tensor_proto.double_val == [0.1]
    with pytest.raises(AssertionError, match="one element"):
        SummaryWriter(tmp_path / "x").add_scalar("bad", dyngrad.ones(3), 0)


def test_add_scalars_writes_one_run_per_key(tmp_path):
    with SummaryWriter(tmp_path) as w:
        for i in range(3):
            w.add_scalars("loss/all", {"train": dyngrad.tensor(float(i)), "val": 2.0 * i}, i)
    subs = sorted(os.listdir(tmp_path))
    assert [s for s in subs if not s.startswith("events")] == ["loss_all_train", "loss_all_val"]
    tr = accumulator(tmp_path / "loss_all_train").Scalars("loss/all")
    va = accumulator(tmp_path / "loss_all_val").Scalars("loss/all")
    assert [(s.step, s.value) for s in tr] == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert [(s.step, s.value) for s in va] == [(0, 0.0), (1, 2.0), (2, 4.0)]
    assert tr[1].wall_time == va[1].wall_time  # one walltime per call


# -- histograms ---------------------------------------------------------------------------

def test_histogram_buckets(tmp_path):
    rng = np.random.default_rng(0)
    vals = rng.normal(size=1000).astype(np.float32)
    with SummaryWriter(tmp_path) as w:
        w.add_histogram("w", dyngrad.tensor(vals, requires_grad=True), 3)
        w.add_histogram("w10", vals, 4, bins=10)
        w.add_histogram("wmax", vals, 5, bins=100, max_bins=7)
        w.add_histogram_raw("raw", 0, 3, 6, 9, 17, [1, 2, 3], [1, 2, 3], global_step=6)
    h = accumulator(tmp_path).Histograms("w")[0]
    assert h.step == 3
    hv = h.histogram_value
    assert sum(hv.bucket) == 1000 and hv.num == 1000
    assert hv.min == pytest.approx(vals.min()) and hv.max == pytest.approx(vals.max())
    assert hv.sum == pytest.approx(vals.astype(float).sum())
    assert hv.sum_squares == pytest.approx((vals.astype(float) ** 2).sum())
    assert len(hv.bucket) == len(hv.bucket_limit)
    h10 = accumulator(tmp_path).Histograms("w10")[0].histogram_value
    counts, edges = np.histogram(vals.astype(float), bins=10)
    assert list(h10.bucket) == [0] + counts.tolist()  # an empty bucket left of the first
    assert np.allclose(h10.bucket_limit, edges)
    hm = accumulator(tmp_path).Histograms("wmax")[0].histogram_value
    assert sum(hm.bucket) == 1000 and len(hm.bucket) <= 8 + 1
    raw = accumulator(tmp_path).Histograms("raw")[0].histogram_value
    assert list(raw.bucket) == [1, 2, 3] and raw.num == 6
    with pytest.raises(ValueError, match="no element"):
        SummaryWriter(tmp_path / "e").add_histogram("empty", np.zeros(0), 0)


# -- images -------------------------------------------------------------------------------

def test_images_decode_to_the_pixels(tmp_path):
    rng = np.random.default_rng(1)
    chw = rng.random((3, 5, 7)).astype(np.float32)
    hwc_u8 = rng.integers(0, 256, size=(4, 6, 3), dtype=np.uint8)
    hw = rng.random((3, 2))
    with SummaryWriter(tmp_path) as w:
        w.add_image("chw", dyngrad.tensor(chw), 1)
        w.add_image("hwc", hwc_u8, 2, dataformats="HWC")
        w.add_image("hw", hw, 3, dataformats="HW")
        w.add_image("gray", dyngrad.tensor(chw[:1]), 4)
        w.add_image("clip", np.full((3, 2, 2), 2.0), 5)
        w.add_images("batch", rng.random((10, 3, 2, 3)), 6)
    acc = accumulator(tmp_path)

    def img(tag):
        ev = acc.Images(tag)[0]
        return ev, decode_png(ev.encoded_image_string)

    ev, px = img("chw")
    assert (ev.step, ev.height, ev.width) == (1, 5, 7) and px.shape == (5, 7, 3)
    assert np.array_equal(px, (chw.transpose(1, 2, 0) * 255).astype(np.uint8))
    _, px = img("hwc")
    assert np.array_equal(px, hwc_u8)
    _, px = img("hw")
    g = (hw.astype(np.float32) * 255).astype(np.uint8)
    assert np.array_equal(px, np.stack([g, g, g], 2))
    _, px = img("gray")
    assert px.shape == (5, 7, 3) and np.array_equal(px[..., 0], px[..., 2])
    _, px = img("clip")
    assert (px == 255).all()
    ev, px = img("batch")
    assert px.shape == (2 * 2, 8 * 3, 3)  # 8 per row, 2 rows
    with pytest.raises(AssertionError, match="input format"):
        SummaryWriter(tmp_path / "b").add_image("bad", chw, 0, dataformats="HW")


# -- text and hparams ---------------------------------------------------------------------

def test_text(tmp_path):
    with SummaryWriter(tmp_path) as w:
        w.add_text("notes", "**bold** é", 2)
    (step, v), = summaries(tmp_path)
    assert step == 2 and v.tag == "notes/text_summary"
    assert v.metadata.plugin_data.plugin_name == "text"
    assert v.tensor.string_val == ["**bold** é".encode()]
    t = accumulator(tmp_path).Tensors("notes/text_summary")[0]
    assert t.tensor_proto.string_val[0].decode() == "**bold** é"


def test_hparams(tmp_path):
    from tensorboard.plugins.hparams import plugin_data_pb2
    with SummaryWriter(tmp_path) as w:
        w.add_hparams({"lr": 0.1, "bs": 16, "opt": "adam", "wd": dyngrad.tensor([0.5]),
                       "skip": None},
                      {"hparam/accuracy": 0.75, "hparam/loss": dyngrad.tensor(0.5)},
                      hparam_domain_discrete={"opt": ["adam", "sgd"]}, run_name="trial1")
    sub = tmp_path / "trial1"
    vals = summaries(sub)
    by_tag = {v.tag: v for _, v in vals}
    assert {"_hparams_/experiment", "_hparams_/session_start_info",
            "_hparams_/session_end_info"} <= set(by_tag)
    for t in ("_hparams_/experiment", "_hparams_/session_start_info"):
        assert by_tag[t].metadata.plugin_data.plugin_name == "hparams"
    data = plugin_data_pb2.HParamsPluginData.FromString(
        by_tag["_hparams_/session_start_info"].metadata.plugin_data.content)
    hp = data.session_start_info.hparams
    assert hp["lr"].number_value == 0.1 and hp["bs"].number_value == 16
    assert hp["opt"].string_value == "adam" and hp["wd"].number_value == 0.5
    assert "skip" not in hp
    exp = plugin_data_pb2.HParamsPluginData.FromString(
        by_tag["_hparams_/experiment"].metadata.plugin_data.content).experiment
    assert [m.name.tag for m in exp.metric_infos] == ["hparam/accuracy", "hparam/loss"]
    opt = [h for h in exp.hparam_infos if h.name == "opt"][0]
    assert [v.string_value for v in opt.domain_discrete.values] == ["adam", "sgd"]
    acc = accumulator(sub)
    assert acc.Scalars("hparam/accuracy")[0].value == 0.75
    assert acc.Scalars("hparam/loss")[0].value == 0.5
    with pytest.raises(TypeError):
        w.add_hparams([("lr", 1)], {})
    with pytest.raises(ValueError, match="one of int, float, str, bool"):
        w.add_hparams({"f": object()}, {})


# -- graph --------------------------------------------------------------------------------

def graph_of(logdir):
    gd = [e for e in events(logdir) if e.graph_def]
    assert len(gd) == 1
    return GraphDef.FromString(gd[0].graph_def)


def test_graph_nodes_names_and_edges(tmp_path):
    model = Net()
    model.fc2.weight.requires_grad_(False)  # frozen: still drawn, and stays frozen
    model.train()
    x = dyngrad.randn(5, 4)
    with SummaryWriter(tmp_path) as w:
        w.add_graph(model, x)
    assert model.training and not model.fc2.weight.requires_grad and not x.requires_grad
    g = graph_of(tmp_path)
    nodes = {n.name: n for n in g.node}
    assert len(g.node) == 11
    assert nodes["input/x"].op == "IO Node"
    assert [d.size for d in nodes["input/x"].attr["_output_shapes"].list.shape[0].dim] == [5, 4]
    for p in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        m, leaf = p.split(".")
        assert nodes[f"Net/Linear[{m}]/{leaf}"].op == "Parameter"
    mm1 = nodes["Net/Linear[fc1]/AddmmBackward0"]
    assert mm1.op == "AddmmBackward0"
    assert set(mm1.input) == {"input/x", "Net/Linear[fc1]/bias", "Net/Linear[fc1]/TBackward0"}
    assert nodes["Net/Linear[fc1]/TBackward0"].input == ["Net/Linear[fc1]/weight"]
    assert nodes["Net/ReluBackward0"].input == ["Net/Linear[fc1]/AddmmBackward0"]
    assert "Net/ReluBackward0" in nodes["Net/Linear[fc2]/AddmmBackward0"].input
    out = nodes["output/output.1"]
    assert out.op == "IO Node" and out.input == ["Net/Linear[fc2]/AddmmBackward0"]
    assert [d.size for d in out.attr["_output_shapes"].list.shape[0].dim] == [5, 2]
    # every edge names a node
    assert all(i in nodes for n in g.node for i in n.input)
    # the run metadata the graph dashboard reads
    acc = accumulator(tmp_path)
    assert acc.Tags()["graph"] and acc.Tags()["run_metadata"] == ["step1"]
    assert acc.RunMetadata("step1").step_stats.dev_stats[0].device == "/device:CPU:0"


def test_graph_nested_modules_tuple_io_and_integer_input(tmp_path):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

        def forward(self, h):
            for layer in self.layers:
                h = dyngrad.tanh(layer(h))
            return h

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 3)
            self.block = Block()
            self.unused = nn.Linear(3, 3)

        def forward(self, idx, scale):
            h = self.block(self.emb(idx))
            _dead = h * 100  # not part of any output
            return h.sum(), h * scale

    idx = dyngrad.tensor([1, 2, 3])
    with SummaryWriter(tmp_path) as w:
        w.add_graph(Model(), (idx, dyngrad.tensor(2.0)))
    nodes = {n.name: n for n in graph_of(tmp_path).node}
    assert {"input/idx", "input/scale", "output/output.1", "output/output.2"} <= set(nodes)
    assert "Model/Embedding[emb]/weight" in nodes
    assert "Model/Block[block]/ModuleList[layers]/Linear[1]/weight" in nodes
    assert not any("unused" in n for n in nodes)
    mul = nodes[nodes["output/output.2"].input[0]]
    assert mul.op == "MulBackward0" and "input/scale" in mul.input
    assert nodes[nodes["output/output.1"].input[0]].op == "SumBackward0"
    assert sum(n.op == "MulBackward0" for n in nodes.values()) == 1  # the dead one is gone
    emb = [n for n in nodes.values() if n.op == "EmbeddingBackward0"]
    assert len(emb) == 1 and emb[0].input == ["Model/Embedding[emb]/weight"]


def test_graph_of_a_function_and_inplace_on_input(tmp_path):
    w1 = dyngrad.randn(3, 3, requires_grad=True)

    def f(a):
        a.mul_(2)  # in place on the input: retried on the input as given
        return a @ w1

    with SummaryWriter(tmp_path) as w:
        w.add_graph(f, dyngrad.randn(2, 3))
    nodes = {n.name: n for n in graph_of(tmp_path).node}
    assert nodes["input/a"].op == "IO Node"
    assert any(n.op == "MmBackward0" for n in nodes.values())
    assert all(i in nodes for n in nodes.values() for i in n.input)


# -- against torch.utils.tensorboard ------------------------------------------------------

def _values_without_walltime(logdir):
    return [(s, v.SerializeToString(deterministic=True)) for s, v in summaries(logdir)]


def test_same_summaries_as_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter
    rng = np.random.default_rng(2)
    vals = rng.normal(size=500).astype(np.float32)
    img = rng.random((3, 6, 5)).astype(np.float32)

    def log(w, lib):
        w.add_scalar("s", lib.tensor(0.3), 1)
        w.add_scalar("s", 2, 2)
        w.add_scalar("n", lib.tensor(0.7), 3, new_style=True)
        w.add_histogram("h", lib.tensor(vals), 4)
        w.add_histogram("h", lib.tensor(vals), 5, bins="auto")
        w.add_histogram("h", vals, 6, bins=50, max_bins=9)
        w.add_image("i", lib.tensor(img), 7)
        w.add_image("j", (img.transpose(1, 2, 0) * 255).astype(np.uint8), 8, dataformats="HWC")
        w.add_images("k", lib.tensor(rng.random((3, 1, 4, 4)).astype(np.float32)), 9)
        w.add_text("t", "text *md*", 10)
        w.add_tensor("tt", lib.tensor([[1.0, 2.0], [3.0, 4.0]]), 11)
        w.add_hparams({"lr": 0.01, "opt": "sgd", "flag": True}, {"m": 1.5}, run_name="hp")
        w.add_scalars("grp", {"a": 1.0, "b": 2.0}, 12)

    rng = np.random.default_rng(3)
    with SummaryWriter(tmp_path / "dyn") as w:
        log(w, dyngrad)
    rng = np.random.default_rng(3)
    with TorchWriter(str(tmp_path / "torch")) as w:
        log(w, torch)
    for sub in ("", "hp", "grp_a", "grp_b"):
        d = _values_without_walltime(tmp_path / "dyn" / sub)
        t = _values_without_walltime(tmp_path / "torch" / sub)
        assert len(d) == len(t) > 0
        assert d == t, sub


def test_graph_io_nodes_match_torch(tmp_path):
    torch = pytest.importorskip("torch")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 3)
            self.fc2 = torch.nn.Linear(3, 2)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x)))

    with SummaryWriter(tmp_path / "dyn") as w:
        w.add_graph(Net(), dyngrad.randn(5, 4))
    with TorchWriter(str(tmp_path / "torch")) as w:
        w.add_graph(TNet(), torch.randn(5, 4))

    def io(d):
        out = {}
        for n in graph_of(d).node:
            if n.op == "IO Node":
                out[n.name] = [x.size for x in n.attr["_output_shapes"].list.shape[0].dim]
        return out

    assert io(tmp_path / "dyn") == io(tmp_path / "torch") == {"input/x": [5, 4],
                                                             "output/output.1": [5, 2]}
    da, ta = accumulator(tmp_path / "dyn"), accumulator(tmp_path / "torch")
    assert da.Tags()["run_metadata"] == ta.Tags()["run_metadata"]
    assert da.RunMetadata("step1") == ta.RunMetadata("step1")
