// Safe defaults in Chromium (tests/browser/test_safe_pages.py): under the
// Content-Security-Policy every page Tierdesk serves still works (the demo shop and its
// widget's WebSocket, the console, the desk, the admin and its retraining chart), with no
// policy violation; then too many failed sign-ins show the lockout page. Prints one JSON
// object.
//
//   node tests/browser/safe_pages_e2e.mjs --base http://127.0.0.1:PORT --user U \
//        --password P [--screenshot docs/admin-lockout.png]
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
    failures: { type: "string", default: "5" },
    screenshot: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "60000" },
  },
});
if (!opts.base || !opts.user || !opts.password) throw new Error("--base, --user and --password are required");

const result = { ok: false, pages: {}, violations: [], errors: [] };
const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-safe-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1200, height: 800 },
  locale: "en-US",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
    "--disable-component-update", "--disable-sync", "--disable-features=LocalNetworkAccessChecks"],
});
context.setDefaultTimeout(Number(opts["timeout-ms"]));
// Every policy violation the page itself reports, whatever its source.
await context.addInitScript(() => {
  document.addEventListener("securitypolicyviolation", (e) => {
    console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
  });
});

async function visit(page, name, url) {
  const response = await page.goto(opts.base + url, { waitUntil: "load" });
  result.pages[name] = {
    status: response.status(),
    csp: response.headers()["content-security-policy"] || "",
    title: await page.title(),
  };
  return response;
}

async function signIn(page, user, password, next) {
  await page.goto(`${opts.base}/admin/login/?next=${next}`);
  await page.fill("#id_username", user);
  await page.fill("#id_password", password);
  await Promise.all([page.waitForLoadState("load"), page.click("input[type=submit]")]);
}

try {
  const page = await context.newPage();
  page.on("console", (m) => {
    if (/Content.Security.Policy|CSP violation/i.test(m.text())) result.violations.push(`${page.url()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => result.errors.push(`${page.url()}: ${e.message}`));

  // The demo shop: the widget's module scripts load, and its WebSocket opens and hears
  // the server's hello (connect-src 'self' covers ws: on this origin).
  const socket = new Promise((resolve) => {
    page.on("websocket", (ws) => ws.on("framereceived", (f) => resolve({ url: ws.url(), first: String(f.payload).slice(0, 80) })));
  });
  await visit(page, "shop", "/");
  await page.waitForFunction(() => {
    const host = document.querySelector("tierdesk-chat");
    return Boolean(host && host.shadowRoot && host.shadowRoot.querySelector("textarea"));
  });
  await page.locator("tierdesk-chat .launcher").click(); // opening the chat connects
  result.websocket = await Promise.race([socket, new Promise((r) => setTimeout(() => r(null), 20000))]);

  // Staff pages, signed in.
  await signIn(page, opts.user, opts.password, "/operators/");
  result.signed_in = page.url().endsWith("/operators/");
  await visit(page, "console", "/operators/");
  await visit(page, "desk", "/desk/");
  await page.waitForTimeout(1500); // the desk's own socket and scripts settle
  await visit(page, "admin", "/admin/");
  await visit(page, "retraining", "/admin/routing/intent/retraining/");
  // The out-of-scope chart's script (a static file now): Enter on a point not in use
  // presses its row's button, and the page comes back with that point in use. (The
  // keyboard, as the points of a dense curve overlap under the pointer.)
  const points = await page.locator("#oos-chart .oos-point").count();
  result.chart_points = points;
  if (points > 1) {
    const inUse = await page.locator("#oos-in-use").textContent();
    const target = await page.evaluate((current) => {
      const all = [...document.querySelectorAll("#oos-chart .oos-point")].map((p) => p.dataset.threshold);
      return all.find((t) => t !== current.trim()) || null;
    }, inUse);
    await page.focus(`#oos-chart .oos-point[data-threshold="${target}"]`);
    await Promise.all([page.waitForNavigation({ waitUntil: "load" }), page.keyboard.press("Enter")]);
    result.chart_click = { before: inUse.trim(), target, after: (await page.locator("#oos-in-use").textContent()).trim() };
  }

  // Too many failed sign-ins, in a fresh context of its own (no session).
  const stranger = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const guess = await stranger.newPage({ viewport: { width: 900, height: 560 }, locale: "en-US" });
  const statuses = [];
  for (let i = 0; i < Number(opts.failures); i++) {
    await guess.goto(`${opts.base}/admin/login/?next=/admin/`);
    await guess.fill("#id_username", opts.user);
    await guess.fill("#id_password", `wrong-${i}`);
    const [response] = await Promise.all([guess.waitForResponse((r) => r.request().method() === "POST"), guess.click("input[type=submit]")]);
    statuses.push(response.status());
  }
  await guess.waitForLoadState("load");
  result.lockout = {
    statuses,
    heading: await guess.locator("[data-testid=lockout] h1").textContent(),
    text: await guess.locator("[data-testid=lockout]").innerText(),
  };
  if (opts.screenshot) await guess.screenshot({ path: opts.screenshot });
  await stranger.close();
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
