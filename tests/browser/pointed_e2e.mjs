// Issue #33 item 4 in Debian's headless Chromium (playwright-core), against the live
// Daphne of tests/browser/conftest.py. Prints one JSON object for
// tests/browser/test_pointed_browser.py.
//
//   node tests/browser/pointed_e2e.mjs --base http://127.0.0.1:PORT --question "..." [--screenshot out.png]
//
// A shopper asks a question one help-article section is about but doesn't confirm: the
// reply quotes that section, its Sources name the article and section, and the bot
// offers a person (the Yes/No of the offer).
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    scenario: { type: "string", default: "pointed" },
    question: { type: "string" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "180000" },
  },
});
const TIMEOUT = Number(opts["timeout-ms"]);
const result = { ok: false, scenario: opts.scenario };

const shadow = (page, fn, arg) =>
  page.evaluate(([body, a]) => new Function("root", "arg", body)(document.querySelector("tierdesk-chat").shadowRoot, a), [fn, arg]);

async function pointed(browser) {
  const page = await browser.newPage({ viewport: { width: 1100, height: 860 } });
  const frames = [];
  page.on("websocket", (ws) => ws.on("framereceived", (f) => frames.push(String(f.payload))));
  await page.goto(`${opts.base}/`);
  await page.locator("tierdesk-chat .launcher").click();
  await page.waitForFunction(() => document.querySelector("tierdesk-chat").getAttribute("data-state") === "open", null, { timeout: TIMEOUT });
  // Typed like a person (the bot check, when on, reads the keystrokes and the pointer).
  await page.mouse.move(200, 200, { steps: 8 });
  await page.locator("tierdesk-chat textarea").click();
  await page.keyboard.type(opts.question, { delay: 20 });
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    () => document.querySelector("tierdesk-chat").shadowRoot.querySelector('.msg.bot[data-status="complete"]'),
    null,
    { timeout: TIMEOUT },
  );
  result.reply = await shadow(page, "const b = [...root.querySelectorAll('.msg.bot .text')].pop(); return b ? b.textContent : ''");
  // The Sources under the bubble, opened as a shopper would.
  await page.locator("tierdesk-chat .msg.bot details.sources summary").last().click();
  result.sources_open = await shadow(page, "const d = [...root.querySelectorAll('.msg.bot details.sources')].pop(); return !!(d && d.open)");
  result.sources = await shadow(page, "const d = [...root.querySelectorAll('.msg.bot details.sources')].pop(); return d ? d.textContent : ''");
  result.buttons = await shadow(page, "return [...root.querySelectorAll('.actions button')].map((b) => b.textContent)");
  const done = frames.map((f) => { try { return JSON.parse(f); } catch { return {}; } }).filter((f) => f.type === "done").pop() || {};
  result.done = { tier: done.tier, pointed: done.pointed, actions: done.actions, citations: (done.citations || []).length };
  if (opts.screenshot) await page.screenshot({ path: opts.screenshot });
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" });
try {
  if (opts.scenario === "pointed") await pointed(browser);
  else throw new Error(`unknown scenario ${opts.scenario}`);
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
