/*
 * Tierdesk widget: photos the shopper attaches, in the chat and in the ticket form
 * (methods of <tierdesk-chat>, mixed in by main.js; docs/widget.md, "Photos").
 * The server decides what a photo is from its bytes; the widget only refuses what is
 * plainly too large before sending it, and never touches what the shopper has typed.
 */
import { el, LINK_REL, store } from "./dom.js";

// What the file picker offers; the server checks the bytes whatever the name says.
export const PHOTO_ACCEPT = "image/jpeg,image/png,image/webp,image/heic,image/heif,.heic,.heif";
// Browsers can draw these from the file itself while it uploads; HEIC only Safari.
const PREVIEWABLE = /^image\/(jpeg|png|webp)$/;
const CLIP =
  '<svg viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">' +
  '<path fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" ' +
  'd="M21 11.5 12.5 20a5.5 5.5 0 0 1-7.8-7.8l8.5-8.5a3.7 3.7 0 0 1 5.2 5.2l-8.5 8.5a1.8 1.8 0 0 1-2.6-2.6L15 7"/></svg>';

export const photos = {
  // The paperclip next to the message box and its (hidden) file picker.
  _buildAttach() {
    this._attachBtn = el("button", { type: "button", class: "attach", part: "attach" });
    this._attachBtn.innerHTML = CLIP;
    this._attachInput = el("input", { type: "file", accept: PHOTO_ACCEPT, hidden: "" });
    this._attachBtn.addEventListener("click", () => this._attachInput.click());
    this._attachInput.addEventListener("change", () => {
      const file = this._attachInput.files && this._attachInput.files[0];
      this._attachInput.value = ""; // the same photo can be picked again
      if (file) this._photoSend(file);
    });
    return [this._attachBtn, this._attachInput];
  },

  _labelAttach() {
    const t = this._t;
    this._attachBtn.setAttribute("aria-label", t.attach);
    this._attachBtn.title = t.attach;
  },

  // A shopper's photo as a bubble of its own: a thumbnail that opens the full photo.
  _photoBubble(photo, attrs = {}) {
    const node = el("div", { class: "msg user photo", ...attrs });
    const img = el("img", { alt: photo.name || this._t.photo });
    // The photo grows the log when it has loaded: a shopper at the end stays there.
    img.addEventListener("load", () => this._scrollToEnd());
    if (photo.url) {
      const href = this._photoHref(photo.url);
      img.src = href;
      const link = el("a", { href, target: "_blank", rel: LINK_REL });
      link.append(img);
      node.append(link);
    } else {
      node.append(img);
    }
    if (photo.width && photo.height) img.style.aspectRatio = `${photo.width} / ${photo.height}`;
    return node;
  },

  // The server's links are paths on the chat server (the widget may sit on another site).
  _photoHref(url) {
    return url.startsWith("/") ? new URL(url, this._serverOrigin()).href : "";
  },

  // Plainly too large: said at once, nothing sent. Returns the error's text, or "".
  _photoTooLarge(file) {
    const max = Number(this._limits.max_attachment_bytes) || 0;
    return max && file.size > max ? this._t.photoError("too_large", max) : "";
  },

  // POST /attachments/ (multipart): {ok, attachment} or {ok: false, error}.
  async _photoUpload(file, purpose) {
    const session = store.get(this._key("session"));
    if (!session) return { ok: false, error: "offline" };
    const body = new FormData();
    body.append("session", session);
    body.append("for", purpose);
    body.append("file", file, file.name || "photo");
    try {
      const r = await fetch(`${this._serverOrigin()}/attachments/`, { method: "POST", body });
      const data = await r.json().catch(() => ({}));
      if (r.ok && data.ok) return data;
      return { ok: false, error: data.error || (r.status === 413 ? "too_large" : "failed") };
    } catch {
      return { ok: false, error: "offline" };
    }
  },

  // In the chat: the photo shows at once (sending...), then as stored, or goes with the reason.
  async _photoSend(file) {
    const t = this._t;
    const tooLarge = this._photoTooLarge(file);
    if (tooLarge) {
      this._system(tooLarge, "error photo-error");
      return;
    }
    const node = this._photoBubble({ name: file.name }, { "data-status": "pending" });
    this._note(node, t.notSent);
    if (PREVIEWABLE.test(file.type)) {
      const reader = new FileReader();
      reader.onload = () => {
        const img = node.querySelector("img");
        if (img && !img.src) img.src = String(reader.result);
      };
      reader.readAsDataURL(file);
    } else {
      node.querySelector("img").replaceWith(el("span", { class: "photo-name" }, file.name || t.photo));
    }
    this._scrollToEnd(true);
    this._append(node);
    const result = await this._photoUpload(file, "chat");
    if (!result.ok) {
      node.remove();
      this._system(t.photoError(result.error, Number(this._limits.max_attachment_bytes) || 0), "error photo-error");
      return;
    }
    const stored = this._photoBubble(result.attachment, {
      "data-message-id": String(result.message_id),
      "data-status": "sent",
    });
    node.replaceWith(stored);
    this._scrollToEnd();
    this.dispatchEvent(new CustomEvent("tierdesk:photo", { detail: result.attachment }));
  },

  // The ticket form's "Add a photo": uploaded when picked, sent with the ticket by id.
  _ticketPhotos(form, before) {
    const t = this._t;
    const ids = [];
    const list = el("div", { class: "ticket-photos" });
    const error = el("p", { class: "ticket-photo-error", role: "alert" });
    error.hidden = true;
    const input = el("input", { type: "file", accept: PHOTO_ACCEPT, hidden: "" });
    const add = el("button", { type: "button", class: "ticket-attach" });
    add.innerHTML = CLIP;
    add.append(el("span", {}, t.attachTicket));
    add.addEventListener("click", () => input.click());
    input.addEventListener("change", async () => {
      const file = input.files && input.files[0];
      input.value = "";
      if (!file) return;
      error.hidden = true;
      const tooLarge = this._photoTooLarge(file);
      if (tooLarge) {
        error.textContent = tooLarge;
        error.hidden = false;
        return;
      }
      add.disabled = true;
      const result = await this._photoUpload(file, "ticket");
      add.disabled = false;
      if (!result.ok) {
        error.textContent = t.photoError(result.error, Number(this._limits.max_attachment_bytes) || 0);
        error.hidden = false;
        return;
      }
      ids.push(result.attachment.id);
      const img = el("img", { src: this._photoHref(result.attachment.url), alt: result.attachment.name || t.photo });
      list.append(img);
    });
    form.insertBefore(add, before);
    form.insertBefore(list, before);
    form.insertBefore(error, before);
    form.append(input);
    return ids;
  },
};
