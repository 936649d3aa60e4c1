// coordbench episode viewer: plain JS + SVG, no libraries, nothing fetched but this server's
// JSON API (or, in an exported file, the episode inlined in #cb-data).
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const AGENT_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];
// outcome codes by what went wrong, so a researcher sees kinds of failure at a glance
const CODE_GROUPS = {
  ok: ["ok"], completed: ["completed"], wait: ["idle", "wait"],
  conflict: ["conflict_lost"], protocol: ["protocol_failure"],
  spatial: ["not_visible", "too_far", "out_of_zone"],
  invalid: ["invalid", "wrong_target", "not_grabbable", "not_held", "held_by_other",
            "illegal_skill", "not_sliceable", "no_switch", "no_tool"],
  blocked: ["hands_full", "closed", "already_open", "already_closed", "protected",
            "receiver_not_ready", "receiver_hands_full", "already_sliced", "buffer_full"],
};
const GROUP_STYLE = {
  ok: ["#c8e6c9", "#1b5e20", "ok"], completed: ["#43a047", "#fff", "completed a goal"],
  wait: ["#eceff1", "#607d8b", "wait / idle"], conflict: ["#ff8a65", "#4e1300", "conflict lost"],
  protocol: ["#ce93d8", "#38006b", "protocol failure"],
  spatial: ["#ffe082", "#5d4000", "spatial (not visible, too far, out of zone)"],
  invalid: ["#ef9a9a", "#5f0000", "invalid / illegal"],
  blocked: ["#ffcc80", "#5a3000", "blocked (hands full, closed, not ready...)"],
  other: ["#b0bec5", "#263238", "other"],
};
const CODE_TO_GROUP = {};
for (const [g, codes] of Object.entries(CODE_GROUPS)) for (const c of codes) CODE_TO_GROUP[c] = g;

const state = { runs: [], run: null, cond: null, rows: [], headline: [], metrics: {},
                metricErrors: {}, suite: null, episode: null, step: 0, key: null,
                pollTimer: null, exported: false, shown: 200 };

