// Synthetic input for the bot check: human-like sessions and scripted bot styles, as
// event lists [kind, t_ms, x, y] (kinds as in frontend/wasm/botcheck.ts). Used by the
// evaluation (bench/bot_sessions.mjs) and, as timed steps, by the browser tests
// (tests/browser/botcheck_e2e.mjs). The distributions and their sources are in
// docs/botcheck.md. Synthetic humans are a model of people, not people.
export const MOUSE = 0;
export const KEYDOWN = 1;
export const KEYUP = 2;
export const TOUCH = 3;
export const FOCUS = 4;

// Deterministic PRNG (mulberry32), so an evaluation run can be repeated exactly.
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const normal = () => {
    const u = Math.max(next(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * next());
  };
  return {
    next,
    normal,
    uniform: (lo, hi) => lo + (hi - lo) * next(),
    lognormal: (median, sigma) => median * Math.exp(sigma * normal()),
  };
}

// Minimum-jerk profile (Flash & Hogan 1985): position share at time share s.
const minJerk = (s) => 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5;

// One aimed pointer movement as samples {t, x, y}: a minimum-jerk speed profile along a
// gently curved path (lateral bow, Abend et al. 1982), duration from Fitts' law
// (MacKenzie 1992), ~60 Hz samples with frame jitter, tremor/sensor noise, and an
// occasional corrective sub-movement at the end (Meyer et al. 1988).
export function humanMove(r, from, to, t0) {
  const out = [];
  const dx = to.x - from.x;
  const dy = to.y - from.y;
  const dist = Math.hypot(dx, dy) || 1;
  const fitts = 0.15 + 0.15 * Math.log2(dist / 30 + 1); // seconds, W = 30 px
  const duration = Math.max(120, fitts * 1000 * Math.exp(0.2 * r.normal()));
  const bow = dist * r.uniform(-0.12, 0.12); // lateral deviation at mid-path
  const nx = -dy / dist;
  const ny = dx / dist;
  let t = t0;
  let aim = { x: to.x + r.normal() * 4, y: to.y + r.normal() * 4 }; // undershoot/overshoot
  while (t - t0 < duration) {
    t += Math.max(4, 16.7 + r.normal() * 2.5);
    const s = Math.min(1, (t - t0) / duration);
    const p = minJerk(s);
    const lateral = bow * Math.sin(Math.PI * p);
    out.push({
      t,
      x: from.x + (aim.x - from.x) * p + nx * lateral + r.normal() * 0.8,
      y: from.y + (aim.y - from.y) * p + ny * lateral + r.normal() * 0.8,
    });
  }
  if (r.next() < 0.6) {
    // Corrective sub-movement from where the primary one landed.
    const start = { x: aim.x, y: aim.y };
    aim = { x: to.x, y: to.y };
    const d2 = Math.max(60, 200 * Math.exp(0.3 * r.normal()));
    const t1 = t + r.lognormal(60, 0.4);
    t = t1;
    while (t - t1 < d2) {
      t += Math.max(4, 16.7 + r.normal() * 2.5);
      const p = minJerk(Math.min(1, (t - t1) / d2));
      out.push({
        t,
        x: start.x + (aim.x - start.x) * p + r.normal() * 0.6,
        y: start.y + (aim.y - start.y) * p + r.normal() * 0.6,
      });
    }
  }
  return out;
}

// Human typing: log-normal inter-key intervals (Dhakal et al. 2018: mean IKI ~239 ms
// across 168,000 typists, right-skewed), per-typist median and spread, longer gaps at
// word boundaries, rare thinking pauses; key holds ~60-150 ms (Killourhy & Maxion 2009).
export function humanTyping(r, text, t0, typist) {
  const ty = typist || { median: r.uniform(130, 330), sigma: r.uniform(0.35, 0.65), hold: r.uniform(70, 130) };
  const out = [];
  let t = t0;
  for (let i = 0; i <= text.length; i += 1) {
    let gap = r.lognormal(ty.median, ty.sigma);
    if (i > 0 && text[i - 1] === " ") gap *= 1.3;
    if (r.next() < 0.04) gap += r.lognormal(900, 0.5);
    t += gap;
    const hold = Math.max(25, ty.hold + r.normal() * 20);
    out.push({ t, hold }); // the last one is Enter
  }
  return out;
}

