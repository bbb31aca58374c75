// A shopper attaches photos in the widget and an agent sees them at /desk/, in two real
// Chromium contexts against one Daphne server (tests/browser/test_attach_browser.py).
// The shopper asks for a person, starts typing, picks a text file named .png (refused,
// in words, their typing kept), then a photo; the agent claims the conversation and
// sees it; a second photo reaches the open desk live. Prints one JSON object.
//
//   node tests/browser/attach_e2e.mjs --base URL --agent NAME --password PW \
//        --photo a.jpg --photo2 b.png --not-photo notes.png [--width 390 --height 844]
//        [--widget-screenshot w.png] [--desk-screenshot d.png]
import { parseArgs } from "node:util";

import {
  HOST,
  launch as chromiumLaunch,
  shadow,
  shadowWait as chromiumShadowWait,
  shoppersQueueItem,
} from "./chromium.mjs";

const { values: opts } = parseArgs({
  options: {
    base: { type: "string" },
    scenario: { type: "string", default: "" },
    agent: { type: "string" },
    password: { type: "string" },
    photo: { type: "string" },
    photo2: { type: "string" },
    "not-photo": { type: "string" },
    width: { type: "string", default: "1280" },
    height: { type: "string", default: "800" },
    "widget-screenshot": { type: "string", default: "" },
    "desk-screenshot": { type: "string", default: "" },
    "timeout-ms": { type: "string", default: "30000" },
  },
});
const TIMEOUT = Number(opts["timeout-ms"]);
const DRAFT = "The box was crushed on one side";

const launch = (viewport) => chromiumLaunch(viewport, { timeout: TIMEOUT });
const shadowWait = (page, src, arg) => chromiumShadowWait(page, src, arg, { timeout: TIMEOUT });

const result = { ok: false, steps: [], errors: [] };

