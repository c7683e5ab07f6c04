"""Checkpoints travel between dyngrad and PyTorch: ``dyngrad.save`` writes torch.save's zip
format (``torch.load(weights_only=True)`` reads it), ``dyngrad.load`` reads PyTorch's zip and
legacy formats weights-only (a pickle never runs code), safetensors stays available by name."""
import io
import os
import pickle
import random
import struct
import sys
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import dyngrad as dg
from dyngrad import serialization as S
from dyngrad.serialization import CheckpointError, WeightsOnlyError

torch = pytest.importorskip("torch")

DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128"]


def _dg_tensor(name, shape=(2, 3), seed=0):
    rs = np.random.RandomState(seed)
    a = np.asarray(rs.randn(*shape) * 5)
    if name == "bool":
        a = a > 0
    elif name.startswith("complex"):
        a = a + 1j * np.asarray(rs.randn(*shape))
    return dg.tensor(a.astype(name), dtype=getattr(dg, name))


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _same_tensor(d, t):
    """A dyngrad tensor and a torch tensor hold the same dtype, shape, values, grad flag."""
    assert str(d.dtype) == str(t.dtype), (d.dtype, t.dtype)
    assert tuple(d.shape) == tuple(t.shape)
    assert d.requires_grad == t.requires_grad
    np.testing.assert_array_equal(_np(d), t.detach().numpy())


def _torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


def _dg_model():
    dg.manual_seed(0)
    return dg.nn.Sequential(dg.nn.Linear(3, 4), dg.nn.Tanh(), dg.nn.Linear(4, 2))


# --- dyngrad.save -> torch.load -----------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_reads_in_torch(tmp_path, dtype):
    x = {"x": _dg_tensor(dtype), "zero_d": _dg_tensor(dtype, ()),
         "empty": _dg_tensor(dtype, (0, 3))}
    dg.save(x, tmp_path / "x.pt")
    out = torch.load(tmp_path / "x.pt", weights_only=True)
    assert list(out) == list(x)
    for k in x:
        _same_tensor(x[k], out[k])


def test_state_dict_and_general_checkpoint_read_in_torch(tmp_path):
    m = _dg_model()
    opt = dg.optim.Adam(m.parameters(), lr=0.01)
    m(dg.randn(5, 3)).sum().backward()
    opt.step()
    ck = {"epoch": 7, "model_state_dict": m.state_dict(),
          "optimizer_state_dict": opt.state_dict(), "loss": 0.25, "note": "ok"}
    dg.save(ck, tmp_path / "ck.pt")
    out = torch.load(tmp_path / "ck.pt", weights_only=True)
    assert out["epoch"] == 7 and out["loss"] == 0.25 and out["note"] == "ok"
    assert isinstance(out["model_state_dict"], OrderedDict)
    assert list(out["model_state_dict"]) == list(m.state_dict())
    for k, v in m.state_dict().items():
        _same_tensor(v, out["model_state_dict"][k])
    tm = _torch_model()
    tm.load_state_dict(out["model_state_dict"])
    x = np.random.RandomState(1).randn(4, 3).astype(np.float32)
    np.testing.assert_allclose(tm(torch.from_numpy(x)).detach().numpy(),
                               m(dg.tensor(x)).detach().numpy(), rtol=1e-6)
    assert out["optimizer_state_dict"]["param_groups"][0]["lr"] == 0.01


def test_views_share_storage_in_torch(tmp_path):
    a = dg.arange(12.0).reshape(3, 4)
    x = {"a": a, "row": a[1], "t": a.t(), "col": a[:, 2], "alone": a[2, 1:3].clone()}
    dg.save(x, tmp_path / "v.pt")
    out = torch.load(tmp_path / "v.pt", weights_only=True)
    for k in x:
        _same_tensor(x[k], out[k])
    ptr = out["a"].untyped_storage().data_ptr()
    assert all(out[k].untyped_storage().data_ptr() == ptr for k in ("row", "t", "col"))
    assert out["alone"].untyped_storage().data_ptr() != ptr
    out["a"][1, 2] = 100.0
    assert out["row"][2].item() == 100.0 and out["t"][2, 1].item() == 100.0
    # a slice saved alone is stored alone (not the whole array it views)
    big = dg.arange(10_000.0)
    dg.save({"s": big[5:8]}, tmp_path / "s.pt")
    assert os.path.getsize(tmp_path / "s.pt") < 2000
    assert torch.load(tmp_path / "s.pt")["s"].tolist() == [5.0, 6.0, 7.0]


