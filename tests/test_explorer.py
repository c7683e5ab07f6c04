"""The recorder logs forward and backward in order; the page is one self-contained file."""
import re

import pytest

import dyngrad as torch
from dyngrad.viz import record


def run_rnn_cell():
    with record() as rec:
        Wh = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9]], requires_grad=True)
        Wx = torch.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 0.75]], requires_grad=True)
        x = torch.tensor([[-0.8], [1.6]])
        h = torch.tensor([[0.2], [-0.4], [1.0]])
        i2h = Wx.mm(x)
        h2h = Wh.mm(h)
        next_h = i2h + h2h
        next_h = next_h.tanh()
        out = next_h.sum()
        out.backward()
    return rec


def seq(rec):
    out = []
    for e in rec.events:
        n = rec.nodes[e["node"]]
        out.append((e["kind"], n.get("name") or n["op"]))
    return out


def test_rnn_cell_event_order():
    rec = run_rnn_cell()
    s = seq(rec)
    assert s[:7] == [("leaf", "Wx"), ("node", "MmBackward0"), ("leaf", "Wh"), ("node", "MmBackward0"),
                     ("node", "AddBackward0"), ("node", "TanhBackward0"), ("node", "SumBackward0")]
    bw = [x for x in s[7:] if x[0] == "backward"]
    assert [b[1] for b in bw] == ["SumBackward0", "TanhBackward0", "AddBackward0", "MmBackward0",
                                  "MmBackward0"]
    # each node frees its buffers right after it runs; gradients reach both leaves
    for i, (k, name) in enumerate(s):
        if k == "backward":
            assert s[i + 1] == ("free", name)
    assert sorted(n for k, n in s if k == "accumulate") == ["Wh", "Wx"]
    assert s.index(("accumulate", "Wx")) > s.index(("backward", "AddBackward0"))


def test_node_details():
    rec = run_rnn_cell()
    tanh = [n for n in rec.nodes if n["op"] == "TanhBackward0"][0]
    assert tanh["src"]["code"] == "next_h = next_h.tanh()"
    assert tanh["src"]["file"].endswith("test_explorer.py")
    assert tanh["out"]["shape"] == [3, 1] and tanh["out"]["dtype"] == "float32"
    assert tanh["saved"] and tanh["saved"][0]["name"] == "result"
    add = [n for n in rec.nodes if n["op"] == "AddBackward0"][0]
    assert [rec.nodes[i]["op"] for i in add["inputs"]] == ["MmBackward0", "MmBackward0"]
    bw = [e for e in rec.events if e["kind"] == "backward" and rec.nodes[e["node"]] is tanh][0]
    assert bw["grad_in"][0]["values"] == [1.0, 1.0, 1.0]
    assert bw["grads_out"][0]["shape"] == [3, 1]
    acc = [e for e in rec.events if e["kind"] == "accumulate"][0]
    assert acc["grad"]["shape"] in ([3, 3], [3, 2])


def test_modules_grouped_and_repeats_folded():
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(3, 3), nn.ReLU()) for _ in range(4)],
                          nn.Linear(3, 1))
    with record() as rec:
        model(torch.ones(2, 3)).sum().backward()
    paths = [g["path"] for g in rec.data()["groups"]]
    assert paths[0] == "Sequential" and "Sequential.0.0" in paths
    groups = rec.data()["groups"]
    runs = [g for g in groups if g.get("run_len") == 4]
    assert len(runs) == 4 and {g["cls"] for g in runs} == {"Sequential"}
    names = {n.get("name") for n in rec.nodes if n["kind"] == "leaf"}
    assert "0.0.weight" in names
    lin = [n for n in rec.nodes if n["kind"] == "op" and n["group"] is not None
           and groups[n["group"]]["path"] == "Sequential.4"]
    assert lin


def test_html_self_contained(tmp_path):
    rec = run_rnn_cell()
    path = tmp_path / "x.html"
    rec.save_html(str(path))
    html = path.read_text()
    assert html.count("<html") == 1
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<script src" not in html and "<link" not in html
    assert "TanhBackward0" in html


def test_recorder_restores_hooks():
    from dyngrad.autograd.engine import HOOKS
    from dyngrad._record import RECORD_HOOKS
    before = (HOOKS.observer, list(RECORD_HOOKS))
    run_rnn_cell()
    assert (HOOKS.observer, list(RECORD_HOOKS)) == before


def test_explore_writes_the_page_when_the_script_fails(tmp_path, capsys):
    from dyngrad.cli import main
    script = tmp_path / "bad.py"
    script.write_text("import torch\n"
                      "a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
                      "y = (a * a).sum()\n"
                      "y.backward()\n"
                      "y.backward()\n")
    out = tmp_path / "bad.html"
    assert main(["explore", str(script), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "RuntimeError: Trying to backward through the graph a second time" in err
    assert f'File "{script}", line 5' in err and "viz/explorer.py" not in err
    html = out.read_text()
    assert '"kind":"error"' in html and "MulBackward0" in html and '"script_error"' in html


def test_failed_backward_is_an_event_with_the_node_and_fix():
    with record() as rec:
        a = torch.tensor([1.0, 2.0], requires_grad=True)
        c = (a * 2).exp()
        y = (c * c).sum()
        y.backward()
        with pytest.raises(RuntimeError):
            y.backward()   # freed
        z = torch.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
            z.backward()
    errs = [e for e in rec.events if e["kind"] == "error"]
    assert [rec.nodes[e["node"]]["op"] for e in errs] == ["MulBackward0", "MulBackward0"]
    assert errs[0]["fix"].startswith("call backward(retain_graph=True)")
    assert errs[1]["message"].startswith("grad can be implicitly created only for scalar outputs")


def test_iterations_first_in_full_rest_counted():
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.ones(5, 3)

    def train(rec_iterations):
        with record(iterations=rec_iterations) as rec:
            for _ in range(6):
                opt.zero_grad()
                loss = model(x).pow(2).mean()
                loss.backward()
                opt.step()
        return rec

    rec = train(None)
    d = rec.data()
    assert rec.iterations == 6 and d["summary"]["recorded"] == [1]
    assert d["summary"]["steps"] == [1] * 6 and d["summary"]["backward_calls"] == [1] * 6
    assert all(isinstance(v, float) for v in d["summary"]["loss"])
    assert d["summary"]["loss"][-1] < d["summary"]["loss"][0]
    kinds = [e["kind"] for e in rec.events]
    assert kinds.count("call") == 1 and kinds[-1] == "step"
    rec2 = train("2,5-6")
    assert rec2.data()["summary"]["recorded"] == [2, 5, 6]
    assert {n["it"] for n in rec2.nodes if n["kind"] == "op"} == {2, 5, 6}
    with pytest.raises(ValueError, match="iterations"):
        record(iterations="first")


def test_page_size_grows_linearly():
    nn = torch.nn

    def size(blocks):
        torch.manual_seed(0)
        model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(blocks)])
        with record() as rec:
            model(torch.ones(2, 4)).sum().backward()
        return len(rec.html()) - len(record().html()), len(rec.nodes)

    (s1, n1), (s2, n2) = size(20), size(80)
    assert 3.5 < n2 / n1 < 4.5
    assert s2 / n2 < 1.15 * (s1 / n1)