// Nobody online: the ticket form takes a photo too. A text file named .png is refused
// inside the form (what was typed stays); the photo shows as a thumbnail and goes with
// the ticket.
async function ticketScenario(shopper) {
  await shopper.goto(`${opts.base}/`);
  await shopper.locator(`${HOST} .launcher`).click();
  await shopper.waitForSelector(`${HOST}[data-state="open"]`);
  const input = shopper.locator(`${HOST} textarea`).first();
  await input.fill("My parcel came crushed, can I speak to someone?");
  await input.press("Enter");
  for (let i = 0; i < 200; i += 1) {
    const state = await shadow(shopper, `return root.querySelector("form.ticket") ? "form" : root.querySelectorAll(".actions button").length ? "offer" : "";`);
    if (state === "form") break;
    if (state === "offer") await shopper.locator(`${HOST} .actions button`).first().click();
    await shopper.waitForTimeout(150);
  }
  await shadowWait(shopper, `return root.querySelector("form.ticket");`);
  const question = shopper.locator(`${HOST} form.ticket textarea`);
  await question.fill("The box came crushed; photo attached.");
  const picker = shopper.locator(`${HOST} form.ticket input[type="file"]`);
  await picker.setInputFiles(opts["not-photo"]);
  await shadowWait(shopper, `const e = root.querySelector("form.ticket .ticket-photo-error"); return e && !e.hidden;`);
  result.ticket_refused = await shadow(shopper, `return root.querySelector("form.ticket .ticket-photo-error").textContent;`);
  result.ticket_question_kept = await question.inputValue();
  await picker.setInputFiles(opts.photo);
  await shadowWait(shopper, `const i = root.querySelector("form.ticket .ticket-photos img"); return i && i.complete && i.naturalWidth > 0;`);
  await shopper.locator(`${HOST} form.ticket button[type="submit"]`).click();
  await shadowWait(shopper, `return root.querySelector(".ticket-done");`);
  step("ticket_with_photo");
}
const step = (name) => result.steps.push(name);
let agentB, shopperB;
try {
  const started = Date.now();
  agentB = await launch({ width: 1400, height: 860 });
  shopperB = await launch({ width: Number(opts.width), height: Number(opts.height) });
  const agent = agentB.page;
  const shopper = shopperB.page;
  for (const [who, page] of [["agent", agent], ["shopper", shopper]]) {
    page.on("pageerror", (e) => result.errors.push(`${who}: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error" && !/Failed to load resource/.test(m.text())) result.errors.push(`${who}: ${m.text()}`);
    });
    // The refused upload answers 400 on purpose; anything else failing is an error.
    page.on("response", (r) => {
      if (r.status() >= 400 && !/favicon\.ico$/.test(r.url()) && !(r.status() === 400 && /\/attachments\/$/.test(r.url())))
        result.errors.push(`${who}: ${r.status()} ${r.url()}`);
    });
  }

  if (opts.scenario === "ticket") {
    await ticketScenario(shopper);
    throw null; // done: skip the desk part
  }
  await agent.goto(`${opts.base}/admin/login/?next=/desk/`);
  await agent.fill("#id_username", opts.agent);
  await agent.fill("#id_password", opts.password);
  await Promise.all([agent.waitForURL(/\/desk\/$/), agent.click('input[type="submit"]')]);
  await agent.waitForSelector("#conn.live");
  step("desk_live");

  // The shopper asks for a person.
  await shopper.goto(`${opts.base}/`);
  await shopper.locator(`${HOST} .launcher`).click();
  await shopper.waitForSelector(`${HOST}[data-state="open"]`);
  const input = shopper.locator(`${HOST} textarea`);
  await input.fill("I want to talk to a human");
  await input.press("Enter");
  await shadowWait(shopper, `return root.querySelectorAll(".actions button").length > 0;`);
  await shopper.locator(`${HOST} .actions button`).first().click();
  await shadowWait(shopper, `const b = root.querySelector(".handoff"); return b && b.dataset.status === "queued";`);
  step("queued");

  // The paperclip is there, in view, next to the message box.
  const clip = shopper.locator(`${HOST} button.attach`);
  const box = await clip.boundingBox();
  result.clip_in_view = !!box && box.x >= 0 && box.y >= 0 && box.x + box.width <= Number(opts.width) && box.y + box.height <= Number(opts.height);
  result.clip_label = await clip.getAttribute("aria-label");

  // Typing, then a text file named .png: refused in words, the typing kept.
  await input.fill(DRAFT);
  const picker = shopper.locator(`${HOST} input[type="file"]`).first();
  await picker.setInputFiles(opts["not-photo"]);
  await shadowWait(shopper, `return root.querySelector(".system.photo-error");`);
  result.refused_text = await shadow(shopper, `return root.querySelector(".system.photo-error").textContent;`);
  result.draft_after_refusal = await input.inputValue();
  step("refused");

  // The photo: shown at once, then as stored (its own signed link).
  await picker.setInputFiles(opts.photo);
  await shadowWait(shopper, `const i = root.querySelector('.msg.photo[data-status="sent"] img'); return i && i.complete && i.naturalWidth > 0;`);
  result.shopper_photo_src = await shadow(shopper, `return root.querySelector('.msg.photo[data-status="sent"] img').getAttribute("src");`);
  result.draft_after_photo = await input.inputValue();
  step("photo_sent");

  // The agent claims the conversation and sees the photo, from the desk's own link.
  await (await shoppersQueueItem(agent, shopper)).locator(".claim").click();
  await agent.waitForSelector("#reply-text:not([disabled])");
  await agent.waitForFunction(() => {
    const i = document.querySelector("#messages .msg.user a.photo img");
    return i && i.complete && i.naturalWidth > 0;
  });
  result.desk_photo_href = await agent.locator("#messages a.photo").first().getAttribute("href");
  step("agent_sees_photo");

  // A second photo reaches the open desk live.
  await picker.setInputFiles(opts.photo2);
  await agent.waitForFunction(() => {
    const imgs = [...document.querySelectorAll("#messages .msg.user a.photo img")];
    return imgs.length === 2 && imgs.every((i) => i.complete && i.naturalWidth > 0);
  });
  step("agent_sees_second_photo_live");
  await agent.fill("#reply-text", "Thanks for the photos. I can see the damage: a replacement ships today.");
  await agent.press("#reply-text", "Enter");
  await shadowWait(shopper, `return [...root.querySelectorAll(".msg.agent .text")].some((n) => n.textContent.includes("photos"));`);
  // The shopper, who never scrolled up, sees the reply: no "New message" below.
  // Polled for a few seconds: the scroll is smooth, and on a loaded machine it ends late.
  result.widget_at_end = await shadowWait(
    shopper,
    `const l = root.querySelector(".log"); return l.scrollHeight - l.scrollTop - l.clientHeight < 48 && root.querySelector(".new-below").hidden;`,
    undefined,
    { timeout: 5000 },
  ).catch(() => false);
  // The draft is still there to send.
  result.draft_at_end = await input.inputValue();
  result.scenario_s = (Date.now() - started) / 1000;

  // Not for anyone else: the desk's link without an agent's session is the login page.
  const anonymous = await shopper.request.get(`${opts.base}${result.desk_photo_href}`, { maxRedirects: 0 });
  result.desk_link_anonymous_status = anonymous.status();
  if (opts["widget-screenshot"]) await shopper.screenshot({ path: opts["widget-screenshot"] });
  if (opts["desk-screenshot"]) await agent.screenshot({ path: opts["desk-screenshot"] });

  // A reload shows the shopper's photos from the history.
  await shopper.reload();
  await shopper.waitForSelector(`${HOST}[data-state="open"]`);
  await shadowWait(shopper, `const i = [...root.querySelectorAll(".msg.photo img")]; return i.length === 2 && i.every((x) => x.complete && x.naturalWidth > 0);`);
  step("history_after_reload");
  result.ok = true;
} catch (e) {
  if (e === null) result.ok = true;
  else result.error = String(e && e.stack ? e.stack : e);
} finally {
  await agentB?.close();
  await shopperB?.close();
}
console.log(JSON.stringify(result));
process.exit(result.ok ? 0 : 1);