def test_odd_views_are_saved_by_value(tmp_path):
    a = dg.arange(6.0).reshape(2, 3)
    x = {"flip": a.flip(1), "bcast": a[0:1].expand(4, 3),
         "negative_strides": dg.Tensor._make(np.arange(6.0).reshape(2, 3)[::-1, ::-2]),
         "real": dg.Tensor._make((np.arange(4.0) + 1j).real)}
    dg.save(x, tmp_path / "o.pt")
    out = torch.load(tmp_path / "o.pt", weights_only=True)
    for k in x:
        np.testing.assert_array_equal(out[k].numpy(), _np(x[k]))


def test_requires_grad_and_parameters_read_in_torch(tmp_path):
    leaf = dg.randn(3).requires_grad_()
    p = dg.nn.Parameter(dg.randn(2, 2))
    frozen = dg.nn.Parameter(dg.randn(2), requires_grad=False)
    nonleaf = leaf * 2
    dg.save({"leaf": leaf, "p": p, "frozen": frozen, "nonleaf": nonleaf, "plain": dg.ones(1)},
            tmp_path / "g.pt")
    out = torch.load(tmp_path / "g.pt", weights_only=True)
    assert isinstance(out["p"], torch.nn.Parameter) and out["p"].requires_grad
    assert isinstance(out["frozen"], torch.nn.Parameter) and not out["frozen"].requires_grad
    assert type(out["leaf"]) is torch.Tensor and out["leaf"].requires_grad and out["leaf"].is_leaf
    assert out["nonleaf"].requires_grad and not out["plain"].requires_grad
    _same_tensor(p, out["p"])
    _same_tensor(leaf, out["leaf"])
    # and back: dyngrad restores the same kinds
    back = dg.load(tmp_path / "g.pt")
    assert isinstance(back["p"], dg.nn.Parameter) and back["p"].requires_grad
    assert isinstance(back["frozen"], dg.nn.Parameter) and not back["frozen"].requires_grad
    assert back["leaf"].requires_grad and back["leaf"].is_leaf and not back["plain"].requires_grad


def test_plain_values_read_in_torch(tmp_path):
    x = {"size": dg.Size([2, 3]), "device": dg.device("cpu"), "dtype": dg.float16,
         "set": {1, 2}, "tuple": (1, (2.5, None)), "big": 2 ** 80, "neg": -2 ** 40,
         "inf": float("-inf"), "c": 1 + 2j, "bytes": b"\x00\xff", 3: "int key",
         "shared": None, "od": OrderedDict(b=1, a=2)}
    lst = [1, 2]
    x["l1"] = x["l2"] = lst
    dg.save(x, tmp_path / "p.pt")
    out = torch.load(tmp_path / "p.pt", weights_only=True)
    assert out["size"] == torch.Size([2, 3]) and isinstance(out["size"], torch.Size)
    assert out["device"] == torch.device("cpu") and out["dtype"] is torch.float16
    assert out["set"] == {1, 2} and out["tuple"] == (1, (2.5, None))
    assert out["big"] == 2 ** 80 and out["neg"] == -2 ** 40 and out["inf"] == float("-inf")
    assert out["c"] == 1 + 2j and out["bytes"] == b"\x00\xff" and out[3] == "int key"
    assert list(out["od"]) == ["b", "a"] and out["l1"] is out["l2"]
    back = dg.load(tmp_path / "p.pt")
    assert back["size"] == dg.Size([2, 3]) and type(back["size"]) is dg.Size
    assert back["dtype"] is dg.float16 and back["l1"] is back["l2"]
    assert {k: v for k, v in back.items() if k not in ("device",)} == \
        {k: v for k, v in x.items() if k not in ("device",)}


