// The groupcoord console: a hash router over five pages, each polling its JSON at /ui/api/... while the
// tab is visible. Everything the server sends is put on the page with textContent (group ids and client ids
// are chosen by clients), never as HTML.
"use strict";

const POLL_MS = 1000;
const main = document.getElementById("main");
const statusDot = document.getElementById("status");
let timer = null;
let generation = 0; // bumps on navigation so a late answer for an old page is dropped
const lagHistory = new Map(); // group id -> recent lag samples, for the sparkline

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function table(headers, rows, attrs) {
  return el("table", attrs || {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
}

// Big tables (a group of 1,000 members, 10,000 groups) are built as one escaped HTML string: a thousand
// times faster than a node per cell. Every value goes through esc(); nothing else is ever put into HTML.
const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const esc = (v) => (v === null || v === undefined ? "" : String(v).replace(/[&<>"']/g, (c) => ESC[c]));

// Long tables show PAGE rows at a time with a pager (the offset per table survives the polling re-renders):
// laying out a table of thousands of rows is what makes a big group's page slow, not the data.
const PAGE = 100;
const pageOffsets = new Map(); // table id -> first row shown

function pager(id, total, offset) {
  const last = Math.floor((total - 1) / PAGE) * PAGE;
  const go = (to) => () => { pageOffsets.set(id, to); refresh(); };
  const prev = el("button", { type: "button", class: "prev" }, "‹ prev");
  const next = el("button", { type: "button", class: "next" }, "next ›");
  prev.disabled = offset === 0;
  next.disabled = offset >= last;
  prev.addEventListener("click", go(Math.max(0, offset - PAGE)));
  next.addEventListener("click", go(Math.min(last, offset + PAGE)));
  return el("div", { class: "pager", "data-for": id },
    prev, ` rows ${offset + 1}–${Math.min(total, offset + PAGE)} of ${total} `, next);
}

function fastTable(headers, items, rowHtml, id, cls) {
  let offset = Math.min(pageOffsets.get(id) || 0, Math.max(0, items.length - 1));
  offset -= offset % PAGE;
  const shown = items.length > PAGE ? items.slice(offset, offset + PAGE) : items;
  const wrap = document.createElement("div");
  // headers: column names (escaped here), or a header row already built with esc() (the grid's)
  const head = typeof headers === "string" ? headers : `<tr>${headers.map((h) => `<th>${esc(h)}</th>`).join("")}</tr>`;
  wrap.innerHTML = `<table${id ? ` id="${esc(id)}"` : ""}${cls ? ` class="${esc(cls)}"` : ""}><thead>${head}</thead><tbody>${
    shown.map(rowHtml).join("")}</tbody></table>`;
  const table = wrap.firstElementChild;
  if (items.length <= PAGE) return table;
  return el("div", {}, pager(id, items.length, offset), table);
}

const td = (v, cls) => `<td${cls ? ` class="${cls}"` : ""}>${esc(v)}</td>`;

const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
const time = (ms) => (ms ? new Date(ms).toISOString().replace("T", " ").replace("Z", "") : "–");
const dur = (ms) => (ms === null || ms === undefined ? "…" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
const groupLink = (gid) => el("a", { href: `#/group/${encodeURIComponent(gid)}`, class: "group-link" }, gid);

async function getJson(path) {
  // null: no such thing (a 404, or the null a group page's soft=1 ask gets for a group that is gone)
  const resp = await fetch(path, { cache: "no-store", credentials: "same-origin" });
  if (resp.status === 404) return null;
  if (!resp.ok) throw new Error(`${resp.status} ${resp.statusText}`);
  return resp.json();
}

function card(label, value, id) {
  return el("div", { class: "card", id }, el("div", { class: "n" }, value), el("div", { class: "k" }, label));
}

function renderOverview(d) {
  const states = Object.entries(d.groups_by_state).map(([s, n]) => `${s}: ${n}`).join(", ") || "none";
  const types = Object.entries(d.groups_by_type).map(([s, n]) => `${s}: ${n}`).join(", ") || "none";
  const parts = [
    el("h1", {}, "Overview", d.loading ? el("span", { class: "muted" }, " (loading state…)") : null),
    el("div", { class: "cards" },
      card("groups", fmt(d.groups), "ov-groups"), card("members", fmt(d.members), "ov-members"),
      card("topics", fmt(d.topics), "ov-topics"), card("partitions", fmt(d.partitions)),
      card("connections", fmt(d.connections), "ov-connections"), card("transactions", fmt(d.transactions))),
    el("h2", {}, "Groups"),
    el("p", {}, `by type: ${types}`), el("p", {}, `by state: ${states}`),
    el("h2", {}, "This node"),
    table(["node id", "version", "listeners", "started"], [el("tr", {},
      el("td", {}, d.node_id), el("td", {}, d.version), el("td", {}, (d.listeners || []).join(", ")),
      el("td", {}, time(d.started_ms)))]),
  ];
  if (d.cluster) {
    parts.push(el("h2", {}, "Cluster"),
      table(["node", "address", "shards held here"], d.cluster.nodes.map((n) => el("tr", {},
        el("td", {}, n.node_id), el("td", {}, `${n.host}:${n.port}`),
        el("td", {}, n.node_id === d.cluster.node_id ? `${d.cluster.held_shards.length} of ${d.cluster.shards}` : "")))));
  }
  return parts;
}

function renderGroups(d) {
  const row = (g) => `<tr data-group="${esc(g.group_id)}"><td><a class="group-link" href="#/group/${
    esc(encodeURIComponent(g.group_id))}">${esc(g.group_id)}</a></td>${td(g.type)}${td(g.state, `state-${esc(g.state)}`)}${
    td(fmt(g.members), "num")}${td(g.protocol || "–")}${td(fmt(g.generation), "num")}${td(fmt(g.lag), "num")}${
    td(fmt(g.rebalances), "num")}${td(g.last_rebalance ? `${g.last_rebalance.cause || "?"}, ${dur(g.last_rebalance.duration_ms)}` : "–")}</tr>`;
  return [el("h1", {}, `Groups (${d.groups.length})`),
    fastTable(["group", "type", "state", "members", "protocol", "generation", "lag", "rebalances", "last rebalance"],
      d.groups, row, "groups-table")];
}

function spark(values) {
  if (values.length < 2) return null;
  const w = 120, h = 24, max = Math.max(1, ...values);
  const pts = values.map((v, i) => `${(i * w) / (values.length - 1)},${h - (v * h) / max}`).join(" ");
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "spark"); svg.setAttribute("width", w); svg.setAttribute("height", h);
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", pts); line.setAttribute("fill", "none"); line.setAttribute("stroke", "#2457d6");
  svg.append(line);
  return svg;
}

function memberLabel(m) {
  return m.group_instance_id ? `${m.client_id} (${m.group_instance_id})` : m.client_id;
}

// An owner by the client id its user chose (the member id, which the client generated, as its tooltip)
const ownerTd = (p) => (p.owner ? `<td class="owner" title="${esc(p.owner_member_id)}">${esc(p.owner)}</td>` : td("–"));

function renderGrid(g) {
  if (!g.members.length || !g.partitions.length) return el("p", { class: "muted" }, "no assignment");
  if (!g.grid) {
    return fastTable(["member", "partitions"], g.members,
      (m) => `<tr>${td(memberLabel(m))}${td(m.assignment.join(", ") || "–")}</tr>`, "assignment-list");
  }
  const names = g.partitions.map((p) => `${p.topic}-${p.partition}`);
  const head = `<tr><th>member \\ partition</th>${names.map((n) => `<th class="rot">${esc(n)}</th>`).join("")}</tr>`;
  const row = (m) => {
    const mine = new Set(m.assignment);
    return `<tr data-member="${esc(m.member_id)}">${td(memberLabel(m))}${names.map((n) => mine.has(n)
      ? `<td class="cell own" title="${esc(n)}" data-owned="1"></td>` : `<td class="cell" title="${esc(n)}"></td>`).join("")}</tr>`;
  };
  return el("div", { class: "scroll" }, fastTable(head, g.members, row, "assignment-grid", "grid"));
}

function renderGroup(g) {
  const hist = lagHistory.get(g.group_id) || [];
  hist.push(g.lag); if (hist.length > 60) hist.shift(); lagHistory.set(g.group_id, hist);
  const longest = Math.max(1, ...g.timeline.map((r) => r.duration_ms || 0));
  return [
    el("h1", {}, "Group ", el("span", { id: "group-id" }, g.group_id)),
    el("div", { class: "cards" },
      card("state", g.state, "g-state"), card("type", g.type), card("members", fmt(g.members.length), "g-members"),
      card(g.type === "classic" ? "generation" : "group epoch", fmt(g.generation), "g-generation"), card("protocol", g.protocol || "–"),
      el("div", { class: "card" }, el("div", { class: "n", id: "g-lag" }, fmt(g.lag)), el("div", { class: "k" }, "lag ", spark(hist)))),
    el("h2", {}, "Members"),
    g.type === "classic"
      ? fastTable(["member id", "client id", "host", "instance id", "session timeout", "partitions"],
        g.members, (m) => `<tr><td>${esc(m.member_id)}${m.leader ? ' <span class="chip">leader</span>' : ""}</td>${
          td(m.client_id)}${td(m.host)}${td(m.group_instance_id || "–")}${td(dur(m.session_timeout_ms), "num")}${
          td(m.assignment.length, "num")}</tr>`, "members-table")
      : g.type === "share"
      ? fastTable(["member id", "client id", "host", "rack", "member epoch", "subscribed topics", "partitions"],
        g.members, (m) => `<tr>${td(m.member_id)}${td(m.client_id || "–")}${td(m.host || "–")}${td(m.rack_id || "–")}${
          td(m.member_epoch, "num")}${td(m.subscription.join(", ") || "–")}${td(m.assignment.join(", ") || "–")}</tr>`, "members-table")
      : fastTable(["member id", "client id", "host", "instance id", "member epoch", "state", "partitions", "pending revocation"],
        g.members, (m) => `<tr>${td(m.member_id)}${td(m.client_id)}${td(m.host)}${td(m.group_instance_id || "–")}${
          td(m.member_epoch, "num")}${td(m.member_state || "–")}${td(m.assignment.length, "num")}${
          td((m.pending_revocation || []).join(", ") || "–")}</tr>`, "members-table"),
    el("h2", {}, "Assignment"), renderGrid(g),
    g.type === "share"
      ? [el("h2", {}, "Share partitions"),
        fastTable(["topic", "partition", "start (SPSO)", "end (SPEO+1)", "log end", "not yet acknowledged", "in flight", "members"],
          g.partitions, (p) => `<tr>${td(p.topic)}${td(p.partition, "num")}${td(fmt(p.committed), "num")}${
            td(fmt(p.share_end), "num")}${td(fmt(p.log_end), "num")}${td(fmt(p.lag), "num lag")}${
            td(Object.entries(p.in_flight || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "–")}${ownerTd(p)}</tr>`,
          "offsets-table")]
      : [el("h2", {}, "Offsets and lag"),
        fastTable(["topic", "partition", "committed", "log end", "lag", "owner"], g.partitions, (p) => `<tr>${
          td(p.topic)}${td(p.partition, "num")}${td(fmt(p.committed), "num")}${td(fmt(p.log_end), "num")}${
          td(fmt(p.lag), "num lag")}${ownerTd(p)}</tr>`, "offsets-table")],
    el("h2", {}, "Rebalances"),
    g.timeline.length ? null : el("p", { class: "muted", id: "timeline-note" }, g.type === "share"
      ? "Share groups do not rebalance (KIP-932): the coordinator hands each member its new partitions on its next "
        + "heartbeat, with no group-wide barrier, so there is no rebalance to show; the group epoch above counts "
        + "the assignment changes."
      : "No rebalance of this group since this server started (the timeline is kept in memory)."),
    g.timeline.length === 0 ? null : table(["started", "cause", "duration", "generation", "members", "joined", "left"], g.timeline.map((r) =>
      el("tr", { class: r.open ? "open rebalance" : "rebalance" },
        el("td", {}, time(r.start_ms)), el("td", {}, r.cause || "?"),
        el("td", {}, el("span", { class: "bar", style: `width:${Math.max(2, (80 * (r.duration_ms || 0)) / longest)}px` }), " ", dur(r.duration_ms)),
        el("td", { class: "num" }, r.open ? `${r.generation_from} → …` : `${r.generation_from} → ${r.generation}`),
        el("td", { class: "num" }, fmt(r.members)),
        el("td", {}, r.joined.map((j) => el("span", { class: "chip" }, j.client_id || j.member_id))),
        el("td", {}, r.left.map((j) => el("span", { class: "chip left" }, `${j.client_id || j.member_id} (${j.reason})`))))),
      { id: "timeline-table" }),
    g.replacements.length ? [el("h2", {}, "Static member replacements"),
      table(["when", "instance id", "new member id", "replaced member id"], g.replacements.map((r) => el("tr", {},
        el("td", {}, time(r.ts)), el("td", {}, r.group_instance_id), el("td", {}, r.member_id), el("td", {}, r.previous_member_id))))] : null,
    g.pending_transactional_offsets.length ? [el("h2", {}, "Pending transactional offsets"),
      table(["producer id", "topic", "partition", "offset"], g.pending_transactional_offsets.map((o) => el("tr", {},
        el("td", {}, o.producer_id), el("td", {}, o.topic), el("td", { class: "num" }, o.partition), el("td", { class: "num" }, fmt(o.offset)))))] : null,
  ];
}

function renderTopics(d) {
  return [el("h1", {}, `Topics (${d.topics.length})`),
    table(["topic", "topic id", "partitions", "size", "messages (end − start)", "configs"], d.topics.map((t) => el("tr", {},
      el("td", {}, t.name), el("td", { class: "muted" }, t.topic_id), el("td", { class: "num" }, t.partitions.length),
      el("td", { class: "num" }, fmt(t.size_bytes)),
      el("td", { class: "num" }, fmt(t.partitions.reduce((a, p) => a + ((p.log_end || 0) - (p.log_start || 0)), 0))),
      el("td", {}, Object.entries(t.configs).map(([k, v]) => el("span", { class: "chip" }, `${k}=${v}`))))), { id: "topics-table" })];
}

function renderTransactions(d) {
  return [el("h1", {}, `Transactions (${d.transactions.length})`),
    table(["transactional id", "producer id", "epoch", "state", "started", "timeout", "partitions", "groups"],
      d.transactions.map((t) => el("tr", {}, el("td", {}, t.transactional_id), el("td", { class: "num" }, t.producer_id),
        el("td", { class: "num" }, t.producer_epoch), el("td", {}, t.state), el("td", {}, t.start_ms > 0 ? time(t.start_ms) : "–"),
        el("td", {}, dur(t.timeout_ms)), el("td", {}, t.partitions.join(", ")), el("td", {}, t.groups.join(", ")))),
      { id: "transactions-table" })];
}

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  if (hash.startsWith("/group/")) {
    const gid = decodeURIComponent(hash.slice("/group/".length));
    return { nav: "groups", api: `/ui/api/group?id=${encodeURIComponent(gid)}&soft=1`, render: renderGroup, missing: `no group ${gid}` };
  }
  const pages = {
    "/": ["overview", renderOverview], "/groups": ["groups", renderGroups],
    "/topics": ["topics", renderTopics], "/transactions": ["transactions", renderTransactions],
  };
  const [name, render] = pages[hash] || pages["/"];
  return { nav: name, api: `/ui/api/${name}`, render, missing: "not found" };
}

async function tick(gen) {
  const r = route();
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.nav === r.nav));
  try {
    const t0 = performance.now();
    const data = await getJson(r.api);
    if (gen !== generation) return;
    const t1 = performance.now();
    const scroll = window.scrollY;
    main.replaceChildren(...(data === null ? [el("p", { class: "muted" }, r.missing)] : r.render(data).flat().filter(Boolean)));
    window.scrollTo(0, scroll);
    void main.offsetHeight; // force layout, so the figure includes it (bench/console.py reads __lastRender)
    window.__lastRender = { api: r.api, fetchMs: t1 - t0, renderMs: performance.now() - t1, at: Date.now() };
    statusDot.classList.remove("stale");
    document.body.dataset.updated = String(Date.now());
  } catch (err) {
    statusDot.classList.add("stale");
    statusDot.title = `live updates failing: ${err.message}`;
  }
  if (gen === generation) timer = setTimeout(() => schedule(gen), POLL_MS);
}

function schedule(gen) {
  if (document.visibilityState === "visible") tick(gen);
  else timer = setTimeout(() => schedule(gen), POLL_MS);
}

function refresh() {
  clearTimeout(timer);
  tick(generation);
}

function navigate() {
  generation += 1;
  clearTimeout(timer);
  tick(generation);
}

window.addEventListener("hashchange", navigate);
navigate();
