// The waiting room in Debian's headless Chromium (playwright-core): with one connection
// per server process allowed, a second shopper's widget says "busy, you are number 1 in
// line", and once the first shopper leaves it is served and answers. Prints one JSON
// object for tests/browser/test_busy_widget.py.
//
//   node tests/browser/busy_e2e.mjs --base http://127.0.0.1:PORT [--screenshot out.png]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    scenario: { type: "string", default: "busy" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const TIMEOUT = Number(opts["timeout-ms"]);
const HOST = "tierdesk-chat";

async function shopper() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-busy-"));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 800 },
    timeout: 60000,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
  });
  context.setDefaultTimeout(TIMEOUT);
  const page = context.pages()[0] || (await context.newPage());
  const frames = [];
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e.message)));
  page.on("websocket", (ws) =>
    ws.on("framereceived", ({ payload }) => {
      try {
        const f = JSON.parse(String(payload));
        frames.push(f.type === "busy" ? `busy:${f.position}` : f.type);
      } catch {
        frames.push("unparsable");
      }
    }),
  );
  await page.goto(opts.base + "/", { waitUntil: "domcontentloaded" });
  await page.locator(`${HOST} .launcher`).click();
  await page.waitForSelector(`${HOST}[data-state="open"]`);
  const close = async () => {
    await context.close().catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { page, frames, errors, close };
}

const status = (page) =>
  page.evaluate(() => {
    const s = document.querySelector("tierdesk-chat").shadowRoot.querySelector(".status");
    return { text: s.textContent, hidden: s.hidden };
  });

async function main() {
  const result = { scenario: opts.scenario };
  const first = await shopper();
  const second = await shopper();
  try {
    await second.page.waitForSelector(`${HOST}[data-busy]`);
    result.position = await second.page.locator(HOST).getAttribute("data-busy-position");
    result.busy_status = await status(second.page);
    result.first_status = await status(first.page);
    // The shopper types while in line: the message is stored and answered once served.
    const input = second.page.locator(`${HOST} textarea`);
    await input.fill("hello");
    await input.press("Enter");
    await second.page.waitForTimeout(500);
    result.answered_while_waiting = second.frames.includes("done");
    if (opts.screenshot) {
      fs.mkdirSync(path.dirname(path.resolve(opts.screenshot)), { recursive: true });
      await second.page.screenshot({ path: opts.screenshot });
      result.screenshot = path.resolve(opts.screenshot);
    }
    await first.close();
    await second.page.waitForFunction(
      (sel) => !document.querySelector(sel).hasAttribute("data-busy"),
      HOST,
    );
    result.after_status = await status(second.page);
    await second.page.waitForFunction(
      (sel) => document.querySelector(sel).shadowRoot.querySelectorAll(".msg.bot:not(.greeting)[data-tier]").length > 0,
      HOST,
    );
    result.frames = second.frames;
    result.errors = second.errors;
    result.ok = true;
  } catch (e) {
    result.error = String(e && e.stack ? e.stack : e);
  } finally {
    await first.close();
    await second.close();
  }
  console.log(JSON.stringify(result));
}

main();