// ---------------------------------------------------------------------------------- helpers
function $(id) { return document.getElementById(id); }
function esc(s) {
  return String(s === null || s === undefined ? "" : s).replace(/[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}
function el(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  if (parent) parent.appendChild(e);
  return e;
}
function title(node, text) { el("title", { text: text }, node); return node; }
function fmt(v) {
  if (v === null || v === undefined) return "n/a";
  if (typeof v === "number") {
    if (Number.isInteger(v)) return String(v);
    return Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(3);
  }
  return String(v);
}
function group(code) { return CODE_TO_GROUP[code] || "other"; }
// physical episodes with recorded poses: the slider steps through the pose samples, the
// timeline and the phase events count control steps; these two map between them
function physPoses(ep) {
  return ep && ep.suite === "physical" && ep.picture.static && ep.picture.states.length ?
    ep.picture.static.poses : null;
}
function controlStep(ep, s) {
  const p = physPoses(ep);
  return p ? p.steps[Math.max(0, Math.min(p.steps.length - 1, s))] : s;
}
function sliderAt(ep, t) {
  const p = physPoses(ep);
  if (!p) return t;
  // the first sample at or after t, so an event at t is already visible there
  const k = p.steps.findIndex((x) => x >= t);
  return k < 0 ? p.steps.length - 1 : k;
}
function agentColor(i) { return AGENT_COLORS[i % AGENT_COLORS.length]; }
function badge(text, cls) { return `<span class="badge b-${esc(cls)}">${esc(text)}</span>`; }
function codeBadge(code) {
  const [bg, fg] = GROUP_STYLE[group(code)];
  return `<span class="badge" style="background:${bg};color:${fg}">${esc(code)}</span>`;
}
async function api(path) {
  const r = await fetch(path);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
function setHash() {
  if (state.exported) return;
  const p = new URLSearchParams();
  if (state.run) p.set("run", state.run);
  if (state.cond) p.set("cond", state.cond);
  if (state.key) p.set("key", state.key);
  if (state.key) p.set("step", String(state.step));
  history.replaceState(null, "", "#" + p.toString());
}

// ------------------------------------------------------------------------ runs, conditions
async function loadRuns() {
  const data = await api("/api/runs");
  state.runs = data.runs;
  const box = $("runs");
  box.innerHTML = "";
  for (const run of data.runs) {
    const div = document.createElement("div");
    div.className = "run";
    div.innerHTML = `<h4 title="${esc(run.path)}">${esc(run.name)} <span class="muted">` +
      `${run.conditions.length} conditions</span></h4>`;
    if (run.crossplay) {
      const item = document.createElement("div");
      item.className = "cond crossplay-item";
      item.innerHTML = `cross-play matrix <span class="n">(${run.crossplay.partners.length} partners)</span>`;
      item.addEventListener("click", () => showCrossplay(run.name));
      div.appendChild(item);
    }
    const bySuite = {};
    for (const c of run.conditions) (bySuite[c.suite] = bySuite[c.suite] || []).push(c);
    for (const [suite, conds] of Object.entries(bySuite)) {
      const h = document.createElement("div");
      h.className = "suite-head";
      h.textContent = suite;
      div.appendChild(h);
      for (const c of conds) {
        const item = document.createElement("div");
        item.className = "cond";
        item.dataset.run = run.name;
        item.dataset.cond = c.name;
        const extra = (c.errored ? `, ${c.errored} errored` : "") +
                      (c.damaged ? `, ${c.damaged} damaged` : "");
        item.innerHTML = `${esc(c.name)} <span class="n">(${c.episodes}${extra})</span>`;
        item.addEventListener("click", () => selectCondition(run.name, c.name));
        div.appendChild(item);
      }
    }
    box.appendChild(div);
  }
  if (data.runs.length === 1) {
    $("run-info").textContent = data.runs[0].path + (data.runs[0].command ?
      "  —  " + data.runs[0].command : "");
  } else {
    $("run-info").textContent = `${data.runs.length} runs`;
  }
}

function fmtEst(e) {
  if (!e || e.n === 0 || e.mean === null) return "n/a";
  return e.mean.toFixed(3) + (e.ci95 === null ? "" : " ± " + e.ci95.toFixed(3));
}

async function showCrossplay(run) {
  const m = await api(`/api/crossplay?run=${encodeURIComponent(run)}`);
  for (const id of ["listing", "episode", "empty"]) $(id).hidden = true;
  $("crossplay").hidden = false;
  $("cross-title").textContent = `cross-play: ${m.family}, ${m.metric}`;
  const means = m.matrix.flat().filter(e => e.n > 0 && e.mean !== null).map(e => e.mean);
  const lo = Math.min(...means), hi = Math.max(...means);
  let html = "<thead><tr><th>agent_0 \\ others</th>" +
    m.partners.map(p => `<th>${esc(p)}</th>`).join("") + "</tr></thead><tbody>";
  m.matrix.forEach((row, i) => {
    html += `<tr><th>${esc(m.partners[i])}</th>`;
    row.forEach((e, j) => {
      const f = hi > lo && e.n > 0 && e.mean !== null ? (e.mean - lo) / (hi - lo) : 0.5;
      const bg = `hsl(${Math.round(210 - 170 * f)}, 60%, ${Math.round(88 - 30 * f)}%)`;
      html += `<td class="cross-cell" style="background:${bg}" data-cond="${esc(m.cells[i][j])}"` +
        ` title="${esc(m.cells[i][j])}">${fmtEst(e)}<br><span class="muted">n=${e.n}</span></td>`;
    });
    html += "</tr>";
  });
  $("cross-matrix").innerHTML = html + "</tbody>";
  for (const td of document.querySelectorAll(".cross-cell")) {
    td.addEventListener("click", () => { $("crossplay").hidden = true; selectCondition(run, td.dataset.cond); });
  }
  $("cross-partners").innerHTML = "<thead><tr><th>partner</th><th>self-play</th><th>cross-play</th>" +
    "<th>gap (self - cross)</th></tr></thead><tbody>" + m.partners.map(p =>
      `<tr><td>${esc(p)}</td><td>${fmtEst(m.self_play[p])}</td><td>${fmtEst(m.cross_play[p])}</td>` +
      `<td>${fmtEst(m.gap[p])}</td></tr>`).join("") + "</tbody>";
}

async function selectCondition(run, cond, key, step) {
  $("crossplay").hidden = true;
  state.run = run; state.cond = cond; state.key = null;
  for (const it of document.querySelectorAll(".cond")) {
    it.classList.toggle("active", it.dataset.run === run && it.dataset.cond === cond);
  }
  if (state.pollTimer) { clearTimeout(state.pollTimer); state.pollTimer = null; }
  const data = await api(`/api/episodes?run=${encodeURIComponent(run)}&cond=${encodeURIComponent(cond)}`);
  state.rows = data.rows; state.headline = data.headline; state.suite = data.suite;
  state.shown = PAGE_ROWS;
  state.metrics = {}; state.metricErrors = {};
  state.episode = null;
  $("episode").hidden = true;
  delete document.body.dataset.episode;
  $("empty").hidden = true;
  $("listing").hidden = false;
  $("cond-title").textContent = cond;
  renderListing();
  setHash();
  pollMetrics(run, cond);
  if (key) await selectEpisode(key, step);
}

async function pollMetrics(run, cond) {
  try {
    const m = await api(`/api/metrics?run=${encodeURIComponent(run)}&cond=${encodeURIComponent(cond)}`);
    if (state.run !== run || state.cond !== cond) return;
    state.metrics = m.metrics; state.metricErrors = m.errors;
    fillMetrics();
    // a thousand episodes take seconds to score; ask again at a pace that leaves the page idle
    if (!m.done) state.pollTimer = setTimeout(() => pollMetrics(run, cond), 1000);
  } catch (e) {
    console.warn("metrics:", e.message);
  }
}

function failedRank(r) {
  if (r.status !== "ok") return 0;
  if (!r.success) return 1;
  return 2;
}

const PAGE_ROWS = 200;  // listing rows drawn at once (more on request)

function visibleRows() {
  const f = $("filter").value;
  let rows = state.rows.filter((r) => {
    if (f === "failed") return r.status !== "ok" || !r.success;
    if (f === "success") return r.status === "ok" && r.success;
    if (f === "bad") return r.status !== "ok";
    return true;
  });
  if ($("failed-first").checked) {
    rows = rows.slice().sort((a, b) => failedRank(a) - failedRank(b) ||
                                        (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
  return rows;
}

function renderListing() {
  // the reason sits next to the status: a bad episode's why must not scroll out of sight
  const head = ["episode", "status", "termination", "problem", "steps", "task", "seed",
                ...state.headline];
  const numeric = new Set(["steps", "seed", ...state.headline]);
  $("episodes").querySelector("thead").innerHTML = "<tr>" + head.map((h) =>
    `<th${numeric.has(h) ? ' style="text-align:right"' : ""}>${esc(h)}</th>`).join("") + "</tr>";
  const all = visibleRows();
  // a page of rows at a time: a thousand-row table makes every later redraw slow, and
  // failed episodes (first by default) are the ones looked at
  if (state.key) {
    const at = all.findIndex((r) => r.key === state.key);
    if (at >= state.shown) state.shown = at + 1;
  }
  const rows = all.slice(0, state.shown);
  const html = [];
  for (const r of rows) {
    const status = r.status === "ok" ? badge(r.success ? "success" : "failed",
                                             r.success ? "ok" : "failed")
                                     : badge(r.status, r.status);
    const term = r.termination ? badge(r.termination, r.termination) : "";
    const metricCells = state.headline.map((m) =>
      `<td class="num" data-m="${esc(m)}">${r.status === "ok" ? "…" : ""}</td>`).join("");
    html.push(`<tr data-key="${esc(r.key)}" class="${r.key === state.key ? "active" : ""}">` +
      `<td>${esc(r.key)}</td><td>${status}</td><td>${term}</td>` +
      `<td class="why">${esc(r.problem || r.detail || "")}</td>` +
      `<td class="num">${fmt(r.steps)}</td><td>${esc(r.task_id)}</td>` +
      `<td class="num">${r.seed === null ? "" : esc(r.seed)}</td>${metricCells}</tr>`);
  }
  const tbody = $("episodes").querySelector("tbody");
  tbody.innerHTML = html.join("");
  let foot = $("episodes").querySelector("tfoot");
  if (!foot) foot = $("episodes").appendChild(document.createElement("tfoot"));
  const more = all.length - rows.length;
  foot.innerHTML = more > 0 ? `<tr><td colspan="${head.length}"><button id="more-rows">show ` +
    `${Math.min(more, PAGE_ROWS)} more of ${more}</button></td></tr>` : "";
  if (more > 0) {
    $("more-rows").addEventListener("click", () => { state.shown += PAGE_ROWS; renderListing(); });
  }
  const bad = state.rows.filter((r) => r.status !== "ok").length;
  const failed = state.rows.filter((r) => r.status === "ok" && !r.success).length;
  $("listing-count").textContent = `${rows.length} shown of ${all.length === state.rows.length ?
    state.rows.length : all.length + " (" + state.rows.length + " in all)"}; ` +
    `${failed} failed, ${bad} bad or missing`;
  fillMetrics();
}

function fillMetrics() {
  // only rows whose metrics arrived since the last poll are written: rewriting a thousand
  // rows every second would re-lay the page out while an episode is being drawn
  for (const tr of $("episodes").querySelectorAll("tbody tr:not([data-filled])")) {
    const key = tr.dataset.key;
    const m = state.metrics[key];
    const why = state.metricErrors[key];
    if (!m && !why) continue;
    for (const td of tr.querySelectorAll("td[data-m]")) {
      if (m) td.textContent = fmt(m[td.dataset.m]);
      else { td.textContent = "err"; td.title = why; }
    }
    tr.dataset.filled = "1";
  }
}

// ---------------------------------------------------------------------------------- episode
async function selectEpisode(key, step) {
  const row = state.rows.find((r) => r.key === key);
  state.key = key;
  for (const tr of $("episodes").querySelectorAll("tbody tr")) {
    tr.classList.toggle("active", tr.dataset.key === key);
  }
  $("episode").hidden = false;
  if (row && row.status !== "ok" && row.status !== "bad") {
    showEpisodeError(key, `${row.status}: ${row.problem}`);
    return;
  }
  try {
    const ep = await api(`/api/episode?run=${encodeURIComponent(state.run)}` +
      `&cond=${encodeURIComponent(state.cond)}&key=${encodeURIComponent(key)}`);
    if (state.key !== key) return;
    if (ep.unavailable) showEpisodeError(key, ep.unavailable);
    else showEpisode(ep, step);
  } catch (e) {
    showEpisodeError(key, e.message);
  }
}

function showEpisodeError(key, message) {
  state.episode = null;
  $("ep-title").textContent = `${state.cond}/${key}`;
  $("ep-end").innerHTML = badge("cannot show", "bad");
  $("ep-replay").innerHTML = `<div class="error-box">${esc(message)}</div>`;
  for (const id of ["ep-attribution", "ep-summary", "picture", "picture-notes", "details",
                    "timeline", "legend"]) {
    $(id).innerHTML = "";
  }
  $("stepper").hidden = true;
  document.body.dataset.episode = "error:" + key;
  setHash();
}

function showEpisode(ep, step) {
  state.episode = ep;
  const tl = ep.timeline;
  $("stepper").hidden = false;
  $("ep-title").textContent = ep.id;
  const end = tl.end;
  $("ep-end").innerHTML = end ? badge(end.termination, end.termination) +
    ` <span class="muted">${end.success ? "success" : "no success"} after ${end.t} steps` +
    `${end.detail ? " — " + esc(end.detail) : ""}</span>` : badge("incomplete", "bad");
  renderReplayNote(ep.picture.replay, ep.suite);
  renderAttribution(ep);
  renderSummary(ep);
  const slider = $("slider");
  const poses = physPoses(ep);
  const max = poses ? poses.steps.length - 1 : ep.suite === "physical" ? (end ? end.t : 0) : tl.steps;
  slider.max = String(max);
  slider.step = "1";
  renderLegend(ep);
  renderTimeline(ep);
  const s = Math.max(0, Math.min(max, step === undefined || step === null ? 0 : step));
  setStep(s);
  document.body.dataset.episode = ep.id;  // tests and the benchmark wait for this
}

function renderReplayNote(rp, suite) {
  let html;
  if (!rp.available) {
    const cls = suite === "physical" ? "warn" : "bad";
    html = `<div class="note ${cls}">No per-step state replay: ${esc(rp.reason)}</div>`;
  } else if (rp.recorded) {
    html = `<div class="note good">Poses as recorded: ${esc(rp.reason)}.</div>`;
  } else if (rp.ok) {
    html = `<div class="note good">State replayed through ${esc(rp.engine)}: ` +
      `${rp.checked} recorded outcomes reproduced${rp.source ? " (" + esc(rp.source) + ")" : ""}</div>`;
  } else {
    html = `<div class="note bad">Replay through ${esc(rp.engine)} diverges from the record: ` +
      `${esc(rp.mismatch)}. The picture after that step may not match what happened.</div>`;
  }
  $("ep-replay").innerHTML = html;
}

// ------------------------------------------------------------------------------ attribution
// `coordbench attribute RUN` replays a failed episode with one seat taken over by a reference
// from a step on; the payload's `attribution` names the responsible seats and each one's
// decisive step (the last step from which the takeover still rescues the episode). The
// timeline marks that step on the seat's lane; an episode never attributed has null.
const DECISIVE = "#d50000";
const DECISIVE_LABEL = "decisive step (counterfactual)";

function decisiveSteps(ep) {
  const a = ep.attribution;
  if (!a || !a.responsible) return [];
  return a.responsible.filter((r) => typeof r.agent === "number" && typeof r.step === "number");
}

function decisiveText(r) {
  const rr = r.rescue_rate;
  return `${DECISIVE_LABEL}: ${r.seat} taken over by ${r.reference || "the reference"} from ` +
    `step ${r.step} on still rescues the episode; from any later step it does not` +
    (typeof r.blame === "number" ? ` (blame ${r.blame.toFixed(2)}` +
      (rr && typeof rr.mean === "number" ? `, rescue rate ${fmt(rr.mean)} n=${rr.n}` : "") + ")" : "");
}

function renderAttribution(ep) {
  const a = ep.attribution, box = $("ep-attribution");
  if (!box) return;
  if (!a) { box.innerHTML = ""; return; }
  let html;
  if (a.refused) {
    html = `<div class="note warn">Not attributed: its replay differs from the recording ` +
      `(${esc(a.refused)})</div>`;
  } else if (!a.responsible.length) {
    html = `<div class="note warn">Counterfactual attribution: no single seat taken over ` +
      `rescues this episode (${a.replays} replays)</div>`;
  } else {
    html = `<div class="note bad decisive-note">Counterfactual attribution (${a.replays} replays): ` +
      a.responsible.map((r) => `<b>${esc(r.seat)}</b> from step <b>${esc(r.step)}</b>` +
        (typeof r.blame === "number" ? ` (blame ${r.blame.toFixed(2)})` : "")).join("; ") +
      `; the ${DECISIVE_LABEL} is outlined on the seat's lane</div>`;
  }
  box.innerHTML = html;
}

function renderSummary(ep) {
  const h = ep.header;
  const kv = [["suite", h.suite], ["task", h.task_id], ["seed", h.seed],
              [h.protocol !== null ? "protocol" : "policy", h.protocol !== null ? h.protocol : h.policy],
              ["team", h.team.map((a) => `${a.id}${a.role !== "agent" ? " (" + a.role + ")" : ""}: ${a.driver}`).join(", ")]];
  const models = Object.entries(h.models || {});
  if (models.length) kv.push(["models", models.map(([a, m]) => `${a}=${m}`).join(", ")]);
  kv.push(["coordbench", `${h.coordbench_version} ${h.git_sha ? h.git_sha.slice(0, 8) : ""}`]);
  let html = kv.map(([k, v]) => `<span class="kv"><b>${esc(k)}</b>${esc(v)}</span>`).join("");
  const heads = new Set(state.headline);
  const ms = Object.entries(ep.metrics || {});
  if (ms.length) {
    ms.sort((a, b) => (heads.has(b[0]) - heads.has(a[0])));
    html += `<div class="chips" style="width:100%">` + ms.map(([k, v]) =>
      `<span class="chip${heads.has(k) ? " head" : ""}">${esc(k)} ${esc(fmt(v))}</span>`).join("") +
      `</div>`;
  } else if (ep.metrics_error) {
    html += `<div class="muted" style="width:100%">metrics: ${esc(ep.metrics_error)}</div>`;
  }
  const prof = Object.entries(ep.profile || {});
  if (prof.length) {
    html += `<div class="chips" id="ep-profile" style="width:100%"><b class="muted">coordination profile</b> ` +
      prof.map(([k, v]) => `<span class="chip" data-measure="${esc(k)}">${esc(k)} ${esc(typeof v === "number" && v !== 0 && Math.abs(v) < 0.01 ? v.toPrecision(3) : fmt(v))}</span>`).join("") +
      `</div>`;
  } else if (ep.profile_error) {
    html += `<div class="muted" style="width:100%">profile: ${esc(ep.profile_error)}</div>`;
  }
  if (ep.suite === "physical") {
    const cmd = ep.picture.static && ep.picture.static.render;
    html += `<div id="render-cmd" style="width:100%">` + (cmd ?
      `<b class="muted">video</b> <code>${esc(cmd)}</code>` :
      `<span class="muted">no video: this episode has no recorded poses</span>`) + `</div>`;
  }
  const params = JSON.stringify(h.params, null, 1);
  html += `<details style="width:100%"><summary class="muted">header parameters</summary>` +
    `<pre>${esc(params.length > 4000 ? params.slice(0, 4000) + " …" : params)}</pre></details>`;
  $("ep-summary").innerHTML = html;
}

function setStep(s) {
  const ep = state.episode;
  if (!ep) return;
  const max = Number($("slider").max);
  s = Math.max(0, Math.min(max, s));
  state.step = s;
  $("slider").value = String(s);
  if (physPoses(ep)) {
    const t = controlStep(ep, s), st = ep.picture.static;
    const end = ep.timeline.end ? ep.timeline.end.t : st.poses.steps[max];
    $("step-label").textContent = `sample ${s} / ${max} · control step ${t} / ${end}` +
      `  (${(t * st.poses.dt).toFixed(2)} s)`;
  } else if (ep.suite === "physical") {
    $("step-label").textContent = `control step ${s} / ${max}` +
      (ep.picture.static && ep.picture.static.control_dt ?
        `  (${(s * ep.picture.static.control_dt).toFixed(2)} s)` : "");
  } else {
    $("step-label").textContent = s === 0 ? `start (0 / ${max} steps)` :
      `after step ${s - 1}  (${s} / ${max} steps)`;
  }
  drawPicture(ep, s);
  renderDetails(ep, s);
  moveCursor(ep, s);
  setHash();
}

// ---------------------------------------------------------------------------------- details
// The prompt of a model call, kept once per request under RUN/prompts/ (not in the episode
// file: prompts repeat across steps and episodes).
function promptHTML(ep, c) {
  const p = (ep.prompts || {})[c.request_hash];
  const id = esc(c.request_hash.slice(0, 12));
  if (!p) return `<div class="muted">prompt: not stored with this run (request ${id})</div>`;
  if (p.unavailable) return `<div class="muted">prompt: ${esc(p.unavailable)}</div>`;
  const part = (x) => (typeof x === "string" ? x : x.type === "text" ? x.text :
    x.type === "image" ? `[image ${String(x.sha256 || "").slice(0, 12)}]` : JSON.stringify(x));
  const body = (p.messages || []).map((m) => `<div class="prompt-msg"><b>${esc(m.role)}</b>` +
    `<pre>${esc(Array.isArray(m.content) ? m.content.map(part).join("\n") : part(m.content ?? ""))}</pre></div>`).join("");
  return `<details class="prompt"><summary class="muted">prompt (${(p.messages || []).length} ` +
    `messages, request ${id})</summary>${body}</details>`;
}

// The agents' views of a household step (saved with --images, content-addressed in
// RUN/images/): from the server, or inlined as data URLs in an exported file.
function viewSource(ep, sha) {
  return state.exported ? (ep.image_data || {})[sha] :
    `/api/image?run=${encodeURIComponent(state.run)}&sha=${encodeURIComponent(sha)}`;
}

function viewsHTML(ep, images) {
  // images get their source once in the page (loadViews): markup never names a URL
  const views = Object.entries(images).map(([name, sha]) => (viewSource(ep, sha) ?
    `<figure class="view"><img alt="${esc(name)}" data-sha="${esc(sha)}">` +
    `<figcaption>${esc(name.replace("_", " "))}</figcaption></figure>` :
    `<div class="muted">${esc(name)}: ${esc(ep.images_left_out || "not in this file")}</div>`)).join("");
  return `<h4>what the agents saw (front, right, back, left)</h4><div class="views">${views}</div>`;
}

function loadViews(ep, box) {
  for (const img of box.querySelectorAll("img[data-sha]")) img.src = viewSource(ep, img.dataset.sha);
}

function callHTML(ep, c, open) {
  // one model call: who, what, parse status, tokens, latency, prompt and reply
  const ps = c.parse_status === "ok" ? "ok" : c.parse_status === "failed" ? "failed" : "na";
  return `<div class="call"><span class="who" style="color:${agentColor(c.agent)}">agent ${c.agent}</span> ` +
    `${esc(c.role)}/${esc(c.phase)} · ${esc(c.model)} · parse ${badge(c.parse_status, ps)} · ` +
    `${c.prompt_tokens}+${c.completion_tokens} tokens · ${fmt(c.latency_s)} s` +
    `${c.attempts > 1 ? " · " + c.attempts + " attempts" : ""}${c.cache_hit ? " · cache hit" : ""}` +
    `${c.finish_reason ? " · " + esc(c.finish_reason) : ""}${c.structured ? " · schema" : ""}` +
    `${c.parse_error ? `<div style="color:#8a1c1c">parse error: ${esc(c.parse_error)}</div>` : ""}` +
    `${c.error ? `<div style="color:#8a1c1c">error: ${esc(c.error)}</div>` : ""}` +
    triesHTML(c) +
    promptHTML(ep, c) +
    `<details${open ? " open" : ""}><summary class="muted">reply</summary><pre>${esc(c.reply || "(empty)")}</pre></details></div>`;
}

function triesHTML(c) {
  // every attempt of a call that needed more than one (schema 1.7)
  const tries = c.tries || [];
  if (tries.length < 2) return "";
  const rows = tries.map((a, i) => `<li>${i + 1}. ${esc(a.outcome)}${a.with_schema ? " · schema" : ""}` +
    ` · ${fmt(a.latency_s)} s${a.wait_s ? " · then waited " + fmt(a.wait_s) + " s" : ""}` +
    `${a.why ? " · " + esc(a.why) : ""}</li>`).join("");
  return `<details class="tries"><summary class="muted">${tries.length} attempts</summary><ul>${rows}</ul></details>`;
}

function physicalCallsHTML(ep, t) {
  // a model-driven robot team: the skill choices and model calls made by control step t
  const tl = ep.timeline;
  const calls = tl.calls.filter((c) => c.t <= t);
  const skills = tl.messages.filter((m) => m.phase === "skill" && m.t <= t);
  if (!tl.calls.length && !skills.length) return "";
  let html = `<h4>skill choices by control step ${t} (${skills.length})</h4>`;
  html += skills.length ? skills.slice(-8).map((m) => {
    let note = {};
    try { note = JSON.parse(m.content); } catch (e) { note = { skill: m.content }; }
    return `<div class="msg"><span class="who" style="color:${agentColor(m.sender)}">robot ${m.sender}</span> ` +
      `t=${m.t} <b>${esc(note.skill || "?")}</b>${note.suggested ? ` <span class="muted">(suggested ${esc(note.suggested)})</span>` : ""}` +
      `${note.fallback ? ` <span style="color:#8a1c1c">fallback: ${esc(note.fallback)}</span>` : ""}</div>`;
  }).join("") : `<div class="muted">none yet</div>`;
  html += `<h4>model calls by control step ${t} (${calls.length} of ${tl.calls.length})</h4>`;
  html += calls.length ? calls.slice(-4).map((c) => `<div class="muted">t=${c.t}</div>` + callHTML(ep, c, false)).join("")
    : `<div class="muted">none yet</div>`;
  return html;
}

function renderDetails(ep, s) {
  const tl = ep.timeline;
  const box = $("details");
  if (ep.suite === "physical") {
    const st = ep.picture.static;
    const t = controlStep(ep, s);
    const done = st.latched.filter((p) => p.t <= t);
    const ev = st.coupling.filter((c) => c.t <= t);
    box.innerHTML = `<h4>phases latched by control step ${t}</h4>` +
      (done.length ? done.map((p) => `<div>phase ${p.phase} <b>${esc(p.name)}</b> at t=${p.t}` +
        `${p.collaborative ? " (collaborative)" : ""}</div>`).join("") : `<div class="muted">none yet</div>`) +
      `<h4>coupling events so far</h4>` +
      (ev.length ? ev.map((c) => `<div>t=${c.t} ${esc(c.kind)} robots ${esc(c.robots.join(", "))}` +
        `${c.value !== null ? " value " + fmt(c.value) : ""}</div>`).join("") : `<div class="muted">none</div>`) +
      physicalCallsHTML(ep, t) + physicalPoseDetails(ep, s) +
      `<h4>about this picture</h4><div class="muted">${esc(ep.picture.replay.reason || "")}</div>`;
    return;
  }
  const t = s - 1;
  if (t < 0) {
    const first = tl.messages.filter((m) => m.t === 0).length + tl.calls.filter((c) => c.t === 0).length;
    box.innerHTML = `<h4>start of the episode</h4><div class="muted">Move the slider (or use the ` +
      `arrow keys) to see each step's actions, messages and model calls.` +
      `${first ? " Step 0 has " + first + " messages/calls." : ""}</div>`;
    return;
  }
  let html = `<h4>step ${t}: actions</h4>`;
  for (const r of decisiveSteps(ep).filter((x) => x.step === t)) {
    html += `<div class="note bad decisive-note">${esc(decisiveText(r))}</div>`;
  }
  const cells = tl.cells.filter((c) => c.t === t).sort((a, b) => a.agent - b.agent);
  for (const c of cells) {
    const who = tl.agents[c.agent] ? tl.agents[c.agent].id : `agent ${c.agent}`;
    html += `<div class="act"><span class="who" style="color:${agentColor(c.agent)}">${esc(who)}</span>` +
      `${codeBadge(c.code)} <span>${esc(c.detail)}${c.reward !== undefined ? ` <span class="muted">reward ${fmt(c.reward)}</span>` : ""}</span></div>`;
    if (c.raw) html += `<details><summary class="muted">model reply behind this action</summary><pre>${esc(c.raw)}</pre></details>`;
  }
  const idle = tl.agents.map((_, i) => i).filter((i) => !cells.some((c) => c.agent === i));
  if (idle.length && cells.length) {
    html += `<div class="muted">no action recorded for ${idle.map((i) => tl.agents[i].id).join(", ")}</div>`;
  }
  const conf = tl.conflicts.filter((c) => c.t === t);
  if (conf.length) {
    html += `<h4>conflicts</h4>` + conf.map((c) => `<div>target ${esc(c.target)}: agents ` +
      `${esc(c.agents.join(", "))} — ${c.winner === null ? "nobody kept it" : "agent " + c.winner + " won"}</div>`).join("");
  }
  const hand = tl.handovers.filter((h) => h.t === t);
  if (hand.length) {
    html += `<h4>handovers</h4>` + hand.map((h) => `<div>agent ${h.from} → agent ${esc(h.to)}: ` +
      `object ${esc(h.obj)} ${codeBadge(h.code)}</div>`).join("");
  }
  const team = tl.team.find((x) => x.t === t);
  if (team) {
    const parts = [];
    if (team.completion !== undefined) parts.push(`completion ${(100 * team.completion).toFixed(0)}%`);
    if (team.reward !== undefined) parts.push(`team reward ${fmt(team.reward)}`);
    if (team.decision_pre !== undefined) parts.push(`decision-active agents ${team.decision_pre} → ${team.decision_post}`);
    if (team.buffers && Object.keys(team.buffers).length) parts.push("buffers " + Object.entries(team.buffers).map(([b, n]) => `${b}:${n}`).join(" "));
    if (parts.length) html += `<h4>team</h4><div>${esc(parts.join("; "))}</div>`;
  }
  if (team && team.images && Object.keys(team.images).length) html += viewsHTML(ep, team.images);
  const msgs = tl.messages.filter((m) => m.t === t);
  if (msgs.length) {
    html += `<h4>messages before step ${t}</h4>` + msgs.map((m) =>
      `<div class="msg"><span class="who" style="color:${agentColor(m.sender)}">agent ${m.sender}</span> ` +
      `<span class="muted">${esc(m.phase)}${m.round ? " r" + m.round : ""} → ${m.recipients ? (m.recipients.length ? esc(m.recipients.join(",")) : "no one") : "all"}` +
      `${m.tokens ? ", " + m.tokens + " tok" : ""}</span>: ${esc(m.content)}</div>`).join("");
  }
  const calls = tl.calls.filter((c) => c.t === t);
  if (calls.length) {
    html += `<h4>model calls at step ${t}</h4>` + calls.map((c) => callHTML(ep, c, calls.length <= 3)).join("");
  }
  const decided = (tl.decisions || []).filter((d) => d.t === t);
  if (decided.length) {
    html += `<h4>a person's decisions at step ${t}</h4>` + decided.map((d) =>
      `<div class="decision"><span class="who" style="color:${agentColor(d.agent)}">agent ${d.agent}</span> ` +
      `<span class="muted">${esc(d.phase)}, ${d.think_s.toFixed(1)} s to decide</span>: ` +
      `${esc(d.choice || "(nothing)")}</div>`).join("");
  }
  box.innerHTML = html;
  loadViews(ep, box);
}

// --------------------------------------------------------------------------------- timeline
function renderLegend(ep) {
  const used = new Set(ep.timeline.cells.map((c) => group(c.code)));
  let html = "";
  for (const [g, [bg, , label]] of Object.entries(GROUP_STYLE)) {
    if (used.has(g)) html += `<span><span class="sw" style="background:${bg}"></span>${esc(label)}</span>`;
  }
  if (ep.timeline.conflicts.length) html += `<span><span class="sw" style="border:2px solid #b71c1c"></span>conflict (★ winner)</span>`;
  if (ep.timeline.messages.length) html += `<span><span class="sw" style="background:#1f5fa8;border-radius:6px"></span>message</span>`;
  if (ep.timeline.calls.length) html += `<span><span class="sw" style="background:#6a1b9a;transform:rotate(45deg)"></span>model call (red: parse failed)</span>`;
  if (ep.timeline.handovers.length) html += `<span>⟶ handover</span>`;
  if (decisiveSteps(ep).length) html += `<span class="decisive-legend"><span class="sw" style="border:3px solid ${DECISIVE}"></span>⚑ ${DECISIVE_LABEL}</span>`;
  $("legend").innerHTML = html;
}

function fit(text, width) {
  const n = Math.max(1, Math.floor((width - 4) / 6.2));
  return text.length > n ? text.slice(0, Math.max(1, n - 1)) + "…" : text;
}

// two short lines per cell: what was done, and on what (or, when it failed, the outcome)
function cellLines(c) {
  const a = c.args || {};
  if (c.action === undefined) {  // STAT: the action, then the reward
    return [c.label, c.reward !== undefined ? "r " + fmt(c.reward) : ""];
  }
  const verbs = { walk_to_room: "room", walk_to_door: "door", put_on: "put on", put_in: "put in",
                  handover: "give", receive: "receive", none: "none" };
  let top = verbs[c.action] || c.action;
  let bottom = c.obj_class || (a.obj !== undefined ? String(a.obj) : "");
  if (c.action === "walk_to_room" && a.room !== undefined) { top = "→ room"; bottom = String(a.room); }
  if (c.action === "walk_to_door") bottom = String(a.target !== undefined ? a.target : a.obj);
  if (c.action === "handover" && a.to_agent !== undefined) top = "give→" + a.to_agent;
  if ((c.action === "put_on" || c.action === "put_in") && a.target !== undefined) {
    bottom = (c.obj_class || a.obj) + "→" + a.target;
  }
  if (c.code !== "ok") bottom = c.code;
  else if (c.completed && c.completed.length) bottom = "+goal " + bottom;
  return [top, bottom];
}

const TL = { left: 110, top: 26, lane: 34, gap: 4 };

function renderTimeline(ep) {
  const box = $("timeline");
  box.innerHTML = "";
  if (ep.suite === "physical") { renderPhysicalTimeline(ep); return; }
  const tl = ep.timeline;
  const n = tl.agents.length;
  const T = Math.max(1, tl.steps);
  const avail = Math.max(600, $("timeline-wrap").clientWidth - TL.left - 20);
  const cw = Math.max(44, Math.min(96, Math.floor(avail / T)));
  const W = TL.left + cw * T + 20;
  const H = TL.top + n * (TL.lane + TL.gap) + 34;
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "timeline-svg" }, box);
  $("timeline-hint").textContent = `${T} steps × ${n} agents; click a cell to jump there`;
  // step axis
  const every = Math.max(1, Math.ceil(36 / cw));
  for (let t = 0; t < T; t += every) {
    el("text", { x: TL.left + t * cw + cw / 2, y: 14, "text-anchor": "middle", "font-size": 10,
                 fill: "#69737f", text: String(t) }, svg);
  }
  for (let i = 0; i < n; i++) {
    const y = TL.top + i * (TL.lane + TL.gap);
    const a = tl.agents[i];
    el("rect", { x: 0, y: y, width: TL.left - 6, height: TL.lane, fill: agentColor(i), rx: 3 }, svg);
    el("text", { x: 6, y: y + 14, fill: "#fff", "font-size": 12, "font-weight": 700, text: a.id }, svg);
    el("text", { x: 6, y: y + 28, fill: "#fff", "font-size": 10,
                 text: (a.role !== "agent" ? a.role + " · " : "") + a.driver }, svg);
    el("line", { x1: TL.left, x2: TL.left + cw * T, y1: y + TL.lane / 2, y2: y + TL.lane / 2,
                 stroke: "#eceff1" }, svg);
  }
  const laneY = (i) => TL.top + i * (TL.lane + TL.gap);
  for (const c of tl.cells) {
    const [bg, fg] = GROUP_STYLE[group(c.code)];
    const x = TL.left + c.t * cw, y = laneY(c.agent);
    const g = el("g", { class: "cell", "data-t": c.t, "data-agent": c.agent }, svg);
    el("rect", { x: x + 1, y: y + 1, width: cw - 2, height: TL.lane - 2, rx: 3, fill: bg,
                 stroke: c.wait ? "#b0bec5" : "none", "stroke-dasharray": c.wait ? "3 2" : "" }, g);
    const [top, bottom] = cellLines(c);
    el("text", { x: x + cw / 2, y: y + 14, "text-anchor": "middle", "font-size": 10.5, fill: fg,
                 "font-weight": 600, text: fit(top, cw) }, g);
    if (bottom) {
      el("text", { x: x + cw / 2, y: y + 27, "text-anchor": "middle", "font-size": 9.5, fill: fg,
                   text: fit(bottom, cw) }, g);
    }
    title(g, `step ${c.t}, ${tl.agents[c.agent] ? tl.agents[c.agent].id : c.agent}: ${c.code}\n${c.detail}`);
    g.addEventListener("click", () => setStep(c.t + 1));
  }
  // conflicts: a red outline on every contender, a star on the winner
  for (const c of tl.conflicts) {
    for (const i of c.agents) {
      const x = TL.left + c.t * cw, y = laneY(i);
      el("rect", { x: x + 1, y: y + 1, width: cw - 2, height: TL.lane - 2, rx: 3, fill: "none",
                   stroke: "#b71c1c", "stroke-width": 2, "pointer-events": "none" }, svg);
      if (i === c.winner) {
        el("text", { x: x + cw - 8, y: y + 11, "font-size": 11, fill: "#b71c1c",
                     "text-anchor": "middle", "pointer-events": "none", text: "★" }, svg);
      }
    }
  }
  // handovers: an arrow from giver to receiver
  for (const h of tl.handovers) {
    if (typeof h.to !== "number" || h.to < 0 || h.to >= n) continue;
    const x = TL.left + h.t * cw + cw - 6;
    const y1 = laneY(h.from) + TL.lane / 2, y2 = laneY(h.to) + TL.lane / 2;
    const color = h.code === "ok" ? "#2e7d32" : "#c62828";
    el("line", { x1: x, x2: x, y1: y1, y2: y2 + (y2 > y1 ? -6 : 6), stroke: color,
                 "stroke-width": 2, "pointer-events": "none" }, svg);
    el("path", { d: y2 > y1 ? `M${x - 4},${y2 - 7} L${x + 4},${y2 - 7} L${x},${y2 - 1} Z`
                            : `M${x - 4},${y2 + 7} L${x + 4},${y2 + 7} L${x},${y2 + 1} Z`,
                 fill: color, "pointer-events": "none" }, svg);
  }
  // messages (blue dots) and model calls (diamonds) sit at the top-left of the step's cell
  const countAt = {};
  for (const m of tl.messages) {
    if (m.sender < 0 || m.sender >= n) continue;
    const k = `${m.t}/${m.sender}`;
    const j = (countAt[k] = (countAt[k] || 0) + 1) - 1;
    const x = TL.left + m.t * cw + 5 + 6 * (j % 4), y = laneY(m.sender) + TL.lane - 5;
    const c = el("circle", { cx: x, cy: y, r: 2.6, fill: "#1f5fa8", class: "msg-dot" }, svg);
    title(c, `message (${m.phase}) from agent ${m.sender}: ${m.content}`);
  }
  const callAt = {};
  for (const c of tl.calls) {
    if (c.agent < 0 || c.agent >= n) continue;
    const k = `${c.t}/${c.agent}`;
    const j = (callAt[k] = (callAt[k] || 0) + 1) - 1;
    const x = TL.left + c.t * cw + cw - 6 - 6 * (j % 4), y = laneY(c.agent) + TL.lane - 5;
    const fill = c.parse_status === "failed" || c.error ? "#c62828" : "#6a1b9a";
    const d = el("path", { d: `M${x},${y - 3} L${x + 3},${y} L${x},${y + 3} L${x - 3},${y} Z`,
                           fill: fill, class: "call-mark" }, svg);
    title(d, `model call ${c.model} (${c.phase}): parse ${c.parse_status}, ` +
             `${c.prompt_tokens}+${c.completion_tokens} tokens, ${fmt(c.latency_s)} s`);
  }
  // the decisive step of each responsible seat: a thick red outline, a flag and a tick
  for (const r of decisiveSteps(ep)) {
    if (r.agent >= n) continue;
    const x = TL.left + r.step * cw, y = laneY(r.agent);
    const g = el("g", { class: "decisive-step", "data-t": r.step, "data-agent": r.agent }, svg);
    el("rect", { x: x + 1, y: y + 1, width: cw - 2, height: TL.lane - 2, rx: 3, fill: "none",
                 stroke: DECISIVE, "stroke-width": 3 }, g);
    el("line", { x1: x + 1, x2: x + 1, y1: y - 3, y2: y + TL.lane + 3, stroke: DECISIVE,
                 "stroke-width": 2 }, g);
    el("text", { x: x + 4, y: y + 10, "font-size": 10, fill: DECISIVE, text: "⚑" }, g);
    title(g, decisiveText(r));
    g.addEventListener("click", () => setStep(r.step + 1));
  }
  // team row: completion (household) or team reward (STAT) per step
  const yTeam = TL.top + n * (TL.lane + TL.gap) + 4;
  el("text", { x: 6, y: yTeam + 14, "font-size": 10.5, fill: "#69737f",
               text: tl.team.length && tl.team[0].completion !== undefined ? "completion" : "team reward" }, svg);
  for (const row of tl.team) {
    const x = TL.left + row.t * cw;
    if (row.completion !== undefined) {
      el("rect", { x: x + 1, y: yTeam + 18 - 16 * row.completion, width: cw - 2,
                   height: Math.max(1, 16 * row.completion), fill: "#81c784" }, svg);
    } else if (cw >= 34) {
      el("text", { x: x + cw / 2, y: yTeam + 14, "text-anchor": "middle", "font-size": 9.5,
                   fill: "#455a64", text: fmt(row.reward) }, svg);
    }
  }
  el("rect", { id: "cursor", x: TL.left, y: TL.top - 4, width: cw, height: n * (TL.lane + TL.gap) + 2,
               fill: "none", stroke: "#1d2a3a", "stroke-width": 2, rx: 3, "pointer-events": "none" }, svg);
  state.cellWidth = cw;
}

function renderPhysicalTimeline(ep) {
  const st = ep.picture.static;
  const end = ep.timeline.end ? ep.timeline.end.t : 1;
  const T = Math.max(1, end);
  const W = Math.max(700, $("timeline-wrap").clientWidth - 4);
  const scale = (W - TL.left - 20) / T;
  const robots = st.robots;
  const H = TL.top + (robots + 1) * (TL.lane + TL.gap) + 10;
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "timeline-svg" }, $("timeline"));
  $("timeline-hint").textContent = `${T} control steps; phases latch in order`;
  for (let k = 0; k <= 10; k++) {
    const t = Math.round(T * k / 10);
    el("text", { x: TL.left + t * scale, y: 14, "text-anchor": "middle", "font-size": 10,
                 fill: "#69737f", text: String(t) }, svg);
  }
  const y0 = TL.top;
  el("rect", { x: 0, y: y0, width: TL.left - 6, height: TL.lane, fill: "#455a64", rx: 3 }, svg);
  el("text", { x: 6, y: y0 + 20, fill: "#fff", "font-size": 12, "font-weight": 700, text: "phases" }, svg);
  let prev = 0;
  st.latched.forEach((p) => {
    const g = el("g", { class: "cell phase-seg" }, svg);
    el("rect", { x: TL.left + prev * scale, y: y0 + 1, width: Math.max(2, (p.t - prev) * scale - 1),
                 height: TL.lane - 2, rx: 3, fill: p.collaborative ? "#90caf9" : "#c8e6c9" }, g);
    el("text", { x: TL.left + (prev + p.t) / 2 * scale, y: y0 + 21, "text-anchor": "middle",
                 "font-size": 11, text: `${p.phase} ${p.name}` }, g);
    title(g, `phase ${p.phase} ${p.name}${p.collaborative ? " (collaborative)" : ""}: latched at t=${p.t}`);
    g.addEventListener("click", () => setStep(sliderAt(ep, p.t)));
    prev = p.t;
  });
  if (prev < T) {
    el("rect", { x: TL.left + prev * scale, y: y0 + 1, width: (T - prev) * scale, height: TL.lane - 2,
                 fill: "#ffcdd2", rx: 3 }, svg);
    el("text", { x: TL.left + (prev + T) / 2 * scale, y: y0 + 21, "text-anchor": "middle",
                 "font-size": 11, fill: "#8a1c1c", text: "not latched" }, svg);
  }
  for (let r = 0; r < robots; r++) {
    const y = TL.top + (r + 1) * (TL.lane + TL.gap);
    const a = ep.timeline.agents[r];
    el("rect", { x: 0, y: y, width: TL.left - 6, height: TL.lane, fill: agentColor(r), rx: 3 }, svg);
    el("text", { x: 6, y: y + 14, fill: "#fff", "font-size": 12, "font-weight": 700, text: a ? a.id : "robot" + r }, svg);
    el("text", { x: 6, y: y + 28, fill: "#fff", "font-size": 10, text: a ? a.driver : "" }, svg);
    el("line", { x1: TL.left, x2: TL.left + T * scale, y1: y + TL.lane / 2, y2: y + TL.lane / 2, stroke: "#e0e0e0" }, svg);
    // a burst of events a few steps apart (collisions) gets one label after its last dot,
    // with a count: labels drawn at every dot would smear into each other
    const evs = st.coupling.filter((c) => c.robots.includes(r)).sort((a, b) => a.t - b.t);
    const bursts = [];
    for (const c of evs) {
      const b = bursts[bursts.length - 1];
      if (b && b.kind === c.kind && (c.t - b.last) * scale < 14) { b.n += 1; b.last = c.t; }
      else bursts.push({ kind: c.kind, last: c.t, n: 1 });
    }
    for (const c of evs) {
      const x = TL.left + c.t * scale;
      const m = el("g", { class: "cell" }, svg);
      el("circle", { cx: x, cy: y + TL.lane / 2, r: 6, fill: couplingColor(c.kind) }, m);
      title(m, `t=${c.t} ${c.kind}${c.value !== null ? " value " + c.value : ""}`);
      m.addEventListener("click", () => setStep(sliderAt(ep, c.t)));
    }
    let labelEnd = -Infinity;
    for (const b of bursts) {
      const x = TL.left + b.last * scale + 9;
      const label = b.kind.replace("_", " ") + (b.n > 1 ? ` ×${b.n}` : "");
      if (x < labelEnd) continue;  // still covered by the previous label: the tooltips say it
      labelEnd = x + label.length * 6 + 6;
      el("text", { x: x, y: y + TL.lane / 2 + 4, "font-size": 10, text: label }, svg);
    }
  }
  // the decisive control step of each responsible robot: a red tick with a flag
  for (const r of decisiveSteps(ep)) {
    if (r.agent >= robots) continue;
    const x = TL.left + r.step * scale, y = TL.top + (r.agent + 1) * (TL.lane + TL.gap);
    const g = el("g", { class: "decisive-step", "data-t": r.step, "data-agent": r.agent }, svg);
    el("line", { x1: x, x2: x, y1: y - 3, y2: y + TL.lane + 3, stroke: DECISIVE, "stroke-width": 3 }, g);
    el("text", { x: x + 3, y: y + 10, "font-size": 10, fill: DECISIVE, text: "⚑ decisive" }, g);
    title(g, decisiveText(r));
    g.addEventListener("click", () => setStep(sliderAt(ep, r.step)));
  }
  el("line", { id: "cursor", x1: TL.left, x2: TL.left, y1: TL.top - 4, y2: H - 4, stroke: "#1d2a3a",
               "stroke-width": 2, "pointer-events": "none" }, svg);
  state.physScale = scale;
}

function moveCursor(ep, s) {
  const c = document.getElementById("cursor");
  if (!c) return;
  if (ep.suite === "physical") {
    const x = TL.left + controlStep(ep, s) * state.physScale;
    c.setAttribute("x1", x); c.setAttribute("x2", x);
    return;
  }
  if (s === 0) { c.setAttribute("visibility", "hidden"); return; }
  c.setAttribute("visibility", "visible");
  c.setAttribute("x", TL.left + (s - 1) * state.cellWidth);
  const wrap = $("timeline-wrap");
  const x = TL.left + (s - 1) * state.cellWidth;
  if (x < wrap.scrollLeft + TL.left || x > wrap.scrollLeft + wrap.clientWidth - 40) {
    wrap.scrollLeft = Math.max(0, x - wrap.clientWidth / 2);
  }
}

// --------------------------------------------------------------------------------- pictures
const PICTURES = {
  stat: drawStat,
  household: drawHousehold,
  constructs: drawHousehold,
  physical: drawPhysical,
};

function drawPicture(ep, s) {
  const box = $("picture");
  box.innerHTML = "";
  $("picture-notes").innerHTML = "";
  const pic = ep.picture;
  const draw = PICTURES[pic.kind];
  if (!draw || (pic.kind !== "physical" && (!pic.static || !pic.states.length))) {
    box.innerHTML = `<div class="muted" style="padding:20px;max-width:420px">No picture of the ` +
      `state for this episode: ${esc(pic.replay.reason || "nothing to draw")}</div>`;
    return;
  }
  draw(ep, s, box);
}

function stepCells(ep, s) { return ep.timeline.cells.filter((c) => c.t === s - 1); }

function drawStat(ep, s, box) {
  const st = ep.picture.static;
  const cur = ep.picture.states[Math.min(s, ep.picture.states.length - 1)];
  const W = 560, pad = 24;
  const sc = (W - 2 * pad) / st.width;
  const H = Math.max(160, st.height * sc + 2 * pad);
  const svg = el("svg", { width: W, height: H + 20, viewBox: `0 0 ${W} ${H + 20}`, id: "picture-svg" }, box);
  const X = (x) => pad + x * sc, Y = (y) => H - pad - y * sc;  // y up, like the plane
  el("rect", { x: pad, y: Y(st.height), width: st.width * sc, height: st.height * sc,
               fill: "#fafbfc", stroke: "#b0bec5" }, svg);
  el("text", { x: pad, y: H + 12, "font-size": 10, fill: "#69737f",
               text: `plane ${st.width} × ${st.height}; agents start at the origin` }, svg);
  const cells = stepCells(ep, s);
  // squares shrink on a crowded plane (100 tasks on 50 x 30) so labels find room beside them
  const half = Math.max(4, Math.min(9, sc * 0.4));
  const taken = [], labels = [];
  const bounds = [0, 0, W, H];
  const conflicts = ep.timeline.conflicts.filter((c) => c.t === s - 1);
  // lines from each agent to its target
  cur.target.forEach((j, i) => {
    if (j === null || j === undefined) return;
    const [tx, ty] = st.tasks[j];
    el("line", { x1: X(cur.pos[i][0]), y1: Y(cur.pos[i][1]), x2: X(tx), y2: Y(ty),
                 stroke: agentColor(i), "stroke-width": 1.5, "stroke-dasharray": "4 3" }, svg);
  });
  st.tasks.forEach(([x, y], j) => {
    const done = cur.completed[j];
    const who = cur.assignee[j];
    const fill = done ? "#cfd8dc" : who !== null && who !== undefined ? agentColor(who) : "#fff";
    const g = el("g", { class: "task" }, svg);
    el("rect", { x: X(x) - half, y: Y(y) - half, width: 2 * half, height: 2 * half, rx: 2,
                 fill: fill, "fill-opacity": done ? 1 : who !== null && who !== undefined ? 0.35 : 1,
                 stroke: done ? "#90a4ae" : "#37474f", "stroke-width": 1.2 }, g);
    taken.push([X(x) - half, Y(y) - half, 2 * half, 2 * half]);
    labels.push([g, X(x), Y(y), done ? `T${j} ✓` : `T${j}`, 10,
                 { fill: done ? "#78909c" : "#263238", "font-weight": 600 }, half + 2]);
    title(g, `task ${j}: ${done ? "completed" : who !== null && who !== undefined ? "picked by agent " + who : "free"}`);
  });
  for (const c of conflicts) {
    const [x, y] = st.tasks[c.target];
    el("circle", { cx: X(x), cy: Y(y), r: 15, fill: "none", stroke: "#b71c1c", "stroke-width": 2.5 }, svg);
    // a conflict's label is placed before the tasks' (labels.unshift): it matters most
    labels.unshift([svg, X(x), Y(y), `conflict ${c.agents.join(",")} → ${c.winner === null ? "none" : c.winner + " won"}`,
                    10, { fill: "#b71c1c", "font-weight": 700 }, 17]);
  }
  // agents; ones on the same spot fan out so each stays visible
  const seen = {};
  cur.pos.forEach(([x, y], i) => {
    const k = `${x.toFixed(2)},${y.toFixed(2)}`;
    const j = (seen[k] = (seen[k] || 0) + 1) - 1;
    const dx = j ? 9 * Math.cos(j * 2.1) : 0, dy = j ? 9 * Math.sin(j * 2.1) : 0;
    const g = el("g", { class: "agent" }, svg);
    const cell = cells.find((c) => c.agent === i);
    el("circle", { cx: X(x) + dx, cy: Y(y) + dy, r: 8, fill: agentColor(i), stroke: "#fff", "stroke-width": 1.5 }, g);
    el("text", { x: X(x) + dx, y: Y(y) + dy + 3.5, "text-anchor": "middle", "font-size": 9.5,
                 fill: "#fff", "font-weight": 700, text: String(i) }, g);
    taken.push([X(x) + dx - 9, Y(y) + dy - 9, 18, 18]);
    const modes = ["idle", "moving", "executing"];
    title(g, `agent ${i}: ${modes[cur.mode[i]] || cur.mode[i]}` +
      (cur.target[i] !== null ? `, target task ${cur.target[i]}` : "") +
      (cell ? `\nthis step: ${cell.detail} (${cell.code})` : ""));
  });
  for (const [g, x, y, text, size, attrs, gap] of labels) putLabel(g, taken, bounds, x, y, text, size, attrs, gap);
  const doneN = cur.completed.filter(Boolean).length;
  const conflictTxt = conflicts.length ? `; ${conflicts.length} conflict(s) this step` : "";
  $("picture-notes").innerHTML = `${doneN} / ${st.tasks.length} tasks completed${esc(conflictTxt)}. ` +
    `Squares are tasks (tinted: picked by that agent; ✓ done), circles agents, dashed lines their targets.`;
}

function drawHousehold(ep, s, box) {
  const st = ep.picture.static;
  const cur = ep.picture.states[Math.min(s, ep.picture.states.length - 1)];
  let x0 = Infinity, x1 = -Infinity, z0 = Infinity, z1 = -Infinity;
  for (const r of st.rooms) {
    x0 = Math.min(x0, r.rect[0]); x1 = Math.max(x1, r.rect[1]);
    z0 = Math.min(z0, r.rect[2]); z1 = Math.max(z1, r.rect[3]);
  }
  const W = 620, pad = 14;
  const sc = Math.min((W - 2 * pad) / Math.max(0.1, x1 - x0), 420 / Math.max(0.1, z1 - z0));
  const H = (z1 - z0) * sc + 2 * pad;
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "picture-svg" }, box);
  const X = (x) => pad + (x - x0) * sc, Z = (z) => pad + (z - z0) * sc;
  const nodes = {};
  for (const nd of st.nodes) nodes[nd.id] = nd;
  // marks (taken) are drawn first, labels last, each where it overlaps no mark or label
  const taken = [], labels = [];
  const bounds = [0, 0, W, H];
  // rooms, tinted by the agents allowed there when the task has zones
  const roomLabels = [];
  for (const r of st.rooms) {
    const [a, b, c, d] = r.rect;
    const zoneOf = st.zones ? st.zones.map((z, i) => z.includes(r.id) ? i : -1).filter((i) => i >= 0) : [];
    const fill = zoneOf.length === 1 ? agentColor(zoneOf[0]) : "#f7f8fa";
    el("rect", { x: X(a), y: Z(c), width: (b - a) * sc, height: (d - c) * sc, fill: fill,
                 "fill-opacity": zoneOf.length === 1 ? 0.12 : 1, stroke: "#78909c", "stroke-width": 1.5 }, svg);
    const name = `${r.name} (${r.id})`;
    roomLabels.push([X(a) + 4, Z(c) + 3,
                     zoneOf.length ? [`${name}  zone of agent ${zoneOf.join(",")}`, name] : [name],
                     [X(a), Z(c), (b - a) * sc, (d - c) * sc]]);
  }
  const open = new Set(cur.open);
  const held = new Set(cur.agents.flatMap((a) => a.held));
  // fixed nodes: doors, targets, containers, buffers (drawn at their scene position)
  for (const nd of st.nodes) {
    if (nd.grabbable) continue;
    const isDoor = nd.tags.includes("door");
    const isTarget = nd.tags.includes("target");
    const isBuffer = nd.tags.includes("buffer");
    const w = Math.max(10, Math.min(40, nd.w * sc)), d = Math.max(8, Math.min(30, nd.d * sc));
    const g = el("g", { class: "node" }, svg);
    if (isDoor) {
      el("rect", { x: X(nd.x) - 4, y: Z(nd.z) - 4, width: 8, height: 8, fill: open.has(nd.id) || !nd.openable ? "#a1887f" : "#4e342e" }, g);
      taken.push([X(nd.x) - 4, Z(nd.z) - 4, 8, 8]);
    } else {
      el("rect", { x: X(nd.x) - w / 2, y: Z(nd.z) - d / 2, width: w, height: d, rx: 2,
                   fill: isBuffer ? "#fff8e1" : isTarget ? "#e3f2fd" : "#eceff1",
                   stroke: isBuffer ? "#f9a825" : isTarget ? "#1565c0" : "#90a4ae",
                   "stroke-width": isTarget || isBuffer ? 1.8 : 1,
                   "stroke-dasharray": nd.openable && !open.has(nd.id) ? "" : nd.openable ? "3 2" : "" }, g);
      let label = `${nd.cls} ${nd.id}`;
      if (isBuffer) label += ` [${cur.buffers[String(nd.id)] || 0}/${st.buffers[String(nd.id)]}]`;
      if (nd.openable) label += open.has(nd.id) ? " open" : " closed";
      taken.push([X(nd.x) - w / 2, Z(nd.z) - d / 2, w, d]);
      labels.push([isTarget || isBuffer ? 1 : 3, g, X(nd.x), Z(nd.z), label, 9,
                   { fill: isTarget ? "#0d47a1" : "#546e7a" }, Math.max(w, d) / 2 + 2]);
    }
    title(g, `${nd.cls} ${nd.id}${isDoor ? " (door)" : ""}${isTarget ? " — goal target" : ""}` +
      `${nd.openable ? (open.has(nd.id) ? ", open" : ", closed") : ""}`);
  }
  // movable objects where they lie now (objects on one spot fan out)
  const spot = {};
  const sliced = new Set(cur.sliced);
  for (const [id, [x, z, parent]] of Object.entries(cur.objects)) {
    const nd = nodes[id];
    if (!nd) continue;
    const k = `${x.toFixed(1)},${z.toFixed(1)}`;
    const j = (spot[k] = (spot[k] || 0) + 1) - 1;
    const px = X(x) + (j % 4) * 8 - 12, pz = Z(z) - 4 - Math.floor(j / 4) * 8;
    const isGoal = nd.tags.includes("goal"), isKnife = nd.tags.includes("knife");
    const g = el("g", { class: "obj" }, svg);
    el("path", { d: `M${px},${pz - 4} L${px + 4},${pz} L${px},${pz + 4} L${px - 4},${pz} Z`,
                 fill: isKnife ? "#212121" : isGoal ? "#fb8c00" : "#bdbdbd",
                 stroke: sliced.has(Number(id)) ? "#2e7d32" : "#5d4037", "stroke-width": sliced.has(Number(id)) ? 2 : 0.8 }, g);
    taken.push([px - 4, pz - 4, 8, 8]);
    if (isGoal || isKnife) labels.push([2, g, px, pz, nd.cls, 8.5, { fill: "#6d4c41" }, 6]);
    title(g, `${nd.cls} ${id}${parent !== null ? " on/in " + parent : ""}${sliced.has(Number(id)) ? " (sliced)" : ""}`);
  }
  // what each agent did this step: a line to the object or place it acted on
  const cells = stepCells(ep, s);
  for (const c of cells) {
    const a = cur.agents[c.agent];
    if (!a || !c.args) continue;
    const tid = c.args.target !== undefined ? c.args.target : c.args.obj;
    const nd = nodes[tid];
    if (!nd || held.has(nd.id)) continue;
    const [bg] = GROUP_STYLE[group(c.code)];
    const stroke = group(c.code) === "ok" || group(c.code) === "completed" ? "#43a047" : bg;
    el("line", { x1: X(a.x), y1: Z(a.z), x2: X(nd.x), y2: Z(nd.z), stroke: stroke,
                 "stroke-width": 2.2, "stroke-opacity": 0.9 }, svg);
  }
  // agents with what they hold
  const at = {};
  cur.agents.forEach((a, i) => {
    const k = `${a.x.toFixed(1)},${a.z.toFixed(1)}`;
    const j = (at[k] = (at[k] || 0) + 1) - 1;
    const px = X(a.x) + j * 16, pz = Z(a.z);
    const g = el("g", { class: "agent" }, svg);
    el("circle", { cx: px, cy: pz, r: 8.5, fill: agentColor(i), stroke: "#fff", "stroke-width": 1.5 }, g);
    el("text", { x: px, y: pz + 3.5, "text-anchor": "middle", "font-size": 10, fill: "#fff",
                 "font-weight": 700, text: String(i) }, g);
    taken.push([px - 9, pz - 9, 18, 18]);
    // what it holds: the object's own mark (diamond, colour by kind) beside the agent
    a.held.forEach((h, k2) => {
      const nd = nodes[h];
      const isKnife = nd && nd.tags.includes("knife");
      const hx = px + 14, hy = pz - 6 + k2 * 10;
      el("path", { d: `M${hx},${hy - 4} L${hx + 4},${hy} L${hx},${hy + 4} L${hx - 4},${hy} Z`,
                   class: "held", fill: isKnife ? "#212121" : nd && nd.tags.includes("goal") ? "#fb8c00" : "#bdbdbd",
                   stroke: "#5d4037", "stroke-width": 0.8 }, g);
      taken.push([hx - 4, hy - 4, 8, 8]);
      labels.push([0, g, hx, hy, nd ? nd.cls : String(h), 9, { fill: "#3e2723" }, 6]);
    });
    const cell = cells.find((c) => c.agent === i);
    title(g, `agent ${i}${st.roles ? " (" + st.roles[i] + ")" : ""} in room ${a.room}` +
      `${a.held.length ? ", holds " + a.held.map((h) => (nodes[h] ? nodes[h].cls + " " : "") + h).join(", ") : ""}` +
      `${cell ? "\nthis step: " + cell.detail : ""}`);
  });
  // labels by priority: rooms, what agents hold, goal objects and the knife, goal targets
  // and buffers, then the rest
  // a room's label: down its left side, within its height (the name alone where the zone
  // note finds no room)
  for (const [x, y, texts, room] of roomLabels) {
    const h = 14, within = [0, room[1], W, room[3]];  // the room's height, any width
    placing: for (const text of texts) {
      const w = text.length * 11 * 0.68 + 2;
      for (let yy = y; yy + h <= room[1] + room[3]; yy += h) {
        if (!isFree(taken, within, x, yy, w, h)) continue;
        taken.push([x, yy, w, h]);
        el("text", { x: x + 1, y: yy + 10.5, "font-size": 11, "font-weight": 700,
                     fill: "#455a64", class: "map-label", text: text }, svg);
        break placing;
      }
    }
  }
  labels.sort((a, b) => a[0] - b[0]);
  for (const [, g, x, y, text, size, attrs, gap] of labels) putLabel(g, taken, bounds, x, y, text, size, attrs, gap);
  // notes: goals, buffers, knife
  const need = st.subgoals.map((g) => `${g.key}: ${cur.satisfied[g.key] || 0}/${g.count}`);
  let notes = `<div><b>completion ${(100 * cur.completion).toFixed(0)}%</b> — ${esc(need.join(" · "))}</div>`;
  if (st.construct) {
    const c = st.construct;
    notes += `<div>construct ${esc(c.construct)}${c.family ? " (" + esc(c.family) + ")" : ""}`;
    if (c.knife !== undefined) notes += ` · knife ${c.knife}: ${cur.knife_owner === null || cur.knife_owner === undefined ? "on the counter" : "held by agent " + cur.knife_owner}`;
    if (Object.keys(cur.buffers).length) notes += " · buffers " + Object.entries(cur.buffers).map(([b, n]) => `${b}: ${n}/${st.buffers[b]}`).join(", ");
    notes += `</div>`;
  }
  if (st.roles) notes += `<div class="muted">roles: ${esc(st.roles.map((r, i) => i + "=" + r).join(", "))}</div>`;
  notes += `<div class="muted">Blue boxes: goal targets; orange diamonds: goal objects; black: knife; ` +
    `lines: what each agent acted on this step (green ok, other colours by outcome). ` +
    `${st.other_nodes} scene nodes not involved in this episode are not drawn.</div>`;
  $("picture-notes").innerHTML = notes;
}

