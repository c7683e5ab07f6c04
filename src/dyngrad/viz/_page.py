"""The explorer page: one HTML document with its styles, the vendored dagre layout library
(``vendor/dagre.min.js``, MIT) and the page script inline, so it works offline."""
from __future__ import annotations

import functools
import html as _html
import re
from importlib import resources

_BODY = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>__TITLE__</title>
<style>__CSS__</style></head>
<body data-ready="0">
<header>
<h1>__TITLE__</h1>
<button id="first" title="first (Home)">|&#x25C0;</button>
<button id="prev" title="previous (Left arrow)">&#x25C0;</button>
<button id="next" title="next (Right arrow)">&#x25B6;</button>
<button id="last" title="last (End)">&#x25B6;|</button>
<button id="play" title="play/pause (space)">play</button>
<input id="slider" type="range" min="0" value="0">
<span id="step"></span>
<span id="iterbox"><select id="iter" title="recorded training iteration"></select></span>
<select id="depth" title="module levels shown open"></select>
<label title="repeated module calls as one xN box"><input type="checkbox" id="fold" checked> roll up repeats</label>
<button id="collapseAll">collapse modules</button>
<button id="expandAll">expand all</button>
<button id="zin" title="zoom in">+</button><button id="zout" title="zoom out">&minus;</button><button id="zfit" title="fit the graph to the window">fit</button>
<span class="legend"><span style="background:#d3d3d3">op</span><span style="background:lightblue">leaf</span><span style="background:#caff70">output</span><span style="background:#eee8f5">module</span><span style="border-color:#c0392b">grad ran</span><span style="opacity:.4">freed</span><span style="background:#f8c9c4;border-color:#b3261e">failed</span></span>
</header>
<div id="banner"></div>
<div id="desc"></div><div id="note"></div>
<main><div id="view"><div id="busy"></div><svg id="svg" xmlns="http://www.w3.org/2000/svg"></svg><canvas id="canvas" style="display:none"></canvas></div>
<aside id="details"></aside></main>
<section id="compiled"></section>
<script id="data" type="application/json">__DATA__</script>
<script id="dagre-src">__DAGRE__</script>
<script>__JS__</script>
<script>__CJS__</script>
</body></html>
"""

_COMPILED_BODY = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>__TITLE__</title>
<style>__CSS__</style></head>
<body data-ready="0" class="compiled-page">
<header><h1>__TITLE__</h1></header>
<section id="compiled"></section>
<script id="data" type="application/json">__DATA__</script>
<script id="dagre-src">__DAGRE__</script>
<script>__CJS__</script>
</body></html>
"""


@functools.lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _inline(js: str) -> str:
    """Script text that cannot end its <script> element early."""
    return js.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def render_page(title: str, data_json: str) -> str:
    """The whole page for a recorder's JSON."""
    t = _html.escape(title, quote=False)
    parts = {"__TITLE__": t, "__CSS__": _asset("explorer.css"),
             "__DAGRE__": _inline(_asset("vendor/dagre.min.js")),
             "__JS__": _inline(_asset("explorer.js")),
             "__CJS__": _inline(_asset("compiled.js")),
             "__DATA__": data_json.replace("</", "<\\/")}
    return re.sub(r"__(TITLE|CSS|DAGRE|JS|CJS|DATA)__", lambda m: parts[m.group(0)], _BODY)


def render_compiled_page(title: str, data_json: str) -> str:
    """The page of compiled functions alone (``{"title", "compiled": [...]}``)."""
    t = _html.escape(title, quote=False)
    parts = {"__TITLE__": t, "__CSS__": _asset("explorer.css"),
             "__DAGRE__": _inline(_asset("vendor/dagre.min.js")),
             "__CJS__": _inline(_asset("compiled.js")),
             "__DATA__": data_json.replace("</", "<\\/")}
    return re.sub(r"__(TITLE|CSS|DAGRE|CJS|DATA)__", lambda m: parts[m.group(0)],
                  _COMPILED_BODY)


def inline_frame(page: str, height: int = 640) -> str:
    """The page in an iframe (``srcdoc``), as Jupyter shows it: its script and styles stay
    apart from the notebook's."""
    return (f'<iframe srcdoc="{_html.escape(page, quote=True)}" style="width:100%;height:{height}px;'
            f'border:1px solid #ccc" sandbox="allow-scripts"></iframe>')
