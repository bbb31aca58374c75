/*
 * Tierdesk widget: the shadow DOM it builds and the bubbles, badges, sources and
 * ratings it draws (methods of <tierdesk-chat>, mixed in by main.js).
 */
import { botcheck, EV_FOCUS, EV_KEYDOWN, EV_KEYUP } from "./botcheck.js";
import { el, LINK_REL, linkify, THUMB } from "./dom.js";

// widget.css sits beside widget.js, one folder up from this module.
const CSS_URL = new URL("../widget.css", import.meta.url).href;

export const rendering = {
  _setLanguage(language) {
    if (typeof language !== "string" || !language || language === this._convLang) return;
    this._convLang = language;
    this._label();
  },

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
    // Shown when something new lands below while the shopper reads further up.
    this._newBelow = el("button", { type: "button", class: "new-below", part: "new-below" });
    this._newBelow.hidden = true;
    this._greeting = el("p", { class: "msg bot greeting" });

    const form = el("form", { class: "composer" });
    this._inputLabel = el("label", { for: `${uid}-input`, class: "sr-only" });
    this._input = el("textarea", { id: `${uid}-input`, rows: "1", autocomplete: "off" });
    this._sendBtn = el("button", { type: "submit", class: "send" });
    this._sendBtn.innerHTML =
      '<svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">' +
      '<path fill="currentColor" d="M3 20.5 21 12 3 3.5v6.6l12 1.9-12 1.9z"/></svg>';
    // The paperclip: a photo of the problem (photos.js).
    form.append(this._inputLabel, ...this._buildAttach(), this._input, this._sendBtn);

    // CSAT for the whole conversation: shown once there is a reply to rate.
    this._buildCsat();

    // Human handoff: the queue, the person who answers, their typing (docs/desk.md).
    this._handoffBar = el("div", { class: "handoff", role: "status", part: "handoff" });
    this._handoffBar.hidden = true;
    this._typing = el("p", { class: "typing", "aria-live": "polite" });
    this._typing.hidden = true;

    const logBox = el("div", { class: "log-box" });
    logBox.append(this._log, this._newBelow);
    this._panel.append(header, this._status, this._handoffBar, logBox, this._typing, this._csat, form);
    root.append(this._panel, this._launcher);
    this._label();
    this._renderLog([]);

    this._listen(form);
  },

  // The conversation's 1-5 rating buttons (docs/protocol.md, "rate").
  _buildCsat() {
    this._csat = el("div", { class: "csat", role: "group" });
    this._csatLabel = el("span", { class: "csat-label" });
    this._csat.append(this._csatLabel);
    for (let n = 1; n <= 5; n += 1) {
      const b = el("button", { type: "button", "data-score": String(n), "aria-pressed": "false" }, String(n));
      b.addEventListener("click", () => this._rate(null, n));
      this._csat.append(b);
    }
    this._csat.hidden = true;
  },

  // What the shopper's clicks and keys do; the bot check's key rhythm on the input.
  _listen(form) {
    this._stick = true;
    this._setTop = null;
    // Whether to follow new messages is the shopper's choice, read from where they
    // scrolled: content growing under them (a badge, buttons, the typing line) doesn't
    // change it.
    this._log.addEventListener("scroll", () => {
      // The widget's own scroll to the end says nothing of the shopper's choice, even
      // when a photo or a line grew the log before this event ran (it comes a frame
      // later); only a position the shopper moved to does.
      if (this._setTop !== null && Math.abs(this._log.scrollTop - this._setTop) < 2) return;
      this._setTop = null;
      this._stick = this._nearEnd();
      if (this._stick) this._newBelow.hidden = true;
    }, { passive: true });
    // The log shrinks when the typing line or the rating shows: keep the end in view.
    if (typeof ResizeObserver === "function") new ResizeObserver(() => this._scrollToEnd()).observe(this._log);
    this._newBelow.addEventListener("click", () => this._scrollToEnd(true));
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
  },

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
    this._labelAttach();
    this._log.setAttribute("aria-label", t.log);
    this._greeting.textContent = t.greeting;
    this._csatLabel.textContent = t.rateChat;
    this._newBelow.textContent = t.newBelow;
    this._csat.setAttribute("aria-label", t.rateChat);
    this._csat.querySelectorAll("button").forEach((b) => b.setAttribute("aria-label", t.score(b.dataset.score)));
    this._showStatus();
  },

  _autosize() {
    this._input.style.height = "auto";
    this._input.style.height = `${Math.min(this._input.scrollHeight, 140)}px`;
  },

  _nearEnd() {
    const l = this._log;
    return l.scrollHeight - l.scrollTop - l.clientHeight < 48;
  },

  // Follows the conversation while the shopper is at its end (or when ``force``d:
  // they sent something); otherwise says something new is below.
  _scrollToEnd(force) {
    if (force) this._stick = true;
    if (this._stick) {
      this._log.scrollTop = this._log.scrollHeight;
      this._setTop = this._log.scrollTop;
      this._newBelow.hidden = true;
    }
  },

  _append(node) {
    this._log.append(node);
    if (this._stick) this._scrollToEnd();
    else this._newBelow.hidden = false;
    return node;
  },

  _userBubble(text, attrs = {}) {
    return el("p", { class: "msg user", ...attrs }, text);
  },

  _botBubble(attrs = {}) {
    const node = el("div", { class: "msg bot", ...attrs });
    node.append(el("span", { class: "text" }));
    return node;
  },

  _note(bubble, text, cls = "note") {
    bubble.querySelector(`.${cls}`)?.remove();
    bubble.append(el("span", { class: cls }, text));
  },

  _badge(bubble, f) {
    const t = this._t;
    if (!f.tier) return;
    bubble.setAttribute("data-tier", f.tier);
    const label = t.tiers[f.tier] ? `${f.tier} \u00b7 ${t.tiers[f.tier]}` : f.tier;
    const badge = el("span", { class: "badge", title: t.tip(f) }, label);
    bubble.append(badge);
  },

  // L2 citations (docs/protocol.md, "done"): collapsed sources under the bubble, each
  // the article's title, the section anchor and the passage the answer came from.
  _sources(bubble, citations) {
    if (!Array.isArray(citations) || !citations.length) return;
    const box = el("details", { class: "sources" });
    box.append(el("summary", {}, this._t.sources(citations.length)));
    const list = el("ol");
    for (const c of citations) {
      const item = el("li", { "data-anchor": String(c.anchor ?? "") });
      // The article's help page, on the chat server (the widget may sit on another site).
      const href = typeof c.url === "string" && c.url.startsWith("/") ? new URL(c.url, this._serverOrigin()).href : "";
      item.append(
        href
          ? el("a", { class: "source-title", href, target: "_blank", rel: LINK_REL }, String(c.title ?? ""))
          : el("span", { class: "source-title" }, String(c.title ?? "")),
      );
      // The section's heading as written; the slug only from servers that don't send it.
      const section = c.heading || c.anchor;
      if (section && section !== c.title) item.append(el("span", { class: "source-anchor" }, ` \u00a7 ${section}`));
      if (c.snippet) item.append(el("blockquote", {}, String(c.snippet)));
      list.append(item);
    }
    box.append(list);
    bubble.append(box);
  },

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
  },

  _rate(messageId, value) {
    const frame = messageId == null ? { type: "rate", value } : { type: "rate", message_id: messageId, value };
    if (!this._send(frame)) return;
    this._showRating(messageId, value); // shown now; the server's "rated" confirms it
  },

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
  },

  _system(text, cls = "") {
    return this._append(el("p", { class: `system ${cls}`.trim() }, text));
  },

  // The conversation as stored: rebuilt from every hello (docs/protocol.md, history).
  _renderLog(history, score) {
    this._log.replaceChildren(this._greeting);
    this._csat.hidden = true;
    this._showRating(null, score ?? 0);
    for (const m of history) {
      if (m.role === "user") {
        const attrs = { "data-message-id": String(m.message_id), "data-status": "sent" };
        this._log.append(m.attachment ? this._photoBubble(m.attachment, attrs) : this._userBubble(m.text, attrs));
        continue;
      }
      if (m.role === "agent") {
        this._log.append(this._agentBubble(m));
        continue;
      }
      const b = this._botBubble({ "data-message-id": String(m.message_id), "data-status": m.status || "complete" });
      b.querySelector(".text").textContent = m.text || "";
      linkify(b.querySelector(".text"));
      if (m.status === "incomplete" || m.status === "streaming") this._note(b, this._t.cutOff);
      else if (m.status === "error") this._note(b, this._t.failed);
      this._badge(b, m);
      this._sources(b, m.citations);
      if (m.status === "complete") this._thumbs(b, m.rating);
      this._log.append(b);
    }
    // The question the last reply asked is still open: its buttons come back.
    const last = history[history.length - 1];
    if (last && last.role === "bot" && last.status === "complete" && !this._pending.size)
      this._choiceButtons(last);
    // Messages not acked yet follow the stored ones; they are re-sent after hello.
    for (const p of this._pending.values()) this._log.append(p.node);
    this._stick = true;
    this._scrollToEnd(true);
  },
};
