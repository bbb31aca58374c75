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
 * This file only loads the element's ES modules from widget/ beside it (main.js, one
 * module per concern), so a shop embeds one classic script tag. Module scripts are
 * always read as UTF-8, whatever charset a shop serves them with; this loader is plain
 * ASCII. The static files answer with Access-Control-Allow-Origin (WhiteNoise), which
 * a shop on another origin needs to import the modules.
 */
(() => {
  "use strict";
  if (customElements.get("tierdesk-chat")) return;
  // The modules sit beside this file; resolved now, while currentScript is set.
  const src = (document.currentScript && document.currentScript.src) || "";
  if (!src) {
    console.error("tierdesk-chat: load widget.js with <script src=...>: its modules are found beside it.");
    return;
  }
  import(new URL("widget/main.js", src).href).catch((err) => {
    console.error("tierdesk-chat: the widget's modules did not load", err);
  });
})();
