// A support admin edits an answer card's generated questions in Django admin, and a
// question starts matching the card (tests/browser/test_generated_questions_browser.py).
// Prints one JSON object on stdout.
//
//   node tests/browser/generated_questions.mjs --base http://127.0.0.1:PORT --user u \
//        --password p --screenshot docs/admin-generated-questions.png
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
    screenshot: { type: "string" },
  },
});
const ASKED = "How much to make my present look pretty with paper and a bow?";
const OWN = "How much is it to have my present wrapped in nice paper with a bow?";
const result = { ok: false, errors: [] };

async function tryQuestion(page) {
  const url = `${opts.base}/admin/knowledge/document/try/?question=${encodeURIComponent(ASKED)}&language=en&method=hybrid`;
  await page.goto(url);
  const card = page.locator("#try-card");
  return (await card.count()) ? (await card.innerText()).trim() : "";
}

const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-questions-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
    "--disable-component-update", "--disable-sync", "--disable-features=LocalNetworkAccessChecks"],
});
context.setDefaultTimeout(120000);
try {
  const page = await context.newPage();
  page.on("pageerror", (e) => result.errors.push(e.message));
  await page.goto(`${opts.base}/admin/login/?next=/admin/`);
  await page.fill("#id_username", opts.user);
  await page.fill("#id_password", opts.password);
  await Promise.all([page.waitForURL(/\/admin\/$/), page.click('input[type="submit"]')]);
  await page.evaluate(() => localStorage.setItem("django.admin.navSidebarIsOpen", "false"));

  result.card_before = await tryQuestion(page);

  // The gift-wrapping card, from the review list.
  await page.goto(`${opts.base}/admin/knowledge/answercard/`);
  const link = page.locator("#result_list tbody tr", { hasText: "Gift wrapping" }).locator(".field-first_question a");
  await Promise.all([page.waitForURL(/\/change\/$/), link.first().click()]);
  const box = page.locator("#id_generated_questions_text");
  result.generated_before = await box.inputValue();
  await box.fill(`${result.generated_before}\n${OWN}`);
  await Promise.all([
    page.waitForURL(/\/change\/$/),
    page.click('input[name="_continue"]'),
  ]);
  result.messages = await page.locator(".messagelist li").allInnerTexts();
  result.table_after = await page.locator("table.generated-questions").innerText();
  result.box_after = await page.locator("#id_generated_questions_text").inputValue();
  // The screenshot: the card and its generated questions, the admin's own line first.
  await page.locator("#id_generated_questions_text").scrollIntoViewIfNeeded();
  await page.evaluate(() => {
    const box = document.querySelector("#id_generated_questions_text");
    window.scrollTo(0, box.getBoundingClientRect().top + window.scrollY - 330);
  });
  if (opts.screenshot) await page.screenshot({ path: opts.screenshot });

  result.card_after = await tryQuestion(page);
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
} finally {
  await context.close().catch(() => {});
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
