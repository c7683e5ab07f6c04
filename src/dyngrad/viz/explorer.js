"use strict";
// The graph explorer page.  The recorder's JSON (nodes, events, module calls) is laid out with
// dagre, module calls as nested clusters; collapsed or rolled-up (xN) module calls are single
// boxes.  Edges are routed through dagre's rank slots only, so they never cross a node.
const D = JSON.parse(document.getElementById("data").textContent);
const N = D.nodes, G = D.groups, ALL_E = D.events, SUMMARY = D.summary || null;
const NS = "http://www.w3.org/2000/svg";
// above AUTO_UNITS boxes the first view closes deeper module levels; a view never opens more
// than MAX_UNITS boxes at once (dagre's compound layout grows faster than linearly): deeper
// calls stay closed until clicked
const NODE_H = 24, CANVAS_UNITS = 1500, SYNC_UNITS = 400, AUTO_UNITS = 300, MAX_UNITS = 600;
const $ = id => document.getElementById(id);
let CHAR_W = 6.7;
try { const c = document.createElement("canvas").getContext("2d"); c.font = "11px monospace"; CHAR_W = c.measureText("MulBackward0").width / 12 || 6.7; } catch (e) { /* keep the default */ }

// ---------------------------------------------------------------- iterations and step times
const ITS = [...new Set(ALL_E.map(e => e.it === undefined ? 1 : e.it))].sort((a, b) => a - b);
const FAILED = ALL_E.find(e => e.kind === "error");   // open on the iteration where backward failed
let iter = FAILED ? (FAILED.it === undefined ? 1 : FAILED.it) : ITS.length ? ITS[0] : 1;
let E = [], V = [], inV = new Set(), step = 0, selected = null, scale = 1, timer = null;
for (const n of N) if (n.it === undefined) n.it = 1;
for (const g of G) { if (g.it === undefined) g.it = 1; g.depth = g.parent === null ? 1 : G[g.parent].depth + 1; }
function chooseIteration(it) {
  iter = it;
  E = ALL_E.filter(e => (e.it === undefined ? 1 : e.it) === it);
  for (const n of N) { n.tNew = -1; n.tBw = null; n.bw = null; n.tFree = null; n.tAcc = []; n.tErr = null; n.err = null; n.consumers = []; }
  E.forEach((e, i) => {
    if (e.node === null || e.node === undefined) return;
    const n = N[e.node];
    if (e.kind === "node" || e.kind === "leaf") n.tNew = i;
    else if (e.kind === "backward") { if (n.tBw === null) { n.tBw = i; n.bw = e; } }
    else if (e.kind === "free") { if (n.tFree === null) n.tFree = i; }
    else if (e.kind === "accumulate") n.tAcc.push(i);
    else if (e.kind === "error") { n.tErr = i; n.err = e; }
  });
  inV = new Set();
  for (const n of N) if (n.it === it) { inV.add(n.id); for (const s of n.inputs) if (s !== null) inV.add(s); }
  for (const e of E) if (e.node !== null && e.node !== undefined) inV.add(e.node);
  V = [...inV].sort((a, b) => a - b).map(i => N[i]);
  for (const n of V) n.inputs.forEach(s => { if (s !== null && inV.has(s)) N[s].consumers.push(n.id); });
  for (const n of V) n.isOutput = n.kind === "op" && n.consumers.length === 0;
  step = E.length;
}

// ---------------------------------------------------------------- what is drawn as one unit
const collapsed = new Set(), unrolled = new Set();
const foldOn = () => $("fold").checked;
const rolled = g => foldOn() && g.run !== undefined && g.run_len > 1 && !unrolled.has(g.run);
function unitOf(n) {
  let u = "n" + n.id;
  for (let g = n.group; g !== null; g = G[g].parent) {   // the outermost closed call wins;
    if (collapsed.has(g)) u = "g" + g;                     // a rolled-up run shows as one box
    if (rolled(G[g])) u = "r" + G[g].run;                  // even when its calls are closed
  }
  return u;
}
function shapeText(s) { return s && s.shape ? (s.shape.length ? s.shape.join("\u00d7") : "scalar") : ""; }
function nodeLabel(n) {
  if (n.kind === "leaf") return (n.name ? n.name + " " : "") + "(" + (n.out ? n.out.shape.join(", ") : "") + ")";
  return n.op;
}
function groupTitle(g) { return g.name === g.cls ? g.cls : g.name + " (" + g.cls + ")"; }
function unitLabel(u) {
  const k = u[0], i = +u.slice(1);
  if (k === "n") return nodeLabel(N[i]);
  const g = G[i];
  if (k === "g") return "\u25B8 " + groupTitle(g);
  const last = G.filter(x => x.run === g.run).pop();
  const names = last && last.name !== g.name ? g.name + "\u2026" + last.name : g.name;
  return "\u25B8 " + (names === g.cls ? g.cls : names + " (" + g.cls + ")") + " \u00d7" + g.run_len;
}
function clusterParentOfUnit(u) {
  const k = u[0], i = +u.slice(1);
  return k === "n" ? N[i].group : G[i].parent;
}

