/*
 * Tierdesk widget: human handoff, the ticket form and the yes/no buttons
 * (methods of <tierdesk-chat>, mixed in by main.js; docs/desk.md).
 */
import { el, linkify, store } from "./dom.js";

export const handoff = {
  _agentBubble(m) {
    const b = this._botBubble({
      "data-message-id": String(m.message_id),
      "data-status": "complete",
      "data-role": "agent",
      class: "msg bot agent",
    });
    b.querySelector(".text").textContent = m.text || "";
    linkify(b.querySelector(".text"));
    b.prepend(el("span", { class: "agent-name" }, this._t.agentLabel(m.agent || "")));
    this._thumbs(b, m.rating);
    return b;
  },

  _onAgentMessage(f) {
    const mid = String(f.message_id ?? "");
    if (mid && this._log.querySelector(`[data-message-id="${CSS.escape(mid)}"]`)) return;
    this._typing.hidden = true;
    this._append(this._agentBubble(f));
    if (!this.isOpen) this._launcher.classList.add("unread");
    this.dispatchEvent(new CustomEvent("tierdesk:agent", { detail: f }));
  },

  _onAgentTyping(f) {
    this._typing.textContent = this._t.typing(f.agent || "");
    this._typing.hidden = false;
    clearTimeout(this._typingTimer);
    this._typingTimer = setTimeout(() => (this._typing.hidden = true), 4000);
  },

  _typingSend() {
    // Only while a person is (or will be) on the other side; at most every 2 s.
    if (!["queued", "claimed"].includes(this._handoff)) return;
    const now = Date.now();
    if (now - (this._typingAt || 0) < 2000) return;
    this._typingAt = now;
    this._send({ type: "typing" });
  },

  _onHandoff(f, { quiet = false } = {}) {
    this._setLanguage(f.language);
    const t = this._t;
    const was = this._handoff;
    this._handoff = f.status;
    this.setAttribute("data-handoff", f.status);
    const bar = this._handoffBar;
    bar.setAttribute("data-status", f.status);
    // Queued, joined, left or nobody there: the bot's question the buttons answered
    // is over (a "yes" to it would now go to the person, or nowhere).
    if (f.status !== was && f.status !== "none") this._clearActions();
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
  },

  // email: the signed-in shopper's, sent by the server (only for a shop-signed token).
  _ticketForm(knownEmail) {
    const t = this._t;
    if (this._log.querySelector("form.ticket")) return;
    const form = el("form", { class: "ticket" });
    const email = el("input", { type: "email", required: "", autocomplete: "email", "aria-label": t.ticketEmail, placeholder: t.ticketEmail, name: "email" });
    const question = el("textarea", { rows: "3", required: "", "aria-label": t.ticketQuestion, placeholder: t.ticketQuestion, name: "question" });
    // What the shopper wrote last, the request for a person included (it often says
    // what is wrong: "my parcel is late, can I speak to someone?"), as a start.
    const asked = [...this._log.querySelectorAll(".msg.user:not(.photo)")].map((n) => n.textContent).slice(-3);
    question.value = asked.join("\n");
    email.value = knownEmail || "";
    const send = el("button", { type: "submit" }, t.ticketSend);
    form.append(el("p", {}, t.ticketIntro), email, question, send);
    const photoIds = this._ticketPhotos(form, send);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      send.disabled = true;
      try {
        const r = await fetch(`${this._serverOrigin()}/tickets/`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({
            session: store.get(this._key("session")),
            email: email.value,
            question: question.value,
            attachments: photoIds,
          }),
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
  },

  _clearActions() {
    this._log.querySelectorAll(".actions").forEach((n) => n.remove());
  },

  // A reply that waits for a yes or no (docs/protocol.md, "actions"): a confirmation,
  // or an offer (a person, the order's status, a return instead of a cancel).
  _asks(actions) {
    return Array.isArray(actions) && actions.some((a) => a === "confirm" || String(a).startsWith("offer:"));
  },

  // The reply's question as buttons: its options (docs/protocol.md, "choices"), else
  // Yes/No for a confirmation or an offer. A button sends its label as the answer.
  // They come into view with the question, unless the shopper is reading further up.
  _choiceButtons(reply) {
    const t = this._t;
    if (["queued", "claimed"].includes(this._handoff)) return; // a person answers now
    const choices = Array.isArray(reply.choices) ? reply.choices.filter((c) => typeof c === "string" && c) : [];
    const labels = choices.length ? choices : this._asks(reply.actions) ? [t.yes, t.no] : [];
    if (!labels.length) return;
    const box = el("div", { class: "actions", role: "group" });
    for (const label of labels) {
      const btn = el("button", { type: "button" }, label);
      btn.addEventListener("click", () => {
        this._input.value = label;
        this._submit();
        this._input.focus();
      });
      box.append(btn);
    }
    this._append(box);
  },
};
