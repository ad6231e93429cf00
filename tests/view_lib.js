// view_lib.js - what the browser tests of `memflow view` share
// (view_browser.js, view_lod.js, view_oom.js): Debian's chromium started
// headless by playwright-core (no browser download) with a profile in the
// test's scratch folder, and waiting for the page to have drawn the answers
// for its state (document.body.dataset.ready, view/view.js).
"use strict";
const { chromium } = require("playwright-core");
const fs = require("fs");

// A browser context whose pages are width x height pixels.
exports.launch = (width, height) => chromium.launchPersistentContext(
  fs.mkdtempSync(process.env.SCRATCH + "/profile."), {
    executablePath: process.env.CHROMIUM, headless: true,
    viewport: { width, height },
    bypassCSP: true,        // playwright polls with eval; the page itself never does
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });

// A new page of ctx at url, its script errors on stderr.
exports.open = async (ctx, url) => {
  const page = await ctx.newPage();
  page.on("pageerror", (e) => { process.stderr.write("page error: " + e + "\n"); });
  await page.goto(url);
  return page;
};

// Wait until the page has drawn a round of answers after round `after` and
// asks nothing more; the round's number.
exports.ready = async (page, after, timeout) => {
  await page.waitForFunction((n) => Number(document.body.dataset.ready || 0) > n && !document.body.dataset.busy,
                             after, { timeout: timeout || 20000 });
  return page.evaluate(() => Number(document.body.dataset.ready));
};
