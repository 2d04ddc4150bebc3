"use strict";
// Telltale report: draws the views from the JSON in #report-data. Every value from the
// data goes into the page as text (textContent, text nodes, SVG text), never as markup.
(function () {
  // The overview's data comes before this script; the sessions' and detections' after it,
  // parsed when a view first needs them (the overview is drawn while the rest still loads).
  const HEAD = JSON.parse(document.getElementById("report-head").textContent);
  const META = HEAD.meta, OV = HEAD.overview;
  let SESSIONS = null, DETS = null;
  function loadData() {
    if (SESSIONS !== null) return true;
    const el = document.getElementById("report-data");
    if (!el || document.readyState === "loading") return false;
    const data = JSON.parse(el.textContent);
    SESSIONS = data.sessions;
    DETS = data.detections;
    return true;
  }
  const SEVS = ["critical", "high", "medium", "low", "informational"];
  const SEV_RANK = { critical: 5, high: 4, medium: 3, low: 2, informational: 1 };
  const COLORS = ["--c1", "--c2", "--c3", "--c4", "--c5", "--c6", "--c7", "--c8"];
  const SVGNS = "http://www.w3.org/2000/svg";
  const main = document.getElementById("main");
  const state = { sessions: { q: "", client: "", sev: "", key: "last", dir: -1 },
                  detections: { q: "", sev: "", category: "", key: "at", dir: -1 } };

  // -- helpers ------------------------------------------------------------------------
  function h(tag, attrs) {
    const el = document.createElement(tag);
    if (attrs) for (const k in attrs) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (k === "text") el.textContent = String(v);
      else if (k === "class") el.className = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, String(v));
    }
    for (let i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { for (const c of child) add(el, c); return; }
    el.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  function s(tag, attrs) {
    const el = document.createElementNS(SVGNS, tag);
    for (const k in attrs || {}) {
      if (k === "text") el.textContent = String(attrs[k]); else el.setAttribute(k, String(attrs[k]));
    }
    return el;
  }
  const nf = new Intl.NumberFormat("en-US");
  const num = (n) => (n === null || n === undefined ? "" : nf.format(n));
  function compact(n) {
    if (n >= 1e9) return (n / 1e9).toFixed(n >= 1e10 ? 0 : 1) + "G";
    if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M";
    if (n >= 1e3) return (n / 1e3).toFixed(n >= 1e4 ? 0 : 1) + "k";
    return String(n);
  }
  let zone = META.zone || undefined;
  let fmtFull, fmtTime;
  try {
    fmtFull = new Intl.DateTimeFormat("sv-SE", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit",
      hour: "2-digit", minute: "2-digit", hour12: false });
    fmtTime = new Intl.DateTimeFormat("en-GB", { timeZone: zone, hour: "2-digit", minute: "2-digit", second: "2-digit",
      hour12: false });
  } catch (e) {
    zone = undefined;
    fmtFull = new Intl.DateTimeFormat("sv-SE", { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
      minute: "2-digit", hour12: false });
    fmtTime = new Intl.DateTimeFormat("en-GB", { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  }
  const when = (iso) => { if (!iso) return ""; const d = new Date(iso); return isNaN(d) ? iso : fmtFull.format(d); };
  const clock = (ms) => fmtTime.format(new Date(ms));
  const sevTag = (sev) => h("span", { class: "sev sev-" + (SEV_RANK[sev] ? sev : "unknown"), text: sev || "—" });
  const sessionLink = (i, label) => h("a", { href: "#/session/" + i, text: label });
  const short = (id) => (id && id.length > 18 ? id.slice(0, 8) + "…" + id.slice(-8) : id || "");
  function color(i) { return "var(" + COLORS[i % COLORS.length] + ")"; }

  // -- charts (inline SVG) ------------------------------------------------------------
  function niceMax(v) {
    // The axis' top: 4 or 8 for small counts (whole ticks), else 1, 2, 2.5, 4, 5 or 10 times a power of ten.
    if (v <= 4) return 4;
    if (v <= 8) return 8;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 4, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  function barChart(series, opts) {
    // series: [[label, {key: value}], ...]; keys stacked in opts.keys order.
    const keys = opts.keys, W = 640, H = 180, L = 44, B = 22, T = 8;
    const totals = series.map(([, v]) => keys.reduce((a, k) => a + (v[k] || 0), 0));
    const max = niceMax(Math.max(1, ...totals));
    const svg = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": opts.label });
    const plotW = W - L - 4, plotH = H - B - T;
    for (let g = 0; g <= 4; g++) {
      const y = T + plotH - (plotH * g) / 4;
      svg.appendChild(s("line", { class: "axis", x1: L, x2: W - 4, y1: y, y2: y }));
      svg.appendChild(s("text", { x: L - 6, y: y + 4, "text-anchor": "end", text: compact(Math.round((max * g) / 4)) }));
    }
    const n = Math.max(series.length, 1), slot = plotW / n, bw = Math.max(1, Math.min(36, slot * 0.75));
    const every = Math.ceil(n / Math.max(1, Math.floor(plotW / 70)));
    series.forEach(([label, values], i) => {
      let y = T + plotH;
      const x = L + i * slot + (slot - bw) / 2;
      keys.forEach((k, j) => {
        const v = values[k] || 0;
        if (!v) return;
        const hgt = (plotH * v) / max;
        y -= hgt;
        const r = s("rect", { x: x, y: y, width: bw, height: Math.max(hgt, 0.5), fill: color(opts.colors ? opts.colors[j] : j) });
        r.appendChild(s("title", { text: `${label} · ${k}: ${num(v)}` }));
        svg.appendChild(r);
      });
      if (i % every === 0) svg.appendChild(s("text", { x: x + bw / 2, y: H - 6, "text-anchor": "middle", text: label.slice(5) }));
    });
    const wrap = h("div", null, svg);
    if (keys.length > 1 || opts.legend) {
      wrap.appendChild(h("div", { class: "legend" }, keys.map((k, j) =>
        h("span", null, h("i", { style: null, "data-c": j }), k))));
      wrap.querySelectorAll(".legend i").forEach((el, j) => { el.style.background = color(opts.colors ? opts.colors[j] : j); });
    }
    return wrap;
  }
  function hbars(rows, colorOf, onClick) {
    const max = Math.max(1, ...rows.map((r) => r[1]));
    const box = h("div", { class: "bars" });
    rows.forEach(([label, value], i) => {
      const name = onClick ? h("a", { href: onClick(label), text: label }) : h("span", { text: label });
      const bar = h("div", { class: "bar" });
      bar.style.width = (100 * value) / max + "%";
      bar.style.background = colorOf(label, i);
      box.append(name, h("div", null, bar), h("span", { class: "v", text: num(value) }));
    });
    return box;
  }

  // -- overview -----------------------------------------------------------------------
  function overview() {
    const c = OV.counts;
    const stat = (value, label, cls, id) => h("div", { class: "stat " + (cls || "") }, h("b", { text: value, id: id }), h("span", { text: label }));
    const cost = c.cost_usd === null ? "unknown" : "$" + c.cost_usd.toFixed(2) + (c.cost_complete ? "" : " + unknown");
    const out = [h("h1", { text: "Overview" }), filtersLine(),
      h("div", { class: "stats" },
        stat(num(c.sessions), "sessions" + (c.subagents ? ` (${num(c.subagents)} subagents)` : ""), "", "count-sessions"),
        stat(num(c.events), "events", "", "count-events"),
        stat(num(c.tool_calls), "tool calls", "", "count-tools"),
        stat(num(c.detections), "detections", c.detections ? "alert" : "", "count-detections"),
        stat(compact(c.tokens), "tokens (" + num(c.tokens) + ")", "", "count-tokens"),
        stat(cost, "list-price cost", "", "count-cost"))];
    out.push(health());
    const days = OV.sessions_per_day.map(([d, n]) => [d, { sessions: n }]);
    const models = OV.models.map(([m]) => m);
    const top = models.slice(0, 7), rest = models.length > 7;
    const tokenDays = OV.tokens_per_day.map((r) => {
      const v = {};
      for (const m in r.models) { const k = top.includes(m) ? m : "other models"; v[k] = (v[k] || 0) + r.models[m]; }
      return [r.day, v];
    });
    out.push(h("div", { class: "grid" },
      h("section", { class: "card", id: "chart-sessions" }, h("h2", { text: "Sessions per day" }),
        days.length ? barChart(days, { keys: ["sessions"], label: "sessions per day" }) : h("p", { class: "muted", text: "no sessions" })),
      h("section", { class: "card", id: "chart-tokens" }, h("h2", { text: "Tokens per day by model" }),
        tokenDays.length ? barChart(tokenDays, { keys: rest ? [...top, "other models"] : top, label: "tokens per day by model", legend: true })
          : h("p", { class: "muted", text: "no token usage" }))));
    const sevRows = OV.by_severity;
    out.push(h("div", { class: "grid" },
      h("section", { class: "card", id: "by-severity" }, h("h2", { text: "Detections by severity" }),
        sevRows.length ? hbars(sevRows, (l) => `var(--${SEV_RANK[l] ? l : "informational"})`, (l) => "#/detections?sev=" + encodeURIComponent(l))
          : h("p", { class: "ok", text: "no detections" })),
      h("section", { class: "card", id: "by-category" }, h("h2", { text: "Detections by category" }),
        OV.by_category.length ? hbars(OV.by_category, (l, i) => color(i), (l) => "#/detections?category=" + encodeURIComponent(l))
          : h("p", { class: "ok", text: "no detections" }))));
    out.push(h("section", { class: "card", id: "agents" }, h("h2", { text: "Agents and versions seen" }),
      OV.agents.length ? null : h("p", { class: "muted", text: "no agent sessions in the index for these filters" }),
      OV.agents.length === 0 ? null : h("div", { class: "scroll" }, h("table", null,
        h("thead", null, h("tr", null, h("th", { text: "client" }), h("th", { text: "agent" }), h("th", { text: "version" }),
          h("th", { class: "n", text: "sessions" }), h("th", { text: "last active" }))),
        h("tbody", null, OV.agents.map((a) => h("tr", null,
          h("td", null, h("a", { href: "#/sessions?client=" + encodeURIComponent(a.client), text: a.client })),
          h("td", { text: a.agent || "" }), h("td", { text: a.version || "" }),
          h("td", { class: "n", text: num(a.sessions) }), h("td", { text: when(a.last) }))))))));
    return out;
  }
  function health() {
    const hl = OV.health, warnings = [];
    if (hl.quarantined) warnings.push(`${num(hl.quarantined)} record(s) skipped (quarantined) in this range`);
    const scan = hl.last_scan;
    if (scan && scan.scanner_errors) warnings.push(`the last scan had ${num(scan.scanner_errors)} source error(s)`);
    const rep = hl.report;
    if (rep.with_missing_parts) warnings.push(`${num(rep.with_missing_parts)} session(s) have parts in log files rotated away`);
    if (rep.without_timeline) warnings.push(`${num(rep.without_timeline)} session(s) listed without a timeline (report bound of ${num(META.row_bound)} rows): use telltale show`);
    if (rep.rows_omitted) warnings.push(`${num(rep.rows_omitted)} event(s) past ${num(META.session_rows)} per session left out of timelines: use telltale show`);
    if (rep.messages_cut) warnings.push(`${num(rep.messages_cut)} message text(s) cut at ${num(rep.message_limit)} characters to keep this file small: telltale show --content full has them whole`);
    if (rep.results_cut) warnings.push(`${num(rep.results_cut)} tool result(s) cut at ${num(rep.result_limit)} characters`);
    const sec = h("section", { class: "card", id: "health" }, h("h2", { text: "Health" }));
    if (scan) sec.appendChild(h("p", null, "Last scan ", h("b", { text: when(scan.at) }), ` · ${scan.result} · ${num(scan.emitted)} events emitted · ${num(scan.quarantined)} quarantined · ${num(scan.detections)} detections`));
    else sec.appendChild(h("p", { class: "muted", text: "no scan recorded" }));
    const byClient = scan ? scan.sources_by_client || {} : {};
    const bad = ["error", "partial", "unsupported", "unreadable", "removed"];
    const sources = Object.keys(byClient).map((c) => [c, Object.keys(byClient[c]).map((st) => `${num(byClient[c][st])} ${st}`).join(" · "),
      bad.some((st) => byClient[c][st])]);
    if (sources.length) sec.appendChild(h("p", { id: "sources-line" }, "Sources in the last scan: ",
      sources.map(([c, text, warn], j) => [j ? "; " : "", h("b", { text: c }), " ", h("span", { class: warn ? "warn-text" : "", text: text })])));
    warnings.forEach((w) => sec.appendChild(h("div", { class: "warn", text: "⚠ " + w })));
    const rows = [];
    for (const action in hl.counts) for (const kind in hl.counts[action]) rows.push([action, kind, hl.counts[action][kind]]);
    if (rows.length) {
      sec.appendChild(h("div", { class: "scroll" }, h("table", { id: "health-counts" },
        h("thead", null, h("tr", null, h("th", { text: "health event" }), h("th", { text: "type" }), h("th", { class: "n", text: "count" }))),
        h("tbody", null, rows.map(([a, k, n]) => h("tr", null, h("td", { text: a }), h("td", { text: k }), h("td", { class: "n", text: num(n) })))))));
      if (hl.recent.length) sec.appendChild(h("details", null, h("summary", { text: `latest ${hl.recent.length} health events` }),
        h("ul", null, hl.recent.map((r) => h("li", null, h("span", { class: "muted", text: when(r.at) + " " }), `${r.action} ${r.type || ""} ${r.client || ""} — ${r.message || ""}`)))));
    } else if (!warnings.length) sec.appendChild(h("p", { class: "ok", text: "no health events in this range" }));
    return sec;
  }
  function filtersLine() {
    const f = META.filters, parts = [];
    for (const k in f) parts.push(`${k} ${Array.isArray(f[k]) ? f[k].join(", ") : f[k]}`);
    const span = OV.counts.first ? ` · activity ${when(OV.counts.first)} → ${when(OV.counts.last)}` : "";
    return h("p", { class: "muted", id: "filters-line" },
      (parts.length ? "Filters: " + parts.join(" · ") : "All sessions in the index") + span +
      ` · times ${zone || "in the browser's zone"} · content level: ${META.content}`);
  }

  // -- sessions table -----------------------------------------------------------------
  const SESSION_COLS = [
    ["last", "last active", (x) => x.last || ""], ["client", "client", (x) => x.client || ""],
    ["version", "version", (x) => x.version || "", "hide-narrow"], ["project", "project", (x) => x.project || "", "hide-narrow"],
    ["id", "session", (x) => x.id || ""], ["messages", "msgs", (x) => x.messages, "n hide-narrow"],
    ["tools", "tools", (x) => x.tools, "n hide-narrow"], ["detections", "det.", (x) => x.detections, "n"],
    ["sev", "max severity", (x) => SEV_RANK[x.sev] || 0], ["tokens", "tokens", (x) => x.tokens.total, "n"]];
  function sessionsPage(params) {
    const st = state.sessions;
    if (params.client !== undefined) st.client = params.client;
    if (params.sev !== undefined) st.sev = params.sev;
    const all = SESSIONS.filter((x) => x.m);
    const clients = [...new Set(all.map((x) => x.client))].sort();
    const tbody = h("tbody");
    const count = h("span", { class: "count", id: "sessions-count" });
    function sortBy(key) {
      st.dir = st.key === key ? -st.dir : (key === "last" || key === "tokens" || key === "sev" || key === "detections" ? -1 : 1);
      st.key = key;
      draw();
      head.querySelectorAll("th").forEach((th) => { th.classList.remove("asc", "desc"); th.removeAttribute("aria-sort"); });
      const th = head.querySelector(`[data-key=${key}]`);
      th.classList.add(st.dir > 0 ? "asc" : "desc");
      th.setAttribute("aria-sort", st.dir > 0 ? "ascending" : "descending");
    }
    const head = h("tr", null, SESSION_COLS.map(([key, label, , cls]) => h("th", {
      class: "sort " + (cls || "") + (st.key === key ? (st.dir > 0 ? " asc" : " desc") : ""), "data-key": key, text: label,
      tabindex: 0, role: "columnheader", title: "sort by " + label,
      onclick: () => sortBy(key), onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(key); } } })));
    const q = h("input", { type: "search", id: "sessions-q", placeholder: "search id, project, agent, version", value: st.q,
      oninput: (e) => { st.q = e.target.value; draw(); } });
    const client = h("select", { id: "sessions-client", onchange: (e) => { st.client = e.target.value; draw(); } },
      h("option", { value: "", text: "all clients" }), clients.map((c) => h("option", { value: c, text: c })));
    client.value = st.client;
    const sev = h("select", { id: "sessions-sev", onchange: (e) => { st.sev = e.target.value; draw(); } },
      h("option", { value: "", text: "any severity" }), SEVS.slice(0, 4).map((v) => h("option", { value: v, text: "≥ " + v })));
    sev.value = st.sev;
    function draw() {
      const needle = st.q.trim().toLowerCase(), min = SEV_RANK[st.sev] || 0;
      const col = SESSION_COLS.find((c) => c[0] === st.key) || SESSION_COLS[0], get = col[2];
      const rows = all.filter((x) => (!st.client || x.client === st.client) && (SEV_RANK[x.sev] || 0) >= min &&
        (!needle || [x.id, x.project, x.agent, x.version, x.client].some((v) => v && v.toLowerCase().includes(needle))));
      rows.sort((a, b) => { const va = get(a), vb = get(b); return (va < vb ? -1 : va > vb ? 1 : a.i - b.i) * st.dir; });
      tbody.replaceChildren(...rows.map((x) => h("tr", { "data-i": x.i },
        h("td", { text: when(x.last) }), h("td", { text: x.client }),
        h("td", { class: "hide-narrow", text: x.version || "" }), h("td", { class: "path hide-narrow", title: x.project || "", text: x.project || "" }),
        h("td", { class: "id mono", title: x.id }, sessionLink(x.i, x.parent !== null ? "↳ " + short(x.id) : short(x.id))),
        h("td", { class: "n hide-narrow", text: num(x.messages) }), h("td", { class: "n hide-narrow", text: num(x.tools) }),
        h("td", { class: "n", text: num(x.detections) }), h("td", null, x.sev ? sevTag(x.sev) : ""),
        h("td", { class: "n", text: compact(x.tokens.total) }))));
      count.textContent = `${num(rows.length)} of ${num(all.length)} sessions`;
    }
    draw();
    return [h("h1", { text: "Sessions" }), filtersLine(),
      h("section", { class: "card" }, h("div", { class: "filters" }, q, client, sev, count),
        h("div", { class: "scroll" }, h("table", { id: "sessions-table" }, h("thead", null, head), tbody)))];
  }

  // -- a session's timeline -----------------------------------------------------------
  const SHOW = 2000;
  function sessionPage(i, params) {
    const x = SESSIONS[i];
    if (!x) return [h("p", { text: "no such session" })];
    const head = h("section", { class: "card" },
      h("h1", { class: "mono", text: x.id }),
      h("dl", { class: "kv" },
        h("dt", { text: "agent" }), h("dd", { text: [x.client, x.agent, x.version].filter(Boolean).join(" · ") }),
        h("dt", { text: "project" }), h("dd", { class: "mono", text: x.project || "" }),
        h("dt", { text: "time" }), h("dd", { text: `${when(x.first)} → ${when(x.last)}` }),
        h("dt", { text: "activity" }), h("dd", { text: `${num(x.events)} events · ${num(x.messages)} messages · ${num(x.tools)} tool calls · ${num(x.detections)} detections` }),
        h("dt", { text: "tokens" }), h("dd", { text: `${num(x.tokens.total)} total · in ${num(x.tokens.input)} · out ${num(x.tokens.output)} · cache read ${num(x.tokens.cache_read)} · cache write ${num(x.tokens.cache_creation)}` }),
        x.parent !== null ? [h("dt", { text: "spawned by" }), h("dd", null, sessionLink(x.parent, SESSIONS[x.parent].id))] : null,
        x.subs.length ? [h("dt", { text: "subagents" }), h("dd", null, x.subs.map((c) => [sessionLink(c, short(SESSIONS[c].id)), " "]))] : null));
    const dets = DETS.filter((d) => d.s === i);
    const detBox = dets.length ? h("section", { class: "card" }, h("h2", { text: "Detections in this session" }),
      h("ul", null, dets.map((d) => h("li", null, sevTag(d.sev), " ", h("a", { href: "#/detection/" + DETS.indexOf(d), text: d.name || d.rule }), h("span", { class: "muted", text: " " + when(d.at) }))))) : null;
    const body = h("section", { class: "card", id: "timeline" }, h("h2", { text: "Timeline" }));
    if (x.tl === null) body.appendChild(h("p", { class: "warn", text: `This session's timeline is not in the report (bound of ${num(META.row_bound)} rows). Run: telltale show ${x.id}` }));
    else body.appendChild(timeline(x, 0, params.e));
    return [head, detBox, body];
  }
  function timeline(x, depth, focus) {
    const list = h("ol", { class: "tl" });
    const rows = x.tl || [];
    let shown = 0;
    function more(from) {
      const end = Math.min(rows.length, from + SHOW);
      for (let k = from; k < end; k++) list.appendChild(row(x, rows[k], depth, focus));
      shown = end;
      if (shown < rows.length) {
        const btn = h("button", { class: "more", text: `show ${num(Math.min(SHOW, rows.length - shown))} more of ${num(rows.length - shown)}`,
          onclick: () => { btn.remove(); more(shown); } });
        list.appendChild(h("li", { class: "noprint" }, h("span"), btn));
      }
    }
    more(0);
    const box = h("div", null, list);
    if (x.omitted) box.appendChild(h("p", { class: "warn", text: `${num(x.omitted)} more events not in the report (at most ${num(META.session_rows)} per session): telltale show ${x.id}` }));
    if (x.missing) box.appendChild(h("p", { class: "warn", text: `${x.missing} part(s) of this session were in log files rotated away` }));
    (x.loose || []).forEach((c) => box.appendChild(subagent(c, depth + 1, focus)));
    return box;
  }
  function subagent(c, depth, focus) {
    const y = SESSIONS[c];
    const d = h("details", { class: "sub", open: depth < 3 ? "" : null },
      h("summary", null, `subagent ${short(y.id)} · ${num(y.events)} events · ${num(y.tools)} tool calls`, y.sev ? [" ", sevTag(y.sev)] : null));
    if (depth > 4 || y.tl === null) d.appendChild(h("p", null, sessionLink(c, "open this subagent")));
    else d.appendChild(timeline(y, depth, focus));
    return d;
  }
  function cutNote(text, length) {
    // A text cut to keep the file small ends in "…"; the row keeps its whole length.
    return text.endsWith("…") && length > text.length ? h("div", { class: "muted cut", text: `cut (${num(length)} bytes in all: telltale show has it whole)` }) : "";
  }
  function row(x, r, depth, focus) {
    const t = h("span", { class: "t", text: clock(x.base + r[1]) });
    const li = h("li", null, t);
    const body = h("div", { class: "body" });
    li.appendChild(body);
    switch (r[0]) {
      case "m": {
        body.append(h("span", { class: "role", text: r[2] + (r[5] ? " (injected)" : "") + ":" }));
        if (r[4] !== null) body.append(h("div", { class: "text", text: r[4] }), cutNote(r[4], r[3]));
        else body.append(h("span", { class: "muted", text: `(${num(r[3])} bytes; text not in the log)` }));
        li.className = "msg role-" + r[2];
        break;
      }
      case "c": {
        body.append(h("span", { class: "tool", text: "→ " + (r[2] || "tool") }));
        if (r[3]) body.append(h("span", { class: "kind", text: r[3] }));
        if (r[4] !== null) body.append(h("code", { class: "what", text: r[4] }));
        li.className = "call";
        for (const c of r[5]) body.appendChild(subagent(c, depth + 1, focus));
        break;
      }
      case "r": {
        const label = `← ${r[2] || "result"} ${r[3] || ""}${r[4] !== null ? " exit " + r[4] : ""} (${num(r[5])} bytes)`;
        if (r[6] !== null) body.append(h("details", null, h("summary", { text: label }), h("pre", { text: r[6] }), cutNote(r[6], r[5])));
        else body.append(h("span", { class: "muted", text: label }));
        li.className = "result";
        break;
      }
      case "u": {
        body.append(h("span", { class: "usage", text: `usage ${r[2]}: in ${num(r[3])} · out ${num(r[4])} · cache read ${num(r[5])} · cache write ${num(r[6])}` }));
        li.className = "use";
        break;
      }
      case "d": {
        const d = DETS[r[2]];
        li.className = "det";
        li.id = "d-" + d.id;
        body.append(sevTag(d.sev), " ", h("a", { href: "#/detection/" + r[2], text: d.name || d.rule }),
          h("span", { class: "muted", text: " " + (d.rule || "") }));
        const ev = d.evidence.find((e) => e.value);
        if (ev) body.append(h("div", null, h("span", { class: "kind", text: ev.field }), h("code", { text: ev.value })));
        if (focus && focus === d.id) li.classList.add("hit");
        break;
      }
      default: body.append(h("span", { class: "muted", text: r[2] }));
    }
    return li;
  }

  // -- detections ---------------------------------------------------------------------
  function detectionsPage(params) {
    const st = state.detections;
    if (params.sev !== undefined) st.sev = params.sev;
    if (params.category !== undefined) st.category = params.category;
    const all = DETS.map((d, k) => [d, k]).filter(([d]) => d.m);
    const cats = [...new Set(all.map(([d]) => d.category || "unknown"))].sort();
    const tbody = h("tbody"), count = h("span", { class: "count", id: "detections-count" });
    const q = h("input", { type: "search", id: "detections-q", placeholder: "search rule, evidence, session", value: st.q,
      oninput: (e) => { st.q = e.target.value; draw(); } });
    const sev = h("select", { id: "detections-sev", onchange: (e) => { st.sev = e.target.value; draw(); } },
      h("option", { value: "", text: "any severity" }), SEVS.map((v) => h("option", { value: v, text: "≥ " + v })));
    sev.value = st.sev;
    const cat = h("select", { id: "detections-category", onchange: (e) => { st.category = e.target.value; draw(); } },
      h("option", { value: "", text: "all categories" }), cats.map((c) => h("option", { value: c, text: c })));
    cat.value = st.category;
    function draw() {
      const needle = st.q.trim().toLowerCase(), min = SEV_RANK[st.sev] || 0;
      const rows = all.filter(([d]) => (SEV_RANK[d.sev] || 0) >= min && (!st.category || (d.category || "unknown") === st.category) &&
        (!needle || [d.rule, d.name, d.message, d.client, d.s !== null ? SESSIONS[d.s].id : ""].concat(d.evidence.map((e) => e.value)).some((v) => v && v.toLowerCase().includes(needle))));
      tbody.replaceChildren(...rows.map(([d, k]) => h("tr", { "data-k": k },
        h("td", { text: when(d.at) }), h("td", null, sevTag(d.sev)),
        h("td", null, h("a", { href: "#/detection/" + k, text: d.name || d.rule })),
        h("td", { class: "hide-narrow", text: d.category || "" }), h("td", { class: "hide-narrow", text: d.client || "" }),
        h("td", { class: "id mono" }, d.s !== null ? sessionLink(d.s, short(SESSIONS[d.s].id)) : ""),
        h("td", { class: "path mono hide-narrow", text: (d.evidence.find((e) => e.value) || {}).value || "" }))));
      count.textContent = `${num(rows.length)} of ${num(all.length)} detections`;
    }
    draw();
    return [h("h1", { text: "Detections" }), filtersLine(),
      h("section", { class: "card" }, h("div", { class: "filters" }, q, sev, cat, count),
        h("div", { class: "scroll" }, h("table", { id: "detections-table" }, h("thead", null, h("tr", null,
          ["time", "severity", "rule", "category", "client", "session", "evidence"].map((c, j) =>
            h("th", { class: j === 3 || j === 4 || j === 6 ? "hide-narrow" : null, text: c })))), tbody)))];
  }
  function attackUrl(id) {
    const m = /^T(\d{4})(?:\.(\d{3}))?$/.exec(id);
    return m ? "https://attack.mitre.org/techniques/T" + m[1] + (m[2] ? "/" + m[2] : "") + "/" : null;
  }
  function atlasUrl(id) {
    const m = /(AML\.T\d{4}(?:\.\d{3})?)$/.exec(id);
    return m ? "https://atlas.mitre.org/techniques/" + m[1] : null;
  }
  const joined = (items) => items.flatMap((el, j) => (j ? [", ", el] : [el]));
  const extLink = (href, text) => href ? h("a", { href: href, text: text, target: "_blank", rel: "noopener noreferrer" }) : h("span", { text: text });
  function detectionPage(k) {
    const d = DETS[k];
    if (!d) return [h("p", { text: "no such detection" })];
    const x = d.s !== null ? SESSIONS[d.s] : null;
    const where = [];
    if (x) where.push(h("dt", { text: "session" }), h("dd", null, h("a", { href: `#/session/${d.s}?e=${encodeURIComponent(d.id)}`, text: x.id }), " ", h("span", { class: "muted", text: "(in the timeline)" })),
      h("dt", { text: "agent" }), h("dd", { text: [x.client, x.agent, x.version].filter(Boolean).join(" · ") }),
      h("dt", { text: "project" }), h("dd", { class: "mono", text: x.project || "" }));
    if (d.tool) where.push(h("dt", { text: "tool" }), h("dd", { text: d.tool }));
    if (d.source && (d.source.kind || d.source.path_hash)) where.push(h("dt", { text: "source" }),
      h("dd", { class: "mono", text: [d.source.kind, d.source.path_hash, d.source.line ? "line " + d.source.line : ""].filter(Boolean).join(" · ") }));
    if (d.first_seen || d.last_seen) where.push(h("dt", { text: "seen" }), h("dd", { text: `${when(d.first_seen)} → ${when(d.last_seen)}` }));
    (d.where || []).forEach((anchor, j) => {
      where.push(h("dt", { text: d.where.length > 1 ? `anchor ${j + 1}` : "anchor" }), h("dd", null, h("dl", { class: "kv" },
        Object.keys(anchor).map((key) => [h("dt", { text: key }), h("dd", { class: "mono", text: String(anchor[key]) })]))));
    });
    return [h("section", { class: "card", id: "detection" },
      h("h1", null, sevTag(d.sev), " ", d.name || d.rule),
      h("dl", { class: "kv" },
        h("dt", { text: "rule" }), h("dd", { class: "mono", text: [d.rule, d.ruleset && d.ruleset !== "telltale" ? `(${d.ruleset})` : "", d.uuid || ""].filter(Boolean).join(" ") }),
        h("dt", { text: "severity" }), h("dd", { text: `${d.sev || ""}${d.score !== null && d.score !== undefined ? " · score " + d.score : ""}${d.count ? " · " + d.count + " occurrence(s)" : ""}` }),
        h("dt", { text: "category" }), h("dd", { text: (d.categories.length ? d.categories : [d.category]).filter(Boolean).join(", ") }),
        h("dt", { text: "time" }), h("dd", { text: when(d.at) }),
        d.description ? [h("dt", { text: "what" }), h("dd", { text: d.description })] : null,
        d.message ? [h("dt", { text: "message" }), h("dd", { text: d.message })] : null)),
      h("section", { class: "card" }, h("h2", { text: "Evidence" }),
        d.evidence.length ? h("ul", null, d.evidence.map((e) => h("li", null, h("span", { class: "kind", text: e.field || "" }),
          e.value !== null ? h("code", { class: "what", text: e.value }) : h("span", { class: "muted", text: `(not shown at content level ${META.content}; hash ${e.hash || "?"})` }))))
          : h("p", { class: "muted", text: "no evidence recorded" })),
      h("section", { class: "card" }, h("h2", { text: "Where" }), h("dl", { class: "kv" }, where)),
      h("section", { class: "card" }, h("h2", { text: "Recommendation" }), h("p", { text: d.recommendation || "—" }),
        d.attack.length || d.atlas.length || d.references.length ? h("div", { class: "links" },
          d.attack.length ? [h("b", { text: "ATT&CK: " }), joined(d.attack.map((id) => extLink(attackUrl(id), id))), d.tactics.length ? h("span", { class: "muted", text: " (" + d.tactics.join(", ") + ")" }) : null, " "] : null,
          d.atlas.length ? [h("b", { text: "ATLAS: " }), joined(d.atlas.map((id) => extLink(atlasUrl(id), id.replace(/^atlas\./, ""))))] : null,
          d.references.length ? h("p", null, h("b", { text: "References: " }), joined(d.references.map((r) => extLink(r, r)))) : null) : null)];
  }

  // -- routing ------------------------------------------------------------------------
  function parse() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, query] = raw.split("?");
    const params = {};
    (query || "").split("&").filter(Boolean).forEach((kv) => { const [k, v] = kv.split("="); params[decodeURIComponent(k)] = decodeURIComponent(v || ""); });
    const parts = (path || "overview").split("/");
    return { page: parts[0] || "overview", arg: parts[1], params: params };
  }
  function route() {
    const r = parse();
    if (r.page !== "overview" && !loadData()) {
      main.replaceChildren(h("p", { class: "muted", text: "loading…" }));
      document.addEventListener("DOMContentLoaded", route, { once: true });
      return;
    }
    let view;
    if (r.page === "sessions") view = sessionsPage(r.params);
    else if (r.page === "session") view = sessionPage(Number(r.arg), r.params);
    else if (r.page === "detections") view = detectionsPage(r.params);
    else if (r.page === "detection") view = detectionPage(Number(r.arg));
    else view = overview();
    main.replaceChildren();
    add(main, view);
    const navPage = r.page === "session" ? "sessions" : r.page === "detection" ? "detections" : r.page;
    document.querySelectorAll("#nav a").forEach((a) => a.classList.toggle("on", a.dataset.page === navPage));
    document.body.dataset.page = r.page;
    const hit = r.params.e ? document.getElementById("d-" + r.params.e) : null;
    if (hit) hit.scrollIntoView({ block: "center" }); else window.scrollTo(0, 0);
  }
  window.addEventListener("hashchange", route);
  window.addEventListener("beforeprint", () => document.querySelectorAll("details").forEach((d) => { d.open = true; }));
  route();
  // Navigation start to the first complete render of the overview (issue 25's "interactive"):
  // taken in the first animation frame after the view was built, i.e. when it can be painted.
  window.__telltaleBuilt = performance.now();
  requestAnimationFrame(() => {
    window.__telltaleReady = performance.now();
    document.documentElement.dataset.ready = String(Math.round(window.__telltaleReady));
  });
})();
