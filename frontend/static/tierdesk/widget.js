/*
 * Tierdesk chat widget: <tierdesk-chat>, a dependency-free custom element.
 *
 * Embed:  <script src="/static/tierdesk/widget.js" defer></script>
 *         <tierdesk-chat token="..." lang="en"></tierdesk-chat>
 *
 * Client side of docs/protocol.md. docs/widget.md lists the attributes, what is kept
 * in localStorage and the accessibility notes. Test hooks: the host's data-state
 * (idle|connecting|open|reconnecting|refused), data-tier/data-status/data-chunks on bot bubbles.
 *
 * The file is plain ASCII (other text as \u escapes) so it works whatever charset a
 * shop serves it with.
 */
(() => {
  "use strict";
  if (customElements.get("tierdesk-chat")) return;

  // widget.css sits beside this file; resolved now, while currentScript is set.
  const SCRIPT_SRC = (document.currentScript && document.currentScript.src) || "";
  const CSS_URL = SCRIPT_SRC ? new URL("widget.css", SCRIPT_SRC).href : "";
  const WASM_URL = SCRIPT_SRC ? new URL("botcheck.wasm", SCRIPT_SRC).href : "";

  // --- bot check (docs/botcheck.md) ---------------------------------------------------
  // Per message, the widget keeps pointer positions with timestamps, the times of key
  // presses and releases (never which key), touch moves and focus/visibility changes,
  // in memory only. At send, botcheck.wasm turns them into a feature vector and a
  // fingerprint bound to the connection's nonce; the events are then dropped. Only the
  // vector and the fingerprint leave the browser.
  const EV_MOUSE = 0;
  const EV_KEYDOWN = 1;
  const EV_KEYUP = 2;
  const EV_TOUCH = 3;
  const EV_FOCUS = 4;
  const EV_CAP = 4096; // the module's buffer; older events go first
  const botcheck = {
    events: [],
    wasm: null,
    ready: null,
    failed: false,
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
          .catch(() => {
            this.failed = true; // without it messages go unsigned; the server decides
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

  const STRINGS = {
    en: {
      title: "Customer service",
      open: "Open chat",
      close: "Close chat",
      input: "Your message",
      placeholder: "Ask about an order, delivery, returns\u2026",
      send: "Send",
      log: "Conversation",
      connecting: "Connecting\u2026",
      reconnecting: "Reconnecting\u2026",
      refused: "Chat isn't available on this page.",
      cutOff: "reply was cut off",
      failed: "reply failed",
      notSent: "sending\u2026",
      retryIn: (s) => `Try again in ${s} s.`,
      busy: (n) => `We're busy right now: you are number ${n} in line. Your messages are saved and answered in turn.`,
      busyLoad: "We're busy right now: your message is saved and answered in a moment.",
      confirmHuman: "Send my message",
      yes: "Yes",
      no: "No",
      tiers: { L1: "fast", L2: "knowledge", L3: "expert", clarify: "clarifying" },
      sources: (n) => `Sources (${n})`,
      tip: (f) =>
        [
          f.intent && `intent: ${f.intent}`,
          f.model && `model: ${f.model}`,
          f.first_chunk_ms != null && `first chunk: ${Math.round(f.first_chunk_ms)} ms`,
          f.fallback && `fallback: ${f.fallback.reason || "yes"}`,
        ]
          .filter(Boolean)
          .join(" \u00b7 "),
      greeting: "Hi! Ask me about your orders, delivery, returns or our products.",
      rateReply: "Was this helpful?",
      up: "Helpful",
      down: "Not helpful",
      rateChat: "How did we do?",
      score: (n) => `${n} of 5`,
      // Human handoff (docs/desk.md).
      queued: (pos, min) =>
        `A person from our support team will answer here. You're number ${pos} in the queue (about ${min} min).`,
      joined: (name) => `${name} from our support team has joined the chat.`,
      left: (name) => `${name} has left the chat; the assistant answers again.`,
      typing: (name) => `${name} is typing\u2026`,
      agentLabel: (name) => `${name} \u00b7 support team`,
      ticketIntro: "Leave your email and question; we'll answer by email.",
      ticketEmail: "Your email",
      ticketQuestion: "Your question",
      ticketSend: "Send",
      ticketDone: "Thanks! We've got your question and will answer by email.",
      ticketBad: "Please enter a valid email address and your question.",
      rateChatPerson: (name) => `How did ${name} do?`,
    },
    zh: {
      title: "\u5728\u7ebf\u5ba2\u670d",
      open: "\u6253\u5f00\u804a\u5929",
      close: "\u5173\u95ed\u804a\u5929",
      input: "\u8f93\u5165\u6d88\u606f",
      placeholder: "\u54a8\u8be2\u8ba2\u5355\u3001\u914d\u9001\u3001\u9000\u8d27\u2026\u2026",
      send: "\u53d1\u9001",
      log: "\u5bf9\u8bdd\u8bb0\u5f55",
      connecting: "\u6b63\u5728\u8fde\u63a5\u2026",
      reconnecting: "\u6b63\u5728\u91cd\u65b0\u8fde\u63a5\u2026",
      refused: "\u6b64\u9875\u9762\u65e0\u6cd5\u4f7f\u7528\u5728\u7ebf\u5ba2\u670d\u3002",
      cutOff: "\u56de\u590d\u88ab\u4e2d\u65ad",
      failed: "\u56de\u590d\u5931\u8d25",
      notSent: "\u53d1\u9001\u4e2d\u2026",
      retryIn: (s) => `\u8bf7 ${s} \u79d2\u540e\u518d\u8bd5\u3002`,
      busy: (n) => `\u5f53\u524d\u54a8\u8be2\u4eba\u6570\u8f83\u591a\uff0c\u60a8\u6392\u5728\u7b2c ${n} \u4f4d\u3002\u6d88\u606f\u5df2\u4fdd\u5b58\uff0c\u5c06\u6309\u987a\u5e8f\u56de\u590d\u3002`,
      busyLoad: "\u5f53\u524d\u54a8\u8be2\u4eba\u6570\u8f83\u591a\uff0c\u60a8\u7684\u6d88\u606f\u5df2\u4fdd\u5b58\uff0c\u7a0d\u540e\u5373\u56de\u590d\u3002",
      confirmHuman: "\u786e\u8ba4\u53d1\u9001",
      yes: "\u786e\u8ba4",
      no: "\u4e0d\u7528", // "no need"; the word for "cancel" would read as a new request
      tiers: { L1: "\u5feb\u901f", L2: "\u77e5\u8bc6\u5e93", L3: "\u4e13\u5bb6", clarify: "\u6f84\u6e05" },
      sources: (n) => `\u6765\u6e90\uff08${n}\uff09`,
      tip: (f) =>
        [
          f.intent && `\u610f\u56fe: ${f.intent}`,
          f.model && `\u6a21\u578b: ${f.model}`,
          f.first_chunk_ms != null && `\u9996\u5757: ${Math.round(f.first_chunk_ms)} ms`,
          f.fallback && `\u964d\u7ea7: ${f.fallback.reason || "\u662f"}`,
        ]
          .filter(Boolean)
          .join(" \u00b7 "),
      greeting: "\u60a8\u597d\uff01\u53ef\u4ee5\u95ee\u6211\u8ba2\u5355\u3001\u914d\u9001\u3001\u9000\u8d27\u6216\u5546\u54c1\u76f8\u5173\u7684\u95ee\u9898\u3002",
      rateReply: "\u8fd9\u4e2a\u56de\u7b54\u6709\u5e2e\u52a9\u5417\uff1f",
      up: "\u6709\u5e2e\u52a9",
      down: "\u6ca1\u6709\u5e2e\u52a9",
      rateChat: "\u60a8\u5bf9\u672c\u6b21\u670d\u52a1\u6ee1\u610f\u5417\uff1f",
      queued: (pos, min) => `人工客服会在这里回复您。您排在第${pos}位（约${min}分钟）。`,
      joined: (name) => `客服${name}已加入对话。`,
      left: (name) => `客服${name}已离开对话，智能助手继续为您服务。`,
      typing: (name) => `${name}正在输入\u2026`,
      agentLabel: (name) => `${name} \u00b7 人工客服`,
      ticketIntro: "请留下邮箱和问题，我们会通过邮件回复您。",
      ticketEmail: "您的邮箱",
      ticketQuestion: "您的问题",
      ticketSend: "提交",
      ticketDone: "谢谢！我们已收到您的问题，会通过邮件回复。",
      ticketBad: "请输入有效的邮箱地址和问题。",
      rateChatPerson: (name) => `请为${name}的服务评分`,
      score: (n) => `${n} \u5206`,
    },
  };

  // A thumb (drawn here, no icon font); "down" is the same shape turned over.
  const THUMB =
    '<svg viewBox="0 0 24 24" width="15" height="15" aria-hidden="true" focusable="false">' +
    '<path fill="currentColor" d="M2 10h4v11H2zM8 10l4.5-7.5c1.4 0 2.4 1 2.1 2.5L13.9 9H20a2 2 0 0 1 2 2.3l-1.3 7.9A2 2 0 0 1 18.7 21H8z"/></svg>';

  const BACKOFF_BASE_MS = 500;
  const BACKOFF_MAX_MS = 15000;
  const PING_EVERY_MS = 25000;
  const PONG_TIMEOUT_MS = 10000;
  // The server refused this page: a foreign origin (config/origin.py) or no bot check.
  const CLOSE_REFUSED = 4403;

  const el = (tag, attrs = {}, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text != null) node.textContent = text;
    return node;
  };

  const newId = () =>
    crypto.randomUUID
      ? crypto.randomUUID()
      : // randomUUID needs a secure context; plain-http shops still get a unique id.
        Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) =>
          b.toString(16).padStart(2, "0"),
        ).join("");

  const store = {
    get(key) {
      try {
        return localStorage.getItem(key);
      } catch {
        return null; // storage blocked (privacy mode): start a new conversation
      }
    },
    set(key, value) {
      try {
        localStorage.setItem(key, value);
      } catch {
        /* storage blocked: the conversation lasts as long as the page */
      }
    },
    remove(key) {
      try {
        localStorage.removeItem(key);
      } catch {
        /* storage blocked */
      }
    },
  };

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

    // --- DOM --------------------------------------------------------------------------

    // The conversation's language once the server has said it (hello, done, handoff), else
    // the widget's lang attribute, else the page's: a Chinese shopper on an English shop
    // gets Chinese buttons and forms next to the Chinese replies.
    get _t() {
      const lang = (this._convLang || this.getAttribute("lang") || document.documentElement.lang || "en").toLowerCase();
      return lang.startsWith("zh") ? STRINGS.zh : STRINGS.en;
    }

    _setLanguage(language) {
      if (typeof language !== "string" || !language || language === this._convLang) return;
      this._convLang = language;
      this._label();
    }

    _build() {
      this._built = true;
      const root = this.attachShadow({ mode: "open" });
      if (CSS_URL) root.append(el("link", { rel: "stylesheet", href: CSS_URL }));
      const uid = `td-${Math.random().toString(36).slice(2, 8)}`;

      this._launcher = el("button", {
        type: "button",
        class: "launcher",
        part: "launcher",
        "aria-expanded": "false",
        "aria-controls": `${uid}-panel`,
      });
      this._launcher.innerHTML =
        '<svg viewBox="0 0 24 24" width="26" height="26" aria-hidden="true" focusable="false">' +
        '<path fill="currentColor" d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg>';

      this._panel = el("section", {
        class: "panel",
        part: "panel",
        id: `${uid}-panel`,
        role: "dialog",
        "aria-modal": "false",
        "aria-labelledby": `${uid}-title`,
      });
      this._panel.hidden = true;

      const header = el("header", { class: "header" });
      this._title = el("h2", { id: `${uid}-title`, class: "title" });
      this._closeBtn = el("button", { type: "button", class: "close" }, "\u00d7");
      header.append(this._title, this._closeBtn);

      this._status = el("div", { class: "status", role: "status" });
      this._log = el("div", {
        class: "log",
        role: "log",
        "aria-live": "polite",
        "aria-relevant": "additions",
        tabindex: "0",
      });
      this._greeting = el("p", { class: "msg bot greeting" });

      const form = el("form", { class: "composer" });
      this._inputLabel = el("label", { for: `${uid}-input`, class: "sr-only" });
      this._input = el("textarea", { id: `${uid}-input`, rows: "1", autocomplete: "off" });
      this._sendBtn = el("button", { type: "submit", class: "send" });
      this._sendBtn.innerHTML =
        '<svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">' +
        '<path fill="currentColor" d="M3 20.5 21 12 3 3.5v6.6l12 1.9-12 1.9z"/></svg>';
      form.append(this._inputLabel, this._input, this._sendBtn);

      // CSAT for the whole conversation: shown once there is a reply to rate.
      this._csat = el("div", { class: "csat", role: "group" });
      this._csatLabel = el("span", { class: "csat-label" });
      this._csat.append(this._csatLabel);
      for (let n = 1; n <= 5; n += 1) {
        const b = el("button", { type: "button", "data-score": String(n), "aria-pressed": "false" }, String(n));
        b.addEventListener("click", () => this._rate(null, n));
        this._csat.append(b);
      }
      this._csat.hidden = true;

      // Human handoff: the queue, the person who answers, their typing (docs/desk.md).
      this._handoffBar = el("div", { class: "handoff", role: "status", part: "handoff" });
      this._handoffBar.hidden = true;
      this._typing = el("p", { class: "typing", "aria-live": "polite" });
      this._typing.hidden = true;

      this._panel.append(header, this._status, this._handoffBar, this._log, this._typing, this._csat, form);
      root.append(this._panel, this._launcher);
      this._label();
      this._renderLog([]);

      this._launcher.addEventListener("click", () => (this.isOpen ? this.close() : this.open()));
      this._closeBtn.addEventListener("click", () => this.close());
      this._panel.addEventListener("keydown", (e) => {
        if (e.key === "Escape") {
          e.stopPropagation();
          this.close();
        }
      });
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        this._submit();
      });
      this._input.addEventListener("keydown", (e) => {
        // Enter sends, Shift+Enter is a newline; never send mid IME composition.
        if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
          e.preventDefault();
          this._submit();
        }
      });
      this._input.addEventListener("input", () => {
        this._autosize();
        this._typingSend();
      });
      // Key rhythm for the bot check: when keys go down and up, never which keys.
      this._input.addEventListener("keydown", (e) => botcheck.record(EV_KEYDOWN, e.timeStamp), { passive: true });
      this._input.addEventListener("keyup", (e) => botcheck.record(EV_KEYUP, e.timeStamp), { passive: true });
      this._input.addEventListener("focus", (e) => botcheck.record(EV_FOCUS, e.timeStamp), { passive: true });
    }

    _label() {
      const t = this._t;
      this._title.textContent = t.title;
      this._launcher.setAttribute("aria-label", t.open);
      this._launcher.title = t.open;
      this._closeBtn.setAttribute("aria-label", t.close);
      this._closeBtn.title = t.close;
      this._inputLabel.textContent = t.input;
      this._input.placeholder = t.placeholder;
      this._sendBtn.setAttribute("aria-label", t.send);
      this._sendBtn.title = t.send;
      this._log.setAttribute("aria-label", t.log);
      this._greeting.textContent = t.greeting;
      this._csatLabel.textContent = t.rateChat;
      this._csat.setAttribute("aria-label", t.rateChat);
      this._csat.querySelectorAll("button").forEach((b) => b.setAttribute("aria-label", t.score(b.dataset.score)));
      this._showStatus();
    }

    _autosize() {
      this._input.style.height = "auto";
      this._input.style.height = `${Math.min(this._input.scrollHeight, 140)}px`;
    }

    _nearEnd() {
      const l = this._log;
      return l.scrollHeight - l.scrollTop - l.clientHeight < 48;
    }

    _scrollToEnd(force) {
      if (force || this._stick) this._log.scrollTop = this._log.scrollHeight;
    }

    _append(node) {
      this._stick = this._nearEnd();
      this._log.append(node);
      this._scrollToEnd();
      return node;
    }

    _userBubble(text, attrs = {}) {
      return el("p", { class: "msg user", ...attrs }, text);
    }

    _botBubble(attrs = {}) {
      const node = el("div", { class: "msg bot", ...attrs });
      node.append(el("span", { class: "text" }));
      return node;
    }

    _note(bubble, text, cls = "note") {
      bubble.querySelector(`.${cls}`)?.remove();
      bubble.append(el("span", { class: cls }, text));
    }

    _badge(bubble, f) {
      const t = this._t;
      if (!f.tier) return;
      bubble.setAttribute("data-tier", f.tier);
      const label = t.tiers[f.tier] ? `${f.tier} \u00b7 ${t.tiers[f.tier]}` : f.tier;
      const badge = el("span", { class: "badge", title: t.tip(f) }, label);
      bubble.append(badge);
    }

    // L2 citations (docs/protocol.md, "done"): collapsed sources under the bubble, each
    // the article's title, the section anchor and the passage the answer came from.
    _sources(bubble, citations) {
      if (!Array.isArray(citations) || !citations.length) return;
      const box = el("details", { class: "sources" });
      box.append(el("summary", {}, this._t.sources(citations.length)));
      const list = el("ol");
      for (const c of citations) {
        const item = el("li", { "data-anchor": String(c.anchor ?? "") });
        item.append(el("span", { class: "source-title" }, String(c.title ?? "")));
        // The section's heading as written; the slug only from servers that don't send it.
        const section = c.heading || c.anchor;
        if (section && section !== c.title) item.append(el("span", { class: "source-anchor" }, ` \u00a7 ${section}`));
        if (c.snippet) item.append(el("blockquote", {}, String(c.snippet)));
        list.append(item);
      }
      box.append(list);
      bubble.append(box);
    }

    // CSAT on one reply (docs/protocol.md, "rate"): pressing the other thumb changes
    // the rating; the server keeps one rating per reply.
    _thumbs(bubble, rating) {
      const id = bubble.getAttribute("data-message-id");
      if (!id || bubble.querySelector(".rate")) return;
      const t = this._t;
      const box = el("span", { class: "rate", role: "group", "aria-label": t.rateReply });
      for (const value of ["up", "down"]) {
        const b = el("button", {
          type: "button",
          class: `thumb ${value}`,
          "data-value": value,
          "aria-pressed": String(rating === value),
          "aria-label": t[value],
          title: t[value],
        });
        b.innerHTML = THUMB;
        b.addEventListener("click", () => this._rate(Number(id), value));
        box.append(b);
      }
      if (rating) bubble.setAttribute("data-rating", rating);
      bubble.append(box);
      this._csat.hidden = false;
    }

    _rate(messageId, value) {
      const frame = messageId == null ? { type: "rate", value } : { type: "rate", message_id: messageId, value };
      if (!this._send(frame)) return;
      this._showRating(messageId, value); // shown now; the server's "rated" confirms it
    }

    _showRating(messageId, value) {
      if (messageId == null) {
        this._csat.setAttribute("data-score", String(value));
        this._csat.querySelectorAll("button").forEach((b) =>
          b.setAttribute("aria-pressed", String(Number(b.dataset.score) === Number(value))),
        );
        return;
      }
      const bubble = this._log.querySelector(`.msg[data-message-id="${CSS.escape(String(messageId))}"]:not(.user)`);
      if (!bubble) return;
      bubble.setAttribute("data-rating", value);
      bubble.querySelectorAll(".rate button").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.value === value)));
    }

    _system(text, cls = "") {
      return this._append(el("p", { class: `system ${cls}`.trim() }, text));
    }

    // The conversation as stored: rebuilt from every hello (docs/protocol.md, history).
    _renderLog(history, score) {
      this._log.replaceChildren(this._greeting);
      this._csat.hidden = true;
      this._showRating(null, score ?? 0);
      for (const m of history) {
        if (m.role === "user") {
          this._log.append(this._userBubble(m.text, { "data-message-id": String(m.message_id), "data-status": "sent" }));
          continue;
        }
        if (m.role === "agent") {
          this._log.append(this._agentBubble(m));
          continue;
        }
        const b = this._botBubble({ "data-message-id": String(m.message_id), "data-status": m.status || "complete" });
        b.querySelector(".text").textContent = m.text || "";
        if (m.status === "incomplete" || m.status === "streaming") this._note(b, this._t.cutOff);
        else if (m.status === "error") this._note(b, this._t.failed);
        this._badge(b, m);
        this._sources(b, m.citations);
        if (m.status === "complete") this._thumbs(b, m.rating);
        this._log.append(b);
      }
      // A confirmation the last reply asked for is still pending: its Yes/No come back.
      const last = history[history.length - 1];
      if (last && last.role === "bot" && last.status === "complete" && this._asks(last.actions) && !this._pending.size)
        this._confirmButtons();
      // Messages not acked yet follow the stored ones; they are re-sent after hello.
      for (const p of this._pending.values()) this._log.append(p.node);
      this._stick = true;
      this._scrollToEnd(true);
    }

    // --- connection ---------------------------------------------------------------------

    _endpoint() {
      const attr = this.getAttribute("endpoint");
      if (attr) return new URL(attr, location.href).href.replace(/^http/, "ws");
      return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/chat/`;
    }

    // One conversation per endpoint and per shopper: a shared computer never resumes
    // another shopper's conversation when the shop sets `shopper`.
    _key(what) {
      return `tierdesk:${what}:${this._endpoint()}:${this.getAttribute("shopper") || ""}`;
    }

    _remember(open) {
      try {
        sessionStorage.setItem(this._key("open"), open);
      } catch {
        /* no storage */
      }
    }

    _setState(state) {
      this._state = state;
      this.setAttribute("data-state", state);
      this._showStatus();
      this.dispatchEvent(new CustomEvent("tierdesk:state", { detail: { state } }));
    }

    // Load: "busy, you are n-th" (docs/protocol.md, "busy"); position 0 ends it.
    _onBusy(f) {
      const n = Number(f.position) || 0;
      this._busy = n > 0 ? { n, reason: f.reason } : null;
      this.toggleAttribute("data-busy", n > 0);
      if (n > 0) this.setAttribute("data-busy-position", String(n));
      else this.removeAttribute("data-busy-position");
      this._showStatus();
    }

    _showStatus() {
      const t = this._t;
      let text = { connecting: t.connecting, reconnecting: t.reconnecting, refused: t.refused }[this._state] || "";
      if (!text && this._state === "open" && this._busy) {
        text = this._busy.reason === "load" ? t.busyLoad : t.busy(this._busy.n);
      }
      this._status.textContent = text;
      this._status.hidden = !text;
    }

    _connect() {
      clearTimeout(this._retryTimer);
      this._retryTimer = null;
      let url = this._endpoint();
      const session = store.get(this._key("session"));
      if (session) url += `${url.includes("?") ? "&" : "?"}session=${encodeURIComponent(session)}`;
      if (this._state !== "reconnecting") this._setState("connecting");
      this._helloSeen = false;
      let ws;
      try {
        ws = new WebSocket(url);
      } catch {
        this._scheduleReconnect();
        return;
      }
      this._ws = ws;
      ws.onmessage = (ev) => {
        if (ws !== this._ws || typeof ev.data !== "string") return;
        let frame;
        try {
          frame = JSON.parse(ev.data);
        } catch {
          return;
        }
        if (frame && typeof frame === "object") this._onFrame(frame);
      };
      ws.onclose = (ev) => {
        if (ws !== this._ws) return;
        this._ws = null;
        this._stopPing();
        // Refused (docs/protocol.md, close codes): retrying can't help, so say why once.
        if (ev.code === CLOSE_REFUSED) return this._refused();
        this._scheduleReconnect();
      };
      ws.onerror = () => {
        /* onclose follows and reconnects */
      };
    }

    _teardown() {
      clearTimeout(this._retryTimer);
      this._retryTimer = null;
      this._stopPing();
      const ws = this._ws;
      this._ws = null;
      if (ws) ws.close(1000);
      this._setState("idle");
    }

    _reconnectNow() {
      const ws = this._ws;
      this._ws = null;
      this._stopPing();
      if (ws) ws.close(1000);
      this._attempt = 0;
      this._setState("reconnecting");
      this._connect();
    }

    _refused() {
      clearTimeout(this._retryTimer);
      this._retryTimer = null;
      this._setState("refused");
      const why =
        this._lastError === "bot_check_required"
          ? "it sent no bot-check fingerprint (the bot-check module did not load; docs/botcheck.md)"
          : `this page's origin (${location.origin}) is not in the server's DJANGO_ALLOWED_HOSTS (docs/widget.md)`;
      console.error(`tierdesk-chat: ${this._endpoint()} refused the connection (close code ${CLOSE_REFUSED}): ${why}. Not retrying.`);
    }

    _scheduleReconnect() {
      // Exponential backoff with full jitter, so a restarted server is not stampeded.
      const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this._attempt);
      const delay = cap / 2 + Math.random() * (cap / 2);
      this._attempt += 1;
      this._setState("reconnecting");
      clearTimeout(this._retryTimer);
      this._retryTimer = setTimeout(() => this._connect(), delay);
    }

    _startPing() {
      this._stopPing();
      this._pingTimer = setInterval(() => {
        if (!this._send({ type: "ping", ts: Date.now() })) return;
        clearTimeout(this._pongTimer);
        // A socket that stops answering (sleeping laptop, dead proxy) is replaced.
        this._pongTimer = setTimeout(() => this._reconnectNow(), PONG_TIMEOUT_MS);
      }, PING_EVERY_MS);
    }

    _stopPing() {
      clearInterval(this._pingTimer);
      clearTimeout(this._pongTimer);
      this._pingTimer = this._pongTimer = null;
    }

    _send(frame) {
      const ws = this._ws;
      if (!ws || ws.readyState !== WebSocket.OPEN) return false;
      ws.send(JSON.stringify(frame));
      return true;
    }

    // --- frames ---------------------------------------------------------------------------

    _onFrame(f) {
      switch (f.type) {
        case "hello":
          return this._onHello(f);
        case "ack":
          return this._onAck(f);
        case "error":
          this._lastError = f.code;
          this._onBotError(f);
          return this._enqueue(f);
        case "chunk":
        case "replace":
        case "done":
          return this._enqueue(f);
        case "identified":
          this.toggleAttribute("data-identified", !!f.ok);
          return;
        case "pong":
          clearTimeout(this._pongTimer);
          return;
        case "rated":
          this._showRating(f.message_id ?? null, f.value);
          return;
        case "handoff":
          return this._onHandoff(f);
        case "message":
          if (f.role === "agent") this._onAgentMessage(f);
          return;
        case "typing":
          if (f.who === "agent") this._onAgentTyping(f);
          return;
        case "busy":
          return this._onBusy(f);
        default:
          return; // newer server, older widget: ignore what we don't know
      }
    }

    _onHello(f) {
      this._helloSeen = true;
      this._attempt = 0;
      this._busy = null;
      this.removeAttribute("data-busy");
      if (f.session) store.set(this._key("session"), f.session);
      if (f.limits) this._limits = { ...this._limits, ...f.limits };
      this._input.maxLength = this._limits.max_message_chars || 2000;
      const attr = this.getAttribute("pacing");
      const fromAttr = attr == null || attr === "" ? NaN : Number(attr);
      this._pacingMs = Number.isFinite(fromAttr) ? fromAttr : Number(f.pacing_ms) || 0;
      this.toggleAttribute("data-identified", !!f.identified);
      if (f.conversation) this.setAttribute("data-conversation", f.conversation);
      // What was shown from an earlier socket is replaced by what the server stored.
      this._ops = [];
      clearTimeout(this._pumpTimer);
      this._pumpTimer = null;
      this._bot = null;
      this._log.removeAttribute("aria-busy");
      this._setLanguage(f.language);
      this._renderLog(Array.isArray(f.history) ? f.history : [], f.rating);
      this._onHandoff(f.handoff || { status: "none" }, { quiet: true });
      this._setState("open");
      const token = this.getAttribute("token");
      if (token) this._send({ type: "identify", token });
      const bc = f.botcheck;
      this._bc = bc && typeof bc.nonce === "string" ? { nonce: bc.nonce, seq: 0 } : null;
      // Re-sent messages are signed again: a new socket has a new nonce.
      for (const [id, p] of this._pending) this._sendMessage(id, p);
      this._startPing();
    }

    _onAck(f) {
      const p = this._pending.get(f.id);
      if (!p) return;
      this._pending.delete(f.id);
      this._saveOutbox();
      const mid = String(f.message_id ?? "");
      // Servers before "answering" answered only new messages.
      const answering = f.answering ?? !f.duplicate;
      // A re-sent message the server already had is in the history we just drew.
      if (f.duplicate && mid && this._log.querySelector(`[data-message-id="${CSS.escape(mid)}"]`)) {
        p.node.remove();
        if (answering) this._enqueue({ type: "waiting" });
        return;
      }
      p.node.setAttribute("data-status", "sent");
      if (mid) p.node.setAttribute("data-message-id", mid);
      p.node.querySelector(".note")?.remove();
      if (answering) this._enqueue({ type: "waiting" });
    }

    _submit() {
      const text = this._input.value.trim();
      if (!text) return;
      const max = this._limits.max_message_chars || 2000;
      if (text.length > max) return; // maxlength already stops typing past it
      const wait = Math.ceil((this._blockedUntil - Date.now()) / 1000);
      if (wait > 0) {
        // Rate limited: keep the draft and say when it can go.
        this._system(this._t.retryIn(wait), "error").setAttribute("data-code", "rate_limited");
        return;
      }
      const id = newId();
      const node = this._userBubble(text, { "data-client-id": id, "data-status": "pending" });
      const p = { text, node, f: botcheck.take() };
      this._pending.set(id, p);
      this._saveOutbox();
      this._append(node);
      this._stick = true;
      this._scrollToEnd(true);
      this._input.value = "";
      this._autosize();
      this._clearActions();
      if (!this._helloSeen || !this._sendMessage(id, p)) {
        this._note(node, this._t.notSent);
        if (!this._ws && this._state === "idle") this._connect();
      }
      if (!p.f && !botcheck.wasm && !botcheck.failed && botcheck.ready) {
        // The module was still loading: sign the message as soon as it is there (with
        // the check off, it already went out unsigned).
        botcheck.ready.then(() => {
          if (!this._pending.has(id) || p.f || !this._bc) return;
          p.f = botcheck.take();
          if (this._helloSeen) this._sendMessage(id, p);
        });
      }
    }

    // One message frame, with this socket's bot-check fingerprint when the server asked
    // for one (hello.botcheck). Returns false when the socket is not open.
    _sendMessage(id, p) {
      const frame = { type: "message", id, text: p.text };
      if (this._bc) {
        // Still loading: _submit signs and sends it once the module is there.
        if (!p.f && !botcheck.failed) return !!this._ws && this._ws.readyState === WebSocket.OPEN;
        if (p.f) {
          this._bc.seq += 1;
          const bot = botcheck.sign(p.f, this._bc.nonce, this._bc.seq, p.text);
          if (bot) frame.bot = bot;
        }
      }
      return this._send(frame);
    }

    // Bot-check refusals name the message (reply_to): a challenge keeps it pending
    // behind a button; a refusal drops it.
    _onBotError(f) {
      const p = f.reply_to != null ? this._pending.get(f.reply_to) : null;
      if (!p) return;
      if (f.code === "bot_refused" || f.code === "bot_check_required") {
        this._pending.delete(f.reply_to);
        this._saveOutbox();
        p.node.setAttribute("data-status", "refused");
        return;
      }
      if (f.code !== "bot_challenge") return;
      const id = f.reply_to;
      const box = el("div", { class: "actions challenge" });
      const btn = el("button", { type: "button", "data-challenge": id }, this._t.confirmHuman);
      btn.addEventListener("click", () => {
        box.remove();
        // The pointer's way to this button (or the tap) is the new evidence.
        p.f = botcheck.take();
        this._sendMessage(id, p);
      });
      box.append(btn);
      // After the error line, which the render queue adds next.
      setTimeout(() => this._append(box), 0);
    }

    // --- streaming render queue ------------------------------------------------------------

    _enqueue(op) {
      if (op.type === "replace") {
        // Chunks of this reply not shown yet are superseded by the whole text.
        let i = this._ops.length;
        while (i > 0 && this._ops[i - 1].type !== "done") i -= 1;
        this._ops = this._ops.slice(0, i).concat(this._ops.slice(i).filter((o) => o.type !== "chunk"));
      }
      this._ops.push(op);
      this._pump();
    }

    _pump() {
      if (this._pumpTimer) return;
      while (this._ops.length) {
        const op = this._ops.shift();
        this._apply(op);
        if (op.type === "chunk" && this._pacingMs > 0) {
          // One chunk per tick gives the typing rhythm; chunk sizes are the server's.
          this._pumpTimer = setTimeout(() => {
            this._pumpTimer = null;
            this._pump();
          }, this._pacingMs);
          return;
        }
      }
    }

    _ensureBot() {
      if (!this._bot) {
        this._bot = this._append(this._botBubble({ "data-status": "waiting", "data-chunks": "0" }));
        this._log.setAttribute("aria-busy", "true"); // announce the reply once, when done
      }
      return this._bot;
    }

    _finishBot(status) {
      const b = this._bot;
      this._bot = null;
      this._log.removeAttribute("aria-busy");
      if (b) b.setAttribute("data-status", status);
      return b;
    }

    _apply(op) {
      const t = this._t;
      switch (op.type) {
        case "waiting":
          this._ensureBot();
          return;
        case "chunk": {
          const b = this._ensureBot();
          b.setAttribute("data-status", "streaming");
          b.setAttribute("data-chunks", String(Number(b.getAttribute("data-chunks") || 0) + 1));
          this._stick = this._nearEnd();
          b.querySelector(".text").append(el("span", { class: "chunk" }, String(op.text ?? "")));
          this._scrollToEnd();
          return;
        }
        case "replace": {
          const b = this._ensureBot();
          b.setAttribute("data-replaced", "");
          b.querySelector(".text").replaceChildren(el("span", { class: "chunk" }, String(op.text ?? "")));
          this._scrollToEnd();
          return;
        }
        case "done": {
          this._setLanguage(op.language);
          this._ensureBot();
          const b = this._finishBot(op.status || "complete");
          if (op.message_id != null) b.setAttribute("data-message-id", String(op.message_id));
          this._badge(b, op);
          this._sources(b, op.citations);
          if ((op.status || "complete") === "complete") this._thumbs(b, null);
          if (this._asks(op.actions)) this._confirmButtons();
          if (!this.isOpen) this._launcher.classList.add("unread");
          this._scrollToEnd();
          this.dispatchEvent(new CustomEvent("tierdesk:reply", { detail: op }));
          return;
        }
        case "error": {
          if (this._bot) {
            const partial = this._bot.querySelector(".text").textContent;
            const b = this._finishBot("error");
            if (partial) this._note(b, t.failed);
            else b.remove();
          }
          if (op.code === "store_unavailable" && op.reply_to && this._pending.has(op.reply_to)) {
            // Not stored, not acked: send it again with the same id (idempotent).
            const id = op.reply_to;
            const secs = Math.max(1, Math.ceil(Number(op.retry_after ?? 2)));
            setTimeout(() => {
              const p = this._pending.get(id);
              if (p) this._sendMessage(id, p); // signed again: a new sequence number
            }, secs * 1000);
          }
          let text = op.message || op.code || "Error";
          if (op.code === "rate_limited" && op.retry_after != null) {
            const secs = Math.max(1, Math.ceil(Number(op.retry_after)));
            this._blockedUntil = Date.now() + secs * 1000;
            text += ` ${t.retryIn(secs)}`;
          }
          const line = this._system(text, "error");
          line.setAttribute("data-code", op.code || "");
          return;
        }
        default:
      }
    }

    // --- human handoff ------------------------------------------------------------------

    _agentBubble(m) {
      const b = this._botBubble({
        "data-message-id": String(m.message_id),
        "data-status": "complete",
        "data-role": "agent",
        class: "msg bot agent",
      });
      b.querySelector(".text").textContent = m.text || "";
      b.prepend(el("span", { class: "agent-name" }, this._t.agentLabel(m.agent || "")));
      this._thumbs(b, m.rating);
      return b;
    }

    _onAgentMessage(f) {
      const mid = String(f.message_id ?? "");
      if (mid && this._log.querySelector(`[data-message-id="${CSS.escape(mid)}"]`)) return;
      this._typing.hidden = true;
      this._append(this._agentBubble(f));
      if (!this.isOpen) this._launcher.classList.add("unread");
      this._scrollToEnd();
      this.dispatchEvent(new CustomEvent("tierdesk:agent", { detail: f }));
    }

    _onAgentTyping(f) {
      this._typing.textContent = this._t.typing(f.agent || "");
      this._typing.hidden = false;
      clearTimeout(this._typingTimer);
      this._typingTimer = setTimeout(() => (this._typing.hidden = true), 4000);
    }

    _typingSend() {
      // Only while a person is (or will be) on the other side; at most every 2 s.
      if (!["queued", "claimed"].includes(this._handoff)) return;
      const now = Date.now();
      if (now - (this._typingAt || 0) < 2000) return;
      this._typingAt = now;
      this._send({ type: "typing" });
    }

    _onHandoff(f, { quiet = false } = {}) {
      this._setLanguage(f.language);
      const t = this._t;
      const was = this._handoff;
      this._handoff = f.status;
      this.setAttribute("data-handoff", f.status);
      const bar = this._handoffBar;
      bar.setAttribute("data-status", f.status);
      if (f.status === "queued") {
        bar.textContent = t.queued(f.position, Math.max(1, Math.round((f.wait_s || 0) / 60)));
        bar.hidden = false;
      } else if (f.status === "claimed") {
        this._agent = f.agent || "";
        bar.textContent = t.joined(this._agent);
        bar.hidden = false;
        if (!quiet && was !== "claimed") this._system(t.joined(this._agent), "handoff-note");
      } else if (f.status === "resolved") {
        bar.hidden = true;
        this._typing.hidden = true;
        this._system(t.left(f.agent || this._agent || ""), "handoff-note");
        this._csatLabel.textContent = t.rateChatPerson(f.agent || this._agent || "");
        this._csat.hidden = false;
        this._handoff = "none";
      } else if (f.status === "unavailable") {
        bar.hidden = true;
        this._ticketForm(f.email || "");
      } else {
        bar.hidden = true;
      }
      this.dispatchEvent(new CustomEvent("tierdesk:handoff", { detail: f }));
    }

    // email: the signed-in shopper's, sent by the server (only for a shop-signed token).
    _ticketForm(knownEmail) {
      const t = this._t;
      if (this._log.querySelector("form.ticket")) return;
      const form = el("form", { class: "ticket" });
      const email = el("input", { type: "email", required: "", autocomplete: "email", "aria-label": t.ticketEmail, placeholder: t.ticketEmail, name: "email" });
      const question = el("textarea", { rows: "3", required: "", "aria-label": t.ticketQuestion, placeholder: t.ticketQuestion, name: "question" });
      // What the shopper wrote last, the request for a person included (it often says
      // what is wrong: "my parcel is late, can I speak to someone?"), as a start.
      const asked = [...this._log.querySelectorAll(".msg.user")].map((n) => n.textContent).slice(-3);
      question.value = asked.join("\n");
      email.value = knownEmail || "";
      const send = el("button", { type: "submit" }, t.ticketSend);
      form.append(el("p", {}, t.ticketIntro), email, question, send);
      form.addEventListener("submit", async (e) => {
        e.preventDefault();
        const base = new URL(this._endpoint().replace(/^ws/, "http"));
        send.disabled = true;
        try {
          const r = await fetch(`${base.origin}/tickets/`, {
            method: "POST",
            headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ session: store.get(this._key("session")), email: email.value, question: question.value }),
          });
          if (!r.ok) throw new Error(String(r.status));
          form.replaceWith(el("p", { class: "system ticket-done" }, t.ticketDone));
        } catch (err) {
          send.disabled = false;
          this._system(t.ticketBad, "error");
        }
      });
      this._append(form);
      (email.value ? question : email).focus();
    }

    _clearActions() {
      this._log.querySelectorAll(".actions").forEach((n) => n.remove());
    }

    // A reply that waits for a yes or no (docs/protocol.md, "actions").
    _asks(actions) {
      return Array.isArray(actions) && (actions.includes("confirm") || actions.includes("offer:human"));
    }

    _confirmButtons() {
      const t = this._t;
      const box = el("div", { class: "actions" });
      for (const label of [t.yes, t.no]) {
        const btn = el("button", { type: "button" }, label);
        btn.addEventListener("click", () => {
          this._input.value = label;
          this._submit();
          this._input.focus();
        });
        box.append(btn);
      }
      this._append(box);
    }
  }

  customElements.define("tierdesk-chat", TierdeskChat);
})();