// Scripted typing: a fixed delay with scheduler jitter of ~1 ms, keys released at once.
export function constantTyping(r, text, t0, delay) {
  const out = [];
  let t = t0;
  for (let i = 0; i <= text.length; i += 1) {
    t += delay + r.normal() * 0.8;
    out.push({ t, hold: Math.abs(r.normal()) * 0.5 });
  }
  return out;
}

// A straight line in equal steps at a fixed rate (e.g. Playwright's mouse.move steps).
export function linearMove(r, from, to, t0, steps, stepMs) {
  const out = [];
  for (let i = 1; i <= steps; i += 1) {
    const s = i / steps;
    out.push({ t: t0 + i * stepMs + r.normal() * 0.3, x: from.x + (to.x - from.x) * s, y: from.y + (to.y - from.y) * s });
  }
  return out;
}

const keysToEvents = (keys) =>
  keys.flatMap((k) => [
    [KEYDOWN, k.t, 0, 0],
    [KEYUP, k.t + k.hold, 0, 0],
  ]);
const moveToEvents = (moves, kind = MOUSE) => moves.map((m) => [kind, m.t, m.x, m.y]);
const byTime = (events) => events.sort((a, b) => a[1] - b[1]);
const lastT = (list) => (list.length ? list[list.length - 1].t : 0);

// Where things are on a 1280x800 page: the launcher, the text box, the send button.
const INPUT = { x: 1080, y: 720 };

export const HUMAN_KINDS = ["mouse_typing", "keyboard_only", "touch", "mouse_paste"];

// One human-like message: returns the events the widget would have collected.
export function humanSession(r, text, kind) {
  const t0 = r.uniform(500, 4000);
  const events = [];
  if (kind === "touch") {
    // A phone: a scroll or two (touch moves), a tap on the box, the on-screen keyboard.
    let t = t0;
    for (let s = 0; s < 1 + Math.floor(r.next() * 3); s += 1) {
      const start = { x: r.uniform(60, 330), y: r.uniform(400, 700) };
      const end = { x: start.x + r.normal() * 15, y: start.y - r.uniform(120, 350) };
      events.push(...moveToEvents(humanMove(r, start, end, t), TOUCH));
      t = lastT(humanMove(r, start, end, t)) + r.lognormal(500, 0.5);
    }
    const keys = humanTyping(r, text, t + 300, { median: r.uniform(180, 380), sigma: r.uniform(0.35, 0.6), hold: r.uniform(50, 100) });
    events.push(...keysToEvents(keys));
    return byTime(events);
  }
  let t = t0;
  if (kind !== "keyboard_only") {
    // Wander on the page, then aim for the chat box.
    let at = { x: r.uniform(100, 1100), y: r.uniform(100, 600) };
    const hops = 1 + Math.floor(r.next() * 3);
    for (let h = 0; h < hops; h += 1) {
      const to = h === hops - 1 ? INPUT : { x: r.uniform(80, 1200), y: r.uniform(80, 700) };
      const moves = humanMove(r, at, to, t);
      events.push(...moveToEvents(moves));
      t = lastT(moves) + r.lognormal(350, 0.6);
      at = to;
    }
  }
  events.push([FOCUS, t, 0, 0]);
  if (kind === "mouse_paste") {
    events.push([KEYDOWN, t + 200, 0, 0], [KEYDOWN, t + 320, 0, 0], [KEYUP, t + 410, 0, 0], [KEYDOWN, t + 900, 0, 0]);
  } else {
    events.push(...keysToEvents(humanTyping(r, text, t + r.lognormal(400, 0.4))));
  }
  return byTime(events);
}

export const BOT_STYLES = [
  "constant_typing", // types at a fixed delay, never moves the mouse
  "linear_mouse_uniform_typing", // straight-line mouse in equal steps + fixed delay
  "fill_and_click", // sets the text by script, one move to the send button
  "jitter_typing_linear_mouse", // uniform random delay +-20 ms, straight mouse with 1 px noise
  "bezier_mouse_constant_typing", // a curved path at constant speed + fixed delay
  "gaussian_typing_teleport", // N(120, 12) ms delays, the pointer jumps to the box
];

