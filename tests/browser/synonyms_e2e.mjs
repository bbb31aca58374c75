// A support admin teaches the bot a shop word in Django admin, in Debian's headless
// Chromium against a real Daphne server (tests/browser/test_synonyms_browser.py).
// Prints one JSON object on stdout.
//
//   node tests/browser/synonyms_e2e.mjs --base http://127.0.0.1:PORT --user admin \
//        --password pw [--screenshot docs/admin-synonyms.png]
//
// 1. "Try a question" with a word no synonym set has: what the bot finds.
// 2. The admin adds the word to the demo's "denim, jeans" set and clicks "Save and see
//    the questions it changes", asks the question there too: the page lists it.
// 3. "Try a question" again: the expanded terms and what the bot finds now.
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
    question: { type: "string", default: "can I wash my dungarees?" },
    word: { type: "string", default: "dungarees" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const result = { ok: false, steps: [], errors: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });

async function tryQuestion(page) {
  const url = `${opts.base}/admin/knowledge/synonymset/try/?question=${encodeURIComponent(opts.question)}`;
  await page.goto(url);
  return {
    expanded: (await page.locator("#try-expanded").innerText()).trim(),
    terms: (await page.locator("#try-terms tbody").innerText()).trim(),
    match: (await page.locator("#try-match").innerText()).trim(),
  };
}

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-synonyms-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 800 },
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
  step("logged in");

  result.before = await tryQuestion(page);
  step("tried before", result.before);

  // The demo's sets are in the list; open the one for jeans.
  await page.goto(`${opts.base}/admin/knowledge/synonymset/?q=denim`);
  await Promise.all([
    page.waitForURL(/\/change\/(\?.*)?$/),
    page.locator("#result_list tbody tr th a").first().click(),
  ]);
  const terms = await page.inputValue("#id_terms");
  result.terms_before = terms;
  await page.fill("#id_terms", `${terms}, ${opts.word}`);
  await Promise.all([page.waitForURL(/\/changes\/$/), page.click("#save-and-changes")]);
  step("saved", { url: page.url() });
  await page.fill("#id_questions", opts.question);
  await Promise.all([page.waitForLoadState("load"), page.click('.tierdesk-changes input[type="submit"]')]);
  result.summary = (await page.locator("#changes-summary").innerText()).trim();
  result.rows = await page.$$eval("#changes-results tbody tr", (trs) =>
    trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.innerText.trim())),
  );
  step("changes", { summary: result.summary });
  if (opts.screenshot) {
    const out = path.resolve(opts.screenshot);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    await page.setViewportSize({ width: 1280, height: 480 });
    await page.screenshot({ path: out, fullPage: true });
    result.screenshot = out;
  }

  result.after = await tryQuestion(page);
  step("tried after", result.after);
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
