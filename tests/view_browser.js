// view_browser.js - the browser half of view_browser.sh: playwright-core
// drives Debian's chromium (no browser download) on `memflow view`'s page.
// Arguments: the URL of a finished run, the URL of a growing run, and the
// file whose creation lets the growing run's program go on.  Prints what
// it saw as JSON for the shell test to check.
"use strict";
const fs = require("fs");
const http = require("http");
const { launch, open, ready } = require("./view_lib");

const [doneUrl, growUrl, goFile, procUrl] = process.argv.slice(2);

function get(url, headers) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: headers || {} }, (res) => { res.resume(); resolve(res.statusCode); });
    req.on("error", reject);
  });
}

(async () => {
  const ctx = await launch(1300, 900);
  const out = {};
  try {
    const page = await open(ctx, doneUrl);
    const n = await ready(page, 0);
    // the known block, from the server's own answer
    const found = await page.evaluate(async () => {
      const token = new URLSearchParams(location.search).get("token");
      const m = window.memflowView.meta();
      for (const v of m.views) {
        const s = v.scopes.find((x) => x.name === "view_big:");
        if (!s) continue;
        const l = window.memflowView.lanes().find((x) => x.view.id === v.id);
        const r = await fetch(`/api/window?token=${token}&view=${v.id}&t0=0&t1=${m.t1}&y0=0&y1=${l.axis.total}&w=100&h=100`);
        const w = window.memflowView.parseWindow(await r.arrayBuffer());
        const b = w.blocks.find((x) => x.requested === 777777);
        return { view: v.id, block: b, color: s.color, scope: s.id };
      }
      return null;
    });
    if (!found || !found.block) throw new Error("no 777777-byte block in view_big:");
    const b = found.block;
    out.big = b;
    out.big_color = [1, 3, 5].map((i) => parseInt(found.color.slice(i, i + 2), 16));
    // zoom to it: its life, and its addresses with as much again around
    await page.evaluate(([v, b]) => {
      const l = window.memflowView.lanes().find((x) => x.view.id === v);
      const y = l.axis.y(b.addr), span = b.actual || b.requested;
      window.memflowView.setWindow(b.alloc - (b.free - b.alloc) / 2, b.free + (b.free - b.alloc) / 2, v,
                                   y - span, y + 2 * span);
      return true;
    }, [found.view, b]);
    await ready(page, n);
    const where = await page.evaluate(([v, b]) => window.memflowView.where(v, b.addr + (b.actual || b.requested) / 2, (b.alloc + b.free) / 2),
                                      [found.view, b]);
    await page.mouse.move(where.x, where.y);
    await page.waitForFunction(() => !document.getElementById("tip").hidden);
    out.hover = await page.evaluate(() => document.getElementById("tip").textContent);
    const pixel = () => page.evaluate(([v, w]) => {
      const l = window.memflowView.lanes().find((x) => x.view.id === v);
      const r = l.map.getBoundingClientRect();
      return [...l.map.getContext("2d").getImageData(Math.round(w.x - r.left), Math.round(w.y - r.top), 1, 1).data.slice(0, 3)];
    }, [found.view, where]);
    out.pixel_on = await pixel();
    out.done_lanes = await page.evaluate(() => window.memflowView.lanes().map((l) =>
      [l.view.device, l.view.blocks, l.view.peak_bytes]));
    await page.mouse.move(5, 5);
    await page.click(`section.lane[data-view="${found.view}"] .legend input[data-scope="${found.scope}"]`);
    out.pixel_off = await pixel();
    await page.click(`section.lane[data-view="${found.view}"] .legend input[data-scope="${found.scope}"]`);
    // a range around its allocation: the flame graph at the peak, what grew
    await page.evaluate(([v, b]) => window.memflowView.select(v, b.alloc - 1000, b.alloc + 1000), [found.view, b]);
    await page.waitForFunction(() => document.body.dataset.range);
    out.flame_leaf = await page.evaluate(() => {
      const d = [...document.querySelectorAll("#flame div")].filter((x) => x.textContent === "make_big");
      return d.length ? d[0].title : null;
    });
    out.grew_top = await page.evaluate(() => {
      const row = document.querySelectorAll("#grew-scopes tr")[1];
      return row ? [row.cells[0].textContent, row.cells[1].textContent] : null;
    });
    // refusals
    const u = new URL(doneUrl), token = u.searchParams.get("token");
    const base = `http://127.0.0.1:${u.port}`;
    out.wrong_token = await get(`${base}/api/meta?token=${token.replace(/.$/, token.endsWith("0") ? "1" : "0")}`);
    out.bad_token = await get(`${base}/api/meta?token=nothex`);
    out.page_no_token = await get(`${base}/`);
    out.foreign_host = await get(`${base}/api/meta?token=${token}`, { Host: "rebind.example:" + u.port });
    out.foreign_origin = await get(`${base}/api/meta?token=${token}`, { Origin: "http://rebind.example" });
    // following a growing log
    const grow = await ctx.newPage();
    await grow.goto(growUrl);
    await ready(grow, 0);
    fs.writeFileSync(goFile, "go\n");
    await grow.waitForFunction(() => [...document.querySelectorAll(".legend label")]
      .some((l) => l.textContent.startsWith("view_late:")), null, { timeout: 30000 });
    out.followed_scopes = await grow.evaluate(() => [...document.querySelectorAll(".legend label")].map((l) => l.textContent));
    // several processes: one lane each
    const procs = await ctx.newPage();
    await procs.goto(procUrl);
    await ready(procs, 0);
    out.lanes = await procs.evaluate(() => window.memflowView.lanes().map((l) => ({
      title: l.el.querySelector("h3").textContent, pid: l.view.pid, device: l.view.device,
      leak: l.view.leak ? l.view.leak.requested : null })));
  } finally {
    await ctx.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
