// bench/view_screenshot.js - the README's picture of `memflow view`:
// headless Chromium (Debian's, driven by playwright-core) opens the page of
// a run, selects the range around its peak (the flame graph of what was
// live then, and what grew), hovers the largest block live at the peak,
// and writes a PNG of the page.  bench/view_screenshot.sh makes the run.
//
// Usage: node bench/view_screenshot.js URL OUT.png
// (NODE_PATH=tests/view/node_modules; CHROMIUM=/usr/bin/chromium)
"use strict";
const { chromium } = require("playwright-core");

const [url, png] = process.argv.slice(2);

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 860 },
                                        bypassCSP: true });   // playwright polls with eval
    const ready = (n) => page.waitForFunction((k) => Number(document.body.dataset.ready || 0) > k &&
                                              !document.body.dataset.busy, n, { timeout: 30000 });
    await page.goto(url);
    await ready(0);
    // the range around the peak: flame graph and growth below the lane
    const peak = await page.evaluate(() => {
      const v = window.memflowView.meta().views[0], t1 = window.memflowView.meta().t1;
      window.memflowView.select(v.id, Math.max(0, v.peak_time - t1 / 10), v.peak_time);
      return { view: v.id, t: v.peak_time };
    });
    await page.waitForFunction(() => document.body.dataset.range);
    // hover the largest block of a named scope live at the peak
    const block = await page.evaluate(async ({ view, t }) => {
      const mv = window.memflowView, token = new URLSearchParams(location.search).get("token");
      const l = mv.lanes().find((x) => x.view.id === view);
      const r = await fetch(`/api/window?token=${token}&view=${view}&t0=${t}&t1=${t + 1}` +
                            `&y0=0&y1=${l.axis.total}&w=100&h=100`);
      const named = new Set(l.view.scopes.filter((s) => s.name !== "<unk>:").map((s) => s.id));
      const live = (mv.parseWindow(await r.arrayBuffer()).blocks || []).filter((b) => named.has(b.scope));
      return live.sort((a, b) => b.requested - a.requested)[0] || null;
    }, peak);
    if (block) {
      const at = await page.evaluate(({ view, b }) => window.memflowView.where(
        view, b.addr + (b.actual || b.requested) / 2, b.alloc + ((b.free === null ? window.memflowView.meta().t1 : b.free) - b.alloc) / 2),
        { view: peak.view, b: block });
      await page.mouse.move(at.x, at.y);
      await page.waitForFunction(() => !document.getElementById("tip").hidden &&
                                 document.getElementById("tip").textContent.includes("frames:"),
                                 null, { timeout: 10000 }).catch(() => {});
    }
    await page.screenshot({ path: png, fullPage: true });
  } finally {
    await browser.close();
  }
})().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
