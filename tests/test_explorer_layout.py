"""The explorer's drawing, checked geometrically in headless Chromium on the seeds' examples, the
conformance cases' graphs, the README's example and the demo's CNN step:

* every drawn edge starts on its source box and ends on its target box, and passes through no
  other box;
* sibling module boxes do not overlap, a box is inside exactly the module boxes it belongs to,
  and module titles, node labels and edge labels do not overlap each other or other boxes;
* every drawn edge is exactly one ``next_functions`` pair (fully expanded) and every pair is
  drawn (in every view: a pair inside a collapsed box is inside it).

Screenshots of the CNN step and of the misuse page are written next to the test's pages; with
``DYNGRAD_SCREENSHOTS=docs`` they are also copied into docs/ for the README."""
import glob
import importlib.util
import os
import shutil
import sys
import time

import pytest

from test_explorer_browser import close, driver, severe

pytestmark = pytest.mark.browser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = os.path.join(ROOT, "..", "shared", "conformance", "cases")

GEOMETRY = r"""
const view = document.getElementById("svg");
const rects = {}, out = {problems: [], edges: [], nodes: [], clusters: []};
const num = (e, k) => parseFloat(e.getAttribute(k));
const boxOf = r => ({x0: num(r, "x"), y0: num(r, "y"), x1: num(r, "x") + num(r, "width"), y1: num(r, "y") + num(r, "height")});
const overlap = (a, b, m) => a.x0 + m < b.x1 && b.x0 + m < a.x1 && a.y0 + m < b.y1 && b.y0 + m < a.y1;
const inside = (p, b, m) => p[0] > b.x0 + m && p[0] < b.x1 - m && p[1] > b.y0 + m && p[1] < b.y1 - m;
const within = (a, b) => a.x0 >= b.x0 - 0.5 && a.x1 <= b.x1 + 0.5 && a.y0 >= b.y0 - 0.5 && a.y1 <= b.y1 + 0.5;
const textBox = t => { const b = t.getBBox(); return {x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height}; };
const clusters = {};
for (const g of view.querySelectorAll("g.cluster")) {
  clusters[g.dataset.group] = {box: boxOf(g.querySelector("rect")), parent: g.dataset.parent, title: textBox(g.querySelector("text"))};
  out.clusters.push(g.dataset.group);
}
const chain = gid => { const c = []; while (gid !== "" && gid !== undefined) { c.push(gid); gid = clusters[gid] ? clusters[gid].parent : ""; } return c; };
const units = [...view.querySelectorAll("g.node:not(.future)")];
for (const g of units) {
  const b = boxOf(g.querySelector("rect"));
  rects[g.dataset.unit] = b;
  out.nodes.push(g.dataset.unit);
  const t = textBox(g.querySelector("text"));
  if (!within(t, b)) out.problems.push("label of " + g.dataset.unit + " sticks out of its box");
  const mine = new Set(chain(g.dataset.cluster));
  for (const id in clusters) {
    const c = clusters[id].box;
    if (mine.has(id) && !within(b, c)) out.problems.push(g.dataset.unit + " is not inside its module box " + id);
    if (!mine.has(id) && overlap(b, c, 0.5)) out.problems.push(g.dataset.unit + " overlaps module box " + id + " it is not part of");
    if (overlap(b, clusters[id].title, 0.5)) out.problems.push(g.dataset.unit + " overlaps the title of module box " + id);
  }
}
const ids = Object.keys(rects);
for (let i = 0; i < ids.length; i++) for (let j = i + 1; j < ids.length; j++)
  if (overlap(rects[ids[i]], rects[ids[j]], 0.5)) out.problems.push("boxes " + ids[i] + " and " + ids[j] + " overlap");
const cids = Object.keys(clusters);
for (let i = 0; i < cids.length; i++) for (let j = i + 1; j < cids.length; j++) {
  const a = clusters[cids[i]], b = clusters[cids[j]];
  const nested = chain(a.parent).includes(cids[j]) || chain(b.parent).includes(cids[i]);
  if (!nested && overlap(a.box, b.box, 0.5)) out.problems.push("module boxes " + cids[i] + " and " + cids[j] + " overlap");
  if (overlap(a.title, b.title, 0.5)) out.problems.push("module titles " + cids[i] + " and " + cids[j] + " overlap");
}
function samples(d) {
  const tok = d.match(/[MLC]|-?[\d.]+(?:e-?\d+)?/g); const pts = []; let i = 0, cur = null, cmd = null;
  while (i < tok.length) {
    if (/[MLC]/.test(tok[i])) cmd = tok[i++];
    if (cmd === "M" || cmd === "L") {
      const p = [+tok[i], +tok[i + 1]]; i += 2;
      if (cur && cmd === "L") for (let k = 1; k < 20; k++) pts.push([cur[0] + (p[0] - cur[0]) * k / 20, cur[1] + (p[1] - cur[1]) * k / 20]);
      pts.push(p); cur = p;
    } else {
      const c1 = [+tok[i], +tok[i + 1]], c2 = [+tok[i + 2], +tok[i + 3]], p = [+tok[i + 4], +tok[i + 5]]; i += 6;
      for (let k = 1; k <= 40; k++) { const t = k / 40, u = 1 - t;
        pts.push([u*u*u*cur[0] + 3*u*u*t*c1[0] + 3*u*t*t*c2[0] + t*t*t*p[0], u*u*u*cur[1] + 3*u*u*t*c1[1] + 3*u*t*t*c2[1] + t*t*t*p[1]]); }
      cur = p;
    }
  }
  return pts;
}
for (const p of view.querySelectorAll("path.edge:not(.future)")) {
  const v = p.dataset.v, w = p.dataset.w, pts = samples(p.getAttribute("d"));
  out.edges.push({v: v, w: w, pairs: p.dataset.pairs});
  const a = pts[0], z = pts[pts.length - 1], sv = rects[v], tw = rects[w];
  if (!sv || !tw) { out.problems.push("edge " + v + "->" + w + " has an endpoint that is not drawn"); continue; }
  if (!(Math.abs(a[1] - sv.y1) < 1 && a[0] >= sv.x0 && a[0] <= sv.x1)) out.problems.push("edge " + v + "->" + w + " does not start on " + v);
  if (!(Math.abs(z[1] - tw.y0) < 1 && z[0] >= tw.x0 && z[0] <= tw.x1)) out.problems.push("edge " + v + "->" + w + " does not end on " + w);
  for (const id of ids) {
    if (id === v || id === w) continue;
    if (pts.some(q => inside(q, rects[id], 0.5))) { out.problems.push("edge " + v + "->" + w + " passes through " + id); }
  }
}
for (const t of view.querySelectorAll("text.elabel:not(.future)")) {
  const b = textBox(t);
  for (const id of ids) if (overlap(b, rects[id], 0.5)) out.problems.push("edge label '" + t.textContent + "' overlaps box " + id);
}
return out;
"""


