"""Jupyter: ``import dyngrad.notebook`` makes ``import torch`` give dyngrad in a notebook, a
recorder as a cell's last expression displays as the explorer page, and its source lines read
``Cell In[n], line m``.  The notebook is executed with nbconvert and its output opened in
headless Chromium."""
import os
import time

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbconvert")
pytest.importorskip("ipykernel")

pytestmark = pytest.mark.browser

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CELLS = [
    "import dyngrad.notebook",
    "import torch\nprint(torch.__name__, torch.nn.Linear.__module__)",
    "from dyngrad.viz import record\n"
    "a = torch.tensor([1.0, 2.0], requires_grad=True)\n"
    "with record(title='notebook graph') as rec:\n"
    "    y = (a * a + a).sum()\n"
    "    y.backward()\n"
    "rec",
]


def run_notebook(tmp_path):
    from nbconvert.preprocessors import ExecutePreprocessor
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    env = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.path.join(ROOT, "src") + (os.pathsep + env if env else "")
    try:
        ExecutePreprocessor(timeout=120, kernel_name="python3").preprocess(
            nb, {"metadata": {"path": str(tmp_path)}})
    finally:
        if env:
            os.environ["PYTHONPATH"] = env
        else:
            del os.environ["PYTHONPATH"]
    return nb


def test_notebook_shows_the_page(tmp_path):
    nb = run_notebook(tmp_path)
    out = nb.cells[1].outputs
    assert out and out[0]["text"].split() == ["dyngrad", "dyngrad.nn.modules.linear"], out
    shown = nb.cells[2].outputs
    assert len(shown) == 1 and shown[0]["output_type"] == "execute_result"
    html = shown[0]["data"]["text/html"]
    assert html.startswith("<iframe srcdoc=") and "notebook graph" in html
    assert "Cell In[3], line 4" in html   # where y = (a * a + a).sum() was typed
    page = tmp_path / "cell.html"
    page.write_text("<!DOCTYPE html><html><body>" + html + "</body></html>")
    from test_explorer_browser import close, driver, severe
    from selenium.webdriver.common.by import By
    d = driver()
    try:
        d.get(page.as_uri())
        d.switch_to.frame(d.find_element(By.TAG_NAME, "iframe"))
        end = time.time() + 30
        while d.execute_script("return document.body.dataset.ready") != "1":
            assert time.time() < end
            time.sleep(0.05)
        labels = sorted(g.text for g in d.find_elements(By.CSS_SELECTOR, "g.node"))
        assert labels == ["AddBackward0", "MulBackward0", "SumBackward0", "a (2)"], labels
        d.find_elements(By.CSS_SELECTOR, "g.node")[-1].click()
        assert severe(d) == []
    finally:
        close(d)
