// The agent desk: a live inbox over /ws/desk/ (desk/consumers.py, docs/desk.md).
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  // The page's language (Django sets <html lang> from the agent's browser): strings.js.
  const S = window.DESK_STRINGS[document.documentElement.lang.startsWith("zh") ? "zh" : "en"];
  const me = document.body.dataset.agent;
  let ws = null;
  let inbox = { queue: [], mine: [], tickets: [], agents: [] };
  let current = null; // the open conversation (the server's "conversation" frame)
  let currentTicket = null;
  let typingTimer = null;
  let lastTypingSent = 0;
  let retry = 500;
  const seen = new Set(); // message ids drawn in the open conversation

  function send(frame) {
    if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  }
  function toast(text) {
    const t = $("toast");
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toast.timer);
    toast.timer = setTimeout(() => (t.hidden = true), 4000);
  }
  function wait(s) {
    if (s < 60) return S.seconds(s);
    if (s < 3600) return S.minutes(Math.floor(s / 60));
    return S.hours(Math.floor(s / 3600), Math.floor((s % 3600) / 60));
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // A code the server sends (an order's status, how the shopper was verified) as a word
  // of the agent's language; one the table doesn't know, e.g. a status of the shop's own
  // order system, shows as it came.
  function word(table, code) {
    return Object.hasOwn(table, code) ? table[code] : code;
  }
  function roleLabel(m) {
    if (m.role === "user") return S.shopper;
    if (m.role === "agent") return m.agent || S.agent;
    return `${S.bot}${m.tier ? " · " + m.tier : ""}`;
  }

  function connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    ws = new WebSocket(`${proto}://${location.host}/ws/desk/`);
    $("conn").textContent = S.connecting;
    ws.onopen = () => {
      retry = 500;
      $("conn").textContent = S.live;
      $("conn").className = "conn live";
      send({ type: "presence", status: $("presence").value });
      if (current) send({ type: "open", conversation: current.id });
    };
    ws.onclose = (e) => {
      $("conn").textContent = e.code === 4403 ? S.notAllowed : S.reconnecting;
      $("conn").className = "conn down";
      if (e.code === 4403) return;
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 10000);
    };
    ws.onmessage = (e) => onFrame(JSON.parse(e.data));
  }

  function onFrame(f) {
    switch (f.type) {
      case "inbox": inbox = f; drawInbox(); break;
      case "conversation": openConversation(f); break;
      case "message": onMessage(f); break;
      case "typing":
        if (current && f.conversation === current.id && f.who === "shopper") showTyping();
        break;
      case "note":
        if (current && f.conversation === current.id) drawNote(f);
        break;
      case "result": onResult(f); break;
      case "kb_results": drawKb(f); break;
      case "error": toast(Object.hasOwn(S.deskErrors, f.code) ? S.deskErrors[f.code] : f.message || f.code); break;
    }
  }

  function item(conv, mine) {
    const li = el("li", "item" + (current && current.id === conv.id ? " active" : ""));
    li.dataset.id = conv.id;
    li.dataset.conversation = conv.public_id;
    const head = el("div", "item-head");
    head.append(
      el("strong", "", conv.customer_id || S.anonymous),
      el("span", "wait", mine ? S.yours : S.waiting(wait(conv.wait_s))),
    );
    const meta = el("div", "meta");
    meta.append(
      el("span", "tag", conv.language.toUpperCase()),
      ...conv.tiers.map((t) => el("span", "tag tier", t)),
    );
    if (conv.identity !== "none") meta.append(el("span", "tag ok", S.verified));
    if (conv.vip) meta.append(el("span", "tag vip", "VIP"));
    const last = el("div", "last");
    for (const m of conv.last) last.append(el("p", m.role, `${m.role === "user" ? S.shopper : m.role === "agent" ? S.agent : S.bot}: ${m.text}`));
    li.append(head, meta, last);
    if (!mine) {
      const b = el("button", "primary small claim", S.claim);
      b.onclick = (e) => { e.stopPropagation(); send({ type: "claim", conversation: conv.id }); };
      li.append(b);
    }
    li.onclick = () => send({ type: "open", conversation: conv.id });
    return li;
  }

  function drawInbox() {
    const q = $("queue"), m = $("mine"), t = $("tickets");
    q.replaceChildren(...inbox.queue.map((c) => item(c, false)));
    m.replaceChildren(...inbox.mine.map((c) => item(c, true)));
    t.replaceChildren(...inbox.tickets.map((tk) => {
      const li = el("li", "item" + (currentTicket && currentTicket.id === tk.id ? " active" : ""));
      li.append(el("strong", "", tk.email), el("p", "", tk.question.slice(0, 140)));
      li.onclick = () => openTicket(tk);
      return li;
    }));
    $("queue-count").textContent = inbox.queue.length;
    $("mine-count").textContent = inbox.mine.length;
    $("ticket-count").textContent = inbox.tickets.length;
    $("queue-empty").hidden = inbox.queue.length > 0;
    document.title = inbox.queue.length ? S.titleWaiting(inbox.queue.length) : S.title;
    const sel = $("transfer-to");
    const others = inbox.agents.filter((a) => a.name !== me);
    sel.replaceChildren(...others.map((a) => {
      const o = el("option", "", a.online ? a.name : S.offline(a.name));
      o.value = a.id;
      return o;
    }));
    // Nobody to transfer to: say so instead of an empty menu.
    for (const id of ["transfer-label", "transfer-to", "transfer"]) $(id).hidden = others.length === 0;
    $("no-agents").hidden = others.length > 0;
    if (current) {
      // The open conversation left the agent's view (claimed by someone else, requeued).
      const still = [...inbox.queue, ...inbox.mine].find((c) => c.id === current.id);
      const mine = inbox.mine.some((c) => c.id === current.id);
      if (!still && current.status !== "resolved") markTaken();
      else if (still) setMine(mine, still.status);
    }
  }

  function setMine(mine, status) {
    current.mine = mine;
    current.status = status;
    $("claim").hidden = mine || status !== "queued";
    $("transfer-box").hidden = !mine;
    $("resolve").hidden = !mine;
    $("reply-text").disabled = !mine;
    $("send").disabled = !mine;
    $("reply-text").placeholder = mine ? S.writeHint : S.claimToReply;
  }

  function markTaken() {
    $("claim").hidden = true;
    $("transfer-box").hidden = true;
    $("resolve").hidden = true;
    $("reply-text").disabled = true;
    $("send").disabled = true;
    $("reply-text").placeholder = S.takenByOther;
  }

  function openConversation(f) {
    current = f;
    currentTicket = null;
    seen.clear();
    $("placeholder").hidden = true;
    $("ticket").hidden = true;
    $("conversation").hidden = false;
    $("conv-title").textContent = `${f.customer ? f.customer.name || f.customer.customer_id : S.anonymousTitle} · ${f.language.toUpperCase()}`;
    $("messages").replaceChildren();
    for (const m of f.messages) drawMessage(m);
    $("notes").replaceChildren();
    for (const n of f.notes) drawNote(n);
    drawCustomer(f.customer);
    const canned = $("canned");
    canned.replaceChildren(el("option", "", S.cannedPick));
    canned.firstChild.value = "";
    // One group per topic; an entry shows the reply's opening words, its title the whole.
    const groups = new Map();
    for (const c of f.canned || []) {
      if (!groups.has(c.group)) {
        const g = document.createElement("optgroup");
        g.label = c.group;
        groups.set(c.group, g);
        canned.append(g);
      }
      const o = el("option", "", c.label);
      o.value = c.text;
      o.title = c.text;
      groups.get(c.group).append(o);
    }
    setMine(f.mine, f.status);
    drawInbox();
    if (f.mine) $("reply-text").focus();
  }

  function drawMessage(m) {
    if (m.message_id && seen.has(m.message_id)) return;
    if (m.message_id) seen.add(m.message_id);
    const li = el("li", `msg ${m.role}`);
    li.append(el("span", "who", roleLabel(m)));
    if (m.text) li.append(el("p", "text", m.text));
    if (m.attachment) li.append(photoLink(m.attachment));
    $("messages").append(li);
    li.scrollIntoView({ block: "end" });
  }

  // A shopper's photo: a thumbnail linking to the full photo (the desk's own, staff-only URL).
  function photoLink(photo) {
    const a = el("a", "photo");
    a.href = photo.url;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    a.title = S.photo;
    const img = el("img");
    img.src = photo.url;
    img.alt = photo.name || S.photo;
    img.loading = "lazy";
    a.append(img);
    return a;
  }

  function onMessage(f) {
    if (current && f.conversation === current.id) {
      drawMessage(f);
      if (f.role === "user") $("typing").hidden = true;
    } else if (f.role === "user") {
      toast(S.newMessage);
    }
  }

  function showTyping() {
    $("typing").hidden = false;
    clearTimeout(typingTimer);
    typingTimer = setTimeout(() => ($("typing").hidden = true), 4000);
  }

  function drawNote(n) {
    const li = el("li", "note");
    li.append(el("span", "who", n.author || S.note), el("p", "", n.text));
    $("notes").append(li);
  }

  function drawCustomer(c) {
    const box = $("customer");
    box.replaceChildren();
    if (!c) {
      box.append(el("p", "empty", S.notVerified));
      return;
    }
    const dl = el("dl");
    const row = (k, v) => dl.append(el("dt", "", k), el("dd", "", v));
    if (c.name) row(S.name, c.name);
    row(S.customer, c.customer_id);
    if (c.email) row(S.email, c.email);
    if (c.verified_by) row(S.verifiedBy, word(S.verifiedHow, c.verified_by));
    if (c.vip) row(S.vip, S.yes);
    box.append(dl);
    if (c.error) box.append(el("p", "empty", S.ordersUnavailable(c.error)));
    const orders = el("table", "orders");
    const head = el("tr");
    for (const h of S.orderColumns) head.append(el("th", "", h));
    orders.append(head);
    for (const o of c.orders || []) {
      const tr = el("tr");
      tr.append(el("td", "", o.order_id), el("td", "", word(S.orderStatuses, o.status)), el("td", "", o.total_shown), el("td", "", o.placed_on));
      orders.append(tr);
    }
    box.append(el("h3", "", S.orders((c.orders || []).length)), orders);
  }

  function onResult(f) {
    if (f.action === "claim" && !f.ok) {
      toast(S.claimedByOther);
      if (current && current.id === f.conversation) markTaken();
    } else if (f.action === "claim" && f.ok) {
      toast(S.claimed);
    } else if (f.action === "resolve" && f.ok) {
      toast(S.resolved);
      if (current && current.id === f.conversation) {
        current.status = "resolved";
        markTaken();
        $("reply-text").placeholder = S.resolvedHint;
      }
    } else if (f.action === "transfer") {
      toast(f.ok ? S.transferred : S.notTransferred(word(S.transferReasons, f.reason)));
    } else if (f.action === "ticket_answer") {
      toast(f.ok ? S.emailed : S.ticketTaken);
      if (f.ok) { currentTicket = null; $("ticket").hidden = true; $("placeholder").hidden = false; }
    }
  }

  function openTicket(tk) {
    currentTicket = tk;
    current = null;
    $("conversation").hidden = true;
    $("placeholder").hidden = true;
    $("ticket").hidden = false;
    $("ticket-title").textContent = S.ticketFrom(tk.email);
    $("ticket-question").textContent = tk.question;
    $("ticket-photos").replaceChildren(...(tk.attachments || []).map(photoLink));
    drawCustomer(null);
    $("notes").replaceChildren();
    drawInbox();
  }

  $("claim").onclick = () => current && send({ type: "claim", conversation: current.id });
  $("resolve").onclick = () => current && send({ type: "resolve", conversation: current.id });
  $("transfer").onclick = (e) => {
    e.preventDefault();
    if (current) send({ type: "transfer", conversation: current.id, to: Number($("transfer-to").value) });
  };
  $("presence").onchange = () => send({ type: "presence", status: $("presence").value });
  const replySend = () => {
    const text = $("reply-text").value.trim();
    if (!text || !current || !current.mine) return;
    send({ type: "send", conversation: current.id, text, id: `a${Date.now()}` });
    $("reply-text").value = "";
  };
  $("reply").onsubmit = (e) => { e.preventDefault(); replySend(); };
  $("reply-text").onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); replySend(); }
  };
  $("reply-text").oninput = () => {
    const now = Date.now();
    if (current && current.mine && now - lastTypingSent > 1500) {
      lastTypingSent = now;
      send({ type: "typing", conversation: current.id });
    }
  };
  // Inserted text goes into the reply box for the agent to edit; nothing is sent by itself.
  function insert(text) {
    const box = $("reply-text");
    if (box.disabled) { toast(S.claimFirst); return; }
    box.value = box.value ? `${box.value.trimEnd()}\n${text}` : text;
    box.focus();
  }
  function drawKb(f) {
    const list = $("kb-results");
    list.replaceChildren();
    const add = (title, text) => {
      const li = el("li", "kb-item");
      const b = el("button", "small", S.insert);
      b.onclick = () => insert(text);
      li.append(el("strong", "", title), el("p", "", text.length > 220 ? `${text.slice(0, 220)}…` : text), b);
      list.append(li);
    };
    for (const c of f.cards) add(S.approvedAnswer(c.heading || c.anchor), c.answer);
    for (const p of f.passages) add(`${p.title} § ${p.anchor}`, p.text);
    if (!f.cards.length && !f.passages.length) list.append(el("li", "empty", S.nothingFound(f.query)));
  }
  $("canned-form").onsubmit = (e) => {
    e.preventDefault();
    if ($("canned").value) insert($("canned").value);
  };
  $("kb-form").onsubmit = (e) => {
    e.preventDefault();
    const q = $("kb-q").value.trim();
    if (q) send({ type: "kb_search", q, language: current ? current.language : "en" });
  };
  $("note-form").onsubmit = (e) => {
    e.preventDefault();
    const text = $("note-text").value.trim();
    if (text && current) send({ type: "note", conversation: current.id, text });
    $("note-text").value = "";
  };
  $("ticket-form").onsubmit = (e) => {
    e.preventDefault();
    const text = $("ticket-text").value.trim();
    if (text && currentTicket) send({ type: "ticket_answer", ticket: currentTicket.id, text });
    $("ticket-text").value = "";
  };
  // Heartbeat: keeps this agent's conversations theirs (the server requeues the
  // conversations of agents silent for longer than the timeout).
  setInterval(() => send({ type: "ping", ts: Date.now() }), 10000);
  // The waits tick without a server round trip.
  setInterval(() => {
    for (const c of inbox.queue) c.wait_s += 5;
    if (inbox.queue.length) drawInbox();
  }, 5000);
  connect();
})();
