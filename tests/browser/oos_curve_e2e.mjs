// A support admin opens the router's retraining page of a new shop (its own intents
// imported and retrained), in Debian's headless Chromium against a real Daphne server
// (tests/browser/test_oos_curve_browser.py): the shop's own out-of-scope curve and the
// point in use. Prints one JSON object on stdout.
//
//   node tests/browser/oos_curve_e2e.mjs --base http://127.0.0.1:PORT --user admin \
//        --password pw [--screenshot docs/admin-oos-curve.png]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    user: { type: "string", default: "admin" },
    password: { type: "string", default: "admin" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const result = { ok: false, errors: [] };

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-oos-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  timeout: 60000,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
    "--disable-component-update", "--disable-sync", "--disable-features=LocalNetworkAccessChecks"],
});
context.setDefaultTimeout(Number(opts["timeout-ms"]));
try {
  const page = await context.newPage();
  page.on("pageerror", (e) => result.errors.push(e.message));
  await page.goto(`${opts.base}/admin/login/?next=/admin/`);
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await Promise.all([page.waitForURL(/\/admin\/$/), page.click('input[type="submit"]')]);
  await page.evaluate(() => localStorage.setItem("django.admin.navSidebarIsOpen", "false"));
  await page.goto(`${opts.base}/admin/routing/intent/retraining/`);
  result.status = (await page.locator("#retrain-status").innerText()).trim();
  result.calibration = (await page.locator("#oos-shop-calibration").innerText()).trim();
  result.in_use = (await page.locator("#oos-in-use").innerText()).trim();
  result.chart_points = await page.locator("#oos-chart .oos-point").count();
  result.rows = await page.$$eval("#oos-curve tbody tr", (trs) => trs.length);
  if (opts.screenshot) {
    const out = path.resolve(opts.screenshot);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    await page.locator("#oos").scrollIntoViewIfNeeded();
    await page.screenshot({ path: out, fullPage: false, clip: await page.evaluate(() => {
      const top = document.querySelector("#oos").getBoundingClientRect().top + window.scrollY;
      return { x: 0, y: Math.max(top - 10, 0), width: 1280, height: 900 };
    }) });
    result.screenshot = out;
  }
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
