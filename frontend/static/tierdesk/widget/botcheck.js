/*
 * Tierdesk widget: the behavioural bot check's client side (docs/botcheck.md).
 */
// botcheck.wasm sits beside widget.js, one folder up from this module.
const WASM_URL = new URL("../botcheck.wasm", import.meta.url).href;

// Per message, the widget keeps pointer positions with timestamps, the times of key
// presses and releases (never which key), touch moves and focus/visibility changes,
// in memory only. At send, botcheck.wasm turns them into a feature vector and a
// fingerprint bound to the connection's nonce; the events are then dropped. Only the
// vector and the fingerprint leave the browser.
const EV_MOUSE = 0;
export const EV_KEYDOWN = 1;
export const EV_KEYUP = 2;
const EV_TOUCH = 3;
export const EV_FOCUS = 4;
const EV_CAP = 4096; // the module's buffer; older events go first
export const botcheck = {
  events: [],
  wasm: null,
  ready: null,
  failed: false,
  error: "",
  record(kind, t, x = 0, y = 0) {
    const ev = this.events;
    if (ev.length >= EV_CAP) ev.splice(0, EV_CAP / 4);
    ev.push([kind, t, x, y]);
  },
  load() {
    if (!this.ready) {
      this.ready = (WASM_URL ? fetch(WASM_URL) : Promise.reject(new Error("no script URL")))
        .then((r) => (r.ok ? r.arrayBuffer() : Promise.reject(new Error(`wasm ${r.status}`))))
        .then((bytes) =>
          WebAssembly.instantiate(bytes, {
            env: {
              abort() {
                throw new Error("botcheck.wasm aborted");
              },
            },
          }),
        )
        .then(({ instance }) => {
          this.wasm = instance.exports;
          return this.wasm;
        })
        .catch((err) => {
          // Said once, with the URL and the cause: a shop page on another origin whose
          // server sends no Access-Control-Allow-Origin for the static files shows up
          // here as a failed fetch. What the widget does next depends on the server's
          // mode (frames.js, _sendMessage): unsigned in monitor, not sent otherwise.
          this.failed = true;
          this.error = String((err && err.message) || err);
          console.error(
            `tierdesk-chat: the bot-check module did not load from ${WASM_URL} (${this.error}). ` +
              "A server that checks messages (TIERDESK_BOTCHECK challenge or enforce) refuses them without it: " +
              "serve botcheck.wasm beside widget.js, with Access-Control-Allow-Origin for this page's origin (docs/widget.md).",
          );
          return null;
        });
    }
    return this.ready;
  },
  // The events since the last call, as a feature vector (integers, milli-units).
  take() {
    const w = this.wasm;
    const ev = this.events;
    this.events = [];
    if (!w) return null;
    w.reset();
    for (const [k, t, x, y] of ev) w.push(k, t, x, y);
    const n = w.compute();
    const f = [];
    for (let i = 0; i < n; i += 1) f.push(w.feature(i));
    return f;
  },
  sign(f, nonceHex, seq, text) {
    const w = this.wasm;
    if (!w || !f || !nonceHex) return null;
    for (let i = 0; i < 16; i += 1) w.setNonce(i, parseInt(nonceHex.substr(i * 2, 2), 16));
    f.forEach((v, i) => w.setFeature(i, v));
    w.signBegin(seq);
    for (let i = 0; i < text.length; i += 1) w.signChar(text.charCodeAt(i));
    w.signEnd();
    const hex = (v) => (v >>> 0).toString(16).padStart(8, "0");
    return { v: 1, seq, f, fp: hex(w.digestHi()) + hex(w.digestLo()) };
  },
  listen() {
    if (this.listening) return;
    this.listening = true;
    const opts = { capture: true, passive: true };
    document.addEventListener("mousemove", (e) => this.record(EV_MOUSE, e.timeStamp, e.clientX, e.clientY), opts);
    document.addEventListener(
      "touchmove",
      (e) => {
        const p = e.touches && e.touches[0];
        if (p) this.record(EV_TOUCH, e.timeStamp, p.clientX, p.clientY);
      },
      opts,
    );
    document.addEventListener("visibilitychange", (e) => this.record(EV_FOCUS, e.timeStamp), opts);
    window.addEventListener("focus", (e) => this.record(EV_FOCUS, e.timeStamp), opts);
    window.addEventListener("blur", (e) => this.record(EV_FOCUS, e.timeStamp), opts);
  },
};
