"""save/load: tensors, module and optimizer state dicts, nested containers; loading never
runs code; foreign, truncated or corrupt files raise errors naming the file; atomic saves."""
import os
import pickle
import threading
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import dyngrad as torch
from dyngrad import serialization


def test_tensors_and_nested(tmp_path):
    p = tmp_path / "x.pt"
    obj = {"a": torch.arange(6).reshape(2, 3), "b": [torch.ones(2, dtype=torch.float64), 3,
                                                      "s", None, 1.5, True],
           "c": {"d": (torch.zeros(1, dtype=torch.bool), float("inf"))}, 7: "int key"}
    torch.save(obj, p)
    out = torch.load(p, weights_only=True)
    assert out["a"].dtype == torch.int64 and out["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert out["b"][0].dtype == torch.float64 and out["b"][1:] == [3, "s", None, 1.5, True]
    assert isinstance(out["c"]["d"], tuple) and out["c"]["d"][1] == float("inf")
    assert out[7] == "int key"


def test_module_and_optimizer_state(tmp_path):
    m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    opt = torch.optim.Adam(m.parameters(), lr=0.01)
    m(torch.randn(4, 3)).sum().backward()
    opt.step()
    p = tmp_path / "ckpt.pt"
    torch.save({"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 3}, p)
    ck = torch.load(p)
    assert isinstance(ck["model"], OrderedDict) and list(ck["model"]) == list(m.state_dict())
    m2 = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Tanh(), torch.nn.Linear(2, 1))
    m2.load_state_dict(ck["model"])
    np.testing.assert_array_equal(m2[0].weight.detach().numpy(), m[0].weight.detach().numpy())
    opt2 = torch.optim.Adam(m2.parameters(), lr=0.5)
    opt2.load_state_dict(ck["opt"])
    assert opt2.param_groups[0]["lr"] == 0.01 and ck["epoch"] == 3
    np.testing.assert_array_equal(opt2.state[m2[0].weight]["exp_avg"].numpy(),
                                  opt.state[m[0].weight]["exp_avg"].numpy())


def _bad(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(RuntimeError) as e:
        torch.load(p)
    assert name in str(e.value)
    return str(e.value)


class Boom:
    def __reduce__(self):
        return (os.system, ("touch should-not-exist",))


def test_foreign_and_corrupt_files_never_run_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "pickle" in _bad(tmp_path, "p.pkl", pickle.dumps(Boom()))
    assert not (tmp_path / "should-not-exist").exists()
    zp = tmp_path / "z.zip"
    with zipfile.ZipFile(zp, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(Boom()))
    assert "zip" in _bad(tmp_path, "t.pt", zp.read_bytes())
    good = tmp_path / "good.pt"
    torch.save({"w": torch.ones(100)}, good)
    blob = good.read_bytes()
    assert "truncated" in _bad(tmp_path, "trunc.pt", blob[:len(blob) // 2])
    assert "too short" in _bad(tmp_path, "tiny.pt", b"abc")
    corrupt = bytearray(blob)
    corrupt[8:20] = b"\xff" * 12
    _bad(tmp_path, "hdr.pt", bytes(corrupt))
    _bad(tmp_path, "rand.pt", np.random.RandomState(0).bytes(4096))


def test_failed_save_leaves_existing_file(tmp_path, monkeypatch):
    p = tmp_path / "keep.pt"
    torch.save({"v": torch.ones(3)}, p)
    before = p.read_bytes()
    with pytest.raises(TypeError, match="object"):
        torch.save({"v": torch.zeros(3), "deep": [{"x": threading.Lock()}]}, p)
    assert p.read_bytes() == before

    real_replace = os.replace

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(serialization.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        torch.save({"v": torch.zeros(3)}, p)
    monkeypatch.setattr(serialization.os, "replace", real_replace)
    assert p.read_bytes() == before
    assert [f.name for f in tmp_path.iterdir()] == ["keep.pt"]
    assert torch.load(p)["v"].tolist() == [1.0, 1.0, 1.0]


def test_file_objects_and_missing(tmp_path):
    import io
    buf = io.BytesIO()
    torch.save([torch.ones(2)], buf)
    buf.seek(0)
    assert torch.load(buf)[0].tolist() == [1.0, 1.0]
    with pytest.raises(FileNotFoundError):
        torch.load(tmp_path / "nope.pt")


def test_zero_dim_and_non_contiguous_tensors_round_trip(tmp_path):
    """0-d tensors keep shape () and transposed views are saved by value."""
    import dyngrad as torch
    p = tmp_path / "t.safetensors"
    src = {"step": torch.tensor(3.0), "wt": torch.arange(6.0).view(2, 3).t()}
    torch.save(src, p)
    back = torch.load(p)
    assert back["step"].shape == () and back["step"].item() == 3.0
    assert torch.equal(back["wt"], src["wt"])


def test_optimizer_state_round_trip_continues_identically(tmp_path):
    """An Adam state saved and loaded into a fresh optimizer steps exactly as the original."""
    import dyngrad as torch
    torch.manual_seed(0)
    w1 = torch.nn.Parameter(torch.randn(3))
    w2 = torch.nn.Parameter(w1.detach().clone())
    o1 = torch.optim.Adam([w1], lr=0.1)
    (w1 * w1).sum().backward()
    o1.step()
    torch.save(o1.state_dict(), tmp_path / "opt")
    with torch.no_grad():
        w2.copy_(w1)
    o2 = torch.optim.Adam([w2], lr=0.1)
    o2.load_state_dict(torch.load(tmp_path / "opt"))
    for w, o in ((w1, o1), (w2, o2)):
        o.zero_grad()
        (w * w).sum().backward()
        o.step()
    assert torch.equal(w1, w2)


def test_saved_file_gets_normal_permissions(tmp_path):
    """The atomic save's private temporary file does not leave the checkpoint private; an
    existing file keeps its mode."""
    import os
    import dyngrad as torch
    p = tmp_path / "m.safetensors"
    umask = os.umask(0o022)
    try:
        torch.save({"w": torch.ones(2)}, p)
        assert os.stat(p).st_mode & 0o777 == 0o644
        os.chmod(p, 0o640)
        torch.save({"w": torch.zeros(2)}, p)
        assert os.stat(p).st_mode & 0o777 == 0o640
    finally:
        os.umask(umask)
