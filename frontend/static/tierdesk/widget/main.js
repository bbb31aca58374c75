/*
 * Tierdesk widget: the <tierdesk-chat> custom element, its lifecycle, outbox and
 * public API; widget.js loads this module. docs/widget.md.
 */
import { botcheck } from "./botcheck.js";
import { connection } from "./connection.js";
import { store } from "./dom.js";
import { frames } from "./frames.js";
import { handoff } from "./handoff.js";
import { photos } from "./photos.js";
import { rendering } from "./rendering.js";
import { streaming } from "./streaming.js";
import { STRINGS } from "./strings.js";

class TierdeskChat extends HTMLElement {
  static get observedAttributes() {
    return ["lang", "token", "endpoint"];
  }

  constructor() {
    super();
    this._ws = null;
    this._state = "idle";
    this._attempt = 0;
    this._retryTimer = null;
    this._pingTimer = null;
    this._pongTimer = null;
    this._helloSeen = false; // on the current socket
    this._pending = new Map(); // client id -> {text, node}: sent, not acked yet
    this._ops = []; // render queue, drained on the pacing timer
    this._pumpTimer = null;
    this._bot = null; // bot bubble being written
    this._pacingMs = 50;
    this._limits = { max_message_chars: 2000 };
    this._blockedUntil = 0;
    this._built = false;
    this._bc = null; // this socket's bot check: {nonce, seq}, from hello

  }

  // --- lifecycle ------------------------------------------------------------------

  connectedCallback() {
    if (!this._built) this._build();
    botcheck.listen();
    botcheck.load();
    this._setState(this._ws ? this._state : "idle");
    this._onOnline = () => this._ws || ["idle", "refused"].includes(this._state) || this._reconnectNow();
    window.addEventListener("online", this._onOnline);
    let wasOpen = false;
    try {
      wasOpen = sessionStorage.getItem(this._key("open")) === "1";
    } catch {
      /* no storage */
    }
    this._restoreOutbox();
    if (this.hasAttribute("open") || wasOpen) this.open({ focus: false });
  }

  // --- outbox: messages typed but not acked survive a reload -------------------------
  // Without it, a shopper who reloads while the server is down (or before the ack)
  // loses what they typed, though the bubble said "not sent yet". Each message keeps
  // its client id, so a resend after the reload is still stored at most once.

  _saveOutbox() {
    // The bot-check features go along: the behaviour that preceded the message is its
    // evidence, signed again with the nonce of whichever socket sends it.
    const items = [...this._pending].map(([id, p]) => ({ id, text: p.text, f: p.f || null }));
    if (items.length) store.set(this._key("outbox"), JSON.stringify(items));
    else store.remove(this._key("outbox"));
  }

  _restoreOutbox() {
    if (this._pending.size) return;
    let items = [];
    try {
      items = JSON.parse(store.get(this._key("outbox")) || "[]");
    } catch {
      items = [];
    }
    for (const item of Array.isArray(items) ? items : []) {
      if (!item || typeof item.id !== "string" || typeof item.text !== "string") continue;
      const node = this._userBubble(item.text, { "data-client-id": item.id, "data-status": "pending" });
      this._note(node, this._t.notSent);
      const f = Array.isArray(item.f) && item.f.every(Number.isInteger) ? item.f : null;
      this._pending.set(item.id, { text: item.text, node, f });
      this._append(node);
    }
  }

  disconnectedCallback() {
    window.removeEventListener("online", this._onOnline);
    this._teardown();
    clearTimeout(this._pumpTimer);
    this._pumpTimer = null;
  }

  attributeChangedCallback(name, oldValue, value) {
    if (!this._built || oldValue === value) return;
    if (name === "lang") this._label();
    else if (name === "token" && value && this._helloSeen) this._send({ type: "identify", token: value });
    else if (name === "endpoint" && (this._ws || this._state === "refused")) this._reconnectNow();
  }

  // --- public API -------------------------------------------------------------------

  open({ focus = true } = {}) {
    this._panel.hidden = false;
    this._launcher.setAttribute("aria-expanded", "true");
    this._launcher.classList.remove("unread");
    this.setAttribute("data-open", "");
    this._remember("1");
    if (!this._ws && this._state === "idle") this._connect();
    this._scrollToEnd(true);
    if (focus) this._input.focus();
  }

  close() {
    this._panel.hidden = true;
    this._launcher.setAttribute("aria-expanded", "false");
    this.removeAttribute("data-open");
    this._remember("0");
    this._launcher.focus();
  }

  get isOpen() {
    return !this._panel.hidden;
  }

  // The conversation's language once the server has said it (hello, done, handoff), else
  // the widget's lang attribute, else the page's: a Chinese shopper on an English shop
  // gets Chinese buttons and forms next to the Chinese replies.
  get _t() {
    const lang = (this._convLang || this.getAttribute("lang") || document.documentElement.lang || "en").toLowerCase();
    return lang.startsWith("zh") ? STRINGS.zh : STRINGS.en;
  }
}

// Each concern's methods live in their own module; they become the class's own
// (non-enumerable, as class methods are).
for (const methods of [rendering, connection, frames, streaming, handoff, photos]) {
  for (const [name, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(methods))) {
    Object.defineProperty(TierdeskChat.prototype, name, { ...descriptor, enumerable: false });
  }
}

if (!customElements.get("tierdesk-chat")) customElements.define("tierdesk-chat", TierdeskChat);
