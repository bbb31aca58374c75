/*
 * Tierdesk widget: small DOM and storage helpers shared by its modules.
 */
// A thumb (drawn here, no icon font); "down" is the same shape turned over.
export const THUMB =
  '<svg viewBox="0 0 24 24" width="15" height="15" aria-hidden="true" focusable="false">' +
  '<path fill="currentColor" d="M2 10h4v11H2zM8 10l4.5-7.5c1.4 0 2.4 1 2.1 2.5L13.9 9H20a2 2 0 0 1 2 2.3l-1.3 7.9A2 2 0 0 1 18.7 21H8z"/></svg>';

export const el = (tag, attrs = {}, text) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text != null) node.textContent = text;
  return node;
};

export const newId = () =>
  crypto.randomUUID
    ? crypto.randomUUID()
    : // randomUUID needs a secure context; plain-http shops still get a unique id.
      Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) =>
        b.toString(16).padStart(2, "0"),
      ).join("");

export const store = {
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

// Web addresses in a reply (a carrier's tracking page, a help article): http(s) only,
// without the punctuation that ends the sentence around them.
const URL_RE = /https?:\/\/[^\s<>"'\u3000-\u303f\uff00-\uffef]+/g;
const TRAILING = /[.,;:!?)\]}'"]+$/;
export const LINK_REL = "noopener noreferrer nofollow";

// Turn the web addresses in ``node``'s text into links that open in a new tab, without
// the opener; the text stays text (never parsed as HTML).
export const linkify = (node) => {
  const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.parentElement?.closest("a")) texts.push(n);
  }
  for (const t of texts) {
    const value = t.nodeValue;
    URL_RE.lastIndex = 0;
    if (!URL_RE.test(value)) continue;
    URL_RE.lastIndex = 0;
    const out = document.createDocumentFragment();
    let last = 0;
    for (const m of value.matchAll(URL_RE)) {
      const href = m[0].replace(TRAILING, "");
      out.append(value.slice(last, m.index));
      out.append(el("a", { href, target: "_blank", rel: LINK_REL }, href));
      last = m.index + href.length;
    }
    out.append(value.slice(last));
    t.replaceWith(out);
  }
};