// a heading in whole degrees in (-180, 180] (yaw joints wind past +-pi over a long carry)
function headingDeg(yaw) {
  const d = Math.round(((yaw * 180 / Math.PI) % 360 + 540) % 360 - 180);
  return d === -180 ? 180 : d + 0;  // + 0 turns -0 into 0
}
const COUPLING_COLORS = { drop: "#c62828", robot_collision: "#ef6c00" };
function couplingColor(kind) { return COUPLING_COLORS[kind] || "#1f5fa8"; }

// coupling events that happened since the previous pose sample (at sample 0: at step 0)
function couplingSince(ep, s) {
  const p = physPoses(ep);
  const t = controlStep(ep, s), prev = s > 0 ? p.steps[s - 1] : -1;
  return ep.picture.static.coupling.filter((c) => c.t > prev && c.t <= t);
}

function drawPhysical(ep, s, box) {
  const st = ep.picture.static;
  const poses = physPoses(ep);
  const t = controlStep(ep, s);
  const W = 640;
  let scene = null;
  if (poses) {
    const [x0, x1, y0, y1] = poses.extent;
    // as large as fits 640 x 420, to scale on both axes
    const sc = Math.min((W - 40) / (x1 - x0), 420 / (y1 - y0), 300);
    scene = { x0, x1, y0, y1, sc, top: 26, h: (y1 - y0) * sc,
              left: 20 + ((W - 40) - (x1 - x0) * sc) / 2 };
  }
  const stripTop = scene ? scene.top + scene.h + 30 : 30;
  const H = stripTop + 62;
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, id: "picture-svg" }, box);
  const n = Math.max(1, st.phases - st.start_phase);
  const latched = st.latched.filter((p) => p.t <= t);
  const last = latched.length ? latched[latched.length - 1] : null;
  el("text", { x: 20, y: 16, "font-size": 12, fill: "#37474f", "font-weight": 600,
               text: `control step ${t}` + (st.control_dt ? ` (${(t * st.control_dt).toFixed(2)} s)` : "") +
                     ` · ${latched.length} of ${n} phases latched` + (last ? ` (last: ${last.name})` : "") }, svg);
  if (scene) drawPhysicalScene(ep, s, svg, scene);
  drawPhaseStrip(st, t, svg, stripTop, W, 54);
  if (!poses) {
    $("picture-notes").innerHTML = `<span class="muted">This episode has no recorded poses ` +
      `(recorded before trajectory schema 1.5): this is the phase picture at the slider's control step.</span>`;
    return;
  }
  const ev = couplingSince(ep, s);
  const cur = ep.picture.states[s];
  const joints = poses.joints.map((j) => `${j} ${cur.joints[j].toFixed(2)} rad`);
  $("picture-notes").innerHTML =
    (ev.length ? `<div><b>since the previous sample:</b> ${esc(ev.map((c) =>
      `${c.kind.replace("_", " ")} (robots ${c.robots.join(", ")}, t=${c.t})`).join("; "))}</div>` : "") +
    (joints.length ? `<div>${esc(joints.join(" · "))}</div>` : "") +
    `<div class="muted">Top-down, world x to the right and y up, grid every ${scene.sc >= 90 ? "0.5" : "1"} m. ` +
    `Squares: robot bases to scale (number = robot, triangle = heading), a line to the hand ` +
    `(darker: fingers more closed); orange: the task's object, brown: other free bodies, with their ` +
    `height z; dotted: paths so far. Goal marks and static scenery are not recorded, so not drawn.</div>`;
}

