// A shopper and an agent in two real Chromium contexts against one Daphne server
// (tests/browser/test_desk.py): the shopper asks for a person, the agent sees the
// conversation appear live at /desk/, claims it, they write both ways, the agent
// resolves it and the bot answers the next question. Prints one JSON object.
//
//   node tests/browser/desk_e2e.mjs --base http://127.0.0.1:PORT --agent agent \
//        --password agent [--screenshot docs/desk.png] [--timeout-ms 120000]
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

import { chromium } from "playwright-core";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    agent: { type: "string", default: "agent" },
    password: { type: "string", default: "agent" },
    screenshot: { type: "string", default: "" },
    "widget-screenshot": { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
if (!opts.base) throw new Error("--base is required");
const TIMEOUT = Number(opts["timeout-ms"]);
const HOST = "tierdesk-chat";

async function launch(viewport) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "tierdesk-desk-"));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport,
    timeout: 60000,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
      "--disable-component-update", "--disable-sync", "--disable-features=LocalNetworkAccessChecks"],
  });
  context.setDefaultTimeout(TIMEOUT);
  const close = async () => {
    await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  };
  return { context, close };
}

// Polled from here, not with page.waitForFunction: its predicate runs again from the
// page's own timers, where the page's Content-Security-Policy refuses `new Function`;
// a page.evaluate call is compiled by the debugger protocol and is not refused.
async function shadowWait(page, src, arg) {
  const deadline = Date.now() + TIMEOUT;
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
const shadow = (page, src, arg) =>
  page.evaluate(
    ([s, a]) => new Function("root", "arg", s)(document.querySelector("tierdesk-chat").shadowRoot, a),
    [src, arg],
  );

async function shopperSay(page, text) {
  const input = page.locator(`${HOST} textarea`);
  await input.fill(text);
  await input.press("Enter");
}

const result = { ok: false, steps: [], errors: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });
let agentB, shopperB;
try {
  agentB = await launch({ width: 1400, height: 860 });
  shopperB = await launch({ width: 1280, height: 860 });
  const agent = await agentB.context.newPage();
  const shopper = await shopperB.context.newPage();
  for (const [who, page] of [["agent", agent], ["shopper", shopper]]) {
    page.on("pageerror", (e) => result.errors.push(`${who}: ${e.message}`));
    // Console errors; a failed resource load is reported by its response instead (with its URL).
    page.on("console", (m) => {
      if (m.type() === "error" && !/Failed to load resource/.test(m.text())) result.errors.push(`${who}: ${m.text()}`);
    });
    page.on("response", (r) => {
      if (r.status() >= 400 && !/favicon\.ico$/.test(r.url())) result.errors.push(`${who}: ${r.status()} ${r.url()}`);
    });
  }

  // The agent signs in (Django auth) and opens the desk.
  await agent.goto(`${opts.base}/admin/login/?next=/desk/`);
  await agent.fill("#id_username", opts.agent);
  await agent.fill("#id_password", opts.password);
  await Promise.all([agent.waitForURL(/\/desk\/$/), agent.click('input[type="submit"]')]);
  await agent.waitForSelector("#conn.live");
  step("desk_live");

  // The shopper asks for a person and confirms.
  await shopper.goto(`${opts.base}/`);
  await shopper.locator(`${HOST} .launcher`).click();
  await shopper.waitForSelector(`${HOST}[data-state="open"]`);
  await shopperSay(shopper, "I want to talk to a human");
  await shadowWait(shopper, `return root.querySelectorAll(".actions button").length > 0;`);
  step("offered");
  await shopper.locator(`${HOST} .actions button`).first().click();
  await shadowWait(shopper, `const b = root.querySelector(".handoff"); return b && !b.hidden && b.dataset.status === "queued";`);
  result.queued_text = await shadow(shopper, `return root.querySelector(".handoff").textContent;`);
  step("queued");

  // The desk shows it live; the agent claims it.
  await agent.waitForSelector("#queue .item");
  result.queue_item = await agent.locator("#queue .item").first().innerText();
  await agent.locator("#queue .item .claim").first().click();
  await agent.waitForSelector("#reply-text:not([disabled])");
  step("claimed");
  await shadowWait(shopper, `const b = root.querySelector(".handoff"); return b && b.dataset.status === "claimed";`);
  result.claimed_text = await shadow(shopper, `return root.querySelector(".handoff").textContent;`);

  // Shopper -> agent.
  await shopperSay(shopper, "My parcel arrived broken");
  await agent.waitForFunction(() =>
    [...document.querySelectorAll("#messages .msg.user .text")].some((n) => n.textContent === "My parcel arrived broken"));
  step("agent_got_message");

  // Agent -> shopper: typing shows first, then the message with the agent's name.
  await agent.locator("#reply-text").pressSequentially("So sorry", { delay: 20 });
  await shadowWait(shopper, `const t = root.querySelector(".typing"); return t && !t.hidden;`);
  result.typing_text = await shadow(shopper, `return root.querySelector(".typing").textContent;`);
  await agent.locator("#reply-text").fill("So sorry! I've sent a replacement; it ships today.");
  const sentAt = Date.now();
  await agent.locator("#reply-text").press("Enter");
  await shadowWait(shopper, `return [...root.querySelectorAll(".msg.agent .text")].some((n) => n.textContent.includes("replacement"));`);
  result.agent_to_shopper_ms = Date.now() - sentAt;
  result.agent_name_shown = await shadow(shopper, `const n = root.querySelector(".msg.agent .agent-name"); return n ? n.textContent : "";`);
  step("shopper_got_reply");

  // An internal note: the desk shows it, the shopper never does.
  await agent.fill("#note-text", "Replacement approved, order flagged.");
  await agent.press("#note-text", "Enter");
  await agent.waitForSelector("#notes .note");
  // Canned replies (the shop's reply templates) and the knowledge-base search.
  result.canned = await agent.locator("#canned option").count();
  result.canned_groups = await agent.locator("#canned optgroup").evaluateAll((gs) => gs.map((g) => g.label));
  result.canned_labels = await agent.locator("#canned optgroup option").evaluateAll((os) => os.map((o) => o.textContent));
  await agent.fill("#kb-q", "return policy");
  await agent.press("#kb-q", "Enter");
  await agent.waitForSelector("#kb-results li");
  result.kb_first = await agent.locator("#kb-results li").first().innerText();
  if (opts["widget-screenshot"]) await shopper.screenshot({ path: opts["widget-screenshot"] });
  if (opts.screenshot) await agent.screenshot({ path: opts.screenshot });
  result.note_leaked = await shadow(shopper, `return root.textContent.includes("Replacement approved");`);

  // Resolve: the shopper sees the person leave and may rate them; the bot answers again.
  await agent.click("#resolve");
  await shadowWait(shopper, `return [...root.querySelectorAll(".system.handoff-note")].some((n) => /left/.test(n.textContent));`);
  step("resolved");
  result.rate_label = await shadow(shopper, `return root.querySelector(".csat-label").textContent;`);
  const botsBefore = await shadow(shopper, `return root.querySelectorAll(".msg.bot:not(.greeting):not(.agent)[data-tier]").length;`);
  await shopperSay(shopper, "where is my order #W2611340?");
  await shadowWait(shopper, `return root.querySelectorAll(".msg.bot:not(.greeting):not(.agent)[data-tier]").length > arg;`, botsBefore);
  result.bot_after = await shadow(shopper, `const b = root.querySelectorAll(".msg.bot:not(.agent)[data-tier]"); return b[b.length - 1].dataset.tier;`);
  step("bot_answers_again");

  // A reload shows the person's message in the history.
  await shopper.reload();
  await shopper.waitForSelector(`${HOST}[data-state="open"]`);
  await shadowWait(shopper, `return root.querySelectorAll(".msg.agent").length > 0;`);
  result.history_agent = await shadow(shopper, `return root.querySelector(".msg.agent .text").textContent;`);
  step("history_after_reload");
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
} finally {
  await agentB?.close();
  await shopperB?.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
