// A support admin imports the catalogue in the admin: a bad CSV shows every error by
// line and field and imports nothing, a good one goes in; then the widget's L3 answer
// quotes the new product in the shop's currency (tests/browser/test_catalogue_browser.py),
// in Debian's headless Chromium against a real Daphne server. Prints one JSON object.
//
//   node tests/browser/catalogue_e2e.mjs --base http://127.0.0.1:PORT --user U \
//        --password P --bad BAD.csv --good GOOD.csv --question Q [--screenshot PNG]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    user: { type: "string" },
    password: { type: "string" },
    bad: { type: "string" },
    good: { type: "string" },
    question: { type: "string" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "400000" },
  },
});
for (const name of ["base", "user", "password", "bad", "good", "question"]) {
  if (!opts[name]) throw new Error(`--${name} is required`);
}
const TIMEOUT = Number(opts["timeout-ms"]);
const HOST = "tierdesk-chat";
const result = { ok: false, steps: [], errors: [], replies: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-catalogue-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  timeout: 60000,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
    "--disable-component-update", "--disable-sync"],
});
context.setDefaultTimeout(60000);

const shadow = (page, fn) =>
  page.evaluate((src) => new Function("root", src)(document.querySelector("tierdesk-chat").shadowRoot), fn);

async function upload(page, file) {
  await page.setInputFiles("#id_file", file);
  await page.click("#catalogue-import input[type=submit]");
  await page.waitForLoadState("domcontentloaded");
}

async function admin(page) {
  await page.goto(`${opts.base}/admin/login/?next=/admin/shop/product/`);
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await page.click("input[type=submit]");
  await page.waitForSelector("#changelist");
  await page.click("#catalogue-import-link");
  await page.waitForSelector("#catalogue-import");
  step("import page", { url: page.url() });

  await upload(page, opts.bad);
  await page.waitForSelector("#import-errors");
  result.bad_summary = await page.locator("#import-errors .errornote").innerText();
  result.bad_rows = await page.locator("#import-errors tbody tr").evaluateAll((rows) =>
    rows.map((r) => [...r.querySelectorAll("td")].map((td) => td.textContent.trim())));
  step("bad file refused");
  if (opts.screenshot) {
    fs.mkdirSync(path.dirname(path.resolve(opts.screenshot)), { recursive: true });
    await page.screenshot({ path: opts.screenshot, fullPage: true });
    result.screenshot = path.resolve(opts.screenshot);
  }

  await upload(page, opts.good);
  await page.waitForSelector(".messagelist .success");
  result.imported = await page.locator(".messagelist .success").innerText();
  await page.fill("#searchbar", "Trail Tent");
  await page.press("#searchbar", "Enter");
  await page.waitForSelector("#result_list");
  result.listed = await page.locator("#result_list tbody").innerText();
  step("good file imported");
}

async function waitReply(page, botsBefore) {
  await page.waitForFunction(
    ([sel, n]) => {
      const root = document.querySelector(sel).shadowRoot;
      const done = root.querySelectorAll(".msg.bot:not(.greeting)[data-tier]").length;
      return done > n || root.querySelectorAll(".system.error").length > 0;
    },
    [HOST, botsBefore],
    { timeout: TIMEOUT },
  );
  return shadow(page, `const b = [...root.querySelectorAll(".msg.bot:not(.greeting)")].pop();
    return { text: b.querySelector(".text").textContent, tier: b.dataset.tier || null,
      errors: [...root.querySelectorAll(".system.error")].map((n) => n.textContent) };`);
}

async function shopper(page) {
  page.on("pageerror", (e) => result.errors.push(String(e.message)));
  await page.goto(opts.base + "/", { waitUntil: "domcontentloaded" });
  await page.locator(`${HOST} .launcher`).click();
  await page.waitForSelector(`${HOST}[data-state="open"]`);
  const input = page.locator(`${HOST} textarea`);
  await input.fill(opts.question);
  await input.press("Enter");
  result.replies.push({ said: opts.question, ...(await waitReply(page, 0)) });
  step("L3 answer");
}

try {
  const page = context.pages()[0] || (await context.newPage());
  await admin(page);
  await shopper(await context.newPage());
  result.ok = true;
} catch (err) {
  result.error = String((err && err.stack) || err);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result) + "\n");
if (!result.ok) process.exitCode = 1;
