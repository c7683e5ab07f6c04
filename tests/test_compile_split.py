"""dyngrad.compile splits a function at a graph break, at Module boundaries: the function's own
code runs eagerly and each Module it calls runs as a compiled region (forward replayed, backward
through CompiledFunctionBackward), a region holding the break being split in its turn.  Every
run is compared with an eager copy bit for bit (losses, parameters, gradients)."""
import io
from contextlib import redirect_stdout

import numpy as np
import pytest

import dyngrad as T
from dyngrad import _dynamo, nn
from dyngrad._dynamo.exc import Unsupported


# every first replay is also run eagerly and compared (check_replay, tests/conftest.py)
pytestmark = pytest.mark.usefixtures("check_replay")


class Printing(nn.Module):
    """A block that prints its hidden activations' mean (a graph break inside its forward)."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 8)
        self.outer = nn.Linear(8, 3)

    def forward(self, x):
        h = T.tanh(self.inner(x))
        print(f"{h.mean().item():.3f}")
        return self.outer(h)


def _models(kind):
    out = []
    for _ in range(2):
        T.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)) if kind == "mlp" \
            else nn.Sequential(Printing(), nn.ReLU())
        out.append((m, T.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)))
    return out


def _step(m, opt, log):
    loss_fn = nn.CrossEntropyLoss()

    def step(x, y):
        loss = loss_fn(m(x), y)
        log.append(loss.item())   # the graph break
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss
    return step


def _batches(n, rows=5):
    rng = np.random.default_rng(0)
    return [(T.tensor(rng.standard_normal((rows, 4)).astype(np.float32)),
             T.tensor(rng.integers(0, 3, rows))) for _ in range(n)]


def _same_params(a, b):
    return all(np.array_equal(p.detach().numpy(), q.detach().numpy())
               for p, q in zip(a.parameters(), b.parameters()))


def test_item_in_a_step_splits_and_the_modules_replay():
    (m1, o1), (m2, o2) = _models("mlp")
    l1, l2 = [], []
    eager, compiled = _step(m1, o1, l1), T.compile(_step(m2, o2, l2))
    for x, y in _batches(8):
        a, b = eager(x, y), compiled(x, y)
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    assert l1 == l2 and _same_params(m1, m2)
    assert compiled.split and compiled.entries == []
    assert "graph break: Tensor.item()" in compiled.eager_reason
    regions = {r.name.rsplit("/", 1)[1]: r for _, r in compiled.split_regions.values()}
    assert set(regions) == {"Sequential", "CrossEntropyLoss"}
    for r in regions.values():
        assert r.eager_reason is None and len(r.entries) == 1
        assert r.entries[0].replays == 6   # (call 1: the break; call 2: each region's capture)
    # the model's region captured its backward: autograd runs it through the region's node
    x, y = _batches(1)[0]
    out = regions["Sequential"](x)
    assert type(out.grad_fn).__name__ == "CompiledFunctionBackward"
    assert T.nn.Module.__call__ is T.nn.Module.__dict__["__call__"]
    assert "_routed" not in T.nn.Module.__call__.__qualname__


def test_a_break_inside_a_module_splits_that_module_in_its_turn():
    (m1, o1), (m2, o2) = _models("printing")
    l1, l2 = [], []
    eager, compiled = _step(m1, o1, l1), T.compile(_step(m2, o2, l2))
    out1, out2 = io.StringIO(), io.StringIO()
    for x, y in _batches(6):
        with redirect_stdout(out1):
            eager(x, y)
        with redirect_stdout(out2):
            compiled(x, y)
    assert out1.getvalue() == out2.getvalue() and out1.getvalue().count("\n") == 6
    assert l1 == l2 and _same_params(m1, m2)
    (_, seq), (_, _loss) = compiled.split_regions.values()
    assert seq.split and "graph break" in seq.eager_reason   # the Sequential holds the print
    (_, printing), (_, relu) = seq.split_regions.values()
    assert printing.split and relu.eager_reason is None and relu.entries[0].replays > 0
    names = sorted(r.name.rsplit("/", 1)[1] for _, r in printing.split_regions.values())
    assert names == ["Linear", "Linear"]   # inner and outer, each replayed around the print
    for _, r in printing.split_regions.values():
        # (call 1: the step's break; 2: the Sequential's; 3: the Printing block's; 4: the
        # Linear layers' captures; 5 and 6 replay)
        assert r.eager_reason is None and r.entries[0].replays == 2


def test_fullgraph_still_refuses_the_break():
    (m, o), _ = _models("mlp")
    step = T.compile(_step(m, o, []), fullgraph=True)
    x, y = _batches(1)[0]
    with pytest.raises(Unsupported, match="Tensor.item"):
        step(x, y)


def test_module_call_is_restored_after_an_error_inside_a_split_step():
    (m, o), _ = _models("mlp")
    calls = []

    def step(x, fail):
        out = m(x)
        calls.append(out.sum().item())
        if fail:
            raise ValueError("stop")
        return out

    cs = T.compile(step)
    x = _batches(1)[0][0]
    cs(x, False)
    with pytest.raises(ValueError, match="stop"):
        cs(x, True)
    assert T.nn.Module.__call__ is T.nn.Module.__dict__["__call__"]
    assert "_routed" not in T.nn.Module.__call__.__qualname__
    assert np.array_equal(m(x).detach().numpy(), cs(x, False).detach().numpy())


def test_regions_follow_their_guards_and_reset_forgets_them():
    (m, o), _ = _models("mlp")

    def f(x):
        y = m(x)
        return y * y.sum().item()

    cf = T.compile(f)
    for rows in (5, 5, 5, 7, 7):
        x = _batches(1, rows)[0][0]
        assert np.array_equal(cf(x).detach().numpy(), f(x).detach().numpy())
    ((_, region),) = cf.split_regions.values()
    assert len(region.entries) == 2 and len(region.recompile_reasons) == 1
    assert "size mismatch at index 0. expected 5, actual 7" in region.recompile_reasons[0][0]
    assert region.where is nn.Sequential.forward   # (what logs and the explorer name it by)
    _dynamo.reset()
    assert not cf.split and cf.split_regions == {}


def test_modules_called_by_code_outside_the_split_function_run_as_usual():
    (m, o), _ = _models("mlp")
    cf = T.compile(lambda x: m(x) * m(x).sum().item())
    x = _batches(1)[0][0]
    for _ in range(3):
        cf(x)
    n = len(cf.split_regions)
    m(x)   # a plain call: no region, no capture
    assert len(cf.split_regions) == n == 1


def test_the_page_shows_the_split_and_its_regions():
    from dyngrad.viz.compiled import compiled_html
    (m, o), _ = _models("mlp")
    step = T.compile(_step(m, o, []))
    for x, y in _batches(4):
        step(x, y)
    page = compiled_html(step)
    assert '"split":true' in page and "/Sequential" in page and "/CrossEntropyLoss" in page


@pytest.mark.browser
def test_the_rendered_page_names_the_split_and_shows_each_region(tmp_path):
    """In headless Chromium: the split function says that it is split and names its regions,
    and every region has its own section with its program (never shown as eager)."""
    import re
    from dyngrad.viz.compiled import save_compiled_html
    from tests.pages import rendered, shown_text
    (m, o), _ = _models("printing")
    step = T.compile(_step(m, o, []))
    with redirect_stdout(io.StringIO()):
        for x, y in _batches(6):
            step(x, y)
    path = tmp_path / "split.html"
    save_compiled_html(step, path)
    dom = rendered(path)
    assert 'data-ready="1"' in dom
    text = shown_text(dom)
    n = step.name
    assert f"split: its own code runs eagerly, the Modules it calls as compiled regions " \
           f"({n}/Sequential, {n}/CrossEntropyLoss)" in re.sub(r"\s+", " ", text)
    for name in ("Sequential", "Sequential/Printing", "Sequential/ReLU",
                 "Sequential/Printing/Linear", "CrossEntropyLoss"):
        assert f"{n}/{name}" in text
    # the regions that replay show their program and their replays; the split ones say so
    assert text.count("split: its own code runs eagerly") == 3   # step, Sequential, Printing
    assert "runs eagerly" not in re.sub(r"split: its own code runs eagerly", "", text)
    assert len(re.findall(r"program #0", text)) >= 4
