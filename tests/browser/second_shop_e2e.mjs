// A second shop's shopper, signed in by the shop's own page, asks about an order,
// starts a return and asks about a product (tests/browser/test_second_shop_browser.py),
// in Debian's headless Chromium against a real Daphne server. Prints one JSON object.
//
//   node tests/browser/second_shop_e2e.mjs --page http://127.0.0.1:PORT/ \
//        --messages '["where is order 1004?", ...]' [--screenshot PNG --shot-after N]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    page: { type: "string" },
    messages: { type: "string" },
    screenshot: { type: "string", default: "" },
    // The screenshot is taken after this message's reply (0-based; default the last).
    "shot-after": { type: "string", default: "-1" },
    "timeout-ms": { type: "string", default: "240000" },
    // Tierdesk's own front page, visited after the chat: its product cards are read.
    front: { type: "string", default: "" },
    "front-screenshot": { type: "string", default: "" },
  },
});
for (const name of ["page", "messages"]) {
  if (!opts[name]) throw new Error(`--${name} is required`);
}
const TIMEOUT = Number(opts["timeout-ms"]);
const HOST = "tierdesk-chat";
const result = { ok: false, steps: [], errors: [], console: [], replies: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-second-shop-"));
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

async function waitReply(page, botsBefore) {
  // A reply is done when its bubble carries its tier (the "done" frame).
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

try {
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => result.errors.push(String(e.message)));
  page.on("console", (m) => {
    if (m.type() === "error") result.console.push(m.text());
  });
  await page.goto(opts.page, { waitUntil: "domcontentloaded" });
  await page.locator(`${HOST} .launcher`).click();
  await page.waitForSelector(`${HOST}[data-state="open"]`);
  // The shop's page put its signed token on the element: the widget identifies with it.
  await page.waitForSelector(`${HOST}[data-identified]`, { timeout: 30000 });
  step("signed in");
  const messages = JSON.parse(opts.messages);
  const shotAfter = Number(opts["shot-after"]) < 0 ? messages.length - 1 : Number(opts["shot-after"]);
  let bots = 0;
  for (const [index, text] of messages.entries()) {
    const input = page.locator(`${HOST} textarea`);
    await input.fill(text);
    await input.press("Enter");
    const reply = await waitReply(page, bots);
    bots += 1;
    result.replies.push({ said: text, ...reply });
    step("reply", { said: text, tier: reply.tier });
    if (opts.screenshot && index === shotAfter) {
      fs.mkdirSync(path.dirname(path.resolve(opts.screenshot)), { recursive: true });
      await page.screenshot({ path: opts.screenshot, fullPage: true });
      result.screenshot = path.resolve(opts.screenshot);
    }
  }
  if (opts.front) {
    await page.goto(opts.front, { waitUntil: "domcontentloaded" });
    await page.waitForSelector('[data-testid="products"]');
    result.front = {
      title: (await page.locator(".brand").innerText()).trim(),
      products: await page.locator('[data-testid="products"] li').allInnerTexts(),
    };
    step("front page", { products: result.front.products.length });
    if (opts["front-screenshot"]) {
      await page.screenshot({ path: opts["front-screenshot"], fullPage: true });
    }
  }
  result.ok = true;
} catch (err) {
  result.error = String((err && err.stack) || err);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(result) + "\n");
if (!result.ok) process.exitCode = 1;
