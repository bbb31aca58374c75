// The whole conversation as a shopper and an agent live it (issue #36), in two headless
// Chromium browsers against one Daphne server: the shopper (signed in by the demo page,
// ?as=) asks where an order is, cancels another giving the reason in their own words,
// returns an item named by its name, asks for a person and writes while queued; the
// agent claims it at /desk/; the shopper attaches a photo (--photo), the agent sees it,
// answers and resolves; the shopper rates the chat.
//
//   node tests/browser/walkthrough_e2e.mjs --base http://127.0.0.1:PORT --scenario phone \
//        --width 390 --height 844 --as CUSTOMER --pending '#W…' --delivered '#W…' \
//        --item Backpack --agent NAME --password PW --shots DIR [--photo file.png]
//
// After each step it records what the shopper sees (LOOK); the test asserts on it.
// Prints one JSON object for tests/browser/test_walkthrough_browser.py.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";

import { collectErrors, deskSignIn, HOST, launch, say, shadow, shadowWait, widgetOpen } from "./chromium.mjs";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    scenario: { type: "string", default: "desktop" },
    width: { type: "string", default: "1280" },
    height: { type: "string", default: "800" },
    as: { type: "string" },
    pending: { type: "string" },
    delivered: { type: "string" },
    item: { type: "string" },
    agent: { type: "string" },
    password: { type: "string" },
    shots: { type: "string" },
    photo: { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "120000" },
  },
});
for (const name of ["base", "as", "pending", "delivered", "item", "agent", "password", "shots"]) {
  if (!opts[name]) throw new Error(`--${name} is required`);
}
const TIMEOUT = Number(opts["timeout-ms"]);

// What the shopper sees now. ``arg``: text the newest message should contain. In view
// means inside the page's viewport and, for what scrolls, inside the log's visible part.
const LOOK = `
  const vw = innerWidth, vh = innerHeight;
  const log = root.querySelector(".log");
  const lr = log.getBoundingClientRect();
  const shown = (n) => n && !n.closest("[hidden]") && n.getBoundingClientRect().height > 0;
  const inView = (n) => {
    if (!shown(n)) return false;
    const r = n.getBoundingClientRect();
    const page = r.top >= -1 && r.left >= -1 && r.bottom <= vh + 1 && r.right <= vw + 1;
    return page && (!log.contains(n) || (r.top >= lr.top - 1 && r.bottom <= lr.bottom + 1));
  };
  const said = [...log.querySelectorAll(".msg:not(.greeting), .system")];
  const match = arg ? said.filter((n) => n.textContent.includes(arg)).pop() : said[said.length - 1];
  const buttons = [...root.querySelectorAll(".actions button")];
  const csat = root.querySelector(".csat");
  const bar = root.querySelector(".handoff");
  // The panel's fixed parts, top to bottom: none may cover another.
  const parts = [".header", ".status", ".handoff", ".log-box", ".typing", ".csat", ".composer"]
    .map((s) => [s, root.querySelector(s)]).filter(([, n]) => shown(n));
  const overlaps = [];
  for (let i = 0; i < parts.length; i += 1)
    for (let j = i + 1; j < parts.length; j += 1) {
      const a = parts[i][1].getBoundingClientRect(), b = parts[j][1].getBoundingClientRect();
      if (a.bottom > b.top + 1 && b.bottom > a.top + 1 && a.right > b.left + 1 && b.right > a.left + 1)
        overlaps.push(parts[i][0] + " / " + parts[j][0]);
    }
  // Text wider than its box (cut off or scrolled sideways), anywhere in the panel.
  const cut = [...root.querySelectorAll(".panel *")]
    .filter((n) => shown(n) && !n.classList.contains("sr-only") && n.scrollWidth > n.clientWidth + 1 && getComputedStyle(n).overflowX !== "visible")
    .map((n) => n.className || n.tagName);
  // The message box's hint whole on its one line (an ellipsis cuts it otherwise).
  const ta = root.querySelector(".composer textarea"), cs = getComputedStyle(ta);
  const pen = document.createElement("canvas").getContext("2d");
  pen.font = cs.font;
  const room = ta.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  if (pen.measureText(ta.placeholder).width > room) cut.push("placeholder: " + ta.placeholder);
  const panel = root.querySelector(".panel").getBoundingClientRect();
  return {
    text: match ? match.textContent : "",
    text_in_view: inView(match),
    last: said.length ? said[said.length - 1].textContent : "",
    buttons: buttons.map((n) => n.textContent),
    buttons_in_view: buttons.map(inView),
    handoff: shown(bar) ? bar.textContent : "",
    csat: shown(csat) ? csat.querySelector(".csat-label").textContent : "",
    csat_in_view: shown(csat) && [...csat.querySelectorAll("button")].every(inView),
    csat_pressed: csat ? [...csat.querySelectorAll('button[aria-pressed="true"]')].map((b) => b.textContent) : [],
    composer_in_view: inView(root.querySelector(".composer textarea")) && inView(root.querySelector(".send")),
    panel_in_view: panel.top >= -1 && panel.left >= -1 && panel.bottom <= vh + 1 && panel.right <= vw + 1,
    overlaps,
    cut,
  };`;