function drawPhysicalScene(ep, s, svg, sc) {
  const st = ep.picture.static, poses = st.poses;
  const cur = ep.picture.states[s];
  const X = (x) => sc.left + (x - sc.x0) * sc.sc, Y = (y) => sc.top + (sc.y1 - y) * sc.sc;
  el("rect", { x: X(sc.x0), y: Y(sc.y1), width: (sc.x1 - sc.x0) * sc.sc, height: sc.h,
               fill: "#fafbfc", stroke: "#cfd8dc" }, svg);
  // grid: half metres when they are far enough apart to read, else metres
  const step = sc.sc >= 90 ? 0.5 : 1;
  for (let x = Math.ceil(sc.x0 / step) * step; x <= sc.x1; x += step) {
    const major = Math.abs(x - Math.round(x)) < 1e-6;
    el("line", { x1: X(x), x2: X(x), y1: Y(sc.y1), y2: Y(sc.y0), stroke: major ? "#dde3e8" : "#eef1f3" }, svg);
    if (major) el("text", { x: X(x), y: Y(sc.y0) + 12, "text-anchor": "middle", "font-size": 9.5,
                            fill: "#90a4ae", text: `${Math.round(x)} m` }, svg);
  }
  for (let y = Math.ceil(sc.y0 / step) * step; y <= sc.y1; y += step) {
    const major = Math.abs(y - Math.round(y)) < 1e-6;
    el("line", { x1: X(sc.x0), x2: X(sc.x1), y1: Y(y), y2: Y(y), stroke: major ? "#dde3e8" : "#eef1f3" }, svg);
    if (major) el("text", { x: X(sc.x0) - 3, y: Y(y) + 3, "text-anchor": "end", "font-size": 9.5,
                            fill: "#90a4ae", text: `${Math.round(y)}` }, svg);
  }
  // paths so far: each robot's base and the task's object, faint, under everything
  const upto = ep.picture.states.slice(0, s + 1);
  cur.robots.forEach((_, i) => {
    el("polyline", { class: "trail", points: upto.map((q) => `${X(q.robots[i][0])},${Y(q.robots[i][1])}`).join(" "),
                     fill: "none", stroke: agentColor(i), "stroke-opacity": 0.55, "stroke-width": 1.5,
                     "stroke-dasharray": "2 3" }, svg);
  });
  if (poses.bodies.length) {
    el("polyline", { class: "trail", points: upto.map((q) => `${X(q.bodies[0][0])},${Y(q.bodies[0][1])}`).join(" "),
                     fill: "none", stroke: "#ef6c00", "stroke-opacity": 0.6, "stroke-width": 1.5,
                     "stroke-dasharray": "2 3" }, svg);
  }
  // coupling events since the previous sample: a ring round each robot involved
  const ev = couplingSince(ep, s);
  const half = poses.base_half * sc.sc;
  for (const c of ev) {
    for (const r of c.robots) {
      const q = cur.robots[r];
      if (!q) continue;
      const g = el("g", { class: "coupling-mark" }, svg);
      el("circle", { cx: X(q[0]), cy: Y(q[1]), r: half * 1.5 + 4, fill: "none",
                     stroke: couplingColor(c.kind), "stroke-width": 3 }, g);
      title(g, `t=${c.t} ${c.kind}${c.value !== null ? " value " + fmt(c.value) : ""}`);
    }
  }
  const taken = [];  // boxes of everything drawn, so that body labels step aside
  cur.robots.forEach((q, i) => {
    const [x, y, yaw, hx, hy, hz, grip] = q;
    const color = agentColor(i);
    const g = el("g", { class: "robot", "data-robot": i }, svg);
    // world yaw turns x towards y; the screen's y points down, so the rotation is negated
    const base = el("g", { transform: `translate(${X(x).toFixed(1)},${Y(y).toFixed(1)}) rotate(${-headingDeg(yaw)})` }, g);
    el("rect", { x: -half, y: -half, width: 2 * half, height: 2 * half, rx: 3, fill: color,
                 "fill-opacity": 0.3, stroke: color, "stroke-width": 2 }, base);
    const tip = Math.max(6, half * 0.45);
    el("path", { d: `M${half + tip},0 L${half},${-tip * 0.7} L${half},${tip * 0.7} Z`, fill: color }, base);
    // the arm: from the shoulder on the base's front to the hand
    const shx = x + 0.12 * Math.cos(yaw), shy = y + 0.12 * Math.sin(yaw);
    el("line", { x1: X(shx), y1: Y(shy), x2: X(hx), y2: Y(hy), stroke: color, "stroke-width": 3.5,
                 "stroke-linecap": "round" }, g);
    // fingers stop on what they grip, so the closing is shown as a fraction, not as "holds"
    el("circle", { class: "hand", cx: X(hx), cy: Y(hy), r: 5, fill: "#fff", stroke: color, "stroke-width": 2 }, g);
    el("circle", { cx: X(hx), cy: Y(hy), r: 3.6, fill: "#263238", "fill-opacity": Math.min(1, grip).toFixed(2) }, g);
    el("text", { x: X(x), y: Y(y) + 5, "text-anchor": "middle", "font-size": 14, "font-weight": 700,
                 fill: "#1d232b", text: String(i) }, g);
    const h2 = half * 1.42;  // the rotated square's bounding box
    taken.push([X(x) - h2, Y(y) - h2, 2 * h2, 2 * h2], [X(hx) - 6, Y(hy) - 6, 12, 12]);
    for (let f = 0.25; f < 1; f += 0.25) {
      const ax = X(shx + f * (hx - shx)), ay = Y(shy + f * (hy - shy));
      taken.push([ax - 3, ay - 3, 6, 6]);
    }
    title(g, `robot ${i}: base (${x.toFixed(2)}, ${y.toFixed(2)}) m, heading ${headingDeg(yaw)}°; ` +
      `hand at height ${hz.toFixed(2)} m, fingers ${(100 * Math.min(1, grip)).toFixed(0)}% closed`);
  });
  const groups = poses.bodies.map((name, b) => {
    const [x, y, z, yaw] = cur.bodies[b];
    const main = b === 0 && name === "object";
    const g = el("g", { class: "body", "data-body": name }, svg);
    taken.push([X(x) - 8, Y(y) - 8, 16, 16]);
    if (main) {
      const r = 8;
      el("rect", { x: -r, y: -r, width: 2 * r, height: 2 * r, rx: 2, fill: "#fb8c00", stroke: "#6d3a00",
                   "stroke-width": 1.2,
                   transform: `translate(${X(x).toFixed(1)},${Y(y).toFixed(1)}) rotate(${-headingDeg(yaw)})` }, g);
    } else {
      el("circle", { cx: X(x), cy: Y(y), r: 5, fill: "#a1887f", stroke: "#4e342e", "stroke-width": 1 }, g);
    }
    title(g, `${name}: (${x.toFixed(2)}, ${y.toFixed(2)}) m, height ${z.toFixed(2)} m, heading ${headingDeg(yaw)}°`);
    return [g, name, X(x), Y(y), z, main];
  });
  const bounds = [X(sc.x0), Y(sc.y1), (sc.x1 - sc.x0) * sc.sc, sc.h];
  for (const [g, name, px, py, z, main] of groups) {
    const text = `${name} z ${z.toFixed(2)}`;
    const w = text.length * (main ? 6.1 : 5.7) + 4, h = 13;
    const [lx, ly, far] = placeLabel(taken, bounds, px, py, w, h, main ? 10 : 7);
    if (far) {  // pushed away by a crowd: a leader line says whose label it is
      el("line", { x1: px, y1: py, x2: Math.max(lx, Math.min(lx + w, px)), y2: Math.max(ly, Math.min(ly + h, py)),
                   stroke: "#8d6e63", "stroke-width": 0.8 }, g);
    }
    el("text", { class: "body-label", x: lx + 2, y: ly + 10, "font-size": 10.5, fill: main ? "#6d3a00" : "#4e342e",
                 "font-weight": main ? 700 : 400, "paint-order": "stroke", stroke: "#fff",
                 "stroke-width": 3, text: text }, g);
  }
}

