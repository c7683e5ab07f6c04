"""Source lines name the user's frame: dyngrad's own programs (the demo, its apps) are user
code, not the console script that started them; IPython cells read ``Cell In[n], line m``."""
import os

import pytest

from dyngrad.autograd import errors


def test_nodes_made_by_dyngrad_apps_name_the_app_line():
    from dyngrad.apps.misuse import gan_mistake
    rec, err = gan_mistake()
    files = {os.path.basename(n["src"]["file"]) for n in rec.nodes if n["kind"] == "op"}
    assert files == {"misuse.py"}, files
    # and the failure's message points there too, not at this test or a console script
    assert "misuse.py:" in str(err)


def test_demo_walkthrough_nodes_name_the_demo_line():
    from dyngrad.commands.demo import walkthrough
    from dyngrad.viz import record
    lines = []
    with record() as rec:
        walkthrough(print=lambda *a: lines.append(" ".join(str(x) for x in a)))
    files = {os.path.basename(n["src"]["file"]) for n in rec.nodes if n["kind"] == "op"}
    assert files == {"demo.py"}, files
    assert any("second backward" in ln for ln in lines)


def test_ipython_cell_names():
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        shell.run_cell("import dyngrad as torch\n"
                       "a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
                       "y = (a * a).sum()\n", store_history=True)
        n = shell.execution_count - 1
        y = shell.user_ns["y"]
        src = errors.source_of(y.grad_fn)
        assert errors.where_text(src) == f"Cell In[{n}], line 3"
        y.backward()
        with pytest.raises(RuntimeError) as e:
            y.backward()
        assert f"MulBackward0 was created at Cell In[{n}], line 3: y = (a * a).sum()" in str(e.value)
        # the explorer shows the same place
        from dyngrad.viz import record
        shell.user_ns["record"] = record
        shell.run_cell("with record() as rec:\n"
                       "    b = torch.ones(2, requires_grad=True)\n"
                       "    z = (b * 2).sum()\n", store_history=True)
        m = shell.execution_count - 1
        rec = shell.user_ns["rec"]
        where = {n["op"]: n["src"]["where"] for n in rec.nodes if n["kind"] == "op"}
        assert where == {"MulBackward0": f"Cell In[{m}], line 3", "SumBackward0": f"Cell In[{m}], line 3"}
    finally:
        InteractiveShell.clear_instance()


def test_an_ops_first_call_names_the_callers_line(tmp_path):
    """A declared op's code is compiled on its first call, through a stand-in: the node that
    call records still names the caller's line (in a fresh interpreter, where every call of
    the script is a first call)."""
    import subprocess
    import sys
    script = tmp_path / "first_call.py"
    script.write_text(
        "import dyngrad as torch\n"
        "from dyngrad.viz import record\n"
        "x = torch.randn(3, 4, requires_grad=True)\n"
        "with record() as rec:\n"
        "    y = torch.logcumsumexp(x, 1).kthvalue(2, 1).values.sum()\n"
        "print(sorted({n['src']['file'] for n in rec.nodes if n['kind'] == 'op'}))\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == repr([str(script)]), out
