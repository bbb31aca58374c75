// The committed bot-check module, loaded in Node exactly as the widget loads it.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const WASM_PATH = path.join(HERE, "..", "frontend", "static", "tierdesk", "botcheck.wasm");

export function loadBotcheck(file = WASM_PATH) {
  const module = new WebAssembly.Module(fs.readFileSync(file));
  const w = new WebAssembly.Instance(module, { env: { abort: () => { throw new Error("abort"); } } }).exports;
  const features = (events) => {
    w.reset();
    for (const [k, t, x, y] of events) w.push(k, t, x, y);
    const n = w.compute();
    return Array.from({ length: n }, (_, i) => w.feature(i));
  };
  const sign = (f, nonceHex, seq, text) => {
    for (let i = 0; i < 16; i += 1) w.setNonce(i, parseInt(nonceHex.substr(i * 2, 2), 16));
    f.forEach((v, i) => w.setFeature(i, v));
    w.signBegin(seq);
    for (let i = 0; i < text.length; i += 1) w.signChar(text.charCodeAt(i));
    w.signEnd();
    const hex = (v) => (v >>> 0).toString(16).padStart(8, "0");
    return hex(w.digestHi()) + hex(w.digestLo());
  };
  return { features, sign };
}

// CLI: one JSON object per stdin line {events, nonce, seq, text} -> {f, fp} per line.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const bc = loadBotcheck(process.argv[2] || WASM_PATH);
  const input = fs.readFileSync(0, "utf8");
  for (const line of input.split("\n")) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    const f = bc.features(req.events);
    process.stdout.write(`${JSON.stringify({ f, fp: bc.sign(f, req.nonce, req.seq, req.text) })}\n`);
  }
}