def test_zip_layout_matches_torch(tmp_path):
    """Stored records, data 64-byte aligned, one folder, data.pkl first, pickle protocol 2;
    the same object saves to the same bytes."""
    dg.save({"w": dg.ones(5), "b": dg.zeros(3, dtype=dg.int64)}, tmp_path / "a.pt")
    raw = (tmp_path / "a.pt").read_bytes()
    with zipfile.ZipFile(tmp_path / "a.pt") as z:
        infos = z.infolist()
        assert infos[0].filename == "archive/data.pkl"
        assert z.read("archive/data.pkl")[:2] == b"\x80\x02"
        assert z.read("archive/byteorder") == sys.byteorder.encode()
        for i in infos:
            assert i.compress_type == zipfile.ZIP_STORED
            n, e = struct.unpack("<HH", raw[i.header_offset + 26:i.header_offset + 30])
            assert (i.header_offset + 30 + n + e) % 64 == 0, i.filename
    b = io.BytesIO()
    dg.save({"w": dg.ones(5), "b": dg.zeros(3, dtype=dg.int64)}, b)
    assert b.getvalue() == raw


def test_legacy_format_both_ways(tmp_path):
    x = {"w": dg.arange(4.0), "p": dg.nn.Parameter(dg.ones(2)), "n": 3}
    dg.save(x, tmp_path / "l.pt", _use_new_zipfile_serialization=False)
    assert not zipfile.is_zipfile(tmp_path / "l.pt")
    out = torch.load(tmp_path / "l.pt", weights_only=True)
    assert out["w"].tolist() == [0.0, 1.0, 2.0, 3.0] and isinstance(out["p"], torch.nn.Parameter)
    a = torch.arange(6.0).reshape(2, 3)
    torch.save({"a": a, "row": a[1], "i": torch.tensor([7], dtype=torch.int16)},
               tmp_path / "t.pt", _use_new_zipfile_serialization=False)
    back = dg.load(tmp_path / "t.pt")
    assert back["a"].tolist() == a.tolist() and back["row"].tolist() == [3.0, 4.0, 5.0]
    assert back["i"].dtype == dg.int16 and back["i"].tolist() == [7]
    assert np.shares_memory(back["a"].numpy(), back["row"].numpy())


# --- torch.save -> dyngrad.load -----------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_from_torch(tmp_path, dtype):
    t = torch.from_numpy(_np(_dg_tensor(dtype)).copy())
    torch.save({"x": t, "t": t.t(), "z": t[:0], "s": t[1, 1]}, tmp_path / "x.pt")
    out = dg.load(tmp_path / "x.pt")
    for k, v in {"x": t, "t": t.t(), "z": t[:0], "s": t[1, 1]}.items():
        _same_tensor(out[k], v)


def test_views_from_torch_share_one_array(tmp_path):
    a = torch.arange(12.0).reshape(3, 4)
    torch.save({"a": a, "row": a[1], "t": a.t(), "col": a[:, 2], "ex": a[0:1].expand(2, 4)},
               tmp_path / "v.pt")
    out = dg.load(tmp_path / "v.pt")
    for k, v in {"a": a, "row": a[1], "t": a.t(), "col": a[:, 2]}.items():
        _same_tensor(out[k], v)
        assert out[k].stride() == v.stride()
        assert np.shares_memory(out[k].numpy(), out["a"].numpy())
    np.testing.assert_array_equal(out["ex"].numpy(), a[0:1].expand(2, 4).numpy())
    out["a"].numpy()[1, 2] = -1.0
    assert out["row"][2].item() == -1.0 and out["col"][1].item() == -1.0
    # and saved again by dyngrad, torch still sees one storage
    dg.save(out, tmp_path / "again.pt")
    again = torch.load(tmp_path / "again.pt")
    assert again["row"].untyped_storage().data_ptr() == again["a"].untyped_storage().data_ptr()
    assert again["row"].tolist() == [4.0, 5.0, -1.0, 7.0]


