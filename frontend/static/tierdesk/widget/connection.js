/*
 * Tierdesk widget: the WebSocket, its states, reconnection with backoff and the ping
 * (methods of <tierdesk-chat>, mixed in by main.js; docs/protocol.md).
 */
import { store } from "./dom.js";

const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 15000;
const PING_EVERY_MS = 25000;
const PONG_TIMEOUT_MS = 10000;
// The server refused this page: a foreign origin (config/origin.py) or no bot check.
const CLOSE_REFUSED = 4403;

export const connection = {
  _endpoint() {
    const attr = this.getAttribute("endpoint");
    if (attr) return new URL(attr, location.href).href.replace(/^http/, "ws");
    return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws/chat/`;
  },

  // The chat server's web origin (help pages, the ticket form), from the WebSocket endpoint.
  _serverOrigin() {
    return new URL(this._endpoint().replace(/^ws/, "http")).origin;
  },

  // One conversation per endpoint and per shopper: a shared computer never resumes
  // another shopper's conversation when the shop sets `shopper`.
  _key(what) {
    return `tierdesk:${what}:${this._endpoint()}:${this.getAttribute("shopper") || ""}`;
  },

  _remember(open) {
    try {
      sessionStorage.setItem(this._key("open"), open);
    } catch {
      /* no storage */
    }
  },

  _setState(state) {
    this._state = state;
    this.setAttribute("data-state", state);
    this._showStatus();
    this.dispatchEvent(new CustomEvent("tierdesk:state", { detail: { state } }));
  },

  // Load: "busy, you are n-th" (docs/protocol.md, "busy"); position 0 ends it.
  _onBusy(f) {
    const n = Number(f.position) || 0;
    this._busy = n > 0 ? { n, reason: f.reason } : null;
    this.toggleAttribute("data-busy", n > 0);
    if (n > 0) this.setAttribute("data-busy-position", String(n));
    else this.removeAttribute("data-busy-position");
    this._showStatus();
  },

  _showStatus() {
    const t = this._t;
    let text = { connecting: t.connecting, reconnecting: t.reconnecting, refused: t.refused }[this._state] || "";
    if (!text && this._state === "open" && this._busy) {
      text = this._busy.reason === "load" ? t.busyLoad : t.busy(this._busy.n);
    }
    this._status.textContent = text;
    this._status.hidden = !text;
  },

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
  },

  _teardown() {
    clearTimeout(this._retryTimer);
    this._retryTimer = null;
    this._stopPing();
    const ws = this._ws;
    this._ws = null;
    if (ws) ws.close(1000);
    this._setState("idle");
  },

  _reconnectNow() {
    const ws = this._ws;
    this._ws = null;
    this._stopPing();
    if (ws) ws.close(1000);
    this._attempt = 0;
    this._setState("reconnecting");
    this._connect();
  },

  _refused() {
    clearTimeout(this._retryTimer);
    this._retryTimer = null;
    this._setState("refused");
    const why =
      this._lastError === "bot_check_required"
        ? "it sent no bot-check fingerprint (the bot-check module did not load; docs/botcheck.md)"
        : `this page's origin (${location.origin}) is not in the server's TIERDESK_WIDGET_ORIGINS (docs/widget.md)`;
    console.error(`tierdesk-chat: ${this._endpoint()} refused the connection (close code ${CLOSE_REFUSED}): ${why}. Not retrying.`);
  },

  _scheduleReconnect() {
    // Exponential backoff with full jitter, so a restarted server is not stampeded.
    const cap = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** this._attempt);
    const delay = cap / 2 + Math.random() * (cap / 2);
    this._attempt += 1;
    this._setState("reconnecting");
    clearTimeout(this._retryTimer);
    this._retryTimer = setTimeout(() => this._connect(), delay);
  },

  _startPing() {
    this._stopPing();
    this._pingTimer = setInterval(() => {
      if (!this._send({ type: "ping", ts: Date.now() })) return;
      clearTimeout(this._pongTimer);
      // A socket that stops answering (sleeping laptop, dead proxy) is replaced.
      this._pongTimer = setTimeout(() => this._reconnectNow(), PONG_TIMEOUT_MS);
    }, PING_EVERY_MS);
  },

  _stopPing() {
    clearInterval(this._pingTimer);
    clearTimeout(this._pongTimer);
    this._pingTimer = this._pongTimer = null;
  },

  _send(frame) {
    const ws = this._ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(frame));
    return true;
  },
};
