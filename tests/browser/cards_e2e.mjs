// The support admin's answer-card workflow in Debian's headless Chromium against a real
// Daphne server and Celery worker (tests/browser/test_cards_e2e.py). Prints one JSON
// object on stdout.
//
//   node tests/browser/cards_e2e.mjs --base http://127.0.0.1:PORT --user admin \
//        --password pw --shots DIR [--review-screenshot docs/cards-review.png]
//
// 1. The admin logs in, adds a "Store credit" article with a negation, waits for its cards
//    (ingestion, then knowledge.cards_sync on the worker) and approves the expiry card
//    with "Save and approve" on its change form.
// 2. A shopper asks in the widget "does store credit expire?": the answer and its sources.
// 3. The admin edits the article (30 -> 18 months) and waits for the card to be stale.
//    The review screen (list, change form with the diff) is photographed.
// 4. A shopper in a NEW conversation asks again (must not hear 30); the admin approves
//    both cards with the bulk action; a third conversation gets 18.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { HOST, launch as chromiumLaunch } from "./chromium.mjs";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    user: { type: "string", default: "admin" },
    password: { type: "string", default: "admin" },
    shots: { type: "string", default: "" },
    "review-screenshot": { type: "string", default: "" },
    question: { type: "string", default: "does store credit expire?" },
    "timeout-ms": { type: "string", default: "240000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const TIMEOUT = Number(opts["timeout-ms"]);
// Not "Gift cards": the demo knowledge base has that article (36 months) already, and
// the point is a fact that only this new article states.
const TITLE = "Store credit";
const ARTICLE = `# Store credit

## Does store credit expire?

Store credit expires 30 months after it is issued. It can be used online and in every store.

## Can I exchange store credit for cash?

Store credit cannot be exchanged for cash, except where the law requires it.
`;

const shotsDir = opts.shots || fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-cards-shots-"));
fs.mkdirSync(shotsDir, { recursive: true });
const result = { ok: false, steps: [], errors: [], shots: [] };
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

async function shot(page, name, options = {}) {
  const file = path.join(shotsDir, `${String(result.shots.length + 1).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file, ...options });
  result.shots.push(file);
  return file;
}

async function messages(page) {
  return page.locator(".messagelist li").allInnerTexts();
}

// The rows of the answer-card list, filtered to one document.
async function cardRows(page, documentId) {
  await page.goto(`${opts.base}/admin/knowledge/answercard/?document__id__exact=${documentId}`);
  return page.$$eval("#result_list tbody tr", (trs) =>
    trs.map((tr) => {
      const cell = (name) => tr.querySelector(`.field-${name}`)?.textContent.trim() ?? "";
      return {
        question: cell("first_question"),
        answer: cell("answer_preview"),
        status: cell("status_badge"),
        backed: cell("check_badge"),
        href: tr.querySelector(".field-first_question a")?.getAttribute("href") ?? "",
      };
    }),
  );
}

// Polls the card list until ``ok(rows)`` holds (the worker runs in its own process).
async function waitCards(page, documentId, ok, what) {
  const deadline = Date.now() + TIMEOUT;
  let rows = [];
  while (Date.now() < deadline) {
    rows = await cardRows(page, documentId);
    if (ok(rows)) return rows;
    await page.waitForTimeout(1000);
  }
  throw new Error(`timed out waiting for ${what}; cards: ${JSON.stringify(rows)}`);
}

// One shopper, one new conversation (a fresh browser profile): asks and reads the reply.
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
    // Open the sources so the screenshot shows them.
    await page.evaluate((sel) => {
      const d = document.querySelector(sel).shadowRoot.querySelector(".msg.bot:not(.greeting) details.sources");
      if (d) d.open = true;
    }, HOST);
    await page.waitForTimeout(300);
    const reply = await page.evaluate((sel) => {
      const root = document.querySelector(sel).shadowRoot;
      const b = [...root.querySelectorAll(".msg.bot:not(.greeting)")].pop();
      const errors = [...root.querySelectorAll(".system.error")].map((n) => n.textContent);
      if (!b) return { errors };
      return {
        text: b.querySelector(".text").textContent,
        tier: b.dataset.tier || null,
        tooltip: b.querySelector(".badge")?.title || "",
        sources: [...b.querySelectorAll("details.sources li")].map((li) => ({
          title: li.querySelector(".source-title")?.textContent ?? "",
          anchor: li.dataset.anchor ?? "",
          snippet: li.querySelector("blockquote")?.textContent ?? "",
        })),
        errors,
      };
    }, HOST);
    await shot(page, `shopper-${name}`);
    step(`shopper ${name}`, { reply });
    return reply;
  } finally {
    await close();
  }
}

// docs/cards-review.png: the list (a stale and a draft card) above the stale card's form.
async function composeReview(context, listShot, formShot) {
  const page = await context.newPage();
  const img = (f) => `data:image/png;base64,${fs.readFileSync(f).toString("base64")}`;
  await page.setContent(
    `<body style="margin:0;background:#d0d7de;font:14px sans-serif">
       <div style="padding:8px 12px">The review queue: cards whose article changed, then drafts</div>
       <img style="display:block;width:1400px" src="${img(listShot)}">
       <div style="padding:8px 12px">A card whose article changed: what changed, then the redrafted card</div>
       <img style="display:block;width:1400px" src="${img(formShot)}"></body>`,
  );
  await page.waitForFunction(() => [...document.images].every((i) => i.complete));
  const out = path.resolve(opts["review-screenshot"]);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  await page.screenshot({ path: out, fullPage: true });
  result.review_screenshot = out;
  await page.close();
}

let admin;
try {
  admin = await launch({ width: 1400, height: 900 });
  const page = await admin.context.newPage();
  watch(page, "admin");

  // 1. Log in, add the article.
  await page.goto(`${opts.base}/admin/login/?next=/admin/`);
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await Promise.all([page.waitForURL(/\/admin\/$/), page.click('input[type="submit"]')]);
  step("logged in");
  // Collapse the app list (remembered by the browser, as for any admin who does it):
  // the review columns get the width.
  await page.evaluate(() => localStorage.setItem("django.admin.navSidebarIsOpen", "false"));
  await page.goto(`${opts.base}/admin/knowledge/document/add/`);
  await page.fill("#id_title", TITLE);
  await page.selectOption("#id_language", "en");
  await page.selectOption("#id_source_format", "markdown");
  await page.fill("#id_text", ARTICLE);
  await Promise.all([page.waitForURL(/\/change\/$/), page.click('input[name="_continue"]')]);
  const documentId = Number(page.url().match(/document\/(\d+)\/change/)[1]);
  result.document_id = documentId;
  result.added_messages = await messages(page);
  step("article added", { documentId });

  // 2. Wait for its cards: ingestion, then cards_sync, both on the worker.
  let rows = await waitCards(page, documentId, (r) => r.length >= 2, "the drafted cards");
  result.drafted = rows;
  step("cards drafted", { rows });
  // The article's page links to its cards, as an admin would find them.
  await page.goto(`${opts.base}/admin/knowledge/document/${documentId}/change/`);
  result.doc_cards_text = (await page.locator(".field-answer_cards .readonly").innerText()).trim();
  await Promise.all([page.waitForURL(/answercard\/\?document__id__exact=/), page.click(".field-answer_cards a")]);
  result.doc_cards_link = page.url();
  await shot(page, "cards-drafted", { fullPage: true });

  // 3. Approve the expiry card on its change form.
  const expiry = rows.find((r) => /expire/i.test(r.question));
  if (!expiry) throw new Error(`no expiry card: ${JSON.stringify(rows)}`);
  await page.goto(opts.base + expiry.href);
  result.draft_form = {
    questions: await page.inputValue("#id_questions_text"),
    answer: await page.inputValue("#id_answer"),
  };
  await shot(page, "card-draft-form", { fullPage: true });
  await Promise.all([page.waitForLoadState("load"), page.click('input[name="_approve"]')]);
  await page.waitForSelector(".messagelist li");
  result.approve_messages = await messages(page);
  rows = await cardRows(page, documentId);
  result.after_approve = rows;
  step("expiry card approved", { rows });

  // 4. The shopper asks.
  result.first = await shopperAsks("approved-30");

  // 5. The admin edits the article: the card goes back to review.
  await page.goto(`${opts.base}/admin/knowledge/document/${documentId}/change/`);
  const text = await page.inputValue("#id_text");
  await page.fill("#id_text", text.replace("30 months", "18 months"));
  await Promise.all([page.waitForURL(/\/change\/$/), page.click('input[name="_continue"]')]);
  step("article edited");
  rows = await waitCards(
    page,
    documentId,
    (r) => r.some((c) => /article changed/i.test(c.status) && /18 months/.test(c.answer)),
    "the expiry card to go back to review",
  );
  result.after_edit = rows;
  step("card stale", { rows });
  await page.goto(`${opts.base}/admin/knowledge/document/${documentId}/change/`);
  result.doc_cards_text_after_edit = (await page.locator(".field-answer_cards .readonly").innerText()).trim();
  await cardRows(page, documentId);
  // The review screen: the list with a stale and a draft card, then the stale card's form.
  const listShot = await shot(page, "review-list", { clip: { x: 0, y: 0, width: 1400, height: 520 } });
  const stale = rows.find((r) => /article changed/i.test(r.status));
  await page.goto(opts.base + stale.href);
  result.stale_form = {
    diff_del: await page.locator("del.card-del").allInnerTexts(),
    diff_ins: await page.locator("ins.card-ins").allInnerTexts(),
    changes: (await page.locator(".field-changes").innerText().catch(() => "")).trim(),
    answer: await page.inputValue("#id_answer"),
  };
  const formShot = await shot(page, "review-stale-form", { fullPage: true });
  result.review_shots = [listShot, formShot];
  if (opts["review-screenshot"]) await composeReview(admin.context, listShot, formShot);

  // 6. A new conversation while the card is stale: no 30 from any cache.
  result.while_stale = await shopperAsks("stale");

  // 7. Bulk-approve every card of the article from the list.
  await cardRows(page, documentId);
  await page.check("#action-toggle");
  await page.selectOption('select[name="action"]', "approve");
  await Promise.all([page.waitForLoadState("load"), page.click('button[name="index"]')]);
  await page.waitForSelector(".messagelist li");
  result.bulk_messages = await messages(page);
  rows = await cardRows(page, documentId);
  result.after_bulk = rows;
  step("bulk approved", { rows });

  // 8. A third conversation: the re-approved card says 18.
  result.reapproved = await shopperAsks("approved-18");
  result.ok = true;
} catch (err) {
  result.error = String(err && err.stack ? err.stack : err);
} finally {
  if (admin) await admin.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