def test_module_state_dict_from_torch(tmp_path):
    tm = _torch_model()
    torch.save(tm.state_dict(), tmp_path / "m.pt")
    sd = dg.load(tmp_path / "m.pt")
    assert isinstance(sd, OrderedDict) and list(sd) == list(tm.state_dict())
    assert getattr(sd, "_metadata", None) == tm.state_dict()._metadata
    m = _dg_model()
    m.load_state_dict(sd)
    x = np.random.RandomState(2).randn(4, 3).astype(np.float32)
    np.testing.assert_allclose(m(dg.tensor(x)).detach().numpy(),
                               tm(torch.from_numpy(x)).detach().numpy(), rtol=1e-6)
    # batch norm buffers (num_batches_tracked is an int64 0-d tensor)
    bn = torch.nn.BatchNorm1d(3)
    bn(torch.randn(8, 3))
    torch.save(bn.state_dict(), tmp_path / "bn.pt")
    sd = dg.load(tmp_path / "bn.pt")
    assert sd["num_batches_tracked"].dtype == dg.int64 and sd["num_batches_tracked"].item() == 1
    dbn = dg.nn.BatchNorm1d(3)
    dbn.load_state_dict(sd)
    np.testing.assert_allclose(dbn.running_mean.numpy(), bn.running_mean.numpy())


def test_parameters_and_grad_flags_from_torch(tmp_path):
    p = torch.nn.Parameter(torch.randn(2, 2))
    torch.save({"p": p, "leaf": torch.ones(2, requires_grad=True), "plain": torch.zeros(1)},
               tmp_path / "g.pt")
    out = dg.load(tmp_path / "g.pt")
    assert isinstance(out["p"], dg.nn.Parameter) and out["p"].requires_grad
    _same_tensor(out["p"], p)
    assert out["leaf"].requires_grad and out["leaf"].is_leaf and not out["plain"].requires_grad


def test_plain_values_from_torch(tmp_path):
    x = {"size": torch.Size([2, 3]), "device": torch.device("cpu"), "dtype": torch.int16,
         "set": {1, "a"}, "c": 2 - 1j, "bytes": b"ab\x00", "nested": [(1, [2.5]), {"k": None}],
         "big": 2 ** 70}
    torch.save(x, tmp_path / "p.pt")
    out = dg.load(tmp_path / "p.pt")
    assert type(out["size"]) is dg.Size and out["size"] == (2, 3)
    assert isinstance(out["device"], dg.device) and out["device"].type == "cpu"
    assert out["dtype"] is dg.int16 and out["set"] == {1, "a"} and out["c"] == 2 - 1j
    assert out["bytes"] == b"ab\x00" and out["nested"] == [(1, [2.5]), {"k": None}]
    assert out["big"] == 2 ** 70


def test_bfloat16_loads_and_other_dtypes_are_refused_clearly(tmp_path):
    w = torch.tensor([1.5, -2.703125], dtype=torch.bfloat16)
    torch.save({"w": w}, tmp_path / "bf.pt")
    got = dg.load(tmp_path / "bf.pt")["w"]
    assert got.dtype is dg.bfloat16 and got.tolist() == w.tolist()
    from safetensors.torch import save_file
    save_file({"w": w}, str(tmp_path / "bf.safetensors"))
    got = dg.load(tmp_path / "bf.safetensors")["w"]
    assert got.dtype is dg.bfloat16 and got.tolist() == w.tolist()
    torch.save({"w": torch.ones(2, dtype=torch.float8_e4m3fn)}, tmp_path / "f8.pt")
    with pytest.raises(CheckpointError) as e:
        dg.load(tmp_path / "f8.pt")
    assert str(tmp_path / "f8.pt") in str(e.value)