def wait_ready(d, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if d.execute_script("return document.body.dataset.ready") == "1":
            return
        time.sleep(0.03)
    raise AssertionError("the page did not finish its layout")


def expected_pairs(rec, it=None):
    pairs = set()
    for n in rec.nodes:
        if n["kind"] == "op" and (it is None or n.get("it", 1) == it):
            for k, s in enumerate(n["inputs"]):
                if s is not None:
                    pairs.add((n["id"], k))
    return pairs


def check_page(d, path, rec, label):
    """Geometry in the page's first view and fully expanded; every pair drawn exactly once."""
    d.get("file://" + os.path.abspath(path))
    wait_ready(d)
    assert severe(d) == [], (label, severe(d))
    it = int(d.execute_script("return iter"))
    want = expected_pairs(rec, it)
    for view in ("first", "expanded"):
        if view == "expanded":
            d.execute_script("document.getElementById('expandAll').click()")
            wait_ready(d)
        g = d.execute_script(GEOMETRY)
        assert g["problems"] == [], (label, view, g["problems"][:10])
        drawn = []
        for e in g["edges"]:
            ps = [tuple(int(x) for x in p.split(":")) for p in e["pairs"].split()]
            if view == "expanded":
                assert len(ps) == 1, (label, e)
                c, k = ps[0]
                assert e["w"] == f"n{c}" and e["v"] == f"n{rec.nodes[c]['inputs'][k]}", (label, e)
            drawn += ps
        assert len(drawn) == len(set(drawn)), (label, view, "a pair drawn twice")
        if view == "expanded":
            assert set(drawn) == want, (label, sorted(want - set(drawn))[:5], sorted(set(drawn) - want)[:5])
        else:   # pairs not drawn are inside one collapsed box
            inner = d.execute_script("return view.internal.map(p => p[0] + ':' + p[1])")
            inner = {tuple(int(x) for x in p.split(":")) for p in inner}
            assert set(drawn) | inner == want and not (set(drawn) & inner), label
    return g


@pytest.fixture(scope="module")
def browser():
    d = driver(1400, 900)
    yield d
    close(d)


def readme_example():
    import dyngrad as torch
    from dyngrad.viz import record
    with record(title="d = (a + b) * a") as rec:
        a = torch.tensor(1.0, requires_grad=True)
        b = torch.tensor(2.0, requires_grad=True)
        d = (a + b) * a
        d.backward()
    return rec


def test_readme_example(browser, tmp_path):
    rec = readme_example()
    page = tmp_path / "readme.html"
    rec.save_html(str(page))
    g = check_page(browser, page, rec, "README")
    ids = {n["op"] if n["kind"] == "op" else n["name"]: f"n{n['id']}" for n in rec.nodes}
    edges = {(e["v"], e["w"]) for e in g["edges"]}
    # a feeds MulBackward0 directly (one edge, not through AddBackward0), and AddBackward0
    assert (ids["a"], ids["MulBackward0"]) in edges and (ids["a"], ids["AddBackward0"]) in edges
    assert (ids["AddBackward0"], ids["MulBackward0"]) in edges and len(edges) == 4


def seed_scripts():
    return sorted(glob.glob(os.path.join(ROOT, "examples", "seeds", "*.py")))


@pytest.mark.parametrize("script", seed_scripts(), ids=os.path.basename)
def test_seed_examples(browser, tmp_path, script, capsys):
    from dyngrad.viz.explorer import explore_script as explore
    rec, code, err = explore(script, iterations="all")
    assert err is None and code == 0
    page = tmp_path / "seed.html"
    rec.save_html(str(page))
    # every recorded iteration is checked
    its = sorted({n.get("it", 1) for n in rec.nodes}) or [1]
    for it in its:
        browser.get("file://" + str(page))
        wait_ready(browser)
        if browser.execute_script("return ITS.length") > 1:
            browser.execute_script(f"const s = document.getElementById('iter'); s.value = '{it}'; s.onchange()")
        check_page_current(browser, rec, it, os.path.basename(script))


def check_page_current(d, rec, it, label):
    """check_page for the iteration already selected in the open page."""
    wait_ready(d)
    want = expected_pairs(rec, it)
    d.execute_script("document.getElementById('expandAll').click()")
    wait_ready(d)
    g = d.execute_script(GEOMETRY)
    assert g["problems"] == [], (label, it, g["problems"][:10])
    drawn = [tuple(int(x) for x in p.split(":")) for e in g["edges"] for p in e["pairs"].split()]
    assert all(len(e["pairs"].split()) == 1 for e in g["edges"])
    assert sorted(drawn) == sorted(want), (label, it)


def conformance_cases():
    if not os.path.isdir(CASES):
        return []
    out = []
    for f in sorted(glob.glob(os.path.join(CASES, "*.py"))):
        src = open(f).read()
        for line in src.splitlines():
            if line.startswith("def case_"):
                out.append((os.path.basename(f)[:-3], line[4:line.index("(")]))
    return out


def _case_module(name):
    sys.path.insert(0, os.path.dirname(CASES))
    sys.path.insert(0, CASES)
    spec = importlib.util.spec_from_file_location(f"_cases_{name}", os.path.join(CASES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_conformance_case_graphs(browser, tmp_path):
    """Every conformance case that builds a graph, drawn and checked (one page per case)."""
    import dyngrad as torch
    from dyngrad.viz import record
    cases = conformance_cases()
    if not cases:
        pytest.skip("the conformance cases are not next to this checkout")
    mods = {}
    checked = 0
    for fname, case in cases:
        mod = mods.get(fname) or mods.setdefault(fname, _case_module(fname))
        with record(title=case, iterations="all") as rec:
            try:
                getattr(mod, case)(torch)
            except Exception:  # noqa: BLE001 - cases about errors may raise: the page still draws
                pass
        if not any(n["kind"] == "op" for n in rec.nodes):
            continue
        page = tmp_path / "case.html"
        rec.save_html(str(page))
        browser.get("file://" + str(page))
        wait_ready(browser)
        assert severe(browser) == [], case
        its = sorted({n.get("it", 1) for n in rec.nodes})
        for it in sorted(set(its[:2] + its[-1:])):   # training cases: first, second and last
            if browser.execute_script("return ITS.length") > 1:
                browser.execute_script(f"const s = document.getElementById('iter'); s.value = '{it}'; s.onchange()")
            check_page_current(browser, rec, it, f"{fname}::{case}")
        checked += 1
    assert checked >= 40, checked


def cnn_step():
    """The demo's CNN: its first training step (forward, backward, optimizer step)."""
    import dyngrad as torch
    from dyngrad import nn
    from dyngrad.apps.digits import make_model
    from dyngrad.viz import record
    torch.manual_seed(0)
    model = make_model("cnn")
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    x = torch.rand(32, 1, 8, 8)
    y = torch.randint(0, 10, (32,))
    with record(title="CNN on digits: first training step") as rec:
        for _ in range(3):
            opt.zero_grad()
            loss = nn.CrossEntropyLoss()(model(x), y)
            loss.backward()
            opt.step()
    return rec


def screenshot(d, path):
    d.save_screenshot(str(path))
    target = os.environ.get("DYNGRAD_SCREENSHOTS")
    if target:
        shutil.copy(str(path), os.path.join(ROOT, target, os.path.basename(str(path))))


def test_cnn_step(browser, tmp_path):
    rec = cnn_step()
    assert rec.iterations == 3 and {e["it"] for e in rec.events} == {1}
    kinds = [e["kind"] for e in rec.events]
    assert kinds[-1] == "step" and "call" in kinds
    page = tmp_path / "cnn.html"
    rec.save_html(str(page))
    check_page(browser, page, rec, "CNN")
    # the module boxes: one per layer, side by side without overlap (checked above), titled
    browser.get("file://" + str(page))
    wait_ready(browser)
    titles = browser.execute_script("return [...document.querySelectorAll('g.cluster text')].map(t => t.textContent)")
    assert any("Conv2d" in t for t in titles) and any("Linear" in t for t in titles)
    screenshot(browser, tmp_path / "explorer-cnn.png")


def test_misuse_page(browser, tmp_path):
    from dyngrad.apps.misuse import gan_mistake
    rec, err = gan_mistake()
    assert isinstance(err, RuntimeError) and "backward through the graph a second time" in str(err)
    ev = [e for e in rec.events if e["kind"] == "error"]
    assert len(ev) == 1 and rec.nodes[ev[0]["node"]]["op"] == "TanhBackward0"
    assert ev[0]["fix"].startswith("call backward(retain_graph=True)")
    # what the first backward did stays on the page: its accumulations and frees come before
    i = rec.events.index(ev[0])
    assert any(e["kind"] == "accumulate" for e in rec.events[:i])
    assert any(e["kind"] == "free" and e["node"] == ev[0]["node"] for e in rec.events[:i])
    page = tmp_path / "misuse.html"
    rec.save_html(str(page))
    check_page(browser, page, rec, "misuse")
    d = browser
    d.get("file://" + str(page))
    wait_ready(d)
    from selenium.webdriver.common.by import By
    banner = d.find_element(By.ID, "banner")
    assert banner.is_displayed() and "backward failed at TanhBackward0" in banner.text
    assert "Fix: call backward(retain_graph=True)" in banner.text
    failed = d.find_elements(By.CSS_SELECTOR, "g.node.error")
    assert [g.text for g in failed] == ["TanhBackward0"]
    assert d.find_elements(By.CSS_SELECTOR, "g.node.freed") and d.find_elements(By.CSS_SELECTOR, "g.node.acc")
    failed[0].click()
    assert "backward failed here" in d.find_element(By.ID, "details").text.lower()
    screenshot(d, tmp_path / "explorer-misuse.png")
    # one step before the failure: no banner, the node not marked yet
    d.find_element(By.ID, "prev").click()
    assert not banner.is_displayed() and not d.find_elements(By.CSS_SELECTOR, "g.node.error")
