"use strict";
// The compiled functions' view: for each function compiled with dyngrad.compile, the history
// of its captures (the recaptures' guard failures, the fall back to eager) and, per captured
// program, its guards, buffers, instructions by phase (with the buffers each reads and
// writes) and a dataflow drawing laid out with dagre.  Data: #data's "compiled" list.
(function () {
  const DATA = JSON.parse(document.getElementById("data").textContent);
  const FNS = DATA.compiled || [];
  const root = document.getElementById("compiled");
  if (!root) return;
  if (!FNS.length) { root.style.display = "none"; if (document.body.classList.contains("compiled-page")) document.body.dataset.ready = "1"; return; }
  const NS = "http://www.w3.org/2000/svg";
  const esc = s => String(s).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
  const shapeText = s => s.length ? "(" + s.join(", ") + (s.length === 1 ? ",)" : ")") : "()";
  const chip = (p, i, suffix) => "<span class='buf k-" + p.buffers[i].kind + "' data-b='" + i + "' title='" + esc(bufTitle(p.buffers[i]) + (suffix ? " (its " + suffix + ")" : "")) + "'>b" + i + (suffix || "") + "</span>";
  const bufTitle = b => "b" + b.i + ": " + b.kind + (b.source ? " " + b.source : "") + " " + shapeText(b.shape) + " " + b.dtype;
  let markers = 0;
  const PHASES = {forward: "forward", backward: "backward", optimizer: "optimizer"};

  function history(f) {
    let h = "<ol class='history'>";
    const progs = f.programs;
    if (progs.length) h += "<li><b>program #0</b> captured in " + progs[0].capture_ms.toFixed(1) + " ms</li>";
    for (const r of f.recaptures) {
      h += "<li class='recap'><b>recapture</b>: every program's guards failed:<ul>" + r.reasons.map(x => "<li><code>" + esc(x) + "</code></li>").join("") + "</ul>";
      if (r.captured !== null) h += "&rarr; <b>program #" + r.captured + "</b> captured in " + progs[r.captured].capture_ms.toFixed(1) + " ms";
      h += "<details><summary>TORCH_LOGS=recompiles</summary><pre>" + esc(r.log) + "</pre></details></li>";
    }
    if (f.eager) {
      h += "<li class='eager'><b>" + (f.eager.limit_hit ? "recompile limit hit: runs eagerly from then on" : f.split && f.regions.length ? "split: its own code runs eagerly, the Modules it calls as compiled regions (" + f.regions.map(esc).join(", ") + ")" : "runs eagerly") + "</b><pre>" + esc(f.eager.warning || f.eager.reason) + "</pre></li>";
    }
    return h + "</ol>";
  }

  function guardsTable(p) {
    if (!p.guards.length) return "<p>no guards</p>";
    return "<table class='guards'><tr><th>#</th><th>checked on every call</th></tr>" + p.guards.map((g, k) =>
      "<tr><td>" + k + "</td><td>" + esc(g.words) + "<div class='expr'>" + esc(g.expr) + "</div></td></tr>").join("") + "</table>";
  }

  function buffersTable(p) {
    const writer = {}, readers = {}, gwriter = {};
    for (const ins of p.instrs) {
      for (const b of ins.writes) (writer[b] = writer[b] || []).push(ins.i);
      for (const b of ins.grads) (gwriter[b] = gwriter[b] || []).push(ins.i);
      for (const b of ins.reads) (readers[b] = readers[b] || []).push(ins.i);
    }
    return "<table class='buffers'><tr><th>buffer</th><th>kind</th><th>source</th><th>shape</th><th>dtype</th><th>written by</th><th>read by</th><th>.grad set by</th></tr>" + p.buffers.map(b =>
      "<tr data-b='" + b.i + "'><td>" + chip(p, b.i) + "</td><td>" + b.kind + "</td><td>" + esc(b.source) + "</td><td>" + shapeText(b.shape) + "</td><td>" + esc(b.dtype) +
      "</td><td>" + (writer[b.i] || []).map(i => "#" + i).join(" ") + "</td><td>" + (readers[b.i] || []).map(i => "#" + i).join(" ") + "</td><td>" + (gwriter[b.i] || []).map(i => "#" + i).join(" ") + "</td></tr>").join("") + "</table>";
  }

  function instrTables(p) {
    let h = "";
    for (const ph of p.phases) {
      const rows = p.instrs.slice(ph.start, ph.end);
      h += "<h4 class='phase ph-" + ph.phase + "'>" + esc(PHASES[ph.phase] || ph.phase) + " <span>instructions #" + ph.start + "&ndash;#" + (ph.end - 1) + "</span></h4>";
      h += "<table class='instrs ph-" + ph.phase + "' data-phase='" + esc(ph.phase) + "'><tr><th>#</th><th>op</th><th>reads</th><th>writes</th><th>how</th><th>note</th></tr>" + rows.map(ins =>
        "<tr data-i='" + ins.i + "' title='" + esc(ins.text) + "'><td>" + ins.i + "</td><td class='op'>" + esc(ins.op) + "</td><td>" + ins.reads.map(b => chip(p, b)).join(" ") +
        "</td><td>" + ins.writes.map(b => chip(p, b)).concat(ins.grads.map(b => chip(p, b, ".grad"))).join(" ") + "</td><td>" + ins.mode + "</td><td>" + esc(ins.note) + "</td></tr>").join("") + "</table>";
    }
    return h;
  }

  // the dataflow: instructions as boxes (coloured by phase), buffers from outside as sources,
  // an edge per buffer from its writer (or source) to each reader
  function drawFlow(p, box) {
    if (typeof dagre === "undefined" || !p.instrs.length || p.instrs.length > 400) { box.style.display = "none"; return; }
    const g = new dagre.graphlib.Graph({multigraph: true});
    g.setGraph({rankdir: "LR", nodesep: 8, ranksep: 26, marginx: 8, marginy: 8});
    g.setDefaultEdgeLabel(() => ({}));
    const W = s => 14 + 6.7 * s.length, H = 20;
    const last = {};
    const used = new Set();
    for (const ins of p.instrs) for (const b of ins.reads) used.add(b);
    for (const b of p.buffers) if (b.kind !== "tmp" && used.has(b.i)) g.setNode("b" + b.i, {width: W("b" + b.i + " " + b.kind), height: H, label: "b" + b.i + " " + b.kind, cls: "k-" + b.kind});
    const edges = [];
    for (const ins of p.instrs) {
      const id = "i" + ins.i, label = "#" + ins.i + " " + ins.op;
      g.setNode(id, {width: W(label), height: H, label: label, cls: "ph-" + ins.phase});
      for (const b of ins.reads) {
        const src = last[b] !== undefined ? last[b] : (g.hasNode("b" + b) ? "b" + b : null);
        if (src !== null && src !== id) { g.setEdge(src, id, {}, "e" + edges.length); edges.push([src, id, "e" + edges.length]); }
      }
      for (const b of ins.writes) last[b] = id;
    }
    dagre.layout(g);
    const gr = g.graph();
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("width", Math.ceil(gr.width)); svg.setAttribute("height", Math.ceil(gr.height));
    const mid = "carrow" + (++markers);   // ids unique per drawing (a closed one hides its own)
    svg.innerHTML = "<defs><marker id='" + mid + "' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' markerHeight='7' orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='#888'/></marker></defs>";
    for (const [v, w, name] of edges) {
      const pts = g.edge(v, w, name).points;
      const path = document.createElementNS(NS, "path");
      path.setAttribute("d", smooth(pts));
      path.setAttribute("class", "edge");
      path.setAttribute("marker-end", "url(#" + mid + ")");
      svg.appendChild(path);
    }
    for (const v of g.nodes()) {
      const n = g.node(v);
      const grp = document.createElementNS(NS, "g");
      grp.setAttribute("class", "fnode " + n.cls);
      grp.setAttribute("transform", "translate(" + (n.x - n.width / 2).toFixed(1) + "," + (n.y - n.height / 2).toFixed(1) + ")");
      const r = document.createElementNS(NS, "rect");
      r.setAttribute("width", n.width); r.setAttribute("height", n.height); r.setAttribute("rx", 3);
      const t = document.createElementNS(NS, "text");
      t.setAttribute("x", 7); t.setAttribute("y", 14); t.textContent = n.label;
      grp.appendChild(r); grp.appendChild(t);
      if (v[0] === "i") grp.dataset.i = v.slice(1);
      svg.appendChild(grp);
    }
    box.appendChild(svg);
  }

  // a smooth path through dagre's edge points (quadratic pieces between their midpoints)
  function smooth(pts) {
    const f = q => q.x.toFixed(1) + "," + q.y.toFixed(1);
    if (pts.length < 3) return "M" + pts.map(f).join(" L");
    let d = "M" + f(pts[0]);
    for (let k = 1; k < pts.length - 1; k++) {
      const m = {x: (pts[k].x + pts[k + 1].x) / 2, y: (pts[k].y + pts[k + 1].y) / 2};
      d += " Q" + f(pts[k]) + " " + (k === pts.length - 2 ? f(pts[k + 1]) : f(m));
    }
    return d;
  }

  function programSection(f, p, open) {
    const d = document.createElement("details");
    d.className = "program"; d.open = open;
    const replays = p.replays === null ? "replays not counted (counted while dyngrad.viz.record() runs)" : "replayed " + p.replays + " time" + (p.replays === 1 ? "" : "s");
    d.innerHTML = "<summary><b>program #" + p.index + "</b>: " + p.buffers.length + " buffers, " + p.instrs.length + " instructions, " + p.guards.length + " guards; captured in " + p.capture_ms.toFixed(1) + " ms; " + replays + "</summary>" +
      "<h3>guards</h3>" + guardsTable(p) +
      "<h3>instructions by phase</h3><div class='flowkey'><span class='ph-forward'>forward</span><span class='ph-backward'>backward</span><span class='ph-optimizer'>optimizer</span><span class='k-arg'>argument</span><span class='k-ext'>from outside</span><span class='k-const'>constant</span> an edge: a buffer one instruction writes and another reads; click a buffer (b3) to mark where it is used</div><div class='flow'></div>" + instrTables(p) +
      "<h3>buffers</h3>" + buffersTable(p) +
      (p.fx ? "<details" + (p.fx.code ? "" : " class='nofx'") + "><summary>the forward as a torch.fx GraphModule</summary><pre class='src'>" + esc(p.fx.code || p.fx.why) + "</pre></details>" : "") +
      (p.source ? "<details><summary>generated replay code</summary><pre class='src'>" + esc(p.source) + "</pre></details>" : "");
    drawFlow(p, d.querySelector(".flow"));
    d.addEventListener("click", ev => {
      const c = ev.target.closest("[data-b]");
      if (!c) return;
      const b = c.dataset.b, on = !c.classList.contains("hl");
      for (const x of d.querySelectorAll(".hl")) x.classList.remove("hl");
      if (on) for (const x of d.querySelectorAll("[data-b='" + b + "']")) x.classList.add("hl");
    });
    return d;
  }

  let h = "<h2>compiled functions</h2>";
  root.innerHTML = h;
  for (const f of FNS) {
    const s = document.createElement("div");
    s.className = "cfn";
    const calls = f.calls ? "; calls: " + f.calls.capture + " captured, " + f.calls.replay + " replayed, " + f.calls.eager + " eager" : "";
    s.innerHTML = "<h3 class='fname'>" + esc(f.name) + (f.where ? " <span>" + esc(f.where) + "</span>" : "") + "</h3>" +
      "<div class='kv'>backend " + esc(f.backend) + "; " + f.captures + " capture" + (f.captures === 1 ? "" : "s") + ", " + f.programs.length + " program" + (f.programs.length === 1 ? "" : "s") + " kept; recompile limit " + f.limit + calls + "</div>" + history(f);
    f.programs.forEach((p, k) => s.appendChild(programSection(f, p, k === f.programs.length - 1)));
    root.appendChild(s);
  }
  if (document.body.classList.contains("compiled-page")) document.body.dataset.ready = "1";
})();