def test_map_location(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "w.pt")
    calls = []
    for ml in (None, "cpu", dg.device("cpu"), {"cpu": "cpu"},
               lambda s, loc: (calls.append(loc), s)[1], lambda s, loc: None):
        assert dg.load(tmp_path / "w.pt", map_location=ml)["w"].tolist() == [1.0, 1.0]
    assert calls == ["cpu"]
    with pytest.raises(RuntimeError, match="CUDA"):
        dg.load(tmp_path / "w.pt", map_location="cuda")
    # a checkpoint saved on a GPU: PyTorch's error without map_location, CPU with it
    cuda = _rewrite_pickle(tmp_path / "w.pt", lambda pkl: pkl.replace(
        b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"), tmp_path / "cuda.pt")
    with pytest.raises(RuntimeError, match="torch.cuda.is_available"):
        dg.load(cuda)
    for ml in ("cpu", {"cuda:0": "cpu"}, lambda s, loc: s):
        assert dg.load(cuda, map_location=ml)["w"].tolist() == [1.0, 1.0]


# --- optimizers both ways -------------------------------------------------------------
def _train(lib, opt_cls, kw, p0, grads, opt_state=None):
    w = lib.nn.Parameter(lib.tensor(p0.copy()))
    opt = getattr(lib.optim, opt_cls)([w], **kw)
    if opt_state is not None:
        opt.load_state_dict(opt_state)
    for g in grads:
        opt.zero_grad()
        (w * lib.tensor(g)).sum().backward()
        opt.step()
    return w, opt


@pytest.mark.parametrize("opt_cls,kw", [("Adam", {"lr": 0.1}),
                                        ("SGD", {"lr": 0.1, "momentum": 0.9})])
@pytest.mark.parametrize("direction", ["dg_to_torch", "torch_to_dg"])
def test_optimizer_state_both_ways_then_step(tmp_path, opt_cls, kw, direction):
    rs = np.random.RandomState(0)
    p0 = rs.randn(4).astype(np.float32)
    g1, g2 = [rs.randn(4).astype(np.float32) for _ in range(3)], [rs.randn(4).astype(np.float32)]
    src, dst = (dg, torch) if direction == "dg_to_torch" else (torch, dg)
    w, opt = _train(src, opt_cls, kw, p0, g1)
    src.save({"w": w, "opt": opt.state_dict()}, tmp_path / "o.pt")
    ck = dst.load(tmp_path / "o.pt", weights_only=True)
    w2, opt2 = _train(dst, opt_cls, kw, _np(ck["w"]), g2, opt_state=ck["opt"])
    w_ref, _ = _train(src, opt_cls, kw, p0, g1 + g2)     # uninterrupted run
    np.testing.assert_allclose(_np(w2), _np(w_ref), rtol=1e-6, atol=1e-7)
    state = opt2.state_dict()["state"][0]
    assert set(state) >= ({"step", "exp_avg", "exp_avg_sq"} if opt_cls == "Adam"
                          else {"momentum_buffer"})


# --- loading never runs code ------------------------------------------------------------
class _System:
    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


class _Eval:
    def __reduce__(self):
        return (eval, ("__import__('os').system('touch pwned-eval')",))


class _AnyClass:
    def __reduce__(self):
        import subprocess
        return (subprocess.Popen, (["touch", "pwned-popen"],))


def _torch_like_zip(path, pkl):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        z.writestr("archive/version", "3\n")
    return path


@pytest.mark.parametrize("payload,name", [
    (lambda: {"w": _System("touch pwned-system")}, "posix.system"),
    (lambda: [_Eval()], "builtins.eval"),
    (lambda: OrderedDict(x=_AnyClass()), "subprocess.Popen"),
])
def test_malicious_pickles_raise_and_run_nothing(tmp_path, monkeypatch, payload, name):
    monkeypatch.chdir(tmp_path)
    pkl = pickle.dumps(payload(), protocol=2)
    z = _torch_like_zip(tmp_path / "evil.pt", pkl)
    with pytest.raises(pickle.UnpicklingError) as ref:     # PyTorch's own reaction
        torch.load(z, weights_only=True)
    assert "Weights only load failed" in str(ref.value)
    legacy = tmp_path / "evil_legacy.pt"
    legacy.write_bytes(b"".join(pickle.dumps(v, 2) for v in (
        0x1950a86a20f9469cfc6c, 1001, {"protocol_version": 1001, "little_endian": True})) + pkl)
    for f in (z, legacy, tmp_path / "raw.pkl"):
        if f.name == "raw.pkl":
            f.write_bytes(pkl)
        for wo in (True, False):
            with pytest.raises(pickle.UnpicklingError) as e:
                dg.load(f, weights_only=wo)
            assert isinstance(e.value, WeightsOnlyError) and isinstance(e.value, CheckpointError)
            msg = str(e.value)
            assert "Weights only load failed" in msg and name in msg and str(f) in msg
    assert sorted(os.listdir(tmp_path)) == ["evil.pt", "evil_legacy.pt", "raw.pkl"]


def test_whole_module_pickle_is_refused_like_pytorch(tmp_path):
    torch.save(_torch_model(), tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        torch.load(tmp_path / "model.pt", weights_only=True)
    with pytest.raises(WeightsOnlyError, match="torch.nn.modules.container.Sequential"):
        dg.load(tmp_path / "model.pt")
    torch.save(_torch_model(), tmp_path / "model_legacy.pt", _use_new_zipfile_serialization=False)
    with pytest.raises(WeightsOnlyError, match="Weights only load failed"):
        dg.load(tmp_path / "model_legacy.pt")


def _rewrite_pickle(src, edit, dst):
    """A copy of the zip checkpoint ``src`` with its data.pkl edited (a valid zip again)."""
    with zipfile.ZipFile(src) as zs, zipfile.ZipFile(dst, "w") as zd:
        for info in zs.infolist():
            data = zs.read(info)
            if info.filename.endswith("/data.pkl"):
                data = edit(data)
            zd.writestr(info.filename, data)
    return dst


def _fail(path):
    with pytest.raises(CheckpointError) as e:
        dg.load(path)
    assert str(path) in str(e.value)
    return str(e.value)


_TENSOR = (b"ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
           b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00K\x04\x85K\x01\x85\x89NtR")


def test_crafted_pickles_give_checkpoint_errors(tmp_path):
    torch.save({"w": torch.arange(4.0)}, tmp_path / "ok.pt")
    torch.save({"i": torch.arange(4)}, tmp_path / "int.pt")
    ok = tmp_path / "ok.pt"
    assert dg.load(_rewrite_pickle(ok, lambda p: b"\x80\x02" + _TENSOR + b".",
                                   tmp_path / "hand.pt")).tolist() == [0.0, 1.0, 2.0, 3.0]
    cases = {
        # a tensor reaching past its storage (offset, stride)
        "offset": (ok, lambda p: p.replace(b"K\x00K\x04\x85", b"K\x03K\x04\x85")),
        "stride": (ok, lambda p: p.replace(b"K\x01\x85", b"K\x02\x85", 1)),
        # a storage record that is not there; a storage of the wrong size or dtype
        "key": (ok, lambda p: p.replace(b"X\x01\x00\x00\x000", b"X\x01\x00\x00\x009")),
        "numel": (ok, lambda p: p.replace(b"K\x04t", b"K\x05t", 1)),
        "dtype": (ok, lambda p: p.replace(b"torch\nFloatStorage", b"torch\nLongStorage")),
        "truncated": (ok, lambda p: p[:len(p) // 2]),
        "garbage": (ok, lambda p: b"\x80\x02" + bytes(range(256))),
        "deep": (ok, lambda p: b"\x80\x02" + b"]" * 200_000 + b"a" * 199_999 + b"."),
        "deep_tuple": (ok, lambda p: b"\x80\x02K\x01" + b"\x85" * 200_000 + b"."),
        "self_tuple": (ok, lambda p: b"\x80\x02]q\x00h\x00\x85q\x01a" + b"h\x01."),
        "build_tensor": (ok, lambda p: b"\x80\x02" + _TENSOR + b"}b."),
        "newobj": (ok, lambda p: b"\x80\x02ccollections\nOrderedDict\n)\x81."),
        "bare_storage": (ok, lambda p: b"\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\n"
                                       b"X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQ."),
        "bad_pid": (ok, lambda p: b"\x80\x02X\x01\x00\x00\x00xQ."),
        "bad_size": (ok, lambda p: p.replace(b"K\x04\x85", b"X\x01\x00\x00\x00a\x85", 1)),
        "neg_offset": (ok, lambda p: p.replace(b"K\x00K\x04\x85", b"J\xff\xff\xff\xffK\x04\x85")),
        "int_grad": (tmp_path / "int.pt",
                     lambda p: p.replace(b"\x89ccollections", b"\x88ccollections", 1)),
        "hooks": (ok, lambda p: b"\x80\x02" + _TENSOR[:-3] + b"}K\x01K\x02stR."),
        "dtype_value": (ok, lambda p: b"\x80\x02ctorch\nqint8\n."),
        "unhashable": (ok, lambda p: b"\x80\x02}]\x85K\x01s."),
        "setitem_tensor": (ok, lambda p: b"\x80\x02" + _TENSOR + b"K\x01K\x02s."),
        "append_odict": (ok, lambda p: b"\x80\x02ccollections\nOrderedDict\n)RK\x01a."),
    }
    for name, (src, edit) in cases.items():
        bad = _rewrite_pickle(src, edit, tmp_path / f"{name}.pt")
        msg = _fail(bad)
        assert "Weights only" not in msg, (name, msg)


def test_build_on_ordered_dict_only_sets_metadata(tmp_path):
    """BUILD may give an OrderedDict its _metadata (state dicts); other attributes, which
    could shadow its methods, are dropped."""
    pkl = (b"\x80\x02ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00aK\x01u}(X\t\x00\x00\x00"
           b"_metadataK\x07X\x05\x00\x00\x00itemsK\x00ub.")
    out = dg.load(_torch_like_zip(tmp_path / "b.pt", pkl))
    assert out == OrderedDict(a=1) and out._metadata == 7 and list(out.items()) == [("a", 1)]


def test_truncation_and_byte_flips_of_a_zip(tmp_path):
    """Every truncation raises CheckpointError naming the file; every single-byte change
    raises it or (bytes zip readers ignore: times, padding) loads exactly the saved object."""
    obj = {"w": dg.arange(6.0).reshape(2, 3), "n": [1, "s"], "p": dg.nn.Parameter(dg.ones(2))}
    b = io.BytesIO()
    dg.save(obj, b)
    blob = b.getvalue()

    class Named(io.BytesIO):
        name = "fuzz.pt"

    def load(data):
        try:
            return dg.load(Named(data))
        except CheckpointError as e:
            assert str(e).startswith("fuzz.pt: "), str(e)
            return None

    for n in range(len(blob)):
        assert load(blob[:n]) is None, n
    # the bytes of the pickle and the storages (CRC-checked): every change there is caught
    payload = set()
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        for info in z.infolist():
            n, e = struct.unpack("<HH", blob[info.header_offset + 26:info.header_offset + 30])
            start = info.header_offset + 30 + n + e
            payload |= set(range(start, start + info.file_size))
    assert len(payload) > 300
    loaded = 0
    rng = random.Random(0)
    for i in range(len(blob)):
        for mask in (0x01, 0x80, rng.randrange(1, 256)):
            data = bytearray(blob)
            data[i] ^= mask
            out = load(bytes(data))
            if out is not None:     # a byte zip readers ignore (a time, padding, ...)
                loaded += 1
                assert i not in payload, i
                assert out["n"] == [1, "s"] and out["w"].tolist() == obj["w"].tolist()
                assert isinstance(out["p"], dg.nn.Parameter) and out["p"].tolist() == [1.0, 1.0]
    assert 0 < loaded < 3 * len(blob) - 3 * len(payload)


def test_mutated_pickles_only_raise_checkpoint_errors(tmp_path):
    """Random edits of data.pkl inside a valid zip: the load returns something or raises
    CheckpointError (WeightsOnlyError included); never another exception."""
    m = _torch_model()
    opt = torch.optim.Adam(m.parameters())
    m(torch.randn(2, 3)).sum().backward()
    opt.step()
    buf = io.BytesIO()
    torch.save({"m": m.state_dict(), "o": opt.state_dict(), "x": (1, 2.5, "s")}, buf)
    with zipfile.ZipFile(buf) as z:
        records = {i.filename: z.read(i) for i in z.infolist()}
    pkl = records["archive/data.pkl"]
    rng = random.Random(1)
    opcodes = b"()]}tRbsuaelQhqKMJX\x85\x86\x87\x88\x89N."
    outcomes = {"ok": 0, "error": 0}
    for _ in range(1500):
        p = bytearray(pkl)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(2, len(p))
            r = rng.random()
            if r < 0.4:
                p[i] = rng.randrange(256)
            elif r < 0.7:
                p[i] = opcodes[rng.randrange(len(opcodes))]
            elif r < 0.85:
                del p[i:i + rng.randint(1, 8)]
            else:
                p[i:i] = bytes([opcodes[rng.randrange(len(opcodes))]])
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            for k, v in records.items():
                z.writestr(k, bytes(p) if k.endswith("data.pkl") else v)
        try:
            dg.load(io.BytesIO(out.getvalue()))
            outcomes["ok"] += 1
        except CheckpointError:
            outcomes["error"] += 1
    assert outcomes["error"] > 500 and outcomes["ok"] > 10, outcomes


# --- atomic saves -------------------------------------------------------------------------
def test_save_into_unwritable_folder_leaves_nothing():
    import pathlib
    import shutil
    import tempfile
    base = pathlib.Path(tempfile.mkdtemp())
    os.chmod(base, 0o755)      # reachable by the unprivileged child below
    folder = base / "ro"
    folder.mkdir()
    (folder / "keep.pt").write_bytes(b"old")
    os.chmod(folder, 0o555)
    try:
        if os.geteuid() == 0:       # root ignores permissions: save as nobody in a child
            pid = os.fork()
            if pid == 0:
                code = 3
                try:
                    os.setgid(65534)
                    os.setuid(65534)
                    dg.save({"w": dg.ones(1000)}, folder / "keep.pt")
                    code = 0
                except PermissionError:
                    code = 1
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.WEXITSTATUS(status) == 1
        else:
            with pytest.raises(PermissionError):
                dg.save({"w": dg.ones(1000)}, folder / "keep.pt")
        assert os.listdir(folder) == ["keep.pt"] and (folder / "keep.pt").read_bytes() == b"old"
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(base)


def test_failed_write_leaves_old_file_and_no_temporary(tmp_path, monkeypatch):
    p = tmp_path / "m.pt"
    dg.save({"w": dg.ones(3)}, p)
    before = p.read_bytes()
    for anonymous in (True, False):
        if not anonymous:
            monkeypatch.setattr(S, "_open_anonymous", lambda folder: None)

        def broken(fd, blob, mode):
            os.write(fd, bytes(blob[:10]))
            raise PermissionError("simulated")
        monkeypatch.setattr(S, "_write_file", broken)
        with pytest.raises(PermissionError):
            dg.save({"w": dg.zeros(3)}, p)
        monkeypatch.undo()
        assert p.read_bytes() == before and os.listdir(tmp_path) == ["m.pt"]
    with pytest.raises(TypeError, match="pickl"):
        dg.save({"w": dg.zeros(3), "f": lambda: 0}, p)
    assert p.read_bytes() == before and os.listdir(tmp_path) == ["m.pt"]


# --- safetensors by name ----------------------------------------------------------------------
def test_safetensors_files_show_real_names(tmp_path):
    from safetensors.numpy import load_file
    from safetensors.torch import load_file as torch_load_file
    m = _dg_model()
    p = tmp_path / "m.safetensors"
    dg.save(m.state_dict(), p)
    assert not zipfile.is_zipfile(p)
    names = set(load_file(str(p)))
    assert names == set(m.state_dict())
    tm = _torch_model()
    tm.load_state_dict(torch_load_file(str(p)))
    back = dg.load(p)
    assert list(back) == list(m.state_dict())
    ck = {"model": m.state_dict(), "step": 3, "hist": [dg.ones(1), dg.zeros(1)]}
    S.save_safetensors(ck, tmp_path / "ck.bin")
    assert set(load_file(str(tmp_path / "ck.bin"))) == \
        {f"model.{k}" for k in m.state_dict()} | {"hist.0", "hist.1"}
    out = S.load_safetensors(tmp_path / "ck.bin")
    assert out["step"] == 3 and out["hist"][1].tolist() == [0.0]
    assert dg.load(tmp_path / "ck.bin")["model"].keys() == m.state_dict().keys()
