"""torchviz's ``make_dot`` for dyngrad graphs: the same nodes, edges, order and colours, as a
``graphviz.Digraph`` (the ``graphviz`` package is imported only when a graph is drawn)."""
from __future__ import annotations

INSTALL_HINT = ("the Graphviz 'dot' program was not found on PATH; make_dot builds the graph "
                "without it, but rendering needs it. Install Graphviz: "
                "'sudo apt-get install graphviz' (Debian/Ubuntu), 'brew install graphviz' (macOS), "
                "'conda install graphviz', or see https://graphviz.org/download/")


class GraphvizNotFound(RuntimeError):
    """Rendering needs Graphviz's ``dot`` executable and it is not installed."""


_DIGRAPH_CLS = None


def _digraph_cls():
    """A ``graphviz.Digraph`` subclass that explains a missing ``dot`` and shows inline in Jupyter."""
    global _DIGRAPH_CLS
    if _DIGRAPH_CLS is not None:
        return _DIGRAPH_CLS
    try:
        import graphviz
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("make_dot needs the 'graphviz' Python package: pip install graphviz "
                          "(or pip install 'dyngrad[viz]')") from e

    missing = graphviz.ExecutableNotFound

    class DotNotFound(GraphvizNotFound, missing):
        def __init__(self, cause):
            RuntimeError.__init__(self, INSTALL_HINT + f" ({cause})")

        def __str__(self):
            return self.args[0]

    def _guard(method):
        def wrapped(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except missing as e:
                if isinstance(e, GraphvizNotFound):
                    raise
                raise DotNotFound(e) from None
        wrapped.__name__ = method.__name__
        wrapped.__doc__ = method.__doc__
        return wrapped

    class Digraph(graphviz.Digraph):
        """A graphviz Digraph whose rendering errors say how to install Graphviz."""

        render = _guard(graphviz.Digraph.render)
        pipe = _guard(graphviz.Digraph.pipe)
        view = _guard(graphviz.Digraph.view)
        _repr_mimebundle_ = _guard(graphviz.Digraph._repr_mimebundle_)

        def _repr_svg_(self):
            return self.pipe(format="svg", encoding="utf-8")

    _DIGRAPH_CLS = Digraph
    return Digraph


def _size_str(size) -> str:
    return "(" + ", ".join("%d" % v for v in size) + ")"


_SAVED_PREFIX = "_saved_"


def _saved_attrs(fn):
    """``(name, value)`` of what a node saved, by PyTorch's names (``_saved_self`` -> "self"),
    as torchviz reads them: every ``_saved_*`` attribute its ``dir()`` lists."""
    out = []
    for attr in dir(fn):
        if not attr.startswith(_SAVED_PREFIX):
            continue
        try:
            val = getattr(fn, attr)
        except RuntimeError:  # freed by a backward: nothing to draw
            continue
        out.append((attr[len(_SAVED_PREFIX):], val))
    return out


def _saved_items(fn, keep):
    """``(name, tensor, id)`` of the tensors a node saved (for ``show_saved``); ``keep`` holds
    each drawn tensor so that no id is reused while the drawing is made."""
    from .._tensor import Tensor
    out = []
    for name, val in _saved_attrs(fn):
        if isinstance(val, Tensor):
            keep.append(val)
            out.append((name, val, id(val)))
        elif isinstance(val, tuple):
            for i, t in enumerate(val):
                if isinstance(t, Tensor):
                    keep.append(t)
                    out.append((f"{name}[{i}]", t, id(t)))
    return out


def _attrs_of(fn) -> dict:
    """The values a node saved, by name, as torchviz's ``show_attrs`` prints them."""
    from .._tensor import Tensor
    attrs = {}
    for name, val in _saved_attrs(fn):
        if isinstance(val, Tensor):
            attrs[name] = "[saved tensor]"
        elif isinstance(val, tuple) and any(isinstance(t, Tensor) for t in val):
            attrs[name] = "[saved tensors]"
        else:
            attrs[name] = str(val)
    return attrs


def _fn_name(fn, show_attrs, max_attr_chars):
    name = type(fn).__name__
    if not show_attrs:
        return name
    attrs = _attrs_of(fn)
    if not attrs:
        return name
    max_attr_chars = max(max_attr_chars, 3)
    col1 = max(len(k) for k in attrs)
    col2 = min(max(len(str(v)) for v in attrs.values()), max_attr_chars)
    sep = "-" * max(col1 + col2 + 2, len(name))
    fmt = "%-" + str(col1) + "s: %" + str(col2) + "s"

    def truncate(s):
        return s[:col2 - 3] + "..." if len(s) > col2 else s
    return name + "\n" + sep + "\n" + "\n".join(fmt % (k, truncate(str(v))) for k, v in attrs.items())


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """Graphviz drawing of the autograd graph of ``var`` (a tensor or a tuple of tensors).

    Grey boxes are backward nodes named by class; lightblue are leaves that will receive
    ``.grad`` (named from ``params``); orange are saved tensors; darkolivegreen1 the outputs,
    with their view bases in darkolivegreen3 linked by a dotted edge.
    """
    from .._tensor import Tensor
    if params is not None:
        assert all(isinstance(p, Tensor) for p in params.values())
        param_map = {id(v): k for k, v in params.items()}
    else:
        param_map = {}

    node_attr = dict(style="filled", shape="box", align="left", fontsize="10",
                     ranksep="0.1", height="0.2", fontname="monospace")
    dot = _digraph_cls()(node_attr=node_attr, graph_attr=dict(size="12,12"))
    seen = set()
    keep: list = []  # saved tensors drawn (their ids must stay theirs)

    def var_name(v, name=None):
        if not name:
            name = param_map.get(id(v), "")
        shape = v.shape if not hasattr(v, "size") or not callable(v.size) else v.size()
        return "%s\n %s" % (name, _size_str(shape))

    def _expand(stack):
        # process deferred ("edge", fn, u) and ("tail", fn, tensors) items in order
        while stack and isinstance(stack[-1], tuple):
            kind, fn, x = stack.pop()
            if kind == "edge":
                dot.edge(str(id(x)), str(id(fn)))
                if id(x) not in seen:
                    stack.append(x)
                    return
            else:
                for t in x:
                    seen.add(id(t))
                    dot.edge(str(id(t)), str(id(fn)), dir="none")
                    dot.node(str(id(t)), var_name(t), fillcolor="orange")

    def run(root):
        stack = [root]
        while stack:
            top = stack[-1]
            if isinstance(top, tuple):
                _expand(stack)
                continue
            stack.pop()
            fn = top
            if id(fn) in seen:
                _expand(stack)
                continue
            seen.add(id(fn))
            if show_saved:
                for nm, val, vid in _saved_items(fn, keep):
                    seen.add(vid)
                    dot.edge(str(id(fn)), str(vid), dir="none")
                    dot.node(str(vid), var_name(val, nm), fillcolor="orange")
            if type(fn).__name__ == "AccumulateGrad":
                v = fn.variable
                seen.add(id(v))
                dot.node(str(id(v)), var_name(v), fillcolor="lightblue")
                dot.edge(str(id(v)), str(id(fn)))
            dot.node(str(id(fn)), _fn_name(fn, show_attrs, max_attr_chars))
            stack.append(("tail", fn, _custom_saved(fn)))
            for u, _ in reversed(fn.next_functions):
                if u is not None:
                    stack.append(("edge", fn, u))
            _expand(stack)

    def add_base_tensor(v, color="darkolivegreen1"):
        if id(v) in seen:
            return
        seen.add(id(v))
        dot.node(str(id(v)), var_name(v), fillcolor=color)
        if v.grad_fn is not None:
            run(v.grad_fn)
            dot.edge(str(id(v.grad_fn)), str(id(v)))
        if v._is_view():
            add_base_tensor(v._base, color="darkolivegreen3")
            dot.edge(str(id(v._base)), str(id(v)), style="dotted")

    if isinstance(var, tuple):
        for v in var:
            add_base_tensor(v)
    else:
        add_base_tensor(var)
    resize_graph(dot)
    return dot


def _custom_saved(fn):
    """Tensors a custom ``Function`` saved (torchviz always draws them)."""
    if not hasattr(type(fn), "saved_tensors") or getattr(fn, "_saved", None) is None:
        return []
    try:
        return [t for t in fn.saved_tensors if t is not None]
    except RuntimeError:
        return []


def make_dot_from_trace(trace):
    """Not available, as in torchviz (moved to PyTorch's TensorBoard support)."""
    raise NotImplementedError("This function has been moved to pytorch core and can be found "
                              "here: https://pytorch.org/docs/stable/tensorboard.html")


def resize_graph(dot, size_per_element=0.15, min_size=12):
    """Scale the drawing's size attribute with its number of lines (as torchviz does)."""
    size = max(min_size, len(dot.body) * size_per_element)
    dot.graph_attr.update(size=str(size) + "," + str(size))

