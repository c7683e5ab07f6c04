"""The explorer page template: one HTML document, styles and script inline, no network."""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>__TITLE__</title>
<style>
*{box-sizing:border-box}
body{margin:0;font:13px/1.4 system-ui,-apple-system,Segoe UI,sans-serif;color:#222;display:flex;flex-direction:column;height:100vh}
header{padding:6px 10px;background:#f3f3f3;border-bottom:1px solid #ccc;display:flex;gap:8px;align-items:center;flex-wrap:wrap}
header h1{font-size:14px;margin:0 10px 0 0}
button{font:inherit;padding:2px 8px;cursor:pointer}
#slider{flex:1;min-width:160px}
#step{font-family:monospace;white-space:nowrap}
#desc{padding:4px 10px;background:#fffbe6;border-bottom:1px solid #e5dca8;font-family:monospace;min-height:22px;white-space:pre-wrap}
main{flex:1;display:flex;min-height:0}
#view{flex:1;overflow:auto;background:#fff;position:relative}
#details{width:360px;border-left:1px solid #ccc;overflow:auto;padding:8px 10px;background:#fafafa}
#details h2{font-size:14px;margin:4px 0}
#details h3{font-size:12px;margin:10px 0 2px;color:#555;text-transform:uppercase}
#details pre{margin:0;white-space:pre-wrap;font-size:12px}
.kv{font-family:monospace;font-size:12px}
svg text{font-family:monospace;font-size:11px;pointer-events:none}
.node rect{stroke:#555;stroke-width:1}
.node{cursor:pointer}
.node.op rect{fill:#d3d3d3}
.node.leaf rect{fill:lightblue}
.node.output rect{fill:#caff70}
.node.box rect{fill:#eee8f5;stroke-dasharray:4 2}
.node.freed{opacity:.45}
.node.freed rect{stroke-dasharray:3 2}
.node.ran rect{stroke:#c0392b;stroke-width:2}
.node.acc rect{stroke:#1f5fbf;stroke-width:2.5}
.node.current rect{stroke:#ff8c00;stroke-width:4}
.node.selected rect{stroke:#000;stroke-width:3}
.edge{fill:none;stroke:#888;stroke-width:1.2}
.edge.grad{stroke:#c0392b;stroke-width:2}
.group rect{fill:rgba(120,140,200,.07);stroke:#8fa0d0;stroke-dasharray:5 3}
.group text{fill:#3c4d86;pointer-events:auto;cursor:pointer}
.legend span{display:inline-block;padding:0 6px;margin-right:4px;border:1px solid #888;font-size:11px}
</style></head>
<body>
<header>
<h1>__TITLE__</h1>
<button id="first" title="first (Home)">|&#x25C0;</button>
<button id="prev" title="previous (Left arrow)">&#x25C0;</button>
<button id="next" title="next (Right arrow)">&#x25B6;</button>
<button id="last" title="last (End)">&#x25B6;|</button>
<button id="play" title="play/pause (space)">play</button>
<input id="slider" type="range" min="0" value="0">
<span id="step"></span>
<label><input type="checkbox" id="fold" checked> fold repeats</label>
<button id="collapseAll">collapse modules</button>
<button id="expandAll">expand all</button>
<button id="zin">+</button><button id="zout">&minus;</button>
<span class="legend"><span style="background:#d3d3d3">op</span><span style="background:lightblue">leaf</span><span style="background:#caff70">output</span><span style="border-color:#c0392b">grad ran</span><span style="opacity:.4">freed</span></span>
</header>
<div id="desc"></div>
<main><div id="view"><svg id="svg" xmlns="http://www.w3.org/2000/svg"></svg></div>
<aside id="details"><p>Click a node to see its inputs, output, saved tensors, gradient and source line. Step with the buttons, the slider or the arrow keys.</p></aside></main>
<script id="data" type="application/json">__DATA__</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const N = D.nodes, E = D.events, G = D.groups;
const NS = "http://www.w3.org/2000/svg";
let step = E.length, selected = null, scale = 1, timer = null;
const collapsed = new Set();
// per-node event times
for (const n of N) { n.tNew = n.t; n.tBw = null; n.tFree = null; n.tAcc = []; n.consumers = []; }
E.forEach((e, i) => {
  const n = N[e.node];
  if (e.kind === "backward") { if (n.tBw === null) { n.tBw = i; n.bw = e; } }
  else if (e.kind === "free") { if (n.tFree === null) n.tFree = i; }
  else if (e.kind === "accumulate") n.tAcc.push(i);
});
for (const n of N) n.inputs.forEach((s, k) => { if (s !== null) N[s].consumers.push(n.id); });
for (const n of N) if (n.kind === "op" && n.consumers.length === 0) n.isOutput = true;
const groupDepth = g => g === null ? 0 : 1 + groupDepth(G[g].parent);
function label(n) {
  if (n.kind === "leaf") return (n.name ? n.name + " " : "") + "(" + (n.out ? n.out.shape.join(", ") : "") + ")";
  return n.op;
}
function fmt(s) {
  if (!s) return "None";
  if (s.repr) return s.repr;
  let t = "shape (" + s.shape.join(", ") + ")  " + s.dtype;
  if (s.min !== undefined) t += "\nmin " + s.min + "  max " + s.max + "  mean " + s.mean;
  if (s.nonfinite) t += "\n" + s.nonfinite + " NaN/inf values!";
  if (s.values) t += "\nvalues [" + s.values.join(", ") + (s.size > s.values.length ? ", ..." : "") + "]";
  return t;
}
function srcText(s) { return s ? s.file.split("/").pop() + ":" + s.line + "  " + s.code : ""; }
function esc(s) { return String(s).replace(/[&<>]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c])); }
// the unit a node is drawn as: itself, or the outermost collapsed (or folded) module call holding it
function unitOf(n) {
  let u = "n" + n.id, g = n.group;
  while (g !== null) {
    const gr = G[g];
    if (document.getElementById("fold").checked && gr.run !== undefined) u = "r" + gr.run;
    if (collapsed.has(g)) u = "g" + g;
    g = gr.parent;
  }
  return u;
}
let units = {}, layoutKey = "";
function unitLabel(u) {
  if (u[0] === "n") return label(N[+u.slice(1)]);
  if (u[0] === "g") { const g = G[+u.slice(1)]; return g.path + " (" + g.cls + ")"; }
  const g = G[+u.slice(1)]; return g.path.replace(/\.[^.]*$/, "") + "." + g.name + " \u00d7" + g.run_len + " (" + g.cls + ")";
}
function layout() {
  units = {};
  const order = [];
  for (const n of N) {
    const u = unitOf(n);
    if (!units[u]) { units[u] = {id: u, members: [], ins: new Set(), outs: new Set(), t: n.t}; order.push(units[u]); }
    units[u].members.push(n.id);
  }
  for (const n of N) {
    const v = units[unitOf(n)];
    for (const s of n.inputs) {
      if (s === null) continue;
      const u = units[unitOf(N[s])];
      if (u !== v) { u.outs.add(v.id); v.ins.add(u.id); }
    }
  }
  order.sort((a, b) => a.t - b.t);
  for (const u of order) { u.layer = 0; for (const i of u.ins) u.layer = Math.max(u.layer, units[i].layer + 1); }
  for (let k = order.length - 1; k >= 0; k--) {   // sources sit right above their first consumer
    const u = order[k];
    if (u.ins.size === 0 && u.outs.size) { let m = Infinity; for (const o of u.outs) m = Math.min(m, units[o].layer); u.layer = m - 1; }
  }
  let minL = Infinity; for (const u of order) minL = Math.min(minL, u.layer);
  const layers = [];
  for (const u of order) { u.layer -= minL; (layers[u.layer] = layers[u.layer] || []).push(u); u.w = Math.max(70, unitLabel(u.id).length * 6.8 + 16); }
  layers.forEach(L => L.forEach((u, i) => u.x = i * 160));
  const place = (L, key) => {
    L.forEach(u => { const nb = [...u[key]].map(i => units[i].x); u.bx = nb.length ? nb.reduce((a, b) => a + b, 0) / nb.length : u.x; });
    L.sort((a, b) => a.bx - b.bx);
    let right = -Infinity;
    for (const u of L) { u.x = Math.max(u.bx, right + u.w / 2 + 14); right = u.x + u.w / 2; }
  };
  for (let it = 0; it < 4; it++) {
    for (let l = 1; l < layers.length; l++) if (layers[l]) place(layers[l], "ins");
    for (let l = layers.length - 2; l >= 0; l--) if (layers[l]) place(layers[l], "outs");
  }
  let minX = Infinity; for (const u of order) minX = Math.min(minX, u.x - u.w / 2);
  for (const u of order) { u.x += 20 - minX; u.y = 40 + u.layer * 62; }
}
function visibleAt(n) { return n.tNew < step; }
function render() {
  const key = [...collapsed].join(",") + document.getElementById("fold").checked;
  if (key !== layoutKey) { layout(); layoutKey = key; }
  const svg = document.getElementById("svg");
  svg.textContent = "";
  const root = document.createElementNS(NS, "g");
  root.setAttribute("transform", "scale(" + scale + ")");
  svg.appendChild(root);
  let W = 0, H = 0;
  for (const u of Object.values(units)) { W = Math.max(W, u.x + u.w / 2 + 20); H = Math.max(H, u.y + 60); }
  // module groups (expanded ones, drawn around their visible units)
  const gl = document.createElementNS(NS, "g"); root.appendChild(gl);
  const fold = document.getElementById("fold").checked;
  for (const g of G) {
    let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity, hidden = false;
    for (let p = g.id; p !== null; p = G[p].parent) if (collapsed.has(p) || (fold && G[p].run !== undefined)) hidden = true;
    if (hidden) continue;
    for (const n of N) {
      if (!visibleAt(n)) continue;
      let inside = false; for (let p = n.group; p !== null; p = G[p].parent) if (p === g.id) inside = true;
      if (!inside) continue;
      const u = units[unitOf(n)];
      x0 = Math.min(x0, u.x - u.w / 2); x1 = Math.max(x1, u.x + u.w / 2); y0 = Math.min(y0, u.y - 12); y1 = Math.max(y1, u.y + 12);
    }
    if (x0 === Infinity) continue;
    const pad = 8 + 4 * (4 - Math.min(4, groupDepth(g.id)));
    const r = document.createElementNS(NS, "rect");
    r.setAttribute("x", x0 - pad); r.setAttribute("y", y0 - pad - 12); r.setAttribute("width", x1 - x0 + 2 * pad); r.setAttribute("height", y1 - y0 + 2 * pad + 12); r.setAttribute("rx", 6);
    const t = document.createElementNS(NS, "text");
    t.setAttribute("x", x0 - pad + 4); t.setAttribute("y", y0 - pad - 1);
    t.textContent = "\u25BE " + g.path + " (" + g.cls + ")";
    const gg = document.createElementNS(NS, "g"); gg.setAttribute("class", "group"); gg.dataset.group = g.id;
    gg.appendChild(r); gg.appendChild(t); gl.appendChild(gg);
    t.addEventListener("click", ev => { ev.stopPropagation(); collapsed.add(g.id); render(); });
  }
  // edges
  const el = document.createElementNS(NS, "g"); root.appendChild(el);
  const drawn = new Set();
  for (const n of N) {
    if (!visibleAt(n)) continue;
    const v = units[unitOf(n)];
    n.inputs.forEach((s, k) => {
      if (s === null) return;
      const u = units[unitOf(N[s])];
      if (u === v) return;
      const grad = n.tBw !== null && n.tBw < step && n.bw.grads_out[k];
      const key = u.id + ">" + v.id + (grad ? "g" : "");
      if (drawn.has(key)) return; drawn.add(key);
      const p = document.createElementNS(NS, "path");
      const y0 = u.y + 11, y1 = v.y - 11, my = (y0 + y1) / 2;
      p.setAttribute("d", "M" + u.x + "," + y0 + " C" + u.x + "," + my + " " + v.x + "," + my + " " + v.x + "," + (y1 - 5));
      p.setAttribute("class", "edge" + (grad ? " grad" : ""));
      p.setAttribute("marker-end", "url(#arrow)");
      el.appendChild(p);
    });
  }
  const defs = document.createElementNS(NS, "defs");
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#888"/></marker>';
  svg.appendChild(defs);
  // nodes
  const nl = document.createElementNS(NS, "g"); root.appendChild(nl);
  const cur = step > 0 ? E[step - 1] : null;
  for (const u of Object.values(units)) {
    const ms = u.members.map(i => N[i]).filter(visibleAt);
    if (!ms.length) continue;
    const single = u.id[0] === "n" ? ms[0] : null;
    let cls = "node " + (single ? (single.kind === "leaf" ? "leaf" : (single.isOutput ? "output" : "op")) : "box");
    if (ms.every(n => n.tFree !== null && n.tFree < step) && ms.some(n => n.kind === "op")) cls += " freed";
    if (ms.some(n => n.tBw !== null && n.tBw < step)) cls += " ran";
    if (ms.some(n => n.tAcc.some(t => t < step))) cls += " acc";
    if (cur && ms.some(n => n.id === cur.node)) cls += " current";
    if (selected !== null && u.members.includes(selected)) cls += " selected";
    const g = document.createElementNS(NS, "g");
    g.setAttribute("class", cls); g.dataset.unit = u.id; g.id = "unit-" + u.id;
    const r = document.createElementNS(NS, "rect");
    r.setAttribute("x", u.x - u.w / 2); r.setAttribute("y", u.y - 11); r.setAttribute("width", u.w); r.setAttribute("height", 22); r.setAttribute("rx", single ? 2 : 8);
    const t = document.createElementNS(NS, "text");
    t.setAttribute("x", u.x); t.setAttribute("y", u.y + 4); t.setAttribute("text-anchor", "middle");
    t.textContent = unitLabel(u.id);
    g.appendChild(r); g.appendChild(t); nl.appendChild(g);
    g.addEventListener("click", () => {
      if (single) { selected = single.id; render(); }
      else if (u.id[0] === "g") { collapsed.delete(+u.id.slice(1)); render(); }
      else { document.getElementById("fold").checked = false; render(); }
    });
  }
  svg.setAttribute("width", W * scale); svg.setAttribute("height", H * scale);
  document.getElementById("slider").value = step;
  document.getElementById("step").textContent = "step " + step + " / " + E.length;
  document.getElementById("desc").textContent = describe(cur, step);
  showDetails();
}
function describe(e, s) {
  if (!e) return "Step 0: nothing recorded yet. Press \u25B6 or the right arrow to watch forward build the graph.";
  const n = N[e.node], what = n.kind === "leaf" ? "leaf " + label(n) : n.op;
  const phase = ["node", "leaf"].includes(e.kind) ? "forward" : "backward";
  let t = "Step " + s + " (" + phase + "): ";
  if (e.kind === "node") t += "created " + n.op + (n.src ? "  at " + srcText(n.src) : "") + (n.out ? "  -> (" + n.out.shape.join(", ") + ") " + n.out.dtype : "");
  else if (e.kind === "leaf") t += "leaf tensor " + label(n) + " enters the graph";
  else if (e.kind === "backward") t += n.op + " ran: grad in (" + (e.grad_in[0] ? e.grad_in[0].shape.join(", ") : "") + "), " + e.grads_out.filter(x => x).length + " grads out";
  else if (e.kind === "accumulate") t += "gradient accumulated into " + what + ".grad";
  else if (e.kind === "free") t += "saved buffers of " + n.op + " freed";
  return t;
}
function showDetails() {
  const box = document.getElementById("details");
  if (selected === null) return;
  const n = N[selected];
  let h = "<h2>" + esc(label(n)) + "</h2><div class='kv'>node #" + n.id + (n.group !== null ? "<br>module: " + esc(G[n.group].path) + " (" + esc(G[n.group].cls) + ")" : "") + "</div>";
  if (n.src) h += "<h3>source</h3><pre>" + esc(n.src.file + ":" + n.src.line) + "\n" + esc(n.src.code) + "</pre>";
  if (n.kind === "op") {
    h += "<h3>inputs</h3><pre>" + (n.inputs.map((s, k) => k + ": " + (s === null ? "None (no grad needed)" : label(N[s]) + (N[s].out ? "  (" + N[s].out.shape.join(", ") + ")" : ""))).join("\n") || "none") + "</pre>";
  }
  h += "<h3>" + (n.kind === "leaf" ? "value" : "output") + "</h3><pre>" + esc(fmt(n.out)) + "</pre>";
  if (n.saved && n.saved.length) h += "<h3>saved tensors" + (n.tFree !== null && n.tFree < step ? " (freed)" : "") + "</h3><pre>" + n.saved.map(s => s.name + ": " + fmt(s)).map(esc).join("\n\n") + "</pre>";
  if (n.tBw !== null && n.tBw < step) {
    h += "<h3>gradient in</h3><pre>" + esc(n.bw.grad_in.map(fmt).join("\n")) + "</pre>";
    h += "<h3>gradients out</h3><pre>" + esc(n.bw.grads_out.map((g, k) => k + ": " + fmt(g)).join("\n")) + "</pre>";
  } else if (n.kind === "op") h += "<h3>gradient</h3><pre>not computed yet at this step</pre>";
  const acc = n.tAcc.filter(t => t < step);
  if (acc.length) h += "<h3>.grad (after " + acc.length + " accumulation" + (acc.length > 1 ? "s" : "") + ")</h3><pre>" + esc(fmt(E[acc[acc.length - 1]].grad)) + "</pre>";
  if (n.tFree !== null) h += "<h3>buffers</h3><pre>" + (n.tFree < step ? "freed at step " + (n.tFree + 1) : "freed later, at step " + (n.tFree + 1)) + "</pre>";
  box.innerHTML = h;
}
function go(s) { step = Math.max(0, Math.min(E.length, s)); render(); }
document.getElementById("first").onclick = () => go(0);
document.getElementById("prev").onclick = () => go(step - 1);
document.getElementById("next").onclick = () => go(step + 1);
document.getElementById("last").onclick = () => go(E.length);
document.getElementById("play").onclick = () => {
  if (timer) { clearInterval(timer); timer = null; document.getElementById("play").textContent = "play"; return; }
  if (step >= E.length) step = 0;
  document.getElementById("play").textContent = "pause";
  timer = setInterval(() => { if (step >= E.length) { document.getElementById("play").click(); return; } go(step + 1); }, 400);
};
const slider = document.getElementById("slider");
slider.max = E.length;
let pending = false;
slider.addEventListener("input", () => { if (pending) return; pending = true; requestAnimationFrame(() => { pending = false; go(+slider.value); }); });
document.getElementById("fold").onchange = () => render();
document.getElementById("collapseAll").onclick = () => { G.forEach(g => { if (g.parent === null || groupDepth(g.id) <= 2) collapsed.add(g.id); }); render(); };
document.getElementById("expandAll").onclick = () => { collapsed.clear(); document.getElementById("fold").checked = false; render(); };
document.getElementById("zin").onclick = () => { scale *= 1.25; render(); };
document.getElementById("zout").onclick = () => { scale /= 1.25; render(); };
document.addEventListener("keydown", ev => {
  if (ev.target.tagName === "INPUT" && ev.target.type !== "range" && ev.target.type !== "checkbox") return;
  if (ev.key === "ArrowRight") { go(step + 1); ev.preventDefault(); }
  else if (ev.key === "ArrowLeft") { go(step - 1); ev.preventDefault(); }
  else if (ev.key === "Home") go(0);
  else if (ev.key === "End") go(E.length);
  else if (ev.key === " ") { document.getElementById("play").click(); ev.preventDefault(); }
});
if (N.length > 400) G.forEach(g => { if (groupDepth(g.id) === 2) collapsed.add(g.id); });
render();
</script>
</body></html>
"""
