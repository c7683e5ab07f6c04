"""Derivatives of every order of the activations, against PyTorch: the value of each order
up to the fourth (or PyTorch's error where its chain ends), the node each gradient taken with
create_graph records (PyTorch's ``<op>_backward`` nodes, GeluBackwardBackward0 ...) and the
values those nodes save."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402

X = [0.3, -0.2, 1.7, -2.5, 0.0]


def _cases(lib):
    F = lib.nn.functional
    return {
        "silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
        "mish": F.mish, "softplus": F.softplus,
        "softplus_beta": lambda x: F.softplus(x, beta=2.0, threshold=0.5),
        "elu": F.elu, "elu_alpha": lambda x: F.elu(x, alpha=0.5),
        "celu": lambda x: F.celu(x, alpha=2.0), "selu": F.selu,
        # alpha not representable in single precision: PyTorch's celu derivatives round it
        "celu_alpha": lambda x: F.celu(x, alpha=0.7),
        "celu_alpha_": lambda x: F.celu(x * 1, alpha=0.7, inplace=True),
        "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "hardtanh": F.hardtanh,
        "relu6": F.relu6, "logsigmoid": F.logsigmoid, "hardswish": F.hardswish,
        "hardsigmoid": F.hardsigmoid, "softshrink": F.softshrink, "hardshrink": F.hardshrink,
        "threshold": lambda x: F.threshold(x, 0.1, 2.0),
        "rrelu_eval": F.rrelu,
        "elu_": lambda x: F.elu(x * 1, inplace=True),
        "celu_": lambda x: F.celu(x * 1, inplace=True),
        "selu_": lambda x: F.selu(x * 1, inplace=True),
        "leaky_relu_": lambda x: F.leaky_relu(x * 1, 0.1, inplace=True),
        "silu_": lambda x: F.silu(x * 1, inplace=True),
        "mish_": lambda x: F.mish(x * 1, inplace=True),
        "hardswish_": lambda x: F.hardswish(x * 1, inplace=True),
    }


NAMES = sorted(_cases(dyngrad))
# orders whose node comes from the activation's own formulas (a deeper one may come from the
# backward of an op the formula uses, compared in that op's tests)
_NAMED_ORDERS = 2


def _orders(lib, name):
    """(names, values, error) of the output and gradients of orders 1..4 (each taken with
    create_graph), stopping at the first error."""
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    y = _cases(lib)[name](x)
    names = [y.grad_fn.name()]
    values = []
    cur = y
    try:
        for _ in range(4):
            g, = lib.autograd.grad(cur.sum(), x, create_graph=True)
            names.append(None if g.grad_fn is None else g.grad_fn.name())
            values.append(np.array(g.tolist()))
            cur = g
    except RuntimeError as e:
        return names, values, str(e)
    return names, values, None


@pytest.mark.parametrize("name", NAMES)
def test_every_order_as_pytorch(name):
    tn, tv, te = _orders(torch, name)
    dn, dv, de = _orders(dyngrad, name)
    assert (de is None) == (te is None), (de, te)
    if te is not None:
        assert de == te
    assert len(dv) == len(tv)
    for order, (a, b) in enumerate(zip(dv, tv), 1):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"order {order}")
    assert dn[:_NAMED_ORDERS + 1] == tn[:_NAMED_ORDERS + 1]


@pytest.mark.parametrize("name", ["gelu", "softplus", "elu", "selu", "logsigmoid", "hardswish",
                                  "leaky_relu", "hardtanh", "softshrink"])
def test_saved_values_of_the_backward_node(name):
    def saved(lib):
        x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
        g, = lib.autograd.grad(_cases(lib)[name](x).sum(), x, create_graph=True)
        node = g.grad_fn
        return {a: getattr(node, a).tolist() for a in dir(node)
                if a.startswith("_saved_") and hasattr(getattr(node, a), "tolist")}
    mine, theirs = saved(dyngrad), saved(torch)
    assert mine and set(mine) <= set(theirs)
    for k, v in mine.items():
        assert v == theirs[k], k


def test_freed_backward_node_refuses_its_saved_values():
    x = dyngrad.tensor(X, dtype=dyngrad.float64, requires_grad=True)
    g, = dyngrad.autograd.grad(dyngrad.nn.functional.gelu(x).sum(), x, create_graph=True)
    g.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        g.grad_fn._saved_self


def _names(fn, depth=0, out=None):
    """The node names of a graph, depth first, as one list (the graph's shape and order)."""
    out = [] if out is None else out
    if fn is None or depth > 8:
        out.append(None)
        return out
    out.append(fn.name())
    for nxt, _ in fn.next_functions:
        _names(nxt, depth + 1, out)
    return out


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_tanh_sigmoid_backward_nodes_of_every_order(name, dtype):
    """The gradients of tanh/sigmoid under create_graph are PyTorch's tanh_backward /
    sigmoid_backward nodes, whose own gradients record PyTorch's formulas: the graphs of the
    first three derivatives, their saved names and values equal PyTorch's (for complex input
    the values: dyngrad records its conjugations, see docs/reliability.md)."""
    res = []
    for L in (torch, dyngrad):
        x = L.tensor([0.3 + 0.2j, -0.7 - 0.1j] if dtype == "complex128" else [0.3, -0.7],
                     dtype=getattr(L, dtype), requires_grad=True)
        y = getattr(L, name)(x)
        g = y if dtype == "float64" else y.abs()
        out = []
        for _ in range(3):
            g, = L.autograd.grad(g.sum(), x, create_graph=True)
            if dtype == "complex128":
                g = g.real
            out.append((_names(g.grad_fn), g.detach().numpy().copy()))
        d = g.grad_fn if dtype == "float64" else g.grad_fn.next_functions[0][0]
        out.append(sorted(a for a in dir(d) if a.startswith("_saved_")))
        res.append(out)
    theirs, mine = res
    for (nt, vt), (nm, vm) in zip(theirs[:3], mine[:3]):
        assert dtype == "complex128" or nm == nt
        np.testing.assert_allclose(vm, vt, rtol=1e-12, atol=1e-12)
    assert dtype == "complex128" or mine[3] == theirs[3]
