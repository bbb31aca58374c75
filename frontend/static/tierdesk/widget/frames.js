/*
 * Tierdesk widget: the server's frames and the shopper's messages, signed with the
 * bot check when the server asks (methods of <tierdesk-chat>, mixed in by main.js).
 */
import { botcheck } from "./botcheck.js";
import { el, newId, store } from "./dom.js";

export const frames = {
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
  },

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
    this._bc = bc && typeof bc.nonce === "string" ? { nonce: bc.nonce, seq: 0, mode: bc.mode || "enforce" } : null;
    // Re-sent messages are signed again: a new socket has a new nonce.
    for (const [id, p] of this._pending) this._sendMessage(id, p);
    this._startPing();
  },

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
    // Waiting for a person: the message went to them, and the bot won't answer it.
    if (f.human && f.held === "queued") {
      p.node.setAttribute("data-held", "queued");
      this._note(p.node, this._t.passedOn);
    }
    if (answering) this._enqueue({ type: "waiting" });
  },

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
  },

  // One message frame, with this socket's bot-check fingerprint when the server asked
  // for one (hello.botcheck). Returns false when the socket is not open.
  _sendMessage(id, p) {
    const frame = { type: "message", id, text: p.text };
    if (this._bc) {
      // Still loading: _submit signs and sends it once the module is there.
      if (!p.f && !botcheck.failed) return !!this._ws && this._ws.readyState === WebSocket.OPEN;
      if (!p.f && this._bc.mode !== "monitor") return this._botcheckMissing(id, p);
      if (p.f) {
        this._bc.seq += 1;
        const bot = botcheck.sign(p.f, this._bc.nonce, this._bc.seq, p.text);
        if (bot) frame.bot = bot;
      }
    }
    return this._send(frame);
  },

  // The module did not load and this server refuses unsigned messages (it would close
  // the socket): the message is not sent, and the shopper is told so instead of
  // waiting for a reply that never comes (the console has the cause: botcheck.js).
  _botcheckMissing(id, p) {
    this._pending.delete(id);
    this._saveOutbox();
    p.node.setAttribute("data-status", "refused");
    p.node.querySelector(".note")?.remove();
    this.setAttribute("data-botcheck", "failed");
    this._system(this._t.botcheckMissing, "error").setAttribute("data-code", "botcheck_unavailable");
    return true;
  },

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
  },
};
