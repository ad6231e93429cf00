// view_oom.js - the browser half of view_oom.sh: playwright-core drives
// Debian's chromium (no browser download) on `memflow view`'s page.
// Arguments: the URL of the imported PyTorch snapshot's log (an OOM on
// gpu/0) and the URL of view_roles_workload's run (named tensors, 600,000
// temporaries, an OOM).  Prints what it saw as JSON for the shell test to
// check: the OOM button and key, the red lines' pixels, the OOM's hover
// text, the URL's state after a reload; colour by role: the legend, the
// pixels of each role's block shown whole and of the whole run's picture.
"use strict";
const { launch, open, ready: readyIn } = require("./view_lib");

const [oomUrl, rolesUrl] = process.argv.slice(2);
const ready = (page, after) => readyIn(page, after, 60000);

// The pixel (r, g, b) of canvas `which` (curve, map) of the lane of view v at (x, y).
function pixel(page, v, which, x, y) {
  return page.evaluate(([v, which, x, y]) => {
    const l = window.memflowView.lanes().find((l) => l.view.id === v);
    return [...l[which].getContext("2d").getImageData(x, y, 1, 1).data.slice(0, 3)];
  }, [v, which, x, y]);
}

(async () => {
  const ctx = await launch(1300, 1400);   // both lanes of the roles run in view
  const out = {};
  try {
    // ---- the OOM of an imported snapshot ----
    const page = await open(ctx, oomUrl);
    let n = await ready(page, 0);
    out.button = await page.evaluate(() => {
      const b = document.getElementById("jump-oom");
      return { disabled: b.disabled, title: b.title };
    });
    await page.keyboard.press("o");
    n = await ready(page, n);
    const look = () => page.evaluate(() => {
      const mv = window.memflowView, S = mv.state;
      const lanes = mv.lanes().map((l) => {
        const o = l.view.ooms[0];
        return { view: l.view.id, device: l.view.device, ooms: l.view.ooms.length,
                 x: o ? Math.round(96 + (o.time - S.t0) / (S.t1 - S.t0) * l.plotW) : null };
      });
      return { t0: S.t0, t1: S.t1, hash: location.hash, lanes };
    });
    out.after_o = await look();
    const g0 = out.after_o.lanes.find((l) => l.ooms === 1), g1 = out.after_o.lanes.find((l) => l.ooms === 0);
    const x = g0.x;
    out.pixels = {
      curve: [await pixel(page, g0.view, "curve", x - 1, 60), await pixel(page, g0.view, "curve", x, 60)],
      map: [await pixel(page, g0.view, "map", x - 1, 150), await pixel(page, g0.view, "map", x, 150)],
      map_beside: [await pixel(page, g0.view, "map", x - 3, 150), await pixel(page, g0.view, "map", x + 2, 150)],
      other_lane: [await pixel(page, g1.view, "map", x - 1, 150), await pixel(page, g1.view, "map", x, 150)],
    };
    // hover the line, on the map and on the curve
    const box = (which) => page.evaluate(([v, which]) => {
      const r = window.memflowView.lanes().find((l) => l.view.id === v)[which].getBoundingClientRect();
      return { left: r.left, top: r.top };
    }, [g0.view, which]);
    const m = await box("map");
    await page.mouse.move(m.left + x, m.top + 150);
    await page.waitForFunction(() => !document.getElementById("tip").hidden);
    out.hover_map = await page.evaluate(() => document.getElementById("tip").textContent);
    await page.mouse.move(5, 5);
    const c = await box("curve");
    await page.mouse.move(c.left + x - 1, c.top + 60);
    await page.waitForFunction(() => !document.getElementById("tip").hidden);
    out.hover_curve = await page.evaluate(() => document.getElementById("tip").textContent);
    // the URL keeps the place: a reload opens it again, colour by role too
    await page.mouse.move(5, 5);
    await page.selectOption("#color-by", "role");
    n = await ready(page, n);
    const hash = await page.evaluate(() => location.hash);
    await page.reload();
    await ready(page, 0);
    out.reloaded = await page.evaluate(() => ({
      t0: window.memflowView.state.t0, t1: window.memflowView.state.t1, hash: location.hash,
      by: document.getElementById("color-by").value }));
    out.hash_before_reload = hash;

    // ---- roles ----
    const roles = await open(ctx, rolesUrl);
    n = await ready(roles, 0);
    await roles.selectOption("#color-by", "role");
    n = await ready(roles, n);
    // the blocks, from the server: the largest over the whole run at each one's address
    const B = 0x7f0000000000, MiB = 1 << 20;
    const found = await roles.evaluate(async ([B, MiB]) => {
      const token = new URLSearchParams(location.search).get("token");
      const mv = window.memflowView, m = mv.meta();
      const v = m.views.find((x) => x.device === "gpu/0");
      const l = mv.lanes().find((x) => x.view.id === v.id);
      const at = async (addr) => {
        const y = l.axis.y(addr);
        const r = await fetch(`/api/at?token=${token}&view=${v.id}&t0=0&t1=${m.t1}&y0=${y}&y1=${y + 1}`);
        return (await r.json()).block;
      };
      const blocks = {};
      for (const [k, off] of [["P", 0], ["G", MiB], ["I", 2 * MiB], ["A", 3 * MiB], ["T", 4 * MiB],
                              ["O", 5 * MiB], ["X", 9 * MiB]])
        blocks[k] = await at(B + off);
      return { view: v.id, blocks, legend: [...l.legend.querySelectorAll("label")].map((e) => e.textContent),
               raster: l.raster ? { by: l.raster.by, level: l.raster.level, layers: l.raster.layers } : null,
               colors: m.roles.map((r) => r.color), ooms: v.ooms, t1: m.t1, hash: location.hash };
    }, [B, MiB]);
    out.roles = found;
    const bl = found.blocks;
    // the whole run (a picture from the index's cells): the parameter's
    // band after its naming, the temporaries' band while they churn
    const at = (addr, t) => roles.evaluate(([v, addr, t]) => {
      const mv = window.memflowView, w = mv.where(v, addr, t);
      const r = mv.lanes().find((l) => l.view.id === v).map.getBoundingClientRect();
      return [Math.round(w.x - r.left), Math.round(w.y - r.top)];
    }, [found.view, addr, t]);
    const mid = (bl.G.alloc + bl.I.free) / 2, churn = (bl.A.alloc + bl.G.alloc) / 2;
    const whole = {};
    for (const [k, addr, t] of [["P", B + MiB / 2, mid], ["T", B + 4 * MiB + 128 * 1024, churn]]) {
      const [px, py] = await at(addr, t);
      whole[k] = await pixel(roles, found.view, "map", px, py);
    }
    // the churn's band at 24 moments across it (a loaded machine may stop
    // the program for a while, leaving gaps: one make check -j2 in a few
    // dozen found none of nine moments coloured enough); the shell test
    // reads them all
    const from = Math.min(bl.A.alloc, bl.G.alloc), to = Math.max(bl.A.alloc, bl.G.alloc);
    whole.moments = [];
    for (let i = 1; i <= 24; i++) {
      const [px, py] = await at(B + 4 * MiB + 128 * 1024, from + (to - from) * i / 25);
      whole.moments.push(await pixel(roles, found.view, "map", px, py));
    }
    out.whole = whole;
    // zoomed in after the churn: every block whole, each in its role's colour
    await roles.evaluate(([v, t0, t1]) => {
      const l = window.memflowView.lanes().find((x) => x.view.id === v);
      window.memflowView.setWindow(t0, t1, v, 0, l.axis.total);
    }, [found.view, bl.G.alloc - 1e6, bl.I.free + 1e6]);
    await ready(roles, n);
    out.zoomed = await roles.evaluate((v) => {
      const l = window.memflowView.lanes().find((x) => x.view.id === v);
      return { raster: !!l.raster, blocks: l.blocks.map((b) => [b.requested, b.role]) };
    }, found.view);
    const zoomed = {};
    for (const [k, off, size] of [["P", 0, MiB], ["G", MiB, MiB], ["I", 2 * MiB, 256 * 1024],
                                  ["A", 3 * MiB, 512 * 1024], ["O", 5 * MiB, 3 * MiB], ["X", 9 * MiB, 128 * 1024]]) {
      const [px, py] = await at(B + off + size / 2, mid);
      zoomed[k] = await pixel(roles, found.view, "map", px, py);
    }
    out.zoomed_pixels = zoomed;
    // hover the parameter
    const [px, py] = await at(B + MiB / 2, mid);
    const r = await roles.evaluate((v) => {
      const b = window.memflowView.lanes().find((l) => l.view.id === v).map.getBoundingClientRect();
      return { left: b.left, top: b.top };
    }, found.view);
    await roles.mouse.move(r.left + px, r.top + py);
    await roles.waitForFunction(() => !document.getElementById("tip").hidden);
    out.hover_param = await roles.evaluate(() => document.getElementById("tip").textContent);
  } finally {
    await ctx.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
