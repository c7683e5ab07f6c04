"""The graph each op records, against PyTorch, over every differentiable op-table row.

For each row and sample the row's callable runs with dyngrad and with PyTorch (``tests/twin``)
on leaves that require grad; from each differentiable output the recorded graph is walked:
every node's name and its ``next_functions`` (the edge's input number included), down to the
leaves' ``AccumulateGrad`` (named by which leaf it accumulates into).  The two walks must be
equal: a node of another name, a missing or extra node, or an edge to another input is a
picture of the computation that PyTorch does not draw.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402
from tests.optable import all_rows  # noqa: E402
from tests.twin import NoTwin, twin  # noqa: E402

ROWS = [r for r in all_rows() if r.grad and r.samples]


def _twin_or_none(fn):
    try:
        return twin(fn)
    except NoTwin:
        return None


TWINS = {r.name: _twin_or_none(r.fn) for r in ROWS}
MAX_NODES = 60


def _name(fn):
    n = fn.name() if hasattr(fn, "name") else type(fn).__name__
    return n.replace("torch::autograd::", "")


def walk(out, leaves):
    """The graph under ``out`` as nested tuples: (name, ((input_nr, child) | None, ...))."""
    count = [0]
    memo = {}

    def node(fn):
        if fn is None:
            return None
        key = id(fn)
        if key in memo:  # a shared node: named once, then referred to
            return ("@" + memo[key],)
        count[0] += 1
        if count[0] > MAX_NODES:
            return ("...",)
        name = _name(fn)
        if name == "AccumulateGrad":
            var = fn.variable
            idx = next((i for i, t in enumerate(leaves) if t is var), "?")
            memo[key] = f"leaf{idx}"
            return ("AccumulateGrad", idx)
        memo[key] = f"{name}#{count[0]}"
        return (name, tuple(None if f is None else (nr, node(f)) for f, nr in fn.next_functions))

    return node(out.grad_fn)


def _graphs(lib, fn, sample):
    leaves = sample.make(lib)
    out = fn(*leaves, *sample.extra, **sample.kwargs)
    outs = [out] if isinstance(out, lib.Tensor) else [o for o in out if isinstance(o, lib.Tensor)] \
        if isinstance(out, (tuple, list)) else []
    return [walk(o, leaves) for o in outs if o.grad_fn is not None]


def _first_difference(a, b, path="out"):
    if a == b:
        return None
    if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b) or a[0] != b[0]:
        sa = a[0] if isinstance(a, tuple) and a else a
        sb = b[0] if isinstance(b, tuple) and b else b
        return f"{path}: dyngrad {sa!r}, torch {sb!r}"
    if len(a) == 2 and isinstance(a[1], tuple):
        if len(a[1]) != len(b[1]):
            return f"{path} ({a[0]}): {len(a[1])} next_functions, torch {len(b[1])}"
        for i, (x, y) in enumerate(zip(a[1], b[1])):
            if x is None or y is None:
                if (x is None) != (y is None):
                    return f"{path}.next[{i}]: dyngrad {x and x[1][0]!r}, torch {y and y[1][0]!r}"
                continue
            if x[0] != y[0]:
                return f"{path}.next[{i}]: input_nr {x[0]} vs {y[0]}"
            d = _first_difference(x[1], y[1], f"{path}.{a[0]}[{i}]")
            if d:
                return d
    return f"{path}: {a!r} vs {b!r}"


# Rows whose graph differs from PyTorch's, by root cause (expected failures while they do; a
# listed row that matches fails, so the list holds only live differences).
_INDEX_EDGE = "an edge (None) for the index/mask argument, which PyTorch's node does not have"
_COMPOSITE = "PyTorch records its composite's nodes (permute/unsqueeze/bmm/view...); dyngrad one node"
_NN = "nn.functional records another composition than PyTorch's"
_NAME = "another node overload (name) than PyTorch's"
KNOWN: dict = {
}


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_recorded_graph_matches_pytorch(row):
    tw = TWINS[row.name]
    if tw is None:
        pytest.skip("no PyTorch counterpart")
    diffs = []
    for s in row.samples:
        try:
            exp = _graphs(torch, tw, s)
        except Exception:  # noqa: BLE001 - PyTorch refuses the sample: nothing to compare
            continue
        got = _graphs(dyngrad, row.fn, s)
        if len(got) != len(exp):
            diffs.append(f"{s!r}: {len(got)} outputs with a graph, torch {len(exp)}")
            continue
        for g, e in zip(got, exp):
            d = _first_difference(g, e)
            if d:
                diffs.append(f"{s!r}: {d}")
    if row.name in KNOWN:
        if diffs:
            pytest.xfail(KNOWN[row.name])
        pytest.fail(f"{row.name} now matches PyTorch: remove it from KNOWN")
    assert not diffs, "\n".join(diffs)


_VIEWS = {
    "select": lambda x: x[1], "select_neg": lambda x: x.select(1, -1),
    "slice": lambda x: x[:, 1:3], "slice_step": lambda x: x[1:, ::2],
    "narrow": lambda x: x.narrow(1, 1, 2), "tensor_split": lambda x: x.tensor_split(2, 1)[1],
}


@pytest.mark.parametrize("name", sorted(_VIEWS))
def test_gradient_of_a_view_records_pytorchs_backward_node(name):
    """Under create_graph the gradient of a select or slice view is PyTorch's select_backward /
    slice_backward node (SelectBackwardBackward0, SliceBackwardBackward0), with its saved
    values and its graph down to the leaf."""
    graphs, saved = [], []
    for lib in (dyngrad, torch):
        x = lib.tensor([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 3.0], [2.5, -2.0, 1.0, 0.75]],
                       dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(_VIEWS[name](x).exp().sum(), x, create_graph=True)
        graphs.append(walk(g, [x]))
        saved.append({a: getattr(g.grad_fn, a) for a in dir(g.grad_fn) if a.startswith("_saved_")})
    assert graphs[0] == graphs[1], _first_difference(*graphs)
    assert saved[0] == saved[1]
