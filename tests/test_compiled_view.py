"""The view of a compiled function: the page's data against the captured Program (every
instruction and guard, the buffers each instruction reads and writes, phases in program
order), recaptures with their guard failures, the fall back to eager at the recompile limit,
the explorer's "compiled" section with calls counted, and the page as Chromium renders it."""
import html
import json
import re

import pytest

import dyngrad as T
import dyngrad.nn as nn
from dyngrad import _dynamo
from dyngrad._dynamo.program import Ref
from dyngrad.viz import compiled_html, record, save_compiled_html

from tests.pages import rendered


@pytest.fixture(autouse=True)
def _fresh():
    old = _dynamo.config.recompile_limit
    yield
    _dynamo.config.recompile_limit = old


def training_step():
    T.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = T.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    @T.compile
    def step(x, y):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def batch(n):
    return T.randn(n, 4), T.tensor([k % 2 for k in range(n)])


def page_data(page):
    m = re.search(r'<script id="data" type="application/json">(.*?)</script>', page, re.S)
    assert m, "the page embeds its data"
    return json.loads(m.group(1).replace("<\\/", "</"))


def refs(x):
    if type(x) is Ref:
        return [x.i]
    if type(x) in (tuple, list):
        return [i for v in x for i in refs(v)]
    if type(x) is dict:
        return [i for v in x.values() for i in refs(v)]
    return []


def expected_io(program, ins):
    """Reads and writes of an instruction, straight from the Program's records."""
    reads = refs(ins.args) + refs({k: v for k, v in ins.kwargs.items() if k != "out"})
    writes = list(ins.out) if type(ins.out) is tuple else [] if ins.out is None else [ins.out]
    writes += refs(ins.kwargs.get("out"))
    touched = []
    if ins.mode == "effect":
        def tensors(x):
            if isinstance(x, T.Tensor):
                return [x]
            if type(x) in (tuple, list):
                return [t for v in x for t in tensors(v)]
            if type(x) is dict:
                return [t for v in x.values() for t in tensors(v)]
            return []
        for t in tensors(ins.args):
            touched += [b.i for b in program.buffers if b.value is t and b.kind != "tmp"]
    grads = touched if ins.op in ("set_grad", "accumulate_grad", "bump", "zero_grad") else []
    if not grads:
        writes += touched
    return (list(dict.fromkeys(reads)), list(dict.fromkeys(writes)),
            list(dict.fromkeys(grads)))


def test_page_data_matches_program():
    step = training_step()
    x, y = batch(5)
    for _ in range(3):
        step(x, y)
    entry = step.entries[0]
    prog = entry.program
    d = page_data(compiled_html(step))
    assert d["compiled"][0]["name"] == "training_step.<locals>.step"
    p = d["compiled"][0]["programs"][0]
    # buffers: kind, source, shape, dtype
    assert len(p["buffers"]) == len(prog.buffers)
    for pb, b in zip(p["buffers"], prog.buffers):
        assert (pb["i"], pb["kind"], pb["source"], tuple(pb["shape"]), pb["dtype"]) == \
            (b.i, b.kind, b.source, tuple(b.shape), str(b.dtype))
    # every instruction, in program order, with what it reads and writes
    assert [i["op"] for i in p["instrs"]] == [ins.op for ins in prog.instrs]
    assert [i["phase"] for i in p["instrs"]] == [ins.phase for ins in prog.instrs]
    for pi, ins in zip(p["instrs"], prog.instrs):
        assert (pi["reads"], pi["writes"], pi["grads"]) == expected_io(prog, ins), ins.op
    # the first linear layer's addmm reads the input and a parameter and writes a tmp
    addmm = next(i for i in p["instrs"] if i["op"] == "addmm")
    assert 0 in addmm["reads"] and p["buffers"][addmm["writes"][0]]["kind"] == "tmp"
    # the optimizer's update writes the four parameters; set_grad sets their .grad
    upd = next(i for i in p["instrs"] if i["op"] == "SGD.step")
    assert sorted(upd["writes"]) == sorted(b.i for b in prog.buffers if b.kind == "ext")
    assert sorted(g for i in p["instrs"] if i["op"] == "set_grad" for g in i["grads"]) == \
        sorted(upd["writes"])
    # every guard, with words
    assert [g["expr"] for g in p["guards"]] == [g.expr for g in prog.guards]
    words = [g["words"] for g in p["guards"]]
    assert "called with 2 positional and 0 keyword arguments" in words
    assert "x is a Tensor of shape (5, 4), dtype torch.float32, strides (16, 4), " \
           "requires_grad=False" in words
    assert "grad mode is enabled" in words
    assert "Linear.training is True" in words
    assert any(w.startswith("SGD has the same 1 param group holding the same 4 parameters")
               for w in words)
    assert all(w for w in words)
    # capture time and the calls the program answered (three calls: a capture, two replays)
    assert p["capture_ms"] == round(prog.capture_ms, 3) and p["capture_ms"] > 0
    assert p["replays"] == entry.replays == 2


