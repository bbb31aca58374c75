// The operator console and the agent desk in a Chinese Chromium (locale zh-CN, so
// Accept-Language asks for Chinese) for tests/browser/test_zh_pages_browser.py: signs
// in, reads the chart legends and the desk's live texts, lists every visible text with
// two or more latin words and no Chinese character, and takes a screenshot of each.
// With --conversation (a queued conversation's public id), the desk opens it first and
// reads its customer panel: the orders' statuses and how the shopper was verified.
// Prints one JSON object.
//
//   node tests/browser/zh_pages_e2e.mjs --base http://127.0.0.1:PORT --user u --password p \
//        --console-shot console-zh.png --desk-shot desk-zh.png [--conversation UUID]
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
    "console-shot": { type: "string", default: "" },
    "desk-shot": { type: "string", default: "" },
    conversation: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
if (!opts.base) throw new Error("--base is required");

// Visible text nodes and the attributes a browser shows or reads out (the rule of
// tests/frontend/test_zh_pages.py), as the page is after its scripts ran.
function englishOnPage() {
  const CJK = /[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]/;
  const english = (t) => !CJK.test(t) && (t.match(/\b[A-Za-z]{2,}\b/g) || []).length >= 2;
  const found = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (!parent || parent.closest("script, style, [hidden]")) continue;
    const text = n.textContent.replace(/\s+/g, " ").trim();
    if (text && english(text)) found.add(text);
  }
  for (const e of document.querySelectorAll("[title], [placeholder], [aria-label], [alt]")) {
    for (const a of ["title", "placeholder", "aria-label", "alt"]) {
      const v = (e.getAttribute(a) || "").trim();
      if (v && english(v)) found.add(v);
    }
  }
  return [...found];
}

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-zh-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  locale: "zh-CN",
  viewport: { width: 1280, height: 900 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
    "--disable-component-update", "--disable-sync"],
});
context.setDefaultTimeout(Number(opts["timeout-ms"]));
const result = { ok: false, errors: [] };
try {
  const page = await context.newPage();
  page.on("pageerror", (e) => result.errors.push(String(e.message)));
  await page.goto(`${opts.base}/admin/login/?next=/operators/`, { waitUntil: "domcontentloaded" });
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await Promise.all([page.waitForNavigation(), page.click('input[type="submit"]')]);
  await page.waitForSelector('[data-testid="charts"] svg.chart');
  result.console_lang = await page.evaluate(() => document.documentElement.lang);
  result.legends = await page.locator("svg.chart text.legend").allTextContents();
  result.console_english = await page.evaluate(englishOnPage);
  if (opts["console-shot"]) await page.screenshot({ path: opts["console-shot"], fullPage: true });

  await page.goto(`${opts.base}/desk/`, { waitUntil: "domcontentloaded" });
  await page.waitForFunction(() => document.getElementById("conn").className.includes("live"));
  result.desk_lang = await page.evaluate(() => document.documentElement.lang);
  result.desk_conn = await page.locator("#conn").textContent();
  result.desk_title = await page.title();
  result.desk_reply_placeholder = await page.locator("#reply-text").getAttribute("placeholder");
  if (opts.conversation) {
    // The item's head opens it (its button would claim it).
    await page.click(`#queue li.item[data-conversation="${opts.conversation}"] .item-head`);
    await page.waitForSelector("#customer table.orders td");
    // The orders table's second column (its header is orderColumns' "Status").
    result.desk_order_statuses = await page.locator("#customer table.orders td:nth-child(2)").allTextContents();
    result.desk_customer_rows = await page.evaluate(() =>
      [...document.querySelectorAll("#customer dt")].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]));
  }
  result.desk_english = await page.evaluate(englishOnPage);
  if (opts["desk-shot"]) await page.screenshot({ path: opts["desk-shot"] });
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
