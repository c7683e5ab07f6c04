"""The explorer page in headless Chromium: no console errors, stepping changes the view,
clicking a node fills the details panel."""
import os
import shutil
import tempfile

import pytest

pytestmark = pytest.mark.browser

from tests.pages import CHROMIUM  # noqa: E402
DRIVER = next((p for p in ("/usr/bin/chromedriver", shutil.which("chromedriver") or "")
               if p and os.path.exists(p)), None)


def rnn_page(path):
    import dyngrad as torch
    from dyngrad.viz import record
    with record(title="RNN cell") as rec:
        Wh = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6], [-0.7, 0.8, 0.9]], requires_grad=True)
        Wx = torch.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 0.75]], requires_grad=True)
        x = torch.tensor([[-0.8], [1.6]])
        h = torch.tensor([[0.2], [-0.4], [1.0]])
        i2h = Wx.mm(x)
        h2h = Wh.mm(h)
        next_h = (i2h + h2h).tanh()
        out = next_h.sum()
        out.backward()
    rec.save_html(path)
    return rec


def driver(width=1300, height=760):
    if not CHROMIUM or not DRIVER:
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium "
                    "chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="dyngrad-chromium-")
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run",
              "--disable-dev-shm-usage", f"--user-data-dir={profile}",
              f"--window-size={width},{height}"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)
    d._profile_dir = profile
    return d


def close(d):
    try:
        d.quit()
    finally:
        shutil.rmtree(d._profile_dir, ignore_errors=True)


def severe(d):
    return [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]


def test_explorer_in_browser(tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    page = tmp_path / "rnn.html"
    rec = rnn_page(str(page))
    d = driver()
    try:
        d.get(page.as_uri())
        assert severe(d) == []
        shown = "g.node:not(.future)"   # nodes not created yet at this step are hidden
        n_all = len(d.find_elements(By.CSS_SELECTOR, shown))
        assert n_all == len(rec.nodes)
        d.find_element(By.ID, "first").click()
        assert len(d.find_elements(By.CSS_SELECTOR, shown)) == 0
        d.find_element(By.ID, "next").click()
        d.find_element(By.ID, "next").click()
        assert len(d.find_elements(By.CSS_SELECTOR, shown)) == 2   # Wx and its MmBackward0
        assert "step 2 /" in d.find_element(By.ID, "step").text
        d.find_element(By.TAG_NAME, "body").send_keys(Keys.ARROW_RIGHT)
        assert "step 3 /" in d.find_element(By.ID, "step").text
        assert "created" in d.find_element(By.ID, "desc").text or "leaf" in d.find_element(By.ID, "desc").text
        d.find_element(By.ID, "last").click()
        assert d.find_elements(By.CSS_SELECTOR, "g.node.freed")
        assert d.find_elements(By.CSS_SELECTOR, "path.edge.grad")
        # click the TanhBackward0 node: its details show source, saved tensors and gradients
        tanh = [g for g in d.find_elements(By.CSS_SELECTOR, "g.node")
                if g.text.strip() == "TanhBackward0"][0]
        tanh.click()
        text = d.find_element(By.ID, "details").text
        assert "TanhBackward0" in text
        assert "next_h = (i2h + h2h).tanh()" in text
        assert "saved tensors" in text.lower() and "gradient in" in text.lower()
        assert severe(d) == []
    finally:
        close(d)


def test_explorer_groups_modules(tmp_path):
    from selenium.webdriver.common.by import By
    import dyngrad as torch
    from dyngrad.viz import record
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Tanh()) for _ in range(5)])
    with record() as rec:
        model(torch.ones(2, 4)).sum().backward()
    page = tmp_path / "seq.html"
    rec.save_html(str(page))
    d = driver()
    try:
        d.get(page.as_uri())
        assert severe(d) == []
        folded = [g.text for g in d.find_elements(By.CSS_SELECTOR, "g.node.box")]
        assert any("\u00d75" in t for t in folded), folded
        before = len(d.find_elements(By.CSS_SELECTOR, "g.node"))
        d.find_element(By.ID, "expandAll").click()
        after = len(d.find_elements(By.CSS_SELECTOR, "g.node"))
        assert after > before
        assert d.find_elements(By.CSS_SELECTOR, "g.cluster")   # module calls drawn as boxes
        assert severe(d) == []
    finally:
        close(d)