// a label's top-left corner near (x, y): the nearest spot, ring by ring, that overlaps nothing
// drawn and stays inside `bounds`; and whether it had to move past the first ring. With
// `optional`, null where no spot is free (else the first spot, over whatever lies there)
function isFree(taken, [bx, by, bw, bh], a, b, w, h) {
  return a >= bx && a + w <= bx + bw && b >= by && b + h <= by + bh &&
    !taken.some(([px, py, pw, ph]) => a < px + pw && a + w > px && b < py + ph && b + h > py);
}

function placeLabel(taken, bounds, x, y, w, h, gap, optional) {
  const free = (a, b) => isFree(taken, bounds, a, b, w, h);
  let found = null;
  for (let ring = 0; ring < 5 && !found; ring++) {
    const d = gap + ring * 16;
    const tries = [[d, -h / 2], [-w / 2, -h - d], [-w / 2, d], [-w - d, -h / 2],
                   [d * 0.7, d * 0.7], [d * 0.7, -h - d * 0.7], [-w - d * 0.7, d * 0.7],
                   [-w - d * 0.7, -h - d * 0.7]];
    for (const [dx, dy] of tries) {
      if (free(x + dx, y + dy)) { found = [x + dx, y + dy, ring > 0]; break; }
    }
  }
  if (!found && optional) return null;
  if (!found) found = [x + gap, y - h / 2, false];
  taken.push([found[0], found[1], w, h]);
  return found;
}