// ---------------------------------------------------------------- layout (dagre; also runs in a worker)
function layoutGraph(spec) {
  const g = new dagre.graphlib.Graph({compound: true, multigraph: true});
  g.setGraph({rankdir: "TB", nodesep: 22, ranksep: 44, edgesep: 10, marginx: 14, marginy: 14});
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of spec.clusters) g.setNode(c.id, {});
  for (const c of spec.clusters) if (c.parent) g.setParent(c.id, c.parent);
  for (const n of spec.nodes) { g.setNode(n.id, {width: n.w, height: n.h}); if (n.parent) g.setParent(n.id, n.parent); }
  for (const e of spec.edges) g.setEdge(e.v, e.w, e.lw ? {width: e.lw, height: 12, labelpos: "r", labeloffset: 4} : {}, e.id);
  dagre.layout(g);
  const nodes = {}, clusters = {}, edges = {};
  const half = new Map();   // rank y -> half height of the rank's tallest box (the rank's band)
  const key = y => Math.round(y * 2);
  const grow = (y, h) => { const k = key(y); half.set(k, Math.max(half.get(k) || 0, h / 2)); };
  for (const n of spec.nodes) { const d = g.node(n.id); nodes[n.id] = {x: d.x, y: d.y, w: n.w, h: n.h}; grow(d.y, n.h); }
  for (const c of spec.clusters) { const d = g.node(c.id); clusters[c.id] = {x: d.x, y: d.y, w: d.width, h: d.height}; }
  const raw = {};
  for (const e of spec.edges) {
    const d = g.edge(e.v, e.w, e.id);
    raw[e.id] = d;
    if (e.lw) grow(d.y, 12);
  }
  const band = y => half.get(key(y)) || 0;
  // spread the edges leaving / entering a box over its width, in the order they go
  const outs = {}, ins = {};
  for (const e of spec.edges) {
    const p = raw[e.id].points;
    (outs[e.v] = outs[e.v] || []).push([p.length > 2 ? p[1].x : nodes[e.w].x, e.id]);
    (ins[e.w] = ins[e.w] || []).push([p.length > 2 ? p[p.length - 2].x : nodes[e.v].x, e.id, e.k || 0]);
  }
  const port = {};
  const spread = (lists, side) => {
    for (const id in lists) {
      const L = lists[id].sort((a, b) => a[0] - b[0] || (a[2] || 0) - (b[2] || 0)), n = nodes[id];
      L.forEach((it, i) => { (port[it[1]] = port[it[1]] || {})[side] = n.x - n.w / 2 + n.w * (i + 1) / (L.length + 1); });
    }
  };
  spread(outs, "out"); spread(ins, "in");
  for (const e of spec.edges) {
    const d = raw[e.id], s = nodes[e.v], t = nodes[e.w], p = d.points;
    const sx = port[e.id].out, tx = port[e.id].in;
    const pts = [[sx, s.y + s.h / 2]];
    const sb = s.y + band(s.y);
    if (sb > pts[0][1]) pts.push([sx, sb]);
    for (let i = 1; i < p.length - 1; i++) {
      const hb = band(p[i].y);
      pts.push([p[i].x, p[i].y - hb]);
      if (hb > 0) pts.push([p[i].x, p[i].y + hb]);
    }
    const tb = t.y - band(t.y);
    pts.push([tx, tb]);
    if (tb < t.y - t.h / 2) pts.push([tx, t.y - t.h / 2]);
    edges[e.id] = {pts: pts, lx: e.lw ? d.x - e.lw / 2 : null, ly: e.lw ? d.y : null};
  }
  const gr = g.graph();
  return {nodes: nodes, clusters: clusters, edges: edges, width: gr.width || 0, height: gr.height || 0};
}
// a path through the points: vertical runs inside rank bands, S-curves (vertical tangents, so
// they stay between the two bands) across the gaps
function pathOf(pts) {
  let d = "M" + pts[0][0].toFixed(1) + "," + pts[0][1].toFixed(1);
  for (let i = 1; i < pts.length; i++) {
    const a = pts[i - 1], b = pts[i];
    if (Math.abs(a[0] - b[0]) < 0.05) d += " L" + b[0].toFixed(1) + "," + b[1].toFixed(1);
    else { const m = (a[1] + b[1]) / 2; d += " C" + a[0].toFixed(1) + "," + m.toFixed(1) + " " + b[0].toFixed(1) + "," + m.toFixed(1) + " " + b[0].toFixed(1) + "," + b[1].toFixed(1); }
  }
  return d;
}

