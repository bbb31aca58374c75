// A support admin changes the shop's return window in the admin, and the widget's
// return flow quotes the new window (tests/browser/test_shop_profile_browser.py), in
// Debian's headless Chromium against a real Daphne server. Prints one JSON object.
//
//   node tests/browser/shop_profile_e2e.mjs --base http://127.0.0.1:PORT --user U \
//        --password P --order ORDER --windows '{"guest": 45}' [--screenshot PNG]
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
    order: { type: "string" },
    windows: { type: "string" },
    "bad-form": { type: "string", default: "W{x}" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
for (const name of ["base", "user", "password", "order", "windows"]) {
  if (!opts[name]) throw new Error(`--${name} is required`);
}
const TIMEOUT = Number(opts["timeout-ms"]);
const HOST = "tierdesk-chat";
const result = { ok: false, steps: [], errors: [], replies: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-profile-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 1100 },
  timeout: 60000,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
    "--disable-component-update", "--disable-sync"],
});
context.setDefaultTimeout(TIMEOUT);

const shadow = (page, fn) =>
  page.evaluate((src) => new Function("root", src)(document.querySelector("tierdesk-chat").shadowRoot), fn);

async function admin(page) {
  await page.goto(`${opts.base}/admin/login/?next=/admin/shop/shopprofile/`);
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await page.click("input[type=submit]");
  await page.waitForSelector("#shopprofile_form");
  step("profile form", { url: page.url() });
  // A bad order-id form is refused with the error on its field.
  const forms = page.locator("#id_order_id_formats");
  const before = await forms.inputValue();
  await forms.fill(opts["bad-form"]);
  await page.click("input[name=_save]");
  await page.waitForSelector(".field-order_id_formats .errorlist");
  result.bad_form_error = await page.locator(".field-order_id_formats .errorlist").innerText();
  step("bad form refused");
  await forms.fill(before);
  const windows = page.locator("#id_return_window_days");
  result.windows_before = await windows.inputValue();
  await windows.fill(opts.windows);
  await page.click("input[name=_continue]");
  await page.waitForSelector(".messagelist .success");
  result.saved = await page.locator(".messagelist .success").innerText();
  result.windows_after = await page.locator("#id_return_window_days").inputValue();
  step("saved");
  // The screenshot shows the saved profile, as the admin sees it after "Save and continue".
  if (opts.screenshot) {
    fs.mkdirSync(path.dirname(path.resolve(opts.screenshot)), { recursive: true });
    await page.screenshot({ path: opts.screenshot, fullPage: true });
    result.screenshot = path.resolve(opts.screenshot);
  }
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
  await page.waitForSelector(`${HOST}[data-identified]`, { timeout: 15000 }).catch(() => {});
  let bots = 0;
  for (const text of [`I'd like to return an item from order ${opts.order}`, "2"]) {
    const input = page.locator(`${HOST} textarea`);
    await input.fill(text);
    await input.press("Enter");
    const reply = await waitReply(page, bots);
    bots += 1;
    result.replies.push({ said: text, ...reply });
  }
  step("return confirmation");
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