def test_phases_are_runs_in_program_order():
    step = training_step()
    step(*batch(5))
    prog = step.entries[0].program
    p = page_data(compiled_html(step))["compiled"][0]["programs"][0]
    covered = []
    for k, ph in enumerate(p["phases"]):
        assert ph["start"] < ph["end"]
        if k:
            assert ph["start"] == p["phases"][k - 1]["end"]
            assert ph["phase"] != p["phases"][k - 1]["phase"]
        assert {ins.phase for ins in prog.instrs[ph["start"]:ph["end"]]} == {ph["phase"]}
        covered.extend(range(ph["start"], ph["end"]))
    assert covered == list(range(len(prog.instrs)))
    # zero_grad, then forward, backward, then the optimizer's update
    assert [ph["phase"] for ph in p["phases"]] == ["optimizer", "forward", "backward",
                                                   "optimizer"]


def test_recapture_reason_and_eager_fallback():
    _dynamo.config.recompile_limit = 2
    step = training_step()
    step(*batch(5))
    step(*batch(6))
    d = page_data(compiled_html(step))["compiled"][0]
    assert len(d["programs"]) == 2 and d["eager"] is None
    (r,) = d["recaptures"]
    assert r["reasons"] == ["0/0: tensor 'x' size mismatch at index 0. expected 5, actual 6"]
    assert r["captured"] == 1
    assert r["log"].startswith("Recompiling function step in ")
    assert "    triggered by the following guard failure(s):\n    - 0/0: tensor 'x' size " \
           "mismatch at index 0. expected 5, actual 6" in r["log"]
    step(*batch(7))      # both programs' guards fail; the limit (2) is reached: eager
    d = page_data(compiled_html(step))["compiled"][0]
    assert d["eager"]["limit_hit"] is True
    assert d["eager"]["warning"].startswith("torch._dynamo hit config.recompile_limit (2)\n")
    assert "last reason: 1/1: tensor 'x' size mismatch at index 0. expected 6, actual 7" in \
        d["eager"]["warning"]


def test_recorder_shows_compiled_calls(tmp_path):
    step = training_step()
    x, y = batch(5)
    step0 = training_step()
    step0(x, y)          # a capture outside the recorder first: both must capture the same
    with record() as rec:
        for _ in range(4):
            step(x, y)
        step(*batch(6))
        step(*batch(6))
    d = rec.data()
    (c,) = d["compiled"]
    assert c["calls"] == {"capture": 2, "replay": 4, "eager": 0}
    assert [p["replays"] for p in c["programs"]] == [3, 1]
    page = rec.html()
    assert page_data(page)["compiled"][0]["name"] == c["name"]
    assert '<section id="compiled">' in page
    # a run with no compiled function has no section data
    with record() as rec2:
        (T.ones(2, requires_grad=True) * 2).sum().backward()
    assert "compiled" not in rec2.data()


def test_not_a_compiled_function():
    with pytest.raises(TypeError, match="expected a function or module returned by "
                                        "dyngrad.compile, got function"):
        compiled_html(lambda x: x)


def test_compiled_module_page(tmp_path):
    T.manual_seed(0)
    m = T.compile(nn.Linear(3, 2))
    with T.no_grad():
        m(T.randn(4, 3))
    path = save_compiled_html(m, tmp_path / "m.html")
    d = page_data(open(path, encoding="utf-8").read())
    (p,) = d["compiled"][0]["programs"]
    assert [i["op"] for i in p["instrs"]] == ["t", "addmm"]
    assert "grad mode is disabled" in [g["words"] for g in p["guards"]]
    # a module whose output still needs its graph is captured with that graph's backward
    m2 = T.compile(nn.Linear(3, 2))
    for _ in range(3):
        out = m2(T.randn(4, 3))
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    c = page_data(compiled_html(m2))["compiled"][0]
    assert c["eager"] is None and [p["replays"] for p in c["programs"]] == [2]


