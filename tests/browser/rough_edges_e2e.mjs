// Issue #18 items 9 and 10 in Debian's headless Chromium (playwright-core), against the
// live Daphne of tests/browser/conftest.py. Prints one JSON object for
// tests/browser/test_rough_edges_browser.py.
//
//   node tests/browser/rough_edges_e2e.mjs --base http://127.0.0.1:PORT --scenario reload|refused
//
// reload: Mei asks to cancel her pending order; the reply asks for a yes. After a reload
//   the Yes/No buttons are there again (the hello history carries the reply's actions).
// refused: a page on a foreign origin (--page, served by the test on 127.0.0.2: loopback
//   like the server, so Chromium's local-network checks allow the socket) embeds the
//   widget against the live server: it stops at data-state="refused", says so, and
//   logs why in the console instead of reconnecting for ever.
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    scenario: { type: "string", default: "reload" },
    screenshot: { type: "string", default: "" },
    // refused: the foreign page (the test serves it on 127.0.0.2, not an allowed host)
    page: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "180000" },
  },
});
const TIMEOUT = Number(opts["timeout-ms"]);
const result = { ok: false, scenario: opts.scenario };

const shadow = (page, fn, arg) =>
  page.evaluate(([body, a]) => new Function("root", "arg", body)(document.querySelector("tierdesk-chat").shadowRoot, a), [fn, arg]);

async function reload(browser) {
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } });
  // Sofia and her pending order: no other browser test touches them (the identity test
  // cancels Mei's order in the same database).
  await page.goto(`${opts.base}/?as=sofia_rossi_8776`);
  await page.locator("tierdesk-chat .launcher").click();
  await page.waitForFunction(() => document.querySelector("tierdesk-chat").getAttribute("data-state") === "open", null, { timeout: TIMEOUT });
  // Typed like a person (the bot check, when on, reads the keystrokes and the pointer).
  await page.mouse.move(200, 200, { steps: 8 });
  await page.locator("tierdesk-chat textarea").click();
  await page.keyboard.type("cancel #W5918442, ordered by mistake", { delay: 35 });
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    () => document.querySelector("tierdesk-chat").shadowRoot.querySelector('.msg.bot[data-status="complete"]'),
    null,
    { timeout: TIMEOUT },
  );
  result.before = await shadow(page, "return [...root.querySelectorAll('.actions button')].map((b) => b.textContent)");
  await page.reload();
  await page.waitForFunction(() => document.querySelector("tierdesk-chat").getAttribute("data-state") === "open", null, { timeout: TIMEOUT });
  await page.waitForFunction(() => document.querySelector("tierdesk-chat").shadowRoot.querySelector(".msg.bot"), null, { timeout: TIMEOUT });
  result.after = await shadow(page, "return [...root.querySelectorAll('.actions button')].map((b) => b.textContent)");
  result.reply = await shadow(page, "const b = [...root.querySelectorAll('.msg.bot .text')].pop(); return b ? b.textContent : ''");
  if (opts.screenshot) await page.screenshot({ path: opts.screenshot });
  // The buttons still work: "No" is sent as the shopper's answer and they go.
  await page.locator("tierdesk-chat .actions button").last().click();
  result.after_click = await shadow(page, "return root.querySelectorAll('.actions button').length");
}

async function refused(browser) {
  const page = await browser.newPage();
  const foreign = opts.page;
  result.console = [];
  page.on("console", (m) => result.console.push(`${m.type()}: ${m.text()}`));
  await page.goto(foreign);
  await page.waitForFunction(() => document.querySelector("tierdesk-chat")?.getAttribute("data-state") === "refused", null, { timeout: 30000 });
  // Long enough for two reconnect attempts if it were still retrying.
  await page.waitForTimeout(3000);
  result.state = await page.evaluate(() => document.querySelector("tierdesk-chat").getAttribute("data-state"));
  result.status = await shadow(page, "const s = root.querySelector('.status'); return s && !s.hidden ? s.textContent : ''");
}

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium" });
try {
  if (opts.scenario === "reload") await reload(browser);
  else if (opts.scenario === "refused") await refused(browser);
  else throw new Error(`unknown scenario ${opts.scenario}`);
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
