// Generates the evaluation's sessions (make eval-bot): N human-like and N scripted
// messages per kind/style, runs each through the committed botcheck.wasm with a fresh
// nonce, and prints one JSON line per message for bench/eval_bot.py to verify and score.
//   node bench/bot_sessions.mjs [--per-kind 60] [--seed 7]
import crypto from "node:crypto";
import { parseArgs } from "node:util";

import { loadBotcheck } from "./bot_wasm.mjs";
import { ADAPTIVE_STYLES, BOT_STYLES, HUMAN_KINDS, QUESTIONS, botSession, humanSession, rng } from "./bot_synthetic.mjs";

const { values } = parseArgs({ options: { "per-kind": { type: "string", default: "60" }, seed: { type: "string", default: "7" } } });
const perKind = Number(values["per-kind"]);
const r = rng(Number(values.seed));
const bc = loadBotcheck();
const emit = (label, kind, events, text) => {
  const nonce = crypto.randomBytes(16).toString("hex");
  const f = bc.features(events);
  process.stdout.write(`${JSON.stringify({ label, kind, text, nonce, seq: 1, f, fp: bc.sign(f, nonce, 1, text) })}\n`);
};
// Humans: 70% mouse + typing, 10% keyboard only, 12% phone, 8% mouse + paste.
const humanShare = { mouse_typing: 0.7, keyboard_only: 0.1, touch: 0.12, mouse_paste: 0.08 };
const humans = perKind * BOT_STYLES.length;
for (const kind of HUMAN_KINDS) {
  for (let i = 0; i < Math.round(humans * humanShare[kind]); i += 1) {
    const text = QUESTIONS[Math.floor(r.next() * (QUESTIONS.length - 1))];
    emit("human", kind, humanSession(r, text, kind), text);
  }
}
for (const style of BOT_STYLES) {
  for (let i = 0; i < perKind; i += 1) {
    const text = QUESTIONS[Math.floor(r.next() * (QUESTIONS.length - 1))];
    emit("bot", style, botSession(r, text, style), text);
  }
}
for (const style of ADAPTIVE_STYLES) {
  for (let i = 0; i < perKind; i += 1) {
    const text = QUESTIONS[Math.floor(r.next() * (QUESTIONS.length - 1))];
    emit("adaptive", style, botSession(r, text, style), text);
  }
}