// Bots built to evade this check (human-like key rhythm), reported apart from the
// headline figures in docs/botcheck.md: they show where the check stops working.
export const ADAPTIVE_STYLES = [
  "adaptive_lognormal_keys_no_mouse", // human typing model, no pointer at all
  "adaptive_lognormal_keys_linear_mouse", // human typing model + a straight-line mouse
];

// One scripted message in the given style.
export function botSession(r, text, style) {
  const t0 = r.uniform(100, 1000);
  const events = [];
  const delay = r.uniform(40, 160);
  const start = { x: r.uniform(0, 800), y: r.uniform(0, 500) };
  switch (style) {
    case "constant_typing":
      events.push([FOCUS, t0, 0, 0], ...keysToEvents(constantTyping(r, text, t0, delay)));
      break;
    case "linear_mouse_uniform_typing": {
      const moves = linearMove(r, start, INPUT, t0, 10 + Math.floor(r.next() * 30), r.uniform(5, 20));
      events.push(...moveToEvents(moves), ...keysToEvents(constantTyping(r, text, lastT(moves) + 50, delay)));
      break;
    }
    case "fill_and_click":
      events.push([MOUSE, t0, 1240, 760], [FOCUS, t0 + 5, 0, 0]);
      break;
    case "jitter_typing_linear_mouse": {
      const moves = linearMove(r, start, INPUT, t0, 20 + Math.floor(r.next() * 20), r.uniform(8, 20)).map((m) => ({
        t: m.t,
        x: m.x + r.uniform(-1, 1),
        y: m.y + r.uniform(-1, 1),
      }));
      const keys = [];
      let t = lastT(moves) + 50;
      for (let i = 0; i <= text.length; i += 1) {
        t += delay + r.uniform(-20, 20);
        keys.push({ t, hold: r.uniform(0, 3) });
      }
      events.push(...moveToEvents(moves), ...keysToEvents(keys));
      break;
    }
    case "bezier_mouse_constant_typing": {
      const c = { x: r.uniform(0, 1280), y: r.uniform(0, 800) };
      const moves = [];
      const steps = 30 + Math.floor(r.next() * 30);
      const stepMs = r.uniform(8, 16);
      for (let i = 1; i <= steps; i += 1) {
        const s = i / steps;
        const x = (1 - s) ** 2 * start.x + 2 * (1 - s) * s * c.x + s * s * INPUT.x;
        const y = (1 - s) ** 2 * start.y + 2 * (1 - s) * s * c.y + s * s * INPUT.y;
        moves.push({ t: t0 + i * stepMs, x, y });
      }
      events.push(...moveToEvents(moves), ...keysToEvents(constantTyping(r, text, lastT(moves) + 50, delay)));
      break;
    }
    case "gaussian_typing_teleport": {
      events.push([MOUSE, t0, start.x, start.y], [MOUSE, t0 + 1, INPUT.x, INPUT.y]);
      const keys = [];
      let t = t0 + 30;
      for (let i = 0; i <= text.length; i += 1) {
        t += Math.max(5, 120 + r.normal() * 12);
        keys.push({ t, hold: r.uniform(0, 2) });
      }
      events.push(...keysToEvents(keys));
      break;
    }
    case "adaptive_lognormal_keys_no_mouse":
      events.push([FOCUS, t0, 0, 0], ...keysToEvents(humanTyping(r, text, t0 + 50)));
      break;
    case "adaptive_lognormal_keys_linear_mouse": {
      const moves = linearMove(r, start, INPUT, t0, 20 + Math.floor(r.next() * 20), r.uniform(8, 20));
      events.push(...moveToEvents(moves), ...keysToEvents(humanTyping(r, text, lastT(moves) + 50)));
      break;
    }
    default:
      throw new Error(`unknown bot style ${style}`);
  }
  return byTime(events);
}

export const QUESTIONS = [
  "where is my order #W2611340?",
  "how long does delivery take to Canada",
  "can I change the address on my order",
  "what is your return policy for boots",
  "I want to cancel my order please",
  "do you ship to Germany and how much does it cost",
  "my package says delivered but I never got it",
  "which size should I pick for the hiking jacket",
  "refund status for order #W4817420",
  "yes",
];
