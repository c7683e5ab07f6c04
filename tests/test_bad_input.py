"""Bad input: every misuse raises the exception type PyTorch raises, with a message that
names the problem, and leaves no half-done state behind (load_state_dict, save, load)."""
from __future__ import annotations

import os
import pickle
import re
import threading
import zipfile

import warnings

import numpy as np
import pytest

import dyngrad as torch


def _raises(exc, fn, *patterns):
    """Call ``fn``; it must raise ``exc`` with a message matching every regex in ``patterns``."""
    with pytest.raises(exc) as info:
        fn()
    msg = str(info.value)
    for p in patterns:
        assert re.search(p, msg, re.S), f"message {msg!r} does not match {p!r}"
    return info.value


# --- binary ops with mismatched shapes ------------------------------------------------
_BINARY_CANDIDATES = {
    "add": lambda a, b: torch.add(a, b),
    "add_op": lambda a, b: a + b,
    "sub": lambda a, b: torch.sub(a, b),
    "sub_op": lambda a, b: a - b,
    "mul": lambda a, b: torch.mul(a, b),
    "mul_op": lambda a, b: a * b,
    "div": lambda a, b: torch.div(a, b),
    "div_op": lambda a, b: a / b,
    "pow": lambda a, b: torch.pow(a, b),
    "pow_op": lambda a, b: a ** b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}
for _name in ("maximum", "minimum", "fmax", "fmin", "atan2", "hypot", "fmod", "remainder",
              "copysign", "xlogy", "float_power", "floor_divide", "true_divide", "logaddexp",
              "logical_and", "logical_or", "logical_xor", "rsub", "mul", "subtract", "multiply",
              "divide", "heaviside", "nextafter", "ldexp"):
    if hasattr(torch, _name) and _name not in _BINARY_CANDIDATES:
        _BINARY_CANDIDATES[_name] = (lambda n: lambda a, b: getattr(torch, n)(a, b))(_name)


@pytest.mark.parametrize("name", sorted(_BINARY_CANDIDATES))
def test_binary_op_shape_mismatch(name):
    fn = _BINARY_CANDIDATES[name]
    a = torch.ones(2, 3)
    b = torch.full((2, 4), 2.0)
    # PyTorch: "The size of tensor a (3) must match the size of tensor b (4) at
    # non-singleton dimension 1"
    _raises(RuntimeError, lambda: fn(a, b), r"3", r"4", r"match|broadcast")


@pytest.mark.parametrize("name", sorted(_BINARY_CANDIDATES))
def test_binary_op_shape_mismatch_with_grad(name):
    fn = _BINARY_CANDIDATES[name]
    a = torch.ones(5, dtype=torch.float64, requires_grad=True)
    b = torch.full((3,), 2.0, dtype=torch.float64, requires_grad=True)
    _raises(RuntimeError, lambda: fn(a, b), r"5", r"3", r"match|broadcast")


@pytest.mark.parametrize("meth", ["add_", "sub_", "mul_", "div_"])
def test_inplace_binary_cannot_grow_self(meth):
    x = torch.ones(3)
    _raises(RuntimeError, lambda: getattr(x, meth)(torch.ones(2, 3)),
            r"output with shape \[3\] doesn't match the broadcast shape \[2, 3\]")
    assert x.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("meth", ["add_", "mul_"])
def test_inplace_binary_mismatch(meth):
    x = torch.ones(2, 3)
    _raises(RuntimeError, lambda: getattr(x, meth)(torch.ones(2, 4)), r"3", r"4")
    assert x.tolist() == [[1.0] * 3] * 2


# --- matmul family --------------------------------------------------------------------
def test_mm_shape_mismatch():
    _raises(RuntimeError, lambda: torch.mm(torch.ones(2, 3), torch.ones(4, 5)),
            r"shapes cannot be multiplied \(2x3 and 4x5\)")


def test_matmul_shape_mismatch():
    _raises(RuntimeError, lambda: torch.ones(2, 3) @ torch.ones(4, 5), r"2x3 and 4x5")
    _raises(RuntimeError, lambda: torch.matmul(torch.ones(3), torch.ones(4)), r"3", r"4")
    _raises(RuntimeError, lambda: torch.matmul(torch.ones(2, 2, 3), torch.ones(4, 2)),
            r"3", r"4")


def test_bmm_shape_mismatch():
    _raises(RuntimeError, lambda: torch.bmm(torch.ones(2, 2, 3), torch.ones(3, 3, 2)), r"2", r"3")
    _raises(RuntimeError, lambda: torch.bmm(torch.ones(2, 3), torch.ones(3, 2)), r"3D|3-D|dim")


