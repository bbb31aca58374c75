// Drives the operator console and the widget's CSAT controls in Debian's headless
// Chromium (playwright-core; never a downloaded browser) and prints one JSON object
// for tests/releases/test_console_browser.py.
//
//   node tests/releases/console_e2e.mjs --base http://127.0.0.1:PORT --screenshot docs/operator-console.png
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    screenshot: { type: "string", default: "" },
    "incomplete-screenshot": { type: "string", default: "" },
    user: { type: "string", default: "operator" },
    password: { type: "string", default: "operator" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const TIMEOUT = Number(opts["timeout-ms"]);
const HOST = "tierdesk-chat";

async function console_(context, result) {
  const page = await context.newPage();
  page.on("pageerror", (e) => result.console_errors.push(String(e.message)));
  await page.goto(`${opts.base}/operators/`, { waitUntil: "domcontentloaded" });
  // Not signed in: the console sends us to the login page.
  result.login_redirect = page.url().includes("/admin/login/");
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await Promise.all([page.waitForNavigation(), page.click('input[type="submit"]')]);
  result.after_login = new URL(page.url()).pathname;
  await page.waitForSelector('[data-testid="charts"] svg');
  result.charts = await page.locator('[data-testid="charts"] svg.chart').count();
  result.polylines = await page.locator('[data-testid="charts"] polyline').count();
  result.weight_before = Number(await page.locator('[data-testid="weight"]').getAttribute("data-weight"));
  result.decisions = await page.locator('[data-testid="decisions"] tbody tr').count();
  result.has_rollback_row = (await page.locator('[data-testid="decisions"] tr.rollback').count()) > 0;
  if (opts.screenshot) {
    fs.mkdirSync(path.dirname(path.resolve(opts.screenshot)), { recursive: true });
    await page.screenshot({ path: opts.screenshot, fullPage: true });
    result.screenshot = path.resolve(opts.screenshot);
  }
  // Weight control: the form leads to a confirmation page, which does it.
  const target = result.weight_before + 5;
  await page.fill('[data-testid="weight-form"] input[name="weight"]', String(target));
  await page.fill('[data-testid="weight-form"] input[name="reason"]', "browser test: step up");
  await Promise.all([page.waitForNavigation(), page.click('[data-testid="weight-form"] button')]);
  result.confirm_effect = (await page.locator('[data-testid="effect"]').innerText()).trim();
  await Promise.all([page.waitForNavigation(), page.click('[data-testid="confirm-button"]')]);
  result.weight_after = Number(await page.locator('[data-testid="weight"]').getAttribute("data-weight"));
  result.message = (await page.locator('[data-testid="messages"]').innerText()).trim();
  // A form sent past the browser's own checks (an old browser, a script): the server
  // names each missing field, with this release's maximum.
  await page.evaluate(() => { document.querySelector('[data-testid="weight-form"]').noValidate = true; });
  await page.fill('[data-testid="weight-form"] input[name="weight"]', "");
  await page.fill('[data-testid="weight-form"] input[name="reason"]', "");
  await page.evaluate(() => { document.querySelector('[data-testid="weight-form"] input[name="weight"]').value = "500"; });
  await Promise.all([page.waitForNavigation(), page.click('[data-testid="weight-form"] button')]);
  result.incomplete_message = (await page.locator('[data-testid="messages"]').innerText()).trim();
  if (opts["incomplete-screenshot"]) await page.locator('[data-testid="messages"]').screenshot({ path: opts["incomplete-screenshot"] });
  await page.close();
}

const shadow = (page, src) =>
  page.evaluate((s) => new Function("root", s)(document.querySelector("tierdesk-chat").shadowRoot), src);

async function csat(context, result) {
  const page = await context.newPage();
  page.on("pageerror", (e) => result.console_errors.push(String(e.message)));
  await page.goto(`${opts.base}/`, { waitUntil: "domcontentloaded" });
  await page.locator(`${HOST} .launcher`).click();
  await page.waitForSelector(`${HOST}[data-state="open"]`);
  result.csat_hidden_before = await shadow(page, `return root.querySelector(".csat").hidden;`);
  const input = page.locator(`${HOST} textarea`);
  await input.fill("hello");
  await input.press("Enter");
  await page.waitForFunction(
    (sel) => document.querySelector(sel).shadowRoot.querySelector('.msg.bot[data-tier] .rate'),
    HOST,
    { timeout: TIMEOUT },
  );
  // Thumbs up, then change to down: the server answers "rated" each time.
  await page.locator(`${HOST} .msg.bot[data-tier] .thumb.up`).click();
  await page.waitForSelector(`${HOST} .msg.bot[data-rating="up"]`);
  await page.locator(`${HOST} .msg.bot[data-tier] .thumb.down`).click();
  await page.waitForSelector(`${HOST} .msg.bot[data-rating="down"]`);
  result.pressed = await shadow(
    page,
    `return [...root.querySelectorAll(".msg.bot[data-tier] .thumb")].map((b) => [b.dataset.value, b.getAttribute("aria-pressed")]);`,
  );
  result.csat_hidden_after = await shadow(page, `return root.querySelector(".csat").hidden;`);
  await page.locator(`${HOST} .csat button[data-score="4"]`).click();
  await page.waitForSelector(`${HOST} .csat[data-score="4"]`);
  result.message_id = await shadow(page, `return root.querySelector(".msg.bot[data-tier]").dataset.messageId;`);
  // Reload: the stored ratings come back with the conversation.
  await page.reload({ waitUntil: "domcontentloaded" });
  await page.waitForSelector(`${HOST}[data-state="open"]`);
  await page.waitForSelector(`${HOST} .msg.bot[data-rating]`);
  result.after_reload = await shadow(
    page,
    `return { rating: root.querySelector(".msg.bot[data-rating]").dataset.rating,
              score: root.querySelector(".csat").dataset.score };`,
  );
  await page.close();
}

const result = { ok: false, console_errors: [] };
const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-console-"));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1360, height: 900 },
    timeout: 60000,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
           "--disable-component-update", "--disable-sync"],
  });
  context.setDefaultTimeout(TIMEOUT);
  await console_(context, result);
  await csat(context, result);
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
} finally {
  if (context) await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
