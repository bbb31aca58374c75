/*
 * Tierdesk widget: the streaming render queue that paces chunks, replaces and ends
 * replies (methods of <tierdesk-chat>, mixed in by main.js).
 */
import { el, linkify } from "./dom.js";

export const streaming = {
  _enqueue(op) {
    if (op.type === "replace") {
      // Chunks of this reply not shown yet are superseded by the whole text.
      let i = this._ops.length;
      while (i > 0 && this._ops[i - 1].type !== "done") i -= 1;
      this._ops = this._ops.slice(0, i).concat(this._ops.slice(i).filter((o) => o.type !== "chunk"));
    }
    this._ops.push(op);
    this._pump();
  },

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
  },

  _ensureBot() {
    if (!this._bot) {
      this._bot = this._append(this._botBubble({ "data-status": "waiting", "data-chunks": "0" }));
      this._log.setAttribute("aria-busy", "true"); // announce the reply once, when done
    }
    return this._bot;
  },

  _finishBot(status) {
    const b = this._bot;
    this._bot = null;
    this._log.removeAttribute("aria-busy");
    if (b) b.setAttribute("data-status", status);
    return b;
  },

  // The reply being written grew: follow it, or say there is more below.
  _grew() {
    if (this._stick) this._scrollToEnd();
    else this._newBelow.hidden = false;
  },

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
        b.querySelector(".text").append(el("span", { class: "chunk" }, String(op.text ?? "")));
        this._grew();
        return;
      }
      case "replace": {
        const b = this._ensureBot();
        b.setAttribute("data-replaced", "");
        b.querySelector(".text").replaceChildren(el("span", { class: "chunk" }, String(op.text ?? "")));
        this._grew();
        return;
      }
      case "done": {
        this._setLanguage(op.language);
        this._ensureBot();
        const b = this._finishBot(op.status || "complete");
        if (op.message_id != null) b.setAttribute("data-message-id", String(op.message_id));
        // The whole reply as one text, so an address split across chunks becomes one link.
        const text = b.querySelector(".text");
        text.textContent = text.textContent;
        linkify(text);
        this._badge(b, op);
        this._sources(b, op.citations);
        if ((op.status || "complete") === "complete") this._thumbs(b, null);
        // A new reply ends the question the old buttons answered; its own come with it.
        this._clearActions();
        this._choiceButtons(op);
        if (!this.isOpen) this._launcher.classList.add("unread");
        this._grew();
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
  },
};