def test_mm_needs_matrices():
    _raises(RuntimeError, lambda: torch.mm(torch.ones(3), torch.ones(3, 2)), r"matri|2D|2-D|dim")


# --- cat / stack ----------------------------------------------------------------------
def test_cat_mismatch():
    a, b = torch.ones(2, 3), torch.ones(2, 4)
    # PyTorch: "Sizes of tensors must match except in dimension 0. Expected size 3 but got
    # size 4 for tensor number 1 in the list."
    _raises(RuntimeError, lambda: torch.cat([a, b], dim=0), r"[Ss]izes? .*match", r"3", r"4")
    assert torch.cat([a, b], dim=1).shape == (2, 7)


def test_cat_empty_list_and_bad_dim():
    _raises(ValueError, lambda: torch.cat([]), r"non-empty")  # PyTorch's type
    _raises(IndexError, lambda: torch.cat([torch.ones(2), torch.ones(2)], dim=3),
            r"[Dd]imension out of range")


def test_stack_mismatch():
    a, b = torch.ones(2, 3), torch.ones(2, 4)
    # PyTorch: "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and
    # [2, 4] at entry 1"
    _raises(RuntimeError, lambda: torch.stack([a, b]), r"equal size", r"\[2, 3\]", r"\[2, 4\]")
    _raises(RuntimeError, lambda: torch.stack([]), r"non-empty")


# --- views ----------------------------------------------------------------------------
def test_view_invalid_size():
    x = torch.ones(3, 4)
    _raises(RuntimeError, lambda: x.view(5, 2), r"shape '\[5, 2\]' is invalid for input of size 12")
    _raises(RuntimeError, lambda: x.view(-1, -1), r"only one dimension can be inferred")
    _raises(RuntimeError, lambda: x.view(5, -1), r"invalid for input of size 12")
    _raises(RuntimeError, lambda: x.t().view(12), r"view size is not compatible", r"reshape")


def test_reshape_invalid_size():
    x = torch.ones(3, 4)
    _raises(RuntimeError, lambda: x.reshape(5, -1), r"shape '\[5, -1\]' is invalid for input of size 12")
    _raises(RuntimeError, lambda: x.reshape(7), r"invalid for input of size 12")
    _raises(RuntimeError, lambda: torch.reshape(x, (-1, -1)), r"only one dimension can be inferred")
    assert x.t().reshape(12).shape == (12,)


def test_view_negative_size():
    x = torch.ones(3, 4)
    _raises(RuntimeError, lambda: x.view(-2, 6), r"-2|invalid")


def test_transpose_dim_out_of_range():
    _raises(IndexError, lambda: torch.ones(2, 3).transpose(0, 2), r"[Dd]imension out of range")
    _raises(IndexError, lambda: torch.ones(2, 3).sum(5), r"[Dd]imension out of range")


# --- indexing -------------------------------------------------------------------------
def test_index_out_of_range():
    x = torch.arange(3.0)
    _raises(IndexError, lambda: x[5], r"index 5 is out of bounds for dimension 0 with size 3")
    _raises(IndexError, lambda: x[-4], r"-4", r"out of bounds")
    _raises(IndexError, lambda: torch.ones(2, 3)[:, 3], r"index 3 is out of bounds", r"size 3")
    _raises(IndexError, lambda: x[torch.tensor([0, 7])], r"7", r"out of bounds", r"size 3")
    _raises(IndexError, lambda: torch.ones(2)[0, 0], r"too many indices|dimension")


def test_index_out_of_range_with_grad_does_not_record():
    x = torch.ones(3, requires_grad=True)
    _raises(IndexError, lambda: x[torch.tensor([3])], r"out of bounds")
    (x * 2).sum().backward()  # the graph is still usable
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_float_index_tensor():
    x = torch.arange(3.0)
    _raises(IndexError, lambda: x[torch.tensor([0.0, 1.0])],
            r"tensors used as indices must be long, int, byte or bool tensors")


def test_setitem_out_of_range():
    x = torch.zeros(3)
    _raises(IndexError, lambda: x.__setitem__(3, 1.0), r"out of bounds")
    assert x.tolist() == [0.0, 0.0, 0.0]


# --- sizes ----------------------------------------------------------------------------
@pytest.mark.parametrize("factory", ["zeros", "ones", "empty", "randn", "rand"])
def test_negative_sizes(factory):
    _raises(RuntimeError, lambda: getattr(torch, factory)(-1), r"negative|non-negative")
    _raises(RuntimeError, lambda: getattr(torch, factory)(2, -3), r"negative|non-negative")


