// The widget keeps the shopper in the conversation (headless Chromium, playwright-core,
// Debian's Chromium), on the demo shop page where James Li is signed in:
//
//   node tests/browser/conversation_e2e.mjs --base http://127.0.0.1:PORT \
//        [--width 1280 --height 800] [--screenshot out.png]
//
// The shopper starts a return without naming the order: the bot's question comes with
// the orders as buttons, in view; a button picks one; the items come as buttons, and
// "the puzzle" typed picks the Jigsaw Puzzle; the confirmation's Yes/No are in view.
// Then the shopper scrolls up and answers "no" from there (the demo order stays as it
// is for the other browser tests): the answer lands below, the log stays where they
// read and "New message" shows; clicking it goes to the end.
// Prints one JSON object for tests/browser/test_conversation_browser.py.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    scenario: { type: "string", default: "desktop" }, // the viewport's name, for the log
    width: { type: "string", default: "1280" },
    height: { type: "string", default: "800" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const TIMEOUT = Number(opts["timeout-ms"]);
const HOST = "tierdesk-chat";

const shadow = (page, fn, arg) =>
  page.evaluate(
    ([src, a]) => {
      const root = document.querySelector("tierdesk-chat").shadowRoot;
      return new Function("root", "arg", src)(root, a);
    },
    [fn, arg],
  );

// The last bot reply, its buttons, and whether each is inside the visible part of the
// log (and of the page: on a phone the panel is the whole screen).
const VIEW = `
  const log = root.querySelector(".log");
  const lr = log.getBoundingClientRect();
  const seen = (n) => { const r = n.getBoundingClientRect();
    return r.height > 0 && r.top >= lr.top - 1 && r.bottom <= lr.bottom + 1 && r.bottom <= innerHeight + 1; };
  const bots = [...root.querySelectorAll(".msg.bot:not(.greeting)[data-tier]")];
  const b = bots[bots.length - 1];
  const buttons = [...root.querySelectorAll(".actions button")];
  const pill = root.querySelector(".new-below");
  return { bots: bots.length, text: b ? b.querySelector(".text").textContent : "",
    buttons: buttons.map((n) => n.textContent), buttons_in_view: buttons.map(seen),
    last_in_view: b ? seen(b) : false,
    at_end: log.scrollHeight - log.scrollTop - log.clientHeight < 4,
    new_below: pill ? !pill.hidden && pill.getBoundingClientRect().height > 0 : false,
    new_below_text: pill ? pill.textContent : "" };`;

async function waitBots(page, n) {
  await page.waitForFunction(
    ([sel, count]) => {
      const root = document.querySelector(sel).shadowRoot;
      return root.querySelectorAll(".msg.bot:not(.greeting)[data-tier]").length >= count;
    },
    [HOST, n],
    { timeout: TIMEOUT },
  );
  await page.waitForTimeout(150); // buttons and scrolling follow the done frame
  return shadow(page, VIEW);
}

async function main() {
  const result = { steps: [] };
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: Number(opts.width), height: Number(opts.height) },
    timeout: 60000,
    args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"],
  });
  context.setDefaultTimeout(TIMEOUT);
  try {
    const page = context.pages()[0] || (await context.newPage());
    result.console_errors = [];
    page.on("pageerror", (e) => result.console_errors.push(String(e.message)));
    await page.goto(opts.base + "/", { waitUntil: "domcontentloaded" });
    await page.locator(`${HOST} .launcher`).click();
    await page.waitForSelector(`${HOST}[data-state="open"]`);
    await page.waitForSelector(`${HOST}[data-identified]`, { timeout: 15000 }).catch(() => {});
    const input = page.locator(`${HOST} textarea`);

    await input.fill("I'd like to return an item");
    await input.press("Enter");
    result.steps.push({ said: "I'd like to return an item", ...(await waitBots(page, 1)) });

    // A button picks the order (the one with the puzzle).
    await page.locator(`${HOST} .actions button`, { hasText: "#W3638028" }).click();
    result.steps.push({ said: "(button #W3638028)", ...(await waitBots(page, 2)) });

    // The item by its name, typed.
    await input.fill("the puzzle");
    await input.press("Enter");
    result.steps.push({ said: "the puzzle", ...(await waitBots(page, 3)) });

    if (opts.screenshot) {
      fs.mkdirSync(path.dirname(path.resolve(opts.screenshot)), { recursive: true });
      await page.screenshot({ path: opts.screenshot });
      result.screenshot = path.resolve(opts.screenshot);
    }

    // The shopper scrolls up to reread the policy and answers from there (the message
    // is sent, then they scroll back up before the answer can arrive).
    await shadow(
      page,
      `const log = root.querySelector(".log");
       root.querySelector("textarea").value = "no";
       root.querySelector("form.composer").requestSubmit();
       log.scrollTop = 0;
       log.dispatchEvent(new Event("scroll"));`,
    );
    const away = await waitBots(page, 4);
    result.steps.push({ said: "no (scrolled up)", ...away });
    await page.locator(`${HOST} .new-below`).click();
    await page.waitForTimeout(150);
    result.after_click = await shadow(page, VIEW);
    result.ok = true;
  } finally {
    await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
  return result;
}

try {
  process.stdout.write(JSON.stringify(await main()) + "\n");
} catch (err) {
  process.stdout.write(JSON.stringify({ ok: false, error: String((err && err.stack) || err) }) + "\n");
  process.exitCode = 1;
}
