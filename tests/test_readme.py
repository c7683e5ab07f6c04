"""The README's quickstart runs and prints what its comments say; docstring examples run."""
import contextlib
import doctest
import io
import os
import re

import pytest

import dyngrad

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quickstart_prints_what_it_says():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    block = re.search(r"## Quickstart\s+```python\n(.*?)```", text, re.S).group(1)
    lines = block.strip().splitlines()
    *body, last = lines
    out = io.StringIO()
    ns = {}
    with contextlib.redirect_stdout(out):
        exec("\n".join(body), ns)
    printed = out.getvalue().splitlines()
    expected = [re.sub(r"\s+#.*", "", ln.split("# ", 1)[1]).strip()
                for ln in body if ln.startswith("print(") and "# " in ln]
    assert printed[0] == expected[0]
    assert printed[1].startswith("((<AddBackward0 object at") and "AccumulateGrad" in printed[1]
    assert printed[2] == expected[2]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        exec(last.split("#")[0], ns)


@pytest.mark.parametrize("module", ["dyngrad.autograd.grad_mode", "dyngrad.autograd.function",
                                    "dyngrad.autograd.gradcheck", "dyngrad._tensor",
                                    "dyngrad.nn.parameter", "dyngrad.nn.modules.linear",
                                    "dyngrad.optim.sgd"])
def test_docstring_examples(module):
    import importlib
    mod = importlib.import_module(module)
    finder = doctest.DocTestFinder()
    tests = finder.find(mod)
    # classes defined here but shown under the package's name (dyngrad.Tensor) too
    for name, obj in vars(mod).items():
        if isinstance(obj, type) and obj.__module__ != module and any(
                getattr(getattr(v, "__code__", None), "co_filename", None) == mod.__file__
                for v in vars(obj).values()):
            tests += finder.find(obj, f"{module}.{name}", module=False, globs=dict(vars(mod)))
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0


def _generated(key: str, make) -> None:
    """The README section between ``<!-- key:start -->`` and ``<!-- key:end -->`` is what
    tools/readme_tables.py's ``make`` gives now (regenerate with ``python tools/readme_tables.py``)."""
    import re
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(rf"<!-- {key}:start -->\n(.*?)\n<!-- {key}:end -->", text, re.S)
    assert m, f"README has no {key} markers"
    assert m.group(1) == make(), f"README {key} is stale: run python tools/readme_tables.py"


def _readme_tables():
    import sys
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import readme_tables
    finally:
        sys.path.pop(0)
    return readme_tables


def test_support_table_is_generated_from_the_registry():
    """The README's support table is what tools/readme_tables.py derives from the op registry
    and the nn/optim namespaces."""
    _generated("support-table", _readme_tables().support_table)


def test_compile_table_is_generated_from_the_measurements():
    """The README's compiled-step table is what tools/readme_tables.py makes of
    benchmarks/results/compile.json (the one run it was measured in)."""
    _generated("compile-table", _readme_tables().compile_table)


def test_every_name_in_the_support_table_exists():
    """Each op listed in the table runs as ``dyngrad.<name>`` or ``Tensor.<name>``."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    block = text.split("<!-- support-table:start -->")[1].split("<!-- support-table:end -->")[0]
    ops_part = block.split("| namespace |")[0]
    names = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)✓?`", ops_part)
    assert len(names) > 100
    missing = [n for n in names if not (hasattr(dyngrad, n) or hasattr(dyngrad.Tensor, n))]
    assert not missing, missing
