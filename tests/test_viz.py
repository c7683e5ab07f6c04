"""make_dot draws what torchviz draws: the conformance dot_graph nodes/edges, colours,
saved tensors; walk prints the seeds' indented tree; rendering works when dot exists."""
import os
import re
import shutil
import sys

import pytest

import dyngrad as torch
from dyngrad.viz import make_dot, walk, walk_lines

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "conformance"))
caselib = pytest.importorskip("caselib")
pytest.importorskip("graphviz")


def rnn_cell():
    Wh = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9]], requires_grad=True)
    Wx = torch.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 0.75]], requires_grad=True)
    x = torch.tensor([[-0.8], [1.6]])
    h = torch.tensor([[0.2], [-0.4], [1.0]])
    out = (Wx.mm(x) + Wh.mm(h)).tanh().sum()
    return Wh, Wx, out


def parse(dot):
    """(nodes as labels in order, edges as label pairs, colours by label) from a Digraph."""
    labels, nodes, edges, colours = {}, [], [], {}
    for line in dot.body:
        line = line.strip()
        m = re.match(r'^(\d+) \[label="?(.*?)"?(?: fillcolor=(\w+))?\]$', line, re.S)
        if m and "->" not in line.split("[")[0]:
            lab = m.group(2).replace("\n ", " ").strip()
            labels[m.group(1)] = lab
            nodes.append(lab)
            colours[lab] = m.group(3)
    for line in dot.body:
        m = re.match(r"^(\d+) -> (\d+)", line.strip())
        if m:
            edges.append([labels[m.group(1)], labels[m.group(2)]])
    return nodes, edges, colours


def conform(dot):
    nodes, edges, _ = parse(dot)
    return {"nodes": nodes, "edges": edges}


def test_rnn_cell_matches_conformance():
    *_, out = rnn_cell()
    assert conform(make_dot(out)) == caselib.dot_graph(out)


def test_params_and_colours():
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    c = a + b
    d = c * a
    params = {"a": a, "b": b, "c": c, "d": d}
    dot = make_dot(d, params=params)
    assert conform(dot) == caselib.dot_graph(d, params)
    _, _, colours = parse(dot)
    assert colours["a ()"] == "lightblue" and colours["d ()"] == "darkolivegreen1"
    assert colours["MulBackward0"] is None          # grey default fill
    assert 'style=filled' in dot.node_attr.values() or dot.node_attr["style"] == "filled"


def test_detached_branch_and_unnamed_leaves():
    F = torch.nn.functional
    a = torch.tensor(1.0, requires_grad=True)
    b = torch.tensor(2.0, requires_grad=True)
    c = torch.tensor(3.0, requires_grad=True)
    d = a + b
    e = F.relu(d.detach()) + c
    f = F.relu(d) + c
    for v in (e, f):
        assert conform(make_dot(v)) == caselib.dot_graph(v)


def test_show_saved_and_views():
    Wh, Wx, out = rnn_cell()
    _, edges, colours = parse(make_dot(out, show_saved=True))
    assert "orange" in colours.values()
    assert any(lab.startswith("mat2") for lab, col in colours.items() if col == "orange")
    v = (Wx * 2).view(6)
    dot = make_dot(v)
    assert any("style=dotted" in line for line in dot.body)
    assert "darkolivegreen3" in " ".join(dot.body)


def test_walk_prints_tree(capsys):
    *_, out = rnn_cell()
    walk(out.grad_fn)
    printed = capsys.readouterr().out.splitlines()
    expect = ["  " * d + n for d, n in caselib.walk(out.grad_fn)]
    assert printed == expect == walk_lines(out.grad_fn)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' is not installed")
def test_render_svg(tmp_path):
    *_, out = rnn_cell()
    dot = make_dot(out)
    path = dot.render(str(tmp_path / "g"), format="svg")
    assert open(path).read().lstrip().startswith(("<?xml", "<svg"))
    assert "<svg" in dot._repr_svg_()
    assert "image/svg+xml" in dot._repr_mimebundle_()


def test_missing_dot_says_how_to_install(monkeypatch, tmp_path):
    *_, out = rnn_cell()
    dot = make_dot(out)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="apt-get install graphviz") as info:
        dot.pipe(format="svg")
    assert "brew install graphviz" in str(info.value)
    assert isinstance(info.value, torch.viz.GraphvizNotFound)