let worker = null;
function getWorker() {
  if (worker !== null) return worker;
  try {
    const src = $("dagre-src").textContent + "\n" + layoutGraph.toString() +
      "\nonmessage = ev => postMessage({key: ev.data.key, result: layoutGraph(ev.data.spec)});";
    worker = new Worker(URL.createObjectURL(new Blob([src], {type: "text/javascript"})));
  } catch (e) { worker = false; }
  return worker;
}
const cache = new Map();
let view = null, viewKey = "", pendingKey = "";
function viewState() { return iter + "|" + [...collapsed].sort((a, b) => a - b).join(",") + "|" + foldOn() + "|" + [...unrolled].join(","); }
function buildSpec() {
  const units = new Map(), clusters = new Map(), edges = [], agg = new Map(), internal = [];
  for (const n of V) {
    const u = unitOf(n);
    if (!units.has(u)) units.set(u, {id: u, members: [], parent: null});
    units.get(u).members.push(n.id);
  }
  const addCluster = gid => {
    while (gid !== null && !clusters.has("c" + gid)) { const p = G[gid].parent; clusters.set("c" + gid, {id: "c" + gid, gid: gid, parent: p === null ? null : "c" + p}); gid = p; }
  };
  for (const u of units.values()) { const p = clusterParentOfUnit(u.id); u.parent = p === null ? null : "c" + p; addCluster(p); }
  for (const n of V) {
    if (n.kind !== "op") continue;
    const un = unitOf(n);
    n.inputs.forEach((s, k) => {
      if (s === null || !inV.has(s)) return;
      const us = unitOf(N[s]);
      const pair = [n.id, k];
      if (us === un) { internal.push(pair); return; }
      if (us[0] === "n" && un[0] === "n") { edges.push({id: "e" + n.id + "_" + k, v: us, w: un, k: k, pairs: [pair]}); return; }
      const key = us + ">" + un;
      if (!agg.has(key)) { const e = {id: "a" + agg.size, v: us, w: un, k: k, pairs: []}; agg.set(key, e); edges.push(e); }
      agg.get(key).pairs.push(pair);
    });
  }
  for (const e of edges) {
    const [c, k] = e.pairs[0];
    e.label = e.pairs.length === 1 ? shapeText(N[N[c].inputs[k]].out) : "\u00d7" + e.pairs.length;
    e.lw = e.label ? Math.ceil(e.label.length * CHAR_W * 0.92) + 4 : 0;
  }
  for (const u of units.values()) { u.label = unitLabel(u.id); u.w = Math.max(46, Math.ceil(u.label.length * CHAR_W) + 16); u.h = NODE_H; }
  return {units: units, clusters: clusters, edges: edges, internal: internal};
}
function relayout(done) {
  const key = viewState();
  if (key === viewKey && view) { done(); return; }
  if (cache.has(key)) { view = cache.get(key); viewKey = key; done(); return; }
  const sp = buildSpec();
  const spec = {nodes: [...sp.units.values()].map(u => ({id: u.id, w: u.w, h: u.h, parent: u.parent})),
                clusters: [...sp.clusters.values()].map(c => ({id: c.id, parent: c.parent})),
                edges: sp.edges.map(e => ({id: e.id, v: e.v, w: e.w, k: e.k, lw: e.lw}))};
  const finish = res => { sp.res = res; cache.set(key, sp); if (pendingKey === key) { view = sp; viewKey = key; pendingKey = ""; done(); } };
  pendingKey = key;
  const w = sp.units.size > SYNC_UNITS ? getWorker() : false;
  if (w) {
    document.body.dataset.ready = "0";
    $("busy").textContent = "laying out " + sp.units.size + " boxes\u2026";
    w.onmessage = ev => { if (ev.data.key === pendingKey) finish(ev.data.result); };
    w.onerror = () => { worker = false; finish(layoutGraph(spec)); };
    w.postMessage({key: key, spec: spec});
  } else finish(layoutGraph(spec));
}

