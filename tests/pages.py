"""Pages in headless Chromium for the tests that check what a page shows: where Chromium is,
a page's DOM once its scripts have run, and the text a reader sees in it."""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess

import pytest

CHROMIUM = next((p for p in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if p and os.path.exists(p)),
                None)


def rendered(path) -> str:
    """The DOM of the page at ``path`` after its scripts ran (the test is skipped without
    Chromium)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    out = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                          "--virtual-time-budget=5000", "--dump-dom", path.as_uri()],
                         capture_output=True, text=True, timeout=120)
    return out.stdout


def shown_text(dom: str) -> str:
    """The text of a DOM as shown: tags, scripts and styles removed, entities decoded."""
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", dom, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))