def test_negative_size_full():
    _raises(RuntimeError, lambda: torch.full((-1,), 2.0), r"negative|non-negative")


def test_zero_sizes_behave():
    z = torch.zeros(0, 3, dtype=torch.float64, requires_grad=True)
    w = torch.ones(3, 2, dtype=torch.float64, requires_grad=True)
    y = z @ w
    assert y.shape == (0, 2)
    s = y.sum() + (z * 2).sum()
    assert s.item() == 0.0
    s.backward()
    assert z.grad.shape == (0, 3)
    assert w.grad.shape == (3, 2) and w.grad.abs().sum().item() == 0.0
    assert torch.zeros(0).shape == (0,)
    assert torch.ones(2, 0).sum(1).tolist() == [0.0, 0.0]
    assert torch.ones(0, 4).reshape(-1, 2).shape == (0, 2)
    assert torch.ones(0, 4).t().shape == (4, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyTorch gives nan without a warning
        assert np.isnan(torch.ones(0).mean().item())


# --- autograd misuse ------------------------------------------------------------------
def test_requires_grad_on_integer_tensors():
    _raises(RuntimeError, lambda: torch.tensor([1, 2], requires_grad=True),
            r"floating point")
    _raises(RuntimeError, lambda: torch.zeros(3, dtype=torch.int64, requires_grad=True),
            r"floating point")
    _raises(RuntimeError, lambda: torch.tensor([1, 2]).requires_grad_(), r"floating point")
    t = torch.tensor([True, False])

    def set_flag():
        t.requires_grad = True
    _raises(RuntimeError, set_flag, r"floating point")
    assert not t.requires_grad


def test_backward_twice():
    x = torch.ones(3, requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    _raises(RuntimeError, loss.backward, r"backward through the graph a second time",
            r"retain_graph=True")
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def test_non_scalar_backward():
    x = torch.ones(3, requires_grad=True)
    _raises(RuntimeError, (x * 2).backward, r"grad can be implicitly created only for scalar outputs")
    assert x.grad is None


def test_backward_without_grad():
    _raises(RuntimeError, torch.ones(1).sum().backward, r"does not require grad")


def test_inplace_on_leaf():
    x = torch.ones(3, requires_grad=True)
    _raises(RuntimeError, lambda: x.add_(1), r"leaf Variable that requires grad .* in-place")
    _raises(RuntimeError, lambda: x[0].mul_(2), r"leaf Variable that requires grad .* in-place")
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_modified_saved_tensor():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    _raises(RuntimeError, z.sum().backward, r"modified by an inplace operation",
            r"version 1; expected version 0")


def test_nan_under_detect_anomaly_names_op():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    loss = torch.sqrt(x).sum()
    with torch.autograd.detect_anomaly():
        _raises(RuntimeError, loss.backward, r"SqrtBackward0", r"nan")


def test_nan_under_detect_anomaly_names_op_deep():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    y = torch.log(x) * 0.0      # log(0) = -inf; -inf * 0 = nan; MulBackward0 is fine,
    loss = (y * x).sum()        # LogBackward0 gets 0 * ... = 0/0 -> nan
    with torch.autograd.detect_anomaly():
        e = _raises(RuntimeError, loss.backward, r"Backward\d", r"nan")
    assert re.search(r"(Mul|Log)Backward0", str(e))


def test_nan_without_anomaly_does_not_raise():
    x = torch.tensor([-1.0, 4.0], requires_grad=True)
    torch.sqrt(x).sum().backward()
    assert np.isnan(x.grad.numpy()[0])


# --- optimizers -----------------------------------------------------------------------
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_optimizer_non_iterable(opt):
    _raises(TypeError, lambda: getattr(torch.optim, opt)(5, lr=0.1), r"iterable", r"int")
    _raises(TypeError, lambda: getattr(torch.optim, opt)(None, lr=0.1), r"iterable")
    _raises(TypeError, lambda: getattr(torch.optim, opt)(torch.ones(2, requires_grad=True), lr=0.1),
            r"iterable")


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_optimizer_empty_list(opt):
    _raises(ValueError, lambda: getattr(torch.optim, opt)([], lr=0.1), r"empty parameter list")
    _raises(ValueError, lambda: getattr(torch.optim, opt)(iter([]), lr=0.1), r"empty parameter list")


@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_optimizer_negative_lr(opt):
    p = torch.nn.Parameter(torch.ones(2))
    _raises(ValueError, lambda: getattr(torch.optim, opt)([p], lr=-0.1), r"Invalid learning rate: -0.1")


def test_optimizer_non_tensor_params():
    _raises(TypeError, lambda: torch.optim.SGD([1.0, 2.0], lr=0.1), r"Tensor")


# --- data -----------------------------------------------------------------------------
def test_dataloader_batch_size_zero():
    from dyngrad.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(torch.arange(10.0))
    _raises(ValueError, lambda: DataLoader(ds, batch_size=0), r"batch_size", r"positive", r"0")
    _raises(ValueError, lambda: DataLoader(ds, batch_size=-2), r"batch_size", r"-2")


# --- load_state_dict: all or nothing --------------------------------------------------
def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))