// draw `text` (font `size`) near (x, y) where it overlaps no label or mark in `taken`; a
// label with no free spot nearby is left out (its mark's tooltip still names it): one
// drawn over another could be read by nobody. Returns the text element or null.
function putLabel(parent, taken, bounds, x, y, text, size, attrs, gap) {
  const w = text.length * size * (attrs["font-weight"] ? 0.68 : 0.62) + 2, h = size + 3;
  const spot = placeLabel(taken, bounds, x, y, w, h, gap, true);
  if (!spot) return null;
  return el("text", Object.assign({ x: spot[0] + 1, y: spot[1] + size * 0.95, "font-size": size,
                                    class: "map-label", text: text }, attrs), parent);
}

function drawPhaseStrip(st, t, svg, top, W, h) {
  const n = Math.max(1, st.phases - st.start_phase);
  const bw = (W - 40) / n;
  for (let k = 0; k < n; k++) {
    const phase = st.start_phase + k + 1;
    const p = st.latched.find((x) => x.phase === phase);
    const done = p && p.t <= t;
    const collab = st.collaborative[phase - 1];
    const x = 20 + k * bw;
    const g = el("g", { class: "phase-box" + (done ? " latched" : "") }, svg);
    el("rect", { x: x + 4, y: top, width: bw - 8, height: h, rx: 6,
                 fill: done ? (collab ? "#64b5f6" : "#81c784") : "#eceff1",
                 stroke: collab ? "#1565c0" : "#2e7d32", "stroke-width": 1.5 }, g);
    el("text", { x: x + bw / 2, y: top + 17, "text-anchor": "middle", "font-size": 12, "font-weight": 700,
                 text: fit(`phase ${phase}${p ? " " + p.name : ""}`, (bw - 12) * 0.85) }, g);
    el("text", { x: x + bw / 2, y: top + 32, "text-anchor": "middle", "font-size": 11,
                 text: done ? `latched at t=${p.t}` : p ? `latches at t=${p.t}` : "never latched" }, g);
    if (collab) el("text", { x: x + bw / 2, y: top + 46, "text-anchor": "middle", "font-size": 10,
                             fill: "#1565c0", text: "collaborative" }, g);
  }
}

