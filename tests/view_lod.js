// view_lod.js - the browser half of view_lod.sh: playwright-core drives
// Debian's chromium on `memflow view` of a run with millions of small
// blocks, zoomed out on the whole run, and reads the map's pixels back.
// Arguments: the URL, the first and last kept block's address (hex) and
// the last one's size.  Prints what it saw as JSON for the shell to check:
//   band: every pixel of the band of addresses the kept blocks span, from
//     the last one's allocation to the first one's free, inset by 2
//     pixels: how many, how many blank, how many in lod_keep's colour over
//     the background, how many in no scope's colour (the program's other
//     blocks lie between the allocator's extents), and the alphas;
//   samples: 300 pixels at fixed places of the map, each with what the
//     server says was there (/api/at on the pixel's own box, and on a box
//     3 pixels wider) and whether the pixel is blank.
"use strict";
const { launch, open, ready } = require("./view_lib");

const [url, firstHex, lastHex, lastSize] = process.argv.slice(2);
const BG = [244, 244, 244];

(async () => {
  const ctx = await launch(1300, 900);
  const out = {};
  try {
    const page = await open(ctx, url);
    await ready(page, 0, 60000);
    out.status = await page.evaluate(() => document.getElementById("status").textContent);
    out.timings = await page.evaluate(() => window.memflowView.timings());
    out.result = await page.evaluate(async ([firstHex, lastHex, lastSize, BG]) => {
      const token = new URLSearchParams(location.search).get("token");
      const mv = window.memflowView, m = mv.meta();
      const v = m.views.find((x) => x.scopes.some((s) => s.name === "lod_keep:"));
      const lane = mv.lanes().find((l) => l.view.id === v.id);
      const keep = v.scopes.find((s) => s.name === "lod_keep:");
      const at = async (t0, t1, y0, y1) => {
        const r = await fetch(`/api/at?token=${token}&view=${v.id}&t0=${Math.max(0, Math.floor(t0))}` +
                              `&t1=${Math.ceil(t1)}&y0=${Math.max(0, Math.floor(y0))}&y1=${Math.ceil(y1)}`);
        return (await r.json()).block;
      };
      const A0 = parseInt(firstHex, 16), A1 = parseInt(lastHex, 16);
      const first = await at(0, m.t1, lane.axis.y(A0), lane.axis.y(A0) + 1);
      const last = await at(0, m.t1, lane.axis.y(A1), lane.axis.y(A1) + 1);
      const c = lane.map.getContext("2d"), rect = lane.map.getBoundingClientRect();
      const px = (x, y) => [...c.getImageData(x, y, 1, 1).data.slice(0, 3)];
      const rgb = (hexc) => [1, 3, 5].map((i) => parseInt(hexc.slice(i, i + 2), 16));
      const colors = [keep.color, ...v.scopes.filter((s) => s !== keep).map((s) => s.color)].map(rgb);
      // the one alpha over the background that makes colour col pixel p (null: none does)
      const alphaOf = (p, col) => {
        const j = [0, 1, 2].reduce((b, k) => Math.abs(col[k] - BG[k]) > Math.abs(col[b] - BG[b]) ? k : b, 0);
        const a = (p[j] - BG[j]) / (col[j] - BG[j]);
        return [0, 1, 2].every((k) => Math.abs(p[k] - (BG[k] + a * (col[k] - BG[k]))) <= 3) ? a : null;
      };
      // the band: x from the last kept allocation to the first kept free, the
      // addresses from the lowest kept block to the highest
      const lo = Math.min(A0, A1), hi = Math.max(A0, A1) + Number(lastSize);
      const p0 = mv.where(v.id, hi, last.alloc), p1 = mv.where(v.id, lo, first.free);
      const x0 = Math.ceil(p0.x - rect.left) + 2, x1 = Math.floor(p1.x - rect.left) - 2;
      const y0 = Math.ceil(p0.y - rect.top) + 2, y1 = Math.floor(p1.y - rect.top) - 2;
      const img = c.getImageData(x0, y0, x1 - x0 + 1, y1 - y0 + 1).data;
      // rows the dashed lines of collapsed gaps cross are left out
      const gapRows = new Set();
      for (let i = 1; i < lane.axis.at.length; i++) {
        const gy = 300 - (lane.axis.at[i] - lane.y0) / (lane.y1 - lane.y0) * 300;
        for (let r = Math.floor(gy) - 1; r <= Math.ceil(gy) + 1; r++) gapRows.add(r);
      }
      const width = x1 - x0 + 1;
      let blank = 0, amin = 2, amax = -1, off = 0, kept = 0, pixels = 0;
      for (let i = 0; i < img.length; i += 4) {
        if (gapRows.has(y0 + Math.floor(i / 4 / width))) continue;
        pixels++;
        const p = [img[i], img[i + 1], img[i + 2]];
        if (p.every((k, j) => k === BG[j])) { blank++; continue; }
        const as = colors.map((col) => alphaOf(p, col)), which = as.findIndex((a) => a !== null);
        if (which < 0) { off++; continue; }
        kept += which === 0;
        amin = Math.min(amin, as[which]); amax = Math.max(amax, as[which]);
      }
      const band = { x0, x1, y0, y1, pixels, gap_rows: gapRows.size, blank, other_colour: off, kept,
                     alpha_min: amin, alpha_max: amax,
                     first_alloc: first.alloc, first_free: first.free, last_alloc: last.alloc,
                     first_size: first.requested, last_size: last.requested };
      // samples: held where the server says so, blank where nothing is near
      const samples = [];
      const nsPx = (mv.state.t1 - mv.state.t0) / lane.plotW, bPx = (lane.y1 - lane.y0) / 300;
      for (let i = 0; i < 300; i++) {
        const sx = 96 + Math.floor((i * 7919) % lane.plotW), sy = Math.floor((i * 104729) % 300);
        const t = mv.state.t0 + (sx - 96) * nsPx, y = lane.y1 - (sy + 1) * bPx;
        const exact = await at(t, t + nsPx, y, y + bPx);
        const near = exact ? exact : await at(t - 3 * nsPx, t + 4 * nsPx, y - 3 * bPx, y + 4 * bPx);
        const p = px(sx, sy);
        samples.push({ x: sx, y: sy, held: !!exact, near: !!near, blank: p.every((k, j) => k === BG[j]) });
      }
      return { band, samples, view: v.id, blocks: v.blocks };
    }, [firstHex, lastHex, lastSize, BG]);
    // zoomed in on 4 KiB of the kept blocks while they are all held: every block whole
    const n = await page.evaluate(() => Number(document.body.dataset.ready));
    await page.evaluate(([firstHex, band]) => {
      const mv = window.memflowView, l = mv.lanes()[0], y = l.axis.y(parseInt(firstHex, 16));
      mv.setWindow(band.last_alloc, band.first_free, l.view.id, y - 2048, y + 2048);
    }, [firstHex, out.result.band]);
    await ready(page, n, 60000);
    out.zoomed = await page.evaluate(() => window.memflowView.timings());
  } finally {
    await ctx.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