const BOT_REPLIES = `root.querySelectorAll('.msg.bot:not(.greeting):not(.agent)[data-status="complete"]').length`;

const result = { ok: false, scenario: opts.scenario, steps: {}, errors: [] };
const shotsDir = path.resolve(opts.shots);
fs.mkdirSync(shotsDir, { recursive: true });

async function look(page, name, expect = "") {
  await page.waitForTimeout(250); // buttons and scrolling follow the frame
  const seen = await shadow(page, LOOK, expect);
  result.steps[name] = seen;
  return seen;
}

// The shopper says ``text`` (or presses the button labelled so) and waits for the bot.
async function ask(page, name, text, { button = false, expect = "", timeout = TIMEOUT } = {}) {
  const before = await shadow(page, `return ${BOT_REPLIES};`);
  if (button) await page.locator(`${HOST} .actions button`, { hasText: text }).click();
  else await say(page, text);
  await shadowWait(page, `return ${BOT_REPLIES} > arg;`, before, { timeout });
  return look(page, name, expect);
}

async function shot(page, name) {
  const file = path.join(shotsDir, `${name}.png`);
  await page.screenshot({ path: file });
  result.shots = [...(result.shots || []), file];
}

let shopperB, agentB;
try {
  agentB = await launch({ width: 1280, height: 800 }, { timeout: TIMEOUT });
  shopperB = await launch({ width: Number(opts.width), height: Number(opts.height) }, { timeout: TIMEOUT });
  const agent = agentB.page;
  const shopper = shopperB.page;
  collectErrors(agent, "agent", result.errors);
  collectErrors(shopper, "shopper", result.errors);
  const t0 = Date.now();
  const lap = (name) => ((result.laps ||= {})[name] = Date.now() - t0);

  // The agent is at the desk first: a request for a person finds someone online.
  await deskSignIn(agent, opts.base, opts.agent, opts.password);
  lap("desk_live");

  await shopper.goto(`${opts.base}/?as=${encodeURIComponent(opts.as)}`);
  await widgetOpen(shopper);
  await shopper.waitForSelector(`${HOST}[data-identified]`, { timeout: 15000 });

  // 1. Where is an order: the orders as buttons, one pressed.
  await ask(shopper, "which_order", "Where is my order?");
  // The one reply the fast model words: on a busy machine it may take minutes.
  await ask(shopper, "status", opts.delivered, { button: true, expect: "delivered", timeout: 4 * TIMEOUT });
  lap("status");

  // 2. Cancel: the one order that can still be cancelled is the one asked about; the
  // reason in the shopper's own words.
  await ask(shopper, "cancel_reason", "I'd like to cancel an order");
  await ask(shopper, "cancel_confirm", "I don't need it any more");
  await shot(shopper, "cancel-confirm");
  await ask(shopper, "cancelled", "Yes", { button: true });
  lap("cancelled");

  // 3. A return, the item named.
  await ask(shopper, "return_items", "I'd like to return an item");
  await ask(shopper, "return_confirm", `the ${opts.item.toLowerCase()}`);
  await shot(shopper, "return-confirm");
  await ask(shopper, "returned", "Yes", { button: true });
  lap("returned");

  // 4. A person: the offer, the queue; what the shopper writes while queued is for them.
  await ask(shopper, "person_offer", "Can I talk to a person, please?");
  await ask(shopper, "queued", "Yes", { button: true });
  await shadowWait(shopper, `const b = root.querySelector(".handoff"); return b && !b.hidden && b.dataset.status === "queued";`);
  await look(shopper, "queued");
  await shot(shopper, "queued");
  await say(shopper, "The visor of the helmet came cracked");
  // Another test's shopper may be waiting too: this one is known by their customer id.
  const queued = agent.locator("#queue .item", { hasText: opts.as });
  await queued.waitFor();
  result.queue_item = await queued.innerText();
  await look(shopper, "queued_message", "The visor");
  lap("queued");

  // 5. The agent claims it, sees what the shopper wrote, answers.
  await queued.locator(".claim").click();
  await agent.waitForSelector("#reply-text:not([disabled])");
  await agent.waitForFunction(() =>
    [...document.querySelectorAll("#messages .msg.user .text")].some((n) => n.textContent.includes("The visor")));
  await shadowWait(shopper, `const b = root.querySelector(".handoff"); return b && b.dataset.status === "claimed";`);
  await look(shopper, "joined");
  // The shopper shows the problem: a photo, in their log and in the agent's.
  if (opts.photo) {
    await shopper.locator(`${HOST} input[type="file"]`).first().setInputFiles(opts.photo);
    await shadowWait(shopper, `const i = root.querySelector('.msg.photo[data-status="sent"] img'); return i && i.complete && i.naturalWidth > 0;`);
    await look(shopper, "photo_sent"); // the newest in the log is the photo
    await agent.waitForFunction(() => {
      const i = document.querySelector("#messages .msg.user a.photo img");
      return i && i.complete && i.naturalWidth > 0;
    });
    result.desk_photo = await agent.locator("#messages .msg.user a.photo img").evaluate((i) => i.naturalWidth);
    lap("photo");
  }
  await agent.fill("#reply-text", "So sorry about the visor! A replacement ships today; you'll get the tracking number by email.");
  await agent.press("#reply-text", "Enter");
  await shadowWait(shopper, `return [...root.querySelectorAll(".msg.agent .text")].some((n) => n.textContent.includes("replacement"));`);
  await look(shopper, "agent_reply", "replacement");
  // The desk's three columns: nothing sticks out of the column it is in.
  result.desk_cut = await agent.evaluate(() =>
    [...document.querySelectorAll(".inbox *, .chat *, .side *")]
      .filter((n) => {
        const r = n.getBoundingClientRect();
        const box = n.closest(".inbox, .chat, .side").getBoundingClientRect();
        return r.width > 0 && (r.right > box.right + 1 || r.left < box.left - 1);
      })
      .map((n) => `${n.tagName.toLowerCase()}.${n.className}: ${n.textContent.slice(0, 40)}`));
  await agent.screenshot({ path: path.join(shotsDir, "desk.png") });
  lap("agent_reply");

  // 6. Resolved: the person leaves, the rating is asked; the shopper rates.
  await agent.click("#resolve");
  await shadowWait(shopper, `return [...root.querySelectorAll(".system.handoff-note")].some((n) => /left/.test(n.textContent));`);
  await look(shopper, "resolved", "left");
  await shot(shopper, "resolved");
  await shopper.locator(`${HOST} .csat button[data-score="5"]`).click();
  await shadowWait(shopper, `return root.querySelector('.csat button[data-score="5"]').getAttribute("aria-pressed") === "true";`);
  await look(shopper, "rated");
  await shot(shopper, "walkthrough");
  lap("rated");
  result.ok = true;
} catch (e) {
  result.error = String(e && e.stack ? e.stack : e);
  try {
    if (shopperB) await shot(shopperB.page, "failed");
  } catch {
    /* the page is gone */
  }
} finally {
  await agentB?.close();
  await shopperB?.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
