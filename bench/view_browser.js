// bench/view_browser.js - `memflow view` timed from a real browser:
// headless Chromium (Debian's, driven by playwright-core from tests/view)
// is started first; then it spawns `memflow view LOG --no-open`, reads its
// URL, opens the page and waits for the first picture (first_ms: from the
// spawn to the page's first drawn answer).
// Then ROUNDS rounds of real input, each timed from the input to the
// page's answer drawn (zoom: a wheel notch at a random place; pan: a drag,
// timed from the release, the old picture having followed the pointer;
// hover: the pointer moved onto the map until the server said which block
// is there), with a reset to the whole run now and then.  Prints one JSON
// line: first_ms, p50/p95/max per kind, the page's largest JS heap
// (Chrome's JSHeapUsedSize) and the server's peak resident memory.
//
// Usage: node bench/view_browser.js MEMFLOW LOG [ROUNDS] [SCREENSHOT.png]
// (NODE_PATH=tests/view/node_modules; CHROMIUM=/usr/bin/chromium)
"use strict";
const { chromium } = require("playwright-core");
const { spawn } = require("child_process");
const fs = require("fs");

const [memflow, log, roundsArg, shot] = process.argv.slice(2);
const rounds = Number(roundsArg || 100);

let seed = 1;                                   // the same walk every run
function random() {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
}

function pct(list, p) {
  const s = [...list].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(p / 100 * s.length) - 1)] : null;
}

function startServer() {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(memflow, ["view", log, "--no-open"], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "", err = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/http:\/\/\S+/);
      if (m) resolve({ child, url: m[0], started });
    });
    child.stderr.on("data", (d) => { err += d; });
    child.on("exit", (code) => reject(new Error("memflow view exited " + code + ": " + err)));
  });
}

function peakRss(pid) {
  const m = fs.readFileSync(`/proc/${pid}/status`, "utf8").match(/VmHWM:\s+(\d+) kB/);
  return m ? Number(m[1]) : null;
}

(async () => {
  const profile = fs.mkdtempSync((process.env.TMPDIR || "/tmp") + "/memflow-view-bench.");
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true,
    viewport: { width: 1300, height: 800 }, bypassCSP: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update"],
  });
  const page = await ctx.newPage();           // the browser is up before the clock starts
  const server = await startServer();
  const out = { log, rounds };
  try {
    const cdp = await ctx.newCDPSession(page);
    await cdp.send("Performance.enable");
    let heap = 0;
    const sampleHeap = async () => {
      const m = await cdp.send("Performance.getMetrics");
      const used = m.metrics.find((x) => x.name === "JSHeapUsedSize");
      heap = Math.max(heap, used ? used.value : 0);
    };
    await page.goto(server.url);
    await page.waitForFunction(() => Number(document.body.dataset.ready || 0) > 0 &&
                               !document.body.dataset.busy, null, { timeout: 60000 });
    out.first_ms = Date.now() - server.started;
    const box = await page.evaluate(() => {
      const r = document.querySelector("section.lane canvas.map").getBoundingClientRect();
      return { x: r.left + 96, y: r.top, w: r.width - 104, h: 300 };
    });
    const ready = () => page.evaluate(() => Number(document.body.dataset.ready || 0));
    const hovered = () => page.evaluate(() => Number(document.body.dataset.hovered || 0));
    const drawn = (n) => page.waitForFunction((k) => Number(document.body.dataset.ready || 0) > k &&
                                             !document.body.dataset.busy, n, { timeout: 30000 })
      .catch(async (e) => {
        throw new Error(e.message + "; the page says: " +
                        await page.evaluate(() => document.getElementById("status").textContent));
      });
    const times = { zoom: [], pan: [], hover: [] };
    const modes = { blocks: 0, raster: 0 }, fetched = [];
    for (let i = 0; i < rounds; i++) {
      const kind = i % 10 === 9 ? "reset" : ["zoom", "zoom", "pan", "hover"][Math.floor(random() * 4)];
      const x = box.x + 20 + random() * (box.w - 40), y = box.y + 20 + random() * (box.h - 40);
      if (kind === "reset") {
        const n = await ready();
        await page.keyboard.press("0");
        await drawn(n);
        continue;
      }
      if (kind === "hover") {
        await page.mouse.move(x - 30, y);              // off the last place, then onto it
        await page.waitForTimeout(30);
        const n = await hovered();
        const t = Date.now();
        await page.mouse.move(x, y);
        await page.waitForFunction((k) => Number(document.body.dataset.hovered || 0) > k, n,
                                   { timeout: 30000 });
        times.hover.push(Date.now() - t);
        continue;
      }
      await page.mouse.move(x, y);
      let n = await ready(), t = Date.now();
      if (kind === "zoom") {
        await page.mouse.wheel(0, random() < 0.75 ? -400 : 400);   // mostly in
      } else {                        // the old picture follows the drag; timed from the release
        await page.mouse.down();
        await page.mouse.move(x + (random() - 0.5) * 300, y, { steps: 4 });
        n = await ready();
        t = Date.now();
        await page.mouse.up();
      }
      await drawn(n);
      times[kind].push(Date.now() - t);
      const lanes = await page.evaluate(() => window.memflowView.timings());
      for (const l of lanes) {
        modes[l.raster ? "raster" : "blocks"]++;
        fetched.push(l.window);
      }
      if (i % 10 === 0)
        await sampleHeap();
    }
    await sampleHeap();
    for (const k of Object.keys(times))
      out[k] = { n: times[k].length, p50_ms: pct(times[k], 50), p95_ms: pct(times[k], 95),
                 max_ms: pct(times[k], 100) };
    out.answers = modes;
    out.fetch = { p50_ms: pct(fetched, 50), p95_ms: pct(fetched, 95) };   /* request to answer, in the page */
    out.js_heap_mb = Math.round(heap / 1048576 * 10) / 10;
    out.server_rss_mb = Math.round(peakRss(server.child.pid) / 1024 * 10) / 10;
    if (shot) {
      const n = await ready();
      await page.keyboard.press("0");
      await drawn(n);
      await page.mouse.move(1, 1);
      await page.screenshot({ path: shot, fullPage: true });
    }
  } finally {
    await ctx.close();
    server.child.kill("SIGTERM");
    fs.rmSync(profile, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(out) + "\n");
})().catch((e) => { process.stderr.write(String(e && e.stack || e) + "\n"); process.exit(1); });
