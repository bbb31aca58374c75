// Links in replies and the help pages sources open, in Debian's headless Chromium
// (playwright-core), against the live Daphne of tests/browser/conftest.py. Prints one
// JSON object for tests/browser/test_links_browser.py.
//
//   node tests/browser/links_e2e.mjs --base http://127.0.0.1:PORT --order-question "..." --question "..." [--screenshot out.png]
//
// The demo shopper asks where their late order is: the carrier's tracking address in
// the reply is a link. Then a knowledge question: the source under the reply links to
// the article's help page, which opens in a new tab at the cited section.
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    scenario: { type: "string", default: "links" },
    "order-question": { type: "string" },
    question: { type: "string" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "180000" },
  },
});
const TIMEOUT = Number(opts["timeout-ms"]);
const result = { ok: false, scenario: opts.scenario, errors: [] };

const shadow = (page, fn) =>
  page.evaluate((body) => new Function("root", body)(document.querySelector("tierdesk-chat").shadowRoot), fn);

async function ask(page, text) {
  const before = await shadow(page, "return root.querySelectorAll('.msg.bot[data-status=\"complete\"]:not(.greeting)').length");
  await page.locator("tierdesk-chat textarea").click();
  await page.keyboard.type(text, { delay: 15 });
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (n) => document.querySelector("tierdesk-chat").shadowRoot.querySelectorAll('.msg.bot[data-status="complete"]:not(.greeting)').length > n,
    before,
    { timeout: TIMEOUT },
  );
}

async function links(browser) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 860 } });
  const page = await context.newPage();
  page.on("pageerror", (e) => result.errors.push(String(e.message)));
  await page.goto(`${opts.base}/`);
  await page.locator("tierdesk-chat .launcher").click();
  await page.waitForFunction(() => document.querySelector("tierdesk-chat").getAttribute("data-state") === "open", null, { timeout: TIMEOUT });
  await page.mouse.move(200, 200, { steps: 8 });

  await ask(page, opts["order-question"]);
  result.order_reply = await shadow(page, "return [...root.querySelectorAll('.msg.bot .text')].pop().textContent");
  result.order_sources = await shadow(page, "return [...root.querySelectorAll('.msg.bot')].pop().querySelectorAll('details.sources li').length");
  result.order_links = await shadow(page, `return [...[...root.querySelectorAll('.msg.bot .text')].pop().querySelectorAll('a')]
    .map((a) => ({ href: a.href, text: a.textContent, target: a.target, rel: a.rel }))`);

  await ask(page, opts.question);
  await page.locator("tierdesk-chat .msg.bot details.sources summary").last().click();
  result.source_links = await shadow(page, `const d = [...root.querySelectorAll('.msg.bot details.sources')].pop();
    return [...d.querySelectorAll('a.source-title')].map((a) => ({ href: a.href, text: a.textContent, target: a.target, rel: a.rel }))`);
  // The shopper opens the first source: a new tab, the article at the cited section.
  const [help] = await Promise.all([
    context.waitForEvent("page", { timeout: TIMEOUT }),
    page.locator("tierdesk-chat .msg.bot details.sources").last().locator("a.source-title").first().click(),
  ]);
  await help.waitForLoadState("domcontentloaded");
  result.help_url = help.url();
  result.help_title = await help.locator("h1").first().textContent();
  result.help_lang = await help.evaluate(() => document.documentElement.lang);
  result.target_heading = await help.evaluate(() => document.querySelector("section:target h2")?.textContent ?? null);
  result.target_in_view = await help.evaluate(() => {
    const s = document.querySelector("section:target");
    if (!s) return false;
    const r = s.getBoundingClientRect();
    return r.top >= 0 && r.top < window.innerHeight;
  });
  if (opts.screenshot) await help.screenshot({ path: opts.screenshot });
  await context.close();
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" });
try {
  if (opts.scenario === "links") await links(browser);
  else throw new Error(`unknown scenario ${opts.scenario}`);
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