function physicalPoseDetails(ep, s) {
  if (!physPoses(ep)) return "";
  const cur = ep.picture.states[s], poses = ep.picture.static.poses;
  const robots = cur.robots.map(([x, y, yaw, , , hz, grip], i) =>
    `<div><span class="who" style="color:${agentColor(i)}">robot${i}</span> (${x.toFixed(2)}, ${y.toFixed(2)}) m, ` +
    `${headingDeg(yaw)}°, hand z ${hz.toFixed(2)} m, ` +
    `fingers ${(100 * Math.min(1, grip)).toFixed(0)}% closed</div>`).join("");
  const bodies = poses.bodies.map((name, b) => {
    const [x, y, z] = cur.bodies[b];
    return `<div><b>${esc(name)}</b> (${x.toFixed(2)}, ${y.toFixed(2)}, ${z.toFixed(2)}) m</div>`;
  }).join("");
  return `<h4>poses at control step ${cur.step}</h4>${robots}${bodies}`;
}

// ------------------------------------------------------------------------------------ setup
function wire() {
  $("slider").addEventListener("input", () => setStep(Number($("slider").value)));
  $("prev").addEventListener("click", () => setStep(state.step - 1));
  $("next").addEventListener("click", () => setStep(state.step + 1));
  document.addEventListener("keydown", (e) => {
    if (!state.episode || e.target.tagName === "INPUT" && e.target.type !== "range" ||
        e.target.tagName === "SELECT") return;
    // phase-only physical episodes step control steps: ten a key; pose samples one a key
    const big = state.episode.suite === "physical" && !physPoses(state.episode) ? 10 : 1;
    if (e.key === "ArrowRight") { setStep(state.step + big); e.preventDefault(); }
    if (e.key === "ArrowLeft") { setStep(state.step - big); e.preventDefault(); }
  });
  $("filter").addEventListener("change", () => { state.shown = PAGE_ROWS; renderListing(); });
  $("failed-first").addEventListener("change", () => { state.shown = PAGE_ROWS; renderListing(); });
  $("episodes").querySelector("tbody").addEventListener("click", (e) => {
    const tr = e.target.closest("tr");
    if (tr && tr.dataset.key) selectEpisode(tr.dataset.key, 0);
  });
}