// ---------------------------------------------------------------- drawing
function unitState(u) {
  const ms = u.members.map(i => N[i]);
  const shown = ms.filter(n => n.tNew < step);
  const single = u.id[0] === "n" ? ms[0] : null;
  let cls = "node " + (single ? (single.kind === "leaf" ? "leaf" : (single.isOutput ? "output" : "op")) : "box");
  if (!shown.length) cls += " future";
  if (ms.some(n => n.kind === "op") && ms.every(n => n.kind !== "op" || (n.tFree !== null && n.tFree < step))) cls += " freed";
  if (ms.some(n => n.tBw !== null && n.tBw < step)) cls += " ran";
  if (ms.some(n => n.tAcc.some(t => t < step))) cls += " acc";
  if (ms.some(n => n.tErr !== null && n.tErr < step)) cls += " error";
  const cur = step > 0 ? E[step - 1] : null;
  if (cur && cur.node !== null && u.members.includes(cur.node)) cls += " current";
  if (selected !== null && u.members.includes(selected)) cls += " selected";
  return cls;
}
function edgeState(e) {
  let future = true, grad = false;
  for (const [c, k] of e.pairs) {
    const n = N[c];
    if (n.tNew < step) future = false;
    if (n.tBw !== null && n.tBw < step && n.bw.grads_out[k]) grad = true;
  }
  return "edge" + (grad ? " grad" : "") + (future ? " future" : "");
}
function el(tag, attrs, parent) {
  const x = document.createElementNS(NS, tag);
  for (const k in attrs) x.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(x);
  return x;
}
function fitText(text, width) {
  const n = Math.floor((width - 8) / CHAR_W);
  return text.length <= n ? text : text.slice(0, Math.max(1, n - 1)) + "\u2026";
}
let useCanvas = false;
function draw() {
  const r = view.res, svg = $("svg"), cv = $("canvas");
  useCanvas = view.units.size > CANVAS_UNITS;
  svg.style.display = useCanvas ? "none" : ""; cv.style.display = useCanvas ? "" : "none";
  if (useCanvas) { drawCanvas(); return; }
  svg.textContent = "";
  const defs = el("defs", {}, svg);
  defs.innerHTML = '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#888"/></marker>' +
    '<marker id="arrowg" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#c0392b"/></marker>';
  const root = el("g", {transform: "scale(" + scale + ")"}, svg);
  const cl = el("g", {}, root), edl = el("g", {}, root), nl = el("g", {}, root);
  const cs = [...view.clusters.values()].sort((a, b) => G[a.gid].depth - G[b.gid].depth);
  for (const c of cs) {
    const b = r.clusters[c.id], g = G[c.gid];
    const gg = el("g", {"class": "cluster", "data-group": c.gid, "data-parent": g.parent === null ? "" : g.parent}, cl);
    el("rect", {x: b.x - b.w / 2, y: b.y - b.h / 2, width: b.w, height: b.h, rx: 6}, gg);
    const t = el("text", {x: b.x - b.w / 2 + 4, y: b.y - b.h / 2 + 12}, gg);
    t.textContent = fitText("\u25BE " + groupTitle(g), b.w);
    const tip = el("title", {}, gg); tip.textContent = g.path + " (" + g.cls + "): click to collapse";
    t.addEventListener("click", ev => { ev.stopPropagation(); collapsed.add(c.gid); update(); });
  }
  for (const e of view.edges) {
    const p = r.edges[e.id], cls = edgeState(e);
    const path = el("path", {d: pathOf(p.pts), "class": cls, "marker-end": cls.includes("grad") ? "url(#arrowg)" : "url(#arrow)",
                             "data-v": e.v, "data-w": e.w, "data-pairs": e.pairs.map(q => q[0] + ":" + q[1]).join(" ")}, edl);
    path.id = "edge-" + e.id;
    if (e.label) {
      const t = el("text", {x: p.lx, y: p.ly + 3.5, "class": "elabel" + (cls.includes("future") ? " future" : ""), "data-edge": e.id}, edl);
      t.textContent = e.label;
    }
  }
  for (const u of view.units.values()) {
    const b = r.nodes[u.id];
    const g = el("g", {"class": unitState(u), "data-unit": u.id, "data-cluster": u.parent === null ? "" : u.parent.slice(1)}, nl);
    g.id = "unit-" + u.id;
    el("rect", {x: b.x - b.w / 2, y: b.y - b.h / 2, width: b.w, height: b.h, rx: u.id[0] === "n" ? 2 : 7}, g);
    const t = el("text", {x: b.x, y: b.y + 4, "text-anchor": "middle"}, g);
    t.textContent = u.label;
    g.addEventListener("click", () => clickUnit(u));
  }
  svg.setAttribute("width", Math.ceil(r.width * scale) + 2); svg.setAttribute("height", Math.ceil(r.height * scale) + 2);
}
function clickUnit(u) {
  const k = u.id[0], i = +u.id.slice(1);
  if (k === "n") { selected = i; render(); }
  else if (k === "g") { collapsed.delete(i); for (const g of G) if (g.parent === i && g.depth > depthLimit()) collapsed.add(g.id); update(); }
  else { unrolled.add(G[i].run); update(); }
}
const FILL = {op: "#d3d3d3", leaf: "#add8e6", output: "#caff70", box: "#eee8f5"};
function drawCanvas() {
  const r = view.res, cv = $("canvas"), ctx = cv.getContext("2d");
  cv.width = Math.ceil(r.width * scale) + 2; cv.height = Math.ceil(r.height * scale) + 2;
  ctx.setTransform(scale, 0, 0, scale, 0, 0);
  ctx.font = "11px monospace"; ctx.textBaseline = "middle";
  for (const c of view.clusters.values()) {
    const b = r.clusters[c.id];
    ctx.strokeStyle = "#8fa0d0"; ctx.setLineDash([5, 3]); ctx.strokeRect(b.x - b.w / 2, b.y - b.h / 2, b.w, b.h); ctx.setLineDash([]);
    ctx.fillStyle = "#3c4d86"; ctx.fillText(fitText("\u25BE " + groupTitle(G[c.gid]), b.w), b.x - b.w / 2 + 4, b.y - b.h / 2 + 8);
  }
  for (const e of view.edges) {
    const cls = edgeState(e);
    if (cls.includes("future")) continue;
    ctx.strokeStyle = cls.includes("grad") ? "#c0392b" : "#888"; ctx.lineWidth = cls.includes("grad") ? 2 : 1;
    ctx.stroke(new Path2D(pathOf(r.edges[e.id].pts)));
  }
  for (const u of view.units.values()) {
    const cls = unitState(u);
    if (cls.includes("future")) continue;
    const b = r.nodes[u.id], kind = cls.split(" ")[1];
    ctx.globalAlpha = cls.includes("freed") ? 0.45 : 1;
    ctx.fillStyle = cls.includes("error") ? "#f8c9c4" : FILL[kind];
    ctx.fillRect(b.x - b.w / 2, b.y - b.h / 2, b.w, b.h);
    ctx.strokeStyle = cls.includes("current") ? "#ff8c00" : cls.includes("error") ? "#b3261e" : cls.includes("ran") ? "#c0392b" : "#555";
    ctx.lineWidth = cls.includes("current") ? 3 : 1;
    ctx.strokeRect(b.x - b.w / 2, b.y - b.h / 2, b.w, b.h);
    ctx.fillStyle = "#222"; ctx.textAlign = "center"; ctx.fillText(u.label, b.x, b.y); ctx.textAlign = "start";
  }
  ctx.globalAlpha = 1;
}
$("canvas").addEventListener("click", ev => {
  if (!view) return;
  const rect = $("canvas").getBoundingClientRect(), x = (ev.clientX - rect.left) / scale, y = (ev.clientY - rect.top) / scale;
  for (const u of view.units.values()) {
    const b = view.res.nodes[u.id];
    if (Math.abs(x - b.x) <= b.w / 2 && Math.abs(y - b.y) <= b.h / 2) { clickUnit(u); return; }
  }
});
// restyle for a new step without touching the layout
function restyle() {
  if (useCanvas) { drawCanvas(); return; }
  for (const u of view.units.values()) { const g = $("unit-" + u.id); if (g) g.setAttribute("class", unitState(u)); }
  for (const e of view.edges) {
    const p = $("edge-" + e.id); if (!p) continue;
    const cls = edgeState(e);
    p.setAttribute("class", cls); p.setAttribute("marker-end", cls.includes("grad") ? "url(#arrowg)" : "url(#arrow)");
  }
  for (const t of document.querySelectorAll("text.elabel")) t.setAttribute("class", "elabel" + ($("edge-" + t.dataset.edge).classList.contains("future") ? " future" : ""));
}

