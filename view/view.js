// view/view.js - the browser side of `memflow view`: asks the server that
// sent the page (same origin, the token of the page's URL) for the views,
// then per lane the occupancy and the window shown: its blocks whole when
// it holds few, else a picture in the page's own pixels (the scope, or the
// role, that held most of each pixel, and how full it was), and draws them
// on canvases, each OOM of a lane a red line across both.  Zoom: wheel
// (time; shift: address), keys + - arrows 0, p l o jump to the peak, the
// largest leak, the first OOM; pan: drag; hover a block for its details
// (the server says which block is under the pointer) or an OOM's line for
// its post-mortem, click a block for its stack; drag on the curve to
// select a range (flame graph, growth).  Colour by scope or by role.  The
// state lives in the URL's hash, so a link opens the same place.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const LEFT = 96, CURVE_H = 90, MAP_H = 300, AXIS_H = 22;
  const S = { t0: 0, t1: 1, hide: new Set(), views: null, q: "", min: 0, max: 0, y: {}, by: "scope" };
  const OOM_COLOR = "#ff0000", OOM_NEAR = 4;     // an OOM's line, and how near hovering finds it
  let meta = null, lanes = [], seq = 0, busy = 0;

  const $ = (id) => document.getElementById(id);
  const api = (path, params, bytes) => {
    const q = Object.entries(params || {}).map(([k, v]) => k + "=" + v).join("&");
    return fetch(path + "?token=" + token + (q ? "&" + q : ""), { cache: "no-store" })
      .then((r) => r.ok ? (bytes ? r.arrayBuffer() : r.json())
        : r.json().then((e) => { throw new Error(e.error); }));
  };
  const big = (n) => Math.round(n).toLocaleString("en-US");
  const bytes = (n) => {
    const u = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0, v = n;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return i ? v.toFixed(v < 10 ? 2 : 1) + " " + u[i] : n + " B";
  };
  const time = (ns) => {
    if (ns < 1e3) return ns.toFixed(0) + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(3) + " us";
    if (ns < 1e9) return (ns / 1e6).toFixed(3) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  };
  const hex = (a) => "0x" + a.toString(16);

  // ---- the address axis: used ranges end to end, gaps collapsed ----
  function axisOf(view) {
    const r = view.ranges.length ? view.ranges : [[view.min_addr, view.max_addr || view.min_addr + 1]];
    const at = [];
    let total = 0;
    for (const [s, e] of r) { at.push(total); total += e - s; }
    return {
      ranges: r, at, total,
      y(addr) {                       // compressed position of an address
        let lo = 0, hi = r.length - 1;
        while (lo < hi) { const m = (lo + hi + 1) >> 1; if (r[m][0] <= addr) lo = m; else hi = m - 1; }
        if (addr < r[lo][0]) return at[lo];
        return at[lo] + Math.min(addr - r[lo][0], r[lo][1] - r[lo][0]);
      },
      addr(y) {                       // the address at a compressed position
        let i = 0;
        while (i + 1 < r.length && at[i + 1] <= y) i++;
        return r[i][0] + Math.max(0, y - at[i]);
      },
    };
  }

  // ---- the URL's hash ----
  function readHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.has("t0")) S.t0 = Number(h.get("t0"));
    if (h.has("t1")) S.t1 = Number(h.get("t1"));
    if (h.get("hide")) S.hide = new Set(h.get("hide").split(",").map(Number));
    if (h.has("views")) S.views = new Set(h.get("views").split(",").filter((x) => x).map(Number));
    S.q = h.get("q") || "";
    S.min = Number(h.get("min") || 0);
    S.max = Number(h.get("max") || 0);
    S.by = h.get("color") === "role" ? "role" : "scope";
    for (const [k, v] of h) if (k.startsWith("y")) S.y[k.slice(1)] = v.split(",").map(Number);
  }
  function writeHash() {
    const h = new URLSearchParams();
    h.set("t0", Math.round(S.t0)); h.set("t1", Math.round(S.t1));
    if (S.hide.size) h.set("hide", [...S.hide].join(","));
    if (S.views) h.set("views", [...S.views].join(","));
    if (S.q) h.set("q", S.q);
    if (S.min) h.set("min", S.min);
    if (S.max) h.set("max", S.max);
    if (S.by === "role") h.set("color", "role");
    for (const l of lanes) h.set("y" + l.view.id, Math.round(l.y0) + "," + Math.round(l.y1));
    history.replaceState(null, "", "#" + h.toString());
  }

  // ---- lanes ----
  // The colour of a key: a scope's, or in role mode a role's (enum mf_block_role).
  function colorOf(lane, key, by) {
    if ((by || S.by) === "role") return (meta.roles[key & 7] || {}).color || "#999999";
    return lane.colors.get(key) || "#999999";
  }
  const keyOf = (b) => S.by === "role" ? b.role & 7 : b.scope;
  function swatch(color) {
    const sw = document.createElement("span");
    sw.className = "sw"; sw.style.background = color;
    return sw;
  }
  // The legend: scopes with their boxes (hide, show), or the view's roles.
  function fillLegend(lane) {
    const view = lane.view, legend = lane.legend;
    legend.replaceChildren();
    if (S.by === "role") {
      for (const r of view.roles) {
        const lab = document.createElement("label");
        lab.dataset.role = r.id;
        lab.append(swatch(r.color), document.createTextNode(r.name + " " + bytes(r.bytes)));
        legend.append(lab);
      }
      return;
    }
    for (const s of view.scopes) {
      const lab = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox"; box.checked = !S.hide.has(s.id); box.dataset.scope = s.id;
      box.addEventListener("change", () => {
        if (box.checked) S.hide.delete(s.id); else S.hide.add(s.id);
        for (const b of document.querySelectorAll('.legend input[data-scope="' + s.id + '"]')) b.checked = box.checked;
        drawAll(); refresh();
      });
      lab.append(box, swatch(s.color), document.createTextNode(s.name + " " + bytes(s.bytes)));
      legend.append(lab);
    }
  }
  function laneTitle(view) {
    return view.device + " - pid " + view.pid + " - " + view.program +
      "  (peak " + bytes(view.peak_bytes) + " at " + time(view.peak_time) + ")";
  }
  function makeLane(view) {
    const el = document.createElement("section");
    el.className = "lane";
    el.dataset.view = view.id;
    const title = document.createElement("h3");
    title.textContent = laneTitle(view);
    const curve = document.createElement("canvas"), map = document.createElement("canvas");
    curve.className = "curve"; map.className = "map";
    const legend = document.createElement("div");
    legend.className = "legend";
    el.append(title, curve, map, legend);
    $("lanes").append(el);
    const axis = axisOf(view);
    const lane = { view, el, title, curve, map, legend, axis, colors: new Map(), cells: null,
                   blocks: [], occ: null, y0: 0, y1: axis.total, level: 0 };
    if (S.y[view.id]) [lane.y0, lane.y1] = S.y[view.id];
    for (const s of view.scopes) lane.colors.set(s.id, s.color);
    fillLegend(lane);
    hookLane(lane);
    return lane;
  }

  function size(lane) {
    const w = Math.max(300, lane.el.clientWidth);
    for (const [c, h] of [[lane.curve, CURVE_H], [lane.map, MAP_H + AXIS_H]]) {
      if (c.width !== w) c.width = w;
      if (c.height !== h) c.height = h;
    }
    return w - LEFT - 8;
  }
  const tx = (lane, t) => LEFT + (t - S.t0) / (S.t1 - S.t0) * lane.plotW;
  const ty = (lane, y) => (y - lane.y0) / (lane.y1 - lane.y0) * MAP_H;

  // ---- fetching what a lane shows ----
  function hideParam() { return [...S.hide].join(","); }
  function filters() {
    const f = {};
    if (S.hide.size) f.hide = hideParam();
    if (S.min) f.min = S.min;
    if (S.max) f.max = S.max;
    return f;
  }
  // A window's answer (bytes, little endian): mode 0, blocks whole; mode 1,
  // a raster of w x h pixels (docs/OUTPUTS.md).
  function parseWindow(buf) {
    const dv = new DataView(buf), mode = dv.getUint32(0, true);
    if (mode === 0) {
      const n = dv.getUint32(4, true), blocks = new Array(n);
      for (let i = 0; i < n; i++) {
        const o = 8 + i * 64, fr = dv.getFloat64(o + 8, true), ef = dv.getUint32(o + 56, true);
        blocks[i] = {
          alloc: dv.getFloat64(o, true), free: fr < 0 ? null : fr, addr: dv.getFloat64(o + 16, true),
          requested: dv.getFloat64(o + 24, true), actual: dv.getFloat64(o + 32, true),
          scope: dv.getUint32(o + 40, true), stack: dv.getUint32(o + 44, true),
          tid: dv.getUint32(o + 48, true), name: dv.getUint32(o + 52, true),
          end: ef & 255, role: ef >>> 24, level: dv.getUint32(o + 60, true),
        };
      }
      return { blocks };
    }
    const w = dv.getUint32(4, true), h = dv.getUint32(8, true), nl = dv.getUint32(12, true);
    const layers = [];
    for (let i = 0; i < nl; i++) layers.push(dv.getUint32(24 + 4 * i, true));
    const at = 24 + 4 * nl;
    return { raster: { w, h, layers, level: dv.getInt32(16, true), most: dv.getUint32(20, true),
                       layer: new Uint8Array(buf, at, w * h), fill: new Uint8Array(buf, at + w * h, w * h) } };
  }
  function fetchLane(lane, my) {
    lane.plotW = size(lane);
    const t0 = Math.max(0, Math.floor(S.t0)), t1 = Math.max(t0 + 1, Math.ceil(S.t1));
    const y0 = Math.max(0, Math.floor(lane.y0)), y1 = Math.max(y0 + 1, Math.ceil(lane.y1));
    const started = performance.now(), by = S.by;
    return Promise.all([
      api("/api/occupancy", { view: lane.view.id, t0, t1, cols: Math.max(1, lane.plotW) }),
      api("/api/window", Object.assign({ view: lane.view.id, t0, t1, y0, y1, w: lane.plotW, h: MAP_H },
                                       filters(), by === "role" ? { by: 1 } : {}), true),
    ]).then(([occ, win]) => {
      if (my !== seq) return;
      const got = parseWindow(win);
      if (got.raster) got.raster.by = by;     // what its layers are
      lane.occ = occ; lane.blocks = got.blocks || []; lane.raster = got.raster || null;
      lane.shown = { t0, t1, y0, y1 };
      lane.answeredMs = performance.now() - started;
    });
  }
  // One round of answers at a time: a change while one is on its way asks
  // again when it is back (the server answers one request at a time, so
  // answers nobody waits for would only queue before the one wanted).
  // dataset.ready counts the answers drawn for the state as it is.
  let timer = 0, inflight = false, again = false;
  function fetchAll() {
    if (inflight) { again = true; return; }
    inflight = true;
    const my = ++seq;
    busy++;
    document.body.dataset.busy = "1";
    Promise.all(lanes.map((l) => fetchLane(l, my))).then(() => {
      if (my === seq) drawAll();
      if (my === seq && !again) document.body.dataset.ready = String(my);
    }).catch((e) => { $("status").textContent = "error: " + e.message; })
      .finally(() => {
        inflight = false;
        if (again) { again = false; fetchAll(); }
        if (--busy === 0) delete document.body.dataset.busy;
      });
  }
  function refresh() {
    clearTimeout(timer);
    timer = setTimeout(fetchAll, 0);
    writeHash();
  }

  // ---- drawing ----
  function visible(b) {
    if (S.hide.has(b.scope)) return false;
    if (S.min && b.requested < S.min) return false;
    if (S.max && b.requested > S.max) return false;
    return true;
  }
  function matches(b) {
    if (!S.q) return false;
    return (stackCache.get(b.stack) || []).some((f) => f.function.includes(S.q) ||
                                                       (f.file || "").includes(S.q));
  }
  function drawCurve(lane) {
    const c = lane.curve.getContext("2d"), w = lane.curve.width;
    c.clearRect(0, 0, w, CURVE_H);
    c.fillStyle = "#fff"; c.fillRect(LEFT, 0, lane.plotW, CURVE_H);
    const pts = (lane.occ && lane.occ.points) || [];
    let top = 1;
    for (let i = 0; i < pts.length; i += 5) top = Math.max(top, pts[i + 2], pts[i + 4]);
    const colNs = 2 ** (meta.wshift + (lane.occ ? lane.occ.level : 0));
    const py = (v) => CURVE_H - 4 - v / top * (CURVE_H - 10);
    c.fillStyle = "#9bb7d4"; c.strokeStyle = "#2b5d8a";
    c.beginPath();
    let last = null;
    c.moveTo(LEFT, CURVE_H - 4);
    for (let i = 0; i < pts.length; i += 5) {
      const x0 = Math.max(LEFT, tx(lane, pts[i] * colNs)), x1 = Math.min(LEFT + lane.plotW, tx(lane, (pts[i] + 1) * colNs));
      if (last !== null) c.lineTo(x0, py(last));
      c.lineTo(x0, py(pts[i + 2]));
      c.lineTo(Math.max(x0 + 1, x1), py(pts[i + 2]));
      last = pts[i + 3];
    }
    if (last !== null) c.lineTo(LEFT + lane.plotW, py(last));
    c.lineTo(LEFT + lane.plotW, CURVE_H - 4);
    c.closePath(); c.fill(); c.stroke();
    c.fillStyle = "#c0392b";                // allocator / driver samples
    for (let i = 0; i < pts.length; i += 5)
      if (pts[i + 4] >= 0) c.fillRect(tx(lane, pts[i] * colNs) - 1, py(pts[i + 4]) - 1, 3, 3);
    const pk = tx(lane, lane.view.peak_time);  // the peak
    if (pk >= LEFT && pk <= LEFT + lane.plotW) {
      c.strokeStyle = "#d62728"; c.setLineDash([4, 3]);
      c.beginPath(); c.moveTo(pk, 0); c.lineTo(pk, CURVE_H); c.stroke(); c.setLineDash([]);
    }
    drawOoms(c, lane, CURVE_H);
    if (lane.sel) {
      const a = tx(lane, lane.sel[0]), b = tx(lane, lane.sel[1]);
      c.fillStyle = "#0366d633"; c.fillRect(Math.min(a, b), 0, Math.abs(b - a), CURVE_H);
    }
    c.fillStyle = "#444"; c.font = "11px sans-serif";
    c.fillText(bytes(top), 4, 12); c.fillText("0", 4, CURVE_H - 4);
    c.fillText("held", 4, CURVE_H / 2);
  }
  // Each OOM of the lane: a red line over the plot's height h, labelled.
  function drawOoms(c, lane, h) {
    c.fillStyle = OOM_COLOR; c.font = "bold 11px sans-serif";
    for (const o of lane.view.ooms) {
      const x = Math.round(tx(lane, o.time));
      if (x < LEFT || x > LEFT + lane.plotW) continue;
      c.fillRect(x - 1, 0, 2, h);
      c.fillText("OOM", Math.min(x + 4, LEFT + lane.plotW - 30), 11);
    }
  }
  // The OOM whose line is nearest x (within OOM_NEAR pixels), or null.
  function oomAt(lane, x) {
    let best = null, dist = OOM_NEAR + 1;
    for (const o of lane.view.ooms) {
      const d = Math.abs(tx(lane, o.time) - x);
      if (d < dist) { best = o; dist = d; }
    }
    return best;
  }
  function oomText(lane, o) {
    const sized = (n) => big(n) + " B (" + bytes(n) + ")";
    const what = o.tensors ? "tensors" : "blocks";
    const lines = [
      "out of memory at " + time(o.time) + " on " + lane.view.device + ", process " + lane.view.pid,
      "asked " + sized(o.requested),
      "free " + (o.free === null ? "unknown" : sized(o.free)) + " as recorded" +
        (o.limit === null ? "" : ", limit " + sized(o.limit)),
      "route: " + o.route_name,
      "scope of the request: " + o.scope,
    ];
    if (!o.known) lines.push("live then: not analysed (only the first OOMs are)");
    else {
      lines.push(what + " live then: " + sized(o.live_bytes) + " in " + big(o.live_count) +
                 (o.top.length ? ", by scope:" : ""));
      for (const t of o.top) lines.push("  " + t.scope + " " + sized(t.bytes) + " in " + big(t.count));
    }
    return lines.join("\n");
  }
  function showTip(text, cx, cy) {
    const tip = $("tip");
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = Math.min(cx + 14, innerWidth - 420) + "px";
    tip.style.top = cy + 14 + "px";
  }
  // The raster as an image: each pixel its scope's (or role's) colour, opaque as it was full.
  function rgbOf(lane, key, by) {
    const hexc = key === 0xffffffff ? "#888888" : colorOf(lane, key, by);
    return [1, 3, 5].map((i) => parseInt(hexc.slice(i, i + 2), 16));
  }
  function drawRaster(c, lane) {
    const r = lane.raster;
    if (!r.image) {
      const img = new ImageData(r.w, r.h), d = img.data, rgb = r.layers.map((s) => rgbOf(lane, s, r.by));
      for (let i = 0; i < r.w * r.h; i++) {
        const l = r.layer[i];
        if (l === 255) continue;
        const k = rgb[l];
        d[4 * i] = k[0]; d[4 * i + 1] = k[1]; d[4 * i + 2] = k[2];
        d[4 * i + 3] = Math.round(255 * (0.35 + 0.65 * r.fill[i] / 255));
      }
      r.image = document.createElement("canvas");
      r.image.width = r.w; r.image.height = r.h;
      r.image.getContext("2d").putImageData(img, 0, 0);
    }
    const sh = lane.shown, x0 = tx(lane, sh.t0), x1 = tx(lane, sh.t1);
    const top = MAP_H - ty(lane, sh.y1), bottom = MAP_H - ty(lane, sh.y0);
    c.imageSmoothingEnabled = false;
    c.drawImage(r.image, x0, top, x1 - x0, bottom - top);
  }
  function drawMap(lane) {
    const c = lane.map.getContext("2d"), w = lane.map.width;
    c.clearRect(0, 0, w, MAP_H + AXIS_H);
    c.fillStyle = "#f4f4f4"; c.fillRect(LEFT, 0, lane.plotW, MAP_H);
    c.save();
    c.beginPath(); c.rect(LEFT, 0, lane.plotW, MAP_H); c.clip();
    if (lane.raster) drawRaster(c, lane);
    lane.drawn = [];
    const end = meta.t1;
    for (const b of lane.blocks) {
      if (!visible(b)) continue;
      const span = b.actual || b.requested || 1;
      const x0 = tx(lane, b.alloc), x1 = tx(lane, b.free === null ? end : b.free);
      const y0 = ty(lane, lane.axis.y(b.addr)), y1 = ty(lane, lane.axis.y(b.addr + span));
      const r = [x0, MAP_H - Math.max(y1, y0 + 1), Math.max(1, x1 - x0), Math.max(1, y1 - y0)];
      c.fillStyle = colorOf(lane, keyOf(b));
      c.globalAlpha = S.q && !matches(b) ? 0.25 : 1;
      c.fillRect(...r);
      if (S.q && matches(b)) { c.strokeStyle = "#000"; c.lineWidth = 2; c.strokeRect(...r); c.lineWidth = 1; }
      if (b.free === null) { c.fillStyle = "#000"; c.fillRect(r[0] + r[2] - 2, r[1], 2, r[3]); }
      lane.drawn.push([r, b]);
    }
    c.globalAlpha = 1;
    drawOoms(c, lane, MAP_H);
    c.restore();
    // axes: time below, addresses left, with the bytes shown
    c.fillStyle = "#444"; c.strokeStyle = "#888"; c.font = "11px sans-serif";
    for (let k = 0; k <= 5; k++) {
      const t = S.t0 + (S.t1 - S.t0) * k / 5, x = tx(lane, t);
      c.beginPath(); c.moveTo(x, MAP_H); c.lineTo(x, MAP_H + 4); c.stroke();
      c.fillText(time(t), Math.min(x, w - 70), MAP_H + 16);
    }
    for (let k = 0; k <= 4; k++) {
      const y = lane.y0 + (lane.y1 - lane.y0) * k / 4;
      c.fillText(hex(Math.round(lane.axis.addr(y))), 2, MAP_H - (MAP_H - 10) * k / 4 - 2);
    }
    c.fillText(bytes(lane.y1 - lane.y0) + " shown", 2, MAP_H + 16);
    for (let i = 1; i < lane.axis.ranges.length; i++) {   // collapsed gaps
      const y = MAP_H - ty(lane, lane.axis.at[i]);
      if (y > 0 && y < MAP_H) { c.strokeStyle = "#bbb"; c.setLineDash([2, 2]); c.beginPath();
        c.moveTo(LEFT, y); c.lineTo(LEFT + lane.plotW, y); c.stroke(); c.setLineDash([]); }
    }
  }
  function drawAll() {
    for (const l of lanes) { drawCurve(l); drawMap(l); }
    $("status").textContent = time(S.t1 - S.t0) + " shown" + (meta.running ? " - following" : "") +
      (lanes.some((l) => l.raster) ? " - zoom in for every block" : "");
  }

  // ---- interaction ----
  function zoomTime(f, at) {
    const span = Math.max(64, (S.t1 - S.t0) * f);
    const a = at === undefined ? (S.t0 + S.t1) / 2 : at;
    const r = (a - S.t0) / (S.t1 - S.t0);
    S.t0 = a - span * r; S.t1 = S.t0 + span;
    clampTime();
    refresh();
  }
  function clampTime() {
    const total = Math.max(1, meta.t1);
    const span = Math.min(S.t1 - S.t0, total * 1.2);
    if (S.t0 < -total * 0.1) S.t0 = -total * 0.1;
    S.t1 = S.t0 + span;
  }
  function zoomAddr(lane, f, at) {
    const span = Math.max(16, (lane.y1 - lane.y0) * f), r = (at - lane.y0) / (lane.y1 - lane.y0);
    lane.y0 = at - span * r; lane.y1 = lane.y0 + span;
    refresh();
  }
  // The block under the pointer, from the server: the largest one in the
  // pixel's box (+-1.5 px), whatever the window shows (blocks or a raster).
  function placeAt(lane, x, y) {
    const nsPx = (S.t1 - S.t0) / lane.plotW, bPx = (lane.y1 - lane.y0) / MAP_H;
    const t = S.t0 + (x - LEFT) * nsPx, yy = lane.y0 + (MAP_H - y) * bPx;
    return { t0: Math.max(0, Math.floor(t - 1.5 * nsPx)), t1: Math.max(0, Math.ceil(t + 1.5 * nsPx)),
             y0: Math.max(0, Math.floor(yy - 1.5 * bPx)), y1: Math.max(1, Math.ceil(yy + 1.5 * bPx)) };
  }
  let hoverWant = null, hoverBusy = false;
  function blockAt(lane, x, y) {
    const p = placeAt(lane, x, y);
    if (p.y1 <= p.y0) p.y1 = p.y0 + 1;
    const started = performance.now();
    return api("/api/at", Object.assign({ view: lane.view.id }, p, filters())).then((r) => {
      lane.hoverMs = performance.now() - started;
      return r.block;
    });
  }
  let onOom = false;         // the pointer is on an OOM's line: its tip wins over blocks'
  function hover(lane, e) {
    const o = oomAt(lane, e.offsetX);
    onOom = !!o;
    if (o) { hoverWant = null; showTip(oomText(lane, o), e.clientX, e.clientY); return; }
    hoverWant = { lane, x: e.offsetX, y: e.offsetY, cx: e.clientX, cy: e.clientY };
    if (hoverBusy) return;
    const tip = $("tip");
    const next = () => {
      const h = hoverWant;
      hoverWant = null;
      if (!h) { hoverBusy = false; return; }
      hoverBusy = true;
      blockAt(h.lane, h.x, h.y).then((b) => {
        h.lane.hovered = b;
        document.body.dataset.hovered = String(Number(document.body.dataset.hovered || 0) + 1);
        if (onOom) return;
        if (!b) { tip.hidden = true; return; }
        showTip(hoverText(h.lane, b, stackCache.get(b.stack)), h.cx, h.cy);
        if (b.stack && !stackCache.has(b.stack))
          return stackOf(b.stack).then(() => {
            if (h.lane.hovered === b && !tip.hidden && !onOom) tip.textContent = hoverText(h.lane, b, stackCache.get(b.stack));
          });
      }).catch(() => {}).finally(next);
    };
    next();
  }
  const stackCache = new Map();
  function stackOf(id) {
    if (!id) return Promise.resolve([]);
    if (stackCache.has(id)) return Promise.resolve(stackCache.get(id));
    return api("/api/stack", { stack: id }).then((r) => { stackCache.set(id, r.frames); return r.frames; });
  }
  function frameText(f) {
    return f.function + (f.file ? " (" + f.file.split("/").pop() + ":" + f.line + ")" : "");
  }
  function hoverText(lane, b, frames) {
    const scope = lane.view.scopes.find((s) => s.id === b.scope);
    const end = b.free === null ? meta.t1 : b.free;
    const lines = [
      "requested " + big(b.requested) + " B (" + bytes(b.requested) + "), actual " + big(b.actual) + " B",
      "scope: " + (scope ? scope.name : "?"),
      "site: " + (b.site || "(no stack)"),
      "address " + hex(b.addr) + " - " + hex(b.addr + (b.actual || b.requested)),
      "allocated " + time(b.alloc) + ", " + (b.free === null ? "never freed"
        : b.end === 2 ? "never freed: its process ended at " + time(b.free)
        : (b.end === 3 ? "replaced " : "freed ") + time(b.free)),
      "lifetime " + time(end - b.alloc),
      "thread " + b.tid + ", process " + lane.view.pid + " on " + lane.view.device,
    ];
    if (b.role && b.role !== "unknown") lines.splice(2, 0, "role: " + b.role);
    if (b.name) lines.splice(2, 0, "name: " + b.name);
    if (frames && frames.length) lines.push("frames:", ...frames.slice(0, 5).map((f) => "  " + frameText(f)));
    return lines.join("\n");
  }
  function hookLane(lane) {
    const tip = $("tip");
    let drag = null;
    lane.map.addEventListener("wheel", (e) => {
      e.preventDefault();
      const f = e.deltaY > 0 ? 1.25 : 0.8;
      if (e.shiftKey) zoomAddr(lane, f, lane.y0 + (MAP_H - e.offsetY) / MAP_H * (lane.y1 - lane.y0));
      else zoomTime(f, S.t0 + (e.offsetX - LEFT) / lane.plotW * (S.t1 - S.t0));
    }, { passive: false });
    // a drag pans, and goes on outside the map until the button is released
    const dragTo = (e) => {
      if (!drag || !(e.buttons & 1)) return;
      const dx = (e.clientX - drag.x) / lane.plotW * (drag.t1 - drag.t0);
      const dy = (e.clientY - drag.y) / MAP_H * (drag.y1 - drag.y0);
      if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3) drag.moved = true;
      if (drag.moved) {         // the picture follows; the answer is asked for on release
        S.t0 = drag.t0 - dx; S.t1 = drag.t1 - dx; lane.y0 = drag.y0 + dy; lane.y1 = drag.y1 + dy;
        drawAll();
      }
    };
    lane.map.addEventListener("mousedown", (e) => {
      drag = { x: e.clientX, y: e.clientY, t0: S.t0, t1: S.t1, y0: lane.y0, y1: lane.y1, moved: false };
      window.addEventListener("mousemove", dragTo);
    });
    window.addEventListener("mouseup", () => {
      window.removeEventListener("mousemove", dragTo);
      if (drag && drag.moved) refresh();
      setTimeout(() => { drag = null; }, 0);
    });
    lane.map.addEventListener("mousemove", (e) => { if (!drag) hover(lane, e); });
    lane.map.addEventListener("mouseleave", () => { hoverWant = null; onOom = false; tip.hidden = true; });
    lane.curve.addEventListener("mouseleave", () => { onOom = false; tip.hidden = true; });
    lane.map.addEventListener("click", (e) => {
      if (drag && drag.moved) return;
      blockAt(lane, e.offsetX, e.offsetY).then((b) => { if (b) showStack(b); });
    });
    let sel = null;
    lane.curve.addEventListener("mousedown", (e) => { sel = S.t0 + (e.offsetX - LEFT) / lane.plotW * (S.t1 - S.t0); });
    lane.curve.addEventListener("mousemove", (e) => {
      if (sel === null || !(e.buttons & 1)) {
        const o = oomAt(lane, e.offsetX);
        onOom = !!o;
        if (o) showTip(oomText(lane, o), e.clientX, e.clientY); else tip.hidden = true;
        return;
      }
      lane.sel = [sel, S.t0 + (e.offsetX - LEFT) / lane.plotW * (S.t1 - S.t0)];
      drawCurve(lane);
    });
    lane.curve.addEventListener("mouseup", () => {
      sel = null;
      if (lane.sel && Math.abs(lane.sel[1] - lane.sel[0]) > 0) selectRange(lane, Math.min(...lane.sel), Math.max(...lane.sel));
    });
  }
  function showStack(b) {
    stackOf(b.stack).then((frames) => {
      const ol = $("stack-frames");
      ol.replaceChildren(...(frames.length ? frames : [{ function: "(no stack recorded)" }]).map((f) => {
        const li = document.createElement("li");
        li.textContent = frameText(f) + (f.module ? "  [" + f.module.split("/").pop() + "]" : "");
        return li;
      }));
      $("stack").hidden = false;
    });
  }
  function selectRange(lane, t0, t1) {
    t0 = Math.max(0, Math.round(t0)); t1 = Math.max(t0, Math.round(t1));
    api("/api/range", { view: lane.view.id, t0, t1 }).then((r) => {
      $("range").hidden = false;
      $("range-title").textContent = time(t0) + " - " + time(t1) + ": peak " + bytes(r.live_bytes) +
        " in " + big(r.live_blocks) + " blocks at " + time(r.peak_time);
      drawFlame(r.flame);
      for (const [id, rows, what] of [["grew-scopes", r.scopes, "scope"], ["grew-sites", r.sites, "site"]]) {
        const t = $(id);
        t.replaceChildren();
        const head = t.insertRow();
        head.insertCell().textContent = what + " that grew";
        head.insertCell().textContent = "bytes";
        for (const row of rows) {
          const tr = t.insertRow();
          tr.insertCell().textContent = row.name;
          const n = tr.insertCell(); n.className = "n"; n.textContent = big(row.grew);
        }
      }
      document.body.dataset.range = String(t1);
    });
  }
  function drawFlame(root) {
    const box = $("flame"), W = box.clientWidth || 800;
    box.replaceChildren();
    let depth = 0;
    const place = (n, x, w, d) => {
      if (w < 1) return;
      const div = document.createElement("div");
      div.style.left = x + "px"; div.style.width = w + "px"; div.style.top = d * 18 + "px";
      div.textContent = n.name; div.title = n.name + ": " + big(n.bytes) + " B";
      div.dataset.depth = d;
      box.append(div);
      depth = Math.max(depth, d + 1);
      let cx = x;
      const kids = [...n.children].sort((a, b) => b.bytes - a.bytes || (a.name < b.name ? -1 : 1));
      for (const k of kids) { const kw = n.bytes ? w * k.bytes / n.bytes : 0; place(k, cx, kw, d + 1); cx += kw; }
    };
    place(root, 0, W, 0);
    box.style.height = depth * 18 + "px";
  }
  function jumpTo(t, span, lane, addr, bytesShown) {
    S.t0 = Math.max(0, t - span / 2); S.t1 = S.t0 + span;
    if (lane && addr !== undefined) {
      const y = lane.axis.y(addr);
      lane.y0 = y - bytesShown; lane.y1 = y + 2 * bytesShown;
    }
    refresh();
  }
  function firstLane() { return lanes[0]; }
  $("jump-peak").onclick = () => { const l = firstLane(); if (l) jumpTo(l.view.peak_time, Math.max(1000, meta.t1 / 20)); };
  $("jump-leak").onclick = () => {
    const l = lanes.filter((x) => x.view.leak).sort((a, b) => b.view.leak.requested - a.view.leak.requested)[0];
    if (!l) return;
    const b = l.view.leak;
    jumpTo(b.alloc + (meta.t1 - b.alloc) / 2, Math.max(1000, (meta.t1 - b.alloc) * 1.2), l, b.addr, b.actual || b.requested);
  };
  // The first OOM of all views: a window of a tenth of the run around it
  // (at least 1 us), its lane shown.
  function firstOom() {
    let first = null;
    for (const v of meta.views) for (const o of v.ooms) if (!first || o.time < first.o.time) first = { v, o };
    return first;
  }
  function oomButton() {
    const f = firstOom(), b = $("jump-oom");
    b.disabled = !f;
    b.title = f ? "zoom to the first OOM (o)" : "no OOM is recorded in these logs";
  }
  $("jump-oom").onclick = () => {
    const f = firstOom();
    if (!f) return;
    if (!lanes.some((l) => l.view.id === f.v.id)) {
      S.views = new Set([...(S.views || meta.views.map((v) => v.id)), f.v.id]);
      buildLanes();
    }
    jumpTo(f.o.time, Math.max(1000, meta.t1 / 10));
  };
  $("color-by").addEventListener("change", (e) => {
    S.by = e.target.value === "role" ? "role" : "scope";
    for (const l of lanes) fillLegend(l);
    drawAll(); refresh();
  });
  $("reset").onclick = () => { S.t0 = 0; S.t1 = Math.max(1, meta.t1); for (const l of lanes) { l.y0 = 0; l.y1 = l.axis.total; } refresh(); };
  $("stack-close").onclick = () => { $("stack").hidden = true; };
  $("search").addEventListener("input", (e) => {
    S.q = e.target.value;
    const stacks = new Set();                 // the frames of the blocks shown (a few hundred stacks)
    for (const l of lanes) for (const b of l.blocks) if (b.stack && stacks.size < 500) stacks.add(b.stack);
    Promise.all([...stacks].map(stackOf)).then(() => drawAll());
    drawAll(); writeHash();
  });
  $("min-size").addEventListener("input", (e) => { S.min = Number(e.target.value) || 0; drawAll(); refresh(); });
  $("max-size").addEventListener("input", (e) => { S.max = Number(e.target.value) || 0; drawAll(); refresh(); });
  window.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT") return;
    const span = S.t1 - S.t0;
    if (e.key === "+" || e.key === "=") zoomTime(0.5);
    else if (e.key === "-") zoomTime(2);
    else if (e.key === "ArrowLeft") { S.t0 -= span / 5; S.t1 -= span / 5; refresh(); }
    else if (e.key === "ArrowRight") { S.t0 += span / 5; S.t1 += span / 5; refresh(); }
    else if (e.key === "0") $("reset").click();
    else if (e.key === "p") $("jump-peak").click();
    else if (e.key === "l") $("jump-leak").click();
    else if (e.key === "o") $("jump-oom").click();
  });
  window.addEventListener("resize", () => refresh());

  function buildLanes() {
    for (const l of lanes) l.el.remove();
    const box = $("views");
    box.replaceChildren(document.createTextNode("views: "));
    lanes = [];
    for (const v of meta.views) {
      const lab = document.createElement("label"), cb = document.createElement("input");
      cb.type = "checkbox"; cb.checked = !S.views || S.views.has(v.id); cb.dataset.view = v.id;
      cb.onchange = () => {
        S.views = new Set([...box.querySelectorAll("input")].filter((x) => x.checked).map((x) => Number(x.dataset.view)));
        buildLanes(); refresh();
      };
      lab.append(cb, document.createTextNode(" " + v.device + " pid " + v.pid));
      box.append(lab);
      if (cb.checked) lanes.push(makeLane(v));
    }
  }
  function follow() {
    api("/api/meta").then((m) => {
      const grew = m.t1 !== meta.t1 || m.views.length !== meta.views.length;
      const atEnd = S.t1 >= meta.t1 * 0.999;
      const oldViews = meta.views.length;
      meta = m;
      if (!grew) return;
      if (m.views.length !== oldViews) buildLanes();
      for (const l of lanes) {
        const v = m.views.find((x) => x.id === l.view.id);
        const whole = l.y0 <= 0 && l.y1 >= l.axis.total;
        l.view = v; l.axis = axisOf(v);
        for (const s of v.scopes) l.colors.set(s.id, s.color);
        l.title.textContent = laneTitle(v);   // a new peak
        fillLegend(l);
        if (whole) { l.y0 = 0; l.y1 = l.axis.total; }
      }
      oomButton();
      if (atEnd) S.t1 = Math.max(S.t1, m.t1);
      document.body.dataset.t1 = String(m.t1);
      refresh();
    }).catch(() => {}).finally(() => setTimeout(follow, meta && meta.running ? 1000 : 5000));
  }

  api("/api/meta").then((m) => {
    meta = m;
    S.t1 = Math.max(1, m.t1);
    readHash();
    $("search").value = S.q;
    if (S.min) $("min-size").value = S.min;
    if (S.max) $("max-size").value = S.max;
    $("color-by").value = S.by;
    oomButton();
    buildLanes();
    document.body.dataset.t1 = String(m.t1);
    refresh();
    setTimeout(follow, 1000);
  }).catch((e) => { $("status").textContent = "cannot read the views: " + e.message; });

  // for tests and tools: where a block is drawn, and the state
  window.memflowView = {
    state: S,
    meta: () => meta,
    lanes: () => lanes,
    where(viewId, addr, t) {
      const l = lanes.find((x) => x.view.id === viewId);
      if (!l) return null;
      const r = l.map.getBoundingClientRect();
      return { x: r.left + tx(l, t), y: r.top + MAP_H - ty(l, l.axis.y(addr)) - 1 };
    },
    setWindow(t0, t1, viewId, y0, y1) {
      S.t0 = t0; S.t1 = t1;
      const l = lanes.find((x) => x.view.id === viewId);
      if (l && y0 !== undefined) { l.y0 = y0; l.y1 = y1; }
      refresh();
    },
    select(viewId, t0, t1) { selectRange(lanes.find((x) => x.view.id === viewId), t0, t1); },
    parseWindow,
    timings: () => lanes.map((l) => ({ view: l.view.id, window: l.answeredMs, hover: l.hoverMs,
                                       raster: !!l.raster, blocks: l.blocks.length })),
  };
})();