async function main() {
  wire();
  const inline = document.getElementById("cb-data");
  if (inline) {
    state.exported = true;
    document.body.classList.add("exported");
    const data = JSON.parse(inline.textContent);
    const ep = data.episode;
    state.run = ep.run; state.cond = ep.condition; state.key = ep.key;
    state.headline = [];
    $("empty").hidden = true;
    $("episode").hidden = false;
    $("run-info").textContent = `exported episode of run ${ep.run}`;
    showEpisode(ep, 0);
    return;
  }
  await loadRuns();
  await applyHash();
  // a link to another episode (#run=..&cond=..&key=..&step=..) opens it without a reload
  window.addEventListener("hashchange", () => applyHash().catch((e) => console.error(e)));
}

async function applyHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  const run = p.get("run") || (state.runs.length === 1 ? state.runs[0].name : null);
  const cond = p.get("cond"), key = p.get("key"), step = Number(p.get("step") || 0);
  if (!run || !cond) return;
  if (run === state.run && cond === state.cond && state.rows.length) {
    if (key && key !== state.key) await selectEpisode(key, step);
    else if (key && step !== state.step) setStep(step);
    return;
  }
  await selectCondition(run, cond, key, step);
}

main().catch((e) => {
  console.error(e);
  document.body.insertAdjacentHTML("afterbegin", `<div class="error-box">viewer: ${esc(e.message)}</div>`);
});