// ---------------------------------------------------------------- text around the graph
function fmt(s) {
  if (!s) return "None";
  if (s.repr) return s.repr;
  let t = "shape (" + s.shape.join(", ") + ")  " + s.dtype;
  if (s.min !== undefined) t += "\nmin " + s.min + "  max " + s.max + "  mean " + s.mean;
  if (s.nonfinite) t += "\n" + s.nonfinite + " NaN/inf values!";
  if (s.values) t += "\nvalues [" + s.values.join(", ") + (s.size > s.values.length ? ", ..." : "") + "]";
  return t;
}
function srcText(s) { return s ? (s.where || (s.file.split("/").pop() + ":" + s.line)) + "  " + s.code : ""; }
function esc(s) { return String(s).replace(/[&<>]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;"}[c])); }
function describe(e, s) {
  if (!e) return "Step 0: nothing recorded yet. Press \u25B6 or the right arrow to watch forward build the graph.";
  const n = e.node === null || e.node === undefined ? null : N[e.node];
  const phase = ["node", "leaf"].includes(e.kind) ? "forward" : e.kind === "step" ? "optimizer" : "backward";
  let t = "Step " + s + " (" + phase + "): ";
  if (e.kind === "node") t += "created " + n.op + (n.src ? "  at " + srcText(n.src) : "") + (n.out ? "  -> (" + n.out.shape.join(", ") + ") " + n.out.dtype : "");
  else if (e.kind === "leaf") t += "leaf tensor " + nodeLabel(n) + " enters the graph";
  else if (e.kind === "call") t += e.what + "() called" + (n ? " on the output of " + n.op : "") + (e.value && e.value.size === 1 ? "  (value " + e.value.values[0] + ")" : "");
  else if (e.kind === "backward") t += n.op + " ran: grad in (" + (e.grad_in[0] ? e.grad_in[0].shape.join(", ") : "") + "), " + e.grads_out.filter(x => x).length + " grads out";
  else if (e.kind === "accumulate") t += "gradient accumulated into " + nodeLabel(n) + ".grad";
  else if (e.kind === "free") t += "saved buffers of " + n.op + " freed";
  else if (e.kind === "step") t += e.optimizer + ".step() updated " + e.params + " parameters in place (no graph)";
  else if (e.kind === "error") t += "backward FAILED" + (n ? " at " + (n.kind === "leaf" ? nodeLabel(n) : n.op) : "") + ": " + e.type + ": " + e.message.split("\n")[0].slice(0, 160);
  return t;
}
function banner() {
  const b = $("banner");
  let h = "";
  for (let i = 0; i < step; i++) {
    const e = E[i];
    if (e.kind !== "error") continue;
    const n = e.node === null || e.node === undefined ? null : N[e.node];
    h += "<b>\u2716 backward failed" + (n ? " at " + esc(n.kind === "leaf" ? nodeLabel(n) : n.op) + (n.src ? " (created at " + esc(srcText(n.src)) + ")" : "") : "") + "</b>\n" +
         esc(e.type + ": " + e.message) + (e.fix ? "\n<span class='fix'>Fix: " + esc(e.fix) + "</span>" : "") + "\n";
  }
  if (D.script_error && step >= E.length) {
    const s = D.script_error;
    if (!h.includes(esc(s.message.split("\n")[0]))) h += "<b>\u2716 the script stopped with " + esc(s.type) + "</b>\n" + esc(s.message) + (s.fix ? "\n<span class='fix'>Fix: " + esc(s.fix) + "</span>" : "");
  }
  b.innerHTML = h.trim();
  b.style.display = h ? "block" : "none";
}
function sparkline(vals) {
  const pts = vals.map((v, i) => [i, v]).filter(p => typeof p[1] === "number");
  if (pts.length < 2) return "";
  const W = 320, H = 80, lo = Math.min(...pts.map(p => p[1])), hi = Math.max(...pts.map(p => p[1])), n = vals.length - 1 || 1;
  const xy = pts.map(p => (4 + p[0] / n * (W - 8)).toFixed(1) + "," + (H - 4 - (hi > lo ? (p[1] - lo) / (hi - lo) : 0.5) * (H - 8)).toFixed(1)).join(" ");
  return "<svg class='spark' width='" + W + "' height='" + H + "'><polyline fill='none' stroke='#1f5fbf' stroke-width='1.5' points='" + xy + "'/></svg><div class='kv'>first " + pts[0][1] + "  last " + pts[pts.length - 1][1] + "  min " + lo + "</div>";
}
function showSummary() {
  let h = "<p>Click a node to see its inputs, output, saved tensors, gradient and source line. Step with the buttons, the slider or the arrow keys. Click a module's title to collapse it, a \u25B8 box to open it.</p>";
  if (SUMMARY) {
    const S = SUMMARY, it = S.iterations;
    h += "<h3>run</h3><div class='kv'>" + it + " training iteration" + (it === 1 ? "" : "s") + "; recorded in full: " + (S.recorded.join(", ") || "none") +
         "<br>graph nodes per iteration: " + (S.nodes.length ? S.nodes[0] + (it > 1 ? " (first), " + S.nodes.reduce((a, b) => a + b, 0) + " in all" : "") : "0") +
         "<br>backward calls: " + S.backward_calls.reduce((a, b) => a + b, 0) + ", optimizer steps: " + S.steps.reduce((a, b) => a + b, 0) + "</div>";
    if (S.loss.filter(v => typeof v === "number").length > 1) h += "<h3>loss per iteration</h3>" + sparkline(S.loss);
  }
  $("details").innerHTML = h;
}
function showDetails() {
  if (selected === null) { showSummary(); return; }
  const n = N[selected];
  let h = "<h2>" + esc(nodeLabel(n)) + "</h2><div class='kv'>node #" + n.id + (n.group !== null ? "<br>module: " + esc(G[n.group].path) + " (" + esc(G[n.group].cls) + ")" : "") + "</div>";
  if (n.src) h += "<h3>source</h3><pre>" + esc(n.src.where || (n.src.file + ":" + n.src.line)) + "\n" + esc(n.src.code) + "</pre>";
  if (n.tErr !== null && n.tErr < step) h += "<h3 class='err'>backward failed here</h3><pre class='err'>" + esc(n.err.type + ": " + n.err.message) + "</pre>" + (n.err.fix ? "<pre>Fix: " + esc(n.err.fix) + "</pre>" : "");
  if (n.kind === "op") h += "<h3>inputs</h3><pre>" + esc(n.inputs.map((s, k) => k + ": " + (s === null ? "None (no grad needed)" : nodeLabel(N[s]) + (N[s].out ? "  (" + N[s].out.shape.join(", ") + ")" : ""))).join("\n") || "none") + "</pre>";
  h += "<h3>" + (n.kind === "leaf" ? "value" : "output") + "</h3><pre>" + esc(fmt(n.out)) + "</pre>";
  if (n.saved && n.saved.length) h += "<h3>saved tensors" + (n.tFree !== null && n.tFree < step ? " (freed)" : "") + "</h3><pre>" + n.saved.map(s => s.name + ": " + fmt(s)).map(esc).join("\n\n") + "</pre>";
  if (n.tBw !== null && n.tBw < step) {
    h += "<h3>gradient in</h3><pre>" + esc(n.bw.grad_in.map(fmt).join("\n")) + "</pre>";
    h += "<h3>gradients out</h3><pre>" + esc(n.bw.grads_out.map((g, k) => k + ": " + fmt(g)).join("\n")) + "</pre>";
  } else if (n.kind === "op") h += "<h3>gradient</h3><pre>not computed yet at this step</pre>";
  const acc = n.tAcc.filter(t => t < step);
  if (acc.length) h += "<h3>.grad (after " + acc.length + " accumulation" + (acc.length > 1 ? "s" : "") + ")</h3><pre>" + esc(fmt(E[acc[acc.length - 1]].grad)) + "</pre>";
  if (n.tFree !== null) h += "<h3>buffers</h3><pre>" + (n.tFree < step ? "freed at step " + (n.tFree + 1) : "freed later, at step " + (n.tFree + 1)) + "</pre>";
  $("details").innerHTML = h;
}

// ---------------------------------------------------------------- controls
function render() {
  if (!view) return;
  restyle();
  $("slider").max = E.length; $("slider").value = step;
  $("step").textContent = "step " + step + " / " + E.length;
  $("desc").textContent = describe(step > 0 ? E[step - 1] : null, step);
  banner();
  showDetails();
}
let fitted = false;
function fit() {
  const r = view.res, box = $("view");
  let s = Math.min(1, (box.clientWidth - 20) / (r.width || 1));
  if (r.height * s > box.clientHeight) s = Math.min(s, Math.max(0.6, (box.clientHeight - 10) / (r.height || 1)));
  scale = Math.max(0.75, s);
}
function update() {
  relayout(() => { if (!fitted) { fit(); fitted = true; } draw(); $("busy").textContent = ""; render(); document.body.dataset.ready = "1"; if (!window.__tti) window.__tti = performance.now(); });
}
function go(s) { step = Math.max(0, Math.min(E.length, s)); render(); }
const unitsAt = L => { const s = new Set(); for (const n of V) { let u = "n" + n.id; for (let g = n.group; g !== null; g = G[g].parent) if (G[g].depth === L) u = "g" + g; s.add(u); } return s.size; };
const maxDepth = () => G.reduce((m, g) => Math.max(m, g.depth), 0);
function depthLimit() { const v = $("depth").value; return v === "all" ? Infinity : +v; }
function fittingDepth(limit) {
  let L = maxDepth();
  while (L > 1 && unitsAt(L) > limit) L--;
  return L;
}
function applyDepth() {
  collapsed.clear(); unrolled.clear();
  let L = depthLimit();
  const open = L === Infinity ? V.length : unitsAt(L);
  $("note").textContent = "";
  if (open > MAX_UNITS && maxDepth() > 0) {
    const F = fittingDepth(MAX_UNITS);
    if (F < L) { $("note").textContent = "modules below depth " + F + " stay closed (" + open + " boxes would be slow to lay out): click one to open it"; L = F; }
  }
  for (const g of G) if (g.depth === L) collapsed.add(g.id);
}
function setupDepth() {
  const sel = $("depth"), md = maxDepth();
  sel.innerHTML = "<option value='all'>all levels</option>" + Array.from({length: md}, (_, i) => "<option value='" + (i + 1) + "'>depth " + (i + 1) + "</option>").join("");
  const choice = V.length > AUTO_UNITS && md > 0 ? String(fittingDepth(AUTO_UNITS)) : "all";
  sel.value = choice;
  applyDepth();
}
$("first").onclick = () => go(0);
$("prev").onclick = () => go(step - 1);
$("next").onclick = () => go(step + 1);
$("last").onclick = () => go(E.length);
$("play").onclick = () => {
  if (timer) { clearInterval(timer); timer = null; $("play").textContent = "play"; return; }
  if (step >= E.length) step = 0;
  $("play").textContent = "pause";
  timer = setInterval(() => { if (step >= E.length) { $("play").click(); return; } go(step + 1); }, 400);
};
let pending = false;
$("slider").addEventListener("input", () => { if (pending) return; pending = true; requestAnimationFrame(() => { pending = false; go(+$("slider").value); }); });
$("fold").onchange = () => { unrolled.clear(); update(); };
$("depth").onchange = () => { applyDepth(); update(); };
$("collapseAll").onclick = () => { $("depth").value = "1"; applyDepth(); update(); };
$("expandAll").onclick = () => { $("depth").value = "all"; applyDepth(); $("fold").checked = false; update(); };
$("zin").onclick = () => { scale *= 1.25; draw(); render(); };
$("zout").onclick = () => { scale /= 1.25; draw(); render(); };
$("zfit").onclick = () => { fit(); draw(); render(); };
$("iter").onchange = () => { chooseIteration(+$("iter").value); selected = null; setupDepth(); update(); };
document.addEventListener("keydown", ev => {
  if (ev.target.tagName === "SELECT" || (ev.target.tagName === "INPUT" && ev.target.type !== "range" && ev.target.type !== "checkbox")) return;
  if (ev.key === "ArrowRight") { go(step + 1); ev.preventDefault(); }
  else if (ev.key === "ArrowLeft") { go(step - 1); ev.preventDefault(); }
  else if (ev.key === "Home") go(0);
  else if (ev.key === "End") go(E.length);
  else if (ev.key === " ") { $("play").click(); ev.preventDefault(); }
});
$("iter").innerHTML = ITS.map(i => "<option value='" + i + "'>iteration " + i + "</option>").join("");
$("iter").value = String(iter);
$("iterbox").style.display = ITS.length > 1 ? "" : "none";
chooseIteration(iter);
setupDepth();
update();
