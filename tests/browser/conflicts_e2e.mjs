// Two articles that disagree, in Debian's headless Chromium against a real Daphne server
// and Celery worker (tests/browser/test_conflicts_browser.py). Prints one JSON object.
//
//   node tests/browser/conflicts_e2e.mjs --base http://127.0.0.1:PORT --user U --password P \
//        [--screenshot docs/admin-conflicts.png]
//
// 1. The admin adds a "Gift wrapping" article at $5.99 (the demo "Pricing FAQ" says $4.99)
//    and waits for the documents list to count one open conflict.
// 2. A shopper asks what gift wrapping costs: the reply cites both articles.
// 3. The admin opens the conflict (the two sections side by side), keeps the new article,
//    and the count is gone; a new shopper is no longer told both.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";

import { HOST, launch as chromiumLaunch } from "./chromium.mjs";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    user: { type: "string", default: "admin" },
    password: { type: "string", default: "admin" },
    screenshot: { type: "string", default: "" },
    question: { type: "string", default: "how much is gift wrapping?" },
    "timeout-ms": { type: "string", default: "240000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const TIMEOUT = Number(opts["timeout-ms"]);
const ARTICLE = `# Gift wrapping

## Gift wrapping

We offer gift wrapping for $5.99 per item.
`;
const result = { ok: false, steps: [], errors: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });

const launch = (viewport) => chromiumLaunch(viewport, { timeout: TIMEOUT });

function watch(page, who) {
  page.on("pageerror", (e) => result.errors.push(`${who}: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/Failed to load resource|favicon/.test(m.text())) {
      result.errors.push(`${who}: ${m.text()}`);
    }
  });
}

async function openCount(page) {
  await page.goto(`${opts.base}/admin/knowledge/document/`);
  const banner = page.locator(".conflicts-open");
  return (await banner.count()) ? (await banner.innerText()).trim() : "";
}

async function shopperAsks(name) {
  const { context, close } = await launch({ width: 1280, height: 860 });
  try {
    const page = await context.newPage();
    watch(page, `shopper ${name}`);
    await page.goto(opts.base + "/", { waitUntil: "domcontentloaded" });
    await page.locator(`${HOST} .launcher`).click();
    await page.waitForSelector(`${HOST}[data-state="open"]`);
    const input = page.locator(`${HOST} textarea`);
    await input.fill(opts.question);
    await input.press("Enter");
    await page.waitForFunction(
      (sel) => {
        const root = document.querySelector(sel).shadowRoot;
        return root.querySelectorAll(".msg.bot:not(.greeting)[data-tier]").length > 0 ||
          root.querySelectorAll(".system.error").length > 0;
      },
      HOST,
      { timeout: TIMEOUT },
    );
    const reply = await page.evaluate((sel) => {
      const root = document.querySelector(sel).shadowRoot;
      const b = [...root.querySelectorAll(".msg.bot:not(.greeting)")].pop();
      const errors = [...root.querySelectorAll(".system.error")].map((n) => n.textContent);
      if (!b) return { errors };
      return {
        text: b.querySelector(".text").textContent,
        tier: b.dataset.tier || null,
        sources: [...b.querySelectorAll("details.sources li")].map(
          (li) => li.querySelector(".source-title")?.textContent ?? "",
        ),
        errors,
      };
    }, HOST);
    step(`shopper ${name}`, { reply });
    return reply;
  } finally {
    await close();
  }
}

let admin;
try {
  admin = await launch({ width: 1400, height: 900 });
  const page = await admin.context.newPage();
  watch(page, "admin");
  await page.goto(`${opts.base}/admin/login/?next=/admin/`);
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await Promise.all([page.waitForURL(/\/admin\/$/), page.click('input[type="submit"]')]);
  await page.evaluate(() => localStorage.setItem("django.admin.navSidebarIsOpen", "false"));
  result.count_before = await openCount(page);

  // 1. The new article, then the count on the documents list.
  await page.goto(`${opts.base}/admin/knowledge/document/add/`);
  await page.fill("#id_title", "Gift wrapping");
  await page.selectOption("#id_language", "en");
  await page.selectOption("#id_source_format", "markdown");
  await page.fill("#id_text", ARTICLE);
  await Promise.all([page.waitForURL(/\/change\/$/), page.click('input[name="_continue"]')]);
  step("article added");
  const deadline = Date.now() + TIMEOUT;
  let count = "";
  while (Date.now() < deadline && !count) {
    count = await openCount(page);
    if (!count) await page.waitForTimeout(1000);
  }
  if (!count) throw new Error("no open conflict was counted on the documents list");
  result.count = count;
  step("conflict counted", { count });

  // 2. A shopper asks while it is open.
  result.open_reply = await shopperAsks("open");

  // 3. The conflict, side by side.
  await Promise.all([page.waitForURL(/knowledgeconflict/), page.click(".conflicts-open a")]);
  await Promise.all([page.waitForURL(/knowledgeconflict\/\d+\/change\//), page.click("#result_list tbody tr th a")]);
  result.sides = await page.$$eval(".conflict-side", (divs) =>
    divs.map((d) => ({
      title: d.querySelector("h2 a")?.textContent.trim() ?? "",
      value: d.querySelector("mark.conflict-value")?.textContent.trim() ?? "",
    })),
  );
  result.buttons = await page.$$eval(".conflict-actions button", (bs) => bs.map((b) => b.textContent.trim()));
  if (opts.screenshot) {
    const out = path.resolve(opts.screenshot);
    fs.mkdirSync(path.dirname(out), { recursive: true });
    await page.screenshot({ path: out, fullPage: true });
    result.screenshot = out;
  }
  const keep = page.locator(".conflict-actions button", { hasText: "Gift wrapping" });
  await Promise.all([page.waitForURL(/knowledgeconflict\/(\?.*)?$/), keep.click()]);
  result.resolve_messages = await page.locator(".messagelist li").allInnerTexts();
  result.list_after = await page.$$eval("#result_list tbody tr", (trs) =>
    trs.map((tr) => ({
      status: tr.querySelector(".field-status")?.textContent.trim() ?? "",
      resolution: tr.querySelector(".field-resolution")?.textContent.trim() ?? "",
    })),
  );
  result.count_after = await openCount(page);
  step("resolved");
  result.resolved_reply = await shopperAsks("resolved");
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  if (admin) await admin.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
