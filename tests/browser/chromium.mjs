// What the Chromium scripts that drive the widget and the desk share: a headless
// Debian Chromium with a throwaway profile, the page's errors collected, and reads and
// waits inside the widget's shadow root.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { chromium } from "playwright-core";

export const HOST = "tierdesk-chat";

// A browser of its own (a persistent profile in a temporary folder, removed by close):
// two of them are two people, with nothing shared.
export async function launch(viewport, { timeout = 120000 } = {}) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-chromium-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport,
    timeout: 60000,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
      "--disable-component-update", "--disable-sync", "--disable-features=LocalNetworkAccessChecks"],
  });
  context.setDefaultTimeout(timeout);
  const page = context.pages()[0] || (await context.newPage());
  const close = async () => {
    await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  };
  return { context, page, close };
}

// Page errors, console errors and failed requests, each prefixed with ``who``.
export function collectErrors(page, who, errors) {
  page.on("pageerror", (e) => errors.push(`${who}: ${e.message}`));
  // A failed resource load is reported by its response instead (with its URL).
  page.on("console", (m) => {
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) errors.push(`${who}: ${m.text()}`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400 && !/favicon\.ico$/.test(r.url())) errors.push(`${who}: ${r.status()} ${r.url()}`);
  });
}

// ``src`` is a function body run with the widget's shadow root as ``root``.
export const shadow = (page, src, arg) =>
  page.evaluate(
    ([s, a]) => new Function("root", "arg", s)(document.querySelector("tierdesk-chat").shadowRoot, a),
    [src, arg],
  );

// Polled from here, not with page.waitForFunction: its predicate runs again from the
// page's own timers, where the page's Content-Security-Policy refuses `new Function`;
// a page.evaluate call is compiled by the debugger protocol and is not refused.
export async function shadowWait(page, src, arg, { timeout = 120000 } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const done = await page.evaluate(
      ([s, a]) => {
        const host = document.querySelector("tierdesk-chat");
        if (!host || !host.shadowRoot) return false;
        return new Function("root", "arg", s)(host.shadowRoot, a);
      },
      [src, arg],
    );
    if (done) return done;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${src}`);
    await page.waitForTimeout(100);
  }
}

// The shopper types into the widget and presses Enter.
export async function say(page, text) {
  const input = page.locator(`${HOST} textarea`);
  await input.fill(text);
  await input.press("Enter");
}

// Opens the widget on the page already loaded and waits for the socket's hello.
export async function widgetOpen(page) {
  await page.locator(`${HOST} .launcher`).click();
  await page.waitForSelector(`${HOST}[data-state="open"]`);
}

// The agent signs in (Django auth) and waits for the desk's socket.
export async function deskSignIn(page, base, username, password) {
  await page.goto(`${base}/admin/login/?next=/desk/`);
  await page.fill("#id_username", username);
  await page.fill("#id_password", password);
  await Promise.all([page.waitForURL(/\/desk\/$/), page.click('input[type="submit"]')]);
  await page.waitForSelector("#conn.live");
}

// The desk's queue item for this shopper's own conversation. Browser tests share one
// server, so other tests' chats may be queued too; the first item is not necessarily
// ours. The widget carries its conversation id once the server has greeted it.
export async function shoppersQueueItem(agent, shopper, { timeout = 120000 } = {}) {
  const id = await shadowWait(shopper, `return root.host.getAttribute("data-conversation");`, undefined, { timeout });
  const item = agent.locator(`#queue .item[data-conversation="${id}"]`);
  await item.waitFor({ timeout });
  return item;
}
