// A shopper and an agent in two real Chromium contexts against one Daphne server
// (tests/browser/test_desk.py): the shopper asks for a person, the agent sees the
// conversation appear live at /desk/, claims it, they write both ways, the agent
// resolves it and the bot answers the next question. Prints one JSON object.
//
//   node tests/browser/desk_e2e.mjs --base http://127.0.0.1:PORT --agent agent \
//        --password agent [--screenshot docs/desk.png] [--timeout-ms 120000]
import { parseArgs } from "node:util";

import {
  collectErrors,
  deskSignIn,
  HOST,
  launch as chromiumLaunch,
  say as shopperSay,
  shadow,
  shadowWait as waitIn,
  shoppersQueueItem,
  widgetOpen,
} from "./chromium.mjs";

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
const launch = (viewport) => chromiumLaunch(viewport, { timeout: TIMEOUT });
const shadowWait = (page, src, arg) => waitIn(page, src, arg, { timeout: TIMEOUT });

const result = { ok: false, steps: [], errors: [] };
const step = (name, extra = {}) => result.steps.push({ name, t: Date.now(), ...extra });
let agentB, shopperB;
try {
  agentB = await launch({ width: 1400, height: 860 });
  shopperB = await launch({ width: 1280, height: 860 });
  const agent = agentB.page;
  const shopper = shopperB.page;
  collectErrors(agent, "agent", result.errors);
  collectErrors(shopper, "shopper", result.errors);

  // The agent signs in (Django auth) and opens the desk.
  await deskSignIn(agent, opts.base, opts.agent, opts.password);
  step("desk_live");

  // The shopper asks for a person and confirms.
  await shopper.goto(`${opts.base}/`);
  await widgetOpen(shopper);
  await shopperSay(shopper, "I want to talk to a human");
  await shadowWait(shopper, `return root.querySelectorAll(".actions button").length > 0;`);
  step("offered");
  await shopper.locator(`${HOST} .actions button`).first().click();
  await shadowWait(shopper, `const b = root.querySelector(".handoff"); return b && !b.hidden && b.dataset.status === "queued";`);
  result.queued_text = await shadow(shopper, `return root.querySelector(".handoff").textContent;`);
  step("queued");

  // The desk shows it live; the agent claims it.
  const ours = await shoppersQueueItem(agent, shopper, { timeout: TIMEOUT });
  result.queue_item = await ours.innerText();
  await ours.locator(".claim").click();
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
