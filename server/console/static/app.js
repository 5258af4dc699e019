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

const fmt = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"));
const time = (ms) => (ms ? new Date(ms).toISOString().replace("T", " ").replace("Z", "") : "–");
const dur = (ms) => (ms === null || ms === undefined ? "…" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
const groupLink = (gid) => el("a", { href: `#/group/${encodeURIComponent(gid)}`, class: "group-link" }, gid);

async function getJson(path) {
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
  const rows = d.groups.map((g) => el("tr", { "data-group": g.group_id },
    el("td", {}, groupLink(g.group_id)), el("td", {}, g.type),
    el("td", { class: `state-${g.state}` }, g.state), el("td", { class: "num" }, fmt(g.members)),
    el("td", {}, g.protocol || "–"), el("td", { class: "num" }, fmt(g.generation)),
    el("td", { class: "num" }, fmt(g.lag)), el("td", { class: "num" }, fmt(g.rebalances)),
    el("td", {}, g.last_rebalance ? `${g.last_rebalance.cause || "?"}, ${dur(g.last_rebalance.duration_ms)}` : "–")));
  return [el("h1", {}, `Groups (${d.groups.length})`),
    table(["group", "type", "state", "members", "protocol", "generation", "lag", "rebalances", "last rebalance"],
      rows, { id: "groups-table" })];
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

function renderGrid(g) {
  if (!g.members.length || !g.partitions.length) return el("p", { class: "muted" }, "no assignment");
  if (!g.grid) {
    return table(["member", "partitions"], g.members.map((m) => el("tr", {},
      el("td", {}, memberLabel(m)), el("td", {}, m.assignment.join(", ") || "–"))), { id: "assignment-list" });
  }
  const head = el("tr", {}, el("th", {}, "member \\ partition"),
    g.partitions.map((p) => el("th", { class: "rot" }, `${p.topic}-${p.partition}`)));
  const rows = g.members.map((m) => {
    const mine = new Set(m.assignment);
    return el("tr", { "data-member": m.member_id }, el("td", {}, memberLabel(m)),
      g.partitions.map((p) => {
        const own = mine.has(`${p.topic}-${p.partition}`);
        return el("td", { class: own ? "cell own" : "cell", title: `${p.topic}-${p.partition}`, "data-owned": own ? "1" : null });
      }));
  });
  return el("div", { class: "scroll" }, el("table", { class: "grid", id: "assignment-grid" },
    el("thead", {}, head), el("tbody", {}, rows)));
}

function renderGroup(g) {
  const hist = lagHistory.get(g.group_id) || [];
  hist.push(g.lag); if (hist.length > 60) hist.shift(); lagHistory.set(g.group_id, hist);
  const longest = Math.max(1, ...g.timeline.map((r) => r.duration_ms || 0));
  return [
    el("h1", {}, "Group ", el("span", { id: "group-id" }, g.group_id)),
    el("div", { class: "cards" },
      card("state", g.state, "g-state"), card("type", g.type), card("members", fmt(g.members.length), "g-members"),
      card("generation", fmt(g.generation), "g-generation"), card("protocol", g.protocol || "–"),
      el("div", { class: "card" }, el("div", { class: "n", id: "g-lag" }, fmt(g.lag)), el("div", { class: "k" }, "lag ", spark(hist)))),
    el("h2", {}, "Members"),
    table(["member id", "client id", "host", "instance id", "session timeout", "partitions"],
      g.members.map((m) => el("tr", {}, el("td", {}, m.member_id, m.leader ? el("span", { class: "chip" }, "leader") : null),
        el("td", {}, m.client_id), el("td", {}, m.host), el("td", {}, m.group_instance_id || "–"),
        el("td", { class: "num" }, dur(m.session_timeout_ms)), el("td", { class: "num" }, m.assignment.length))),
      { id: "members-table" }),
    el("h2", {}, "Assignment"), renderGrid(g),
    el("h2", {}, "Offsets and lag"),
    table(["topic", "partition", "committed", "log end", "lag", "owner"], g.partitions.map((p) => el("tr", {},
      el("td", {}, p.topic), el("td", { class: "num" }, p.partition), el("td", { class: "num" }, fmt(p.committed)),
      el("td", { class: "num" }, fmt(p.log_end)), el("td", { class: "num lag" }, fmt(p.lag)),
      el("td", {}, p.owner || "–"))), { id: "offsets-table" }),
    el("h2", {}, "Rebalances"),
    table(["started", "cause", "duration", "generation", "members", "joined", "left"], g.timeline.map((r) =>
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
    return { nav: "groups", api: `/ui/api/group?id=${encodeURIComponent(gid)}`, render: renderGroup, missing: `no group ${gid}` };
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
    const data = await getJson(r.api);
    if (gen !== generation) return;
    const scroll = window.scrollY;
    main.replaceChildren(...(data === null ? [el("p", { class: "muted" }, r.missing)] : r.render(data).flat().filter(Boolean)));
    window.scrollTo(0, scroll);
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

function navigate() {
  generation += 1;
  clearTimeout(timer);
  tick(generation);
}

window.addEventListener("hashchange", navigate);
navigate();