def _snapshot(m):
    return {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}


def _unchanged(m, before):
    after = _snapshot(m)
    assert list(after) == list(before)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


def _other_state():
    sd = _model().state_dict()
    return {k: v * 0 + 7.0 for k, v in sd.items()}


def test_load_state_dict_unexpected_key():
    m = _model()
    before = _snapshot(m)
    sd = _other_state()
    sd["extra.weight"] = torch.ones(2)
    _raises(RuntimeError, lambda: m.load_state_dict(sd), r'Unexpected key\(s\).*"extra.weight"')
    _unchanged(m, before)


def test_load_state_dict_missing_key():
    m = _model()
    before = _snapshot(m)
    sd = _other_state()
    del sd["2.bias"]
    _raises(RuntimeError, lambda: m.load_state_dict(sd), r'Missing key\(s\).*"2.bias"')
    _unchanged(m, before)


def test_load_state_dict_wrong_shape():
    m = _model()
    before = _snapshot(m)
    sd = _other_state()
    sd["2.weight"] = torch.ones(3, 4)   # the first keys are fine, the last is wrong
    _raises(RuntimeError, lambda: m.load_state_dict(sd), r"size mismatch for 2.weight",
            r"\[3, 4\]", r"\[2, 4\]")
    _unchanged(m, before)
    # strict=False still refuses shapes (as PyTorch does), and changes nothing
    _raises(RuntimeError, lambda: m.load_state_dict(sd, strict=False), r"size mismatch for 2.weight")
    _unchanged(m, before)


def test_load_state_dict_wrong_type():
    m = _model()
    before = _snapshot(m)
    sd = _other_state()
    sd["2.bias"] = [1.0, 2.0]
    _raises(RuntimeError, lambda: m.load_state_dict(sd), r"2.bias")
    _unchanged(m, before)


def test_load_state_dict_not_a_dict():
    m = _model()
    before = _snapshot(m)
    _raises(TypeError, lambda: m.load_state_dict([1, 2]), r"dict")
    _unchanged(m, before)


def test_load_state_dict_good_after_bad():
    m = _model()
    sd = _other_state()
    m.load_state_dict(sd)
    for k, v in m.state_dict().items():
        assert (v.numpy() == 7.0).all(), k


# --- loading foreign / damaged files --------------------------------------------------
def _saved(tmp_path):
    p = tmp_path / "ckpt.dg"
    torch.save(_model().state_dict(), str(p))
    return p


def test_load_truncated(tmp_path):
    p = _saved(tmp_path)
    data = p.read_bytes()
    for cut in (0, 4, 8, 20, len(data) // 2, len(data) - 1):
        q = tmp_path / f"trunc{cut}.dg"
        q.write_bytes(data[:cut])
        e = _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)))
        assert re.search(r"truncated|short|corrupt", str(e)), str(e)


def test_load_corrupt_header(tmp_path):
    p = _saved(tmp_path)
    data = bytearray(p.read_bytes())
    data[10:30] = b"\xff" * 20
    q = tmp_path / "corrupt.dg"
    q.write_bytes(bytes(data))
    _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)), r"corrupt|not")


def test_load_corrupt_structure(tmp_path):
    # a well-formed safetensors container whose structure refers to a tensor that is not there
    p = tmp_path / "ckpt.safetensors"
    torch.save(_model().state_dict(), str(p))
    data = p.read_bytes().replace(b'\\"T\\": \\"0.weight\\"', b'\\"T\\": \\"t9\\"')
    assert data != p.read_bytes()
    q = tmp_path / "struct.dg"
    q.write_bytes(data)
    _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)), r"corrupt")
    # a well-formed PyTorch zip whose pickle refers to a storage record that is not there
    import zipfile
    p = _saved(tmp_path)
    q = tmp_path / "struct.pt"
    with zipfile.ZipFile(p) as src, zipfile.ZipFile(q, "w") as dst:
        for info in src.infolist():
            if not info.filename.endswith("/data/0"):
                dst.writestr(info.filename, src.read(info))
    _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)), r"corrupt")