@pytest.mark.browser
def test_rendered_page_shows_every_instruction_and_guard(tmp_path):
    _dynamo.config.recompile_limit = 8
    step = training_step()
    step(*batch(5))
    step(*batch(6))
    path = tmp_path / "c.html"
    save_compiled_html(step, path)
    dom = rendered(path)
    assert 'data-ready="1"' in dom
    text = html.unescape(re.sub(r"<[^>]+>", " ", dom))
    for j, e in enumerate(step.entries):
        assert f"program #{j}" in text
    sections = dom.split("<details class=\"program\"")[1:]
    assert len(sections) == 2
    for sec, e in zip(sections, step.entries):
        prog = e.program
        rows = re.findall(r"<tr data-i=\"(\d+)\"", sec)
        assert [int(r) for r in rows] == list(range(len(prog.instrs)))
        phases = re.findall(r"<table class=\"instrs ph-\w+\" data-phase=\"(\w+)\"", sec)
        runs = [ins.phase for k, ins in enumerate(prog.instrs)
                if k == 0 or prog.instrs[k - 1].phase != ins.phase]
        assert phases == runs
        sec_text = html.unescape(re.sub(r"<[^>]+>", " ", sec))
        for g in prog.guards:
            assert g.expr in sec_text
        assert sec.count("<table class=\"guards\">") == 1
        assert len(re.findall(r"<tr><td>\d+</td><td>", sec.split("<table class=\"guards\">")[1]
                              .split("</table>")[0])) == len(prog.guards)
    assert "0/0: tensor 'x' size mismatch at index 0. expected 5, actual 6" in text


def test_guard_words_for_python_arguments():
    class Thing:
        pass
    thing = Thing()

    @T.compile
    def f(x, pair, d, n, flag, k, s, obj, lst):
        return x * pair[0] + d["w"] * k
    x = T.randn(3)
    f(x, (T.ones(3), T.ones(3)), {"w": T.ones(3)}, None, True, 3, "s", thing, [1.5])
    prog = f.entries[0].program
    words = [g["words"] for g in compiled_html_data(f)["programs"][0]["guards"]]
    assert len(words) == len(prog.guards)
    for w in ("called with 9 positional and 0 keyword arguments", "pair is a tuple of 2 items",
              "pair[1] is a Tensor of shape (3,), dtype torch.float32, strides (4,), "
              "requires_grad=False", "d is a dict with the keys ('w',)", "n is None",
              "flag is True", "k == 3 (int)", "s == 's' (str)",
              "obj is the same object as at capture", "lst is a list of 1 item",
              "lst[0] == 1.5 (float)", "grad mode is enabled"):
        assert w in words, w
    # a changed Python value recaptures, and the page gives the guard's failure
    f(x, (T.ones(3), T.ones(3)), {"w": T.ones(3)}, None, True, 4, "s", thing, [1.5])
    (r,) = compiled_html_data(f)["recaptures"]
    assert r["reasons"] == ["0/0: k == 3 failed (the function specialised on this value; it "
                            "is now 4)"]


def compiled_html_data(fn):
    return page_data(compiled_html(fn))["compiled"][0]


def test_page_shows_the_forward_as_fx_code():
    from dyngrad._dynamo.fx_graph import graph_module_of
    step = training_step()
    step(*batch(5))
    p = compiled_html_data(step)["programs"][0]
    assert p["fx"]["why"] is None
    assert p["fx"]["code"] == graph_module_of(step.entries[0].program).code.strip("\n")
    assert "nll_loss = torch.nn.functional.nll_loss(log_softmax, y)" in p["fx"]["code"]


SCRIPT = """
import torch
import torch.nn as nn
torch.manual_seed(0)
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)

@torch.compile
def step(x):
    opt.zero_grad()
    loss = model(x).pow(2).sum()
    loss.backward()
    opt.step()
    return loss

x = torch.randn(4, 3)
for _ in range(5):
    step(x)
"""


def test_explore_of_a_script_with_a_compiled_step(tmp_path):
    from dyngrad.viz import explore
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    rec = explore(script, output=tmp_path / "page.html")
    assert rec.error is None
    (c,) = page_data((tmp_path / "page.html").read_text(encoding="utf-8"))["compiled"]
    assert c["name"] == "step" and c["calls"] == {"capture": 1, "replay": 4, "eager": 0}
    (p,) = c["programs"]
    assert p["replays"] == 4
    assert [ph["phase"] for ph in p["phases"]] == ["optimizer", "forward", "backward",
                                                   "optimizer"]


def test_every_guard_of_a_training_step_is_in_words():
    """The page says what each guard checks, in words, never only its Python expression;
    parameters are named by their module (``Linear.weight``)."""
    import dyngrad.nn.functional as F
    from dyngrad.viz.compiled import guard_words
    T.manual_seed(0)
    model = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 3))
    opt = T.optim.SGD(model.parameters(), lr=0.1)

    @T.compile
    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    for _ in range(2):
        step(T.randn(5, 4), T.randint(0, 3, (5,)))
    e = step.entries[-1]
    words = [guard_words(g, e.program, e.consts) for g in e.program.guards]
    assert all(w != g.expr for w, g in zip(words, e.program.guards)), words
    assert "Linear.weight (shape [8, 4]) keeps its data, requires_grad=True" in words
    assert "Sequential holds the same submodules 0, 1, 2, and no parameters or buffers" in words
    assert "Linear.bias.grad is None" in words