def test_load_random_bytes(tmp_path):
    rs = np.random.RandomState(0)
    for i in range(20):
        q = tmp_path / f"random{i}.bin"
        q.write_bytes(rs.bytes(int(rs.randint(0, 4096))))
        _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)))


def test_load_text_file(tmp_path):
    q = tmp_path / "notes.txt"
    q.write_text("hello, this is not a checkpoint\n" * 10)
    _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)))


def test_load_missing_file(tmp_path):
    q = tmp_path / "nope.dg"
    _raises(FileNotFoundError, lambda: torch.load(str(q)), re.escape(str(q)))


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("protocol", [0, 2, pickle.HIGHEST_PROTOCOL])
def test_load_pickle_never_runs_code(tmp_path, protocol):
    marker = tmp_path / "PWNED"
    payload = pickle.dumps({"w": _Exploit(str(marker))}, protocol=protocol)
    # sanity: unpickling really would create the marker
    probe = tmp_path / "probe"
    pickle.loads(pickle.dumps(_Exploit(str(probe)), protocol=protocol)).close()
    assert probe.exists()
    q = tmp_path / f"evil{protocol}.pt"
    q.write_bytes(payload)
    _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)))
    _raises(RuntimeError, lambda: torch.load(str(q), weights_only=False), re.escape(str(q)))
    with open(q, "rb") as fh:
        _raises(RuntimeError, lambda: torch.load(fh))
    assert not marker.exists()


def test_load_pickle_message_explains(tmp_path):
    q = tmp_path / "evil.pt"
    q.write_bytes(pickle.dumps({"a": 1}, protocol=2))
    _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)), r"pickle")


def test_load_torch_zip_format(tmp_path):
    marker = tmp_path / "PWNED"
    q = tmp_path / "model.pt"
    with zipfile.ZipFile(q, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(_Exploit(str(marker)), protocol=2))
        z.writestr("archive/version", "3\n")
    _raises(RuntimeError, lambda: torch.load(str(q)), re.escape(str(q)), r"zip|PyTorch")
    assert not marker.exists()


# --- atomic save ----------------------------------------------------------------------
def _leftovers(folder, keep):
    return sorted(n for n in os.listdir(folder) if n not in keep)


def test_save_fails_at_replace_keeps_old_file(tmp_path, monkeypatch):
    p = _saved(tmp_path)
    old = p.read_bytes()
    import dyngrad.serialization as ser

    def boom(src, dst):
        raise OSError("simulated failure while renaming")
    monkeypatch.setattr(ser.os, "replace", boom)
    big = {"w": torch.randn(300, 300)}
    with pytest.raises(OSError, match="simulated failure"):
        torch.save(big, str(p))
    monkeypatch.undo()
    assert p.read_bytes() == old
    assert _leftovers(tmp_path, {p.name}) == []
    assert set(torch.load(str(p))) == set(_model().state_dict())


def test_save_fails_mid_write_keeps_old_file(tmp_path, monkeypatch):
    p = _saved(tmp_path)
    old = p.read_bytes()
    import dyngrad.serialization as ser
    real_fdopen = ser.os.fdopen

    class HalfWriter:
        def __init__(self, fh):
            self.fh = fh

        def write(self, b):
            self.fh.write(bytes(b[: len(b) // 2]))
            self.fh.flush()
            raise OSError("simulated disk full")

        def __getattr__(self, k):
            return getattr(self.fh, k)

        def __enter__(self):
            return self

        def __exit__(self, *a):
            self.fh.close()
            return False

    monkeypatch.setattr(ser.os, "fdopen", lambda *a, **k: HalfWriter(real_fdopen(*a, **k)))
    with pytest.raises(OSError, match="disk full"):
        torch.save({"w": torch.randn(300, 300)}, str(p))
    monkeypatch.undo()
    assert p.read_bytes() == old
    assert _leftovers(tmp_path, {p.name}) == []


def test_save_fails_on_unsupported_object_keeps_old_file(tmp_path):
    p = _saved(tmp_path)
    old = p.read_bytes()
    _raises(TypeError, lambda: torch.save({"w": torch.ones(2), "f": threading.Lock()}, str(p)),
            r"object", r"pickl")
    assert p.read_bytes() == old
    assert _leftovers(tmp_path, {p.name}) == []


def test_save_to_missing_folder(tmp_path):
    q = tmp_path / "no" / "such" / "dir" / "x.dg"
    with pytest.raises(OSError):
        torch.save({"w": torch.ones(2)}, str(q))
    assert not q.exists()
